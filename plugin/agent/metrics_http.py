"""The agent's Prometheus text endpoint (``--metrics-port``): stdlib only.

:class:`Metrics` holds counters, gauges and one histogram (cycle latency, seconds) behind a
lock; :func:`serve` answers ``GET /metrics`` with the Prometheus text exposition format
(version 0.0.4) from a daemon thread.  Metric names are listed in docs/agent.md.
"""
from __future__ import annotations

import http.server
import math
import socket
import threading
import time

CYCLE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the cycle-latency histogram buckets."""

_HELP: dict[str, tuple[str, str]] = {
    "malleo_agent_info": ("gauge", "Always 1; the labels say the version, the policy in force "
                                   "(order+backfill), its file, the backend and the mode."),
    "malleo_agent_start_time_seconds": ("gauge", "Epoch time the agent started."),
    "malleo_agent_cycles_total": ("counter", "Cycles completed (state read, planned, applied)."),
    "malleo_agent_idle_cycles_total": (
        "counter", "Completed cycles that changed nothing and planned no start."),
    "malleo_agent_cycle_errors_total": ("counter", "Cycles that failed, by kind."),
    "malleo_agent_cycle_seconds": ("histogram", "Wall time of a completed cycle, seconds."),
    "malleo_agent_decisions_applied_total": ("counter", "Priority writes Slurm accepted."),
    "malleo_agent_decisions_skipped_total": (
        "counter", "Priority writes skipped because the job changed since the read, by reason."),
    "malleo_agent_sizes_applied_total": (
        "counter", "Node counts written for range jobs the plan starts now (start_procs)."),
    "malleo_agent_stale_plans_total": (
        "counter", "Plans discarded because the queue changed before they were applied."),
    "malleo_agent_queue_pending": ("gauge", "Pending jobs planned in the last cycle."),
    "malleo_agent_queue_skipped": ("gauge", "Pending jobs left out of the last plan (held, dependency...)."),
    "malleo_agent_running_jobs": ("gauge", "Running jobs in the last cycle."),
    "malleo_agent_planned_starts": ("gauge", "Jobs the last plan starts now."),
    "malleo_agent_machine_units": ("gauge", "Usable nodes (or CPUs) of the managed partition."),
    "malleo_agent_busy_units": ("gauge", "Nodes (or CPUs) held by running jobs."),
    "malleo_agent_last_success_timestamp_seconds": ("gauge", "Epoch time of the last completed cycle."),
    "malleo_agent_cycle_stalled": (
        "gauge", "1 while the cycle in flight has spent over 30 s in one part (read, plan, apply, poll)."),
    "malleo_agent_policy_reloads_total": ("counter", "SIGHUP policy reloads, by result."),
    "malleo_agent_shadow_inversions_total": (
        "counter", "Shadow mode: pairs of jobs Slurm started in the opposite of the planned order."),
    "malleo_agent_shadow_started_total": ("counter", "Shadow mode: job starts compared with the plan."),
    "malleo_agent_dry_run": ("gauge", "1 in shadow mode (nothing applied), else 0."),
}
"""Metric name -> (type, help), in exposition order (docs/metrics.md lists them)."""

LABELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "malleo_agent_cycle_errors_total": ("kind", ("slurm_unavailable", "slurm", "internal")),
    "malleo_agent_decisions_skipped_total": ("reason", ("vanished", "not_pending", "refused")),
    "malleo_agent_policy_reloads_total": ("result", ("ok", "rejected")),
}
"""Labelled counters: name -> (label, every value).  Each is exposed with every value from
the start (at 0) and never as an unlabelled series (Prometheus' advice for labelled
metrics); :meth:`Metrics.inc` refuses other label sets."""

def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def _escape(value: str) -> str:
    """A label value escaped as the text format requires (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe metric values of one agent process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, tuple], float] = {}
        self._hist_counts = [0] * len(CYCLE_BUCKETS)
        self._hist_sum = 0.0
        self._hist_count = 0
        self._hist_max = 0.0
        self._hist_last = 0.0
        self._info: dict[str, dict[str, str]] = {}
        self.set("malleo_agent_start_time_seconds", time.time())

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` to a counter.

        Raises:
            ValueError: a labelled counter (:data:`LABELS`) without its label or with an
                unknown value, or labels on an unlabelled one.
        """
        label, allowed = LABELS.get(name, (None, ()))
        if set(labels) != ({label} if label else set()) or (
                label and labels[label] not in allowed):
            raise ValueError(f"metric {name}: labels {labels} do not match "
                             f"{label or 'none'}={'|'.join(allowed)}")
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge."""
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] = float(value)

    def get(self, name: str, **labels: str) -> float:
        """A counter's or gauge's value (0 when never set)."""
        with self._lock:
            return self._values.get((name, tuple(sorted(labels.items()))), 0.0)

    def set_info(self, name: str, **labels: str) -> None:
        """Set an info metric: a gauge at 1 whose labels carry the values."""
        with self._lock:
            self._info[name] = {k: str(v) for k, v in labels.items()}

    def info(self, name: str) -> dict[str, str]:
        """The labels of an info metric ({} when never set)."""
        with self._lock:
            return dict(self._info.get(name, {}))

    def latency(self) -> dict[str, float]:
        """Cycle latency since start: ``count``, ``mean``, ``max``, ``last`` (seconds)."""
        with self._lock:
            count = self._hist_count
            return {"count": count, "mean": self._hist_sum / count if count else 0.0,
                    "max": self._hist_max, "last": self._hist_last}

    def observe_cycle(self, seconds: float) -> None:
        """Record one cycle's latency in the histogram."""
        with self._lock:
            self._hist_max = max(self._hist_max, seconds)
            self._hist_last = seconds
            for k, bound in enumerate(CYCLE_BUCKETS):
                if seconds <= bound:
                    self._hist_counts[k] += 1
            self._hist_sum += seconds
            self._hist_count += 1

    def render(self) -> str:
        """The Prometheus text exposition of every metric."""
        with self._lock:
            values = dict(self._values)
            counts, total, count = list(self._hist_counts), self._hist_sum, self._hist_count
            infos = {k: dict(v) for k, v in self._info.items()}
        lines = []
        for name, (kind, text) in _HELP.items():
            lines.append(f"# HELP {name} {text}")
            lines.append(f"# TYPE {name} {kind}")
            if name in infos:
                lines.append(f"{name}{_labels(infos[name])} 1")
                continue
            if kind == "histogram":
                for bound, c in zip(CYCLE_BUCKETS, counts):
                    lines.append(f'{name}_bucket{{le="{bound:g}"}} {c}')
                lines.append(f'{name}_bucket{{le="+Inf"}} {count}')
                lines.append(f"{name}_sum {total:.6f}")
                lines.append(f"{name}_count {count}")
                continue
            rows = [(dict(lab), v) for (n, lab), v in values.items() if n == name]
            if name in LABELS:
                label, allowed = LABELS[name]
                seen = {r[0].get(label) for r in rows}
                rows += [({label: value}, 0.0) for value in allowed if value not in seen]
            elif not rows and kind == "counter":
                rows = [({}, 0.0)]
            for labels, v in sorted(rows, key=lambda r: sorted(r[0].items())):
                shown = int(v) if math.isfinite(v) and v == int(v) else v
                lines.append(f"{name}{_labels(labels)} {shown}")
        return "\n".join(lines) + "\n"


class _Handler(http.server.BaseHTTPRequestHandler):
    metrics: Metrics

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics is served")
            return
        body = self.server.metrics.render().encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass            # scrapes are not worth a log line each


def serve(metrics: Metrics, port: int, host: str = "") -> http.server.ThreadingHTTPServer:
    """Serve ``metrics`` on ``host:port`` (``""`` or ``0.0.0.0``: every IPv4 interface;
    ``::`` for IPv6) from a daemon thread.

    Returns the server (``server.server_address[1]`` is the port, useful with ``port=0``);
    ``server.shutdown()`` stops it.

    Raises:
        OSError: the port cannot be bound.
    """
    cls = http.server.ThreadingHTTPServer
    if ":" in host:
        cls = type("ThreadingHTTPServerV6", (cls,), {"address_family": socket.AF_INET6})
    server = cls((host, port), _Handler)
    server.daemon_threads = True
    server.metrics = metrics
    thread = threading.Thread(target=server.serve_forever, name="malleo-metrics", daemon=True)
    thread.start()
    return server
