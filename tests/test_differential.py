"""Differential tests: the compiled core against the naive reference scheduler.

``malleo._core.simulate`` and ``tests/oracle.py`` implement the same normative page
(docs/scheduling-semantics.md) with no shared code; for every policy the oracle covers
they must give identical start times, end times, first reservations and backfilled
flags, on generated workloads and on the head of every real trace.

They fail (naming the build command) when the core is not built.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import EXAMPLES, TraceHead, assert_same_schedule, trace_paths
from oracle import ORACLE_BACKFILLS, ORACLE_ESTIMATES, ORACLE_ORDERS
from strategies import estimate_modes, orders, workloads

from malleo.policy import Multifactor

slurm_knobs = st.fixed_dictionaries({
    "bf_max_job_test": st.sampled_from([1, 2, 3, 500]),
    "bf_window": st.sampled_from([5, 60, 86400]),
    "bf_resolution": st.sampled_from([1, 7, 60]),
    "bf_rounding": st.sampled_from(["up", "down"]),
})


PER_POLICY = max(EXAMPLES // 5, 5)
"""Examples per (order, backfill, estimate) combination: every combination is run."""


@pytest.mark.parametrize("est_mode", ORACLE_ESTIMATES)
@pytest.mark.parametrize("backfill", [b for b in ORACLE_BACKFILLS if b != "slurm"])
@pytest.mark.parametrize("order", ORACLE_ORDERS)
@settings(max_examples=PER_POLICY, deadline=None)
@given(workload=workloads())
def test_core_matches_oracle_on_generated_workloads(order, backfill, est_mode, workload):
    """The core's schedule matches the reference definition, for every order and
    estimate source, including requests below runtimes (expected-end extension)."""
    assert_same_schedule(workload, order, backfill, est_mode)


@pytest.mark.parametrize("backfill", ORACLE_BACKFILLS)
@settings(max_examples=max(EXAMPLES // 5, 10), deadline=None)
@given(workload=workloads(max_jobs=200, max_procs=64), order=orders, est_mode=estimate_modes)
def test_core_matches_oracle_on_longer_queues(backfill, workload, order, est_mode):
    """The core's schedule matches the reference definition on queues hundreds of jobs
    deep (slurm with its default knobs)."""
    assert_same_schedule(workload, order, backfill, est_mode)


@pytest.mark.parametrize("est_mode", ORACLE_ESTIMATES)
@pytest.mark.parametrize("order", ORACLE_ORDERS)
@settings(max_examples=PER_POLICY, deadline=None)
@given(workload=workloads(), knobs=slurm_knobs)
def test_core_matches_oracle_slurm_backfill(order, est_mode, workload, knobs):
    """Slurm's bounded backfill in the core matches the reference definition for any
    reservation budget, window and time resolution."""
    assert_same_schedule(workload, order, "slurm", est_mode, **knobs)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=st.one_of(workloads(max_jobs=250, max_procs=32, estimates_cover_runtimes=True),
                          workloads(max_jobs=250, max_procs=32)),
       order=orders, est_mode=estimate_modes)
def test_conservative_kept_profile_matches_oracle(workload, order, est_mode):
    """Conservative in the event loop keeps its profile between passes and re-plans only
    the jobs that can move (docs/core.md, "The kept profile"); on deep queues with early
    completions (estimates above runtimes), overruns and zero estimates it still gives the
    reference schedule, which re-plans every job from scratch at every pass."""
    assert_same_schedule(workload, order, "conservative", est_mode)


@pytest.mark.parametrize("est_mode", ORACLE_ESTIMATES)
@pytest.mark.parametrize("backfill", ["easy", "conservative", "slurm"])
@settings(max_examples=PER_POLICY * 2, deadline=None)
@given(workload=workloads(), order=orders, knobs=slurm_knobs)
def test_core_matches_oracle_sjbf(backfill, est_mode, workload, order, knobs):
    """Backfill-candidate order ``sjf`` (SJBF: the jobs behind the head, or conservative's
    jobs without a reservation, shortest estimate first) matches the reference definition
    for every backfill mode that has candidates (slurm with any budget, window and grid)."""
    knobs = knobs if backfill == "slurm" else {}
    assert_same_schedule(workload, order, backfill, est_mode, backfill_order="sjf", **knobs)


@pytest.mark.parametrize("backfill", ["easy", "conservative", "slurm"])
@settings(max_examples=max(EXAMPLES // 5, 10), deadline=None)
@given(workload=workloads(max_jobs=200, max_procs=64), order=orders, est_mode=estimate_modes)
def test_core_matches_oracle_sjbf_on_longer_queues(backfill, workload, order, est_mode):
    """SJBF matches the reference definition on queues hundreds of jobs deep, where many
    candidates behind the head are sorted at each pass."""
    assert_same_schedule(workload, order, backfill, est_mode, backfill_order="sjf")


multifactor_knobs = st.builds(
    lambda age, size, fs, max_age, half_life, period, favor: Multifactor(
        weight_age=age, weight_size=size, weight_fairshare=fs, max_age=max_age,
        half_life=half_life, calc_period=period, size_favor=favor),
    st.sampled_from([0.0, 1.0, 1000.0]), st.sampled_from([0.0, 10.0, 500.0]),
    st.sampled_from([0.0, 1000.0, 3.0]), st.sampled_from([1, 7, 100, 604800]),
    st.sampled_from([1, 5, 60, 604800]), st.sampled_from([1, 3, 10, 300]),
    st.sampled_from(["small", "large"]))


@pytest.mark.parametrize("backfill", ORACLE_BACKFILLS)
@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=workloads(max_jobs=60), mf=multifactor_knobs, est_mode=estimate_modes,
       bf_order=st.sampled_from(["queue", "sjf"]))
def test_core_matches_oracle_multifactor(backfill, workload, mf, est_mode, bf_order):
    """Multifactor priorities (age, size, fair share with decayed usage, recalculated
    every calc_period) match the naive reference for any weights and periods: the same
    doubles, so the same order and the same schedule (with either backfill order)."""
    assert_same_schedule(workload, "multifactor", backfill, est_mode, multifactor=mf,
                         backfill_order=bf_order)


TRACE_JOBS = 5000
"""Jobs taken from the head of each real trace."""

TRACE_POLICIES = [
    # (order, backfill, estimate, jobs[, backfill_order]): the naive oracle's conservative
    # and slurm re-plans take about 20-30 s each on the overloaded heads of RICC and
    # lublin_256
    ("fcfs", "none", "request", TRACE_JOBS),
    ("fcfs", "easy", "request", TRACE_JOBS),
    ("fcfs", "easy", "actual", TRACE_JOBS),
    ("sjf", "easy", "request", TRACE_JOBS),
    ("fcfs", "easy", "predict", TRACE_JOBS),
    ("wfp3", "easy", "request", TRACE_JOBS),
    ("fcfs", "conservative", "request", TRACE_JOBS),
    ("fcfs", "slurm", "request", TRACE_JOBS),
    ("multifactor", "easy", "request", TRACE_JOBS),
    ("fcfs", "easy", "request", TRACE_JOBS, "sjf"),
    ("fcfs", "easy", "predict", TRACE_JOBS, "sjf"),
    ("fcfs", "slurm", "request", TRACE_JOBS // 5, "sjf"),
]


@pytest.fixture(scope="module", params=trace_paths() or [None],
                ids=lambda p: p.name if p else "no-traces")
def trace_head(request):
    if request.param is None:
        pytest.skip("no real traces: ../shared/traces/*.swf.gz is absent")
    return TraceHead(request.param, TRACE_JOBS)


@pytest.mark.slow
@pytest.mark.parametrize("policy", TRACE_POLICIES,
                         ids=["+".join(p[:3] + p[4:]) for p in TRACE_POLICIES])
def test_core_matches_oracle_on_real_traces(trace_head, policy):
    """The core's schedule of the first 5,000 jobs of a real trace matches the reference
    definition."""
    order, backfill, est_mode, jobs = policy[:4]
    knobs = {"backfill_order": policy[4]} if len(policy) > 4 else {}
    assert_same_schedule(trace_head.head(jobs), order, backfill, est_mode, **knobs)
