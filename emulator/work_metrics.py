"""Work, efficiency, resize and energy metrics of a replay, and their breakdowns per
application and per size class (docs/metrics.md, "Work, efficiency and energy").

Per job: ``held`` is the processor-seconds it held (a malleable job: each piece at its own
size, reconfiguring included; a rigid one: ``alloc_procs x runtime``); ``useful`` is the
processor-seconds of useful work it did: the speedup S(p) per second while holding p
processors and not reconfiguring (single-processor-equivalent seconds; the malleable
core's ``work_done``; in a rigid replay S(p) x runtime under the policy's speedup model,
:func:`rigid_work`).  ``held - useful`` is what reconfiguring and the efficiency lost to
a poor speedup cost.  Times are seconds, work processor-hours, energy kWh.
"""
from __future__ import annotations

from typing import Any

from typing import Callable

import numpy as np

from malleo.emulator.power import PowerModel
from malleo.order_stats import distinct_inverse

__all__ = ["work_summary", "WORK_KEYS", "MALLEABLE_KEYS", "size_class", "BREAKDOWN_KEYS"]

WORK_KEYS: dict[str, tuple[str, str, str | None]] = {
    "proc_hours_held": ("processor-hours held", "proc-h", None),
    "proc_hours_useful": ("processor-hours useful", "proc-h", None),
    "parallel_efficiency": ("parallel efficiency", "", "higher"),
    "utilization_useful": ("utilization (useful work)", "%", "higher"),
    "energy_kwh": ("energy", "kWh", "lower"),
}
"""Summary keys of every replay: key -> (label, unit, better), in display order."""

MALLEABLE_KEYS: dict[str, tuple[str, str, str | None]] = {
    "workload_completion": ("workload completion", "s", "lower"),
    "reconfigurations": ("reconfigurations", "", None),
    "reconfig_time_total": ("time reconfiguring", "s", "lower"),
    "resized_jobs": ("resized jobs", "", None),
    "resized_jobs_faster": ("resized jobs faster than rigid", "", "higher"),
    "resized_jobs_slower": ("resized jobs slower than rigid", "", "lower"),
}
"""Summary keys of a malleable replay (shown when present): key -> (label, unit, better)."""

MAX_GROUPS = 1000
"""``by_application`` keeps the MAX_GROUPS - 1 applications with the most processor-hours
held and sums the others into one group ``other`` (some traces number every job's
executable apart: SDSC-SP2 has 48,626)."""

BREAKDOWN_KEYS = ("jobs", "wait_mean", "response_mean", "bsld_mean", "proc_hours_held",
                  "proc_hours_useful", "parallel_efficiency", "resized_jobs")
"""The keys of each group of ``by_application`` and ``by_size_class``."""


def rigid_work(units: np.ndarray, runtime: np.ndarray, speedup: str, unit: int = 1
               ) -> np.ndarray:
    """Useful processor-seconds of rigid jobs: ``S(units) x runtime x unit`` under the
    speedup model ``speedup`` (``malleability.speedup``; a ``LO~HI`` parameter at its
    midpoint, as the live side takes it), ``units`` the allocation units held (processors,
    or nodes of ``unit`` processors)."""
    from malleo.emulator.flex import speedup_value
    from malleo.policy import parse_speedup

    model, params = parse_speedup(speedup)
    a, b = ([(lo + hi) / 2.0 for lo, hi in params] + [0.0, 0.0])[:2]
    p = np.maximum(np.asarray(units, dtype=np.float64), 1.0)
    # in place where it gives the same doubles (issue 16: job-sized temporaries)
    if model == "linear":
        rate = p
    elif model == "amdahl":
        rate = np.divide(1.0 - a, p, out=p)
        rate += a
        np.divide(1.0, rate, out=rate)
    else:
        values, where = distinct_inverse(p)
        rate = np.array([speedup_value(model, v, a, b) for v in values])[where]
    rate *= runtime                 # each integer runtime converted to the same double
    rate *= unit
    return rate


def size_class(size: np.ndarray) -> np.ndarray:
    """The size class of each (held) size in processors: ``1``, ``2``, ``3-4``, ``5-8``,
    ..., ``2^(k-1)+1-2^k`` (powers of two; a size below 1 counts as 1)."""
    size = np.maximum(np.asarray(size, dtype=np.int64), 1)
    k = np.maximum(np.ceil(np.log2(size) - 1e-9).astype(np.int64), 0)
    labels = np.array([str(1 << e) if e <= 1 else f"{(1 << (e - 1)) + 1}-{1 << e}"
                       for e in range(int(k.max(initial=0)) + 1)], dtype=object)
    return labels[k]


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` (the distinct values ascending, each
    value's index among them, intp) with fewer job-sized temporaries (issue 16): one
    value everywhere (a trace without application numbers) costs no pass but min/max."""
    if values.size and values.min() == values.max():
        return values[:1].copy(), np.zeros(values.size, dtype=np.intp)   # calloc'd pages
    return distinct_inverse(values)


def _groups(code: np.ndarray, labels: list[str], column: Callable[[str], np.ndarray],
            held: np.ndarray, useful: np.ndarray, resized: np.ndarray,
            order: list[int]) -> dict[str, dict[str, float]]:
    """Per group (``code`` 0..len(labels)-1 per job; reported in ``order``): the
    :data:`BREAKDOWN_KEYS` of its jobs (one vectorised pass with ``bincount``; numpy
    only, so a replay that prints its summary imports no pandas)."""
    m = len(labels)

    def total(values) -> np.ndarray:
        return np.bincount(code, weights=np.asarray(values, dtype=np.float64), minlength=m)

    count = np.bincount(code, minlength=m)
    wait, response, bsld = (total(column(c)) for c in ("wait", "response", "bsld"))
    h, u, r = total(held), total(useful), total(resized)
    out: dict[str, dict[str, float]] = {}
    for i in order:
        if not count[i]:
            continue
        out[labels[i]] = {
            "jobs": int(count[i]), "wait_mean": float(wait[i] / count[i]),
            "response_mean": float(response[i] / count[i]),
            "bsld_mean": float(bsld[i] / count[i]),
            "proc_hours_held": float(h[i]) / 3600.0,
            "proc_hours_useful": float(u[i]) / 3600.0,
            "parallel_efficiency": float(u[i] / h[i]) if h[i] > 0 else float("nan"),
            "resized_jobs": int(r[i])}
    return out


def work_summary(column: Callable[[str], np.ndarray], is_malleable: bool,
                 executable: np.ndarray | None, machine_procs: int,
                 makespan: float, power: PowerModel | None = None,
                 breakdowns: bool = True, useful: np.ndarray | None = None
                 ) -> dict[str, Any]:
    """The summary additions of one replay.

    Args:
        column: a job column by name (``ReplayResult.column``: no DataFrame built); a
            malleable replay's has ``proc_seconds``, ``elapsed``, ``n_expand``,
            ``n_shrink``.
        is_malleable: the replay ran the malleable core.
        executable: SWF field 14 per job (application number, -1 unknown), or None.
        machine_procs: P, processors.
        makespan: seconds (the summary's).
        power: the power model (None: the defaults).
        breakdowns: also the per-application and per-size-class groups (the scalar keys
            cost microseconds; the groups tens of milliseconds on 50,000 jobs).
        useful: processor-seconds of useful work per job (module docstring); None: the
            work at the trace size, ``alloc_procs x runtime`` (linear speedup).

    Returns:
        ``proc_hours_held``, ``proc_hours_useful``, ``parallel_efficiency`` (useful /
        held), ``utilization_useful`` (useful / (P x makespan)), ``energy_kwh`` (=
        ``energy_busy_kwh`` + ``energy_idle_kwh``), ``idle_watts``, ``busy_watts``,
        ``applications`` (distinct SWF field 14 values), ``by_application`` (at most
        :data:`MAX_GROUPS` groups) and ``by_size_class`` (groups of
        :data:`BREAKDOWN_KEYS`);
        a malleable replay adds ``reconfigurations``, ``resized_jobs``,
        ``resized_jobs_faster`` / ``resized_jobs_slower`` (resized jobs whose elapsed time
        was below / above their runtime at the trace size: the resizes paid off or not,
        by the speedup model the replay ran) and ``resize_time_saved`` (sum of runtime -
        elapsed over resized jobs, s).
    """
    power = PowerModel() if power is None else power
    # ``np.multiply(alloc, runtime, dtype=float64)`` converts both to float64 on the fly:
    # the same doubles as float64 copies, without the copies (issue 16: job-sized
    # columns less at the peak)
    alloc = np.asarray(column("alloc_procs"))
    if alloc.dtype.kind not in "iuf":
        alloc = alloc.astype(np.float64)
    runtime = np.asarray(column("runtime"))
    if runtime.dtype.kind not in "iuf":
        runtime = runtime.astype(np.float64)
    n = len(alloc)
    useful = (np.multiply(alloc, runtime, dtype=np.float64) if useful is None
              else np.asarray(useful, dtype=np.float64))
    if is_malleable:
        runtime = runtime.astype(np.float64, copy=False)
        held = np.asarray(column("proc_seconds"), dtype=np.float64)
        elapsed = np.asarray(column("elapsed"), dtype=np.float64)
        moves = (np.asarray(column("n_expand")) + np.asarray(column("n_shrink")))
        resized = moves > 0
        # the size a job held, on average over its elapsed time (its trace size if 0 s)
        size = np.where(elapsed > 0, np.rint(held / np.maximum(elapsed, 1.0)),
                        alloc.astype(np.float64))
    else:
        held = np.multiply(alloc, runtime, dtype=np.float64)
        elapsed = runtime
        moves = np.zeros(n, dtype=np.int64)
        resized = np.zeros(n, dtype=bool)
        size = alloc
    total_held, total_useful = float(held.sum()), float(useful.sum())
    span = float(makespan) if makespan is not None else float("nan")
    capacity = machine_procs * span if span > 0 else float("nan")
    busy, idle = (power.energy_kwh(total_held, capacity) if capacity > 0
                  else (float("nan"), float("nan")))
    out: dict[str, Any] = {
        "proc_hours_held": total_held / 3600.0,
        "proc_hours_useful": total_useful / 3600.0,
        "parallel_efficiency": total_useful / total_held if total_held > 0 else float("nan"),
        "utilization_useful": total_useful / capacity if capacity > 0 else float("nan"),
        "energy_kwh": busy + idle,
        "energy_busy_kwh": busy, "energy_idle_kwh": idle,
        "idle_watts": power.idle_watts, "busy_watts": power.busy_watts,
    }
    if is_malleable:
        out.update({
            "reconfigurations": int(moves.sum()),
            "resized_jobs": int(resized.sum()),
            "resized_jobs_faster": int((resized & (elapsed < runtime)).sum()),
            "resized_jobs_slower": int((resized & (elapsed > runtime)).sum()),
            "resize_time_saved": int((runtime - elapsed)[resized].sum()),
        })
    if n and breakdowns:
        apps = np.asarray(executable) if executable is not None else np.full(n, -1)
        if apps.dtype.kind not in "iu":
            apps = apps.astype(np.int64)
        uniq, code = _codes(apps)
        per_app = np.bincount(code, weights=held, minlength=len(uniq))
        ranked = np.argsort(-per_app, kind="stable")
        out["applications"] = int(len(uniq))
        labels = [str(a) for a in uniq.tolist()]
        if len(uniq) > MAX_GROUPS:
            other = np.ones(len(uniq), dtype=bool)
            other[ranked[:MAX_GROUPS - 1]] = False
            code = np.where(other[code], len(uniq), code)      # one extra group: "other"
            labels.append("other")
            order = [*ranked[:MAX_GROUPS - 1].tolist(), len(uniq)]
        else:
            order = ranked.tolist()
        # rigid: no job resized (zeros from calloc: no page written, issue 16)
        res = resized.astype(np.int64) if is_malleable else np.zeros(n, dtype=np.int64)
        out["by_application"] = _groups(code, labels, column, held, useful, res, order)
        # log2 of the float64 sizes (an integer size converts to the same double)
        k = np.log2(np.maximum(size, 1), dtype=np.float64)
        k -= 1e-9
        k = np.maximum(np.ceil(k, out=k).astype(np.int64), 0)
        names = size_class(np.left_shift(1, np.arange(int(k.max(initial=0)) + 1)))
        out["by_size_class"] = _groups(k, [str(x) for x in names], column, held, useful,
                                       res, list(range(len(names))))
    elif breakdowns:
        out["applications"], out["by_application"], out["by_size_class"] = 0, {}, {}
    return out
