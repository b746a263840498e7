"""The libslurm backend on a live Slurm (plugin/backends/libslurm_backend.py): malleo loads the
site's libslurm itself (no pyslurm), and its cycle read gives the tables the CLI backend's
compact squeue/sinfo read gives on the same queue; a cycle through it plans what the CLI one
plans and applies it.

Runs in every live part of ``make test`` (22.05 on the host, 24.11 and 26.05 in the chroots,
25.11 from source), where libslurm-dev (or the source build's prefix) is installed: with
MALLEO_REQUIRE_SLURM=1 (root runs) a libslurm backend that cannot run fails the test
instead of skipping it.

The queue is frozen while it is read: one running job fills every node for 10 minutes, so
none of the pending jobs can start.
"""
import os
import time

import pytest

from test_slurm_backends_equal import _decisions, _table_rows, _wait, read_until_unchanged

from malleo.plugin.agent.loop import Agent
from malleo.plugin.backends import select_backend
from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.backends.columns import JobTable, NodeTable

pytestmark = pytest.mark.slurm


def libslurm_or_skip(conf):
    """The libslurm backend on ``conf``; skips where it cannot run (fails instead with
    MALLEO_REQUIRE_SLURM=1: libslurm-dev is part of what make test installs)."""
    from malleo.plugin.backends import libslurm_backend

    running = CliBackend(conf=conf).version()[:2]
    reason = libslurm_backend.unavailable_reason(conf, running)
    if reason is None:
        return select_backend(conf=conf, kind="libslurm")
    if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
        pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but the libslurm backend cannot run: {reason}",
                    pytrace=False)
    pytest.skip(reason)


def test_libslurm_read_equals_the_cli_compact_read_and_plans_alike(slurm_cluster, slurm_jobs,
                                                                   tmp_path):
    lib = libslurm_or_skip(slurm_cluster.conf)
    assert lib.name == "libslurm" and lib.reads_tables
    cli = CliBackend(conf=slurm_cluster.conf)
    nodes = len(slurm_cluster.node_names)

    def submit(**kw):
        job_id = cli.submit(wrap="sleep 600", output="/dev/null", workdir=str(tmp_path), **kw)
        slurm_jobs.append(job_id)
        return job_id

    run = submit(nodes=nodes, time_limit=600, name="lib-run")
    _wait(lambda: cli.job(run).is_running, "the filling job to start")
    pending = [submit(nodes=2, time_limit=60, name="lib-pend"),
               submit(nodes=(1, 3), name="lib-range"),                  # no time limit
               submit(nodes=nodes // 2, time_limit=300, name="lib-half")]
    held = submit(nodes=1, time_limit=5, name="lib-held", hold=True)

    # Slurm settles its own view (reasons, expected starts) within a few scheduling passes:
    # read until two CLI reads agree, then compare libslurm's read taken between them.
    deadline = time.monotonic() + 30
    while True:
        parts_c, nodes_c, jobs_c = cli.cycle_read()
        parts_l, nodes_l, jobs_l = lib.cycle_read()
        after = cli.cycle_read()[2]
        if _table_rows(jobs_c) == _table_rows(after) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert isinstance(jobs_l, JobTable) and isinstance(nodes_l, NodeTable)
    assert _table_rows(jobs_l) == _table_rows(jobs_c)
    assert jobs_l.fingerprint() == jobs_c.fingerprint() == lib.queue_fingerprint()
    assert parts_l == parts_c
    assert (sorted(zip(nodes_l.name.tolist(), nodes_l.partition.tolist(), nodes_l.state,
                       nodes_l.cpus.tolist(), nodes_l.is_available.tolist()))
            == sorted(zip(nodes_c.name.tolist(), nodes_c.partition.tolist(), nodes_c.state,
                          nodes_c.cpus.tolist(), nodes_c.is_available.tolist())))
    # Allocated CPUs per node as scontrol/sinfo --json give them (22.05 and 24.11 read them
    # through slurm_get_select_nodeinfo, 25.11 and 26.05 from node_info_t.alloc_cpus): every node is
    # busy with the filling job.
    by_json = {n.name: n.alloc_cpus for n in cli.nodes()}
    by_lib = dict(zip((n.decode() for n in nodes_l.name.tolist()), nodes_l.alloc_cpus.tolist()))
    assert by_lib == by_json and all(v > 0 for v in by_lib.values())
    assert {"ping", "partitions", "jobs_rpc", "read"} <= set(lib.last_read)

    # Nothing changed: Slurm says so and the tables are reused (its scheduler passes touch
    # the jobs' update time every second here, so read until an answer says so).
    read_until_unchanged(lib)

    # The same decisions in shadow mode, then an applying cycle through libslurm: its
    # priority writes are what Slurm then holds, and the CLI backend's cycle finds nothing
    # left to write.
    policy = tmp_path / "easy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    by_cli = _decisions(cli, policy)
    assert sorted(by_cli["pending_ids"]) == sorted(pending) and held in by_cli["skipped"]
    assert _decisions(lib, policy) == by_cli
    applied = Agent(lib, policy).cycle()
    assert applied.order == by_cli["order"] and applied.writes
    held_now = {j.job_id: j.priority for j in cli.all_jobs() if j.job_id in applied.writes}
    assert held_now == applied.writes
    again = Agent(cli, policy).cycle()
    assert again.order == applied.order and again.writes == {}

    late = submit(nodes=1, time_limit=5, name="lib-late", hold=True)
    _wait(lambda: late in lib.cycle_read()[2].job_id.tolist(), "the new job in the read")


def test_auto_picks_libslurm_where_it_can_run(slurm_cluster):
    """``select_backend("auto")`` without pyslurm: the libslurm backend, which reads the
    same slurm.conf this process's libslurm was initialised with."""
    libslurm_or_skip(slurm_cluster.conf)
    from malleo.plugin.backends import pyslurm_backend

    backend = select_backend(conf=slurm_cluster.conf, kind="auto")
    if pyslurm_backend.pyslurm is None:
        assert backend.name == "libslurm", getattr(backend, "libslurm_unavailable", None)
    else:                           # 25.11's pyslurm pass: pyslurm first
        assert backend.name == "pyslurm"
    backend.ping()
