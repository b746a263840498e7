# The planning pass kernel: start what fits now, then backfill (none / easy /
# conservative / slurm) per docs/scheduling-semantics.md.
#
# Header-only (`cdef inline`): the event loop (loop.pyx) and `plan` (plan.pyx) compile
# this same function.  The queue must be ordered first (sched.queue_prepare).
from libc.stdint cimport INT64_MAX
from libc.string cimport memmove, memcpy

from _types cimport (simtime_t, procs_t, intp_t, BACKFILL_NONE, BACKFILL_EASY,
                     BACKFILL_CONSERVATIVE, BACKFILL_SLURM, BFORDER_SJF,
                     ESTIMATE_PREDICT)
from priority cimport order_keys_move, order_is_time_dependent, keys_t
from counters cimport (COUNT_ON, count, CNT_REBUILT_PASSES, CNT_EARLY_COMPLETIONS,
                      CNT_KEPT_PASSES, CNT_INDEX_BLOCKS, CNT_INDEX_BLOCKS_SKIPPED,
                      CNT_HOLDER_VISITS, CNT_VISITS_SAME_SHAPE, CNT_VISITS_SAME_ENTRY,
                      CNT_DEC_TESTS, CNT_SEARCHES, CNT_UPDATE_PAIRS, CNT_BREAKPOINTS_AT_MOVES,
                      CNT_OFFSET_SUM, CNT_MOVING_PASSES, CNT_PAIRS_SAME_SHAPE,
                      CNT_PAIRS_SAME_SHAPE_OFFSET, CNT_MOVED_HOLDERS, CNT_MOVED_IN_RUNS,
                      CNT_RANGE_UPDATES, CNT_NEW_JOBS, CNT_PAIRS_CHAIN,
                      CNT_SLURM_RESERVATIONS, CNT_SLURM_IN_RUNS, CNT_MOVED_IN_STRETCHES,
                      CNT_STRETCHES, CNT_POINT_TESTS)
from profile cimport (profile_t, pblock_t, ppos_t, profile_reset, profile_add_release, profile_reserve,
                      profile_fits, profile_earliest, profile_free_now, profile_hint,
                      profile_note, profile_last_time, profile_pend_push, profile_pend_pop,
                      profile_take_tail, profile_value, profile_locate, align_up,
                      profile_earliest_before, profile_trim, shape_reset, shape_hint,
                      shape_note, shape_seen_nofit, shape_note_nofit, dec_add,
                      dec_may_fit, dec_end, profile_merge_at, shape_note_both, dec_bound,
                      profile_reserve_merge, profile_min_over, profile_give_back_max,
                      dec_add_max, _next_below_before, _next_at_least_before,
                      profile_last_short_end, profile_time)
from sched cimport (sched_t, rent_t, qent_t, run_rekey, start_job, qsort, qent_sort,
                    queue_select_next,
                    qent_before, qent_of, sched_key, sched_keys)
from holders cimport (holders_t, hblock_t, holders_clear, holders_append, holders_insert,
                      holders_remove, holders_first, hold_before, holders_put,
                      holders_put_end)


cdef inline simtime_t hold_time(simtime_t est) noexcept nogil:
    """How long a planned job occupies the profile: its estimate, at least one second (a
    zero estimate must not let two jobs share processors at one instant)."""
    return est if est > 0 else 1


cdef inline void give_reservation(sched_t* s, intp_t j, simtime_t when) noexcept nogil:
    """Record a planned start: the latest one, and the first one ever."""
    s.resv_cur[j] = when
    if s.resv_first[j] < 0:
        s.resv_first[j] = when


cdef inline void move_reservation(sched_t* s, intp_t j, simtime_t when) noexcept nogil:
    """give_reservation for a holder of the index: it has had a reservation since it
    entered, so its first one is kept without a look (a write only, no dependent load)."""
    s.resv_cur[j] = when


cdef inline bint _bfo_before(const sched_t* s, intp_t a, intp_t b) noexcept nogil:
    """SJBF candidate order of jobs a, b: (estimate, queue key, submit, index), i.e.
    (estimate, queue order)."""
    cdef qent_t ea, eb
    if s.est[a] != s.est[b]:
        return s.est[a] < s.est[b]
    ea = qent_of(s, a)
    eb = qent_of(s, b)
    return qent_before(&ea, &eb)


cdef inline intp_t _bfo_find(const sched_t* s, intp_t j, intp_t n) noexcept nogil:
    """Binary search: the first place in bfo[:n] that is not before job j."""
    cdef intp_t lo = 0
    cdef intp_t hi = n
    cdef intp_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if _bfo_before(s, s.bfo[mid], j):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline void bfo_prepare(sched_t* s) noexcept nogil:
    """Bring the SJBF order (s.bfo) up to date with the ordered queue: after a change of
    estimates or keys (is_bfo_dirty) sort the queue by (estimate, queue position)
    (natural merge sort, s.qtmp scratch); otherwise insert the arrivals (bfo[n_bfo_sorted:],
    in arrival order) at their places (binary search + memmove), as the queue does."""
    cdef intp_t i, j, lo
    if s.is_bfo_dirty:
        for i in range(s.n_wait):
            j = s.wait[i]
            s.qtmp[i].key = <double> s.est[j]     # exact: estimates are < 2**53 seconds
            s.qtmp[i].submit = i                  # the queue position breaks ties
            s.qtmp[i].id = j
        qent_sort(s.qtmp, s.qtmp2, s.runs, s.n_wait)
        for i in range(s.n_wait):
            s.bfo[i] = s.qtmp[i].id
        s.n_bfo = s.n_wait
        s.n_bfo_sorted = s.n_wait
        s.is_bfo_dirty = False
        return
    while s.n_bfo_sorted < s.n_bfo:
        j = s.bfo[s.n_bfo_sorted]
        lo = _bfo_find(s, j, s.n_bfo_sorted)
        if lo < s.n_bfo_sorted:
            memmove(s.bfo + lo + 1, s.bfo + lo, (s.n_bfo_sorted - lo) * sizeof(intp_t))
            s.bfo[lo] = j
        s.n_bfo_sorted += 1


cdef inline void bfo_drop_started(sched_t* s) noexcept nogil:
    """Take the jobs this pass started out of the SJBF order (binary search + memmove)."""
    cdef intp_t k, j, lo
    for k in range(s.n_started):
        j = s.started[k]
        lo = _bfo_find(s, j, s.n_bfo)
        if lo < s.n_bfo and s.bfo[lo] == j:
            memmove(s.bfo + lo, s.bfo + lo + 1, (s.n_bfo - lo - 1) * sizeof(intp_t))
            s.n_bfo -= 1
    s.n_bfo_sorted = s.n_bfo


cdef inline intp_t queue_pos(const sched_t* s, intp_t j) noexcept nogil:
    """The queue position of waiting job j: a binary search of the ordered queue, a scan
    when the queue is not in key order (the malleable kernel)."""
    cdef intp_t lo = 0
    cdef intp_t hi = s.n_wait
    cdef intp_t mid
    cdef qent_t a, b
    a = qent_of(s, j)
    while lo < hi:
        mid = (lo + hi) >> 1
        b = qent_of(s, s.wait[mid])
        if qent_before(&b, &a):
            lo = mid + 1
        else:
            hi = mid
    if lo < s.n_wait and s.wait[lo] == j:
        return lo
    # not in key order: the malleable kernel's start_waiting marks the whole queue ordered
    # (n_sorted = n_wait) while expanders queued after the pass sit unordered at its tail
    for lo in range(s.n_wait):
        if s.wait[lo] == j:
            break
    return lo


cdef inline intp_t bfo_next(const sched_t* s, intp_t* cursor, intp_t head) noexcept nogil:
    """The next SJBF candidate from bfo[cursor[0]:] (a job still waiting, not the head),
    advancing the cursor past it; -1 when none is left."""
    cdef intp_t j
    while cursor[0] < s.n_bfo:
        j = s.bfo[cursor[0]]
        cursor[0] += 1
        if s.start[j] < 0 and j != head:
            return j
    return -1


cdef inline void easy_backfill(sched_t* s, intp_t head_pos) noexcept nogil:
    """EASY (Mu'alem and Feitelson 2001): reserve the head at the shadow time, then start
    later jobs that fit now and either end by the shadow time or fit in the extra
    processors.  The later jobs are tried in queue order, or with ``bf_order`` SJF
    (SJBF) shortest estimate first, ties in queue order."""
    cdef intp_t head = s.wait[head_pos]
    cdef procs_t need = s.procs[head]
    cdef procs_t avail = s.free
    cdef procs_t extra
    cdef intp_t k = 0
    cdef intp_t q, j, i
    cdef intp_t m = s.n_wait - head_pos - 1
    cdef bint is_sjf = s.bf_order == BFORDER_SJF
    cdef simtime_t shadow
    while k < s.n_run:
        avail += s.procs[s.run[k].id]
        if avail >= need:
            break
        k += 1
    shadow = s.run[k].end
    k += 1
    while k < s.n_run and s.run[k].end == shadow:   # every processor free at the shadow time
        avail += s.procs[s.run[k].id]
        k += 1
    extra = avail - need
    give_reservation(s, head, shadow)
    if is_sjf:
        # SJBF: the waiting jobs by (estimate, queue order), the first walk's starts and
        # the head skipped; none after the first that cannot end by the shadow time once
        # no extra processor is left
        i = 0
        while s.free > 0:
            j = bfo_next(s, &i, head)
            if j < 0 or (extra == 0 and s.now + s.est[j] > shadow):
                break
            if s.procs[j] <= s.free and (s.now + s.est[j] <= shadow or s.procs[j] <= extra):
                if s.now + s.est[j] > shadow:
                    extra -= s.procs[j]
                start_job(s, queue_pos(s, j))
        return
    for i in range(m):
        if s.free == 0:
            break
        q = head_pos + 1 + i
        j = s.wait[q]
        if s.procs[j] <= s.free and (s.now + s.est[j] <= shadow or s.procs[j] <= extra):
            if s.now + s.est[j] > shadow:
                extra -= s.procs[j]
            start_job(s, q)


cdef inline int build_profile(sched_t* s, simtime_t resolution) except -1 nogil:
    """Start the profile of running jobs from ``now``: each holds its processors until its
    expected end, rounded up to a multiple of ``resolution``.

    Lazy (issue 16): only the origin is built here; the running set (sorted by expected
    end) is read through a cursor (prof.src_next) and a release becomes a breakpoint only
    when a query or a reservation reaches its time (profile_extend_to / profile_extend).
    The free count as a function of time is the one of the full build wherever breakpoints
    exist, and beyond the last one the pending releases only add processors, so every
    answer is the full build's (docs/core.md)."""
    profile_reset(&s.prof, s.now, s.free)
    s.prof.src_res = resolution
    s.prof.src_started = s.n_started      # started before the build: part of the base
    return 0


cdef inline void bf_started(sched_t* s, intp_t j) noexcept nogil:
    """After start_job(j) in a lazily built pass: j entered the running set at its sorted
    place; keep the cursor on the same entries (j itself is skipped by _skip_started: its
    processors are already in the profile as its reservation)."""
    cdef intp_t lo = 0
    cdef intp_t hi = s.n_run
    cdef intp_t mid
    cdef simtime_t end = s.exp_end[j]
    while lo < hi:
        mid = (lo + hi) >> 1
        if s.run[mid].end < end or (s.run[mid].end == end and s.run[mid].id < j):
            lo = mid + 1
        else:
            hi = mid
    if lo < s.prof.src_next:
        s.prof.src_next += 1


cdef inline bint _is_started_now(const sched_t* s, intp_t j) noexcept nogil:
    """True if this pass started job j after building the profile (started[] is short;
    only jobs starting at ``now`` are looked up)."""
    cdef intp_t k
    if s.start[j] != s.now:
        return False
    for k in range(s.prof.src_started, s.n_started):
        if s.started[k] == j:
            return True
    return False


cdef inline void _skip_started(sched_t* s) noexcept nogil:
    """Move the cursor past running-set entries this pass started."""
    while s.prof.src_next < s.n_run and _is_started_now(s, s.run[s.prof.src_next].id):
        s.prof.src_next += 1


cdef inline simtime_t _next_release(sched_t* s) noexcept nogil:
    """Time of the next release not yet built (running job or reservation end); -1 if none."""
    cdef simtime_t t = -1
    _skip_started(s)
    if s.prof.src_next < s.n_run:
        t = align_up(s.run[s.prof.src_next].end, s.prof.src_res)
    if s.prof.n_pend > 0 and (t < 0 or s.prof.pend_time[0] < t):
        t = s.prof.pend_time[0]
    return t


cdef inline int _build_next(sched_t* s) except -1 nogil:
    """Turn the next pending release into a breakpoint (one must exist)."""
    cdef simtime_t t = -1
    cdef intp_t k
    _skip_started(s)
    if s.prof.src_next < s.n_run:
        t = align_up(s.run[s.prof.src_next].end, s.prof.src_res)
    if s.prof.n_pend > 0 and (t < 0 or s.prof.pend_time[0] < t):
        profile_add_release(&s.prof, s.prof.pend_time[0], s.prof.pend_procs[0])
        profile_pend_pop(&s.prof)
        return 0
    k = s.prof.src_next
    profile_add_release(&s.prof, t, s.procs[s.run[k].id])
    s.prof.src_next = k + 1
    return 0


cdef inline int profile_extend_to(sched_t* s, simtime_t t) except -1 nogil:
    """Build every release at or before ``t``."""
    cdef simtime_t nxt = _next_release(s)
    while nxt >= 0 and nxt <= t:
        _build_next(s)
        nxt = _next_release(s)
    return 0


cdef inline bint profile_extend(sched_t* s, intp_t count) except -1 nogil:
    """Build the next ``count`` releases (fewer if fewer remain); False if none remained."""
    cdef intp_t k = 0
    while k < count and _next_release(s) >= 0:
        _build_next(s)
        k += 1
    return k > 0


cdef inline simtime_t bf_earliest(sched_t* s, simtime_t start, simtime_t duration,
                                  procs_t procs, simtime_t resolution) except -2 nogil:
    """profile_earliest on the lazily built profile: a found start is final (later
    releases only add processors after the last breakpoint); "never" on the built part
    builds more releases (doubling) and searches again."""
    cdef simtime_t when
    cdef intp_t chunk = 64
    profile_extend_to(s, start)
    while True:
        when = profile_earliest(&s.prof, start, duration, procs, resolution)
        if when >= 0:
            return when
        if not profile_extend(s, chunk):
            return -1
        chunk *= 2


cdef inline bint bf_fits(sched_t* s, simtime_t start, simtime_t duration,
                         procs_t procs) except -1 nogil:
    """profile_fits on the lazily built profile: a no that the open last segment may
    cause (the window reaches past the last breakpoint) builds more and asks again."""
    cdef intp_t chunk = 64
    cdef simtime_t last
    profile_extend_to(s, start)
    if profile_value(&s.prof, profile_locate(&s.prof, start)) < procs:
        return False                    # every release up to start is built: exact
    while True:
        if profile_fits(&s.prof, start, duration, procs):
            return True
        last = profile_last_time(&s.prof)
        if last >= start + duration:
            return False
        # Only the open last segment can say no for want of releases not built yet.
        if last > start and not profile_fits(&s.prof, start, last - start, procs):
            return False
        if not profile_extend(s, chunk):
            return False
        chunk *= 2


cdef inline int bf_reserve(sched_t* s, simtime_t start, simtime_t end,
                           procs_t procs) except -1 nogil:
    """profile_reserve on the lazily built profile: an end after the last breakpoint
    becomes a pending release (profile_take_tail)."""
    if end <= start:
        return 0
    profile_extend_to(s, start)
    if end <= profile_last_time(&s.prof):
        profile_reserve(&s.prof, start, end, procs)
    else:
        profile_take_tail(&s.prof, start, procs)
        profile_pend_push(&s.prof, end, procs)
    return 0


cdef inline bint _rent_before(const sched_t* s, const rent_t* a, const rent_t* b) noexcept nogil:
    """Re-plan order: previous reservation, then queue order: the queue position (``pos``
    of an ordered queue), or, in a queue left unordered (``is_queue_unsorted``), the queue
    entries (key, submit, index) of the jobs at the two positions."""
    cdef qent_t ea, eb
    if a.resv != b.resv:
        return a.resv < b.resv
    if not s.is_queue_unsorted:
        return a.pos < b.pos
    ea = qent_of(s, s.wait[a.pos])
    eb = qent_of(s, s.wait[b.pos])
    return qent_before(&ea, &eb)


cdef inline void _rent_merge(const sched_t* s, const rent_t* src, rent_t* dst, intp_t lo,
                             intp_t mid, intp_t hi) noexcept nogil:
    """Merge the sorted runs src[lo:mid] and src[mid:hi] into dst[lo:hi]."""
    cdef intp_t i = lo
    cdef intp_t j = mid
    cdef intp_t k = lo
    while i < mid and j < hi:
        if _rent_before(s, &src[j], &src[i]):
            dst[k] = src[j]
            j += 1
        else:
            dst[k] = src[i]
            i += 1
        k += 1
    if i < mid:
        memcpy(dst + k, src + i, (mid - i) * sizeof(rent_t))
    elif j < hi:
        memcpy(dst + k, src + j, (hi - j) * sizeof(rent_t))


cdef inline void rent_sort(const sched_t* s, rent_t* a, rent_t* tmp, intp_t* runs,
                           intp_t n) noexcept nogil:
    """Natural merge sort in _rent_before's order (a total order: positions are unique), so
    O(n log runs) instead of O(n log n) on an input that is mostly in order already.
    ``tmp`` holds n entries, ``runs`` n + 1."""
    cdef intp_t i, k, r, nr
    cdef rent_t* src = a
    cdef rent_t* dst = tmp
    cdef rent_t* swap
    if n < 2:
        return
    r = 0
    runs[0] = 0
    for i in range(1, n):
        if _rent_before(s, &a[i], &a[i - 1]):
            r += 1
            runs[r] = i
    r += 1
    runs[r] = n
    while r > 1:
        nr = 0
        k = 0
        while k + 1 < r:
            _rent_merge(s, src, dst, runs[k], runs[k + 1], runs[k + 2])
            runs[nr] = runs[k]
            nr += 1
            k += 2
        if k < r:
            memcpy(dst + runs[k], src + runs[k], (runs[k + 1] - runs[k]) * sizeof(rent_t))
            runs[nr] = runs[k]
            nr += 1
        runs[nr] = n
        r = nr
        swap = src
        src = dst
        dst = swap
    if src != a:
        memcpy(a, src, n * sizeof(rent_t))


cdef inline void rent_sort_nearly(const sched_t* s, rent_t* a, rent_t* buf, intp_t* runs,
                                  intp_t n) noexcept nogil:
    """rent_sort for an order where most entries already come after the ones before them
    and a few have moved earlier (the last re-plan's order after its moves): the entries
    that come before the last one kept move aside into ``buf``, which is sorted alone,
    then merged back from the end (the kept ones stay sorted in a's front).  O(n + k log k)
    for k set aside; rent_sort when more than half of them are (``buf`` holds n entries:
    the k <= n / 2 set aside and their merge buffer fit)."""
    cdef intp_t i
    cdef intp_t k = 0
    cdef intp_t m = 0
    cdef intp_t w
    if n < 2:
        return
    for i in range(n):
        if k == 0 or not _rent_before(s, &a[i], &a[k - 1]):
            a[k] = a[i]
            k += 1
        else:
            buf[m] = a[i]
            m += 1
    if m == 0:
        return
    if 2 * m > n:
        memcpy(a + k, buf, m * sizeof(rent_t))
        rent_sort(s, a, buf, runs, n)
        return
    rent_sort(s, buf, buf + m, runs, m)
    # merge from the back: a[0:k] and buf[0:m] into a[0:n] (n = k + m), never writing
    # over a kept entry not yet read
    w = n
    while m > 0:
        w -= 1
        if k > 0 and _rent_before(s, &buf[m - 1], &a[k - 1]):
            k -= 1
            a[w] = a[k]
        else:
            m -= 1
            a[w] = buf[m]


cdef inline intp_t replan_order(sched_t* s, intp_t head_pos) noexcept nogil:
    """The conservative re-plan order of wait[head_pos:] into s.rtmp (returns how many):
    holders of a reservation first (by that reservation, ties by queue order), then the
    others in queue order (``bf_order`` SJF: by estimate, ties in queue order; their
    ``resv`` then holds the estimate).  The order of conservative_backfill, which the
    holder index keeps across passes (kept_by_holders); the kept profile needs only that
    holders come by non-decreasing reservation and all others after them."""
    cdef intp_t q, j, i, h, k
    cdef intp_t m = 0
    if s.rprev != NULL and s.n_rprev > 0:
        # From the last re-plan's order, whose reservations have only moved earlier since
        # (mostly keeping their order): the sort then finds long runs.  Any order of the
        # same entries sorts to the same result (pos is unique); rqpos makes them the
        # same: -1 not waiting from head_pos on, -2 already taken, else the position.
        for k in range(s.n_rprev):
            s.rqpos[s.rprev[k]] = -1
        for q in range(head_pos, s.n_wait):
            s.rqpos[s.wait[q]] = q
        for k in range(s.n_rprev):
            j = s.rprev[k]
            q = s.rqpos[j]
            if q >= 0 and s.resv_cur[j] >= 0:
                s.rtmp[m].resv = s.resv_cur[j]
                s.rtmp[m].pos = q
                m += 1
                s.rqpos[j] = -2
        for q in range(head_pos, s.n_wait):
            j = s.wait[q]
            if s.rqpos[j] != -2:
                s.rtmp[m].resv = s.resv_cur[j] if s.resv_cur[j] >= 0 else INT64_MAX
                s.rtmp[m].pos = q
                m += 1
    else:
        for q in range(head_pos, s.n_wait):
            j = s.wait[q]
            s.rtmp[m].resv = s.resv_cur[j] if s.resv_cur[j] >= 0 else INT64_MAX
            s.rtmp[m].pos = q
            m += 1
    rent_sort_nearly(s, s.rtmp, <rent_t*> s.qtmp2, s.runs, m)   # qtmp2: n_jobs qent_t, larger
    if s.bf_order == BFORDER_SJF:
        # SJBF: the jobs without a reservation (the tail, INT64_MAX) by (estimate, position)
        h = m
        while h > 0 and s.rtmp[h - 1].resv == INT64_MAX:
            h -= 1
        for i in range(h, m):
            s.rtmp[i].resv = s.est[s.wait[s.rtmp[i].pos]]
        rent_sort(s, s.rtmp + h, <rent_t*> s.qtmp2, s.runs, m - h)
    if s.rprev != NULL:
        # this order, for the next re-plan (the queue keeps its positions during a pass)
        for i in range(m):
            s.rprev[i] = s.wait[s.rtmp[i].pos]
        s.n_rprev = m
    return m


cdef inline intp_t _room_for_followers(sched_t* s, intp_t f, procs_t n, simtime_t when,
                                      simtime_t until) noexcept nogil:
    """How many of ``f`` jobs of size n, each searching from ``when`` after one more job
    of that size took [when, until), also find ``when``: the k-th does while
    k + 1 <= (the fewest free over [when, until) before the first took it) // n.  On the
    lazily built profile the open last segment is a lower bound of what lies past it
    (pending releases only add): the count may come out short, never long."""
    cdef intp_t c
    if f == 0 or n <= 0:
        return 0
    c = profile_min_over(&s.prof, when, until) // n - 1    # the first job takes n
    if c > f:
        c = f
    return c if c > 0 else 0


cdef inline int conservative_backfill(sched_t* s, intp_t head_pos) except -1 nogil:
    """Re-plan every waiting job in the profile in replan_order; each gets the earliest
    start at which it fits for its estimate; those planned now start.  A job planned
    after now takes the jobs right after it in that order of the same size and estimate
    with it, as many as [when, when + hold) has room for (each would search from its
    shape's answer, a lower bound, and find it: docs/core.md "Runs of identical
    reservations in the slurm walk"), in one profile update."""
    cdef intp_t i, q, j, m, f, extra
    cdef simtime_t when, hold, lb
    build_profile(s, 1)
    count(CNT_REBUILT_PASSES, 1)
    m = replan_order(s, head_pos)
    i = -1
    while i + 1 < m:
        i += 1
        q = s.rtmp[i].pos
        j = s.wait[q]
        hold = hold_time(s.est[j])
        lb = profile_hint(&s.prof, s.procs[j], hold)      # issue 16: skip what cannot fit
        when = bf_earliest(s, lb if lb > s.now else s.now, hold, s.procs[j], 1)
        profile_note(&s.prof, s.procs[j], hold, when)
        give_reservation(s, j, when)
        extra = 0
        if when > s.now:
            f = 0
            while (i + 1 + f < m and s.procs[s.wait[s.rtmp[i + 1 + f].pos]] == s.procs[j]
                   and s.est[s.wait[s.rtmp[i + 1 + f].pos]] == s.est[j]):
                f += 1
            extra = _room_for_followers(s, f, s.procs[j], when, when + hold)
        bf_reserve(s, when, when + hold, (1 + extra) * s.procs[j])
        if when == s.now:
            start_job(s, q)
            bf_started(s, j)
        while extra > 0:
            i += 1
            give_reservation(s, s.wait[s.rtmp[i].pos], when)
            extra -= 1
    return 0


# --- Conservative with a kept profile (issue 16; docs/core.md "The kept profile") ----------
#
# The event loop (loop.simulate sets is_keep_profile) keeps the profile of the last pass,
# fully built: the running set plus every reservation it made (is_prof_kept).  Between
# passes, a completion before its expected end gives its processors back over [now,
# expected end) (kept_release); nothing else changes it as long as no running job is
# overdue (the expected-end rule would move ends later), every waiting job's estimate is
# fixed (not predict) and every started job's expected end is its start + hold.  Then the
# pass re-plans in the same order as conservative_backfill without rebuilding anything:
#
#   K = running set + this pass's answers for the jobs already re-planned + the previous
#       reservations of the holders not yet re-planned.
#
# Holders come in order of their previous reservation r, so when holder i comes, every
# previous reservation still in K starts at or after r_i: before r_i, K is exactly the
# profile conservative_backfill would search (running set + answers so far), and from r_i
# on that profile has i's previous slot [r_i, r_i + hold) free (K is feasible and holds
# it).  So i's answer is the earliest s < r_i with its size free in K over
# [s, min(s + hold, r_i)) (profile_earliest_before), else r_i.  A job that moves gives its
# old slot back and takes the new one: the new slot lies inside the old one plus
# [s, r_i), where K had room, so K stays feasible.  Jobs without a reservation come last,
# when K holds no previous reservation: a plain search.  Only moved and new jobs touch
# the profile; no job is ever planned differently from conservative_backfill.

cdef inline int kept_release(sched_t* s, intp_t j) except -1 nogil:
    """Job j completed at s.now (after release_job): with a kept profile its processors
    come back over [now, its expected end)."""
    if s.is_prof_kept and s.exp_end[j] > s.now:
        count(CNT_EARLY_COMPLETIONS, 1)
        # its release may now be a stale breakpoint (merged); the record's bound at once
        dec_add_max(&s.prof, s.now, s.exp_end[j],
                    profile_give_back_max(&s.prof, s.now, s.exp_end[j], s.procs[j]))
    return 0


cdef inline void _kept_check_started(sched_t* s) noexcept nogil:
    """A job started by the pass holds [now, now + hold) in the kept profile; the running
    set holds it until its expected end: keep the profile only if they agree (a zero
    estimate does not: hold 1, expected end by the request)."""
    cdef intp_t k, j
    for k in range(s.n_started):
        j = s.started[k]
        if s.exp_end[j] != s.now + hold_time(s.est[j]):
            s.is_prof_kept = False
            return


cdef inline simtime_t _plan_arrival(sched_t* s, intp_t q) noexcept nogil:
    """Plan the job at queue position q, which holds no reservation, on the kept profile
    after every holder (no old reservation left in it: a plain earliest-fit search from
    its shape's hints) and start it when its answer is now; returns the answer."""
    cdef intp_t j = s.wait[q]
    cdef procs_t n = s.procs[j]
    cdef simtime_t hold = hold_time(s.est[j])
    cdef simtime_t lb = shape_hint(&s.prof, n, hold)
    cdef simtime_t hint, when
    if lb < s.now:
        lb = s.now
    hint = profile_hint(&s.prof, n, hold)
    if hint > lb:
        lb = hint
    when = profile_earliest(&s.prof, lb, hold, n, 1)
    count(CNT_NEW_JOBS, 1)
    count(CNT_RANGE_UPDATES, 1)
    profile_reserve(&s.prof, when, when + hold, n)
    shape_note_both(&s.prof, n, hold, when)
    give_reservation(s, j, when)
    if when == s.now:
        start_job(s, q)
    return when


cdef inline int holders_build(sched_t* s) except -1 nogil:
    """The index from scratch after a rebuilt pass: every waiting job it did not start
    (conservative starts a job exactly when its answer is now), by (reservation, queue
    position)."""
    cdef intp_t q, j, i
    cdef intp_t m = 0
    holders_clear(&s.hold)
    for q in range(s.n_wait):
        j = s.wait[q]
        if s.resv_cur[j] > s.now:
            s.rtmp[m].resv = s.resv_cur[j]
            s.rtmp[m].pos = q
            m += 1
    rent_sort(s, s.rtmp, <rent_t*> s.qtmp2, s.runs, m)
    for i in range(m):
        j = s.wait[s.rtmp[i].pos]
        holders_append(&s.hold, s.rtmp[i].resv, j, hold_time(s.est[j]), s.procs[j])
    return 0


cdef inline bint _block_may_move(sched_t* s, const hblock_t* blk) noexcept nogil:
    """Whether some holder of the block may get an earlier start: only where processors
    came back (dec_may_fit), before the block's last reservation, for its smallest size
    (a holder of the block has a later lower bound, an earlier reservation and a size no
    smaller: if this fails, its own test fails)."""
    if s.prof.n_dec == 0:
        return False
    if dec_bound(&s.prof, s.now, blk.resv[blk.n - 1]) < blk.low:
        return False
    return dec_may_fit(&s.prof, s.now, blk.resv[blk.n - 1], blk.low)


cdef inline bint _holder_stays(const sched_t* s, const holders_t* h, intp_t b, intp_t i,
                               simtime_t when, intp_t j) noexcept nogil:
    """Whether entry i of block b (job j, moving earlier to ``when``) keeps its place in
    the index order: the entry before it (already answered in this pass, with its new
    reservation) still comes before (when, j).  Every entry after it has a reservation
    >= its old one > when, so the order holds on both sides."""
    cdef const hblock_t* blk
    cdef keys_t keys = sched_keys(s)
    if i > 0:
        blk = h.blk[b]
        return hold_before(&keys, blk.resv[i - 1], blk.job[i - 1], when, j)
    if b > 0:
        blk = h.blk[b - 1]
        return hold_before(&keys, blk.resv[blk.n - 1], blk.job[blk.n - 1], when, j)
    return True


cdef inline intp_t _identical_followers(sched_t* s, const hblock_t* blk, intp_t i,
                                       simtime_t when, simtime_t r, procs_t n,
                                       simtime_t hold) noexcept nogil:
    """How many of the holders right after entry i of ``blk`` (same reservation r, size n
    and hold, consecutive in the block) also get ``when``, the answer of entry i, before
    entry i's move is applied (when > now, when + hold > r; docs/core.md "Runs of
    identical moves"): no start before ``when`` fits any of them, and ``when`` fits the
    k-th of them exactly while [when, r) keeps n free after the k moves before it, i.e.
    k + 1 <= min over [when, r) // n."""
    cdef intp_t f = 0
    while (i + 1 + f < blk.n and blk.resv[i + 1 + f] == r and blk.procs[i + 1 + f] == n
           and blk.hold[i + 1 + f] == hold):
        f += 1
    return _room_for_followers(s, f, n, when, r)        # entry i itself takes n over [when, r)


cdef inline intp_t _skip_kept(const hblock_t* blk, intp_t i, simtime_t now, procs_t top,
                             procs_t last_n, simtime_t last_hold,
                             simtime_t last_when) noexcept nogil:
    """The first entry from i on of ``blk`` that kept_by_holders must look at (blk.n if
    none), each entry looked at counted as a visit: the ones before it are after ``now``
    and larger than ``top`` (anything that came back before their reservation) or of the
    shape (last_n, last_hold) last answered, reserved at or before ``last_when`` (that
    answer, or when it kept its reservation by a point test, the end of the short
    segments after it), so they keep it and change nothing the next one's tests read
    (docs/core.md "Which holders are visited", shortcuts 2 and 3)."""
    cdef intp_t m = blk.n
    cdef const simtime_t* resv = blk.resv
    cdef const procs_t* procs = blk.procs
    cdef const simtime_t* hold = blk.hold
    cdef simtime_t r, h
    cdef procs_t n
    while i < m:
        if COUNT_ON:
            count(CNT_HOLDER_VISITS, 1)
            if i > 0 and procs[i - 1] == procs[i] and hold[i - 1] == hold[i]:
                count(CNT_VISITS_SAME_SHAPE, 1)
                count(CNT_VISITS_SAME_ENTRY, resv[i - 1] == resv[i])
        r = resv[i]
        if r <= now:
            break
        n = procs[i]
        if n <= top and not (n == last_n and hold[i] == last_hold and last_when >= r):
            break
        # the entries equal to this one (reservation, size, hold) get its verdict: four
        # at a time while the block has them (the index keeps reservations in order, so
        # resv[i + 3] == r covers the three before it)
        h = hold[i]
        i += 1
        while (i + 3 < m and resv[i + 3] == r
               and ((procs[i] ^ n) | (procs[i + 1] ^ n) | (procs[i + 2] ^ n)
                    | (procs[i + 3] ^ n)) == 0
               and ((hold[i] ^ h) | (hold[i + 1] ^ h) | (hold[i + 2] ^ h)
                    | (hold[i + 3] ^ h)) == 0):
            if COUNT_ON:
                count(CNT_HOLDER_VISITS, 4)
                count(CNT_VISITS_SAME_SHAPE, 4)
                count(CNT_VISITS_SAME_ENTRY, 4)
            i += 4
    return i


cdef inline bint _tie_run_in_order(sched_t* s, intp_t b, intp_t i) noexcept nogil:
    """_order_tie_run's check under wfp3 and unicep: whether the entries of entry i's
    reservation from there on (across blocks) are in queue order at this pass, comparing
    neighbours of one shape by index alone and the others by their keys (lazy: taken
    here)."""
    cdef holders_t* h = &s.hold
    cdef hblock_t* blk
    cdef simtime_t r = h.blk[b].resv[i]
    cdef intp_t j
    cdef intp_t prev_job = -1       # the entry before, its shape and (when taken) its key
    cdef procs_t prev_n = 0
    cdef simtime_t prev_hold = 0
    cdef double prev_key = 0.0
    cdef bint has_key = False
    cdef qent_t e, prev
    while b < h.nb:
        blk = h.blk[b]
        while i < blk.n and blk.resv[i] == r:
            j = blk.job[i]
            if prev_job >= 0:
                if blk.procs[i] == prev_n and blk.hold[i] == prev_hold:
                    if j < prev_job:
                        return False
                    has_key = False
                else:
                    e = qent_of(s, j)
                    prev.key = prev_key if has_key else sched_key(s, prev_job)
                    prev.submit = s.submit[prev_job]
                    prev.id = prev_job
                    if qent_before(&e, &prev):
                        return False
                    prev_key = e.key
                    has_key = True
            prev_job = j
            prev_n = blk.procs[i]
            prev_hold = blk.hold[i]
            i += 1
        if i < blk.n:
            break
        b += 1
        i = 0
    return True


cdef inline bint _tie_run_due(const sched_t* s, simtime_t r, simtime_t tie_r) noexcept nogil:
    """Whether _order_tie_run has a run to check at reservation r: the keys move between
    passes and the pass has not met r yet (``tie_r``: the last reservation it met)."""
    return r > tie_r and order_keys_move(s.order)


cdef inline bint _order_tie_run(sched_t* s, intp_t b, intp_t i,
                                simtime_t* tie_r) noexcept nogil:
    """Under the orders whose keys change between passes (order_keys_move: wfp3, unicep,
    multifactor), the first time a pass meets reservation r (entry i of block b;
    ``tie_r``: the last one it met), put the index entries from there on that share r
    (across blocks) in queue order at this pass, (key, submit, index), when they are not
    (docs/core.md "Time-dependent keys in the index").  True when it reordered them.
    Called only when _tie_run_due says so (the test every visit stop makes, kept apart
    because this function is too large to inline).

    Under wfp3 and unicep two jobs of one shape (size, hold) have one estimate (the key's
    is max(est, 1), the hold's max(est, 1) too), so their keys at any pass time are in the
    order of their waits, ties included (rounded division and products are monotone):
    their queue order is (submit, index) at every pass, which is index order (the event
    loop, the only caller, numbers its jobs in submit order: admit_arrivals).  So the
    run's neighbours of one shape are compared by index alone, without a key (lazy keys,
    sched_keys, cost a division and three loads each: _tie_run_in_order)."""
    cdef holders_t* h = &s.hold
    cdef hblock_t* blk = h.blk[b]
    cdef simtime_t r = blk.resv[i]
    cdef intp_t m = 0
    cdef intp_t bb = b
    cdef intp_t ii = i
    cdef intp_t k, j
    cdef bint is_sorted = True
    cdef qent_t e, prev
    tie_r[0] = r
    if order_is_time_dependent(s.order) and _tie_run_in_order(s, b, i):
        return False
    while bb < h.nb:
        blk = h.blk[bb]
        while ii < blk.n and blk.resv[ii] == r:
            e = qent_of(s, blk.job[ii])
            if m > 0 and qent_before(&e, &prev):
                is_sorted = False
            s.qtmp[m] = e
            prev = e
            m += 1
            ii += 1
        if ii < blk.n:
            break
        bb += 1
        ii = 0
    if is_sorted:
        return False
    qent_sort(s.qtmp, s.qtmp2, s.runs, m)
    bb = b
    ii = i
    for k in range(m):
        j = s.qtmp[k].id
        holders_put(h, &bb, &ii, j, hold_time(s.est[j]), s.procs[j])
    holders_put_end(h, bb)
    return True


cdef enum:
    STRETCH_SEGMENTS = 2048     # profile segments one stretch may keep (_one_shape_stretch)
    STRETCH_MEMBERS = 256       # holders one stretch may answer
    STRETCH_TOP = 1 << 30       # most processors one stretch may take over a segment (its
                                # members times their size, well within procs_t)


cdef inline simtime_t _segment_end(const profile_t* p, ppos_t k) noexcept nogil:
    """The end of the segment at breakpoint ``k`` (INT64_MAX for the last one)."""
    if k.i + 1 < p.blk[k.b].n:
        return p.blk[k.b].time[k.i + 1]
    if k.b + 1 < p.nb:
        return p.bfirst[k.b + 1]
    return INT64_MAX


cdef inline bint _stretch_push(const profile_t* p, ppos_t* cur, simtime_t* pos,
                               simtime_t until, procs_t d, procs_t top, procs_t* dq_v,
                               simtime_t* dq_end, intp_t* head, intp_t* tail) noexcept nogil:
    """Append the profile's segments over [pos, until) with fewer than ``top - d`` free
    (the others can never be walls: the stretch takes at most ``top`` in all) to the
    stretch's candidate walls (dq_v: free count + d, dq_end: the segment's end, clipped to
    ``until``), keeping dq_v strictly increasing from head to tail: a segment with a later
    end and no more free becomes a wall no later, so the ones before it never decide an
    answer.  ``cur`` is the last breakpoint looked at (every segment between it and
    ``pos`` had at least ``top - d`` free, and ``d`` only grows); both move on.  False when
    the room (STRETCH_SEGMENTS) ran out."""
    cdef procs_t need = top - d
    cdef ppos_t k = cur[0]
    cdef simtime_t tn, seg_end
    cdef procs_t v
    cdef intp_t t = tail[0]
    if need <= 0:
        pos[0] = until
        return True
    while True:
        tn = _segment_end(p, k)
        v = p.blk[k.b].free[k.i] + p.badd[k.b]
        if tn > pos[0] and v < need:
            v += d
            seg_end = tn if tn < until else until
            while t > head[0] and dq_v[t - 1] >= v:
                t -= 1
            if t == STRETCH_SEGMENTS:
                if head[0] == 0:
                    tail[0] = t
                    return False
                memmove(dq_v, dq_v + head[0], (t - head[0]) * sizeof(procs_t))
                memmove(dq_end, dq_end + head[0], (t - head[0]) * sizeof(simtime_t))
                t -= head[0]
                head[0] = 0
            dq_v[t] = v
            dq_end[t] = seg_end
            t += 1
        if tn >= until or not _next_below_before(p, &k, need, until):
            break
    cur[0] = k
    pos[0] = until
    tail[0] = t
    return True


cdef inline void _stretch_move(sched_t* s, simtime_t a, simtime_t z, procs_t procs,
                               simtime_t hold) noexcept nogil:
    """``procs`` more processors taken over [a, z) and given back over [a + hold, z + hold)
    (a + hold >= z): a move over overlapping slots, of one holder, a run of identical ones
    or a run of equal cover of a stretch; recorded where they came back, with the most
    now free there as its bound."""
    cdef procs_t back
    profile_reserve_merge(&s.prof, a, z, procs)
    back = profile_give_back_max(&s.prof, a + hold, z + hold, procs)
    dec_add_max(&s.prof, a + hold, z + hold, back)


cdef inline bint _one_shape_stretch(sched_t* s, intp_t* at_b, intp_t* at_i, simtime_t w,
                                    simtime_t* last, simtime_t* tie_r) except -1 nogil:
    """The holder at entry at_i of index block at_b, just answered ``w`` (now < w < r <
    w + its hold), and the entries right after it in the index (across blocks) of its
    shape (n, hold) with a reservation r_k <= w + hold, answered together (docs/core.md
    "One-shape stretches"): False when no follower qualifies (nothing changed), else True
    with each answer given and held in place in the index, the profile updated, the
    shape's answer noted, ``last`` set to the last answer and (at_b, at_i) to the entry
    after the stretch (at_i may be its block's count).  ``tie_r``: as in kept_by_holders,
    the last reservation whose holders were put in queue order (keys that change with
    time), moved on as the stretch meets later ones.

    Every follower k searches from the answer before it (same shape, a smaller profile,
    a window that holds the one before's), where its window is [s, r_k) (s + hold >= w +
    hold >= r_k) and the give-backs of the moves before it lie after r_k: its answer is
    the end of the last segment before r_k with fewer than n free once the takes
    [w_m, r_m) before it are counted, or that lower bound.  Each take covers the whole
    live region [w_m, r_m), so the candidate walls share one offset ``d``; the takes of
    the stretch are then applied as runs of equal cover (a chain of holders each taking
    the slot the one before it left is one run)."""
    cdef holders_t* h = &s.hold
    cdef intp_t b = at_b[0]
    cdef intp_t i = at_i[0]
    cdef hblock_t* blk = h.blk[b]
    cdef procs_t n = blk.procs[i]
    cdef keys_t keys = sched_keys(s)
    cdef simtime_t hold = blk.hold[i]
    cdef simtime_t limit = w + hold
    cdef simtime_t ws[STRETCH_MEMBERS]
    cdef simtime_t rs[STRETCH_MEMBERS]
    cdef procs_t dq_v[STRETCH_SEGMENTS]
    cdef simtime_t dq_end[STRETCH_SEGMENTS]
    cdef intp_t head = 0
    cdef intp_t tail = 0
    cdef intp_t cnt, k, a, z, c, c0, prev_job, job, kb, most
    cdef procs_t d, top
    cdef ppos_t cur
    cdef simtime_t pos, prev_w, wk, r, t, start, joint
    # the first follower: the next entry, maybe in the next block
    kb = b
    k = i + 1
    if k == blk.n:
        kb += 1
        k = 0
    if kb < h.nb and _tie_run_due(s, h.blk[kb].resv[k], tie_r[0]):
        _order_tie_run(s, kb, k, tie_r)
    if (kb == h.nb or h.blk[kb].procs[k] != n or h.blk[kb].hold[k] != hold
            or h.blk[kb].resv[k] > limit):
        return False
    if not _holder_stays(s, h, b, i, w, blk.job[i]):
        return False
    # the stretch takes at most `most` n over a segment: one with that many free or more
    # is never a wall (`most` keeps that count, and every offset d, within STRETCH_TOP:
    # 256 members of 2**24 processors would not fit in procs_t)
    most = min(STRETCH_MEMBERS, STRETCH_TOP // n)
    top = <procs_t> (most * n)
    cur = profile_locate(&s.prof, w)
    pos = w
    # the leader's window [w, r_i) has n free (its answer); it takes them
    if not _stretch_push(&s.prof, &cur, &pos, blk.resv[i], 0, top, dq_v, dq_end, &head,
                         &tail):
        return False
    d = n
    ws[0] = w
    rs[0] = blk.resv[i]
    k = i + 1
    cnt = 1
    prev_w = w
    prev_job = blk.job[i]
    while cnt < most:
        if k == blk.n:
            if b + 1 == h.nb:
                break
            b += 1
            blk = h.blk[b]
            k = 0
        if _tie_run_due(s, blk.resv[k], tie_r[0]):
            _order_tie_run(s, b, k, tie_r)
        r = blk.resv[k]
        if blk.procs[k] != n or blk.hold[k] != hold or r > limit:
            break
        if not _stretch_push(&s.prof, &cur, &pos, r, d, top, dq_v, dq_end, &head, &tail):
            break
        wk = prev_w
        while head < tail and dq_v[head] < n + d:      # fewer than n free there now
            wk = dq_end[head]
            head += 1
        if wk == r:
            break                       # it keeps its reservation: the usual tests say so
        job = blk.job[k]
        if wk == prev_w and not hold_before(&keys, prev_w, prev_job, wk, job):
            break                       # it would leave its place in the index
        ws[cnt] = wk
        rs[cnt] = r
        cnt += 1
        d += n
        prev_w = wk
        prev_job = job
        k += 1
    if cnt < 2:
        return False
    # the takes [ws[m], rs[m]) as runs of equal cover c (both ends are non-decreasing)
    a = 0
    z = 0
    c = 0
    start = 0
    joint = -1
    while z < cnt:
        t = rs[z]
        if a < cnt and ws[a] < t:
            t = ws[a]
        c0 = c
        while a < cnt and ws[a] == t:
            c += 1
            a += 1
        while z < cnt and rs[z] == t:
            c -= 1
            z += 1
        if c != c0:
            if c0 > 0:
                count(CNT_RANGE_UPDATES, 2)
                _stretch_move(s, start, t, c0 * n, hold)
                if start == joint:
                    # where the run before this one ended: both counts are final now
                    profile_merge_at(&s.prof, start)
                    profile_merge_at(&s.prof, start + hold)
                joint = t if c > 0 else -1
            start = t
    # the answers, in place (the stretch ends at (b, k) or at a block's end)
    # (every member moves: ws[m] < rs[m])
    b = at_b[0]
    blk = h.blk[b]
    i = at_i[0]
    for a in range(cnt):
        if i == blk.n:
            b += 1
            blk = h.blk[b]
            i = 0
        move_reservation(s, blk.job[i], ws[a])
        blk.resv[i] = ws[a]
        i += 1
    at_b[0] = b
    at_i[0] = i
    count(CNT_STRETCHES, 1)
    count(CNT_MOVED_HOLDERS, cnt)
    count(CNT_MOVED_IN_STRETCHES, cnt - 1)         # the first one counts as an update pair
    shape_note_both(&s.prof, n, hold, prev_w)
    last[0] = prev_w
    return True


cdef inline int kept_by_holders(sched_t* s) except -1 nogil:
    """The conservative re-plan on the kept profile (see "Conservative with a kept
    profile" above) with the holder index (docs/core.md "The holder index"): the answers
    of conservative_backfill, visiting the holders in the index's order and skipping every
    block whose holders cannot move; 0 without changing anything when a reservation is
    already past (then the caller rebuilds), 1 when done."""
    cdef holders_t* h = &s.hold
    cdef hblock_t* blk
    cdef intp_t b, i, k, q, j, n_new, n_moved, found, extra
    cdef simtime_t when, hold, lb, r, hint, kept_until
    cdef procs_t n, top, back
    cdef bint is_gone
    cdef ppos_t at
    cdef procs_t last_n = 0         # the shape last visited and its answer in this pass
    cdef simtime_t last_hold = 0
    cdef simtime_t last_when = -1
    cdef procs_t c_n = -1           # counters only (COUNT_ON): the last move's shape,
    cdef simtime_t c_hold = -1      # its offset r - when, whether this pass moved
    cdef simtime_t c_off = -1
    cdef simtime_t c_r = -1         # the last move's old reservation
    cdef bint c_moved = False
    cdef simtime_t tie_r = -1       # the last reservation whose holders were put in order
    cdef keys_t keys = sched_keys(s)
    if h.n > 0 and holders_first(h) < s.now:
        return 0
    count(CNT_KEPT_PASSES, 1)
    profile_trim(&s.prof, s.now)
    shape_reset(&s.prof)
    s.prof.n_hints = 0
    s.prof.hint_next = 0
    # the jobs without a reservation (the arrivals since the last pass) in queue order, or
    # SJBF's (estimate, queue position) order, into rtmp[0:n_new] (FCFS: the queue's tail)
    n_new = s.n_wait - h.n
    found = 0
    q = s.n_wait
    while found < n_new and q > 0:
        q -= 1
        j = s.wait[q]
        if s.resv_cur[j] < 0:
            found += 1
            s.rtmp[n_new - found].pos = q
            s.rtmp[n_new - found].resv = s.est[j]
    if s.bf_order == BFORDER_SJF:
        rent_sort(s, s.rtmp, <rent_t*> s.qtmp2, s.runs, n_new)
    # the holders, in (previous reservation, queue order); rtmp[n_new:] collects the moved
    n_moved = 0
    b = 0
    while b < h.nb:
        blk = h.blk[b]
        count(CNT_INDEX_BLOCKS, 1)
        if blk.resv[0] > s.now and not _block_may_move(s, blk):
            count(CNT_INDEX_BLOCKS_SKIPPED, 1)
            b += 1
            continue
        i = 0
        is_gone = False
        top = dec_bound(&s.prof, s.now, blk.resv[blk.n - 1])
        while i < blk.n:
            # the holders that keep their reservation without a look (most visits): larger
            # than anything that came back before r, or of the shape last answered >= r
            i = _skip_kept(blk, i, s.now, top, last_n, last_hold, last_when)
            if i == blk.n:
                break
            if _tie_run_due(s, blk.resv[i], tie_r) and _order_tie_run(s, b, i, &tie_r):
                continue            # this reservation's holders in queue order now: again
            r = blk.resv[i]
            n = blk.procs[i]
            hold = blk.hold[i]
            when = r
            kept_until = r
            extra = 0
            if r > s.now:
                lb = shape_hint(&s.prof, n, hold)
                if lb >= r:
                    last_n = n
                    last_hold = hold
                    last_when = lb
                    i += 1          # this shape's answer in this pass is already >= r
                    continue
                if lb < s.now:
                    lb = s.now
                count(CNT_DEC_TESTS, lb + hold < r)
                count(CNT_POINT_TESTS, lb + hold >= r)
                if lb + hold >= r:
                    # every start from lb on has the window [s, r): it moves exactly when
                    # the segment before r has n free, to the end of the last one before
                    # it short of n (or lb)
                    at = profile_locate(&s.prof, r - 1)
                    if profile_value(&s.prof, at) >= n:
                        when = profile_last_short_end(&s.prof, at, n, lb)
                    else:
                        # it keeps r; so does every holder of its shape behind it reserved
                        # up to the next segment with n free: its answer is r or later,
                        # where every window starts in a segment short of n (the
                        # walk looks no further than r + hold: a bound on its cost only)
                        kept_until = r + hold
                        if _next_at_least_before(&s.prof, &at, n, kept_until):
                            kept_until = profile_time(&s.prof, at)
                elif dec_may_fit(&s.prof, lb, r, n):
                    # a move needs an instant before r where processors came back, n free
                    count(CNT_SEARCHES, 1)
                    hint = profile_hint(&s.prof, n, hold)    # smaller shapes bound it too
                    if hint > lb:
                        lb = hint
                    when = profile_earliest_before(&s.prof, lb, hold, n, r, dec_end(&s.prof))
                if when < r:
                    if COUNT_ON:
                        count(CNT_UPDATE_PAIRS, 1)
                        count(CNT_BREAKPOINTS_AT_MOVES, s.prof.n)
                        count(CNT_OFFSET_SUM, r - when)
                        count(CNT_MOVING_PASSES, not c_moved)
                        count(CNT_PAIRS_SAME_SHAPE, n == c_n and hold == c_hold)
                        count(CNT_PAIRS_SAME_SHAPE_OFFSET,
                              n == c_n and hold == c_hold and r - when == c_off)
                        count(CNT_PAIRS_CHAIN, n == c_n and hold == c_hold and when == c_r)
                        c_r = r
                        c_moved = True
                        c_n = n
                        c_hold = hold
                        c_off = r - when
                    # the old slot's two ends may now be stale breakpoints, merged where
                    # the reservation that ends there just split them (no search again):
                    # neither update changes the counts next to the other's end
                    if when + hold > r:
                        # the slots overlap on [r, when + hold): only the two ends change.
                        # The identical holders right behind it (same reservation, size
                        # and hold) move to `when` too while [when, r) has room for them
                        # (docs/core.md "Runs of identical moves"): one update for all
                        if when > s.now:
                            # the holders of its shape right behind it, together
                            # (docs/core.md "One-shape stretches")
                            if _one_shape_stretch(s, &b, &i, when, &last_when, &tie_r):
                                last_n = n
                                last_hold = hold
                                blk = h.blk[b]
                                top = dec_bound(&s.prof, s.now, blk.resv[blk.n - 1])
                                continue
                            extra = _identical_followers(s, blk, i, when, r, n, hold)
                        count(CNT_MOVED_HOLDERS, 1 + extra)
                        count(CNT_MOVED_IN_RUNS, extra)
                        count(CNT_RANGE_UPDATES, 2)
                        _stretch_move(s, when, r, (1 + extra) * n, hold)
                    else:
                        count(CNT_MOVED_HOLDERS, 1)
                        count(CNT_RANGE_UPDATES, 2)
                        back = profile_give_back_max(&s.prof, r, r + hold, n)
                        profile_reserve(&s.prof, when, when + hold, n)   # before r: [r,
                        profile_merge_at(&s.prof, r)     # r + hold) keeps its counts
                        # where processors came back, with the most now free there as
                        # its bound (when + hold may be r itself)
                        dec_add_max(&s.prof, r, r + hold, back)
            shape_note_both(&s.prof, n, hold, when)      # shape_note + profile_note
            last_n = n
            last_hold = hold
            last_when = kept_until if when == r else when
            if when == r and when > s.now:
                i += 1
                continue
            j = blk.job[i]
            move_reservation(s, j, when)
            if when > s.now and _holder_stays(s, h, b, i, when, j):
                # its new place in the index is its old one: the entry (and its identical
                # followers, which come right after it in the same order) takes `when`
                # where it is, without a removal and an insertion
                blk.resv[i] = when
                i += 1
                while extra > 0:
                    move_reservation(s, blk.job[i], when)
                    blk.resv[i] = when
                    i += 1
                    extra -= 1
                # a move recorded where processors came back: the bound again
                top = dec_bound(&s.prof, s.now, blk.resv[blk.n - 1])
                continue
            if when == s.now:
                start_job(s, queue_pos(s, j))
            else:
                s.rtmp[n_new + n_moved].resv = when
                s.rtmp[n_new + n_moved].pos = j
                n_moved += 1
            is_gone = holders_remove(h, b, i)
            # the identical holders moved with it (already in the profile): each now at
            # entry i of this block in turn (a removal keeps the entries after i there)
            while extra > 0 and not is_gone:
                j = blk.job[i]
                move_reservation(s, j, when)
                s.rtmp[n_new + n_moved].resv = when
                s.rtmp[n_new + n_moved].pos = j
                n_moved += 1
                is_gone = holders_remove(h, b, i)
                extra -= 1
            if is_gone:
                break
            # a move recorded where processors came back; the block may have taken in
            # the next one: its bound again
            top = dec_bound(&s.prof, s.now, blk.resv[blk.n - 1])
        if not is_gone:
            b += 1
    # the jobs without a reservation: a plain search each (K holds no old reservation)
    for k in range(n_new):
        q = s.rtmp[k].pos
        j = s.wait[q]
        when = _plan_arrival(s, q)
        if when == s.now:
            s.rtmp[k].pos = -1
        else:
            s.rtmp[k].resv = when
            s.rtmp[k].pos = j
    # the moved and new holders enter the index at their new places
    for k in range(n_new + n_moved):
        j = s.rtmp[k].pos
        if j >= 0:
            holders_insert(h, &keys, s.rtmp[k].resv, j, hold_time(s.est[j]),
                           s.procs[j])
    return 1


cdef inline int conservative_pass(sched_t* s) except -1 nogil:
    """Conservative over the whole queue: on the kept profile with the holder index when
    they are valid (kept_by_holders), else rebuilt (conservative_backfill), then fully
    built, kept and indexed if the entrance asks (is_keep_profile: fixed estimates)."""
    cdef bint done = False
    if s.is_prof_kept:
        done = kept_by_holders(s)
    if not done:
        conservative_backfill(s, 0)
        if s.is_keep_profile:
            profile_extend(s, s.n_jobs + s.n_wait + 1)     # every release left
            s.is_prof_kept = True
            holders_build(s)
    s.prof.n_dec = 0            # the answers now hold: nothing came back since
    if s.is_prof_kept:
        _kept_check_started(s)
    return 0


cdef inline int slurm_backfill(sched_t* s, intp_t head_pos) except -1 nogil:
    """Slurm sched/backfill: in queue order, start what fits now for its whole estimate;
    give the first bf_max_job_test others their earliest start on the bf_resolution grid
    within bf_window; the rest only start if they fit now.  With ``is_bf_round_down``
    (Slurm's own rounding): expected ends stay exact, a reservation starts at the exact
    earliest fit ``when`` and holds its processors until the grid instant at or before
    ``when`` plus max(hold, bf_resolution); from that grid instant on it already holds the
    processors it takes that were free before ``when`` (those released at ``when`` are busy
    until then anyway).  With ``bf_order`` SJF (SJBF) the head is tried first and the jobs
    behind it shortest estimate first (ties in queue order): the budget of reservations
    then goes to the head and the shortest jobs that cannot start now."""
    build_profile(s, 1 if s.is_bf_round_down else s.bf_resolution)
    shape_reset(&s.prof)        # here: the shapes that did not fit now (issue 16)
    s.sr_reserved = 0
    s.sr_min_when = INT64_MAX
    s.sr_min_rej = INT64_MAX
    s.sr_first = s.n_started     # the first walk's starts: running jobs of the profile
    return slurm_walk(s, head_pos, 0)


cdef inline procs_t _slurm_held_early(procs_t n, intp_t k, procs_t released) noexcept nogil:
    """Processors that k jobs of size ``n``, reserved one by one at the same start with
    down rounding, hold before it in all (slurm_walk): each holds early the part of its
    size not covered by what is released at the start (``released``: free at the start
    minus free just before it, as each job sees it), at most ``n``; each reservation
    takes ``n`` at the start and its early part just before it, which lowers what the
    next job sees released by ``n`` minus that part."""
    cdef procs_t total = 0
    cdef procs_t e
    while k > 0:
        e = n - released
        if e > n:
            e = n
        if e > 0:
            total += e
            released += e
        released -= n
        k -= 1
    return total


cdef inline intp_t _walk_next(const sched_t* s, bint is_sjf, intp_t* q, intp_t* cursor,
                             intp_t head) noexcept nogil:
    """The slurm walk's next candidate after the current one, advancing its place: the
    next queue position (q) in queue order, the SJBF cursor's next job in SJBF order
    (q unused); -1 when none is left."""
    if is_sjf:
        return bfo_next(s, cursor, head)
    q[0] += 1
    return s.wait[q[0]] if q[0] < s.n_wait else -1


cdef inline intp_t _slurm_followers(sched_t* s, intp_t j, bint is_sjf, intp_t q,
                                   intp_t cursor, intp_t head, simtime_t when,
                                   simtime_t until, intp_t budget) noexcept nogil:
    """How many of the candidates right after job j in the walk's order (_walk_next from
    its place q / cursor, not advanced here: the same size and estimate, consecutive; at
    most ``budget``) the slurm walk would also reserve at ``when`` (> now), the answer
    just found for j, before j's reservation is made.  None of them fits now (the
    profile only loses processors in a pass); each one's search starts at its shape's
    hint ``when`` (a lower bound) and finds ``when`` exactly while [when, when + hold)
    keeps its size free after the reservations before it.  Each of those takes the size
    over [when, ``until``) (until = when + hold, or with down rounding the end of Slurm's
    hold when that comes first; what lies after it keeps the size free, as it did for
    j), so the k-th fits while k + 1 <= min over [when, until) // size.  The lazy
    profile's open last segment is a lower bound of what lies past it (pending releases
    only add), so the count may come out short, never long: a job past it is walked as
    usual (and gets ``when``).  Only "the next candidates" is used, so the rule holds in
    queue and SJBF order alike."""
    cdef procs_t n = s.procs[j]
    cdef simtime_t est = s.est[j]
    cdef intp_t f = 0
    cdef intp_t k
    while f < budget:
        k = _walk_next(s, is_sjf, &q, &cursor, head)
        if k < 0 or s.procs[k] != n or s.est[k] != est:
            break
        f += 1
    return _room_for_followers(s, f, n, when, until)


cdef inline int slurm_walk(sched_t* s, intp_t head_pos, intp_t i0) except -1 nogil:
    """The walk of slurm_backfill over the candidates i0, i0 + 1, ... (counted from the
    head), on the profile and shape memory as they are, with s.sr_reserved reservations
    already made; records where it stopped (s.sr_next) and the earliest answers it searched
    (s.sr_min_when) and refused for the window (s.sr_min_rej), which slurm_can_resume
    reads.

    A candidate that neither starts nor gets a reservation leaves the pass as it found it
    (the profile, the budget, the earliest answers), but for what it notes of its shape: it
    did not fit now, or its earliest start lies past the window.  So the next candidate, if
    of the same size and estimate, neither starts nor gets a reservation: it is passed
    over without a look (issue 16: a backlog of identical jobs submitted together; on
    RICC-2010-2, 840 M of the 967 M candidates of a replay).  A job reserved after now
    takes the same-shape candidates right behind it in the walk's order with it (the next
    queue places, or the SJBF cursor's next jobs), as many as the budget and the room at
    its start allow (_slurm_followers): one profile update for the run, each of them
    given the start it would have found (81-91% of the reservations on RICC-2010-2)."""
    cdef simtime_t res = s.bf_resolution
    cdef simtime_t grid_now = align_up(s.now, res)
    cdef intp_t reserved = s.sr_reserved
    cdef intp_t q, j
    cdef simtime_t when, hold, lb, held_from, held_to
    cdef procs_t early
    cdef bint down = s.is_bf_round_down
    cdef bint fits
    cdef bint is_sjf = s.bf_order == BFORDER_SJF
    cdef intp_t i
    cdef intp_t cursor = 0
    cdef intp_t n = s.n_wait - head_pos
    cdef intp_t stop = n
    cdef procs_t idle_procs = -1    # the shape of the last candidate, when it neither started
    cdef simtime_t idle_est = -1    # nor got a reservation (idle_procs -1: it did either)
    cdef intp_t extra
    i = i0 - 1
    while i + 1 < n:
        i += 1
        if reserved >= s.bf_max_job_test and profile_free_now(&s.prof) == 0:
            stop = i
            break
        # the head first; behind it queue order, or (SJBF) by (estimate, queue order), the
        # queue position then found only for a job that starts (a binary search; most
        # candidates are passed over)
        if is_sjf and i > 0:
            j = bfo_next(s, &cursor, s.wait[head_pos])
            if j < 0:
                stop = i
                break
            q = -1
        else:
            q = head_pos + i
            j = s.wait[q]
        if s.procs[j] == idle_procs and s.est[j] == idle_est:
            continue        # the candidate before it, of the same shape, did nothing
        idle_procs = s.procs[j]
        idle_est = s.est[j]
        hold = hold_time(s.est[j])
        # free at now is exact in the lazy profile: most of a long queue stops here.  The
        # profile only loses processors during the pass, so a (size, hold) that did not
        # fit now never will in this pass: a long queue of equal jobs asks once.
        fits = False
        if (s.procs[j] <= profile_free_now(&s.prof)
                and not shape_seen_nofit(&s.prof, s.procs[j], hold)):
            fits = bf_fits(s, s.now, hold, s.procs[j])
            if not fits:
                shape_note_nofit(&s.prof, s.procs[j], hold)
        if fits:
            bf_reserve(s, s.now, s.now + hold, s.procs[j])
            start_job(s, q if q >= 0 else queue_pos(s, j))
            bf_started(s, j)
            idle_procs = -1
        elif reserved < s.bf_max_job_test:
            lb = shape_hint(&s.prof, s.procs[j], hold)
            if lb - s.now > s.bf_window:
                # the same shape's earliest start in this pass is already past the window,
                # and this one's is no earlier (lb is a lower bound): no reservation, no
                # search (issue 16: a backlog deeper than the window searched every job)
                if lb < s.sr_min_rej:
                    s.sr_min_rej = lb
                continue
            if down:
                when = bf_earliest(s, lb if lb > s.now else s.now, hold, s.procs[j], 1)
            else:
                when = bf_earliest(s, lb if lb > grid_now else grid_now, hold, s.procs[j], res)
            if when >= 0:
                shape_note(&s.prof, s.procs[j], hold, when)
                if when < s.sr_min_when:
                    s.sr_min_when = when
                if when - s.now > s.bf_window and when < s.sr_min_rej:
                    s.sr_min_rej = when
            if when >= 0 and when - s.now <= s.bf_window:
                held_to = when + hold
                if down:
                    # Slurm holds the reserved nodes from the grid instant at or before
                    # ``when`` for the estimate (at least one grid step)
                    held_to = when - when % res + (hold if hold > res else res)
                # the candidates right behind it of the same shape get ``when`` too while
                # [when, when + hold) has room for them (docs/core.md "Runs of identical
                # reservations in the slurm walk"): one reservation for all of them
                extra = 0
                if when > s.now:
                    extra = _slurm_followers(s, j, is_sjf, q, cursor, s.wait[head_pos], when,
                                             held_to if held_to < when + hold else when + hold,
                                             s.bf_max_job_test - reserved - 1)
                if down:
                    # in counts, only the part of each job that runs on processors already
                    # free before ``when`` (not released at ``when``) is held early, from
                    # the grid instant on
                    held_from = when - when % res
                    if held_from < s.now:
                        held_from = s.now
                    early = 0
                    if when > s.now:
                        profile_extend_to(s, when)      # free at when - 1 and when: exact
                        early = _slurm_held_early(
                            s.procs[j], 1 + extra,
                            profile_value(&s.prof, profile_locate(&s.prof, when))
                            - profile_value(&s.prof, profile_locate(&s.prof, when - 1)))
                    if early > 0 and held_from < when:
                        bf_reserve(s, held_from, when, early)
                bf_reserve(s, when, held_to, (1 + extra) * s.procs[j])
                give_reservation(s, j, when)
                reserved += 1 + extra
                count(CNT_SLURM_RESERVATIONS, 1 + extra)
                count(CNT_SLURM_IN_RUNS, extra)
                while extra > 0:
                    i += 1
                    give_reservation(s, _walk_next(s, is_sjf, &q, &cursor, s.wait[head_pos]),
                                     when)
                    extra -= 1
                idle_procs = -1
    s.sr_reserved = reserved
    s.sr_next = stop
    return 0


# --- Slurm, the resumed pass (issue 16; docs/core.md "The resumed slurm pass") -----------
#
# In the event loop (loop.simulate sets is_slurm_resume) a slurm pass P1 at t1 whose walk
# started nothing (the first walk may have: those jobs were running when the profile was
# built) is kept: its profile (running set + its reservations), its shape memory
# and where its walk stopped.  At the next pass time t2, if nothing ran in between
# (no completion: same free count and running set; no running job overdue at t2: no
# expected end moves), the queue is P1's with arrivals behind it (static keys: the jobs
# at P1's first and last places unchanged), and P1's searched answers all lie after t2 and
# on or after the grid instant of t2, while everything it refused for the window still
# lies past t2 + bf_window, then the pass at t2 walks P1's candidates exactly as P1 did:
#
#   the head is P1's and the free count is P1's, so the first walk at t2 starts nothing;
#   every breakpoint but the origin lies after t2 (releases at rounded expected ends > t2,
#   reservations from P1's answers on), so the profile is flat over [t1, t2]: a job that
#   did not fit over [t1, t1 + hold) meets the same short segment within [t2, t2 + hold);
#   a search from max(hint, grid instant of t2) <= P1's answer gives P1's answer (the
#   profile is the same function, the candidates before it failed); an answer P1 accepted
#   (<= t1 + window) is accepted at t2; one it refused (> t2 + window) is refused.
#
# By induction over the candidates the pass at t2 reproduces P1's walk (no start, the
# same reservations and budget, the same stop), then visits the arrivals where P1's walk
# ran out of candidates: slurm_walk continues from P1's stop on the kept profile.  The
# answers of the pass are the rebuilt pass's, so every schedule is unchanged.

cdef inline bint slurm_can_resume(const sched_t* s) noexcept nogil:
    """Whether the pass at s.now may continue the last one's walk (see above)."""
    if not s.sr_valid or s.now <= s.sr_now:
        return False
    if s.free != s.sr_free or s.n_run != s.sr_n_run:
        return False                            # a completion since
    if s.n_run > 0 and s.run[0].end <= s.now:
        return False                            # overdue: run_rekey moves ends later
    if (s.n_wait < s.sr_n_wait or s.wait[0] != s.sr_head_job
            or s.wait[s.sr_n_wait - 1] != s.sr_last_job):
        return False                            # an arrival placed before P1's last job
    if s.sr_min_when <= s.now or s.sr_min_when < align_up(s.now, s.bf_resolution):
        return False
    return s.sr_min_rej - s.now > s.bf_window


cdef inline void slurm_record(sched_t* s, bint is_walked) noexcept nogil:
    """After a pass: keep it for slurm_can_resume if it was a slurm walk (``is_walked``)
    that started nothing behind the head (the first walk's starts were running jobs when
    the profile was built: part of it), in a mode whose proof holds (bf_resolution
    rounding up, queue candidate order, static queue keys, fixed estimates)."""
    s.sr_valid = (is_walked and s.n_started == s.sr_first and s.backfill == BACKFILL_SLURM
                  and not s.is_bf_round_down and s.bfo == NULL and s.learn == NULL
                  and s.estimate != ESTIMATE_PREDICT and not order_keys_move(s.order)
                  and s.n_wait > 0)
    if s.sr_valid:
        s.sr_now = s.now
        s.sr_free = s.free
        s.sr_n_run = s.n_run
        s.sr_n_wait = s.n_wait
        s.sr_head_job = s.wait[0]
        s.sr_last_job = s.wait[s.n_wait - 1]


cdef inline void _backfilled_unsorted(sched_t* s) noexcept nogil:
    """drop_started's backfilled flags in a queue left unordered (``is_queue_unsorted``;
    started_pos sorted): a started job is backfilled when a job that stays waiting comes
    before it in queue order, i.e. when the first of those in queue order does."""
    cdef intp_t k = 0
    cdef intp_t q
    cdef bint is_any = False
    cdef qent_t first, e, least
    # the scan can stop at a waiting job ahead of every started one: all are backfilled
    least = qent_of(s, s.wait[s.started_pos[0]])
    for k in range(1, s.n_started):
        e = qent_of(s, s.wait[s.started_pos[k]])
        if qent_before(&e, &least):
            least = e
    k = 0
    for q in range(s.n_wait):
        if k < s.n_started and s.started_pos[k] == q:
            k += 1
            continue
        e = qent_of(s, s.wait[q])
        if not is_any or qent_before(&e, &first):
            first = e
            is_any = True
            if qent_before(&first, &least):
                break
    for k in range(s.n_started):
        e = qent_of(s, s.wait[s.started_pos[k]])
        s.backfilled[e.id] = is_any and qent_before(&first, &e)


cdef inline void drop_started(sched_t* s) noexcept nogil:
    """Remove the started jobs from the queue (memmove of the runs between them) and flag
    as backfilled those with a waiting job ahead: in an ordered queue, at position p after
    k earlier starts, p - k jobs ahead are still waiting; in one left unordered
    (``is_queue_unsorted``), _backfilled_unsorted."""
    cdef intp_t k, m, p, nxt, run_len
    cdef intp_t kept
    cdef intp_t* pos = s.started_pos
    for k in range(1, s.n_started):          # insertion sort; already sorted unless conservative
        p = pos[k]
        m = k - 1
        while m >= 0 and pos[m] > p:
            pos[m + 1] = pos[m]
            m -= 1
        pos[m + 1] = p
    if s.is_queue_unsorted:
        _backfilled_unsorted(s)
    else:
        for k in range(s.n_started):
            s.backfilled[s.wait[pos[k]]] = pos[k] > k
    kept = pos[0]
    for k in range(s.n_started):
        p = pos[k]
        nxt = pos[k + 1] if k + 1 < s.n_started else s.n_wait
        run_len = nxt - p - 1
        if run_len > 0:
            memmove(s.wait + kept, s.wait + p + 1, run_len * sizeof(intp_t))
            kept += run_len
    s.n_wait = kept
    s.n_sorted = kept


cdef inline int schedule_pass(sched_t* s) except -1 nogil:
    """One scheduling pass at s.now over the ordered queue: fills s.started, updates the
    running set, free count, reservations and backfilled flags, and removes the started
    jobs from the queue."""
    cdef intp_t q, j
    cdef intp_t head_pos = s.n_wait
    s.n_started = 0
    if s.is_slurm_resume and slurm_can_resume(s):
        s.sr_first = 0
        s.prof.src_started = 0      # P1's starts are running jobs with start < now
        slurm_walk(s, 0, s.sr_next)             # the rebuilt pass's walk, continued
        if s.n_started > 0:
            drop_started(s)
        slurm_record(s, True)
        return 0
    if s.is_prof_kept and s.n_run > 0 and s.run[0].end <= s.now:
        s.is_prof_kept = False      # run_rekey moves overdue ends later: rebuild
    run_rekey(s)
    if s.bfo != NULL:
        bfo_prepare(s)
    if s.backfill == BACKFILL_CONSERVATIVE:
        # No first walk: a queue-front job started outside the plan could take processors
        # that an earlier reservation relies on (then reservations would move later).
        if s.n_wait > 0:
            conservative_pass(s)
        if s.n_started > 0:
            drop_started(s)
        return 0
    for q in range(s.n_wait):
        if q >= s.n_front:
            queue_select_next(s, q)      # the queue is ordered on demand (none, EASY)
        j = s.wait[q]
        if s.procs[j] > s.free:
            head_pos = q
            break
        start_job(s, q)
    if head_pos < s.n_wait:
        if s.backfill == BACKFILL_EASY:
            easy_backfill(s, head_pos)
        elif s.backfill == BACKFILL_CONSERVATIVE:
            conservative_backfill(s, head_pos)
        elif s.backfill == BACKFILL_SLURM:
            slurm_backfill(s, head_pos)
    if s.n_started > 0:
        if s.bfo != NULL:
            bfo_drop_started(s)
        drop_started(s)
    if s.is_slurm_resume:
        slurm_record(s, head_pos < s.n_wait + s.n_started and s.backfill == BACKFILL_SLURM)
    return 0
