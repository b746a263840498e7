"""The agent's reconfiguration endpoint: a Unix stream socket answering malleable jobs.

Each connection carries one request (:mod:`malleo.plugin.malleable.protocol`). The caller is
authenticated by the kernel (``SO_PEERCRED``: the uid of the connecting process) and must be
root or the uid Slurm lists as the job's owner in its structured record
(:meth:`~malleo.plugin.backends.cli.CliBackend.job_json`; never the free text of
``scontrol show job -o``, where a comment can imitate ``UserId=``). A request is answered only
for a job that is running, declares malleability in its comment
(:mod:`malleo.plugin.malleable.spec`) and runs on the node count the request states; anything
else gets ``{"ok": false, "error": ...}``, is logged, and changes nothing. The endpoint itself
never resizes a job: the job's launcher does, as the job's owner, after an expand or shrink
answer.

Limits (docs/security.md): one I/O thread runs a selector loop that accepts and reads; a
request must be complete within ``timeout`` seconds of its connection being accepted (one
deadline per request, not per read); complete requests are answered by a pool of
``workers`` threads. At most ``max_connections`` connections are held at once (beyond that
the listener is not polled and new connections wait in the kernel's backlog), at most
``max_per_uid`` per caller uid (beyond that a connection gets a ``busy`` refusal at once, which
the client retries). An ``accept`` that fails (``EMFILE``, ``ENFILE``, any OSError) is logged
and accepting pauses with exponential backoff (50 ms to 2 s); the endpoint keeps serving.

The socket file is created by :mod:`malleo.plugin.reconfig.socket_dir` (checked directory,
no link followed) with mode 0666 so every user's jobs can connect; authentication is the
peer uid, not the file mode.
"""
from __future__ import annotations

import logging
import os
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from malleo.plugin.backends import parse_json
from malleo.plugin.backends.errors import InvalidJobId, SlurmError
from malleo.plugin.malleable import protocol, spec
from malleo.plugin.reconfig import socket_dir
from malleo.plugin.reconfig.decide import Decision, decide as default_decide
from malleo.plugin.reconfig.request import BadRequest, parse

log = logging.getLogger("malleo.reconfig")

BACKOFF_MIN = 0.05
BACKOFF_MAX = 2.0
"""Seconds accepting pauses after a failed accept: doubled per failure, reset on success."""


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
    return protocol.peer_credentials(conn)[1]


@dataclass(eq=False)
class _Conn:
    """A connection the I/O loop holds while its request arrives."""

    sock: socket.socket
    uid: int
    deadline: float                     # time.monotonic() by which the request must be complete
    buf: bytearray = field(default_factory=bytearray)


class Endpoint:
    """Serve reconfiguration requests on ``path`` in background threads.

    Args:
        path: socket file to create (a stale socket of this user there is replaced; anything
            else there is refused). Its directory is created (0755) if missing.
        backend: a :class:`~malleo.plugin.backends.cli.CliBackend` (or anything with its
            ``job_json``), and what ``decide`` reads.
        policy: the site's policy (queue order for the decision), or a function returning
            the current one (the agent's, which SIGHUP may reload); None: the default.
        decide: ``decide(backend, job_id, bounds, nodes, policy) -> Decision``; tests pass
            their own.
        timeout: seconds a client has, from its connection being accepted, to send its whole
            request.
        max_connections: connections held at once (reading, queued or being answered).
        max_per_uid: of which at most this many from one caller uid.
        workers: threads answering complete requests (decisions themselves run one at a time).
        backlog: the listen backlog (the kernel caps it at ``net.core.somaxconn``).
    """

    def __init__(self, path: str | os.PathLike, backend, *, policy=None, decide=None,
                 timeout: float = 5.0, max_connections: int = 128, max_per_uid: int = 32,
                 workers: int = 4, backlog: int = socket.SOMAXCONN):
        if max_connections < 1 or max_per_uid < 1 or workers < 1 or timeout <= 0:
            raise ValueError("max_connections, max_per_uid and workers must be >= 1, "
                             "timeout > 0")
        self.path = Path(path)
        self.backend = backend
        self.policy = policy
        self.decide = decide or default_decide
        self.timeout = timeout
        self.max_connections = max_connections
        self.max_per_uid = max_per_uid
        self.workers = workers
        self.backlog = backlog
        self.view: dict[int, JobView] = {}
        self.refusals = 0
        self.accept_errors = 0
        self._lock = threading.Lock()         # one decision at a time
        self._count_lock = threading.Lock()   # the counters below
        self._held = 0
        self._per_uid: dict[int, int] = {}
        self._sock: socket.socket | None = None
        self._dir_fd: int | None = None
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._stopping = threading.Event()
        self._busy_logged = 0.0
        self._busy_count = 0

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> "Endpoint":
        """Create the socket safely (:mod:`~malleo.plugin.reconfig.socket_dir`), listen and
        serve in background threads.

        Raises:
            OSError: the socket cannot be created there (``UnsafeSocketPath`` when a
                directory on the way, or a file at the socket's name, is not trusted).
        """
        dir_fd = socket_dir.open_dir(self.path.parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket_dir.bind(sock, dir_fd, self.path.name)
            sock.listen(self.backlog)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            os.close(dir_fd)
            raise
        self._sock, self._dir_fd = sock, dir_fd
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping.clear()
        self._pool = ThreadPoolExecutor(max_workers=self.workers,
                                        thread_name_prefix="malleo-reconfig-answer")
        self._thread = threading.Thread(target=self._serve, name="malleo-reconfig", daemon=True)
        self._thread.start()
        log.info("reconfig endpoint listening on %s (at most %d connections, %d per uid, "
                 "%g s per request)", self.path, self.max_connections, self.max_per_uid,
                 self.timeout)
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and remove the socket file."""
        self._stopping.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._sock is not None:
            self._sock.close()
        if self._dir_fd is not None:
            socket_dir.remove(self._dir_fd, self.path.name)
            os.close(self._dir_fd)
        for s in (self._wake_r, self._wake_w):
            if s is not None:
                s.close()
        self._sock = self._dir_fd = self._thread = self._pool = None
        self._wake_r = self._wake_w = None

    @property
    def is_serving(self) -> bool:
        """True while the I/O thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "Endpoint":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- the I/O loop -------------------------------------------------------------------------

    def _wake(self) -> None:
        try:
            if self._wake_w is not None:
                self._wake_w.send(b"x")
        except OSError:
            pass                               # full (a wake-up is pending anyway) or closed

    def _release(self, uid: int) -> None:
        with self._count_lock:
            self._held -= 1
            left = self._per_uid[uid] - 1
            if left:
                self._per_uid[uid] = left
            else:
                del self._per_uid[uid]
        self._wake()

    def _serve(self) -> None:
        """Run the I/O loop until stopped; an unexpected error in it (a bug) is logged, its
        connections refused, and the loop starts again."""
        while not self._stopping.is_set():
            sel = selectors.DefaultSelector()
            conns: dict[int, _Conn] = {}
            try:
                self._loop(sel, conns)
            except Exception:                  # noqa: BLE001 (must not stop silently)
                log.exception("reconfig endpoint I/O loop failed; restarting it")
                time.sleep(BACKOFF_MIN)
            for conn in list(conns.values()):
                self._drop(sel, conns, conn, "endpoint stopping" if self._stopping.is_set()
                           else "endpoint restarting after an internal error")
            sel.close()

    def _loop(self, sel, conns: dict[int, _Conn]) -> None:
        """Accept, read and dispatch until stopped."""
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        listening = False
        paused_until = 0.0
        backoff = BACKOFF_MIN
        while not self._stopping.is_set():
            now = time.monotonic()
            want = now >= paused_until and self._held < self.max_connections
            if want != listening:
                if want:
                    sel.register(self._sock, selectors.EVENT_READ, "listen")
                else:
                    sel.unregister(self._sock)
                listening = want
            wait = 0.5
            if conns:
                wait = min(wait, min(c.deadline for c in conns.values()) - now)
            if paused_until > now:
                wait = min(wait, paused_until - now)
            try:
                events = sel.select(max(wait, 0.0))
            except InterruptedError:
                continue
            for key, _ in events:
                if key.data == "wake":
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif key.data == "listen":
                    failed = self._accept_some(sel, conns)
                    if failed is not None:
                        self.accept_errors += 1
                        log.error("reconfig accept failed (%s); pausing accepts for %.2f s, "
                                  "%d connections held", failed, backoff, self._held)
                        paused_until = time.monotonic() + backoff
                        backoff = min(backoff * 2, BACKOFF_MAX)
                    else:
                        backoff = BACKOFF_MIN
                elif conns.get(key.fd) is key.data:   # not dropped earlier in this round
                    self._read(sel, conns, key.data)
            now = time.monotonic()
            for conn in [c for c in conns.values() if c.deadline <= now]:
                self._drop(sel, conns, conn, f"no complete request within "
                                             f"{self.timeout:g} s ({len(conn.buf)} bytes)")

    def _accept_some(self, sel, conns: dict[int, _Conn]) -> OSError | None:
        """Accept what is waiting (at most 64 per round); the error that stopped it, if any."""
        for _ in range(64):
            if self._held >= self.max_connections:
                return None
            try:
                sock, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:             # EMFILE, ENFILE, ENOBUFS, ENOMEM, ...
                return exc
            try:
                sock.setblocking(False)
                uid = peer_uid(sock)
            except OSError as exc:
                sock.close()
                log.warning("reconfig: dropped a connection whose peer cannot be read: %s", exc)
                continue
            with self._count_lock:
                over = self._per_uid.get(uid, 0) >= self.max_per_uid
                if not over:
                    self._held += 1
                    self._per_uid[uid] = self._per_uid.get(uid, 0) + 1
            if over:
                self._busy(sock, uid)
                continue
            conn = _Conn(sock, uid, time.monotonic() + self.timeout)
            conns[sock.fileno()] = conn
            sel.register(sock, selectors.EVENT_READ, conn)
        return None

    def _busy(self, sock: socket.socket, uid: int) -> None:
        """Refuse a connection over its uid's share with a retryable answer; log a summary
        at most once a second."""
        message = (f"busy: uid {uid} already has {self.max_per_uid} requests in progress; "
                   f"try again")
        try:
            sock.send(protocol.encode({"ok": False, "error": message, "busy": True}))
        except OSError:
            pass
        sock.close()
        with self._count_lock:
            self.refusals += 1
            self._busy_count += 1
            now = time.monotonic()
            if now - self._busy_logged < 1.0:
                return
            count, self._busy_count, self._busy_logged = self._busy_count, 0, now
        log.warning("reconfig refused %d connection(s) as busy (last: uid %d over its %d)",
                    count, uid, self.max_per_uid)

    def _read(self, sel, conns: dict[int, _Conn], conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(protocol.MAX_REQUEST + 1 - len(conn.buf))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._drop(sel, conns, conn, f"connection failed: {exc}")
            return
        if not chunk:
            self._drop(sel, conns, conn, "malformed request: connection closed before a "
                                         f"complete line ({len(conn.buf)} bytes)")
            return
        conn.buf += chunk
        end = conn.buf.find(b"\n")
        if end < 0 and len(conn.buf) <= protocol.MAX_REQUEST:
            return
        if end < 0 or end + 1 > protocol.MAX_REQUEST:
            self._drop(sel, conns, conn, f"malformed request: line longer than "
                                         f"{protocol.MAX_REQUEST} bytes")
            return
        sel.unregister(conn.sock)
        del conns[conn.sock.fileno()]
        line = bytes(conn.buf[:end])
        try:
            self._pool.submit(self._answer_and_close, conn, line)
        except RuntimeError:                   # the pool is shutting down
            self._finish(conn, self._refuse(conn.uid, "endpoint stopping"))

    def _drop(self, sel, conns: dict[int, _Conn], conn: _Conn, why: str) -> None:
        """Refuse a connection from the I/O thread (best-effort, non-blocking send)."""
        sel.unregister(conn.sock)
        del conns[conn.sock.fileno()]
        self._finish(conn, self._refuse(conn.uid, why))

    def _finish(self, conn: _Conn, answer: dict) -> None:
        try:
            conn.sock.send(protocol.encode(answer))   # < 1 KiB: fits a fresh socket's buffer
        except OSError:
            pass
        finally:
            conn.sock.close()
            self._release(conn.uid)

    def _answer_and_close(self, conn: _Conn, line: bytes) -> None:
        self._finish(conn, self.answer(conn.uid, line))

    # --- answers ------------------------------------------------------------------------------

    def _refuse(self, uid: int, message: str) -> dict:
        with self._count_lock:
            self.refusals += 1
        log.warning("reconfig refused uid %d: %s", uid, message)
        return {"ok": False, "error": message}

    def answer(self, uid: int, line: bytes) -> dict:
        """The answer to one request line from a caller with uid ``uid``; never raises (an
        unexpected error is logged with its traceback and refused)."""
        try:
            return self._answer(uid, line)
        except Exception as exc:               # noqa: BLE001 (every request gets an answer)
            log.exception("reconfig: internal error answering uid %d", uid)
            return self._refuse(uid, f"internal error in the endpoint ({type(exc).__name__}; "
                                     f"logged)")

    def _answer(self, uid: int, line: bytes) -> dict:
        try:
            request = parse(line)
        except BadRequest as exc:
            return self._refuse(uid, f"malformed request: {exc}")
        try:
            bounds, job_nodes = self._check(uid, request)
        except Refusal as exc:
            return self._refuse(uid, f"job {request.job_id}: {exc}")
        with self._lock:         # one decision at a time: two jobs never get the same nodes
            try:
                decision = self._decide(request, bounds)
            except Refusal as exc:
                return self._refuse(uid, f"job {request.job_id}: {exc}")
            self.view[request.job_id] = JobView(request.nodes, decision.action,
                                                decision.nodes, time.time())
        log.info("reconfig job %d on %d nodes: %s to %d (%s)", request.job_id, request.nodes,
                 decision.action, decision.nodes, decision.reason)
        return {"ok": True, "job_id": request.job_id, "action": decision.action,
                "nodes": decision.nodes}

    def _record(self, job_id: int) -> dict:
        try:
            rec = self.backend.job_json(job_id)
        except InvalidJobId:
            raise Refusal("no such job") from None
        except SlurmError as exc:
            raise Refusal(f"Slurm could not be asked about it: {exc}") from None
        if not isinstance(rec, dict):
            raise Refusal(f"Slurm's record of it is not an object ({type(rec).__name__})")
        return rec

    def _check(self, uid: int, request):
        """The job's declared bounds once the caller may ask and the job may be resized."""
        rec = self._record(request.job_id)
        try:
            job = parse_json.jobs_from_squeue({"jobs": [rec]})[0]
        except Exception as exc:               # noqa: BLE001 (any unreadable record)
            raise Refusal(f"Slurm's record of it cannot be read: {type(exc).__name__}: "
                          f"{exc}") from None
        if job.job_id != request.job_id:
            raise Refusal(f"Slurm's record is of job {job.job_id}")
        if type(job.user_id) is not int:
            raise Refusal("Slurm's record names no owner uid")
        if uid != 0 and uid != job.user_id:
            raise Refusal(f"uid {uid} may not ask about a job of uid {job.user_id} "
                          f"(only its owner or root)")
        if not job.is_running or job.state != "RUNNING":
            raise Refusal(f"not running (state {job.state})")
        comment = rec.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise Refusal(f"Slurm's record has a comment of type {type(comment).__name__}")
        try:
            bounds = spec.parse(comment)
        except spec.SpecError as exc:
            raise Refusal(str(exc)) from None
        if bounds is None:
            raise Refusal("not malleable (no --comment=malleo:min=..,max=..,period=..)")
        if request.nodes != job.num_nodes:
            raise Refusal(f"reports {request.nodes} nodes but Slurm lists {job.num_nodes}")
        return bounds, job.num_nodes

    def _decide(self, request, bounds: spec.DeclaredMalleability) -> Decision:
        try:
            policy = self.policy() if callable(self.policy) else self.policy
            decision = self.decide(self.backend, request.job_id, bounds, request.nodes, policy)
        except (SlurmError, LookupError) as exc:
            raise Refusal(f"no decision: {exc}") from None
        except Exception as exc:               # noqa: BLE001 (a bug in decide: logged, refused)
            log.exception("reconfig: decide failed for job %d", request.job_id)
            raise Refusal(f"no decision: {type(exc).__name__} in the decision (logged)") from None
        if (not isinstance(decision, Decision) or decision.action not in protocol.ACTIONS
                or type(decision.nodes) is not int):
            raise Refusal(f"no decision: the decision {decision!r} is not one")
        return decision
