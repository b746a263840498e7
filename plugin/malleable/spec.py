"""How a job declares itself malleable: its Slurm comment.

A malleable job is submitted with ``--comment=malleo:min=MIN,max=MAX,period=SECONDS``:

- ``min``, ``max``: the node counts it may be resized between (1 <= min <= max);
- ``period``: the shortest interval in seconds between two questions the job asks the agent
  (its check-in period; the client library rate-limits to it).

The agent reads the comment from ``scontrol show job`` (``Comment=``); a job without it is
rigid and the reconfiguration endpoint refuses to resize it.
"""
from dataclasses import dataclass

PREFIX = "malleo:"
MAX_NODES = 100_000
"""Upper bound accepted for any node count (a sanity limit, far above real machines)."""


class SpecError(ValueError):
    """A malleo comment that does not parse; the message names the bad part."""


@dataclass(frozen=True)
class DeclaredMalleability:
    """A job's declared malleability.

    Attributes:
        min_nodes: fewest nodes the job may be shrunk to (>= 1).
        max_nodes: most nodes it may be expanded to (>= min_nodes).
        period: seconds between two check-ins at least (>= 1).
    """

    min_nodes: int
    max_nodes: int
    period: int

    def comment(self) -> str:
        """The ``--comment`` value declaring this malleability."""
        return f"{PREFIX}min={self.min_nodes},max={self.max_nodes},period={self.period}"


def parse(comment: str | None) -> DeclaredMalleability | None:
    """The malleability a job comment declares; None when it declares none.

    Raises:
        SpecError: the comment starts with ``malleo:`` but is not exactly
            ``malleo:min=A,max=B,period=S`` with 1 <= A <= B <= 100000 and S >= 1.
    """
    if not comment or not comment.strip().startswith(PREFIX):
        return None
    body = comment.strip()[len(PREFIX):]
    fields: dict[str, int] = {}
    for part in body.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("min", "max", "period"):
            raise SpecError(f"malleo comment {comment!r}: {part!r} is not min=, max= or period=")
        if key in fields:
            raise SpecError(f"malleo comment {comment!r}: {key} given twice")
        if not value.strip().isdigit():
            raise SpecError(f"malleo comment {comment!r}: {key}={value!r} is not a whole number")
        fields[key] = int(value)
    missing = [k for k in ("min", "max", "period") if k not in fields]
    if missing:
        raise SpecError(f"malleo comment {comment!r}: missing {', '.join(missing)}")
    lo, hi, period = fields["min"], fields["max"], fields["period"]
    if not 1 <= lo <= hi <= MAX_NODES:
        raise SpecError(f"malleo comment {comment!r}: need 1 <= min <= max <= {MAX_NODES}")
    if period < 1:
        raise SpecError(f"malleo comment {comment!r}: period must be >= 1 s")
    return DeclaredMalleability(lo, hi, period)
