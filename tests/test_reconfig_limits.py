"""The endpoint under load and abuse, on real Unix sockets (issue 12, points 12-15): a
descriptor limit, idle and slow clients, 1,000 simultaneous asks, requests and Slurm records
that cannot be read, and a decision that raises. Only Slurm is scripted."""
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from malleo.plugin.malleable import protocol
from malleo.plugin.reconfig import Decision, Endpoint
from reconfig_clients import ScriptedSlurm, json_record, request, send_raw

TESTS = Path(__file__).resolve().parent
JOB = 10


def expand_by_one(backend, job_id, bounds, nodes, policy):
    return Decision("expand", min(bounds.max_nodes, nodes + 1), "test")


@pytest.fixture
def make_endpoint():
    made = []

    def make(records=None, **kwargs):
        directory = tempfile.mkdtemp(prefix="malleo-reconfig-")
        kwargs.setdefault("decide", expand_by_one)
        ep = Endpoint(os.path.join(directory, "r.sock"),
                      ScriptedSlurm(records or {JOB: json_record(JOB, 0, "root")}), **kwargs)
        made.append((ep.start(), directory))
        return ep

    yield make
    for ep, directory in made:
        ep.stop()
        os.rmdir(directory)


def ask(ep, timeout=30.0):
    return protocol.ask(str(ep.path), JOB, 2, bounds=(1, 4), timeout=timeout)


# --- 12: descriptors run out; the accept loop survives -------------------------------------

@pytest.mark.parametrize("limits", [{}, {"max_connections": 1000, "max_per_uid": 1000}],
                         ids=["default-bounds", "bounds-above-the-fd-limit"])
def test_accept_survives_descriptor_exhaustion(tmp_path, limits):
    """80 idle connections against a 64-descriptor server: later asks are still answered.
    With bounds above the limit, accept meets EMFILE, logs it and backs off."""
    path = str(tmp_path / "r.sock")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(TESTS / "reconfig_fd_child.py"), path,
                             json.dumps(limits)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=TESTS)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        held = []
        for _ in range(80):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(path)
            held.append(s)
        time.sleep(1.0)                      # the server meets its limits meanwhile
        for s in held:
            s.close()
        for _ in range(5):
            assert protocol.ask(path, JOB, 2, bounds=(1, 4), timeout=30) == ("expand", 3)
        assert proc.poll() is None
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        err = proc.stderr.read()
    if limits:
        assert "accept failed ([Errno 24] Too many open files)" in err, err[-2000:]
        assert "pausing accepts" in err


def test_connections_held_are_bounded_and_excess_of_one_uid_is_told_busy(make_endpoint):
    ep = make_endpoint(max_connections=8, max_per_uid=4, timeout=2.0)
    held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(6)]
    for s in held:
        s.settimeout(5)
        s.connect(str(ep.path))
    busy = [json.loads(s.recv(4096)) for s in held[4:]]
    assert all(b["ok"] is False and b["busy"] is True for b in busy)
    assert ep._held == 4
    for s in held:
        s.close()
    assert ask(ep) == ("expand", 3)


# --- 13: a deadline per request; bounded threads -------------------------------------------

def test_slow_sender_is_cut_at_the_request_deadline(make_endpoint):
    """A byte every 0.5 s never completes a request: refused 1 s after its connection."""
    ep = make_endpoint(timeout=1.0)
    began = time.monotonic()
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(ep.path))
        s.settimeout(0.5)
        while time.monotonic() - began < 20:
            try:
                s.send(b" ")
            except OSError:
                pass        # the server answered and closed: its answer is still to be read
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break       # closed by the server
            data += chunk
    assert b"no complete request within 1 s" in data
    assert ask(ep) == ("expand", 3)


def test_threads_stay_bounded_under_many_slow_clients(make_endpoint):
    ep = make_endpoint(timeout=3.0, max_per_uid=300, max_connections=300, workers=4)
    base = threading.active_count()
    clients = []
    for _ in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(ep.path))
        s.send(b'{"version": 1')
        clients.append(s)
    assert ask(ep) == ("expand", 3)        # answered while 200 clients dawdle
    assert threading.active_count() <= base + ep.workers
    for s in clients:
        s.close()


# --- 14: simultaneous asks -------------------------------------------------------------------

def test_a_thousand_simultaneous_asks_are_all_answered(make_endpoint):
    ep = make_endpoint()
    n = 1000
    gate = threading.Barrier(n)
    results = [None] * n

    def one(i):
        gate.wait()
        try:
            results[i] = ask(ep, timeout=120)
        except Exception as exc:             # noqa: BLE001 (counted below)
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    counts = Counter(r if isinstance(r, tuple) else type(r).__name__ for r in results)
    failures = sorted({str(r) for r in results if not isinstance(r, tuple)})[:5]
    assert counts == {("expand", 3): n}, (counts, failures)


def test_no_answer_is_an_error_never_a_silent_none(tmp_path):
    """A listener that never answers: ask raises Unreachable at its deadline."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(tmp_path / "mute.sock"))
        mute.listen(1)
        with pytest.raises(protocol.Unreachable, match="no answer"):
            protocol.ask(str(tmp_path / "mute.sock"), JOB, 2, timeout=1.0)


# --- 15: every request gets an answer or a logged refusal ------------------------------------

@pytest.mark.parametrize("data, word", [
    (b"[" * 2000 + b"\n", "nested deeper than"),
    (b"{" * 100_000, "longer than 4096"),
    (b'{"version": 1, "op": "check", "job_id": 10, "nodes": [[[[[[1]]]]]]}\n', "nested deeper"),
])
def test_unreadable_requests_are_refused(make_endpoint, caplog, data, word):
    ep = make_endpoint()
    with caplog.at_level(logging.WARNING, logger="malleo.reconfig"):
        answer = send_raw(ep.path, data)
    assert answer["ok"] is False and word in answer["error"]
    assert any(word in r.getMessage() for r in caplog.records)
    assert ask(ep) == ("expand", 3)


def test_a_request_cut_short_is_refused(make_endpoint):
    ep = make_endpoint()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(ep.path))
        s.sendall(b"[" * 2000)
        s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        answer = json.loads(s.recv(4096))
    assert answer["ok"] is False and "closed before a complete line" in answer["error"]


BROKEN = {
    "node_count": {"node_count": "x"},
    "nodes": {"nodes": "n[3-"},
    "time_limit": {"time_limit": "abc"},
    "start_time": {"start_time": "x"},
    "no_job_id": {"job_id": None},
    "no_owner": {"user_id": None},
    "comment_list": {"comment": ["malleo:min=1,max=4,period=5"]},
    "state_number": {"job_state": 5},
}


@pytest.mark.parametrize("change", BROKEN.values(), ids=BROKEN.keys())
def test_unreadable_slurm_records_are_refused(make_endpoint, caplog, change):
    rec = json_record(JOB, 0, "root")
    rec.update(change)
    ep = make_endpoint({JOB: rec})
    with caplog.at_level(logging.WARNING, logger="malleo.reconfig"):
        answer = send_raw(ep.path, request(JOB, 2))
    assert answer["ok"] is False and answer["error"].startswith(f"job {JOB}:")
    assert any(answer["error"] in r.getMessage() for r in caplog.records)
    assert ep.is_serving


def test_an_exception_in_decide_is_an_error_reply_and_logged(make_endpoint, caplog):
    calls = []

    def broken(backend, job_id, bounds, nodes, policy):
        calls.append(job_id)
        return 1 // 0

    ep = make_endpoint(decide=broken)
    with caplog.at_level(logging.WARNING, logger="malleo.reconfig"):
        answers = [send_raw(ep.path, request(JOB, 2)) for _ in range(3)]
    assert all(a["ok"] is False and "ZeroDivisionError" in a["error"] for a in answers)
    assert len(calls) == 3 and ep.is_serving
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)
