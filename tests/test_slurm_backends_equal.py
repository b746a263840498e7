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


def read_until_unchanged(backend, timeout=90.0):
    """Read ``backend``'s cycle twice in a row until Slurm has answered "no change" for both
    the jobs and the nodes, checking every time that such an answer reuses the table read
    before and that any other answer is a new table.

    The test clusters' scheduler passes (sched_interval=2, bf_interval=1) touch the jobs'
    update time, which Slurm keeps in whole seconds: two reads see "no change" only when they
    fall between two passes.  On a loaded 2-core CI machine that took longer than 50 tries
    once, so this waits by time, not by count."""
    seen = {"jobs": False, "nodes": False}
    deadline = time.monotonic() + timeout
    while not all(seen.values()):
        assert time.monotonic() < deadline, (
            f"no 'no change' answer within {timeout} s: {seen}")
        first = backend.cycle_read()
        again = backend.cycle_read()
        for what, k in (("jobs", 2), ("nodes", 1)):
            if backend._reader.last_rpc.get(f"{what}_unchanged"):
                assert again[k] is first[k]
                seen[what] = True
            else:
                assert again[k] is not first[k]


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

    # Slurm's scheduling passes may still rewrite pending reasons (Priority <-> Resources)
    # between two reads: compare pyslurm's status with two equal CLI ones around it.
    deadline = time.monotonic() + 30
    while True:
        status_cli = _status("cli", slurm_cluster.conf)
        status_py = _status("pyslurm", slurm_cluster.conf)
        status_after = _status("cli", slurm_cluster.conf)
        if status_cli == status_after or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status_cli == status_after, "slurm status kept changing for 30 s"
    assert [r["job_id"] for r in status_cli["pending"]] == by_cli["order"]
    assert status_py == status_cli


def _table_rows(table):
    """A JobTable's rows as comparable tuples, by job id (node lists as sets: squeue sorts
    them, libslurm gives them as slurmctld wrote them)."""
    from malleo.plugin.backends import hostlist

    fields = ("job_id", "user_id", "user", "partition", "state", "reason", "priority",
              "submit_time", "start_time", "end_time", "time_limit", "num_nodes", "max_nodes",
              "num_cpus", "is_held", "is_active")
    cols = [getattr(table, f).tolist() for f in fields]
    nodes = [frozenset(hostlist.expand(n.decode())) for n in table.node_list]
    return sorted(zip(*cols, nodes))


def test_pyslurm_column_read_equals_the_cli_compact_read(slurm_cluster, slurm_jobs, tmp_path):
    """The pyslurm backend's cycle read (libslurm's records into columns,
    plugin/backends/libslurm_rows.py) gives the tables the CLI backend's squeue/sinfo read
    gives, column for column; Slurm's "no change" answer reuses the table; a change is
    read; and the objects read (pyslurm's Job records) agrees."""
    py = pyslurm_or_skip(slurm_cluster)
    from malleo.plugin.backends.columns import JobTable, NodeTable
    from malleo.plugin.backends.pyslurm_backend import PyslurmBackend

    assert py.reads_tables, py.columns_unavailable
    cli_backend = CliBackend(conf=slurm_cluster.conf)
    nodes = len(slurm_cluster.node_names)

    def submit(**kw):
        job_id = cli_backend.submit(wrap="sleep 600", output="/dev/null",
                                    workdir=str(tmp_path), **kw)
        slurm_jobs.append(job_id)
        return job_id

    run = submit(nodes=nodes, time_limit=600, name="col-run")
    _wait(lambda: cli_backend.job(run).is_running, "the filling job to start")
    submit(nodes=2, time_limit=60, name="col-pend")
    submit(nodes=(1, 3), name="col-range")                  # no time limit
    submit(nodes=1, time_limit=5, name="col-held", hold=True)
    deadline = time.monotonic() + 30
    while True:
        parts_c, nodes_c, jobs_c = cli_backend.cycle_read()
        parts_p, nodes_p, jobs_p = py.cycle_read()
        after = cli_backend.cycle_read()[2]
        if _table_rows(jobs_c) == _table_rows(after) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert isinstance(jobs_p, JobTable) and isinstance(nodes_p, NodeTable)
    assert _table_rows(jobs_p) == _table_rows(jobs_c)
    assert jobs_p.fingerprint() == jobs_c.fingerprint() == py.queue_fingerprint()
    assert parts_p == parts_c
    assert (sorted(zip(nodes_p.name.tolist(), nodes_p.partition.tolist(), nodes_p.state,
                       nodes_p.cpus.tolist(), nodes_p.is_available.tolist()))
            == sorted(zip(nodes_c.name.tolist(), nodes_c.partition.tolist(), nodes_c.state,
                          nodes_c.cpus.tolist(), nodes_c.is_available.tolist())))
    assert {"jobs_rpc", "nodes_rpc", "ping", "partitions", "read"} <= set(py.last_read)

    # Nothing changed: Slurm says so and the tables are reused.  Its scheduler passes
    # (every second here) touch the jobs' update time, so read until an answer says so.
    read_until_unchanged(py)
    late = submit(nodes=1, time_limit=5, name="col-late", hold=True)
    _wait(lambda: late in py.cycle_read()[2].job_id.tolist(), "the new job in the read")

    objects = PyslurmBackend(conf=slurm_cluster.conf, read="objects")
    assert not objects.reads_tables
    # Slurm's backfill (every second here) may change a pending job's expected start between
    # two reads: compare a table and objects read with no change in between (the table the
    # same before and after the objects).
    deadline = time.monotonic() + 60
    while True:
        table = py.cycle_read()[2]
        by_objects = {j.job_id: j for j in objects.job_rows()}
        if list(py.cycle_read()[2]) == list(table):
            break
        assert time.monotonic() < deadline, "the queue kept changing for 60 s"
    for job in table:
        if job.job_id in slurm_jobs:
            want = by_objects[job.job_id]
            assert job == type(want)(**{**{f: getattr(want, f) for f in want.__struct_fields__},
                                        "name": "", "required_nodes": ()}), job
