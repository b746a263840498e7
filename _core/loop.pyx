"""The event loop: replay a whole workload through the scheduling core.

``simulate`` validates and converts its inputs at the Python boundary, then runs the
whole replay in C without the GIL: an event heap of completions, the submit array as
the arrival stream, and one scheduling pass (backfill.schedule_pass, the kernel `plan`
also calls) per event time.  Times are integer seconds, sizes processors.
"""
import numpy as np

from libc.string cimport memset

from _types cimport (simtime_t, procs_t, intp_t, BACKFILL_NONE, BACKFILL_EASY,
                     BACKFILL_CONSERVATIVE, BACKFILL_SLURM,
                     ESTIMATE_PREDICT, ORDER_UNICEP)
from heap cimport heap_t, event_t, heap_init, heap_release, heap_push, heap_pop, next_event_time
from sched cimport sched_t, release_job, admit_arrivals, sched_unicep_sizes
from learn cimport learn_t, learn_alloc, learn_release
from passes cimport run_pass
from backfill cimport kept_release
from priority cimport order_is_time_dependent
from counters cimport (COUNT_ON, count, malleo_cnt, malleo_cnt_names, CNT_SEGMENTS, CNT_KINDS,
                      CNT_PASSES, CNT_QUEUE_SUM)
cimport counters

from malleo._core.job_columns import replay_columns

include "jobs.pxi"

PROGRESS_EVENTS = 4096
"""Event times between two calls of a replay's progress callback (a few ms of work)."""


cdef int run_events(sched_t* s, heap_t* h, const simtime_t* runtime, intp_t* cursor,
                    intp_t budget) except -1 nogil:
    """The replay: at each event time, completions (by index), arrivals, one pass;
    completions and passes repeat while a pass starts zero-runtime jobs.

    Resumable: ``cursor[0]`` is the next arrival's index and ``cursor[1]`` the jobs ended so
    far (both kept across calls); returns after ``budget`` event times (-1: no limit) with 1
    if events remain, 0 when the replay is over."""
    cdef intp_t n = s.n_jobs
    cdef intp_t i = cursor[0]
    cdef intp_t ended = cursor[1]
    cdef intp_t k, j
    cdef simtime_t t
    cdef bint is_first, is_zero
    cdef event_t ev
    while i < n or h.n > 0:
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
                release_job(s, ev.id, runtime[ev.id])
                kept_release(s, ev.id)
                ended += 1
            if is_first:
                is_first = False
                i = admit_arrivals(s, i, n)
            if COUNT_ON:
                counters.malleo_cnt_seg = <int> ((i - 1) * CNT_SEGMENTS // n if i > 0 else 0)
                count(CNT_PASSES, 1)
                count(CNT_QUEUE_SUM, s.n_wait)
            run_pass(s, NULL, False, NULL)
            is_zero = False
            for k in range(s.n_started):
                j = s.started[k]
                heap_push(h, t + runtime[j], j)
                if runtime[j] == 0:
                    is_zero = True
            if not is_zero:
                break
    cursor[0] = i
    cursor[1] = ended
    return 0


LEARN_ETA = 100.0
"""Learned estimates: the NAG learning rate, in seconds (NAG makes the step invariant to the
features' scales, not to the target's: the rate carries the runtimes' scale; learn.pxd)."""

LEARN_UNDER = 10.0
"""Learned estimates: how much more an under-prediction costs than an over-prediction of
the same size (the loss's weight of the squared under-prediction; learn.pxd)."""


def simulate(submit, runtime, estimate, procs, user, queue, partition, total_procs, policy,
             progress=None, intp_t progress_events=PROGRESS_EVENTS):
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
        policy: a malleo.policy.Policy (or its compiled ``policy.core``).
        progress: None, or ``progress(ended, n, now)`` called with the GIL between chunks
            of ``progress_events`` event times (and once at the end): jobs ended so far,
            jobs in the replay, the simulated time reached (seconds).  It may raise (e.g.
            KeyboardInterrupt) to stop the replay.  No Python object is made per event.
        progress_events: event times per chunk (>= 1).

    Returns:
        dict of numpy arrays: ``start``, ``end`` (int64, seconds), ``reservation`` (int64,
        first planned start, -1 if none), ``backfilled`` (uint8), ``est`` (int64, the
        planning estimate the job started with, seconds).

    Raises:
        ValueError: inputs of different lengths, unsorted submits, times outside
            0..MAX_TIME, or a job size outside 1..total_procs (total_procs <= MAX_PROCS;
            malleo.limits).

    Examples:
        >>> from malleo.policy import Policy
        >>> r = simulate([0, 0], [10, 5], [10, 5], [2, 2], [1, 1], [0, 0], [0, 0], 2, Policy())
        >>> r["start"].tolist()
        [0, 10]
    """
    core = policy.core
    c, total, n_users = replay_columns(submit, runtime, estimate, procs, user, queue,
                                       partition, total_procs, core)
    n = c["submit"].shape[0]
    cdef JobTable t = replay_table(c, n, n_users, core, False)
    if n == 0:
        start = t.slot_view("start")
        return {"start": start, "end": start.copy(), "reservation": t.slot_view("resv_first"),
                "backfilled": t.slot_view("backfilled"), "est": t.slot_view("est")}
    cdef const simtime_t[::1] v_runtime = c["runtime"]
    cdef heap_t h
    cdef learn_t model
    memset(&h, 0, sizeof(heap_t))
    memset(&model, 0, sizeof(learn_t))
    t.wire(core, total, total)
    cdef intp_t cursor[2]
    cdef int more = 1
    cursor[0] = 0
    cursor[1] = 0
    if progress_events < 1:
        raise ValueError(f"progress_events: must be >= 1, got {progress_events}")
    # conservative keeps its profile between passes (backfill.pxd, issue 16); predict
    # changes waiting jobs' estimates, so it re-plans from scratch
    t.s.is_keep_profile = (t.s.backfill == BACKFILL_CONSERVATIVE
                           and t.s.estimate != ESTIMATE_PREDICT)
    # slurm resumes its last pass's walk when nothing it depends on changed (backfill.pxd)
    t.s.is_slurm_resume = t.s.backfill == BACKFILL_SLURM
    # none and EASY passes that read only the queue's front order only that (sched.pxd)
    t.s.is_head_only = t.s.backfill == BACKFILL_NONE or t.s.backfill == BACKFILL_EASY
    # conservative with wfp3 or unicep re-plans by reservation, ties in queue order read
    # from the keys: it never sorts its queue (backfill.pxd, _rent_before, drop_started)
    t.s.is_queue_unsorted = (t.s.is_keep_profile
                             and order_is_time_dependent(t.s.order))
    if t.s.order == ORDER_UNICEP:
        sched_unicep_sizes(&t.s)    # its keys' log2 of the size, once a job
    try:
        if core.is_learned:
            learn_alloc(&model, n, n_users, LEARN_ETA, LEARN_UNDER)
            t.s.learn = &model
        heap_init(&h, 1024)
        if progress is None:
            with nogil:
                run_events(&t.s, &h, &v_runtime[0], cursor, -1)
        else:
            while more:
                with nogil:
                    more = run_events(&t.s, &h, &v_runtime[0], cursor, progress_events)
                progress(cursor[1], n, t.s.now)
    finally:
        t.s.learn = NULL
        learn_release(&model)
        heap_release(&h)
    out = {name: t.cols[key] for name, key in (("start", "start"), ("reservation",
           "resv_first"), ("backfilled", "backfilled"), ("est", "est"))}
    # the table and its other columns freed before ``end`` is made (issue 16: the peak)
    t = None
    out["end"] = out["start"] + c["runtime"]
    return {name: out[name] for name in ("start", "end", "reservation", "backfilled", "est")}



COUNTER_NAMES = tuple([malleo_cnt_names[k].decode("ascii") for k in range(CNT_KINDS)])
"""The counters of a core built with MALLEO_COUNT=1 (``_core/counters.pxd``; docs/core.md
"The whole trace, counted"), in ``kept_counters()``'s order.  Sums over the passes:
``queue_sum`` of the waiting jobs at a pass, ``breakpoints_at_moves`` of the profile's
breakpoints at each update pair, ``offset_sum`` of each update pair's r - when (seconds);
``pairs_same_shape[_offset]`` count update pairs following one of the same (size, hold)
[and offset] in the pass, ``visits_same_entry`` / ``visits_same_shape`` holder visits of
an index entry with the same (reservation, size, hold) / (size, hold) as the one before;
``pairs_chain`` update pairs whose new start is the old reservation of the pass's previous
move, of the same (size, hold): the job takes the slot the one before it just left.
``slurm_reservations`` counts the reservations the slurm walk makes, ``slurm_in_runs``
those of them made together with the one of the job right before (same size and
estimate, same start: docs/core.md "Runs of identical reservations in the slurm walk").
``stretches`` counts the one-shape stretches of the kept pass, ``moved_in_stretches`` the
holders they moved after the first (docs/core.md "One-shape stretches"; the first one is
an update pair, and ``range_updates`` counts two per run of equal cover), so
``moved_holders`` = ``update_pairs`` + ``moved_in_runs`` + ``moved_in_stretches``.
``point_tests`` counts the holders whose hold covers [lower bound, reservation], answered
by the free count just before their reservation and a backward walk instead of
``dec_tests`` and a search (docs/core.md "Holders whose hold covers the window")."""


def kept_counters():
    """The counters of the conservative kept pass since the last call, per tenth of the
    jobs (by the last job arrived at the pass) in ``simulate``: a list of 10 dicts keyed
    by ``COUNTER_NAMES``, then reset; None when the core was built without
    MALLEO_COUNT=1 (the default: nothing is counted)."""
    if not COUNT_ON:
        return None
    out = [{name: malleo_cnt[a][k] for k, name in enumerate(COUNTER_NAMES)}
           for a in range(CNT_SEGMENTS)]
    for a in range(CNT_SEGMENTS):
        for k in range(CNT_KINDS):
            malleo_cnt[a][k] = 0
    return out
