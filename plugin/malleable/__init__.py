"""Malleable MPI jobs: the client library for mpi4py applications.

An application calls :func:`restore` when it starts and :func:`check` at its safe points;
:mod:`malleo.plugin.malleable.launch` runs it under Slurm and relaunches it at the size the
agent chose. See docs/malleable.md.
"""
from malleo.plugin.malleable.client import Action, State, check, restore, wait_for_ranks
from malleo.plugin.malleable.spec import DeclaredMalleability, SpecError, parse

__all__ = ["Action", "DeclaredMalleability", "SpecError", "State", "check", "parse", "restore",
           "wait_for_ranks"]
