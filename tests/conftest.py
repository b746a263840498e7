"""Shared pytest fixtures.

tests/ has no __init__.py, so pytest puts it on sys.path and its helper modules import by name.
"""
from slurm_fixture import slurm_cluster, slurm_jobs  # noqa: F401  (real local Slurm, session-scoped)
