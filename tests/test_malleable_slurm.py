"""Malleable MPI jobs on the real local Slurm with the agent's endpoint (marked slurm and mpi).

The job (examples/heat.py under the malleo launcher) starts on 2 of 16 idle nodes; the endpoint
expands it; a rigid 14-node job arrives and the endpoint shrinks the malleable job so it can
start; the solver ends with the same SHA-256 as a fixed-size run. A second test makes the
expander fail (every other node busy) and checks the job stays on its nodes with its data.

These tests start their own 16-node cluster.  On Slurm 22.05 it has accounting (local-slurm.sh
up --accounting): there, without slurmdbd, a job that has been expanded can no longer be updated
("the DB index is being set"), so the shrink after an expand needs slurmdbd.  Slurm 24.11
updates an expanded job without slurmdbd (measured in the Debian 13 chroot), so there the
cluster has no accounting, which also proves that sites on 24.11 need none for malleable jobs.
Every MPI step runs under the launcher's --step-timeout, every wait here under a deadline.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from slurm_fixture import SCRIPT, _why_not_startable, wait_released
from test_malleable_mpi import heat_result

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]

REPO = Path(__file__).resolve().parent.parent
HEAT = REPO / "examples" / "heat.py"
N, ITERS = 32, 800


def _slurm_major() -> int:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "slurm-client"],
                         capture_output=True, text=True).stdout
    return int(out.split(".")[0]) if out[:2].isdigit() else 0


@pytest.fixture(scope="module")
def dbd_conf():
    """slurm.conf of a private 16-node cluster, with slurmdbd accounting before Slurm 24."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py)")
    accounting = _slurm_major() < 24
    reason = _why_not_startable()
    needed = ("slurmdbd", "mariadbd", "mariadb-install-db") if accounting else ()
    missing = [b for b in (*needed, "srun", "salloc")
               if shutil.which(b) is None and not os.path.exists(f"/usr/sbin/{b}")]
    if reason or missing:
        why = reason or ("packages missing (" + ", ".join(missing)
                         + "): sudo bash slurm-docker/install-deps.sh --accounting")
        if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but {why}", pytrace=False)
        pytest.skip(why)
    directory = tempfile.mkdtemp(prefix="malleo-malleable-")
    try:
        proc = _up(directory, accounting=accounting)
        exports = [ln for ln in proc.stdout.splitlines() if ln.startswith("export SLURM_CONF=")]
        if proc.returncode != 0 or not exports:
            pytest.fail(f"local-slurm.sh up failed:\n{proc.stderr}", pytrace=False)
        yield exports[-1].split("=", 1)[1]
    finally:
        _down(directory)


def _up(directory: str, *, accounting: bool) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), "up", "--nodes", "16", "--dir", directory]
                          + (["--accounting"] if accounting else []),
                          capture_output=True, text=True, timeout=240)


def _down(directory: str) -> None:
    subprocess.run(["bash", str(SCRIPT), "down", "--dir", directory],
                   capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The solver's result at a fixed size (3 ranks, plain mpirun)."""
    return heat_result(tmp_path_factory.mktemp("fixed"), 3, N, ITERS)


@pytest.fixture
def backend(dbd_conf):
    from malleo.plugin.backends.cli import CliBackend
    return CliBackend(conf=dbd_conf)


@pytest.fixture
def jobs(backend):
    """The test's job ids, cancelled after it; the next test starts on an idle cluster.

    scancel returns before Slurm has released the nodes: without the wait, a test that
    follows the 14-node filler of test_failed_expand_keeps_the_job_on_its_nodes found its
    nodes still COMPLETING under load, and its expand, bounded by --expand-timeout, failed."""
    ids = []
    yield ids
    for job_id in ids:
        subprocess.run(["scancel", str(job_id)], env=backend._env, capture_output=True)
    assert wait_released(backend, ids, timeout=120), "the cancelled jobs' nodes stayed busy"


def socket_dir():
    directory = tempfile.mkdtemp(prefix="malleo-rc-")
    os.chmod(directory, 0o755)
    return directory


CRASH_ONCE = """
import os, runpy, sys
from mpi4py import MPI
from malleo.plugin.malleable import wait_for_ranks
comm, marker = MPI.COMM_WORLD, sys.argv.pop(1)
wait_for_ranks(comm)                      # before its first message (client.wait_for_ranks)
first = comm.bcast(comm.size == 4 and not os.path.exists(marker))  # first step on 4 nodes
if first:                                                         # ... where a rank dies
    if comm.rank == 0:
        open(marker, "w").close()
    comm.Barrier()
    if comm.rank == 3:
        os._exit(3)
sys.argv[0] = sys.argv[1]
del sys.argv[1]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def submit_malleable(backend, workdir: Path, sock: str, expand_timeout: int,
                     wrapper: str = "") -> int:
    script = f"""#!/bin/bash
#SBATCH --comment=malleo:min=1,max=4,period=2
export OMPI_MCA_btl=self,tcp MALLEO_RECONFIG_SOCKET={sock}
exec {sys.executable} -m malleo.plugin.malleable.launch --step-timeout 90 \\
    --expand-timeout {expand_timeout} -- {sys.executable} {wrapper} {HEAT} --n {N} \\
    --iters {ITERS} --every 10 --delay 0.02 --out result.json
"""
    return backend.submit(script=script, nodes=2, time_limit=300, workdir=str(workdir),
                          output=str(workdir / "job.out"))


def wait(predicate, timeout: float, what: str, poll: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}", pytrace=False)


def step_sizes(log: str) -> list[int]:
    """Node counts of the launcher's steps, in order ("malleo: step K: N node(s) LIST")."""
    return [int(m.group(1)) for m in re.finditer(r"^malleo: step \d+: (\d+) nodes? ", log, re.M)]


def assert_submission_dir_clean(workdir: Path) -> None:
    """Nothing of the launcher's or Slurm's resize machinery is left after the job (issue 17):
    only the job's own files (its log, its result, the wrapper the test wrote)."""
    left = sorted(p.name for p in workdir.iterdir()
                  if p.name.startswith(("slurm_job_", "malleo-")) or p.is_dir())
    assert left == [], left


def test_expand_then_shrink_for_a_waiting_job(backend, jobs, tmp_path, reference):
    from malleo.plugin.reconfig import Endpoint

    directory = socket_dir()
    seen: list[int] = []                         # NumNodes as scontrol shows it over time
    with Endpoint(os.path.join(directory, "r.sock"), backend) as ep:
        job_id = submit_malleable(backend, tmp_path, str(ep.path), expand_timeout=20)
        jobs.append(job_id)

        def size_is(n):
            job = backend.job(job_id)
            if not seen or seen[-1] != job.num_nodes:
                seen.append(job.num_nodes)
            assert not job.is_finished, (tmp_path / "job.out").read_text()
            return job.is_running and job.num_nodes == n

        wait(lambda: size_is(2), 60, "the malleable job to run on 2 nodes")
        wait(lambda: size_is(4), 60, "the endpoint to expand the job to 4 nodes")
        rigid = backend.submit(wrap="sleep 5", nodes=14, time_limit=60, output="/dev/null")
        jobs.append(rigid)
        wait(lambda: size_is(2) and backend.job(rigid).is_running, 60,
             "the job to shrink to 2 nodes and the rigid job to start")
        wait(lambda: backend.job(job_id).is_finished, 120, "the malleable job to end")
    os.rmdir(directory)

    job, rigid_job = backend.job(job_id), backend.job(rigid)
    log = (tmp_path / "job.out").read_text()
    assert job.state == "COMPLETED", log
    assert seen[:3] == [2, 4, 2], seen
    sizes = step_sizes(log)
    assert sizes[:3] == [2, 4, 2], log
    assert "shrink to 2 nodes: now 2 nodes" in log and "expand to 4 nodes: now 4 nodes" in log
    assert_submission_dir_clean(tmp_path)
    assert rigid_job.start_time <= job.end_time
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["sha256"] == reference["sha256"] and result["iterations"] == ITERS


def test_failed_expand_keeps_the_job_on_its_nodes(backend, jobs, tmp_path, reference):
    """Every other node is busy: the expander never starts, is withdrawn after 4 s, and the
    job goes on with 2 nodes, its grid intact; Slurm and the endpoint agree on 2 nodes."""
    from malleo.plugin.reconfig import Decision, Endpoint

    filler = backend.submit(wrap="sleep 300", nodes=14, time_limit=10, output="/dev/null")
    jobs.append(filler)
    wait(lambda: backend.job(filler).is_running, 60, "the 14-node filler job to start")
    answers = []

    def expand_once(backend_, job_id, bounds, nodes, policy):
        answers.append(nodes)
        if len(answers) == 1:
            return Decision("expand", 4, "test: expand although no node is free")
        return Decision("none", nodes, "test")

    directory = socket_dir()
    seen = set()
    with Endpoint(os.path.join(directory, "r.sock"), backend, decide=expand_once) as ep:
        job_id = submit_malleable(backend, tmp_path, str(ep.path), expand_timeout=4)
        jobs.append(job_id)

        def finished():
            job = backend.job(job_id)
            if job.is_running:
                seen.add(job.num_nodes)
            return job.is_finished

        wait(finished, 150, "the malleable job to end")
        view = ep.view.get(job_id)
    os.rmdir(directory)

    log = (tmp_path / "job.out").read_text()
    assert backend.job(job_id).state == "COMPLETED", log
    assert "expand to 4 nodes failed, staying on 2" in log
    assert set(step_sizes(log)) == {2} and len(step_sizes(log)) >= 2
    assert seen == {2}
    assert len(answers) >= 2 and set(answers) == {2}       # later check-ins report 2 nodes
    assert view is not None and view.nodes == 2 and view.action == "none"
    squeue = subprocess.run(["squeue", "--noheader", "--format=%j"], env=backend._env,
                            capture_output=True, text=True, timeout=30).stdout
    assert f"malleo-expand-{job_id}" not in squeue
    assert_submission_dir_clean(tmp_path)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["sha256"] == reference["sha256"]


def test_rank_dying_after_an_expand_rolls_back(backend, jobs, tmp_path, reference):
    """A rank dies in the first step on 4 nodes: the launcher shrinks the job back to its 2
    nodes and restarts from the expand's checkpoint; the result is still exact."""
    from malleo.plugin.reconfig import Decision, Endpoint

    wrapper = tmp_path / "crash_once.py"
    wrapper.write_text(CRASH_ONCE)
    answers = []

    def expand_once(backend_, job_id, bounds, nodes, policy):
        answers.append(nodes)
        if len(answers) == 1:
            return Decision("expand", 4, "test")
        return Decision("none", nodes, "test")

    directory = socket_dir()
    seen: list[int] = []
    with Endpoint(os.path.join(directory, "r.sock"), backend, decide=expand_once) as ep:
        job_id = submit_malleable(backend, tmp_path, str(ep.path), expand_timeout=20,
                                  wrapper=f"{wrapper} {tmp_path / 'crashed'}")
        jobs.append(job_id)

        def finished():
            job = backend.job(job_id)
            if job.is_running and (not seen or seen[-1] != job.num_nodes):
                seen.append(job.num_nodes)
            return job.is_finished

        wait(finished, 150, "the malleable job to end", poll=0.2)
        view = ep.view.get(job_id)
    os.rmdir(directory)

    log = (tmp_path / "job.out").read_text()
    assert backend.job(job_id).state == "COMPLETED", log
    assert (tmp_path / "crashed").exists(), log
    assert step_sizes(log) == [2, 4, 2], log
    assert "back to 2 nodes, restarting from the checkpoint" in log
    assert seen[0] == 2 and seen[-1] == 2
    assert view is not None and view.nodes == 2 and answers[-1] == 2
    assert_submission_dir_clean(tmp_path)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["sha256"] == reference["sha256"]
