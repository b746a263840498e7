"""The pyslurm backend against the live cluster, where pyslurm imports and matches Slurm.

pyslurm 25.11 builds only against Slurm 25.11; Debian ships 22.05 (12) and 24.11 (13), so on
malleo's own machines these tests skip with pyslurm_backend.SKIP_REASON.
"""
import time

import pytest

from malleo.plugin.backends import pyslurm_backend

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(pyslurm_backend.pyslurm is None, reason=pyslurm_backend.SKIP_REASON),
]


@pytest.fixture
def backend(slurm_cluster):
    cli_version = slurm_cluster.backend.version()[:2]
    py = pyslurm_backend.PyslurmBackend(conf=slurm_cluster.conf)
    if py.version()[:2] != cli_version:
        pytest.skip(f"pyslurm built for Slurm {py.version()[:2]}, cluster runs {cli_version}")
    return py


def test_pyslurm_reads_what_the_cli_reads(backend, slurm_cluster):
    assert sorted(n.name for n in backend.nodes()) == sorted(slurm_cluster.node_names)
    assert [p.name for p in backend.partitions()] == [p.name for p in slurm_cluster.backend.partitions()]


def test_pyslurm_acts(backend, slurm_cluster, slurm_jobs):
    job_id = backend.submit(wrap="sleep 120", nodes=1, time_limit=120, hold=True,
                            output="/dev/null", workdir="/tmp")
    slurm_jobs.append(job_id)
    assert backend.job(job_id).is_held
    backend.release(job_id)
    backend.update_job(job_id, time_limit=300)
    assert slurm_cluster.backend.job(job_id).time_limit == 300
    deadline = time.monotonic() + 30
    while not backend.job(job_id).is_running:
        assert time.monotonic() < deadline, "job did not start"
        time.sleep(0.2)
    backend.cancel(job_id)
