# The event heap: a binary min-heap of (time, job index) C structs.
#
# Header-only (`cdef inline`), like profile.pxd.  The key (time, index) is a total order,
# so completions at one time pop in increasing job index: the tie rule of
# docs/scheduling-semantics.md.
from libc.stdlib cimport malloc, realloc, free as c_free

from _types cimport simtime_t, intp_t


cdef struct event_t:
    simtime_t time    # when the event happens (seconds)
    intp_t id         # job index, the tie-breaker


cdef struct heap_t:
    event_t* a        # the heap array, a[0] is the smallest
    intp_t n          # events held
    intp_t cap        # events allocated


cdef inline bint event_before(event_t x, event_t y) noexcept nogil:
    """(time, index) lexicographic order."""
    return x.time < y.time or (x.time == y.time and x.id < y.id)


cdef inline int heap_init(heap_t* h, intp_t cap) except -1 nogil:
    """Allocate room for ``cap`` events (grows on push)."""
    if cap < 8:
        cap = 8
    h.a = <event_t*> malloc(cap * sizeof(event_t))
    h.n = 0
    h.cap = cap
    if h.a == NULL:
        with gil:
            raise MemoryError("event heap")
    return 0


cdef inline void heap_release(heap_t* h) noexcept nogil:
    """Free the array (safe twice)."""
    c_free(h.a)
    h.a = NULL
    h.n = 0
    h.cap = 0


cdef inline int heap_push(heap_t* h, simtime_t time, intp_t id) except -1 nogil:
    """Add an event: sift up, O(log n)."""
    cdef event_t ev
    cdef event_t* grown
    cdef intp_t k, parent
    if h.n == h.cap:
        grown = <event_t*> realloc(h.a, 2 * h.cap * sizeof(event_t))
        if grown == NULL:
            with gil:
                raise MemoryError("event heap")
        h.a = grown
        h.cap *= 2
    ev.time = time
    ev.id = id
    k = h.n
    h.n += 1
    while k > 0:
        parent = (k - 1) >> 1
        if not event_before(ev, h.a[parent]):
            break
        h.a[k] = h.a[parent]
        k = parent
    h.a[k] = ev
    return 0


cdef inline event_t heap_pop(heap_t* h) noexcept nogil:
    """Remove and return the smallest event (the heap must not be empty): sift down."""
    cdef event_t top = h.a[0]
    cdef event_t last
    cdef intp_t k = 0
    cdef intp_t child
    h.n -= 1
    if h.n > 0:
        last = h.a[h.n]
        while True:
            child = 2 * k + 1
            if child >= h.n:
                break
            if child + 1 < h.n and event_before(h.a[child + 1], h.a[child]):
                child += 1
            if not event_before(h.a[child], last):
                break
            h.a[k] = h.a[child]
            k = child
        h.a[k] = last
    return top


cdef inline simtime_t next_event_time(const heap_t* h, const simtime_t* submit, intp_t i,
                                      intp_t n) noexcept nogil:
    """The next event time of a replay: the heap's earliest completion or job i's submit
    time, whichever comes first (callers ensure one exists: ``i < n`` or ``h.n > 0``)."""
    if h.n > 0 and (i >= n or h.a[0].time <= submit[i]):
        return h.a[0].time
    return submit[i]
