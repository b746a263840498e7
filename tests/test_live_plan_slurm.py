"""The one live path on the real local Slurm: the agent's cycle, ``malleo slurm status``
(asking the agent, and planning locally) and the reconfiguration endpoint's decision agree
with each other and with ``plan``; status fails fast on a stale SLURM_CONF."""
import json
import time
from pathlib import Path

import pytest
from cli_runner import MalleoRunner

from malleo._core import plan
from malleo.emulator.cli import cli
from malleo.plugin.agent.loop import Agent
from malleo.plugin.agent.state import plan_inputs, read_snapshot
from malleo.plugin.malleable.spec import DeclaredMalleability
from malleo.plugin.reconfig.decide import decide, malleable_columns

pytestmark = pytest.mark.slurm


def run(*args, env):
    result = MalleoRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_agent_status_and_endpoint_agree_on_the_live_queue(slurm_cluster, slurm_jobs,
                                                           tmp_path):
    backend = slurm_cluster.backend
    nodes = len(slurm_cluster.node_names)
    env = {"SLURM_CONF": slurm_cluster.conf, "MALLEO_STATE_DIR": str(tmp_path / "state")}

    def submit(**kw):
        job_id = backend.submit(wrap="sleep 120", output="/dev/null", workdir=str(tmp_path), **kw)
        slurm_jobs.append(job_id)
        return job_id

    blocker = submit(nodes=nodes - 4, time_limit=600)
    deadline = time.monotonic() + 30
    while not backend.job(blocker).is_running:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    head = submit(nodes=nodes - 2, time_limit=60)
    whole = submit(nodes=nodes, time_limit=60)
    small = submit(nodes=2, time_limit=3600)
    policy = tmp_path / "policy.toml"
    policy.write_text('order = "sjf"\nbackfill = "conservative"\n')
    # shadow mode: the agent plans and publishes, writes nothing, so the queue stays put
    agent = Agent(backend, policy, dry_run=True, state_dir=tmp_path / "state")
    result = agent.cycle()
    agent.last_cycle = result
    agent.publish()
    # conservative: small (1 h on 2 of the 4 idle nodes) would delay `whole`: it waits
    assert set(result.order) == {head, whole, small} and result.started_now == []

    asked = json.loads(run("slurm", "status", "--json", env=env))
    local = json.loads(run("slurm", "status", "--json", "--local", "--config", str(policy),
                           env=env))
    assert asked["source"] == "agent" and local["source"] == "local"
    for doc in (asked, local):
        assert [r["job_id"] for r in doc["pending"]] == result.order
        assert [r["job_id"] for r in doc["running"]] == [blocker]
        rows = {r["job_id"]: r for r in doc["pending"]}
        assert not rows[small]["starts_now"]
        assert rows[head]["planned_start"] == doc["running"][0]["expected_end"]
        assert rows[whole]["planned_start"] is not None          # conservative: reserved
    text = run("slurm", "status", env=env)
    assert text.startswith("agent pid ") and "policy sjf+conservative" in text

    # the endpoint's decision for the blocker as a malleable job, with the agent's planner,
    # equals plan() on the same columns and memory
    bounds = DeclaredMalleability(min_nodes=1, max_nodes=nodes, period=10)
    size = nodes - 4
    answer = decide(backend, blocker, bounds, size, agent.policy, planner=agent.planner)
    memory = agent.planner.memory
    inputs = plan_inputs(read_snapshot(backend), history=memory.plan_state.history,
                         previous_reservation=memory.reservation,
                         previous_priority=memory.priority)
    row = inputs.running_ids.tolist().index(blocker)
    running = malleable_columns(inputs.running, row, bounds, inputs.total, agent.policy)
    direct = plan(inputs.now, inputs.total, running, inputs.pending, agent.policy,
                  memory.plan_state)
    new = {int(r): int(s) for r, s in direct.resize}.get(row, size)
    assert answer.nodes == new and answer.action == (
        "expand" if new > size else "shrink" if new < size else "none")


def test_status_with_a_stale_slurm_conf_fails_with_one_line(slurm_cluster, tmp_path):
    conf = tmp_path / "slurm.conf"
    lines = Path(slurm_cluster.conf).read_text().splitlines()
    conf.write_text("\n".join("SlurmctldPort=1" if line.startswith("SlurmctldPort=") else line
                              for line in lines) + "\n")
    result = MalleoRunner().invoke(cli, ["slurm", "status", "--slurm-conf", str(conf),
                                      "--state-dir", str(tmp_path / "none")],
                                catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith("malleo: error: the Slurm controller ")
    assert ":1 (from " in result.output and "is SLURM_CONF stale?" in result.output
