"""Benchmark: a malleable replay (figures only, no assertions).

SDSC-SP2 (../shared/traces) with 50% of the jobs malleable (Amdahl f = 0.05, cost
10 s + 0.5 s per processor moved, dmr, in-place expansion, FCFS + EASY): seconds of one
``simulate_malleable`` call on the already-read arrays (best of --repeat) and the
simulated jobs/s, against the rigid ``simulate`` on the same arrays.  Target: at least
100,000 simulated jobs/s.

    python bench/malleable.py [--repeat N] [--fraction F] [--policy dmr|head-unblock] [TRACE]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from _traces import TRACES  # noqa: E402  (bench/ is the script's folder)
DEFAULT = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"
TARGET = 100_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(DEFAULT))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=0.5)
    parser.add_argument("--policy", default="dmr")
    args = parser.parse_args()

    from malleo._core import simulate
    from malleo._core.malleable_loop import simulate_malleable
    from malleo.emulator.driver import load_workload
    from malleo.emulator.flex import flexible_jobs
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability, Policy

    workload = load_workload(args.trace)
    table = workload.table.sort_values(["submit_time", "job_number"], kind="stable")
    total = int(workload.procs)
    cols = [np.ascontiguousarray(table[c].to_numpy(), dtype=d) for c, d in (
        ("submit_time", np.int64), ("runtime", np.int64), ("estimate", np.int64),
        ("procs", np.int32), ("user_id", np.int32), ("queue", np.int32),
        ("partition", np.int32))]
    mal = Malleability(speedup="amdahl:0.05", reconfig_fixed=10, reconfig_per_proc=0.5,
                       policy=args.policy)
    policy = Policy(malleability=mal)
    flexible = FlexibleJobs(fraction=args.fraction)
    flex = flexible_jobs(cols[3], cols[5], cols[4], total, flexible, mal)
    n = len(table)

    def best(call) -> tuple[float, dict]:
        times, out = [], None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = call()
            times.append(time.perf_counter() - t0)
        return min(times), out

    rigid_s, _ = best(lambda: simulate(*cols, total, Policy()))
    mall_s, out = best(lambda: simulate_malleable(
        *cols, total, policy, flex["kind"], flex["min_procs"], flex["max_procs"],
        flex["speedup_a"], flex["speedup_b"]))
    report = {
        "trace": pathlib.Path(args.trace).name, "jobs": n, "procs": total,
        "malleable_jobs": int((flex["kind"] == 2).sum()), "policy": policy.describe(flexible),
        "reconfigurations": int(out["n_expand"].sum() + out["n_shrink"].sum()),
        "rigid_seconds": round(rigid_s, 4), "rigid_jobs_per_s": round(n / rigid_s),
        "malleable_seconds": round(mall_s, 4), "malleable_jobs_per_s": round(n / mall_s),
        "target_jobs_per_s": TARGET, "meets_target": n / mall_s >= TARGET,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
