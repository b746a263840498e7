"""Load rescaling: stretch or compress a trace's arrivals to reach a target offered load
(docs/traces.md, "Load rescaling"), the standard way load is swept (Feitelson's
Workload Modeling, ch. 9; the Parallel Workloads Archive's load-scaled versions).

Offered load of jobs on a machine of P processors (as ``malleo trace info``):

    rho = sum(procs_i * runtime_i) / (P * (max(submit) - min(submit)))

Rescaling multiplies every inter-arrival time by ``f = rho / target`` and keeps runtimes
and sizes: ``submit'_i = t0 + round((submit_i - t0) * f)`` with ``t0 = min(submit)``.  The
work is unchanged and the span is multiplied by ``f`` (up to the rounding to whole
seconds), so the new load is ``target`` (the achieved value is reported).  Order is kept:
the map is non-decreasing (jobs tied by the rounding keep their trace order).
"""
from __future__ import annotations

import numpy as np

from malleo.errors import MalleoError

__all__ = ["offered_load", "rescale_submits", "MAX_LOAD"]

MAX_LOAD = 1000.0
"""The largest target load accepted (a sanity bound: 1000 times the machine)."""


def offered_load(submit: np.ndarray, procs: np.ndarray, runtime: np.ndarray,
                 machine_procs: int) -> float | None:
    """rho of the module docstring; None when fewer than two distinct submit times."""
    submit = np.asarray(submit, dtype=np.int64)
    if submit.size == 0:
        return None
    span = int(submit.max() - submit.min())
    if span <= 0 or machine_procs <= 0:
        return None
    work = float(np.dot(np.asarray(procs, dtype=np.float64),
                        np.asarray(runtime, dtype=np.float64)))
    return work / (machine_procs * span)


def rescale_submits(submit: np.ndarray, procs: np.ndarray, runtime: np.ndarray,
                    machine_procs: int, target: float) -> tuple[np.ndarray, float]:
    """The submit times scaled to offered load ``target``, and the factor ``f`` applied.

    Raises:
        MalleoError: ``target`` not in (0, MAX_LOAD], or the load is undefined (all jobs
            submitted at one instant, or no work).
    """
    if not (isinstance(target, (int, float)) and 0 < target <= MAX_LOAD):
        raise MalleoError(f"load: the target offered load must be in (0, {MAX_LOAD:g}], "
                          f"got {target!r}")
    rho = offered_load(submit, procs, runtime, machine_procs)
    if not rho:
        raise MalleoError("load: cannot rescale: the jobs have no offered load to scale "
                          "(all submitted at one instant, or no work)")
    factor = rho / float(target)
    submit = np.asarray(submit, dtype=np.int64)
    t0 = int(submit.min())
    scaled = t0 + np.rint((submit - t0).astype(np.float64) * factor).astype(np.int64)
    return scaled, factor
