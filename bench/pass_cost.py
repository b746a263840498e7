"""Cost of one planning pass against queue length (figures only, no assertions).

For each queue length Q: the live state of bench/plan_latency.py (10,000 nodes, about 90%
busy, Q pending jobs) and one ``malleo._core.plan`` pass per backfill mode, median of
``--repeat`` calls; prints milliseconds per pass and microseconds per waiting job, so the
growth with Q shows (issue 16: conservative was O(Q x breakpoints) per pass).

    python bench/pass_cost.py [--queues 100,300,1000,3000,10000] [--modes conservative,slurm]
                              [--nodes 10000] [--repeat 3]
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
    args = ap.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
