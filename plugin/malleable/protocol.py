"""The reconfiguration protocol between a malleable job and the agent's endpoint.

One request per connection on a Unix stream socket: the client sends one JSON object on one
line (at most ``MAX_REQUEST`` bytes, newline-terminated) and reads one JSON line back (at most
``MAX_ANSWER`` bytes). Neither side accepts JSON nested deeper than ``MAX_DEPTH``.

Request::

    {"version": 1, "op": "check", "job_id": 1234, "nodes": 2}

``nodes`` is the node count the job runs on now. Answer, one of::

    {"ok": true, "job_id": 1234, "action": "expand" | "shrink" | "none", "nodes": TARGET}
    {"ok": false, "error": "why the request was refused"}
    {"ok": false, "error": "...", "busy": true}

``TARGET`` is the node count to resize to (the current count for ``none``). ``busy`` means
the endpoint holds as many connections from the caller's uid as it allows: the caller may
try again (:func:`ask` does, with backoff, until its deadline).

The client trusts an answer only from an endpoint running as root, as its own uid, or as the
uid named by ``MALLEO_AGENT_USER`` (checked with ``SO_PEERCRED``), and only when it fits the
job: same job id, an expand above and a shrink below the current count, inside the job's
declared [min, max].
"""
from __future__ import annotations

import errno
import json
import os
import pwd
import random
import socket
import struct
import time

VERSION = 1
MAX_REQUEST = 4096
"""Bytes a request may take, newline included."""
MAX_ANSWER = 4096
"""Bytes an answer may take, newline included."""
MAX_DEPTH = 4
"""Deepest nesting of JSON arrays and objects either side accepts (a valid message has 1)."""
ACTIONS = ("none", "expand", "shrink")
DEFAULT_SOCKET = "/run/malleo/reconfig.sock"
SOCKET_ENV = "MALLEO_RECONFIG_SOCKET"
AGENT_USER_ENV = "MALLEO_AGENT_USER"
"""User name or uid the endpoint may run as besides root (a site running it unprivileged)."""
RESTART_GRACE = 2.0
"""Seconds :func:`ask` keeps retrying a missing socket or one nobody listens on (the endpoint
restarting); a full backlog and busy answers are retried until the whole deadline."""


class Refused(Exception):
    """The endpoint refused the request; ``str()`` is its reason."""


class Unreachable(OSError):
    """No answer: the endpoint could not be reached, or did not answer within the deadline."""


class BadAnswer(ValueError):
    """The endpoint answered something that is not a valid answer for this job."""


class UntrustedEndpoint(BadAnswer):
    """The process serving the socket runs as a uid the client does not trust."""


def encode(obj: dict) -> bytes:
    """One protocol line."""
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n"


def depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text, brackets inside strings not counted.

    Linear in the text and recursion-free, so it can run before ``json.loads`` (whose C
    scanner raises RecursionError on a few thousand open brackets).
    """
    deepest = level = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


def loads(line: bytes) -> object:
    """Decode one protocol line: UTF-8 JSON nested at most ``MAX_DEPTH`` deep.

    Raises:
        ValueError: not UTF-8, too deeply nested, or not JSON.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if depth(text) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON ({exc})") from None


def read_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    """Bytes up to the first newline (excluded); at most ``limit`` bytes in all.

    Args:
        deadline: ``time.monotonic()`` by which the whole line must have arrived; None keeps
            the socket's own timeout per read.

    Raises:
        ValueError: no newline within ``limit`` bytes, or the peer closed first.
        TimeoutError: the deadline passed first.
    """
    buf = bytearray()
    while b"\n" not in buf:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete line within the deadline ({len(buf)} bytes)")
            sock.settimeout(left)
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


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket, as the
    kernel recorded them at connect/listen time (``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)


def trusted_uids(agent_user: str | None = None) -> frozenset[int]:
    """The uids an endpoint may run as: root, the caller's own uid, and ``agent_user`` (a user
    name or uid; default ``$MALLEO_AGENT_USER``).

    Raises:
        BadAnswer: ``agent_user`` names no user.
    """
    uids = {0, os.geteuid()}
    name = agent_user if agent_user is not None else os.environ.get(AGENT_USER_ENV, "")
    name = name.strip()
    if name:
        if name.isdigit():
            uids.add(int(name))
        else:
            try:
                uids.add(pwd.getpwnam(name).pw_uid)
            except KeyError:
                raise BadAnswer(f"{AGENT_USER_ENV}={name!r}: no such user") from None
    return frozenset(uids)


def _connect(path: str, deadline: float) -> socket.socket:
    """A connected socket, retrying a full backlog until ``deadline`` and a missing or dead
    socket for ``RESTART_GRACE`` seconds, with jittered exponential backoff.

    The connect itself blocks (a non-blocking connect fails at once when the backlog is
    full); ``SO_SNDTIMEO`` bounds the wait.
    """
    grace = min(deadline, time.monotonic() + RESTART_GRACE)
    delay = 0.01
    while True:
        left = deadline - time.monotonic()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sec = max(left, 0.001)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                        struct.pack("ll", int(sec), int((sec % 1) * 1_000_000)))
        try:
            sock.connect(path)
            return sock
        except OSError as exc:
            sock.close()
            now = time.monotonic()
            busy = exc.errno in (errno.EAGAIN, errno.EINTR) and now < deadline
            restarting = exc.errno in (errno.ECONNREFUSED, errno.ENOENT) and now < grace
            if not (busy or restarting):
                raise Unreachable(exc.errno, f"cannot connect to {path}: "
                                             f"{exc.strerror or exc}") from None
        time.sleep(min(delay * random.uniform(0.5, 1.5), max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.5)


def _check_answer(answer: object, job_id: int, nodes: int, bounds: tuple[int, int]) -> tuple[str, int]:
    if not isinstance(answer, dict):
        raise BadAnswer(f"endpoint answered {answer!r}, not an object")
    if answer.get("ok") is False:
        raise Refused(str(answer.get("error", "refused without a reason"))[:500])
    if answer.get("ok") is not True or set(answer) != {"ok", "job_id", "action", "nodes"}:
        raise BadAnswer(f"endpoint answered {answer!r}: need exactly ok, job_id, action, nodes")
    if type(answer["job_id"]) is not int or answer["job_id"] != job_id:
        raise BadAnswer(f"endpoint answered about job {answer['job_id']!r}, not job {job_id}")
    action, target = answer["action"], answer["nodes"]
    if action not in ACTIONS or type(target) is not int:
        raise BadAnswer(f"endpoint answered {answer!r}: bad action or nodes")
    lo, hi = bounds
    if action == "none" and target != nodes:
        raise BadAnswer(f"endpoint answered none with {target} nodes; the job runs on {nodes}")
    if action == "expand" and not nodes < target <= hi:
        raise BadAnswer(f"endpoint answered expand to {target} nodes: need {nodes} < n <= {hi} "
                        f"(the job's max)")
    if action == "shrink" and not max(lo, 1) <= target < nodes:
        raise BadAnswer(f"endpoint answered shrink to {target} nodes: need {max(lo, 1)} <= n "
                        f"< {nodes} (the job's min)")
    return action, target


def ask(path: str, job_id: int, nodes: int, *, bounds: tuple[int, int] | None = None,
        timeout: float = 30.0, agent_user: str | None = None) -> tuple[str, int]:
    """Ask the endpoint at ``path`` what job ``job_id`` (on ``nodes`` nodes now) should do.

    Args:
        bounds: the job's declared (min, max) node counts; an expand or shrink outside them is
            a bad answer. None: (1, ``spec.MAX_NODES``).
        timeout: seconds for the whole exchange, connection retries included.
        agent_user: the user the endpoint may run as besides root (:func:`trusted_uids`).

    Returns:
        (action, target node count), action one of ``ACTIONS``, validated as above.

    Raises:
        Refused: the endpoint refused (not the job's owner, unknown job, ...).
        Unreachable: no endpoint answered within ``timeout``.
        BadAnswer: the answer is malformed, about another job or outside the job's bounds,
            or the endpoint runs as an untrusted uid (:class:`UntrustedEndpoint`).
    """
    from malleo.plugin.malleable.spec import MAX_NODES

    lo, hi = bounds if bounds is not None else (1, MAX_NODES)
    trusted = trusted_uids(agent_user)
    deadline = time.monotonic() + timeout
    request = encode({"version": VERSION, "op": "check", "job_id": int(job_id), "nodes": int(nodes)})
    delay = 0.02
    while True:
        sock = _connect(path, deadline)
        try:
            _pid, uid, _gid = peer_credentials(sock)
            if uid not in trusted:
                raise UntrustedEndpoint(f"{path} is served by uid {uid}, not root or a trusted "
                                        f"agent user (uids {sorted(trusted)}; set "
                                        f"{AGENT_USER_ENV})")
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                sock.sendall(request)
            except (BrokenPipeError, ConnectionResetError):
                # A crowded endpoint answers "busy" and closes without reading the request:
                # its answer may still be waiting here; with none, retry as for busy.
                try:
                    line = read_line(sock, MAX_ANSWER, deadline)
                except (ValueError, OSError):
                    line = None
            else:
                line = read_line(sock, MAX_ANSWER, deadline)
        except (TimeoutError, socket.timeout) as exc:
            raise Unreachable(errno.ETIMEDOUT, f"no answer from {path} within {timeout:g} s "
                                               f"({exc})") from None
        except ValueError as exc:
            if isinstance(exc, BadAnswer):
                raise
            raise BadAnswer(f"endpoint answer unreadable: {exc}") from None
        except OSError as exc:
            raise Unreachable(exc.errno, f"exchange with {path} failed: {exc}") from None
        finally:
            sock.close()
        try:
            answer = None if line is None else loads(line)
        except ValueError as exc:
            raise BadAnswer(f"endpoint answer: {exc}") from None
        if line is None or (isinstance(answer, dict) and answer.get("ok") is False
                            and answer.get("busy") is True):
            if time.monotonic() + delay >= deadline:
                why = "closed without an answer" if answer is None else answer.get("error")
                raise Unreachable(errno.ETIMEDOUT, f"{path} stayed busy for {timeout:g} s: "
                                                   f"{str(why)[:200]}")
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 0.5)
            continue
        return _check_answer(answer, int(job_id), int(nodes), (lo, hi))
