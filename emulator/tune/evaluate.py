"""One tuning trial: replay a policy on the train part (and the held-out test part) of a trace.

The time split: jobs sorted by (submit, job number), the train part holds the jobs
submitted before ``first_submit + fraction * (last_submit - first_submit)``, the test part
the rest.  Each part is replayed on its own, starting on an empty machine at its first
job's submit time (so the test score does not depend on the train part's schedule).
"""
from __future__ import annotations

import hashlib
import json
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from malleo.emulator.tune.objective import RECORDED_METRICS
from malleo.emulator.tune.space import build_policy
from malleo.errors import MalleoError

__all__ = ["Setup", "Context", "split_index", "evaluate", "params_key", "content_hash",
           "DEFAULT_TRIAL"]

DEFAULT_TRIAL = -1
"""Trial number of the reference run with the default policy (``Policy()``)."""


@dataclass(frozen=True)
class Setup:
    """Everything that fixes what a trial's numbers mean (shared by every trial of a run).

    Attributes:
        trace: the SWF trace path (absolute), or None for the embedded default workload.
        procs: machine processors, None for the trace header's.
        node_procs: processors per node on a node-exclusive machine, 0 otherwise.
        read_options: ``read_swf`` options (``lenient``, ``procs_from``, ``overrun``).
        bsld_threshold: tau of the bounded slowdown, seconds.
        split: the train fraction of the submit-time span in (0, 1), or None (no split:
            the whole trace is the train part, there is no test part).
        fixed: dotted policy key -> value set in every trial (the space's fixed values).
    """

    trace: str | None
    procs: int | None = None
    node_procs: int = 0
    read_options: dict[str, Any] = field(default_factory=dict)
    bsld_threshold: float = 10.0
    split: float | None = 0.7
    fixed: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A short hash of the setup, the trace's content included: results files refuse
        rows of another setup, so a trace edited in place (even at the same size) starts
        a fresh run instead of resuming stale results."""
        data = asdict(self)
        if self.trace is not None:
            data["trace_sha256"] = content_hash(self.trace)
        text = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


_HASHES: dict[tuple, str] = {}


def content_hash(path: str | Path) -> str:
    """SHA-256 of the file's bytes (as stored, compressed or not), hex.

    Cached in this process by (path, device, inode, size, mtime, ctime), so a run hashes
    its trace once; any change to the file changes its ctime and is hashed again.

    Raises:
        MalleoError: the file cannot be read.
    """
    try:
        info = Path(path).stat()
        key = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns,
               info.st_ctime_ns)
        if key not in _HASHES:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            _HASHES[key] = digest.hexdigest()
    except OSError as exc:
        raise MalleoError(f"{path}: cannot read the trace: {exc.strerror or exc}") from None
    return _HASHES[key]


def params_key(params: dict[str, Any]) -> str:
    """A canonical text of a trial's parameters (the identity used to resume)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def split_index(submit: np.ndarray, fraction: float) -> int:
    """Jobs (in sorted submit order) submitted before the time cut: the train part's size.

    Args:
        submit: submit times, seconds, sorted non-decreasing.
        fraction: train share of the span between the first and last submit, in (0, 1).
    """
    if submit.size == 0:
        return 0
    first, last = int(submit[0]), int(submit[-1])
    cut = first + fraction * (last - first)
    return int(np.searchsorted(submit, cut, side="left"))


class Context:
    """A setup with its workload loaded once (per process) and the split computed."""

    _cache: dict[Setup | str, "Context"] = {}

    def __init__(self, setup: Setup) -> None:
        from malleo.emulator.driver import load_workload

        self.setup = setup
        self.workload = load_workload(setup.trace, procs=setup.procs, **setup.read_options)
        table = self.workload.table
        order = np.lexsort((table["job_number"].to_numpy(), table["submit_time"].to_numpy()))
        submit = table["submit_time"].to_numpy()[order]
        n = int(submit.size)
        if setup.split is None:
            self.parts: dict[str, tuple[int, int] | None] = {"train": (0, n), "test": None}
        else:
            n_train = split_index(submit, setup.split)
            if n_train == 0 or n_train == n:
                raise MalleoError(f"split: a train fraction of {setup.split:g} leaves "
                                  f"{'no' if n_train == 0 else 'all'} of the {n} jobs in the "
                                  "train part: change --split or use --no-split")
            self.parts = {"train": (0, n_train), "test": (n_train, n - n_train)}
        self.cut_time = int(submit[self.parts["test"][0]]) if self.parts["test"] else None

    @classmethod
    def get(cls, setup: Setup) -> "Context":
        """The process-wide context of ``setup`` (loaded on first use, and again when the
        trace's content changed)."""
        data = asdict(setup)
        if setup.trace is not None:
            data["trace_sha256"] = content_hash(setup.trace)
        key = json.dumps(data, sort_keys=True, default=str)
        if key not in cls._cache:
            cls._cache.clear()
            cls._cache[key] = cls(setup)
        return cls._cache[key]


def evaluate(setup: Setup, trial: int, params: dict[str, Any]) -> dict[str, Any]:
    """Replay trial ``trial`` (``params`` over the setup's fixed values) on both parts.

    Returns:
        A results-file row: ``trial``, ``params`` (canonical JSON), ``policy`` (its short
        name), ``status`` ("ok" or "failed"), ``error``, ``seconds`` (wall time),
        ``train_jobs``/``test_jobs`` and ``train_<metric>``/``test_<metric>`` for every
        :data:`RECORDED_METRICS` key (test columns NaN without a split).
    """
    started = time.perf_counter()
    row: dict[str, Any] = {"trial": trial, "params": params_key(params), "policy": "",
                           "status": "ok", "error": ""}
    try:
        from malleo.emulator.driver import replay

        context = Context.get(setup)
        values = {} if trial == DEFAULT_TRIAL else {**setup.fixed, **params}
        policy = build_policy(values)
        row["policy"] = policy.describe()
        for part, window in context.parts.items():
            if window is None:
                row[f"{part}_jobs"] = 0
                row.update({f"{part}_{k}": float("nan") for k in RECORDED_METRICS})
                continue
            result = replay(context.workload, policy, procs=setup.procs,
                            node_procs=setup.node_procs, jobs=window,
                            bsld_threshold=setup.bsld_threshold)
            row[f"{part}_jobs"] = int(result.summary["jobs"])
            row.update({f"{part}_{k}": float(result.summary[k]) for k in RECORDED_METRICS})
    except Exception as exc:  # a failed trial is recorded, reported and retried on resume
        row["status"] = "failed"
        last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        where = f" ({Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        row["error"] = f"{type(exc).__name__}: {exc}{where}".replace("\n", " ")
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row
