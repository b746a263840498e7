"""Differential tests: the compiled core against the naive reference scheduler.

``malleo._core.simulate`` and ``tests/oracle.py`` implement the same normative page
(docs/scheduling-semantics.md) with no shared code; for every policy the oracle covers
they must give identical start times, end times, first reservations and backfilled
flags, on generated workloads and on the head of every real trace.

They fail (naming the build command) when the core is not built.
"""
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers import EXAMPLES, TraceHead, assert_same_schedule, trace_paths
from oracle import ORACLE_BACKFILLS, ORACLE_ESTIMATES, ORACLE_ORDERS
from strategies import Workload, bag_workloads, estimate_modes, orders, workloads

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


def _bag(k, total, runtime, estimate):
    """k identical 1-processor jobs submitted at 0 on a machine of ``total``."""
    return Workload([0] * k, [runtime] * k, [estimate] * k, [1] * k, [0] * k, total)


_UP = {"bf_window": 86400, "bf_resolution": 1, "bf_rounding": "up"}


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=bag_workloads(), order=orders, knobs=slurm_knobs,
       bf_order=st.sampled_from(["queue", "sjf"]))
# 4 start at 0; 4 fit at 10, the 9th at 20 (the room at 10 binds inside the run)
@example(workload=_bag(9, 4, 10, 10), order="fcfs", knobs={"bf_max_job_test": 500, **_UP},
         bf_order="queue")
# the budget (2) binds inside the run of 5 that the room at 10 would take 4 of
@example(workload=_bag(9, 4, 10, 10), order="fcfs", knobs={"bf_max_job_test": 2, **_UP},
         bf_order="queue")
# zero runtimes: the jobs end at once and the next pass at the same time reserves again
@example(workload=_bag(9, 4, 0, 1), order="fcfs",
         knobs={"bf_max_job_test": 500, "bf_window": 5, "bf_resolution": 1, "bf_rounding": "up"},
         bf_order="queue")
# down rounding: each job of a run holds early what the start does not release for it
@example(workload=Workload([0] * 20, [0] * 20, [1] * 20,
                           [3] * 4 + [1] + [5] * 9 + [1] * 6, [0] * 20, 30),
         order="fcfs", knobs={"bf_max_job_test": 500, "bf_window": 5, "bf_resolution": 7,
                              "bf_rounding": "down"}, bf_order="queue")
# SJBF: the same two runs in the SJBF cursor's order
@example(workload=_bag(9, 4, 10, 10), order="fcfs", knobs={"bf_max_job_test": 500, **_UP},
         bf_order="sjf")
@example(workload=_bag(9, 4, 10, 10), order="fcfs", knobs={"bf_max_job_test": 2, **_UP},
         bf_order="sjf")
# SJBF: a 4-processor job runs to 10; behind the head (estimate 10) the queue alternates
# estimates 30 and 10, which SJBF walks as a run of five 10s (room for three more at 10,
# the other two at 20) then a run of four 30s: runs that are not consecutive in the queue
@example(workload=Workload([0] * 11, [10] * 11, [10, 10] + [30, 10] * 4 + [10],
                           [4] + [1] * 10, [0] * 11, 4),
         order="fcfs", knobs={"bf_max_job_test": 500, **_UP}, bf_order="sjf")
# SJBF: behind the head (4 processors at 40) the next candidates are of one size but not
# one estimate: the 10 s job gets 10, the 50 s one right after it does not (the head)
@example(workload=Workload([0] * 5, [10, 40, 10, 10, 50], [10, 40, 10, 10, 50],
                           [2, 2, 4, 1, 1], [0] * 5, 4),
         order="fcfs", knobs={"bf_max_job_test": 500, **_UP}, bf_order="sjf")
def test_core_matches_oracle_slurm_on_bags_of_identical_jobs(workload, order, knobs, bf_order):
    """Runs of identical candidates reserved at one start in one profile update
    (docs/core.md "Runs of identical reservations in the slurm walk") give the reference
    schedule, which reserves them one by one: with the budget binding inside a run (1-3
    reservations) and the profile's room at that start for some of the run but not all
    (one job more than the room makes this fail)."""
    assert_same_schedule(workload, order, "slurm", "request", backfill_order=bf_order, **knobs)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=bag_workloads(), order=orders, est_mode=estimate_modes,
       bf_order=st.sampled_from(["queue", "sjf"]))
# 4 start at 0; 4 fit at 10, the 9th at 20 (the room at 10 binds inside the run)
@example(workload=_bag(9, 4, 10, 10), order="fcfs", est_mode="predict", bf_order="queue")
def test_conservative_rebuilt_pass_on_bags_of_identical_jobs(workload, order, est_mode, bf_order):
    """The rebuilt conservative pass (every pass under ``predict``; `plan`) reserves a run
    of identical jobs at one start in one profile update (docs/core.md "Runs of identical
    reservations in the slurm walk"); the reference reserves them one by one."""
    assert_same_schedule(workload, order, "conservative", est_mode, backfill_order=bf_order)


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


@st.composite
def _many_start_at_once(draw):
    """A job holding the whole machine until 100 s while 12-60 narrow jobs of varied
    estimates queue behind it: at 100 s one pass starts many of them (the time-dependent
    orders then order the queue's front job by job, then sort the rest)."""
    total = draw(st.integers(16, 48))
    k = draw(st.integers(12, 60))
    submit = sorted(draw(st.lists(st.integers(1, 99), min_size=k, max_size=k)))
    runtime = draw(st.lists(st.integers(1, 80), min_size=k, max_size=k))
    estimate = [r + draw(st.integers(0, 300)) for r in runtime]
    procs = draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    user = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    return Workload([0] + submit, [100] + runtime, [100] + estimate, [total] + procs,
                    [0] + user, total)


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize("order", ["wfp3", "unicep"])
@settings(max_examples=PER_POLICY, deadline=None)
@given(workload=_many_start_at_once())
def test_time_dependent_orders_start_many_in_one_pass(order, backfill, workload):
    """wfp3 and unicep re-key every job at every pass; without backfilling (and EASY with
    no processor free) the core orders only the queue's front, on demand (docs/core.md
    "The pass"): a pass starting many jobs gives the reference schedule."""
    assert_same_schedule(workload, order, backfill, "request")
