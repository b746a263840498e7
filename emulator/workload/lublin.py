"""The Lublin-Feitelson model of rigid parallel jobs, with Tsafrir user estimates.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003.
Written from the paper's description and its published parameter values (the batch-job
column by default); see docs/workload-model.md for every parameter and measured statistics.

Per job, in submit order:

* size (processors): serial with probability ``serial_prob``; otherwise ``x`` is drawn from a
  two-stage uniform on log2(size) (``U(u_low, u_med)`` with probability ``u_prob``, else
  ``U(u_med, u_hi)``) and the size is ``round(2**round(x))`` (a power of two) with
  probability ``pow2_prob`` (of all jobs) or ``round(2**x)`` otherwise, capped at ``procs``;
* runtime (seconds): ``floor(exp(h))`` with ``h`` hyper-gamma in natural-log seconds:
  ``gamma(a1, b1)`` with probability ``p = clip(pa * size + pb, 0, 1)``, else
  ``gamma(a2, b2)`` (shape, scale), redrawn while ``h > log_runtime_cap``;
* arrivals: interarrival times ``exp(g)`` seconds with ``g ~ gamma(aarr * arar, barr)``
  (redrawn while ``g > log_interarrival_cap``) are laid out in *rush-hour time* and mapped to
  wall-clock time through the daily cycle: each half-hour slot of the day holds a share of
  the day's rush-hour time proportional to the ``gamma(anum, bnum)`` probability of its
  slot number, so busy slots receive proportionally more arrivals.  The first job arrives
  at time 0, which is midnight.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from malleo.emulator.swf_fields import FIELDS, FLOAT_FIELDS, MISSING
from malleo.emulator.workload.estimates import draw_estimates
from malleo.errors import MalleoError
from malleo.limits import MAX_PROCS

if TYPE_CHECKING:
    import pandas as pd

SECONDS_PER_DAY = 86_400
SLOTS_PER_DAY = 48
SLOT_SECONDS = SECONDS_PER_DAY // SLOTS_PER_DAY
CYCLE_FIRST_POINT = 11
"""The daily-cycle gamma is evaluated at points 11..58 (half-hour units): point ``j`` is the
slot starting at ``(j - 1) mod 48`` half hours after midnight, so the fitted day begins at
05:00, the quietest time, and wraps past midnight (the paper's program does the same)."""


@dataclass(frozen=True)
class LublinParams:
    """Parameters of the workload model; defaults are the paper's batch-job values.

    Lublin & Feitelson (JPDC 2003), the model-parameter table (batch column) as distributed
    with the authors' model program ``m_lublin99``: job size (serial and power-of-two
    probabilities, two-stage uniform), runtime (hyper-gamma with size-dependent ``p``) and
    arrivals (gamma interarrivals in rush hours, gamma-shaped daily cycle).  The paper fits
    log2 sizes on a 128-processor machine (``u_hi = 7``, ``u_med = 5``); here ``u_hi`` is
    ``log2(procs) - u_hi_offset`` and ``u_med`` is ``u_hi - u_med_offset``, which gives the
    paper's values at 128 processors and scales them to other machines.

    The estimate fields follow Tsafrir, Etsion & Feitelson (JSSPP 2005), see
    :mod:`malleo.emulator.workload.estimates`; the user fields and the load fields are this
    project's additions (the paper models neither users nor a target load).

    Invariants (checked by :meth:`validated`): probabilities in [0, 1] with
    ``serial_prob + pow2_prob <= 1``; gamma shapes and scales > 0; offsets >= 0; caps > 0;
    ``estimate_max >= exp(log_runtime_cap)`` so every runtime fits under an estimate.
    """

    # Job size (processors): probabilities of all jobs, log2 bounds of the parallel sizes.
    serial_prob: float = 0.2927
    """Probability that a job is serial (1 processor)."""
    pow2_prob: float = 0.6686
    """Probability (of all jobs) that a job is parallel with a power-of-two size."""
    u_low: float = 1.2
    """log2 of the smallest parallel size (2**1.2 rounds to 2)."""
    u_med_offset: float = 2.0
    """``u_med = u_hi - u_med_offset``: the breakpoint of the two-stage uniform (paper: 5 of 7)."""
    u_hi_offset: float = 0.0
    """``u_hi = log2(procs) - u_hi_offset``: log2 of the largest size."""
    u_prob: float = 0.875
    """Probability of the lower stage ``U(u_low, u_med)``."""

    # Runtime: hyper-gamma on the natural log of seconds.
    a1: float = 6.57
    """Shape of the first (short-job) gamma."""
    b1: float = 0.823
    """Scale of the first gamma (log seconds)."""
    a2: float = 639.1
    """Shape of the second (long-job) gamma."""
    b2: float = 0.0156
    """Scale of the second gamma (log seconds)."""
    pa: float = -0.003
    """Slope of ``p = pa * size + pb`` per processor (larger jobs run longer)."""
    pb: float = 0.6986
    """Intercept of ``p``."""
    log_runtime_cap: float = 12.0
    """Redraw runtimes above ``exp(12)`` s (about 45.2 h), as the paper's program does."""

    # Arrivals.
    aarr: float = 6.0415
    """Shape of the rush-hour log-interarrival gamma (before ``arar``)."""
    barr: float = 0.8531
    """Scale of the rush-hour log-interarrival gamma (log seconds)."""
    arar: float = 1.0519
    """Arrive-rush-to-all ratio: the gamma's shape is ``aarr * arar``."""
    anum: float = 6.1271
    """Shape of the daily-cycle gamma (half-hour units)."""
    bnum: float = 5.2740
    """Scale of the daily-cycle gamma (half-hour units)."""
    log_interarrival_cap: float = 13.0
    """Redraw interarrival times above ``exp(13)`` s (about 5.1 days)."""
    arrival_scale: float = 1.0
    """Multiplies every interarrival time in rush-hour time (> 1 lowers the load)."""
    load: float | None = None
    """If set, the offered load to reach exactly (up to whole-second rounding); it sets the
    interarrival scale and ``arrival_scale`` is ignored.  Needs at least 2 jobs."""

    # Users (this project's addition): Zipf popularity.
    users: int = 100
    """Number of distinct users; user ``k`` (1-based) submits a job with probability
    proportional to ``1 / k**user_zipf``."""
    user_zipf: float = 1.0
    """Exponent of the user popularity (0: all users equally active)."""
    groups: int = 10
    """Number of groups; user ``k`` belongs to group ``1 + (k - 1) % groups``."""

    # Estimates (Tsafrir, Etsion & Feitelson 2005).
    estimate_max: int = 48 * 3600
    """The site's maximal estimate in seconds (48 h, above the longest runtime)."""
    estimate_max_fraction: float = 0.10
    """Popularity of the maximal estimate."""
    estimate_zipf: float = 1.0
    """Zipf exponent of the popularity of the other round values."""

    def validated(self) -> "LublinParams":
        """Return self after checking the invariants.

        Raises:
            MalleoError: naming the first parameter out of range.
        """
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "load" and value is None:
                continue
            _require(field.name, value, _is_number(value) and math.isfinite(value),
                     "a finite number")
        for name in ("serial_prob", "pow2_prob", "u_prob", "estimate_max_fraction"):
            _require(name, getattr(self, name), 0.0 <= getattr(self, name) <= 1.0,
                     "a probability in [0, 1]")
        _require("pow2_prob", self.pow2_prob, self.serial_prob + self.pow2_prob <= 1.0,
                 f"at most 1 - serial_prob = {1.0 - self.serial_prob:g}")
        for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "arar", "anum", "bnum",
                     "arrival_scale", "log_runtime_cap", "log_interarrival_cap"):
            _require(name, getattr(self, name), getattr(self, name) > 0.0, "> 0")
        for name in ("u_low", "u_med_offset", "u_hi_offset", "user_zipf", "estimate_zipf"):
            _require(name, getattr(self, name), getattr(self, name) >= 0.0, ">= 0")
        if self.load is not None:
            _require("load", self.load, self.load > 0.0, "> 0")
        for name in ("users", "groups"):
            _require(name, getattr(self, name),
                     _is_int(getattr(self, name)) and getattr(self, name) >= 1,
                     "an integer >= 1")
        longest = math.floor(math.exp(self.log_runtime_cap))
        _require("estimate_max", self.estimate_max,
                 _is_int(self.estimate_max) and self.estimate_max >= longest,
                 f"an integer >= the longest runtime floor(exp(log_runtime_cap)) = {longest} s")
        return self


INTERACTIVE_PARAMS: dict[str, float] = {
    "serial_prob": 0.1541, "pow2_prob": 0.625, "u_low": 1.0, "u_med_offset": 2.5,
    "u_hi_offset": 1.5, "u_prob": 0.705, "a1": 3.8351, "b1": 0.6605, "a2": 7.073,
    "b2": 0.6856, "pa": -0.0118, "pb": 0.9156, "aarr": 6.5510, "barr": 0.6621,
    "arar": 0.9797, "anum": 8.9186, "bnum": 3.6680,
}
"""Overrides for the paper's interactive-job column (``u_hi`` 5.5 and ``u_med`` 3 at 128
processors): ``generate_lublin(n, procs, **INTERACTIVE_PARAMS)``."""

COMBINED_PARAMS: dict[str, float] = {
    "serial_prob": 0.244, "pow2_prob": 0.576, "u_low": 0.8, "u_med_offset": 2.5,
    "u_hi_offset": 0.0, "u_prob": 0.86, "a1": 4.2, "b1": 0.94, "a2": 312.0, "b2": 0.03,
    "pa": -0.0054, "pb": 0.78, "aarr": 10.2303, "barr": 0.4871, "arar": 1.0225,
    "anum": 8.1737, "bnum": 3.9631,
}
"""Overrides for the paper's whole-sample column (batch and interactive jobs fitted
together, ``u_med`` 4.5 at 128 processors)."""


def generate_lublin(jobs: int, procs: int, seed: int = 0, *, as_columns: bool = False,
                    **params) -> pd.DataFrame | dict[str, np.ndarray]:
    """Generate a synthetic SWF job table from the Lublin-Feitelson model.

    Args:
        jobs: number of jobs (>= 1).
        procs: processors of the machine (>= 1); every size is in ``1..procs``.
        seed: seed of ``numpy.random.default_rng``; the same arguments always give the
            same table.
        as_columns: return a dict of numpy columns (each its own array) instead of a
            DataFrame: the replay driver's way, which does not import pandas.
        **params: overrides of :class:`LublinParams` fields by name.

    Returns:
        A DataFrame (or, with ``as_columns``, a dict) with exactly the 18 columns of ``swf_fields.FIELDS`` (int64, float64 for
        ``FLOAT_FIELDS``), one row per job: ``job_number`` 1..jobs; ``submit_time`` seconds,
        non-decreasing, the first 0; ``wait_time`` -1; ``run_time`` >= 1 s;
        ``allocated_procs`` = ``requested_procs`` in 1..procs; ``requested_time`` a popular
        round value >= ``run_time``; ``status`` 1; ``user_id`` and ``group_id`` >= 1; every
        other field -1.

    Raises:
        MalleoError: ``jobs`` or ``procs`` below 1, an unknown parameter name, or a
            parameter out of range (the message names it).

    Examples:
        >>> table = generate_lublin(1000, 256, seed=3)
        >>> table = generate_lublin(1000, 256, load=0.7, estimate_max=72 * 3600)
    """
    _require("jobs", jobs, _is_int(jobs) and jobs >= 1, "an integer >= 1")
    _require("procs", procs, _is_int(procs) and 1 <= procs <= MAX_PROCS,
             f"an integer in 1..{MAX_PROCS} (2**24, malleo.limits.MAX_PROCS)")
    _require("seed", seed, _is_int(seed) and seed >= 0, "an integer >= 0")
    known = {f.name for f in dataclasses.fields(LublinParams)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise MalleoError(f"unknown workload parameter {unknown[0]!r} "
                          f"(known: {', '.join(sorted(known))})")
    p = LublinParams(**params).validated()
    jobs, procs = int(jobs), int(procs)
    rng = np.random.default_rng(int(seed))

    size = _sizes(rng, jobs, procs, p)
    run_time = _runtimes(rng, size, p)
    submit_time = _arrivals(rng, jobs, p, work=float(np.dot(run_time.astype(np.float64), size)), procs=procs)
    user = _users(rng, jobs, p)
    estimate = draw_estimates(run_time, rng, max_estimate=int(p.estimate_max),
                              max_fraction=p.estimate_max_fraction, zipf=p.estimate_zipf)

    columns = {
        "job_number": np.arange(1, jobs + 1, dtype=np.int64),
        "submit_time": submit_time,
        "run_time": run_time,
        "allocated_procs": size,
        "requested_procs": size,
        "requested_time": estimate,
        "status": np.ones(jobs, dtype=np.int64),
        "user_id": user,
        "group_id": 1 + (user - 1) % int(p.groups),
    }
    data = {}
    for name in FIELDS:
        if name in columns:
            data[name] = np.array(columns[name], dtype=np.int64)     # own copy
        elif name in FLOAT_FIELDS:
            data[name] = np.full(jobs, float(MISSING), dtype=np.float64)
        else:
            data[name] = np.full(jobs, MISSING, dtype=np.int64)
    if as_columns:
        return data
    import pandas as pd

    return pd.DataFrame(data, columns=list(FIELDS))


def size_bounds(procs: int, p: LublinParams) -> tuple[float, float, float]:
    """``(u_low, u_med, u_hi)``: log2 bounds of parallel sizes on ``procs`` processors.

    ``u_hi = log2(procs) - u_hi_offset`` and ``u_med = u_hi - u_med_offset``; on machines too
    small for the paper's shape the bounds are clamped so that ``u_low <= u_med <= u_hi``.
    """
    u_hi = max(math.log2(procs) - p.u_hi_offset, 0.0)
    u_low = min(p.u_low, u_hi)
    u_med = min(max(u_hi - p.u_med_offset, u_low), u_hi)
    return u_low, u_med, u_hi


def daily_cycle_weights(anum: float, bnum: float) -> np.ndarray:
    """Relative arrival intensity of the 48 half-hour slots of a day, mean 1.

    Slot ``k`` (starting ``k * 1800`` s after midnight) gets the probability that a
    ``gamma(anum, bnum)`` variable (shape, scale; half-hour units) falls within 0.5 of its
    point ``j = 11 + (k - 10) mod 48`` (see ``CYCLE_FIRST_POINT``).
    """
    slot = np.arange(SLOTS_PER_DAY)
    point = CYCLE_FIRST_POINT + (slot - (CYCLE_FIRST_POINT - 1)) % SLOTS_PER_DAY
    mass = np.array([_gamma_mass(j - 0.5, j + 0.5, anum, bnum) for j in point])
    if not np.all(np.isfinite(mass)) or mass.sum() <= 0.0:
        raise MalleoError(f"anum={anum:g}, bnum={bnum:g} give no arrivals in any half hour")
    # A slot of zero weight would stop the clock; keep a trickle of arrivals there.
    mass = np.maximum(mass, mass.max() * 1e-9)
    return mass / mass.mean()


def _sizes(rng: np.random.Generator, n: int, procs: int, p: LublinParams) -> np.ndarray:
    """Processors per job (int64, 1..procs)."""
    u_low, u_med, u_hi = size_bounds(procs, p)
    kind = rng.random(n)
    stage = rng.random(n)
    position = rng.random(n)
    lower = stage < p.u_prob
    log_size = np.where(lower, u_low + position * (u_med - u_low),
                        u_med + position * (u_hi - u_med))
    pow2 = kind < p.serial_prob + p.pow2_prob
    log_size = np.where(pow2, np.floor(log_size + 0.5), log_size)
    size = np.floor(np.exp2(log_size) + 0.5).astype(np.int64)
    size = np.clip(size, 1, procs)
    size[kind < p.serial_prob] = 1
    return size


def _runtimes(rng: np.random.Generator, size: np.ndarray, p: LublinParams) -> np.ndarray:
    """Seconds per job (int64, 1..floor(exp(log_runtime_cap)))."""
    first = np.clip(p.pa * size + p.pb, 0.0, 1.0)
    log_time = np.empty(size.size, dtype=np.float64)
    todo = np.arange(size.size)
    while todo.size:
        is_first = rng.random(todo.size) < first[todo]
        shape = np.where(is_first, p.a1, p.a2)
        scale = np.where(is_first, p.b1, p.b2)
        draw = rng.gamma(shape, scale)
        log_time[todo] = draw
        todo = todo[draw > p.log_runtime_cap]
    return np.maximum(np.floor(np.exp(log_time)), 1.0).astype(np.int64)


def _capped_gamma(rng: np.random.Generator, n: int, shape: float, scale: float,
                  cap: float) -> np.ndarray:
    """``n`` draws of gamma(shape, scale), each redrawn until it is at most ``cap``."""
    out = rng.gamma(shape, scale, n)
    todo = np.flatnonzero(out > cap)
    while todo.size:
        out[todo] = rng.gamma(shape, scale, todo.size)
        todo = todo[out[todo] > cap]
    return out


def _arrivals(rng: np.random.Generator, n: int, p: LublinParams, *, work: float,
              procs: int) -> np.ndarray:
    """Submit times in seconds (int64, non-decreasing, the first 0).

    ``work`` is the sum of runtime * size (processor-seconds), used only for ``load``.
    """
    gaps = np.exp(_capped_gamma(rng, n - 1, p.aarr * p.arar, p.barr, p.log_interarrival_cap))
    rush = np.concatenate(([0.0], np.cumsum(gaps)))
    weights = daily_cycle_weights(p.anum, p.bnum)
    # Rush-hour time elapsed at each slot boundary of one day (86,400 per day).
    rush_edges = np.concatenate(([0.0], np.cumsum(weights * SLOT_SECONDS)))
    wall_edges = np.arange(SLOTS_PER_DAY + 1, dtype=np.float64) * SLOT_SECONDS
    if p.load is not None:
        if n < 2:
            raise MalleoError("load needs at least 2 jobs (it is work over the submit span)")
        # Choose the scale so that the last arrival lands at the span giving the load.
        span = work / (procs * p.load)
        day, rest = divmod(span, SECONDS_PER_DAY)
        rush_span = day * SECONDS_PER_DAY + np.interp(rest, wall_edges, rush_edges)
        scale = rush_span / rush[-1]
    else:
        scale = p.arrival_scale
    rush = rush * scale
    day, rest = np.divmod(rush, SECONDS_PER_DAY)
    wall = day * SECONDS_PER_DAY + np.interp(rest, rush_edges, wall_edges)
    # Guard monotonicity against float rounding at day boundaries.
    return np.maximum.accumulate(np.floor(wall)).astype(np.int64)


def _users(rng: np.random.Generator, n: int, p: LublinParams) -> np.ndarray:
    """User ids (int64, 1..users), Zipf-popular."""
    weight = 1.0 / np.arange(1, int(p.users) + 1, dtype=np.float64) ** p.user_zipf
    cumulative = np.cumsum(weight / weight.sum())
    cumulative[-1] = 1.0
    return 1 + np.searchsorted(cumulative, rng.random(n), side="right").astype(np.int64)


def _gamma_mass(lo: float, hi: float, shape: float, scale: float) -> float:
    """P(lo < X <= hi) for X ~ gamma(shape, scale), 0 < lo < hi, by composite Simpson."""
    steps = 256
    x = np.linspace(lo, hi, steps + 1)
    pdf = np.exp((shape - 1.0) * np.log(x) - x / scale - math.lgamma(shape)
                 - shape * math.log(scale))
    h = (hi - lo) / steps
    return float(h / 3.0 * (pdf[0] + pdf[-1] + 4.0 * pdf[1:-1:2].sum() + 2.0 * pdf[2:-1:2].sum()))


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _require(name: str, value, ok: bool, what: str) -> None:
    if not ok:
        raise MalleoError(f"workload parameter {name}={value!r}: must be {what}")
