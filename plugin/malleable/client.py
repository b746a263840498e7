"""The API a malleable mpi4py application calls: :func:`restore` at start, :func:`check` at its
safe points.

Mechanism (see docs/malleable.md for why): stop and relaunch. When the agent answers expand or
shrink, :func:`check` gathers the block-distributed arrays on rank 0, writes them with the
replicated values to a checkpoint in the job's state directory, records the requested node
count and returns the action; the application then returns from its main loop and ends the
MPI step. The launcher (:mod:`malleo.plugin.malleable.launch`) resizes the Slurm job and starts
the step again at the new size, where :func:`restore` scatters the arrays over the new ranks.

Environment (set by the launcher): ``MALLEO_STATE_DIR`` (checkpoint directory),
``MALLEO_NODES`` (nodes of this step), ``MALLEO_PERIOD`` (check-in period, seconds),
``SLURM_JOB_ID``, ``MALLEO_MIN_NODES`` / ``MALLEO_MAX_NODES`` (the job's declared bounds: an
answer outside them is rejected), and ``MALLEO_RECONFIG_SOCKET`` (the endpoint, default
``/run/malleo/reconfig.sock``); ``MALLEO_AGENT_USER`` names the user the endpoint may run as
besides root (:func:`malleo.plugin.malleable.protocol.trusted_uids`).

A check-in that gets no valid answer (endpoint down, busy past the deadline, a refusal, an
answer outside the job's bounds or from an untrusted process) is never a silent "no change":
it is logged on stderr and returned as kind "none" with :attr:`Action.error` saying why.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from malleo.plugin.malleable import blocks, protocol, spec

CHECKPOINT = "checkpoint.npz"
REQUEST = "resize.json"


@dataclass(frozen=True)
class Action:
    """What the agent decided at a check-in.

    Attributes:
        kind: "none", "expand" or "shrink".
        nodes: node count after the change (the current count for "none").
        error: None for an answer of the endpoint; else why there was none (the job goes on
            at its size, as for "none").
    """

    kind: str = "none"
    nodes: int = 0
    error: str | None = None

    @property
    def is_answer(self) -> bool:
        """True when the endpoint answered (False: no answer, see ``error``)."""
        return self.error is None

    @property
    def is_resize(self) -> bool:
        """True for expand and shrink: the caller must end its step now."""
        return self.kind in ("expand", "shrink")


@dataclass
class State:
    """An application's state at a safe point.

    Attributes:
        arrays: name -> this rank's block of rows of a 2-D float64 array, distributed as in
            :mod:`malleo.plugin.malleable.blocks`.
        shapes: name -> the global (rows, columns) of each array.
        values: replicated values (the same on every rank; JSON-serialisable), e.g. the
            iteration number.
    """

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    shapes: dict[str, tuple[int, int]] = field(default_factory=dict)
    values: dict = field(default_factory=dict)


class _Clock:
    """Rank 0's rate limit: at most one question per period."""

    last_ask = time.monotonic()


def _log(message: str) -> None:
    print(f"malleo: {message}", file=sys.stderr, flush=True)


def state_dir() -> Path | None:
    """The job's state directory, None outside the launcher."""
    path = os.environ.get("MALLEO_STATE_DIR")
    return Path(path) if path else None


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


def _ask_agent() -> Action:
    job_id = _env_int("SLURM_JOB_ID") or 0
    nodes = _env_int("MALLEO_NODES") or _env_int("SLURM_JOB_NUM_NODES") or 0
    if job_id <= 0 or nodes <= 0:
        return Action("none", nodes, error="not in a Slurm job (no SLURM_JOB_ID or node count)")
    lo = _env_int("MALLEO_MIN_NODES") or 1
    hi = _env_int("MALLEO_MAX_NODES") or spec.MAX_NODES
    path = os.environ.get(protocol.SOCKET_ENV, protocol.DEFAULT_SOCKET)
    try:
        kind, target = protocol.ask(path, job_id, nodes, bounds=(lo, hi))
    except protocol.Refused as exc:
        why = f"the agent refused: {exc}"
    except protocol.Unreachable as exc:
        why = f"no answer: {exc.strerror or exc}"
    except protocol.BadAnswer as exc:
        why = f"answer rejected: {exc}"
    except (OSError, ValueError) as exc:
        why = f"asking {path} failed: {exc}"
    else:
        return Action(kind, target)
    _log(f"job {job_id}: {why}; going on at {nodes} nodes")
    return Action("none", nodes, error=why)


def check(comm, state: State, *, period: float | None = None) -> Action:
    """Ask the agent (at most once per ``period`` seconds) whether to expand or shrink.

    Collective over ``comm``: rank 0 asks, every rank gets the same answer. Between two
    questions it costs one broadcast and no Slurm call. On expand or shrink it checkpoints
    ``state`` and records the request for the launcher before returning; the caller must then
    end its step (return from main). Outside the launcher (no ``MALLEO_STATE_DIR``) it always
    answers none.

    Args:
        comm: an mpi4py communicator spanning the step.
        state: the state to hand over if the job is resized.
        period: seconds between questions; default ``MALLEO_PERIOD`` (from the job's
            declaration), else 30.

    Returns:
        :class:`Action`.
    """
    action = None
    if comm.rank == 0:
        action = Action("none", 0)
        every = period if period is not None else float(os.environ.get("MALLEO_PERIOD", 30))
        if state_dir() is not None and time.monotonic() - _Clock.last_ask >= every:
            _Clock.last_ask = time.monotonic()
            action = _ask_agent()
    action = comm.bcast(action, root=0)
    if action.is_resize:
        save(comm, state, action)
    return action


def save(comm, state: State, action: Action) -> None:
    """Checkpoint ``state`` to the state directory and record ``action`` (collective)."""
    whole = {name: blocks.gather(comm, state.arrays[name], state.shapes[name][0])
             for name in sorted(state.arrays)}
    if comm.rank != 0:
        return
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"values": state.values, "shapes": {k: list(v) for k, v in state.shapes.items()}}
    tmp = directory / (CHECKPOINT + ".tmp.npz")
    np.savez(tmp, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **whole)
    os.replace(tmp, directory / CHECKPOINT)
    req = directory / (REQUEST + ".tmp")
    req.write_text(json.dumps({"action": action.kind, "nodes": action.nodes}))
    os.replace(req, directory / REQUEST)


READY_PREFIX = "ready-"
"""Files ``ready-STEP-RANK`` of :func:`wait_for_ranks` in the state directory."""


def wait_for_ranks(comm, timeout: float = 60.0) -> bool:
    """Hold this rank until every rank of ``comm`` has finished MPI's start-up, without an MPI
    message: each rank creates ``ready-STEP-RANK`` in the job's state directory (shared by
    the job's nodes, like the checkpoint) and waits for ``comm.size`` of them.

    Why: Open MPI 5.0 (Debian 13's) can crash in ``MPI_Init`` when a message of a rank that
    finished its start-up reaches one still waiting in the start-up fence (ob1 matches it
    before MPI_COMM_WORLD exists: a segmentation fault in
    ``mca_pml_ob1_recv_frag_callback_match``, open-mpi/ompi#12495); seen under load in the
    test suite's first step.  :func:`restore` calls it first; a program that communicates
    before :func:`restore` calls it right after importing ``mpi4py.MPI``.  Outside the
    launcher (no state directory) it returns at once.

    Args:
        timeout: seconds to wait (a rank that died in its start-up never arrives; the step
            then fails as it would have).

    Returns:
        True when every rank arrived, False on no state directory or on the timeout.
    """
    directory = state_dir()
    if directory is None:
        return False
    step = os.environ.get("MALLEO_STEP", "0")
    mine = directory / f"{READY_PREFIX}{step}-{comm.rank}"
    try:
        fd = os.open(mine, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
    except OSError as exc:
        _log(f"cannot write {mine} ({exc}); not waiting for the other ranks")
        return False
    pattern = f"{READY_PREFIX}{step}-*"
    deadline = time.monotonic() + timeout
    while True:
        if sum(1 for _ in directory.glob(pattern)) >= comm.size:
            return True
        if time.monotonic() >= deadline:
            _log(f"rank {comm.rank}: not every rank started within {timeout:g} s")
            return False
        time.sleep(0.02)


def restore(comm) -> State | None:
    """The state the previous step checkpointed, redistributed over ``comm`` (collective);
    None when there is none (first step of the job, or outside the launcher).  Every rank
    first waits for the others' MPI start-up (:func:`wait_for_ranks`)."""
    wait_for_ranks(comm)
    meta = None
    whole: dict[str, np.ndarray] = {}
    if comm.rank == 0:
        directory = state_dir()
        path = directory / CHECKPOINT if directory is not None else None
        if path is not None and path.exists():
            with np.load(path) as data:
                meta = json.loads(bytes(data["__meta__"]).decode())
                whole = {k: data[k] for k in data.files if k != "__meta__"}
    meta = comm.bcast(meta, root=0)
    if meta is None:
        return None
    shapes = {k: tuple(v) for k, v in meta["shapes"].items()}
    arrays = {name: blocks.scatter(comm, whole.get(name), shapes[name]) for name in sorted(shapes)}
    return State(arrays=arrays, shapes=shapes, values=meta["values"])
