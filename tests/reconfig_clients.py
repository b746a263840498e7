"""Clients of the reconfiguration endpoint for its tests: raw bytes, and a client running as
another uid (a forked child that drops to it with os.setuid before connecting)."""
import json
import os
import pwd
import socket
import warnings

NOBODY = pwd.getpwnam("nobody").pw_uid


def send_raw(path, data: bytes, timeout: float = 10.0) -> dict:
    """Send ``data`` as is and return the decoded answer line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(data)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


def request(job_id, nodes) -> bytes:
    return json.dumps({"version": 1, "op": "check", "job_id": job_id, "nodes": nodes}).encode() + b"\n"


def send_as(uid: int, path, data: bytes, timeout: float = 20.0) -> dict:
    """:func:`send_raw` from a child process running as ``uid`` (needs root).

    A forked child, not a new interpreter: this Python may live where ``uid`` cannot read it
    (/root/.pyenv). The child only drops privileges and talks on the socket, so forking from
    the test's multi-threaded process (the endpoint's threads) is safe here.
    """
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # fork with threads: see above
        pid = os.fork()
    if pid == 0:                                           # child: drop privileges, ask, report
        try:
            os.close(read_fd)
            os.setgid(65534)
            os.setuid(uid)
            out = json.dumps(send_raw(path, data, timeout)).encode()
        except BaseException as exc:                      # noqa: BLE001 (reported to the parent)
            out = json.dumps({"child_error": repr(exc)}).encode()
        os.write(write_fd, out)
        os._exit(0)
    os.close(write_fd)
    chunks = []
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks))
    assert "child_error" not in answer, answer
    return answer


def json_record(job_id, uid, user, state="RUNNING", nodes=2, comment="malleo:min=1,max=4,period=5",
                **extra) -> dict:
    """A job as Slurm 22.05's ``squeue --json`` lists it (the fields the endpoint reads)."""
    rec = {"job_id": job_id, "name": "app", "user_id": uid, "user_name": user,
           "partition": "debug", "job_state": state, "state_reason": "None",
           "priority": 1, "submit_time": 1_796_000_000, "start_time": 1_796_000_001,
           "end_time": 1_796_000_601, "time_limit": 10, "node_count": nodes,
           "nodes": f"n[1-{nodes}]" if nodes > 1 else "n1", "cpus": 2 * nodes,
           "comment": comment, "standard_output": "/dev/null"}
    rec.update(extra)
    return rec


class ScriptedSlurm:
    """A backend answering ``job_json`` from fixed records (``records``: id -> dict, or an
    exception to raise); counts every call. Only the Slurm side is scripted: the endpoint's
    sockets are real."""

    def __init__(self, records: dict):
        self.records = dict(records)
        self.calls = []

    def job_json(self, job_id):
        from malleo.plugin.backends.errors import InvalidJobId

        self.calls.append(job_id)
        rec = self.records.get(job_id)
        if rec is None:
            raise InvalidJobId("slurm_load_jobs error: Invalid job id specified",
                               ["squeue", "--json"], 0)
        if isinstance(rec, BaseException):
            raise rec
        return rec
