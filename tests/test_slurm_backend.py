"""The CLI/JSON backend against the real local Slurm (slurm-docker/local-slurm.sh, 16 nodes).

Every test submits its own sleep jobs (registered in ``slurm_jobs``, cancelled afterwards)
and polls with timeouts: Slurm starts jobs within about a second here, never instantly.
"""
import os
import socket
import time

import pytest

from malleo.plugin.backends import select_backend
from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.backends.errors import (
    InvalidJobId, InvalidRequest, JobStateError, SlurmUnavailable)

pytestmark = pytest.mark.slurm

POLL = 0.2


def wait_until(predicate, timeout: float, what: str):
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL)


def submit(backend, jobs, **kwargs):
    kwargs.setdefault("output", "/dev/null")
    kwargs.setdefault("workdir", "/tmp")
    kwargs.setdefault("wrap", "sleep 300")
    job_id = backend.submit(**kwargs)
    jobs.append(job_id)
    return job_id


def running(backend, job_id):
    job = backend.job(job_id)
    return job if job.state == "RUNNING" else None


def test_reads_nodes_and_partitions(slurm_cluster):
    backend = slurm_cluster.backend
    nodes = backend.nodes()
    (part,) = [p for p in backend.partitions() if p.is_default]
    assert sorted(n.name for n in nodes) == sorted(part.nodes)
    assert part.total_cpus == sum(n.cpus for n in nodes)
    assert all(n.is_available for n in nodes)
    assert backend.version()[0] >= 22


def test_select_backend_on_live_cluster(slurm_cluster):
    backend = select_backend(conf=slurm_cluster.conf)
    assert backend.name in ("cli", "libslurm", "pyslurm")
    backend.ping()


def test_submit_held_and_read_back(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    before = int(time.time())
    job_id = submit(backend, slurm_jobs, hold=True, nodes=2, time_limit=120, name="readback")
    listed = backend.jobs(job_ids=[job_id])
    assert [j.job_id for j in listed] == [job_id]
    for job in (listed[0], backend.job(job_id)):
        assert job.is_pending and job.is_held and job.priority == 0
        assert (job.name, job.num_nodes, job.time_limit) == ("readback", 2, 120)
        assert job.user_id == os.getuid()
        assert before - 2 <= job.submit_time <= int(time.time()) + 2
        assert job.node_list == () and job.start_time is None
    assert job_id in {j.job_id for j in backend.pending_jobs()}
    assert job_id not in {j.job_id for j in backend.running_jobs()}
    ranged = submit(backend, slurm_jobs, hold=True, nodes=(2, 4))
    for job in (backend.jobs(job_ids=[ranged])[0], backend.job(ranged)):
        assert (job.num_nodes, job.max_nodes) == (2, 4)


def test_hold_release_priority_and_start(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    job_id = submit(backend, slurm_jobs, hold=True, nodes=1, time_limit=120)
    with pytest.raises(JobStateError, match="held state"):
        backend.set_priority(job_id, 50)
    backend.release(job_id)
    job = wait_until(lambda: running(backend, job_id), 30, f"job {job_id} to start")
    assert len(job.node_list) == 1 and job.start_time >= job.submit_time
    assert job_id in {j.job_id for j in backend.running_jobs()}
    # A pending job can be held again and its priority set once released.
    other = submit(backend, slurm_jobs, nodes=len(slurm_cluster.node_names), time_limit=120)
    backend.hold(other)
    assert backend.job(other).is_held
    backend.release(other)
    backend.set_priority(other, 4242)
    assert backend.job(other).priority == 4242 and not backend.job(other).is_held


def test_higher_priority_starts_first(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    everything = len(slurm_cluster.node_names)
    blocker = submit(backend, slurm_jobs, nodes=everything, time_limit=120)
    wait_until(lambda: running(backend, blocker), 30, "the blocker to start")
    low = submit(backend, slurm_jobs, nodes=everything, time_limit=60, name="low")
    high = submit(backend, slurm_jobs, nodes=everything, time_limit=60, name="high")
    backend.set_priority(low, 10)
    backend.set_priority(high, 5000)
    assert (backend.job(low).priority, backend.job(high).priority) == (10, 5000)
    backend.cancel(blocker)
    first = wait_until(lambda: [j for j in backend.jobs(job_ids=[low, high]) if j.is_running],
                       30, "one of the two queued jobs to start")
    assert [j.job_id for j in first] == [high]
    assert backend.job(low).is_pending


def test_start_order_follows_priorities(slurm_cluster, slurm_jobs):
    """Queued whole-cluster jobs start one after another in decreasing priority order."""
    backend = slurm_cluster.backend
    everything = len(slurm_cluster.node_names)
    blocker = submit(backend, slurm_jobs, nodes=everything, time_limit=120)
    wait_until(lambda: running(backend, blocker), 30, "the blocker to start")
    priorities = [100, 400, 200, 300]
    queued = [submit(backend, slurm_jobs, nodes=everything, time_limit=60, wrap="sleep 1")
              for _ in priorities]
    for job_id, prio in zip(queued, priorities):
        backend.set_priority(job_id, prio)
    backend.cancel(blocker)
    done = wait_until(lambda: (lambda js: js if all(j.state == "COMPLETED" for j in js) else None)(
        [backend.job(j) for j in queued]), 60, "the four queued jobs to complete")
    by_start = [j.priority for j in sorted(done, key=lambda j: j.start_time)]
    assert by_start == sorted(priorities, reverse=True)


def test_update_pending_job_then_start_on_required_nodes(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    names = slurm_cluster.node_names
    wanted = [names[2], names[4]]
    job_id = submit(backend, slurm_jobs, hold=True, nodes=1, time_limit=60)
    backend.update_job(job_id, required_nodes=wanted, num_nodes=2, time_limit=300)
    job = backend.job(job_id)
    assert job.required_nodes == tuple(wanted) and job.num_nodes == 2 and job.time_limit == 300
    backend.update_job(job_id, time_limit=90)  # Slurm keeps whole minutes: 90 s -> 2 min
    assert backend.job(job_id).time_limit == 120
    backend.release(job_id)
    job = wait_until(lambda: running(backend, job_id), 30, f"job {job_id} to start")
    assert job.node_list == tuple(wanted)


def test_update_running_job(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    job_id = submit(backend, slurm_jobs, nodes=1, time_limit=120)
    wait_until(lambda: running(backend, job_id), 30, f"job {job_id} to start")
    backend.update_job(job_id, time_limit=600)
    assert backend.job(job_id).time_limit == 600
    with pytest.raises(JobStateError, match="no longer pending"):
        backend.update_job(job_id, num_nodes=3)  # a running job cannot grow this way


def test_shrink_running_two_node_job(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    job_id = submit(backend, slurm_jobs, nodes=2, time_limit=120)
    job = wait_until(lambda: running(backend, job_id), 30, f"job {job_id} to start")
    assert len(job.node_list) == 2
    backend.resize(job_id, 1)
    shrunk = wait_until(lambda: (lambda j: j if j.num_nodes == 1 else None)(backend.job(job_id)),
                        30, f"job {job_id} to shrink")
    assert shrunk.is_running and len(shrunk.node_list) == 1
    assert shrunk.node_list[0] in job.node_list
    (freed,) = set(job.node_list) - set(shrunk.node_list)
    wait_until(lambda: {n.name: n for n in backend.nodes()}[freed].is_idle, 30,
               f"node {freed} to be idle again")


def test_cancel_pending_and_running(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    pending = submit(backend, slurm_jobs, hold=True, nodes=1)
    started = submit(backend, slurm_jobs, nodes=1, time_limit=60)
    wait_until(lambda: running(backend, started), 30, f"job {started} to start")
    backend.cancel(pending)
    backend.cancel(started)
    for job_id in (pending, started):
        wait_until(lambda: backend.job(job_id).state == "CANCELLED", 30,
                   f"job {job_id} to be CANCELLED")


def test_script_submission_runs(slurm_cluster, slurm_jobs, tmp_path):
    backend = slurm_cluster.backend
    out = tmp_path / "out.txt"
    job_id = submit(backend, slurm_jobs, wrap=None, workdir=str(tmp_path), time_limit=60,
                    script=f"#!/bin/sh\necho \"$SLURM_JOB_ID on $SLURM_JOB_NUM_NODES\" > {out}\n")
    wait_until(lambda: backend.job(job_id).state == "COMPLETED", 30, f"job {job_id} to complete")
    assert out.read_text().strip() == f"{job_id} on 1"


def test_slurm_errors_are_typed(slurm_cluster, slurm_jobs):
    backend = slurm_cluster.backend
    missing = 99_999_999
    for act in (lambda: backend.job(missing), lambda: backend.set_priority(missing, 5),
                lambda: backend.hold(missing), lambda: backend.cancel(missing),
                lambda: backend.update_job(missing, time_limit=60)):
        with pytest.raises(InvalidJobId, match="Invalid job id specified") as info:
            act()
        assert info.value.command and info.value.message
    with pytest.raises(InvalidRequest, match="Invalid partition name"):
        backend.submit(wrap="true", partition="no-such-partition", output="/dev/null")
    held = submit(backend, slurm_jobs, hold=True, nodes=1)
    with pytest.raises(InvalidRequest, match="Invalid node name"):
        backend.update_job(held, required_nodes=["no-such-node"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_controller(slurm_cluster, tmp_path):
    """A slurm.conf whose controller port nobody listens on: every call is SlurmUnavailable."""
    lines = [ln for ln in open(slurm_cluster.conf).read().splitlines()
             if not ln.startswith(("SlurmctldPort=", "MessageTimeout="))]
    bogus = tmp_path / "slurm.conf"
    bogus.write_text("\n".join(lines + [f"SlurmctldPort={_closed_port()}", "MessageTimeout=2"]) + "\n")
    backend = CliBackend(conf=str(bogus))
    with pytest.raises(SlurmUnavailable):
        backend.ping()
    t0 = time.monotonic()
    with pytest.raises(SlurmUnavailable):       # the ping, awaited first, fails the read
        backend.cycle_read()
    assert time.monotonic() - t0 < 30
    with pytest.raises(SlurmUnavailable):
        backend.cycle_read(ping=False)
    with pytest.raises(SlurmUnavailable, match="Unspecified error|Unable to contact"):
        backend.all_jobs()
    with pytest.raises(SlurmUnavailable):
        backend.nodes()
    with pytest.raises(SlurmUnavailable):
        backend.set_priority(1, 5)
    with pytest.raises(SlurmUnavailable, match="Unable to contact slurm controller"):
        backend.submit(wrap="true", output="/dev/null")
