"""Validation of reconfiguration requests (the format is in
:mod:`malleo.plugin.malleable.protocol`): every field checked, anything else refused."""
from dataclasses import dataclass

from malleo.plugin.malleable import protocol
from malleo.plugin.malleable.spec import MAX_NODES

FIELDS = ("version", "op", "job_id", "nodes")
MAX_JOB_ID = 2**32 - 2
"""Largest job id Slurm hands out (job ids are 32-bit; 0xfffffffe is the last valid one)."""


class BadRequest(ValueError):
    """A request that is not well formed; the message says which field and why."""


@dataclass(frozen=True)
class Request:
    """A well-formed request: job ``job_id`` runs on ``nodes`` nodes and asks what to do."""

    job_id: int
    nodes: int


def _whole(obj: dict, key: str, lo: int, hi: int) -> int:
    value = obj[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{key}: must be an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise BadRequest(f"{key}: {value} is outside {lo}..{hi}")
    return value


def parse(line: bytes) -> Request:
    """The request a line holds.

    Raises:
        BadRequest: not UTF-8, not JSON, nested deeper than ``protocol.MAX_DEPTH``, not an
            object, missing or extra keys, a wrong version or op, or an integer field of the
            wrong type or out of range.
    """
    try:
        obj = protocol.loads(line)
    except ValueError as exc:
        raise BadRequest(f"request is {exc}") from None
    if not isinstance(obj, dict):
        raise BadRequest(f"request must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in FIELDS if k not in obj]
    extra = sorted(k for k in obj if k not in FIELDS)
    if missing or extra:
        raise BadRequest("request keys must be exactly " + ", ".join(FIELDS)
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unknown {', '.join(map(repr, extra))}" if extra else ""))
    if type(obj["version"]) is not int or obj["version"] != protocol.VERSION:
        raise BadRequest(f"version: only {protocol.VERSION} is understood, got {obj['version']!r}")
    if obj["op"] != "check":
        raise BadRequest(f"op: only 'check' is understood, got {obj['op']!r}")
    return Request(job_id=_whole(obj, "job_id", 1, MAX_JOB_ID),
                   nodes=_whole(obj, "nodes", 1, MAX_NODES))
