"""The pyslurm backend against the live cluster, where pyslurm imports and matches Slurm.

pyslurm 25.11 builds only against Slurm 25.11. ``make test-slurm-25.11`` builds both
(slurm-docker/build-slurm.sh, build-pyslurm.sh), runs the cluster on the 25.11 prefix and sets
``MALLEO_REQUIRE_PYSLURM=1``: there these tests must run, and a pyslurm that does not import or
was built for another Slurm fails them. Elsewhere (Debian's 22.05 and 24.11) they skip with
pyslurm_backend.SKIP_REASON.
"""
import os
import time

import pytest

from malleo.plugin.backends import pyslurm_backend

pytestmark = pytest.mark.slurm


def pyslurm_or_skip(slurm_cluster) -> "pyslurm_backend.PyslurmBackend":
    """A pyslurm backend on the session's cluster; skips (fails with MALLEO_REQUIRE_PYSLURM=1)
    where pyslurm does not import or was built for another Slurm than the cluster runs."""
    required = os.environ.get("MALLEO_REQUIRE_PYSLURM") == "1"
    reason = pyslurm_backend.unavailable_reason()
    if reason is None:
        from malleo.plugin.backends.cli import CliBackend

        cli_version = CliBackend(conf=slurm_cluster.conf).version()[:2]
        py = pyslurm_backend.PyslurmBackend(conf=slurm_cluster.conf)
        if py.version()[:2] == cli_version:
            return py
        reason = f"pyslurm built for Slurm {py.version()[:2]}, cluster runs {cli_version}"
    if required:
        pytest.fail(f"MALLEO_REQUIRE_PYSLURM=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def backend(slurm_cluster):
    return pyslurm_or_skip(slurm_cluster)


def test_pyslurm_reads_what_the_cli_reads(backend, slurm_cluster):
    from malleo.plugin.backends.cli import CliBackend

    cli = CliBackend(conf=slurm_cluster.conf)
    assert backend.version() == cli.version()
    assert {n.name: n for n in backend.nodes()} == {n.name: n for n in cli.nodes()}
    assert {p.name: p for p in backend.partitions()} == {p.name: p for p in cli.partitions()}


def test_pyslurm_acts(backend, slurm_cluster, slurm_jobs, tmp_path):
    from malleo.plugin.backends.cli import CliBackend

    cli = CliBackend(conf=slurm_cluster.conf)
    job_id = backend.submit(wrap="sleep 120", nodes=1, time_limit=120, hold=True,
                            output="/dev/null", workdir=str(tmp_path), name="malleo-pyslurm")
    slurm_jobs.append(job_id)
    held = backend.job(job_id)
    assert held.is_held and held.name == "malleo-pyslurm" and held.time_limit == 120
    assert cli.job(job_id).is_held
    backend.update_job(job_id, time_limit=300, num_nodes=2)
    assert cli.job(job_id).time_limit == 300
    assert cli.job(job_id).num_nodes == 2
    backend.release(job_id)
    assert not cli.job(job_id).is_held
    deadline = time.monotonic() + 30
    while not backend.job(job_id).is_running:
        assert time.monotonic() < deadline, "job did not start"
        time.sleep(0.2)
    running = backend.job(job_id)
    assert running.num_nodes == 2 and len(running.node_list) == 2
    assert running == cli.job(job_id)
    backend.resize(job_id, 1)
    assert len(cli.job(job_id).node_list) == 1
    backend.cancel(job_id)
    deadline = time.monotonic() + 30
    while not cli.job(job_id).is_finished:
        assert time.monotonic() < deadline, "cancelled job did not finish"
        time.sleep(0.2)
    assert backend.job(job_id).state == "CANCELLED"


def test_pyslurm_errors_are_typed(backend, tmp_path):
    from malleo.plugin.backends.errors import InvalidJobId

    with pytest.raises(InvalidJobId):
        backend.job(999_999_999)
    with pytest.raises(InvalidJobId):
        backend.update_job(999_999_999, time_limit=60)
    with pytest.raises(ValueError, match="extra_args"):
        backend.submit(wrap="true", extra_args=["--exclusive"])


def test_pyslurm_step_read_race_is_read_again(backend, slurm_cluster, slurm_jobs, tmp_path,
                                              monkeypatch):
    """pyslurm 25.11.2's ``Job.load`` also reads the job's steps and raises KeyError when
    that answer lacks the job (a job ending between its two RPCs: CI saw ``KeyError: 139``
    in a fixture's teardown).  The backend reads again, and after repeated failures asks
    scontrol; ``job`` and ``cancel`` never pass the KeyError on."""
    import pyslurm

    from malleo.plugin.backends.cli import CliBackend

    cli = CliBackend(conf=slurm_cluster.conf)
    job_id = backend.submit(wrap="sleep 120", nodes=1, time_limit=120, hold=True,
                            output="/dev/null", workdir=str(tmp_path), name="malleo-race")
    slurm_jobs.append(job_id)
    failures = {"left": 2, "calls": 0}
    real_job = pyslurm.Job

    class RacingJob(real_job):
        """pyslurm's Job whose ``load`` first fails as pyslurm's step read does."""

        @staticmethod
        def load(jid):
            failures["calls"] += 1
            if failures["left"] > 0:
                failures["left"] -= 1
                raise KeyError(jid)
            return real_job.load(jid)

    monkeypatch.setattr(pyslurm, "Job", RacingJob)
    assert backend.job(job_id) == cli.job(job_id)
    assert failures["calls"] == 3
    failures["left"] = 10**6
    assert backend.job(job_id) == cli.job(job_id)          # through scontrol
    backend.cancel(job_id)
    monkeypatch.undo()
    deadline = time.monotonic() + 30
    while not cli.job(job_id).is_finished:
        assert time.monotonic() < deadline, "cancelled job did not finish"
        time.sleep(0.2)
