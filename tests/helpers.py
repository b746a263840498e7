"""Helpers shared by the oracle, differential and property tests.

Times are integer seconds, sizes processors.  Nothing here imports ``malleo._core`` at
module level: the core is looked up by :func:`core_simulate` at call time, so the
oracle's own tests run even when the extension is not built.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = int(os.environ.get("MALLEO_HYPOTHESIS_EXAMPLES", "100"))
"""Hypothesis examples per property test (raise it for a thorough local run)."""

TRACES = Path(os.environ.get("MALLEO_TRACES")
             or Path(__file__).resolve().parent.parent.parent / "shared" / "traces")
"""The real SWF traces, read in place (never copied into the repository): ``MALLEO_TRACES``
or ``../shared/traces`` beside the repository."""


def trace_paths() -> list[Path]:
    """Every ``*.swf.gz`` under :data:`TRACES`, sorted; empty when the folder is absent."""
    return sorted(TRACES.glob("*.swf.gz")) if TRACES.is_dir() else []


def core_simulate():
    """``malleo._core.simulate``; a test failure naming the build command if it is missing.

    The core exists now, so a missing extension is a broken build, never a reason to skip.
    """
    try:
        from malleo._core import simulate
    except ImportError as exc:
        pytest.fail(f"malleo._core.simulate is not importable ({exc}); build it with "
                    "`python setup.py build_ext --inplace`")
    return simulate


def core_run(workload, order: str, backfill: str, est_mode: str, **knobs) -> dict:
    """Run ``malleo._core.simulate`` on a :class:`strategies.Workload`-like object.

    Returns the result with every array converted to a list of ints.
    """
    from malleo.policy import Policy

    simulate = core_simulate()
    n = len(workload.submit)
    policy = Policy(order=order, backfill=backfill, estimate=est_mode, **knobs)
    result = simulate(
        np.ascontiguousarray(workload.submit, dtype=np.int64),
        np.ascontiguousarray(workload.runtime, dtype=np.int64),
        np.ascontiguousarray(workload.estimate, dtype=np.int64),
        np.ascontiguousarray(workload.procs, dtype=np.int32),
        np.ascontiguousarray(workload.user, dtype=np.int32),
        np.zeros(n, dtype=np.int32),
        np.zeros(n, dtype=np.int32),
        int(workload.total_procs),
        policy,
    )
    return {key: [int(x) for x in result[key]]
            for key in ("start", "end", "reservation", "backfilled")}


def oracle_run(workload, order: str, backfill: str, est_mode: str, **knobs) -> dict:
    """Run :func:`oracle.oracle_simulate` on a :class:`strategies.Workload`-like object."""
    from oracle import oracle_simulate

    return oracle_simulate(workload.submit, workload.runtime, workload.estimate,
                           workload.procs, workload.total_procs, order=order,
                           backfill=backfill, est_mode=est_mode, user=workload.user, **knobs)


class TraceHead:
    """The first ``n`` replayable jobs of a real trace, as plain lists (Workload-like)."""

    def __init__(self, path: Path, n: int):
        from malleo.emulator import read_swf

        jobs, meta = read_swf(path)
        jobs = jobs.iloc[:n]
        self.name = path.name
        self.submit = jobs["submit_time"].astype(np.int64).tolist()
        self.runtime = jobs["runtime"].astype(np.int64).tolist()
        self.estimate = jobs["estimate"].astype(np.int64).tolist()
        self.procs = jobs["procs"].astype(np.int32).tolist()
        self.user = jobs["user_id"].astype(np.int32).tolist()
        self.total_procs = int(meta.procs)

    def __len__(self) -> int:
        return len(self.submit)

    def head(self, n: int) -> "TraceHead":
        """The first ``n`` of these jobs (a copy; the machine is the same)."""
        part = object.__new__(TraceHead)
        part.name = self.name
        for column in ("submit", "runtime", "estimate", "procs", "user"):
            setattr(part, column, getattr(self, column)[:n])
        part.total_procs = self.total_procs
        return part


def peak_usage(starts, ends, procs) -> int:
    """The most processors held at any instant, by a sweep over start/end events.

    A job holds its processors during [start, end): at equal times ends come first.
    """
    events = []
    for s, e, n in zip(starts, ends, procs):
        if e > s:
            events.append((s, 1, n))
            events.append((e, 0, -n))
    events.sort()
    held = peak = 0
    for _, _, delta in events:
        held += delta
        peak = max(peak, held)
    return peak


def first_mismatch(expected: dict, actual: dict, keys=("start", "reservation")):
    """``(key, job, expected value, actual value)`` of the first difference, or None."""
    for key in keys:
        for j, (x, y) in enumerate(zip(expected[key], actual[key])):
            if x != y:
                return key, j, x, y
    return None


SCHEDULE_KEYS = ("start", "end", "reservation", "backfilled")
"""The per-job columns the differential tests compare between the core and the oracle."""


def assert_same_schedule(workload, order, backfill, est_mode, **knobs):
    """The oracle's and the core's schedules of ``workload`` agree on SCHEDULE_KEYS."""
    expected = oracle_run(workload, order, backfill, est_mode, **knobs)
    actual = core_run(workload, order, backfill, est_mode, **knobs)
    mismatch = first_mismatch(expected, actual, SCHEDULE_KEYS)
    assert mismatch is None, (
        f"{order}+{backfill}/{est_mode} {knobs}: {mismatch[0]} of job {mismatch[1]}: "
        f"oracle {mismatch[2]}, core {mismatch[3]}")


def with_early_runtimes(rng, submit, request, procs, total, early_share, low):
    """The workload tuple of jobs (submit, request, procs) on ``total`` processors: a
    share ``early_share`` of them end early, after ``low``-100% of their request (drawn
    from ``rng`` in that order), the rest at their request; users 1-5, queue and
    partition 0."""
    n = len(submit)
    early = rng.random(n) < early_share
    runtime = np.where(early, request * rng.uniform(low, 1.0, n), request).astype(np.int64)
    user = rng.integers(1, 6, n)
    return (submit, runtime, request, procs, user, np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), total)


def arrival_passes_workload(seed, n=500, total=64):
    """A conservative backlog where many passes see nothing come back: arrivals one or a
    few at a time between completions, most runs ending exactly at their request (their
    processors were already planned free then), some early, some holders reserved at the
    very instant of a completion (they start in a pass where nothing came back), and
    jobs of different estimates and sizes arriving together (SJBF orders them)."""
    rng = np.random.default_rng(seed)
    submit, request, procs = [], [], []
    t = 0
    while len(submit) < n:
        t += int(rng.integers(1, 240))
        k = int(rng.choice([1, 1, 1, 2, 3]))
        for _ in range(k):
            submit.append(t)
            request.append(int(rng.choice([60, 300, 900, 1800, 3600])))
            procs.append(int(rng.choice([1, 2, 4, 8, 16, 32])))
    submit, request = np.array(submit[:n]), np.array(request[:n])
    procs = np.array(procs[:n], dtype=np.int32)
    return with_early_runtimes(rng, submit, request, procs, total, 0.25, 0.3)
