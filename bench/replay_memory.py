"""Where the memory of a replay goes (figures only, no assertions; issue 16).

Replays one trace (default RICC-2010-2, FCFS + EASY) the way ``malleo replay TRACE --quiet``
does (``load_workload(swf_fields=False)`` then ``replay``; ``--swf-fields``: as with
``--swf-out``) and prints, phase by phase:

- peak RSS (MiB, ``getrusage``) after importing numpy, after importing the driver, after
  reading the trace and after the replay;
- the Python-traced bytes (``tracemalloc``) held after each phase and their peak during it,
  per job (the scanner's columns are memory mappings, not traced: the read's traced
  figures count only what is built from them; its RSS counts them);
- the workload's columns and their bytes per job, and the result's job columns (views of
  the workload's are counted once: they hold no memory of their own).

The stated target: ``malleo replay`` of RICC-2010-2 with EASY at most 100 MB peak.

    python bench/replay_memory.py [TRACE] [--policy fcfs+easy] [--swf-fields]

Runs from any directory: it reads the installed malleo (run it with the venv's python);
the trace defaults to the shared traces (``MALLEO_TRACES`` or /work/shared/traces).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tracemalloc
from pathlib import Path


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    traces = Path(os.environ.get("MALLEO_TRACES", "/work/shared/traces"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(traces / "RICC-2010-2.swf.gz"))
    parser.add_argument("--policy", default="fcfs+easy")
    parser.add_argument("--swf-fields", action="store_true",
                        help="keep every SWF field (as malleo replay --swf-out does)")
    args = parser.parse_args()

    import numpy as np
    print(f"{'after numpy':<34} peak RSS {rss_mib():6.0f} MiB")
    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.emulator.driver import load_workload, replay
    print(f"{'after importing the driver':<34} peak RSS {rss_mib():6.0f} MiB  "
          f"(pandas loaded: {'pandas' in sys.modules})")
    policy = parse_policy_spec(args.policy)

    tracemalloc.start()
    workload = load_workload(args.trace, swf_fields=args.swf_fields)
    held, peak = tracemalloc.get_traced_memory()
    n = workload.job_count
    print(f"{'read ' + Path(args.trace).name:<34} peak RSS {rss_mib():6.0f} MiB  traced: held "
          f"{held / 2**20:5.0f} MiB ({held / n:4.0f} B/job), peak {peak / 2**20:5.0f} MiB "
          f"({peak / n:4.0f} B/job); {n:,} jobs")
    columns = workload.columns
    print(f"  workload: {len(columns)} columns, "
          f"{sum(c.dtype.itemsize for c in columns.values())} B/job: "
          + ", ".join(f"{k} {v.dtype}" for k, v in columns.items()))
    tracemalloc.reset_peak()
    result = replay(workload, policy)
    after, peak = tracemalloc.get_traced_memory()
    print(f"{'replay ' + policy.describe():<34} peak RSS {rss_mib():6.0f} MiB  traced: adds "
          f"{(after - held) / n:4.0f} B/job held, peak {(peak - held) / n:4.0f} B/job over "
          f"the workload  (pandas loaded: {'pandas' in sys.modules})")
    jobs = result.__dict__["_jobs"]
    own = sum(v.nbytes for v in jobs.values() if v.flags.writeable)
    print(f"  result: {len(jobs)} job columns, {own / n:.0f} B/job of their own, the others "
          f"read-only views of the workload's")
    del np
    return 0


if __name__ == "__main__":
    sys.exit(main())
