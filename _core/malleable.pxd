# Moldable and malleable jobs: the speedup models, exact remaining-work tracking, resizes
# with their cost, the start-size rules, and the reconfiguration policies (dmr,
# head-unblock, efficiency) run after the planning pass (docs/malleability.md).
#
# Every reconfiguration (shrink to start a job, expansion, moldable or fit start) is
# taken only if no reservation of the pass moves later (issue 11): the protected
# reservations (resv_collect: EASY / none the queue head at its shadow time, conservative
# every waiting job's, slurm the first bf_max_job_test ones) are checked against the
# running set as changed by the decision (resv_safe).
#
# Header-only (`cdef inline`), like backfill.pxd: the malleable event loop compiles these
# kernels.  Work is in "single-processor-equivalent seconds": a job of runtime r at its
# trace size p0 has work r x S(p0) and progresses at rate S(p) while it holds p
# processors and is not reconfiguring.  A job that was never resized ends exactly at
# start + runtime (no floating point on the rigid path).
from libc.math cimport ceil, NAN
from libc.stdlib cimport realloc, free, qsort
from libc.string cimport memmove
from libc.stdint cimport int32_t, uint8_t

from _types cimport (simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR, BACKFILL_CONSERVATIVE,
                     BACKFILL_SLURM, MPOL_NONE, MPOL_DMR, MPOL_HEAD_UNBLOCK, MPOL_EFFICIENCY,
                     START_MIN, START_PREFERRED, START_FIT, SPEEDUP_LINEAR, SPEEDUP_AMDAHL,
                     POINTS_CHECKIN, ESTIMATE_SCALING_SPEEDUP, EXPAND_MODE_SLURM)
from profile cimport align_up
from heap cimport heap_t, heap_push
from sched cimport sched_t, run_remove, run_insert, expected_end, start_job


# Job kinds, in the order of malleo.knobs.JOB_KINDS (a per-job column, not a knob:
# tests/test_core_codes.py checks the order).
cdef enum:
    KIND_RIGID = 0
    KIND_MOLDABLE = 1
    KIND_MALLEABLE = 2

cdef enum:
    XLOG_REQUEST = 0
    XLOG_MERGE = 1
    XLOG_CANCEL = 2


cdef struct mev_t:
    simtime_t time            # seconds
    procs_t d_new             # change of the free count at ``time`` after the decision
    procs_t d_old             # the same before it


cdef struct mall_t:
    int policy                # MPOL_* code
    int model                 # SPEEDUP_* code
    bint is_checkin           # reconfiguration points only at check-in points
    bint is_scaled            # estimates scale with the speedup (else fixed wall clock)
    bint is_pow2              # sizes chosen by the core are powers of two
    bint is_moldable_start    # moldable jobs start at the size of earliest expected end
    double cost_fixed         # seconds per reconfiguration
    double cost_per_proc      # seconds per processor moved
    simtime_t min_interval    # seconds between two reconfigurations of a job
    simtime_t checkin         # seconds between check-in points
    int start_size            # START_* code: the size a flexible job asks for
    double eff_threshold      # preferred size: min parallel efficiency S(p) / p
    simtime_t min_gain        # seconds a resize must bring a completion forward (strictly)
    heap_t* heap              # completion events (NULL: no events, e.g. in plan)
    # per-job inputs
    uint8_t* kind             # KIND_*
    procs_t* pmin             # min size (processors)
    procs_t* pmax             # max size (processors)
    double* pa                # speedup parameter: Amdahl f, Downey A
    double* pb                # speedup parameter: Downey sigma
    const simtime_t* runtime  # trace runtime at the trace size (seconds)
    const procs_t* p0         # trace size (processors)
    # per-job state
    double* work              # demanded work (runtime x S(p0))
    double* done              # work done up to upd
    double* est_work          # planning estimate as work (est x S(p0))
    double* req_work          # request as work
    simtime_t* upd            # time `done` is accounted to (seconds)
    simtime_t* resume         # progress resumes here after a reconfiguration (seconds)
    simtime_t* last_reconf    # time of the last reconfiguration, -1 never
    simtime_t* next_point     # next check-in point (seconds)
    simtime_t* true_end       # when the job completes at its current size (seconds)
    simtime_t* size_since     # time of the last size change (seconds)
    simtime_t* proc_sec       # processor-seconds held so far
    simtime_t* est0           # planning estimate the job started with (seconds)
    simtime_t* reconf_time    # seconds spent reconfiguring
    int32_t* n_expand         # expansions
    int32_t* n_shrink         # shrinks
    uint8_t* is_resized       # ever resized
    procs_t* pref             # preferred size (processors), 0 until first needed
    # reservations protected during the reconfiguration phase (resv_collect)
    intp_t* pr_job            # the waiting job holding it
    simtime_t* pr_time        # its planned start (seconds)
    simtime_t* pr_end         # planned start + hold (seconds)
    intp_t n_pr
    bint is_pr_stale          # the protected reservations must be collected again
    simtime_t easy_avail_at   # EASY / none: the head's shadow time (seconds), -1 no head
    procs_t easy_avail        # processors free at that time before the decision
    # a decision being checked (resv_safe): jobs resized or started, new size and end
    intp_t* mod_job
    procs_t* mod_procs
    simtime_t* mod_end
    intp_t n_mod
    mev_t* ev                 # scratch of resv_safe's sweep
    intp_t cap_scratch        # capacity of pr_* and mod_* (ev: 3x + 8)
    # size-change log: (job, time, size) per change, starts included
    intp_t* log_job
    simtime_t* log_time
    procs_t* log_size
    intp_t n_log
    intp_t cap_log
    intp_t* cand              # scratch (n_jobs)
    # slurm expand mode (docs/malleability.md "Expansion modes")
    bint is_slurm             # expansions queue an expander request instead of resizing
    intp_t exp_base           # job j's new expander uses slot exp_base + j
    intp_t* parent            # per slot: the running job a pending expander grows, -1 none
    intp_t* expander          # per job: its pending expander's slot, -1 none
    intp_t n_new_exp          # expanders requested since the caller reset it
    bint is_zero_start        # a job started by the last run_pass ends at once (passes.pxd)
    # expander log: (event, job, time, processors, estimate) per request / merge / cancel
    uint8_t* xlog_kind        # XLOG_*
    intp_t* xlog_job          # the parent job
    simtime_t* xlog_time      # seconds
    procs_t* xlog_procs       # the expander's processors
    simtime_t* xlog_est       # the expander's estimate (seconds)
    intp_t n_xlog
    intp_t cap_xlog


cdef inline int mall_set_params(mall_t* m, object core) except -1:
    """Copy a compiled policy's reconfiguration options (``malleo.policy_codes.CorePolicy``:
    one field per ``[malleability]`` knob, of its name: choices as their codes of
    _knob_codes.pxi, costs, minimum interval and check-in period in seconds) into m."""
    m.policy = core.policy
    m.model = core.speedup
    m.is_checkin = core.points == POINTS_CHECKIN
    m.is_scaled = core.estimate_scaling == ESTIMATE_SCALING_SPEEDUP
    m.is_pow2 = core.power_of_two
    m.is_moldable_start = core.moldable_start
    m.cost_fixed = core.reconfig_fixed
    m.cost_per_proc = core.reconfig_per_proc
    m.min_interval = core.min_interval
    m.checkin = core.checkin_period
    m.is_slurm = core.expand_mode == EXPAND_MODE_SLURM
    m.start_size = core.start_size
    m.eff_threshold = core.efficiency_threshold
    m.min_gain = core.min_gain
    return 0


cdef inline int mall_bind(mall_t* m, dict a, intp_t exp_base) except -1:
    """Point m at the arrays of ``a`` (the job table's malleable columns, jobs.pxi
    MALL_COLUMNS and MALL_JOB_COLUMNS); the table keeps ``a`` alive while m is used.  Job j's new
    expander goes to slot ``exp_base + j``."""
    cdef uint8_t[::1] kind = a["kind"], rsz = a["is_resized"]
    cdef procs_t[::1] pmin = a["min_procs"], pmax = a["max_procs"]
    cdef const procs_t[::1] p0 = a["p0"]
    cdef const simtime_t[::1] runtime = a["runtime"]
    cdef double[::1] pa = a["speedup_a"], pb = a["speedup_b"], work = a["work"]
    cdef double[::1] done = a["done"], ew = a["est_work"], rw = a["req_work"]
    cdef simtime_t[::1] upd = a["upd"], res = a["resume"], lr = a["last_reconf"]
    cdef simtime_t[::1] np_ = a["next_point"], te = a["true_end"], ss = a["size_since"]
    cdef simtime_t[::1] ps = a["proc_sec"], e0 = a["est0"], rt = a["reconf_time"]
    cdef int32_t[::1] nexp = a["n_expand"], nshr = a["n_shrink"]
    cdef intp_t[::1] cand = a["cand"], parent = a["parent"], expander = a["expander"]
    cdef procs_t[::1] pref = a["pref"]
    m.pref = &pref[0]
    m.kind = &kind[0]
    m.pmin = &pmin[0]
    m.pmax = &pmax[0]
    m.pa = &pa[0]
    m.pb = &pb[0]
    m.runtime = &runtime[0]
    m.p0 = &p0[0]
    m.work = &work[0]
    m.done = &done[0]
    m.est_work = &ew[0]
    m.req_work = &rw[0]
    m.upd = &upd[0]
    m.resume = &res[0]
    m.last_reconf = &lr[0]
    m.next_point = &np_[0]
    m.true_end = &te[0]
    m.size_since = &ss[0]
    m.proc_sec = &ps[0]
    m.est0 = &e0[0]
    m.reconf_time = &rt[0]
    m.n_expand = &nexp[0]
    m.n_shrink = &nshr[0]
    m.is_resized = &rsz[0]
    m.cand = &cand[0]
    m.exp_base = exp_base
    m.parent = &parent[0]
    m.expander = &expander[0]
    return 0


cdef inline void mall_release(mall_t* m) noexcept:
    """Free the logs m allocated (its arrays belong to the caller)."""
    free(m.log_job)
    free(m.log_time)
    free(m.log_size)
    free(m.xlog_kind)
    free(m.xlog_job)
    free(m.xlog_time)
    free(m.xlog_procs)
    free(m.xlog_est)
    free(m.pr_job)
    free(m.pr_time)
    free(m.pr_end)
    free(m.mod_job)
    free(m.mod_procs)
    free(m.mod_end)
    free(m.ev)
    m.pr_job = NULL
    m.pr_time = NULL
    m.pr_end = NULL
    m.mod_job = NULL
    m.mod_procs = NULL
    m.mod_end = NULL
    m.ev = NULL
    m.cap_scratch = 0
    m.log_job = NULL
    m.log_time = NULL
    m.log_size = NULL
    m.xlog_kind = NULL
    m.xlog_job = NULL
    m.xlog_time = NULL
    m.xlog_procs = NULL
    m.xlog_est = NULL


cdef inline double speedup(const mall_t* m, intp_t j, procs_t p) noexcept nogil:
    """S(p): linear p; Amdahl 1 / (f + (1 - f) / p); Downey (1997) with average
    parallelism A and variance sigma (low-variance form for sigma <= 1, else high)."""
    cdef double n = <double> p
    cdef double f, a, sg
    if m.model == SPEEDUP_LINEAR:
        return n
    if m.model == SPEEDUP_AMDAHL:
        f = m.pa[j]
        return 1.0 / (f + (1.0 - f) / n)
    a = m.pa[j]
    sg = m.pb[j]
    if sg <= 1.0:
        if n <= a:
            return a * n / (a + sg / 2.0 * (n - 1.0))
        if n <= 2.0 * a - 1.0:
            return a * n / (sg * (a - 0.5) + n * (1.0 - sg / 2.0))
        return a
    if n <= a + a * sg - sg:
        return n * a * (sg + 1.0) / (sg * (n + a - 1.0) + a)
    return a


cdef inline simtime_t work_time(double w, double rate) noexcept nogil:
    """Whole seconds to do ``w`` work at ``rate`` (rounded up; 1e-9 absorbs float noise)."""
    if w <= 0.0:
        return 0
    return <simtime_t> ceil(w / rate - 1e-9)


cdef inline procs_t pow2_floor(procs_t p) noexcept nogil:
    """The largest power of two <= p (p >= 1)."""
    cdef procs_t r = 1
    while r * 2 <= p:
        r *= 2
    return r


cdef inline int log_size(mall_t* m, intp_t j, simtime_t t, procs_t p) except -1 nogil:
    """Append (job, time, size) to the size-change log (grows by doubling)."""
    cdef intp_t cap
    if m.n_log == m.cap_log:
        cap = m.cap_log * 2 if m.cap_log > 0 else 1024
        m.log_job = <intp_t*> realloc(m.log_job, cap * sizeof(intp_t))
        m.log_time = <simtime_t*> realloc(m.log_time, cap * sizeof(simtime_t))
        m.log_size = <procs_t*> realloc(m.log_size, cap * sizeof(procs_t))
        if m.log_job == NULL or m.log_time == NULL or m.log_size == NULL:
            with gil:
                raise MemoryError("size-change log")
        m.cap_log = cap
    m.log_job[m.n_log] = j
    m.log_time[m.n_log] = t
    m.log_size[m.n_log] = p
    m.n_log += 1
    return 0


cdef inline int log_expander(mall_t* m, uint8_t kind, intp_t j, simtime_t t, procs_t p,
                             simtime_t est) except -1 nogil:
    """Append (event, parent job, time, processors, estimate) to the expander log."""
    cdef intp_t cap
    if m.n_xlog == m.cap_xlog:
        cap = m.cap_xlog * 2 if m.cap_xlog > 0 else 256
        m.xlog_kind = <uint8_t*> realloc(m.xlog_kind, cap * sizeof(uint8_t))
        m.xlog_job = <intp_t*> realloc(m.xlog_job, cap * sizeof(intp_t))
        m.xlog_time = <simtime_t*> realloc(m.xlog_time, cap * sizeof(simtime_t))
        m.xlog_procs = <procs_t*> realloc(m.xlog_procs, cap * sizeof(procs_t))
        m.xlog_est = <simtime_t*> realloc(m.xlog_est, cap * sizeof(simtime_t))
        if (m.xlog_kind == NULL or m.xlog_job == NULL or m.xlog_time == NULL
                or m.xlog_procs == NULL or m.xlog_est == NULL):
            with gil:
                raise MemoryError("expander log")
        m.cap_xlog = cap
    m.xlog_kind[m.n_xlog] = kind
    m.xlog_job[m.n_xlog] = j
    m.xlog_time[m.n_xlog] = t
    m.xlog_procs[m.n_xlog] = p
    m.xlog_est[m.n_xlog] = est
    m.n_xlog += 1
    return 0


cdef inline int request_expander(sched_t* s, mall_t* m, intp_t j, procs_t newp) except -1 nogil:
    """Slurm mode: queue an expander for running job j asking for ``newp - procs[j]``
    processors, as a rigid job submitted now by j's user (same queue/partition term),
    its estimate and request j's remaining expected time (at least 1 s).  It joins the
    queue tail (ordered at the next pass) and merges into j when it starts."""
    cdef intp_t e = m.exp_base + j
    cdef simtime_t rem = s.exp_end[j] - s.now
    if rem < 1:
        rem = 1
    m.parent[e] = j
    m.expander[j] = e
    s.submit[e] = s.now
    s.procs[e] = newp - s.procs[j]
    s.est[e] = rem
    s.request[e] = rem
    s.user[e] = s.user[j]
    s.qp[e] = s.qp[j]
    s.prio[e] = NAN
    s.key[e] = 0.0
    s.start[e] = -1
    s.resv_first[e] = -1
    s.resv_cur[e] = -1
    s.backfilled[e] = 0
    m.kind[e] = KIND_RIGID
    m.true_end[e] = -1
    s.wait[s.n_wait] = e
    s.n_wait += 1
    m.n_new_exp += 1
    log_expander(m, XLOG_REQUEST, j, s.now, s.procs[e], rem)
    return 0


cdef inline int cancel_expander(sched_t* s, mall_t* m, intp_t j) except -1 nogil:
    """Job j ends: its pending expander (if any) leaves the queue unstarted."""
    cdef intp_t e, q
    if m.expander == NULL or m.expander[j] < 0:
        return 0
    e = m.expander[j]
    for q in range(s.n_wait):
        if s.wait[q] == e:
            if q + 1 < s.n_wait:
                memmove(s.wait + q, s.wait + q + 1, (s.n_wait - q - 1) * sizeof(intp_t))
            s.n_wait -= 1
            if q < s.n_sorted:
                s.n_sorted -= 1
            break
    m.parent[e] = -1
    m.expander[j] = -1
    log_expander(m, XLOG_CANCEL, j, s.now, s.procs[e], s.est[e])
    return 0


cdef inline int mall_on_start(sched_t* s, mall_t* m, intp_t j) except -1 nogil:
    """Job j started at s.now at size s.procs[j]: set its work state, log the size and
    push its completion.  A started expander instead merges into its parent: its
    processors join the parent (a resize, paying the reconfiguration cost now)."""
    cdef double rate
    cdef intp_t par
    if m.parent != NULL and m.parent[j] >= 0:
        par = m.parent[j]
        run_remove(s, j)
        s.free += s.procs[j]
        m.parent[j] = -1
        m.expander[par] = -1
        log_expander(m, XLOG_MERGE, par, s.now, s.procs[j], s.est[j])
        resize(s, m, par, s.procs[par] + s.procs[j])
        return 0
    rate = speedup(m, j, s.procs[j])
    m.work[j] = <double> m.runtime[j] * speedup(m, j, m.p0[j])
    m.est0[j] = s.est[j]
    m.est_work[j] = <double> s.est[j] * rate
    m.req_work[j] = <double> s.request[j] * rate
    m.done[j] = 0.0
    m.upd[j] = s.now
    m.resume[j] = s.now
    m.size_since[j] = s.now
    m.next_point[j] = s.now + m.checkin
    m.true_end[j] = s.now + m.runtime[j]
    if s.procs[j] != m.p0[j]:          # a moldable job started at another size
        m.true_end[j] = s.now + work_time(m.work[j], rate)
        m.is_resized[j] = 1
    log_size(m, j, s.now, s.procs[j])
    if m.heap != NULL:
        heap_push(m.heap, m.true_end[j], j)
    return 0


cdef inline void advance(sched_t* s, mall_t* m, intp_t j) noexcept nogil:
    """Account job j's progress up to s.now (none while reconfiguring)."""
    cdef simtime_t begin = m.upd[j]
    if m.resume[j] > begin:
        begin = m.resume[j]
    if s.now > begin:
        m.done[j] += speedup(m, j, s.procs[j]) * <double> (s.now - begin)
    m.upd[j] = s.now


cdef inline void mall_on_end(sched_t* s, mall_t* m, intp_t j) noexcept nogil:
    """Job j completes at s.now: final work and processor-seconds."""
    advance(s, m, j)
    m.proc_sec[j] += <simtime_t> s.procs[j] * (s.now - m.size_since[j])
    m.size_since[j] = s.now


cdef inline int resize(sched_t* s, mall_t* m, intp_t j, procs_t newp) except -1 nogil:
    """Resize running job j to ``newp`` processors at s.now: progress so far is
    accounted, the job pays the reconfiguration cost (no progress), its completion and
    expected end are recomputed from the remaining work at the new rate, and it is
    re-keyed in the running set and the event heap (the old event goes stale)."""
    cdef procs_t old = s.procs[j]
    cdef procs_t moved = newp - old if newp > old else old - newp
    cdef simtime_t cost = 0
    cdef double rate, c
    cdef simtime_t base, e_est, e_req, since
    advance(s, m, j)
    if s.order == ORDER_MULTIFACTOR:
        # Fair-share usage is charged later at the current size from max(start, last
        # calculation); pre-pay the difference so the time before now counts at ``old``.
        since = s.start[j]
        if s.mf.calc_time > since:
            since = s.mf.calc_time
        s.accrued[s.user[j]] += <simtime_t> (old - newp) * (s.now - since)
    c = m.cost_fixed + m.cost_per_proc * <double> moved
    if c > 0.0:
        cost = <simtime_t> ceil(c - 1e-9)
    m.proc_sec[j] += <simtime_t> old * (s.now - m.size_since[j])
    m.size_since[j] = s.now
    s.free += old - newp
    s.procs[j] = newp
    base = m.resume[j] if m.resume[j] > s.now else s.now
    m.resume[j] = base + cost
    m.reconf_time[j] += cost
    if newp > old:
        m.n_expand[j] += 1
    else:
        m.n_shrink[j] += 1
    m.last_reconf[j] = s.now
    m.is_resized[j] = 1
    rate = speedup(m, j, newp)
    m.true_end[j] = m.resume[j] + work_time(m.work[j] - m.done[j], rate)
    if m.true_end[j] <= s.now:
        m.true_end[j] = s.now + 1
    run_remove(s, j)
    if m.is_scaled:
        e_est = m.resume[j] + work_time(m.est_work[j] - m.done[j], rate)
        e_req = m.resume[j] + work_time(m.req_work[j] - m.done[j], rate)
        s.est[j] = e_est - s.start[j]
        s.request[j] = e_req - s.start[j]
    run_insert(s, expected_end(s.start[j], s.est[j], s.request[j], s.now, s.is_incremental),
               j)
    log_size(m, j, s.now, newp)
    if m.heap != NULL:
        heap_push(m.heap, m.true_end[j], j)
    return 0


cdef inline bint at_point(sched_t* s, mall_t* m, intp_t j) noexcept nogil:
    """True if running malleable job j may be resized now (consumes a check-in point):
    not reconfiguring, not completing now, min interval elapsed, at a point."""
    if m.kind[j] != KIND_MALLEABLE or m.true_end[j] <= s.now or m.resume[j] > s.now:
        return False
    if m.last_reconf[j] >= 0 and s.now - m.last_reconf[j] < m.min_interval:
        return False
    if m.is_checkin:
        if s.now < m.next_point[j]:
            return False
        m.next_point[j] = s.start[j] + m.checkin * ((s.now - s.start[j]) // m.checkin + 1)
    return True


cdef inline procs_t allowed_size(const mall_t* m, intp_t j, procs_t p) noexcept nogil:
    """``p`` restricted to the job's sizes: a power of two at most p when is_pow2 (0 when
    that falls below min)."""
    if m.is_pow2:
        p = pow2_floor(p)
        if p < m.pmin[j]:
            return 0
    return p


cdef inline int start_waiting(sched_t* s, mall_t* m, intp_t q) except -1 nogil:
    """Start the waiting job at queue position q now (outside the pass): start it, take it
    out of the queue at once, flag it backfilled when a job ahead of it keeps waiting."""
    cdef intp_t j = s.wait[q]
    start_job(s, q)
    s.backfilled[j] = q > 0
    if q + 1 < s.n_wait:
        memmove(s.wait + q, s.wait + q + 1, (s.n_wait - q - 1) * sizeof(intp_t))
    s.n_wait -= 1
    s.n_sorted = s.n_wait
    mall_on_start(s, m, j)
    return 0


cdef inline procs_t min_waiting(const sched_t* s) noexcept nogil:
    """The smallest size in the queue (a huge value when empty)."""
    cdef procs_t best = 2147483647
    cdef intp_t q
    for q in range(s.n_wait):
        if s.procs[s.wait[q]] < best:
            best = s.procs[s.wait[q]]
    return best


# ---------------------------------------------------------------- decision model (issue 11)

cdef inline procs_t preferred_size(mall_t* m, intp_t j) noexcept nogil:
    """The largest allowed size p in [min, max] with parallel efficiency S(p) / p at least
    eff_threshold (min when none); computed once per job and kept in m.pref."""
    cdef procs_t p
    if m.pref[j] > 0:
        return m.pref[j]
    p = m.pmax[j]
    while p > m.pmin[j]:
        if allowed_size(m, j, p) == p and speedup(m, j, p) >= m.eff_threshold * <double> p - 1e-12:
            break
        p -= 1
    m.pref[j] = p
    return p


cdef inline procs_t start_size_of(mall_t* m, intp_t j) noexcept nogil:
    """The size flexible job j asks for in the queue under the start-size rule (full and
    fit: its trace size p0; min; preferred)."""
    cdef procs_t p
    if m.start_size == START_MIN:
        p = allowed_size(m, j, m.pmin[j])
        return p if p > 0 else m.p0[j]
    if m.start_size == START_PREFERRED:
        return preferred_size(m, j)
    return m.p0[j]


cdef inline void set_waiting_size(sched_t* s, mall_t* m, intp_t j, procs_t p) noexcept nogil:
    """Waiting job j asks for p processors from now on; with scaled estimates its estimate
    and request become the time its estimated work takes at p (from p0)."""
    cdef double r0, r
    if p == s.procs[j]:
        return
    if m.is_scaled:
        r0 = speedup(m, j, s.procs[j])
        r = speedup(m, j, p)
        s.est[j] = work_time(<double> s.est[j] * r0, r)
        s.request[j] = work_time(<double> s.request[j] * r0, r)
    s.procs[j] = p


cdef inline int mall_admit(sched_t* s, mall_t* m) noexcept nogil:
    """Before a pass: the flexible jobs queued since the last one (wait[n_sorted:]) ask for
    their start size (start_size min or preferred); others are left as they are."""
    cdef intp_t q, j
    if m.start_size != START_MIN and m.start_size != START_PREFERRED:
        return 0
    for q in range(s.n_sorted, s.n_wait):
        j = s.wait[q]
        if m.kind[j] != KIND_RIGID and s.start[j] < 0 and s.procs[j] == m.p0[j]:
            set_waiting_size(s, m, j, start_size_of(m, j))
    return 0


cdef inline double done_now(const sched_t* s, const mall_t* m, intp_t j) noexcept nogil:
    """Running job j's work done up to s.now (advance without writing)."""
    cdef simtime_t begin = m.upd[j]
    cdef double d = m.done[j]
    if m.resume[j] > begin:
        begin = m.resume[j]
    if s.now > begin:
        d += speedup(m, j, s.procs[j]) * <double> (s.now - begin)
    return d


cdef inline simtime_t cost_of(const mall_t* m, procs_t moved) noexcept nogil:
    """Seconds of a reconfiguration moving ``moved`` processors (rounded up)."""
    cdef double c = m.cost_fixed + m.cost_per_proc * <double> moved
    return <simtime_t> ceil(c - 1e-9) if c > 0.0 else 0


cdef inline simtime_t model_end(const sched_t* s, const mall_t* m, intp_t j,
                                procs_t newp) noexcept nogil:
    """The scheduler's model of running job j's completion if it holds ``newp`` from now
    (newp == its size: no resize, no cost): its remaining estimated work is what its
    current rate does from max(now, resume) to its expected end (the running-set key, so
    `plan` knows it too); progress resumes after the reconfiguration cost, then that work
    at S(newp).  Seconds."""
    cdef procs_t old = s.procs[j]
    cdef simtime_t base = m.resume[j] if m.resume[j] > s.now else s.now
    cdef double rest = 0.0
    if s.exp_end[j] > base:
        rest = speedup(m, j, old) * <double> (s.exp_end[j] - base)
    if newp != old:
        base += cost_of(m, newp - old if newp > old else old - newp)
    return base + work_time(rest, speedup(m, j, newp))


cdef inline simtime_t planned_end(const sched_t* s, const mall_t* m, intp_t j,
                                  procs_t newp) noexcept nogil:
    """Running job j's expected end (its running-set key) after a resize to ``newp`` now,
    as ``resize`` will set it."""
    cdef procs_t old = s.procs[j]
    cdef double d, rate
    cdef simtime_t res, e_est, e_req
    if not m.is_scaled:
        return expected_end(s.start[j], s.est[j], s.request[j], s.now, s.is_incremental)
    d = done_now(s, m, j)
    res = m.resume[j] if m.resume[j] > s.now else s.now
    res += cost_of(m, newp - old if newp > old else old - newp)
    rate = speedup(m, j, newp)
    e_est = res + work_time(m.est_work[j] - d, rate)
    e_req = res + work_time(m.req_work[j] - d, rate)
    return expected_end(s.start[j], e_est - s.start[j], e_req - s.start[j], s.now,
                        s.is_incremental)


cdef inline int scratch_reserve(mall_t* m, intp_t need) except -1 nogil:
    """Grow the reservation / decision scratch to hold ``need`` entries (ev: 3 need + 8)."""
    cdef intp_t cap
    if need <= m.cap_scratch:
        return 0
    cap = need if need > 2 * m.cap_scratch else 2 * m.cap_scratch
    if cap < 64:
        cap = 64
    m.pr_job = <intp_t*> realloc(m.pr_job, cap * sizeof(intp_t))
    m.pr_time = <simtime_t*> realloc(m.pr_time, cap * sizeof(simtime_t))
    m.pr_end = <simtime_t*> realloc(m.pr_end, cap * sizeof(simtime_t))
    m.mod_job = <intp_t*> realloc(m.mod_job, cap * sizeof(intp_t))
    m.mod_procs = <procs_t*> realloc(m.mod_procs, cap * sizeof(procs_t))
    m.mod_end = <simtime_t*> realloc(m.mod_end, cap * sizeof(simtime_t))
    m.ev = <mev_t*> realloc(m.ev, (3 * cap + 8) * sizeof(mev_t))
    if (m.pr_job == NULL or m.pr_time == NULL or m.pr_end == NULL or m.mod_job == NULL
            or m.mod_procs == NULL or m.mod_end == NULL or m.ev == NULL):
        with gil:
            raise MemoryError("reconfiguration scratch")
    m.cap_scratch = cap
    return 0


cdef inline simtime_t fit_time(const sched_t* s, procs_t need, procs_t* avail_out) noexcept nogil:
    """The earliest time ``need`` processors are free given the running set's expected
    ends (EASY's shadow time); *avail_out: processors free then (every release at that
    time counted)."""
    cdef procs_t avail = s.free
    cdef intp_t k = 0
    cdef simtime_t t
    if avail >= need:
        avail_out[0] = avail
        return s.now
    while k < s.n_run:
        avail += s.procs[s.run[k].id]
        if avail >= need:
            break
        k += 1
    if k >= s.n_run:
        avail_out[0] = avail
        return -1
    t = s.run[k].end
    k += 1
    while k < s.n_run and s.run[k].end == t:
        avail += s.procs[s.run[k].id]
        k += 1
    avail_out[0] = avail
    return t


cdef inline int resv_collect(sched_t* s, mall_t* m) except -1 nogil:
    """The reservations the next decision must not move later (docs/malleability.md
    "Reservation safety"): none / EASY: the queue head's, at its shadow time (kept as the
    processors free then, easy_avail); conservative: every waiting job's planned start of
    this pass; slurm: the first bf_max_job_test waiting jobs, in queue order, holding a
    planned start at or after now.  Each holds its size from its start for its estimate."""
    cdef intp_t q, j, n = 0
    cdef simtime_t hold
    m.is_pr_stale = False
    m.n_pr = 0
    m.easy_avail_at = -1
    if s.n_wait == 0:
        return 0
    scratch_reserve(m, s.n_wait + 2)
    if s.backfill != BACKFILL_CONSERVATIVE and s.backfill != BACKFILL_SLURM:
        j = s.wait[0]
        m.pr_job[0] = j
        m.easy_avail_at = fit_time(s, s.procs[j], &m.easy_avail)
        m.n_pr = 1
        return 0
    for q in range(s.n_wait):
        j = s.wait[q]
        if s.resv_cur[j] < s.now:
            continue
        hold = s.est[j] if s.est[j] > 0 else 1
        m.pr_job[n] = j
        m.pr_time[n] = s.resv_cur[j]
        m.pr_end[n] = s.resv_cur[j] + hold
        n += 1
        if s.backfill == BACKFILL_SLURM and n >= s.bf_max_job_test:
            break
    m.n_pr = n
    return 0


cdef inline int _mev_cmp(const void* a, const void* b) noexcept nogil:
    cdef const mev_t* x = <const mev_t*> a
    cdef const mev_t* y = <const mev_t*> b
    if x.time != y.time:
        return -1 if x.time < y.time else 1
    return 0


cdef inline simtime_t _release_at(const sched_t* s, simtime_t end) noexcept nogil:
    """When the profile of the pass frees a running job's processors (slurm rounding up:
    its expected end on the bf_resolution grid)."""
    if s.backfill == BACKFILL_SLURM and not s.is_bf_round_down:
        return align_up(end, s.bf_resolution)
    return end


cdef inline int _mod_index(const mall_t* m, intp_t j) noexcept nogil:
    cdef intp_t k
    for k in range(m.n_mod):
        if m.mod_job[k] == j:
            return <int> k
    return -1


cdef inline bint resv_safe(sched_t* s, mall_t* m) except -1 nogil:
    """Whether the decision in m.mod_* (jobs resized to, or started now at, mod_procs with
    expected end mod_end) keeps every protected reservation (resv_collect): no instant at
    which the free count falls below zero where the decision lowered it.  A protected job
    started by the decision gives up its reservation (it starts now, not later).  EASY /
    none: the head still finds its processors free at its shadow time, O(changes)."""
    cdef intp_t k, j, n_ev, q, jr
    cdef procs_t avail, f_new, f_old
    cdef simtime_t t
    if m.is_pr_stale:
        resv_collect(s, m)
    if m.n_pr == 0:
        return True
    if s.backfill != BACKFILL_CONSERVATIVE and s.backfill != BACKFILL_SLURM:
        t = m.easy_avail_at
        if t < 0 or _mod_index(m, m.pr_job[0]) >= 0:
            return True                 # no shadow, or the head itself starts now
        avail = m.easy_avail
        for k in range(m.n_mod):
            j = m.mod_job[k]
            if s.start[j] >= 0 and s.exp_end[j] > t:     # a running job: its old hold
                avail += s.procs[j]
            if m.mod_end[k] > t:
                avail -= m.mod_procs[k]
        return avail >= s.procs[m.pr_job[0]] or avail >= m.easy_avail
    # conservative / slurm: sweep the running set and the protected reservations
    scratch_reserve(m, s.n_run + m.n_pr + m.n_mod + 2)
    n_ev = 0
    f_new = s.free
    f_old = s.free
    for q in range(s.n_run):
        j = s.run[q].id
        k = _mod_index(m, j)
        m.ev[n_ev].time = _release_at(s, s.run[q].end)
        m.ev[n_ev].d_old = s.procs[j]
        m.ev[n_ev].d_new = s.procs[j] if k < 0 else 0
        n_ev += 1
        if k >= 0:
            f_new += s.procs[j]
    for k in range(m.n_mod):
        f_new -= m.mod_procs[k]
        m.ev[n_ev].time = _release_at(s, m.mod_end[k])
        m.ev[n_ev].d_old = 0
        m.ev[n_ev].d_new = m.mod_procs[k]
        n_ev += 1
    for q in range(m.n_pr):
        jr = m.pr_job[q]
        if _mod_index(m, jr) >= 0:
            continue
        m.ev[n_ev].time = m.pr_time[q]
        m.ev[n_ev].d_old = -s.procs[jr]
        m.ev[n_ev].d_new = -s.procs[jr]
        m.ev[n_ev + 1].time = m.pr_end[q]
        m.ev[n_ev + 1].d_old = s.procs[jr]
        m.ev[n_ev + 1].d_new = s.procs[jr]
        n_ev += 2
    if f_new < 0 and f_new < f_old:
        return False
    qsort(m.ev, n_ev, sizeof(mev_t), _mev_cmp)
    q = 0
    while q < n_ev:
        t = m.ev[q].time
        while q < n_ev and m.ev[q].time == t:
            f_new += m.ev[q].d_new
            f_old += m.ev[q].d_old
            q += 1
        if f_new < 0 and f_new < f_old:
            return False
    return True


# ---------------------------------------------------------------- the policies

cdef inline int _set_mod(mall_t* m, intp_t k, intp_t j, procs_t p, simtime_t end) noexcept nogil:
    m.mod_job[k] = j
    m.mod_procs[k] = p
    m.mod_end[k] = end
    return 0


cdef inline simtime_t start_end(const sched_t* s, const mall_t* m, intp_t j,
                                procs_t p) noexcept nogil:
    """Waiting job j's expected end if it starts now at p (estimate scaled from its
    queue size when estimates scale)."""
    cdef simtime_t est = s.est[j]
    cdef simtime_t req = s.request[j]
    cdef double r0, r
    if p != s.procs[j] and m.is_scaled:
        r0 = speedup(m, j, s.procs[j])
        r = speedup(m, j, p)
        est = work_time(<double> est * r0, r)
        req = work_time(<double> req * r0, r)
    return expected_end(s.now, est, req, s.now, s.is_incremental)


cdef inline bint start_gains(const sched_t* s, const mall_t* m, intp_t w) noexcept nogil:
    """Starting waiting job w now (by shrinking another) brings its completion forward by
    more than min_gain: it could not start before its fit time otherwise."""
    cdef procs_t avail
    cdef simtime_t t
    if m.min_gain <= 0:
        return True
    t = fit_time(s, s.procs[w], &avail)
    return t < 0 or t - s.now > m.min_gain


cdef inline bint try_shrink_start(sched_t* s, mall_t* m, intp_t j, procs_t newp,
                                  intp_t q) except -1 nogil:
    """Shrink running job j to newp and start the waiting job at queue position q, if
    that pays (start_gains) and keeps every protected reservation (resv_safe)."""
    cdef intp_t w = s.wait[q]
    cdef simtime_t e
    if not start_gains(s, m, w):
        return False
    if m.is_pr_stale:
        resv_collect(s, m)
    # EASY / none: a shrunk job holding processors past the shadow time still does after
    # the shrink (its expected end only moves later), so its exact new end is not needed
    if (m.easy_avail_at >= 0 and s.exp_end[j] > m.easy_avail_at
            and s.backfill != BACKFILL_CONSERVATIVE and s.backfill != BACKFILL_SLURM):
        e = s.exp_end[j]
    else:
        e = planned_end(s, m, j, newp)
    _set_mod(m, 0, j, newp, e)
    _set_mod(m, 1, w, s.procs[w], expected_end(s.now, s.est[w], s.request[w], s.now,
                                               s.is_incremental))
    m.n_mod = 2
    if not resv_safe(s, m):
        return False
    resize(s, m, j, newp)
    start_waiting(s, m, q)
    m.is_pr_stale = True
    return True


cdef inline bint expand_pays(sched_t* s, mall_t* m, intp_t j, procs_t newp) except -1 nogil:
    """Growing running job j to newp brings its modelled completion (model_end: estimate,
    speedup model, reconfiguration cost) forward by more than min_gain, and (in place)
    keeps every protected reservation."""
    if model_end(s, m, j, s.procs[j]) - model_end(s, m, j, newp) <= m.min_gain:
        return False
    if m.is_slurm:
        return True         # the expander queues: the pass plans it like any job
    _set_mod(m, 0, j, newp, planned_end(s, m, j, newp))
    m.n_mod = 1
    return resv_safe(s, m)


cdef inline int resize_pass(sched_t* s, mall_t* m, bint is_eff) except -1 nogil:
    """dmr (Iserte et al.; ``is_eff`` False) and efficiency (True).  Each running
    malleable job at a reconfiguration point, in (expected end, start, index) order:
    shrink it (not below its floor: min, efficiency: max(min, preferred)) when that lets a
    waiting job start, by the smallest amount that starts the highest-priority such job
    whose start pays and keeps the protected reservations, and start that job; else
    expand it (not above its cap: max; efficiency: preferred while jobs wait) into free
    processors when no waiting job fits in them and the expansion pays and keeps the
    reservations (slurm mode: request an expander for them, processors already asked for
    by this pass's expanders not counted as free; none while the job has one pending);
    else leave it."""
    cdef intp_t n = s.n_run
    cdef intp_t k, q, j, w
    cdef procs_t need, newp, small, avail, floor, cap, pref
    cdef procs_t promised = 0     # slurm mode: free processors asked for by expanders
    cdef bint is_done
    cdef intp_t i
    for k in range(n):      # running-set order, equal ends by (start, index): plan sees the same
        j = s.run[k].id
        i = k
        while i > 0 and s.run[k].end == s.exp_end[m.cand[i - 1]] and s.start[m.cand[i - 1]] > s.start[j]:
            m.cand[i] = m.cand[i - 1]
            i -= 1
        m.cand[i] = j
    small = min_waiting(s)
    for k in range(n):
        j = m.cand[k]
        if not at_point(s, m, j):
            continue
        floor = m.pmin[j]
        cap = m.pmax[j]
        if is_eff:
            pref = preferred_size(m, j)
            if pref > floor:
                floor = pref
            if s.n_wait > 0 and pref < cap:
                cap = pref
        is_done = False
        # no waiting job small enough to start by this shrink: skip the queue scan
        for q in range(s.n_wait if small - s.free <= s.procs[j] - floor else 0):
            w = s.wait[q]
            need = s.procs[w] - s.free
            if need <= 0 or need > s.procs[j] - floor:
                continue
            newp = allowed_size(m, j, s.procs[j] - need)
            if newp == 0 or newp < floor:
                continue
            if try_shrink_start(s, m, j, newp, q):
                small = min_waiting(s)
                is_done = True
                break
        avail = s.free - promised
        if is_done or s.procs[j] >= cap or avail <= 0 or s.free >= small:
            continue
        newp = s.procs[j] + avail
        if newp > cap:
            newp = cap
        newp = allowed_size(m, j, newp)
        if newp > s.procs[j] and (not m.is_slurm or m.expander[j] < 0) \
                and expand_pays(s, m, j, newp):
            if not m.is_slurm:
                resize(s, m, j, newp)
                m.is_pr_stale = True
            else:
                request_expander(s, m, j, newp)
                promised += newp - s.procs[j]
    return 0


cdef inline int head_unblock_pass(sched_t* s, mall_t* m) except -1 nogil:
    """While the queue head does not fit: shrink running malleable jobs at their
    reconfiguration points, lowest priority first, taken as the most recently started
    first (then the largest index: the running jobs' queue keys are not plan's input),
    each to its min, the last only as far as needed, when together that frees enough to
    start the head now, its start pays and the protected reservations keep; start it.
    Otherwise leave everything."""
    cdef intp_t n, k, i, j, head, n_mod
    cdef procs_t need, give, newp
    cdef procs_t total_give
    while s.n_wait > 0:
        head = s.wait[0]
        need = s.procs[head] - s.free
        if need <= 0:
            break
        n = 0
        for k in range(s.n_run):
            j = s.run[k].id
            if (m.kind[j] == KIND_MALLEABLE and m.true_end[j] > s.now
                    and m.resume[j] <= s.now and s.procs[j] > m.pmin[j]
                    and (m.last_reconf[j] < 0 or s.now - m.last_reconf[j] >= m.min_interval)
                    and (not m.is_checkin or s.now >= m.next_point[j])):
                i = n
                while i > 0 and (s.start[m.cand[i - 1]] < s.start[j] or (
                        s.start[m.cand[i - 1]] == s.start[j] and m.cand[i - 1] < j)):
                    m.cand[i] = m.cand[i - 1]
                    i -= 1
                m.cand[i] = j
                n += 1
        total_give = 0
        for k in range(n):
            j = m.cand[k]
            newp = allowed_size(m, j, m.pmin[j])
            if newp == 0:
                newp = s.procs[j]
            total_give += s.procs[j] - newp
        if total_give < need or not start_gains(s, m, head):
            break
        n_mod = 0
        for k in range(n):
            if need <= 0:
                break
            j = m.cand[k]
            give = s.procs[j] - m.pmin[j]
            if give > need:
                give = need
            newp = allowed_size(m, j, s.procs[j] - give)
            if newp == 0 or newp >= s.procs[j]:
                continue
            need -= s.procs[j] - newp
            _set_mod(m, n_mod, j, newp, planned_end(s, m, j, newp))
            n_mod += 1
        if need > 0:
            break
        _set_mod(m, n_mod, head, s.procs[head],
                 expected_end(s.now, s.est[head], s.request[head], s.now,
                              s.is_incremental))
        m.n_mod = n_mod + 1
        if not resv_safe(s, m):
            break
        for k in range(n_mod):
            at_point(s, m, m.mod_job[k])
            resize(s, m, m.mod_job[k], m.mod_procs[k])
        start_waiting(s, m, 0)
        m.is_pr_stale = True
    return 0


cdef inline int moldable_pass(sched_t* s, mall_t* m) except -1 nogil:
    """Moldable start: while the queue head is a moldable job that does not fit at its
    trace size, pick the size in [min, max] with the earliest expected completion given
    the running jobs' expected ends (start when that many processors are free, plus its
    estimated work at that size; ties: the smaller size); if that size fits now and
    starting it keeps the protected reservations, start the head at it, else leave it
    waiting."""
    cdef intp_t j, k
    cdef procs_t p, best_p, avail
    cdef simtime_t when, done_at, best_done
    cdef double ework
    while s.n_wait > 0:
        j = s.wait[0]
        if m.kind[j] != KIND_MOLDABLE or s.procs[j] <= s.free:
            return 0
        # its estimated work: scaled estimates were converted at the size it asks for
        # (start size min / preferred), fixed ones stay the estimate at p0
        ework = <double> s.est[j] * speedup(m, j, s.procs[j] if m.is_scaled else m.p0[j])
        best_p = 0
        best_done = 0
        p = m.pmin[j]
        while p <= m.pmax[j]:
            if allowed_size(m, j, p) == p:
                avail = s.free
                when = s.now
                k = 0
                while avail < p and k < s.n_run:
                    avail += s.procs[s.run[k].id]
                    when = s.run[k].end
                    k += 1
                if avail >= p:
                    done_at = when + work_time(ework, speedup(m, j, p))
                    if best_p == 0 or done_at < best_done:
                        best_p = p
                        best_done = done_at
            p += 1
        if best_p == 0 or best_p > s.free:
            return 0
        _set_mod(m, 0, j, best_p, start_end(s, m, j, best_p))
        m.n_mod = 1
        if not resv_safe(s, m):
            return 0
        set_waiting_size(s, m, j, best_p)
        start_waiting(s, m, 0)
        m.is_pr_stale = True
    return 0


cdef inline int fit_pass(sched_t* s, mall_t* m) except -1 nogil:
    """Start size ``fit``: each waiting flexible job in queue order that the pass left
    waiting starts now at the largest allowed size in [min, max] that is free now and
    keeps the protected reservations (tried from the largest down), if there is one."""
    cdef intp_t q = 0
    cdef intp_t w
    cdef procs_t p
    cdef bint is_started
    while q < s.n_wait and s.free > 0:
        w = s.wait[q]
        is_started = False
        if m.kind[w] != KIND_RIGID and s.free >= m.pmin[w]:
            p = s.free if s.free < m.pmax[w] else m.pmax[w]
            while p >= m.pmin[w]:
                if allowed_size(m, w, p) == p:
                    _set_mod(m, 0, w, p, start_end(s, m, w, p))
                    m.n_mod = 1
                    if resv_safe(s, m):
                        set_waiting_size(s, m, w, p)
                        start_waiting(s, m, q)
                        m.is_pr_stale = True
                        is_started = True
                        break
                p -= 1
        if not is_started:
            q += 1
    return 0


cdef inline int malleable_phase(sched_t* s, mall_t* m) except -1 nogil:
    """After a planning pass (the queue is compacted): collect the reservations to
    protect, then the fit start (start_size fit), the moldable start (when on) and the
    reconfiguration policy."""
    if m.policy == MPOL_NONE and not m.is_moldable_start and m.start_size != START_FIT:
        return 0
    scratch_reserve(m, s.n_run + s.n_wait + 4)
    m.is_pr_stale = True            # collected when a decision is first checked
    if m.start_size == START_FIT:
        fit_pass(s, m)
    if m.is_moldable_start:
        moldable_pass(s, m)
    if m.policy == MPOL_DMR:
        resize_pass(s, m, False)
    elif m.policy == MPOL_EFFICIENCY:
        resize_pass(s, m, True)
    elif m.policy == MPOL_HEAD_UNBLOCK:
        head_unblock_pass(s, m)
    return 0
