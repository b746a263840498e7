"""The Slurm side of a resize, run from inside the job (its batch step) by the launcher.

Everything goes through the backend interface (:class:`~malleo.plugin.backends.SlurmBackend`;
the CLI backend by default, which every Slurm has and which sees the job's ``SLURM_CONF``):

- shrink: :meth:`SlurmBackend.resize` (``scontrol update JobId=J NumNodes=n``: Slurm keeps the
  batch host and releases the rest); retried while Slurm answers "the DB index is being set".
- expand: :meth:`SlurmBackend.expand` (an expander allocation ``--dependency=expand:J`` that
  must start within a timeout, whose nodes are merged into J). Needs
  ``SchedulerParameters=permit_job_expansion``. If the expander does not start in time it is
  withdrawn and J keeps its nodes.

Every function returns the job's node list as Slurm reports it afterwards, so the caller
relaunches on what Slurm really allocated, whatever happened. ``scontrol update ...
NumNodes=`` writes ``slurm_job_<id>_resize.sh`` and ``.csh`` into its working directory; the CLI
backend runs it in a private temporary directory, so the job's submission directory stays clean
(the launcher sets the variables those scripts reset itself).
"""
from __future__ import annotations

import time

from malleo.plugin.backends import Job, SlurmBackend
from malleo.plugin.backends.errors import SlurmError


class ResizeError(Exception):
    """A resize that did not happen; the job keeps its old nodes."""


def nodes_text(count: int) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{count} node" if count == 1 else f"{count} nodes"


def _backend(backend: SlurmBackend | None) -> SlurmBackend:
    if backend is not None:
        return backend
    from malleo.plugin.backends.cli import CliBackend

    return CliBackend(timeout=30.0)


def job(job_id: int, backend: SlurmBackend | None = None) -> Job:
    """The job as Slurm lists it now (raises ResizeError if Slurm does not answer)."""
    try:
        return _backend(backend).job(int(job_id))
    except SlurmError as exc:
        raise ResizeError(f"job {job_id}: {exc}") from None


def node_list(job_id: int, backend: SlurmBackend | None = None) -> list[str]:
    """The job's allocated node names, in Slurm's order."""
    return list(job(job_id, backend).node_list)


def shrink(job_id: int, nodes: int, retry_for: float = 15.0,
           backend: SlurmBackend | None = None) -> list[str]:
    """Shrink running job ``job_id`` to ``nodes`` nodes.

    Raises:
        ResizeError: Slurm refused (the message says why).
        ValueError: ``nodes`` is below 1 (never sent to Slurm).
    """
    if type(nodes) is not int or nodes < 1:
        raise ValueError(f"shrink of job {job_id} to {nodes!r} nodes: need a whole count >= 1")
    backend = _backend(backend)
    deadline = time.monotonic() + retry_for
    while True:
        try:
            backend.resize(int(job_id), int(nodes))
            return node_list(job_id, backend)
        except SlurmError as exc:
            if "DB index" not in str(exc) or time.monotonic() > deadline:
                raise ResizeError(f"shrink of job {job_id} to {nodes_text(nodes)} refused: "
                                  f"{exc}") from None
        time.sleep(1.0)


def expand(job_id: int, more: int, timeout: int = 20,
           backend: SlurmBackend | None = None) -> list[str]:
    """Add ``more`` nodes to running job ``job_id`` through an expander allocation.

    Args:
        timeout: seconds the expander may wait for nodes before it is given up.

    Raises:
        ResizeError: the expander did not start in time, or the merge was refused; any
            expander is cancelled and the job keeps its nodes.
        ValueError: ``more`` is below 1 (never sent to Slurm).
    """
    if type(more) is not int or more < 1:
        raise ValueError(f"expand of job {job_id} by {more!r} nodes: need a whole count >= 1")
    backend = _backend(backend)
    try:
        backend.expand(int(job_id), int(more), timeout=int(timeout))
    except SlurmError as exc:
        raise ResizeError(str(exc)) from None
    return node_list(job_id, backend)
