"""The endpoint's decision is the core's (plugin/reconfig/decide.py): live state -> plan's
inputs with the asking job malleable -> ``plan`` -> its row of ``Decisions.resize``."""
import dataclasses
import random

import msgspec
import numpy as np
import pytest

from malleo._core import plan
from malleo.plugin.agent.state import plan_inputs, read_snapshot
from malleo.plugin.backends.model import Job, Node, Partition
from malleo.plugin.malleable.spec import DeclaredMalleability
from malleo.plugin.reconfig.decide import decide
from malleo.policy import Malleability as Reconfig, Policy

B = DeclaredMalleability(min_nodes=1, max_nodes=8, period=10)
NOW = 1_800_000_000
TOTAL = 16


def job(job_id, nodes, state="RUNNING", submit=NOW - 100, held=False, reason="", first=1,
        limit=3600):
    names = tuple(f"n{i}" for i in range(first, first + nodes)) if state == "RUNNING" else ()
    return Job(job_id=job_id, name="j", user="u", user_id=1000, partition="debug", state=state,
               reason=reason, submit_time=submit,
               start_time=NOW - 50 if state == "RUNNING" else None, expected_start=None,
               end_time=NOW + limit if state == "RUNNING" else None, time_limit=limit,
               num_nodes=nodes, max_nodes=None, num_cpus=2 * nodes, priority=0 if held else 100,
               node_list=names, is_held=held)


class Live:
    """A backend whose state is a fixed list of jobs on 16 nodes of one partition."""

    def __init__(self, jobs):
        self.jobs = jobs

    def partitions(self):
        return [Partition("debug", tuple(f"n{i}" for i in range(1, TOTAL + 1)), 32, None,
                          is_default=True)]

    def nodes(self):
        busy = {n for j in self.jobs for n in j.node_list}
        return [Node(f"n{i}", "ALLOCATED" if f"n{i}" in busy else "IDLE", cpus=2,
                     alloc_cpus=2 if f"n{i}" in busy else 0, partitions=("debug",))
                for i in range(1, TOTAL + 1)]

    def all_jobs(self):
        return list(self.jobs)


def with_reconfig(name):
    return dataclasses.replace(Policy(), malleability=Reconfig(policy=name))


# --- hand-computed cases (16 nodes, FCFS + EASY, job 7 declares min=1, max=8) ----------------

def test_empty_queue_expands_to_max():
    d = decide(Live([job(7, 2)]), 7, B, 2)
    assert (d.action, d.nodes) == ("expand", 8)


def test_expand_only_as_far_as_the_idle_nodes_go():
    d = decide(Live([job(7, 2), job(10, 11, first=3)]), 7, B, 2)
    assert (d.action, d.nodes) == ("expand", 5)


def test_shrinks_by_the_smallest_amount_that_starts_the_blocked_head():
    # 7 on 4 nodes, 10 on 2, 10 idle; the head needs 12: it lacks 2.
    jobs = [job(7, 4), job(10, 2, first=5), job(8, 12, "PENDING", submit=NOW - 20)]
    d = decide(Live(jobs), 7, B, 4)
    assert (d.action, d.nodes) == ("shrink", 2)
    assert "[8]" in d.reason


def test_pass_starts_what_fits_before_the_policy_shrinks():
    # 7 on 4, 12 idle; head 8 needs 14; job 9 (1 node) backfills into the nodes the head
    # cannot use before its reservation, so the head then lacks 3, not 2.
    jobs = [job(7, 4), job(8, 14, "PENDING", submit=NOW - 20),
            job(9, 1, "PENDING", submit=NOW - 10)]
    d = decide(Live(jobs), 7, B, 4)
    assert (d.action, d.nodes) == ("shrink", 1)


def test_idle_nodes_no_waiting_job_can_use_are_taken():
    # 7 on 1 node (its min), 10 on 8, 7 idle; the head needs 10: no shrink of 7 starts it
    # and it does not fit in the 7 idle nodes, so dmr grows 7 into them.
    jobs = [job(7, 1), job(10, 8, first=2), job(8, 10, "PENDING", submit=NOW - 20)]
    d = decide(Live(jobs), 7, B, 1)
    assert (d.action, d.nodes) == ("expand", 8)
    # head-unblock never expands
    d = decide(Live(jobs), 7, B, 1, with_reconfig("head-unblock"))
    assert (d.action, d.nodes) == ("none", 1)


def test_none_when_the_queue_uses_every_idle_node():
    jobs = [job(7, 3), job(8, 13, "PENDING", submit=NOW - 20)]
    d = decide(Live(jobs), 7, B, 3)
    assert (d.action, d.nodes) == ("none", 3)


def test_none_when_no_shrink_helps_and_nothing_is_idle():
    bounds = DeclaredMalleability(min_nodes=2, max_nodes=8, period=10)
    jobs = [job(7, 2), job(10, 14, first=3), job(8, 4, "PENDING", submit=NOW - 20)]
    d = decide(Live(jobs), 7, bounds, 2)
    assert (d.action, d.nodes) == ("none", 2)


def test_reconfig_policy_none_never_resizes():
    d = decide(Live([job(7, 2)]), 7, B, 2, with_reconfig("none"))
    assert (d.action, d.nodes) == ("none", 2)


def test_head_unblock_shrinks_for_the_head():
    jobs = [job(7, 4), job(10, 2, first=5), job(8, 12, "PENDING", submit=NOW - 20)]
    d = decide(Live(jobs), 7, B, 4, with_reconfig("head-unblock"))
    assert (d.action, d.nodes) == ("shrink", 2)


def test_bounds_beyond_the_partition_are_clamped():
    d = decide(Live([job(7, 2)]), 7, DeclaredMalleability(min_nodes=1, max_nodes=64, period=5), 2)
    assert (d.action, d.nodes) == ("expand", TOTAL)


def test_ignores_held_and_dependent_jobs():
    """Held jobs and expanders (waiting on a dependency) cannot start: they are not waiting jobs."""
    jobs = [job(7, 2), job(8, 14, "PENDING", held=True, reason="JobHeldUser"),
            job(9, 2, "PENDING", reason="Dependency")]
    d = decide(Live(jobs), 7, B, 2)
    assert (d.action, d.nodes) == ("expand", 8)


def test_refuses_a_job_that_is_not_running():
    with pytest.raises(LookupError, match="not running"):
        decide(Live([job(7, 2, "PENDING")]), 7, B, 2)


# --- decide() equals a direct plan call on the same inputs ---------------------------------

def direct(live, job_id, bounds, policy):
    """The asking job's new size from ``plan`` called directly, columns built here."""
    inputs = plan_inputs(read_snapshot(live), unit="nodes", partition="debug")
    running = dict(inputs.running)
    n = len(running["procs"])
    row = inputs.running_ids.tolist().index(job_id)
    size = int(running["procs"][row])
    running["kind"] = np.array([2 if k == row else 0 for k in range(n)])
    running["min_procs"] = np.array([min(bounds.min_nodes, size) if k == row else -1
                                     for k in range(n)])
    running["max_procs"] = np.array([max(min(bounds.max_nodes, inputs.total), size)
                                     if k == row else -1 for k in range(n)])
    running["speedup_a"] = np.full(n, 0.05)
    d = plan(inputs.now, inputs.total, running, inputs.pending, policy)
    rows = {int(r): int(s) for r, s in d.resize}
    assert set(rows) <= {row}, "only the asking job is malleable"
    return rows.get(row, size)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("reconf", ["dmr", "head-unblock"])
def test_decide_equals_plan(seed, reconf):
    rng = random.Random(seed)
    free = list(range(1, TOTAL + 1))
    rng.shuffle(free)
    jobs, next_id = [], 7
    size7 = rng.randint(1, 6)
    for count in [size7] + [rng.randint(1, 5) for _ in range(rng.randint(0, 3))]:
        if count > len(free):
            break
        take, free = free[:count], free[count:]
        j = job(next_id, count, limit=rng.choice([600, 3600, 7200]))
        jobs.append(msgspec.structs.replace(j, node_list=tuple(f"n{i}" for i in sorted(take))))
        next_id += 1
    for k in range(rng.randint(0, 4)):
        jobs.append(job(100 + k, rng.randint(1, TOTAL), "PENDING", submit=NOW - 40 + k,
                        limit=rng.choice([300, 3600])))
    lo = rng.randint(1, size7)
    bounds = DeclaredMalleability(min_nodes=lo, max_nodes=rng.randint(size7, TOTAL + 2), period=10)
    policy = with_reconfig(reconf)
    d = decide(Live(jobs), 7, bounds, size7, policy)
    new = direct(Live(jobs), 7, bounds, policy)
    assert d.nodes == new
    assert d.action == ("expand" if new > size7 else "shrink" if new < size7 else "none")
    assert min(lo, size7) <= d.nodes <= max(bounds.max_nodes, size7) and d.reason
