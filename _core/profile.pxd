# The availability profile: free processors over time, as breakpoints kept in blocks.
#
# Header-only: the kernels are `cdef inline` so that the event loop (loop.pyx) and the
# Python planning form (plan.pyx) compile the very same code with no call overhead.
#
# The profile is a step function: breakpoint k (in time order) starts the segment
# [time_k, time_{k+1}) with free_k free processors; the last segment never ends.  The
# breakpoints live in an ordered array of fixed-size blocks (an unrolled list, issue 16).
# Each block holds up to PROFILE_BLOCK breakpoints and three summaries:
#
#   actual free of entry i of block b = blk[b].free[i] + badd[b]   (a lazy range update)
#   blo[b] = min(blk[b].free[0:n]),  bhi[b] = max(blk[b].free[0:n])  (stored values)
#
# The summaries (badd, blo, bhi) sit in their own contiguous arrays, apart from the
# blocks, so that the searches skip blocks reading a few bytes each.
#
# Blocks of blocks (issue 16): every PROFILE_GROUP consecutive blocks form a group g
# (blocks g * PROFILE_GROUP ...) with two more summaries, of actual free counts:
#
#   glo[g] = min(blo[b] + badd[b]),  ghi[g] = max(bhi[b] + badd[b])  over the group's blocks
#
# so the walks skip whole groups (a two-level min/max summary: a walk over b blocks costs
# O(PROFILE_GROUP + b / PROFILE_GROUP) instead of O(b)).  Every kernel that changes a
# block's blo, bhi or badd, or moves blocks, keeps them exact (_groups_fix).
#
# Invariants: blocks are in time order, every block in use holds 1..PROFILE_BLOCK
# breakpoints, times strictly increase across the whole sequence, block 0 entry 0 is the
# origin, and lo/hi are exact after every kernel returns.
#
# Costs with B breakpoints in b = B / PROFILE_BLOCK + 1 blocks: locating a time is a
# binary search over blocks then within one (O(log B)); a reservation splits at most two
# segments (a memmove inside one block, a block split when full: O(PROFILE_BLOCK + b))
# and updates whole blocks lazily (O(PROFILE_BLOCK + b)); the earliest-fit search skips
# whole blocks by their min (every free >= procs: the window goes on) or max (every free <
# procs: no start there), so each hole it visits costs O(PROFILE_BLOCK + b) instead of
# O(B).  The profile is a function of time only: where breakpoints fall (and whether two
# neighbours hold the same free count) never changes an answer.
from libc.stdlib cimport malloc, realloc, free as c_free
from libc.string cimport memmove, memcpy, memset
from libc.stdint cimport int32_t, uint64_t, INT64_MAX

from _types cimport simtime_t, procs_t, intp_t


cdef enum:
    PROFILE_BLOCK = 128   # breakpoints per block (a block is 1,544 bytes)


cdef struct pblock_t:
    simtime_t time[PROFILE_BLOCK]   # breakpoint times (seconds), strictly increasing
    procs_t free[PROFILE_BLOCK]     # stored free counts; the actual count adds badd[b]
    int32_t n                       # entries in use, 1..PROFILE_BLOCK


cdef enum:
    PROFILE_GROUP = 8     # blocks per group (glo / ghi: the second level of summaries)


cdef enum:
    PROFILE_HINTS = 32    # earliest-fit answers remembered as lower bounds (profile_hint)


cdef enum:
    SHAPE_SLOTS = 256     # kept-profile hints: one answer per (size, duration) slot


cdef enum:
    DEC_SLOTS = 4         # kept profile: intervals where processors came back (dec_add)


cdef struct profile_t:
    pblock_t* blk     # blocks in time order
    procs_t* badd     # per block: lazy amount added to every entry
    procs_t* blo      # per block: min of the stored free[0:n]
    procs_t* bhi      # per block: max of the stored free[0:n]
    simtime_t* bfirst # per block: its first breakpoint time (blk[b].time[0], contiguous
                      # for profile_locate's binary search)
    procs_t* glo      # per group of PROFILE_GROUP blocks: min of blo + badd (actual counts)
    procs_t* ghi      # per group: max of bhi + badd (actual counts); room for cap entries
    intp_t nb         # blocks in use (1 after profile_reset)
    intp_t cap        # blocks allocated
    intp_t n          # breakpoints in use (1 after profile_reset)
    # profile_locate's two fingers (a cache, checked before use): the last two distinct
    # blocks it answered, the latest first, and the entry it answered in each
    intp_t loc_b      # the last block
    intp_t loc_i      # the entry answered in loc_b
    intp_t loc_b2     # the block answered before loc_b
    intp_t loc_i2     # the entry answered in loc_b2
    # earliest-fit answers since the last reset, as lower bounds for later queries
    procs_t hint_procs[PROFILE_HINTS]       # size asked (processors)
    simtime_t hint_dur[PROFILE_HINTS]       # duration asked (seconds)
    simtime_t hint_when[PROFILE_HINTS]      # the answer (seconds)
    intp_t n_hints                          # entries in use
    intp_t hint_next                        # next entry to overwrite when full
    # the same, exact shapes only, direct-mapped (shape_hint; the kept-profile pass)
    procs_t shape_procs[SHAPE_SLOTS]        # size (processors), 0: empty slot
    simtime_t shape_dur[SHAPE_SLOTS]        # duration (seconds)
    simtime_t shape_when[SHAPE_SLOTS]       # the latest answer for that shape (seconds), -1
    bint shape_nofit[SHAPE_SLOTS]           # slurm: that shape did not fit now in this pass
    intp_t shape_hidx[SHAPE_SLOTS]          # where profile_note put that shape, -1 (a cache)
    # kept profile: where processors came back since the previous pass's answers (dec_add)
    simtime_t dec_a[DEC_SLOTS]              # interval starts (seconds)
    simtime_t dec_b[DEC_SLOTS]              # interval ends, exclusive (seconds)
    procs_t dec_m[DEC_SLOTS]                # bound on its free counts (processors), -1: not
                                            # taken yet (dec_bound takes it on first use)
    intp_t n_dec                            # intervals in use
    # lazy build (backfill.pxd): releases not yet turned into breakpoints, all later than
    # the last breakpoint; the caller's sorted source is read through a cursor
    simtime_t* pend_time      # min-heap of pending releases: time (seconds)
    procs_t* pend_procs       # and processors given back then
    intp_t n_pend             # entries in the heap
    intp_t cap_pend           # entries allocated
    intp_t src_next           # cursor into the caller's sorted releases (running jobs)
    simtime_t src_res         # resolution the caller rounds its release times up to
    intp_t src_started        # jobs the caller had started before the build (in its base)


cdef struct ppos_t:
    intp_t b          # block
    intp_t i          # entry in that block


cdef inline int profile_init(profile_t* p, intp_t cap) except -1 nogil:
    """Allocate room for about ``cap`` breakpoints; call profile_reset before use."""
    cdef intp_t nb = cap // PROFILE_BLOCK + 2
    p.blk = <pblock_t*> malloc(nb * sizeof(pblock_t))
    p.badd = <procs_t*> malloc(nb * sizeof(procs_t))
    p.blo = <procs_t*> malloc(nb * sizeof(procs_t))
    p.bhi = <procs_t*> malloc(nb * sizeof(procs_t))
    p.glo = <procs_t*> malloc(nb * sizeof(procs_t))
    p.ghi = <procs_t*> malloc(nb * sizeof(procs_t))
    p.bfirst = <simtime_t*> malloc(nb * sizeof(simtime_t))
    p.nb = 0
    p.cap = nb
    p.n = 0
    p.loc_b = 0
    p.loc_i = 0
    p.loc_b2 = 0
    p.loc_i2 = 0
    p.pend_time = NULL
    p.pend_procs = NULL
    p.n_pend = 0
    p.cap_pend = 0
    p.src_next = 0
    p.src_res = 1
    p.src_started = 0
    if (p.blk == NULL or p.badd == NULL or p.blo == NULL or p.bhi == NULL
            or p.glo == NULL or p.ghi == NULL or p.bfirst == NULL):
        with gil:
            raise MemoryError("availability profile")
    return 0


cdef inline void profile_release(profile_t* p) noexcept nogil:
    """Free the blocks (safe on a zeroed or already released profile)."""
    c_free(p.blk)
    c_free(p.badd)
    c_free(p.blo)
    c_free(p.bhi)
    c_free(p.glo)
    c_free(p.ghi)
    c_free(p.bfirst)
    c_free(p.pend_time)
    c_free(p.pend_procs)
    p.blk = NULL
    p.badd = NULL
    p.blo = NULL
    p.bhi = NULL
    p.glo = NULL
    p.ghi = NULL
    p.bfirst = NULL
    p.pend_time = NULL
    p.pend_procs = NULL
    p.n_pend = 0
    p.cap_pend = 0
    p.nb = 0
    p.cap = 0
    p.n = 0


cdef inline bint _grow(void** a, intp_t cap, size_t item) noexcept nogil:
    """realloc one per-block array to ``cap`` entries of ``item`` bytes; False on failure
    (``a`` kept)."""
    cdef void* r = realloc(a[0], cap * item)
    if r == NULL:
        return False
    a[0] = r
    return True


cdef inline int _profile_room(profile_t* p) except -1 nogil:
    """Make room for one more block (doubling)."""
    cdef intp_t cap
    if p.nb < p.cap:
        return 0
    cap = p.cap * 2 if p.cap > 0 else 4
    if not (_grow(<void**> &p.blk, cap, sizeof(pblock_t))
            and _grow(<void**> &p.badd, cap, sizeof(procs_t))
            and _grow(<void**> &p.blo, cap, sizeof(procs_t))
            and _grow(<void**> &p.bhi, cap, sizeof(procs_t))
            and _grow(<void**> &p.glo, cap, sizeof(procs_t))
            and _grow(<void**> &p.ghi, cap, sizeof(procs_t))
            and _grow(<void**> &p.bfirst, cap, sizeof(simtime_t))):
        with gil:
            raise MemoryError("availability profile")
    p.cap = cap
    return 0


cdef inline procs_t _block_lo(const pblock_t* blk) noexcept nogil:
    """The smallest stored count of a block (a branch-free reduction the compiler
    vectorizes)."""
    cdef int32_t i
    cdef procs_t lo = blk.free[0]
    for i in range(1, blk.n):
        lo = blk.free[i] if blk.free[i] < lo else lo
    return lo


cdef inline procs_t _block_hi(const pblock_t* blk) noexcept nogil:
    """The largest stored count of a block (branch-free, vectorized)."""
    cdef int32_t i
    cdef procs_t hi = blk.free[0]
    for i in range(1, blk.n):
        hi = blk.free[i] if blk.free[i] > hi else hi
    return hi


cdef inline void _block_bounds(profile_t* p, intp_t b) noexcept nogil:
    """Recompute blo[b] and bhi[b]."""
    p.blo[b] = _block_lo(&p.blk[b])
    p.bhi[b] = _block_hi(&p.blk[b])


cdef inline void _group_bounds(profile_t* p, intp_t g) noexcept nogil:
    """Recompute glo[g] and ghi[g] from the blocks of group g in use."""
    cdef intp_t b = g * PROFILE_GROUP
    cdef intp_t e = b + PROFILE_GROUP
    cdef procs_t lo, hi, v
    if e > p.nb:
        e = p.nb
    lo = p.blo[b] + p.badd[b]
    hi = p.bhi[b] + p.badd[b]
    b += 1
    while b < e:
        v = p.blo[b] + p.badd[b]
        lo = v if v < lo else lo
        v = p.bhi[b] + p.badd[b]
        hi = v if v > hi else hi
        b += 1
    p.glo[g] = lo
    p.ghi[g] = hi


cdef inline void _groups_fix(profile_t* p, intp_t b0, intp_t b1) noexcept nogil:
    """Recompute the group summaries of the groups holding blocks b0..b1 (inclusive,
    clamped to the blocks in use)."""
    cdef intp_t g
    if b1 >= p.nb:
        b1 = p.nb - 1
    for g in range(b0 // PROFILE_GROUP, b1 // PROFILE_GROUP + 1):
        _group_bounds(p, g)


cdef inline void _groups_add(profile_t* p, intp_t b0, intp_t b1, procs_t procs) noexcept nogil:
    """Blocks b0..b1 - 1 (whole ones) had ``procs`` added to their badd: shift the groups
    they fill entirely, recompute the (at most two) they share with other blocks."""
    cdef intp_t g
    cdef intp_t g0 = b0 // PROFILE_GROUP
    cdef intp_t g1 = (b1 - 1) // PROFILE_GROUP
    if b1 <= b0:
        return
    _group_bounds(p, g0)
    for g in range(g0 + 1, g1):
        p.glo[g] += procs
        p.ghi[g] += procs
    if g1 > g0:
        _group_bounds(p, g1)


cdef inline void profile_reset(profile_t* p, simtime_t origin, procs_t free_now) noexcept nogil:
    """One segment [origin, inf) with ``free_now`` processors free (room for one block
    always exists after profile_init)."""
    cdef pblock_t* blk = &p.blk[0]
    p.nb = 1
    p.loc_b = 0
    p.loc_i = 0
    p.loc_b2 = 0
    p.loc_i2 = 0
    p.n = 1
    blk.n = 1
    blk.time[0] = origin
    blk.free[0] = free_now
    p.badd[0] = 0
    p.blo[0] = free_now
    p.bhi[0] = free_now
    p.glo[0] = free_now
    p.ghi[0] = free_now
    p.bfirst[0] = origin
    p.n_hints = 0
    p.hint_next = 0
    p.n_pend = 0
    p.src_next = 0


cdef inline simtime_t profile_hint(const profile_t* p, procs_t procs,
                                   simtime_t duration) noexcept nogil:
    """A lower bound on profile_earliest(., procs, duration, .): the latest answer noted
    (profile_note) for a size <= ``procs`` and a duration <= ``duration``; -1 if none.

    Sound because the earliest fit only moves later when the size or the duration grows
    or when processors are taken (profile_reserve); a profile_add_release after a note
    would give processors back, so notes are only taken once the build is done and are
    dropped by profile_reset."""
    cdef intp_t k
    cdef simtime_t best = -1
    cdef simtime_t v
    for k in range(p.n_hints):     # branch-free: which entries qualify is unpredictable
        v = p.hint_when[k] if (p.hint_procs[k] <= procs) & (p.hint_dur[k] <= duration) else -1
        best = v if v > best else best
    return best


cdef inline void profile_note(profile_t* p, procs_t procs, simtime_t duration,
                              simtime_t when) noexcept nogil:
    """Remember an earliest-fit answer ``when`` (>= 0) for (procs, duration): the entry of
    the same size and duration if any (answers only grow), else a free entry, else the
    oldest one (any subset of answers gives a sound bound)."""
    _profile_note_at(p, procs, duration, when)


cdef inline intp_t _profile_note_at(profile_t* p, procs_t procs, simtime_t duration,
                                    simtime_t when) noexcept nogil:
    """profile_note, returning the entry that holds the shape now."""
    cdef intp_t k
    for k in range(p.n_hints):
        if p.hint_procs[k] == procs and p.hint_dur[k] == duration:
            if when > p.hint_when[k]:
                p.hint_when[k] = when
            return k
    return _profile_note_new(p, procs, duration, when)


cdef inline intp_t _profile_note_new(profile_t* p, procs_t procs, simtime_t duration,
                                     simtime_t when) noexcept nogil:
    """Note (procs, duration) in a free entry, else the oldest one, without looking for
    an entry of that shape (a second entry of one shape is sound, see profile_hint);
    returns the entry."""
    cdef intp_t k
    if p.n_hints < PROFILE_HINTS:
        k = p.n_hints
        p.n_hints += 1
    else:
        k = p.hint_next
        p.hint_next = (k + 1) % PROFILE_HINTS
    p.hint_procs[k] = procs
    p.hint_dur[k] = duration
    p.hint_when[k] = when
    return k


cdef inline intp_t _shape_slot(procs_t procs, simtime_t duration) noexcept nogil:
    cdef uint64_t h = (<uint64_t> procs) * 0x9E3779B97F4A7C15ULL
    h ^= (<uint64_t> duration) * 0xC2B2AE3D27D4EB4FULL
    return <intp_t> ((h >> 40) & (SHAPE_SLOTS - 1))


cdef inline void shape_reset(profile_t* p) noexcept nogil:
    """Forget every shape (at the start of a pass)."""
    memset(p.shape_procs, 0, sizeof(p.shape_procs))


cdef inline intp_t _shape_find(const profile_t* p, procs_t procs, simtime_t duration) noexcept nogil:
    """The slot holding this (size, duration), -1 if its slot holds another one."""
    cdef intp_t k = _shape_slot(procs, duration)
    if p.shape_procs[k] == procs and p.shape_dur[k] == duration:
        return k
    return -1


cdef inline intp_t _shape_claim(profile_t* p, procs_t procs, simtime_t duration) noexcept nogil:
    """The slot of this (size, duration), taken over (answer -1, fitting) if another
    shape held it: losing what a slot knew is always sound."""
    cdef intp_t k = _shape_slot(procs, duration)
    if p.shape_procs[k] != procs or p.shape_dur[k] != duration:
        p.shape_procs[k] = procs
        p.shape_dur[k] = duration
        p.shape_when[k] = -1
        p.shape_nofit[k] = False
        p.shape_hidx[k] = -1
    return k


cdef inline simtime_t shape_hint(const profile_t* p, procs_t procs,
                                 simtime_t duration) noexcept nogil:
    """profile_hint for the exact shape only, O(1): the latest answer noted for this size
    and duration in this pass if its slot still holds it, else -1 (any subset of the
    answers is a sound lower bound, see profile_hint)."""
    cdef intp_t k = _shape_find(p, procs, duration)
    return p.shape_when[k] if k >= 0 else -1


cdef inline void shape_note(profile_t* p, procs_t procs, simtime_t duration,
                            simtime_t when) noexcept nogil:
    """Remember the earliest-fit answer ``when`` (>= 0) for the exact shape."""
    cdef intp_t k = _shape_claim(p, procs, duration)
    if when > p.shape_when[k]:
        p.shape_when[k] = when


cdef inline void shape_note_both(profile_t* p, procs_t procs, simtime_t duration,
                                 simtime_t when) noexcept nogil:
    """shape_note and profile_note of one answer: the dominance entry of a shape already
    noted is found through the shape's slot in O(1) (checked: a ring entry may have been
    taken by another shape since) instead of a scan of PROFILE_HINTS entries (the kept
    pass notes every holder's answer); a shape new to its slot (its first answer in this
    pass, or its slot taken by another shape since) takes a ring entry without a scan for
    one of its shape: the ring may then hold it twice, which is sound (profile_hint) and
    spares the scan to passes whose holders are mostly of distinct shapes (``learned``
    estimates)."""
    cdef intp_t k = _shape_claim(p, procs, duration)
    cdef intp_t h = p.shape_hidx[k]
    if when > p.shape_when[k]:
        p.shape_when[k] = when
    if (0 <= h < p.n_hints and p.hint_procs[h] == procs and p.hint_dur[h] == duration):
        if when > p.hint_when[h]:
            p.hint_when[h] = when
        return
    if h < 0:
        p.shape_hidx[k] = _profile_note_new(p, procs, duration, when)
    else:
        p.shape_hidx[k] = _profile_note_at(p, procs, duration, when)


cdef inline bint shape_seen_nofit(const profile_t* p, procs_t procs,
                                  simtime_t duration) noexcept nogil:
    """Whether this shape was noted as not fitting now in this pass (shape_note_nofit)."""
    cdef intp_t k = _shape_find(p, procs, duration)
    return k >= 0 and p.shape_nofit[k]


cdef inline void shape_note_nofit(profile_t* p, procs_t procs, simtime_t duration) noexcept nogil:
    """Remember that this shape does not fit now: within a pass the profile only loses
    processors, so it never will."""
    p.shape_nofit[_shape_claim(p, procs, duration)] = True


cdef inline simtime_t profile_origin(const profile_t* p) noexcept nogil:
    """The first time covered (seconds)."""
    return p.blk[0].time[0]


cdef inline simtime_t profile_last_time(const profile_t* p) noexcept nogil:
    """The time of the last breakpoint (seconds)."""
    cdef const pblock_t* blk = &p.blk[p.nb - 1]
    return blk.time[blk.n - 1]


cdef inline procs_t profile_free_now(const profile_t* p) noexcept nogil:
    """Processors free on the first segment."""
    return p.blk[0].free[0] + p.badd[0]


cdef inline int profile_add_release(profile_t* p, simtime_t time, procs_t procs) except -1 nogil:
    """``procs`` processors become free at ``time`` (>= the last breakpoint): build from
    running jobs walked by expected end."""
    cdef pblock_t* blk = &p.blk[p.nb - 1]
    cdef int32_t last = blk.n - 1
    cdef procs_t v
    if time <= blk.time[last]:
        v = blk.free[last]
        blk.free[last] += procs
        if procs < 0 or v == p.blo[p.nb - 1]:
            _block_bounds(p, p.nb - 1)
        elif blk.free[last] > p.bhi[p.nb - 1]:
            p.bhi[p.nb - 1] = blk.free[last]
        _group_bounds(p, (p.nb - 1) // PROFILE_GROUP)
        return 0
    v = blk.free[last] + p.badd[p.nb - 1] + procs
    if blk.n == PROFILE_BLOCK:
        _profile_room(p)
        blk = &p.blk[p.nb]
        blk.n = 1
        blk.time[0] = time
        blk.free[0] = v
        p.bfirst[p.nb] = time
        p.badd[p.nb] = 0
        p.blo[p.nb] = v
        p.bhi[p.nb] = v
        p.nb += 1
    else:
        v -= p.badd[p.nb - 1]
        blk.time[blk.n] = time
        blk.free[blk.n] = v
        blk.n += 1
        if v < p.blo[p.nb - 1]:
            p.blo[p.nb - 1] = v
        if v > p.bhi[p.nb - 1]:
            p.bhi[p.nb - 1] = v
    _group_bounds(p, (p.nb - 1) // PROFILE_GROUP)
    p.n += 1
    return 0


cdef inline intp_t _block_search(const pblock_t* blk, intp_t lo, intp_t hi,
                                 simtime_t t) noexcept nogil:
    """The last entry of the block at or before ``t``, given time[lo] <= t < time[hi].
    Branch-free (which half holds ``t`` is unpredictable): the answer lies in
    [lo, lo + n) and time[lo] <= t throughout; each step keeps the upper ceil(n / 2)
    entries from a probe at or before ``t``, else the lower ones."""
    cdef intp_t n = hi - lo
    cdef intp_t half
    while n > 1:
        half = n >> 1
        lo = lo + half if blk.time[lo + half] <= t else lo
        n -= half
    return lo


cdef inline intp_t _block_search_from(const pblock_t* blk, intp_t lo, intp_t hi,
                                      simtime_t t, intp_t steps) noexcept nogil:
    """_block_search when the answer is likely just after ``lo`` (time[lo] <= t <
    time[hi]): up to ``steps`` entries forward, then a binary search for the rest."""
    cdef intp_t i = lo
    while i + 1 < hi and blk.time[i + 1] <= t:
        i += 1
        if i - lo == steps and i + 1 < hi:
            return _block_search(blk, i, hi, t)
    return i


cdef inline bint _block_holds(const profile_t* p, intp_t b, simtime_t t) noexcept nogil:
    """Whether block ``b`` (any integer) is in use and the last one whose first time is
    at or before ``t``."""
    return (0 <= b < p.nb and p.bfirst[b] <= t
            and (b == p.nb - 1 or p.bfirst[b + 1] > t))


cdef inline ppos_t profile_locate(const profile_t* p, simtime_t t) noexcept nogil:
    """The breakpoint starting the segment that holds ``t`` (``t`` >= the origin).

    Successive queries mostly fall near one of two places (a move's old and new slot,
    a record and the reservation after it): the two fingers' blocks and the block after
    each are tried first, then a binary search over the blocks' first times; inside the
    block, the finger's entry and its neighbours, then a binary search.  A finger is only
    a guess, checked against the times before use: blocks split, merge and move under it."""
    cdef intp_t lo = p.loc_b
    cdef intp_t hi = p.nb - 1
    cdef intp_t mid, i, n
    cdef intp_t guess = -1      # the finger's entry when the block is a finger's
    cdef ppos_t r
    cdef const pblock_t* blk
    cdef profile_t* w = <profile_t*> p
    if _block_holds(p, lo, t):
        guess = p.loc_i
    elif _block_holds(p, lo + 1, t):
        lo += 1
        guess = 0               # the finger's time was in the block before: t is early
    elif _block_holds(p, p.loc_b2, t):
        lo = p.loc_b2
        guess = p.loc_i2
    elif _block_holds(p, p.loc_b2 + 1, t):
        lo = p.loc_b2 + 1
        guess = 0
    else:
        lo = 0
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if p.bfirst[mid] <= t:
                lo = mid
            else:
                hi = mid - 1
    blk = &p.blk[lo]
    n = blk.n
    if t >= blk.time[n - 1]:
        i = n - 1
    elif guess >= 0 and guess < n - 1 and blk.time[guess] <= t:
        i = _block_search_from(blk, guess, n - 1, t, 2)    # time[guess] <= t < time[n - 1]
    elif 0 < guess < n and blk.time[guess - 1] <= t:
        i = guess - 1                     # time[guess] > t here
    else:
        i = _block_search(blk, 0, n - 1, t)
    if lo != p.loc_b:
        w.loc_b2 = p.loc_b
        w.loc_i2 = p.loc_i
        w.loc_b = lo
    w.loc_i = i
    r.b = lo
    r.i = i
    return r


cdef inline procs_t profile_value(const profile_t* p, ppos_t k) noexcept nogil:
    """Actual free processors on the segment starting at breakpoint ``k``."""
    return p.blk[k.b].free[k.i] + p.badd[k.b]


cdef inline simtime_t profile_time(const profile_t* p, ppos_t k) noexcept nogil:
    """Start time of the segment at breakpoint ``k``."""
    return p.blk[k.b].time[k.i]


cdef inline void _profile_advance(const profile_t* p, ppos_t* k, simtime_t t) noexcept nogil:
    """Move ``k`` forward to the breakpoint starting the segment that holds ``t`` (>= the
    time at ``k``): a walk, as the grid rounding moves at most a few breakpoints."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i
    while True:
        if i + 1 < p.blk[b].n:
            if p.blk[b].time[i + 1] > t:
                break
            i += 1
        elif b + 1 < p.nb:
            if p.blk[b + 1].time[0] > t:
                break
            b += 1
            i = 0
        else:
            break
    k.b = b
    k.i = i


cdef inline intp_t _skip_free_enough(const profile_t* p, intp_t b, procs_t procs,
                                     simtime_t limit) noexcept nogil:
    """The first block from ``b`` on with a segment of fewer than ``procs`` free; p.nb if
    none, or any block from one starting at or after ``limit`` on (the caller stops
    there).  Blocks one by one up to a group boundary, then whole groups by glo."""
    cdef intp_t g, ng
    while b < p.nb and b % PROFILE_GROUP != 0:
        if p.blo[b] + p.badd[b] < procs:
            return b
        b += 1
    if b >= p.nb:
        return p.nb
    ng = (p.nb + PROFILE_GROUP - 1) // PROFILE_GROUP
    g = b // PROFILE_GROUP
    while g < ng and p.glo[g] >= procs:
        g += 1
        if g < ng and p.bfirst[g * PROFILE_GROUP] >= limit:
            return g * PROFILE_GROUP
    if g >= ng:
        return p.nb
    b = g * PROFILE_GROUP
    while p.blo[b] + p.badd[b] >= procs:       # the group has such a block
        b += 1
    return b


cdef inline intp_t _skip_short(const profile_t* p, intp_t b, procs_t procs,
                               simtime_t limit) noexcept nogil:
    """The first block from ``b`` on with a segment of at least ``procs`` free; p.nb if
    none, or any block from one starting at or after ``limit`` on (the caller stops
    there).  Blocks one by one up to a group boundary, then whole groups by ghi."""
    cdef intp_t g, ng
    while b < p.nb and b % PROFILE_GROUP != 0:
        if p.bhi[b] + p.badd[b] >= procs:
            return b
        b += 1
    if b >= p.nb:
        return p.nb
    ng = (p.nb + PROFILE_GROUP - 1) // PROFILE_GROUP
    g = b // PROFILE_GROUP
    while g < ng and p.ghi[g] < procs:
        g += 1
        if g < ng and p.bfirst[g * PROFILE_GROUP] >= limit:
            return g * PROFILE_GROUP
    if g >= ng:
        return p.nb
    b = g * PROFILE_GROUP
    while p.bhi[b] + p.badd[b] < procs:        # the group has such a block
        b += 1
    return b


cdef inline bint profile_next_below(const profile_t* p, ppos_t* k, procs_t procs) noexcept nogil:
    """Move ``k`` to the first breakpoint after it whose segment has fewer than ``procs``
    free; False (``k`` unchanged) if there is none.  Whole blocks with lo >= procs are
    skipped."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i + 1
    cdef const pblock_t* blk = &p.blk[b]
    cdef procs_t need = procs - p.badd[b]
    while True:
        if p.blo[b] < need:
            blk = &p.blk[b]
            while i < blk.n:
                if blk.free[i] < need:
                    k.b = b
                    k.i = i
                    return True
                i += 1
        b = _skip_free_enough(p, b + 1, procs, INT64_MAX)   # whole blocks, groups free enough
        if b >= p.nb:
            return False
        need = procs - p.badd[b]
        i = 0


cdef inline bint profile_next_at_least(const profile_t* p, ppos_t* k,
                                       procs_t procs) noexcept nogil:
    """Move ``k`` to the first breakpoint after it whose segment has at least ``procs``
    free; False (``k`` unchanged) if there is none.  Whole blocks with hi < procs are
    skipped."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i + 1
    cdef const pblock_t* blk = &p.blk[b]
    cdef procs_t need = procs - p.badd[b]
    while True:
        if p.bhi[b] >= need:
            blk = &p.blk[b]
            while i < blk.n:
                if blk.free[i] >= need:
                    k.b = b
                    k.i = i
                    return True
                i += 1
        b = _skip_short(p, b + 1, procs, INT64_MAX)      # whole blocks, groups short
        if b >= p.nb:
            return False
        need = procs - p.badd[b]
        i = 0


cdef inline int _profile_split_block(profile_t* p, intp_t b) except -1 nogil:
    """Split the full block ``b`` in two halves (the upper half becomes block b + 1)."""
    cdef pblock_t* lo
    cdef pblock_t* hi
    cdef int32_t half = PROFILE_BLOCK // 2
    _profile_room(p)
    if b + 1 < p.nb:
        memmove(&p.blk[b + 2], &p.blk[b + 1], (p.nb - b - 1) * sizeof(pblock_t))
        memmove(&p.badd[b + 2], &p.badd[b + 1], (p.nb - b - 1) * sizeof(procs_t))
        memmove(&p.blo[b + 2], &p.blo[b + 1], (p.nb - b - 1) * sizeof(procs_t))
        memmove(&p.bhi[b + 2], &p.bhi[b + 1], (p.nb - b - 1) * sizeof(procs_t))
        memmove(&p.bfirst[b + 2], &p.bfirst[b + 1], (p.nb - b - 1) * sizeof(simtime_t))
    p.nb += 1
    lo = &p.blk[b]
    hi = &p.blk[b + 1]
    hi.n = lo.n - half
    memcpy(hi.time, lo.time + half, hi.n * sizeof(simtime_t))
    memcpy(hi.free, lo.free + half, hi.n * sizeof(procs_t))
    p.badd[b + 1] = p.badd[b]
    p.bfirst[b + 1] = hi.time[0]
    lo.n = half
    _block_bounds(p, b)
    _block_bounds(p, b + 1)
    _groups_fix(p, b, p.nb - 1)         # the blocks after b moved one place
    return 0


cdef inline int _profile_split(profile_t* p, simtime_t t, ppos_t* at) except -1 nogil:
    """Make ``t`` (>= the origin) a breakpoint, inserted if missing, the new segment
    keeping the free count of the one it was cut from; its position goes to ``at`` (a
    block split, when the block was full, may move earlier positions: compare p.nb)."""
    cdef ppos_t k = profile_locate(p, t)
    cdef pblock_t* blk = &p.blk[k.b]
    cdef intp_t i
    if blk.time[k.i] == t:
        at[0] = k
        return 0
    if blk.n == PROFILE_BLOCK:
        _profile_split_block(p, k.b)
        k = profile_locate(p, t)
        blk = &p.blk[k.b]
    i = k.i + 1
    if i < blk.n:
        memmove(blk.time + i + 1, blk.time + i, (blk.n - i) * sizeof(simtime_t))
        memmove(blk.free + i + 1, blk.free + i, (blk.n - i) * sizeof(procs_t))
    blk.time[i] = t
    blk.free[i] = blk.free[k.i]
    blk.n += 1
    p.n += 1
    k.i = i
    at[0] = k
    return 0


cdef inline bint _reserve_in_block(profile_t* p, simtime_t start, simtime_t end,
                                   procs_t procs, bint merge, procs_t* top) noexcept nogil:
    """profile_reserve (then, with ``merge``, profile_merge_at(end)) in one pass over one
    block, when [start, end] lies in the block holding ``start`` and the block has room
    for both splits: False (nothing changed) otherwise.  The same breakpoints and counts
    as the two splits, the update and the merge one after the other, with at most two
    moves of the entries after ``start`` instead of one per split and merge.  ``top``
    (unless NULL) gets the most processors free on [start, end) after the update."""
    cdef ppos_t k = profile_locate(p, start)
    cdef pblock_t* blk = &p.blk[k.b]
    cdef intp_t n = blk.n
    cdef intp_t i0 = k.i
    cdef intp_t e, u0, u1, t, sh, i
    cdef bint ia, iz, dz, is_kept
    cdef procs_t free_e, lo, hi, umin, umax, cmin, cmax, new_lo, new_hi, c0
    if n + 2 > PROFILE_BLOCK or procs == 0:
        return False
    # e: the entry starting the segment that holds `end` (the last one with time <= end)
    if blk.time[n - 1] <= end:
        if k.b + 1 < p.nb and p.bfirst[k.b + 1] <= end:
            return False                    # `end` lies in a later block
        e = n - 1
    else:
        e = _block_search_from(blk, i0, n - 1, end, 4)     # time[i0] <= end < time[n - 1]
    ia = blk.time[i0] != start              # a breakpoint inserted at start
    iz = blk.time[e] != end                 # and at end
    free_e = blk.free[e]                    # the count from end on (stored)
    u0 = i0 + 1 if ia else i0               # entries [u0, u1) lie in [start, end)
    u1 = e + 1 if iz else e
    # merged: the breakpoint at end holds the count the segment before it now has
    dz = merge and not iz and blk.free[e] == blk.free[e - 1] - procs
    # the block's bounds from the counts that change: the old ones of entries [u0, u1)
    # (umin, umax; free[i0] when there are none, then ia), and the counts on [start, end)
    # after the update (cmin, cmax): those entries' and the new one's at start (the one
    # at end repeats a count, a merged one its neighbour's)
    umin = blk.free[u0] if u1 > u0 else blk.free[i0]
    umax = umin
    for i in range(u0, u1):
        umin = blk.free[i] if blk.free[i] < umin else umin
        umax = blk.free[i] if blk.free[i] > umax else umax
        blk.free[i] -= procs
    cmin = umin - procs
    cmax = umax - procs
    c0 = blk.free[i0] - procs               # the new entry's count at start (when ia)
    if ia:
        cmin = c0 if c0 < cmin else cmin
        cmax = c0 if c0 > cmax else cmax
    if top != NULL:
        top[0] = cmax + p.badd[k.b]
    lo = p.blo[k.b]
    hi = p.bhi[k.b]
    if procs > 0:
        # counts fall: the minimum follows them, the maximum stays unless it was there
        new_lo = cmin if cmin < lo else lo
        new_hi = hi
        is_kept = u1 == u0 or umax < hi
    else:
        new_hi = cmax if cmax > hi else hi
        new_lo = lo
        is_kept = u1 == u0 or umin > lo
    t = u1 + dz                             # the entries from t on move by sh
    sh = ia + iz - dz
    if sh != 0 and t < n:
        memmove(blk.time + t + sh, blk.time + t, (n - t) * sizeof(simtime_t))
        memmove(blk.free + t + sh, blk.free + t, (n - t) * sizeof(procs_t))
    if ia:
        if u1 > u0:
            memmove(blk.time + u0 + 1, blk.time + u0, (u1 - u0) * sizeof(simtime_t))
            memmove(blk.free + u0 + 1, blk.free + u0, (u1 - u0) * sizeof(procs_t))
        blk.time[u0] = start
        blk.free[u0] = c0
    if iz:
        blk.time[u1 + ia] = end
        blk.free[u1 + ia] = free_e
    blk.n = <int32_t> (n + sh)
    p.n += sh
    # the other side is recomputed only when its old extreme was among the changed counts
    p.blo[k.b] = new_lo if is_kept or procs > 0 else _block_lo(blk)
    p.bhi[k.b] = new_hi if is_kept or procs < 0 else _block_hi(blk)
    if p.blo[k.b] != lo or p.bhi[k.b] != hi:    # else its group's stay exact
        _group_bounds(p, k.b // PROFILE_GROUP)
    return True


cdef inline int _profile_reserve_z(profile_t* p, simtime_t start, simtime_t end,
                                   procs_t procs, ppos_t* zout) except -1 nogil:
    """profile_reserve; the breakpoint at ``end`` goes to ``zout`` (end > start)."""
    cdef ppos_t a, z
    cdef intp_t b, i
    cdef pblock_t* blk
    cdef intp_t nb
    cdef procs_t lo, hi
    if end <= start:
        return 0
    _profile_split(p, start, &a)
    nb = p.nb
    _profile_split(p, end, &z)                      # exclusive; inserted after a
    zout[0] = z
    if p.nb != nb:                                  # a block split may have moved a
        a = profile_locate(p, start)
    if a.b == z.b:
        blk = &p.blk[a.b]
        for i in range(a.i, z.i):
            blk.free[i] -= procs
        lo = p.blo[a.b]
        hi = p.bhi[a.b]
        _block_bounds(p, a.b)
        if p.blo[a.b] != lo or p.bhi[a.b] != hi:   # else its group's stay exact
            _group_bounds(p, a.b // PROFILE_GROUP)
        return 0
    blk = &p.blk[a.b]
    for i in range(a.i, blk.n):
        blk.free[i] -= procs
    _block_bounds(p, a.b)
    for b in range(a.b + 1, z.b):
        p.badd[b] -= procs
    if z.i > 0:
        blk = &p.blk[z.b]
        for i in range(z.i):
            blk.free[i] -= procs
        _block_bounds(p, z.b)
    _groups_add(p, a.b, z.b + 1, -procs)     # shifts or recomputes every group touched
    return 0


cdef inline int profile_reserve(profile_t* p, simtime_t start, simtime_t end,
                                procs_t procs) except -1 nogil:
    """Take ``procs`` processors over [start, end) (start >= the origin); empty if end <= start.

    Splits at ``start`` and ``end``, then subtracts entry by entry in the first and last
    blocks touched and lazily (``add``) on the whole blocks between; inside one block with
    room, in one pass (_reserve_in_block)."""
    cdef ppos_t z
    if end <= start or _reserve_in_block(p, start, end, procs, False, NULL):
        return 0
    return _profile_reserve_z(p, start, end, procs, &z)


cdef inline int _reserve_merge_general(profile_t* p, simtime_t start, simtime_t end,
                                       procs_t procs) except -1 nogil:
    """profile_reserve_merge over any number of blocks: the two splits, the update, then
    the merge at the breakpoint the split at ``end`` left (nothing if end <= start)."""
    cdef ppos_t z
    cdef pblock_t* blk
    if end <= start:
        return 0
    _profile_reserve_z(p, start, end, procs, &z)
    blk = &p.blk[z.b]
    if z.i == 0 or blk.free[z.i] != blk.free[z.i - 1]:
        return 0
    if z.i + 1 < blk.n:
        memmove(blk.time + z.i, blk.time + z.i + 1, (blk.n - z.i - 1) * sizeof(simtime_t))
        memmove(blk.free + z.i, blk.free + z.i + 1, (blk.n - z.i - 1) * sizeof(procs_t))
    blk.n -= 1
    p.n -= 1
    return 0


cdef inline int profile_reserve_merge(profile_t* p, simtime_t start, simtime_t end,
                                      procs_t procs) except -1 nogil:
    """profile_reserve, then profile_merge_at(end) without locating ``end`` again: the
    breakpoint the reservation split at its end is dropped when it is not first in its
    block and the segment before it now holds the same count."""
    if end <= start or _reserve_in_block(p, start, end, procs, True, NULL):
        return 0
    return _reserve_merge_general(p, start, end, procs)


cdef inline void profile_merge_at(profile_t* p, simtime_t t) noexcept nogil:
    """Drop the breakpoint at ``t`` if there is one, not first in its block, with the free
    count of the segment before it (the profile is a function of time only, so no answer
    changes).  The block's min and max (hence its group's) stay: an equal neighbour holds
    the same value.  The kept profile calls it where a returned slot or an early
    completion gave processors back, so that stale breakpoints do not pile up."""
    cdef ppos_t k
    cdef pblock_t* blk
    if t <= profile_origin(p):
        return
    k = profile_locate(p, t)
    blk = &p.blk[k.b]
    if k.i == 0 or blk.time[k.i] != t or blk.free[k.i] != blk.free[k.i - 1]:
        return
    if k.i + 1 < blk.n:
        memmove(blk.time + k.i, blk.time + k.i + 1, (blk.n - k.i - 1) * sizeof(simtime_t))
        memmove(blk.free + k.i, blk.free + k.i + 1, (blk.n - k.i - 1) * sizeof(procs_t))
    blk.n -= 1
    p.n -= 1

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
    cdef ppos_t k = profile_locate(p, start)
    if profile_value(p, k) < procs:
        return False
    if not profile_next_below(p, &k, procs):
        return True
    return profile_time(p, k) >= start + duration


cdef inline simtime_t profile_earliest(const profile_t* p, simtime_t start, simtime_t duration,
                                       procs_t procs, simtime_t resolution) noexcept nogil:
    """Earliest s >= start, a multiple of ``resolution``, with ``procs`` processors free over
    [s, s + duration) (at the instant s when duration is 0); -1 if never.

    A sweep that jumps hole to hole: from a candidate start, the next segment with too few
    processors (profile_next_below) either lies at or after the window's end (the answer)
    or breaks the window; the next segment with enough processors after it
    (profile_next_at_least) gives the next candidate, aligned up to the grid."""
    cdef simtime_t s = align_up(start, resolution)
    cdef ppos_t k = profile_locate(p, s)
    while True:
        if profile_value(p, k) < procs:
            if not profile_next_at_least(p, &k, procs):
                return -1
            s = align_up(profile_time(p, k), resolution)
            if s != profile_time(p, k):
                _profile_advance(p, &k, s)
            continue
        if not profile_next_below(p, &k, procs):
            return s
        if profile_time(p, k) >= s + duration:
            return s


cdef inline bint _next_below_before(const profile_t* p, ppos_t* k, procs_t procs,
                                   simtime_t limit) noexcept nogil:
    """profile_next_below that only looks at breakpoints before ``limit``: False (``k``
    unchanged) if no segment starting before ``limit`` after ``k`` has fewer than
    ``procs`` free."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i + 1
    cdef const pblock_t* blk
    cdef procs_t need = procs - p.badd[b]
    while True:
        blk = &p.blk[b]
        if p.blo[b] < need:
            while i < blk.n:
                if blk.time[i] >= limit:
                    return False
                if blk.free[i] < need:
                    k.b = b
                    k.i = i
                    return True
                i += 1
        b = _skip_free_enough(p, b + 1, procs, limit)
        if b >= p.nb or p.bfirst[b] >= limit:
            return False
        need = procs - p.badd[b]
        i = 0


cdef inline bint _next_at_least_before(const profile_t* p, ppos_t* k, procs_t procs,
                                       simtime_t limit) noexcept nogil:
    """profile_next_at_least that only looks at breakpoints before ``limit``."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i + 1
    cdef const pblock_t* blk
    cdef procs_t need = procs - p.badd[b]
    while True:
        blk = &p.blk[b]
        if p.bhi[b] >= need:
            while i < blk.n:
                if blk.time[i] >= limit:
                    return False
                if blk.free[i] >= need:
                    k.b = b
                    k.i = i
                    return True
                i += 1
        b = _skip_short(p, b + 1, procs, limit)
        if b >= p.nb or p.bfirst[b] >= limit:
            return False
        need = procs - p.badd[b]
        i = 0


cdef inline intp_t _skip_free_enough_back(const profile_t* p, intp_t b, procs_t procs,
                                          simtime_t lo) noexcept nogil:
    """The last block from ``b`` down with a segment of fewer than ``procs`` free; -1 if
    none, or once every block left ends at or before ``lo`` (the caller stops there).
    Blocks one by one down to a group's last block, then whole groups by glo."""
    cdef intp_t g
    while b >= 0 and (b + 1) % PROFILE_GROUP != 0:
        if p.blo[b] + p.badd[b] < procs:
            return b
        if p.bfirst[b] <= lo:       # the blocks before end at or before bfirst[b]
            return -1
        b -= 1
    if b < 0:
        return -1
    g = b // PROFILE_GROUP          # b is the group's last block
    while p.glo[g] >= procs:
        if g == 0 or p.bfirst[g * PROFILE_GROUP] <= lo:
            return -1
        g -= 1
    b = g * PROFILE_GROUP + PROFILE_GROUP - 1
    if b >= p.nb:
        b = p.nb - 1
    while p.blo[b] + p.badd[b] >= procs:       # the group has such a block
        b -= 1
    return b


cdef inline simtime_t profile_last_short_end(const profile_t* p, ppos_t k, procs_t procs,
                                             simtime_t lo) noexcept nogil:
    """The end (seconds) of the last segment before breakpoint ``k`` with fewer than
    ``procs`` free, when that end is after ``lo``; else ``lo`` (every segment meeting
    [lo, time of k) has at least ``procs`` free).  The backward twin of
    _next_below_before: entries of a block, then whole blocks and groups by their
    minima."""
    cdef intp_t b = k.b
    cdef intp_t i = k.i - 1
    cdef const pblock_t* blk = &p.blk[b]
    cdef simtime_t end = blk.time[k.i]          # the end of segment i
    cdef procs_t need
    while True:
        need = procs - p.badd[b]
        if p.blo[b] < need:
            while i >= 0:
                if end <= lo:
                    return lo
                if blk.free[i] < need:
                    return end
                end = blk.time[i]
                i -= 1
        end = blk.time[0]           # the end of the previous block's last segment
        if end <= lo or b == 0:
            return lo
        b = _skip_free_enough_back(p, b - 1, procs, lo)
        if b < 0:
            return lo
        blk = &p.blk[b]
        i = blk.n - 1
        end = p.bfirst[b + 1]       # blocks after b to here have no short segment


cdef inline procs_t _extreme_over(const profile_t* p, simtime_t a, simtime_t b,
                                  bint lowest) noexcept nogil:
    """The fewest (``lowest``) or the most processors free on a segment meeting [a, b)
    (origin <= a < b): the entries of the first and last blocks, whole blocks by
    blo/bhi + badd, whole groups by glo/ghi.  Callers pass ``lowest`` as a constant, so
    the C compiler drops the other side of each choice."""
    cdef ppos_t at = profile_locate(p, a)
    cdef intp_t bb = at.b
    cdef intp_t i = at.i + 1
    cdef procs_t best = profile_value(p, at)
    cdef procs_t v
    cdef const pblock_t* blk = &p.blk[bb]
    while i < blk.n:
        if blk.time[i] >= b:
            return best
        v = blk.free[i] + p.badd[bb]
        if (v < best) if lowest else (v > best):
            best = v
        i += 1
    bb += 1
    while bb < p.nb and p.bfirst[bb] < b:
        if (bb % PROFILE_GROUP == 0 and bb + PROFILE_GROUP < p.nb
                and p.bfirst[bb + PROFILE_GROUP] <= b):
            # every segment of the group starts before b
            v = p.glo[bb // PROFILE_GROUP] if lowest else p.ghi[bb // PROFILE_GROUP]
            if (v < best) if lowest else (v > best):
                best = v
            bb += PROFILE_GROUP
        elif bb + 1 < p.nb and p.bfirst[bb + 1] <= b:
            v = (p.blo[bb] if lowest else p.bhi[bb]) + p.badd[bb]
            if (v < best) if lowest else (v > best):
                best = v
            bb += 1
        else:
            blk = &p.blk[bb]
            for i in range(blk.n):
                if blk.time[i] >= b:
                    break
                v = blk.free[i] + p.badd[bb]
                if (v < best) if lowest else (v > best):
                    best = v
            return best
    return best


cdef inline procs_t profile_max_over(const profile_t* p, simtime_t a,
                                    simtime_t b) noexcept nogil:
    """The most processors free on a segment meeting [a, b) (origin <= a < b)."""
    return _extreme_over(p, a, b, False)


cdef inline procs_t profile_give_back_max(profile_t* p, simtime_t start, simtime_t end,
                                          procs_t procs) except? -1 nogil:
    """profile_reserve_merge(p, start, end, -procs) (start < end), returning the most
    processors free on [start, end) after it: the one-block update knows it from the counts
    it changes, else a walk (profile_max_over)."""
    cdef procs_t top
    if _reserve_in_block(p, start, end, -procs, True, &top):
        return top
    _reserve_merge_general(p, start, end, -procs)
    return profile_max_over(p, start, end)


cdef inline procs_t profile_min_over(const profile_t* p, simtime_t a,
                                    simtime_t b) noexcept nogil:
    """The fewest processors free on a segment meeting [a, b) (origin <= a < b)."""
    return _extreme_over(p, a, b, True)


cdef inline void dec_add_max(profile_t* p, simtime_t a, simtime_t b, procs_t top) noexcept nogil:
    """Record that processors came back over [a, b), after they did (a superset is always
    sound: when full, the new interval is merged with the one nearest to it).  A new
    record's bound dec_m is taken on first use (dec_bound: the most free on it then); a
    merged one keeps its own, raised to the most free on [a, b) now (a walk of [a, b)
    instead of the whole union; still taken on first use when its own is not taken yet):
    every instant keeps its witness and [a, b)'s is the merged record.  ``top``, when >= 0,
    is the most free on [a, b) now (the give-back just made knows it): it is the new
    record's bound at once, or the merged one's walk.

    Invariant (dec_bound's and dec_may_fit's bound): every instant t where processors
    came back (since the records were dropped) has a witness, a record holding t whose
    bound is not taken yet (-1) or is at least the free count at t.  Free counts only grow
    where an interval is recorded after they did (its walk or first use makes it the
    witness), taking processors never breaks it, and records only grow until dropped.  An
    instant of a record where nothing came back (e.g. between two merged intervals) needs
    no bound: no job can move there."""
    cdef intp_t k, best
    cdef simtime_t gap, g
    cdef procs_t v
    if b <= a:
        return
    if p.n_dec < DEC_SLOTS:
        p.dec_a[p.n_dec] = a
        p.dec_b[p.n_dec] = b
        p.dec_m[p.n_dec] = top
        p.n_dec += 1
        return
    best = 0
    gap = -1
    for k in range(DEC_SLOTS):
        g = a - p.dec_b[k] if a > p.dec_b[k] else (p.dec_a[k] - b if p.dec_a[k] > b else 0)
        if gap < 0 or g < gap:
            gap = g
            best = k
    if p.dec_m[best] >= 0:
        v = top if top >= 0 else profile_max_over(p, a, b)
        if v > p.dec_m[best]:
            p.dec_m[best] = v
    if a < p.dec_a[best]:
        p.dec_a[best] = a
    if b > p.dec_b[best]:
        p.dec_b[best] = b


cdef inline void dec_add(profile_t* p, simtime_t a, simtime_t b) noexcept nogil:
    """dec_add_max without the most free on [a, b) known."""
    dec_add_max(p, a, b, -1)


cdef inline procs_t dec_bound(profile_t* p, simtime_t lo, simtime_t hi) noexcept nogil:
    """The most free processors any instant of [lo, hi) where processors came back can
    have (dec_m of the intervals meeting it, taken now where not yet; -1 if none): a job
    larger than that cannot use what came back before hi."""
    cdef intp_t k
    cdef procs_t m = -1
    for k in range(p.n_dec):
        if p.dec_a[k] < hi and p.dec_b[k] > lo:
            if p.dec_m[k] < 0:
                p.dec_m[k] = profile_max_over(p, p.dec_a[k], p.dec_b[k])
            if p.dec_m[k] > m:
                m = p.dec_m[k]
    return m


cdef inline bint dec_may_fit(profile_t* p, simtime_t lo, simtime_t hi,
                             procs_t procs) noexcept nogil:
    """Whether some instant of [lo, hi) inside a recorded interval may have at least
    ``procs`` free (False: no instant of it where processors came back has, so they
    cannot serve a job of that size there).  An interval whose bound dec_m is below
    ``procs`` is passed over without a look at the profile: an instant where processors
    came back with ``procs`` free has a witness (dec_add), which is not passed over.  An
    interval looked at whole and found short lowers its bound to ``procs`` - 1 (free
    counts there only grow under a later record)."""
    cdef intp_t k
    cdef simtime_t a, b
    cdef ppos_t at
    for k in range(p.n_dec):
        if 0 <= p.dec_m[k] < procs:
            continue
        a = p.dec_a[k] if p.dec_a[k] > lo else lo
        b = p.dec_b[k] if p.dec_b[k] < hi else hi
        if a >= b:
            continue
        at = profile_locate(p, a)
        if profile_value(p, at) >= procs or _next_at_least_before(p, &at, procs, b):
            return True
        if a == p.dec_a[k] and b == p.dec_b[k]:
            p.dec_m[k] = procs - 1
    return False


cdef inline simtime_t dec_end(const profile_t* p) noexcept nogil:
    """The latest end of the recorded intervals (-1 if none): a window that meets one of
    them starts before it."""
    cdef intp_t k
    cdef simtime_t e = -1
    for k in range(p.n_dec):
        if p.dec_b[k] > e:
            e = p.dec_b[k]
    return e


cdef inline simtime_t profile_earliest_before(const profile_t* p, simtime_t start,
                                              simtime_t duration, procs_t procs,
                                              simtime_t limit, simtime_t stop) noexcept nogil:
    """Earliest s in [start, min(limit, stop)) with ``procs`` processors free over
    [s, min(s + duration, limit)); ``limit`` if none (resolution 1).  ``stop`` (<= limit)
    is the caller's bound on where a start can be at all (dec_end).

    The clipped window is the kept-profile re-plan's test (backfill.pxd,
    kept_by_holders): before its previous reservation ``limit`` a job sees the kept
    profile as it is, from ``limit`` on its previous slot is known to be free."""
    cdef simtime_t s = start
    cdef simtime_t end
    cdef ppos_t k
    if stop > limit:
        stop = limit
    if s >= stop:
        return limit
    k = profile_locate(p, s)
    while True:
        if profile_value(p, k) < procs:
            if not _next_at_least_before(p, &k, procs, stop):
                return limit
            s = profile_time(p, k)
            continue
        end = s + duration
        if end > limit:
            end = limit
        if not _next_below_before(p, &k, procs, end):
            return s


cdef inline void profile_trim(profile_t* p, simtime_t t) noexcept nogil:
    """Drop whole blocks that end before ``t`` (>= the origin) once they are at least a
    quarter of the blocks (amortized O(1) per block).  Breakpoints before ``t`` may stay:
    every query locates its start first, so they never change an answer; the origin
    (block 0 entry 0) becomes the first breakpoint kept."""
    cdef ppos_t k = profile_locate(p, t)
    cdef intp_t b, gone
    if k.b == 0 or 4 * k.b < p.nb:
        return
    gone = 0
    for b in range(k.b):
        gone += p.blk[b].n
    memmove(&p.blk[0], &p.blk[k.b], (p.nb - k.b) * sizeof(pblock_t))
    memmove(&p.badd[0], &p.badd[k.b], (p.nb - k.b) * sizeof(procs_t))
    memmove(&p.blo[0], &p.blo[k.b], (p.nb - k.b) * sizeof(procs_t))
    memmove(&p.bhi[0], &p.bhi[k.b], (p.nb - k.b) * sizeof(procs_t))
    memmove(&p.bfirst[0], &p.bfirst[k.b], (p.nb - k.b) * sizeof(simtime_t))
    p.nb -= k.b
    p.n -= gone
    _groups_fix(p, 0, p.nb - 1)


# --- Pending releases (the lazy build of backfill.pxd) --------------------------------------

cdef inline int profile_pend_push(profile_t* p, simtime_t time, procs_t procs) except -1 nogil:
    """Add a pending release (``time`` after the last breakpoint) to the min-heap."""
    cdef intp_t cap, k, parent
    cdef simtime_t* t
    cdef procs_t* f
    if p.n_pend == p.cap_pend:
        cap = p.cap_pend * 2 if p.cap_pend > 0 else 64
        t = <simtime_t*> realloc(p.pend_time, cap * sizeof(simtime_t))
        if t == NULL:
            with gil:
                raise MemoryError("availability profile")
        p.pend_time = t
        f = <procs_t*> realloc(p.pend_procs, cap * sizeof(procs_t))
        if f == NULL:
            with gil:
                raise MemoryError("availability profile")
        p.pend_procs = f
        p.cap_pend = cap
    k = p.n_pend
    p.n_pend += 1
    while k > 0:
        parent = (k - 1) >> 1
        if p.pend_time[parent] <= time:
            break
        p.pend_time[k] = p.pend_time[parent]
        p.pend_procs[k] = p.pend_procs[parent]
        k = parent
    p.pend_time[k] = time
    p.pend_procs[k] = procs
    return 0


cdef inline void profile_pend_pop(profile_t* p) noexcept nogil:
    """Drop the earliest pending release (the heap must not be empty)."""
    cdef intp_t n = p.n_pend - 1
    cdef intp_t k = 0
    cdef intp_t c
    cdef simtime_t t = p.pend_time[n]
    cdef procs_t f = p.pend_procs[n]
    p.n_pend = n
    while True:
        c = 2 * k + 1
        if c >= n:
            break
        if c + 1 < n and p.pend_time[c + 1] < p.pend_time[c]:
            c += 1
        if p.pend_time[c] >= t:
            break
        p.pend_time[k] = p.pend_time[c]
        p.pend_procs[k] = p.pend_procs[c]
        k = c
    if n > 0:
        p.pend_time[k] = t
        p.pend_procs[k] = f


cdef inline int profile_take_tail(profile_t* p, simtime_t start, procs_t procs) except -1 nogil:
    """Take ``procs`` processors from ``start`` (>= the origin) to the end of the built
    breakpoints, the open last segment included (the lazy form of a reservation that ends
    after the last breakpoint: its end waits in the pending releases)."""
    cdef ppos_t a
    cdef intp_t b, i
    cdef pblock_t* blk
    _profile_split(p, start, &a)
    blk = &p.blk[a.b]
    for i in range(a.i, blk.n):
        blk.free[i] -= procs
    _block_bounds(p, a.b)
    for b in range(a.b + 1, p.nb):
        p.badd[b] -= procs
    _groups_add(p, a.b, p.nb, -procs)
    return 0
