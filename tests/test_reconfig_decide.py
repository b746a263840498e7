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
