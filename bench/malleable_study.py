"""The malleability study of docs/malleability.md (figures only, no assertions).

lublin_256 and SDSC-SP2 (../shared/traces) replayed under FCFS + EASY with 0%, 25%, 50%
and 100% of the jobs malleable (Amdahl f = 0.05, min 0.5 x p0, max 2 x p0, reconfiguration
cost 10 s + 0.5 s per processor moved, min interval 60 s) for each reconfiguration policy
(dmr, head-unblock); 0% is the all-rigid EASY baseline.  Prints a Markdown table of
workload completion time, mean wait, mean bounded slowdown and utilization, and saves the
plot to docs/img/malleability.png (--plot PATH to change, --no-plot to skip).

    python bench/malleable_study.py [--plot PATH | --no-plot]
"""
from __future__ import annotations

import argparse
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
WORKLOADS = ("lublin_256.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz")
FRACTIONS = (0.0, 0.25, 0.5, 1.0)
POLICIES = ("dmr", "head-unblock")
METRICS = (("workload_completion", "completion (s)"), ("wait_mean", "mean wait (s)"),
           ("bsld_mean", "mean bsld"), ("utilization", "utilization"))


BURST_JOBS = 1000
"""The burst variant: the first BURST_JOBS jobs of each trace, all submitted at time 0 (the
DMR evaluation's setting: a workload submitted at once, so completion time measures how
fast the machine drains it)."""


def run() -> list[dict]:
    from malleo.emulator.driver import Workload, load_workload, replay
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability, Policy

    rows = []
    cases = []
    for name in WORKLOADS:
        workload = load_workload(TRACES / name)
        cases.append((name.split(".swf")[0], workload))
        burst = workload.table.sort_values(["submit_time", "job_number"]).iloc[:BURST_JOBS]
        burst = burst.assign(submit_time=0).reset_index(drop=True)
        cases.append((name.split(".swf")[0] + f" burst {BURST_JOBS}",
                      Workload(burst, None, {}, "burst", workload.procs)))
    for trace, workload in cases:
        for policy_name in POLICIES:
            for fraction in FRACTIONS:
                mal = Malleability(speedup="amdahl:0.05", reconfig_fixed=10,
                                   reconfig_per_proc=0.5, min_interval=60, policy=policy_name)
                s = replay(workload, Policy(malleability=mal), procs=workload.procs,
                           flexible=FlexibleJobs(fraction=fraction)).summary
                rows.append({"trace": trace, "policy": policy_name,
                             "fraction": fraction,
                             "workload_completion": s.get("workload_completion", s["makespan"]),
                             "wait_mean": s["wait_mean"], "bsld_mean": s["bsld_mean"],
                             "utilization": s["utilization"],
                             "reconfigurations": s.get("reconfigurations_expand", 0)
                             + s.get("reconfigurations_shrink", 0)})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| trace | policy | malleable | completion (s) | vs rigid | mean wait (s) | "
           "mean bsld | utilization | reconfigurations |", "|" + "---|" * 9]
    base = {r["trace"]: r for r in rows if r["fraction"] == 0.0}
    for r in rows:
        if r["fraction"] == 0.0 and r["policy"] != POLICIES[0]:
            continue
        rel = r["workload_completion"] / base[r["trace"]]["workload_completion"] - 1.0
        out.append(f"| {r['trace']} | {r['policy'] if r['fraction'] else 'rigid EASY'} | "
                   f"{r['fraction']:.0%} | {r['workload_completion']:,} | {rel:+.1%} | "
                   f"{r['wait_mean']:,.0f} | {r['bsld_mean']:.2f} | {r['utilization']:.3f} | "
                   f"{r['reconfigurations']:,} |")
    return "\n".join(out)


def plot(rows: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    fig, axes = plt.subplots(len(traces), len(METRICS), figsize=(11, 2.2 * len(traces)),
                             dpi=60)
    for i, trace in enumerate(traces):
        base = next(r for r in rows if r["trace"] == trace and r["fraction"] == 0.0)
        for k, (key, label) in enumerate(METRICS):
            ax = axes[i][k]
            for policy_name, marker in zip(POLICIES, "os"):
                pts = [r for r in rows if r["trace"] == trace and r["policy"] == policy_name]
                ax.plot([100 * r["fraction"] for r in pts],
                        [r[key] / base[key] for r in pts], marker=marker, label=policy_name)
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_title(f"{trace}: {label}", fontsize=8)
            ax.set_xlabel("% malleable", fontsize=8)
            ax.tick_params(labelsize=7)
            if k == 0:
                ax.set_ylabel("relative to rigid EASY", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", type=pathlib.Path, default=REPO / "docs" / "img" /
                        "malleability.png")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    rows = run()
    print(table(rows))
    if not args.no_plot:
        plot(rows, args.plot)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
