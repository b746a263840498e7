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

from malleo.knobs import knob_fields, table_knobs

__all__ = ["FlexibleJobs", "FLEXIBLE_KEYS"]

FLEXIBLE_KEYS = tuple(table_knobs("flexible"))
"""The keys of the ``[flexible]`` table, in file order."""


@dataclass(frozen=True)
@knob_fields("flexible")
class FlexibleJobs:
    """Which trace jobs become moldable or malleable and their size range.  The default
    (``fraction`` 0) keeps every job rigid: the replay is then exactly the rigid one.

    Its fields are the ``[flexible]`` knobs of malleo.knobs.KNOBS (listed below,
    generated): a flexible job's min size is max(1, floor(p0 x min_factor)), its max size
    min(P, ceil(p0 x max_factor)) (>= p0); the seed also draws per-job speedup parameters
    (``LO~HI`` ranges of the policy's ``malleability.speedup``).
    """

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
