"""``plan`` called from Python at every event time reproduces ``simulate`` exactly.

The replay below is a plain-Python event loop (docs/scheduling-semantics.md, Event order)
that keeps only what a live agent keeps: the running and pending tables, each pending
job's last reservation and priority, and a PlanState told about every completion.
"""
import heapq

import numpy as np
import pandas as pd
import pytest

from helpers import arrival_passes_workload, with_early_runtimes

from malleo._core import PlanState, plan, simulate
from malleo.limits import MAX_PROCS
from malleo.policy import Multifactor, Policy


def replay_with_plan(w, policy):
    submit, runtime, request, procs, user, queue, partition, total = w
    n = len(submit)
    start = np.full(n, -1, dtype=np.int64)
    first_resv = np.full(n, -1, dtype=np.int64)
    backfilled = np.zeros(n, dtype=np.uint8)
    est_at_start = np.zeros(n, dtype=np.int64)
    last_resv = np.full(n, -1, dtype=np.int64)
    last_prio = np.full(n, np.nan)
    running, waiting = [], []
    ends = []
    state = PlanState()
    i = 0
    while i < n or ends:
        t = min(ends[0] if ends else submit[i], submit[i] if i < n else ends[0])
        is_first = True
        while True:
            while ends and ends[0] == t:
                heapq.heappop(ends)
            for j in sorted(j for j in running if start[j] + runtime[j] == t):
                running.remove(j)
                state.record_completion(user[j], procs[j], start[j], t)
            if is_first:
                is_first = False
                while i < n and submit[i] == t:
                    waiting.append(i)
                    i += 1
            run = sorted(running)
            pend = sorted(waiting)
            running_table = pd.DataFrame({
                "procs": procs[run], "start": start[run], "est": est_at_start[run],
                "request": request[run], "user": user[run]})
            pending_table = {
                "submit": submit[pend], "procs": procs[pend], "request": request[pend],
                "user": user[pend], "queue": queue[pend], "partition": partition[pend],
                "reservation": last_resv[pend], "priority": last_prio[pend],
                "runtime": runtime[pend]}
            d = plan(t, total, running_table, pending_table, policy, state)
            state = d.state
            assert sorted(d.order.tolist()) == list(range(len(pend)))
            for row, j in enumerate(pend):
                last_resv[j] = d.reservation[row]
                last_prio[j] = d.priority[row]
                if d.reservation[row] >= 0 and first_resv[j] < 0:
                    first_resv[j] = d.reservation[row]
            is_zero = False
            for row in d.start:
                j = pend[row]
                start[j] = t
                est_at_start[j] = d.est[row]
                backfilled[j] = d.backfilled[row]
                running.append(j)
                waiting.remove(j)
                heapq.heappush(ends, t + runtime[j])
                is_zero = is_zero or runtime[j] == 0
            if not is_zero:
                break
    return {"start": start, "reservation": first_resv, "backfilled": backfilled,
            "est": est_at_start}


def assert_plan_reproduces_simulate(w, policy):
    """`simulate` of workload ``w`` and `plan` called at every event (replay_with_plan) give
    the same start, reservation, backfilled and estimate for every job."""
    submit, runtime, request, procs, user, queue, partition, total = w
    expected = simulate(submit, runtime, request, procs, user, queue, partition, total, policy)
    got = replay_with_plan(w, policy)
    for key in ("start", "reservation", "backfilled", "est"):
        assert got[key].tolist() == expected[key].tolist(), key


def numpy_workload(seed, n=70, total=24):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n * 12, n))
    request = rng.integers(0, 300, n)
    runtime = np.minimum(request + 20, rng.integers(0, 320, n))   # some overrun their request
    procs = rng.integers(1, total + 1, n).astype(np.int32)
    user = rng.integers(1, 5, n)
    queue = rng.integers(0, 3, n)
    partition = rng.integers(0, 2, n)
    return submit, runtime, request, procs, user, queue, partition, total


def lublin_workload(seed, n=70, total=32):
    generate_lublin = pytest.importorskip("malleo.emulator.workload").generate_lublin
    t = generate_lublin(n, total, seed=seed)
    return (t["submit_time"].to_numpy(), t["run_time"].to_numpy(),
            t["requested_time"].to_numpy(), t["allocated_procs"].to_numpy().astype(np.int32),
            t["user_id"].to_numpy(), t["user_id"].to_numpy() % 3, np.zeros(n, dtype=np.int64),
            total)


MF = Multifactor(weight_age=1000, weight_size=200, weight_fairshare=3000, weight_queue=500,
                 weight_partition=100, max_age=900, half_life=600, calc_period=120,
                 queue_factors={1: 0.5, 2: 1.0}, partition_factors={1: 1.0})

POLICIES = [
    Policy(order=order, backfill=backfill, estimate=estimate, bf_max_job_test=3,
           bf_window=900, bf_resolution=30, multifactor=MF)
    for order, estimate in [("fcfs", "request"), ("sjf", "predict"), ("wfp3", "actual"),
                            ("unicep", "request"), ("f1", "predict"), ("saf", "request"),
                            ("ljf", "actual"), ("multifactor", "request"),
                            ("multifactor", "predict")]
    for backfill in ("none", "easy", "conservative", "slurm")
] + [
    # prediction variants (issue 18): runs averaged, cold start, Tsafrir's increments
    Policy(order=order, backfill=backfill, estimate=estimate, predict_runs=runs,
           predict_cold=cold, correction=correction, bf_max_job_test=3, bf_window=900,
           bf_resolution=30)
    for order, estimate, runs, cold, correction in [
        ("fcfs", "predict", 3, "request", "incremental"),
        ("sjf", "predict", 1, "fewer", "incremental"),
        ("saf", "predict", 5, "fewer", "request"),
        ("fcfs", "request", 2, "fewer", "incremental")]
    for backfill in ("easy", "conservative", "slurm")
]
POLICIES += [
    # predictions fixed at submission (predict_at submit), EASY++ among them
    Policy(order=order, backfill=backfill, estimate="predict", predict_at="submit",
           backfill_order=bf_order, correction=correction, bf_max_job_test=3,
           bf_window=900, bf_resolution=30, multifactor=MF)
    for order, bf_order, correction in [("fcfs", "sjf", "incremental"),
                                        ("sjf", "queue", "request"),
                                        ("multifactor", "queue", "incremental")]
    for backfill in ("easy", "conservative", "slurm")
]
POLICIES += [
    # SJBF (backfill_order sjf): the candidates behind the head shortest first
    Policy(order=order, backfill=backfill, estimate=estimate, bf_max_job_test=3,
           bf_window=900, bf_resolution=30, multifactor=MF, backfill_order="sjf")
    for order, estimate in [("fcfs", "request"), ("fcfs", "predict"), ("wfp3", "actual"),
                            ("multifactor", "request")]
    for backfill in ("easy", "conservative", "slurm")
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.describe())
@pytest.mark.parametrize("make, seed", [(numpy_workload, 1), (lublin_workload, 2)],
                         ids=["numpy", "lublin"])
def test_plan_at_every_event_reproduces_simulate(policy, make, seed):
    w = make(seed)
    assert_plan_reproduces_simulate(w, policy)


def test_plan_is_pure_and_validates():
    running = {"procs": [2], "start": [0], "est": [100], "request": [100], "user": [1]}
    pending = {"submit": [5, 6, 7], "procs": [4, 1, 2], "request": [50, 10, 500],
               "user": [1, 2, 2]}
    policy = Policy(order="multifactor", backfill="easy")
    state = PlanState()
    state.record_completion(2, 4, 0, 3)
    before = (dict(state.history), dict(state.accrued), set(state.seen), state.calc_time)
    a = plan(10, 4, running, pending, policy, state)
    b = plan(10, 4, running, pending, policy, state)
    assert (dict(state.history), dict(state.accrued), set(state.seen), state.calc_time) == before
    for field in ("start", "reservation", "order", "backfilled", "est", "priority"):
        assert getattr(a, field).tolist() == getattr(b, field).tolist()
    assert a.state.calc_time == 10 and a.resize.shape == (0, 2)
    # user 1 holds 20 processor-seconds (running), user 2 has 12 (completed): user 2's
    # jobs go first (fair share), the older first; job 1 starts, job 2 (2 procs) heads the
    # queue and is reserved at 20, when job 1 is expected to end
    assert a.order.tolist() == [1, 2, 0]
    assert a.state.usage == {1: 20.0, 2: 12.0}
    assert a.start.tolist() == [1]
    assert a.reservation.tolist() == [-1, -1, 20]
    with pytest.raises(ValueError, match="pending.procs"):
        plan(10, 4, running, {**pending, "procs": [5, 1, 1]}, policy)
    with pytest.raises(ValueError, match="missing column 'request'"):
        plan(10, 4, {"procs": [], "start": [], "est": []}, pending, policy)
    with pytest.raises(ValueError, match="after now"):
        plan(1, 4, running, pending, policy)
    two = {k: v * 2 for k, v in running.items()}
    with pytest.raises(ValueError, match="4 processors busy on a machine of 3"):
        plan(10, 3, two, {k: v[1:] for k, v in pending.items()}, policy)


def test_plan_accepts_cluster_object_and_dataframes():
    class Cluster:
        total_procs = 8
    d = plan(0, Cluster(), pd.DataFrame({"procs": [], "start": [], "est": [], "request": []}),
             pd.DataFrame({"submit": [0, 0], "procs": [8, 8], "request": [10, 10]}),
             Policy(backfill="conservative"))
    assert d.start.tolist() == [0]
    assert d.reservation.tolist() == [0, 10]
    assert d.order.tolist() == [0, 1]


@pytest.mark.parametrize("order", ["fcfs", "sjf", "ljf", "saf", "wfp3", "unicep", "f1"])
def test_plan_order_is_sorted_by_key_submit_index(order):
    from malleo._core.priority import queue_keys
    rng = np.random.default_rng(7)
    n = 3000
    submit = np.sort(rng.integers(0, 5000, n))
    request = rng.choice([0, 1, 60, 600, 3600], n)          # many ties
    procs = rng.choice([1, 2, 4, 64], n).astype(np.int32)
    running = {"procs": [], "start": [], "est": [], "request": []}
    d = plan(6000, 64, running, {"submit": submit, "procs": procs, "request": request},
             Policy(order=order, backfill="none"))
    keys = queue_keys(Policy(order=order).core.order, 6000, submit, request, procs)
    expected = sorted(range(n), key=lambda i: (keys[i], submit[i], i))
    assert d.order.tolist() == expected


def test_plan_state_fairshare():
    state = PlanState()
    assert state.fairshare(1) == 1.0
    state.record_completion(1, 4, 0, 10)     # 40 processor-seconds
    state.record_completion(2, 1, 0, 10)     # 10
    d = plan(10, 4, {"procs": [], "start": [], "est": [], "request": []},
             {"submit": [10], "procs": [1], "request": [5], "user": [3]},
             Policy(order="multifactor"), state)
    s = d.state
    assert (s.total_usage, s.users_at_calc) == (50.0, 3)
    assert s.fairshare(1) == 2.0 ** -((40.0 / 50.0) * 3)
    assert s.fairshare(3) == 1.0


def backlog_workload(seed, n=260, total=64):
    """A queue deeper than bf_max_job_test most of the time: bursts of arrivals (several
    event times without a completion in a row, the passes the event loop resumes in slurm
    mode, backfill.pxd slurm_can_resume), wide long jobs that push reservations past
    bf_window, short narrow ones that start in the holes, estimates above runtimes."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n * 20, n) // 7 * 7)
    request = rng.choice([0, 45, 120, 600, 3000, 9000], n)
    runtime = (request * rng.uniform(0.2, 1.0, n)).astype(np.int64)
    procs = np.where(rng.random(n) < 0.3, rng.integers(total // 2, total + 1, n),
                     rng.integers(1, 9, n)).astype(np.int32)
    user = rng.integers(1, 6, n)
    return (submit, runtime, request, procs, user, np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), total)


@pytest.mark.parametrize("order", ["fcfs", "sjf"])
@pytest.mark.parametrize("k, window, res", [(4, 3600, 60), (40, 7200, 60), (3, 900, 1),
                                            (500, 86400, 60)])
@pytest.mark.parametrize("seed", [3, 4])
def test_slurm_resumed_passes_reproduce_plan(order, k, window, res, seed):
    """The event loop continues the last slurm pass's walk when nothing it depends on
    changed (issue 16); `plan` rebuilds every pass: both give the same schedule."""
    w = backlog_workload(seed)
    policy = Policy(order=order, backfill="slurm", bf_max_job_test=k, bf_window=window,
                    bf_resolution=res)
    assert_plan_reproduces_simulate(w, policy)


def holder_workload(seed, n=420, total=64):
    """A conservative backlog of a few hundred holders (several blocks of the holder
    index, holders.pxd) where at every completion some holders can move and most cannot:
    sweeps of identical jobs submitted together (equal shapes, often equal reservations:
    ties broken by queue order), wide jobs next to narrow ones, completions both early
    (runtime 10-100% of the request: processors come back before reservations) and exact
    (nothing comes back), zero requests and runtimes."""
    rng = np.random.default_rng(seed)
    submit, request, procs = [], [], []
    t = 0
    while len(submit) < n:
        t += int(rng.integers(0, 400))
        k = int(rng.choice([1, 1, 2, 6, 20]))            # a sweep of k identical jobs
        req = int(rng.choice([0, 60, 300, 1800, 3600, 7200]))
        size = int(rng.choice([1, 2, 4, 8, 16, 32, 48, 64]))
        submit += [t] * k
        request += [req] * k
        procs += [size] * k
    submit, request = np.array(submit[:n]), np.array(request[:n])
    procs = np.array(procs[:n], dtype=np.int32)
    return with_early_runtimes(rng, submit, request, procs, total, 0.6, 0.1)


@pytest.mark.parametrize("order, bf_order", [("fcfs", "queue"), ("sjf", "queue"),
                                             ("ljf", "queue"), ("fcfs", "sjf"),
                                             ("wfp3", "queue"), ("unicep", "queue"),
                                             ("multifactor", "queue"), ("wfp3", "sjf")])
@pytest.mark.parametrize("seed", [5, 6])
def test_conservative_holder_index_reproduces_plan(order, bf_order, seed):
    """The event loop re-plans conservative on its kept profile and visits only the
    holders whose reservation can change (the holder index; wfp3, unicep and multifactor
    put the holders of one reservation in the pass's queue order); `plan`
    rebuilds every pass and re-plans every job: both give the same schedule (a wrong skip
    leaves a reservation later than the rebuilt pass's)."""
    w = holder_workload(seed)
    policy = Policy(order=order, backfill="conservative", backfill_order=bf_order)
    assert_plan_reproduces_simulate(w, policy)


def tie_workload(seed, n=400, total=512, one_share=None, one_blockers=0):
    """Long runs of equal reservations of mixed shapes whose queue order changes between
    passes (wfp3, unicep, multifactor): four blockers fill the machine until 50,000 s,
    three of them ending early at different times; a few hundred small jobs of mixed sizes
    and requests arrive behind them, and a few hundred are reserved at the blockers' end, a
    run across several blocks of the holder index.  At each early end only part of that
    run can take the processors that came back, chosen by that pass's queue order
    (docs/core.md "Time-dependent keys in the index").

    ``one_share`` (a probability): the small jobs are of 2 or 3 processors but that share
    of 1, so that many index blocks hold no 1-processor job until a pass puts a run in
    queue order and brings one in; ``one_blockers``: that many more blockers of one
    processor each (the four others one smaller), ending early at different times, so
    that a pass where only one processor came back moves only a 1-processor holder."""
    rng = np.random.default_rng(seed)
    quarter = total // 4
    ends = sorted(int(x) for x in rng.integers(5_000, 45_000, 3))
    one_ends = sorted(int(x) for x in rng.integers(5_000, 45_000, one_blockers))
    blockers = 4 + one_blockers
    submit = np.concatenate([np.zeros(blockers, dtype=np.int64),
                             np.sort(rng.integers(1, 3_000, n))])
    request = np.concatenate([np.full(blockers, 50_000),
                              rng.choice([600, 1_800, 3_600, 7_200, 14_400], n)])
    if one_share is None:
        small = rng.choice([1, 1, 2, 3], n)
    else:
        small = rng.choice([1, 2, 3], n, p=[one_share, (1 - one_share) / 2,
                                            (1 - one_share) / 2])
    procs = np.concatenate([np.full(4, quarter - (one_blockers > 0)),
                            np.ones(one_blockers), small]).astype(np.int32)
    early = rng.random(n) < 0.5
    runtime = np.concatenate([np.array(ends + [50_000] + one_ends),
                              np.where(early, request[blockers:] * rng.uniform(0.1, 1.0, n),
                                       request[blockers:])]).astype(np.int64)
    user = rng.integers(1, 6, n + blockers)
    zeros = np.zeros(n + blockers, dtype=np.int64)
    return submit, runtime, request, procs, user, zeros, zeros, total


@pytest.mark.parametrize("order", ["wfp3", "unicep", "multifactor"])
@pytest.mark.parametrize("bf_order", ["queue", "sjf"])
@pytest.mark.parametrize("seed", [1, 2])
def test_conservative_time_dependent_ties_reproduce_plan(order, bf_order, seed):
    """wfp3, unicep and multifactor (its fair-share factor moving at every calculation)
    with the holder index: the holders of one reservation, a run of mixed shapes longer
    than an index block, are visited in the queue order of the pass, not in the order
    they entered the index; `plan` (rebuilt and re-planned from scratch at every pass)
    gives the same schedule."""
    w = tie_workload(seed)
    policy = Policy(order=order, backfill="conservative", backfill_order=bf_order,
                    multifactor=MF)
    assert_plan_reproduces_simulate(w, policy)


@pytest.mark.parametrize("order", ["wfp3", "unicep", "multifactor"])
@pytest.mark.parametrize("seed", [1, 4, 6])
def test_conservative_tie_runs_keep_block_sizes_exact(order, seed):
    """Putting a run of one reservation back in queue order moves holders between index
    blocks, so each block's smallest size (`low`, which lets a pass skip the block when
    fewer processors came back) is taken again (holders.pxd: holders_put): here rare
    1-processor holders enter blocks of 2- and 3-processor ones, and single processors
    come back early; `plan` gives the same schedule."""
    w = tie_workload(seed, one_share=0.01, one_blockers=4)
    policy = Policy(order=order, backfill="conservative", multifactor=MF)
    assert_plan_reproduces_simulate(w, policy)


@pytest.mark.parametrize("order, bf_order", [("multifactor", "queue"), ("multifactor", "sjf"),
                                             ("wfp3", "queue"), ("unicep", "queue"),
                                             ("wfp3", "sjf"), ("unicep", "sjf")])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_conservative_passes_where_nothing_came_back_reproduce_plan(order, bf_order, seed):
    """A pass with no early completion since the last one and no reservation due plans
    only its arrivals (docs/core.md "Passes where nothing came back": the holder index
    skips every block); `plan` re-plans every job at every pass: both give the same
    schedule."""
    w = arrival_passes_workload(seed)
    policy = Policy(order=order, backfill="conservative", backfill_order=bf_order)
    assert_plan_reproduces_simulate(w, policy)


def identical_runs_workload(seed, n=600, total=128):
    """Sweeps of 8-40 identical narrow jobs submitted together behind a few wide ones, so
    that many holders share one reservation, size and hold, and an early completion lets
    a run of them move to the same earlier start while [start, reservation) has room for
    some of them but not all (backfill.pxd: _identical_followers)."""
    rng = np.random.default_rng(seed)
    submit, request, procs = [], [], []
    t = 0
    while len(submit) < n:
        t += int(rng.integers(0, 300))
        if rng.random() < 0.25:
            k, size = 1, int(rng.integers(total // 2, total + 1))    # a wide job
        else:
            k, size = int(rng.integers(8, 41)), int(rng.choice([1, 2, 3, 4, 8]))
        req = int(rng.choice([600, 1800, 3600]))
        submit += [t] * k
        request += [req] * k
        procs += [size] * k
    submit, request = np.array(submit[:n]), np.array(request[:n])
    procs = np.array(procs[:n], dtype=np.int32)
    runtime = (request * rng.uniform(0.05, 1.0, n)).astype(np.int64)
    user = rng.integers(1, 6, n)
    return (submit, runtime, request, procs, user, np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), total)


@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp3", "unicep"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_conservative_identical_runs_reproduce_plan(order, seed):
    """Runs of identical holders moved by one profile update (docs/core.md "Runs of
    identical moves") give the schedule `plan` gives re-planning every job one by one
    (moving one holder more than [start, reservation) has room for changes it)."""
    w = identical_runs_workload(seed)
    policy = Policy(order=order, backfill="conservative")
    assert_plan_reproduces_simulate(w, policy)


def ladder_workload(seed, n=700, total=64, size=None, other_high=None):
    """A deep backlog of narrow jobs of one shape (``size``, by default 1 or 2, a 4-hour
    estimate), submitted one by one so that their reservations differ, with a few jobs of
    other shapes (sizes from 1 to below ``other_high``, by default total // 2) between
    them and most runs ending early: each early completion lets a long stretch of
    same-shape holders, consecutive in the index and across its blocks, move up, each
    into the slot the ones before it left (backfill.pxd: _one_shape_stretch)."""
    rng = np.random.default_rng(seed)
    if size is None:
        size = 1 + seed % 2
    if other_high is None:
        other_high = total // 2
    t = 0
    submit, request, procs = [], [], []
    for _ in range(n):
        t += int(rng.integers(0, 90))
        if rng.random() < 0.85:
            submit.append(t), request.append(14400), procs.append(size)
        else:
            submit.append(t)
            request.append(int(rng.choice([600, 3600, 28800])))
            procs.append(int(rng.integers(1, other_high)))
    submit, request = np.array(submit), np.array(request)
    procs = np.array(procs, dtype=np.int32)
    return with_early_runtimes(rng, submit, request, procs, total, 0.7, 0.02)


@pytest.mark.parametrize("order, bf_order", [("fcfs", "queue"), ("sjf", "queue"),
                                             ("fcfs", "sjf")])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_conservative_one_shape_stretches_reproduce_plan(order, bf_order, seed):
    """Stretches of same-shape holders answered together from one walk of the profile
    (docs/core.md "One-shape stretches") give the schedule `plan` gives re-planning every
    job one by one."""
    w = ladder_workload(seed)
    policy = Policy(order=order, backfill="conservative", backfill_order=bf_order)
    assert_plan_reproduces_simulate(w, policy)


def wide_ladder_workload(seed):
    """ladder_workload's backlog with jobs half the machine wide: stretches of two
    holders sharing a reservation (each pair runs side by side), between jobs of every
    other size."""
    return ladder_workload(seed, n=600, total=4, size=2, other_high=5)


@pytest.mark.parametrize("make", [wide_ladder_workload, ladder_workload, holder_workload])
@pytest.mark.parametrize("seed", [1, 2])
def test_conservative_schedule_is_the_same_at_max_procs(make, seed):
    """Every size and the machine multiplied by one factor, up to MAX_PROCS processors,
    give the same conservative schedule: the kept pass's processor sums (a stretch takes
    up to STRETCH_MEMBERS times its size over a segment, backfill.pxd) stay exact at the
    largest sizes the core accepts (a stretch of 256 holders of 2**23 processors would not
    fit in procs_t: STRETCH_TOP caps it)."""
    w = make(seed)
    factor = MAX_PROCS // w[7]
    big = w[:3] + (w[3] * factor,) + w[4:7] + (w[7] * factor,)
    assert big[7] <= MAX_PROCS and big[3].dtype == np.int32
    policy = Policy(backfill="conservative")
    small_run, big_run = simulate(*w, policy), simulate(*big, policy)
    for column in ("start", "reservation", "backfilled"):
        np.testing.assert_array_equal(big_run[column], small_run[column], err_msg=column)


def test_kept_counters_only_in_a_counted_build():
    """`kept_counters()` is None in the default build (nothing counted); in a build with
    MALLEO_COUNT=1 (_core/counters.pxd) its counts of a conservative replay are coherent:
    every moved holder was visited, every update pair is at most its moved holders, runs
    are the difference, and the schedule is the default build's (checked by the digests)."""
    from malleo._core.loop import COUNTER_NAMES, kept_counters

    # the names come from the same C list as the indices (_core/counters.pxd), in both builds
    assert len(set(COUNTER_NAMES)) == len(COUNTER_NAMES) > 20
    assert COUNTER_NAMES[0] == "passes" and "moved_holders" in COUNTER_NAMES
    kept_counters()
    w = identical_runs_workload(1)
    simulate(*w, Policy(backfill="conservative"))
    counts = kept_counters()
    from malleo._core._buildinfo import BUILD_INFO

    assert (counts is not None) == ("kept-pass counters" in BUILD_INFO), BUILD_INFO
    if counts is None:              # the default build (CI's): nothing counted, none claimed
        return
    assert len(counts) == 10 and all(list(c) == list(COUNTER_NAMES) for c in counts)
    tot = {k: sum(c[k] for c in counts) for k in COUNTER_NAMES}
    assert tot["passes"] >= tot["kept_passes"] + tot["rebuilt_passes"] > 0
    assert tot["new_jobs"] <= len(w[0])
    assert (tot["moved_holders"]
            == tot["update_pairs"] + tot["moved_in_runs"] + tot["moved_in_stretches"])
    assert tot["stretches"] <= tot["update_pairs"] <= tot["range_updates"]
    assert tot["holder_visits"] >= tot["dec_tests"] + tot["point_tests"]
    assert tot["dec_tests"] >= tot["searches"]
    assert tot["point_tests"] > 0 and tot["dec_tests"] > 0
    assert tot["update_pairs"] >= tot["pairs_same_shape"] >= tot["pairs_same_shape_offset"]
    assert tot["holder_visits"] >= tot["visits_same_shape"] >= tot["visits_same_entry"]
    assert kept_counters()[0]["passes"] == 0            # read and reset
