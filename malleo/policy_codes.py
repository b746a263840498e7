"""The policy compiled for the scheduling core: integer codes and parsed numbers.

The core (``malleo._core``) never imports ``malleo.policy``.  Each of its entrances
(``simulate``, ``simulate_malleable``, ``plan``) reads ``policy.core``, a
:class:`CorePolicy` that :func:`compile_policy` computes once per :class:`Policy` (and
caches on it).  A code is the index of a name in its tuple of ``malleo.policy``
(``ORDERS``, ``BACKFILLS``, ``ESTIMATES``, ``RECONFIG_POLICIES``, ``SPEEDUP_MODELS``): the
one definition; the enums of ``_core/_types.pxd`` and ``_core/malleable.pxd`` follow it
(tests/test_core_codes.py checks them).  Times are integer seconds.
"""
from __future__ import annotations

from dataclasses import dataclass

from malleo.policy import (BACKFILL_ORDERS, BACKFILLS, ESTIMATES, ORDERS, RECONFIG_POLICIES,
                           SPEEDUP_MODELS, START_SIZES,
                           Policy, parse_speedup)

__all__ = ["CorePolicy", "compile_policy", "ORDER_CODES", "BACKFILL_CODES", "ESTIMATE_CODES",
           "RECONFIG_POLICY_CODES", "SPEEDUP_CODES", "BACKFILL_ORDER_CODES"]

ORDER_CODES = {name: code for code, name in enumerate(ORDERS)}
BACKFILL_CODES = {name: code for code, name in enumerate(BACKFILLS)}
ESTIMATE_CODES = {name: code for code, name in enumerate(ESTIMATES)}
RECONFIG_POLICY_CODES = {name: code for code, name in enumerate(RECONFIG_POLICIES)}
SPEEDUP_CODES = {name: code for code, name in enumerate(SPEEDUP_MODELS)}
START_SIZE_CODES = {name: code for code, name in enumerate(START_SIZES)}
BACKFILL_ORDER_CODES = {name: code for code, name in enumerate(BACKFILL_ORDERS)}


@dataclass(frozen=True)
class CorePolicy:
    """What the core reads of a policy: plain ints, floats and bools.

    Attributes:
        order, backfill, estimate: codes (``ORDER_*``, ``BACKFILL_*``, ``ESTIMATE_*``).
        bf_max_job_test: slurm backfill, reservations per pass (jobs).
        bf_window, bf_resolution: slurm backfill, seconds.
        is_bf_round_down: slurm backfill rounds as Slurm's own (``bf_rounding = down``).
        backfill_order: code (``BFORDER_*`` of _types.pxd): the order backfill tries the
            jobs behind the head in.
        weight_age, weight_size, weight_fairshare, weight_queue, weight_partition:
            multifactor weights.
        max_age, half_life, calc_period: multifactor periods, seconds.
        is_favor_small: the multifactor size factor favours small jobs.
        queue_factors, partition_factors: ((SWF number, factor in [0, 1]), ...), sorted.
        mall_policy, speedup_model: codes (``MPOL_*``, ``SPEEDUP_*`` of malleable.pxd).
        is_checkin: reconfiguration only at check-in points.
        is_scaled: a resized job's estimate scales with its speedup.
        is_pow2: sizes chosen by the core are powers of two.
        is_moldable_start: moldable queue heads start at their best size.
        reconfig_fixed, reconfig_per_proc: reconfiguration cost, seconds (per processor).
        min_interval, checkin_period: seconds.
        is_slurm_expand: expansions queue expander requests (slurm expand mode).
        predict_runs: predict, completed runs averaged (jobs).
        is_cold_request: predict, fewer completed runs than predict_runs: the request.
        is_incremental: overdue running jobs follow Tsafrir's increments.
        is_predict_at_submit: predict, a waiting job's prediction is made once, from the
            runs completed by its submission (else re-evaluated at every pass).
        start_size: code (``START_*`` of malleable.pxd) of the flexible jobs' start size.
        efficiency_threshold: preferred size's minimum parallel efficiency, in (0, 1].
        min_gain: seconds a resize must bring a job's expected completion forward by
            (strictly more than).
    """

    order: int
    backfill: int
    estimate: int
    bf_max_job_test: int
    bf_window: int
    bf_resolution: int
    is_bf_round_down: bool
    backfill_order: int
    weight_age: float
    weight_size: float
    weight_fairshare: float
    weight_queue: float
    weight_partition: float
    max_age: int
    half_life: int
    calc_period: int
    is_favor_small: bool
    queue_factors: tuple[tuple[int, float], ...]
    partition_factors: tuple[tuple[int, float], ...]
    mall_policy: int
    speedup_model: int
    is_checkin: bool
    is_scaled: bool
    is_pow2: bool
    is_moldable_start: bool
    reconfig_fixed: float
    reconfig_per_proc: float
    min_interval: int
    checkin_period: int
    is_slurm_expand: bool
    predict_runs: int = 2
    is_cold_request: bool = False
    is_incremental: bool = False
    is_predict_at_submit: bool = False
    start_size: int = 0
    efficiency_threshold: float = 0.8
    min_gain: int = 0

    @property
    def core(self) -> "CorePolicy":
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


def compile_policy(policy: Policy) -> CorePolicy:
    """The :class:`CorePolicy` of a validated :class:`Policy` (``policy.core`` caches it)."""
    mf = policy.multifactor
    mal = policy.malleability
    return CorePolicy(
        order=ORDER_CODES[policy.order], backfill=BACKFILL_CODES[policy.backfill],
        estimate=ESTIMATE_CODES[policy.estimate],
        bf_max_job_test=int(policy.bf_max_job_test), bf_window=int(policy.bf_window),
        bf_resolution=int(policy.bf_resolution),
        is_bf_round_down=policy.bf_rounding == "down",
        backfill_order=BACKFILL_ORDER_CODES[policy.backfill_order],
        weight_age=float(mf.weight_age), weight_size=float(mf.weight_size),
        weight_fairshare=float(mf.weight_fairshare), weight_queue=float(mf.weight_queue),
        weight_partition=float(mf.weight_partition), max_age=int(mf.max_age),
        half_life=int(mf.half_life), calc_period=int(mf.calc_period),
        is_favor_small=mf.size_favor == "small",
        queue_factors=tuple(sorted((int(k), float(v)) for k, v in dict(mf.queue_factors).items())),
        partition_factors=tuple(sorted((int(k), float(v))
                                       for k, v in dict(mf.partition_factors).items())),
        mall_policy=RECONFIG_POLICY_CODES[mal.policy],
        speedup_model=SPEEDUP_CODES[parse_speedup(mal.speedup)[0]],
        is_checkin=mal.points == "checkin", is_scaled=mal.estimate_scaling == "speedup",
        is_pow2=bool(mal.power_of_two), is_moldable_start=bool(mal.moldable_start),
        reconfig_fixed=float(mal.reconfig_fixed), reconfig_per_proc=float(mal.reconfig_per_proc),
        min_interval=int(mal.min_interval), checkin_period=int(mal.checkin_period),
        is_slurm_expand=mal.expand_mode == "slurm",
        predict_runs=int(policy.predict_runs), is_cold_request=policy.predict_cold == "request",
        is_incremental=policy.correction == "incremental",
        is_predict_at_submit=policy.predict_at == "submit",
        start_size=START_SIZE_CODES[mal.start_size],
        efficiency_threshold=float(mal.efficiency_threshold), min_gain=int(mal.min_gain))
