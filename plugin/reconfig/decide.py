"""The decision for one malleable job at its check-in: expand, shrink or none.

Interim adapter until the core's malleability policy (dmr) fills ``Decisions.resize``: it
reads live state, builds ``plan``'s inputs exactly as the agent does
(:func:`malleo.plugin.agent.state.plan_inputs`, node units), runs ``plan`` for the queue
order of the waiting jobs under the site's policy, and applies the DMR rule (Iserte et al.)
to the asking job in node counts:

1. Walk the waiting jobs in queue order, giving each the idle nodes it fits in. At the first
   one that does not fit, shrink the asking job by exactly the nodes it lacks when that keeps
   the job at or above its ``min`` (the smallest shrink that starts the highest-priority
   blocked job); otherwise leave it (a shrink that starts nobody only costs).
2. If every waiting job fits, expand into the idle nodes left over (no waiting job can use
   them), up to the job's ``max``.
3. Else none.

Expanding while a waiting job is blocked is never done: those idle nodes are what the blocked
job is waiting to accumulate.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malleo._core import plan
from malleo.plugin.agent.state import plan_inputs, read_snapshot
from malleo.plugin.malleable.spec import Malleability
from malleo.policy import Policy


@dataclass(frozen=True)
class Decision:
    """An answer for one job.

    Attributes:
        action: "none", "expand" or "shrink".
        nodes: node count after the change (the current count for "none").
        reason: one line on why, for the endpoint's log.
    """

    action: str
    nodes: int
    reason: str


def dmr_rule(nodes: int, bounds: Malleability, idle: int, waiting: list[int]) -> Decision:
    """The DMR rule on node counts (module docstring).

    Args:
        nodes: the job's nodes now.
        bounds: its declared min and max.
        idle: idle usable nodes of its partition.
        waiting: node counts of the waiting jobs, in queue order.
    """
    free = idle
    for need in waiting:
        if need <= free:
            free -= need
            continue
        lacking = need - free
        if nodes - lacking >= bounds.min_nodes:
            return Decision("shrink", nodes - lacking,
                            f"a waiting job of {need} nodes lacks {lacking}")
        return Decision("none", nodes, f"a waiting job of {need} nodes is blocked; shrinking "
                                       f"below min={bounds.min_nodes} would not start it")
    target = min(bounds.max_nodes, nodes + free)
    if target > nodes:
        return Decision("expand", target, f"{free} idle nodes no waiting job can use")
    return Decision("none", nodes, "no idle node to take, no waiting job to help")


def decide(backend, job_id: int, bounds: Malleability, nodes: int,
           policy: Policy | None = None) -> Decision:
    """Decide for running job ``job_id`` on ``nodes`` nodes from the live queue.

    Raises:
        SlurmError: Slurm could not be read.
        LookupError: the job is not among the running jobs of its partition.
    """
    snapshot = read_snapshot(backend)
    job = next((j for j in snapshot.jobs if j.job_id == job_id), None)
    if job is None or not job.is_running:
        raise LookupError(f"job {job_id} is not running")
    partition = job.partition.split(",")[0]
    inputs = plan_inputs(snapshot, unit="nodes", partition=partition)
    if job_id not in set(inputs.running_ids.tolist()):
        raise LookupError(f"job {job_id} holds no usable node of partition {partition}")
    decisions = plan(inputs.now, inputs.total, inputs.running, inputs.pending,
                     policy or Policy())
    procs = np.asarray(inputs.pending["procs"])
    waiting = [int(procs[i]) for i in decisions.order]
    idle = inputs.total - inputs.busy
    return dmr_rule(nodes, bounds, idle, waiting)
