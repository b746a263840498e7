"""Properties every schedule must have, checked on generated workloads.

Each property runs against the compiled core and against the reference scheduler
(``tests/oracle.py``): a property that fails on both points at the rules of
docs/scheduling-semantics.md, one that fails on the core alone at the core.  Times are
seconds, sizes processors.
"""
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers import EXAMPLES, core_run, oracle_run, peak_usage
from oracle import ORACLE_BACKFILLS, ORACLE_ESTIMATES, ORACLE_ORDERS
from strategies import Workload, estimate_modes, orders, workloads

RUNNERS = {"core": core_run, "oracle": oracle_run}

covered = workloads(estimates_cover_runtimes=True)
"""Workloads whose requests are >= runtimes, as the replay driver guarantees by default."""

exact_estimates = st.sampled_from(["request", "actual"])
"""Estimate sources that never plan a job shorter than it runs on covered workloads."""

bf_orders = st.sampled_from(["queue", "sjf"])
"""Backfill-candidate orders (``backfill_order``): queue order, or SJBF."""


@pytest.fixture(scope="module", params=sorted(RUNNERS))
def simulate(request):
    return RUNNERS[request.param]


@pytest.mark.parametrize("backfill", ORACLE_BACKFILLS)
@pytest.mark.parametrize("est_mode", ORACLE_ESTIMATES)
@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(data=st.data(), order=orders, bf_order=bf_orders)
def test_capacity_never_exceeded(simulate, backfill, est_mode, data, order, bf_order):
    """Processors held at any instant, over a sweep of start/end events, match the
    general case definition of a machine: never more than it has."""
    workload = data.draw(workloads(), label="workload")
    result = simulate(workload, order, backfill, est_mode, bf_resolution=7,
                      backfill_order=bf_order)
    assert peak_usage(result["start"], result["end"], workload.procs) <= workload.total_procs


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(), order=orders, backfill=st.sampled_from(ORACLE_BACKFILLS),
       est_mode=estimate_modes)
def test_every_job_starts_after_submission_and_runs_its_runtime(
        simulate, workload, order, backfill, est_mode):
    """Start and end times match the general case definition of a job: it starts no
    earlier than its submission, and ends exactly its runtime later."""
    result = simulate(workload, order, backfill, est_mode)
    for j in range(len(workload)):
        assert result["start"][j] >= workload.submit[j]
        assert result["end"][j] == result["start"][j] + workload.runtime[j]


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=covered, est_mode=exact_estimates, bf_order=bf_orders)
def test_easy_fcfs_never_starts_the_head_after_its_reservation(simulate, workload, est_mode,
                                                               bf_order):
    """EASY's reservation matches the general case definition of a guarantee: with
    estimates >= runtimes, the head job never starts later than the shadow time it was
    first given, whichever order the jobs behind it are tried in (SJBF too)."""
    result = simulate(workload, "fcfs", "easy", est_mode, backfill_order=bf_order)
    for j in range(len(workload)):
        if result["reservation"][j] >= 0:
            assert result["start"][j] <= result["reservation"][j], f"job {j}"


GREEDY_WALK_COUNTEREXAMPLE = Workload(
    submit=[0, 0, 0, 0], runtime=[1, 1, 1, 1], estimate=[2, 1, 1, 1], procs=[1, 1, 2, 1],
    user=[0, 0, 0, 0], total_procs=2)
"""P=2.  Job 2 (2 procs) is reserved at 2, job 3 (1 proc) at 1.  At t=1 job 0 ends a
second early.  A greedy walk before the re-plan would start job 2 (first in queue order,
it fits now) and push job 3 past its reservation; conservative has no such walk (semantics
page), so job 3 keeps its slot.  Kept as a regression example."""


@settings(max_examples=EXAMPLES, deadline=None)
@example(workload=GREEDY_WALK_COUNTEREXAMPLE, order="fcfs", est_mode="request",
         bf_order="queue")
@given(workload=workloads(estimates_cover_runtimes=True, min_estimate=1), order=orders,
       est_mode=exact_estimates, bf_order=bf_orders)
def test_conservative_never_starts_a_job_after_its_first_reservation(
        simulate, workload, order, est_mode, bf_order):
    """Conservative reservations match the general case definition of a guarantee: with
    estimates >= runtimes, no job starts later than the first reservation it was given
    (whichever order the jobs without a reservation are planned in, SJBF too)."""
    result = simulate(workload, order, "conservative", est_mode, backfill_order=bf_order)
    for j in range(len(workload)):
        if result["reservation"][j] >= 0:
            assert result["start"][j] <= result["reservation"][j], f"job {j}"


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(), order=orders, backfill=st.sampled_from(ORACLE_BACKFILLS),
       est_mode=estimate_modes, bf_order=bf_orders)
def test_same_input_same_schedule(simulate, workload, order, backfill, est_mode, bf_order):
    """A rerun matches the general case definition of a deterministic replay: the same
    input gives the same start times, reservations and flags."""
    first = simulate(workload, order, backfill, est_mode, backfill_order=bf_order)
    second = simulate(workload, order, backfill, est_mode, backfill_order=bf_order)
    assert first == second


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(), est_mode=estimate_modes)
def test_none_fcfs_starts_jobs_in_queue_order(simulate, workload, est_mode):
    """Strict FCFS matches the general case definition of a queue: no job starts before
    one submitted ahead of it, and nothing is ever backfilled."""
    result = simulate(workload, "fcfs", "none", est_mode)
    starts = result["start"]
    assert all(a <= b for a, b in zip(starts, starts[1:]))
    assert not any(result["backfilled"])


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(min_runtime=1, min_estimate=1), order=orders, est_mode=exact_estimates,
       bf_order=bf_orders)
def test_slurm_with_one_reservation_is_easy(simulate, workload, order, est_mode, bf_order):
    """Slurm's bounded backfill with one reservation per pass, a 1-second grid and an
    unbounded window matches the general case definition of EASY: the same schedule.

    Planning estimates are >= 1 s: a 0-second estimate occupies nothing in slurm's
    profile, so with such jobs only the start times agree (reservations and flags of
    0-second jobs differ; see docs/scheduling-semantics.md).  With SJBF too: the head
    holds the one reservation and the jobs behind it are tried shortest first in both."""
    easy = simulate(workload, order, "easy", est_mode, backfill_order=bf_order)
    slurm = simulate(workload, order, "slurm", est_mode, bf_max_job_test=1,
                     bf_resolution=1, bf_window=10**9, backfill_order=bf_order)
    assert slurm == easy


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(), backfill=st.sampled_from(ORACLE_BACKFILLS),
       est_mode=estimate_modes)
def test_orders_agree_when_all_keys_tie(simulate, workload, backfill, est_mode):
    """Every queue order matches the general case definition of the tie-break: when all
    jobs share a submit time, size and estimate, the order is by index for all of them."""
    n = len(workload)
    same = Workload([0] * n, workload.runtime, [workload.estimate[0]] * n,
                    [workload.procs[0]] * n, workload.user, workload.total_procs)
    if est_mode != "request":
        same = Workload(same.submit, [workload.runtime[0]] * n, same.estimate, same.procs,
                        [0] * n, same.total_procs)
    # multifactor is left out: its keys also read each user's fair share, which differs
    schedules = [simulate(same, order, backfill, est_mode) for order in ORACLE_ORDERS
                 if order != "multifactor"]
    assert all(schedule == schedules[0] for schedule in schedules)
