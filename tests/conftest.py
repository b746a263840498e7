"""Shared pytest fixtures, and the unit / integration split.

tests/ has no __init__.py, so pytest puts it on sys.path and its helper modules import by name.

Every test is either ``integration`` (it needs a live service: marked ``slurm`` or ``mpi``,
see :data:`INTEGRATION_MARKERS`) or ``unit`` (the built core and Python only); both markers
are added here at collection, so test files only say what service they need.
``make test-unit`` runs ``-m unit``, ``make test-integration`` runs ``-m integration``
(docs/testing.md, "Unit and integration tests").
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
import signal  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# No per-example deadline in any property test (hypothesis's default is 200 ms): a timed
# assertion fails on a loaded shared machine.  A test's own settings() still sets its
# example count; a hang is caught by the test's own alarm or by CI's limit.
settings.register_profile("malleo", deadline=None)
settings.load_profile("malleo")


def _terminated(signum, _frame):
    raise KeyboardInterrupt(f"pytest stopped by signal {signum}")


# A TERM (a CI time-out, `kill`, lanes.sh stopping its lanes) stops the session like Ctrl-C,
# so that the fixtures' finalizers stop what they started (the Slurm clusters' daemons);
# left to its default action it killed pytest and left them running.
signal.signal(signal.SIGTERM, _terminated)


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


from cli_runner import invoke  # noqa: E402


@pytest.fixture
def malleo_cli():
    """Run ``malleo ARGS...`` in-process (cli_runner.invoke: catch_exceptions=False)."""
    return invoke


INTEGRATION_MARKERS = ("slurm", "mpi")
"""Markers of tests that need a live service (a local Slurm, a real MPI): those tests are
``integration``; every other test is ``unit``."""


@pytest.hookimpl(tryfirst=True)       # before `-m` deselects by these markers
def pytest_collection_modifyitems(config, items):
    """Mark each collected test ``integration`` or ``unit`` (from its service markers)."""
    for item in items:
        is_integration = any(item.get_closest_marker(name) for name in INTEGRATION_MARKERS)
        item.add_marker(pytest.mark.integration if is_integration else pytest.mark.unit)


def pytest_report_collectionfinish(config, start_path, items):
    """One line under pytest's header: how many unit and integration tests will run."""
    integration = sum(1 for item in items if item.get_closest_marker("integration"))
    return (f"malleo: {len(items) - integration} unit tests (core and Python only), "
            f"{integration} integration tests (live Slurm or MPI: marked "
            f"{' or '.join(INTEGRATION_MARKERS)}); make test-unit / make test-integration")
