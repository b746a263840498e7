"""slurm-docker/: the slurm.conf generator, and local-slurm.sh's own life cycle.

The generator and usage errors need nothing; the life-cycle tests start a second, 2-node
cluster in their own directory (root and Debian's Slurm, like the session fixture; the
accounting test also needs slurmdbd and MariaDB and skips without them, even in CI).
"""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from slurm_fixture import REPO, SCRIPT, _why_not_startable

GENERATOR = REPO / "slurm-docker" / "slurm-conf.sh"


def run(*argv, **kwargs):
    return subprocess.run(["bash", *map(str, argv)], capture_output=True, text=True, timeout=120,
                          **kwargs)


def conf_lines(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key, value)
    return out


def test_generator_local_layout(tmp_path):
    out = tmp_path / "slurm.conf"
    proc = run(GENERATOR, "--out", out, "--controller", "vm", "--controller-addr", "127.0.0.1",
               "--controller-port", "17100", "--state-dir", "/s", "--spool-dir", "/sp",
               "--log-dir", "/l", "--run-dir", "/r", "--tmp-dir", "/t", "--nodes", "n[1-4]",
               "--node-hostname", "vm", "--node-addr", "127.0.0.1", "--node-port", "17101-17104",
               "--munge-socket", "/m/sock")
    assert proc.returncode == 0, proc.stderr
    conf = conf_lines(out)
    assert conf["SlurmctldHost"] == "vm(127.0.0.1)" and conf["SlurmctldPort"] == "17100"
    assert conf["AuthInfo"] == "socket=/m/sock"
    assert conf["SlurmdSpoolDir"] == "/sp/%n" and conf["TmpFS"] == "/t/%n"
    assert "permit_job_expansion" in conf["SchedulerParameters"]
    assert conf["SchedulerType"] == "sched/backfill" and conf["PriorityType"] == "priority/basic"
    assert conf["SlurmdParameters"] == "config_overrides"
    assert conf["NodeName"].startswith("n[1-4] NodeHostname=vm NodeAddr=127.0.0.1 Port=[17101-17104]")
    assert "OverSubscribe=EXCLUSIVE" in conf["PartitionName"]
    assert "AccountingStorageType" not in conf


def test_generator_one_node_per_host(tmp_path):
    """The Docker layout: real host names, default ports, no private munge socket."""
    out = tmp_path / "slurm.conf"
    proc = run(GENERATOR, "--out", out, "--controller", "slurmctld", "--state-dir", "/var/spool/ctld",
               "--spool-dir", "/var/spool/slurmd", "--log-dir", "/var/log/slurm",
               "--run-dir", "/run/slurm", "--nodes", "c[1-3]", "--cpus", "4",
               "--accounting-host", "slurmdbd", "--accounting-port", "6819",
               "--accounting-munge-socket", "/run/munge/other.socket")
    assert proc.returncode == 0, proc.stderr
    conf = conf_lines(out)
    assert conf["SlurmctldHost"] == "slurmctld" and "AuthInfo" not in conf
    assert conf["NodeName"] == "c[1-3] CPUs=4 RealMemory=1000 State=UNKNOWN"
    assert conf["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert conf["AccountingStorageHost"] == "slurmdbd"
    assert conf["AccountingStoragePass"] == "/run/munge/other.socket"


def test_generator_requires_paths(tmp_path):
    proc = run(GENERATOR, "--out", tmp_path / "x.conf", "--controller", "vm")
    assert proc.returncode == 2 and "--state-dir is required" in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["up", "--nodes", "x"], "--nodes must be a positive integer"),
    (["up", "--nodes", "0"], "--nodes must be >= 1"),
    (["up", "--frobnicate"], "unknown option"),
    (["restart"], "local-slurm.sh up"),
])
def test_script_usage_errors(argv, message, tmp_path):
    proc = run(SCRIPT, *argv, "--dir", tmp_path)
    assert proc.returncode == 2 and message in proc.stderr


def test_down_without_cluster_is_harmless(tmp_path):
    proc = run(SCRIPT, "down", "--dir", tmp_path)
    assert proc.returncode == 0 and "nothing to stop" in proc.stderr
    assert run(SCRIPT, "status", "--dir", tmp_path).returncode == 1


@pytest.mark.slurm
def test_up_status_down_lifecycle(tmp_path):
    reason = _why_not_startable()
    if reason:
        if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    directory = tmp_path / "cluster"
    up = run(SCRIPT, "up", "--nodes", "2", "--dir", directory)
    try:
        assert up.returncode == 0, up.stderr
        conf = up.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
        assert Path(conf) == directory / "etc" / "slurm.conf"
        pids = [int(line.split()[1]) for line in (directory / "run" / "pids").read_text().splitlines()]
        assert len(pids) == 4  # munged, slurmctld, 2 slurmd
        status = run(SCRIPT, "status", "--dir", directory)
        assert status.returncode == 0 and "4 daemons running, 0 stopped" in status.stdout
        again = run(SCRIPT, "up", "--nodes", "2", "--dir", directory)
        assert again.returncode == 0 and "already up" in again.stderr
    finally:
        down = run(SCRIPT, "down", "--dir", directory)
    assert down.returncode == 0, down.stderr
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or \
            "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert not directory.exists()


@pytest.mark.slurm
def test_accounting_records_jobs(tmp_path):
    """--accounting: a private MariaDB and slurmdbd; sacct then lists finished jobs."""
    reason = _why_not_startable()
    missing = [b for b in ("slurmdbd", "mariadbd", "mariadb-install-db", "sacct") if not shutil.which(b)]
    if missing:
        reason = ("accounting packages missing (" + ", ".join(missing)
                  + "): run 'sudo bash slurm-docker/install-deps.sh --accounting'")
    if reason:
        pytest.skip(reason)  # optional feature: make test does not install it
    directory = tmp_path / "acct"
    up = run(SCRIPT, "up", "--nodes", "2", "--accounting", "--dir", directory)
    try:
        assert up.returncode == 0, up.stderr
        conf = up.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
        env = dict(os.environ, SLURM_CONF=conf)
        job = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-N2", "--wrap", "true"],
                             capture_output=True, text=True, env=env, cwd=tmp_path)
        assert job.returncode == 0, job.stderr
        job_id = job.stdout.strip()
        deadline = time.monotonic() + 30
        while True:
            acct = subprocess.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "JobID,State,NNodes"],
                                  capture_output=True, text=True, env=env)
            if acct.stdout.strip() == f"{job_id}|COMPLETED|2":
                break
            assert time.monotonic() < deadline, f"sacct never showed the job: {acct.stdout!r} {acct.stderr!r}"
            time.sleep(0.5)
    finally:
        down = run(SCRIPT, "down", "--dir", directory)
    assert down.returncode == 0, down.stderr
    assert not directory.exists()
