"""The availability profile from Python (kernels in profile.pxd): used by tests and by
anyone inspecting a plan.  Times are integer seconds, sizes processors."""
cimport cython
import numpy as np

from _types cimport simtime_t, procs_t, intp_t
from profile cimport (profile_t, ppos_t, pblock_t, profile_init, profile_release, profile_reset,
                      profile_add_release, profile_reserve, profile_reserve_merge,
                      profile_give_back_max,
                      profile_fits, profile_earliest,
                      profile_locate, profile_value, profile_origin, profile_last_time,
                      profile_hint, profile_note, profile_merge_at, profile_min_over,
                      profile_max_over, profile_last_short_end, dec_add, dec_bound,
                      dec_may_fit, PROFILE_BLOCK,
                      PROFILE_GROUP)


BLOCK = PROFILE_BLOCK
"""Breakpoints a block of the profile holds at most (tests size their inputs by it)."""
GROUP = PROFILE_GROUP
"""Blocks in a group (the second level of summaries)."""


@cython.final
cdef class Profile:
    """Free processors over time from ``origin`` on: breakpoints (time, free) in C blocks
    (profile.pxd: an unrolled list with per-block min, max and lazy add).

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
        return profile_origin(&self.p)

    def add_release(self, simtime_t time, procs_t procs):
        """``procs`` processors become free for good at ``time`` (> origin, and not before
        an earlier release)."""
        if time <= profile_origin(&self.p) and self.p.n > 1:
            raise ValueError(f"add_release: time {time} not after the origin")
        if time < profile_last_time(&self.p):
            raise ValueError(f"add_release: time {time} before the last breakpoint "
                             f"{profile_last_time(&self.p)}")
        if procs < 0:
            raise ValueError("add_release: procs must be >= 0")
        profile_add_release(&self.p, time, procs)

    def reserve(self, simtime_t start, simtime_t end, procs_t procs):
        """Take ``procs`` processors over [start, end) (nothing when end <= start)."""
        if start < profile_origin(&self.p):
            raise ValueError(f"reserve: start {start} before the origin {profile_origin(&self.p)}")
        profile_reserve(&self.p, start, end, procs)

    def reserve_merge(self, simtime_t start, simtime_t end, procs_t procs):
        """``reserve`` (``procs`` < 0 gives back), then drop the breakpoint at ``end`` when
        it is not first in its block and the segment before it now holds the same count:
        the kept pass's range update (profile_reserve_merge)."""
        if start < profile_origin(&self.p):
            raise ValueError(f"reserve_merge: start {start} before the origin {profile_origin(&self.p)}")
        profile_reserve_merge(&self.p, start, end, procs)

    def give_back_max(self, simtime_t start, simtime_t end, procs_t procs):
        """``reserve_merge(start, end, -procs)`` (start < end), returning the most
        processors free on [start, end) after it (profile_give_back_max)."""
        if not profile_origin(&self.p) <= start < end:
            raise ValueError(f"give_back_max: [{start}, {end}) not after the origin {profile_origin(&self.p)}")
        return profile_give_back_max(&self.p, start, end, procs)

    def merge_at(self, simtime_t t):
        """Drop the breakpoint at ``t`` when it is not first in its block and holds the
        count of the segment before it (profile_merge_at)."""
        profile_merge_at(&self.p, t)

    def give_back(self, simtime_t start, simtime_t end, procs_t procs):
        """Return ``procs`` processors taken over [start, end) by ``reserve`` and drop the
        breakpoints at ``start`` and ``end`` that no longer change the count (the kept
        profile's move of a reservation, backfill.pxd)."""
        if start < profile_origin(&self.p):
            raise ValueError(f"give_back: start {start} before the origin {profile_origin(&self.p)}")
        profile_reserve(&self.p, start, end, -procs)
        profile_merge_at(&self.p, end)
        profile_merge_at(&self.p, start)

    def fits(self, simtime_t start, simtime_t duration, procs_t procs):
        """True if ``procs`` processors are free over [start, start + duration)."""
        if start < profile_origin(&self.p):
            raise ValueError(f"fits: start {start} before the origin {profile_origin(&self.p)}")
        return profile_fits(&self.p, start, duration, procs)

    def earliest(self, simtime_t start, simtime_t duration, procs_t procs,
                 simtime_t resolution=1):
        """Earliest time >= ``start`` (a multiple of ``resolution``) at which ``procs``
        processors are free for ``duration`` seconds; -1 if never."""
        if start < profile_origin(&self.p):
            raise ValueError(f"earliest: start {start} before the origin {profile_origin(&self.p)}")
        if resolution < 1:
            raise ValueError("earliest: resolution must be >= 1")
        return profile_earliest(&self.p, start, duration, procs, resolution)

    def note(self, procs_t procs, simtime_t duration, simtime_t when):
        """Remember ``when`` as the earliest fit of (procs, duration) (a lower bound for
        later queries of a size and duration at least as large; see profile_hint)."""
        if when < 0:
            raise ValueError("note: when must be >= 0")
        profile_note(&self.p, procs, duration, when)

    def hint(self, procs_t procs, simtime_t duration):
        """The lower bound profile_hint gives for (procs, duration); -1 if none."""
        return profile_hint(&self.p, procs, duration)

    def free_at(self, simtime_t time):
        """Processors free at ``time`` (>= origin)."""
        if time < profile_origin(&self.p):
            raise ValueError(f"free_at: time {time} before the origin {profile_origin(&self.p)}")
        return profile_value(&self.p, profile_locate(&self.p, time))

    def min_over(self, simtime_t start, simtime_t end):
        """The fewest processors free at any instant of [start, end) (origin <= start <
        end): the run of identical moves of the kept conservative pass asks it."""
        if start < profile_origin(&self.p) or end <= start:
            raise ValueError(f"min_over: need origin <= start < end, got [{start}, {end})")
        return profile_min_over(&self.p, start, end)

    def last_short_end(self, simtime_t lo, simtime_t t, procs_t procs):
        """The end of the last segment before the one holding ``t`` with fewer than
        ``procs`` free, when it ends after ``lo``; else ``lo`` (origin <= lo <= t): the
        kept conservative pass's answer for a holder whose hold covers [lo, t]."""
        if lo < profile_origin(&self.p) or t < lo:
            raise ValueError(f"last_short_end: need origin <= lo <= t, got {lo}, {t}")
        return profile_last_short_end(&self.p, profile_locate(&self.p, t), procs, lo)

    def max_over(self, simtime_t start, simtime_t end):
        """The most processors free at any instant of [start, end) (origin <= start <
        end; the kept pass's bound dec_m)."""
        if start < profile_origin(&self.p) or end <= start:
            raise ValueError(f"max_over: need origin <= start < end, got [{start}, {end})")
        return profile_max_over(&self.p, start, end)

    def came_back(self, simtime_t start, simtime_t end):
        """Record that processors came back over [start, end) after ``give_back`` (the
        kept pass's recorded intervals, dec_add: at most DEC_SLOTS, merged when more)."""
        if start < profile_origin(&self.p):
            raise ValueError(f"came_back: start {start} before the origin {profile_origin(&self.p)}")
        dec_add(&self.p, start, end)

    def came_back_bound(self, simtime_t start, simtime_t end):
        """An upper bound of the free processors at every instant of [start, end) where
        processors came back since the intervals were dropped (dec_bound; -1 if no
        recorded interval meets it)."""
        if start < profile_origin(&self.p) or end <= start:
            raise ValueError(f"came_back_bound: need origin <= start < end, got [{start}, {end})")
        return dec_bound(&self.p, start, end)

    def came_back_fits(self, simtime_t start, simtime_t end, procs_t procs):
        """False only if no instant of [start, end) where processors came back since the
        intervals were dropped has ``procs`` free (dec_may_fit)."""
        if start < profile_origin(&self.p) or end <= start:
            raise ValueError(f"came_back_fits: need origin <= start < end, got [{start}, {end})")
        return dec_may_fit(&self.p, start, end, procs)

    def forget_came_back(self):
        """Drop the recorded intervals (as a pass does once its answers hold)."""
        self.p.n_dec = 0

    def breakpoints(self):
        """(times int64[k], free int32[k]): segment i is [times[i], times[i + 1])."""
        times = np.empty(self.p.n, dtype=np.int64)
        free = np.empty(self.p.n, dtype=np.int32)
        cdef intp_t b, i
        cdef intp_t k = 0
        for b in range(self.p.nb):
            for i in range(self.p.blk[b].n):
                times[k] = self.p.blk[b].time[i]
                free[k] = self.p.blk[b].free[i] + self.p.badd[b]
                k += 1
        return times, free

    def check(self):
        """Assert the block and group invariants (profile.pxd); for tests.  Returns the
        block count."""
        cdef intp_t b, i, g, e
        cdef simtime_t prev = profile_origin(&self.p) - 1
        cdef intp_t total = 0
        cdef pblock_t* blk
        for b in range(self.p.nb):
            blk = &self.p.blk[b]
            assert 1 <= blk.n <= PROFILE_BLOCK, (b, blk.n)
            assert self.p.blo[b] == min(blk.free[i] for i in range(blk.n)), b
            assert self.p.bhi[b] == max(blk.free[i] for i in range(blk.n)), b
            assert self.p.bfirst[b] == blk.time[0], ("bfirst", b)
            for i in range(blk.n):
                assert blk.time[i] > prev, (b, i)
                prev = blk.time[i]
            total += blk.n
        assert total == self.p.n
        for g in range((self.p.nb + PROFILE_GROUP - 1) // PROFILE_GROUP):
            e = min((g + 1) * PROFILE_GROUP, self.p.nb)
            assert self.p.glo[g] == min(self.p.blo[b] + self.p.badd[b]
                                        for b in range(g * PROFILE_GROUP, e)), ("glo", g)
            assert self.p.ghi[g] == max(self.p.bhi[b] + self.p.badd[b]
                                        for b in range(g * PROFILE_GROUP, e)), ("ghi", g)
        return self.p.nb

    def __len__(self):
        return self.p.n
