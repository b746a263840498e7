"""Read ``squeue --json`` and ``sinfo --json`` in both schemas malleo meets.

- Slurm 22.05 (openapi v0.0.38, Debian 12): plain numbers (``null`` when unset, 0 for an unset
  time), ``job_state`` a string, node ``state`` a lower-case string plus ``state_flags``;
  ``sinfo --json`` lists ``nodes``.
- Slurm 24.11 (data_parser v0.0.41/v0.0.42, Debian 13): numbers wrapped as
  ``{"set": bool, "infinite": bool, "number": N}``, ``job_state`` and node states arrays,
  ``hold`` a boolean; ``sinfo --json`` lists ``sinfo`` entries (one per node and partition
  with ``-N``), each naming its nodes under ``nodes.nodes``.

The functions take the decoded document and return model objects; they never filter (the
backend filters client-side, since ``squeue --json`` ignores ``-j``/``-t``).  ``squeue --json``
is decoded by msgspec into typed records (:class:`SqueueDocument`) holding only the fields
malleo reads, in every version's shape; the rest of each job (over a hundred fields) is
skipped without building Python objects (issue 16: 10,000 jobs in about 15 ms).
"""
from __future__ import annotations

from typing import Any

import msgspec

from malleo import slurm_values as values
from malleo.plugin.backends import hostlist
from malleo.plugin.backends.errors import SlurmParseError
from malleo.plugin.backends.model import Job, Node

_BASE_JOB_STATES = frozenset({
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
    "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"})
_BASE_NODE_STATES = frozenset({
    "IDLE", "MIXED", "ALLOCATED", "DOWN", "ERROR", "FUTURE", "UNKNOWN", "COMPLETING"})


def number(value, source: str = "value") -> int | None:
    """An integer from either schema; None when unset or infinite
    (:func:`malleo.slurm_values.number`).

    Raises:
        SlurmParseError: not a number (the message names ``source``).
    """
    try:
        return values.number(value, source)
    except ValueError as exc:
        raise SlurmParseError(str(exc)) from None


def _epoch(value, source: str) -> int | None:
    """Epoch seconds, None for unset (0 in 22.05, set=false in 24.11)."""
    n = number(value, source)
    return n if n else None


def _states(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.upper()] if value else []
    return [str(s).upper() for s in value]


def job_state(value) -> str:
    """The base state of a job from a string (22.05) or a flag array (24.11).

    COMPLETING, which 24.11 lists as a flag next to the base state, wins: the job still
    holds its nodes.
    """
    states = _states(value)
    if "COMPLETING" in states:
        return "COMPLETING"
    for s in states:
        if s in _BASE_JOB_STATES:
            return s
    return states[0] if states else "UNKNOWN"


def slurm_version(doc: dict) -> tuple[int, int, int] | None:
    """(major, minor, micro) from a document's ``meta``, None when absent."""
    meta = doc.get("meta") or {}
    slurm = meta.get("Slurm") or meta.get("slurm") or {}
    ver = slurm.get("version") or {}
    try:
        return int(ver["major"]), int(ver["minor"]), int(ver.get("micro", 0))
    except (KeyError, TypeError, ValueError):
        return None


def errors(doc: dict | SqueueDocument | SinfoDocument) -> list[str]:
    """The messages of a document's ``errors`` list (empty when Slurm reported none)."""
    out = []
    items = doc.get("errors") if isinstance(doc, dict) else doc.errors
    for err in items or []:
        if isinstance(err, dict):
            parts = [str(err[k]) for k in ("description", "error") if err.get(k)]
            out.append(": ".join(parts) or repr(err))
        else:
            out.append(str(err))
    return out


class _Number(msgspec.Struct, gc=False):
    """24.11+'s wrapped number ``{"set": bool, "infinite": bool, "number": N}``."""

    set: bool = True
    infinite: bool = False
    number: int | float | str | None = None


#: A number field in any schema: 22.05's plain value (int, null, rarely a float or a digit
#: string) or 24.11+'s wrapped struct; :func:`_count` reads both.
_AnyNumber = int | float | bool | str | None | _Number


class _ResourceNodes(msgspec.Struct, gc=False):
    """24.11+'s ``job_resources.nodes`` object (only its host list is read)."""

    list: str = ""


class _Resources(msgspec.Struct, gc=False):
    """``job_resources``: 22.05 names the nodes as a string, 24.11+ as ``nodes.list``."""

    nodes: str | _ResourceNodes | None = None


class _JobRecord(msgspec.Struct, gc=False):
    """The fields malleo reads from one ``squeue --json`` job (every version); the decoder
    skips the other hundred or so without building them (issue 16)."""

    job_id: int | str | None = None
    name: str | None = None
    user_name: str | None = None
    user_id: _AnyNumber = None
    partition: str | None = None
    job_state: str | list[str] | None = None
    state_reason: str | None = None
    priority: _AnyNumber = None
    hold: bool | None = None
    nodes: str | None = None
    job_resources: _Resources | None = None
    submit_time: _AnyNumber = None
    start_time: _AnyNumber = None
    end_time: _AnyNumber = None
    time_limit: _AnyNumber = None
    node_count: _AnyNumber = None
    max_nodes: _AnyNumber = None
    cpus: _AnyNumber = None
    required_nodes: str | None = None
    comment: str | None = None


class SqueueDocument(msgspec.Struct, gc=False):
    """A decoded ``squeue --json`` document: its jobs (None when the list is missing), the
    ``errors`` list and ``meta`` as plain JSON values."""

    jobs: list[_JobRecord] | None = None
    errors: list[Any] | None = None
    meta: Any = None


_SQUEUE_DECODER = msgspec.json.Decoder(SqueueDocument)
_SENTINELS = frozenset({values.NO_VAL, values.INFINITE, values.NO_VAL64, values.INFINITE64})


def _decode(data, doc_type, decoder, command: str):
    """``data`` (text, bytes, or a dict decoded already) as a ``doc_type`` through
    ``decoder``; a SlurmParseError naming ``command`` and the bad field's path."""
    try:
        if isinstance(data, dict):
            return msgspec.convert(data, doc_type)
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise SlurmParseError(f"{command}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise SlurmParseError(f"{command}: output is not JSON ({exc})") from None


def decode_squeue(data: str | bytes | dict) -> SqueueDocument:
    """``squeue --json`` output (text or bytes), or a document already decoded to a dict,
    as a typed :class:`SqueueDocument` (msgspec: no Python object for the fields malleo
    does not read; 3.8 MB of 10,000 jobs in about 15 ms).

    Raises:
        SlurmParseError: not JSON, or a field of a type no Slurm version uses (the message
            gives its path, ``$.jobs[3].priority``).
    """
    return _decode(data, SqueueDocument, _SQUEUE_DECODER, "squeue --json")


def _count(value, owner, field: str, kind: str = "squeue --json job") -> int | None:
    """:func:`number` with the two common shapes (a plain int, a set finite struct) read
    inline; the message of a bad value names the record (``kind owner``) and the field."""
    cls = value.__class__
    if cls is _Number:
        if value.infinite or not value.set:
            return None
        value = value.number
        cls = value.__class__
    if cls is int:
        return None if value in _SENTINELS else value
    return number(value, f"{kind} {owner} {field}")


def _job(rec: _JobRecord) -> Job:
    """One record as a :class:`Job`.  Written for speed (issue 16: 10,000 jobs a cycle): a
    plain int (22.05) is read inline, anything else goes through :func:`_count`; the Job is
    built positionally (twice as fast as by keyword), in the field order of ``model.Job``."""
    jid = rec.job_id
    if jid is None:
        raise SlurmParseError("squeue --json: a job without job_id")
    state = rec.job_state
    if state.__class__ is not str or state not in _BASE_JOB_STATES:
        state = job_state(state)
    reason = rec.state_reason or ""
    if reason == "None":
        reason = ""
    hold = rec.hold
    is_held = hold if hold is not None else (state == "PENDING" and reason.startswith("JobHeld"))
    started = state != "PENDING"
    s = _SENTINELS
    v = rec.start_time
    start = (v if v.__class__ is int and v not in s else _count(v, jid, "start_time")) or None
    v = rec.node_count
    num_nodes = (v if v.__class__ is int and v not in s else _count(v, jid, "node_count")) or 0
    v = rec.time_limit
    limit = v if v.__class__ is int and v not in s else _count(v, jid, "time_limit")
    v = rec.submit_time
    submit = (v if v.__class__ is int and v not in s else _count(v, jid, "submit_time")) or 0
    v = rec.user_id
    uid = v if v.__class__ is int and v not in s else _count(v, jid, "user_id")
    v = rec.cpus
    cpus = (v if v.__class__ is int and v not in s else _count(v, jid, "cpus")) or 0
    v = rec.priority
    priority = (v if v.__class__ is int and v not in s else _count(v, jid, "priority")) or 0
    if started:
        nodes = rec.nodes
        if not nodes and rec.job_resources is not None:
            res_nodes = rec.job_resources.nodes
            nodes = res_nodes.list if res_nodes.__class__ is _ResourceNodes else res_nodes
        node_list = tuple(hostlist.expand(nodes)) if nodes else ()
        v = rec.end_time
        end = (v if v.__class__ is int and v not in s else _count(v, jid, "end_time")) or None
        max_nodes = None
    else:
        node_list, end = (), None
        max_nodes = _count(rec.max_nodes, jid, "max_nodes")
        if not max_nodes or max_nodes <= num_nodes:
            max_nodes = None
    required = rec.required_nodes
    return Job(
        jid if jid.__class__ is int else int(jid),          # job_id
        rec.name or "",                                     # name
        rec.user_name or "",                                # user
        uid,                                                # user_id
        rec.partition or "",                                # partition
        state,                                              # state
        reason,                                             # reason
        submit,                                             # submit_time
        start if started else None,                         # start_time
        None if started else start,                         # expected_start
        end,                                                # end_time
        None if limit is None else limit * 60,              # time_limit (minutes -> s)
        num_nodes,                                          # num_nodes
        max_nodes,                                          # max_nodes
        cpus,                                               # num_cpus
        priority,                                           # priority
        node_list,                                          # node_list
        tuple(hostlist.expand(required)) if required else (),   # required_nodes
        is_held,                                            # is_held
        rec.comment or "",                                  # comment
    )


def jobs_from_squeue(doc: SqueueDocument | dict | str | bytes) -> list[Job]:
    """Every job of a ``squeue --json`` document, in the document's order.

    Args:
        doc: the command's output (text or bytes), a dict decoded from it, or the
            :class:`SqueueDocument` of :func:`decode_squeue`.

    Raises:
        SlurmParseError: the document has no ``jobs`` list, a job lacks its id, or a field
            has a type no Slurm version writes.
    """
    if not isinstance(doc, SqueueDocument):
        doc = decode_squeue(doc)
    if doc.jobs is None:
        raise SlurmParseError("squeue --json: no 'jobs' list in the document")
    return [_job(r) for r in doc.jobs]


def _split_node_states(states: list[str]) -> tuple[str, tuple[str, ...]]:
    base = next((s for s in states if s in _BASE_NODE_STATES), states[0] if states else "UNKNOWN")
    flags = tuple(s for s in states if s != base)
    return base, flags


class _SinfoNode(msgspec.Struct, gc=False):
    """22.05's ``sinfo --json`` node record (the fields malleo reads)."""

    name: str | None = None
    state: str | list[str] | None = None
    state_flags: str | list[str] | None = None
    cpus: _AnyNumber = None
    alloc_cpus: _AnyNumber = None
    partitions: list[str] | None = None


class _SinfoNodeNames(msgspec.Struct, gc=False):
    nodes: list[str] | None = None


class _SinfoNodeState(msgspec.Struct, gc=False):
    state: str | list[str] | None = None


class _SinfoCpus(msgspec.Struct, gc=False):
    maximum: _AnyNumber = None
    allocated: _AnyNumber = None


class _SinfoPartition(msgspec.Struct, gc=False):
    name: str | None = None


class _SinfoEntry(msgspec.Struct, gc=False):
    """23.11+'s ``sinfo`` entry: one per node and partition with ``-N``."""

    nodes: _SinfoNodeNames | None = None
    node: _SinfoNodeState | None = None
    cpus: _SinfoCpus | None = None
    partition: _SinfoPartition | None = None


class SinfoDocument(msgspec.Struct, gc=False):
    """A decoded ``sinfo --json`` document: 22.05's ``nodes`` or 23.11+'s ``sinfo`` list
    (None when absent), ``errors`` and ``meta`` as plain JSON values."""

    nodes: list[_SinfoNode] | None = None
    sinfo: list[_SinfoEntry] | None = None
    errors: list[Any] | None = None
    meta: Any = None


_SINFO_DECODER = msgspec.json.Decoder(SinfoDocument)


def decode_sinfo(data: str | bytes | dict) -> SinfoDocument:
    """``sinfo --json`` output (text or bytes) or a dict decoded from it, as a typed
    :class:`SinfoDocument` (msgspec, the unread fields skipped: issue 16).

    Raises:
        SlurmParseError: not JSON, or a field of a type no Slurm version uses (its path).
    """
    return _decode(data, SinfoDocument, _SINFO_DECODER, "sinfo --json")


def nodes_from_sinfo(doc: SinfoDocument | dict | str | bytes) -> list[Node]:
    """Every node of a ``sinfo --json`` (22.05) or ``sinfo -N --json`` (24.11) document.

    A node listed under several partitions appears once, with all its partitions.

    Args:
        doc: the command's output (text or bytes), a dict decoded from it, or the
            :class:`SinfoDocument` of :func:`decode_sinfo`.

    Raises:
        SlurmParseError: neither a ``nodes`` nor a ``sinfo`` list is present, a node has
            no name, or a field has a type no Slurm version writes.
    """
    if not isinstance(doc, SinfoDocument):
        doc = decode_sinfo(doc)
    merged: dict[str, Node] = {}

    def add(node: Node) -> None:
        old = merged.get(node.name)
        if old is None:
            merged[node.name] = node
            return
        parts = old.partitions + tuple(p for p in node.partitions if p not in old.partitions)
        merged[node.name] = Node(old.name, old.state, old.flags, old.cpus, old.alloc_cpus, parts)

    if doc.nodes is not None:                       # 22.05, openapi v0.0.38
        for rec in doc.nodes:
            if rec.name is None:
                raise SlurmParseError("sinfo --json: a node without name")
            base, flags = _split_node_states(_states(rec.state))
            flags += tuple(f for f in _states(rec.state_flags) if f not in flags)
            add(Node(name=rec.name, state=base, flags=flags,
                     cpus=_count(rec.cpus, rec.name, "cpus", "sinfo node") or 0,
                     alloc_cpus=_count(rec.alloc_cpus, rec.name, "alloc_cpus", "sinfo node") or 0,
                     partitions=tuple(rec.partitions or ())))
    elif doc.sinfo is not None:                     # 23.11+ (24.11: data_parser v0.0.41/42)
        split: dict = {}                            # state -> (base, flags): few distinct
        for entry in doc.sinfo:
            names = (entry.nodes.nodes if entry.nodes is not None else None) or []
            if not names:
                continue
            state = entry.node.state if entry.node is not None else None
            key = tuple(state) if state.__class__ is list else state
            base_flags = split.get(key)
            if base_flags is None:
                base_flags = split[key] = _split_node_states(_states(state))
            base, flags = base_flags
            cpus = entry.cpus or _SinfoCpus()
            per_node = _count(cpus.maximum, names[0], "cpus.maximum", "sinfo node") or 0
            alloc_total = _count(cpus.allocated, names[0], "cpus.allocated", "sinfo node") or 0
            part = entry.partition.name if entry.partition is not None else None
            for name in names:
                add(Node(name=name, state=base, flags=flags, cpus=per_node,
                         alloc_cpus=alloc_total // len(names),
                         partitions=(part,) if part else ()))
    else:
        raise SlurmParseError("sinfo --json: neither a 'nodes' nor a 'sinfo' list in the document")
    return list(merged.values())
