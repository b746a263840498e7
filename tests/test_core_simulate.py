"""malleo._core.simulate on hand-computed cases, its input validation, and properties of
the backfill modes on generated workloads (docs/scheduling-semantics.md)."""
import math

import numpy as np
import pytest

from malleo._core import simulate
from malleo._core.backfill import expected_end
from malleo._core.priority import multifactor_priority, queue_keys
from malleo.policy import Multifactor, Policy
from malleo.policy_codes import ORDER_CODES


def run(jobs, total, **policy):
    """jobs: rows (submit, runtime, request, procs[, user[, queue]])."""
    cols = list(zip(*[tuple(j) + (0,) * (6 - len(j)) for j in jobs]))
    n = len(jobs)
    return simulate(np.array(cols[0]), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                    np.array(cols[4]), np.array(cols[5]), np.zeros(n), total, Policy(**policy))


# P=4: job 3 (1 proc, 30 s) fits EASY's extra processors at t=3 and so delays job 2;
# conservative reserves job 2 at 20 first, so job 3 waits until 30.
DELAY = [(0, 10, 10, 3), (1, 10, 10, 2), (2, 10, 10, 4), (3, 30, 30, 1)]


@pytest.mark.parametrize("backfill, start, reservation, backfilled", [
    ("none", [0, 10, 20, 30], [-1, -1, -1, -1], [0, 0, 0, 0]),
    # at 10 job 2 heads the queue: job 1 (ends 20) and job 3 (ends 33) must both end
    ("easy", [0, 10, 33, 3], [-1, 10, 33, -1], [0, 0, 0, 1]),
    # conservative plans every job, the one that starts at once included
    ("conservative", [0, 10, 20, 30], [0, 10, 20, 30], [0, 0, 0, 0]),
])
def test_backfill_modes_by_hand(backfill, start, reservation, backfilled):
    r = run(DELAY, 4, backfill=backfill)
    assert r["start"].tolist() == start
    assert r["end"].tolist() == [s + j[1] for s, j in zip(start, DELAY)]
    assert r["reservation"].tolist() == reservation
    assert r["backfilled"].tolist() == backfilled


def test_slurm_budget_by_hand():
    # K=1 reserves only the head: EASY's schedule; K=2 also protects job 2: conservative's
    easy = run(DELAY, 4, backfill="slurm", bf_max_job_test=1, bf_resolution=1)
    assert easy["start"].tolist() == [0, 10, 33, 3]
    two = run(DELAY, 4, backfill="slurm", bf_max_job_test=2, bf_resolution=1)
    assert two["start"].tolist() == [0, 10, 20, 30]
    assert two["reservation"].tolist() == [-1, 10, 20, 30]
    # a 1-second window reserves nothing ahead: job 3 backfills like under EASY
    narrow = run(DELAY, 4, backfill="slurm", bf_window=1, bf_resolution=1)
    assert narrow["start"].tolist() == [0, 10, 33, 3]
    assert narrow["reservation"].tolist() == [-1, -1, -1, -1]
    # a 60 s grid: the head's reservation is rounded up to 60, job 3 then ends before it
    grid = run(DELAY, 4, backfill="slurm", bf_max_job_test=2, bf_resolution=60)
    assert grid["reservation"][1] == 60
    assert grid["start"][3] == 3


def test_easy_backfills_job_ending_by_shadow():
    jobs = [(0, 10, 10, 2), (1, 5, 5, 4), (2, 8, 8, 2), (3, 20, 20, 1)]
    r = run(jobs, 4, backfill="easy")
    assert r["start"].tolist() == [0, 10, 2, 15]
    assert r["reservation"].tolist() == [-1, 10, -1, 15]
    assert r["backfilled"].tolist() == [0, 0, 1, 0]
    assert run(jobs, 4, backfill="none")["start"].tolist() == [0, 10, 15, 15]


def test_zero_runtime_job_repeats_the_pass():
    # job 0 runs 0 s but requested 5: job 1 is reserved at 5, then starts at 0 in the
    # repeated pass after job 0's completion at 0
    r = run([(0, 0, 5, 2), (0, 4, 4, 2)], 2, backfill="easy")
    assert r["start"].tolist() == [0, 0]
    assert r["end"].tolist() == [0, 4]
    assert r["reservation"].tolist() == [-1, 5]
    chain = run([(0, 0, 1, 3)] * 5 + [(0, 2, 2, 3)], 3, backfill="conservative")
    assert chain["start"].tolist() == [0] * 6


def test_predict_estimates_and_expected_end_extension():
    jobs = [(0, 10, 100, 3), (1, 50, 100, 2), (15, 5, 100, 3), (25, 30, 40, 1)]
    r = run(jobs, 3, backfill="easy", estimate="predict")
    # job 0 plans with its request (no history): job 1 is reserved at 100.  Job 1 starts
    # at 10 with est 10 (job 0's runtime); at 15 the head (job 2) is reserved at job 1's
    # expected end 20; at 25 that end has passed and is extended to 10 + 100 = 110, so
    # job 3 (est 10) backfills.  Job 2 starts at 60 with (30 + 50) // 2 = 40.
    assert r["est"].tolist() == [100, 10, 40, 10]
    assert r["start"].tolist() == [0, 10, 60, 25]
    assert r["reservation"].tolist() == [-1, 100, 20, -1]
    assert r["backfilled"].tolist() == [0, 0, 0, 1]
    req = run(jobs, 3, backfill="easy", estimate="request")
    assert req["reservation"][2] == 110


def test_expected_end_rule():
    assert expected_end(0, 10, 100, 5) == 10
    assert expected_end(0, 10, 100, 10) == 100
    assert expected_end(0, 10, 100, 100) == 101
    assert expected_end(7, 0, 0, 7) == 8


def test_actual_estimate_is_runtime():
    r = run([(0, 10, 100, 2), (1, 5, 100, 2), (2, 3, 50, 1)], 2, estimate="actual")
    assert r["est"].tolist() == [10, 5, 3]


@pytest.mark.parametrize("order, start", [
    ("fcfs", [0, 10, 30, 31]),
    ("sjf", [0, 16, 10, 11]),      # at 10: job 2 (est 1), then job 3 (5), then job 1 (20)
    ("ljf", [0, 10, 35, 30]),      # at 10: job 1 (20); at 30: job 3 (5) before job 2 (1)
    ("saf", [0, 16, 10, 11]),      # all of size 2: the sjf order
])
def test_orders_by_hand(order, start):
    jobs = [(0, 10, 10, 2), (1, 20, 20, 2), (2, 1, 1, 2), (3, 5, 5, 2)]
    r = run(jobs, 2, order=order, backfill="none")
    assert r["start"].tolist() == start


def test_queue_keys_formulas():
    submit = np.array([0, 5, 100, 3000])
    est = np.array([0, 1, 600, 7200])
    procs = np.array([1, 2, 64, 3])
    now = 4000
    for i in range(4):
        w, e, n, s = now - submit[i], max(int(est[i]), 1), int(procs[i]), int(submit[i])
        r = w / e
        assert queue_keys(ORDER_CODES["wfp3"], now, submit, est, procs)[i] == -(r * r * r) * n
        assert queue_keys(ORDER_CODES["unicep"], now, submit, est, procs)[i] == -w / (math.log2(max(n, 2)) * e)
        assert queue_keys(ORDER_CODES["f1"], now, submit, est, procs)[i] == (
            math.log10(e) * n + 870 * math.log10(max(s, 1)))
        assert queue_keys(ORDER_CODES["saf"], now, submit, est, procs)[i] == n * int(est[i])
        assert queue_keys(ORDER_CODES["ljf"], now, submit, est, procs)[i] == -int(est[i])


def test_multifactor_priority_formula():
    mf = Multifactor(weight_age=1000, weight_size=500, weight_fairshare=2000, max_age=100,
                     size_favor="small")
    got = multifactor_priority(mf, 150, 100, 16, 64, 0.25, 7.5)
    assert got == 1000 * (50 / 100) + 500 * ((64 - 16 + 1) / 64) + 2000 * 0.25 + 7.5
    large = Multifactor(size_favor="large", weight_size=10, max_age=10)
    assert multifactor_priority(large, 500, 0, 16, 64, 1.0) == 1000 * 1.0 + 10 * (16 / 64) + 1000 * 1.0


def test_multifactor_fair_share_by_hand():
    # P=1.  User 1 runs 100 s; at t=100 usage is recomputed: user 1 holds all of it, so
    # 2 ** -(1.0 * 2 users) = 0.25 against user 2's 1.0, and user 2's job goes first.
    jobs = [(0, 100, 100, 1, 1), (10, 10, 10, 1, 1), (20, 10, 10, 1, 2)]
    mf = Multifactor(weight_age=0, weight_fairshare=1000, calc_period=1)
    r = run(jobs, 1, order="multifactor", backfill="none", multifactor=mf)
    assert r["start"].tolist() == [0, 110, 100]
    assert run(jobs, 1, order="fcfs", backfill="none")["start"].tolist() == [0, 100, 110]


def test_multifactor_queue_factor_and_calc_period():
    jobs = [(0, 100, 100, 1, 1, 0), (10, 10, 10, 1, 1, 0), (20, 10, 10, 1, 1, 5)]
    mf = Multifactor(weight_age=0, weight_fairshare=0, weight_queue=1000,
                     queue_factors={5: 1.0})
    r = run(jobs, 1, order="multifactor", backfill="none", multifactor=mf)
    assert r["start"].tolist() == [0, 110, 100]
    # age only: priorities frozen between calculations (calc_period 1000 s): job 2 and
    # job 1 both got age 0 at arrival, so submit order decides
    aged = Multifactor(weight_age=1000, weight_fairshare=0, calc_period=1000, max_age=50)
    r = run([(0, 100, 100, 1), (10, 10, 10, 1), (20, 10, 10, 1)], 1, order="multifactor",
            backfill="none", multifactor=aged)
    assert r["start"].tolist() == [0, 100, 110]


@pytest.mark.parametrize("bad, message", [
    (dict(submit=[5, 0]), "sorted"),
    (dict(procs=[0, 1]), "procs"),
    (dict(procs=[1, 9]), "procs"),
    (dict(runtime=[-1, 1]), "runtime"),
    (dict(estimate=[1, -5]), "estimate"),
    (dict(user=[1]), "length"),
])
def test_validation(bad, message):
    cols = dict(submit=[0, 1], runtime=[1, 1], estimate=[1, 1], procs=[1, 1], user=[0, 0],
                queue=[0, 0], partition=[0, 0])
    cols.update(bad)
    with pytest.raises(ValueError, match=message):
        simulate(cols["submit"], cols["runtime"], cols["estimate"], cols["procs"], cols["user"],
                 cols["queue"], cols["partition"], 4, Policy())


def test_empty_workload():
    e = np.zeros(0, dtype=np.int64)
    r = simulate(e, e, e, e, e, e, e, 4, Policy())
    assert all(len(v) == 0 for v in r.values())


def workload(seed, n=80, total=32, zero_runtime=False):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n * 15, n))
    request = rng.integers(1, 400, n)
    runtime = np.minimum(request, rng.integers(0 if zero_runtime else 1, 450, n))
    procs = rng.integers(1, total + 1, n)
    user = rng.integers(0, 5, n)
    return submit, runtime, request, procs, user, total


def sim(w, **policy):
    submit, runtime, request, procs, user, total = w
    zeros = np.zeros(len(submit))
    return simulate(submit, runtime, request, procs, user, zeros, zeros, total, Policy(**policy))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp3", "f1"])
@pytest.mark.parametrize("estimate", ["request", "actual"])
def test_slurm_k1_resolution1_unbounded_is_easy(seed, order, estimate):
    w = workload(seed)
    easy = sim(w, order=order, backfill="easy", estimate=estimate)
    slurm = sim(w, order=order, backfill="slurm", estimate=estimate, bf_max_job_test=1,
                bf_resolution=1, bf_window=10**9)
    for key in ("start", "reservation", "backfilled"):
        assert slurm[key].tolist() == easy[key].tolist(), key


def test_conservative_never_starts_after_first_reservation():
    violations = 0
    for seed in range(12):
        for order in ("fcfs", "sjf", "saf", "unicep"):
            for estimate in ("request", "actual"):
                r = sim(workload(seed), order=order, backfill="conservative", estimate=estimate)
                reserved = r["reservation"] >= 0
                assert reserved.any()
                violations += int((r["start"][reserved] > r["reservation"][reserved]).sum())
    assert violations == 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
@pytest.mark.parametrize("estimate", ["request", "predict"])
def test_never_oversubscribed_and_deterministic(seed, backfill, estimate):
    w = workload(seed, zero_runtime=False)
    submit, runtime, request, procs, user, total = w
    r = sim(w, order="wfp3", backfill=backfill, estimate=estimate, bf_resolution=30)
    assert (r["start"] >= submit).all()
    assert (r["end"] == r["start"] + runtime).all()
    times = np.unique(np.concatenate([r["start"], r["end"]]))
    for t in times:
        held = procs[(r["start"] <= t) & (t < r["end"])].sum()
        assert held <= total, t
    again = sim(w, order="wfp3", backfill=backfill, estimate=estimate, bf_resolution=30)
    for key in r:
        assert r[key].tolist() == again[key].tolist()
