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
from libc.stdint cimport int32_t, uint8_t

from _types cimport simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR, ESTIMATE_ACTUAL, ESTIMATE_PREDICT
from heap cimport heap_t, event_t, heap_init, heap_release, heap_pop, next_event_time
from sched cimport (sched_t, sched_set_policy, sched_alloc, sched_bind, sched_release,
                    run_remove, record_runtime, queue_prepare, admit_arrivals)
from backfill cimport schedule_pass
from malleable cimport (mall_t, mall_set_options, mall_bind, mall_release, mall_on_start,
                        mall_on_end, malleable_phase, cancel_expander, KIND_RIGID)

from malleo._core.job_columns import column, check_jobs
from malleo._core.state_arrays import replay_state_arrays, malleable_state_arrays


cdef int complete(sched_t* s, mall_t* m, intp_t j) noexcept nogil:
    """Job j ends at s.now: free its processors, record its runtime and usage."""
    cdef simtime_t since
    mall_on_end(s, m, j)
    if m.is_slurm:
        cancel_expander(s, m, j)
    s.free += s.procs[j]
    run_remove(s, j)
    if s.estimate == ESTIMATE_PREDICT:
        record_runtime(s, s.user[j], s.now - s.start[j])
    if s.order == ORDER_MULTIFACTOR:
        since = s.start[j]
        if s.mf.calc_time > since:
            since = s.mf.calc_time
        s.accrued[s.user[j]] += <simtime_t> s.procs[j] * (s.now - since)
    return 0


cdef int run_events(sched_t* s, mall_t* m, heap_t* h, simtime_t* end,
                    uint8_t* is_seen) except -1 nogil:
    """The replay: at each event time, completions (by index; stale events skipped),
    arrivals, one pass and the reconfiguration policy (in slurm mode, when it requested
    expanders, one more pass so they can start now); repeated while that starts jobs
    that end at once.  Slots n.. hold expanders (slot n + j: job j's)."""
    cdef intp_t n = s.n_jobs
    cdef intp_t i = 0
    cdef intp_t k, j
    cdef simtime_t t
    cdef bint is_first, is_zero
    cdef event_t ev
    while i < n or h.n > 0:
        while h.n > 0 and (end[h.a[0].id] >= 0 or m.true_end[h.a[0].id] != h.a[0].time):
            heap_pop(h)
        if h.n == 0 and i >= n:
            break
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
            if is_first:
                is_first = False
                i = admit_arrivals(s, i, n, is_seen)
            queue_prepare(s, False)
            schedule_pass(s)
            for k in range(s.n_started):
                mall_on_start(s, m, s.started[k])
            m.n_new_exp = 0
            malleable_phase(s, m)
            is_zero = False
            for k in range(s.n_started):
                j = s.started[k]
                if j < n and m.true_end[j] == t:
                    is_zero = True
            if m.n_new_exp > 0:       # slurm mode: the new expanders get a pass now
                queue_prepare(s, False)
                schedule_pass(s)
                for k in range(s.n_started):
                    mall_on_start(s, m, s.started[k])
                for k in range(s.n_started):
                    j = s.started[k]
                    if j < n and m.true_end[j] == t:
                        is_zero = True
            if not is_zero:
                break
    return 0




def simulate_malleable(submit, runtime, estimate, procs, user, queue, partition, total_procs,
                       policy, kind, min_procs, max_procs, speedup_a, speedup_b):
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
            1..total_procs.
    """
    mal = policy.malleability
    submit_a = column("submit", submit, np.int64, None)
    n = submit_a.shape[0]
    runtime_a = column("runtime", runtime, np.int64, n)
    request_a = column("estimate", estimate, np.int64, n, writable=True)
    procs_a = column("procs", procs, np.int32, n, writable=True)
    p0_a = procs_a.copy()
    user_a = column("user", user, np.int64, n)
    queue_a = column("queue", queue, np.int64, n)
    partition_a = column("partition", partition, np.int64, n)
    kind_a = column("kind", kind, np.uint8, n, writable=True)
    pmin_a = column("min_procs", min_procs, np.int32, n, writable=True)
    pmax_a = column("max_procs", max_procs, np.int32, n, writable=True)
    pa_a = column("speedup_a", speedup_a, np.float64, n, writable=True)
    pb_a = column("speedup_b", speedup_b, np.float64, n, writable=True)
    total = check_jobs(submit_a, runtime_a, request_a, procs_a, total_procs)
    if n:
        bad = (pmin_a < 1) | (pmin_a > procs_a) | (pmax_a < procs_a) | (pmax_a > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"min_procs/max_procs: need 1 <= min <= procs <= max <= {total}, "
                             f"job {k} has {pmin_a[k]} <= {procs_a[k]} <= {pmax_a[k]}")
        if (kind_a > 2).any():
            raise ValueError("kind: must be 0 (rigid), 1 (moldable) or 2 (malleable)")
    is_slurm = mal.expand_mode == "slurm"
    # slurm mode: slots n..2n-1 hold expanders (slot n + j: job j's), so every column the
    # pass reads is doubled; outputs are cut back to the n jobs
    n_slot = 2 * n if is_slurm else n

    a = replay_state_arrays(request_a, user_a, queue_a, partition_a, policy.multifactor)
    user_code, n_users, qp, start = a["user_code"], a["n_users"], a["qp"], a["start"]
    exp_end, resv_first, resv_cur = a["exp_end"], a["resv_first"], a["resv_cur"]
    backfilled, est, key, prio = a["backfilled"], a["est"], a["key"], a["prio"]
    usage, accrued, hist1, hist2 = a["usage"], a["accrued"], a["hist1"], a["hist2"]
    hist_n, is_seen = a["hist_n"], a["is_seen"]
    end = np.full(n, -1, dtype=np.int64)
    ma = malleable_state_arrays(n, n_slot)

    cdef sched_t s
    cdef heap_t h
    cdef mall_t m
    memset(&s, 0, sizeof(sched_t))
    memset(&h, 0, sizeof(heap_t))
    memset(&m, 0, sizeof(mall_t))
    sched_set_policy(&s, policy)
    mall_set_options(&m, mal)
    if s.estimate == ESTIMATE_ACTUAL:
        est = runtime_a.copy()
    if n == 0:
        return {"start": start, "end": end, "reservation": resv_first,
                "backfilled": backfilled, "est": est, "n_expand": ma["n_expand"],
                "n_shrink": ma["n_shrink"], "reconfig_time": ma["reconf_time"],
                "proc_seconds": ma["proc_sec"], "work": ma["work"], "work_done": ma["done"],
                **_logs(&m), "user_usage": usage + accrued}

    def slots(arr, fill):
        if not is_slurm:
            return arr
        return np.concatenate([arr, np.full(n, fill, dtype=arr.dtype)])

    submit_a = slots(submit_a, 0)
    request_a = slots(request_a, 0)
    procs_a = slots(procs_a, 1)
    user_code = slots(user_code, 0)
    qp = slots(qp, 0.0)
    est = slots(est, 0)
    key = slots(key, 0.0)
    prio = slots(prio, np.nan)
    start = slots(start, -1)
    exp_end = slots(exp_end, 0)
    resv_first = slots(resv_first, -1)
    resv_cur = slots(resv_cur, -1)
    backfilled = slots(backfilled, 0)
    ma.update({"kind": slots(kind_a, KIND_RIGID), "min_procs": pmin_a, "max_procs": pmax_a,
               "speedup_a": pa_a, "speedup_b": pb_a, "runtime": runtime_a, "p0": p0_a})
    cdef const simtime_t[::1] v_submit = submit_a
    cdef simtime_t[::1] v_request = request_a
    cdef procs_t[::1] v_procs = procs_a
    cdef int32_t[::1] v_user = user_code, v_hist_n = hist_n
    cdef double[::1] v_qp = qp, v_key = key, v_prio = prio, v_usage = usage
    cdef simtime_t[::1] v_est = est, v_start = start, v_exp = exp_end, v_end = end
    cdef simtime_t[::1] v_rf = resv_first, v_rc = resv_cur, v_acc = accrued
    cdef simtime_t[::1] v_h1 = hist1, v_h2 = hist2
    cdef uint8_t[::1] v_bf = backfilled, v_seen = is_seen
    s.total = total
    s.free = total
    s.n_jobs = n
    sched_bind(&s, <simtime_t*> &v_submit[0], &v_request[0], &v_procs[0], &v_user[0], &v_qp[0],
               &v_est[0], &v_key[0], &v_prio[0], &v_start[0], &v_exp[0], &v_rf[0], &v_rc[0],
               &v_bf[0], &v_usage[0], &v_acc[0], &v_h1[0], &v_h2[0], &v_hist_n[0])
    s.n_users = n_users
    s.n_seen = 0
    m.heap = &h
    mall_bind(&m, ma, n)
    try:
        sched_alloc(&s, n_slot)
        heap_init(&h, 1024)
        with nogil:
            run_events(&s, &m, &h, &v_end[0], &v_seen[0])
        logs = _logs(&m)
    finally:
        sched_release(&s)
        heap_release(&h)
        mall_release(&m)
    work = ma["work"][:n]
    # jobs never resized report exactly their demanded work (no float accounting drift)
    done = np.where(ma["is_resized"][:n].astype(bool), ma["done"][:n], work)
    return {"start": start[:n], "end": end, "reservation": resv_first[:n],
            "backfilled": backfilled[:n], "est": ma["est0"][:n],
            "n_expand": ma["n_expand"][:n], "n_shrink": ma["n_shrink"][:n],
            "reconfig_time": ma["reconf_time"][:n], "proc_seconds": ma["proc_sec"][:n],
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
