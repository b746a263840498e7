"""An sprio-like breakdown of a pending job's multifactor priority.

The core computes ``priority = weight_age * age + weight_size * size + weight_fairshare *
fairshare + queue/partition term`` at each priority calculation (``calc_period``), every
factor in [0, 1] (:class:`malleo.policy.Multifactor`, docs/scheduling-semantics.md).  This
module recomputes the factors of one job at the time the core computed its priority (the
last calculation, ``PlanState.calc_time``, for a job the previous pass had prioritised; the
pass time for a new one) with the fair share of the last calculation, so the weighted
factors add up to the priority ``Decisions.priority`` reports (tests/test_live_plan.py
checks the sum).

Live jobs carry no SWF queue or partition number, so the queue/partition term is 0.
"""
from __future__ import annotations

from dataclasses import dataclass

FACTORS = ("age", "size", "fairshare")
"""Factor names, in sprio's column order."""


@dataclass(frozen=True)
class Factors:
    """One job's factors (each in [0, 1]) and their weighted sum.

    Attributes:
        age: min(now - submit, max_age) / max_age at the calculation time.
        size: (total - size + 1) / total favouring small jobs, size / total favouring large.
        fairshare: the owner's fair-share factor at the calculation time.
        weighted: factor name -> weight * factor.
        priority: the sum of ``weighted``.
        calc_time: the calculation time (epoch seconds) the factors are taken at.
    """

    age: float
    size: float
    fairshare: float
    weighted: dict[str, float]
    priority: float
    calc_time: int


def factors(multifactor, *, calc_time: int, submit: int, size: int, total: int,
            fairshare: float) -> Factors:
    """The factors of one job (see the module docstring).

    Args:
        multifactor: the policy's :class:`malleo.policy.Multifactor`.
        calc_time: epoch seconds of the priority calculation.
        submit: the job's submit time (epoch seconds).
        size: the job's size (plan units).
        total: the machine's size (plan units), >= 1.
        fairshare: the owner's fair-share factor in [0, 1].
    """
    age = min(max(calc_time - submit, 0), multifactor.max_age) / multifactor.max_age
    if multifactor.size_favor == "small":
        size_f = (total - size + 1) / total
    else:
        size_f = size / total
    weighted = {"age": multifactor.weight_age * age,
                "size": multifactor.weight_size * size_f,
                "fairshare": multifactor.weight_fairshare * fairshare}
    total_priority = weighted["age"] + weighted["size"] + weighted["fairshare"]
    return Factors(age, size_f, fairshare, weighted, total_priority, int(calc_time))
