"""The prediction baselines on every shared trace: request / actual / predict / EASY++ /
learned (issue 18), figures only, no assertions.

For each trace of ../shared/traces (or those named), one replay per policy through
``malleo.emulator.replay`` (FCFS + EASY; the trace read once), each timed on its own:

* ``request``: the user's requested time;       ``actual``: the real runtime (oracle);
* ``predict``: Tsafrir's mean of the last two runs, the request when overdue (EASY+),
  ``@pass`` re-evaluated at every pass, ``@submit`` made once at submission (predict_at);
* ``easy++``: the ``easy++`` shortcut (SJF candidate order, predictions made at
  submission, Tsafrir's increments; docs/policies.md), and ``easy++@pass`` the same with
  predictions re-evaluated at every pass;
* ``learned``: the online regression of Gaussier et al. (docs/policies.md).

Prints a markdown table of mean bounded slowdown (threshold 10 s) and mean wait, the
replay seconds of each (the learned RICC-2010-2 figure is the issue's "under a minute"),
and with ``--plot FILE`` draws the bounded slowdowns as grouped bars (docs/img).

    python bench/predictions.py [--plot docs/img/predictions.png] [--json] [TRACE ...]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

from _traces import TRACES  # noqa: E402  (bench/ is the script's folder)
COLUMNS = ("request", "actual", "predict@pass", "predict@submit", "easy++@pass", "easy++",
           "learned")


def policies():
    """Column name -> Policy."""
    from malleo.emulator.cli._options import parse_policy_spec

    return {name: parse_policy_spec(spec) for name, spec in
            (("request", "fcfs+easy"), ("actual", "fcfs+easy/actual"),
             ("predict@pass", "fcfs+easy/predict"),
             ("predict@submit", "fcfs+easy/predict[at=submit]"),
             ("easy++@pass", "fcfs+easy+sjbf/predict/incremental"), ("easy++", "easy++"),
             ("learned", "fcfs+easy/learned"))}


def run_trace(path: pathlib.Path) -> dict:
    from malleo.emulator.driver import load_workload, replay

    workload = load_workload(path)
    row = {"trace": path.name.split(".swf")[0], "jobs": int(len(workload.table))}
    for name, policy in policies().items():
        begin = time.perf_counter()
        result = replay(workload, policy)
        row[name] = {"bsld_mean": float(result.summary["bsld_mean"]),
                     "wait_mean": float(result.summary["wait_mean"]),
                     "seconds": time.perf_counter() - begin}
    return row


def table(rows: list[dict]) -> str:
    out = ["| trace | jobs | " + " | ".join(COLUMNS) + " |",
           "|---|---:|" + "---:|" * len(COLUMNS)]
    for r in rows:
        out.append(f"| {r['trace']} | {r['jobs']} | "
                   + " | ".join(f"{r[c]['bsld_mean']:.2f}" for c in COLUMNS) + " |")
    out += ["", "replay seconds (each policy, trace already read):", "",
            "| trace | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for r in rows:
        out.append(f"| {r['trace']} | "
                   + " | ".join(f"{r[c]['seconds']:.1f}" for c in COLUMNS) + " |")
    return "\n".join(out)


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(10, 4))
    x = np.arange(len(rows))
    width = 0.8 / len(COLUMNS)
    for k, name in enumerate(COLUMNS):
        ax.bar(x + (k - (len(COLUMNS) - 1) / 2) * width,
               [r[name]["bsld_mean"] for r in rows], width, label=name)
    ax.set_xticks(x, [r["trace"] for r in rows], rotation=15, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("mean bounded slowdown (tau = 10 s, log)")
    ax.set_title("FCFS + EASY with each runtime estimate; EASY++ (SJBF + predict + increments)",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="*", help="trace files (default: every shared trace)")
    parser.add_argument("--plot", help="write the bar chart here (PNG)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    paths = [pathlib.Path(t) for t in args.traces] or sorted(TRACES.glob("*.swf.gz"))
    rows = []
    for path in paths:
        rows.append(run_trace(path))
        print(f"{rows[-1]['trace']}: done", file=sys.stderr)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
