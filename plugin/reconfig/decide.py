"""The decision for one malleable job at its check-in: expand, shrink or none, from the core.

The answer is the core's reconfiguration policy on the live queue, the same kernel the
emulator's malleable replay runs (docs/malleability.md).  :func:`decide` reads live state
and plans it through the live planner (:mod:`malleo.plugin.agent.live_plan`), the service
behind the agent's cycle and ``malleo slurm status``: inside the agent (``--reconfig-socket``)
with the agent's own planner, so the answer carries the agent's estimates, user history and
previous reservations; stand-alone with a fresh one.  The inputs are the agent's
(:func:`malleo.plugin.agent.state.plan_inputs`, node units), marks the asking job malleable
(``kind`` 2, ``min_procs``/``max_procs`` from its ``--comment=malleo:min=..,max=..,period=..``
declaration, ``procs`` its current size, at a reconfiguration point), keeps every other
running job rigid, calls :func:`malleo._core.plan` under the site's policy and translates the
asking job's row of ``Decisions.resize`` into expand(n) / shrink(n) / none, n in nodes.

The reconfiguration policy is ``policy.malleability.policy``: ``dmr`` by default (a policy
file without a ``[malleability]`` table), or what the agent's policy file says.  With dmr the
core (1) shrinks the job by exactly the nodes the first waiting job in queue order lacks,
when that keeps it at or above its min, so that job starts; else (2) expands it into the idle
nodes, up to its max, when no waiting job fits in them; else (3) leaves it.  Waiting jobs
that already fit are started by the planning pass before the policy runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malleo.plugin.agent.live_plan import LivePlanner
from malleo.plugin.agent.state import read_snapshot
from malleo.plugin.malleable.spec import DeclaredMalleability
from malleo.policy import Policy, parse_speedup

KIND_RIGID = 0
KIND_MALLEABLE = 2


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


def malleable_columns(running: dict[str, np.ndarray], row: int, bounds: DeclaredMalleability,
                      total: int, policy: Policy) -> dict[str, np.ndarray]:
    """``running`` with the malleability columns of ``plan``: row ``row`` malleable with the
    declared bounds (clamped to the partition's ``total`` nodes and so as to contain its
    current size), every other row rigid.

    Speedup parameters come from ``policy.malleability.speedup``; a ``LO~HI`` range (drawn
    per job in a replay) is taken at its midpoint, a live job having no draw.
    """
    n = len(running["procs"])
    size = int(running["procs"][row])
    kind = np.full(n, KIND_RIGID, dtype=np.int64)
    kind[row] = KIND_MALLEABLE
    lo = np.full(n, -1, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    lo[row] = min(bounds.min_nodes, size)
    hi[row] = max(min(bounds.max_nodes, total), size)
    _, params = parse_speedup(policy.malleability.speedup)
    mid = [(a + b) / 2.0 for a, b in params] + [0.0, 0.0]
    out = dict(running)
    out.update(kind=kind, min_procs=lo, max_procs=hi,
               speedup_a=np.full(n, mid[0]), speedup_b=np.full(n, mid[1]),
               at_point=np.ones(n, dtype=np.int64))
    return out


def decide(backend, job_id: int, bounds: DeclaredMalleability, nodes: int,
           policy: Policy | None = None, planner: LivePlanner | None = None) -> Decision:
    """Decide for running job ``job_id`` on ``nodes`` nodes from the live queue (module
    docstring).  The returned ``nodes`` stays within ``bounds`` unless the job already is
    outside them.

    Args:
        backend: the Slurm backend to read the state from.
        policy: the site's policy; None: the planner's, else the default policy.
        planner: the live planner whose memory the decision uses (the agent's, when the
            endpoint runs inside the agent, so the answer agrees with the agent's plan);
            None: a fresh one (what a freshly started agent would plan).

    Raises:
        SlurmError: Slurm could not be read.
        LookupError: the job is not among the running jobs of its partition.
    """
    if planner is None:
        planner = LivePlanner(policy or Policy(), unit="nodes")
    elif policy is not None and policy is not planner.policy:
        planner.set_policy(policy)
    snapshot = read_snapshot(backend, compact=False)
    job = next((j for j in snapshot.jobs if j.job_id == job_id), None)
    if job is None or not job.is_running:
        raise LookupError(f"job {job_id} is not running")
    partition = job.partition.split(",")[0]
    holder: dict = {}

    def malleable(inputs):
        ids = inputs.running_ids.tolist()
        if job_id not in ids:
            raise LookupError(f"job {job_id} holds no usable node of partition {partition}")
        holder["row"] = row = ids.index(job_id)
        holder["running"] = columns = malleable_columns(inputs.running, row, bounds,
                                                        inputs.total, planner.policy)
        return columns

    try:
        live = planner.plan(snapshot, unit="nodes", partition=partition, running=malleable)
    except ValueError as exc:
        raise LookupError(f"no plan: {exc}") from None
    if live.decisions is None:
        raise LookupError(f"partition {partition} has no usable node")
    decisions, inputs, row = live.decisions, live.inputs, holder["row"]
    reconf = live.policy.malleability.policy
    size = int(holder["running"]["procs"][row])
    new = next((int(s) for r, s in decisions.resize.tolist() if r == row), size)
    # expand_mode "slurm": a requested expander (Slurm/DMR submits it) is still an expansion
    new = next((size + int(p) for r, p, _ in decisions.expand.tolist() if r == row), new)
    target = nodes + (new - size)
    if new < size:
        starts = [int(inputs.pending_ids[i]) for i in decisions.start.tolist()]
        return Decision("shrink", target, f"core {reconf}: shrink {size} -> {_nodes(new)} so "
                                          f"waiting job(s) {starts} start")
    if new > size:
        return Decision("expand", target, f"core {reconf}: expand {size} -> {_nodes(new)} "
                                          f"into nodes no waiting job can use")
    return Decision("none", nodes, f"core {reconf}: leave it at {_nodes(size)}")


def _nodes(count: int) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{count} node" if count == 1 else f"{count} nodes"
