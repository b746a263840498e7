"""local-slurm.sh's multi-host modes (the Docker entrypoints' bring-up), run live on one host.

``controller`` and ``node`` are run as the compose file's containers run them, but with the
controller and its one compute node on this machine (the compute node named after this host,
private ports), sharing one DIR so that the node reuses the controller's munged, and a shared
directory standing for the compose volume. On Debian 12 this runs Slurm 22.05; in
slurm-docker/chroot.sh's Debian 13 root filesystem, Slurm 24.11.
"""
import os
import signal
import socket
import subprocess
import time

import pytest

from slurm_fixture import SCRIPT, _why_not_startable

pytestmark = pytest.mark.slurm


def _free_port_pair() -> int:
    """A port P with P and P+1 free on 127.0.0.1 (slurmctld and slurmd)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 60000:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


def _run(*args, timeout=180):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def multihost(tmp_path):
    reason = _why_not_startable()
    if reason is not None:
        if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    directory, shared = tmp_path / "host", tmp_path / "shared"
    yield directory, shared
    _run("down", "--dir", str(directory))


def test_controller_and_node_modes_make_a_cluster_that_runs_jobs(multihost):
    directory, shared = multihost
    host = socket.gethostname().split(".")[0]
    port = _free_port_pair()
    ctl = _run("controller", "--shared", str(shared), "--compute", host, "--port", str(port),
               "--node-port", str(port + 1), "--dir", str(directory))
    assert ctl.returncode == 0, ctl.stderr
    assert (shared / "munge.key").stat().st_mode & 0o077 == 0
    conf_text = (shared / "slurm.conf").read_text()
    assert f"SlurmctldHost={host}\n" in conf_text and f"NodeName={host} Port={port + 1}" in conf_text

    node = _run("node", host, "--shared", str(shared), "--dir", str(directory))
    assert node.returncode == 0, node.stderr
    conf = str(directory / "etc" / "slurm.conf")
    assert node.stdout.strip() == f"export SLURM_CONF={conf}"
    env = dict(os.environ, SLURM_CONF=conf)
    out = subprocess.run(["srun", "-N1", "-t", "1", "hostname"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()

    # One munged serves both roles on this host; the pids file records each daemon once.
    names = [line.split()[0] for line in (directory / "run" / "pids").read_text().splitlines()]
    assert sorted(names) == sorted(["munged", "slurmctld", f"slurmd-{host}"])


def test_watch_exits_when_a_daemon_stops_and_stops_all_on_sigterm(multihost):
    directory, shared = multihost
    host = socket.gethostname().split(".")[0]
    port = _free_port_pair()
    assert _run("controller", "--shared", str(shared), "--compute", host, "--port", str(port),
                "--node-port", str(port + 1), "--dir", str(directory)).returncode == 0
    assert _run("node", host, "--shared", str(shared), "--dir", str(directory)).returncode == 0
    pids = dict(line.split()[:2] for line in (directory / "run" / "pids").read_text().splitlines())

    watch = subprocess.Popen(["bash", str(SCRIPT), "watch", "--dir", str(directory)],
                             stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    assert watch.poll() is None  # every daemon runs: watch blocks
    os.kill(int(pids[f"slurmd-{host}"]), signal.SIGKILL)
    _, err = watch.communicate(timeout=60)
    assert watch.returncode == 1
    assert f"slurmd-{host}" in err and "stopped" in err

    watch = subprocess.Popen(["bash", str(SCRIPT), "watch", "--dir", str(directory)],
                             stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    assert watch.poll() == 1  # slurmd is still gone: watch refuses at once
    watch.communicate()
    # Restart the node, then SIGTERM: watch stops every daemon and wipes DIR.
    assert _run("node", host, "--shared", str(shared), "--dir", str(directory)).returncode == 0
    watch = subprocess.Popen(["bash", str(SCRIPT), "watch", "--dir", str(directory)],
                             stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    watch.send_signal(signal.SIGTERM)
    watch.communicate(timeout=120)
    assert watch.returncode == 0
    assert not directory.exists()
    for pid in pids.values():
        assert not os.path.exists(f"/proc/{pid}") or b"zombie" in open(
            f"/proc/{pid}/status", "rb").read().lower()
