"""Hypothesis strategies for malleo's tests, in one module (pandas/_testing/_hypothesis.py).

A :class:`Workload` is a small machine and a short job list, already in the form the core
takes: sorted by submit time, every job's size in ``1..total_procs``.  Times are integer
seconds, sizes processors.  Submit times come in bursts (many ties), so the tie-breaking
rules of docs/scheduling-semantics.md are exercised on almost every example.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

from hypothesis import strategies as st

from oracle import ORACLE_BACKFILLS, ORACLE_ESTIMATES, ORACLE_ORDERS


@dataclass(frozen=True)
class Workload:
    """One generated replay input (lists of plain ints, one entry per job)."""

    submit: list[int]      # seconds, non-decreasing
    runtime: list[int]     # seconds, >= 0
    estimate: list[int]    # seconds requested, >= 0
    procs: list[int]       # processors, 1..total_procs
    user: list[int]        # user number
    total_procs: int       # processors of the machine

    def __len__(self) -> int:
        return len(self.submit)


GAPS = st.sampled_from([0, 0, 0, 0, 1, 2, 3, 5, 10, 30])
"""Seconds between consecutive submits: ties most of the time."""

RUNTIMES = st.one_of(st.integers(0, 3), st.integers(0, 60))


@st.composite
def workloads(draw, max_jobs: int = 40, max_procs: int = 16,
              estimates_cover_runtimes: bool = False, min_runtime: int = 0,
              min_estimate: int = 0) -> Workload:
    """A machine of 1..max_procs processors and 1..max_jobs jobs.

    With ``estimates_cover_runtimes`` every request is >= the runtime (the replay
    driver's default); otherwise requests are also drawn below runtimes (overruns,
    which exercise the expected-end extension rule).  ``min_runtime`` and
    ``min_estimate`` (seconds) bound runtimes and requests from below.
    """
    total = draw(st.integers(1, max_procs))
    n = draw(st.integers(1, max_jobs))
    gaps = draw(st.lists(GAPS, min_size=n, max_size=n))
    submit = list(accumulate(gaps))
    runtime = [max(r, min_runtime) for r in draw(st.lists(RUNTIMES, min_size=n, max_size=n))]
    if estimates_cover_runtimes:
        slack = draw(st.lists(st.sampled_from([0, 0, 1, 5, 20, 100]), min_size=n, max_size=n))
        estimate = [r + s for r, s in zip(runtime, slack)]
    else:
        estimate = draw(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 80)),
                                 min_size=n, max_size=n))
    estimate = [max(e, min_estimate) for e in estimate]
    small = st.integers(1, max(1, total // 2))
    procs = draw(st.lists(st.one_of(small, st.integers(1, total)), min_size=n, max_size=n))
    user = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return Workload(submit, runtime, estimate, procs, user, total)


@st.composite
def bag_workloads(draw, max_bags: int = 12, max_procs: int = 32) -> Workload:
    """Bags of 1..12 identical jobs (one submit time, size and request) on a machine of
    4..max_procs processors, each job with its own runtime at or below the request (early
    completions): long runs of candidates of one shape behind each other, as in the
    RICC-2010-2 backlog, so that several of them get the same reservation while the
    profile has room for some of them but not all (backfill.pxd: _slurm_followers)."""
    total = draw(st.integers(4, max_procs))
    submit, runtime, estimate, procs, user = [], [], [], [], []
    t = 0
    for _ in range(draw(st.integers(1, max_bags))):
        t += draw(GAPS)
        k = draw(st.integers(1, 12))
        size = draw(st.one_of(st.integers(1, max(1, total // 4)), st.integers(1, total)))
        request = draw(st.sampled_from([1, 7, 30, 60, 61, 300]))
        submit += [t] * k
        estimate += [request] * k
        procs += [size] * k
        runtime += draw(st.lists(st.integers(0, request), min_size=k, max_size=k))
        user += [draw(st.integers(0, 3))] * k
    return Workload(submit, runtime, estimate, procs, user, total)


orders = st.sampled_from(ORACLE_ORDERS)
backfills = st.sampled_from(ORACLE_BACKFILLS)
estimate_modes = st.sampled_from(ORACLE_ESTIMATES)
