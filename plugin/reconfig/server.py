"""The agent's reconfiguration endpoint: a Unix stream socket answering malleable jobs.

Each connection carries one request (:mod:`malleo.plugin.malleable.protocol`). The caller is
authenticated by the kernel (``SO_PEERCRED``: the uid of the connecting process) and must be
root or the uid Slurm lists as the job's owner. A request is answered only for a job that is
running, declares malleability in its comment (:mod:`malleo.plugin.malleable.spec`) and runs
on the node count the request states; anything else gets ``{"ok": false, "error": ...}`` and
changes nothing. The endpoint itself never resizes a job: the job's launcher does, as the
job's owner, after an expand or shrink answer.

The socket file is made world-writable (mode 0666) so every user's jobs can connect;
authentication is the peer uid, not the file mode.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from malleo.plugin.backends import parse_scontrol
from malleo.plugin.backends.errors import InvalidJobId, SlurmError
from malleo.plugin.malleable import protocol, spec
from malleo.plugin.reconfig.decide import Decision, decide as default_decide
from malleo.plugin.reconfig.request import BadRequest, parse

log = logging.getLogger("malleo.reconfig")


@dataclass(frozen=True)
class JobView:
    """What the endpoint last learnt about a job.

    Attributes:
        nodes: node count the job reported (and Slurm confirmed) at its last check-in.
        action: the answer given then ("none", "expand", "shrink").
        target: node count the answer asked for.
        time: epoch seconds of that check-in.
    """

    nodes: int
    action: str
    target: int
    time: float


class Refusal(Exception):
    """A request the endpoint refuses; the message is sent to the caller."""


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (kernel-provided)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


class Endpoint:
    """Serve reconfiguration requests on ``path`` in a background thread.

    Args:
        path: socket file to create (an existing socket file there is replaced).
        backend: a :class:`~malleo.plugin.backends.SlurmBackend` (the CLI backend: job
            comments are read with ``scontrol show job``).
        policy: the site's policy (queue order for the decision), or a function returning
            the current one (the agent's, which SIGHUP may reload); None: the default.
        decide: ``decide(backend, job_id, bounds, nodes, policy) -> Decision``; tests pass
            their own.
        timeout: seconds a client may take to send its request.
    """

    def __init__(self, path: str | os.PathLike, backend, *, policy=None, decide=None,
                 timeout: float = 5.0):
        self.path = Path(path)
        self.backend = backend
        self.policy = policy
        self.decide = decide or default_decide
        self.timeout = timeout
        self.view: dict[int, JobView] = {}
        self.refusals = 0
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> "Endpoint":
        """Bind, listen and serve in a daemon thread (the socket's directory is created).

        Raises:
            OSError: the socket cannot be created there.
        """
        self.path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if self.path.is_socket():
            self.path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o666)
        sock.listen(16)
        sock.settimeout(0.5)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="malleo-reconfig", daemon=True)
        self._thread.start()
        log.info("reconfig endpoint listening on %s", self.path)
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket file."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        if self.path.is_socket():
            self.path.unlink()

    def __enter__(self) -> "Endpoint":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(self.timeout)
            try:
                uid = peer_uid(conn)
                line = protocol.read_line(conn, protocol.MAX_REQUEST)
                answer = self.answer(uid, line)
            except (ValueError, OSError) as exc:
                answer = self._refuse(f"malformed request: {exc}")
            try:
                conn.sendall(protocol.encode(answer))
            except OSError:
                pass

    def _refuse(self, message: str) -> dict:
        self.refusals += 1
        log.warning("reconfig refused: %s", message)
        return {"ok": False, "error": message}

    def answer(self, uid: int, line: bytes) -> dict:
        """The answer to one request line from a caller with uid ``uid``."""
        try:
            request = parse(line)
        except BadRequest as exc:
            return self._refuse(f"malformed request: {exc}")
        with self._lock:         # one decision at a time: two jobs never get the same nodes
            try:
                decision = self._decide(uid, request)
            except Refusal as exc:
                return self._refuse(f"job {request.job_id}: {exc}")
            self.view[request.job_id] = JobView(request.nodes, decision.action,
                                                decision.nodes, time.time())
        log.info("reconfig job %d on %d nodes: %s to %d (%s)", request.job_id, request.nodes,
                 decision.action, decision.nodes, decision.reason)
        return {"ok": True, "job_id": request.job_id, "action": decision.action,
                "nodes": decision.nodes}

    def _record(self, job_id: int) -> dict[str, str]:
        try:
            out = self.backend._run(["scontrol", "show", "job", "-o", str(job_id)])
        except InvalidJobId:
            raise Refusal("no such job") from None
        except SlurmError as exc:
            raise Refusal(f"Slurm could not be asked about it: {exc}") from None
        recs = parse_scontrol.records(out)
        if not recs:
            raise Refusal("no such job")
        return recs[0]

    def _decide(self, uid: int, request) -> Decision:
        rec = self._record(request.job_id)
        job = parse_scontrol.job(rec)
        if uid != 0 and uid != job.user_id:
            raise Refusal(f"uid {uid} may not ask about a job of uid {job.user_id} "
                          f"(only its owner or root)")
        if not job.is_running or job.state not in ("RUNNING",):
            raise Refusal(f"not running (state {job.state})")
        try:
            bounds = spec.parse(rec.get("Comment"))
        except spec.SpecError as exc:
            raise Refusal(str(exc)) from None
        if bounds is None:
            raise Refusal("not malleable (no --comment=malleo:min=..,max=..,period=..)")
        if request.nodes != job.num_nodes:
            raise Refusal(f"reports {request.nodes} nodes but Slurm lists {job.num_nodes}")
        try:
            policy = self.policy() if callable(self.policy) else self.policy
            return self.decide(self.backend, request.job_id, bounds, request.nodes, policy)
        except (SlurmError, LookupError) as exc:
            raise Refusal(f"no decision: {exc}") from None
