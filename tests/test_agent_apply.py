"""Decisions -> priorities: the wanted order, the minimal writes, and applying them to a real
Slurm (skipping jobs that vanished or changed state between the read and the write)."""
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from malleo._core import plan
from malleo.plugin.agent.apply import (
    BAND_LOW, BAND_TOP, apply_priorities, assign_priorities, wanted_order)
from malleo.policy import Policy


def ranked(order, current, writes):
    values = {**current, **writes}
    return [values[j] for j in order]


def check(order, current, low=BAND_LOW, top=BAND_TOP):
    writes = assign_priorities(order, current, low=low, top=top)
    values = ranked(order, current, writes)
    assert all(a > b for a, b in zip(values, values[1:])), values
    if len(order) <= top - low + 1:
        assert all(low <= v <= top for v in values)
    assert all(current.get(j) != v for j, v in writes.items())   # only real changes
    return writes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 500), unique=True, max_size=60),
       st.dictionaries(st.integers(1, 500), st.integers(BAND_LOW - 50, BAND_TOP), max_size=60),
       st.integers(0, 3))
def test_any_order_ranks_strictly(order, current, shrink):
    # A narrow band (shrink) exercises renumbering and the overflow below the band.
    low = BAND_TOP - [65532, 200, 40, 10][shrink]
    check(order, {j: min(v, BAND_TOP) for j, v in current.items()}, low=low)


def test_consistent_values_are_kept():
    order = [5, 3, 9]
    current = {5: BAND_TOP - 10, 3: BAND_TOP - 20, 9: BAND_TOP - 30}
    assert assign_priorities(order, current) == {}


def test_fcfs_flow_costs_one_write_per_arrival():
    """Jobs leave from the head and arrive at the tail: after the first numbering, each
    cycle writes only the newcomer."""
    current = {}
    order = list(range(1, 21))
    current.update(check(order, current))
    for newcomer in range(21, 221):
        order = order[1:] + [newcomer]
        writes = check(order, current)
        assert list(writes) == [newcomer]
        current.update(writes)


def test_backfilled_job_moves_to_the_top_with_one_write():
    order = list(range(1, 11))
    current = check(order, {})
    moved = [7] + [j for j in order if j != 7]
    writes = check(moved, current)
    assert list(writes) == [7] and writes[7] > current[1]


def test_new_jobs_below_the_band_are_written():
    current = {1: BAND_LOW - 1, 2: 5}                    # Slurm defaults / manual values
    writes = check([2, 1], current)
    assert set(writes) == {1, 2}


def test_queue_longer_than_the_band():
    order = list(range(1, 30))
    writes = check(order, {}, low=BAND_TOP - 9)          # a band of 10 values
    assert ranked(order, {}, writes)[:10] == list(range(BAND_TOP, BAND_TOP - 10, -1))


def test_wanted_order_puts_starts_first():
    pending = {"submit": [0, 0, 0], "procs": [4, 4, 1], "request": [100, 100, 10]}
    running = {"procs": [2], "start": [0], "est": [50], "request": [50]}
    d = plan(1, 7, running, pending, Policy(backfill="easy"))
    # Job 0 starts (4 of 5 free), job 1 waits, job 2 backfills into the last free node.
    assert d.start.tolist() == [0, 2]
    assert wanted_order(d, np.array([100, 101, 102])) == [100, 102, 101]


# --- live --------------------------------------------------------------------------------


def submit(backend, ids, **kw):
    kw.setdefault("wrap", "sleep 60")
    kw.setdefault("time_limit", 120)
    kw.setdefault("output", "/dev/null")
    kw.setdefault("workdir", "/tmp")
    job_id = backend.submit(**kw)
    ids.append(job_id)
    return job_id


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.slurm
def test_apply_skips_jobs_that_changed_since_the_read(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    everything = len(slurm_cluster.node_names)
    blocker = submit(backend, slurm_jobs, nodes=everything)
    wait_until(lambda: backend.job(blocker).is_running, 30, "the blocker to start")
    kept, cancelled, held = (submit(backend, slurm_jobs, nodes=1) for _ in range(3))
    order = [kept, cancelled, held]
    writes = assign_priorities(order, {})
    # Between the read and the act: one job is cancelled, one is held.
    backend.cancel(cancelled)
    backend.hold(held)
    report = apply_priorities(backend, writes, order)
    assert report.applied == {kept: writes[kept]}
    # Slurm says "Job has already finished" and "held state": both skipped, none fatal.
    assert report.not_pending == [cancelled, held] and not report.vanished and not report.failed
    assert backend.job(kept).priority == writes[kept]
    assert backend.job(held).priority == 0
    # Purged ids: Slurm no longer knows them at all.
    report = apply_priorities(backend, {999_999: BAND_TOP}, [999_999])
    assert report.vanished == [999_999] and not report.applied
