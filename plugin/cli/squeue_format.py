"""squeue-style output of status rows (:mod:`malleo.plugin.agent.status_view`).

A format string is squeue's ``--format``/``-o``: ``%[.][WIDTH]LETTER``, where ``.`` right-
justifies and WIDTH pads (and truncates, as squeue does) the field; malleo's own fields are
named in braces, ``%[.][WIDTH]{name}``.  Other text is copied.  Letters (squeue's meaning):

====  ==================  =============================================================
%i    JOBID               job id
%P    PARTITION           partition
%j    NAME                job name
%u    USER                user name
%t    ST                  state, compact (PD, R, CG, S)
%T    STATE               state
%l    TIME_LIMIT          time limit, ``D-HH:MM:SS`` or UNLIMITED
%D    NODES               node count
%C    CPUS                CPU count
%N    NODELIST            allocated nodes
%r    REASON              Slurm's pending reason
%R    NODELIST(REASON)    nodes of a running job, ``(reason)`` of a pending one
%Q    PRIORITY            Slurm's priority now
%S    START_TIME          start (running), planned start (pending), UTC
%e    END_TIME            expected end (start + planning estimate), UTC
%V    SUBMIT_TIME         submit time, UTC
====  ==================  =============================================================

Braced fields: ``{rank}`` (1 = the job malleo wants first), ``{wanted}`` (the priority the
agent writes; empty when unchanged), ``{note}`` (starts now, reservation, why not planned),
``{size}`` (plan units), ``{est}`` (planning estimate, seconds), ``{backfilled}``.
"""
from __future__ import annotations

import re
import time

from malleo.errors import MalleoError

DEFAULT_FORMAT = ("%.8i %.9P %.10j %.8u %.2t %.11l %.5D %.4{rank} %.10Q %.10{wanted} "
                  "%.20S %.20e %{note} %R")
"""The columns ``malleo slurm status`` prints without ``-o``."""

_TOKEN = re.compile(r"%(\.?)(\d*)(?:([A-Za-z])|\{([a-z_]+)\})")
_COMPACT = {"PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG", "SUSPENDED": "S",
            "CONFIGURING": "CF", "RESIZING": "RS", "COMPLETED": "CD", "CANCELLED": "CA",
            "FAILED": "F", "TIMEOUT": "TO"}


def utc(epoch) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` (UTC) for epoch seconds; ``N/A`` for None or negative."""
    if epoch is None or epoch < 0:
        return "N/A"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


def duration(seconds) -> str:
    """squeue's time limit form: ``D-HH:MM:SS`` (``HH:MM:SS`` under a day), UNLIMITED."""
    if seconds is None:
        return "UNLIMITED"
    days, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def _wanted(row):
    wanted = row.get("wanted_priority")
    return "" if wanted is None or wanted == row.get("priority") else str(wanted)


def _start(row):
    return utc(row.get("start_time") if row.get("state") != "PENDING" else row.get("planned_start"))


def _nodelist_reason(row):
    if row.get("node_list"):
        return row["node_list"]
    return f"({row.get('reason') or 'None'})"


FIELDS = {
    "i": ("JOBID", lambda r: str(r["job_id"])),
    "P": ("PARTITION", lambda r: r.get("partition", "")),
    "j": ("NAME", lambda r: r.get("name", "")),
    "u": ("USER", lambda r: r.get("user", "")),
    "t": ("ST", lambda r: _COMPACT.get(r.get("state", ""), r.get("state", ""))),
    "T": ("STATE", lambda r: r.get("state", "")),
    "l": ("TIME_LIMIT", lambda r: duration(r.get("time_limit"))),
    "D": ("NODES", lambda r: str(r.get("nodes", ""))),
    "C": ("CPUS", lambda r: str(r.get("cpus", ""))),
    "N": ("NODELIST", lambda r: r.get("node_list", "")),
    "r": ("REASON", lambda r: r.get("reason") or "None"),
    "R": ("NODELIST(REASON)", _nodelist_reason),
    "Q": ("PRIORITY", lambda r: str(r.get("priority", ""))),
    "S": ("START_TIME", _start),
    "e": ("END_TIME", lambda r: utc(r.get("expected_end"))),
    "V": ("SUBMIT_TIME", lambda r: utc(r.get("submit_time"))),
    "rank": ("RANK", lambda r: "" if r.get("rank") is None else str(r["rank"])),
    "wanted": ("WANTED", _wanted),
    "note": ("NOTE", lambda r: r.get("note", "")),
    "size": ("SIZE", lambda r: str(r.get("size", ""))),
    "est": ("ESTIMATE", lambda r: "" if r.get("est") is None else str(r["est"])),
    "backfilled": ("BACKFILLED", lambda r: "yes" if r.get("backfilled") else ""),
}
"""Field key (letter or braced name) -> (header, row -> text)."""


def parse(fmt: str) -> list:
    """The pieces of a format string: literal text, or (key, right, width) tuples.

    Raises:
        MalleoError: an unknown field (named, with the list of known ones).
    """
    pieces, pos = [], 0
    for m in _TOKEN.finditer(fmt):
        if m.start() > pos:
            pieces.append(fmt[pos:m.start()])
        key = m.group(3) or m.group(4)
        if key not in FIELDS:
            known = " ".join(f"%{k}" if len(k) == 1 else f"%{{{k}}}" for k in FIELDS)
            raise MalleoError(f"--format: unknown field {m.group(0)!r}; known: {known}")
        pieces.append((key, m.group(1) == ".", int(m.group(2)) if m.group(2) else 0))
        pos = m.end()
    if pos < len(fmt):
        pieces.append(fmt[pos:])
    return pieces


def _cell(text: str, right: bool, width: int) -> str:
    if not width:
        return text
    text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def render(rows: list[dict], fmt: str = DEFAULT_FORMAT, *, header: bool = True) -> list[str]:
    """The lines of ``rows`` in format ``fmt`` (a header line first unless ``header`` is
    False, as ``squeue --noheader``)."""
    pieces = parse(fmt)
    lines = []
    if header:
        lines.append("".join(p if isinstance(p, str) else _cell(FIELDS[p[0]][0], p[1], p[2])
                             for p in pieces).rstrip())
    for row in rows:
        lines.append("".join(p if isinstance(p, str) else
                             _cell(FIELDS[p[0]][1](row), p[1], p[2])
                             for p in pieces).rstrip())
    return lines
