"""One live path (issue 13 part 3): the agent's cycle, ``malleo slurm status`` and the
reconfiguration endpoint's decision plan through one service (plugin/agent/live_plan.py) and
agree with each other and with ``plan`` called directly on the same columns and memory.

The scripted live state below makes the memory matter: a heavy user's completed job is seen
in the first cycle and purged by Slurm (MinJobAge) before the second, so only a planner that
remembers its usage orders the light user's job first under multifactor; the old status and
endpoint, which planned from a fresh ``PlanState``, answered differently from the agent.
The same agreement is shown on the real local Slurm in tests/test_live_plan_slurm.py.
"""
import json

import msgspec
import numpy as np
import pytest
from cli_runner import MalleoRunner

from malleo._core import plan
from malleo.emulator.cli import cli
from malleo.plugin.agent.live_plan import DECISION_OWNERS, LivePlanner
from malleo.plugin.agent.loop import Agent
from malleo.plugin.agent.state import plan_inputs, read_snapshot
from malleo.plugin.backends.model import Job
from malleo.plugin.malleable.spec import DeclaredMalleability
from malleo.plugin.reconfig.decide import decide, malleable_columns
from scripted_slurm import ScriptedSlurm

NOW = 1_800_000_000
HEAVY, LIGHT, OTHER = 2000, 1000, 3000
POLICY = """order = "multifactor"
backfill = "conservative"
estimate = "predict"
[multifactor]
weight_age = 1000
weight_fairshare = 100000
[malleability]
estimate_scaling = "fixed"
"""
# (fixed: a shrunk job's expected end stays at its limit, so the shrinks below keep every
# conservative reservation and are taken; with "speedup" RESIZED's end would move past
# the reservation of the job left waiting, and the reservation rule refuses them.)


def job(job_id, uid, nodes, state, *, submit, start=None, end=None, limit=3600, first=1):
    running = state in ("RUNNING", "COMPLETED")
    return Job(job_id=job_id, name=f"j{job_id}", user=f"u{uid}", user_id=uid,
               partition="debug", state=state, reason="" if running else "Resources",
               submit_time=submit, start_time=start, expected_start=None, end_time=end,
               time_limit=limit, num_nodes=nodes, max_nodes=None, num_cpus=2 * nodes,
               priority=100 if state == "PENDING" else 0,
               node_list=tuple(f"n{i}" for i in range(first, first + nodes)) if running else ())


RESIZED, SMALL = 11, 12
X, Y, Z = 21, 22, 23


def first_state():
    return [
        # the heavy user's finished job: 16 nodes for an hour (purged before the 2nd cycle)
        job(1, HEAVY, 16, "COMPLETED", submit=NOW - 9000, start=NOW - 8000, end=NOW - 4400),
        job(RESIZED, OTHER, 8, "RUNNING", submit=NOW - 200, start=NOW - 100,
            end=NOW + 3500, limit=3600, first=1),
        job(SMALL, OTHER, 4, "RUNNING", submit=NOW - 200, start=NOW - 100,
            end=NOW + 7100, limit=7200, first=9),
        job(X, HEAVY, 5, "PENDING", submit=NOW - 60),      # older, but its user used a lot
        job(Y, LIGHT, 6, "PENDING", submit=NOW - 40),
    ]


@pytest.fixture
def agent_after_two_cycles(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    slurm = ScriptedSlurm(first_state(), NOW)
    agent = Agent(slurm, policy, state_dir=tmp_path / "state")
    import time as _time

    real = _time.time
    try:
        _time.time = lambda: NOW
        agent.cycle()
        # Slurm purges the completed job (MinJobAge) and a small job arrives.
        slurm.jobs = [j for j in slurm.jobs if j.job_id != 1] + [
            job(Z, LIGHT, 2, "PENDING", submit=NOW + 5, limit=600)]
        _time.time = lambda: NOW + 10
        memory = agent.planner.memory
        before = (memory.plan_state.copy(), dict(memory.reservation), dict(memory.priority))
        result = agent.cycle()
        agent.last_cycle = result
        agent.publish()
    finally:
        _time.time = real
    return agent, slurm, result, before, tmp_path / "state"


def direct_plan(slurm, agent, before, running=None):
    """``plan`` called here on the columns the agent builds, with the agent's memory."""
    state, reservation, priority = before
    inputs = plan_inputs(read_snapshot(slurm), unit="nodes", estimate="predict",
                         history=state.history, previous_reservation=reservation,
                         previous_priority=priority)
    columns = inputs.running if running is None else running(inputs)
    return inputs, plan(inputs.now, inputs.total, columns, inputs.pending, agent.policy, state)


def test_agent_status_endpoint_and_plan_agree(agent_after_two_cycles, monkeypatch):
    agent, slurm, result, before, state_dir = agent_after_two_cycles
    monkeypatch.setattr("time.time", lambda: NOW + 10)      # the second cycle's clock
    # 1. the agent against plan() called directly
    inputs, direct = direct_plan(slurm, agent, before)
    assert inputs.pending_ids.tolist() == result.inputs.pending_ids.tolist()
    for name in ("start", "order", "reservation", "est", "priority", "backfilled"):
        assert np.array_equal(getattr(direct, name), getattr(result.decisions, name),
                              equal_nan=True), name
    assert result.started_now == [Z]
    assert result.order == [Z, Y, X]            # the heavy user's job ranks last

    # 2. status asks the running agent (this process wrote the status file)
    out = MalleoRunner().invoke(cli, ["slurm", "status", "--json", "--state-dir", str(state_dir)],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["source"] == "agent" and doc["policy"] == "multifactor+conservative/predict"
    assert [r["job_id"] for r in doc["pending"]] == result.order
    ids = result.inputs.pending_ids.tolist()
    for row in doc["pending"]:
        k = ids.index(row["job_id"])
        resv = int(result.decisions.reservation[k])
        assert row["planned_start"] == (result.inputs.now if row["starts_now"] else
                                        (resv if resv >= 0 else None))
        assert row["wanted_priority"] == slurm.jobs[[j.job_id for j in slurm.jobs]
                                                    .index(row["job_id"])].priority
        # the sprio-like breakdown adds up to the core's priority
        f = row["factors"]
        assert sum(f["weighted"].values()) == pytest.approx(f["priority"], rel=1e-12)

    # 3. the endpoint's decision with the agent's planner against plan() with the same
    #    malleable columns and memory: RESIZED shrinks so the first waiting job (Y, 6 nodes,
    #    2 idle) starts: by 4 nodes.
    bounds = DeclaredMalleability(min_nodes=1, max_nodes=8, period=10)
    answer = decide(slurm, RESIZED, bounds, 8, agent.policy, planner=agent.planner)

    def marked(inp):
        row = inp.running_ids.tolist().index(RESIZED)
        return malleable_columns(inp.running, row, bounds, inp.total, agent.policy)

    inputs, direct = direct_plan(slurm, agent, agent_memory(agent), running=marked)
    row = inputs.running_ids.tolist().index(RESIZED)
    new = {int(r): int(s) for r, s in direct.resize}.get(row, 8)
    assert (answer.action, answer.nodes) == ("shrink", new) == ("shrink", 4)
    # ...and its pass orders the queue as the agent does
    assert direct.order.tolist() == result.decisions.order.tolist()

    # A planner without the agent's memory (the old status and endpoint) answers otherwise:
    # it never saw the heavy user's usage, so X (5 nodes) comes first.
    fresh = decide(slurm, RESIZED, bounds, 8, agent.policy)
    assert (fresh.action, fresh.nodes) == ("shrink", 5)
    assert LivePlanner(agent.policy).plan(read_snapshot(slurm)).order != result.order


def agent_memory(agent):
    memory = agent.planner.memory
    return memory.plan_state.copy(), dict(memory.reservation), dict(memory.priority)


def test_status_falls_back_to_a_local_plan_and_says_so(agent_after_two_cycles, tmp_path):
    agent, slurm, result, before, state_dir = agent_after_two_cycles
    doc = json.loads((state_dir / "agent.json").read_text())
    doc["agent"]["pid"] = 2 ** 22 + 12345          # no such process
    other = tmp_path / "other"
    other.mkdir(mode=0o755)
    (other / "agent.json").write_text(json.dumps(doc))
    out = MalleoRunner().invoke(cli, ["slurm", "status", "--state-dir", str(other),
                                   "--slurm-conf", str(tmp_path / "missing.conf")])
    # the agent is gone: a local plan is attempted, on a slurm.conf that does not exist
    assert out.exit_code == 2
    assert out.output == f"malleo: error: --slurm-conf/SLURM_CONF {tmp_path}/missing.conf: no such file\n"
    diag = MalleoRunner().invoke(cli, ["slurm", "diag", "--state-dir", str(other)],
                              catch_exceptions=False)
    assert diag.exit_code == 0 and "NOT running" in diag.output


def test_every_decision_field_has_an_owner():
    from malleo._core import Decisions

    fields = set(Decisions.__slots__) if hasattr(Decisions, "__slots__") else set()
    assert {"start", "order", "reservation", "priority", "state", "est", "backfilled",
            "start_procs", "resize", "expand"} <= set(DECISION_OWNERS)
    assert fields <= set(DECISION_OWNERS)


def test_agent_sets_the_node_count_of_a_range_job_it_starts(tmp_path, monkeypatch):
    """``Decisions.start_procs`` is the agent's: under moldable_start, a job asking ``-N 2-8``
    that is blocked at 8 and that the plan starts now at n < 8 nodes gets NumNodes=n-n
    before its priority is raised."""
    class Recording(ScriptedSlurm):
        def update_job(self, job_id, **kw):
            self.sized = getattr(self, "sized", []) + [(job_id, kw)]

    policy = tmp_path / "policy.toml"
    policy.write_text("[malleability]\nmoldable_start = true\n")
    ranged = msgspec.structs.replace(job(31, LIGHT, 2, "PENDING", submit=NOW - 5), max_nodes=8)
    slurm = Recording([job(30, OTHER, 10, "RUNNING", submit=NOW - 50, start=NOW - 40,
                           end=NOW + 3560), ranged], NOW)
    monkeypatch.setattr("time.time", lambda: NOW)
    agent = Agent(slurm, policy)
    result = agent.cycle()
    assert result.started_now == [31]
    size = int(result.decisions.start_procs[0])
    assert 2 <= size <= 6                           # 6 nodes are idle, 8 wanted
    assert slurm.sized == [(31, {"num_nodes": size})] and result.sized == {31: size}
    assert agent.metrics.get("malleo_agent_sizes_applied_total") == 1
    # without moldable_start a range job is planned as a rigid job at its minimum: no write
    policy.write_text("")
    assert agent.reload_policy()
    slurm.sized = []
    assert agent.cycle().sized == {} and slurm.sized == []
