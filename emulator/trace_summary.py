"""A summary of a job table read from an SWF trace (what ``malleo trace info`` prints).

:func:`summarize` returns plain dicts and numbers (JSON-ready); :func:`format_summary`
renders them as text.  Definitions:

* span (seconds): last submit time - first submit time of the kept jobs;
* offered load: total processor-seconds of the kept jobs (sum of ``procs * runtime``)
  divided by ``machine processors * span``; ``None`` when the span is 0;
* quantiles: of the kept jobs' ``procs`` (processors) and ``runtime`` (seconds), by
  linear interpolation.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from malleo.emulator.swf_fields import MISSING
from malleo.emulator.swf_header import TraceMeta
from malleo.order_stats import distinct

QUANTILES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
"""Quantiles reported for job size and runtime."""

_HEADER_KEYS = ("version", "computer", "installation", "max_jobs", "max_records",
                "max_nodes", "max_procs", "unix_start_time", "time_zone",
                "time_zone_string", "start_time", "end_time")


def summarize(jobs: pd.DataFrame, meta: TraceMeta) -> dict:
    """Header, kept/dropped counts and the distributions of a trace read by read_swf.

    Args:
        jobs: the table returned by :func:`malleo.emulator.read_swf`.
        meta: its metadata.

    Returns:
        A dict with ``source``, ``header`` (standard keys present), ``notes``,
        ``queues``, ``partitions``, ``other``, ``machine`` (``procs`` and where it came
        from), ``lines``, ``jobs`` (``kept``, ``dropped`` by reason, ``bad_lines`` by kind),
        ``users`` and ``groups`` (distinct recorded ids), ``status`` (count per status
        value), ``span`` (first and last submit, seconds), ``procs`` and ``runtime``
        (mean and quantiles), ``estimates`` (jobs with a request, overruns),
        ``offered_load``, ``unsorted`` and ``warnings``.
    """
    procs = jobs["procs"].to_numpy(np.int64)
    runtime = jobs["runtime"].to_numpy(np.int64)
    submit = jobs["submit_time"].to_numpy(np.int64)
    requested = jobs["requested_time"].to_numpy(np.int64)
    kept = len(jobs)
    first = int(submit.min()) if kept else None
    last = int(submit.max()) if kept else None
    span = (last - first) if kept else 0
    work = float(np.dot(procs.astype(np.float64), runtime.astype(np.float64)))
    load = work / (meta.procs * span) if span > 0 and meta.procs else None
    status = jobs["status"].value_counts().sort_index()
    return {
        "source": meta.source,
        "header": {key: getattr(meta, key) for key in _HEADER_KEYS
                   if getattr(meta, key) is not None},
        "notes": list(meta.notes),
        "queues": list(meta.queues),
        "partitions": list(meta.partitions),
        "other": dict(meta.other),
        "machine": {"procs": meta.procs, "from": meta.procs_source},
        "options": dict(meta.options),
        "lines": dict(meta.lines),
        "jobs": {"kept": kept, "dropped": dict(meta.dropped),
                 "dropped_total": sum(meta.dropped.values()),
                 "bad_lines": dict(meta.bad_lines)},
        "users": _distinct(jobs["user_id"]),
        "groups": _distinct(jobs["group_id"]),
        "status": {str(int(k)): int(v) for k, v in status.items()},
        "span": {"first_submit": first, "last_submit": last, "seconds": span,
                 "days": span / 86400.0},
        "procs": _distribution(procs),
        "runtime": _distribution(runtime),
        "estimates": {"with_request": int(np.count_nonzero(requested > 0)),
                      "overran_request": int(np.count_nonzero(
                          (requested > 0) & (jobs["run_time"].to_numpy() > requested)))},
        "processor_seconds": work,
        "offered_load": load,
        "unsorted": meta.unsorted,
        "warnings": list(meta.warnings),
    }


def _distinct(column: pd.Series) -> int:
    values = column.to_numpy()
    return int(distinct(values[values != MISSING]).size)


def _distribution(values: np.ndarray) -> dict:
    if values.size == 0:
        return {"mean": None, "quantiles": {}}
    q = np.quantile(values.astype(np.float64), QUANTILES)
    return {"mean": float(values.mean()),
            "quantiles": {f"{p:g}": float(v) for p, v in zip(QUANTILES, q)}}


def format_summary(summary: dict) -> str:
    """Render :func:`summarize`'s result as aligned text for a terminal."""
    out: list[str] = [f"trace: {summary['source']}"]
    for key, value in summary["header"].items():
        out.append(f"  {key}: {value}")
    for key, value in summary["other"].items():
        first = str(value).split("\n")[0]
        out.append(f"  {key}: {first}")
    for label in ("notes", "queues", "partitions"):
        items = summary[label]
        if items:
            out.append(f"  {label} ({len(items)}):")
            out.extend(f"    {item.splitlines()[0] if item else ''}" for item in items)
    machine = summary["machine"]
    out.append(f"machine: {machine['procs']} processors (from {machine['from']})")
    lines = summary["lines"]
    out.append(f"lines: {lines.get('total', 0)} total, {lines.get('job', 0)} job, "
               f"{lines.get('comment', 0)} comment, {lines.get('blank', 0)} blank")
    jobs = summary["jobs"]
    out.append(f"jobs: {jobs['kept']} kept, {jobs['dropped_total']} dropped")
    for reason, count in jobs["dropped"].items():
        out.append(f"  dropped {reason}: {count}")
    for kind, count in jobs["bad_lines"].items():
        out.append(f"  bad lines skipped, {kind}: {count}")
    if summary["unsorted"]:
        out.append(f"  out of submit order in the file: {summary['unsorted']} (sorted)")
    out.append(f"users: {summary['users']}, groups: {summary['groups']}")
    out.append("status: " + ", ".join(f"{k}: {v}" for k, v in summary["status"].items()))
    span = summary["span"]
    out.append(f"span: {span['seconds']} s ({span['days']:.1f} days), submits "
               f"{span['first_submit']} .. {span['last_submit']}")
    for label, unit in (("procs", "processors"), ("runtime", "seconds")):
        dist = summary[label]
        if dist["mean"] is None:
            continue
        quantiles = "  ".join(f"q{k}={v:g}" for k, v in dist["quantiles"].items())
        out.append(f"{label} ({unit}): mean {dist['mean']:.1f}  {quantiles}")
    est = summary["estimates"]
    out.append(f"requests: {est['with_request']} jobs give a requested time, "
               f"{est['overran_request']} ran longer than requested")
    load = summary["offered_load"]
    out.append(f"processor-seconds: {summary['processor_seconds']:.6g}")
    out.append("offered load: " + (f"{load:.3f}" if load is not None else "n/a (span 0)"))
    return "\n".join(out)
