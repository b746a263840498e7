"""``malleo slurm reconfig``: the endpoint as a process (refuses garbage, stops on SIGTERM)."""
import signal
import subprocess
import sys
import time

from reconfig_clients import send_raw


def test_serves_until_sigterm_and_removes_its_socket(tmp_path):
    sock = tmp_path / "sub" / "r.sock"
    proc = subprocess.Popen([sys.executable, "-c", "from malleo.emulator.cli import main; main()", "slurm", "reconfig",
                             "--socket", str(sock), "--slurm-conf", "/nonexistent/slurm.conf"],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the socket never appeared"
            time.sleep(0.1)
        answer = send_raw(sock, b"\x00garbage\n")
        assert answer["ok"] is False and "malformed request" in answer["error"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "listening on" in err and "reconfig refused uid 0: malformed request" in err
    assert not sock.exists()
