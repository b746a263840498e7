"""Live Slurm state -> the inputs of ``malleo._core.plan``.

One cycle of the agent reads a :class:`Snapshot` (nodes and jobs, through a
:class:`~malleo.plugin.backends.SlurmBackend`) and converts it with :func:`plan_inputs`.

Allocation unit (``unit``):

- ``"nodes"`` (the default): the machine is the number of usable nodes of the managed
  partition and a job's size is its node count.  Right for partitions with
  ``OverSubscribe=EXCLUSIVE`` (every job gets whole nodes), which is what malleo's agent is
  meant for: node counts are what Slurm allocates.
- ``"cpus"``: the machine is the sum of the CPUs of the usable nodes and a job's size is its
  CPU count, for partitions where jobs share nodes by core.  The core then sees one pool of
  processors and ignores node boundaries (a job of 3 CPUs may not fit on nodes with 2 free
  CPUs each): an approximation, stated in docs/agent.md.

Usable nodes are those Slurm may schedule on (:attr:`Node.is_available`: up, not drained,
not failing).  A running job's size counts only its usable nodes, so the busy part never
exceeds the machine.

Stateless: everything comes from Slurm.  User names map to stable integers (the uid Slurm
reports, else a CRC-32 of the name), so a restarted agent keys users the same way.
"""
from __future__ import annotations

import time
from typing import Any
import zlib
from dataclasses import dataclass, field

import msgspec

import numpy as np

from malleo import slurm_values as values
from malleo.plugin.backends import hostlist
from malleo.plugin.backends import Job, Node, SlurmBackend
from malleo.plugin.backends.columns import JobTable, NodeTable
from malleo.plugin.backends.model import ACTIVE_STATES

UNITS = ("nodes", "cpus")
"""Allocation units the agent plans in (see the module docstring)."""

UNLIMITED_SECONDS = 365 * 86400
"""Planning estimate (seconds) of a job without a time limit in a partition without MaxTime."""

INELIGIBLE_REASONS = frozenset({
    "Dependency", "DependencyNeverSatisfied", "BeginTime", "JobHeldUser", "JobHeldAdmin",
    "PartitionDown", "PartitionInactive", "PartitionTimeLimit", "PartitionNodeLimit",
    "ReqNodeNotAvail", "Reservation", "InvalidAccount", "InvalidQOS", "BadConstraints"})
"""Slurm pending reasons of jobs that cannot start whatever the priorities: the agent leaves
them out of the plan and does not touch their priority."""


def user_key(job: Job) -> int:
    """A stable integer for the job's owner: the uid when Slurm reports it, else a CRC-32
    of the user name (so a restarted agent maps users the same way)."""
    if job.user_id is not None:
        return int(job.user_id)
    return zlib.crc32(job.user.encode("utf-8")) & 0x7FFFFFFF


@dataclass(frozen=True)
class Snapshot:
    """What one read of Slurm returned.

    Attributes:
        read_time: epoch seconds (float) when the read finished, on the agent's clock.
        nodes: every node: Node records, or the compact read's :class:`NodeTable`
            (columns; iterating it gives Node records).
        jobs: every job the controller holds (pending, running, recently finished): Job
            records, or the compact read's :class:`JobTable` (columns; iterating it gives
            Job records, built on first use).
        partitions: partition name -> MaxTime in seconds (None: unlimited); the default
            partition is listed under ``default_partition``.
        default_partition: name of the cluster's default partition ("" if none).
    """

    read_time: float
    nodes: tuple[Node, ...] | NodeTable
    jobs: tuple[Job, ...] | JobTable
    partitions: dict[str, int | None] = field(default_factory=dict)
    default_partition: str = ""


def read_snapshot(backend: SlurmBackend, *, compact: bool = True,
                  ping: bool = False) -> Snapshot:
    """Read nodes, partitions and jobs from ``backend``: the backend's cycle read
    (:meth:`SlurmBackend.cycle_read`: the CLI backend's compact commands at once, parsed
    into columns), after a ping when ``ping``.  ``compact=False`` reads full records
    (``backend.nodes()``, ``backend.all_jobs()``: JSON on the CLI backend, with the jobs'
    names and comments), for views that show them and decisions that need trust
    (``malleo slurm status``, the reconfiguration endpoint).

    Raises:
        SlurmError: the backend's typed errors (SlurmUnavailable when Slurm is unreachable).
    """
    if compact and hasattr(backend, "cycle_read"):
        parts, nodes, jobs = backend.cycle_read(ping=ping)
    else:
        if ping:
            backend.ping()
        parts = backend.partitions()
        compact = compact and hasattr(backend, "job_rows")     # any object with the reads
        nodes = backend.node_rows() if compact else tuple(backend.nodes())
        jobs = backend.job_rows() if compact else tuple(backend.all_jobs())
    default = next((p.name for p in parts if p.is_default), parts[0].name if parts else "")
    return Snapshot(time.time(), nodes, jobs,
                    {p.name: p.max_time for p in parts}, default)


def read_with_fingerprint(backend: SlurmBackend, *, ping: bool = False) -> tuple[tuple, Snapshot]:
    """The queue fingerprint and a snapshot, as the agent's cycle takes them (after a ping
    when ``ping``): from a read whose jobs are a :class:`JobTable` (the CLI backend's
    compact read, the pyslurm backend's) the fingerprint is the read's own (one query
    fewer, and exactly the state planned: ``backend.reads_tables``); else
    :func:`queue_fingerprint` first, then the read.

    Raises:
        SlurmError: Slurm is unreachable or refused a query.
    """
    if getattr(backend, "reads_tables", False):
        snapshot = read_snapshot(backend, ping=ping)
        if isinstance(snapshot.jobs, JobTable):
            return snapshot.jobs.fingerprint(), snapshot
        ping = False
    if ping:
        backend.ping()
    fingerprint = queue_fingerprint(backend)
    return fingerprint, read_snapshot(backend)


def queue_fingerprint(backend: SlurmBackend) -> tuple[tuple[str, str], ...]:
    """A cheap summary of the queue that changes whenever a job arrives, starts or ends
    (:meth:`SlurmBackend.queue_fingerprint`: the CLI backend runs one plain-text squeue).

    Raises:
        SlurmError: Slurm is unreachable or refused the query.
    """
    return backend.queue_fingerprint()


def predicted_estimate(history: dict, user: int, request: int, runs: int = 2,
                       cold: str = "fewer", recent: dict | None = None) -> int:
    """The ``predict`` estimate (seconds): mean (integer division) of the user's last
    ``runs`` completed runtimes; with fewer: their mean (``cold`` "fewer") or ``request``
    (``cold`` "request"); none: ``request``; capped at ``request``
    (docs/scheduling-semantics.md).  ``recent``: user -> runtimes newest first
    (``PlanState.recent``); a user missing there uses ``history``'s last two."""
    last, before, count = history.get(user, (0, 0, 0))
    window = tuple((recent or {}).get(user, (last, before)))[:min(count, runs)]
    if count <= 0 or not window or (count < runs and cold == "request"):
        return request
    return min(sum(window) // len(window), request)


@dataclass
class PlanInputs:
    """A snapshot converted for ``plan``: the machine, the running and the pending tables.

    Attributes:
        now: the pass time, integer epoch seconds (never before a submit or start it holds).
        unit: "nodes" or "cpus".
        partition: the managed partition.
        total: usable units (nodes or CPUs) of the partition.
        running_ids: Slurm ids of the running rows, in job-id order.
        running: dict of arrays for ``plan`` (``procs``, ``start``, ``est``, ``request``, ``user``).
        pending_ids: Slurm ids of the pending rows, in (submit, job id) order.
        pending: dict of arrays for ``plan`` (``submit``, ``procs``, ``request``, ``user``,
            ``reservation``, ``priority``).
        pending_priority: the Slurm priority each pending row has now.
        skipped: job id -> why a pending job of the partition is not planned (held, a
            dependency, larger than the usable machine...); its priority is left alone.
        finished: jobs of the partition that completed and that Slurm still lists
            (MinJobAge), in end order: the runtime history a restarted agent rebuilds.
    """

    now: int
    unit: str
    partition: str
    total: int
    running_ids: np.ndarray
    running: dict[str, np.ndarray]
    pending_ids: np.ndarray
    pending: dict[str, np.ndarray]
    pending_priority: np.ndarray
    skipped: dict[int, str]
    finished: list[Job]

    @property
    def busy(self) -> int:
        """Units held by running jobs."""
        return int(self.running["procs"].sum(dtype=np.int64))


def _in_partition(job: Job, partition: str) -> bool:
    return partition in job.partition.split(",")


def _limit(job: Job, max_time: int | None) -> int:
    """The planning limit (seconds): the job's, else the partition's MaxTime, else
    :data:`UNLIMITED_SECONDS`; beyond ``MAX_TIME`` it plans as ``MAX_TIME``
    (:mod:`malleo.slurm_values`)."""
    if job.time_limit is not None:
        return values.clamp_duration(job.time_limit)
    return values.clamp_duration(max_time) if max_time else UNLIMITED_SECONDS


def _completing_estimate(now, start, request):
    """The planning estimate (seconds) of a COMPLETING job: it has ended and its nodes come
    back when the epilog is done, so it plans as ending at ``now + 1`` (the end Slurm's own
    backfill gives a job that waits on completing nodes), never at ``start + limit``, which
    would let the plan backfill short jobs ahead of the queue head in that window.  Capped
    by the request (a job killed at its limit): the core's overdue rule then ends it at
    ``now + 1`` all the same.  Works on scalars and numpy arrays alike."""
    return np.minimum(now + 1 - start, request)


def out_of_range(job: Job) -> str | None:
    """Why a job's timestamps cannot go to the core (beyond ``MAX_TIME``), else None."""
    for what, value in (("submit time", job.submit_time), ("start time", job.start_time)):
        if value is not None:
            try:
                values.check_time(value, what)
            except ValueError as exc:
                return str(exc)
    return None


def plan_inputs(snapshot: Snapshot, *, unit: str = "nodes", partition: str | None = None,
                estimate: str = "request", history: dict | None = None,
                predict_runs: int = 2, predict_cold: str = "fewer",
                recent: dict | None = None, predict_at: str = "pass",
                plan_state: Any = None,
                previous_reservation: dict[int, int] | None = None,
                previous_priority: dict[int, float] | None = None) -> PlanInputs:
    """Convert a snapshot into ``plan``'s inputs.

    Args:
        snapshot: from :func:`read_snapshot`.
        unit: "nodes" or "cpus" (module docstring).
        partition: the partition to manage; None: the cluster's default partition.
        estimate: the policy's estimate source: "request" (running jobs' planning estimate
            is their time limit) or "predict" (the prediction from ``history``, capped by
            the limit).  "actual" cannot be used live (runtimes are unknown).
        history: user -> (last runtime, the one before, count), as in ``PlanState.history``.
        predict_runs, predict_cold: the policy's predict variant (docs/policies.md).
        recent: user -> last runtimes newest first, as in ``PlanState.recent``.
        predict_at, plan_state: with ``predict_at = "submit"`` and a ``PlanState``, a
            running job's planning estimate is its prediction at submission
            (``plan_state.predict`` from the runs ended by its submit time), as the replay
            fixed it; otherwise the prediction from the history now.
        previous_reservation: job id -> planned start from the previous pass (conservative
            backfill keeps it); missing ids get -1.
        previous_priority: job id -> multifactor priority from the previous pass; missing
            ids get NaN.

    Returns:
        :class:`PlanInputs`.

    Raises:
        ValueError: an unknown unit, ``estimate="actual"``, or a partition Slurm does not list.
    """
    if unit not in UNITS:
        raise ValueError(f"unit: must be one of {', '.join(UNITS)}, got {unit!r}")
    if estimate == "actual":
        raise ValueError("estimate 'actual' needs the jobs' real runtimes, which a live "
                         "cluster does not know; use 'request' or 'predict'")
    if estimate == "learned":
        raise ValueError("estimate 'learned' is for replays (the agent does not keep the "
                         "learned model); use 'request' or 'predict'")
    part = partition or snapshot.default_partition
    if snapshot.partitions and part not in snapshot.partitions:
        raise ValueError(f"partition {part!r}: Slurm lists only "
                         f"{', '.join(sorted(snapshot.partitions)) or 'none'}")
    max_time = snapshot.partitions.get(part)
    history = history or {}
    prev_resv = previous_reservation or {}
    prev_prio = previous_priority or {}

    if isinstance(snapshot.nodes, NodeTable):
        names, cpus = snapshot.nodes.usable(part)
        usable = dict.fromkeys(names)
        total = len(names) if unit == "nodes" else int(cpus.sum())
    else:
        usable = {n.name: n for n in snapshot.nodes if n.is_available and part in n.partitions}
        total = len(usable) if unit == "nodes" else sum(n.cpus for n in usable.values())
    values.check_size(total, f"partition {part}: usable {unit}")
    if isinstance(snapshot.jobs, JobTable):
        return _table_inputs(snapshot, snapshot.jobs, unit, part, max_time, usable, total,
                             estimate, history, predict_runs, predict_cold, recent,
                             prev_resv, prev_prio, predict_at, plan_state)

    running, pending, finished = [], [], []
    skipped: dict[int, str] = {}
    active, max_t = ACTIVE_STATES, values.MAX_TIME
    for job in snapshot.jobs:
        # The per-job checks are written out (issue 16: 10,000 jobs a cycle): the same as
        # _in_partition, out_of_range, is_running and is_pending.
        if job.partition != part and not _in_partition(job, part):
            continue
        submit, start, state = job.submit_time, job.start_time, job.state
        if 0 <= submit <= max_t and (start is None or 0 <= start <= max_t):
            bad = None
        else:
            bad = out_of_range(job)
        if bad is not None and state == "PENDING":
            skipped[job.job_id] = bad
            continue
        if bad is not None and state in active:
            job = msgspec.structs.replace(job, start_time=None)     # holds nodes: counts as started now
        elif bad is not None:
            continue                                # finished: no runtime worth learning
        if state in active:
            running.append(job)
        elif state == "PENDING":
            pending.append(job)
        elif state == "COMPLETED" and job.start_time and job.end_time:
            finished.append(job)
    running.sort(key=lambda j: j.job_id)
    pending.sort(key=lambda j: (j.submit_time, j.job_id))
    finished.sort(key=lambda j: (j.end_time, j.job_id))

    latest = max([j.start_time or 0 for j in running] + [j.submit_time for j in pending] + [0])
    now = max(int(snapshot.read_time), latest)

    r_ids, r_procs, r_start, r_est, r_req, r_user = [], [], [], [], [], []
    for job in running:
        on_usable = [n for n in job.node_list if n in usable]
        if not on_usable:
            continue            # only on drained/down nodes, or not on this partition's nodes
        if unit == "nodes":
            size = len(on_usable)
        else:
            size = job.num_cpus * len(on_usable) // max(len(job.node_list), 1) or 1
        request = _limit(job, max_time)
        user = user_key(job)
        if estimate != "predict":
            est = request
        elif predict_at == "submit" and plan_state is not None:
            est = plan_state.predict(user, request, job.submit_time, predict_runs, predict_cold)
        else:
            est = predicted_estimate(history, user, request, predict_runs, predict_cold, recent)
        start = min(int(job.start_time or now), now)
        if job.state == "COMPLETING":
            est = int(_completing_estimate(now, start, request))
        r_ids.append(job.job_id)
        r_procs.append(size)
        r_start.append(start)
        r_est.append(est)
        r_req.append(request)
        r_user.append(user)
    busy = sum(r_procs)
    if busy > total:
        # Slurm's view and the node states disagree for a moment (a node just went down):
        # plan on what is known to be busy.
        total = busy

    p_ids, p_submit, p_procs, p_req, p_user, p_resv, p_prio, p_cur = [], [], [], [], [], [], [], []
    by_nodes, nan = unit == "nodes", float("nan")
    no_limit = values.clamp_duration(max_time) if max_time else UNLIMITED_SECONDS
    for job in pending:
        jid = job.job_id
        if job.is_held:
            skipped[jid] = "held"
            continue
        if job.reason in INELIGIBLE_REASONS:
            skipped[jid] = f"reason {job.reason}"
            continue
        size = max(int(job.num_nodes if by_nodes else job.num_cpus), 1)
        if size > total:
            skipped[jid] = f"needs {size} {unit}, {total} usable"
            continue
        limit, uid = job.time_limit, job.user_id
        p_ids.append(jid)
        p_submit.append(min(job.submit_time, now))
        p_procs.append(size)
        p_req.append(no_limit if limit is None else                  # _limit, written out
                     limit if 0 <= limit <= max_t else values.clamp_duration(limit))
        p_user.append(uid if uid is not None else user_key(job))
        p_resv.append(prev_resv.get(jid, -1))
        p_prio.append(prev_prio.get(jid, nan))
        p_cur.append(job.priority)

    return PlanInputs(
        now=now, unit=unit, partition=part, total=int(total),
        running_ids=np.array(r_ids, dtype=np.int64),
        running={"procs": np.array(r_procs, dtype=np.int32),
                 "start": np.array(r_start, dtype=np.int64),
                 "est": np.array(r_est, dtype=np.int64),
                 "request": np.array(r_req, dtype=np.int64),
                 "user": np.array(r_user, dtype=np.int64)},
        pending_ids=np.array(p_ids, dtype=np.int64),
        pending={"submit": np.array(p_submit, dtype=np.int64),
                 "procs": np.array(p_procs, dtype=np.int32),
                 "request": np.array(p_req, dtype=np.int64),
                 "user": np.array(p_user, dtype=np.int64),
                 "reservation": np.array(p_resv, dtype=np.int64),
                 "priority": np.array(p_prio, dtype=np.float64)},
        pending_priority=np.array(p_cur, dtype=np.int64),
        skipped=skipped, finished=finished)


def _table_inputs(snapshot: Snapshot, table: JobTable, unit: str, part: str,
                  max_time: int | None, usable: dict, total: int, estimate: str,
                  history: dict, predict_runs: int, predict_cold: str, recent: dict | None,
                  prev_resv: dict, prev_prio: dict, predict_at: str = "pass",
                  plan_state: Any = None) -> PlanInputs:
    """:func:`plan_inputs` on the compact read's columns: the same rules, row for row, as
    the loop over Job records above, vectorised with numpy (issue 16: no Python object per
    pending job; running jobs, a few thousand, are walked for their node lists)."""
    max_t = values.MAX_TIME
    n = len(table)
    enc = part.encode()
    in_part = table.partition == enc
    for row in np.flatnonzero(np.strings.find(table.partition, b",") >= 0).tolist():
        in_part[row] = part in table.partition[row].decode().split(",")
    submit, start = table.submit_time, table.start_time
    state = table.state
    # out_of_range's test (start 0 = none; a pending job's start is Slurm's estimate, which
    # the Job records keep apart as expected_start)
    ok = (submit >= 0) & (submit <= max_t) & ((start <= max_t) | (state == b"PENDING"))
    active = table.is_active & in_part
    is_pending = (state == b"PENDING") & in_part
    skipped: dict[int, str] = {}
    for row in np.flatnonzero(is_pending & ~ok).tolist():
        skipped[int(table.job_id[row])] = out_of_range(table.job(row))
    start_eff = np.where(ok & (state != b"PENDING"), start, 0)   # out of range: started now
    done = (state == b"COMPLETED") & in_part & ok & (start > 0) & (table.end_time > 0)
    finished = sorted((table.job(r) for r in np.flatnonzero(done).tolist()),
                      key=lambda j: (j.end_time, j.job_id))

    run_rows = np.flatnonzero(active)
    run_rows = run_rows[np.argsort(table.job_id[run_rows], kind="stable")]
    pend_rows = np.flatnonzero(is_pending & ok)
    pend_rows = pend_rows[np.lexsort((table.job_id[pend_rows], submit[pend_rows]))]
    latest = max(int(start_eff[run_rows].max(initial=0)), int(submit[pend_rows].max(initial=0)))
    now = max(int(snapshot.read_time), latest)

    r_keep, r_procs = [], []
    by_nodes = unit == "nodes"
    # Every node Slurm lists usable in this partition (the common case): a running job's
    # usable nodes are all its nodes, counted without naming them.
    everywhere = (isinstance(snapshot.nodes, NodeTable)
                  and len(usable) == snapshot.nodes.distinct_names())
    for row in run_rows.tolist():
        text = table.node_list[row].decode()
        if everywhere:
            on_usable = listed = hostlist.count(text)
        else:
            names = hostlist.expand(text)
            on_usable, listed = sum(1 for name in names if name in usable), len(names)
        if not on_usable:
            continue
        r_keep.append(row)
        r_procs.append(on_usable if by_nodes else
                       int(table.num_cpus[row]) * on_usable // max(listed, 1) or 1)
    r_rows = np.array(r_keep, dtype=np.int64)
    no_limit = values.clamp_duration(max_time) if max_time else UNLIMITED_SECONDS
    r_req = _requests(table.time_limit[r_rows], no_limit)
    r_user = table.user_id[r_rows]
    if estimate == "predict" and predict_at == "submit" and plan_state is not None:
        r_est = np.array([plan_state.predict(u, q, t, predict_runs, predict_cold)
                          for u, q, t in zip(r_user.tolist(), r_req.tolist(),
                                             table.submit_time[r_rows].tolist())],
                         dtype=np.int64)
    elif estimate == "predict":
        r_est = np.array([predicted_estimate(history, u, q, predict_runs, predict_cold, recent)
                          for u, q in zip(r_user.tolist(), r_req.tolist())], dtype=np.int64)
    else:
        r_est = r_req
    r_start = np.minimum(np.where(start_eff[r_rows] > 0, start_eff[r_rows], now), now)
    completing = state[r_rows] == b"COMPLETING"
    if completing.any():
        r_est = np.where(completing, _completing_estimate(now, r_start, r_req), r_est)
    busy = sum(r_procs)
    if busy > total:
        total = busy

    held = table.is_held[pend_rows]
    reason = table.reason[pend_rows]
    inelig = np.isin(reason, [r.encode() for r in INELIGIBLE_REASONS]) & ~held
    size = np.maximum(table.num_nodes[pend_rows] if by_nodes else table.num_cpus[pend_rows], 1)
    too_big = (size > total) & ~held & ~inelig
    for row in pend_rows[held].tolist():
        skipped[int(table.job_id[row])] = "held"
    for row, why in zip(pend_rows[inelig].tolist(), reason[inelig].tolist()):
        skipped[int(table.job_id[row])] = f"reason {why.decode()}"
    for row, want in zip(pend_rows[too_big].tolist(), size[too_big].tolist()):
        skipped[int(table.job_id[row])] = f"needs {want} {unit}, {total} usable"
    keep = ~(held | inelig | too_big)
    p_rows = pend_rows[keep]
    p_ids = table.job_id[p_rows]
    ids = p_ids.tolist()
    return PlanInputs(
        now=now, unit=unit, partition=part, total=int(total),
        running_ids=table.job_id[r_rows],
        running={"procs": np.array(r_procs, dtype=np.int32),
                 "start": r_start.astype(np.int64),
                 "est": r_est.astype(np.int64),
                 "request": r_req,
                 "user": r_user.astype(np.int64)},
        pending_ids=p_ids,
        pending={"submit": np.minimum(submit[p_rows], now),
                 "procs": size[keep].astype(np.int32),
                 "request": _requests(table.time_limit[p_rows], no_limit),
                 "user": table.user_id[p_rows].copy(),
                 "reservation": (np.array([prev_resv.get(j, -1) for j in ids], dtype=np.int64)
                                 if prev_resv else np.full(len(ids), -1, dtype=np.int64)),
                 "priority": (np.array([prev_prio.get(j, np.nan) for j in ids],
                                       dtype=np.float64)
                              if prev_prio else np.full(len(ids), np.nan))},
        pending_priority=table.priority[p_rows].copy(),
        skipped=skipped, finished=finished)


def _requests(limits: np.ndarray, no_limit: int) -> np.ndarray:
    """Planning limits (seconds) from time limits (-1: none): :func:`_limit`, vectorised."""
    return np.where(limits < 0, no_limit, np.minimum(limits, values.MAX_TIME)).astype(np.int64)
