# The pass function: the one sequence every entrance of the core runs at a pass time
# (loop.simulate and malleable_loop.simulate_malleable at each event time, plan.plan once).
#
# Header-only (`cdef inline`).  Queue preparation (sched.queue_prepare), the backfill pass
# (backfill.schedule_pass), then, when the malleable kernel is wired (m != NULL): the
# start hooks, the reconfiguration phase (malleable.malleable_phase) and, in slurm expand
# mode when that phase requested expanders, one more pass so they can start now.
from libc.string cimport memcpy, memmove

from _types cimport intp_t
from sched cimport sched_t, queue_prepare
from backfill cimport schedule_pass
from malleable cimport mall_t, mall_on_start, malleable_phase, mall_admit


cdef inline bint _ends_now(const sched_t* s, const mall_t* m, intp_t k0) noexcept nogil:
    """Whether a job (not an expander slot) of s.started[k0:] completes at s.now."""
    cdef intp_t k, j
    for k in range(k0, s.n_started):
        j = s.started[k]
        if j < m.exp_base and m.true_end[j] == s.now:
            return True
    return False


cdef inline int run_pass(sched_t* s, mall_t* m, bint is_full_sort,
                         intp_t* order_out) except -1 nogil:
    """One planning pass at s.now.  ``is_full_sort``: sort the whole queue (plan's rows
    come in any order).  ``order_out`` (or NULL): receives the queue order (job indices)
    before the pass.  On return s.started[:s.n_started] holds every job started, in start
    order (the first pass, the reconfiguration phase's starts, the expander pass)."""
    cdef intp_t k, n1
    if m != NULL:
        mall_admit(s, m)            # flexible arrivals ask for their start size
    queue_prepare(s, is_full_sort)
    if order_out != NULL and s.n_wait > 0:
        memcpy(order_out, s.wait, s.n_wait * sizeof(intp_t))
    if m != NULL:
        s.is_bfo_dirty = True     # the malleable kernel edits the queue, sizes, estimates
    schedule_pass(s)
    if m == NULL:
        return 0
    for k in range(s.n_started):
        mall_on_start(s, m, s.started[k])
    m.n_new_exp = 0
    malleable_phase(s, m)
    m.is_zero_start = _ends_now(s, m, 0)
    if m.n_new_exp == 0:
        return 0
    # slurm expand mode: the new expanders get a pass now; keep the first pass's starts
    n1 = s.n_started
    memcpy(s.started_tmp, s.started, n1 * sizeof(intp_t))
    queue_prepare(s, False)
    s.is_bfo_dirty = True
    schedule_pass(s)
    for k in range(s.n_started):
        mall_on_start(s, m, s.started[k])
    m.is_zero_start = _ends_now(s, m, 0) or m.is_zero_start
    memmove(s.started + n1, s.started, s.n_started * sizeof(intp_t))
    memcpy(s.started, s.started_tmp, n1 * sizeof(intp_t))
    s.n_started += n1
    return 0
