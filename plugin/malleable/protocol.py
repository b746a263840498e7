"""The reconfiguration protocol between a malleable job and the agent's endpoint.

One request per connection on a Unix stream socket: the client sends one JSON object on one
line (at most ``MAX_REQUEST`` bytes, newline-terminated) and reads one JSON line back.

Request::

    {"version": 1, "op": "check", "job_id": 1234, "nodes": 2}

``nodes`` is the node count the job runs on now. Answer, either::

    {"ok": true, "job_id": 1234, "action": "expand" | "shrink" | "none", "nodes": TARGET}
    {"ok": false, "error": "why the request was refused"}

``TARGET`` is the node count to resize to (the current count for ``none``).
"""
import json
import socket

VERSION = 1
MAX_REQUEST = 4096
"""Bytes a request may take, newline included."""
ACTIONS = ("none", "expand", "shrink")
DEFAULT_SOCKET = "/run/malleo/reconfig.sock"
SOCKET_ENV = "MALLEO_RECONFIG_SOCKET"


class Refused(Exception):
    """The endpoint refused the request; ``str()`` is its reason."""


def encode(obj: dict) -> bytes:
    """One protocol line."""
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n"


def read_line(sock: socket.socket, limit: int) -> bytes:
    """Bytes up to the first newline (excluded); at most ``limit`` bytes in all.

    Raises:
        ValueError: no newline within ``limit`` bytes, or the peer closed first.
    """
    buf = bytearray()
    while b"\n" not in buf:
        chunk = sock.recv(limit + 1 - len(buf))
        if not chunk:
            raise ValueError("connection closed before a complete line")
        buf += chunk
        if len(buf) > limit and b"\n" not in buf:
            raise ValueError(f"line longer than {limit} bytes")
    line = bytes(buf).split(b"\n", 1)[0]
    if len(line) + 1 > limit:
        raise ValueError(f"line longer than {limit} bytes")
    return line


def ask(path: str, job_id: int, nodes: int, timeout: float = 10.0) -> tuple[str, int]:
    """Ask the endpoint at ``path`` what job ``job_id`` (on ``nodes`` nodes now) should do.

    Returns:
        (action, target node count), action one of ``ACTIONS``.

    Raises:
        Refused: the endpoint refused (not the job's owner, unknown job, ...).
        OSError, ValueError: the endpoint is unreachable or answered nonsense.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(encode({"version": VERSION, "op": "check", "job_id": int(job_id),
                             "nodes": int(nodes)}))
        answer = json.loads(read_line(sock, 65536).decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError(f"endpoint answered {answer!r}, not an object")
    if answer.get("ok") is not True:
        raise Refused(str(answer.get("error", "refused without a reason")))
    action, target = answer.get("action"), answer.get("nodes")
    if action not in ACTIONS or not isinstance(target, int) or isinstance(target, bool):
        raise ValueError(f"endpoint answered {answer!r}: bad action or nodes")
    return action, target
