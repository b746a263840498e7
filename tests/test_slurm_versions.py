"""Differences between Slurm 22.05 (Debian 12) and 24.11 (Debian 13) found by running the suite
in slurm-docker/chroot.sh, each pinned by a test that runs on both versions.

- 24.11's ``squeue --json`` applies squeue's default state filter and leaves out finished jobs
  (22.05 listed them all): the CLI backend asks for ``--states=all``.
- 24.11's slurmd starts a cgroup plugin whatever the ProctrackType and exits where no cgroup
  filesystem is mounted: slurm-conf.sh writes ``CgroupPlugin=disabled`` for Slurm >= 24.05, and
  no cgroup.conf for older versions, which do not know the value.
"""
import subprocess
import time
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parent.parent / "slurm-docker" / "slurm-conf.sh"


def _generate(tmp_path, version):
    out = tmp_path / "etc" / "slurm.conf"
    out.parent.mkdir(exist_ok=True)
    proc = subprocess.run(["bash", str(GENERATOR), "--out", str(out), "--controller", "h",
                           "--state-dir", "s", "--spool-dir", "p", "--log-dir", "l",
                           "--run-dir", "r", "--slurm-version", version],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out.parent / "cgroup.conf"


@pytest.mark.parametrize("version", ["24.05", "24.11", "25.11"])
def test_generator_disables_the_cgroup_plugin_from_24_05(tmp_path, version):
    cgroup = _generate(tmp_path, version)
    lines = [x for x in cgroup.read_text().splitlines() if not x.startswith("#")]
    assert lines == ["CgroupPlugin=disabled"]


@pytest.mark.parametrize("version", ["22.05", "23.02", "23.11"])
def test_generator_writes_no_cgroup_conf_before_24_05(tmp_path, version):
    cgroup = _generate(tmp_path, "24.11")  # a stale one from a newer Slurm is removed
    assert cgroup.exists()
    assert not _generate(tmp_path, version).exists()


def test_generator_detects_the_installed_version(tmp_path):
    if subprocess.run(["sh", "-c", "command -v slurmd || command -v slurmctld"],
                      capture_output=True).returncode != 0:
        pytest.skip("no slurmd or slurmctld installed to read the version from")
    version = subprocess.run(["sh", "-c", "slurmd -V 2>/dev/null || slurmctld -V"],
                             capture_output=True, text=True).stdout.split()[-1]
    major, minor = (int(x) for x in version.split(".")[:2])
    out = tmp_path / "slurm.conf"
    subprocess.run(["bash", str(GENERATOR), "--out", str(out), "--controller", "h",
                    "--state-dir", "s", "--spool-dir", "p", "--log-dir", "l", "--run-dir", "r"],
                   check=True)
    assert (tmp_path / "cgroup.conf").exists() == ((major, minor) >= (24, 5))


@pytest.mark.slurm
def test_finished_jobs_stay_listed(slurm_cluster, slurm_jobs, tmp_path):
    backend = slurm_cluster.backend
    job_id = backend.submit(wrap="true", nodes=1, time_limit=60, name="malleo-finished",
                            output="/dev/null", workdir=str(tmp_path))
    slurm_jobs.append(job_id)
    deadline = time.monotonic() + 60
    while not backend.job(job_id).is_finished:
        assert time.monotonic() < deadline, f"job {job_id} did not finish in 60 s"
        time.sleep(0.5)
    listed = {j.job_id: j for j in backend.all_jobs()}
    assert job_id in listed
    assert listed[job_id].state == "COMPLETED"
    assert [j.job_id for j in backend.jobs(job_ids={job_id})] == [job_id]


# --- the scripts that bring up other Slurm versions refuse bad input before any work ----------

DOCKER = GENERATOR.parent


def test_local_slurm_refuses_a_prefix_without_slurm(tmp_path):
    proc = subprocess.run(["bash", str(DOCKER / "local-slurm.sh"), "status", "--dir",
                           str(tmp_path / "c"), "--prefix", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"--prefix {tmp_path}: no sbin/slurmctld and bin/squeue there" in proc.stderr


def test_chroot_refuses_an_unknown_suite():
    proc = subprocess.run(["bash", str(DOCKER / "chroot.sh"), "build"], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "MALLEO_CHROOT_SUITE": "bogus"})
    assert proc.returncode == 2
    assert "MALLEO_CHROOT_SUITE=bogus: expected trixie or forky" in proc.stderr


@pytest.mark.parametrize("name, message", [
    ("slurm-25.11.7.tar.xz", "no Slurm tarball at"),
    ("slurm.zip", "no Slurm tarball at"),
])
def test_build_slurm_refuses_a_missing_tarball(tmp_path, name, message):
    proc = subprocess.run(["bash", str(DOCKER / "build-slurm.sh"), str(tmp_path / name)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr and str(tmp_path / name) in proc.stderr


def test_build_slurm_refuses_a_file_not_named_like_a_slurm_tarball(tmp_path):
    other = tmp_path / "notslurm.tar.xz"
    other.write_bytes(b"")
    proc = subprocess.run(["bash", str(DOCKER / "build-slurm.sh"), str(other)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "expected slurm-VERSION.tar.{xz,bz2,gz}" in proc.stderr


def test_build_pyslurm_needs_a_finished_prefix(tmp_path):
    proc = subprocess.run(["bash", str(DOCKER / "build-pyslurm.sh"), "--prefix", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "not a finished build-slurm.sh prefix" in proc.stderr
