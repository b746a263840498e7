"""Latency of one ``plan`` pass (the Slurm agent's call) on a big live state.

10,000 nodes (one allocation unit each), about 9,000 of them busy with running jobs, and
10,000 pending jobs, as pandas DataFrames; one pass per policy, median of a few calls
(input conversion included).  Figures only, no assertions.

    python bench/plan_latency.py [--nodes 10000] [--pending 10000]
"""
import argparse
import statistics
import sys
import time

import numpy as np
import pandas as pd


def live_state(nodes, pending, seed=0):
    rng = np.random.default_rng(seed)
    now = 10 * 86400
    sizes, busy = [], 0
    while True:
        size = int(min(rng.geometric(0.05), nodes // 10))
        if busy + size > int(nodes * 0.9):
            break
        sizes.append(size)
        busy += size
    r = len(sizes)
    request = rng.choice([3600, 4 * 3600, 12 * 3600, 86400, 2 * 86400], r)
    start = now - (rng.random(r) * request).astype(np.int64)
    running = pd.DataFrame({"procs": np.array(sizes, dtype=np.int32), "start": start,
                            "est": request, "request": request,
                            "user": rng.integers(1, 300, r)})
    submit = np.sort(now - rng.integers(0, 5 * 86400, pending))
    preq = rng.choice([600, 3600, 4 * 3600, 12 * 3600, 86400], pending)
    pend = pd.DataFrame({"submit": submit,
                         "procs": np.minimum(rng.geometric(0.02, pending), nodes).astype(np.int32),
                         "request": preq, "user": rng.integers(1, 300, pending),
                         "queue": rng.integers(0, 3, pending), "partition": np.zeros(pending, np.int64)})
    return now, running, pend


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from malleo._core import BUILD_INFO, PlanState, plan
    from malleo.policy import Policy
    now, running, pending = live_state(args.nodes, args.pending)
    print(BUILD_INFO)
    print(f"{args.nodes} nodes, {len(running)} running jobs on "
          f"{int(running['procs'].sum())} nodes, {len(pending)} pending jobs")
    policies = [Policy(order="fcfs", backfill="easy"), Policy(order="fcfs", backfill="conservative"),
                Policy(order="fcfs", backfill="slurm"), Policy(order="wfp3", backfill="easy"),
                Policy(order="multifactor", backfill="easy"),
                Policy(order="sjf", backfill="conservative", estimate="predict")]
    for policy in policies:
        state = PlanState()
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            d = plan(now, args.nodes, running, pending, policy, state)
            times.append(time.perf_counter() - t0)
        print(f"  {policy.describe():<28} median {statistics.median(times) * 1000:8.1f} ms  "
              f"(min {min(times) * 1000:.1f} ms; starts {len(d.start)}, "
              f"reserved {int((d.reservation >= 0).sum())})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
