"""The malleability study of docs/malleability.md (figures only, no assertions).

Two studies, both FCFS + EASY with Amdahl f = 0.05, min 0.5 x p0, max 2 x p0,
reconfiguration cost 10 s + 0.5 s per processor moved, min interval 60 s:

``fractions`` (the default): lublin_256 and SDSC-SP2 replayed with 0%, 25%, 50% and 100%
of the jobs malleable for each reconfiguration policy (dmr, head-unblock); 0% is the
all-rigid EASY baseline.  Prints a Markdown table of workload completion time, mean wait,
mean bounded slowdown and utilization, and saves docs/img/malleability.png.

``load`` (issue 11 point 8b): SDSC-SP2, KTH-SP2 and RICC-2010-2 (its first --ricc-jobs
jobs: the full trace is 447,794) with arrivals rescaled to offered loads 0.5 .. 1.5
(``replay(..., load=RHO)``, docs/traces.md) and 0%, 20%, 50%, 100% malleable; prints the
gain of each malleable share over rigid EASY at the same load and saves
docs/img/malleability_load.png (gain vs load and vs malleable share).  ``--set KEY=VALUE``
sets any [malleability] knob (e.g. a start-size rule or policy added later).

    python bench/malleable_study.py [fractions|load] [--plot PATH | --no-plot]
"""
from __future__ import annotations

import argparse
import pathlib


REPO = pathlib.Path(__file__).resolve().parents[1]


from _traces import TRACES  # noqa: E402  (bench/ is the script's folder)
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


LOAD_TRACES = ("SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz",
               "RICC-2010-2.swf.gz")
LOADS = (0.5, 0.75, 1.0, 1.25, 1.5)
LOAD_FRACTIONS = (0.0, 0.2, 0.5, 1.0)
LOAD_METRICS = (("workload_completion", "completion"), ("wait_mean", "mean wait"),
                ("bsld_mean", "mean bsld"))


def run_load(ricc_jobs: int, policy_name: str, settings: dict) -> list[dict]:
    """One row per (trace, load, malleable share): the summary figures of the replay."""
    import time

    from malleo.emulator.driver import load_workload, replay
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability, Policy

    mal = Malleability(**{"speedup": "amdahl:0.05", "reconfig_fixed": 10,
                          "reconfig_per_proc": 0.5, "min_interval": 60,
                          "policy": policy_name, **settings})
    rows = []
    for name in LOAD_TRACES:
        workload = load_workload(TRACES / name)
        short = name.split("-")[0] + "-" + name.split("-")[1]
        jobs = (0, ricc_jobs) if name.startswith("RICC") and ricc_jobs else None
        if jobs:
            short += f" first {ricc_jobs:,}"
        for load in LOADS:
            for fraction in LOAD_FRACTIONS:
                t0 = time.perf_counter()
                r = replay(workload, Policy(malleability=mal), procs=workload.procs,
                           jobs=jobs, load=load, flexible=FlexibleJobs(fraction=fraction))
                s = r.summary
                rows.append({"trace": short, "load": load, "fraction": fraction,
                             "workload_completion": s.get("workload_completion",
                                                          s["makespan"]),
                             "wait_mean": s["wait_mean"], "bsld_mean": s["bsld_mean"],
                             "utilization": s["utilization"],
                             "efficiency": s["parallel_efficiency"],
                             "reconfigurations": s.get("reconfigurations", 0),
                             "seconds": time.perf_counter() - t0})
                print(f"{short} load {load} {fraction:.0%}: "
                      f"{rows[-1]['seconds']:.1f} s", flush=True)
    return rows


def _gain(rows: list[dict], r: dict, key: str) -> float:
    base = next(b for b in rows if b["trace"] == r["trace"] and b["load"] == r["load"]
                and b["fraction"] == 0.0)
    return r[key] / base[key] - 1.0 if base[key] else float("nan")


def load_table(rows: list[dict]) -> str:
    out = ["| trace | load | malleable | completion vs rigid | mean wait (s) | wait vs rigid "
           "| mean bsld | bsld vs rigid | utilization | efficiency | reconfigurations |",
           "|" + "---|" * 11]
    for r in rows:
        gains = [("" if r["fraction"] == 0 else f"{_gain(rows, r, k):+.1%}")
                 for k in ("workload_completion", "wait_mean", "bsld_mean")]
        out.append(f"| {r['trace']} | {r['load']:g} | {r['fraction']:.0%} | {gains[0]} | "
                   f"{r['wait_mean']:,.0f} | {gains[1]} | {r['bsld_mean']:,.1f} | "
                   f"{gains[2]} | {r['utilization']:.3f} | {r['efficiency']:.3f} | "
                   f"{r['reconfigurations']:,} |")
    return "\n".join(out)


def plot_load(rows: list[dict], path: pathlib.Path) -> None:
    """Top row: gain in mean wait and completion vs load, one line per malleable share;
    bottom row: the same vs malleable share, one line per load; one column per trace
    for each metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(r["trace"] for r in rows))
    keys = (("wait_mean", "mean wait"), ("workload_completion", "completion"))
    fig, axes = plt.subplots(2, len(traces) * len(keys), figsize=(4 * len(traces) * 2, 6.5),
                             dpi=60, squeeze=False)
    for t, trace in enumerate(traces):
        mine = [r for r in rows if r["trace"] == trace]
        for k, (key, label) in enumerate(keys):
            col = t * len(keys) + k
            ax = axes[0][col]
            for fraction in LOAD_FRACTIONS[1:]:
                pts = [r for r in mine if r["fraction"] == fraction]
                ax.plot([r["load"] for r in pts], [100 * _gain(rows, r, key) for r in pts],
                        marker="o", label=f"{fraction:.0%} malleable")
            ax.set_xlabel("offered load", fontsize=8)
            ax.set_title(f"{trace}: {label}", fontsize=8)
            ax = axes[1][col]
            for load in LOADS:
                pts = [r for r in mine if r["load"] == load]
                ax.plot([100 * r["fraction"] for r in pts],
                        [100 * _gain(rows, r, key) for r in pts], marker="s",
                        label=f"load {load:g}")
            ax.set_xlabel("% malleable", fontsize=8)
            for ax in (axes[0][col], axes[1][col]):
                ax.axhline(0.0, color="grey", lw=0.8, ls=":")
                ax.tick_params(labelsize=7)
                if col == 0:
                    ax.set_ylabel("% change vs rigid EASY", fontsize=8)
    axes[0][0].legend(fontsize=7)
    axes[1][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", nargs="?", choices=("fractions", "load"),
                        default="fractions")
    parser.add_argument("--plot", type=pathlib.Path, default=None)
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--ricc-jobs", type=int, default=60000,
                        help="load study: replay RICC-2010-2's first N jobs (0: all)")
    parser.add_argument("--policy", default="dmr", help="load study: reconfiguration policy")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="load study: a [malleability] knob (repeatable)")
    parser.add_argument("--json", type=pathlib.Path, default=None,
                        help="also write the rows as JSON to this file")
    args = parser.parse_args()
    if args.study == "load":
        from malleo.emulator.cli._options import parse_column_spec

        settings = parse_column_spec("fcfs+easy;" + ";".join(args.set))[1] if args.set else {}
        rows = run_load(args.ricc_jobs, args.policy, settings)
        print(load_table(rows))
        plot_path = args.plot or REPO / "docs" / "img" / "malleability_load.png"
        if not args.no_plot:
            plot_load(rows, plot_path)
            print(f"\nplot: {plot_path}")
    else:
        rows = run()
        print(table(rows))
        plot_path = args.plot or REPO / "docs" / "img" / "malleability.png"
        if not args.no_plot:
            plot(rows, plot_path)
            print(f"\nplot: {plot_path}")
    if args.json:
        import json

        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
