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
