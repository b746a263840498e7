"""The malleable event loop: a replay where some jobs are moldable or malleable.

Same structure as loop.simulate (completions, arrivals, one planning pass per event
time, the same pass kernel), plus the reconfiguration policy after each pass
(malleable.pxd) and completion events re-keyed when a job's rate changes (lazy deletion:
an event whose time is not the job's current completion time is stale and skipped).
All-rigid inputs give exactly loop.simulate's schedule (tests/test_malleable_core.py).
Times are integer seconds, sizes processors.
"""
import numpy as np

from libc.string cimport memset
from libc.stdint cimport uint8_t

from _types cimport simtime_t, procs_t, intp_t, EXPAND_MODE_SLURM
from heap cimport heap_t, event_t, heap_init, heap_release, heap_pop, next_event_time
from sched cimport sched_t, release_job, admit_arrivals
from malleable cimport mall_on_end, cancel_expander
from passes cimport run_pass

from malleo._core.job_columns import replay_columns, flex_columns
from malleo._core.loop import PROGRESS_EVENTS

include "jobs.pxi"


cdef int complete(sched_t* s, mall_t* m, intp_t j) noexcept nogil:
    """Job j ends at s.now: account its work, cancel its pending expander, release it."""
    mall_on_end(s, m, j)
    if m.is_slurm:
        cancel_expander(s, m, j)
    release_job(s, j, s.now - s.start[j])
    return 0


cdef int run_events(sched_t* s, mall_t* m, heap_t* h, simtime_t* end, intp_t* cursor,
                    intp_t budget) except -1 nogil:
    """The replay: at each event time, completions (by index; stale events skipped),
    arrivals, one pass with the reconfiguration phase (passes.run_pass); repeated while
    that starts jobs that end at once.  Slots n.. hold expanders (slot n + j: job j's).

    Resumable as loop.run_events: ``cursor`` = (next arrival's index, jobs ended so far),
    at most ``budget`` event times per call (-1: no limit); returns 1 if events remain."""
    cdef intp_t n = s.n_jobs
    cdef intp_t i = cursor[0]
    cdef intp_t ended = cursor[1]
    cdef simtime_t t
    cdef bint is_first
    cdef event_t ev
    while i < n or h.n > 0:
        while h.n > 0 and (end[h.a[0].id] >= 0 or m.true_end[h.a[0].id] != h.a[0].time):
            heap_pop(h)
        if h.n == 0 and i >= n:
            break
        if budget == 0:
            cursor[0] = i
            cursor[1] = ended
            return 1
        budget -= 1
        t = next_event_time(h, s.submit, i, n)
        s.now = t
        is_first = True
        while True:
            while h.n > 0 and h.a[0].time == t:
                ev = heap_pop(h)
                if end[ev.id] >= 0 or m.true_end[ev.id] != t:
                    continue
                end[ev.id] = t
                complete(s, m, ev.id)
                ended += 1
            if is_first:
                is_first = False
                i = admit_arrivals(s, i, n)
            run_pass(s, m, False, NULL)
            if not m.is_zero_start:
                break
    cursor[0] = i
    cursor[1] = ended
    return 0


def simulate_malleable(submit, runtime, estimate, procs, user, queue, partition, total_procs,
                       policy, kind, min_procs, max_procs, speedup_a, speedup_b,
                       progress=None, intp_t progress_events=PROGRESS_EVENTS):
    """Replay jobs, some moldable or malleable, through the scheduler.

    Args:
        submit, runtime, estimate, procs, user, queue, partition, total_procs, policy:
            as :func:`malleo._core.simulate` (``procs`` is each job's trace size p0; its
            runtime is at p0).  ``policy.malleability`` gives the speedup model, costs,
            reconfiguration points and policy.
        kind: uint8[n], 0 rigid, 1 moldable, 2 malleable.
        min_procs, max_procs: int32[n], a flexible job's size range (processors),
            1 <= min <= p0 <= max <= total_procs (rigid jobs: p0, p0).
        speedup_a: float64[n], Amdahl f or Downey A per job (unused for linear).
        speedup_b: float64[n], Downey sigma per job (unused otherwise).
        progress, progress_events: as :func:`malleo._core.simulate`.

    Returns:
        dict of numpy arrays: ``start``, ``end``, ``reservation``, ``backfilled``, ``est``
        as ``simulate``; ``n_expand``, ``n_shrink`` (int32), ``reconfig_time`` (int64,
        seconds without progress), ``proc_seconds`` (int64, processors x seconds held),
        ``work`` and ``work_done`` (float64, single-processor-equivalent seconds), and
        the size-change log ``log_job`` (int64), ``log_time`` (int64, seconds),
        ``log_size`` (int32, processors), in time order, each job's start included;
        the expander log (slurm expand mode; empty in-place), in time order:
        ``exp_event`` (int8: 0 requested, 1 started and merged, 2 cancelled because the
        job ended first), ``exp_job`` (int64, the job it grows), ``exp_time`` (int64,
        seconds), ``exp_procs`` (int32, processors asked for), ``exp_est`` (int64, its
        estimate, seconds); ``user_usage`` (float64, per user in increasing user number:
        the multifactor fair-share usage at the end, processor-seconds decayed to the
        last priority calculation plus those accrued since; zeros for other orders).

    Raises:
        ValueError: as ``simulate``, or a size range not containing p0 / outside
            1..total_procs, a kind outside 0..2, a speedup parameter not finite.
    """
    core = policy.core
    if core.is_learned:
        raise ValueError("estimate 'learned' is not available with flexible jobs; use "
                         "'request', 'actual' or 'predict'")
    c, total, n_users = replay_columns(submit, runtime, estimate, procs, user, queue,
                                       partition, total_procs, core)
    n = c["submit"].shape[0]
    flex = flex_columns(c["procs"], kind, min_procs, max_procs, speedup_a, speedup_b, total)
    # slurm mode: slots n..2n-1 hold expanders (slot n + j: job j's); outputs are cut
    # back to the n jobs
    cdef intp_t n_slot = 2 * n if core.expand_mode == EXPAND_MODE_SLURM else n
    cdef JobTable t = replay_table(c, n_slot, n_users, core, True)
    t.set({**flex, "runtime": c["runtime"], "p0": c["procs"]})
    end = np.full(n, -1, dtype=np.int64)
    cdef simtime_t[::1] v_end = end
    cdef heap_t h
    memset(&h, 0, sizeof(heap_t))
    t.wire(core, total, total)
    t.m.heap = &h
    cdef intp_t cursor[2]
    cdef int more = 1
    cursor[0] = 0
    cursor[1] = 0
    if progress_events < 1:
        raise ValueError(f"progress_events: must be >= 1, got {progress_events}")
    try:
        if n and progress is None:
            heap_init(&h, 1024)
            with nogil:
                run_events(&t.s, t.mp, &h, &v_end[0], cursor, -1)
        elif n:
            heap_init(&h, 1024)
            while more:
                with nogil:
                    more = run_events(&t.s, t.mp, &h, &v_end[0], cursor, progress_events)
                progress(cursor[1], n, t.s.now)
        logs = _logs(&t.m)
    finally:
        heap_release(&h)
    ma = {name: t.slot_view(name) for name in
          ("start", "resv_first", "backfilled", "est0", "n_expand", "n_shrink",
           "reconf_time", "proc_sec", "work", "done", "is_resized")}
    work = ma["work"]
    # jobs never resized report exactly their demanded work (no float accounting drift)
    done = np.where(ma["is_resized"].astype(bool), ma["done"], work)
    usage = t.users["usage"][:n_users] if n else np.zeros(1)
    accrued = t.users["accrued"][:n_users] if n else np.zeros(1, np.int64)
    return {"start": ma["start"], "end": end, "reservation": ma["resv_first"],
            "backfilled": ma["backfilled"], "est": ma["est0"] if n else t.slot_view("est"),
            "n_expand": ma["n_expand"], "n_shrink": ma["n_shrink"],
            "reconfig_time": ma["reconf_time"], "proc_seconds": ma["proc_sec"],
            "work": work, "work_done": done, **logs, "user_usage": usage + accrued}


cdef dict _logs(mall_t* m):
    """The size-change log and the expander log m recorded, as numpy arrays."""
    cdef intp_t n_log = m.n_log, n_x = m.n_xlog
    out = {"log_job": np.zeros(0, dtype=np.int64), "log_time": np.zeros(0, dtype=np.int64),
           "log_size": np.zeros(0, dtype=np.int32), "exp_event": np.zeros(0, dtype=np.int8),
           "exp_job": np.zeros(0, dtype=np.int64), "exp_time": np.zeros(0, dtype=np.int64),
           "exp_procs": np.zeros(0, dtype=np.int32), "exp_est": np.zeros(0, dtype=np.int64)}
    if n_log:
        out["log_job"] = np.array(<intp_t[:n_log]> m.log_job, dtype=np.int64)
        out["log_time"] = np.array(<simtime_t[:n_log]> m.log_time, dtype=np.int64)
        out["log_size"] = np.array(<procs_t[:n_log]> m.log_size, dtype=np.int32)
    if n_x:
        out["exp_event"] = np.array(<uint8_t[:n_x]> m.xlog_kind, dtype=np.int8)
        out["exp_job"] = np.array(<intp_t[:n_x]> m.xlog_job, dtype=np.int64)
        out["exp_time"] = np.array(<simtime_t[:n_x]> m.xlog_time, dtype=np.int64)
        out["exp_procs"] = np.array(<procs_t[:n_x]> m.xlog_procs, dtype=np.int32)
        out["exp_est"] = np.array(<simtime_t[:n_x]> m.xlog_est, dtype=np.int64)
    return out
