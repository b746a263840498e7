"""The interim DMR rule on node counts (plugin/reconfig/decide.py)."""
import pytest

from malleo.plugin.malleable.spec import Malleability
from malleo.plugin.reconfig.decide import dmr_rule

B = Malleability(min_nodes=1, max_nodes=8, period=10)


@pytest.mark.parametrize("nodes, idle, waiting, expected", [
    (2, 14, [], ("expand", 8)),              # empty queue: grow to max
    (2, 3, [], ("expand", 5)),               # only as far as the idle nodes go
    (2, 6, [4], ("expand", 4)),              # the waiting job takes 4, 2 are left over
    (4, 12, [14], ("shrink", 2)),            # the blocked head lacks 2: smallest shrink
    (4, 0, [1, 9], ("shrink", 3)),           # the first blocked job decides
    (2, 0, [4], ("none", 2)),                # shrinking to min would not start it
    (4, 2, [2, 8], ("none", 4)),             # blocked job lacks 8 > 4 - 1: leave it
    (8, 0, [], ("none", 8)),                 # at max with nothing idle
    (3, 5, [5], ("none", 3)),                # every idle node is used by the queue
])
def test_rule(nodes, idle, waiting, expected):
    d = dmr_rule(nodes, B, idle, waiting)
    assert (d.action, d.nodes) == expected
    assert B.min_nodes <= d.nodes <= B.max_nodes and d.reason


def test_never_expands_past_a_blocked_job():
    d = dmr_rule(2, B, 5, [6])
    assert d.action == "shrink" and d.nodes == 1
    d = dmr_rule(1, B, 5, [7])
    assert d.action == "none"


# --- decide(): live state -> plan inputs -> plan's queue order -> the rule ------------------

from malleo.plugin.backends.model import Job, Node, Partition  # noqa: E402
from malleo.plugin.reconfig.decide import decide  # noqa: E402

NOW = 1_800_000_000


def job(job_id, nodes, state="RUNNING", submit=NOW - 100, held=False, reason="", first=1):
    names = tuple(f"n{i}" for i in range(first, first + nodes)) if state == "RUNNING" else ()
    return Job(job_id=job_id, name="j", user="u", user_id=1000, partition="debug", state=state,
               reason=reason, submit_time=submit,
               start_time=NOW - 50 if state == "RUNNING" else None, expected_start=None,
               end_time=NOW + 3600 if state == "RUNNING" else None, time_limit=3600,
               num_nodes=nodes, max_nodes=None, num_cpus=2 * nodes, priority=0 if held else 100,
               node_list=names, is_held=held)


class Live:
    """A backend whose state is a fixed list of jobs on 16 nodes of one partition."""

    def __init__(self, jobs):
        self.jobs = jobs

    def partitions(self):
        return [Partition("debug", tuple(f"n{i}" for i in range(1, 17)), 32, None,
                          is_default=True)]

    def nodes(self):
        busy = {n for j in self.jobs for n in j.node_list}
        return [Node(f"n{i}", "ALLOCATED" if f"n{i}" in busy else "IDLE", cpus=2,
                     alloc_cpus=2 if f"n{i}" in busy else 0, partitions=("debug",))
                for i in range(1, 17)]

    def all_jobs(self):
        return list(self.jobs)


def test_decide_expands_into_an_empty_queue():
    d = decide(Live([job(7, 2)]), 7, B, 2)
    assert (d.action, d.nodes) == ("expand", 8)


def test_decide_shrinks_for_the_blocked_head_in_plan_order():
    # 7 holds 4 nodes, 12 idle; the earliest submitted waiting job (FCFS head) needs 14.
    jobs = [job(7, 4), job(8, 14, "PENDING", submit=NOW - 20), job(9, 1, "PENDING", submit=NOW - 10)]
    d = decide(Live(jobs), 7, B, 4)
    assert (d.action, d.nodes) == ("shrink", 2)


def test_decide_ignores_held_and_dependent_jobs():
    """Held jobs and expanders (waiting on a dependency) cannot start: they are not waiting jobs."""
    jobs = [job(7, 2), job(8, 14, "PENDING", held=True, reason="JobHeldUser"),
            job(9, 2, "PENDING", reason="Dependency")]
    d = decide(Live(jobs), 7, B, 2)
    assert (d.action, d.nodes) == ("expand", 8)


def test_decide_refuses_a_job_that_is_not_running():
    with pytest.raises(LookupError, match="not running"):
        decide(Live([job(7, 2, "PENDING")]), 7, B, 2)
