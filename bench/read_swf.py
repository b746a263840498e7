"""Benchmark read_swf on every trace in ../shared/traces (figures only, no assertions).

For each trace, in a fresh child process (so peak RSS is that trace's alone):
jobs kept, best-of-N seconds of ``read_swf`` and jobs/s (job lines per second), the
best-of-N seconds of ``pandas.read_csv(path, sep=r"\\s+", comment=";", header=None)``
on the same file (the reference the reader must not be slower than), and the peak
resident set size after the first ``read_swf`` (MiB), with the RSS before reading for
comparison (the difference is what reading costs).

    python bench/read_swf.py [--repeat N] [TRACE ...]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time

from _traces import TRACES, trace_path  # noqa: E402  (bench/ is the script's folder)


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(path: str, repeat: int) -> dict:
    """Time read_swf and pandas.read_csv on ``path`` (best of ``repeat``), in this process."""
    import warnings

    import pandas as pd

    from malleo.emulator import read_swf

    rss_before = _rss_mib()
    best = float("inf")
    peak = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeat):
            start = time.perf_counter()
            jobs, meta = read_swf(path)
            best = min(best, time.perf_counter() - start)
            if peak is None:   # the first read alone: later ones overlap a live table
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            del jobs
    best_pandas = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        pd.read_csv(path, sep=r"\s+", comment=";", header=None)
        best_pandas = min(best_pandas, time.perf_counter() - start)
    return {"kept": meta.lines["kept"], "lines": meta.lines["job"], "seconds": best,
            "pandas": best_pandas, "rss_before": rss_before, "peak_rss": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", help="default: every *.swf* in ../shared/traces")
    parser.add_argument("--repeat", type=int, default=3, help="runs per reader (best kept)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.traces[0], args.repeat)))
        return 0
    paths = [str(trace_path(p)) for p in args.traces] \
        or sorted(str(p) for p in TRACES.glob("*.swf*"))
    if not paths:
        print(f"no traces in {TRACES}: nothing to measure")
        return 0
    print(f"{'trace':32} {'kept':>8} {'lines':>8} {'read_swf s':>10} {'jobs/s':>11} "
          f"{'pandas s':>9} {'ratio':>6} {'RSS0 MiB':>9} {'peak MiB':>9}")
    for path in paths:
        out = subprocess.run([sys.executable, __file__, "--child", "--repeat",
                              str(args.repeat), path], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{pathlib.Path(path).name:32} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout)
        print(f"{pathlib.Path(path).name:32} {r['kept']:>8} {r['lines']:>8} "
              f"{r['seconds']:>10.3f} {r['lines'] / r['seconds']:>11,.0f} "
              f"{r['pandas']:>9.3f} {r['pandas'] / r['seconds']:>5.1f}x "
              f"{r['rss_before']:>9.0f} {r['peak_rss']:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
