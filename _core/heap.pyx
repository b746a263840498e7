"""The event heap from Python (kernels in heap.pxd), for tests."""
cimport cython

from _types cimport simtime_t, intp_t
from heap cimport heap_t, event_t, heap_init, heap_release, heap_push, heap_pop


@cython.final
cdef class EventHeap:
    """Events (time in seconds, job index) popped smallest first, ties by index.

    Examples:
        >>> h = EventHeap()
        >>> h.push(5, 2); h.push(5, 1); h.push(3, 9)
        >>> [h.pop() for _ in range(len(h))]
        [(3, 9), (5, 1), (5, 2)]
    """
    cdef heap_t h

    def __cinit__(self):
        heap_init(&self.h, 8)

    def __dealloc__(self):
        heap_release(&self.h)

    def push(self, simtime_t time, intp_t id):
        """Add the event (time, id)."""
        heap_push(&self.h, time, id)

    def pop(self):
        """Remove and return the smallest (time, id); IndexError when empty."""
        if self.h.n == 0:
            raise IndexError("pop from an empty EventHeap")
        cdef event_t ev = heap_pop(&self.h)
        return (ev.time, ev.id)

    def peek(self):
        """The smallest (time, id) without removing it; None when empty."""
        if self.h.n == 0:
            return None
        return (self.h.a[0].time, self.h.a[0].id)

    def __len__(self):
        return self.h.n
