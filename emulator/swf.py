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

import bz2
import gzip
import lzma
import os
import warnings
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

import malleo
from malleo._core import _swfscan
from malleo.emulator.swf_clean import DROP_REASONS, OVERRUN, PROCS_FROM, derive
from malleo.emulator.swf_fields import FIELD_NUMBER, FIELDS, FLOAT_FIELDS, MISSING
from malleo.emulator.swf_header import TraceMeta, header_lines, parse_header
from malleo.errors import TraceError

__all__ = ["FIELDS", "FLOAT_FIELDS", "MISSING", "DERIVED", "BAD_LINE_KINDS", "DROP_REASONS",
           "TraceMeta", "read_swf", "write_swf"]

DERIVED: dict[str, type] = {"procs": np.int32, "runtime": np.int64, "estimate": np.int64}
"""Derived columns appended after the 18 fields, with their dtypes."""

BAD_LINE_KINDS: dict[int, str] = {
    _swfscan.BAD_FIELD_COUNT: "field_count",
    _swfscan.BAD_NUMBER: "not_a_number",
    _swfscan.BAD_INTEGER: "not_an_integer",
    _swfscan.BAD_RANGE: "out_of_range",
}
"""Scanner report code -> name used in ``meta.bad_lines`` (plus ``negative_submit``)."""

_IS_INT = np.array([name not in FLOAT_FIELDS for name in FIELDS], dtype=np.uint8)
_INT64_LIMIT = 2.0 ** 63
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_EXAMPLES_PER_KIND = 3   # bad-line messages kept in meta.warnings per kind (lenient mode)


def read_swf(path: str | os.PathLike, *, procs: int | None = None,
             procs_from: str = "allocated", overrun: str = "extend",
             lenient: bool = False) -> tuple[pd.DataFrame, TraceMeta]:
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
    source = os.fspath(path)
    text = _load(source)
    meta = TraceMeta(source=source, options={"procs": procs, "procs_from": procs_from,
                                             "overrun": overrun, "lenient": lenient})
    ints, floats, offsets, comments, bad, counts = _swfscan.scan(text, _IS_INT, lenient)
    numbers = _line_numbers(text, [start for start, _ in comments])
    parse_header([(number, text[start:end].decode("utf-8", "replace"))
                  for number, (start, end) in zip(numbers, comments)], meta, source)
    job_lines = int(offsets.size) + len(bad)
    meta.lines = {"total": counts["lines"], "comment": counts["comment"],
                  "blank": counts["blank"], "job": job_lines}
    columns = _drop_bad_lines(_fields(ints, floats), offsets, bad, text, meta, lenient)
    del text   # free the decompressed bytes before building the table
    if job_lines == 0 and not comments:
        raise TraceError(f"{source}: empty file: no job lines")
    if job_lines == 0:
        raise TraceError(f"{source}: no job lines (header only)")
    if columns["submit_time"].size == 0:
        raise TraceError(f"{source}: no valid job lines "
                         f"({sum(meta.bad_lines.values())} bad lines skipped)")

    meta.procs, meta.procs_source = _machine_size(procs, meta, source)
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
        table = {name: columns[name] for name in FIELDS} | derived
    else:
        table = {name: columns[name][keep_index] for name in FIELDS}
        table.update({name: derived[name][keep_index] for name in DERIVED})
    jobs = pd.DataFrame(table, copy=False)
    meta.lines["kept"] = len(jobs)
    return jobs, meta


def _fields(ints: np.ndarray, floats: np.ndarray) -> dict[str, np.ndarray]:
    """Field name -> its row of the scanner's int64 or float64 array (a view)."""
    rows_int, rows_float = iter(ints), iter(floats)
    return {name: next(rows_float if name in FLOAT_FIELDS else rows_int) for name in FIELDS}


def _drop_bad_lines(columns: dict[str, np.ndarray], offsets: np.ndarray, bad: list,
                    text: bytes, meta: TraceMeta, lenient: bool) -> dict[str, np.ndarray]:
    """Raise on the first bad job line, or (lenient) count them all in ``meta.bad_lines``
    with a few example messages in ``meta.warnings``; returns the good lines' fields.

    The scanner reports malformed lines; negative submit times are found here.  In
    strict mode the scanner stopped at its first report, so a negative submit among the
    rows it returned comes earlier in the file and is the one raised."""
    source = meta.source
    negative = np.flatnonzero(columns["submit_time"] < 0)
    if not lenient:
        if negative.size:
            raise TraceError(_negative_submit_message(source, text, offsets[negative[0]]))
        if bad:
            raise TraceError(_bad_line_message(source, text, *bad[0]))
        return columns
    counts = dict.fromkeys(BAD_LINE_KINDS.values(), 0) | {"negative_submit": 0}
    examples: dict[str, list[str]] = {kind: [] for kind in counts}
    for report in bad:
        kind = BAD_LINE_KINDS[report[1]]
        counts[kind] += 1
        if len(examples[kind]) < _EXAMPLES_PER_KIND:
            examples[kind].append(_bad_line_message(source, text, *report))
    if negative.size:
        counts["negative_submit"] = int(negative.size)
        examples["negative_submit"] = [_negative_submit_message(source, text, offsets[i])
                                       for i in negative[:_EXAMPLES_PER_KIND]]
        columns = {name: np.delete(values, negative) for name, values in columns.items()}
    meta.bad_lines = {kind: n for kind, n in counts.items() if n}
    if meta.bad_lines:
        detail = ", ".join(f"{n} {kind}" for kind, n in meta.bad_lines.items())
        meta.warnings.append(f"{source}: skipped {sum(meta.bad_lines.values())} bad job "
                             f"lines ({detail})")
        for kind in meta.bad_lines:
            meta.warnings.extend(examples[kind])
    return columns


def _load(source: str) -> bytes | bytearray:
    """The decompressed bytes of ``source``; TraceError naming the file on any failure."""
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise TraceError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{source}: is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"{source}: cannot read: {exc.strerror or exc}") from None
    for magic, kind in _MAGIC:
        if raw.startswith(magic):
            return _decompress(source, raw, kind)
        if kind != "bzip2" and raw and len(raw) < len(magic) and magic.startswith(raw):
            raise TraceError(f"{source}: truncated {kind} file: {len(raw)} bytes")
    return raw


_DECOMPRESSORS = {"gzip": lambda: zlib.decompressobj(wbits=31),
                  "bzip2": bz2.BZ2Decompressor, "xz": lzma.LZMADecompressor}
_CHUNK = 1 << 22   # bytes of output per decompression call


def _decompress(source: str, raw: bytes, kind: str) -> bytearray:
    """Decompress every concatenated stream (member) of ``raw``.

    Output is appended in chunks to one growing buffer: unlike a one-shot decompress,
    which assembles its result from blocks and then copies it, the peak memory is about
    the output's size, not twice it."""
    out, data = bytearray(), raw
    try:
        while data:
            decompressor = _DECOMPRESSORS[kind]()
            if kind == "gzip":
                while not decompressor.eof:
                    chunk = decompressor.decompress(data, _CHUNK)
                    data = decompressor.unconsumed_tail
                    out += chunk
                    if not chunk and not data:
                        break
            else:
                out += decompressor.decompress(data, _CHUNK)
                while not decompressor.eof and not decompressor.needs_input:
                    out += decompressor.decompress(b"", _CHUNK)
            if not decompressor.eof:
                raise TraceError(f"{source}: truncated {kind} file: the compressed data "
                                 f"ends before its end marker")
            data = decompressor.unused_data
            if kind == "gzip":
                data = data.lstrip(b"\x00")   # gzip files may be padded with zeros
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise TraceError(f"{source}: cannot decompress {kind} data: {exc}") from None
    return out


def _line_number(text: bytes, offset: int) -> int:
    """1-based number of the line starting at byte ``offset``."""
    return text.count(b"\n", 0, offset) + 1


def _line_numbers(text: bytes, offsets: list[int]) -> list[int]:
    """1-based line numbers of lines starting at ascending byte ``offsets`` (one pass)."""
    numbers, line, previous = [], 1, 0
    for offset in offsets:
        line += text.count(b"\n", previous, offset)
        previous = offset
        numbers.append(line)
    return numbers


def _line_at(text: bytes, offset: int) -> str:
    end = text.find(b"\n", offset)
    return text[offset:end if end >= 0 else len(text)].decode("utf-8", "replace")


def _bad_line_message(source: str, text: bytes, line_start: int, kind: int, field: int,
                      token_start: int, token_end: int) -> str:
    where = f"{source}:{_line_number(text, line_start)}"
    if kind == _swfscan.BAD_FIELD_COUNT:
        return f"{where}: expected {len(FIELDS)} fields, found {field}"
    token = text[token_start:token_end].decode("utf-8", "replace")
    what = {_swfscan.BAD_NUMBER: "not a number", _swfscan.BAD_INTEGER: "not an integer",
            _swfscan.BAD_RANGE: "out of range for a 64-bit integer"}[kind]
    return f"{where}: field {field} ({FIELDS[field - 1]}): {what}: {token!r}"


def _negative_submit_message(source: str, text: bytes, line_start: int) -> str:
    number = FIELD_NUMBER["submit_time"]
    token = _line_at(text, int(line_start)).split()[number - 1]
    return (f"{source}:{_line_number(text, int(line_start))}: field {number} (submit_time): "
            f"negative submit time: {token}")


def _machine_size(option: int | None, meta: TraceMeta, source: str) -> tuple[int, str]:
    if option is not None:
        return int(option), "option"
    if meta.max_procs is not None and meta.max_procs > 0:
        return meta.max_procs, "MaxProcs"
    if meta.max_nodes is not None and meta.max_nodes > 0:
        return meta.max_nodes, "MaxNodes"
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
