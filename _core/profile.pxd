# The availability profile: free processors over time, as C arrays of breakpoints.
#
# Header-only: the kernels are `cdef inline` so that the event loop (loop.pyx) and the
# Python planning form (plan.pyx) compile the very same code with no call overhead.
# Segment k is [time[k], time[k + 1]) with free[k] free processors; the last segment
# never ends.  Queries and inserts cost O(breakpoints) (a binary search plus one memmove).
from libc.stdlib cimport malloc, realloc, free as c_free
from libc.string cimport memmove

from _types cimport simtime_t, procs_t, intp_t


cdef struct profile_t:
    simtime_t* time   # breakpoint times (seconds), strictly increasing; time[0] is the origin
    procs_t* free     # free processors on [time[k], time[k + 1]); the last segment never ends
    intp_t n          # breakpoints in use (1 after profile_reset)
    intp_t cap        # breakpoints allocated


cdef inline int profile_init(profile_t* p, intp_t cap) except -1 nogil:
    """Allocate room for ``cap`` breakpoints; call profile_reset before use."""
    if cap < 8:
        cap = 8
    p.time = <simtime_t*> malloc(cap * sizeof(simtime_t))
    p.free = <procs_t*> malloc(cap * sizeof(procs_t))
    p.n = 0
    p.cap = cap
    if p.time == NULL or p.free == NULL:
        with gil:
            raise MemoryError("availability profile")
    return 0


cdef inline void profile_release(profile_t* p) noexcept nogil:
    """Free the arrays (safe on a zeroed or already released profile)."""
    c_free(p.time)
    c_free(p.free)
    p.time = NULL
    p.free = NULL
    p.n = 0
    p.cap = 0


cdef inline int profile_reserve_room(profile_t* p, intp_t extra) except -1 nogil:
    """Grow the arrays (doubling) so that ``extra`` more breakpoints fit."""
    cdef intp_t cap = p.cap
    cdef simtime_t* t
    cdef procs_t* f
    if p.n + extra <= cap:
        return 0
    while cap < p.n + extra:
        cap *= 2
    t = <simtime_t*> realloc(p.time, cap * sizeof(simtime_t))
    if t == NULL:
        with gil:
            raise MemoryError("availability profile")
    p.time = t
    f = <procs_t*> realloc(p.free, cap * sizeof(procs_t))
    if f == NULL:
        with gil:
            raise MemoryError("availability profile")
    p.free = f
    p.cap = cap
    return 0


cdef inline void profile_reset(profile_t* p, simtime_t origin, procs_t free_now) noexcept nogil:
    """One segment [origin, inf) with ``free_now`` processors free."""
    p.n = 1
    p.time[0] = origin
    p.free[0] = free_now


cdef inline int profile_add_release(profile_t* p, simtime_t time, procs_t procs) except -1 nogil:
    """``procs`` processors become free at ``time`` (>= the last breakpoint): build from
    running jobs walked by expected end."""
    cdef intp_t last = p.n - 1
    if time <= p.time[last]:
        p.free[last] += procs
        return 0
    profile_reserve_room(p, 1)
    p.time[p.n] = time
    p.free[p.n] = p.free[last] + procs
    p.n += 1
    return 0


cdef inline intp_t profile_index(const profile_t* p, simtime_t t) noexcept nogil:
    """The segment holding ``t`` (``t`` >= the origin): a binary search."""
    cdef intp_t lo = 0
    cdef intp_t hi = p.n - 1
    cdef intp_t mid
    if t >= p.time[hi]:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if p.time[mid] <= t:
            lo = mid
        else:
            hi = mid
    return lo


cdef inline intp_t _profile_split(profile_t* p, simtime_t t) noexcept nogil:
    """The breakpoint at ``t``, inserted if missing (room must exist)."""
    cdef intp_t k = profile_index(p, t)
    if p.time[k] == t:
        return k
    memmove(p.time + k + 2, p.time + k + 1, (p.n - k - 1) * sizeof(simtime_t))
    memmove(p.free + k + 2, p.free + k + 1, (p.n - k - 1) * sizeof(procs_t))
    p.time[k + 1] = t
    p.free[k + 1] = p.free[k]
    p.n += 1
    return k + 1


cdef inline int profile_reserve(profile_t* p, simtime_t start, simtime_t end,
                                procs_t procs) except -1 nogil:
    """Take ``procs`` processors over [start, end) (start >= the origin); empty if end <= start."""
    cdef intp_t a, b, k
    if end <= start:
        return 0
    profile_reserve_room(p, 2)
    a = _profile_split(p, start)
    b = _profile_split(p, end)
    for k in range(a, b):
        p.free[k] -= procs
    return 0


cdef inline simtime_t align_up(simtime_t t, simtime_t resolution) noexcept nogil:
    """The smallest multiple of ``resolution`` that is >= ``t`` (any sign of ``t``)."""
    if resolution <= 1:
        return t
    if t >= 0:
        return ((t + resolution - 1) // resolution) * resolution
    return -(((-t) // resolution) * resolution)


cdef inline bint profile_fits(const profile_t* p, simtime_t start, simtime_t duration,
                              procs_t procs) noexcept nogil:
    """True if ``procs`` processors are free over [start, start + duration) (at the
    instant ``start`` when duration is 0)."""
    cdef intp_t j = profile_index(p, start)
    cdef simtime_t end = start + duration
    while True:
        if p.free[j] < procs:
            return False
        if j + 1 >= p.n or p.time[j + 1] >= end:
            return True
        j += 1


cdef inline simtime_t profile_earliest(const profile_t* p, simtime_t start, simtime_t duration,
                                       procs_t procs, simtime_t resolution) noexcept nogil:
    """Earliest s >= start, a multiple of ``resolution``, with ``procs`` processors free over
    [s, s + duration) (at the instant s when duration is 0); -1 if never.

    One forward sweep over the breakpoints, O(breakpoints): tight loops skip the segments
    with too few free processors, then walk the window; a segment that breaks the window
    restarts the sweep there."""
    cdef simtime_t s = align_up(start, resolution)
    cdef intp_t n = p.n
    cdef intp_t k = profile_index(p, s)
    cdef intp_t j
    cdef simtime_t end
    cdef const procs_t* free = p.free
    cdef const simtime_t* time = p.time
    while True:
        if free[k] < procs:
            k += 1
            while k < n and free[k] < procs:
                k += 1
            if k >= n:
                return -1
            s = align_up(time[k], resolution)
            while k + 1 < n and time[k + 1] <= s:
                k += 1
            continue
        end = s + duration
        j = k + 1
        while j < n and time[j] < end and free[j] >= procs:
            j += 1
        if j >= n or time[j] >= end:
            return s
        k = j
