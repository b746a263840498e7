"""Shared pytest fixtures.

tests/ has no __init__.py, so pytest puts it on sys.path and its helper modules import by name.
"""
from slurm_fixture import slurm_cluster, slurm_jobs  # noqa: F401  (real local Slurm, session-scoped)

import pytest

from cli_runner import invoke


@pytest.fixture
def malleo_cli():
    """Run ``malleo ARGS...`` in-process (cli_runner.invoke: catch_exceptions=False)."""
    return invoke
