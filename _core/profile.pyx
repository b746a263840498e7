"""The availability profile from Python (kernels in profile.pxd): used by tests and by
anyone inspecting a plan.  Times are integer seconds, sizes processors."""
cimport cython
import numpy as np

from _types cimport simtime_t, procs_t, intp_t
from profile cimport (profile_t, profile_init, profile_release, profile_reset,
                      profile_add_release, profile_reserve, profile_fits, profile_earliest,
                      profile_index)


@cython.final
cdef class Profile:
    """Free processors over time from ``origin`` on: breakpoints (time, free) in C arrays.

    Args:
        origin: the first time covered (seconds).
        free_now: processors free at ``origin``.

    Examples:
        >>> p = Profile(0, 2)
        >>> p.add_release(10, 2)          # a running job frees 2 processors at t=10
        >>> p.earliest(0, 5, 4)
        10
    """
    cdef profile_t p

    def __cinit__(self, simtime_t origin, procs_t free_now):
        profile_init(&self.p, 16)
        profile_reset(&self.p, origin, free_now)

    def __dealloc__(self):
        profile_release(&self.p)

    @property
    def origin(self):
        """The first time covered (seconds)."""
        return self.p.time[0]

    def add_release(self, simtime_t time, procs_t procs):
        """``procs`` processors become free for good at ``time`` (> origin, and not before
        an earlier release)."""
        if time <= self.p.time[0] and self.p.n > 1:
            raise ValueError(f"add_release: time {time} not after the origin")
        if time < self.p.time[self.p.n - 1]:
            raise ValueError(f"add_release: time {time} before the last breakpoint "
                             f"{self.p.time[self.p.n - 1]}")
        if procs < 0:
            raise ValueError("add_release: procs must be >= 0")
        profile_add_release(&self.p, time, procs)

    def reserve(self, simtime_t start, simtime_t end, procs_t procs):
        """Take ``procs`` processors over [start, end) (nothing when end <= start)."""
        if start < self.p.time[0]:
            raise ValueError(f"reserve: start {start} before the origin {self.p.time[0]}")
        profile_reserve(&self.p, start, end, procs)

    def fits(self, simtime_t start, simtime_t duration, procs_t procs):
        """True if ``procs`` processors are free over [start, start + duration)."""
        if start < self.p.time[0]:
            raise ValueError(f"fits: start {start} before the origin {self.p.time[0]}")
        return profile_fits(&self.p, start, duration, procs)

    def earliest(self, simtime_t start, simtime_t duration, procs_t procs,
                 simtime_t resolution=1):
        """Earliest time >= ``start`` (a multiple of ``resolution``) at which ``procs``
        processors are free for ``duration`` seconds; -1 if never."""
        if start < self.p.time[0]:
            raise ValueError(f"earliest: start {start} before the origin {self.p.time[0]}")
        if resolution < 1:
            raise ValueError("earliest: resolution must be >= 1")
        return profile_earliest(&self.p, start, duration, procs, resolution)

    def free_at(self, simtime_t time):
        """Processors free at ``time`` (>= origin)."""
        if time < self.p.time[0]:
            raise ValueError(f"free_at: time {time} before the origin {self.p.time[0]}")
        return self.p.free[profile_index(&self.p, time)]

    def breakpoints(self):
        """(times int64[k], free int32[k]): segment i is [times[i], times[i + 1])."""
        times = np.empty(self.p.n, dtype=np.int64)
        free = np.empty(self.p.n, dtype=np.int32)
        cdef intp_t k
        for k in range(self.p.n):
            times[k] = self.p.time[k]
            free[k] = self.p.free[k]
        return times, free

    def __len__(self):
        return self.p.n
