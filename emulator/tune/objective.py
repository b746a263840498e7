"""Tuning objectives: one replay summary -> one score, always minimised.

An objective is a metric name or a weighted sum of them, ``"bsld"``, ``"p95_wait"``,
``"bsld+0.001*p95_wait"``, ``"2*bsld + 50*utilization"``.  Each term is
``[WEIGHT*]METRIC`` with WEIGHT > 0.  A metric where higher is better (utilization,
fairness, throughput) enters the sum negated, so every weight says "how much this
improvement is worth" and the score is minimised::

    score = sum(weight * metric  if lower is better  else  -weight * metric)

so ``utilization`` alone maximises utilization (score = -utilization).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from malleo.emulator.metrics import SUMMARY_KEYS
from malleo.errors import MalleoError

__all__ = ["METRICS", "Objective", "parse_objective", "RECORDED_METRICS"]

METRICS: dict[str, str] = {
    "bsld": "bsld_mean",
    "slowdown": "slowdown_mean",
    "wait": "wait_mean",
    "mean_wait": "wait_mean",
    "median_wait": "wait_median",
    "p95_wait": "wait_p95",
    "p99_wait": "wait_p99",
    "max_wait": "wait_max",
    "response": "response_mean",
    "utilization": "utilization",
    "makespan": "makespan",
    "throughput": "throughput",
    "fairness": "fairness_jain",
}
"""Objective metric name -> summary key (docs/metrics.md); every summary key with a
direction is accepted by its own name too (``bsld_mean``, ``wait_p95``...)."""

RECORDED_METRICS: tuple[str, ...] = tuple(k for k, (_, _, better) in SUMMARY_KEYS.items()
                                          if better is not None)
"""Summary keys recorded per trial and split part in the results file."""

_TERM = re.compile(r"\s*(?:(?P<weight>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*\*\s*)?"
                   r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*")


@dataclass(frozen=True)
class Objective:
    """A parsed objective: (weight, summary key, sign) terms; ``score`` is minimised.

    Attributes:
        text: the objective as given.
        terms: ``(weight, summary key, sign)`` with sign +1 for lower-is-better metrics
            and -1 for higher-is-better ones.
    """

    text: str
    terms: tuple[tuple[float, str, int], ...]

    def score(self, summary: Mapping[str, Any]) -> float:
        """The score of one replay summary (NaN when a metric is missing or NaN)."""
        total = 0.0
        for weight, key, sign in self.terms:
            value = summary.get(key)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return float("nan")
            total += sign * weight * float(value)
        return total

    def describe(self) -> str:
        """The formula in words, e.g. ``1*bsld_mean - 10*utilization (minimised)``."""
        parts = []
        for i, (weight, key, sign) in enumerate(self.terms):
            op = ("-" if sign < 0 else "") if i == 0 else (" - " if sign < 0 else " + ")
            parts.append(f"{op}{weight:g}*{key}")
        return "".join(parts) + " (minimised)"


def parse_objective(text: str) -> Objective:
    """``"bsld+0.001*p95_wait"`` -> :class:`Objective` (see the module docstring).

    Raises:
        MalleoError: an unknown metric, a weight <= 0, or text not of that form.
    """
    known = {**METRICS, **{k: k for k in RECORDED_METRICS}}
    terms = []
    for piece in text.split("+"):
        match = _TERM.fullmatch(piece)
        if not match:
            raise MalleoError(f"objective: cannot read term {piece.strip()!r} of {text!r}: "
                              "expected [WEIGHT*]METRIC terms joined by '+', e.g. "
                              "bsld+0.001*p95_wait")
        weight = float(match["weight"]) if match["weight"] else 1.0
        name = match["name"]
        if name not in known:
            raise MalleoError(f"objective: unknown metric {name!r} (known: "
                              + ", ".join(METRICS) + ", or a summary key)")
        if not weight > 0:
            raise MalleoError(f"objective: weight of {name} must be > 0, got {weight:g}")
        key = known[name]
        sign = -1 if SUMMARY_KEYS[key][2] == "higher" else 1
        terms.append((weight, key, sign))
    return Objective(text.strip(), tuple(terms))
