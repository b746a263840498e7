"""The reconfiguration endpoint against the real local Slurm: the owner Slurm lists for a
job decides who may ask (jobs submitted as root and as nobody), forged ids and rigid jobs are
refused, and a real decision comes from the live queue."""
import os
import tempfile
import time

import pytest

from malleo.plugin.malleable.protocol import ACTIONS
from reconfig_clients import NOBODY, request, send_as, send_raw

pytestmark = pytest.mark.slurm

MALLEABLE = "--comment=malleo:min=1,max=2,period=5"


def running(backend, job_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = backend.job(job_id)
        if job.is_running:
            return job
        assert not job.is_finished, f"job {job_id} ended: {job.state} {job.reason}"
        time.sleep(0.3)
    pytest.fail(f"job {job_id} did not start within {timeout} s ({job.state}, {job.reason})",
                pytrace=False)


@pytest.fixture
def endpoint(slurm_cluster):
    from malleo.plugin.reconfig import Endpoint

    directory = tempfile.mkdtemp(prefix="malleo-reconfig-")
    os.chmod(directory, 0o755)
    with Endpoint(os.path.join(directory, "r.sock"), slurm_cluster.backend) as ep:
        yield ep
    os.rmdir(directory)


@pytest.mark.skipif(os.geteuid() != 0, reason="submitting as nobody and setuid need root")
def test_owner_check_uses_slurms_owner(slurm_cluster, slurm_jobs, endpoint):
    backend = slurm_cluster.backend
    # Raw sbatch options (--comment, --uid) need the CLI backend; the endpoint reads through
    # the session's backend (MALLEO_SLURM_BACKEND).
    from malleo.plugin.backends.cli import CliBackend

    sbatch = CliBackend(conf=slurm_cluster.conf)
    if slurm_cluster.directory:
        # slurmd runs nobody's batch script from its spool under the cluster's private
        # directory (mkdtemp: 0700); nobody must be able to traverse it.
        os.chmod(slurm_cluster.directory, 0o711)
    # The uid as a number: Slurm 25.11's and 26.05's sbatch refuse --uid=nobody ("Invalid --uid
    # specification"); every version takes the number.
    mine = sbatch.submit(wrap="sleep 120", nodes=1, time_limit=300, output="/dev/null",
                         workdir="/tmp", extra_args=[MALLEABLE, f"--uid={NOBODY}"])
    roots = sbatch.submit(wrap="sleep 120", nodes=1, time_limit=300, output="/dev/null",
                          extra_args=[MALLEABLE])
    rigid = backend.submit(wrap="sleep 120", nodes=1, time_limit=300, output="/dev/null")
    slurm_jobs += [mine, roots, rigid]
    assert running(backend, mine).user_id == NOBODY
    running(backend, roots), running(backend, rigid)

    ok = send_as(NOBODY, endpoint.path, request(mine, 1))
    assert ok["ok"] is True and ok["action"] in ACTIONS and 1 <= ok["nodes"] <= 2

    refused = send_as(NOBODY, endpoint.path, request(roots, 1))
    assert refused["ok"] is False and "only its owner or root" in refused["error"]
    assert roots not in endpoint.view

    as_root = send_raw(endpoint.path, request(mine, 1))        # root may ask about any job
    assert as_root["ok"] is True

    forged = send_raw(endpoint.path, request(max(mine, roots, rigid) + 100_000, 1))
    assert forged["ok"] is False and "no such job" in forged["error"]
    not_malleable = send_raw(endpoint.path, request(rigid, 1))
    assert not_malleable["ok"] is False and "not malleable" in not_malleable["error"]
    stale = send_raw(endpoint.path, request(roots, 2))
    assert stale["ok"] is False and "Slurm lists 1" in stale["error"]
    garbage = send_raw(endpoint.path, os.urandom(64).replace(b"\n", b"") + b"\n")
    assert garbage["ok"] is False and "malformed request" in garbage["error"]
    assert set(endpoint.view) == {mine}
    # Nothing was changed in Slurm by any of it.
    for job_id in (mine, roots, rigid):
        job = backend.job(job_id)
        assert job.is_running and job.num_nodes == 1


def test_agent_serves_the_endpoint_with_its_policy(slurm_cluster, slurm_jobs, tmp_path):
    """``malleo slurm agent --reconfig-socket``: the agent answers a malleable job, refuses
    garbage, and removes its socket when it stops on SIGTERM."""
    import signal
    import subprocess
    import sys

    policy = tmp_path / "easy.toml"
    policy.write_text('backfill = "easy"\n')
    sock = tmp_path / "run" / "r.sock"
    backend = slurm_cluster.backend
    from malleo.plugin.backends.cli import CliBackend

    # --comment (MALLEABLE) is a raw sbatch option: submitted through the CLI backend.
    job_id = CliBackend(conf=slurm_cluster.conf).submit(
        wrap="sleep 120", nodes=1, time_limit=300, output="/dev/null", extra_args=[MALLEABLE])
    slurm_jobs.append(job_id)
    running(backend, job_id)
    proc = subprocess.Popen([sys.executable, "-c", "from malleo.emulator.cli import main; main()",
                             "slurm", "agent", "--config", str(policy), "--dry-run",
                             "--reconfig-socket", str(sock), "--slurm-conf", slurm_cluster.conf],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent never opened its socket"
            time.sleep(0.1)
        answer = send_raw(sock, request(job_id, 1))
        assert answer["ok"] is True and answer["action"] in ACTIONS and 1 <= answer["nodes"] <= 2
        assert send_raw(sock, b"garbage\n")["ok"] is False
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not sock.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="setuid needs root")
def test_owner_comes_from_slurms_json_not_text_a_job_can_imitate(slurm_cluster, slurm_jobs,
                                                                  endpoint, tmp_path):
    """Root's malleable job whose output path ends in `` UserId=nobody(65534)``: in the text
    of ``scontrol show job -o`` StdOut comes after UserId, so a text parser takes nobody as the
    owner. The endpoint reads the owner from ``squeue --json``: nobody is refused."""
    from malleo.plugin.backends.cli import CliBackend

    backend = slurm_cluster.backend
    # Raw sbatch options (--comment) need the CLI backend; the endpoint reads through the
    # session's backend (MALLEO_SLURM_BACKEND).
    sbatch = CliBackend(conf=slurm_cluster.conf)
    job_id = sbatch.submit(wrap="sleep 120", nodes=1, time_limit=300,
                           output=str(tmp_path / "out UserId=nobody(65534)"),
                           extra_args=[MALLEABLE])
    slurm_jobs.append(job_id)
    running(backend, job_id)
    refused = send_as(NOBODY, endpoint.path, request(job_id, 1))
    assert refused["ok"] is False and f"uid {NOBODY} may not ask about a job of uid 0" \
        in refused["error"]
    assert send_raw(endpoint.path, request(job_id, 1))["ok"] is True


def test_job_json_gives_the_whole_comment_and_refuses_unknown_ids(slurm_cluster, slurm_jobs):
    from malleo.plugin.backends.errors import InvalidJobId

    from malleo.plugin.backends.cli import CliBackend

    backend = slurm_cluster.backend         # job_json through the session's backend
    comment = "malleo:min=1,max=2,period=5 UserId=nobody(65534) JobState=PENDING"
    job_id = CliBackend(conf=slurm_cluster.conf).submit(   # raw sbatch options: the CLI
        wrap="sleep 60", nodes=1, time_limit=300, output="/dev/null",
        extra_args=[f"--comment={comment}"])
    slurm_jobs.append(job_id)
    rec = backend.job_json(job_id)
    assert rec["job_id"] == job_id and rec["comment"] == comment
    assert rec["user_id"] == os.geteuid()
    with pytest.raises(InvalidJobId, match="not in Slurm's job list"):
        backend.job_json(job_id + 100_000)
