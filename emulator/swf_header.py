"""The header of an SWF trace (``; Key: value`` comment lines) and what reading it found.

:class:`TraceMeta` holds the standard header keys under Python names, every other key in
``other``, and what :func:`malleo.emulator.read_swf` learnt while reading: the machine size
it used, the jobs it dropped and why, line counts, bad lines skipped in lenient mode,
warnings and the source path.  :func:`parse_header` fills the header part from the comment
lines; :func:`header_lines` renders it back.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

# Standard SWF header keys (as spelt in the format's definition) -> TraceMeta attribute.
INT_KEYS: dict[str, str] = {
    "MaxJobs": "max_jobs",
    "MaxRecords": "max_records",
    "MaxNodes": "max_nodes",
    "MaxProcs": "max_procs",
    "MaxRuntime": "max_runtime",
    "MaxMemory": "max_memory",
    "MaxQueues": "max_queues",
    "MaxPartitions": "max_partitions",
    "UnixStartTime": "unix_start_time",
    "TimeZone": "time_zone",
}
TEXT_KEYS: dict[str, str] = {
    "Version": "version",
    "Computer": "computer",
    "Installation": "installation",
    "Acknowledge": "acknowledge",
    "Information": "information",
    "Conversion": "conversion",
    "Preemption": "preemption",
    "AllowOveruse": "allow_overuse",
    "TimeZoneString": "time_zone_string",
    "StartTime": "start_time",
    "EndTime": "end_time",
}
LIST_KEYS: dict[str, str] = {"Note": "notes", "Queue": "queues", "Partition": "partitions"}
"""Keys that may repeat; each occurrence is one list item."""

_KEY_LINE = re.compile(r";[ \t]{0,3}([A-Za-z][A-Za-z0-9_-]*)[ \t]*:(.*)")
# A key line: ';', at most three blanks, a word, ':'.  Continuation lines are indented
# further (";              http://...") or have no "word:" at their start.
_LOOKUP = {k.lower(): (k, attr) for k, attr in (INT_KEYS | TEXT_KEYS | LIST_KEYS).items()}


@dataclass
class TraceMeta:
    """Header metadata of an SWF trace plus what reading it found.

    Header attributes are ``None`` (or empty) when the key is absent.  Times in the header
    are as written: ``unix_start_time`` is the Unix time (seconds) of the trace's time 0,
    ``time_zone`` a UTC offset in seconds, ``start_time``/``end_time`` human-readable.
    Multi-line values (continuation comment lines) are joined with newlines.

    Attributes set by :func:`malleo.emulator.read_swf`:
        procs: machine size in processors used to judge and replay the jobs
            (the ``procs=`` option, else MaxProcs, else MaxNodes).
        procs_source: where ``procs`` came from: "option", "MaxProcs" or "MaxNodes".
        dropped: reason -> number of job lines dropped as not replayable
            (``runtime_missing``, ``procs_missing``, ``larger_than_machine``).
        bad_lines: kind -> number of malformed lines skipped (lenient mode only):
            ``field_count``, ``not_a_number``, ``not_an_integer``, ``out_of_range``,
            ``negative_submit``.
        lines: physical line counts: ``total``, ``comment``, ``blank``, ``job`` (lines
            holding a job record, good or bad), ``kept`` (rows in the returned table).
        unsorted: number of job lines whose submit time is earlier than that of a line
            above them (the table is sorted by submit time, stably).
        warnings: human-readable warnings raised while reading.
        options: the reading options in force (name -> value).
        source: the path that was read.
    """

    version: str | None = None
    computer: str | None = None
    installation: str | None = None
    acknowledge: str | None = None
    information: str | None = None
    conversion: str | None = None
    preemption: str | None = None
    allow_overuse: str | None = None
    max_jobs: int | None = None
    max_records: int | None = None
    max_nodes: int | None = None
    max_procs: int | None = None
    max_runtime: int | None = None
    max_memory: int | None = None
    max_queues: int | None = None
    max_partitions: int | None = None
    unix_start_time: int | None = None
    time_zone: int | None = None
    time_zone_string: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    notes: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    """Comment lines that are neither a key nor the continuation of one."""

    procs: int | None = None
    procs_source: str | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    bad_lines: dict[str, int] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    unsorted: int = 0
    warnings: list[str] = field(default_factory=list)
    options: dict[str, object] = field(default_factory=dict)
    source: str | None = None

    def to_dict(self) -> dict:
        """A JSON-ready copy (plain dicts, lists, strings and numbers)."""
        return dataclasses.asdict(self)


def parse_header(lines: list[tuple[int, str]], meta: TraceMeta, source: str) -> None:
    """Fill the header attributes of ``meta`` from comment lines.

    Args:
        lines: ``(line_number, text)`` of each comment line, ``text`` starting with ';'.
        meta: filled in place.
        source: file name for warnings (``FILE:LINE: ...``).

    An integer key whose value is not an integer is ignored with a warning; unknown keys
    go to ``meta.other`` (repeats joined by newlines).
    """
    last: tuple[str, str] | None = None   # (kind, attr or key) the next continuation extends
    for number, text in lines:
        body = text[1:].strip()
        match = _KEY_LINE.fullmatch(text.rstrip("\r\n"))
        if not body:
            last = None
            continue
        if match is None:
            if last is None:
                meta.comments.append(body)
            else:
                _extend(meta, last, body)
            continue
        key, value = match.group(1), match.group(2).strip()
        canonical, attr = _LOOKUP.get(key.lower(), (key, None))
        if attr is None:
            previous = meta.other.get(key)
            meta.other[key] = value if previous is None else previous + "\n" + value
            last = ("other", key)
        elif canonical in LIST_KEYS:
            getattr(meta, attr).append(value)
            last = ("list", attr)
        elif canonical in INT_KEYS:
            token = value.split()[0] if value.split() else ""
            try:
                setattr(meta, attr, int(token))
            except ValueError:
                meta.warnings.append(
                    f"{source}:{number}: header {canonical}: not an integer: {value!r} (ignored)")
            last = None
        else:
            setattr(meta, attr, value)
            last = ("text", attr)


def _extend(meta: TraceMeta, last: tuple[str, str], text: str) -> None:
    kind, name = last
    if kind == "list":
        items = getattr(meta, name)
        items[-1] = (items[-1] + "\n" + text) if items[-1] else text
    elif kind == "other":
        meta.other[name] = (meta.other[name] + "\n" + text) if meta.other[name] else text
    else:
        current = getattr(meta, name)
        setattr(meta, name, (current + "\n" + text) if current else text)


def header_lines(meta: TraceMeta) -> list[str]:
    """The header of ``meta`` as SWF comment lines (without newlines), standard keys first.

    Multi-line values are written as a key line followed by indented continuation lines,
    which :func:`parse_header` joins back.
    """
    out: list[str] = []

    def emit(key: str, value) -> None:
        if value is None:
            return
        first, *rest = str(value).split("\n")
        out.append(f"; {key}: {first}")
        out.extend(f";     {line}" for line in rest)

    for key in ("Version", "Computer", "Installation", "Acknowledge", "Information",
                "Conversion"):
        emit(key, getattr(meta, TEXT_KEYS[key]))
    for key in ("MaxJobs", "MaxRecords"):
        emit(key, getattr(meta, INT_KEYS[key]))
    emit("Preemption", meta.preemption)
    emit("UnixStartTime", meta.unix_start_time)
    emit("TimeZone", meta.time_zone)
    for key in ("TimeZoneString", "StartTime", "EndTime"):
        emit(key, getattr(meta, TEXT_KEYS[key]))
    for key in ("MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory"):
        emit(key, getattr(meta, INT_KEYS[key]))
    emit("AllowOveruse", meta.allow_overuse)
    for key, value in meta.other.items():
        emit(key, value)
    for key, count_key in (("Queue", "MaxQueues"), ("Partition", "MaxPartitions")):
        emit(count_key, getattr(meta, INT_KEYS[count_key]))
        for item in getattr(meta, LIST_KEYS[key]):
            emit(key, item)
    for note in meta.notes:
        emit("Note", note)
    return out
