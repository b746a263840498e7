"""The result of one replay and its writers (CSV, Parquet, SWF).

Times are integer seconds on the trace's clock; sizes are processors.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
from dataclasses import dataclass, field
from typing import Any

from typing import TYPE_CHECKING

import numpy as np

from malleo.emulator import metrics
from malleo.errors import MalleoError
from malleo.policy import Policy

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

__all__ = ["ReplayResult", "JOB_COLUMNS", "JobColumns", "log_paths", "group_history"]

JOB_COLUMNS: tuple[str, ...] = (
    "job_id", "submit", "start", "end", "wait", "response", "procs", "alloc_procs",
    "runtime", "estimate", "bsld", "slowdown", "user", "queue", "partition",
    "backfilled", "reservation",
)
"""Columns of :attr:`ReplayResult.jobs`, in order."""


@dataclass
class ReplayResult:
    """What one replay produced.

    Attributes:
        jobs: one row per replayed job, in (submit, job number) order, columns
            :data:`JOB_COLUMNS`: ``job_id`` (SWF job number), ``submit``/``start``/``end``
            (s), ``wait``/``response`` (s), ``procs`` (processors the job asked for),
            ``alloc_procs`` (processors it held: whole nodes on node-exclusive machines,
            else ``procs``), ``runtime``/``estimate`` (s), ``bsld``/``slowdown``,
            ``user``/``queue``/``partition`` (SWF numbers), ``backfilled`` (bool),
            ``reservation`` (first planned start, s, or -1).
        summary: the summary metrics (see :func:`malleo.emulator.metrics.summarize` and
            docs/metrics.md), plus ``policy``, ``procs``, ``node_procs`` and ``source``.
        users: per-user ``jobs``, ``bsld_mean``, ``wait_mean``, indexed by user id.

    ``jobs``, ``users`` and ``swf_table`` may be given as DataFrames or as dicts of
    equal-length numpy columns (the rigid driver's way): read, each is a DataFrame, built
    on first read, so a replay that only prints its summary never imports pandas (issue 16:
    start-up and memory).  :meth:`column` reads one job column without building the table.
        dropped: reason -> number of trace jobs not replayed.
        policy: the policy replayed.
        flexible: the workload synthesis of a malleable replay (which jobs were made
            flexible, :class:`malleo.flexible.FlexibleJobs`), None for a rigid replay.
        meta: the trace's metadata (from ``read_swf``) or None for a table.
        procs: processors of the machine (P).
        node_procs: processors per node on a node-exclusive machine, else 0.
        source: what was replayed (a path, ``"table"`` or the default workload's name).
        swf_table: the input SWF fields of the replayed jobs (for :meth:`to_swf`).
        size_log: malleable replays only (else None): one row per size change,
            ``job_id``, ``time`` (s), ``size`` (processors, or nodes when node-exclusive),
            in time order, each job's start included (docs/malleability.md).  Malleable
            replays also add the job columns ``kind``, ``min_procs``, ``max_procs``,
            ``elapsed``, ``n_expand``, ``n_shrink``, ``reconfig_time``, ``proc_seconds``.
        expander_log: malleable replays only (else None): the expander requests of the
            slurm expand mode (empty in-place), one row per event in time order:
            ``job_id`` (the job it grows), ``time`` (s), ``event`` (``request``,
            ``merge`` or ``cancel``), ``procs`` (processors asked for), ``estimate`` (s).
    """

    jobs: pd.DataFrame
    summary: dict[str, Any]
    users: pd.DataFrame
    dropped: dict[str, int]
    policy: Policy
    meta: Any
    procs: int
    node_procs: int
    source: str
    swf_table: pd.DataFrame = field(repr=False)
    flexible: Any = None
    size_log: pd.DataFrame | None = field(default=None, repr=False)
    expander_log: pd.DataFrame | None = field(default=None, repr=False)

    def column(self, name: str, *, as_stored: bool = False) -> np.ndarray:
        """One column of :attr:`jobs` as a numpy array, without building the DataFrame
        when it has not been built yet.  ``as_stored``: an integer column as the result
        stores it (int32 ids and sizes of a narrowed workload, :class:`JobColumns`), not
        widened to the table's int64: no copy."""
        value = self.__dict__["_jobs"]
        if isinstance(value, JobColumns) and as_stored:
            return value.stored(name)
        return value[name] if isinstance(value, dict) else value[name].to_numpy()

    def size_history(self) -> dict[int, list[tuple[int, int]]]:
        """Malleable replays: job_id -> [(time, size), ...], each job's size over time
        (seconds, processors or allocated units), its start first; empty for a rigid replay.
        Built from the compact change log (:attr:`size_log`: ``job_id``, ``time``,
        ``size``) on each call."""
        if self.size_log is None:
            return {}
        return group_history(self.size_log["job_id"], self.size_log["time"],
                             self.size_log["size"])

    @functools.cached_property
    def timeline(self) -> pd.DataFrame:
        """Utilization and queue length over time (see :func:`metrics.timeline`).

        Computed on first access: one row per distinct submit/start/end time.
        """
        col = self.column
        return metrics.timeline(col("submit"), col("start"), col("end"), col("alloc_procs"),
                                col("runtime"), self.procs)

    def to_dict(self) -> dict[str, Any]:
        """The summary, dropped counts and policy as JSON-ready plain data."""
        from malleo.policy_file import policy_to_dict     # TOML reading: not at start-up
        return _plain({**self.summary, "policy": policy_to_dict(self.policy, self.flexible),
                       "policy_name": self.policy.describe(self.flexible)})

    def to_csv(self, path: str | Path) -> None:
        """Write :attr:`jobs` as CSV (header row, no index)."""
        self.jobs.to_csv(path, index=False)

    def to_parquet(self, path: str | Path) -> None:
        """Write :attr:`jobs` as Parquet; needs pyarrow (``pip install 'malleo[parquet]'``).

        Raises:
            MalleoError: pyarrow is not installed.
        """
        _require_pyarrow(path)
        self.jobs.to_parquet(path, index=False, engine="pyarrow")

    def to_swf(self, path: str | Path) -> None:
        """Write the replayed schedule as an SWF trace.

        The input's 18 fields are kept, except ``wait_time`` (the replayed wait),
        ``run_time`` (the replayed runtime) and ``allocated_procs`` (processors held); the
        header keeps the trace's, with MaxProcs set to the replayed machine, and a note
        names the source trace and the policy.  Submit times are unchanged.
        """
        from malleo.emulator.swf import TraceMeta, write_swf
        from malleo.emulator.swf_fields import FIELDS

        missing = [f for f in FIELDS if f not in list(self.__dict__["_swf_table"])]
        if missing:
            raise MalleoError(f"{path}: cannot write SWF: the workload was loaded without "
                              f"the SWF fields {', '.join(missing)} "
                              f"(load_workload(swf_fields=False)); load it with them")
        table = self.swf_table.assign(runtime=self.jobs["runtime"].to_numpy(),
                                      procs=self.jobs["alloc_procs"].to_numpy())
        meta = dataclasses.replace(self.meta) if self.meta is not None else TraceMeta()
        meta.max_procs = self.procs
        if self.node_procs:
            meta.max_nodes = self.procs // self.node_procs
        write_swf(path, table, meta, source=self.source,
                  policy=self.policy.describe(self.flexible),
                  start=self.jobs["start"].to_numpy())

    def write(self, path: str | Path) -> list[Path]:
        """Write :attr:`jobs` by file extension: ``.csv`` or ``.parquet``; for a malleable
        replay also its logs beside it, in the same format (:func:`log_paths`): the size log
        as ``STEM.sizes.EXT`` (``job_id, time, procs``: processors, whole nodes times their
        processors on node-exclusive machines, which ``malleo report`` draws in the Gantt
        chart) and, when not empty, the expander log as ``STEM.expanders.EXT``.

        Returns:
            The paths written, the job table first.

        Raises:
            MalleoError: another extension.
        """
        from pathlib import Path

        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".parquet", ".pq"):
            raise MalleoError(f"{path}: unknown output format {suffix or '(no extension)'!r}: "
                              "use .csv or .parquet (or --swf-out for SWF)")
        tables = [(path, self.jobs)]
        sizes_path, expanders_path = log_paths(path)
        if self.size_log is not None:
            unit = int(self.node_procs) or 1
            import pandas as pd

            tables.append((sizes_path, pd.DataFrame({
                "job_id": self.size_log["job_id"].to_numpy(),
                "time": self.size_log["time"].to_numpy(),
                "procs": self.size_log["size"].to_numpy() * unit})))
        if self.expander_log is not None and len(self.expander_log):
            tables.append((expanders_path, self.expander_log))
        for target, table in tables:
            if suffix == ".csv":
                table.to_csv(target, index=False)
            else:
                _require_pyarrow(target)
                table.to_parquet(target, index=False, engine="pyarrow")
        return [target for target, _ in tables]


class JobColumns(dict):
    """A rigid replay's job columns: the stored ones, and the per-job metrics (``wait``,
    ``response``, ``slowdown``, ``bsld``: :data:`metrics.PER_JOB`) derived on each read
    from ``submit``, ``start`` and ``runtime`` (:func:`metrics.job_metric`, the same
    values) instead of kept: 32 bytes a job less held (issue 16).

    Stored integer columns narrower than int64 (the workload's int32 ids and sizes,
    ``load_workload(swf_fields=False)``) read as int64, so the tables keep their dtypes.
    ``columns[name]`` reads either kind; iterating, ``len`` and ``items`` see only the
    stored ones (as stored); :meth:`full` gives every column of ``order`` as read."""

    def __init__(self, stored: dict[str, np.ndarray], order: tuple[str, ...],
                 bsld_threshold: float) -> None:
        super().__init__(stored)
        self.order, self.bsld_threshold = order, bsld_threshold

    def __getitem__(self, name: str) -> np.ndarray:
        value = super().__getitem__(name)
        if value.dtype.kind in "iu" and value.dtype.itemsize < 8:
            return value.astype(np.int64)       # the workload's int32 ids and sizes
        return value

    def __missing__(self, name: str) -> np.ndarray:
        if name not in metrics.PER_JOB or name not in self.order:
            raise KeyError(name)
        return metrics.job_metric(name, self["submit"], self["start"], self["runtime"],
                                  self.bsld_threshold)

    def stored(self, name: str) -> np.ndarray:
        """``columns[name]``, but an integer column as stored (not widened)."""
        return dict.__getitem__(self, name) if name in self else self.__missing__(name)

    def full(self) -> dict[str, np.ndarray]:
        return {name: self[name] for name in self.order}


class _LazyFrame:
    """A :class:`ReplayResult` attribute that is set to a DataFrame or to a dict of
    equal-length numpy columns and reads as a DataFrame, built (and kept) on first read."""

    def __init__(self, name: str, build) -> None:
        self.slot, self.build = f"_{name}", build

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.slot]
        if isinstance(value, dict):
            value = obj.__dict__[self.slot] = self.build(value)
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.slot] = value


def _frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    import pandas as pd

    # copy=False: one block per column; consolidating 17 columns would cost more than
    # the whole driver.  A read-only column is a view of the replayed workload's own
    # (the driver keeps those without copying them): the frame gets its own copy.
    if isinstance(columns, JobColumns):
        columns = columns.full()
    own = {name: values if getattr(values, "flags", None) is None or values.flags.writeable
           else values.copy() for name, values in columns.items()}
    return pd.DataFrame(own, columns=list(own), copy=False)


def _swf_frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """The SWF fields as :func:`_frame` builds them, the int32 ids of a narrowed workload
    (``load_workload(swf_fields=False)``) widened to the fields' int64."""
    return _frame({name: (values.astype(np.int64) if values.dtype.kind in "iu"
                          and values.dtype.itemsize < 8 else values)
                   for name, values in columns.items()})


# Set after @dataclass, so that the generated __init__ assigns through them.
ReplayResult.jobs = _LazyFrame("jobs", _frame)
ReplayResult.users = _LazyFrame("users", metrics.users_frame)
ReplayResult.swf_table = _LazyFrame("swf_table", _swf_frame)


def group_history(job_id, time, size) -> dict[int, list[tuple[int, int]]]:
    """A size log's rows (equal-length columns, in time order) as job_id -> [(time, size),
    ...], each job's entries in log order."""
    out: dict[int, list[tuple[int, int]]] = {}
    for job, when, value in zip(np.asarray(job_id).tolist(), np.asarray(time).tolist(),
                                np.asarray(size).tolist()):
        out.setdefault(int(job), []).append((int(when), int(value)))
    return out


def log_paths(path: str | Path) -> tuple[Path, Path]:
    """Where :meth:`ReplayResult.write` puts a malleable replay's size log and expander log
    for a job table at ``path``: ``STEM.sizes.EXT`` and ``STEM.expanders.EXT``."""
    from pathlib import Path    # here: a replay that writes no table never loads pathlib

    path = Path(path)
    return (path.with_name(f"{path.stem}.sizes{path.suffix}"),
            path.with_name(f"{path.stem}.expanders{path.suffix}"))


def _require_pyarrow(path: str | Path) -> None:
    if importlib.util.find_spec("pyarrow") is None:
        raise MalleoError(f"{path}: writing Parquet needs pyarrow, which is not "
                          "installed (pip install 'malleo[parquet]'), or write .csv")


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, NaN -> None, recursively (for JSON)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
