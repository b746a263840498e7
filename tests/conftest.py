"""Shared pytest fixtures.

tests/ has no __init__.py, so pytest puts it on sys.path and its helper modules import by name.
"""
from slurm_fixture import slurm_cluster, slurm_jobs  # noqa: F401  (real local Slurm, session-scoped)


# `malleo slurm agent` writes its status file, and `slurm status`/`diag` read it, in
# MALLEO_STATE_DIR (default /run/malleo for root): give this session its own directory so
# tests never see an agent of another session on the same machine.
import atexit  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

os.environ["MALLEO_STATE_DIR"] = tempfile.mkdtemp(prefix="malleo-state-")
atexit.register(shutil.rmtree, os.environ["MALLEO_STATE_DIR"], True)


import logging  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _malleo_logging_restored():
    """Undo what a test's ``malleo.plugin.agent.logs.configure`` did to the ``malleo`` logger.

    ``configure`` (called by the agent and the endpoint's commands) gives ``malleo`` its own
    handler and stops propagation to the root logger, where pytest's ``caplog`` listens: left
    in place, every later test that reads ``caplog`` would see nothing.
    """
    yield
    for name in ("malleo", "malleo.agent", "malleo.reconfig"):
        log = logging.getLogger(name)
        for handler in list(log.handlers):
            log.removeHandler(handler)
        log.setLevel(logging.NOTSET)
        log.propagate = True
