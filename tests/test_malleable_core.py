"""The malleable event loop (malleo._core.malleable_loop): rigid equivalence, closed forms,
work conservation, capacity, size bounds, costs, intervals, check-in points and the dmr /
head-unblock policies (docs/malleability.md)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import EXAMPLES
from malleo._core import simulate
from malleo._core.malleable_loop import simulate_malleable
from malleo.emulator.flex import speedup_value
from malleo.policy import Malleability, Policy

RIGID, MOLDABLE, MALLEABLE = 0, 1, 2


def run(jobs, total, mal=None, **policy):
    """jobs: rows (submit, runtime, request, procs, kind, min, max[, a[, b]])."""
    rows = [tuple(j) + (0.0,) * (9 - len(j)) for j in jobs]
    c = list(zip(*rows))
    n = len(rows)
    pol = Policy(malleability=mal or Malleability(), **policy)
    return simulate_malleable(np.array(c[0]), np.array(c[1]), np.array(c[2]), np.array(c[3]),
                              np.zeros(n), np.zeros(n), np.zeros(n), total, pol,
                              np.array(c[4]), np.array(c[5]), np.array(c[6]),
                              np.array(c[7], dtype=float), np.array(c[8], dtype=float))


def check_expanders(res, rows, expand_mode):
    """The expander log: empty in-place; in slurm mode each request is followed by exactly
    one merge (at or after it, while the job runs, the job growing by the expander's
    processors then) or one cancel (at the job's end), at most one pending per job."""
    events = list(zip(res["exp_event"].tolist(), res["exp_job"].tolist(),
                      res["exp_time"].tolist(), res["exp_procs"].tolist()))
    if expand_mode == "in-place":
        assert not events
        return
    log = list(zip(res["log_job"].tolist(), res["log_time"].tolist(), res["log_size"].tolist()))
    pending = {}
    for ev, j, t, p in events:
        assert rows[j][4] == MALLEABLE and p >= 1
        if ev == 0:
            assert j not in pending
            assert res["start"][j] <= t < res["end"][j]
            pending[j] = (t, p)
            continue
        t0, p0 = pending.pop(j)
        assert p == p0 and t >= t0
        if ev == 1:
            assert t < res["end"][j]
            changes = [(tt, q) for jj, tt, q in log if jj == j]
            assert any(tt == t and q - prev == p
                       for (_, prev), (tt, q) in zip(changes, changes[1:]))
        else:
            assert ev == 2 and t == res["end"][j]
    assert not pending, "an expander outlived its job"


def sizes(r, j):
    return [(int(t), int(p)) for jj, t, p in zip(r["log_job"], r["log_time"], r["log_size"])
            if jj == j]


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
@pytest.mark.parametrize("order, estimate", [("fcfs", "request"), ("sjf", "predict"),
                                             ("multifactor", "request"), ("fcfs", "actual")])
def test_all_rigid_equals_simulate(backfill, order, estimate):
    from malleo.emulator.driver import load_workload

    t = load_workload(None).table.iloc[:1500]
    cols = [t[c].to_numpy() for c in ("submit_time", "runtime", "estimate", "procs", "user_id",
                                      "queue", "partition")]
    n = len(t)
    pol = Policy(order=order, backfill=backfill, estimate=estimate,
                 malleability=Malleability())
    want = simulate(*cols, 256, pol)
    p = cols[3].astype(np.int32)
    got = simulate_malleable(*cols, 256, pol, np.zeros(n, np.uint8), p, p, np.zeros(n),
                             np.zeros(n))
    for key in want:
        assert got[key].tolist() == want[key].tolist(), key
    assert (got["n_expand"] == 0).all() and (got["n_shrink"] == 0).all()
    assert got["proc_seconds"].tolist() == (p * cols[1]).tolist()


@pytest.mark.parametrize("expand_mode", ["in-place", "slurm"])
def test_fairshare_usage_is_charged_at_the_size_held(expand_mode):
    """Multifactor with no decay: each user's fair-share usage at the end equals the
    processor-seconds their jobs held, resizes included (each piece at its own size)."""
    from malleo.emulator.driver import load_workload
    from malleo.policy import Multifactor

    t = load_workload(None).table.iloc[:1500]
    cols = [t[c].to_numpy() for c in ("submit_time", "runtime", "estimate", "procs", "user_id",
                                      "queue", "partition")]
    n = len(t)
    rng = np.random.default_rng(3)
    kind = np.where(rng.random(n) < 0.5, MALLEABLE, RIGID).astype(np.uint8)
    p = cols[3].astype(np.int32)
    lo = np.where(kind == MALLEABLE, np.maximum(p // 2, 1), p).astype(np.int32)
    hi = np.where(kind == MALLEABLE, np.minimum(p * 2, 256), p).astype(np.int32)
    pol = Policy(order="multifactor", multifactor=Multifactor(half_life=10**15, calc_period=600),
                 malleability=Malleability(speedup="amdahl:0.05",
                                           reconfig_fixed=5, expand_mode=expand_mode))
    res = simulate_malleable(*cols, 256, pol, kind, lo, hi, np.full(n, 0.05), np.zeros(n))
    assert (res["n_expand"] + res["n_shrink"]).sum() > 100
    users, code = np.unique(cols[4], return_inverse=True)
    held = np.bincount(code, weights=res["proc_seconds"], minlength=len(users))
    assert np.allclose(res["user_usage"], held, rtol=1e-6, atol=0)


@pytest.mark.parametrize("r, p0, total", [(1000, 4, 64), (999, 3, 10), (7, 1, 5), (3600, 8, 8)])
def test_linear_alone_runs_r_p0_over_p(r, p0, total):
    mal = Malleability(speedup="linear")
    res = run([(5, r, 2 * r, p0, MALLEABLE, 1, total)], total, mal)
    assert res["start"].tolist() == [5]
    assert res["end"].tolist() == [5 + math.ceil(r * p0 / total)]
    assert sizes(res, 0)[-1][1] == total


@pytest.mark.parametrize("f, p0, total", [(0.05, 4, 64), (0.3, 2, 16), (0.0, 1, 4)])
def test_amdahl_fixed_size_and_expansion_match_the_formula(f, p0, total):
    mal = Malleability(speedup=f"amdahl:{f}")
    fixed = run([(0, 500, 500, p0, MALLEABLE, p0, p0, f)], total, mal)
    assert fixed["end"].tolist() == [500]
    grown = run([(0, 500, 500, p0, MALLEABLE, 1, total, f)], total, mal)
    s0 = speedup_value("amdahl", p0, f)
    s1 = speedup_value("amdahl", total, f)
    assert grown["end"].tolist() == [math.ceil(500 * s0 / s1 - 1e-9)]


def test_reconfiguration_cost_delays_completion():
    mal = Malleability(speedup="linear", reconfig_fixed=10, reconfig_per_proc=0.5)
    res = run([(0, 800, 800, 2, MALLEABLE, 1, 8)], 8, mal)
    # expand 2 -> 8 at 0: cost ceil(10 + 0.5 x 6) = 13 s, then 1600 / 8 = 200 s
    assert res["end"].tolist() == [213]
    assert res["reconfig_time"].tolist() == [13]
    assert res["proc_seconds"].tolist() == [8 * 213]


def test_dmr_shrinks_to_start_the_waiting_job():
    mal = Malleability(speedup="linear", policy="dmr")
    res = run([(0, 100, 100, 4, MALLEABLE, 2, 8), (10, 50, 50, 4, RIGID, 4, 4)], 8, mal)
    # A (work 400) grows to 8 at 0 (80 done by 10), shrinks to 4 at 10 for B (200 more
    # by 60), grows back to 8 when B ends: 120 left at rate 8 -> 15 s
    assert sizes(res, 0) == [(0, 4), (0, 8), (10, 4), (60, 8)]
    assert res["start"].tolist() == [0, 10]
    assert res["end"].tolist() == [75, 60]
    assert res["n_expand"].tolist() == [2, 0] and res["n_shrink"].tolist() == [1, 0]


def test_dmr_picks_the_smallest_shrink_for_the_first_startable_job():
    mal = Malleability(speedup="linear", policy="dmr", estimate_scaling="fixed")
    # at 5: A holds 8 of 8; B (8 procs) cannot start by shrinking A (min 4), C (2) can,
    # and (A's expected end fixed at 100, C's at 15) B still starts at its shadow time 100
    res = run([(0, 100, 100, 8, MALLEABLE, 4, 8), (5, 10, 10, 8, RIGID, 8, 8),
               (5, 10, 10, 2, RIGID, 2, 2)], 8, mal, backfill="none")
    assert sizes(res, 0)[:2] == [(0, 8), (5, 6)]
    assert res["start"][2] == 5


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative", "slurm"])
@pytest.mark.parametrize("policy", ["dmr", "head-unblock", "efficiency"])
@pytest.mark.parametrize("start_size", ["full", "min", "preferred", "fit"])
def test_no_shrink_delays_the_head_issue_11_c4(backfill, policy, start_size):
    """Issue 11 defect 1: shrinking A (scaled estimate: its expected end moves from 100 to
    130) to start C (2 processors for 1000 s) would push the head B from 100 to 1001."""
    mal = Malleability(speedup="linear", policy=policy, start_size=start_size)
    res = run([(0, 100, 100, 8, MALLEABLE, 4, 8), (10, 100, 100, 8, RIGID, 8, 8),
               (11, 1000, 1000, 2, RIGID, 2, 2)], 8, mal, backfill=backfill,
              bf_resolution=1)
    if start_size == "full":
        assert res["start"].tolist() == [0, 100, 200]
    assert res["start"][1] <= 100 + (100 if start_size in ("min", "preferred", "fit") else 0)
    # whatever A did, B never starts after the reservation it was first given
    assert res["start"][1] <= res["reservation"][1] or res["reservation"][1] < 0


def test_expansion_that_does_not_pay_is_not_taken_issue_11_c2():
    """Issue 11 defect 2: Amdahl f 0.5, 4 -> 8 processors at a cost of 20 s would end at
    20 + 160 / 1.78 = 110 s instead of 100 s: no expansion."""
    mal = Malleability(speedup="amdahl:0.5", reconfig_fixed=20)
    res = run([(0, 100, 100, 4, MALLEABLE, 4, 8, 0.5)], 8, mal)
    assert res["end"].tolist() == [100] and res["n_expand"].tolist() == [0]
    # without the cost it pays (90 s): taken; a 15 s minimum gain refuses it
    free = run([(0, 100, 100, 4, MALLEABLE, 4, 8, 0.5)], 8,
               Malleability(speedup="amdahl:0.5"))
    assert free["end"].tolist() == [90]
    gain = run([(0, 100, 100, 4, MALLEABLE, 4, 8, 0.5)], 8,
               Malleability(speedup="amdahl:0.5", min_gain=15))
    assert gain["end"].tolist() == [100]


def test_start_size_rules():
    """min: the job waits for (and starts at) its min and grows later; preferred: the
    largest size with efficiency >= the threshold (Amdahl 0.05: S(p)/p >= 0.8 up to
    p = 6); fit: the largest size >= min free now."""
    rows = [(0, 1000, 1000, 5, RIGID, 5, 5), (0, 100, 100, 8, MALLEABLE, 2, 8, 0.05)]
    mal = dict(speedup="amdahl:0.05", policy="none")
    full = run(rows, 8, Malleability(**mal))
    assert full["start"].tolist() == [0, 1000]
    low = run(rows, 8, Malleability(start_size="min", **mal))
    assert low["start"].tolist() == [0, 0] and sizes(low, 1) == [(0, 2)]
    fit = run(rows, 8, Malleability(start_size="fit", **mal))
    assert fit["start"].tolist() == [0, 0] and sizes(fit, 1) == [(0, 3)]
    pref = run([(0, 100, 100, 8, MALLEABLE, 2, 8, 0.05)], 8,
               Malleability(start_size="preferred", **mal))
    assert sizes(pref, 0) == [(0, 6)]
    # a flexible job started small grows later (dmr) into what nothing else uses
    grow = run(rows, 8, Malleability(start_size="min", **{**mal, "policy": "dmr"}))
    assert sizes(grow, 1)[:2] == [(0, 2), (0, 3)]


def test_efficiency_policy_grows_to_preferred_while_jobs_wait():
    """efficiency: A (Amdahl 0.05, preferred 6) starts at 2 (start size min) and grows to
    6, not 8, while B waits; when the queue is empty it may grow to its max."""
    mal = Malleability(speedup="amdahl:0.05", policy="efficiency",
                       start_size="min")
    res = run([(0, 1000, 1000, 8, MALLEABLE, 2, 8, 0.05)], 8, mal)
    assert sizes(res, 0)[:2] == [(0, 2), (0, 8)]
    res = run([(0, 1000, 1000, 8, MALLEABLE, 2, 8, 0.05), (0, 500, 500, 8, RIGID, 8, 8)],
              8, mal)
    assert sizes(res, 0)[:2] == [(0, 2), (0, 6)]


def test_dmr_does_not_expand_into_processors_a_waiting_job_could_use():
    mal = Malleability(speedup="linear", policy="dmr")
    # R holds 6, A 1; B (3) heads the queue, C (1) waits behind it under strict order:
    # the free processor is one C could use, so A (min 1) neither shrinks nor expands.
    res = run([(0, 1000, 1000, 6, RIGID, 6, 6), (0, 100, 100, 1, MALLEABLE, 1, 8),
               (0, 10, 10, 3, RIGID, 3, 3), (0, 10, 10, 1, RIGID, 1, 1)], 8, mal,
              backfill="none")
    assert sizes(res, 1) == [(0, 1)]
    assert res["end"][1] == 100


def test_head_unblock_shrinks_lowest_priority_first():
    mal = Malleability(speedup="linear", policy="head-unblock")
    # A (submitted first) and B hold 4 each; H needs 3: B (lower priority) gives 3
    res = run([(0, 100, 100, 4, MALLEABLE, 1, 4), (1, 100, 100, 4, MALLEABLE, 1, 4),
               (2, 10, 10, 3, RIGID, 3, 3)], 8, mal)
    assert sizes(res, 0) == [(0, 4)]
    assert sizes(res, 1) == [(1, 4), (2, 1)]
    assert res["start"][2] == 2


def test_slurm_mode_expander_waits_for_backfill_and_merges_when_it_starts():
    mal = Malleability(speedup="linear", policy="dmr", expand_mode="slurm")
    # 8 processors: F (2, 200 s), A (malleable 2 in [2, 4], 100 s), G (2, 50 s) and
    # R (2, 20 s) start at 0; H (4) arrives at 1 and waits (EASY shadow: G's end, 50).
    # At 20 R ends: 2 free that H cannot use, so dmr asks an expander for A: 2
    # processors, estimate 100 - 20 = 80 s.  It would end at 100 > 50 on processors H
    # needs, so it waits.  H starts at 50 (G's), ends at 60; the expander starts at 60
    # and merges: A (work 200, 120 done) runs its last 80 at 4 -> ends at 80.
    rows = [(0, 200, 200, 2, RIGID, 2, 2), (0, 100, 100, 2, MALLEABLE, 2, 4),
            (0, 50, 50, 2, RIGID, 2, 2), (0, 20, 20, 2, RIGID, 2, 2),
            (1, 10, 10, 4, RIGID, 4, 4)]
    res = run(rows, 8, mal)
    assert res["start"].tolist() == [0, 0, 0, 0, 50]
    assert res["end"].tolist() == [200, 80, 50, 20, 60]
    assert sizes(res, 1) == [(0, 2), (60, 4)]
    assert res["n_expand"].tolist() == [0, 1, 0, 0, 0]
    assert list(zip(res["exp_event"].tolist(), res["exp_job"].tolist(),
                    res["exp_time"].tolist(), res["exp_procs"].tolist(),
                    res["exp_est"].tolist())) == [(0, 1, 20, 2, 80), (1, 1, 60, 2, 80)]
    # in-place, the same rule: growing at 20 would make A's expected end 60, past H's
    # shadow time 50, on processors H needs (issue 11): A grows only at 60, ends at 80
    inplace = run(rows, 8, Malleability(speedup="linear", policy="dmr"))
    assert sizes(inplace, 1) == [(0, 2), (60, 4)]
    assert inplace["end"][1] == 80 and len(inplace["exp_event"]) == 0


def test_plan_requests_and_merges_the_expander_of_the_hand_computed_case():
    """``plan`` on the live state of the case above: at 20 it asks for A's expander (it
    cannot start), at 60 it starts the queued expander row, which merges into A."""
    from malleo._core import plan

    pol = Policy(malleability=Malleability(speedup="linear", policy="dmr",
                                           expand_mode="slurm", estimate_scaling="fixed"))
    running = {"procs": [2, 2, 2], "start": [0, 0, 0], "est": [200, 100, 50],
               "request": [200, 100, 50], "kind": [RIGID, MALLEABLE, RIGID],
               "min_procs": [2, 2, 2], "max_procs": [2, 4, 2]}
    d = plan(20, 8, running, {"submit": [1], "procs": [4], "request": [10]}, pol)
    assert d.start.tolist() == [] and d.resize.tolist() == []
    assert d.expand.tolist() == [[1, 2, 80]]
    running = {k: v[:2] for k, v in running.items()}
    d = plan(60, 8, running, {"submit": [20], "procs": [2], "request": [80], "parent": [1]},
             pol)
    assert d.start.tolist() == [0] and d.resize.tolist() == [[1, 4]]
    assert d.expand.tolist() == []
    with pytest.raises(ValueError, match="pending.parent"):
        plan(60, 8, running, {"submit": [20, 20], "procs": [2, 1], "request": [80, 80],
                              "parent": [1, 1]}, pol)


def test_slurm_mode_expander_is_cancelled_when_its_job_ends_first():
    mal = Malleability(speedup="linear", policy="dmr", expand_mode="slurm")
    # as above, but A runs 60 s: its expander (2, estimate 40 s, would end at 60 > 50)
    # waits; H runs 50..60; at 60 A ends before the pass, so the expander is cancelled
    rows = [(0, 200, 200, 2, RIGID, 2, 2), (0, 60, 60, 2, MALLEABLE, 2, 4),
            (0, 50, 50, 2, RIGID, 2, 2), (0, 20, 20, 2, RIGID, 2, 2),
            (1, 10, 10, 4, RIGID, 4, 4)]
    res = run(rows, 8, mal)
    assert sizes(res, 1) == [(0, 2)] and res["end"][1] == 60
    assert list(zip(res["exp_event"].tolist(), res["exp_time"].tolist(),
                    res["exp_est"].tolist())) == [(0, 20, 40), (2, 60, 40)]
    assert res["start"][4] == 50 and res["n_expand"][1] == 0


def test_min_interval_and_checkin_points():
    mal = Malleability(speedup="linear", min_interval=30, points="checkin",
                       checkin_period=20)
    jobs = [(0, 200, 200, 4, MALLEABLE, 2, 8)] + [(t, 5, 5, 4, RIGID, 4, 4)
                                                  for t in (1, 21, 45, 70)]
    res = run(jobs, 8, mal)
    changes = sizes(res, 0)[1:]
    times = [t for t, _ in changes]
    assert all(b - a >= 30 for a, b in zip(times, times[1:]))
    assert all(t >= 20 for t in times)


jobs_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 120), st.integers(0, 60),
              st.integers(1, 8), st.sampled_from([RIGID, MALLEABLE]), st.integers(0, 8),
              st.integers(0, 8)), min_size=1, max_size=12)


@settings(max_examples=EXAMPLES, deadline=None)
@given(jobs=jobs_strategy, total=st.integers(4, 10),
       policy=st.sampled_from(["dmr", "head-unblock", "none"]),
       backfill=st.sampled_from(["easy", "conservative", "none", "slurm"]),
       model=st.sampled_from(["linear", "amdahl:0.1", "downey:6,0.5", "downey:4,2"]),
       cost=st.sampled_from([(0, 0), (3, 0.5)]), pow2=st.booleans(),
       interval=st.sampled_from([0, 15]), points=st.sampled_from(["any", "checkin"]),
       expand_mode=st.sampled_from(["in-place", "slurm"]))
def test_invariants_on_generated_workloads(jobs, total, policy, backfill, model, cost, pow2,
                                           interval, points, expand_mode):
    rows = []
    for submit, runtime, extra, p, kind, lo, hi in sorted(jobs):
        p = min(p, total)
        pmin = max(1, p - lo) if kind else p
        pmax = min(total, p + hi) if kind else p
        rows.append((submit, runtime, runtime + extra, p, kind, pmin, pmax))
    a = 0.1 if model.startswith("amdahl") else float(model.split(":")[1].split(",")[0]) \
        if model.startswith("downey") else 0.0
    b = float(model.split(",")[1]) if model.startswith("downey") else 0.0
    rows = [r + (a, b) for r in rows]
    mal = Malleability(speedup=model, policy=policy, reconfig_fixed=cost[0],
                       reconfig_per_proc=cost[1], power_of_two=pow2, min_interval=interval,
                       points=points, checkin_period=10, expand_mode=expand_mode)
    res = run(rows, total, mal, backfill=backfill)
    n = len(rows)
    check_expanders(res, rows, expand_mode)
    start, end = res["start"], res["end"]
    assert (start >= np.array([r[0] for r in rows])).all() and (end >= start).all()
    # sizes stay in [min, max]; rigid jobs never change
    last = {}
    for j, t, p in zip(res["log_job"].tolist(), res["log_time"].tolist(),
                       res["log_size"].tolist()):
        assert rows[j][5] <= p <= rows[j][6]
        if rows[j][4] == RIGID:
            assert p == rows[j][3]
        last[j] = p
    assert sorted(last) == list(range(n))
    # work conserved: the completed work is the demanded work, to one second at the end size
    for j in range(n):
        rate = speedup_value(model.split(":")[0], last[j], a, b)
        assert res["work_done"][j] >= res["work"][j] - 1e-6 * max(1.0, res["work"][j])
        assert res["work_done"][j] - res["work"][j] <= rate + 1e-6
    # capacity never exceeded: replay the size log and the ends as a step function
    delta = {}
    current = {}
    for j, t, p in zip(res["log_job"].tolist(), res["log_time"].tolist(),
                       res["log_size"].tolist()):
        delta[t] = delta.get(t, 0) + p - current.get(j, 0)
        current[j] = p
    for j in range(n):
        delta[int(end[j])] = delta.get(int(end[j]), 0) - last[j]
    busy = 0
    for t in sorted(delta):
        busy += delta[t]
        assert 0 <= busy <= total, (t, busy)
    # processor-seconds equal the integral of the size log
    for j in range(n):
        changes = [(t, p) for jj, t, p in zip(res["log_job"], res["log_time"], res["log_size"])
                   if jj == j] + [(int(end[j]), 0)]
        area = sum(p * (t2 - t1) for (t1, p), (t2, _) in zip(changes, changes[1:]))
        assert res["proc_seconds"][j] == area


def test_moldable_start_smaller_now_or_wait():
    mal = Malleability(speedup="linear", moldable_start=True,
                       policy="none")
    # R holds 6 of 8 until 100.  M (p0 4, 1..8): with estimate 40, 2 processors now end
    # it at 80, before 8 processors from 100 (ends 120): it starts now at 2.
    now = run([(0, 100, 100, 6, RIGID, 6, 6), (0, 40, 40, 4, MOLDABLE, 1, 8)], 8, mal)
    assert now["start"].tolist() == [0, 0] and now["end"].tolist() == [100, 80]
    assert sizes(now, 1) == [(0, 2)]
    # with estimate 400, 2 now ends at 800, waiting for more is earlier: it waits
    wait = run([(0, 100, 100, 6, RIGID, 6, 6), (0, 400, 400, 4, MOLDABLE, 1, 8)], 8, mal)
    assert wait["start"].tolist() == [0, 100]
    off = run([(0, 100, 100, 6, RIGID, 6, 6), (0, 40, 40, 4, MOLDABLE, 1, 8)], 8,
              Malleability(speedup="linear", policy="none"))
    assert off["start"].tolist() == [0, 100]


def test_moldable_start_counts_the_work_of_a_job_queued_at_its_preferred_size():
    """Found by the malleable oracle: with scaled estimates a moldable job queued at its
    preferred size (3 of p0 6, Amdahl F = 0.1: S(3) = 2.5, S(6) = 4) has its estimate
    converted to that size (9 s at 6 -> 15 s at 3), so its work is 15 x S(3) = 37.5, not
    15 x S(6) = 60.  At t = 8 (1 processor free until R ends at 39): 1 processor now ends
    at 8 + 38 = 46, 6 from 39 at 39 + 10 = 49: it starts now at 1 (the old kernel, 60
    work: 68 against 54, kept it waiting until 36)."""
    mal = Malleability(speedup="amdahl:0.1", moldable_start=True, policy="dmr",
                       start_size="preferred", estimate_scaling="speedup")
    res = run([(2, 34, 37, 5, RIGID, 5, 5, 0.1), (8, 8, 9, 6, MOLDABLE, 1, 6, 0.1)], 6, mal)
    assert res["start"].tolist() == [2, 8]
    assert sizes(res, 1) == [(8, 1)]


def test_bad_size_range_is_refused():
    with pytest.raises(ValueError, match="min_procs/max_procs"):
        run([(0, 10, 10, 4, MALLEABLE, 5, 8)], 8)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 80), st.integers(0, 40),
                               st.integers(1, 6), st.sampled_from([RIGID, MALLEABLE]),
                               st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=10),
       total=st.integers(4, 8), policy=st.sampled_from(["dmr", "head-unblock"]),
       backfill=st.sampled_from(["easy", "none"]), pow2=st.booleans(),
       model=st.sampled_from(["linear", "amdahl:0.1"]), moldable=st.booleans(),
       expand_mode=st.sampled_from(["in-place", "slurm"]))
def test_plan_at_every_event_equals_simulate(jobs, total, policy, backfill, pow2, model,
                                             moldable, expand_mode):
    """Rebuild the live state before each event time from the replay (sizes from its log;
    fixed estimates, zero cost, points at every pass, so nothing else is needed; slurm
    mode: the expanders pending then, from its expander log) and ask ``plan``: it must
    start the same jobs at the same sizes, resize the same ones (merges included) and
    request the same expanders."""
    from malleo._core import plan

    rows = []
    for i, (submit, runtime, extra, p, kind, lo, hi) in enumerate(sorted(jobs)):
        p = min(p, total)
        if moldable and kind and i % 2:
            kind = MOLDABLE
        rows.append((submit, runtime, runtime + extra, p, kind,
                     max(1, p - lo) if kind else p, min(total, p + hi) if kind else p,
                     0.1 if model != "linear" else 0.0))
    mal = Malleability(speedup=model, policy=policy, power_of_two=pow2,
                       estimate_scaling="fixed", moldable_start=moldable,
                       expand_mode=expand_mode)
    res = run(rows, total, mal, backfill=backfill)
    xlog = list(zip(res["exp_event"].tolist(), res["exp_job"].tolist(),
                    res["exp_time"].tolist(), res["exp_procs"].tolist(),
                    res["exp_est"].tolist()))
    expanders = []       # (job, requested at, processors, estimate, merged/cancelled at)
    for k, (ev, j, t0, p, e) in enumerate(xlog):
        if ev == 0:
            done = [tt for ev2, j2, tt, _, _ in xlog[k + 1:] if j2 == j and ev2 != 0][:1]
            merged = [ev2 for ev2, j2, _, _, _ in xlog[k + 1:] if j2 == j and ev2 != 0][:1]
            expanders.append((j, t0, p, e, done[0] if done else None,
                              bool(merged) and merged[0] == 1))
    pol = Policy(backfill=backfill, malleability=mal)
    log = list(zip(res["log_job"].tolist(), res["log_time"].tolist(), res["log_size"].tolist()))
    start, end = res["start"].tolist(), res["end"].tolist()
    times = sorted({r[0] for r in rows} | set(end) | {t for _, t, _ in log})
    n = len(rows)

    def size_before(j, t):
        return [p for jj, tt, p in log if jj == j and tt < t][-1]

    def size_at(j, t):
        return [p for jj, tt, p in log if jj == j and tt <= t][-1]

    for t in times:
        running = [j for j in range(n) if start[j] < t < end[j] or (start[j] < t == end[j]
                                                                      and False)]
        pending = [j for j in range(n) if rows[j][0] <= t and start[j] >= t]
        waiting_x = sorted((x for x in expanders if x[1] < t and x[0] in running
                            and (x[4] is None or x[4] >= t)), key=lambda x: x[0])
        if not pending and not waiting_x and not any(rows[j][4] for j in running):
            continue
        rcols = {"procs": [size_before(j, t) for j in running],
                 "start": [start[j] for j in running], "est": [rows[j][2] for j in running],
                 "request": [rows[j][2] for j in running],
                 "kind": [rows[j][4] for j in running],
                 "min_procs": [rows[j][5] for j in running],
                 "max_procs": [rows[j][6] for j in running],
                 "speedup_a": [rows[j][7] for j in running]}
        pcols = {"submit": [rows[j][0] for j in pending], "procs": [rows[j][3] for j in pending],
                 "request": [rows[j][2] for j in pending],
                 "kind": [rows[j][4] for j in pending],
                 "min_procs": [rows[j][5] for j in pending],
                 "max_procs": [rows[j][6] for j in pending],
                 "speedup_a": [rows[j][7] for j in pending],
                 "parent": [-1] * len(pending)}
        for j, t0, p, e, _, _ in waiting_x:
            for col, v in (("submit", t0), ("procs", p), ("request", e), ("kind", RIGID),
                           ("min_procs", p), ("max_procs", p), ("speedup_a", 0.0),
                           ("parent", running.index(j))):
                pcols[col].append(v)
        d = plan(t, total, rcols, pcols, pol)
        want_start = {j: size_at(j, t) for j in pending if start[j] == t}
        want_start.update({("x", x[0]): x[2] for x in waiting_x if x[4] == t and x[5]})
        keys = pending + [("x", x[0]) for x in waiting_x]
        got_start = {keys[k]: p for k, p in zip(d.start.tolist(), d.start_procs.tolist())}
        assert got_start == want_start, (t, rows)
        rows_now = running + pending
        want_expand = sorted((rows_now.index(x[0]), x[2], x[3]) for x in expanders
                             if x[1] == t and not (x[4] == t and x[5]))
        assert sorted(map(tuple, d.expand.tolist())) == want_expand, (t, rows)
        want_resize = {j: size_at(j, t) for j in running if size_at(j, t) != size_before(j, t)}
        got_resize = {running[k]: p for k, p in d.resize.tolist()}
        assert got_resize == want_resize, (t, rows)


# three times the examples: the draws spread over 3 backfill x 2 expand modes (about 1 s)
@settings(max_examples=3 * EXAMPLES, deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 80), st.integers(0, 40),
                               st.integers(1, 6), st.sampled_from([RIGID, MOLDABLE, MALLEABLE]),
                               st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=9),
       total=st.integers(3, 8),
       policy=st.sampled_from(["dmr", "head-unblock", "efficiency", "none"]),
       model=st.sampled_from(["linear", "amdahl:0.1"]), pow2=st.booleans(),
       cost=st.sampled_from([(0.0, 0.0), (2.0, 0.5)]), interval=st.sampled_from([0, 7]),
       start_size=st.sampled_from(["full", "min", "preferred", "fit"]),
       min_gain=st.sampled_from([0, 5]), threshold=st.sampled_from([0.8, 0.5]),
       backfill=st.sampled_from(["none", "easy", "conservative"]),
       expand_mode=st.sampled_from(["in-place", "slurm"]),
       scaling=st.sampled_from(["fixed", "speedup"]), moldable=st.booleans())
def test_core_matches_the_naive_malleable_oracle(jobs, total, policy, model, pow2, cost,
                                                 interval, start_size, min_gain, threshold,
                                                 backfill, expand_mode, scaling, moldable):
    """The core and tests/oracle_malleable.py (written from docs/malleability.md, sharing
    no code) give the same starts, ends, size changes and expander log (request, merge,
    cancel): every policy, start-size rule, minimum gain, backfill none, EASY and conservative, expand
    mode in-place and slurm, estimates fixed or scaled with the speedup, moldable start
    on or off."""
    from oracle_malleable import oracle_malleable

    rows = []
    for submit, runtime, extra, p, kind, lo, hi in sorted(jobs):
        p = min(p, total)
        rows.append((submit, runtime, runtime + extra, p, kind,
                     max(1, p - lo) if kind else p, min(total, p + hi) if kind else p,
                     0.1 if model != "linear" else 0.0))
    mal = Malleability(speedup=model, policy=policy, power_of_two=pow2,
                       estimate_scaling=scaling, reconfig_fixed=cost[0],
                       reconfig_per_proc=cost[1], min_interval=interval,
                       start_size=start_size, min_gain=min_gain,
                       efficiency_threshold=threshold, expand_mode=expand_mode,
                       moldable_start=moldable)
    res = run(rows, total, mal, backfill=backfill)
    xlog = []
    start, end, log = oracle_malleable(rows, total, policy=policy, model=model.split(":")[0],
                                       cost=cost, min_interval=interval, pow2=pow2,
                                       start_size=start_size, threshold=threshold,
                                       min_gain=min_gain, backfill=backfill,
                                       expand_mode=expand_mode, xlog=xlog,
                                       scaled=scaling == "speedup", moldable_start=moldable)
    got_x = list(zip(res["exp_event"].tolist(), res["exp_job"].tolist(),
                     res["exp_time"].tolist(), res["exp_procs"].tolist()))
    assert sorted(got_x) == sorted(xlog)
    assert res["start"].tolist() == start
    assert res["end"].tolist() == end
    got = list(zip(res["log_job"].tolist(), res["log_time"].tolist(), res["log_size"].tolist()))
    assert sorted(got) == sorted(log)


@settings(max_examples=EXAMPLES, deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 80), st.integers(0, 40),
                               st.integers(1, 8), st.sampled_from([RIGID, MOLDABLE, MALLEABLE]),
                               st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=14),
       total=st.integers(4, 10),
       policy=st.sampled_from(["dmr", "head-unblock", "efficiency", "none"]),
       backfill=st.sampled_from(["easy", "conservative"]),
       model=st.sampled_from(["linear", "amdahl:0.1", "downey:6,0.5"]),
       start_size=st.sampled_from(["full", "min", "preferred", "fit"]),
       moldable=st.booleans(), pow2=st.booleans(),
       expand_mode=st.sampled_from(["in-place", "slurm"]))
def test_no_reconfiguration_ever_delays_a_reservation(jobs, total, policy, backfill, model,
                                                      start_size, moldable, pow2, expand_mode):
    """Issue 11 point 1, the general case definition of a guarantee: with estimates >=
    runtimes (estimates scaling with the speedup) and zero reconfiguration cost, no job
    starts later than the first reservation it was given, whatever the reconfiguration
    policy, start-size rule, moldable start and expand mode do (EASY: the head's;
    conservative: every job's).  Slurm backfill is left out: its rigid schedule already
    gives no such guarantee (a reservation is remade each pass, bounded by bf_max_job_test
    and bf_window); its decisions are checked against the pass's own reservations."""
    rows = []
    for submit, runtime, extra, p, kind, lo, hi in sorted(jobs):
        p = min(p, total)
        rows.append((submit, runtime, runtime + extra, p, kind,
                     max(1, p - lo) if kind else p, min(total, p + hi) if kind else p))
    a = 0.1 if model.startswith("amdahl") else 6.0 if model.startswith("downey") else 0.0
    b = 0.5 if model.startswith("downey") else 0.0
    rows = [r + (a, b) for r in rows]
    mal = Malleability(speedup=model, policy=policy, start_size=start_size,
                       moldable_start=moldable, power_of_two=pow2, expand_mode=expand_mode)
    res = run(rows, total, mal, backfill=backfill)
    for j in range(len(rows)):
        if res["reservation"][j] >= 0:
            assert res["start"][j] <= res["reservation"][j], (j, rows)


def test_plan_applies_the_start_size_and_the_reservation_rule():
    """`plan` runs the same kernel: a pending malleable job asks for its min (start size
    min) and starts at it; the c4 shrink is refused there too."""
    from malleo._core import plan

    pol = Policy(malleability=Malleability(speedup="linear", policy="none",
                                           start_size="min"))
    running = {"procs": [5], "start": [0], "est": [1000], "request": [1000]}
    pending = {"submit": [0], "procs": [8], "request": [100], "kind": [MALLEABLE],
               "min_procs": [2], "max_procs": [8]}
    d = plan(0, 8, running, pending, pol)
    assert d.start.tolist() == [0] and d.start_procs.tolist() == [2]
    # c4 at 11: A (8 of 8, malleable 4..8, started at 0, 100 s) runs, B (8) waits with its
    # reservation at 100, C (2, 1000 s) arrives: dmr must not shrink A for C
    pol = Policy(malleability=Malleability(speedup="linear", policy="dmr"))
    running = {"procs": [8], "start": [0], "est": [100], "request": [100],
               "kind": [MALLEABLE], "min_procs": [4], "max_procs": [8]}
    pending = {"submit": [10, 11], "procs": [8, 2], "request": [100, 1000],
               "kind": [RIGID, RIGID], "min_procs": [8, 2], "max_procs": [8, 2]}
    d = plan(11, 8, running, pending, pol)
    assert d.start.tolist() == [] and d.resize.tolist() == []
    # with C short enough to end before 100 (and A's estimate fixed) the shrink is safe
    pol = Policy(malleability=Malleability(speedup="linear", policy="dmr",
                                           estimate_scaling="fixed"))
    pending["request"] = [100, 50]
    d = plan(11, 8, running, pending, pol)
    assert d.start.tolist() == [1] and d.resize.tolist() == [[0, 6]]
