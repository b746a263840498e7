"""Who the endpoint and its client trust (issue 12, points 16, 17, 19), on real sockets and
real files: the client rejects answers outside the job's bounds or from an untrusted uid; the
server creates its socket without following links or trusting others' directories; job
ownership comes from Slurm's structured record, not from text a comment can imitate."""
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
import warnings

import pytest

from malleo.plugin.malleable import protocol
from malleo.plugin.malleable.launch import resize_target
from malleo.plugin.malleable.spec import DeclaredMalleability
from malleo.plugin.reconfig import Decision, Endpoint
from malleo.plugin.reconfig.socket_dir import UnsafeSocketPath
from reconfig_clients import NOBODY, ScriptedSlurm, json_record, request, send_as, send_raw

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners and uids needs root")
JOB = 10


# --- 16: the client validates the answer --------------------------------------------------

class FakeEndpoint:
    """A listener answering every connection with one fixed line (an impostor or a bug)."""

    def __init__(self, path, line: bytes):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.line, self.done = line, threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    protocol.read_line(conn, 4096)
                    conn.sendall(self.line)
                except (OSError, ValueError):
                    pass

    def close(self):
        self.done.set()
        self.thread.join()
        self.sock.close()


def answer(**fields):
    base = {"ok": True, "job_id": JOB, "action": "expand", "nodes": 3}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode() + b"\n"


@pytest.mark.parametrize("line, word", [
    (answer(action="shrink", nodes=-5), "shrink to -5"),
    (answer(action="shrink", nodes=0), "shrink to 0"),
    (answer(action="expand", nodes=10**12), "expand to 1000000000000"),
    (answer(action="expand", nodes=5), "the job's max"),
    (answer(action="shrink", nodes=3), "shrink to 3"),
    (answer(action="none", nodes=4), "none with 4 nodes"),
    (answer(job_id=11), "about job 11"),
    (answer(job_id="10"), "about job '10'"),
    (answer(nodes=True), "bad action or nodes"),
    (answer(action="explode"), "bad action"),
    (answer(extra=1), "need exactly"),
    (answer(nodes=...), "need exactly"),
    (b'{"ok": true, "x": ' + b"[" * 3000 + b"\n", "nested deeper"),
    (b"[" * 100_000 + b"\n", "longer than 4096"),
    (b"not json\n", "not JSON"),
])
def test_client_rejects_answers_outside_the_job(tmp_path, line, word):
    fake = FakeEndpoint(tmp_path / "r.sock", line)
    try:
        with pytest.raises(protocol.BadAnswer, match=word):
            protocol.ask(str(tmp_path / "r.sock"), JOB, 2, bounds=(1, 4), timeout=10)
    finally:
        fake.close()


def test_client_accepts_a_valid_answer(tmp_path):
    fake = FakeEndpoint(tmp_path / "r.sock", answer(action="shrink", nodes=1))
    try:
        assert protocol.ask(str(tmp_path / "r.sock"), JOB, 2, bounds=(1, 4)) == ("shrink", 1)
    finally:
        fake.close()


def _serve_as(uid, path, line):
    """A forked child running as ``uid`` answers one connection on ``path`` with ``line``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.bind(path)
                s.listen(1)
                s.settimeout(20)
                conn, _ = s.accept()
                with conn:
                    conn.settimeout(5)
                    protocol.read_line(conn, 4096)
                    conn.sendall(line)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 10
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return pid


@needs_root
@pytest.mark.parametrize("agent_user, trusted", [(None, False), ("nobody", True)])
def test_client_checks_the_servers_uid(agent_user, trusted, monkeypatch):
    monkeypatch.delenv(protocol.AGENT_USER_ENV, raising=False)
    directory = tempfile.mkdtemp(prefix="malleo-impostor-")
    os.chmod(directory, 0o777)               # the impostor (nobody) binds its socket here
    path = os.path.join(directory, "r.sock")
    pid = _serve_as(NOBODY, path, answer())
    try:
        if trusted:
            assert protocol.ask(path, JOB, 2, bounds=(1, 4), agent_user=agent_user) == ("expand", 3)
        else:
            with pytest.raises(protocol.UntrustedEndpoint, match=f"served by uid {NOBODY}"):
                protocol.ask(path, JOB, 2, bounds=(1, 4), agent_user=agent_user)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:   # release the child
                s.connect(path)
                s.sendall(b"\n")
    finally:
        os.waitpid(pid, 0)
        shutil.rmtree(directory)


@pytest.mark.parametrize("req, current, target", [
    ({"action": "shrink", "nodes": -5}, 3, 1),
    ({"action": "shrink", "nodes": 0}, 3, 1),
    ({"action": "expand", "nodes": 10**12}, 2, 4),
    ({"action": "expand", "nodes": 10**12}, 4, None),
    ({"action": "shrink", "nodes": 2}, 1, None),
    ({"action": "expand", "nodes": "3"}, 2, None),
    ({"action": "expand", "nodes": True}, 2, None),
    ({"action": "rm -rf", "nodes": 3}, 2, None),
    ([1, 2], 2, None),
    ({"action": "expand", "nodes": 3}, 2, 3),
])
def test_launcher_target_is_clamped_to_the_declaration(req, current, target):
    assert resize_target(req, current, DeclaredMalleability(1, 4, 5)) == target


def test_launcher_never_resizes_an_undeclared_job():
    assert resize_target({"action": "expand", "nodes": 3}, 2, None) is None


# --- 17: the socket is created without trusting others' paths -------------------------------

@pytest.fixture
def victim():
    """A root-only file the attacker wants to make world-writable."""
    fd, path = tempfile.mkstemp(prefix="malleo-victim-")
    os.close(fd)
    os.chmod(path, 0o600)
    yield path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, "the victim's mode changed"
    os.unlink(path)


@pytest.fixture
def scratch():
    directory = tempfile.mkdtemp(prefix="malleo-sockdir-")
    yield directory
    shutil.rmtree(directory)


def endpoint(path):
    return Endpoint(path, ScriptedSlurm({}))


@needs_root
def test_a_directory_owned_by_another_user_is_refused(scratch, victim):
    theirs = os.path.join(scratch, "theirs")
    os.mkdir(theirs, 0o755)
    os.chown(theirs, NOBODY, 65534)
    with pytest.raises(UnsafeSocketPath, match=f"owned by uid {NOBODY}"):
        endpoint(os.path.join(theirs, "r.sock")).start()
    with pytest.raises(UnsafeSocketPath, match=f"owned by uid {NOBODY}"):
        endpoint(os.path.join(theirs, "sub", "r.sock")).start()   # nor anything under it
    assert os.listdir(theirs) == []


@pytest.mark.parametrize("mode, ok", [(0o775, False), (0o757, False), (0o1777, True), (0o755, True)])
def test_group_or_world_writable_directories_need_the_sticky_bit(scratch, mode, ok):
    d = os.path.join(scratch, "d")
    os.mkdir(d)
    os.chmod(d, mode)
    ep = endpoint(os.path.join(d, "r.sock"))
    if ok:
        ep.start().stop()
    else:
        with pytest.raises(UnsafeSocketPath, match="writable by group or others"):
            ep.start()


def test_the_socket_directory_is_never_a_link(scratch):
    real = os.path.join(scratch, "real")
    os.mkdir(real)
    os.symlink(real, os.path.join(scratch, "link"))
    with pytest.raises(UnsafeSocketPath, match="symbolic link"):
        endpoint(os.path.join(scratch, "link", "r.sock")).start()
    assert os.listdir(real) == []


def test_a_link_at_the_socket_name_is_refused_not_followed(scratch, victim):
    os.symlink(victim, os.path.join(scratch, "r.sock"))
    with pytest.raises(UnsafeSocketPath, match="not a socket"):
        endpoint(os.path.join(scratch, "r.sock")).start()


def test_socket_is_0666_in_a_new_private_directory_and_removed(scratch):
    path = os.path.join(scratch, "new", "deeper", "r.sock")
    with endpoint(path):
        st = os.lstat(path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) & 0o022 == 0
        with pytest.raises(OSError, match="already serves"):
            endpoint(path).start()
    assert not os.path.exists(path)


@needs_root
def test_symlink_race_in_a_shared_directory_changes_no_file(scratch, victim):
    """The issue's race: while root starts and stops the endpoint over and over, another user
    keeps renaming a link to root's 0600 file onto the socket's name. In a directory that user
    owns the endpoint refuses to start; in a sticky shared one the link is never followed."""
    theirs = os.path.join(scratch, "theirs")
    shared = os.path.join(scratch, "shared")
    os.mkdir(theirs)
    os.chown(theirs, NOBODY, 65534)
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    os.chmod(scratch, 0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:                                     # the attacker
        try:
            os.setgid(65534)
            os.setuid(NOBODY)
            end = time.monotonic() + 3
            i = 0
            while time.monotonic() < end:
                for d in (theirs, shared):
                    tmp = os.path.join(d, f".l{i}")
                    try:
                        os.symlink(victim, tmp)
                        os.rename(tmp, os.path.join(d, "r.sock"))
                    except OSError:
                        try:
                            os.unlink(tmp)
                        except OSError:
                            pass
                    i += 1
        finally:
            os._exit(0)
    started = {theirs: 0, shared: 0}
    try:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            for d in (theirs, shared):
                try:
                    endpoint(os.path.join(d, "r.sock")).start().stop()
                    started[d] += 1
                except OSError:
                    pass
    finally:
        os.waitpid(pid, 0)
    assert started[theirs] == 0
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o600


# --- 19: ownership from structured data -----------------------------------------------------

INJECTED = " UserId=nobody(65534)"


@pytest.fixture
def injected_endpoint():
    directory = tempfile.mkdtemp(prefix="malleo-reconfig-")
    os.chmod(directory, 0o755)
    records = {
        20: json_record(20, 0, "root", comment="malleo:min=1,max=4,period=5" + INJECTED),
        21: json_record(21, 0, "root", standard_output="/tmp/out" + INJECTED,
                        current_working_directory="/tmp/x" + INJECTED),
    }

    def decide(backend, job_id, bounds, nodes, policy):
        return Decision("expand", 3, "test")

    with Endpoint(os.path.join(directory, "r.sock"), ScriptedSlurm(records), decide=decide) as ep:
        yield ep
    os.rmdir(directory)


@needs_root
@pytest.mark.parametrize("job_id", [20, 21], ids=["in-comment", "in-stdout-and-workdir"])
def test_text_imitating_an_owner_does_not_change_the_owner(injected_endpoint, job_id):
    refused = send_as(NOBODY, injected_endpoint.path, request(job_id, 2))
    assert refused["ok"] is False
    assert f"uid {NOBODY} may not ask about a job of uid 0" in refused["error"]


def test_the_real_owner_is_still_answered(injected_endpoint):
    assert send_raw(injected_endpoint.path, request(21, 2))["ok"] is True
    bad_comment = send_raw(injected_endpoint.path, request(20, 2))
    assert bad_comment["ok"] is False and "is not a whole number" in bad_comment["error"]
