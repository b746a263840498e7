"""Where a whole replay's CPU time goes along the trace: per tenth of the jobs (by arrival).

One ``malleo._core.simulate`` call over the whole trace (no prefix: a prefix drains its
queue at the end, unlike the same jobs inside the whole trace), with a progress callback
every ``--events`` event times that reads the process's CPU clock (``time.process_time``).
Each chunk of event times is charged to the segment of the last job that had arrived at
its end (segment k = jobs k n/10 .. (k + 1) n/10 - 1 in submit order).  From the schedule
it returned, per segment: the passes (event times: distinct submit and end times; the
repeated passes after zero-runtime starts are not counted) and the mean queue at a pass
(jobs submitted at or before the pass time that start at or after it, i.e. waiting when
the pass plans).  It also prints the schedule's SHA-256 (the digest of
``bench/schedule_digest.py``), so a run doubles as a check.  With a core built with
``MALLEO_COUNT=1`` (setup.py; off by default) each segment also carries the kept pass's
counters (``malleo._core.loop.kept_counters``: holder visits, searches, moves, range
updates, breakpoints at the moves, ...) and the last line their sums; the counted build
runs within the noise of the default one.

    python bench/conservative_segments.py [--trace PATH] [--mode conservative]
        [--segments 10] [--events 64]

Run it from outside the checkout (e.g. /tmp) with the installed ``malleo``.  Figures are
CPU seconds of the replay (the callbacks included: one per ``--events`` event times, a few
microseconds each); a loaded shared machine moves them by tens of percent.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from schedule_digest import policy_of, read_arrays, schedule_sha256  # noqa: E402

from _traces import TRACES  # noqa: E402

RICC = str(TRACES / "RICC-2010-2.swf.gz")


def segments(path: str, mode: str, n_seg: int, events: int) -> dict:
    """One whole replay; its CPU seconds, passes and mean queue per segment of the jobs."""
    import numpy as np

    from malleo._core import simulate
    from malleo._core.loop import kept_counters

    kept_counters()             # drop anything counted before (None: not a counted build)
    arrays, procs = read_arrays(path, None)
    submit = arrays[0]
    n = len(submit)
    marks = []                  # (cpu seconds so far, simulated time reached)

    def progress(ended, total, now):
        marks.append((time.process_time(), now))

    cpu0 = time.process_time()
    r = simulate(*arrays, procs, policy_of(mode), progress=progress, progress_events=events)
    cpu = time.process_time() - cpu0

    def seg_of(t):              # segment of the last job arrived at time(s) t
        arrived = np.searchsorted(submit, t, side="right")
        return np.clip((np.maximum(arrived, 1) - 1) * n_seg // n, 0, n_seg - 1)

    m_cpu = np.array([c for c, _ in marks]) - cpu0
    m_now = np.array([t for _, t in marks], dtype=np.int64)
    seg_cpu = np.bincount(seg_of(m_now), weights=np.diff(m_cpu, prepend=0.0),
                          minlength=n_seg)
    t_ev = np.unique(np.concatenate([submit, r["end"]]))
    started = np.sort(r["start"])
    queue = np.searchsorted(submit, t_ev, side="right") - np.searchsorted(started, t_ev,
                                                                          side="left")
    s_ev = seg_of(t_ev)
    passes = np.bincount(s_ev, minlength=n_seg)
    q_sum = np.bincount(s_ev, weights=queue, minlength=n_seg)
    rows = [{"segment": k, "jobs": [k * n // n_seg, (k + 1) * n // n_seg],
             "cpu_seconds": round(float(seg_cpu[k]), 3),
             "share": round(float(seg_cpu[k] / cpu), 3) if cpu > 0 else None,
             "passes": int(passes[k]),
             "mean_queue": round(float(q_sum[k] / passes[k]), 1) if passes[k] else 0.0}
            for k in range(n_seg)]
    out = {"trace": pathlib.Path(path).name, "mode": mode, "jobs": n,
           "cpu_seconds": round(cpu, 3), "jobs_per_cpu_s": round(n / cpu) if cpu else None,
           "passes": int(passes.sum()),
           "mean_queue": round(float(q_sum.sum() / passes.sum()), 1),
           "sha256": schedule_sha256(r), "segments": rows}
    counts = kept_counters()
    if counts is not None and n_seg == len(counts):
        for row, c in zip(rows, counts):
            row["counters"] = c
        out["counters"] = {k: sum(c[k] for c in counts) for k in counts[0]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=RICC)
    ap.add_argument("--mode", default="conservative")
    ap.add_argument("--segments", type=int, default=10)
    ap.add_argument("--events", type=int, default=64)
    args = ap.parse_args()
    if args.segments < 1:
        ap.error(f"--segments: must be >= 1, got {args.segments}")
    if args.events < 1:
        ap.error(f"--events: must be >= 1, got {args.events}")
    if not pathlib.Path(args.trace).is_file():
        ap.error(f"--trace: no such file: {args.trace}")
    out = segments(args.trace, args.mode, args.segments, args.events)
    for row in out.pop("segments"):
        print(json.dumps(row))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
