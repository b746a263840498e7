"""When may two conservative re-plans in a row be one?  A brute-force model check.

The kept conservative pass (docs/core.md, "The kept profile") re-plans every holder at every
early completion; on RICC-2010-2 85% of its moves re-move a holder moved since the last pass
that answered arrivals.  This study asks when the passes P1 (at t1) and P2 (at t2) between two
early completions can be replaced by one pass at t2 from the state before P1 with both
completions applied (the *merged* pass), with the same reservations and starts after it.

It replays random small workloads with the re-plan of the naive reference
(``tests/oracle.py``: ``_Oracle.conservative_replan`` on its ``_Profile``, which shares
nothing with ``malleo._core``): holders in order of (previous reservation, queue position),
each given the earliest fit of its whole hold on the running jobs and the answers so far
(docs/core.md "The kept profile": the same answers as the kept pass's clipped search); a job
starts when its answer is the pass time; arrivals are planned after the holders.  For every
run of ``k`` consecutive passes triggered only by early completions (no arrival, no start in
all but the last), it compares the true state after the last pass with the merged pass's, and counts
by whether the passes before the last one made an *overtake* (a holder whose new reservation
puts it before one that came ahead of it in the pass's order).

Finding (2026-12-06, 43,554 pairs and 946 triples over seven workload kinds): every
difference follows a pass with an overtake; without one the merged pass gave the same state
every time.  The ``certificate`` column is a candidate test of "no overtake" read from the
merged pass alone; it is refuted (seed 19522 of ``--seeds 20000 --procs 3 --jobs 8``: the
certificate says yes, the states differ).  Why no overtake suffices (sketch, docs/core.md
"Merging re-plans"): when P1 keeps the order, P2 visits the holders in the same order as the
merged pass, and by induction each holder i (P1 answer r'_i <= r_i) gets the same answer:
before r'_i both profiles hold the same running jobs and the same answers so far (the later
holders' slots start at r'_i or later in one, at r_i or later in the other); the merged window
also covers [r'_i, min(s + hold, r_i)), which has room since P1 found it there with more jobs
running and the holders before i no later than in P2.  Counted on the whole of RICC-2010-2,
passes without an arrival, a start or an overtake carry 0.7% of the moves: the rule as it
stands is not the lever there.

    python bench/cascade_merge_study.py [--seeds 2000] [--procs 6] [--jobs 14] [--passes 2]
        [--few-shapes]

Pure Python (the standard library and tests/oracle.py), no ``malleo`` import: runs from
anywhere.  Prints one line per outcome.
"""
from __future__ import annotations

import argparse
import pathlib
import random
import sys
from typing import NamedTuple

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from oracle import _Profile  # noqa: E402  (the reference's profile, stdlib only)


class Pass(NamedTuple):
    """One pass of a replay: its time (seconds), the running jobs (job -> (size, expected
    end, actual end)) and holders (job -> (size, hold, reservation, queue position)) it
    started from, what ended and arrived at it, what it started, whether its re-plan made an
    overtake, and the holders after it."""
    time: int
    running: dict
    holders: dict
    ended: list
    arrived: list
    started: list
    overtake: bool
    after: dict


def _order(holders):
    return sorted(holders, key=lambda j: (holders[j][2], holders[j][3]))


def replan(procs, t, running, holders, arrivals=()):
    """One conservative re-plan at t, as tests/oracle.py's: (new holders, overtake), where
    overtake says the holders' order by their new reservations differs from the order the
    re-plan visited them in.  running: (size, expected end > t); arrivals: (job, size, hold,
    queue position) in queue order, planned after the holders."""
    profile = _Profile(t, procs - sum(n for n, _ in running))
    for n, end in running:
        profile.release(end, n)
    order = _order(holders)
    new = {}
    for j in order:
        n, hold, _, q = holders[j]
        new[j] = (n, hold, profile.earliest_fit(t, n, hold), q)
        profile.occupy(new[j][2], new[j][2] + hold, n)
    overtake = _order(new) != order
    for j, n, hold, q in arrivals:
        new[j] = (n, hold, profile.earliest_fit(t, n, hold), q)
        profile.occupy(new[j][2], new[j][2] + hold, n)
    return new, overtake


def replay(seed, procs, n_jobs, few_shapes=False):
    """Every pass of one random workload (``Pass``).  ``few_shapes``: sizes 1-2 and holds of 8 or
    20 s only (batches of identical jobs, as on RICC-2010-2), else sizes 1..procs and holds
    of 3-30 s."""
    rnd = random.Random(seed)
    jobs = []
    t = 0
    for j in range(n_jobs):
        t += rnd.choice([0, 0, 1, 2, 5])
        if few_shapes:
            hold = rnd.choice([8, 20])
            n = rnd.choice([1, 2])
        else:
            hold = rnd.randint(3, 30)
            n = rnd.randint(1, procs)
        jobs.append((j, t, n, hold, rnd.randint(1, hold)))
    running = {}        # job -> (size, expected end, actual end)
    holders = {}
    submitted = set()
    passes = []
    now = 0
    while len(passes) < 500:
        times = [s for (j, s, _, _, _) in jobs if j not in submitted and s >= now]
        times += [a for (_, _, a) in running.values() if a >= now]
        if not times:
            if not holders:
                break
            times = [min(r for (_, _, r, _) in holders.values())]
        now = min(times)
        ended = [j for j, (_, _, a) in running.items() if a == now]
        for j in ended:
            del running[j]
        arrived = [(j, n, hold, j) for (j, s, n, hold, _) in jobs
                   if s == now and j not in submitted]
        submitted.update(a[0] for a in arrived)
        before = dict(running), dict(holders)
        busy = [(n, e) for (n, e, _) in running.values()]
        new, overtake = replan(procs, now, busy, holders, arrived)
        started = [j for j in new if new[j][2] == now]
        for j in started:
            n, hold, _, _ = new.pop(j)
            running[j] = (n, now + hold, now + jobs[j][4])
        holders = new
        passes.append(Pass(now, *before, ended, arrived, started, overtake, dict(holders)))
    return passes


def certificate(holders, merged):
    """True when every holder's merged answer comes after the previous reservation of every
    holder of another shape ahead of it, by (time, queue position).  Read from the merged
    pass alone (no pass in between run): a candidate test for "the deferred passes kept the
    order", since a pass's answers are no later than the reservations before it."""
    latest = {}                 # shape -> the latest (reservation, queue position) so far
    for i in _order(holders):
        n, hold, r, q = holders[i]
        answer = (merged[i][2], q)
        if any(key >= answer for shape, key in latest.items() if shape != (n, hold)):
            return False
        latest[(n, hold)] = max(latest.get((n, hold), (r, q)), (r, q))
    return True


def check(passes, procs, k):
    """(same state, an overtake before the last pass, certificate) for every k consecutive
    passes."""
    out = []
    for a in range(len(passes) - k + 1):
        run = passes[a:a + k]
        first, last = run[0], run[-1]
        if any(p.arrived for p in run) or any(p.started for p in run[:-1]):
            continue            # an arrival, or a start before the last pass
        if not all(p.ended for p in run) or not first.holders:
            continue            # a pass without an early completion, or no holder
        busy = [(n, e) for (n, e, _) in last.running.values()]
        merged, _ = replan(procs, last.time, busy, first.holders)
        true = {j: v[2] for j, v in last.after.items()}
        true.update({j: last.time for j in last.started})
        same = true == {j: v[2] for j, v in merged.items()}
        out.append((same, any(p.overtake for p in run[:-1]),
                    certificate(first.holders, merged)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--procs", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--passes", type=int, default=2, help="passes merged into one (>= 2)")
    ap.add_argument("--few-shapes", action="store_true",
                    help="sizes 1-2 and holds of 8 or 20 s only (batches of identical jobs)")
    args = ap.parse_args()
    for name in ("seeds", "procs", "jobs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: must be >= 1, got {getattr(args, name)}")
    if args.passes < 2:
        ap.error(f"--passes: must be >= 2, got {args.passes}")
    counts = {}
    for seed in range(args.seeds):
        passes = replay(seed, args.procs, args.jobs, args.few_shapes)
        for key in check(passes, args.procs, args.passes):
            counts[key] = counts.get(key, 0) + 1
    for (same, overtake, cert), c in sorted(counts.items()):
        print(f"{'same' if same else 'DIFFERENT'} state, "
              f"{'an overtake' if overtake else 'no overtake'} before the last pass, "
              f"certificate {'yes' if cert else 'no'}: {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
