"""Where the memory of a replay goes (figures only, no assertions; issue 16).

Replays one trace (default RICC-2010-2, FCFS + EASY) the way ``malleo replay TRACE --quiet``
does (the CLI's ``map_large_blocks``, ``load_workload(swf_fields=False)``, then ``replay``
with the breakdowns; ``--swf-fields``: as with ``--swf-out``) and prints:

- peak RSS (MiB, ``getrusage``) after importing numpy, after importing the driver, after
  reading the trace and after the replay;
- the peak resident memory (``/proc/self/statm``, sampled every 2 ms by a thread) in each
  phase of the replay: reading, the core (``simulate``, its own job table included), the
  result and summary, the work summary and breakdowns; so it says which phase holds the
  peak;
- the Python-traced bytes (``tracemalloc``) held after the read and the replay, and their
  peaks, per job (the scanner's columns are memory mappings, not traced: the read's
  traced figures count only what is built from them; its RSS counts them);
- the workload's columns and their bytes per job, the result's stored job columns (views
  of the workload's are counted once: they hold no memory of their own) and the per-job
  metrics it derives on read.

The stated target: ``malleo replay`` of RICC-2010-2 with EASY at most 100 MB peak
(``/usr/bin/time -f %M``, which counts kB).

    python bench/replay_memory.py [TRACE] [--policy fcfs+easy] [--swf-fields] [--no-trace]

tracemalloc's own records add about 4 MiB to the RSS figures; ``--no-trace`` leaves it
off, so the phases' figures are those of the CLI (the traced lines then say n/a).

Runs from any directory: it reads the installed malleo (run it with the venv's python);
the trace defaults to the shared traces (``MALLEO_TRACES``, else ../shared/traces beside the repository: bench/_traces.py).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
import tracemalloc
from pathlib import Path

PHASES = (("read_swf", "read the trace"), ("_simulate", "the core (simulate)"),
          ("_result", "result and summary"), ("rigid_work", "work summary, breakdowns"),
          ("work_summary", "work summary, breakdowns"))
"""Function on the main thread's stack -> the phase it marks (the innermost one wins)."""


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PhasePeaks:
    """A thread that samples the resident memory and the phase the main thread is in."""

    def __init__(self) -> None:
        self.main = threading.get_ident()
        self.peaks: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _phase(self) -> str:
        frame = sys._current_frames().get(self.main)
        names = dict(PHASES)
        while frame is not None:
            if frame.f_code.co_name in names:
                return names[frame.f_code.co_name]
            frame = frame.f_back
        return "other"

    def _run(self) -> None:
        while not self.stop.is_set():
            phase, rss = self._phase(), resident_mib()
            self.peaks[phase] = max(self.peaks.get(phase, 0.0), rss)
            time.sleep(0.002)

    def __enter__(self) -> "PhasePeaks":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def main() -> int:
    from _traces import TRACES as traces
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(traces / "RICC-2010-2.swf.gz"))
    parser.add_argument("--policy", default="fcfs+easy")
    parser.add_argument("--swf-fields", action="store_true",
                        help="keep every SWF field (as malleo replay --swf-out does)")
    parser.add_argument("--no-trace", action="store_true",
                        help="leave tracemalloc off (RSS figures as the CLI's)")
    args = parser.parse_args()

    import numpy as np
    print(f"{'after numpy':<34} peak RSS {rss_mib():6.1f} MiB")
    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.emulator.driver import load_workload, replay
    from malleo.emulator.malloc_tuning import map_large_blocks
    from malleo.emulator.results import JobColumns
    print(f"{'after importing the driver':<34} peak RSS {rss_mib():6.1f} MiB  "
          f"(pandas loaded: {'pandas' in sys.modules}; fixed mmap threshold: "
          f"{map_large_blocks()})")
    policy = parse_policy_spec(args.policy)

    with PhasePeaks() as phases:
        if not args.no_trace:
            tracemalloc.start()
        workload = load_workload(args.trace, swf_fields=args.swf_fields)
        held, peak = tracemalloc.get_traced_memory()
        n = workload.job_count
        traced = (f"traced: held {held / 2**20:5.1f} MiB ({held / n:4.0f} B/job), peak "
                  f"{peak / 2**20:5.1f} MiB ({peak / n:4.0f} B/job)" if not args.no_trace
                  else "traced: n/a")
        print(f"{'read ' + Path(args.trace).name:<34} peak RSS {rss_mib():6.1f} MiB  "
              f"{traced}; {n:,} jobs")
        columns = workload.columns
        print(f"  workload: {len(columns)} columns, "
              f"{sum(c.dtype.itemsize for c in columns.values())} B/job: "
              + ", ".join(f"{k} {v.dtype}" for k, v in columns.items()))
        tracemalloc.reset_peak()
        result = replay(workload, policy, breakdowns=True)
        after, peak = tracemalloc.get_traced_memory()
    traced = (f"traced: adds {(after - held) / n:4.0f} B/job held, peak "
              f"{(peak - held) / n:4.0f} B/job over the workload" if not args.no_trace
              else "traced: n/a")
    print(f"{'replay ' + policy.describe():<34} peak RSS {rss_mib():6.1f} MiB  {traced}  "
          f"(pandas loaded: {'pandas' in sys.modules})")
    print("  peak resident memory by phase (MiB, sampled):")
    for phase in dict.fromkeys(name for _, name in PHASES):
        if phase in phases.peaks:
            print(f"    {phase:<30} {phases.peaks[phase]:6.1f}")
    jobs = result.__dict__["_jobs"]
    own = {k: v for k, v in jobs.items()
           if not any(np.shares_memory(v, c) for c in columns.values())}
    derived = ([k for k in jobs.order if k not in jobs] if isinstance(jobs, JobColumns)
               else [])
    print(f"  result: {len(jobs)} stored job columns, {sum(v.nbytes for v in own.values()) / n:.0f}"
          f" B/job of their own ({', '.join(f'{k} {v.dtype}' for k, v in own.items())}), "
          f"the others read-only views of the workload's; derived on read: "
          f"{', '.join(derived) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
