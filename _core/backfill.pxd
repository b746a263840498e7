# The planning pass kernel: start what fits now, then backfill (none / easy /
# conservative / slurm) per docs/scheduling-semantics.md.
#
# Header-only (`cdef inline`): the event loop (loop.pyx) and `plan` (plan.pyx) compile
# this same function.  The queue must be ordered first (sched.queue_prepare).
from libc.stdint cimport INT64_MAX
from libc.string cimport memmove

from _types cimport (simtime_t, procs_t, intp_t, BACKFILL_NONE, BACKFILL_EASY,
                     BACKFILL_CONSERVATIVE, BACKFILL_SLURM)
from profile cimport (profile_t, profile_index, profile_reset, profile_add_release, profile_reserve,
                      profile_fits, profile_earliest, align_up)
from sched cimport sched_t, rent_t, run_rekey, start_job, qsort


cdef inline simtime_t hold_time(simtime_t est) noexcept nogil:
    """How long a planned job occupies the profile: its estimate, at least one second (a
    zero estimate must not let two jobs share processors at one instant)."""
    return est if est > 0 else 1


cdef inline void give_reservation(sched_t* s, intp_t j, simtime_t when) noexcept nogil:
    """Record a planned start: the latest one, and the first one ever."""
    s.resv_cur[j] = when
    if s.resv_first[j] < 0:
        s.resv_first[j] = when


cdef inline void easy_backfill(sched_t* s, intp_t head_pos) noexcept nogil:
    """EASY (Mu'alem and Feitelson 2001): reserve the head at the shadow time, then start
    later jobs that fit now and either end by the shadow time or fit in the extra
    processors."""
    cdef intp_t head = s.wait[head_pos]
    cdef procs_t need = s.procs[head]
    cdef procs_t avail = s.free
    cdef procs_t extra
    cdef intp_t k = 0
    cdef intp_t q, j
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
    for q in range(head_pos + 1, s.n_wait):
        if s.free == 0:
            break
        j = s.wait[q]
        if s.procs[j] <= s.free and (s.now + s.est[j] <= shadow or s.procs[j] <= extra):
            if s.now + s.est[j] > shadow:
                extra -= s.procs[j]
            start_job(s, q)


cdef inline int build_profile(sched_t* s, simtime_t resolution) except -1 nogil:
    """The profile of running jobs from ``now``: each holds its processors until its
    expected end, rounded up to a multiple of ``resolution``."""
    cdef intp_t k
    profile_reset(&s.prof, s.now, s.free)
    for k in range(s.n_run):
        profile_add_release(&s.prof, align_up(s.run[k].end, resolution), s.procs[s.run[k].id])
    return 0


cdef inline int _rent_cmp(const void* a, const void* b) noexcept nogil:
    cdef const rent_t* x = <const rent_t*> a
    cdef const rent_t* y = <const rent_t*> b
    if x.resv != y.resv:
        return -1 if x.resv < y.resv else 1
    if x.pos != y.pos:
        return -1 if x.pos < y.pos else 1
    return 0


cdef inline int conservative_backfill(sched_t* s, intp_t head_pos) except -1 nogil:
    """Re-plan every waiting job in the profile: holders of a reservation first (by that
    reservation, ties by queue order), then the others in queue order; each gets the
    earliest start at which it fits for its estimate; those planned now start."""
    cdef intp_t i, q, j, m
    cdef simtime_t when, hold
    build_profile(s, 1)
    m = 0
    for q in range(head_pos, s.n_wait):
        j = s.wait[q]
        s.rtmp[m].resv = s.resv_cur[j] if s.resv_cur[j] >= 0 else INT64_MAX
        s.rtmp[m].pos = q
        m += 1
    qsort(s.rtmp, m, sizeof(rent_t), _rent_cmp)
    for i in range(m):
        q = s.rtmp[i].pos
        j = s.wait[q]
        hold = hold_time(s.est[j])
        when = profile_earliest(&s.prof, s.now, hold, s.procs[j], 1)
        give_reservation(s, j, when)
        profile_reserve(&s.prof, when, when + hold, s.procs[j])
        if when == s.now:
            start_job(s, q)
    return 0


cdef inline int slurm_backfill(sched_t* s, intp_t head_pos) except -1 nogil:
    """Slurm sched/backfill: in queue order, start what fits now for its whole estimate;
    give the first bf_max_job_test others their earliest start on the bf_resolution grid
    within bf_window; the rest only start if they fit now.  With ``is_bf_round_down``
    (Slurm's own rounding): expected ends stay exact, a reservation starts at the exact
    earliest fit ``when`` and holds its processors until the grid instant at or before
    ``when`` plus max(hold, bf_resolution); from that grid instant on it already holds the
    processors it takes that were free before ``when`` (those released at ``when`` are busy
    until then anyway)."""
    cdef simtime_t res = s.bf_resolution
    cdef simtime_t grid_now = align_up(s.now, res)
    cdef intp_t reserved = 0
    cdef intp_t q, j
    cdef simtime_t when, hold, held_from, held_to
    cdef bint down = s.is_bf_round_down
    build_profile(s, 1 if down else res)
    for q in range(head_pos, s.n_wait):
        if reserved >= s.bf_max_job_test and s.prof.free[0] == 0:
            break
        j = s.wait[q]
        hold = hold_time(s.est[j])
        if profile_fits(&s.prof, s.now, hold, s.procs[j]):
            profile_reserve(&s.prof, s.now, s.now + hold, s.procs[j])
            start_job(s, q)
        elif reserved < s.bf_max_job_test:
            if down:
                when = profile_earliest(&s.prof, s.now, hold, s.procs[j], 1)
            else:
                when = profile_earliest(&s.prof, grid_now, hold, s.procs[j], res)
            if when >= 0 and when - s.now <= s.bf_window:
                if down:
                    # Slurm holds the reserved nodes from the grid instant at or before
                    # ``when``; in counts, only the part of the job that runs on processors
                    # already free before ``when`` (not released at ``when``) is held early.
                    held_from = when - when % res
                    if held_from < s.now:
                        held_from = s.now
                    held_to = when - when % res + (hold if hold > res else res)
                    if held_to <= when:
                        held_to = when + 1
                    early = s.procs[j]
                    if when > s.prof.time[0]:
                        early = s.procs[j] - (s.prof.free[profile_index(&s.prof, when)]
                                              - s.prof.free[profile_index(&s.prof, when - 1)])
                    if early > s.procs[j]:
                        early = s.procs[j]
                    if early > 0 and held_from < when:
                        profile_reserve(&s.prof, held_from, when, early)
                    profile_reserve(&s.prof, when, held_to, s.procs[j])
                else:
                    profile_reserve(&s.prof, when, when + hold, s.procs[j])
                give_reservation(s, j, when)
                reserved += 1
    return 0


cdef inline void drop_started(sched_t* s) noexcept nogil:
    """Remove the started jobs from the queue (memmove of the runs between them) and flag
    as backfilled those with a waiting job ahead: at position p, after k earlier starts,
    p - k jobs ahead are still waiting."""
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
    kept = pos[0]
    for k in range(s.n_started):
        p = pos[k]
        s.backfilled[s.wait[p]] = p > k
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
    run_rekey(s)
    if s.backfill == BACKFILL_CONSERVATIVE:
        # No first walk: a queue-front job started outside the plan could take processors
        # that an earlier reservation relies on (then reservations would move later).
        if s.n_wait > 0:
            conservative_backfill(s, 0)
        if s.n_started > 0:
            drop_started(s)
        return 0
    for q in range(s.n_wait):
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
        drop_started(s)
    return 0
