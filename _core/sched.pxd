# The scheduler state one planning pass works on, shared by the event loops and `plan`.
#
# Header-only (`cdef inline`).  The job table (jobs.pxi) owns the arrays the pointers
# below point at and wires them (JobTable.wire).  Per-job columns are indexed by job
# index (the trace index in the loop, running rows then pending rows in `plan`); the running set is a C array
# sorted by (expected end, index); the waiting queue is an array of job indices in queue
# order.  No Python object per job or per event.
from libc.stdlib cimport malloc, free as c_free, qsort
from libc.string cimport memmove, memcpy
from libc.stdint cimport int32_t, uint8_t

from _types cimport (simtime_t, procs_t, intp_t, ORDER_MULTIFACTOR, ESTIMATE_PREDICT,
                     ESTIMATE_LEARNED, BACKFILL_NONE, BACKFILL_EASY, BACKFILL_SLURM, BFORDER_SJF,
                     BACKFILL_CONSERVATIVE,
                     BF_ROUNDING_DOWN, PREDICT_COLD_REQUEST, CORRECTION_INCREMENTAL,
                     SIZE_FAVOR_SMALL, PREDICT_AT_SUBMIT)
from learn cimport learn_t, learn_predict, learn_observe, learn_on_start
from priority cimport (mf_t, order_key, unicep_key, unicep_size, order_is_time_dependent,
                       order_uses_estimate, keys_t, key_at,
                       mf_needs_calc, mf_recalc_usage, mf_fairshare, mf_priority)
from profile cimport profile_t, profile_init, profile_release
from holders cimport holders_t, holders_release


cdef struct run_t:
    simtime_t end     # expected end (seconds) under the extension rule, as of the last pass
    intp_t id         # job index (tie-breaker)


cdef struct qent_t:
    double key        # queue key (smaller first)
    simtime_t submit  # first tie-breaker (seconds)
    intp_t id         # last tie-breaker


cdef struct rent_t:
    simtime_t resv    # previous reservation (seconds), INT64_MAX when none
    intp_t pos        # queue position (tie-breaker)


cdef struct sched_t:
    simtime_t now             # the pass time (seconds)
    procs_t total             # processors in the machine
    procs_t free              # processors free now
    int order                 # ORDER_* code
    int backfill              # BACKFILL_* code
    int estimate              # ESTIMATE_* code
    intp_t bf_max_job_test    # slurm: reservations per pass (K)
    simtime_t bf_window       # slurm: reservation horizon (seconds)
    simtime_t bf_resolution   # slurm: reservation grid and rounding of expected ends (seconds)
    bint is_bf_round_down     # slurm: exact expected ends, reservations held from the grid below
    intp_t predict_runs       # predict: completed runs averaged (K, 1..MAX_PREDICT_RUNS)
    bint is_cold_request      # predict: fewer than K completed runs -> the request
    bint is_incremental       # overdue running jobs: Tsafrir's increments (else the request)
    bint is_predict_at_submit # predict: a waiting job's estimate is fixed after its submit time
    learn_t* learn            # learned estimates: the online model, NULL otherwise
    int bf_order              # BFORDER_* code: order of the backfill candidates behind the head
    mf_t mf                   # multifactor weights and last calculation time
    # per-job columns (length n_jobs)
    intp_t n_jobs             # jobs in the columns
    simtime_t* submit         # submit time (seconds)
    simtime_t* request        # requested time (seconds)
    procs_t* procs            # size (processors)
    int32_t* user             # dense user code in 0..n_users-1
    double* qp                # multifactor queue + partition term
    simtime_t* est            # planning estimate: current while waiting, frozen at start
    double* key               # queue key (multifactor: minus the priority)
    double* prio              # multifactor priority (NaN: not computed yet)
    simtime_t* start          # start time, -1 while waiting
    simtime_t* exp_end        # running: its key in the running set (expected end, seconds)
    simtime_t* resv_first     # first planned start given, -1 if none
    simtime_t* resv_cur       # planned start from the latest pass, -1 if none
    uint8_t* backfilled       # 1 if started while a job ahead in queue order waited
    # per-user columns (length n_users)
    intp_t n_users            # distinct users
    intp_t n_seen             # users with an arrived job (multifactor shares 1 / n_seen)
    double* usage             # decayed usage (processor-seconds) at the last calculation
    simtime_t* accrued        # processor-seconds completed since the last calculation
    double* fs                # the user's fair-share factor at the calculation of fs_calc[u]
    simtime_t* fs_calc        # that calculation's time (mf.calc_time, seconds), -2 none
    simtime_t* hist_sum       # predict: sum of the last min(hist_n, K) runtimes (seconds)
    int32_t* hist_n           # predict: completed runs recorded
    simtime_t* hist_ring      # predict: per user K slots, run number c in slot c % K (seconds)
    uint8_t* is_seen          # 1 once the user had an arrived job
    # running set, sorted by (end, id)
    run_t* run                # capacity n_jobs
    intp_t n_run              # running jobs
    run_t* run_tmp            # scratch for re-keying overdue jobs
    # waiting queue
    intp_t* wait              # job indices; wait[:n_sorted] is in queue order
    intp_t n_wait             # waiting jobs
    intp_t n_sorted           # queue-ordered prefix; the rest arrived since the last pass
    qent_t* qtmp              # scratch for sorting the queue
    qent_t* qtmp2             # merge buffer for that sort
    intp_t* runs              # run boundaries for that sort (n_jobs + 1)
    rent_t* rtmp              # scratch for the conservative re-plan and SJBF candidate orders
    # conservative: the last re-plan's order (job indices), from which the next one is
    # built, so that its sort finds long runs (backfill.replan_order); NULL otherwise
    intp_t* rprev             # job indices in the order the last re-plan visited them
    intp_t n_rprev            # entries in rprev
    intp_t* rqpos             # per job: queue position while building (-1, -2: see there)
    # SJBF candidate order (easy, slurm with bf_order SJF; else bfo is NULL): the waiting
    # jobs by (estimate, queue order), kept across passes (backfill.bfo_prepare)
    intp_t* bfo               # job indices; bfo[:n_bfo_sorted] in that order, then arrivals
    intp_t n_bfo              # jobs in bfo
    intp_t n_bfo_sorted       # ordered prefix
    bint is_bfo_dirty         # estimates or keys changed: re-sort bfo before the pass
    # output of a pass
    intp_t* started           # jobs started by the last pass, in start order
    intp_t* started_pos       # their queue positions in that pass
    intp_t* started_tmp       # scratch of the pass function (passes.pxd)
    intp_t n_started          # how many
    profile_t prof            # availability profile (conservative, slurm)
    # conservative, kept profile (backfill.pxd, issue 16): set by loop.simulate only
    bint is_keep_profile      # the entrance reports completions (backfill.kept_release)
    bint is_prof_kept         # prof = running set + every reservation of the last pass,
                              # hold = every waiting job with one (holders.pxd)
    holders_t hold            # the waiting holders in re-plan order (holders.pxd)
    # slurm, resumed pass (backfill.pxd, issue 16): set by loop.simulate only
    bint is_slurm_resume      # the entrance allows resuming the last slurm pass
    # wfp3 and unicep under none, and under EASY with no processor free, order only the
    # queue's front (sched.queue_prepare, queue_select_next): set by loop.simulate only
    bint is_head_only         # the entrance allows ordering the front on demand
    # wfp3 and unicep under conservative with a kept profile: the queue is never sorted;
    # the re-plan order breaks ties by the queue entries and drop_started finds the
    # backfilled flags without positions (backfill.pxd); no key is stored, every reader
    # computes the one it compares (sched_key, sched_keys): set by loop.simulate only
    bint is_queue_unsorted
    double* unicep_sizes      # unicep in the event loop: each job's size term of its key
                              # (priority.unicep_size), computed once; NULL otherwise
    intp_t n_front            # wait[:n_front] are the first jobs in queue order, in order,
                              # the rest unordered until queue_select_next
    simtime_t prepared_at     # seconds; the last queue_prepare's time (0 before the first)
    bint sr_valid             # the last pass was a slurm pass whose walk started nothing
    simtime_t sr_now          # its time (seconds)
    procs_t sr_free           # free processors after it
    intp_t sr_n_run           # running jobs after it
    intp_t sr_n_wait          # waiting jobs after it
    intp_t sr_head_job        # wait[0] after it
    intp_t sr_last_job        # wait[n_wait - 1] after it
    intp_t sr_next            # where its walk stopped (candidates from the head visited)
    intp_t sr_reserved        # reservations its walk made
    intp_t sr_first           # jobs its first walk started (before the profile was built)
    simtime_t sr_min_when     # earliest answer of its earliest-fit searches (seconds)
    simtime_t sr_min_rej      # earliest answer or lower bound it refused for bf_window


cdef inline simtime_t expected_end(simtime_t start, simtime_t est, simtime_t request,
                                   simtime_t now, bint is_incremental=False) noexcept nogil:
    """start + est; when that is <= now while running: (incremental) the first
    start + est + increments[k], k = 0..10, that is > now, as long as est + increments[k]
    stays below the request; then start + request; then now + 1."""
    # Tsafrir, Etsion and Feitelson 2007: 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h,
    # 10 h, 20 h, 50 h, 100 h (seconds), each added to the prediction in place of the one
    # before (the SC 2015 authors' simulator); docs/scheduling-semantics.md
    cdef simtime_t[11] increments = [60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000,
                                     180000, 360000]
    cdef simtime_t e = start + est
    cdef int k
    if e > now:
        return e
    if is_incremental:
        for k in range(11):
            if est + increments[k] >= request:
                break
            if start + est + increments[k] > now:
                return start + est + increments[k]
    e = start + request
    if e > now:
        return e
    return now + 1


cdef inline bint run_before(simtime_t end_a, intp_t id_a, simtime_t end_b, intp_t id_b) noexcept nogil:
    """(expected end, index) order of the running set."""
    return end_a < end_b or (end_a == end_b and id_a < id_b)


cdef inline void run_insert(sched_t* s, simtime_t end, intp_t id) noexcept nogil:
    """Insert into the running set at its sorted place (binary search + memmove)."""
    cdef intp_t lo = 0
    cdef intp_t hi = s.n_run
    cdef intp_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_before(s.run[mid].end, s.run[mid].id, end, id):
            lo = mid + 1
        else:
            hi = mid
    if lo < s.n_run:
        memmove(s.run + lo + 1, s.run + lo, (s.n_run - lo) * sizeof(run_t))
    s.run[lo].end = end
    s.run[lo].id = id
    s.exp_end[id] = end
    s.n_run += 1


cdef inline void run_remove(sched_t* s, intp_t id) noexcept nogil:
    """Remove a running job: binary search on its (expected end, index), then memmove."""
    cdef intp_t lo = 0
    cdef intp_t hi = s.n_run
    cdef intp_t mid
    cdef intp_t k
    cdef simtime_t end = s.exp_end[id]
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_before(s.run[mid].end, s.run[mid].id, end, id):
            lo = mid + 1
        else:
            hi = mid
    k = lo
    if k < s.n_run and s.run[k].id == id:
        memmove(s.run + k, s.run + k + 1, (s.n_run - k - 1) * sizeof(run_t))
        s.n_run -= 1


cdef inline void run_rekey(sched_t* s) noexcept nogil:
    """Apply the extension rule at ``now``: overdue jobs (expected end <= now) form a
    prefix of the running set; give them their extended end and put them back in order."""
    cdef intp_t k = 0
    cdef intp_t i, j
    while k < s.n_run and s.run[k].end <= s.now:
        k += 1
    if k == 0:
        return
    for i in range(k):
        s.run_tmp[i] = s.run[i]
    memmove(s.run, s.run + k, (s.n_run - k) * sizeof(run_t))
    s.n_run -= k
    for i in range(k):
        j = s.run_tmp[i].id
        run_insert(s, expected_end(s.start[j], s.est[j], s.request[j], s.now,
                                   s.is_incremental), j)


cdef inline void start_job(sched_t* s, intp_t q) noexcept nogil:
    """Start the waiting job at queue position q now: take its processors, add it to the
    running set (it leaves the queue at the end of the pass)."""
    cdef intp_t j = s.wait[q]
    s.start[j] = s.now
    s.free -= s.procs[j]
    run_insert(s, expected_end(s.now, s.est[j], s.request[j], s.now, s.is_incremental), j)
    if s.learn != NULL:
        learn_on_start(s.learn, s.user[j], s.procs[j], s.now, 1)
    s.started[s.n_started] = j
    s.started_pos[s.n_started] = q
    s.n_started += 1


cdef inline simtime_t predict_estimate(const sched_t* s, intp_t j) noexcept nogil:
    """Tsafrir et al. 2007: the mean (floor) of the user's last K = predict_runs completed
    runtimes; with c < K runs: the mean of those c (none: the request), or the request
    (is_cold_request); capped at the request."""
    cdef int32_t u = s.user[j]
    cdef simtime_t p
    cdef int32_t c = s.hist_n[u]
    if c == 0 or (c < s.predict_runs and s.is_cold_request):
        p = s.request[j]
    elif c < s.predict_runs:
        p = s.hist_sum[u] // c
    else:
        p = s.hist_sum[u] // s.predict_runs
    return p if p < s.request[j] else s.request[j]


cdef inline void record_runtime(sched_t* s, int32_t u, simtime_t runtime) noexcept nogil:
    """Predict mode: push a completed runtime into the user's last-K window (its slot in
    the ring drops the run K completions back from the window's sum)."""
    cdef intp_t k = s.predict_runs
    cdef simtime_t* slot = &s.hist_ring[<intp_t> u * k + s.hist_n[u] % k]
    if s.hist_n[u] >= k:
        s.hist_sum[u] -= slot[0]
    slot[0] = runtime
    s.hist_sum[u] += runtime
    s.hist_n[u] += 1


cdef inline void release_job(sched_t* s, intp_t j, simtime_t runtime) noexcept nogil:
    """Job j ends at s.now after ``runtime`` seconds: free its processors, take it out of
    the running set, record its runtime (predict) and its usage (multifactor)."""
    cdef simtime_t since
    s.free += s.procs[j]
    run_remove(s, j)
    if s.estimate == ESTIMATE_PREDICT:
        record_runtime(s, s.user[j], runtime)
    elif s.learn != NULL:
        learn_on_start(s.learn, s.user[j], s.procs[j], s.start[j], -1)
        learn_observe(s.learn, j, s.user[j], s.procs[j], runtime, s.now)
    if s.order == ORDER_MULTIFACTOR:
        since = s.start[j]
        if s.mf.calc_time > since:
            since = s.mf.calc_time
        s.accrued[s.user[j]] += <simtime_t> s.procs[j] * (s.now - since)


cdef inline intp_t admit_arrivals(sched_t* s, intp_t i, intp_t n) noexcept nogil:
    """Queue the jobs i, i+1, ... (of n, in submit order) that submit at s.now, marking
    their users seen (fair share counts users seen so far); returns the next job index."""
    while i < n and s.submit[i] == s.now:
        if s.learn != NULL:     # learned: predicted once, at submission, from finished jobs
            s.est[i] = learn_predict(s.learn, i, s.user[i], s.procs[i], s.request[i], s.now)
        s.wait[s.n_wait] = i
        s.n_wait += 1
        if s.bfo != NULL:
            s.bfo[s.n_bfo] = i
            s.n_bfo += 1
        if not s.is_seen[s.user[i]]:
            s.is_seen[s.user[i]] = 1
            s.n_seen += 1
        i += 1
    return i


cdef inline void accrue_running(sched_t* s) noexcept nogil:
    """Multifactor: add procs x seconds run since the last calculation (or since start)
    by every running job to its user's accrued usage."""
    cdef intp_t k, j
    cdef simtime_t since
    for k in range(s.n_run):
        j = s.run[k].id
        since = s.start[j]
        if s.mf.calc_time > since:
            since = s.mf.calc_time
        s.accrued[s.user[j]] += <simtime_t> s.procs[j] * (s.now - since)


cdef inline bint qent_before(const qent_t* a, const qent_t* b) noexcept nogil:
    """Queue order: key, then submit, then index."""
    if a.key != b.key:
        return a.key < b.key
    if a.submit != b.submit:
        return a.submit < b.submit
    return a.id < b.id


cdef inline void _qent_merge(const qent_t* src, qent_t* dst, intp_t lo, intp_t mid,
                             intp_t hi) noexcept nogil:
    """Merge the sorted runs src[lo:mid] and src[mid:hi] into dst[lo:hi]."""
    cdef intp_t i = lo
    cdef intp_t j = mid
    cdef intp_t k = lo
    while i < mid and j < hi:
        if qent_before(&src[j], &src[i]):
            dst[k] = src[j]
            j += 1
        else:
            dst[k] = src[i]
            i += 1
        k += 1
    if i < mid:
        memcpy(dst + k, src + i, (mid - i) * sizeof(qent_t))
    elif j < hi:
        memcpy(dst + k, src + j, (hi - j) * sizeof(qent_t))


cdef inline void qent_sort(qent_t* a, qent_t* tmp, intp_t* runs, intp_t n) noexcept nogil:
    """Natural merge sort by (key, submit, index): O(n) on an already ordered queue (the
    previous pass's order is the input), O(n log n) at worst.  ``tmp`` holds n entries,
    ``runs`` n + 1 indices."""
    cdef intp_t i, k, r, nr
    cdef qent_t* src = a
    cdef qent_t* dst = tmp
    cdef qent_t* swap
    if n < 2:
        return
    r = 0
    runs[0] = 0
    for i in range(1, n):
        if qent_before(&a[i], &a[i - 1]):
            r += 1
            runs[r] = i
    r += 1
    runs[r] = n
    while r > 1:
        nr = 0
        k = 0
        while k + 1 < r:
            _qent_merge(src, dst, runs[k], runs[k + 1], runs[k + 2])
            runs[nr] = runs[k]
            nr += 1
            k += 2
        if k < r:
            memcpy(dst + runs[k], src + runs[k], (runs[k + 1] - runs[k]) * sizeof(qent_t))
            runs[nr] = runs[k]
            nr += 1
        runs[nr] = n
        r = nr
        swap = src
        src = dst
        dst = swap
    if src != a:
        memcpy(a, src, n * sizeof(qent_t))


cdef inline int sched_unicep_sizes(sched_t* s) except -1:
    """Compute every job's unicep size term once (its size never changes in the rigid
    event loop) instead of a log2 per waiting job at every pass."""
    cdef intp_t j
    cdef intp_t cap = s.n_jobs if s.n_jobs > 1 else 1
    s.unicep_sizes = <double*> malloc(cap * sizeof(double))
    if s.unicep_sizes == NULL:
        raise MemoryError("scheduler state")
    for j in range(s.n_jobs):
        s.unicep_sizes[j] = unicep_size(s.procs[j])
    return 0


cdef inline keys_t sched_keys(const sched_t* s) noexcept nogil:
    """The waiting jobs' keys as of the last queue_prepare (priority.keys_t): computed on
    read under ``is_queue_unsorted`` (wfp3, unicep with a kept profile: queue_prepare
    stores none), else the stored column."""
    cdef keys_t k
    k.key = s.key
    k.submit = s.submit
    k.est = s.est
    k.procs = s.procs
    k.unicep_sizes = s.unicep_sizes
    k.at = s.prepared_at
    k.is_lazy = s.is_queue_unsorted
    return k


cdef inline double sched_key(const sched_t* s, intp_t j) noexcept nogil:
    """Waiting job j's queue key as of the last queue_prepare (sched_keys)."""
    cdef keys_t k = sched_keys(s)
    return key_at(&k, j)


cdef inline qent_t qent_of(const sched_t* s, intp_t j) noexcept nogil:
    """Job j's queue entry: (key, submit, index)."""
    cdef qent_t e
    e.key = sched_key(s, j)
    e.submit = s.submit[j]
    e.id = j
    return e


cdef inline void _queue_sort_from(sched_t* s, intp_t q) noexcept nogil:
    """Sort wait[q:] by (key, submit, index)."""
    cdef intp_t i
    cdef intp_t n = s.n_wait - q
    for i in range(n):
        s.qtmp[i] = qent_of(s, s.wait[q + i])
    qent_sort(s.qtmp, s.qtmp2, s.runs, n)
    for i in range(n):
        s.wait[q + i] = s.qtmp[i].id


cdef inline void queue_sort(sched_t* s) noexcept nogil:
    """Sort the whole waiting queue by (key, submit, index)."""
    _queue_sort_from(s, 0)
    s.n_sorted = s.n_wait
    s.n_front = s.n_wait


cdef inline double user_fairshare(sched_t* s, intp_t u) noexcept nogil:
    """``mf_fairshare`` of user u at the last usage calculation, computed once per user and
    calculation (a ``pow``; the same double every time it is asked).  A calculation's time
    identifies it: each one is later than the one before, and only a calculation changes
    the usage and total the factor reads."""
    if s.fs_calc[u] != s.mf.calc_time:
        s.fs[u] = mf_fairshare(&s.mf, s.usage[u])
        s.fs_calc[u] = s.mf.calc_time
    return s.fs[u]


cdef enum:
    QUEUE_SELECTIONS = 8        # scans for the next job in order per pass, then a sort


cdef inline void _queue_min_to(sched_t* s, intp_t q) noexcept nogil:
    """Swap the first job in queue order among wait[q:] (q < n_wait) into wait[q]."""
    cdef intp_t i, best
    cdef qent_t a, b
    best = q
    b = qent_of(s, s.wait[q])
    for i in range(q + 1, s.n_wait):
        a = qent_of(s, s.wait[i])
        if qent_before(&a, &b):
            b = a
            best = i
    if best != q:
        s.wait[best] = s.wait[q]
        s.wait[q] = b.id


cdef inline void queue_head_first(sched_t* s) noexcept nogil:
    """Bring the first job in queue order, by (key, submit, index), to wait[0]; the rest
    stay in no particular order (``queue_select_next`` orders more on demand): one O(n)
    scan instead of the sort, for a pass that reads the queue's front only
    (``is_head_only``).  Only for the orders that re-key and re-order the whole queue at
    every pass (``order_is_time_dependent``), so no later pass takes the rest for ordered;
    ``n_sorted`` still counts the jobs queued by this preparation."""
    _queue_min_to(s, 0)
    s.n_sorted = s.n_wait
    s.n_front = 1


cdef inline void queue_select_next(sched_t* s, intp_t q) noexcept nogil:
    """Make wait[q] the next job in queue order (q == n_front < n_wait, so q jobs were
    brought forward in this pass): a scan of wait[q:] for the first few, then the sort of
    all of wait[q:] (a pass that starts many jobs pays O(n log n) once, not O(n) per
    start)."""
    if q < QUEUE_SELECTIONS:
        _queue_min_to(s, q)
        s.n_front = q + 1
    else:
        _queue_sort_from(s, q)
        s.n_front = s.n_wait


cdef inline void queue_insert_tail(sched_t* s) noexcept nogil:
    """Move the jobs that arrived since the last pass (wait[n_sorted:]) to their place in
    the sorted prefix: binary search + memmove each (FCFS arrivals append in O(1))."""
    cdef intp_t j, lo, hi, mid
    cdef qent_t a, b
    while s.n_sorted < s.n_wait:
        j = s.wait[s.n_sorted]
        a = qent_of(s, j)
        lo = 0
        hi = s.n_sorted
        while lo < hi:
            mid = (lo + hi) >> 1
            b = qent_of(s, s.wait[mid])
            if qent_before(&b, &a):
                lo = mid + 1
            else:
                hi = mid
        if lo < s.n_sorted:
            memmove(s.wait + lo + 1, s.wait + lo, (s.n_sorted - lo) * sizeof(intp_t))
            s.wait[lo] = j
        s.n_sorted += 1


cdef inline void queue_prepare(sched_t* s, bint is_full_sort) noexcept nogil:
    """Bring estimates, keys and the queue order up to date for the pass at ``now``.

    Predict mode re-evaluates every waiting job's estimate (``is_predict_at_submit``: only
    at passes at its submit time, so it is fixed from the user's runs completed by then,
    zero-runtime ones ended at that time included).  Time-dependent orders (and
    estimate-dependent ones whose estimates changed) recompute every key and re-sort; multifactor
    recomputes usage and every priority when floor(now / calc_period) changed, otherwise
    computes the priority of the new arrivals only (prio NaN); static orders give the new
    arrivals their key and insert them.  ``is_full_sort`` sorts the whole queue anyway
    (`plan`, whose input rows come in any order)."""
    cdef intp_t i, j
    cdef intp_t i0 = 0
    cdef simtime_t p
    cdef bint full = is_full_sort
    cdef bint is_est_changed = False     # a queue-ordered job's estimate changed
    if s.estimate == ESTIMATE_PREDICT:
        if s.is_predict_at_submit and s.prepared_at < s.now:
            # every job of wait[:n_sorted] was queued by the last preparation (or is an
            # expander made in that pass): submitted before now, so not predicted now
            i0 = s.n_sorted
        for i in range(i0, s.n_wait):
            j = s.wait[i]
            if s.is_predict_at_submit and s.submit[j] != s.now:
                continue
            p = predict_estimate(s, j)
            if p != s.est[j] and i < s.n_sorted:
                # the arrivals (wait[n_sorted:]) are also bfo's unordered tail, which
                # bfo_prepare inserts by their estimate: only an ordered job's change
                # re-sorts
                s.is_bfo_dirty = True
                is_est_changed = True
            s.est[j] = p
    if s.order == ORDER_MULTIFACTOR:
        if mf_needs_calc(&s.mf, s.now):
            accrue_running(s)
            mf_recalc_usage(&s.mf, s.now, s.n_users, s.n_seen, s.usage, s.accrued)
            for i in range(s.n_wait):
                j = s.wait[i]
                s.prio[j] = mf_priority(&s.mf, s.now, s.submit[j], s.procs[j], s.total,
                                        user_fairshare(s, s.user[j]), s.qp[j])
                s.key[j] = -s.prio[j]
            full = True
        else:
            for i in range(s.n_sorted, s.n_wait):
                j = s.wait[i]
                if s.prio[j] != s.prio[j]:    # NaN: arrived since the last pass
                    s.prio[j] = mf_priority(&s.mf, s.now, s.submit[j], s.procs[j], s.total,
                                            user_fairshare(s, s.user[j]), s.qp[j])
                    s.key[j] = -s.prio[j]
    else:
        full = full or order_is_time_dependent(s.order) or (
            is_est_changed and order_uses_estimate(s.order))
        if full:
            i0 = 0
        else:
            i0 = s.n_sorted
        if s.is_queue_unsorted:
            pass    # keys taken when read, at prepared_at (sched_key): none stored
        elif s.unicep_sizes != NULL:
            for i in range(i0, s.n_wait):
                j = s.wait[i]
                s.key[j] = unicep_key(s.now, s.submit[j], s.est[j], s.unicep_sizes[j])
        else:
            for i in range(i0, s.n_wait):
                j = s.wait[i]
                s.key[j] = order_key(s.order, s.now, s.submit[j], s.est[j], s.procs[j])
    s.prepared_at = s.now
    if (full and s.is_head_only and s.n_wait > 0 and order_is_time_dependent(s.order)
            and (s.free == 0 or s.backfill == BACKFILL_NONE)):
        # none reads the queue up to its head only (the first job that does not fit), and
        # EASY with no processor free the head alone (easy_backfill reserves it, then its
        # scan stops at once): the front is ordered on demand (schedule_pass).  Only for
        # the orders re-sorted at every pass anyway: multifactor sorts once a calculation
        # and then inserts arrivals into the ordered queue, cheaper than a scan a pass
        queue_head_first(s)
        s.is_bfo_dirty = True
    elif s.is_queue_unsorted:
        # the re-plan order reads the keys, not the positions: the arrivals stay behind
        s.n_sorted = s.n_wait
        s.n_front = s.n_wait
    elif full:
        queue_sort(s)
        s.is_bfo_dirty = True
    else:
        queue_insert_tail(s)
        s.n_front = s.n_wait


cdef inline int sched_set_params(sched_t* s, object core) except -1:
    """Copy a compiled policy (``malleo.policy_codes.CorePolicy``, made once outside the
    core: one field per top-level and ``[multifactor]`` knob, of its name, a choice as its
    code of _knob_codes.pxi) into the state's codes and parameters."""
    s.order = core.order
    s.backfill = core.backfill
    s.estimate = core.estimate
    s.bf_max_job_test = core.bf_max_job_test
    s.bf_window = core.bf_window
    s.bf_resolution = core.bf_resolution
    s.is_bf_round_down = core.bf_rounding == BF_ROUNDING_DOWN
    s.predict_runs = core.predict_runs
    s.is_cold_request = core.predict_cold == PREDICT_COLD_REQUEST
    s.is_incremental = core.correction == CORRECTION_INCREMENTAL
    s.is_predict_at_submit = core.predict_at == PREDICT_AT_SUBMIT
    s.bf_order = core.backfill_order
    s.mf.weight_age = core.weight_age
    s.mf.weight_size = core.weight_size
    s.mf.weight_fairshare = core.weight_fairshare
    s.mf.max_age = core.max_age
    s.mf.half_life = core.half_life
    s.mf.calc_period = core.calc_period
    s.mf.is_favor_small = core.size_favor == SIZE_FAVOR_SMALL
    s.mf.calc_time = -1
    s.mf.total_usage = 0.0
    s.mf.users_at_calc = 0
    return 0


cdef inline int sched_alloc(sched_t* s, intp_t n_jobs) except -1:
    """Allocate the internal C arrays for up to ``n_jobs`` jobs (release with
    sched_release, also after a failure)."""
    cdef intp_t cap = n_jobs if n_jobs > 1 else 1
    s.rprev = NULL
    s.rqpos = NULL
    s.unicep_sizes = NULL
    s.n_rprev = 0
    s.run = <run_t*> malloc(cap * sizeof(run_t))
    s.run_tmp = <run_t*> malloc(cap * sizeof(run_t))
    s.wait = <intp_t*> malloc(cap * sizeof(intp_t))
    s.qtmp = <qent_t*> malloc(cap * sizeof(qent_t))
    s.qtmp2 = <qent_t*> malloc(cap * sizeof(qent_t))
    s.runs = <intp_t*> malloc((cap + 1) * sizeof(intp_t))
    s.rtmp = <rent_t*> malloc(cap * sizeof(rent_t))
    s.started = <intp_t*> malloc(cap * sizeof(intp_t))
    s.started_pos = <intp_t*> malloc(cap * sizeof(intp_t))
    s.started_tmp = <intp_t*> malloc(cap * sizeof(intp_t))
    s.bfo = NULL
    if s.bf_order == BFORDER_SJF and (s.backfill == BACKFILL_EASY or s.backfill == BACKFILL_SLURM):
        s.bfo = <intp_t*> malloc(cap * sizeof(intp_t))
        if s.bfo == NULL:
            raise MemoryError("scheduler state")
    s.n_bfo = 0
    s.n_bfo_sorted = 0
    if s.backfill == BACKFILL_CONSERVATIVE:
        s.rprev = <intp_t*> malloc(cap * sizeof(intp_t))
        s.rqpos = <intp_t*> malloc(cap * sizeof(intp_t))
        if s.rprev == NULL or s.rqpos == NULL:
            raise MemoryError("scheduler state")
    s.is_bfo_dirty = True
    s.n_run = 0
    s.n_wait = 0
    s.n_sorted = 0
    s.n_started = 0
    if (s.run == NULL or s.run_tmp == NULL or s.wait == NULL or s.qtmp == NULL
            or s.qtmp2 == NULL or s.runs == NULL
            or s.rtmp == NULL or s.started == NULL or s.started_pos == NULL
            or s.started_tmp == NULL):
        raise MemoryError("scheduler state")
    profile_init(&s.prof, 64)
    return 0


cdef inline void sched_release(sched_t* s) noexcept nogil:
    """Free what sched_alloc allocated (safe on a zeroed state)."""
    c_free(s.run)
    c_free(s.run_tmp)
    c_free(s.wait)
    c_free(s.qtmp)
    c_free(s.qtmp2)
    c_free(s.runs)
    c_free(s.rtmp)
    c_free(s.started)
    c_free(s.started_pos)
    c_free(s.started_tmp)
    c_free(s.bfo)
    s.bfo = NULL
    c_free(s.rprev)
    c_free(s.rqpos)
    c_free(s.unicep_sizes)
    s.rprev = NULL
    s.rqpos = NULL
    s.unicep_sizes = NULL
    s.n_rprev = 0
    s.run = NULL
    s.run_tmp = NULL
    s.wait = NULL
    s.qtmp = NULL
    s.qtmp2 = NULL
    s.runs = NULL
    s.rtmp = NULL
    s.started = NULL
    s.started_pos = NULL
    s.started_tmp = NULL
    profile_release(&s.prof)
    holders_release(&s.hold)
