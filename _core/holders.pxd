# The holder index of conservative backfilling with a kept profile (issue 16; docs/core.md
# "The holder index"): the waiting jobs that hold a reservation, in re-plan order, kept
# across passes so that a pass neither sorts them nor visits the ones that cannot move.
#
# Header-only (`cdef inline`).  Entries (reservation, job, hold, size) are kept in the order
#
#   (reservation, then queue order: key[j], submit[j], j)
#
# in an unrolled list: an array of pointers to blocks of 1..HOLD_BLOCK entries, each block
# with the minimum size of its entries (`low`).  Inserting or removing an entry moves at
# most HOLD_BLOCK entries and, when a block splits or empties, the block pointers (8 bytes
# each), never the blocks; emptied blocks stay allocated behind the ones in use for reuse.
# `finger`, the block of the last insertion, is only a guess an insertion checks before
# its binary search over the blocks.
#
# Invariants whenever a kernel returns: blocks blk[0:nb] are in order and each holds 1..
# HOLD_BLOCK entries in order; `low` is the exact minimum of the block's sizes; `n` is the
# number of entries.  The order compares the queue keys of the jobs; where keys change
# between passes (wfp3, unicep, multifactor) the entries of one reservation may be out of
# that order until backfill.pxd's _order_tie_run puts them back (holders_put; docs/core.md
# "Time-dependent keys in the index").
from libc.stdlib cimport malloc, realloc, free as c_free
from libc.string cimport memmove, memcpy
from libc.stdint cimport int32_t

from _types cimport simtime_t, procs_t, intp_t
from priority cimport keys_t, key_at


cdef enum:
    HOLD_BLOCK = 128    # entries per block
    HOLD_FILL = 96      # entries per block when filled in bulk (room for inserts)


cdef struct hblock_t:
    simtime_t resv[HOLD_BLOCK]      # reservation (seconds), in order
    intp_t job[HOLD_BLOCK]          # job index
    simtime_t hold[HOLD_BLOCK]      # how long its reservation holds (seconds)
    procs_t procs[HOLD_BLOCK]       # its size (processors)
    int32_t n                       # entries in use, 1..HOLD_BLOCK
    procs_t low                     # min(procs[0:n])


cdef struct holders_t:
    hblock_t** blk      # blocks in order; blk[nb:cap] are spare blocks or NULL
    intp_t nb           # blocks in use
    intp_t cap          # pointers allocated
    intp_t n            # entries in all blocks
    intp_t finger       # the block the last insertion went to (a guess, checked)


cdef inline bint hold_before(const keys_t* keys, simtime_t ra, intp_t ja, simtime_t rb,
                             intp_t jb) noexcept nogil:
    """Re-plan order: (ra, ja) before (rb, jb) by reservation, then queue order."""
    cdef double ka, kb
    if ra != rb:
        return ra < rb
    ka = key_at(keys, ja)
    kb = key_at(keys, jb)
    if ka != kb:
        return ka < kb
    if keys.submit[ja] != keys.submit[jb]:
        return keys.submit[ja] < keys.submit[jb]
    return ja < jb


cdef inline void holders_clear(holders_t* h) noexcept nogil:
    """No entry (the blocks stay allocated as spares)."""
    h.nb = 0
    h.n = 0


cdef inline void holders_release(holders_t* h) noexcept nogil:
    """Free every block and the pointer array (safe on a zeroed index)."""
    cdef intp_t b
    if h.blk != NULL:
        for b in range(h.cap):
            c_free(h.blk[b])
    c_free(h.blk)
    h.blk = NULL
    h.nb = 0
    h.cap = 0
    h.n = 0


cdef inline hblock_t* _hold_new_block(holders_t* h, intp_t b) except NULL nogil:
    """Insert an empty block at position b (a spare one, or a new allocation)."""
    cdef intp_t cap, b2
    cdef hblock_t** r
    cdef hblock_t* blk
    if h.nb == h.cap:
        cap = h.cap * 2 if h.cap > 0 else 8
        r = <hblock_t**> realloc(h.blk, cap * sizeof(hblock_t*))
        if r == NULL:
            with gil:
                raise MemoryError("holder index")
        for b2 in range(h.cap, cap):
            r[b2] = NULL
        h.blk = r
        h.cap = cap
    blk = h.blk[h.nb]
    if blk == NULL:
        blk = <hblock_t*> malloc(sizeof(hblock_t))
        if blk == NULL:
            with gil:
                raise MemoryError("holder index")
    memmove(h.blk + b + 1, h.blk + b, (h.nb - b) * sizeof(hblock_t*))
    h.blk[b] = blk
    h.nb += 1
    blk.n = 0
    blk.low = 0
    return blk


cdef inline void _hold_low(hblock_t* blk) noexcept nogil:
    """Recompute the block's minimum size (branch-free)."""
    cdef intp_t i
    cdef procs_t m = blk.procs[0]
    for i in range(1, blk.n):
        m = blk.procs[i] if blk.procs[i] < m else m
    blk.low = m


cdef inline int holders_append(holders_t* h, simtime_t resv, intp_t j, simtime_t hold,
                               procs_t procs) except -1 nogil:
    """Add an entry after every entry (the caller appends in order): the bulk build."""
    cdef hblock_t* blk
    if h.nb == 0 or h.blk[h.nb - 1].n >= HOLD_FILL:
        blk = _hold_new_block(h, h.nb)
    else:
        blk = h.blk[h.nb - 1]
    blk.resv[blk.n] = resv
    blk.job[blk.n] = j
    blk.hold[blk.n] = hold
    blk.procs[blk.n] = procs
    if blk.n == 0 or procs < blk.low:
        blk.low = procs
    blk.n += 1
    h.n += 1
    return 0


cdef inline int holders_insert(holders_t* h, const keys_t* keys, simtime_t resv, intp_t j,
                               simtime_t hold,
                               procs_t procs) except -1 nogil:
    """Insert (resv, j) at its place in the order: binary search over the blocks' first
    entries, then inside the block; a full block splits in two halves first."""
    cdef intp_t lo = 0
    cdef intp_t hi = h.nb
    cdef intp_t mid, b, i, half
    cdef hblock_t* blk
    cdef hblock_t* nxt
    if h.nb == 0:
        return holders_append(h, resv, j, hold, procs)
    # b: the last block whose first entry is not after the new one (0 if none); the
    # block of the last insertion first (a pass inserts its moved holders mostly in order)
    b = h.finger
    if not (0 <= b < h.nb
            and not hold_before(keys, resv, j, h.blk[b].resv[0], h.blk[b].job[0])
            and (b + 1 == h.nb or hold_before(keys, resv, j, h.blk[b + 1].resv[0],
                                              h.blk[b + 1].job[0]))):
        while lo < hi:
            mid = (lo + hi) >> 1
            if hold_before(keys, resv, j, h.blk[mid].resv[0], h.blk[mid].job[0]):
                hi = mid
            else:
                lo = mid + 1
        b = lo - 1 if lo > 0 else 0
    blk = h.blk[b]
    if blk.n == HOLD_BLOCK:
        nxt = _hold_new_block(h, b + 1)
        half = HOLD_BLOCK // 2
        memcpy(nxt.resv, blk.resv + half, half * sizeof(simtime_t))
        memcpy(nxt.job, blk.job + half, half * sizeof(intp_t))
        memcpy(nxt.hold, blk.hold + half, half * sizeof(simtime_t))
        memcpy(nxt.procs, blk.procs + half, half * sizeof(procs_t))
        nxt.n = half
        blk.n = half
        _hold_low(blk)
        _hold_low(nxt)
        if not hold_before(keys, resv, j, nxt.resv[0], nxt.job[0]):
            blk = nxt
            b += 1
    h.finger = b
    # i: the first entry of the block after the new one
    lo = 0
    hi = blk.n
    while lo < hi:
        mid = (lo + hi) >> 1
        if hold_before(keys, resv, j, blk.resv[mid], blk.job[mid]):
            hi = mid
        else:
            lo = mid + 1
    i = lo
    memmove(blk.resv + i + 1, blk.resv + i, (blk.n - i) * sizeof(simtime_t))
    memmove(blk.job + i + 1, blk.job + i, (blk.n - i) * sizeof(intp_t))
    memmove(blk.hold + i + 1, blk.hold + i, (blk.n - i) * sizeof(simtime_t))
    memmove(blk.procs + i + 1, blk.procs + i, (blk.n - i) * sizeof(procs_t))
    blk.resv[i] = resv
    blk.job[i] = j
    blk.hold[i] = hold
    blk.procs[i] = procs
    if procs < blk.low:
        blk.low = procs
    blk.n += 1
    h.n += 1
    return 0


cdef inline bint holders_remove(holders_t* h, intp_t b, intp_t i) noexcept nogil:
    """Remove entry i of block b; True when that emptied and dropped the block (the next
    block is then at b).  A block left with few entries takes in the next block when both
    fit in half a block (entries only move to the end of block b, so a caller walking
    block b at entry i carries on at entry i)."""
    cdef hblock_t* blk = h.blk[b]
    cdef hblock_t* nxt
    cdef procs_t gone = blk.procs[i]
    cdef intp_t m
    blk.n -= 1
    h.n -= 1
    if blk.n == 0:
        memmove(h.blk + b, h.blk + b + 1, (h.nb - b - 1) * sizeof(hblock_t*))
        h.nb -= 1
        h.blk[h.nb] = blk           # a spare block
        return True
    m = blk.n - i
    memmove(blk.resv + i, blk.resv + i + 1, m * sizeof(simtime_t))
    memmove(blk.job + i, blk.job + i + 1, m * sizeof(intp_t))
    memmove(blk.hold + i, blk.hold + i + 1, m * sizeof(simtime_t))
    memmove(blk.procs + i, blk.procs + i + 1, m * sizeof(procs_t))
    if b + 1 < h.nb and blk.n + h.blk[b + 1].n <= HOLD_BLOCK // 2:
        nxt = h.blk[b + 1]
        memcpy(blk.resv + blk.n, nxt.resv, nxt.n * sizeof(simtime_t))
        memcpy(blk.job + blk.n, nxt.job, nxt.n * sizeof(intp_t))
        memcpy(blk.hold + blk.n, nxt.hold, nxt.n * sizeof(simtime_t))
        memcpy(blk.procs + blk.n, nxt.procs, nxt.n * sizeof(procs_t))
        blk.n += nxt.n
        if nxt.low < blk.low:
            blk.low = nxt.low
        memmove(h.blk + b + 1, h.blk + b + 2, (h.nb - b - 2) * sizeof(hblock_t*))
        h.nb -= 1
        h.blk[h.nb] = nxt
    if gone == blk.low:
        _hold_low(blk)
    return False


cdef inline void holders_put(holders_t* h, intp_t* b, intp_t* i, intp_t j, simtime_t hold,
                             procs_t procs) noexcept nogil:
    """Overwrite the entry at (b[0], i[0]) with job j, its hold (seconds) and size
    (processors), the reservation kept, and step to the next entry (across blocks).  For
    putting the entries of one reservation back in queue order: the caller writes the same
    entries permuted, from the run's first one, then calls holders_put_end; a block the
    writes leave has its ``low`` recomputed then."""
    cdef hblock_t* blk = h.blk[b[0]]
    if i[0] == blk.n:
        _hold_low(blk)
        b[0] += 1
        i[0] = 0
        blk = h.blk[b[0]]
    blk.job[i[0]] = j
    blk.hold[i[0]] = hold
    blk.procs[i[0]] = procs
    i[0] += 1


cdef inline void holders_put_end(holders_t* h, intp_t b) noexcept nogil:
    """After holders_put at block b: its ``low`` again (the last block written)."""
    _hold_low(h.blk[b])


cdef inline simtime_t holders_first(const holders_t* h) noexcept nogil:
    """The earliest reservation held (seconds); -1 when empty."""
    return h.blk[0].resv[0] if h.nb > 0 else -1
