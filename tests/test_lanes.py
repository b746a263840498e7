"""tests/lanes.sh, make test's two lanes side by side: both run to the end, the background
lane's output comes after the foreground's, and either lane's failure fails the whole."""
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

LANES = Path(__file__).resolve().parent / "lanes.sh"


def _lanes(background: str, *foreground: str, tmp=None) -> subprocess.CompletedProcess:
    env = None if tmp is None else {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(["bash", str(LANES), "cpu", background, *foreground],
                          capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(("background", "foreground", "code"), [
    ("exit 0", "exit 0", 0),
    ("exit 3", "exit 0", 1),           # the background lane's failure is the run's
    ("exit 0", "exit 4", 4),           # the foreground's status is kept
    ("exit 3", "exit 4", 4),
])
def test_exit_status_fails_when_either_lane_fails(background, foreground, code):
    assert _lanes(background, "bash", "-c", foreground).returncode == code


def test_lanes_run_side_by_side_and_the_background_output_follows(tmp_path):
    # A handshake: each lane waits (at most 20 s) for the file the other one writes, which
    # only succeeds when they run at the same time.
    wait = "for i in $(seq 200); do [ -e {f} ] && break; sleep 0.1; done; [ -e {f} ]"
    fg, bg = tmp_path / "fg", tmp_path / "bg"
    proc = _lanes(f"touch {bg}; {wait.format(f=fg)} && echo from-background",
                  "bash", "-c", f"touch {fg}; {wait.format(f=bg)} && echo from-foreground")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.index("from-foreground") < out.index("output of the cpu lane") \
        < out.index("from-background")
    assert "cpu lane: exit 0" in proc.stderr


def test_a_failing_foreground_still_waits_for_the_background_lane(tmp_path):
    proc = _lanes("sleep 1; echo finished-anyway", "bash", "-c", "exit 7", tmp=tmp_path)
    assert proc.returncode == 7
    assert "finished-anyway" in proc.stdout
    assert not list(tmp_path.iterdir())             # the background lane's log is removed


def test_a_stopped_lanes_script_prints_the_background_output_and_cleans_up(tmp_path):
    """A TERM to the process group (a CI time-out; Ctrl-C is the same with INT) stops both
    lanes, shows what the background lane wrote so far and leaves no log behind."""
    logs = tmp_path / "tmp"
    logs.mkdir()
    proc = subprocess.Popen(["bash", str(LANES), "cpu", "echo so-far; sleep 60", "sleep", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "TMPDIR": str(logs)}, start_new_session=True)
    deadline = time.monotonic() + 20
    while not any(p.stat().st_size for p in logs.iterdir()):
        assert time.monotonic() < deadline, "the background lane wrote nothing"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "so-far" in out and "(stopped)" in out
    assert not list(logs.iterdir())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)            # anything of the lanes left over


def test_usage_without_a_foreground_command_exits_2():
    proc = subprocess.run(["bash", str(LANES), "cpu", "true"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "lanes.sh NAME" in proc.stderr


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, waiting for a parent to reap it, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_lanes_script_takes_its_background_lane_with_it(tmp_path):
    """The background lane runs in a session of its own; a SIGKILL of lanes.sh (a CI
    time-out killing the process) must not leave it running.

    The lane's watcher looks every 2 s; the deadline is generous because this test runs in
    make test's niced CPU lane beside the live tests (a CI run once needed more than 20 s),
    and the lane's processes are polled through /proc, not with one pgrep per look."""
    marker = tmp_path / "still-running"
    logs = tmp_path / "tmp"
    logs.mkdir()
    proc = subprocess.Popen(["bash", str(LANES), "cpu",
                             f"sleep 60; touch {marker}", "sleep", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(logs)}, start_new_session=True)
    deadline = time.monotonic() + 60

    def lane_pids():
        out = subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split() if int(p) != proc.pid]
    while not (pids := lane_pids()):
        assert time.monotonic() < deadline, "the background lane did not start"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 120
    while (left := [p for p in pids if _alive(p)]) or list(logs.iterdir()):
        assert time.monotonic() < deadline, \
            f"outlived lanes.sh: processes {left}, log files {list(logs.iterdir())}"
        time.sleep(0.2)
    assert not marker.exists()
    os.killpg(proc.pid, signal.SIGKILL)                # the orphaned foreground lane
