"""The status document: one pass of the live planner as rows a person or a script reads.

:func:`plan_document` turns a :class:`~malleo.plugin.agent.live_plan.LivePlan` into the
document ``malleo slurm status --json`` prints (the agent writes the same document into
its status file after every cycle, :func:`agent_document`), so the status of a running
agent and a local plan have one shape:

- ``running``: the partition's running jobs, in job-id order;
- ``pending``: the planned pending jobs in the order malleo wants them (``rank`` 1 first);
- ``skipped``: the pending jobs left out of the plan, with ``why``.

Every row carries squeue's columns (``name``, ``user``, ``partition``, ``state``,
``reason``, ``time_limit`` in seconds or None for unlimited, ``nodes``, ``cpus``,
``node_list``) and malleo's (``size`` in plan units, ``priority`` Slurm's now,
``wanted_priority``, ``rank``, ``planned_start``, ``starts_now``, ``backfilled``,
``expected_end``, ``note``; ``factors`` under multifactor).  Times are epoch seconds (UTC).
"""
from __future__ import annotations

import os
import socket
import time

import numpy as np

from malleo.plugin.agent.apply import assign_priorities
from malleo.plugin.agent.live_plan import LivePlan
from malleo.plugin.agent.priority_factors import factors
from malleo.plugin.backends import hostlist
from malleo.plugin.backends.model import Job


def _base(job: Job) -> dict:
    return {"job_id": job.job_id, "name": job.name, "user": job.user,
            "partition": job.partition, "state": job.state, "reason": job.reason,
            "time_limit": job.time_limit, "nodes": job.num_nodes, "cpus": job.num_cpus,
            "node_list": hostlist.compress(job.node_list) if job.node_list else "",
            "submit_time": job.submit_time, "priority": job.priority}


def plan_document(live: LivePlan) -> dict:
    """The status document of one pass (module docstring)."""
    inputs, d, policy = live.inputs, live.decisions, live.policy
    jobs = {j.job_id: j for j in live.snapshot.jobs}
    running = []
    for k, job_id in enumerate(inputs.running_ids.tolist()):
        row = _base(jobs[job_id])
        start = int(inputs.running["start"][k])
        row.update(size=int(inputs.running["procs"][k]), start_time=start,
                   expected_end=start + int(inputs.running["est"][k]),
                   note="running")
        running.append(row)
    pending = []
    if d is not None and len(inputs.pending_ids):
        index = {int(j): k for k, j in enumerate(inputs.pending_ids.tolist())}
        current = dict(zip(inputs.pending_ids.tolist(), inputs.pending_priority.tolist()))
        writes = assign_priorities(live.order, current)
        starts = set(live.started_now)
        sizes = dict(zip((int(inputs.pending_ids[i]) for i in d.start.tolist()),
                         d.start_procs.tolist()))
        is_mf = policy.order == "multifactor"
        state = d.state
        for rank, job_id in enumerate(live.order, 1):
            k = index[job_id]
            row = _base(jobs[job_id])
            resv = int(d.reservation[k])
            now = job_id in starts
            planned = inputs.now if now else (resv if resv >= 0 else None)
            est = int(d.est[k])
            if now:
                note = "starts now" + (" (backfill)" if d.backfilled[k] else "")
            elif planned is not None:
                note = "reservation"
            else:
                note = f"queued: no reservation under {policy.backfill} backfill"
            row.update(size=int(sizes.get(job_id, inputs.pending["procs"][k])), rank=rank,
                       wanted_priority=int(writes.get(job_id, current[job_id])),
                       planned_start=planned, starts_now=now,
                       backfilled=bool(d.backfilled[k]), est=est,
                       expected_end=None if planned is None else planned + est, note=note)
            if is_mf and not np.isnan(d.priority[k]):
                # a job the previous pass prioritised keeps the priority of the last
                # calculation; a new one is computed at this pass (the core's rule)
                known = not np.isnan(inputs.pending["priority"][k])
                f = factors(policy.multifactor,
                            calc_time=int(state.calc_time) if known else inputs.now,
                            submit=int(inputs.pending["submit"][k]),
                            size=int(inputs.pending["procs"][k]), total=inputs.total,
                            fairshare=state.fairshare(int(inputs.pending["user"][k])))
                row["factors"] = {"age": f.age, "size": f.size, "fairshare": f.fairshare,
                                  "weighted": f.weighted, "calc_time": f.calc_time,
                                  "priority": float(d.priority[k])}
            pending.append(row)
    skipped = []
    for job_id, why in sorted(inputs.skipped.items()):
        row = _base(jobs[job_id])
        row.update(why=why, note=f"not planned: {why}", rank=None, planned_start=None)
        skipped.append(row)
    return {"now": inputs.now, "policy": policy.describe(), "order": policy.order,
            "backfill": policy.backfill, "partition": inputs.partition, "unit": inputs.unit,
            "total": inputs.total, "busy": inputs.busy, "running": running,
            "pending": pending, "skipped": skipped}


def diag_document(agent) -> dict:
    """The sdiag-like counters of a running agent since it started."""
    m = agent.metrics
    latency = m.latency()
    return {
        "started": agent.started_at,
        "cycles": int(m.get("malleo_agent_cycles_total")),
        "idle_cycles": int(m.get("malleo_agent_idle_cycles_total")),
        "cycle_errors": {kind: int(m.get("malleo_agent_cycle_errors_total", kind=kind))
                         for kind in ("slurm_unavailable", "slurm", "internal")},
        "cycle_seconds": {k: round(v, 6) for k, v in latency.items()},
        "last_success": m.get("malleo_agent_last_success_timestamp_seconds") or None,
        "decisions_applied": int(m.get("malleo_agent_decisions_applied_total")),
        "decisions_skipped": {r: int(m.get("malleo_agent_decisions_skipped_total", reason=r))
                              for r in ("vanished", "not_pending", "refused")},
        "sizes_applied": int(m.get("malleo_agent_sizes_applied_total")),
        "stale_plans": int(m.get("malleo_agent_stale_plans_total")),
        "policy_reloads": {r: int(m.get("malleo_agent_policy_reloads_total", result=r))
                           for r in ("ok", "rejected")},
    }


def effective_conf(conf) -> str:
    """The slurm.conf a command talks to: ``conf``, else $SLURM_CONF, else Slurm's default;
    resolved, so that status can tell whether the running agent manages its cluster."""
    return os.path.realpath(str(conf or os.environ.get("SLURM_CONF")
                                or "/etc/slurm/slurm.conf"))


def agent_document(agent, *, stopped: bool = False) -> dict:
    """What the agent writes into its status file: who it is, the policy in force, when it
    last cycled, its counters (``diag``) and the document of its last completed cycle
    (``plan``, None before the first)."""
    import malleo

    last = agent.last_cycle
    plan = plan_document(last.live) if last is not None and last.live is not None else None
    return {
        "agent": {"pid": os.getpid(), "host": socket.gethostname(), "version": malleo.__version__,
                  "policy": agent.policy.describe(), "config": agent.policy_path,
                  "mode": "shadow" if agent.dry_run else "priority", "period": agent.period,
                  "unit": agent.unit, "partition": agent.partition,
                  "slurm_conf": effective_conf(getattr(agent.backend, "conf", None)),
                  "backend": getattr(agent.backend, "name", "") or "?",
                  "written": time.time(), "stopped": bool(stopped),
                  "last_cycle_end": agent.metrics.get(
                      "malleo_agent_last_success_timestamp_seconds") or None},
        "diag": diag_document(agent),
        "plan": plan,
    }
