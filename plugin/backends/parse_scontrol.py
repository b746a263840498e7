"""Read ``scontrol show job|node|partition -o`` (one record per line, ``Key=Value`` pairs).

The text format is the same on Slurm 22.05 and 24.11 (scontrol has no ``--json`` on 22.05).
Times are printed in the controller host's local time zone (``2026-11-30T03:26:31``) and are
converted with the local zone of the process, which must therefore match the cluster's.
"""
import re
import time

from malleo import slurm_values as values
from malleo.plugin.backends import hostlist
from malleo.plugin.backends.errors import SlurmParseError
from malleo.plugin.backends.model import Job, Node, Partition

# A key starts a token: at the beginning or after a space, letters then word chars, '/' or ':'
# (``AllocNode:Sid``, ``CPUs/Task``), then '='. Values may contain spaces (JobName, Reason).
_KEY = re.compile(r"(?:^|(?<= ))([A-Za-z][A-Za-z0-9_/:]*)=")
_UNSET = ("", "(null)", "None", "N/A", "Unknown", "n/a")


def records(text: str) -> list[dict[str, str]]:
    """One dict per non-empty line of ``scontrol show ... -o`` output."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        keys = list(_KEY.finditer(line))
        rec = {}
        for i, m in enumerate(keys):
            end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
            rec[m.group(1)] = line[m.end():end].rstrip()
        out.append(rec)
    return out


def duration(text: str | None) -> int | None:
    """Seconds of a Slurm duration (:func:`malleo.slurm_values.duration`); None for
    UNLIMITED, Partition_Limit or unset.

    Raises:
        SlurmParseError: for text that is not a Slurm duration.
    """
    try:
        return values.duration(text)
    except ValueError as exc:
        raise SlurmParseError(f"duration: {exc}") from None


def timestamp(text: str | None) -> int | None:
    """Epoch seconds of scontrol's local ``YYYY-MM-DDTHH:MM:SS``; None for Unknown/None."""
    if text is None or text.strip() in _UNSET:
        return None
    try:
        return int(time.mktime(time.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        raise SlurmParseError(f"timestamp {text!r}: not YYYY-MM-DDTHH:MM:SS") from None


def _int(rec: dict, key: str, source: str, default: int | None = None) -> int | None:
    raw = rec.get(key)
    if raw is None or raw in _UNSET:
        return default
    head = raw.split("-")[0].split("(")[0]
    try:
        return int(head)
    except ValueError:
        raise SlurmParseError(f"{source}: {key}={raw!r} is not a number") from None


def job(rec: dict) -> Job:
    """A Job from one ``scontrol show job -o`` record."""
    src = f"scontrol show job {rec.get('JobId', '?')}"
    if "JobId" not in rec:
        raise SlurmParseError("scontrol show job: a record without JobId")
    state = rec.get("JobState", "UNKNOWN").upper()
    reason = rec.get("Reason", "")
    reason = "" if reason in _UNSET else reason
    user_field = rec.get("UserId", "")
    user, _, uid = user_field.partition("(")
    started = state != "PENDING"
    start = timestamp(rec.get("StartTime"))
    # NumNodes is "2" for a started job, "1-1" or "2-4" (min-max) for a pending one.
    num_nodes = _int(rec, "NumNodes", src, 0)
    _, _, upper = rec.get("NumNodes", "").partition("-")
    max_nodes = int(upper) if upper.isdigit() and not started and int(upper) > num_nodes else None
    return Job(
        job_id=int(rec["JobId"]),
        name=rec.get("JobName", ""),
        user=user,
        user_id=int(uid.rstrip(")")) if uid.rstrip(")").isdigit() else None,
        partition=rec.get("Partition", ""),
        state=state,
        reason=reason,
        submit_time=timestamp(rec.get("SubmitTime")) or 0,
        start_time=start if started else None,
        expected_start=None if started else start,
        end_time=timestamp(rec.get("EndTime")) if started else None,
        time_limit=duration(rec.get("TimeLimit")),
        num_nodes=num_nodes,
        max_nodes=max_nodes,
        num_cpus=_int(rec, "NumCPUs", src, 0),
        priority=_int(rec, "Priority", src, 0),
        node_list=tuple(hostlist.expand(rec.get("NodeList"))) if started else (),
        required_nodes=tuple(hostlist.expand(rec.get("ReqNodeList"))),
        is_held=state == "PENDING" and reason.startswith("JobHeld"),
        comment="" if rec.get("Comment") in (None, *_UNSET) else rec["Comment"],
    )


def node(rec: dict) -> Node:
    """A Node from one ``scontrol show node -o`` record (State=IDLE+DRAIN etc.)."""
    if "NodeName" not in rec:
        raise SlurmParseError("scontrol show node: a record without NodeName")
    src = f"scontrol show node {rec['NodeName']}"
    base, *flags = (rec.get("State") or "UNKNOWN").upper().split("+")
    parts = rec.get("Partitions", "")
    return Node(name=rec["NodeName"], state=base.rstrip("*~#!%$@^-"), flags=tuple(flags),
                cpus=_int(rec, "CPUTot", src, 0), alloc_cpus=_int(rec, "CPUAlloc", src, 0),
                partitions=tuple(p for p in parts.split(",") if p and parts not in _UNSET))


def partition(rec: dict) -> Partition:
    """A Partition from one ``scontrol show partition -o`` record."""
    if "PartitionName" not in rec:
        raise SlurmParseError("scontrol show partition: a record without PartitionName")
    src = f"scontrol show partition {rec['PartitionName']}"
    return Partition(name=rec["PartitionName"], nodes=tuple(hostlist.expand(rec.get("Nodes"))),
                     total_cpus=_int(rec, "TotalCPUs", src, 0),
                     max_time=duration(rec.get("MaxTime")),
                     state=rec.get("State", "UP").upper(),
                     is_default=rec.get("Default", "NO").upper() == "YES")
