"""Turning rigid trace jobs into moldable or malleable ones (docs/malleability.md).

Everything is drawn from ``FlexibleJobs.seed`` with numpy's PCG64 generator, in a fixed
order (the choice, then each speedup parameter), so the per-job arrays follow from the
options (or the policy file) and the job order alone.  Sizes are in the units the core
allocates (processors, or whole nodes on a node-exclusive machine).
"""
from __future__ import annotations

import numpy as np

from malleo.flexible import FlexibleJobs
from malleo.policy import JOB_KINDS, Malleability, parse_speedup

__all__ = ["flexible_jobs", "KIND_CODES"]

KIND_CODES = {name: code for code, name in enumerate(JOB_KINDS)}
"""Job kind name -> the core's code (rigid 0, moldable 1, malleable 2)."""


def flexible_jobs(procs: np.ndarray, queue: np.ndarray, user: np.ndarray, total: int,
                  flexible: FlexibleJobs, mal: Malleability | None = None
                  ) -> dict[str, np.ndarray]:
    """The per-job flexibility arrays for ``simulate_malleable``.

    Args:
        procs: int[n] each job's trace size p0 (allocation units), 1..total.
        queue, user: int[n] SWF queue and user numbers (the eligibility rules).
        total: allocation units of the machine (P).
        flexible: which jobs become flexible and their size range (workload synthesis).
        mal: the policy's resizing knobs: ``power_of_two`` rounds the size range and
            ``speedup`` gives the per-job parameters (None: the defaults).

    Returns:
        ``kind`` (uint8: 0 rigid, 1 moldable, 2 malleable), ``min_procs`` and
        ``max_procs`` (int32; p0 for rigid jobs; min = max(1, floor(p0 x min_factor)),
        max = min(P, ceil(p0 x max_factor)), both rounded to powers of two inward when
        ``power_of_two``, never excluding p0), ``speedup_a``, ``speedup_b`` (float64).

    A job is eligible when p0 >= min_procs and, if given, its queue is in ``queues`` and
    its user in ``users``; eligible jobs are chosen with probability ``fraction`` (one
    uniform draw per job, in job order).
    """
    mal = Malleability() if mal is None else mal
    fx = flexible
    p0 = np.asarray(procs, dtype=np.int64)
    n = p0.shape[0]
    rng = np.random.default_rng(int(fx.seed))
    draw = rng.random(n)
    eligible = p0 >= int(fx.min_procs)
    if fx.queues:
        eligible &= np.isin(np.asarray(queue, dtype=np.int64), np.array(fx.queues))
    if fx.users:
        eligible &= np.isin(np.asarray(user, dtype=np.int64), np.array(fx.users))
    chosen = eligible & (draw < float(fx.fraction))
    kind = np.zeros(n, dtype=np.uint8)
    kind[chosen] = KIND_CODES[fx.kind]
    lo = np.maximum(1, np.floor(p0 * float(fx.min_factor)).astype(np.int64))
    hi = np.minimum(int(total), np.ceil(p0 * float(fx.max_factor)).astype(np.int64))
    if mal.power_of_two:
        lo = np.minimum(_pow2_ceil(lo), p0)
        hi = np.maximum(_pow2_floor(hi), p0)
    min_procs = np.where(chosen, lo, p0).astype(np.int32)
    max_procs = np.where(chosen, np.maximum(hi, p0), p0).astype(np.int32)
    _, params = parse_speedup(mal.speedup)
    values = [rng.uniform(a, b, n) if a < b else np.full(n, a) for a, b in params]
    values += [np.zeros(n)] * (2 - len(values))
    return {"kind": kind, "min_procs": min_procs, "max_procs": max_procs,
            "speedup_a": np.ascontiguousarray(values[0], dtype=np.float64),
            "speedup_b": np.ascontiguousarray(values[1], dtype=np.float64)}


def _pow2_floor(x: np.ndarray) -> np.ndarray:
    return np.left_shift(1, np.floor(np.log2(np.maximum(x, 1))).astype(np.int64))


def _pow2_ceil(x: np.ndarray) -> np.ndarray:
    return np.left_shift(1, np.ceil(np.log2(np.maximum(x, 1)) - 1e-12).astype(np.int64))


def speedup_value(model: str, p: float, a: float = 0.0, b: float = 0.0) -> float:
    """S(p) in pure Python (tests and docs): linear, Amdahl f=a, Downey A=a, sigma=b."""
    if model == "linear":
        return float(p)
    if model == "amdahl":
        return 1.0 / (a + (1.0 - a) / p)
    big_a, sigma = a, b
    if sigma <= 1.0:
        if p <= big_a:
            return big_a * p / (big_a + sigma / 2.0 * (p - 1.0))
        if p <= 2.0 * big_a - 1.0:
            return big_a * p / (sigma * (big_a - 0.5) + p * (1.0 - sigma / 2.0))
        return big_a
    if p <= big_a + big_a * sigma - sigma:
        return p * big_a * (sigma + 1.0) / (sigma * (p + big_a - 1.0) + big_a)
    return big_a

