"""The reconfiguration endpoint on a real Unix socket with a scripted Slurm: who may ask,
what is refused, and that a refusal changes nothing (the decision is never consulted)."""
import os
import socket
import tempfile
import time

import pytest

from malleo.plugin.reconfig import Decision, Endpoint
from reconfig_clients import NOBODY, ScriptedSlurm, json_record, request, send_as, send_raw

ROOT_JOB = 10
NOBODY_JOB = 11
RIGID_JOB = 12
PENDING_JOB = 13


def records():
    return {
        ROOT_JOB: json_record(ROOT_JOB, 0, "root"),
        NOBODY_JOB: json_record(NOBODY_JOB, NOBODY, "nobody"),
        RIGID_JOB: json_record(RIGID_JOB, 0, "root", comment=None),
        PENDING_JOB: json_record(PENDING_JOB, 0, "root", state="PENDING"),
    }


@pytest.fixture
def endpoint():
    decided = []

    def decide(backend, job_id, bounds, nodes, policy):
        decided.append(job_id)
        return Decision("expand", min(bounds.max_nodes, nodes + 1), "test")

    directory = tempfile.mkdtemp(prefix="malleo-reconfig-")
    os.chmod(directory, 0o755)                      # nobody must reach the socket
    ep = Endpoint(os.path.join(directory, "r.sock"), ScriptedSlurm(records()), decide=decide).start()
    ep.decided = decided
    yield ep
    ep.stop()
    os.rmdir(directory)


def test_owner_root_gets_a_decision(endpoint):
    answer = send_raw(endpoint.path, request(ROOT_JOB, 2))
    assert answer == {"ok": True, "job_id": ROOT_JOB, "action": "expand", "nodes": 3}
    assert endpoint.view[ROOT_JOB].nodes == 2 and endpoint.view[ROOT_JOB].target == 3


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing uid needs root")


@needs_root
def test_non_root_owner_gets_a_decision(endpoint):
    answer = send_as(NOBODY, endpoint.path, request(NOBODY_JOB, 2))
    assert answer["ok"] is True and answer["action"] == "expand"


@needs_root
def test_wrong_user_is_refused_and_nothing_changes(endpoint):
    answer = send_as(NOBODY, endpoint.path, request(ROOT_JOB, 2))
    assert answer["ok"] is False
    assert f"uid {NOBODY} may not ask about a job of uid 0" in answer["error"]
    assert endpoint.decided == [] and ROOT_JOB not in endpoint.view


@pytest.mark.parametrize("job_id, nodes, word", [
    (999_999, 2, "no such job"),                     # a forged job id
    (RIGID_JOB, 2, "not malleable"),
    (PENDING_JOB, 2, "not running"),
    (ROOT_JOB, 3, "reports 3 nodes but Slurm lists 2"),
])
def test_refusals(endpoint, job_id, nodes, word):
    answer = send_raw(endpoint.path, request(job_id, nodes))
    assert answer["ok"] is False and word in answer["error"]
    assert endpoint.decided == [] and endpoint.view == {}


@pytest.mark.parametrize("data, word", [
    (b"\x00\xff\x13garbage\xfe\n", "not UTF-8"),
    (b"GET / HTTP/1.0\r\n\r\n", "not JSON"),
    (b'{"version": 1, "op": "check", "job_id": 10}\n', "missing nodes"),
    (b"x" * 10_000, "longer than 4096"),
])
def test_garbage_is_refused_before_slurm_is_asked(endpoint, data, word):
    answer = send_raw(endpoint.path, data)
    assert answer["ok"] is False and word in answer["error"]
    assert endpoint.backend.calls == [] and endpoint.decided == []


def test_silent_client_times_out_and_the_endpoint_keeps_serving(endpoint):
    endpoint.timeout = 0.5
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(endpoint.path))
        answer = send_raw(endpoint.path, request(ROOT_JOB, 2))   # served meanwhile
        assert answer["ok"] is True
        idle.settimeout(10)
        assert b"no complete request within 0.5 s" in idle.recv(4096)
    assert endpoint.refusals == 1


def test_socket_file_is_world_writable_and_removed_on_stop(endpoint):
    assert os.stat(endpoint.path).st_mode & 0o777 == 0o666
    endpoint.stop()
    time.sleep(0.1)
    assert not endpoint.path.exists()
