"""The DMR-like burst of issue 11 (figures only, no assertions).

A 64-node machine; 400 jobs submitted at time 0, in three classes taken in turn (16 nodes
for 300 s, 32 nodes for 200 s, 8 nodes for 600 s; estimates = runtimes), built on the
project's Lublin generator's table (its users; every other field replaced).  Every job is
malleable within [p0 / 8, p0] (min_factor 0.125, max_factor 1: a job started small may grow
back to its trace size), Amdahl F = 0.05, reconfiguration cost 5 s + 0.1 s per node moved;
FCFS + EASY.  Prints a Markdown table of workload completion time (last end; all submit at
0) against all-rigid EASY at full size, for every start-size rule and reconfiguration
policy, with mean wait, utilization held and useful, and the reconfigurations.

    python bench/malleable_burst.py
"""
from __future__ import annotations

import argparse

import numpy as np

NODES = 64
JOBS = 400
CLASSES = ((16, 300), (32, 200), (8, 600))      # (nodes, runtime in seconds)
START_SIZES = ("full", "min", "preferred", "fit")
POLICIES = ("none", "dmr", "efficiency", "head-unblock")


def burst_table():
    """The burst as an SWF job table (all submitted at 0, estimates = runtimes)."""
    from malleo.emulator.workload import generate_lublin

    table = generate_lublin(JOBS, NODES, seed=11)
    size = np.array([CLASSES[i % 3][0] for i in range(JOBS)], dtype=float)
    runtime = np.array([CLASSES[i % 3][1] for i in range(JOBS)], dtype=float)
    return table.assign(submit_time=0.0, run_time=runtime, requested_time=runtime,
                        allocated_procs=size, requested_procs=size)


def run() -> list[dict]:
    from malleo.emulator.driver import load_workload, replay
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability, Policy

    workload = load_workload(burst_table(), procs=NODES)
    rows = []

    def one(label, start_size, policy, mal, flexible=None):
        s = replay(workload, Policy(malleability=mal), procs=NODES, flexible=flexible).summary
        rows.append({"start_size": start_size, "policy": policy, "label": label,
                     "completion": s.get("workload_completion", s["makespan"]),
                     "wait_mean": s["wait_mean"], "utilization": s["utilization"],
                     "useful": s.get("utilization_useful", s["utilization"]),
                     "reconfigurations": s.get("reconfigurations_expand", 0)
                     + s.get("reconfigurations_shrink", 0)})

    one("all-rigid EASY, full size", "full", "rigid", Malleability())
    for start_size in START_SIZES:
        for policy in POLICIES:
            one("", start_size, policy, Malleability(
                speedup="amdahl:0.05", reconfig_fixed=5, reconfig_per_proc=0.1,
                policy=policy, start_size=start_size),
                FlexibleJobs(fraction=1.0, min_factor=0.125, max_factor=1.0))
    return rows


def table(rows: list[dict]) -> str:
    base = rows[0]["completion"]
    out = ["| start size | policy | completion (s) | vs rigid | mean wait (s) | "
           "utilization held | useful | reconfigurations |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['start_size']} | {r['policy']} | {r['completion']:,} | "
                   f"{(r['completion'] / base - 1) * 100:+.1f}% | {r['wait_mean']:,.0f} | "
                   f"{r['utilization']:.3f} | {r['useful']:.3f} | {r['reconfigurations']:,} |")
    return "\n".join(out)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(table(run()))


if __name__ == "__main__":
    main()
