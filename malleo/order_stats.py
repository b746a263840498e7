"""Order statistics of a column: its distinct values and its percentiles, computed as
``np.unique`` and ``np.percentile`` (linear method) compute them but without the import of
``numpy.ma`` that numpy 2 makes at their first call (6-13 ms, paid by every small replay:
issue 16's start-up target).  tests/test_order_stats.py checks both against numpy."""
import numpy as np

__all__ = ["distinct", "distinct_inverse", "percentiles"]


def distinct(values) -> np.ndarray:
    """The distinct values of ``values`` (flattened), ascending: the same array as
    ``np.unique(values)`` for numbers, NaNs included (sorted last, kept once)."""
    a = np.sort(np.asarray(values).ravel())
    if a.size == 0:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    if a.dtype.kind in "fc":
        nan = np.flatnonzero(np.isnan(a))
        keep[nan[1:]] = False           # NaN != NaN: all but the first would stay
    return a[keep]


def distinct_inverse(values) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of a 1-D array: the distinct values and
    each value's index among them (intp), the index by ``searchsorted`` (fewer job-sized
    temporaries than numpy's argsort-based inverse)."""
    uniq = distinct(values)
    return uniq, np.searchsorted(uniq, values)


def percentiles(values, q) -> np.ndarray:
    """``np.percentile(values, q)`` (float64, one per ``q``) of a non-empty array of
    numbers, ``q`` in percent (0..100): at virtual index (n - 1) q / 100, the two order
    statistics around it by one partial sort, then numpy's interpolation between them
    (from the lower one below the midpoint, from the upper one at or after it).  NaN for
    every ``q`` when ``values`` holds a NaN, as numpy.

    Raises:
        ValueError: ``values`` empty, or a ``q`` outside 0..100.
    """
    a = np.array(values).ravel()        # a copy: partitioned in place
    n = a.size
    quant = np.true_divide(np.asarray(q, dtype=np.float64).ravel(), 100)
    if n == 0:
        raise ValueError("percentiles of an empty array")
    if quant.size and not (0.0 <= quant.min() and quant.max() <= 1.0):
        raise ValueError("percentiles must be in the range [0, 100]")
    if a.dtype.kind in "fc" and np.isnan(a).any():
        return np.full(quant.size, np.nan)
    virtual = (n - 1) * quant
    below = np.floor(virtual)
    gamma = virtual - below
    lo = below.astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    a.partition(sorted({*lo.tolist(), *hi.tolist()}))
    left = a[lo]
    right = a[hi]
    diff = right - left
    out = np.add(left, diff * gamma)
    np.subtract(right, diff * (1 - gamma), out=out, where=gamma >= 0.5, casting="unsafe")
    return out
