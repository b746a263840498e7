"""The scheduling policy: one value object shared by replay, compare, tune and the Slurm agent.

A :class:`Policy` is immutable and validated on construction.  Times are integer seconds,
sizes are processors.  ``malleo.policy`` also reads and writes the TOML policy format
(see docs/policy-file.md).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from malleo.errors import PolicyError

ORDERS = ("fcfs", "sjf", "ljf", "saf", "wfp3", "unicep", "f1", "multifactor")
"""Queue orders: first come first served, shortest/longest job first (by estimate),
smallest area (procs x estimate) first, WFP3 and UNICEP (Tang et al. 2009), F1
(Carastan-Santos and de Camargo 2017), Slurm-style multifactor priority."""

BACKFILLS = ("none", "easy", "conservative", "slurm")
"""Backfill modes: none (strict order), EASY (one reservation), conservative (every job
reserved), slurm (reservations for the first ``bf_max_job_test`` jobs within ``bf_window``
at ``bf_resolution``)."""

ESTIMATES = ("request", "actual", "predict")
"""Runtime estimate used for planning: the user's requested time, the real runtime (an
oracle, for research), or the mean of the user's last two runtimes capped by the request
(Tsafrir, Etsion and Feitelson 2007)."""

SIZE_FAVOR = ("small", "large")


@dataclass(frozen=True)
class Multifactor:
    """Slurm-style multifactor priority (priority/multifactor), all factors in [0, 1].

    priority = weight_age * min(age, max_age) / max_age
             + weight_size * size factor (favour small or large jobs)
             + weight_fairshare * 2 ** (-usage / (shares * total usage))
             + weight_queue * queue_factors.get(queue, 0)
             + weight_partition * partition_factors.get(partition, 0)
    recomputed every ``calc_period`` seconds; usage decays with ``half_life``.
    """

    weight_age: float = 1000.0
    weight_size: float = 0.0
    weight_fairshare: float = 1000.0
    weight_queue: float = 0.0
    weight_partition: float = 0.0
    max_age: int = 7 * 86400          # seconds (Slurm PriorityMaxAge, default 7-0)
    size_favor: str = "small"         # "small" or "large" (Slurm PriorityFavorSmall)
    half_life: int = 7 * 86400        # seconds (Slurm PriorityDecayHalfLife, default 7-0)
    calc_period: int = 300            # seconds (Slurm PriorityCalcPeriod, default 5 min)
    queue_factors: Mapping[int, float] = field(default_factory=dict)      # SWF queue -> [0, 1]
    partition_factors: Mapping[int, float] = field(default_factory=dict)  # SWF partition -> [0, 1]

    def __post_init__(self) -> None:
        for name in ("weight_age", "weight_size", "weight_fairshare", "weight_queue",
                     "weight_partition"):
            if getattr(self, name) < 0:
                raise PolicyError(f"multifactor.{name}: must be >= 0, got {getattr(self, name)}")
        for name in ("max_age", "half_life", "calc_period"):
            if int(getattr(self, name)) <= 0:
                raise PolicyError(f"multifactor.{name}: must be > 0 seconds, got {getattr(self, name)}")
        if self.size_favor not in SIZE_FAVOR:
            raise PolicyError(f"multifactor.size_favor: must be one of {', '.join(SIZE_FAVOR)}, "
                              f"got {self.size_favor!r}")
        for name in ("queue_factors", "partition_factors"):
            for key, value in dict(getattr(self, name)).items():
                if not 0.0 <= float(value) <= 1.0:
                    raise PolicyError(f"multifactor.{name}.{key}: must be in [0, 1], got {value}")


@dataclass(frozen=True)
class Policy:
    """What the scheduler does: queue order, backfill mode and estimate source.

    Attributes:
        order: queue order, one of :data:`ORDERS`.
        backfill: backfill mode, one of :data:`BACKFILLS`.
        estimate: runtime estimate source, one of :data:`ESTIMATES`.
        bf_max_job_test: ``slurm`` backfill: jobs planned per pass (K). K=1 is EASY,
            a K at least the queue length is conservative re-planned each pass.
        bf_window: ``slurm`` backfill: how far ahead reservations are made, seconds.
        bf_resolution: ``slurm`` backfill: planned start times are rounded up to
            multiples of this many seconds.
        multifactor: weights and periods of the ``multifactor`` order.
    """

    order: str = "fcfs"
    backfill: str = "easy"
    estimate: str = "request"
    bf_max_job_test: int = 500      # jobs (Slurm bf_max_job_test default)
    bf_window: int = 86400          # seconds (Slurm bf_window default: 1440 minutes)
    bf_resolution: int = 60         # seconds (Slurm bf_resolution default)
    multifactor: Multifactor = field(default_factory=Multifactor)

    def __post_init__(self) -> None:
        _choice("order", self.order, ORDERS)
        _choice("backfill", self.backfill, BACKFILLS)
        _choice("estimate", self.estimate, ESTIMATES)
        if int(self.bf_max_job_test) < 1:
            raise PolicyError(f"bf_max_job_test: must be >= 1, got {self.bf_max_job_test}")
        if int(self.bf_window) < 1:
            raise PolicyError(f"bf_window: must be >= 1 second, got {self.bf_window}")
        if int(self.bf_resolution) < 1:
            raise PolicyError(f"bf_resolution: must be >= 1 second, got {self.bf_resolution}")

    def replace(self, **changes: Any) -> "Policy":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """A short human name, e.g. ``fcfs+easy`` or ``sjf+slurm(K=500)``."""
        name = f"{self.order}+{self.backfill}"
        if self.backfill == "slurm":
            name += f"(K={self.bf_max_job_test})"
        if self.estimate != "request":
            name += f"/{self.estimate}"
        return name


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PolicyError(f"{name}: must be one of {', '.join(allowed)}, got {value!r}")
