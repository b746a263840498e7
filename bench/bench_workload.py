"""Speed and statistics of the embedded workload model (figures only, no assertions).

Times ``generate_lublin`` at 10,000 and 500,000 jobs on 256 processors (best of a few
runs, after one warm-up call) and prints the statistics of the default workload
(10,000 jobs, 256 processors, seed 0) quoted in docs/workload-model.md.
"""
import argparse
import time

import numpy as np

from malleo.emulator.workload import generate_lublin

PROCS = 256


def best_time(jobs: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        generate_lublin(jobs, PROCS, seed=0)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    generate_lublin(100, PROCS)  # warm-up: imports and first-call costs
    for jobs, repeats in ((10_000, 5), (500_000, 3)):
        seconds = best_time(jobs, repeats)
        print(f"generate_lublin({jobs:,} jobs, {PROCS} procs): {seconds * 1000:.1f} ms "
              f"({jobs / seconds:,.0f} jobs/s)")

    frame = generate_lublin(10_000, PROCS, seed=0)
    size = frame["allocated_procs"].to_numpy()
    run = frame["run_time"].to_numpy()
    estimate = frame["requested_time"].to_numpy()
    submit = frame["submit_time"].to_numpy()
    parallel = size[size > 1]
    slot = (submit % 86_400) // 1800
    print("default workload (10,000 jobs, 256 procs, seed 0):")
    print(f"  serial fraction              {np.mean(size == 1):.4f}")
    print(f"  power-of-two among parallel  {np.mean((parallel & (parallel - 1)) == 0):.4f}")
    print(f"  mean / median size           {size.mean():.1f} / {np.median(size):.0f} procs")
    print(f"  mean / median runtime        {run.mean():,.0f} / {np.median(run):,.0f} s")
    print(f"  span of submits              {submit[-1]:,} s ({submit[-1] / 86_400:.1f} days)")
    print(f"  mean interarrival            {submit[-1] / (len(submit) - 1):,.0f} s")
    print(f"  offered load                 {(run * size).sum() / (PROCS * submit[-1]):.3f}")
    print(f"  arrivals 08:00-18:00         {np.isin(slot, np.arange(16, 36)).mean():.3f}")
    print(f"  arrivals 00:00-06:00         {np.mean(slot < 12):.3f}")
    print(f"  estimate = maximum (48 h)    {np.mean(estimate == 48 * 3600):.3f}")
    print(f"  mean / median runtime/estimate {np.mean(run / estimate):.3f} / "
          f"{np.median(run / estimate):.3f}")
    print(f"  distinct estimate values     {len(np.unique(estimate))}")
    print(f"  distinct users, top user     {len(np.unique(frame['user_id']))}, "
          f"{np.mean(frame['user_id'] == 1):.3f} of jobs")


if __name__ == "__main__":
    main()
