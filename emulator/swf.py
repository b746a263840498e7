"""Read and write Standard Workload Format (SWF) traces, the Parallel Workloads Archive format.

An SWF file holds one job per line: 18 numbers separated by runs of spaces or tabs, -1
meaning "not recorded" (field names and numbers: :mod:`malleo.emulator.swf_fields`).
Lines starting with ``;`` are comments; the header's ``; Key: value`` lines describe the
machine and the log (:mod:`malleo.emulator.swf_header`).  Files may be plain or
compressed with gzip, bzip2 or xz (recognised by their first bytes, whatever their name).

Reading is one pass of the compiled tokenizer :func:`malleo._core._swfscan.scan` over the
decompressed bytes; everything after it is vectorised.  See docs/traces.md for the
cleaning rules and every option.
"""
from __future__ import annotations

import os
import re
import stat
import warnings
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

import malleo
from malleo._core import _swfscan
from malleo.emulator.swf_clean import DROP_REASONS, OVERRUN, PROCS_FROM, derive
from malleo.emulator.swf_fields import FIELD_NUMBER, FIELDS, FLOAT_FIELDS, MISSING
from malleo.emulator.swf_header import TraceMeta, header_lines, parse_header
from malleo.errors import TraceError
from malleo.limits import MAX_PROCS, MAX_TIME

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FIELDS", "FLOAT_FIELDS", "MISSING", "DERIVED", "BAD_LINE_KINDS", "DROP_REASONS",
           "TraceMeta", "read_swf", "write_swf"]

DERIVED: dict[str, type] = {"procs": np.int32, "runtime": np.int64, "estimate": np.int64}
"""Derived columns appended after the 18 fields, with their dtypes."""

BAD_LINE_KINDS: dict[int, str] = {
    _swfscan.BAD_FIELD_COUNT: "field_count",
    _swfscan.BAD_NUMBER: "not_a_number",
    _swfscan.BAD_INTEGER: "not_an_integer",
    _swfscan.BAD_RANGE: "out_of_range",
    _swfscan.BAD_INEXACT: "inexact",
    _swfscan.BAD_INFINITE: "not_finite",
}
"""Scanner report code -> name used in ``meta.bad_lines`` (plus ``negative_submit`` and
``beyond_limit``, found after the scan)."""

_IS_INT = np.array([name not in FLOAT_FIELDS for name in FIELDS], dtype=np.uint8)
_INT64_LIMIT = 2.0 ** 63
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_EXAMPLES_PER_KIND = 3   # bad-line messages kept in meta.warnings per kind (lenient mode)


def read_swf(path: str | os.PathLike, *, procs: int | None = None,
             procs_from: str = "allocated", overrun: str = "extend",
             lenient: bool = False, as_columns: bool = False,
             fields: Sequence[str] | None = None, narrow: Sequence[str] = ()
             ) -> tuple[pd.DataFrame | dict[str, np.ndarray], TraceMeta]:
    """Read an SWF trace into a job table.

    Args:
        path: the trace, plain or compressed (gzip, bzip2, xz).
        procs: machine size in processors.  Default: the header's MaxProcs, else MaxNodes.
        procs_from: "allocated" (default) or "requested": which processor field gives a
            job's ``procs``; the other is used when the preferred one is missing (<= 0).
        overrun: a job that ran longer than it requested: "extend" (default) raises its
            estimate to its runtime; "cut" cuts its runtime at its request.
        lenient: skip malformed job lines and count them in ``meta.bad_lines`` instead of
            raising on the first.
        as_columns: return the jobs as a dict of numpy columns (the same arrays the
            DataFrame would hold) and never import pandas: the replay driver's way
            (issue 16: start-up and peak memory).
        fields: the SWF fields to keep (default all 18, in ``FIELDS`` order); the ones the
            checks and the derived columns read (``submit_time``, ``run_time``,
            ``allocated_procs``, ``requested_procs``, ``requested_time``) are always kept.
            The others are still parsed and checked, but never stored.
        narrow: integer fields (not among those five) stored as int32 when every value
            fits (else int64 as usual): 4 bytes a job less each, narrowed before the
            derived columns are built (issue 16: ``malleo replay``'s peak memory).

    Returns:
        ``(jobs, meta)``.  ``jobs`` has the 18 SWF fields (int64, float64 for
        :data:`FLOAT_FIELDS`) and the derived ``procs`` (int32, processors), ``runtime``
        and ``estimate`` (int64, seconds), one row per replayable job, index 0..n-1,
        sorted stably by ``submit_time`` (file order breaks ties).  Every kept job has
        ``1 <= procs <= meta.procs`` and ``0 <= runtime <= estimate``.  ``meta`` is a
        :class:`TraceMeta`: the header plus the machine size used, dropped-job counts by
        reason, line counts, warnings and the source.

    Raises:
        TraceError: the file is missing, unreadable, not validly compressed, empty or
            header-only, has a malformed job line (``FILE:LINE: field N (name): ...``;
            in lenient mode only when no job line is valid), or no machine size is known.

    Warns:
        UserWarning: when job lines are not in submit-time order (says how many).

    Examples:
        >>> jobs, meta = read_swf("SDSC-SP2-1998-4.2-cln.swf.gz")  # doctest: +SKIP
        >>> meta.procs, meta.dropped["runtime_missing"]             # doctest: +SKIP
        (128, 5671)
    """
    if procs_from not in PROCS_FROM:
        raise TraceError(f"procs_from must be one of {', '.join(PROCS_FROM)}, not {procs_from!r}")
    if overrun not in OVERRUN:
        raise TraceError(f"overrun must be one of {', '.join(OVERRUN)}, not {overrun!r}")
    if procs is not None and procs <= 0:
        raise TraceError(f"procs must be a positive number of processors, not {procs}")
    if procs is not None and procs > MAX_PROCS:
        raise TraceError(f"procs: {procs} is beyond the largest machine malleo supports "
                         f"({MAX_PROCS:,} processors)")
    source = os.fspath(path)
    meta = TraceMeta(source=source, options={"procs": procs, "procs_from": procs_from,
                                             "overrun": overrun, "lenient": lenient})
    if fields is not None:
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise TraceError(f"fields: unknown SWF field(s) {', '.join(unknown)}")
        wanted = set(fields) | set(_ALWAYS_READ)
        keep = [name in wanted for name in FIELDS]
    else:
        keep = None
    refused = sorted(set(narrow) - (set(FIELDS) - set(_ALWAYS_READ) - set(FLOAT_FIELDS)))
    if refused:
        raise TraceError(f"narrow: {', '.join(refused)}: not an integer SWF field outside "
                         f"{', '.join(_ALWAYS_READ)}")
    scanner = _swfscan.Scanner(_IS_INT, lenient, _COMMENT_BUDGET, keep)
    _scan_file(source, scanner)
    ints, floats, numbers = scanner.result()
    comments = scanner.comments
    parse_header([(number, text.decode("utf-8", "replace")) for number, text in comments],
                 meta, source)
    if scanner.comments_skipped:
        meta.warnings.append(f"{source}: {scanner.comments_skipped} comment lines past the "
                             f"first {_COMMENT_BUDGET:,} bytes of comments were not read")
    bad = scanner.bad
    job_lines = int(numbers.size) + sum(scanner.bad_counts.values())
    meta.lines = {"total": scanner.lines, "comment": scanner.ncomment,
                  "blank": scanner.blank, "job": job_lines}
    columns = _drop_bad_lines(_fields(ints, floats), numbers, bad, scanner.bad_counts, meta,
                              lenient)
    # the line numbers and the scanner's lists are not read again: a column of the scanner
    # is unmapped as soon as no array views it (issue 16: the read's peak is below)
    del ints, floats, numbers
    for name in narrow:
        if name in columns:
            columns[name] = _narrowed(columns[name])
    if job_lines == 0 and not scanner.ncomment:
        raise TraceError(f"{source}: empty file: no job lines")
    if job_lines == 0:
        raise TraceError(f"{source}: no job lines (header only)")
    if columns["submit_time"].size == 0:
        raise TraceError(f"{source}: no valid job lines "
                         f"({sum(meta.bad_lines.values())} bad lines skipped)")

    meta.procs, meta.procs_source = _machine_size(procs, meta, source, comments)
    derived, keep, dropped = derive(columns, meta.procs, procs_from=procs_from,
                                    overrun=overrun)
    meta.dropped = dropped

    submit = columns["submit_time"]
    meta.unsorted = int(np.count_nonzero(submit[1:] < np.maximum.accumulate(submit)[:-1]))
    keep_index = np.flatnonzero(keep)
    if meta.unsorted:
        order = np.argsort(submit[keep_index], kind="stable")
        keep_index = keep_index[order]
        lines = "job line has" if meta.unsorted == 1 else "job lines have"
        message = (f"{source}: {meta.unsorted} {lines} a submit time earlier than a line "
                   f"above them; the table is sorted by submit time")
        meta.warnings.append(message)
        warnings.warn(message, UserWarning, stacklevel=2)

    if keep_index.size == submit.size and not meta.unsorted:   # every line kept, in order
        table = {name: columns[name] for name in FIELDS if name in columns} | derived
    else:
        table = {name: columns[name][keep_index] for name in FIELDS if name in columns}
        table.update({name: derived[name][keep_index] for name in DERIVED})
    meta.lines["kept"] = int(table["submit_time"].size)
    if as_columns:
        return table, meta
    import pandas as pd

    return pd.DataFrame(table, copy=False), meta


def _narrowed(values: np.ndarray) -> np.ndarray:
    """``values`` as int32 if every one fits, else as they are."""
    limits = np.iinfo(np.int32)
    if values.size and (int(values.min()) < limits.min or int(values.max()) > limits.max):
        return values
    return values.astype(np.int32)


_ALWAYS_READ = ("submit_time", "run_time", "allocated_procs", "requested_procs",
                "requested_time")
"""Fields ``read_swf`` reads whatever ``fields`` asks: the value checks and ``derive``."""


def _fields(ints: list[np.ndarray | None], floats: list[np.ndarray | None]
            ) -> dict[str, np.ndarray]:
    """Field name -> its array among the scanner's int64 and float64 columns (the fields
    the scanner did not keep are left out)."""
    rows_int, rows_float = iter(ints), iter(floats)
    pairs = ((name, next(rows_float if name in FLOAT_FIELDS else rows_int)) for name in FIELDS)
    return {name: values for name, values in pairs if values is not None}


def _drop_bad_lines(columns: dict[str, np.ndarray], numbers: np.ndarray, bad: list,
                    bad_counts: dict[int, int], meta: TraceMeta,
                    lenient: bool) -> dict[str, np.ndarray]:
    """Raise on the first bad job line, or (lenient) count them all in ``meta.bad_lines``
    with a few example messages in ``meta.warnings``; returns the good lines' fields.

    The scanner reports malformed lines; negative submit times and values beyond
    :mod:`malleo.limits` are found here.  In strict mode the scanner stopped at its first
    report, so such a value among the rows it returned comes earlier in the file and is
    the one raised.  ``numbers`` holds the 1-based line number of each row."""
    source = meta.source
    found = _value_problems(columns, numbers, source)   # kind -> (rows, messages)
    if not lenient:
        first = min(((int(numbers[rows[0]]), messages[0])
                     for rows, messages in found.values() if rows.size), default=None)
        if first is not None:
            raise TraceError(first[1])
        if bad:
            raise TraceError(_bad_line_message(source, *bad[0]))
        return columns
    counts = dict.fromkeys(BAD_LINE_KINDS.values(), 0) | dict.fromkeys(found, 0)
    for code, n in bad_counts.items():
        counts[BAD_LINE_KINDS[code]] = n
    examples: dict[str, list[str]] = {kind: [] for kind in counts}
    for report in bad:      # the scanner keeps the first few of each kind
        kind = BAD_LINE_KINDS[report[1]]
        if len(examples[kind]) < _EXAMPLES_PER_KIND:
            examples[kind].append(_bad_line_message(source, *report))
    drop = np.zeros(numbers.size, dtype=bool)
    for kind, (rows, messages) in found.items():
        counts[kind] = int(rows.size)
        examples[kind] = messages
        drop[rows] = True
    if drop.any():
        columns = {name: values[~drop] for name, values in columns.items()}
    meta.bad_lines = {kind: n for kind, n in counts.items() if n}
    if meta.bad_lines:
        detail = ", ".join(f"{n} {kind}" for kind, n in meta.bad_lines.items())
        meta.warnings.append(f"{source}: skipped {sum(meta.bad_lines.values())} bad job "
                             f"lines ({detail})")
        for kind in meta.bad_lines:
            meta.warnings.extend(examples[kind])
    return columns


_LIMITED: dict[str, tuple[int, str]] = {
    **{name: (MAX_TIME, f"the largest time malleo supports (2**36 = {MAX_TIME:,} s)")
       for name in ("submit_time", "run_time", "requested_time")},
    **{name: (MAX_PROCS, f"the largest size malleo supports (2**24 = {MAX_PROCS:,} "
                         "processors)") for name in ("allocated_procs", "requested_procs")},
}
"""Field -> (largest value accepted, what that is): times in seconds, sizes in processors.
These are the fields the core consumes; the others are carried through unchecked."""


def _value_problems(columns: dict[str, np.ndarray], numbers: np.ndarray, source: str
                    ) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Rows with a negative submit time (``negative_submit``) or a value beyond
    :data:`_LIMITED` (``beyond_limit``): kind -> (row indexes ascending, messages of the
    first few)."""
    found: dict[str, tuple[np.ndarray, list[str]]] = {}
    number = FIELD_NUMBER["submit_time"]
    rows = np.flatnonzero(columns["submit_time"] < 0)
    found["negative_submit"] = (rows, [
        f"{source}:{numbers[i]}: field {number} (submit_time): negative submit time: "
        f"{columns['submit_time'][i]}" for i in rows[:_EXAMPLES_PER_KIND]])
    over = np.zeros(numbers.size, dtype=bool)
    for name, (limit, _what) in _LIMITED.items():
        over |= columns[name] > limit
    rows = np.flatnonzero(over)
    messages = []
    for i in rows[:_EXAMPLES_PER_KIND]:
        name = next(n for n, (limit, _w) in _LIMITED.items() if columns[n][i] > limit)
        messages.append(f"{source}:{numbers[i]}: field {FIELD_NUMBER[name]} ({name}): "
                        f"{columns[name][i]} is beyond {_LIMITED[name][1]}")
    found["beyond_limit"] = (rows, messages)
    return found


def _scan_file(source: str, scanner) -> None:
    """Feed ``source``'s decompressed text to ``scanner`` in chunks of whole lines.

    Line ends are normalised (``\r\n`` and a lone ``\r`` become ``\n``); a line longer
    than :data:`MAX_LINE` bytes is refused (a trace line is a few hundred bytes: this is
    not a trace, and the limit keeps memory bounded on endless input).  A strict scan
    stops reading at its first bad line."""
    tail = b""
    for chunk in _chunks(source):
        data = tail + chunk if tail else chunk
        held = b""
        if data.endswith(b"\r"):           # may be the first half of a \r\n
            data, held = data[:-1], b"\r"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = data.rfind(b"\n") + 1
        tail = data[end:] + held
        if end:
            scanner.feed(memoryview(data)[:end] if end < len(data) else data)   # no copy
            if scanner.stopped:
                return
        if len(tail) > MAX_LINE:
            raise TraceError(f"{source}:{scanner.lines + 1}: a line longer than "
                             f"{MAX_LINE:,} bytes: not an SWF trace")
    if tail:
        scanner.feed(tail.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))


def _chunks(source: str) -> Iterator[bytes]:
    """The decompressed bytes of ``source`` in chunks; TraceError naming the file on any
    failure.  Only a regular file or a pipe is read (a device such as /dev/zero is
    refused before reading)."""
    try:
        handle = open(source, "rb")
    except FileNotFoundError:
        raise TraceError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{source}: is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"{source}: cannot read: {exc.strerror or exc}") from None
    with handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise TraceError(f"{source}: is a directory, not a trace file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise TraceError(f"{source}: not a regular file or a pipe ({_file_kind(mode)}): "
                             "refused")
        try:
            first = handle.read(_READ_CHUNK)
            kind = next((kind for magic, kind in _MAGIC if first.startswith(magic)), None)
            if kind is None:
                for magic, name in _MAGIC:
                    if name != "bzip2" and first and len(first) < len(magic) and \
                            magic.startswith(first):
                        raise TraceError(f"{source}: truncated {name} file: {len(first)} bytes")
                while first:
                    yield first
                    first = handle.read(_READ_CHUNK)
                return
            yield from _decompress(source, handle, first, kind)
        except OSError as exc:
            raise TraceError(f"{source}: cannot read: {exc.strerror or exc}") from None


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _decompressor(kind: str):
    """A new decompressor of ``kind`` and the exceptions its bad data raises (bz2 and lzma
    are imported only for their own files: start-up, issue 16)."""
    if kind == "gzip":
        return zlib.decompressobj(wbits=31), (zlib.error,)
    if kind == "bzip2":
        import bz2

        return bz2.BZ2Decompressor(), ()
    import lzma

    return lzma.LZMADecompressor(), (lzma.LZMAError,)


_READ_CHUNK = 1 << 20   # bytes read from the file per call
_CHUNK = 1 << 20        # bytes of decompressed output per call (issue 16: see below)
MAX_LINE = 1 << 20
"""The longest line accepted, in bytes."""
_COMMENT_BUDGET = 1 << 24   # bytes of comment lines kept for the header


def _decompress(source: str, handle, data: bytes, kind: str) -> Iterator[bytes]:
    """Decompress every concatenated stream (member) of the file, ``data`` being its first
    bytes, yielding at most :data:`_CHUNK` bytes at a time: memory stays bounded whatever
    the ratio (a small gzip of 2**30 newlines never becomes one buffer)."""
    decompressor, errors = _decompressor(kind)
    try:
        while True:
            if decompressor.eof:                # the next member
                decompressor = _decompressor(kind)[0]
            while not decompressor.eof:
                if not data:
                    data = handle.read(_READ_CHUNK)
                    if not data:
                        raise TraceError(f"{source}: truncated {kind} file: the compressed "
                                         "data ends before its end marker")
                if kind == "gzip":
                    chunk = decompressor.decompress(data, _CHUNK)
                    data = decompressor.unconsumed_tail
                else:
                    chunk = decompressor.decompress(data, _CHUNK)
                    data = b""
                    while not decompressor.eof and not decompressor.needs_input:
                        if chunk:
                            yield chunk
                        chunk = decompressor.decompress(b"", _CHUNK)
                if chunk:
                    yield chunk
            data = decompressor.unused_data
            if kind == "gzip":
                data = data.lstrip(b"\x00")   # gzip files may be padded with zeros
            if not data:
                data = handle.read(_READ_CHUNK)
                if kind == "gzip":
                    data = data.lstrip(b"\x00")
                while not data:
                    more = handle.read(_READ_CHUNK)
                    if not more:
                        return
                    data = more.lstrip(b"\x00") if kind == "gzip" else more
    except (EOFError, ValueError, *errors) as exc:
        raise TraceError(f"{source}: cannot decompress {kind} data: {exc}") from None


def _bad_line_message(source: str, line: int, kind: int, field: int, token: bytes) -> str:
    where = f"{source}:{line}"
    if kind == _swfscan.BAD_FIELD_COUNT:
        return f"{where}: expected {len(FIELDS)} fields, found {field}"
    text = token.decode("utf-8", "replace")
    what = {_swfscan.BAD_NUMBER: "not a number", _swfscan.BAD_INTEGER: "not an integer",
            _swfscan.BAD_RANGE: "out of range for a 64-bit integer",
            _swfscan.BAD_INFINITE: "not finite (beyond the largest double)",
            _swfscan.BAD_INEXACT: "2**53 or more in float notation (not exact in a "
                                  "double): write it as an integer"}[kind]
    return f"{where}: field {field} ({FIELDS[field - 1]}): {what}: {text!r}"


def _machine_size(option: int | None, meta: TraceMeta, source: str,
                  comments: list[tuple[int, bytes]]) -> tuple[int, str]:
    if option is not None:
        return int(option), "option"
    for key, value in (("MaxProcs", meta.max_procs), ("MaxNodes", meta.max_nodes)):
        if value is not None and value > 0:
            if value > MAX_PROCS:
                line = next((number for number, text in comments
                             if re.match(rb";\s*" + key.encode() + rb"\s*:", text, re.I)), 1)
                raise TraceError(f"{source}:{line}: header {key}: {value} is beyond the "
                                 f"largest machine malleo supports (2**24 = {MAX_PROCS:,} "
                                 "processors); pass --procs to replay on a smaller one")
            return value, key
    raise TraceError(f"{source}: machine size unknown: the header has no MaxProcs or "
                     f"MaxNodes; pass the size in processors (procs=..., or --procs on "
                     f"the command line)")


def write_swf(path: str | os.PathLike, jobs: pd.DataFrame, meta: TraceMeta | None = None, *,
              source: str | None = None, policy: str | None = None,
              start: Sequence[int] | np.ndarray | pd.Series | None = None,
              notes: Sequence[str] = ()) -> None:
    """Write a job table (optionally a replayed schedule) as an SWF file.

    Args:
        path: output file; gzip-compressed when the name ends in ``.gz``.
        jobs: a table with the 18 SWF fields (extra columns are ignored, except the
            derived ``runtime`` and ``procs`` when ``start`` is given).
        meta: header to write (Version, Computer, MaxProcs, notes, ...).  MaxJobs and
            MaxRecords are set to the number of rows written.
        source: trace the schedule was replayed from (named in a Note).
        policy: the policy's name or description (named in a Note).
        start: start time (seconds) of each row, aligned with ``jobs``.  When given, the
            file is the replayed schedule: ``wait_time`` becomes ``start - submit_time``,
            ``run_time`` the job's ``runtime`` column and ``allocated_procs`` its
            ``procs`` column (when those columns exist); other fields are kept.
        notes: extra ``; Note:`` lines.

    Raises:
        TraceError: a required column is missing, ``start`` has the wrong length or
            precedes a submit time, or the file cannot be written.
    """
    target = os.fspath(path)
    missing = [name for name in FIELDS if name not in jobs.columns]
    if missing:
        raise TraceError(f"{target}: cannot write SWF: the table lacks columns {missing}")
    table = {name: jobs[name].to_numpy() for name in FIELDS}
    if start is not None:
        start_arr = np.asarray(start, dtype=np.int64)
        if start_arr.shape != (len(jobs),):
            raise TraceError(f"{target}: start has {start_arr.size} values for "
                             f"{len(jobs)} jobs")
        wait = start_arr - table["submit_time"].astype(np.int64)
        if (wait < 0).any():
            row = int(np.flatnonzero(wait < 0)[0])
            raise TraceError(f"{target}: job {table['job_number'][row]} starts before "
                             f"its submit time")
        table["wait_time"] = wait
        if "runtime" in jobs.columns:
            table["run_time"] = jobs["runtime"].to_numpy()
        if "procs" in jobs.columns:
            table["allocated_procs"] = jobs["procs"].to_numpy()

    header = meta if meta is not None else TraceMeta()
    header = TraceMeta(**{f: getattr(header, f) for f in _HEADER_FIELDS})
    header.notes = list(header.notes)
    header.max_jobs = header.max_records = len(jobs)
    if header.version is None:
        header.version = "2.2"
    if start is not None or source is not None or policy is not None:
        header.notes.append(f"replayed by malleo {malleo.__version__}"
                            + (f" from {source}" if source else "")
                            + (f" with policy {policy}" if policy else ""))
    if start is not None:
        header.notes.append("fields 3 (wait_time = start - submit), 4 (run_time) and 5 "
                            "(allocated_procs) are the replayed schedule's; the others "
                            "are the source's")
    header.notes.extend(notes)

    lines = "\n".join(header_lines(header)) + "\n;\n"
    body = _format_body(table)
    try:
        data = (lines + body).encode("utf-8")
        if target.endswith(".gz"):
            # Level 6: most of level 9's ratio on SWF text at a third of its time.
            import gzip

            with gzip.open(target, "wb", compresslevel=6) as handle:
                handle.write(data)
        else:
            with open(target, "wb") as handle:
                handle.write(data)
    except OSError as exc:
        raise TraceError(f"{target}: cannot write: {exc.strerror or exc}") from None


_HEADER_FIELDS = ("version", "computer", "installation", "acknowledge", "information",
                  "conversion", "preemption", "allow_overuse", "max_nodes", "max_procs",
                  "max_runtime", "max_memory", "max_queues", "max_partitions",
                  "unix_start_time", "time_zone", "time_zone_string", "start_time",
                  "end_time", "notes", "queues", "partitions", "other")


def _format_body(table: dict[str, np.ndarray]) -> str:
    """Job lines with right-aligned columns; integral values written bare, other floats
    in their shortest round-trip form (``repr``)."""
    formats, columns = [], []
    for name in FIELDS:
        values = np.asarray(table[name])
        if name in FLOAT_FIELDS:
            values = values.astype(np.float64, copy=False)
            integral = np.isfinite(values) & (values == np.trunc(values)) & \
                (np.abs(values) < _INT64_LIMIT)
            if not integral.all():
                strings = [str(int(v)) if ok else repr(v)
                           for v, ok in zip(values.tolist(), integral.tolist())]
                formats.append(f"%{max(map(len, strings), default=1)}s")
                columns.append(strings)
                continue
        ints = values.astype(np.int64)
        width = max(len(str(ints.min())), len(str(ints.max()))) if ints.size else 1
        formats.append(f"%{width}d")
        columns.append(ints.tolist())
    if not columns[0]:
        return ""
    line = " ".join(formats)
    return "\n".join([line % row for row in zip(*columns)]) + "\n"
