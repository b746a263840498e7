"""Plan from the live state: the one service behind every live answer.

The agent's cycle, ``malleo slurm status`` and the reconfiguration endpoint's decision all
call :meth:`LivePlanner.plan`, so for the same Slurm state and the same memory they give the
same order, starts, reservations and priorities, and these equal what ``malleo._core.plan``
returns for the same columns (tests/test_live_plan.py checks all four agree).

What a planner remembers between passes (:class:`LiveMemory`) is what the core needs to
answer like the emulator does: the runtime history and multifactor usage (``PlanState``,
fed by the completed jobs Slurm still lists), the previous pass's reservations
(conservative backfill keeps them) and multifactor priorities.  All of it can be rebuilt
from Slurm: a planner made now (a restarted agent, a status run with no agent, a
stand-alone endpoint) starts from the completed jobs Slurm still lists and converges in one
pass.

Only :meth:`LivePlanner.commit` changes the memory (the agent commits the plan it applied);
status and the endpoint plan without committing.

Who acts on each field of ``Decisions`` (:data:`DECISION_OWNERS`; docs/agent.md):

========================  ===========================================================
``start``, ``order``      the agent: priority writes, started jobs first
``reservation``           the agent: kept for the next pass (conservative backfill);
                          shown by ``slurm status`` as the planned start
``priority``, ``state``   the agent: kept for the next pass (multifactor, predict)
``est``, ``backfilled``   shown by ``slurm status`` (expected end, the backfill note)
``start_procs``           the agent: under ``moldable_start``, a job asking a node
                          range (``-N 2-8``) that the plan starts now at fewer than its
                          maximum gets that node count (``scontrol update
                          NumNodes=n-n``) before its priority
``resize``, ``expand``    the reconfiguration endpoint, answering the malleable job's
                          launcher at its reconfiguration point; the launcher performs
                          the resize.  The agent's own pass keeps running jobs rigid,
                          so these are empty there.
========================  ===========================================================
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from malleo.plugin.agent.apply import wanted_order
from malleo.plugin.backends.columns import JobTable
from malleo.plugin.agent.state import (PlanInputs, Snapshot, out_of_range, plan_inputs,
                                       user_key)
from malleo.policy import Policy

DECISION_OWNERS: dict[str, str] = {
    "start": "agent: the jobs started now get the highest priorities, in start order",
    "order": "agent: the other planned jobs follow in this order",
    "reservation": "agent: kept for the next pass; status: planned start",
    "priority": "agent: kept for the next pass (multifactor)",
    "state": "agent: kept for the next pass (history, usage)",
    "est": "status: the planning estimate (expected end)",
    "backfilled": "status: the backfill note",
    "start_procs": "agent: node count of a range job started now (NumNodes=n-n)",
    "resize": "reconfiguration endpoint: the asking malleable job's answer",
    "expand": "reconfiguration endpoint: the asking malleable job's answer (slurm mode)",
}
"""Field of ``Decisions`` -> the component that acts on it (module docstring)."""


@dataclass
class LiveMemory:
    """What a planner carries between passes; all of it can be rebuilt from Slurm.

    Attributes:
        plan_state: the core's ``PlanState`` (runtime history, multifactor usage).
        recorded: ids of completed jobs already fed into ``plan_state``.
        reservation: job id -> planned start (epoch seconds) of the last committed pass.
        priority: job id -> multifactor priority of the last committed pass.
    """

    plan_state: object = None
    recorded: set = field(default_factory=set)
    reservation: dict = field(default_factory=dict)
    priority: dict = field(default_factory=dict)


@dataclass
class LivePlan:
    """One pass over a snapshot.

    Attributes:
        snapshot: what Slurm returned.
        inputs: the converted tables (``plan``'s columns).
        decisions: ``plan``'s decisions; None when the partition has no usable node.
        order: Slurm job ids in wanted priority order (started now first).
        started_now: Slurm ids ``plan`` starts now, in start order.
        policy: the policy of the pass.
        state_before: the ``PlanState`` the pass started from (factor breakdowns).
        seconds: wall seconds of the pass's parts: ``convert`` (the history update and
            ``plan_inputs``) and ``plan`` (``plan`` and the wanted order).
    """

    snapshot: Snapshot
    inputs: PlanInputs
    decisions: object | None
    order: list[int]
    started_now: list[int]
    policy: Policy
    state_before: object
    seconds: dict = field(default_factory=dict)

    def start_sizes(self) -> dict[int, int]:
        """Slurm id -> size (plan units) of every job started now whose chosen size differs
        from its requested minimum (moldable range jobs, ``Decisions.start_procs``)."""
        d = self.decisions
        if d is None or len(d.start) == 0:
            return {}
        out = {}
        for k, size in zip(d.start.tolist(), d.start_procs.tolist()):
            if int(size) != int(self.inputs.pending["procs"][k]):
                out[int(self.inputs.pending_ids[k])] = int(size)
        return out


class LivePlanner:
    """Plans the live state with one policy and one memory (module docstring).

    Args:
        policy: the policy (:meth:`set_policy` replaces it).
        unit: "nodes" or "cpus" (:mod:`malleo.plugin.agent.state`).
        partition: the partition to plan; None: the cluster's default.

    Thread-safe: the endpoint's thread may plan while the agent's thread commits.
    """

    def __init__(self, policy: Policy, *, unit: str = "nodes", partition: str | None = None):
        from malleo._core import PlanState

        self.policy = policy
        self.unit = unit
        self.partition = partition
        self.memory = LiveMemory(plan_state=PlanState())
        self._lock = threading.RLock()

    def set_policy(self, policy: Policy) -> None:
        """Use ``policy`` from the next pass; a new order or backfill forgets the previous
        reservations and priorities (they were planned under other rules)."""
        with self._lock:
            old = self.policy
            self.policy = policy
            if policy.order != old.order or policy.backfill != old.backfill:
                self.memory.reservation.clear()
                self.memory.priority.clear()

    def observe(self, snapshot: Snapshot) -> None:
        """Feed the completed jobs Slurm still lists into the runtime history and usage
        (predict estimates, multifactor fair share), each once, in end order."""
        memory = self.memory
        jobs = snapshot.jobs
        if isinstance(jobs, JobTable):              # the compact read: only these rows
            jobs = [jobs.job(r) for r in np.flatnonzero(jobs.state == b"COMPLETED").tolist()]
        done = sorted((j for j in jobs
                       if j.state == "COMPLETED" and j.start_time and j.end_time
                       and j.end_time >= j.start_time and out_of_range(j) is None),
                      key=lambda j: (j.end_time, j.job_id))
        with self._lock:
            present = set()
            for job in done:
                present.add(job.job_id)
                if job.job_id in memory.recorded:
                    continue
                size = job.num_nodes if self.unit == "nodes" else job.num_cpus
                memory.plan_state.record_completion(user_key(job), max(size, 1),
                                                    job.start_time, job.end_time)
                memory.recorded.add(job.job_id)
            memory.recorded &= present

    def plan(self, snapshot: Snapshot, *, unit: str | None = None,
             partition: str | None = None,
             running: Callable[[PlanInputs], dict] | None = None) -> LivePlan:
        """One pass over ``snapshot`` with the planner's policy and memory (not committed).

        Args:
            snapshot: from :func:`malleo.plugin.agent.state.read_snapshot`.
            unit: override the planner's unit (the endpoint plans in nodes).
            partition: override the planner's partition (the asking job's).
            running: ``f(inputs) -> running columns`` to plan with instead of
                ``inputs.running`` (the endpoint marks the asking job malleable).

        Raises:
            ValueError: the snapshot cannot be converted (unknown partition, a value
                beyond malleo.limits), or ``plan`` refused its columns.
        """
        from malleo._core import plan

        t0 = time.monotonic()
        self.observe(snapshot)
        with self._lock:
            memory = self.memory
            policy = self.policy
            state = memory.plan_state.copy()
            reservation = dict(memory.reservation)
            priority = dict(memory.priority)
        inputs = plan_inputs(snapshot, unit=unit or self.unit,
                             partition=partition or self.partition,
                             estimate=policy.estimate, history=state.history,
                             predict_runs=policy.predict_runs,
                             predict_cold=policy.predict_cold, recent=state.recent,
                             predict_at=policy.predict_at, plan_state=state,
                             previous_reservation=reservation, previous_priority=priority)
        if (unit or self.unit) == "nodes" and policy.malleability.moldable_start:
            inputs = _moldable(inputs, snapshot)
        t1 = time.monotonic()
        if inputs.total < 1:
            return LivePlan(snapshot, inputs, None, [], [], policy, state,
                            {"convert": t1 - t0, "plan": 0.0})
        columns = inputs.running if running is None else running(inputs)
        decisions = plan(inputs.now, inputs.total, columns, inputs.pending, policy, state)
        order = wanted_order(decisions, inputs.pending_ids)
        started = [int(inputs.pending_ids[i]) for i in decisions.start]
        return LivePlan(snapshot, inputs, decisions, order, started, policy, state,
                        {"convert": t1 - t0, "plan": time.monotonic() - t1})

    def commit(self, live: LivePlan) -> None:
        """Make ``live``'s pass the memory of the next one (the agent, after applying it)."""
        d = live.decisions
        if d is None:
            return
        ids = np.asarray(live.inputs.pending_ids, dtype=np.int64)
        resv = np.asarray(d.reservation)
        prio = np.asarray(d.priority, dtype=np.float64)
        planned, scored = resv >= 0, ~np.isnan(prio)
        reservation = dict(zip(ids[planned].tolist(), resv[planned].astype(np.int64).tolist()))
        priority = dict(zip(ids[scored].tolist(), prio[scored].tolist()))
        with self._lock:
            self.memory.plan_state = d.state
            self.memory.reservation = reservation
            self.memory.priority = priority


def _moldable(inputs: PlanInputs, snapshot: Snapshot) -> PlanInputs:
    """Under ``moldable_start``, pending jobs asking a node range (``-N a-b``) become
    moldable rows: ``kind`` 1, preferred size ``procs`` b (capped at the partition, what
    Slurm gives such a job when the nodes are free), ``min_procs`` a, ``max_procs`` b; the
    core's moldable start then picks the size of a blocked head (docs/malleability.md).
    Without it (the default) they are planned at their minimum a, as rigid jobs."""
    if not len(inputs.pending_ids):
        return inputs
    if isinstance(snapshot.jobs, JobTable):         # the compact read: its column
        table = snapshot.jobs
        pending = table.state == b"PENDING"
        tops = dict(zip(table.job_id[pending].tolist(),
                        np.where(table.max_nodes[pending] > table.num_nodes[pending],
                                 table.max_nodes[pending], 0).tolist()))
    else:
        tops = {j.job_id: j.max_nodes for j in snapshot.jobs}
    hi = []
    for job_id, lo in zip(inputs.pending_ids.tolist(), inputs.pending["procs"].tolist()):
        top = tops[job_id]
        hi.append(max(min(int(top), inputs.total), lo) if top else lo)
    hi = np.array(hi, dtype=np.int64)
    if (hi == inputs.pending["procs"]).all():
        return inputs
    pending = dict(inputs.pending)
    pending.update(kind=np.where(hi > pending["procs"], 1, 0).astype(np.int64),
                   min_procs=pending["procs"].astype(np.int64), max_procs=hi,
                   procs=hi.astype(np.int32))
    return replace(inputs, pending=pending)
