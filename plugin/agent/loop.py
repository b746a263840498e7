"""The agent's cycle and its service loop.

A cycle: take the queue fingerprint, read the state, convert it, run ``plan``, compute the
priority writes; then take the fingerprint again and apply only if the queue did not change
meanwhile (else re-read and re-plan, up to :data:`STALE_RETRIES` times).  Writes on jobs
that vanished or started in the last instant are skipped, never fatal.

The loop runs a cycle every ``period`` seconds and as soon as the queue fingerprint changes
(polled every ``poll`` seconds between cycles).  Slurm errors are logged and retried with
exponential backoff; nothing but a signal ends the loop.  SIGTERM/SIGINT finish the current
cycle and exit 0; SIGHUP reloads the policy file (an invalid one is logged with its
``FILE:LINE`` error and the old policy kept).

The cycles run in a worker thread; the main thread only waits for it and for a stop.  Python
runs signal handlers in the main thread, between bytecodes: a cycle blocked in a Slurm call
(libslurm's RPC to a slurmctld that stopped answering, a ``squeue`` that hangs) would hold
SIGTERM for as long as the call lasts.  So a stop gives the cycle in flight ``stop_grace``
seconds and then leaves without it (``agent_stop`` says ``abandoned``: the part it was in):
the cycle writes nothing more, the backend's Slurm commands in flight are killed
(:meth:`SlurmBackend.abandon`), the status file is marked stopped.  What such a cycle left
half done is safe: each write is one job's priority or node count, which Slurm applies whole
or not at all, and every job stays pending under Slurm's own scheduler, as at any stop.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


import numpy as np

from malleo.errors import PolicyError
from malleo.plugin.agent import shadow
from malleo.plugin.agent.apply import ApplyReport, apply_priorities, assign_priorities
from malleo.plugin.agent.live_plan import LivePlan, LivePlanner
from malleo.plugin.agent.logs import LOGGER_NAME, event
from malleo.plugin.agent.metrics_http import Metrics
from malleo.plugin.agent.state import (PlanInputs, Snapshot, queue_fingerprint,
                                      read_with_fingerprint)
from malleo.plugin.backends import SlurmBackend
from malleo.plugin.backends.columns import JobTable
from malleo.plugin.backends.errors import (SlurmConfigError, SlurmError, SlurmUnavailable,
                                           config_refusal)
from malleo.policy import Policy

STALE_RETRIES = 3
"""Re-reads per cycle when the queue changes between the read and the apply."""
BACKOFF_INITIAL = 1.0
"""First wait (seconds) after a failed cycle; doubles up to ``backoff_max``."""
ONCE_ATTEMPTS = 3
"""Attempts of a ``--once`` run before it gives up (exit 1)."""
SUMMARY_EVERY = 300.0
"""Seconds between INFO ``summary`` lines (idle cycles log at DEBUG only)."""
STOP_GRACE = 5.0
"""Seconds a stopping agent waits for the cycle in flight before it leaves without it."""
STOP_CHECK = 0.2
"""Longest wait (seconds) of the main thread between two looks at the stop request."""
STALL_AFTER = 30.0
"""Seconds the cycle may spend in one part (read, plan, apply, poll) before the main thread
logs ``cycle_stalled`` (once per part; ``cycle_unstalled`` when it moves on)."""


class _Abandoned(Exception):
    """Raised in the worker thread when the agent stopped without waiting for its cycle."""


def load_agent_policy(path: str | Path) -> Policy:
    """Read a TOML policy file for live use.

    Raises:
        PolicyError: unreadable or invalid (``FILE:LINE: key: ...``), or ``estimate =
            "actual"``, which needs runtimes a live cluster does not know.
    """
    from malleo.policy_file import load_policy

    policy = load_policy(path)
    if policy.estimate == "actual":
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        line = next((k for k, text in enumerate(lines, 1)
                     if text.strip().startswith("estimate")), 0)
        where = f"{path}:{line}" if line else str(path)
        raise PolicyError(f"{where}: estimate: 'actual' needs the jobs' real runtimes, "
                          f"unknown on a live cluster; use 'request' or 'predict'")
    return policy


@dataclass
class CycleResult:
    """What one cycle saw and did.

    Attributes:
        inputs: the converted state (None when no partition node was usable).
        decisions: ``plan``'s decisions (None with ``inputs``).
        order: job ids in wanted priority order.
        started_now: ids ``plan`` starts now.
        writes: id -> priority the cycle wanted written.
        report: what was applied (None in shadow mode or when nothing was to write).
        fingerprint: the queue fingerprint the decisions were based on.
        stale_retries: re-reads because the queue changed before applying.
        shadow: the comparison with the previous plan (shadow mode only).
        seconds: wall time of the cycle.
        live: the pass (:class:`~malleo.plugin.agent.live_plan.LivePlan`).
        sized: id -> node count written for range jobs started now (``start_procs``).
        parts: wall seconds of the cycle's parts (its last attempt): ``read`` (the ping
            and Slurm's state, :meth:`SlurmBackend.cycle_read`; the backend's own split in
            ``read.*``), ``convert``, ``plan``, ``apply`` (the priorities wanted, the change
            check and the writes); ``seconds`` is their sum and the bookkeeping around them.
    """

    inputs: PlanInputs | None
    decisions: object | None
    order: list[int]
    started_now: list[int]
    writes: dict[int, int]
    report: ApplyReport | None
    fingerprint: tuple
    stale_retries: int = 0
    shadow: shadow.ShadowReport | None = None
    seconds: float = 0.0
    live: LivePlan | None = None
    sized: dict[int, int] = field(default_factory=dict)
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def is_idle(self) -> bool:
        """True when the cycle changed nothing and planned no start (logged at DEBUG)."""
        report = self.report
        return (not self.writes and not self.started_now and not self.stale_retries
                and not self.sized and (report is None or not report.skipped)
                and (self.shadow is None or not (self.shadow.started or self.shadow.late)))


@dataclass
class _Shadow:
    """Shadow mode's memory: the previous plan's order and starts."""

    last_order: list = field(default_factory=list)
    last_starts: set = field(default_factory=set)


class Agent:
    """The malleo policy agent for one Slurm partition.

    Args:
        backend: the Slurm backend (``select_backend()``).
        policy_path: the TOML policy file (read now; SIGHUP reads it again).
        period: seconds between full cycles when the queue does not change.
        poll: seconds between queue-fingerprint polls (0: no polling, period only).
        dry_run: shadow mode: plan and log, apply nothing, compare with what Slurm does.
        unit: "nodes" or "cpus" (see :mod:`malleo.plugin.agent.state`).
        partition: partition to manage; None: the default partition.
        metrics: where to count (a fresh :class:`Metrics` if None).
        backoff_max: longest wait (seconds) between retries when Slurm fails.
        state_dir: directory of the status file ``agent.json`` (written atomically after
            every cycle, read by ``malleo slurm status`` and ``diag``); None: none written.
        stop_grace: seconds a stop (SIGTERM, SIGINT, :meth:`request_stop`) waits for the
            cycle in flight before :meth:`run` returns without it (module docstring).

    Raises:
        PolicyError: the policy file is invalid, or ``period``/``stop_grace`` out of range.
    """

    def __init__(self, backend: SlurmBackend, policy_path: str | Path, *, period: float = 5.0,
                 poll: float = 0.5, dry_run: bool = False, unit: str = "nodes",
                 partition: str | None = None, metrics: Metrics | None = None,
                 backoff_max: float = 30.0, state_dir: str | Path | None = None,
                 stop_grace: float = STOP_GRACE):
        if period <= 0:
            raise PolicyError(f"period: must be > 0 seconds, got {period}")
        if not stop_grace >= 0:
            raise PolicyError(f"stop_grace: must be >= 0 seconds, got {stop_grace}")
        self.backend = backend
        self.policy_path = str(policy_path)
        self.policy = load_agent_policy(policy_path)
        self.period = float(period)
        self.poll = max(float(poll), 0.0)
        self.dry_run = bool(dry_run)
        self.unit = unit
        self.partition = partition
        self.metrics = metrics or Metrics()
        self.backoff_max = float(backoff_max)
        self.log = logging.getLogger(LOGGER_NAME)
        self.planner = LivePlanner(self.policy, unit=unit, partition=partition)
        self._shadow = _Shadow()
        self.started_at = time.time()
        self.last_cycle: CycleResult | None = None
        self.summary_every = SUMMARY_EVERY
        self.state_dir = None if state_dir is None else Path(state_dir)
        self._state_warned = False
        self._publisher: threading.Thread | None = None
        self._publisher_stop = False
        self._publish_due = threading.Event()
        self._publish_lock = threading.Lock()
        self._summary = {"cycles": 0, "idle": 0, "written": 0, "errors": 0,
                         "since": time.monotonic()}
        self.stop_grace = float(stop_grace)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._reload = False
        self._left = threading.Event()      # run() left its cycle behind: the cycle is moot
        self._part = None                   # (part, since) the worker is in; None: waiting
        self.stall_after = STALL_AFTER
        self._stalled = None                # the _part reported as stalled, until it ends
        self.metrics.set("malleo_agent_dry_run", 1 if dry_run else 0)
        self.metrics.set("malleo_agent_cycle_stalled", 0)
        self._set_info()

    def _set_info(self) -> None:
        """The ``malleo_agent_info`` metric: version, policy in force, backend, mode."""
        import malleo

        self.metrics.set_info("malleo_agent_info", version=malleo.__version__,
                              policy=self.policy.describe(), config=self.policy_path,
                              backend=getattr(self.backend, "name", "") or "?",
                              mode="shadow" if self.dry_run else "priority",
                              unit=self.unit, partition=self.partition or "")

    # --- one cycle ------------------------------------------------------------------------

    def cycle(self) -> CycleResult:
        """Read, plan, and apply (or, in shadow mode, log and compare) once.

        Raises:
            SlurmError: Slurm could not be read, or went away while applying.
        """
        t0 = time.monotonic()
        sized: dict[int, int] = {}
        for attempt in range(STALE_RETRIES + 1):
            # The ping goes with the read (the CLI backend runs it beside the reads and
            # waits for it first): an unreachable controller fails at once, where the
            # reads would retry for seconds each.
            t_read = self._enter("read")
            fingerprint, snapshot = read_with_fingerprint(self.backend, ping=attempt == 0)
            parts = {"read": time.monotonic() - t_read}
            self._enter("plan")
            parts.update({f"read.{k}": v for k, v in
                          (getattr(self.backend, "last_read", None) or {}).items()
                          if k != "read"})
            try:
                live = self.planner.plan(snapshot)
            except ValueError as exc:
                raise SlurmError(str(exc)) from None
            parts.update(live.seconds)
            inputs = live.inputs
            if live.decisions is None:
                event(self.log, logging.WARNING, "no_usable_nodes", partition=inputs.partition)
                return CycleResult(inputs, None, [], [], {}, None, fingerprint,
                                   seconds=time.monotonic() - t0, live=live, parts=parts)
            order, started_now = live.order, live.started_now
            t_apply = self._enter("apply")
            current = dict(zip(inputs.pending_ids.tolist(), inputs.pending_priority.tolist()))
            writes = assign_priorities(order, current)
            report = None
            if (writes or live.start_sizes()) and not self.dry_run:
                if queue_fingerprint(self.backend) != fingerprint:
                    self.metrics.inc("malleo_agent_stale_plans_total")
                    event(self.log, logging.INFO, "stale_plan", attempt=attempt + 1,
                          writes=len(writes))
                    continue
                sized = self._apply_sizes(live)
                report = apply_priorities(self.backend, writes, order,
                                          is_stopped=self._left.is_set)
                if self._left.is_set():
                    raise _Abandoned()
            parts["apply"] = time.monotonic() - t_apply
            break
        else:
            event(self.log, logging.WARNING, "queue_keeps_changing",
                  retries=STALE_RETRIES, note="nothing applied this cycle")
            report = ApplyReport()
            writes = {}
        self._enter(None)
        shadow_report = self._compare_with_previous(snapshot) if self.dry_run else None
        self.planner.commit(live)
        self._shadow.last_order = order
        self._shadow.last_starts = set(started_now)
        result = CycleResult(inputs, live.decisions, order, started_now, writes, report,
                             fingerprint, stale_retries=attempt, shadow=shadow_report,
                             seconds=time.monotonic() - t0, live=live, sized=sized,
                             parts=parts)
        self._account(result)
        return result

    def _apply_sizes(self, live: LivePlan) -> dict[int, int]:
        """Act on ``Decisions.start_procs``: a range job (``-N a-b``) the plan starts now
        at n nodes gets ``NumNodes=n-n`` (before its priority rises).  A job that changed
        meanwhile is skipped, as priority writes are."""
        from malleo.plugin.backends.errors import SlurmCommandError

        done = {}
        for job_id, size in live.start_sizes().items():
            if self._left.is_set():
                raise _Abandoned()
            try:
                self.backend.update_job(job_id, num_nodes=size)
            except SlurmCommandError as exc:
                event(self.log, logging.INFO, "size_skipped", job=job_id, nodes=size,
                      error=str(exc))
                continue
            done[job_id] = size
        if done:
            self.metrics.inc("malleo_agent_sizes_applied_total", len(done))
        return done

    def _enter(self, part: str | None) -> float:
        """Record the part of the cycle the worker enters (None: none); return the time.

        Raises:
            _Abandoned: the agent stopped without waiting for this cycle: it must not go on.
        """
        if self._left.is_set():
            raise _Abandoned()
        now = time.monotonic()
        self._part = None if part is None else (part, now)
        return now

    def _compare_with_previous(self, snapshot: Snapshot) -> shadow.ShadowReport | None:
        memory = self._shadow
        if not memory.last_order:
            return None
        wanted = set(memory.last_order)
        starts, pending = {}, set()
        jobs = snapshot.jobs
        if isinstance(jobs, JobTable):              # the compact read: only the wanted rows
            jobs = [jobs.job(r) for r in np.flatnonzero(np.isin(jobs.job_id, list(wanted))).tolist()]
        for job in jobs:
            if job.job_id not in wanted:
                continue
            if job.is_pending:
                pending.add(job.job_id)
            elif job.start_time:
                starts[job.job_id] = int(job.start_time)
        report = shadow.compare(memory.last_order, memory.last_starts, starts, pending)
        if report.started or report.late:
            self.metrics.inc("malleo_agent_shadow_started_total", len(report.started))
            self.metrics.inc("malleo_agent_shadow_inversions_total", len(report.inversions))
            event(self.log, logging.INFO, "shadow", started=report.started,
                  inversions=len(report.inversions),
                  inverted_pairs=[list(p) for p in report.inversions[:20]],
                  started_early=report.early, planned_not_started=report.late)
        return report

    def _account(self, result: CycleResult) -> None:
        m = self.metrics
        inputs = result.inputs
        m.inc("malleo_agent_cycles_total")
        m.observe_cycle(result.seconds)
        m.set("malleo_agent_last_success_timestamp_seconds", time.time())
        m.set("malleo_agent_queue_pending", len(inputs.pending_ids))
        m.set("malleo_agent_queue_skipped", len(inputs.skipped))
        m.set("malleo_agent_running_jobs", len(inputs.running_ids))
        m.set("malleo_agent_planned_starts", len(result.started_now))
        m.set("malleo_agent_machine_units", inputs.total)
        m.set("malleo_agent_busy_units", inputs.busy)
        report = result.report
        if report is not None:
            m.inc("malleo_agent_decisions_applied_total", len(report.applied))
            for reason, count in (("vanished", len(report.vanished)),
                                  ("not_pending", len(report.not_pending)),
                                  ("refused", len(report.failed))):
                if count:
                    m.inc("malleo_agent_decisions_skipped_total", count, reason=reason)
        fields = dict(now=inputs.now, pending=len(inputs.pending_ids),
                      running=len(inputs.running_ids), skipped=len(inputs.skipped),
                      busy=inputs.busy, total=inputs.total, start_now=result.started_now,
                      seconds=round(result.seconds, 4), stale_retries=result.stale_retries,
                      parts={k: round(v, 4) for k, v in result.parts.items()})
        if result.sized:
            fields["sized"] = {str(k): v for k, v in result.sized.items()}
        idle = result.is_idle
        if idle:
            m.inc("malleo_agent_idle_cycles_total")
        level = logging.DEBUG if idle else logging.INFO
        if self.dry_run:
            fields["would_write"] = {str(k): v for k, v in list(result.writes.items())[:50]}
            fields["would_write_count"] = len(result.writes)
            event(self.log, level, "cycle_dry_run", **fields)
        else:
            fields["written"] = len(report.applied) if report else 0
            if report is not None and report.skipped:
                fields["skipped_writes"] = {"vanished": report.vanished,
                                            "not_pending": report.not_pending,
                                            "refused": report.failed}
            event(self.log, level, "cycle", **fields)
        summary = self._summary
        summary["cycles"] += 1
        summary["idle"] += int(idle)
        summary["written"] += fields.get("written", 0)

    def _maybe_summarise(self, force: bool = False) -> None:
        """Every :attr:`summary_every` seconds (and at stop), one INFO ``summary`` line of
        the cycles since the last one, so an idle agent still says it is alive."""
        summary = self._summary
        elapsed = time.monotonic() - summary["since"]
        if not force and elapsed < self.summary_every:
            return
        if summary["cycles"] or summary["errors"] or force:
            last = self.last_cycle
            event(self.log, logging.INFO, "summary", seconds=round(elapsed, 1),
                  cycles=summary["cycles"], idle_cycles=summary["idle"],
                  written=summary["written"], errors=summary["errors"],
                  pending=len(last.inputs.pending_ids) if last and last.inputs else 0,
                  running=len(last.inputs.running_ids) if last and last.inputs else 0,
                  policy=self.policy.describe())
        self._summary = {"cycles": 0, "idle": 0, "written": 0, "errors": 0,
                         "since": time.monotonic()}

    # --- the service loop --------------------------------------------------------------------

    def request_stop(self) -> None:
        """Finish the current cycle, then leave :meth:`run` (what SIGTERM does)."""
        self._stop.set()
        self._wake.set()

    def request_reload(self) -> None:
        """Reload the policy file before the next cycle (what SIGHUP does)."""
        self._reload = True
        self._wake.set()

    def reload_policy(self) -> bool:
        """Read the policy file again; keep the old policy when the new one is invalid.

        Returns:
            True when the new policy is in force.
        """
        self._reload = False
        try:
            policy = load_agent_policy(self.policy_path)
        except PolicyError as exc:
            self.metrics.inc("malleo_agent_policy_reloads_total", result="rejected")
            event(self.log, logging.ERROR, "policy_reload_rejected", error=str(exc),
                  kept=self.policy.describe())
            return False
        old = self.policy
        self.policy = policy
        self.planner.set_policy(policy)
        self._set_info()
        self.metrics.inc("malleo_agent_policy_reloads_total", result="ok")
        event(self.log, logging.INFO, "policy_reloaded", policy=policy.describe(),
              previous=old.describe())
        return True

    def publish(self, stopped: bool = False, wait: bool = True) -> None:
        """Write the status file (``state_dir``/agent.json) that ``malleo slurm status``
        and ``diag`` read; a failure to write is logged, never fatal.

        Args:
            stopped: mark the agent stopped (the last write, at exit).
            wait: write now; False hands the write to a background thread (the service
                loop: a 10,000-job document takes about 0.3 s to build and write, which
                must not delay the next cycle), which writes the latest state once.
        """
        if self.state_dir is None:
            return
        if not wait:
            if self._publisher is None:
                self._publisher = threading.Thread(target=self._publish_loop,
                                                   name="malleo-status", daemon=True)
                self._publisher.start()
            self._publish_due.set()
            return
        with self._publish_lock:
            self._write_status(stopped)

    def _publish_loop(self) -> None:
        while True:
            self._publish_due.wait()
            self._publish_due.clear()
            if self._publisher_stop:
                return
            with self._publish_lock:
                self._write_status(False)

    def _stop_publisher(self) -> None:
        if self._publisher is not None:
            self._publisher_stop = True
            self._publish_due.set()
            self._publisher.join(timeout=30)
            self._publisher = None

    def _write_status(self, stopped: bool) -> None:
        from malleo.plugin.agent import status_file, status_view

        if self._left.is_set() and not stopped:
            return              # a cycle left behind: the stopped status is the last word
        try:
            doc = status_view.agent_document(self, stopped=stopped)
            status_file.write(self.state_dir, doc)
        except OSError as exc:
            if not self._state_warned:
                event(self.log, logging.WARNING, "status_file_failed", dir=str(self.state_dir),
                      error=str(exc))
            self._state_warned = True

    def _install_signals(self) -> list:
        if threading.current_thread() is not threading.main_thread():
            return []
        previous = []
        for sig, handler in ((signal.SIGTERM, lambda *_: self.request_stop()),
                             (signal.SIGINT, lambda *_: self.request_stop()),
                             (signal.SIGHUP, lambda *_: self.request_reload())):
            previous.append((sig, signal.signal(sig, handler)))
        return previous

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self._wake.wait(seconds):
            self._wake.clear()

    def run(self, once: bool = False) -> int:
        """Run cycles until stopped; return the process exit status.

        The cycles run in a worker thread (``malleo-cycles``); this thread waits for it and
        for a stop request (module docstring).  A stop lets the cycle in flight finish for up
        to ``stop_grace`` seconds, then returns without it.  Either way the status file is
        marked stopped and ``agent_stop`` logged before this returns.

        Returns:
            0 after SIGTERM/SIGINT (or a completed ``once`` cycle); 1 when a ``once`` run
            could not complete a cycle in :data:`ONCE_ATTEMPTS` attempts.

        Raises:
            MalleoError: Slurm cannot parse slurm.conf before any cycle completed (bad
                input: the file and Slurm's first complaint).  After a completed cycle the
                same error is an outage, retried (an operator may be editing the file).
        """
        previous = self._install_signals()
        event(self.log, logging.INFO, "agent_start", policy=self.policy.describe(),
              config=self.policy_path, backend=getattr(self.backend, "name", "?"),
              dry_run=self.dry_run, period=self.period, poll=self.poll, unit=self.unit,
              partition=self.partition or "(default)", stop_grace=self.stop_grace)
        outcome: dict = {}
        worker = threading.Thread(target=self._serve, args=(once, outcome), name="malleo-cycles",
                                  daemon=True)
        left: dict = {}
        try:
            worker.start()
            # A timed join, not an Event.wait: the handlers set the events, and a handler
            # that runs while this thread holds an Event's lock would wait for itself.
            while worker.is_alive() and not self._stop.is_set():
                worker.join(STOP_CHECK)
                self._watch(worker)
            worker.join(self.stop_grace)
            if worker.is_alive():
                left = self._leave(worker)
            elif "error" in outcome:
                raise outcome["error"]
            return outcome.get("code", 0)
        finally:
            self._maybe_summarise(force=True)
            self._stop_publisher()
            self.publish(stopped=True)
            event(self.log, logging.INFO, "agent_stop", **left)
            for sig, handler in previous:
                signal.signal(sig, handler)

    def _watch(self, worker: threading.Thread) -> None:
        """In the main thread: log ``cycle_stalled`` (WARNING) once the worker has spent
        :attr:`stall_after` seconds in one part of a cycle, and ``cycle_unstalled`` when it
        has left that part; the ``malleo_agent_cycle_stalled`` gauge is 1 in between."""
        part = self._part
        now = time.monotonic()
        if self._stalled is not None and part is not self._stalled:
            event(self.log, logging.INFO, "cycle_unstalled", part=self._stalled[0],
                  seconds=round(now - self._stalled[1], 3))
            self._stalled = None
            self.metrics.set("malleo_agent_cycle_stalled", 0)
        if (part is not None and self._stalled is None
                and now - part[1] >= self.stall_after):
            self._stalled = part
            self.metrics.set("malleo_agent_cycle_stalled", 1)
            event(self.log, logging.WARNING, "cycle_stalled", part=part[0],
                  seconds=round(now - part[1], 3), where=self._where(worker))

    @staticmethod
    def _where(worker: threading.Thread) -> str:
        """The worker's innermost frames in malleo's code (``file:line function``)."""
        frame = sys._current_frames().get(worker.ident)
        where = []
        while frame is not None and len(where) < 3:
            code = frame.f_code
            if frame.f_globals.get("__name__", "").startswith("malleo."):
                where.append(f"{Path(code.co_filename).name}:{frame.f_lineno} {code.co_name}")
            frame = frame.f_back
        return " < ".join(where)

    def _leave(self, worker: threading.Thread) -> dict:
        """Leave the worker thread's cycle behind: stop the backend's commands in flight;
        return the ``agent_stop`` fields that say what was left (the part, its seconds so
        far, where the worker was: its innermost frames in malleo's code)."""
        self._left.set()
        part = self._part
        where = self._where(worker)
        try:
            self.backend.abandon()
        except Exception as exc:        # leaving must not fail: log it and go
            event(self.log, logging.WARNING, "abandon_failed", error=repr(exc))
        return {"abandoned": part[0] if part else "wait",
                "abandoned_after": round(time.monotonic() - part[1], 3) if part else None,
                "grace": self.stop_grace, "where": where}

    def _serve(self, once: bool, outcome: dict) -> None:
        """The worker thread: :meth:`_cycles`, its return code or exception in ``outcome``."""
        try:
            outcome["code"] = self._cycles(once)
        except _Abandoned:
            pass
        except BaseException as exc:    # re-raised by run() in the main thread
            outcome["error"] = exc

    def _cycles(self, once: bool) -> int:
        """Run cycles until a stop (the service loop of :meth:`run`)."""
        backoff = BACKOFF_INITIAL
        failures = 0
        last_fp = None
        has_cycled = False
        while not self._stop.is_set():
            if self._reload:
                self.reload_policy()
            try:
                result = self.cycle()
            except _Abandoned:
                raise
            except Exception as exc:
                if self._left.is_set():     # the failure of a cycle left behind: moot
                    raise _Abandoned() from None
                if isinstance(exc, SlurmConfigError) and not has_cycled:
                    self._refuse_config(exc)
                failures += 1
                self._summary["errors"] += 1
                if isinstance(exc, SlurmError):
                    kind = ("slurm_unavailable" if isinstance(exc, SlurmUnavailable)
                            else "slurm")
                    self.metrics.inc("malleo_agent_cycle_errors_total", kind=kind)
                    event(self.log, logging.WARNING, "cycle_failed", kind=kind,
                          error=" ".join(str(exc).replace("*", "").split()),
                          retry_in=backoff, failures=failures)
                else:   # a bug must not take the scheduler policy down
                    self.metrics.inc("malleo_agent_cycle_errors_total", kind="internal")
                    self.log.exception("cycle_crashed", extra={"malleo_fields": {
                        "error": repr(exc), "retry_in": backoff}})
            else:
                failures = 0
                has_cycled = True
                backoff = BACKOFF_INITIAL
                last_fp = result.fingerprint
                self.last_cycle = result
                self.publish(wait=once)
                self._maybe_summarise()
                if once:
                    return 0
                self._wait_for_trigger(last_fp)
                continue
            finally:
                self._part = None
            self.publish(wait=once)
            self._maybe_summarise()
            if once and failures >= ONCE_ATTEMPTS:
                return 1
            self._sleep(backoff)
            backoff = min(backoff * 2, self.backoff_max)
        return 0

    def _refuse_config(self, exc: SlurmConfigError) -> None:
        """Raise the bad-input error for a slurm.conf Slurm cannot parse at start."""
        from malleo.errors import MalleoError

        raise MalleoError(config_refusal(exc, getattr(self.backend, "conf", None)))

    def _wait_for_trigger(self, last_fp: tuple) -> None:
        """Return at the next period, when the queue fingerprint changes, or on a signal."""
        deadline = time.monotonic() + self.period
        while not self._stop.is_set() and not self._reload:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.poll <= 0:
                self._sleep(remaining)
                continue
            self._sleep(min(self.poll, remaining))
            if self._stop.is_set() or self._reload:
                return
            try:
                self._enter("poll")
                self.backend.ping()
                if queue_fingerprint(self.backend) != last_fp:
                    return
            except SlurmError:
                return          # the full cycle reports and backs off
            finally:
                self._part = None
