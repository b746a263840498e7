"""User runtime estimates after Tsafrir, Etsion and Feitelson (2005).

D. Tsafrir, Y. Etsion and D. G. Feitelson, "Modeling user runtime estimates", JSSPP 2005,
LNCS 3834, pp. 1-35.  The paper finds estimates *modal*: users pick from a handful of round
values (about 20 values cover 90% of the jobs), the site's maximal allowed estimate being one
of the most popular; given that maximum and the share of jobs using it, the model reproduces
the estimate distributions of real logs.  Its generator picks an estimate from the
popular-values distribution and then a runtime that fits under it.

This module works in the other direction, because the Lublin-Feitelson model has already
drawn the runtime: given a runtime ``r`` (seconds) it draws an estimate from the
popular-values distribution *conditioned on fitting*,

    P(estimate = v | r) = pop(v) * [v >= r] / sum(pop(w) for w >= r),

which is Bayes' rule on the paper's generative order under the simplifying assumption that,
for every popular value, the runtimes that fit under it are equally likely to come from any
value that fits (the runtime does not say which of the fitting values the user typed).  Jobs
shorter than the smallest popular value therefore use exactly the popularity distribution;
long jobs are pushed to the few values above them, up to the maximum.

The popularity (``estimate_popularity``): the maximal estimate takes a fixed share
(``max_fraction``, the paper's one site-specific knob besides the maximum); the other values
share the rest with a Zipf law ``1 / rank**zipf`` over ``POPULARITY_RANK``, an ordering of the
round values by how popular they are (round hours first).  The paper publishes per-log
histograms, not one universal ranking, so that order is this project's documented choice.
"""
import numpy as np

from malleo.errors import MalleoError

MINUTE = 60
HOUR = 3600

POPULARITY_RANK: tuple[int, ...] = (
    1 * HOUR, 30 * MINUTE, 2 * HOUR, 4 * HOUR, 15 * MINUTE, 10 * MINUTE, 12 * HOUR,
    8 * HOUR, 24 * HOUR, 6 * HOUR, 5 * MINUTE, 3 * HOUR, 10 * HOUR, 20 * MINUTE, 18 * HOUR,
    36 * HOUR, 90 * MINUTE, 5 * HOUR, 45 * MINUTE, 2 * MINUTE, 1 * MINUTE, 48 * HOUR,
)
"""Round estimate values in seconds, most popular first (rank 1 = one hour)."""


def estimate_popularity(max_estimate: int, max_fraction: float,
                        zipf: float) -> tuple[np.ndarray, np.ndarray]:
    """The popular estimate values and their probabilities.

    Args:
        max_estimate: the site's maximal allowed estimate in seconds; values of
            ``POPULARITY_RANK`` above it are dropped and it is added if absent.
        max_fraction: probability of the maximal estimate, in [0, 1].
        zipf: exponent of the Zipf popularity of the other values (>= 0; 0 is uniform).

    Returns:
        ``(values, probabilities)``: int64 seconds in ascending order and float64
        probabilities summing to 1 (the maximum is the last value).
    """
    ranked = [v for v in POPULARITY_RANK if v < max_estimate]
    if not ranked:
        return np.array([max_estimate], dtype=np.int64), np.array([1.0])
    zipf_weight = 1.0 / np.arange(1, len(ranked) + 1, dtype=np.float64) ** zipf
    others = (1.0 - max_fraction) * zipf_weight / zipf_weight.sum()
    values = np.array(ranked + [max_estimate], dtype=np.int64)
    probabilities = np.append(others, max_fraction)
    order = np.argsort(values, kind="stable")
    return values[order], probabilities[order]


def draw_estimates(run_time: np.ndarray, rng: np.random.Generator, *, max_estimate: int,
                   max_fraction: float, zipf: float) -> np.ndarray:
    """Draw one user estimate (seconds) per runtime, never below it.

    Each job takes a popular value that fits (``>= run_time``) with probability
    proportional to its popularity (:func:`estimate_popularity`).

    Args:
        run_time: int64 runtimes in seconds, each at most ``max_estimate``.
        rng: the generator to draw from (one uniform per job).
        max_estimate, max_fraction, zipf: see :func:`estimate_popularity`.

    Returns:
        int64 estimates, each a popular value and ``>= run_time``.

    Raises:
        MalleoError: a runtime exceeds ``max_estimate``.
    """
    run_time = np.asarray(run_time, dtype=np.int64)
    if run_time.size and int(run_time.max()) > max_estimate:
        raise MalleoError(f"estimate_max={max_estimate} s is below the longest runtime "
                          f"{int(run_time.max())} s")
    values, probabilities = estimate_popularity(max_estimate, max_fraction, zipf)
    cumulative = np.cumsum(probabilities)
    cumulative[-1] = 1.0
    first_fit = np.searchsorted(values, run_time, side="left")
    mass_below = np.where(first_fit > 0, cumulative[np.maximum(first_fit - 1, 0)], 0.0)
    # Inverse-CDF draw restricted to the values that fit: a uniform point in the
    # cumulative popularity above the last value that is too short.
    target = mass_below + rng.random(run_time.size) * (1.0 - mass_below)
    pick = np.searchsorted(cumulative, target, side="right")
    # Guard the float edges: stay within the values and never below the first fit
    # (a value of zero popularity is taken only when nothing else fits).
    pick = np.clip(pick, first_fit, len(values) - 1)
    return values[pick]
