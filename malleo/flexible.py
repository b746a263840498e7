"""Workload synthesis: which rigid trace jobs the emulator turns into flexible ones.

This is not part of the scheduler's policy (:class:`malleo.policy.Policy`, which a live
agent reads): a live job declares its own flexibility (``plugin/malleable/spec.py``).  A
replay takes a :class:`FlexibleJobs` beside its policy; the TOML ``[flexible]`` table and
the options ``--malleable``, ``--flex-*``, ``--min-factor``, ``--max-factor`` set it
(docs/malleability.md, docs/policy-file.md).  The knobs are defined once in
``malleo.knobs`` (table ``flexible``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from malleo.knobs import table_knobs

__all__ = ["FlexibleJobs", "FLEXIBLE_KEYS"]

FLEXIBLE_KEYS = tuple(table_knobs("flexible"))
"""The keys of the ``[flexible]`` table, in file order."""


@dataclass(frozen=True)
class FlexibleJobs:
    """Which trace jobs become moldable or malleable and their size range.  The default
    (``fraction`` 0) keeps every job rigid: the replay is then exactly the rigid one.

    Attributes:
        fraction: share in [0, 1] of the eligible jobs made flexible, chosen by ``seed``.
        kind: what the chosen jobs become: ``malleable`` or ``moldable``.
        seed: seed of the choice and of per-job speedup parameters (``LO~HI`` ranges of
            the policy's ``malleability.speedup``).
        min_procs: rule: only jobs of at least this many processors are eligible.
        queues: rule: only jobs of these SWF queues are eligible (empty: any).
        users: rule: only jobs of these SWF users are eligible (empty: any).
        min_factor: a flexible job's min size is max(1, floor(p0 x min_factor)).
        max_factor: its max size is min(P, ceil(p0 x max_factor)) (>= p0).
    """

    fraction: float = 0.0
    kind: str = "malleable"
    seed: int = 0
    min_procs: int = 1
    queues: tuple[int, ...] = ()
    users: tuple[int, ...] = ()
    min_factor: float = 0.5
    max_factor: float = 2.0

    def __post_init__(self) -> None:
        for name, k in table_knobs("flexible").items():
            object.__setattr__(self, name, k.check(getattr(self, name)))

    @property
    def enabled(self) -> bool:
        """True when some job may be flexible (fraction > 0)."""
        return float(self.fraction) > 0.0

    def describe(self) -> str:
        """A short name, e.g. ``50% malleable``."""
        return f"{float(self.fraction) * 100:g}% {self.kind}"

    def replace(self, **changes: Any) -> "FlexibleJobs":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The ``[flexible]`` table as plain data (lists for the rule tuples)."""
        return {key: (list(v) if isinstance(v, tuple) else v)
                for key, v in ((k, getattr(self, k)) for k in FLEXIBLE_KEYS)}
