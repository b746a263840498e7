"""Cost of one planning pass against queue length (figures only, no assertions).

``plan`` (the live pass, rebuilt from scratch at every call): for each queue length Q, the
live state of bench/plan_latency.py (10,000 nodes, about 90% busy, Q pending jobs) and one
``malleo._core.plan`` pass per backfill mode, median of ``--repeat`` calls; prints
milliseconds per pass and microseconds per waiting job, so the growth with Q shows (issue
16: conservative was O(Q x breakpoints) per pass).

``--replay``: the event loop (``malleo._core.simulate``), where conservative keeps its
profile between passes (docs/core.md, "The kept profile").  For each Q, a generated
workload that holds a backlog of about Q waiting jobs (Q jobs at time 0, then arrivals at
about the rate jobs finish; runtimes 2-100% of the estimate, so most completions are
early, as in the archive's traces) on 1,024 processors; prints the mean queue length seen
at the passes, microseconds per pass (wall, and the process's CPU time: on a shared
machine the wall time mostly measures the load) and nanoseconds per waiting job and pass
(CPU).

    python bench/pass_cost.py [--queues 100,300,1000,3000,10000] [--modes conservative,slurm]
                              [--nodes 10000] [--repeat 3]
    python bench/pass_cost.py --replay [--queues 100,300,1000,3000] [--modes conservative]
                              [--passes 20000]
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queues", default="100,300,1000,3000,10000")
    ap.add_argument("--modes", default="conservative,slurm,slurm:5000,easy")
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--replay", action="store_true", help="the event loop instead of plan")
    ap.add_argument("--passes", type=int, default=20_000,
                    help="--replay: jobs after the initial backlog (about 2 passes each)")
    args = ap.parse_args()
    if args.replay:
        return replay_costs(args)
    from plan_latency import live_state

    from malleo._core import plan
    from malleo.policy import Policy

    print(f"{'mode':<14} {'queue':>7} {'ms/pass':>9} {'us/job':>8}")
    for mode in args.modes.split(","):
        name, _, k = mode.partition(":")
        policy = Policy(backfill=name, **({"bf_max_job_test": int(k)} if k else {}))
        for q in (int(x) for x in args.queues.split(",")):
            now, running, pending = live_state(args.nodes, q)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                plan(now, args.nodes, running, pending, policy)
                times.append(time.perf_counter() - t0)
            ms = statistics.median(times) * 1000
            print(f"{mode:<14} {q:>7} {ms:>9.2f} {ms * 1000 / q:>8.2f}", flush=True)
    return 0


def backlog_workload(queue: int, n_after: int, procs: int = 1024, seed: int = 0):
    """simulate() columns: ``queue`` jobs at time 0, then ``n_after`` arrivals at about the
    rate the machine finishes jobs, so the backlog stays near ``queue`` (seconds, procs)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = queue + n_after
    size = np.minimum(rng.geometric(1 / 16, n), procs // 4).astype(np.int32)
    estimate = rng.choice([600, 3600, 4 * 3600, 12 * 3600, 86400], n).astype(np.int64)
    runtime = np.maximum(1, (estimate * rng.uniform(0.02, 1.0, n)).astype(np.int64))
    work_rate = procs / float(np.mean(size * runtime))        # jobs finished per second
    gaps = rng.exponential(1 / work_rate, n_after)
    submit = np.concatenate([np.zeros(queue), np.cumsum(gaps)]).astype(np.int64)
    zeros = np.zeros(n, np.int32)
    return (submit, runtime, estimate, size, rng.integers(1, 50, n).astype(np.int32), zeros,
            zeros), procs


def replay_costs(args) -> int:
    """The --replay table: cost per pass of the event loop against the backlog length."""
    import numpy as np

    from malleo._core import simulate
    from malleo.policy import Policy

    print(f"{'mode':<14} {'backlog':>7} {'mean Q':>7} {'passes':>7} {'us/pass':>9} "
          f"{'cpu us/pass':>11} {'ns/job/pass':>11}")
    for mode in args.modes.split(","):
        name, _, k = mode.partition(":")
        policy = Policy(backfill=name, **({"bf_max_job_test": int(k)} if k else {}))
        for q in (int(x) for x in args.queues.split(",")):
            cols, procs = backlog_workload(q, args.passes)
            t0 = time.perf_counter()
            c0 = time.process_time()
            r = simulate(*cols, procs, policy)
            dt = time.perf_counter() - t0
            cpu = time.process_time() - c0
            submit, runtime = cols[0], cols[1]
            times = np.unique(np.concatenate([submit, r["start"] + runtime]))
            # waiting jobs at each pass time: submitted at or before it, not started before it
            waiting = (np.searchsorted(np.sort(submit), times, side="right")
                       - np.searchsorted(np.sort(r["start"]), times, side="left"))
            passes = len(times)
            mean_q = float(np.mean(waiting))
            us = dt * 1e6 / passes
            cpu_us = cpu * 1e6 / passes
            print(f"{mode:<14} {q:>7} {mean_q:>7.0f} {passes:>7} {us:>9.1f} {cpu_us:>11.1f} "
                  f"{cpu_us * 1000 / max(mean_q, 1):>11.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
