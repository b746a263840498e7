"""Digests of replay schedules, to prove a core change leaves every schedule byte-identical.

For each trace and backfill mode: read the trace, keep the first N jobs (in submit order,
like ``malleo replay --jobs 0:N``) when ``--jobs N`` is given, run one
``malleo._core.simulate`` and print one JSON line with the SHA-256 of the ``start``,
``reservation`` and ``backfilled`` arrays (the whole schedule: end = start + runtime), the
seconds the simulation took (wall, and the process's CPU seconds, which a loaded shared
machine moves far less) and the jobs/s it gives (per wall and per CPU second).  Each
(trace, mode) runs in a child process with a timeout.  ``--check FILE`` compares with a file of earlier lines (same
trace, mode and prefix) and exits 1 on any difference.

A mode is ``none``, ``easy``, ``conservative``, ``slurm``, ``slurm-down`` (bf_rounding
down) or either slurm form with ``:K`` (bf_max_job_test K); ``+sjbf`` before the ``:K``
takes the SJBF candidate order (``slurm+sjbf``, ``slurm-down+sjbf:5000``).  Prefixes are
``TRACE=N`` pairs given to ``--jobs``.

    python bench/schedule_digest.py [--modes conservative,slurm] [--jobs RICC-2010-2=40000]
        [--timeout S] [--check bench/schedule_digests.jsonl] [TRACE ...]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys
import time

from _traces import TRACES, trace_path  # noqa: E402  (bench/ is the script's folder)


def read_arrays(path: str, n_jobs: int | None):
    """The simulate() input columns of ``path`` in submit order (first ``n_jobs``)."""
    import warnings

    import numpy as np

    from malleo.emulator import read_swf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jobs, meta = read_swf(path)
    jobs = jobs.iloc[np.lexsort((jobs["job_number"].to_numpy(), jobs["submit_time"].to_numpy()))]
    if n_jobs is not None:
        jobs = jobs.iloc[:n_jobs]

    def col(name, dtype):
        return np.require(jobs[name].to_numpy(), dtype=dtype, requirements=["C", "W"])

    arrays = (col("submit_time", np.int64), col("runtime", np.int64), col("estimate", np.int64),
              col("procs", np.int32), col("user_id", np.int32), col("queue", np.int32),
              col("partition", np.int32))
    return arrays, int(meta.procs)


def policy_of(mode: str):
    from malleo.policy import Policy

    name, _, k = mode.partition(":")
    extra = {"bf_max_job_test": int(k)} if k else {}
    if name.endswith("+sjbf"):                  # slurm+sjbf: SJBF candidate order
        name, extra["backfill_order"] = name.removesuffix("+sjbf"), "sjf"
    if name.endswith("-down"):                  # slurm-down: Slurm's own rounding
        name, extra["bf_rounding"] = name.removesuffix("-down"), "down"
    return Policy(backfill=name, **extra)


def schedule_sha256(result: dict) -> str:
    """The digest of a schedule: SHA-256 of its start, reservation and backfilled arrays."""
    import numpy as np

    h = hashlib.sha256()
    for name in ("start", "reservation", "backfilled"):
        h.update(np.ascontiguousarray(result[name]).tobytes())
    return h.hexdigest()


def digest_one(path: str, mode: str, n_jobs: int | None) -> dict:
    """In this process: one simulate() call and the digest of its schedule."""
    from malleo._core import simulate

    arrays, procs = read_arrays(path, n_jobs)
    start = time.perf_counter()
    cpu = time.process_time()
    r = simulate(*arrays, procs, policy_of(mode))
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    n = len(arrays[0])
    return {"trace": pathlib.Path(path).name, "mode": mode, "jobs": n,
            "prefix": n_jobs, "sha256": schedule_sha256(r), "seconds": round(seconds, 3),
            "jobs_per_s": round(n / seconds) if seconds > 0 else None,
            "cpu_seconds": round(cpu, 3),
            "jobs_per_cpu_s": round(n / cpu) if cpu > 0 else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*",
                    help="trace files, or names in the traces folder (default: every trace there)")
    ap.add_argument("--modes", default="conservative,slurm")
    ap.add_argument("--jobs", action="append", default=[], metavar="TRACE=N")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--check", type=pathlib.Path)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        path, mode, n = args.child
        print(json.dumps(digest_one(path, mode, int(n) if n != "all" else None)))
        return 0
    prefixes = {}
    for spec in args.jobs:
        name, _, n = spec.partition("=")
        prefixes[name] = int(n)
    traces = ([trace_path(t) for t in args.traces] if args.traces
              else sorted(TRACES.glob("*.swf.gz")))
    expected = {}
    if args.check:
        for line in args.check.read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                expected[(e["trace"], e["mode"], e["prefix"])] = e["sha256"]
    bad = 0
    for trace in traces:
        stem = trace.name.removesuffix(".swf.gz")
        n = prefixes.get(stem, prefixes.get(trace.name))
        for mode in args.modes.split(","):
            argv = [sys.executable, __file__, "--child", str(trace), mode,
                    str(n) if n is not None else "all"]
            try:
                out = subprocess.run(argv, capture_output=True, text=True, check=True,
                                     timeout=args.timeout).stdout
                row = json.loads(out)
            except subprocess.TimeoutExpired:
                row = {"trace": trace.name, "mode": mode, "prefix": n, "timeout": args.timeout}
            except subprocess.CalledProcessError as exc:
                last = (exc.stderr or "").strip().splitlines()[-1:] or ["?"]
                row = {"trace": trace.name, "mode": mode, "prefix": n, "error": last[0]}
                bad += 1
            if args.check and "sha256" in row:
                want = expected.get((row["trace"], mode, n))
                row["same"] = want == row["sha256"] if want else None
                bad += want is not None and want != row["sha256"]
            print(json.dumps(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
