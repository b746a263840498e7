"""Slurm accounting (``sacct``) output -> an SWF job table and header.

Two inputs: ``sacct --parsable2 --format=...`` (a ``|``-separated table with a header row;
see :data:`RECOMMENDED_FORMAT`) and ``sacct --json`` (Slurm 22.05's openapi v0.0.38 and
the 23.x/24.x schemas).  docs/tuning.md lists every mapping; in short:

* submit, start, end: Unix seconds (the text form is read in ``tz``, default UTC); SWF
  times are seconds since the earliest submit (the header's UnixStartTime).
* wait = start - submit; run time = Elapsed (else end - start).
* allocated processors = AllocCPUS, requested = ReqCPUS; with ``node_cpus`` C both are
  node counts x C (AllocNodes, ReqNodes): a node-exclusive view.
* requested time = Timelimit in seconds; ``UNLIMITED``, ``Partition_Limit``, ``INVALID``
  and a missing limit -> -1.
* status (field 11): see :data:`STATUS`; unknown states -> -1 (counted).
* user, group -> 1..k by sorted name; QOS -> queue 1..k, partition -> 1..k, by sorted
  name; the mappings are written into the header (Note, Queue and Partition lines).
* job steps (``123.batch``, ``123.0``, ``123.extern``) are folded into their job (only
  counted); array tasks (``123_4``) are separate jobs.
* jobs that never started (no start time, or 0 allocated CPUs) are kept with wait -1 and
  run time -1: counted here, dropped by the SWF reader as ``runtime_missing``.
* jobs not finished yet (RUNNING, PENDING, SUSPENDED, REQUEUED...) are skipped (counted).
* SWF job numbers are 1..N in (submit, Slurm job id) order.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from malleo.emulator.swf_fields import FIELDS, FLOAT_FIELDS, MISSING
from malleo.errors import TraceError
from malleo.input_files import read_text
from malleo.limits import MAX_PROCS, MAX_TIME
from malleo.slurm_values import duration as _slurm_duration
from malleo.slurm_values import NO_VAL as _NO_VAL  # counts at or above it: "not set"
from malleo.slurm_values import is_infinite, number as _slurm_number

__all__ = ["RECOMMENDED_FORMAT", "REQUIRED_FIELDS", "STATUS", "UNFINISHED", "SacctJob",
           "Conversion", "read_sacct", "parse_parsable2", "parse_json", "to_swf",
           "parse_duration", "check_json_shape"]

RECOMMENDED_FORMAT = ("JobID,JobIDRaw,User,Group,Partition,QOS,Submit,Start,End,Elapsed,"
                      "Timelimit,State,AllocCPUS,ReqCPUS,AllocNodes,ReqNodes")
"""The ``--format`` list to give sacct: every field the converter reads."""

REQUIRED_FIELDS = ("JobID", "Submit", "Start", "End", "State")
"""Fields a ``--parsable2`` input must have; the others default to "not recorded" (-1)."""

STATUS: dict[str, int] = {
    "COMPLETED": 1,
    "FAILED": 0, "TIMEOUT": 0, "NODE_FAIL": 0, "OUT_OF_MEMORY": 0, "BOOT_FAIL": 0,
    "DEADLINE": 0, "PREEMPTED": 0,
    "CANCELLED": 5,
}
"""Slurm job state (first word) -> SWF status: 1 completed, 0 failed/killed, 5 cancelled."""

UNFINISHED = frozenset({"PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
                        "REQUEUE_FED", "RESIZING", "CONFIGURING", "COMPLETING", "SIGNALING",
                        "STAGE_OUT", "STOPPED", "REVOKED", "SPECIAL_EXIT", "RESV_DEL_HOLD",
                        "UPDATE_DB", "POWER_UP_NODE", "LAUNCH_FAILED"})
"""States of jobs not (yet) ended, or handed to another cluster: skipped."""

_MISSING_TIMES = {"", "unknown", "none", "n/a"}


@dataclass
class SacctJob:
    """One job (or array task) of sacct output, times in Unix seconds, None = not recorded."""

    job_id: str
    raw_id: int | None
    submit: int | None
    start: int | None
    end: int | None
    elapsed: int | None
    time_limit: int | None          # seconds, -1 unlimited, None not recorded
    state: str
    user: str | None
    group: str | None
    partition: str | None
    qos: str | None
    alloc_cpus: int | None
    req_cpus: int | None
    alloc_nodes: int | None
    req_nodes: int | None
    line: int = 0                   # 1-based input line (0 for JSON)


@dataclass
class Conversion:
    """What :func:`to_swf` did: counts by kind and the name -> number mappings."""

    jobs: int = 0
    steps_folded: int = 0
    orphan_steps: int = 0
    never_started: int = 0
    unfinished: dict[str, int] = field(default_factory=dict)
    unknown_states: dict[str, int] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    qos: dict[str, int] = field(default_factory=dict)
    job_ids: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """A human summary, one fact a line."""
        out = [f"{self.jobs} jobs written"]
        if self.never_started:
            out.append(f"{self.never_started} never started (kept with run time -1; the SWF "
                       "reader drops them as runtime_missing)")
        if self.steps_folded:
            out.append(f"{self.steps_folded} job steps folded into their jobs")
        if self.orphan_steps:
            out.append(f"{self.orphan_steps} job steps skipped: their job is not in the input")
        for state, count in sorted(self.unfinished.items()):
            out.append(f"{count} jobs skipped: still {state}")
        for state, count in sorted(self.unknown_states.items()):
            out.append(f"{count} jobs with unknown state {state!r}: status -1")
        return out


# --------------------------------------------------------------------------- reading

def read_sacct(path: str | Path, fmt: str | None = None, tz: str = "UTC") -> tuple[list[SacctJob], int]:
    """Read a sacct output file.

    Args:
        path: the file (``-`` is not accepted here; the CLI reads stdin itself).
        fmt: ``parsable`` or ``json``; None guesses from the first non-blank character.
        tz: time zone of the text timestamps of parsable output (an IANA name).

    Returns:
        ``(jobs, steps)``: the jobs and array tasks, and how many step records were
        folded into them.

    Raises:
        TraceError: ``FILE:LINE: what is wrong``.
    """
    path = Path(path)
    text = read_text(path, "sacct output", TraceError)
    if fmt is None:
        fmt = "json" if text.lstrip()[:1] == "{" else "parsable"
    if fmt == "json":
        return parse_json(text, source=str(path))
    if fmt == "parsable":
        return parse_parsable2(text, source=str(path), tz=tz)
    raise TraceError(f"{path}: unknown sacct format {fmt!r} (parsable or json)")


def parse_parsable2(text: str, source: str = "<sacct>", tz: str = "UTC"
                    ) -> tuple[list[SacctJob], int]:
    """Parse ``sacct --parsable2`` output (see :func:`read_sacct`)."""
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise TraceError(f"tz: unknown time zone {tz!r}") from None
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_at is None:
        raise TraceError(f"{source}: empty sacct output")
    header = [h.strip() for h in lines[header_at].split("|")]
    missing = [f for f in REQUIRED_FIELDS if f not in header]
    if missing:
        raise TraceError(f"{source}:{header_at + 1}: sacct header lacks {', '.join(missing)} "
                         f"(run sacct --parsable2 --format={RECOMMENDED_FORMAT})")
    if "AllocCPUS" not in header and "ReqCPUS" not in header and "AllocNodes" not in header:
        raise TraceError(f"{source}:{header_at + 1}: sacct header has no processor field "
                         "(AllocCPUS, ReqCPUS or AllocNodes)")
    jobs: list[SacctJob] = []
    steps = 0
    for number, line in enumerate(lines[header_at + 1:], start=header_at + 2):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(header):
            raise TraceError(f"{source}:{number}: {len(cells)} fields, the header has "
                             f"{len(header)} (was the output made with --parsable2 and "
                             "the same --format?)")
        row = dict(zip(header, (c.strip() for c in cells)))
        job_id = row["JobID"]
        if not job_id:
            raise TraceError(f"{source}:{number}: JobID is empty")
        if "." in job_id:
            steps += 1
            jobs.append(_step_marker(job_id, number))
            continue

        def when(name: str) -> int | None:
            return _timestamp(row.get(name, ""), zone, f"{source}:{number}: {name}")

        def count(name: str) -> int | None:
            return _count(row.get(name, ""), f"{source}:{number}: {name}")

        def duration(name: str) -> int | None:
            value = row.get(name, "")
            if value == "":
                return None
            try:
                seconds = parse_duration(value)
            except ValueError as exc:
                raise TraceError(f"{source}:{number}: {name}: {exc}") from None
            if seconds is None:
                return -1
            return _checked_time(seconds, f"{source}:{number}: {name}")

        raw = row.get("JobIDRaw", "")
        jobs.append(SacctJob(
            job_id=job_id, raw_id=int(raw) if raw.isdigit() else None,
            submit=when("Submit"), start=when("Start"), end=when("End"),
            elapsed=duration("Elapsed") if "Elapsed" in row else None,
            time_limit=duration("Timelimit") if "Timelimit" in row else None,
            state=row["State"], user=_name(row.get("User")), group=_name(row.get("Group")),
            partition=row.get("Partition") or None, qos=row.get("QOS") or None,
            alloc_cpus=count("AllocCPUS"), req_cpus=count("ReqCPUS"),
            alloc_nodes=count("AllocNodes"), req_nodes=count("ReqNodes"), line=number))
    return jobs, steps


def _step_marker(job_id: str, line: int) -> SacctJob:
    """A placeholder for a step line: :func:`to_swf` folds it into its job."""
    return SacctJob(job_id=job_id, raw_id=None, submit=None, start=None, end=None,
                    elapsed=None, time_limit=None, state="STEP", user=None, group=None,
                    partition=None, qos=None, alloc_cpus=None, req_cpus=None,
                    alloc_nodes=None, req_nodes=None, line=line)


def _name(value: str | None) -> str | None:
    """``root(0)`` (how ``sacct -c`` prints users) -> ``root``; empty -> None."""
    if not value:
        return None
    return re.sub(r"\(\d+\)$", "", value) or None


def _timestamp(value: str, zone: dt.tzinfo, where: str) -> int | None:
    if value.strip().lower() in _MISSING_TIMES:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=zone)
        seconds = int(moment.timestamp())
    except (ValueError, OverflowError, OSError):
        raise TraceError(f"{where}: not a timestamp: {value!r}") from None
    return _checked_time(seconds, where)


def _count(value: str, where: str) -> int | None:
    value = value.strip()
    if value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        # sacct shows some counts with a unit suffix (e.g. 1K); those are not expected here.
        raise TraceError(f"{where}: not an integer: {value!r}") from None
    return None if number < 0 or number >= _NO_VAL else _checked_count(number, where)


def _checked_time(seconds: int, where: str) -> int:
    """``seconds`` (a Unix time or a duration) if 0 <= seconds <= MAX_TIME, else TraceError."""
    if not 0 <= seconds <= MAX_TIME:
        raise TraceError(f"{where}: {seconds} s is outside the times malleo supports "
                         f"(0 to 2**36 = {MAX_TIME:,} s)")
    return seconds


def _checked_count(number: int, where: str) -> int:
    """A processor or node count if <= MAX_PROCS, else TraceError."""
    if number > MAX_PROCS:
        raise TraceError(f"{where}: {number} is beyond the largest size malleo supports "
                         f"(2**24 = {MAX_PROCS:,})")
    return number


def parse_duration(text: str) -> int | None:
    """A Slurm duration -> seconds; None for unlimited (``UNLIMITED``, ``INVALID``...).

    The one parser of :func:`malleo.slurm_values.duration` (a bare number is minutes, as
    ``sacct -c`` prints time limits; a fraction of a second is dropped).

    Raises:
        ValueError: not a Slurm duration.
    """
    return _slurm_duration(text)


def parse_json(text: str, source: str = "<sacct>") -> tuple[list[SacctJob], int]:
    """Parse ``sacct --json`` output (see :func:`read_sacct`).

    The document's shape is checked first (:func:`check_json_shape`): a field of the
    wrong type, a NaN or infinite number, a time or count beyond :mod:`malleo.limits` or
    nesting deeper than Python's recursion limit is a TraceError naming the field
    (``FILE: jobs[3].time.limit: ...``)."""
    try:
        data = json.loads(text, parse_constant=_NonFinite)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{source}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise TraceError(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError as exc:           # e.g. an integer of more than 4,300 digits
        raise TraceError(f"{source}: invalid JSON: {exc}") from None
    try:
        where = _non_finite_path(data, "")
    except RecursionError:
        raise TraceError(f"{source}: invalid JSON: nested too deeply") from None
    if where is not None:
        path, name = where
        raise TraceError(f"{source}: {path.lstrip('.')}: {name} is not a JSON number "
                         "(NaN and Infinity are refused)")
    check_json_shape(data, source)
    jobs: list[SacctJob] = []
    steps = 0
    for index, job in enumerate(data["jobs"]):
        where = f"{source}: jobs[{index}]"
        times = job.get("time") or {}
        steps += len(job.get("steps") or [])
        array = job.get("array") or {}
        task = _number(array.get("task_id"))
        raw = _number(job.get("job_id"))
        job_id = f"{_number(array.get('job_id'))}_{task}" if task is not None and \
            _number(array.get("job_id")) else str(raw)
        state = job.get("state") or {}
        current = state.get("current") if isinstance(state, dict) else state
        if isinstance(current, list):
            current = current[0] if current else ""
        tres = job.get("tres") or {}
        required = job.get("required") or {}

        def when(key: str) -> int | None:
            value = _number(times.get(key))
            return None if value is None else _checked_time(value, f"{where}.time.{key}")

        def count(value: int | None, name: str) -> int | None:
            return None if value is None or value < 0 else _checked_count(value, f"{where}.{name}")

        start = when("start")
        limit = _limit(times.get("limit"))
        jobs.append(SacctJob(
            job_id=job_id, raw_id=raw,
            submit=when("submission"),
            start=start if start else None,
            end=when("end") or None,
            elapsed=when("elapsed"),
            time_limit=limit if limit < 0 else _checked_time(limit, f"{where}.time.limit"),
            state=str(current or ""),
            user=job.get("user") or None, group=job.get("group") or None,
            partition=job.get("partition") or None, qos=job.get("qos") or None,
            alloc_cpus=count(_tres(tres.get("allocated"), "cpu"), "tres.allocated"),
            req_cpus=count(_tres(tres.get("requested"), "cpu") or _number(required.get("CPUs")),
                           "tres.requested"),
            alloc_nodes=count(_number(job.get("allocation_nodes")), "allocation_nodes"),
            req_nodes=count(_tres(tres.get("requested"), "node"), "tres.requested")))
        for step in job.get("steps") or []:
            name = (step.get("step") or {}).get("id")
            jobs.append(_step_marker(f"{job_id}.{name}", 0))
    return jobs, steps


class _NonFinite(str):
    """``NaN``, ``Infinity`` or ``-Infinity`` read from JSON text (Python's json accepts
    them by default); kept as a marker so the refusal can name the field."""


def _non_finite_path(value: Any, path: str) -> tuple[str, str] | None:
    """``(path, token)`` of the first NaN/Infinity marker in ``value``, or None."""
    if isinstance(value, _NonFinite):
        return path, str(value)
    if isinstance(value, dict):
        items = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    else:
        return None
    for sub_path, item in items:
        found = _non_finite_path(item, sub_path)
        if found is not None:
            return found
    return None


_NUMBER = "number"        # a JSON number, or Slurm 23+'s {set, infinite, number}, or null
_TEXT = "text"            # a string or null
_JOB_SHAPE: dict[str, Any] = {
    "job_id": _NUMBER,
    "user": _TEXT, "group": _TEXT, "partition": _TEXT, "qos": _TEXT,
    "allocation_nodes": _NUMBER,
    "time": {"submission": _NUMBER, "start": _NUMBER, "end": _NUMBER, "elapsed": _NUMBER,
             "limit": _NUMBER},
    "array": {"job_id": _NUMBER, "task_id": _NUMBER},
    "required": {"CPUs": _NUMBER},
    "tres": {"allocated": [{"type": _TEXT, "count": _NUMBER}],
             "requested": [{"type": _TEXT, "count": _NUMBER}]},
    "steps": [{"step": {"id": "id"}}],
    "state": "state",
}
"""The fields of a job object the converter reads, with their expected shape: a dict is an
object (or null) with those fields, a one-item list an array (or null) of that shape, whose
items are never null.
Other fields are not read and not checked."""


def check_json_shape(data: Any, source: str = "<sacct>") -> None:
    """Check that ``data`` (parsed ``sacct --json``) has the shape the converter reads.

    Raises:
        TraceError: ``FILE: jobs[I].field: expected ..., got ...`` for the first field of
            the wrong type.
    """
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise TraceError(f"{source}: not sacct --json output (no \"jobs\" list)")
    for index, job in enumerate(data["jobs"]):
        where = f"jobs[{index}]"
        if not isinstance(job, dict) or job.get("job_id") is None:
            raise TraceError(f"{source}: {where}: not a job object (no job_id)")
        _check_shape(job, _JOB_SHAPE, f"{source}: {where}")


def _check_shape(value: Any, shape: Any, where: str) -> None:
    def fail(expected: str) -> TraceError:
        got = "null" if value is None else type(value).__name__.replace("dict", "object") \
            .replace("list", "array").replace("str", "string")
        return TraceError(f"{where}: expected {expected}, got {got}"
                          + (f" {value!r}" if isinstance(value, (int, float, str)) else ""))

    if value is None:
        return
    if shape == _NUMBER:
        if isinstance(value, dict):
            for key, kind in (("set", bool), ("infinite", bool)):
                if key in value and not isinstance(value[key], kind):
                    raise TraceError(f"{where}.{key}: expected true or false, got "
                                     f"{value[key]!r}")
            if "number" in value:
                _check_shape(value["number"], _NUMBER, f"{where}.number")
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail("a number")
        if isinstance(value, float) and not value == value or abs(value) > 2.0 ** 63:
            raise fail("a number in the 64-bit range")
    elif shape == _TEXT:
        if not isinstance(value, str):
            raise fail("a string")
    elif shape == "id":
        if not isinstance(value, (str, int, dict)) or isinstance(value, bool):
            raise fail("a step id (string, integer or object)")
    elif shape == "state":
        current = value.get("current") if isinstance(value, dict) else value
        if isinstance(value, dict) and "current" not in value:
            raise TraceError(f"{where}: expected an object with \"current\"")
        items = current if isinstance(current, list) else [current]
        if not isinstance(value, (dict, str)) or \
                not all(isinstance(item, str) for item in items if item is not None):
            raise fail("a state (a string, or {\"current\": a string or an array of strings})")
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise fail("an object")
        for key, sub in shape.items():
            if key in value:
                _check_shape(value[key], sub, f"{where}.{key}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise fail("an array")
        for i, item in enumerate(value):
            if item is None:        # the field may be null, not an item (all are objects)
                raise TraceError(f"{where}[{i}]: expected an object, got null")
            _check_shape(item, shape[0], f"{where}[{i}]")


def _number(value: Any) -> int | None:
    """A JSON count or time (:func:`malleo.slurm_values.number`): None when unset, infinite
    or not a number."""
    try:
        return _slurm_number(value)
    except ValueError:
        return None


def _limit(value: Any) -> int:
    """A JSON time limit in minutes -> seconds; unlimited (null or infinite) -> -1."""
    if value is None or is_infinite(value):
        return -1
    minutes = _number(value)
    if minutes is None:
        return -1
    return -1 if minutes < 0 else minutes * 60


def _tres(items: Any, kind: str) -> int | None:
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, dict) and item.get("type") == kind:
            count = _number(item.get("count"))
            return count if count and count > 0 else None
    return None


# --------------------------------------------------------------------------- converting

def to_swf(jobs: Iterable[SacctJob], *, node_cpus: int | None = None
           ) -> tuple[pd.DataFrame, int | None, Conversion]:
    """Jobs from :func:`read_sacct` -> ``(SWF table, UnixStartTime, Conversion)``.

    Args:
        jobs: parsed jobs (step placeholders included: folded and counted).
        node_cpus: when given, processor counts are node counts x ``node_cpus``.

    Returns:
        The 18-field SWF table (sorted by submit time, job numbers 1..N), the Unix time
        of SWF time 0 (None for no jobs) and what was done.
    """
    jobs = list(jobs)
    report = Conversion()
    parents = {j.job_id for j in jobs if j.state != "STEP"}
    kept: list[SacctJob] = []
    for job in jobs:
        if job.state == "STEP":
            parent = job.job_id.split(".", 1)[0]
            if parent in parents:
                report.steps_folded += 1
            else:
                report.orphan_steps += 1
            continue
        word = (job.state.split() or [""])[0].upper().rstrip("+")
        if word in UNFINISHED:
            report.unfinished[word] = report.unfinished.get(word, 0) + 1
            continue
        if job.submit is None:
            report.unfinished["without submit time"] = \
                report.unfinished.get("without submit time", 0) + 1
            continue
        kept.append(job)

    def numbering(values: Iterable[str | None]) -> dict[str, int]:
        return {name: i for i, name in enumerate(sorted({v for v in values if v}), start=1)}

    report.users = numbering(j.user for j in kept)
    report.groups = numbering(j.group for j in kept)
    report.partitions = numbering(j.partition for j in kept)
    report.qos = numbering(j.qos for j in kept)
    kept.sort(key=lambda j: (j.submit, j.raw_id if j.raw_id is not None else 0, j.job_id))
    origin = kept[0].submit if kept else None
    columns: dict[str, list] = {name: [] for name in FIELDS}
    for number, job in enumerate(kept, start=1):
        word = (job.state.split() or [""])[0].upper().rstrip("+")
        status = STATUS.get(word)
        if status is None:
            report.unknown_states[word] = report.unknown_states.get(word, 0) + 1
            status = MISSING
        started = job.start is not None and job.alloc_cpus != 0
        if node_cpus:
            alloc = job.alloc_nodes * node_cpus if job.alloc_nodes else None
            req = job.req_nodes * node_cpus if job.req_nodes else None
            if max(alloc or 0, req or 0) > MAX_PROCS:
                raise TraceError(f"job {job.job_id}: {max(alloc or 0, req or 0)} processors "
                                 f"(nodes x --node-cpus {node_cpus}) is beyond the largest "
                                 f"size malleo supports (2**24 = {MAX_PROCS:,})")
        else:
            alloc, req = job.alloc_cpus, job.req_cpus
        if started:
            wait = max(0, job.start - job.submit)
            if job.elapsed is not None:
                runtime = job.elapsed
            elif job.end is not None:
                runtime = max(0, job.end - job.start)
            else:
                runtime = MISSING
        else:
            report.never_started += 1
            wait = runtime = MISSING
            alloc = None
        values = {
            "job_number": number, "submit_time": job.submit - origin, "wait_time": wait,
            "run_time": runtime, "allocated_procs": alloc if alloc else MISSING,
            "requested_procs": req if req else MISSING,
            "requested_time": job.time_limit if job.time_limit is not None and
            job.time_limit > 0 else MISSING,
            "status": status,
            "user_id": report.users.get(job.user, MISSING) if job.user else MISSING,
            "group_id": report.groups.get(job.group, MISSING) if job.group else MISSING,
            "queue": report.qos.get(job.qos, MISSING) if job.qos else MISSING,
            "partition": report.partitions.get(job.partition, MISSING)
            if job.partition else MISSING,
        }
        for name in FIELDS:
            columns[name].append(values.get(name, MISSING))
        report.job_ids.append(job.job_id)
    report.jobs = len(kept)
    table = pd.DataFrame({name: np.asarray(columns[name],
                                           dtype=np.float64 if name in FLOAT_FIELDS
                                           else np.int64) for name in FIELDS})
    return table, origin, report
