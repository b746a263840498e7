"""The event loop: replay a whole workload through the scheduling core.

``simulate`` validates and converts its inputs at the Python boundary, then runs the
whole replay in C without the GIL: an event heap of completions, the submit array as
the arrival stream, and one scheduling pass (backfill.schedule_pass, the kernel `plan`
also calls) per event time.  Times are integer seconds, sizes processors.
"""
import numpy as np

from libc.string cimport memset
from libc.stdint cimport int32_t, uint8_t

from _types cimport simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR, ESTIMATE_ACTUAL, ESTIMATE_PREDICT
from heap cimport heap_t, event_t, heap_init, heap_release, heap_push, heap_pop, next_event_time
from sched cimport (sched_t, sched_set_policy, sched_alloc, sched_bind, sched_release,
                    run_remove, record_runtime, queue_prepare, admit_arrivals)
from backfill cimport schedule_pass

from malleo._core.job_columns import column, check_jobs
from malleo._core.state_arrays import replay_state_arrays


cdef int complete(sched_t* s, intp_t j, const simtime_t* runtime) noexcept nogil:
    """Job j ends at s.now: free its processors, record its runtime and usage."""
    cdef simtime_t since
    s.free += s.procs[j]
    run_remove(s, j)
    if s.estimate == ESTIMATE_PREDICT:
        record_runtime(s, s.user[j], runtime[j])
    if s.order == ORDER_MULTIFACTOR:
        since = s.start[j]
        if s.mf.calc_time > since:
            since = s.mf.calc_time
        s.accrued[s.user[j]] += <simtime_t> s.procs[j] * (s.now - since)
    return 0


cdef int run_events(sched_t* s, heap_t* h, const simtime_t* runtime,
                    uint8_t* is_seen) except -1 nogil:
    """The replay: at each event time, completions (by index), arrivals, one pass;
    completions and passes repeat while a pass starts zero-runtime jobs."""
    cdef intp_t n = s.n_jobs
    cdef intp_t i = 0
    cdef intp_t k, j
    cdef simtime_t t
    cdef bint is_first, is_zero
    cdef event_t ev
    while i < n or h.n > 0:
        t = next_event_time(h, s.submit, i, n)
        s.now = t
        is_first = True
        while True:
            while h.n > 0 and h.a[0].time == t:
                ev = heap_pop(h)
                complete(s, ev.id, runtime)
            if is_first:
                is_first = False
                i = admit_arrivals(s, i, n, is_seen)
            queue_prepare(s, False)
            schedule_pass(s)
            is_zero = False
            for k in range(s.n_started):
                j = s.started[k]
                heap_push(h, t + runtime[j], j)
                if runtime[j] == 0:
                    is_zero = True
            if not is_zero:
                break
    return 0


def simulate(submit, runtime, estimate, procs, user, queue, partition, total_procs, policy):
    """Replay jobs through the scheduler and return their schedule.

    Args:
        submit: int64[n] submit times (seconds), sorted (non-decreasing), >= 0.
        runtime: int64[n] seconds each job really runs, >= 0.
        estimate: int64[n] requested times (seconds), >= 0.
        procs: int32[n] processors per job, each in 1..total_procs.
        user: int32[n] user ids (predict-mode histories, multifactor fair share).
        queue: int32[n] SWF queue numbers (multifactor queue factor).
        partition: int32[n] SWF partition numbers (multifactor partition factor).
        total_procs: processors in the machine, >= 1.
        policy: a malleo.policy.Policy.

    Returns:
        dict of numpy arrays: ``start``, ``end`` (int64, seconds), ``reservation`` (int64,
        first planned start, -1 if none), ``backfilled`` (uint8), ``est`` (int64, the
        planning estimate the job started with, seconds).

    Raises:
        ValueError: inputs of different lengths, unsorted submits, negative times, or a
            job size outside 1..total_procs.

    Examples:
        >>> from malleo.policy import Policy
        >>> r = simulate([0, 0], [10, 5], [10, 5], [2, 2], [1, 1], [0, 0], [0, 0], 2, Policy())
        >>> r["start"].tolist()
        [0, 10]
    """
    submit_a = column("submit", submit, np.int64, None)
    n = submit_a.shape[0]
    runtime_a = column("runtime", runtime, np.int64, n)
    request_a = column("estimate", estimate, np.int64, n)
    procs_a = column("procs", procs, np.int32, n)
    user_a = column("user", user, np.int64, n)
    queue_a = column("queue", queue, np.int64, n)
    partition_a = column("partition", partition, np.int64, n)
    total = check_jobs(submit_a, runtime_a, request_a, procs_a, total_procs)

    a = replay_state_arrays(request_a, user_a, queue_a, partition_a, policy.multifactor)
    user_code, n_users, qp, start = a["user_code"], a["n_users"], a["qp"], a["start"]
    exp_end, resv_first, resv_cur = a["exp_end"], a["resv_first"], a["resv_cur"]
    backfilled, est, key, prio = a["backfilled"], a["est"], a["key"], a["prio"]
    usage, accrued, hist1, hist2 = a["usage"], a["accrued"], a["hist1"], a["hist2"]
    hist_n, is_seen = a["hist_n"], a["is_seen"]

    cdef sched_t s
    cdef heap_t h
    memset(&s, 0, sizeof(sched_t))
    memset(&h, 0, sizeof(heap_t))
    sched_set_policy(&s, policy)
    if s.estimate == ESTIMATE_ACTUAL:
        est = runtime_a.copy()
    # inputs may be read-only (pandas copy-on-write): const views, never written
    cdef const simtime_t[::1] v_submit = submit_a, v_runtime = runtime_a, v_request = request_a
    cdef const procs_t[::1] v_procs = procs_a
    cdef int32_t[::1] v_user = user_code, v_hist_n = hist_n
    cdef double[::1] v_qp = qp, v_key = key, v_prio = prio, v_usage = usage
    cdef simtime_t[::1] v_est = est, v_start = start, v_exp = exp_end
    cdef simtime_t[::1] v_rf = resv_first, v_rc = resv_cur, v_acc = accrued
    cdef simtime_t[::1] v_h1 = hist1, v_h2 = hist2
    cdef uint8_t[::1] v_bf = backfilled, v_seen = is_seen
    if n == 0:
        return {"start": start, "end": start.copy(), "reservation": resv_first,
                "backfilled": backfilled, "est": est}
    s.total = total
    s.free = total
    s.n_jobs = n
    sched_bind(&s, <simtime_t*> &v_submit[0], <simtime_t*> &v_request[0],
               <procs_t*> &v_procs[0], &v_user[0], &v_qp[0], &v_est[0], &v_key[0], &v_prio[0],
               &v_start[0], &v_exp[0], &v_rf[0], &v_rc[0], &v_bf[0], &v_usage[0], &v_acc[0],
               &v_h1[0], &v_h2[0], &v_hist_n[0])
    s.n_users = n_users
    s.n_seen = 0
    try:
        sched_alloc(&s, n)
        heap_init(&h, 1024)
        with nogil:
            run_events(&s, &h, &v_runtime[0], &v_seen[0])
    finally:
        sched_release(&s)
        heap_release(&h)
    return {"start": start, "end": start + runtime_a, "reservation": resv_first,
            "backfilled": backfilled, "est": est}
