"""Benchmark replays of real traces (figures only, no assertions).

For each trace (default: SDSC-SP2, KTH-SP2, LCG-2005 and RICC-2010-2 from
../shared/traces):

* whole command: wall time and peak RSS of ``malleo replay TRACE --quiet`` (EASY + FCFS,
  the default policy) run as a child process, so it includes interpreter start-up,
  imports, reading, the simulation, the metrics and printing;
* simulation only: for every backfill mode, seconds of one ``malleo._core.simulate`` call
  on the already-read arrays and the jobs/s it gives, in a fresh child process per
  (trace, mode) with a timeout (its peak RSS, including the read trace, is reported too);
  a mode ``easy+sjf`` times the mode with ``backfill_order = "sjf"``.

The stated target: ``malleo replay`` of RICC-2010-2 with EASY in under 5 s end to end.

    python bench/replay.py [--modes none,easy,...] [--repeat N] [--timeout S] [TRACE ...]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from _traces import TRACES  # noqa: E402  (bench/ is the script's folder)
DEFAULT = ("SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz",
           "LCG-2005-1.swf.gz", "RICC-2010-2.swf.gz")
TARGET = ("RICC-2010-2.swf.gz", 5.0)


def malleo_command() -> list[str]:
    exe = shutil.which("malleo")
    # -P: from the repository root, the checkout's malleo/ folder must not shadow the install
    return [exe] if exe else [sys.executable, "-P", "-m", "malleo"]


def whole_command(path: pathlib.Path, repeat: int) -> dict:
    """Best-of-``repeat`` wall seconds and peak RSS (MiB) of ``malleo replay PATH --quiet``."""
    argv = [*malleo_command(), "replay", str(path), "--quiet"]
    best, peak, output = float("inf"), 0.0, ""
    for _ in range(repeat):
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            start = time.perf_counter()
            child = subprocess.Popen(argv, stdout=out, stderr=err)
            # wait4 (not Popen.wait) to get the child's own rusage: its peak RSS.
            _, status, usage = os.wait4(child.pid, 0)
            elapsed = time.perf_counter() - start
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            if child.returncode != 0:
                raise RuntimeError(f"malleo replay {path.name} failed: {err.read().strip()}")
            output = out.read()
        best = min(best, elapsed)
        peak = max(peak, usage.ru_maxrss / 1024)
    return {"seconds": best, "peak_rss_mib": peak,
            "jobs": _row(output, "jobs replayed"), "bsld": _row(output, "bounded slowdown mean"),
            "utilization": _row(output, "utilization")}


def _row(output: str, label: str) -> str:
    for line in output.splitlines():
        if line.startswith(label):
            return line[len(label):].strip()
    return "?"


def simulate_modes(path: str, modes: list[str], repeat: int) -> dict:
    """In this process: read ``path`` once, then time ``simulate`` for each backfill mode."""
    import resource
    import warnings

    import numpy as np

    from malleo._core import simulate
    from malleo.emulator import read_swf
    from malleo.policy import Policy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        jobs, meta = read_swf(path)
        read_seconds = time.perf_counter() - start
    jobs = jobs.iloc[np.lexsort((jobs["job_number"].to_numpy(), jobs["submit_time"].to_numpy()))]

    def col(name, dtype):
        return np.require(jobs[name].to_numpy(), dtype=dtype, requirements=["C", "W"])

    arrays = (col("submit_time", np.int64), col("runtime", np.int64), col("estimate", np.int64),
              col("procs", np.int32), col("user_id", np.int32), col("queue", np.int32),
              col("partition", np.int32))
    out = {"jobs": len(jobs), "procs": meta.procs, "read_seconds": read_seconds, "modes": {}}
    for mode in modes:
        backfill, _, bf_order = mode.partition("+")
        policy = Policy(backfill=backfill, backfill_order=bf_order or "queue")
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            simulate(*arrays, int(meta.procs), policy)
            best = min(best, time.perf_counter() - start)
        out["modes"][mode] = {"seconds": best, "jobs_per_s": len(jobs) / best}
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_child(path: pathlib.Path, mode: str, repeat: int, timeout: float) -> dict | None:
    """``simulate_modes`` for one mode in a fresh process; None if it exceeds ``timeout``."""
    try:
        child = subprocess.run([sys.executable, __file__, "--child", str(path), "--modes",
                                mode, "--repeat", str(repeat)],
                               capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if child.returncode != 0:
        raise RuntimeError(f"{path.name} {mode}: {child.stderr.strip()[-400:]}")
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", help="trace files (default: four real traces)")
    parser.add_argument("--modes", default="none,easy,conservative,slurm",
                        help="backfill modes to time (comma-separated); MODE+sjf: with "
                        "backfill_order sjf (SJBF)")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds allowed per (trace, mode) simulation child")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.child:
        print(json.dumps(simulate_modes(args.child, modes, args.repeat)))
        return 0

    paths = [pathlib.Path(p) for p in args.traces] or [TRACES / name for name in DEFAULT]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"skipped (not found): {', '.join(missing)}", file=sys.stderr)
        paths = [p for p in paths if p.exists()]
    if not paths:
        return 0
    print("whole command: malleo replay TRACE --quiet (FCFS + EASY), wall time and peak RSS")
    print(f"{'trace':<30} {'jobs':>8} {'wall':>8} {'peak RSS':>9}  result")
    for path in paths:
        whole = whole_command(path, args.repeat)
        print(f"{path.name:<30} {whole['jobs']:>8} {whole['seconds']:>6.2f} s "
              f"{whole['peak_rss_mib']:>5.0f} MiB  bsld {whole['bsld']}, "
              f"utilization {whole['utilization']}", flush=True)
        if path.name == TARGET[0]:
            verdict = "met" if whole["seconds"] < TARGET[1] else "MISSED"
            print(f"  target: malleo replay {TARGET[0]} (EASY) under {TARGET[1]:.0f} s: "
                  f"{whole['seconds']:.2f} s, {verdict}", flush=True)
    print()
    print("simulation only: one malleo._core.simulate call on read arrays, per backfill mode "
          f"(fresh process each; timeout {args.timeout:.0f} s)")
    print(f"{'trace':<30} {'mode':<13} {'seconds':>9} {'jobs/s':>11} {'peak RSS':>9}")
    for path in paths:
        for mode in modes:
            sim = run_child(path, mode, args.repeat, args.timeout)
            if sim is None:
                print(f"{path.name:<30} {mode:<13} {'> ' + format(args.timeout, '.0f'):>9} "
                      f"{'-':>11} {'-':>9}", flush=True)
                continue
            r = sim["modes"][mode]
            print(f"{path.name:<30} {mode:<13} {r['seconds']:>9.3f} {r['jobs_per_s']:>11,.0f} "
                  f"{sim['peak_rss_mib']:>5.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
