"""The slurm-docker image's MPI stack, live: the example job (slurm-docker/examples/) on the local
Slurm, two nodes, srun --mpi=pmix, mpi4py over Debian's Open MPI.

Runs wherever mpi4py imports: inside slurm-docker/chroot.sh's Debian 13 root filesystem (the
image's packages, Slurm 24.11, Open MPI 5) it always does; on a host without mpi4py it skips.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]

EXAMPLES = Path(__file__).resolve().parent.parent / "slurm-docker" / "examples"


def test_example_mpi_job_runs_one_rank_per_node(slurm_cluster, slurm_jobs, tmp_path):
    pytest.importorskip("mpi4py", reason="mpi4py not installed (the slurm-docker image has it)")
    env = dict(os.environ, SLURM_CONF=slurm_cluster.conf, MPI_HELLO=str(EXAMPLES / "mpi_hello.py"),
               # Several virtual nodes share this host: TCP only (SLURM-NOTES), root allowed.
               # Open MPI 5 also needs the TCP transport kept on loopback, where every
               # virtual node is ("Unable to find reachable pairing ..." otherwise).
               OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo",
               OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(["sbatch", "--parsable", "--chdir", str(tmp_path),
                           str(EXAMPLES / "mpi-hello.sbatch")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    job_id = int(proc.stdout.strip().split(";")[0])
    slurm_jobs.append(job_id)
    backend = slurm_cluster.backend
    deadline = time.monotonic() + 180
    while not backend.job(job_id).is_finished:
        assert time.monotonic() < deadline, f"job {job_id} did not finish in 180 s"
        time.sleep(1)
    job = backend.job(job_id)
    out = (tmp_path / f"mpi-hello-{job_id}.out").read_text()
    assert job.state == "COMPLETED", out
    lines = sorted(line for line in out.splitlines() if line.startswith("rank "))
    assert [line.split(" on ")[0] for line in lines] == ["rank 0 of 2", "rank 1 of 2"], out
    assert len({line.split(" on ")[1] for line in lines}) == 2  # two different nodes
