"""Fuzzing the live endpoint (issue 12): generated and mutated request messages sent over a
real Unix socket to an in-process endpoint. Every message gets one answer line, an ``ok``
answer only for a well-formed request about the malleable job, every refusal is logged, the
I/O thread stays alive and the threads stay bounded. Only Slurm is scripted."""
import json
import logging
import os
import socket
import tempfile
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import EXAMPLES
from malleo.plugin.reconfig import Decision, Endpoint
from reconfig_clients import ScriptedSlurm, json_record

JOB = 10
TIMEOUT = 0.5          # the endpoint's per-request deadline here


class Counting(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


@pytest.fixture(scope="module")
def live():
    directory = tempfile.mkdtemp(prefix="malleo-fuzz-")
    records = {JOB: json_record(JOB, 0, "root"),
               11: json_record(11, 0, "root", comment=None),
               12: json_record(12, 0, "root", node_count="x")}

    def decide(backend, job_id, bounds, nodes, policy):
        if nodes == 3:
            raise RuntimeError("a decide bug")
        return Decision("shrink", 1, "fuzz")

    handler = Counting()
    logger = logging.getLogger("malleo.reconfig")
    logger.addHandler(handler)
    ep = Endpoint(os.path.join(directory, "r.sock"), ScriptedSlurm(records), decide=decide,
                  timeout=TIMEOUT, workers=2).start()
    ep.logged = handler
    ep.base_threads = threading.active_count()
    yield ep
    ep.stop()
    logger.removeHandler(handler)
    os.rmdir(directory)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)

field_values = {
    "version": st.sampled_from([1, 2, 0, True, "1", 1.0]) | json_values,
    "op": st.sampled_from(["check", "resize", ""]) | json_values,
    "job_id": st.sampled_from([JOB, 11, 12, 99, 0, -1, 2**32]) | json_values,
    "nodes": st.sampled_from([2, 3, 1, 0, 5, 2**40]) | json_values,
}


@st.composite
def request_objects(draw):
    obj = {"version": 1, "op": "check", "job_id": JOB, "nodes": 2}
    for key in draw(st.lists(st.sampled_from(sorted(field_values)), max_size=4, unique=True)):
        obj[key] = draw(field_values[key])
    for key in draw(st.lists(st.sampled_from(sorted(obj)), max_size=2, unique=True)):
        del obj[key]
    if draw(st.booleans()):
        obj.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
    return json.dumps(obj).encode()


@st.composite
def mutated(draw, base):
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at]
        else:
            del data[at:]
    return bytes(data)


messages = st.one_of(
    request_objects(),
    mutated(request_objects()),
    st.binary(max_size=200),
    st.integers(1, 6000).map(lambda n: b"[" * n),
    st.integers(1, 6000).map(lambda n: b'{"a":' * n),
    st.integers(4000, 9000).map(lambda n: b" " * n),
)

# how the message travels: with a newline, cut (no newline, write side shut), in chunks, or
# left open without a newline (the deadline must answer it)
modes = st.sampled_from(["line", "line", "line", "shut", "chunks", "open"])


def exchange(path, data: bytes, mode: str) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        payload = data if mode in ("shut", "open") else data + b"\n"
        try:
            if mode == "chunks":
                for i in range(0, len(payload), 7):
                    s.sendall(payload[i:i + 7])
            else:
                s.sendall(payload)
            if mode == "shut":
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass                               # refused before all of it was read: fine
        buf = b""
        while not buf.endswith(b"\n"):
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=messages, mode=modes)
def test_every_message_gets_an_answer_or_a_logged_refusal(live, data, mode):
    refusals, logged = live.refusals, live.logged.count
    began = time.monotonic()
    raw = exchange(live.path, data, mode)
    assert time.monotonic() - began < TIMEOUT + 5
    answer = json.loads(raw)
    assert isinstance(answer, dict) and type(answer.get("ok")) is bool
    if answer["ok"]:
        assert answer == {"ok": True, "job_id": JOB, "action": "shrink", "nodes": 1}
    else:
        assert isinstance(answer["error"], str) and answer["error"]
        deadline = time.monotonic() + 5          # the refusal is counted and logged
        while (live.refusals == refusals or live.logged.count == logged) \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        assert live.refusals > refusals and live.logged.count > logged
    assert live.is_serving
    assert threading.active_count() <= live.base_threads + live.workers
