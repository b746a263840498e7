"""The replay driver: a job table or SWF trace through the core, into a :class:`ReplayResult`.

Times are integer seconds on the trace's clock, sizes processors.  The driver reads the
trace, sorts it by (submit, job number), optionally takes a slice of it, drops jobs the
machine cannot hold, maps processors to whole nodes on node-exclusive machines, calls
:func:`malleo._core.simulate` once and computes the metrics.
"""
from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from malleo.emulator import metrics
from malleo.emulator.power import PowerModel
from malleo.emulator.results import JOB_COLUMNS, JobColumns, ReplayResult
from malleo.emulator.swf_fields import FIELDS
from malleo.errors import MalleoError
from malleo.flexible import FlexibleJobs
from malleo.policy import Policy

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

__all__ = ["replay", "load_workload", "Workload", "parse_slice", "DEFAULT_WORKLOAD",
           "default_workload_name"]

Progress = Callable[[int, int, int], object]
"""A replay's progress callback: ``progress(jobs ended, jobs replayed, simulated time s)``."""

DEFAULT_WORKLOAD: dict[str, int] = {"jobs": 10000, "procs": 256, "seed": 0}
"""The embedded default workload: ``generate_lublin(jobs, procs, seed)``."""

DROP_TOO_LARGE = "larger_than_machine"
"""``dropped`` reason: the job asks for more processors (or nodes) than the machine has."""

_DERIVED = ("procs", "runtime", "estimate")

REPLAY_FIELDS = ("job_number", "submit_time", "user_id", "queue", "partition", "executable")
"""The SWF fields a replay reads, besides the derived ``procs``, ``runtime`` and
``estimate``; the other 13 only go back out in :meth:`ReplayResult.to_swf`."""

NARROWED_FIELDS = ("job_number", "user_id", "queue", "partition", "executable")
"""Of :data:`REPLAY_FIELDS`, the ids ``load_workload(swf_fields=False)`` reads as int32
when every value fits (20 bytes a job less: issue 16); the replay's result reads them as
int64 (:class:`~malleo.emulator.results.JobColumns`), so its tables keep their dtypes."""


def default_workload_name() -> str:
    """How results and SWF headers name the embedded default workload."""
    w = DEFAULT_WORKLOAD
    return f"lublin(jobs={w['jobs']}, procs={w['procs']}, seed={w['seed']})"


def parse_slice(jobs: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``"START:COUNT"`` or ``(start, count)`` -> ``(start, count)``; None stays None.

    START is the 0-based position in (submit, job number) order, COUNT >= 1 jobs.

    Raises:
        MalleoError: not of that form, START < 0 or COUNT < 1.
    """
    if jobs is None:
        return None
    if isinstance(jobs, str):
        match = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", jobs)
        if not match:
            raise MalleoError(f"jobs: expected START:COUNT (e.g. 0:1000), got {jobs!r}")
        start, count = int(match.group(1)), int(match.group(2))
    else:
        try:
            start, count = (int(v) for v in jobs)
        except (TypeError, ValueError):
            raise MalleoError(f"jobs: expected (start, count), got {jobs!r}") from None
    if start < 0 or count < 1:
        raise MalleoError(f"jobs: START must be >= 0 and COUNT >= 1, got {start}:{count}")
    return start, count


def replay(trace_or_table: "str | Path | pd.DataFrame | Workload | None" = None,
           policy: Policy | None = None, *, procs: int | None = None, node_procs: int = 0,
           jobs: str | tuple[int, int] | None = None,
           bsld_threshold: float = metrics.BSLD_THRESHOLD,
           flexible: FlexibleJobs | None = None, power: PowerModel | None = None,
           load: float | None = None, breakdowns: bool = False,
           progress: Progress | None = None, **read_options: Any) -> ReplayResult:
    """Replay a workload through the scheduling core under ``policy``.

    Args:
        trace_or_table: an SWF trace path (read with ``read_swf(path, **read_options)``), a
            job table (a DataFrame with the SWF fields, and ideally the derived ``procs``,
            ``runtime``, ``estimate`` columns), or None for the embedded default workload
            (``generate_lublin(10000, 256, seed=0)``), or a :class:`Workload` from
            :func:`load_workload` (``read_options`` are then ignored).
        policy: the policy; None means ``Policy()`` (FCFS with EASY backfill).
        procs: processors of the machine; default: the trace header's (``meta.procs``),
            256 for the default workload, required for a table without ``procs`` info.
        node_procs: processors per node on a node-exclusive machine (0: processors are
            allocated one by one).  Jobs then hold ``ceil(procs / node_procs)`` whole nodes;
            the machine has ``procs // node_procs`` nodes.
        jobs: replay only a slice, ``"START:COUNT"`` or ``(start, count)``: positions in
            (submit, job number) order.  The slice starts on an empty machine at its first
            job's submit time; times are not shifted.
        bsld_threshold: tau of the bounded slowdown, seconds (> 0).
        flexible: which trace jobs become moldable or malleable (workload synthesis,
            :class:`malleo.flexible.FlexibleJobs`); None or fraction 0: all rigid.  How
            they are resized is ``policy.malleability``.
        power: the power model of the energy metrics (None: the defaults).
        load: a target offered load: the replayed jobs' arrivals (after the slice and the
            dropped jobs, on the replayed machine) are scaled to reach it
            (:mod:`malleo.emulator.load_scale`); None: as in the trace.
        breakdowns: add the summary's ``applications``, ``by_application`` and
            ``by_size_class`` (docs/metrics.md; the CLI always does).
        progress: None, or ``progress(ended, n, now)``, called by the core every few
            thousand event times with the jobs ended so far, the jobs replayed and the
            simulated time reached (seconds): see :func:`malleo._core.simulate`.
        **read_options: passed to ``read_swf`` (e.g. ``lenient``, ``overrun``).

    Returns:
        A :class:`ReplayResult`.

    Raises:
        MalleoError: bad arguments (``procs``, ``node_procs``, ``jobs``, threshold);
            TraceError from reading the trace.

    Examples:
        >>> from malleo.emulator import replay
        >>> from malleo.policy import Policy
        >>> result = replay(None, Policy(order="sjf", backfill="conservative"))
        >>> result.summary["bsld_mean"]  # doctest: +SKIP
    """
    policy = Policy() if policy is None else policy
    if not isinstance(policy, Policy):
        raise MalleoError(f"policy: expected a malleo.policy.Policy, got {type(policy).__name__}")
    flexible = FlexibleJobs() if flexible is None else flexible
    if not isinstance(flexible, FlexibleJobs):
        raise MalleoError(f"flexible: expected a malleo.flexible.FlexibleJobs, "
                          f"got {type(flexible).__name__}")
    if not bsld_threshold > 0:
        raise MalleoError(f"bsld_threshold: must be > 0 seconds, got {bsld_threshold}")
    node_procs = int(node_procs or 0)
    if node_procs < 0:
        raise MalleoError(f"node_procs: must be >= 0 (0: not node-exclusive), got {node_procs}")
    window = parse_slice(jobs)

    if isinstance(trace_or_table, Workload):
        workload = trace_or_table
    else:
        workload = load_workload(trace_or_table, procs=procs, **read_options)
    table, meta, source = workload.columns, workload.meta, workload.source
    dropped = {k: v for k, v in workload.dropped.items() if v}
    machine = procs if procs is not None else workload.procs
    if machine is None or int(machine) < 1:
        raise MalleoError("procs: the machine size is unknown (the trace header has no "
                          "MaxProcs/MaxNodes): pass procs (--procs)")
    machine = int(machine)
    if node_procs and machine < node_procs:
        raise MalleoError(f"node_procs: {node_procs} processors per node is more than the "
                          f"machine's {machine} processors")

    # The table is a dict of numpy columns from here on (no pandas: issue 16).
    if not _is_sorted(table["submit_time"], table["job_number"]):
        table = _rows(table, np.lexsort((table["job_number"], table["submit_time"])))
    if window is not None:
        start, count = window
        if start >= workload.job_count:
            raise MalleoError(f"jobs: START {start} is past the last job "
                              f"(the trace has {workload.job_count} jobs)")
        table = _rows(table, slice(start, start + count))

    # the rigid path keeps the workload's int32 sizes (the core checks them as int64 on
    # a copy of its own, freed before its loop; the result reads them as int64)
    want = np.asarray(table["procs"])
    if node_procs or flexible.enabled:
        want = want.astype(np.int64)
    if node_procs:
        units = -(-want // node_procs)          # whole nodes, rounding up
        total_units = machine // node_procs
    else:
        units, total_units = want, machine
    fits = units <= total_units
    if not fits.all():
        dropped = dict(dropped)
        dropped[DROP_TOO_LARGE] = dropped.get(DROP_TOO_LARGE, 0) + int((~fits).sum())
        table, units, want = _rows(table, fits), units[fits], want[fits]

    alloc = units * node_procs if node_procs else units
    machine_procs = total_units * node_procs if node_procs else machine
    runtime = np.asarray(table["runtime"])
    load_scale = None
    from malleo.emulator.load_scale import offered_load
    if load is not None:
        from malleo.emulator.load_scale import rescale_submits

        scaled, load_scale = rescale_submits(table["submit_time"], alloc, runtime,
                                             machine_procs, load)
        table = dict(table, submit_time=scaled)
    # before the replay, while less memory is held (its float64 copies: issue 16)
    offered = offered_load(table["submit_time"], alloc, runtime, machine_procs)
    unit = node_procs or 1
    if flexible.enabled:
        table = {name: (values.astype(np.int64) if name in NARROWED_FIELDS else values)
                 for name, values in table.items()}
        from malleo.emulator.malleable_result import malleable_result

        import pandas as pd

        frame = pd.DataFrame(table, columns=list(table), copy=False)
        flex, core = _simulate_malleable(frame, units, total_units, policy, flexible,
                                         progress)
        result = malleable_result(frame, core, flex, alloc, machine_procs, node_procs, policy,
                                  meta, dropped, source, bsld_threshold, flexible)
        # the core's work done, every job under its speedup model
        useful = np.asarray(core["work_done"], dtype=np.float64) * unit
    else:
        # the core's output dict is not kept: its columns the result does not take
        # (``est``) are freed with it (issue 16)
        result = _result(table, _simulate(table, units, total_units, policy, progress),
                         want, alloc, machine_procs, node_procs, policy, meta, dropped,
                         source, bsld_threshold)
        from malleo.emulator.work_metrics import rigid_work

        # rigid: each job at its size under the policy's speedup model
        useful = rigid_work(units, runtime, policy.malleability.speedup, unit)
    from malleo.emulator.work_metrics import work_summary

    executable = table["executable"] if "executable" in table else None  # int32 or int64
    # the result's columns as stored: int32 sizes are read as they are (no int64 copy)
    result.summary.update(work_summary(functools.partial(result.column, as_stored=True),
                                       flexible.enabled, executable,
                                       machine_procs, result.summary.get("makespan"), power,
                                       breakdowns, useful=useful))
    result.summary["speedup_model"] = policy.malleability.speedup  # useful work assumes it
    result.summary["offered_load"] = offered
    if load_scale is not None:
        result.summary["load_scale"] = load_scale
    return result


class Workload:
    """A loaded workload, ready to replay under several policies without reading it again.

    Attributes:
        table: kept jobs, SWF fields plus ``procs`` (int32), ``runtime`` and ``estimate``
            (int64 seconds), in file order, as a DataFrame (built on first read when the
            workload was made from columns: the default workload is, so replaying it never
            imports pandas).
        columns: the same as a dict of numpy arrays (views of the DataFrame's columns).
        job_count: number of jobs.
        meta: the trace's metadata (``read_swf``'s second value), None for a table.
        dropped: reason -> jobs dropped while loading.
        source: the trace path, ``"table"`` or the default workload's name.
        procs: the machine's processors known from the source (header or default), or None.
    """

    def __init__(self, table: "pd.DataFrame | dict[str, np.ndarray]", meta: Any,
                 dropped: dict[str, int], source: str, procs: int | None) -> None:
        self._table = table
        self.meta, self.dropped, self.source, self.procs = meta, dropped, source, procs

    def __repr__(self) -> str:
        return (f"Workload(jobs={self.job_count}, source={self.source!r}, procs={self.procs}, "
                f"dropped={self.dropped})")

    @property
    def table(self) -> pd.DataFrame:
        if isinstance(self._table, dict):
            import pandas as pd

            self._table = pd.DataFrame(self._table, columns=list(self._table), copy=False)
        return self._table

    @property
    def columns(self) -> dict[str, np.ndarray]:
        t = self._table
        return dict(t) if isinstance(t, dict) else {c: t[c].to_numpy() for c in t.columns}

    @property
    def job_count(self) -> int:
        t = self._table
        return len(next(iter(t.values()), ())) if isinstance(t, dict) else len(t)


def load_workload(trace_or_table: str | Path | pd.DataFrame | None = None, *,
                  procs: int | None = None, swf_fields: bool = True,
                  **read_options: Any) -> Workload:
    """Read a trace, clean a table or generate the default workload (see :func:`replay`).

    Args:
        trace_or_table: an SWF path, a job table, or None for the embedded default.
        procs: the machine's processors: jobs larger are dropped (for a trace, passed to
            ``read_swf``; required for a table that has only the SWF fields).
        swf_fields: False keeps, of a trace or the default workload, only the columns a
            replay reads (:data:`REPLAY_FIELDS` and the derived ones): 96 of 164 bytes a
            job less (issue 16: ``malleo replay`` without ``--swf-out``); its results
            cannot then be written as SWF.
        **read_options: ``read_swf`` options for a path; ``procs_from`` and ``overrun``
            also apply to a table.

    Raises:
        MalleoError: a bad argument; TraceError from ``read_swf``.
    """
    if trace_or_table is None:
        from malleo.emulator.workload import generate_lublin

        w = DEFAULT_WORKLOAD
        raw = generate_lublin(w["jobs"], w["procs"], w["seed"], as_columns=True)
        table, dropped = _derive(raw, w["procs"], read_options)
        if not swf_fields:
            table = _replay_columns(table)
        return Workload(table, None, dropped, default_workload_name(), w["procs"])
    if _is_frame(trace_or_table):
        if all(c in trace_or_table.columns for c in _DERIVED):
            table, dropped = trace_or_table, {}
        else:
            if procs is None:
                raise MalleoError("procs: a table with only SWF fields needs the machine "
                                  "size (procs=...) to be cleaned")
            table, dropped = _derive(trace_or_table, int(procs), read_options)
        missing = [c for c in ("job_number", "submit_time", "user_id", "queue", "partition",
                               *_DERIVED) if c not in table.columns]
        if missing:
            raise MalleoError(f"table: missing column(s) {', '.join(missing)}")
        return Workload(table, None, dropped, "table", None)
    if isinstance(trace_or_table, (str, os.PathLike)):
        from malleo.emulator.swf import read_swf

        table, meta = read_swf(trace_or_table, procs=procs, as_columns=True,
                               fields=None if swf_fields else REPLAY_FIELDS,
                               narrow=() if swf_fields else NARROWED_FIELDS, **read_options)
        if not swf_fields:
            table = _replay_columns(table)
        return Workload(table, meta, dict(getattr(meta, "dropped", {}) or {}),
                        str(trace_or_table), getattr(meta, "procs", None))
    raise MalleoError(f"trace: expected a path, a DataFrame or None, got "
                      f"{type(trace_or_table).__name__}")


def _is_frame(value: Any) -> bool:
    """True for a pandas DataFrame, without importing pandas when it is not loaded."""
    import sys

    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def _replay_columns(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Only the columns a replay reads (``load_workload(swf_fields=False)``)."""
    return {name: table[name] for name in (*REPLAY_FIELDS, *_DERIVED)}


def _rows(table: dict[str, np.ndarray], rows) -> dict[str, np.ndarray]:
    """The rows ``rows`` (a slice, an index array or a boolean mask) of every column."""
    return {name: values[rows] for name, values in table.items()}


def _derive(raw: "pd.DataFrame | dict[str, np.ndarray]", machine_procs: int,
            read_options: dict[str, Any]) -> tuple["pd.DataFrame | dict[str, np.ndarray]",
                                                   dict[str, int]]:
    """Clean an SWF-fields table (a DataFrame, or a dict of columns: the result is of the
    same kind) by read_swf's rules (:mod:`malleo.emulator.swf_clean`).

    Only the ``procs_from`` and ``overrun`` read options apply to a table.
    Returns ``(kept rows with the derived columns, dropped reason -> count)``.
    """
    from malleo.emulator import swf_clean

    names = list(raw) if isinstance(raw, dict) else list(raw.columns)
    missing = [c for c in FIELDS if c not in names]
    if missing:
        raise MalleoError(f"table: missing SWF column(s) {', '.join(missing)}")
    options = {k: v for k, v in read_options.items() if k in ("procs_from", "overrun")}
    ints = {c: np.asarray(raw[c]).astype(np.int64, copy=False) for c in
            ("run_time", "allocated_procs", "requested_procs", "requested_time")}
    try:
        derived, keep, dropped = swf_clean.derive(ints, machine_procs, **options)
    except ValueError as exc:
        raise MalleoError(str(exc)) from None
    if isinstance(raw, dict):
        table = _rows({**raw, **derived}, keep)
    else:
        table = raw.assign(**derived)[keep].reset_index(drop=True)
    return table, {k: v for k, v in dropped.items() if v}


def _is_sorted(submit: np.ndarray, number: np.ndarray) -> bool:
    """True if rows are already in (submit, job number) order (ties in both allowed)."""
    # comparisons, not differences: no overflow of narrow ids, no int64 temporaries
    later, earlier = submit[1:], submit[:-1]
    return bool(np.all((later > earlier) | ((later == earlier) & (number[1:] >= number[:-1]))))


def _simulate(table: dict[str, np.ndarray], units: np.ndarray, total_units: int,
              policy: Policy, progress: Progress | None = None) -> dict[str, np.ndarray]:
    from malleo._core import simulate

    def col(values, dtype):
        # pandas hands out read-only views (copy-on-write); the core takes writable
        # C-contiguous buffers, so copy only when needed.
        return np.require(values, dtype=dtype, requirements=["C", "W"])

    # Sizes, users, queues and partitions go in as they are (int32 or int64): the core
    # checks them on int64 copies of its own, which it frees before its loop, and keeps
    # its own int32 sizes, user codes and queue/partition terms (issue 16: an int64 copy
    # made here would be held through the whole replay).
    return simulate(col(table["submit_time"], np.int64), col(table["runtime"], np.int64),
                    col(table["estimate"], np.int64), np.ascontiguousarray(units),
                    np.ascontiguousarray(table["user_id"]),
                    np.ascontiguousarray(table["queue"]),
                    np.ascontiguousarray(table["partition"]), int(total_units), policy,
                    progress=progress)


def _simulate_malleable(table: pd.DataFrame, units: np.ndarray, total_units: int,
                        policy: Policy, flexible: FlexibleJobs,
                        progress: Progress | None = None
                        ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The flexibility arrays (:func:`malleo.emulator.flex.flexible_jobs`) and the
    malleable core's output for them."""
    from malleo._core.malleable_loop import simulate_malleable
    from malleo.emulator.flex import flexible_jobs

    flex = flexible_jobs(units, table["queue"].to_numpy(), table["user_id"].to_numpy(),
                         int(total_units), flexible, policy.malleability)
    core = simulate_malleable(
        table["submit_time"].to_numpy(np.int64), table["runtime"].to_numpy(np.int64),
        table["estimate"].to_numpy(np.int64), np.asarray(units, dtype=np.int32),
        table["user_id"].to_numpy(np.int32), table["queue"].to_numpy(np.int32),
        table["partition"].to_numpy(np.int32), int(total_units), policy, flex["kind"],
        flex["min_procs"], flex["max_procs"], flex["speedup_a"], flex["speedup_b"],
        progress=progress)
    return flex, core


def _result(table, core, want, alloc, machine_procs, node_procs, policy, meta, dropped, source,
            bsld_threshold) -> ReplayResult:
    """The ReplayResult of a rigid replay; its tables are kept as columns (DataFrames are
    built on first read, :class:`ReplayResult`)."""
    submit = np.asarray(table["submit_time"], dtype=np.int64)
    runtime = np.asarray(table["runtime"], dtype=np.int64)
    start = np.asarray(core["start"], dtype=np.int64)
    end = np.asarray(core["end"], dtype=np.int64)
    user = table["user_id"]
    backfilled = np.asarray(core["backfilled"]).astype(bool)
    alloc = np.asarray(alloc)           # int32 sizes kept as they are (read as int64)

    def kept(values, dtype=None):
        # The result keeps the table's own column as a read-only view (no copy: issue 16,
        # memory); ReplayResult copies read-only columns when it builds its DataFrame, so
        # the result still shares nothing writable with the workload.
        values = np.asarray(values)
        if dtype is not None and values.dtype != dtype:
            return values.astype(dtype)
        view = values.view()
        view.flags.writeable = False
        return view

    # wait, response, bsld and slowdown are derived on read, not kept (JobColumns)
    jobs = JobColumns({
        "job_id": kept(table["job_number"]),
        "submit": kept(submit), "start": start, "end": end,
        "procs": kept(want), "alloc_procs": kept(alloc),
        "runtime": kept(runtime), "estimate": kept(table["estimate"], np.int64),
        "user": kept(table["user_id"]), "queue": kept(table["queue"]),
        "partition": kept(table["partition"]),
        "backfilled": backfilled,
        "reservation": np.asarray(core["reservation"], dtype=np.int64),  # the core's own
    }, JOB_COLUMNS, bsld_threshold)
    summary, users = metrics.summary_and_user_columns(
        submit, start, end, runtime, alloc, user, backfilled, machine_procs, bsld_threshold,
        dropped, per_job=jobs)
    users["user"] = users["user"].astype(np.int64, copy=False)   # of int32 ids too
    if node_procs and submit.size:
        used = float(np.sum(jobs["procs"].astype(np.float64) * runtime))
        span = summary["makespan"]
        summary["utilization_used"] = used / (machine_procs * span) if span > 0 else float("nan")
    summary.update({"policy": policy.describe(), "procs": machine_procs,
                    "node_procs": node_procs, "source": source})
    swf_columns = {c: kept(table[c]) for c in FIELDS if c in table}
    return ReplayResult(jobs=jobs, summary=summary, users=users, dropped=dict(dropped),
                        policy=policy, meta=meta, procs=machine_procs, node_procs=node_procs,
                        source=source, swf_table=swf_columns)
