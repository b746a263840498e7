"""Speed and memory of the compiled event loop (malleo._core.simulate) on real traces.

Reports simulated jobs per second (trace parsing excluded), for every backfill mode and a
few queue orders, on SDSC-SP2, KTH-SP2, LCG-2005 and RICC-2010-2 from ../shared/traces
(read in place), every trace whole (RICC-2010-2 under conservative takes about half a
minute per policy: one run each); the peak memory the replay adds, in bytes per job
(measured in a fresh child process); and the cost on the first 10%, 20%, ..., 100% of
RICC.  Figures only, no assertions.

    python bench/core_loop.py [--quick] [--traces SDSC,KTH]
"""
import argparse
import gzip
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
from _traces import TRACES  # noqa: E402  (bench/ is the script's folder)
FILES = {
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "LCG-2005": "LCG-2005-1.swf.gz",
    "RICC-2010-2": "RICC-2010-2.swf.gz",
}
POLICIES = [  # (order, backfill, extra policy fields)
    ("fcfs", "none", {}), ("fcfs", "easy", {}), ("fcfs", "conservative", {}),
    ("fcfs", "slurm", {}), ("sjf", "easy", {}), ("wfp3", "easy", {}),
    ("multifactor", "easy", {}), ("f1", "conservative", {}), ("fcfs", "easy", {"estimate": "predict"}),
    ("fcfs", "easy", {"preset": "easy++"}),
]


def load(name):
    """The core's input arrays of a trace: malleo.emulator.read_swf when present, else a
    small local reader (fields 2, 4, 5, 8, 9, 12, 15, 16; header MaxProcs)."""
    path = TRACES / FILES[name]
    try:
        from malleo.emulator import read_swf
    except ImportError:
        read_swf = None
    if read_swf is not None:
        jobs, meta = read_swf(path)
        return dict(submit=jobs["submit_time"].to_numpy(np.int64),
                    runtime=jobs["runtime"].to_numpy(np.int64),
                    estimate=jobs["estimate"].to_numpy(np.int64),
                    procs=jobs["procs"].to_numpy(np.int32),
                    user=jobs["user_id"].to_numpy(np.int32),
                    queue=jobs["queue"].to_numpy(np.int32),
                    partition=jobs["partition"].to_numpy(np.int32)), int(meta.procs)
    total, rows = None, []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";"):
                if "MaxProcs:" in line:
                    total = int(line.split(":")[1])
                continue
            f = line.split()
            if len(f) >= 18:
                rows.append([int(float(x)) for x in f[:18]])
    a = np.array(rows, dtype=np.int64)
    procs = np.where(a[:, 4] > 0, a[:, 4], a[:, 7])
    runtime = a[:, 3]
    estimate = np.maximum(a[:, 8], runtime)
    keep = (procs >= 1) & (procs <= total) & (runtime >= 0) & (a[:, 1] >= 0)
    order = np.argsort(a[keep, 1], kind="stable")
    pick = lambda col: col[keep][order]
    return dict(submit=pick(a[:, 1]), runtime=pick(runtime), estimate=pick(estimate),
                procs=pick(procs).astype(np.int32), user=pick(a[:, 11]).astype(np.int32),
                queue=pick(a[:, 14]).astype(np.int32),
                partition=pick(a[:, 15]).astype(np.int32)), total


def policy_of(order, backfill, extra):
    """The Policy of a POLICIES row; ``{"preset": name}`` takes that preset's knobs."""
    from malleo.policy import Policy, preset
    if "preset" in extra:
        return preset(extra["preset"], Policy(order=order, backfill=backfill))
    return Policy(order=order, backfill=backfill, **extra)


def timed(cols, total, policy, n=None, repeat=3):
    from malleo._core import simulate
    args = [cols[k][:n] if n else cols[k] for k in
            ("submit", "runtime", "estimate", "procs", "user", "queue", "partition")]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        simulate(*args, total, policy)
        best = min(best, time.perf_counter() - t0)
    return best


def memory_child(npz, total, order, backfill):
    """In a fresh process: peak resident size during one simulate call minus the resident
    size just before it, bytes (Linux: the peak is reset through /proc/self/clear_refs;
    inputs already loaded; outputs and the core's C arrays counted)."""
    code = (
        "import numpy as np, resource, sys\n"
        "from malleo._core import simulate\n"
        "from malleo.policy import Policy\n"
        f"d = np.load({str(npz)!r})\n"
        "cols = [np.ascontiguousarray(d[k]) for k in ('submit','runtime','estimate','procs','user','queue','partition')]\n"
        f"simulate(*[c[:100] for c in cols], {total}, Policy(order={order!r}, backfill={backfill!r}))\n"
        "def status(key):\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith(key):\n"
        "            return int(line.split()[1])\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # reset the peak (VmHWM) to now\n"
        "before = status('VmRSS:')\n"
        f"r = simulate(*cols, {total}, Policy(order={order!r}, backfill={backfill!r}))\n"
        "after = status('VmHWM:')\n"
        "print((after - before) * 1024)\n")
    # -P: the current directory is not put on sys.path, so a run from the repository root
    # imports the installed malleo, not the source tree's malleo/ folder (issue 16).
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat, SDSC-SP2 and KTH-SP2 only")
    ap.add_argument("--traces", default=None, help="comma-separated subset of " + ",".join(FILES))
    args = ap.parse_args()
    if not TRACES.is_dir():
        print(f"core_loop: {TRACES} not found: nothing to measure")
        return 0
    names = list(FILES) if args.traces is None else args.traces.split(",")
    if args.quick and args.traces is None:
        names = ["SDSC-SP2", "KTH-SP2"]
    repeat = 1 if args.quick else 3
    from malleo._core import BUILD_INFO
    print(BUILD_INFO)
    data = {}
    for name in names:
        t0 = time.perf_counter()
        data[name] = load(name)
        cols, total = data[name]
        print(f"{name}: {len(cols['submit'])} jobs, {total} procs "
              f"(read in {time.perf_counter() - t0:.1f} s, not counted)")
    print(f"\n{'policy':<28}" + "".join(f"{n:>16}" for n in names)
          + "   (simulated jobs/s, wall; best of 3 below 100,000 jobs, else one run)")
    for order, backfill, extra in POLICIES:
        policy = policy_of(order, backfill, extra)
        row = f"{policy.describe():<28}"
        for name in names:
            cols, total = data[name]
            n = len(cols["submit"])
            reps = 1 if n > 100_000 else repeat
            row += f"{n / timed(cols, total, policy, repeat=reps):>16,.0f}"
        print(row, flush=True)

    print("\npeak memory added by one replay (fresh process), bytes per job:")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            cols, total = data[name]
            npz = pathlib.Path(tmp) / f"{name}.npz"
            np.savez(npz, **cols)
            n = len(cols["submit"])
            for order, backfill in (("fcfs", "easy"), ("fcfs", "conservative"), ("multifactor", "easy")):
                added = memory_child(npz, total, order, backfill)
                print(f"  {name:<12} {order + '+' + backfill:<18} {added / n:8.0f} B/job "
                      f"({added / 2**20:.1f} MiB for {n} jobs)")

    if "RICC-2010-2" in data:
        cols, total = data["RICC-2010-2"]
        n = len(cols["submit"])
        print("\nRICC-2010-2 prefix scaling (seconds; jobs/s):")
        for order, backfill in (("fcfs", "none"), ("fcfs", "easy"), ("sjf", "easy")):
            policy = policy_of(order, backfill, {})
            parts = []
            for frac in range(1, 11):
                k = n * frac // 10
                sec = timed(cols, total, policy, n=k, repeat=1)
                parts.append(f"{frac * 10}%: {sec:.2f}s")
            print(f"  {policy.describe():<12} " + "  ".join(parts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
