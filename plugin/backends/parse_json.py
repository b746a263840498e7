"""Read ``squeue --json`` and ``sinfo --json`` in both schemas malleo meets.

- Slurm 22.05 (openapi v0.0.38, Debian 12): plain numbers (``null`` when unset, 0 for an unset
  time), ``job_state`` a string, node ``state`` a lower-case string plus ``state_flags``;
  ``sinfo --json`` lists ``nodes``.
- Slurm 24.11 (data_parser v0.0.41/v0.0.42, Debian 13): numbers wrapped as
  ``{"set": bool, "infinite": bool, "number": N}``, ``job_state`` and node states arrays,
  ``hold`` a boolean; ``sinfo --json`` lists ``sinfo`` entries (one per node and partition
  with ``-N``), each naming its nodes under ``nodes.nodes``.

The functions take the decoded document and return model objects; they never filter (the
backend filters client-side, since ``squeue --json`` ignores ``-j``/``-t``).
"""
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


def errors(doc: dict) -> list[str]:
    """The messages of a document's ``errors`` list (empty when Slurm reported none)."""
    out = []
    for err in doc.get("errors") or []:
        if isinstance(err, dict):
            parts = [str(err[k]) for k in ("description", "error") if err.get(k)]
            out.append(": ".join(parts) or repr(err))
        else:
            out.append(str(err))
    return out


def _job(rec: dict) -> Job:
    jid = rec.get("job_id")
    src = f"squeue --json job {jid}"
    if jid is None:
        raise SlurmParseError("squeue --json: a job without job_id")
    state = job_state(rec.get("job_state"))
    reason = rec.get("state_reason") or ""
    if reason == "None":
        reason = ""
    priority = number(rec.get("priority"), src + " priority") or 0
    hold = rec.get("hold")
    is_held = bool(hold) if isinstance(hold, bool) else (
        state == "PENDING" and reason.startswith("JobHeld"))
    nodes = rec.get("nodes") or ""
    if not nodes:
        res = rec.get("job_resources") or {}
        res_nodes = res.get("nodes")
        nodes = res_nodes.get("list", "") if isinstance(res_nodes, dict) else (res_nodes or "")
    start = _epoch(rec.get("start_time"), src + " start_time")
    end = _epoch(rec.get("end_time"), src + " end_time")
    limit_min = number(rec.get("time_limit"), src + " time_limit")
    started = state != "PENDING"
    num_nodes = number(rec.get("node_count"), src + " node_count") or 0
    max_nodes = number(rec.get("max_nodes"), src + " max_nodes")
    return Job(
        job_id=int(jid),
        name=rec.get("name") or "",
        user=rec.get("user_name") or "",
        user_id=number(rec.get("user_id"), src + " user_id"),
        partition=rec.get("partition") or "",
        state=state,
        reason=reason,
        submit_time=_epoch(rec.get("submit_time"), src + " submit_time") or 0,
        start_time=start if started else None,
        expected_start=None if started else start,
        end_time=end if started else None,
        time_limit=None if limit_min is None else limit_min * 60,
        num_nodes=num_nodes,
        max_nodes=max_nodes if not started and max_nodes and max_nodes > num_nodes else None,
        num_cpus=number(rec.get("cpus"), src + " cpus") or 0,
        priority=priority,
        node_list=tuple(hostlist.expand(nodes)) if started else (),
        required_nodes=tuple(hostlist.expand(rec.get("required_nodes") or "")),
        is_held=is_held,
        comment=rec.get("comment") or "",
    )


def jobs_from_squeue(doc: dict) -> list[Job]:
    """Every job of a ``squeue --json`` document, in the document's order.

    Raises:
        SlurmParseError: the document has no ``jobs`` list or a job lacks its id.
    """
    recs = doc.get("jobs")
    if not isinstance(recs, list):
        raise SlurmParseError("squeue --json: no 'jobs' list in the document")
    return [_job(r) for r in recs]


def _split_node_states(states: list[str]) -> tuple[str, tuple[str, ...]]:
    base = next((s for s in states if s in _BASE_NODE_STATES), states[0] if states else "UNKNOWN")
    flags = tuple(s for s in states if s != base)
    return base, flags


def nodes_from_sinfo(doc: dict) -> list[Node]:
    """Every node of a ``sinfo --json`` (22.05) or ``sinfo -N --json`` (24.11) document.

    A node listed under several partitions appears once, with all its partitions.

    Raises:
        SlurmParseError: neither a ``nodes`` nor a ``sinfo`` list is present.
    """
    merged: dict[str, Node] = {}

    def add(node: Node) -> None:
        old = merged.get(node.name)
        if old is None:
            merged[node.name] = node
            return
        parts = old.partitions + tuple(p for p in node.partitions if p not in old.partitions)
        merged[node.name] = Node(old.name, old.state, old.flags, old.cpus, old.alloc_cpus, parts)

    if isinstance(doc.get("nodes"), list):          # 22.05, openapi v0.0.38
        for rec in doc["nodes"]:
            states = _states(rec.get("state"))
            base, flags = _split_node_states(states)
            flags += tuple(f for f in _states(rec.get("state_flags")) if f not in flags)
            add(Node(name=rec["name"], state=base, flags=flags,
                     cpus=number(rec.get("cpus"), f"sinfo node {rec['name']} cpus") or 0,
                     alloc_cpus=number(rec.get("alloc_cpus"), "alloc_cpus") or 0,
                     partitions=tuple(rec.get("partitions") or ())))
    elif isinstance(doc.get("sinfo"), list):        # 23.11+ (24.11: data_parser v0.0.41/42)
        for entry in doc["sinfo"]:
            names = (entry.get("nodes") or {}).get("nodes") or []
            if not names:
                continue
            base, flags = _split_node_states(_states((entry.get("node") or {}).get("state")))
            cpus = entry.get("cpus") or {}
            per_node = number(cpus.get("maximum"), "sinfo cpus.maximum") or 0
            alloc_total = number(cpus.get("allocated"), "sinfo cpus.allocated") or 0
            part = (entry.get("partition") or {}).get("name")
            for name in names:
                add(Node(name=name, state=base, flags=flags, cpus=per_node,
                         alloc_cpus=alloc_total // len(names),
                         partitions=(part,) if part else ()))
    else:
        raise SlurmParseError("sinfo --json: neither a 'nodes' nor a 'sinfo' list in the document")
    return list(merged.values())
