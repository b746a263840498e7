"""The two backends are interchangeable: on the same live queue the CLI/JSON backend and the
pyslurm backend read the same jobs, nodes and partitions, the agent (shadow mode: it plans
and applies nothing) decides the same order, starts, priority writes and reservations, and
``malleo slurm status --local --json`` prints the same document (less its ``now``).

Runs where pyslurm imports and was built for the running Slurm (``make test-slurm-25.11``,
which sets MALLEO_REQUIRE_PYSLURM=1 so that it cannot skip there); skips elsewhere.

The queue is frozen while it is read: two running jobs fill all 16 nodes for 10 minutes, so
none of the pending jobs can start, and one pending job is held (the plan skips it).
"""
import json
import time

import pytest
from cli_runner import MalleoRunner

from test_slurm_pyslurm import pyslurm_or_skip

from malleo.emulator.cli import cli
from malleo.plugin.agent.loop import Agent
from malleo.plugin.agent.state import read_snapshot
from malleo.plugin.backends.cli import CliBackend

pytestmark = pytest.mark.slurm


def _wait(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def _jobs(backend, ids):
    return {j.job_id: j for j in backend.all_jobs() if j.job_id in ids}


def _decisions(backend, policy_file):
    result = Agent(backend, policy_file, dry_run=True).cycle()
    return {"order": result.order, "started_now": result.started_now, "writes": result.writes,
            "pending_ids": result.inputs.pending_ids.tolist(),
            "reservation": result.decisions.reservation.tolist(),
            "skipped": result.inputs.skipped, "total": result.inputs.total,
            "busy": result.inputs.busy}


def _status(kind, conf):
    result = MalleoRunner().invoke(cli, ["slurm", "status", "--local", "--json"],
                                catch_exceptions=False,
                                env={"SLURM_CONF": conf, "MALLEO_SLURM_BACKEND": kind})
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    doc.pop("now")
    return doc


def test_agent_and_status_agree_under_both_backends(slurm_cluster, slurm_jobs, tmp_path):
    py = pyslurm_or_skip(slurm_cluster)
    cli_backend = CliBackend(conf=slurm_cluster.conf)
    nodes = len(slurm_cluster.node_names)
    assert nodes >= 8

    def submit(**kw):
        job_id = cli_backend.submit(wrap="sleep 600", output="/dev/null", workdir=str(tmp_path),
                                    **kw)
        slurm_jobs.append(job_id)
        return job_id

    first = submit(nodes=nodes - 6, time_limit=600, name="eq-run-a")
    second = submit(nodes=6, time_limit=1200, name="eq-run-b")
    _wait(lambda: cli_backend.job(first).is_running and cli_backend.job(second).is_running,
          "the two filling jobs to start")
    pending = [submit(nodes=nodes // 2, time_limit=300, name="eq-half"),
               submit(nodes=4, time_limit=3600, name="eq-long"),
               submit(nodes=nodes, time_limit=120, name="eq-whole"),
               submit(nodes=(2, 4), time_limit=60, name="eq-range")]
    held = submit(nodes=2, time_limit=60, name="eq-held", hold=True)
    ids = {first, second, held, *pending}
    policy = tmp_path / "easy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')

    # Slurm settles its own view (reasons, expected starts) within a few scheduling passes:
    # read until two CLI reads agree, then compare pyslurm's read taken between them.
    deadline = time.monotonic() + 30
    while True:
        before = _jobs(cli_backend, ids)
        by_pyslurm = _jobs(py, ids)
        after = _jobs(cli_backend, ids)
        if before == after or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert before == after, "the frozen queue kept changing for 30 s"
    assert sorted(after) == sorted(ids)
    assert by_pyslurm == after
    assert by_pyslurm[held].is_held and by_pyslurm[held].priority == 0

    snap_cli, snap_py = read_snapshot(cli_backend), read_snapshot(py)
    assert sorted(snap_py.nodes, key=lambda n: n.name) == sorted(snap_cli.nodes, key=lambda n: n.name)
    assert snap_py.partitions == snap_cli.partitions
    assert snap_py.default_partition == snap_cli.default_partition

    by_cli = _decisions(cli_backend, policy)
    assert sorted(by_cli["pending_ids"]) == sorted(pending)
    assert held in by_cli["skipped"]
    assert by_cli["started_now"] == [] and by_cli["busy"] == nodes
    assert _decisions(py, policy) == by_cli

    status_cli = _status("cli", slurm_cluster.conf)
    assert [r["job_id"] for r in status_cli["pending"]] == by_cli["order"]
    assert _status("pyslurm", slurm_cluster.conf) == status_cli
