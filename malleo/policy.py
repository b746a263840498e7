"""The scheduling policy: one value object shared by replay, compare, tune and the Slurm agent.

A :class:`Policy` is immutable and validated on construction.  Times are integer seconds,
sizes are processors.  ``malleo.policy_file`` reads and writes the TOML policy format
(see docs/policy-file.md).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from malleo.errors import PolicyError

from malleo.knobs import (BACKFILL_ORDERS, BACKFILLS, BF_ROUNDINGS, CORRECTIONS,  # noqa: E402
                          ESTIMATE_SCALINGS, ESTIMATES, EXPAND_MODES, PREDICT_ATS, PREDICT_COLD,
                          JOB_KINDS, ORDERS, RECONFIG_POINTS, RECONFIG_POLICIES, SIZE_FAVOR,
                          START_SIZES,
                          SPEEDUP_MODELS, MAX_SWF_NUMBER, table_knobs)

# The name tuples (defined once in malleo.knobs, in the order of the core's codes):
# ORDERS: first come first served, shortest/longest job first (by estimate), smallest area
#   (procs x estimate) first, WFP3 and UNICEP (Tang et al. 2009), F1 (Carastan-Santos and
#   de Camargo 2017), Slurm-style multifactor priority.
# BACKFILLS: none (strict order), EASY (one reservation), conservative (every job
#   reserved), slurm (reservations for the first bf_max_job_test jobs within bf_window at
#   bf_resolution).
# ESTIMATES: the user's requested time, the real runtime (an oracle, for research), the
#   mean of the user's last predict_runs runtimes capped by the request (Tsafrir, Etsion
#   and Feitelson 2007), or an online regression learned from finished jobs (Gaussier,
#   Glesser, Reis and Trystram 2015; malleo/_core/learn.pxd).
# PREDICT_COLD: before a user has predict_runs completed runs, predict averages the runs
#   there are (fewer; the request when none) or uses the request.
# PREDICT_ATS: predict re-evaluates a waiting job's prediction at every pass (pass), or
#   makes it once from the user's runs completed by the job's submission (submit, as
#   Tsafrir et al. 2007 and the SC 2015 authors' simulator do).
# CORRECTIONS: a running job that outlives its estimate has its expected end moved to its
#   request (then to one second from now), or by Tsafrir's increments capped at the request
#   (docs/scheduling-semantics.md).
# JOB_KINDS: rigid, moldable, malleable (the core's kind codes 0, 1, 2).
# SPEEDUP_MODELS: linear (S = p), Amdahl with serial fraction f (S = 1 / (f + (1 - f) / p)),
#   Downey 1997 with average parallelism A and variance sigma.
# RECONFIG_POLICIES: nothing, DMR-style shrink-else-expand at each job's reconfiguration
#   point (Iserte et al.), shrinking to start a blocked queue head, or keeping jobs near
#   their preferred (efficient) size (docs/malleability.md "Reconfiguration policies").
# START_SIZES: a flexible job waits for its trace size, its min, its preferred size, or
#   starts at the largest size >= min that fits at a pass (reservation-safe).
# RECONFIG_POINTS: at any scheduling pass, or at the first pass at or after each check-in
#   point (start + k x checkin_period).
# ESTIMATE_SCALINGS: a resized job's requested time scales with the speedup model, or stays
#   a fixed wall-clock limit from the start.
# EXPAND_MODES: an expansion gets its processors at once (in-place), or as an expander
#   request that queues with the job's priority and merges into the job when it starts.

# BF_ROUNDINGS: how slurm backfill applies bf_resolution: up rounds running jobs' expected
#   ends up to the grid and starts reservations on the grid at or after the earliest fit;
#   down (Slurm 22.05's sched/backfill) keeps expected ends exact, reserves at the exact
#   earliest fit and holds the processors from the grid instant at or before it.
# BACKFILL_ORDERS: the order in which backfill tries the waiting jobs behind the head
#   (easy, slurm) or plans the jobs without a reservation (conservative): queue order, or
#   shortest estimate first with ties in queue order (SJBF; Tsafrir et al. 2007 for EASY++).


def _check_knobs(obj: Any, table: str) -> None:
    """Check and normalise every knob field of a policy dataclass (malleo.knobs)."""
    for name, k in table_knobs(table).items():
        object.__setattr__(obj, name, k.check(getattr(obj, name)))


def parse_speedup(spec: str) -> tuple[str, tuple[tuple[float, float], ...]]:
    """``linear`` | ``amdahl:F`` | ``downey:A,SIGMA``; each parameter may be ``LO~HI``
    (drawn per job, uniformly in [LO, HI], from the malleability seed).

    Returns:
        (model, ((lo, hi) per parameter)); a global parameter has lo == hi.

    Raises:
        PolicyError: not of that form, or a parameter out of range (0 <= F <= 1,
            A >= 1, SIGMA >= 0).
    """
    text = str(spec).strip().lower()
    model, _, rest = text.partition(":")
    want = {"linear": 0, "amdahl": 1, "downey": 2}.get(model)
    if want is None:
        raise PolicyError(f"malleability.speedup: model must be one of "
                          f"{', '.join(SPEEDUP_MODELS)}, got {spec!r}")
    parts = [p.strip() for p in rest.split(",")] if rest else []
    if len(parts) != want:
        raise PolicyError(f"malleability.speedup: {model} takes {want} parameter(s) "
                          f"(linear | amdahl:F | downey:A,SIGMA; LO~HI draws per job), "
                          f"got {spec!r}")
    params = []
    for part in parts:
        lo_text, sep, hi_text = part.partition("~")
        try:
            lo = float(lo_text)
            hi = float(hi_text) if sep else lo
        except ValueError:
            raise PolicyError(f"malleability.speedup: {part!r} is not a number or "
                              f"LO~HI range in {spec!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise PolicyError(f"malleability.speedup: {part!r} must be finite in {spec!r}")
        if not lo <= hi:
            raise PolicyError(f"malleability.speedup: range {part!r} has LO > HI")
        params.append((lo, hi))
    limits = {"amdahl": [(0.0, 1.0, "F")], "downey": [(1.0, float("inf"), "A"),
                                                      (0.0, float("inf"), "SIGMA")]}
    for (lo, hi), (low, high, name) in zip(params, limits.get(model, [])):
        if not (low <= lo and hi <= high):
            raise PolicyError(f"malleability.speedup: {name} must be in [{low}, {high}], "
                              f"got {lo}~{hi} in {spec!r}")
    return model, tuple(params)


@dataclass(frozen=True)
class Malleability:
    """How the scheduler resizes flexible jobs (docs/malleability.md): reconfiguration
    policy, points, costs and the speedup model.  Which jobs are flexible is not the
    scheduler's business: a live job declares it, a replay synthesises it from a rigid
    trace (:class:`malleo.flexible.FlexibleJobs`, the ``[flexible]`` table).

    Attributes:
        power_of_two: sizes chosen by the core are powers of two (p0 itself stays valid).
        speedup: ``linear`` | ``amdahl:F`` | ``downey:A,SIGMA`` (``LO~HI``: drawn per job
            in a replay from the flexible seed; the live side takes the midpoint).
        reconfig_fixed: seconds of a reconfiguration's fixed cost.
        reconfig_per_proc: seconds of cost per processor added or removed; the job makes
            no progress for ceil(fixed + per_proc x moved) seconds.
        min_interval: seconds between two reconfigurations of one job.
        points: ``any`` pass, or ``checkin`` points every ``checkin_period`` seconds.
        checkin_period: seconds between a job's check-in points (``points = checkin``).
        estimate_scaling: ``speedup`` (the request scales with the rate) or ``fixed``.
        policy: reconfiguration policy, one of :data:`RECONFIG_POLICIES`.
        moldable_start: a blocked moldable queue head starts at the size in [min, max]
            with the earliest expected completion (or keeps waiting if that size is not free).
        expand_mode: one of :data:`EXPAND_MODES`.
        start_size: one of :data:`START_SIZES`: the size a flexible job asks for while it
            waits (``full`` p0, ``min``, ``preferred``) or ``fit`` (the largest size >= min
            that fits at a pass without delaying a reservation).
        efficiency_threshold: in (0, 1]; the preferred size is the largest p in [min, max]
            with S(p) / p >= this (at least min).
        min_gain: seconds; an expansion (a shrink to start a job) is taken only if the
            resized (started) job's expected completion gets earlier by more than this.
    """

    power_of_two: bool = False
    speedup: str = "amdahl:0.05"
    reconfig_fixed: float = 0.0        # seconds
    reconfig_per_proc: float = 0.0     # seconds per processor moved
    min_interval: int = 0              # seconds
    points: str = "any"
    checkin_period: int = 300          # seconds
    estimate_scaling: str = "speedup"
    policy: str = "dmr"
    moldable_start: bool = False
    expand_mode: str = "in-place"
    start_size: str = "full"
    efficiency_threshold: float = 0.8
    min_gain: int = 0                  # seconds

    def __post_init__(self) -> None:
        _check_knobs(self, "malleability")

    def describe(self) -> str:
        """A short name, e.g. ``dmr/amdahl:0.05/in-place``."""
        return f"{self.policy}/{self.speedup}/{self.expand_mode}"


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
        _check_knobs(self, "multifactor")
        for name in ("queue_factors", "partition_factors"):
            for key, value in dict(getattr(self, name)).items():
                if not 0.0 <= float(value) <= 1.0:
                    raise PolicyError(f"multifactor.{name}.{key}: must be in [0, 1], got {value}")
                if not -1 <= int(key) <= MAX_SWF_NUMBER:
                    raise PolicyError(f"multifactor.{name}.{key}: an SWF number must be in "
                                      f"-1..{MAX_SWF_NUMBER}")


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
        bf_rounding: ``slurm`` backfill: how ``bf_resolution`` rounds, one of
            :data:`BF_ROUNDINGS` (``down`` mirrors Slurm's own sched/backfill).
        predict_runs: ``predict``: completed runs of the user averaged (jobs).
        predict_cold: ``predict``: one of :data:`PREDICT_COLD`, what a user with fewer
            completed runs gets.
        predict_at: ``predict``: one of :data:`PREDICT_ATS`, when a waiting job's
            prediction is made (every pass, or once at its submission).
        correction: one of :data:`CORRECTIONS`, the expected end of a running job that
            outlived its estimate.
        backfill_order: one of :data:`BACKFILL_ORDERS`: ``queue`` tries the jobs behind
            the head in queue order, ``sjf`` shortest planning estimate first (ties in
            queue order); the head and its reservation keep their place
            (docs/scheduling-semantics.md).
        multifactor: weights and periods of the ``multifactor`` order.
        malleability: how flexible jobs are resized (which jobs are flexible is the
            workload's: :class:`malleo.flexible.FlexibleJobs`).
    """

    order: str = "fcfs"
    backfill: str = "easy"
    estimate: str = "request"
    bf_max_job_test: int = 500      # jobs (Slurm bf_max_job_test default)
    bf_window: int = 86400          # seconds (Slurm bf_window default: 1440 minutes)
    bf_resolution: int = 60         # seconds (Slurm bf_resolution default)
    bf_rounding: str = "up"         # one of BF_ROUNDINGS
    predict_runs: int = 2           # jobs
    predict_cold: str = "fewer"     # one of PREDICT_COLD
    predict_at: str = "pass"        # one of PREDICT_ATS
    correction: str = "request"     # one of CORRECTIONS
    backfill_order: str = "queue"   # one of BACKFILL_ORDERS
    multifactor: Multifactor = field(default_factory=Multifactor)
    malleability: Malleability = field(default_factory=Malleability)

    def __post_init__(self) -> None:
        _check_knobs(self, "")
        if not isinstance(self.malleability, Malleability):
            raise PolicyError(f"malleability: expected a Malleability, "
                              f"got {type(self.malleability).__name__}")

    @functools.cached_property
    def core(self):
        """The policy compiled for the scheduling core (:class:`malleo.policy_codes.CorePolicy`:
        integer codes and parsed numbers), computed once per policy."""
        from malleo.policy_codes import compile_policy

        return compile_policy(self)

    def replace(self, **changes: Any) -> "Policy":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def describe(self, flexible: Any = None) -> str:
        """A short human name, e.g. ``fcfs+easy``, ``sjf+slurm(K=500)``,
        ``fcfs+easy+sjbf/predict`` (backfill order sjf, predicted estimates) or
        ``fcfs+easy/predict[runs=3,cold=fewer,at=submit]/incremental`` (predict variants,
        correction); ``malleo compare --policy`` reads every such name back; with an
        enabled ``flexible`` (:class:`malleo.flexible.FlexibleJobs`) the flexibility and
        its resizing, e.g. ``fcfs+easy[50% malleable dmr/amdahl:0.05/in-place]``,
        or a preset's (``easy++``)."""
        for short, knobs in PRESETS.items():
            if (all(getattr(self, k) == v for k, v in knobs.items())
                    and not (flexible is not None and flexible.enabled)):
                return short
        name = f"{self.order}+{self.backfill}"
        if self.backfill == "slurm":
            name += f"(K={self.bf_max_job_test})"
        if self.backfill_order == "sjf":
            name += "+sjbf"             # shortest-job backfill first
        if self.estimate != "request":
            name += f"/{self.estimate}"
        if self.estimate == "predict":
            variant = []
            if (self.predict_runs, self.predict_cold) != (2, "fewer"):
                variant += [f"runs={self.predict_runs}", f"cold={self.predict_cold}"]
            if self.predict_at != "pass":
                variant.append(f"at={self.predict_at}")
            if variant:
                name += f"[{','.join(variant)}]"
        if self.correction != "request":
            name += f"/{self.correction}"
        if flexible is not None and flexible.enabled:
            name += f"[{flexible.describe()} {self.malleability.describe()}]"
        return name


PRESETS: dict[str, dict[str, Any]] = {
    # Tsafrir, Etsion and Feitelson 2007: EASY with system-generated predictions (the mean
    # of the user's last two runs, made when the job is submitted), Tsafrir's incremental
    # correction, and the backfill candidates tried shortest (predicted) job first (SJBF);
    # the queue stays FCFS.
    "easy++": {"order": "fcfs", "backfill": "easy", "backfill_order": "sjf",
               "estimate": "predict", "predict_runs": 2, "predict_cold": "fewer",
               "predict_at": "submit", "correction": "incremental"},
}
"""Named policy shortcuts: name -> the top-level knobs they set (the others keep theirs)."""


def preset(name: str, base: "Policy | None" = None) -> "Policy":
    """The policy of a named shortcut (:data:`PRESETS`, e.g. ``easy++``) applied to ``base``
    (default ``Policy()``).

    Raises:
        PolicyError: an unknown name.
    """
    if name not in PRESETS:
        raise PolicyError(f"preset: must be one of {', '.join(PRESETS)}, got {name!r}")
    return (base or Policy()).replace(**PRESETS[name])


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PolicyError(f"{name}: must be one of {', '.join(allowed)}, got {value!r}")
