"""The policy compiled for the scheduling core: integer codes and parsed numbers.

The core (``malleo._core``) never imports ``malleo.policy``.  Each of its entrances
(``simulate``, ``simulate_malleable``, ``plan``) reads ``policy.core``, a
:class:`CorePolicy` that :func:`compile_policy` computes once per :class:`Policy` (and
caches on it).

:class:`CorePolicy` is generated from ``malleo.knobs.KNOBS``: one field per scheduler knob
(the top level, ``[multifactor]``, ``[malleability]``; ``knobs.core_knobs``), named as the
knob, holding :meth:`Knob.core_value`: a choice as its code (its index in the knob's
``choices``, the core's generated constant ``PREFIX_VALUE``), the speedup as its model's
code (``SPEEDUP_*``), numbers and flags as they are; plus the multifactor factor tables.
``*_CODES`` (name -> code) are the same codes for Python callers.  Times are integer
seconds.
"""
from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Any

from malleo.knobs import Knob, core_knobs, knob
from malleo.policy import Policy

__all__ = ["CorePolicy", "compile_policy", "make_core_policy_class", "codes",
           "ORDER_CODES", "ESTIMATE_CODES"]


def codes(key: str) -> dict[str, int]:
    """name -> core code of a choice (or speedup) knob's values, e.g.
    ``codes("backfill") == {"none": 0, "easy": 1, ...}``."""
    return {name: code for code, name in enumerate(knob(key).codes)}


ORDER_CODES = codes("order")
ESTIMATE_CODES = codes("estimate")

_CORE_TYPES = {"choice": "int", "speedup": "int", "int": "int", "float": "float",
               "bool": "bool"}


class _CorePolicyBase:
    """The derived flags the core's Python side reads (codes compared by name)."""

    @property
    def core(self) -> Any:
        """Itself: a compiled policy may be given wherever a Policy is."""
        return self

    @property
    def is_multifactor(self) -> bool:
        return self.order == ORDER_CODES["multifactor"]

    @property
    def is_learned(self) -> bool:
        """Planning estimates are learned online from finished jobs (estimate ``learned``)."""
        return self.estimate == ESTIMATE_CODES["learned"]

    @property
    def is_actual(self) -> bool:
        """Planning estimates are the real runtimes (estimate ``actual``)."""
        return self.estimate == ESTIMATE_CODES["actual"]


def make_core_policy_class(knobs: "tuple[Knob, ...] | None" = None) -> type:
    """The frozen dataclass of what the core reads of a policy: one field per scheduler
    knob (``knobs.core_knobs``, in KNOBS order; its :attr:`Knob.help` in the docstring),
    then ``queue_factors`` and ``partition_factors`` (((SWF number, factor in [0, 1]), ...),
    sorted)."""
    found = core_knobs(knobs)
    spec: list[Any] = [(k.name, _CORE_TYPES[k.type]) for k in found]
    spec += [("queue_factors", "tuple[tuple[int, float], ...]", field(default=())),
             ("partition_factors", "tuple[tuple[int, float], ...]", field(default=()))]
    doc = ["What the core reads of a policy: plain ints, floats and bools.", "",
           "Attributes (one per scheduler knob of malleo.knobs.KNOBS; a choice is its code):"]
    doc += [f"    {k.name}: {'code of ' if k.codes else ''}{k.help}"
            + (f" ({k.unit})" if k.unit else "") for k in found]
    doc += ["    queue_factors, partition_factors: multifactor ((SWF number, factor), ...)."]
    cls = make_dataclass("CorePolicy", spec, bases=(_CorePolicyBase,), frozen=True,
                         namespace={"__doc__": "\n".join(doc),
                                    "__module__": __name__})
    return cls


CorePolicy = make_core_policy_class()


def compile_policy(policy: Policy) -> Any:
    """The :class:`CorePolicy` of a validated :class:`Policy` (``policy.core`` caches it):
    every scheduler knob's value read from its table (``policy``, ``policy.multifactor``,
    ``policy.malleability``) and converted by :meth:`Knob.core_value`."""
    tables = {"": policy, "multifactor": policy.multifactor,
              "malleability": policy.malleability}
    values = {k.name: k.core_value(getattr(tables[k.table], k.name)) for k in core_knobs()}
    mf = policy.multifactor
    values["queue_factors"] = tuple(sorted((int(q), float(v))
                                           for q, v in dict(mf.queue_factors).items()))
    values["partition_factors"] = tuple(sorted((int(q), float(v))
                                               for q, v in dict(mf.partition_factors).items()))
    return CorePolicy(**values)
