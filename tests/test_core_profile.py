"""The availability profile and the event heap of malleo._core against brute force."""
import heapq

import numpy as np
import pytest

from malleo._core.heap import EventHeap
from malleo._core.profile import BLOCK, GROUP, Profile

HORIZON = 400   # seconds covered by the brute-force array


def random_profile(rng, total):
    """A profile from running jobs and reservations, with its per-second free array."""
    origin = int(rng.integers(0, 50))
    busy = sorted(int(x) for x in rng.integers(1, 120, size=int(rng.integers(0, 8))))
    sizes = [int(x) for x in rng.integers(1, max(total // 4, 1) + 1, size=len(busy))]
    while sum(sizes) > total:
        sizes.pop()
        busy.pop()
    free = np.full(HORIZON + 200, total, dtype=np.int64)
    free[:origin] = -10**9        # before the origin: never asked
    prof = Profile(origin, total - sum(sizes))
    for end, size in zip(busy, sizes):
        prof.add_release(origin + end, size)
        free[origin:origin + end] -= size
    for _ in range(int(rng.integers(0, 10))):
        begin = origin + int(rng.integers(0, 150))
        length = int(rng.integers(0, 80))
        need = int(rng.integers(1, total + 1))
        if (free[begin:begin + length] >= need).all():
            prof.reserve(begin, begin + length, need)
            free[begin:begin + length] -= need
    return origin, prof, free


def brute_earliest(free, start, duration, procs, resolution):
    s = -(-start // resolution) * resolution
    while True:
        window = free[s:s + duration] if duration > 0 else free[s:s + 1]
        if (window >= procs).all():
            return s
        s += resolution


@pytest.mark.parametrize("seed", range(40))
def test_profile_matches_per_second_array(seed):
    rng = np.random.default_rng(seed)
    total = int(rng.integers(1, 40))
    origin, prof, free = random_profile(rng, total)
    for t in range(origin, HORIZON):
        assert prof.free_at(t) == free[t], t
    times, counts = prof.breakpoints()
    assert (np.diff(times) > 0).all()
    assert counts[-1] == total
    for _ in range(60):
        start = origin + int(rng.integers(0, 200))
        duration = int(rng.integers(0, 100))
        procs = int(rng.integers(1, total + 1))
        resolution = int(rng.choice([1, 1, 7, 60]))
        expected = brute_earliest(free, start, duration, procs, resolution)
        assert prof.earliest(start, duration, procs, resolution) == expected
        window = free[start:start + duration] if duration > 0 else free[start:start + 1]
        assert prof.fits(start, duration, procs) == bool((window >= procs).all())


def test_profile_example_and_growth():
    prof = Profile(0, 0)
    for k in range(1, 200):                # forces several reallocations
        prof.add_release(k * 10, 1)
    assert len(prof) == 200
    assert prof.free_at(0) == 0 and prof.free_at(15) == 1 and prof.free_at(5000) == 199
    assert prof.earliest(0, 10, 50) == 500
    prof.reserve(500, 520, 50)
    assert prof.free_at(505) == 0 and prof.free_at(515) == 1 and prof.free_at(520) == 52
    assert prof.earliest(0, 10, 50) == 520       # right after the reservation ends
    assert prof.earliest(480, 30, 5) == 520      # [500, 520) is too full for 5
    assert prof.earliest(480, 20, 5) == 480      # ends when the reservation starts
    prof.reserve(700, 700, 199)                  # empty interval: no effect
    assert prof.free_at(700) == 70


def test_profile_rejects_times_before_origin():
    prof = Profile(100, 4)
    with pytest.raises(ValueError, match="origin"):
        prof.reserve(50, 150, 1)
    with pytest.raises(ValueError, match="origin"):
        prof.earliest(99, 1, 1)
    prof.add_release(200, 1)
    with pytest.raises(ValueError, match="last breakpoint"):
        prof.add_release(150, 1)


def test_profile_earliest_never_fits_returns_minus_one():
    prof = Profile(0, 2)
    assert prof.earliest(0, 10, 3) == -1


@pytest.mark.parametrize("seed", range(5))
def test_event_heap_matches_heapq(seed):
    rng = np.random.default_rng(seed)
    heap = EventHeap()
    ref = []
    for _ in range(500):
        if ref and rng.random() < 0.4:
            assert heap.pop() == heapq.heappop(ref)
        else:
            item = (int(rng.integers(0, 50)), int(rng.integers(0, 1000)))
            heap.push(*item)
            heapq.heappush(ref, item)
        assert len(heap) == len(ref)
        assert heap.peek() == (ref[0] if ref else None)
    while ref:
        assert heap.pop() == heapq.heappop(ref)
    with pytest.raises(IndexError):
        heap.pop()


# --- issue 16: the blocked profile on dense profiles (many blocks), against brute force ---

from hypothesis import given, settings, strategies as st  # noqa: E402

DENSE = 3000    # seconds covered by the dense brute-force array


@st.composite
def dense_profiles(draw):
    """Running jobs then up to 400 feasible reservations: hundreds of breakpoints, so
    blocks fill, split and take lazy updates."""
    total = draw(st.integers(1, 64))
    origin = draw(st.integers(0, 100))
    ends = sorted(draw(st.lists(st.integers(1, 1500), max_size=80)))
    sizes = draw(st.lists(st.integers(1, max(1, total // 8)), min_size=len(ends),
                          max_size=len(ends)))
    while sum(sizes) > total:
        sizes.pop()
        ends.pop()
    ops = draw(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 400),
                                  st.integers(1, total)), max_size=400))
    return total, origin, list(zip(ends, sizes)), ops


def _build_dense(total, origin, releases, ops):
    free = np.full(DENSE + 500, total, dtype=np.int64)
    prof = Profile(origin, total - sum(size for _, size in releases))
    for end, size in releases:
        prof.add_release(origin + end, size)
        free[origin:origin + end] -= size
    for begin, length, need in ops:
        begin += origin
        if (free[begin:begin + length] >= need).all():
            prof.reserve(begin, begin + length, need)
            free[begin:begin + length] -= need
    return prof, free


@settings(max_examples=60, deadline=None)
@given(dense_profiles(), st.lists(st.tuples(st.integers(0, 2200), st.integers(0, 500),
                                            st.integers(1, 64), st.sampled_from([1, 1, 7, 60])),
                                  min_size=1, max_size=30))
def test_blocked_profile_matches_brute_force(case, queries):
    """The class-specific implementation (blocks with min, max and lazy add) matches the
    general definition: the earliest s on the grid with every second of [s, s + d) free
    enough, checked against a per-second array; the block invariants hold throughout."""
    total, origin, releases, ops = case
    prof, free = _build_dense(total, origin, releases, ops)
    prof.check()
    times, counts = prof.breakpoints()
    assert (np.diff(times) > 0).all() and len(times) == len(prof)
    for k, t in enumerate(times.tolist()):
        assert counts[k] == free[t]
    for start, duration, procs, resolution in queries:
        start += origin
        procs = min(procs, total + 1)
        got = prof.earliest(start, duration, procs, resolution)
        if procs > total:
            assert got == -1
            continue
        assert got == brute_earliest(free, start, duration, procs, resolution)
        window = free[start:start + duration] if duration > 0 else free[start:start + 1]
        assert prof.fits(start, duration, procs) == bool((window >= procs).all())
        assert prof.free_at(start) == free[start]


@settings(max_examples=40, deadline=None)
@given(dense_profiles(), st.lists(st.tuples(st.integers(1, 64), st.integers(1, 300)),
                                  min_size=1, max_size=120))
def test_hints_never_change_an_answer(case, jobs):
    """A conservative pass in miniature: each job takes the earliest fit from the origin,
    searched from the hint (profile_hint) instead; the answer is the one searched from the
    origin, so noted answers are sound lower bounds while reservations only take."""
    total, origin, releases, ops = case
    prof, free = _build_dense(total, origin, releases, ops)
    for procs, duration in jobs:
        procs = min(procs, total)
        hint = prof.hint(procs, duration)
        plain = prof.earliest(origin, duration, procs)
        assert hint <= plain
        assert prof.earliest(max(origin, hint), duration, procs) == plain
        prof.note(procs, duration, plain)
        prof.reserve(plain, plain + duration, procs)
    prof.check()


@settings(max_examples=60, deadline=None)
@given(dense_profiles(), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 400),
                                            st.integers(1, 300)), min_size=1, max_size=80))
def test_kept_moves_match_brute_force(case, moves):
    """The kept pass's moves (backfill.pxd kept_by_holders): a reservation moved earlier
    takes its processors over [w, r) and gives them back over [w + h, r + h) when the two
    slots overlap, else gives its whole slot back; each range update merges the stale
    breakpoint at its end (profile_reserve_merge, one pass over a block when it can) and a
    give-back tells the most processors now free where it gave (profile_give_back_max).
    After every update: the per-second array's counts, the block and group invariants,
    and the same breakpoints as a profile making the update, then merging at its end, in
    two steps."""
    total, origin, releases, ops = case
    prof, free = _build_dense(total, origin, releases, [])
    twin, _ = _build_dense(total, origin, releases, [])
    held = []
    for begin, length, need in ops:         # reservations where they fit
        begin += origin
        if length > 0 and (free[begin:begin + length] >= need).all():
            for p in (prof, twin):
                p.reserve(begin, begin + length, need)
            free[begin:begin + length] -= need
            held.append((begin, begin + length, need))

    def update(start, end, procs):
        if procs < 0:           # a give-back tells the most now free where it gave
            top = prof.give_back_max(start, end, -procs)
            assert top == (free[start:end] - procs).max()
        else:
            prof.reserve_merge(start, end, procs)
        twin.reserve(start, end, procs)
        twin.merge_at(end)
        free[start:end] -= procs
        prof.check()
        times, counts = prof.breakpoints()
        twin_times, twin_counts = twin.breakpoints()
        assert times.tolist() == twin_times.tolist()
        assert counts.tolist() == twin_counts.tolist()
        assert (counts == free[times]).all()

    for pick, step, length in moves:
        if not held:
            break
        begin, end, need = held[pick % len(held)]
        if begin <= origin:
            continue
        hold = end - begin
        when = begin - 1 - step % (begin - origin)
        # earlier only where its processors are free before its slot
        if not (free[when:min(when + hold, begin)] >= need).all():
            continue
        held.remove((begin, end, need))
        if when + hold > begin:
            update(when, begin, need)
            update(when + hold, end, -need)
        else:
            update(begin, end, -need)
            update(when, when + hold, need)
        held.append((when, when + hold, need))
        if length % 7 == 0:                 # and now and then an early completion
            lo = origin + length % 300
            update(lo, lo + 1 + length, -1)
    assert len(prof) == len(twin)


@pytest.mark.parametrize("seed", range(2))
def test_groups_of_blocks_match_brute_force(seed):
    """Thousands of breakpoints (hundreds of blocks, dozens of groups of PROFILE_GROUP
    blocks): after every change the group summaries (glo, ghi) are exact (check()), and
    the searches that skip whole groups give the per-second array's answers."""
    rng = np.random.default_rng(seed)
    scale = max(1, BLOCK // 64)         # the same density of breakpoints per block
    total, horizon = 256, 40_000 * scale
    free = np.full(horizon + 5_000, total, dtype=np.int64)
    prof = Profile(0, total)
    taken = []
    for k in range(6_000 * scale):
        begin = int(rng.integers(0, horizon - 2_000))
        length = int(rng.integers(1, 600))
        need = int(rng.integers(1, 24))
        if (free[begin:begin + length] >= need).all():
            prof.reserve(begin, begin + length, need)
            free[begin:begin + length] -= need
            taken.append((begin, length, need))
        if k % 500 == 0:
            prof.check()
    assert prof.check() > GROUP * 12      # more than 12 groups of blocks
    for k in range(0, len(taken), 3):     # a third given back: stale breakpoints dropped
        begin, length, need = taken[k]
        before = len(prof)
        top = prof.give_back_max(begin, begin + length, need)   # = give_back
        prof.merge_at(begin)
        free[begin:begin + length] += need
        assert len(prof) <= before
        assert top == free[begin:begin + length].max()
        if k % 300 == 0:
            prof.check()
    prof.check()
    times, counts = prof.breakpoints()
    assert (counts == free[times]).all()
    assert len(prof) < 1.8 * len(taken)   # about 4/3 with the merges, 2 without
    for _ in range(100):
        start = int(rng.integers(0, horizon))
        duration = int(rng.integers(0, 3_000))
        procs = int(rng.integers(1, total + 1))
        resolution = int(rng.choice([1, 1, 60]))
        got = prof.earliest(start, duration, procs, resolution)
        assert got == brute_earliest(free, start, duration, procs, resolution)
        window = free[start:start + duration] if duration > 0 else free[start:start + 1]
        assert prof.fits(start, duration, procs) == bool((window >= procs).all())
        length = int(rng.integers(1, 3_000))
        window = free[start:start + length]
        assert prof.min_over(start, start + length) == window.min()
        assert prof.max_over(start, start + length) == window.max()
        # backwards from the segment holding t: the end of the last one short of procs
        t = start + length
        seg = int(times[np.searchsorted(times, t, side="right") - 1])
        lo = start if seg >= start else seg
        for need in (procs, int(rng.integers(1, 40))):
            short = np.flatnonzero(free[lo:seg] < need)
            assert prof.last_short_end(lo, t, need) == (lo + int(short[-1]) + 1
                                                        if len(short) else lo)


@settings(max_examples=200, deadline=None)
@given(dense_profiles(),
       st.lists(st.tuples(st.sampled_from(["take", "back", "back", "back", "fits", "all",
                                           "forget"]),
                          st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6),
                          st.integers(0, 2200), st.integers(1, 900)),
                min_size=1, max_size=60))
def test_came_back_bounds_hold(case, steps):
    """The kept pass's record of where processors came back (dec_add: DEC_SLOTS intervals,
    merged when more, a merged one's bound from its own and a walk of the new interval;
    dec_bound; dec_may_fit, which lowers bounds) against a per-second array: after any mix
    of takes and give-backs, every instant where processors came back has at most the
    bound of a window around it free, and `came_back_fits` is False only when no such
    instant of its window has the size free."""
    total, origin, releases, ops = case
    prof, free = _build_dense(total, origin, releases, ops)
    came_back = np.zeros(len(free), dtype=bool)
    taken = []
    # first 150 attempts at small reservations, so that there is much to give back
    warm_up = [("take", 7 * k, 13 * k, k, 0, 1) for k in range(150)]
    for kind, x, y, z, at, length in warm_up + steps:
        if kind == "take":
            begin, span, need = origin + x % 2000, 1 + y % 300, 1 + z % total
            if (free[begin:begin + span] >= need).all():
                prof.reserve(begin, begin + span, need)
                free[begin:begin + span] -= need
                taken.append((begin, span, need))
        elif kind == "back" and taken:
            # a reservation moved: part of its slot (or all of it) comes back
            begin, span, need = taken.pop(x % len(taken))
            lo = begin + y % span
            hi = lo + 1 + z % (begin + span - lo)
            prof.give_back(lo, hi, need)
            free[lo:hi] += need
            prof.came_back(lo, hi)
            came_back[lo:hi] = True
            assert prof.came_back_bound(lo, hi) >= free[lo:hi].max()
            if lo > begin:
                taken.append((begin, lo - begin, need))
            if hi < begin + span:
                taken.append((hi, begin + span - hi, need))
        elif kind == "fits":
            lo, hi, procs = origin + at, origin + at + length, 1 + z % total
            if not prof.came_back_fits(lo, hi, procs):
                assert not (free[lo:hi][came_back[lo:hi]] >= procs).any()
        elif kind == "forget":
            prof.forget_came_back()
            came_back[:] = False
        elif kind == "all":
            # every 25 s where processors came back (every bound taken: the next merges
            # start from taken bounds)
            for lo in range(origin, len(free) - 25, 25):
                inside = came_back[lo:lo + 25]
                if inside.any():
                    assert prof.came_back_bound(lo, lo + 25) >= free[lo:lo + 25][inside].max()
        # two windows at `at` (their bounds taken where not yet)
        for lo, hi in ((origin + at, origin + at + length), (origin + at, origin + at + 20)):
            inside = came_back[lo:hi]
            if inside.any():
                assert prof.came_back_bound(lo, hi) >= free[lo:hi][inside].max()
    prof.check()
