"""Per-group means with compensated (Kahan) summation, pandas' ``groupby(...).mean()``
rule, without importing pandas (issue 16: a small replay's start-up).

The sum of each group runs in row order with Kahan compensation exactly as pandas'
``group_mean`` (``pandas/_libs/groupby.pyx``: ``y = x - c; t = s + y; c = (t - s) - y;
s = t``, a NaN compensation reset to 0 so that infinities stay infinite), then divides by
the group's count, so the per-user metrics are the same doubles as pandas gives.
"""
import numpy as np

from _types cimport intp_t


def group_means(const intp_t[::1] group, const double[::1] values, intp_t n_groups):
    """Mean of ``values`` per group (``group[i]`` in ``[0, n_groups)``), row order, NaN
    values skipped (as pandas); a group without a value gets NaN.

    Returns:
        float64 array of ``n_groups`` means.
    """
    cdef:
        intp_t n = group.shape[0], i, g
        double y, t, x
        double[::1] sums = np.zeros(n_groups, dtype=np.float64)
        double[::1] comp = np.zeros(n_groups, dtype=np.float64)
        intp_t[::1] counts = np.zeros(n_groups, dtype=np.intp)
    if values.shape[0] != n:
        raise ValueError(f"group_means: {n} groups for {values.shape[0]} values")
    with nogil:
        for i in range(n):
            g = group[i]
            x = values[i]
            if x != x:
                continue
            counts[g] += 1
            y = x - comp[g]
            t = sums[g] + y
            comp[g] = t - sums[g] - y
            if comp[g] != comp[g]:
                comp[g] = 0
            sums[g] = t
    out = np.empty(n_groups, dtype=np.float64)
    cdef double[::1] res = out
    for g in range(n_groups):
        res[g] = sums[g] / counts[g] if counts[g] > 0 else float("nan")
    return out
