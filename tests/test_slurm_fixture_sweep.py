"""The slurm fixture's sweep of clusters left by dead pytest sessions (tests/slurm_fixture.py:
``sweep_stale_clusters``): only this user's malleo-slurm-* directories whose recorded owner is
gone are stopped and removed; a live owner's, a link's and an unrecorded one's are left."""
import os
import subprocess
import sys

import pytest

import slurm_fixture
from slurm_fixture import OWNER_FILE, SCRIPT, _start_ticks, _why_not_startable, sweep_stale_clusters


def _dead_owner() -> str:
    """An owner record of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    ticks = None
    while ticks is None and proc.poll() is None:
        ticks = _start_ticks(proc.pid)
    proc.wait()
    return f"{proc.pid} {ticks or 1} -\n"


def test_only_dead_sessions_directories_are_swept(tmp_path):
    dead = tmp_path / "malleo-slurm-dead"
    dead.mkdir()
    (dead / OWNER_FILE).write_text(_dead_owner())
    (dead / "etc").mkdir()
    alive = tmp_path / "malleo-slurm-alive"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(f"{os.getpid()} {_start_ticks(os.getpid())} -\n")
    reused = tmp_path / "malleo-slurm-reused"         # this PID, another start time
    reused.mkdir()
    (reused / OWNER_FILE).write_text(f"{os.getpid()} 1 -\n")
    unrecorded = tmp_path / "malleo-slurm-old"
    unrecorded.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / OWNER_FILE).write_text(_dead_owner())
    (tmp_path / "malleo-slurm-link").symlink_to(elsewhere)
    twin = tmp_path / "malleo-twin-dead"            # the twin's private cluster
    twin.mkdir()
    (twin / OWNER_FILE).write_text(_dead_owner())
    assert sweep_stale_clusters(str(tmp_path)) == [str(dead), str(reused), str(twin)]
    assert not dead.exists() and not reused.exists() and not twin.exists()
    assert alive.exists() and unrecorded.exists() and (elsewhere / OWNER_FILE).exists()


@pytest.mark.slurm
def test_a_cluster_left_running_is_stopped(tmp_path):
    """A real cluster whose session died (its owner record names an ended process): the sweep
    stops its daemons and removes its directory."""
    reason = _why_not_startable()
    if reason is not None:
        if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    directory = tmp_path / "malleo-slurm-left"
    prefix = ["--prefix", slurm_fixture.SLURM_PREFIX] if slurm_fixture.SLURM_PREFIX else []
    up = subprocess.run(["bash", str(SCRIPT), "up", "--nodes", "2", "--dir", str(directory),
                         *prefix], capture_output=True, text=True, timeout=180)
    try:
        assert up.returncode == 0, up.stderr
        record = _dead_owner().split()
        (directory / OWNER_FILE).write_text(
            f"{record[0]} {record[1]} {slurm_fixture.SLURM_PREFIX or '-'}\n")
        daemons = [int(line.split()[1]) for line in
                   (directory / "run" / "pids").read_text().splitlines()]
        assert daemons and all(os.path.exists(f"/proc/{pid}") for pid in daemons)
        assert sweep_stale_clusters(str(tmp_path)) == [str(directory)]
        assert not directory.exists()
        assert not any(os.path.exists(f"/proc/{pid}") for pid in daemons)
    finally:
        if directory.exists():
            subprocess.run(["bash", str(SCRIPT), "down", "--dir", str(directory), *prefix],
                           capture_output=True, timeout=180)
