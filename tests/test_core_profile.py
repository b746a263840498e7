"""The availability profile and the event heap of malleo._core against brute force."""
import heapq

import numpy as np
import pytest

from malleo._core.heap import EventHeap
from malleo._core.profile import Profile

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
