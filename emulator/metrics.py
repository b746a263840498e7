"""Schedule metrics: per-job wait and slowdowns, the summary, per-user fairness, the timeline.

Every function takes plain numpy arrays (times in integer seconds, sizes in processors) and
is vectorised: no Python loop per job.  docs/metrics.md defines each metric; the formulas
there and here are the same.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from malleo.order_stats import distinct_inverse, percentiles

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BSLD_THRESHOLD", "PER_JOB", "job_metrics", "job_metric", "user_groups",
           "group_mean", "summarize", "summary_and_user_columns",
           "user_columns", "user_metrics", "users_frame", "jain_index", "timeline",
           "SUMMARY_KEYS"]

BSLD_THRESHOLD = 10
"""Default bounded-slowdown threshold tau, seconds (Feitelson et al.)."""

SUMMARY_KEYS: dict[str, tuple[str, str, str | None]] = {
    "jobs": ("jobs replayed", "", None),
    "dropped": ("jobs dropped", "", None),
    "wait_mean": ("wait mean", "s", "lower"),
    "wait_median": ("wait median", "s", "lower"),
    "wait_p95": ("wait p95", "s", "lower"),
    "wait_p99": ("wait p99", "s", "lower"),
    "wait_max": ("wait max", "s", "lower"),
    "response_mean": ("response time mean", "s", "lower"),
    "bsld_mean": ("bounded slowdown mean", "", "lower"),
    "slowdown_mean": ("slowdown mean", "", "lower"),
    "utilization": ("utilization", "%", "higher"),
    "makespan": ("makespan", "s", "lower"),
    "throughput": ("throughput", "jobs/h", "higher"),
    "backfilled": ("jobs backfilled", "", None),
    "users": ("users", "", None),
    "fairness_jain": ("Jain fairness of user mean bsld", "", "higher"),
}
"""Summary key -> (label, unit, which value is better: "lower", "higher" or None), in
display order.  Unit "%" marks a fraction in [0, 1] shown as a percentage."""


def job_metrics(submit: np.ndarray, start: np.ndarray, runtime: np.ndarray,
                bsld_threshold: float = BSLD_THRESHOLD) -> dict[str, np.ndarray]:
    """Per-job wait, response time, slowdown and bounded slowdown.

    Args:
        submit, start, runtime: int64 seconds, one entry per job.
        bsld_threshold: tau, seconds (> 0); runtimes shorter than tau count as tau.

    Returns:
        ``wait = start - submit`` (s), ``response = wait + runtime`` (s),
        ``slowdown = max(response / max(runtime, 1), 1)`` (a 0 s job counts as 1 s),
        ``bsld = max(response / max(runtime, tau), 1)``; slowdowns are float64 >= 1.
    """
    return {name: job_metric(name, submit, start, runtime, bsld_threshold)
            for name in PER_JOB}


PER_JOB = ("wait", "response", "slowdown", "bsld")
"""The per-job metrics of :func:`job_metrics`, derived from ``submit``, ``start`` and
``runtime``."""


def job_metric(name: str, submit: np.ndarray, start: np.ndarray, runtime: np.ndarray,
               bsld_threshold: float = BSLD_THRESHOLD) -> np.ndarray:
    """One of :func:`job_metrics`' columns, alone (the same values): a replay result
    derives them on read instead of keeping them (issue 16: 32 bytes a job)."""
    if not bsld_threshold > 0:
        raise ValueError(f"bsld_threshold must be > 0 seconds, got {bsld_threshold}")
    if name not in PER_JOB:
        raise ValueError(f"unknown per-job metric {name!r}: one of {', '.join(PER_JOB)}")
    submit = np.asarray(submit, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    runtime = np.asarray(runtime, dtype=np.int64)
    if name in ("wait", "response"):
        wait = start - submit
        return wait if name == "wait" else np.add(wait, runtime, out=wait)
    # a slowdown: block by block into its own column, so that the integer response and
    # the divisor cost a block each, not a column each (element-wise: the same doubles)
    floor = 1 if name == "slowdown" else bsld_threshold
    out = np.empty(submit.shape, dtype=np.float64)
    for low in range(0, submit.size, _BLOCK):
        block = slice(low, low + _BLOCK)
        response = start[block] - submit[block]
        response += runtime[block]
        np.divide(response, np.maximum(runtime[block], floor), out=out[block])
        np.maximum(out[block], 1.0, out=out[block])
    return out


_BLOCK = 1 << 16
"""Jobs per block of :func:`job_metric`'s slowdowns."""


def jain_index(values: np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``: 1 when all equal, 1/n at worst.

    NaN for an empty input or all zeros.
    """
    x = np.asarray(values, dtype=np.float64)
    square_sum = float(np.sum(x * x))
    if x.size == 0 or square_sum == 0.0:
        return float("nan")
    return float(np.sum(x)) ** 2 / (x.size * square_sum)


def user_columns(user: np.ndarray, bsld: np.ndarray, wait: np.ndarray) -> dict[str, np.ndarray]:
    """Per user, in increasing user id: ``user``, ``jobs`` (int64), ``bsld_mean`` and
    ``wait_mean`` (s, float64).  The means are pandas' ``groupby(...).mean()`` to the bit
    (compensated sums in row order, :mod:`malleo._core.group_mean`), without pandas."""
    codes = user_groups(user)
    return {"user": codes[0], "jobs": codes[2], "bsld_mean": group_mean(codes, bsld),
            "wait_mean": group_mean(codes, wait)}


def user_groups(user: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, group, jobs)``: the distinct user ids ascending, each job's index among them
    (intp) and each user's job count (int64).

    ``order_stats.distinct_inverse``: the same as ``np.unique(...,
    return_inverse=True, return_counts=True)`` with fewer job-sized temporaries (issue 16)."""
    user = np.asarray(user).ravel()
    ids, group = distinct_inverse(user)
    return ids, group, np.bincount(group, minlength=ids.size).astype(np.int64)


def group_mean(codes: tuple[np.ndarray, np.ndarray, np.ndarray], values: np.ndarray
               ) -> np.ndarray:
    """Per group of :func:`user_groups`, the mean of ``values``: pandas'
    ``groupby(...).mean()`` to the bit (compensated sums in row order,
    :mod:`malleo._core.group_mean`), without pandas."""
    from malleo._core.group_mean import group_means

    ids, group, _ = codes
    return group_means(group, np.ascontiguousarray(values, dtype=np.float64), ids.size)


def users_frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """:func:`user_columns` as a DataFrame indexed by ``user`` (imports pandas)."""
    import pandas as pd

    return pd.DataFrame({k: columns[k] for k in ("jobs", "bsld_mean", "wait_mean")},
                        index=pd.Index(columns["user"], name="user"))


def user_metrics(user: np.ndarray, bsld: np.ndarray, wait: np.ndarray) -> pd.DataFrame:
    """Per user: ``jobs``, ``bsld_mean`` and ``wait_mean`` (s), indexed by user id, sorted."""
    return users_frame(user_columns(user, bsld, wait))


def summarize(submit: np.ndarray, start: np.ndarray, end: np.ndarray, runtime: np.ndarray,
              procs: np.ndarray, user: np.ndarray, backfilled: np.ndarray, total_procs: int,
              bsld_threshold: float = BSLD_THRESHOLD,
              dropped: dict[str, int] | None = None) -> tuple[dict, pd.DataFrame]:
    """The summary metrics of one schedule: :func:`summary_and_user_columns` with the
    per-user table as a DataFrame (:func:`users_frame`)."""
    summary, users = summary_and_user_columns(submit, start, end, runtime, procs, user,
                                              backfilled, total_procs, bsld_threshold, dropped)
    return summary, users_frame(users)


def summary_and_user_columns(submit: np.ndarray, start: np.ndarray, end: np.ndarray,
                             runtime: np.ndarray, procs: np.ndarray, user: np.ndarray,
                             backfilled: np.ndarray, total_procs: int,
                             bsld_threshold: float = BSLD_THRESHOLD,
                             dropped: dict[str, int] | None = None,
                             per_job: dict[str, np.ndarray] | None = None
                             ) -> tuple[dict, dict]:
    """The summary metrics of one schedule (no pandas).

    Args:
        submit, start, end, runtime: int64 seconds per job.
        procs: processors each job held (allocated, for node-exclusive machines).
        user: user id per job; backfilled: 0/1 per job.
        total_procs: P, processors of the machine.
        bsld_threshold: tau for the bounded slowdown, seconds.
        dropped: reason -> jobs dropped before the replay (reported as given).
        per_job: :func:`job_metrics` of these arrays when the caller has it already, or
            a mapping that derives each on read (:class:`ReplayResult`'s job columns):
            the columns are read one at a time.

    Returns:
        ``(summary, users)``: the summary dict (keys of :data:`SUMMARY_KEYS`, plus
        ``dropped_by_reason`` and ``bsld_threshold``; times in seconds, utilization a
        fraction in [0, 1], throughput in jobs per hour) and the per-user columns
        of :func:`user_columns`.  With no jobs, every statistic is NaN.
    """
    n = int(np.asarray(submit).size)
    if per_job is None:
        per_job = {name: functools.partial(job_metric, name, submit, start, runtime,
                                           bsld_threshold) for name in PER_JOB}
    else:
        per_job = {name: functools.partial(per_job.__getitem__, name) for name in PER_JOB}
    # One per-job column alive at a time (issue 16: the replay's peak memory).
    codes = user_groups(user)
    wait = per_job["wait"]()
    wait_means = group_mean(codes, wait)
    dropped = dict(dropped or {})
    nan = float("nan")
    summary: dict = {"jobs": n, "dropped": int(sum(dropped.values())),
                     "dropped_by_reason": dropped, "bsld_threshold": bsld_threshold}
    if n == 0:
        users = {"user": codes[0], "jobs": codes[2],
                 "bsld_mean": group_mean(codes, per_job["bsld"]()), "wait_mean": wait_means}
        for key in SUMMARY_KEYS:
            summary.setdefault(key, nan)
        summary["users"] = 0
        summary["backfilled"] = 0
        return summary, users
    p50, p95, p99 = percentiles(wait, [50, 95, 99])
    summary.update({"wait_mean": float(np.mean(wait)), "wait_median": float(p50),
                    "wait_p95": float(p95), "wait_p99": float(p99),
                    "wait_max": int(np.max(wait))})
    del wait
    summary["response_mean"] = float(np.mean(per_job["response"]()))
    bsld = per_job["bsld"]()
    users = {"user": codes[0], "jobs": codes[2], "bsld_mean": group_mean(codes, bsld),
             "wait_mean": wait_means}
    summary["bsld_mean"] = float(np.mean(bsld))
    del bsld
    summary["slowdown_mean"] = float(np.mean(per_job["slowdown"]()))
    first_submit = int(np.min(submit))
    makespan = int(np.max(end)) - first_submit
    # float64 products as ``procs.astype(float64) * runtime`` gives, without the copy
    work = float(np.sum(np.multiply(procs, runtime, dtype=np.float64)))
    summary.update({
        "utilization": work / (total_procs * makespan) if makespan > 0 else nan,
        "makespan": makespan,
        "throughput": n * 3600.0 / makespan if makespan > 0 else nan,
        "backfilled": int(np.count_nonzero(backfilled)),
        "users": int(users["user"].size),
        "fairness_jain": jain_index(users["bsld_mean"]),
    })
    return summary, users


def timeline(submit: np.ndarray, start: np.ndarray, end: np.ndarray, procs: np.ndarray,
             runtime: np.ndarray, total_procs: int) -> pd.DataFrame:
    """Machine and queue state over time, as a step function.

    One row per distinct event time (a submit, start or end); each row holds from its
    ``time`` until the next row's.  Columns: ``time`` (s), ``busy_procs`` (processors held by
    running jobs), ``utilization`` (busy_procs / total_procs), ``queued_jobs`` (submitted,
    not started), ``queued_procs`` (their processors) and ``queued_work`` (their
    processor-seconds, procs x runtime).  A job counts as running in ``[start, end)`` and
    waiting in ``[submit, start)``; a job that waits 0 s or runs 0 s changes nothing there.
    """
    submit = np.asarray(submit, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    procs = np.asarray(procs, dtype=np.int64)
    area = procs * np.asarray(runtime, dtype=np.int64)
    n = submit.size
    zeros = np.zeros(n, dtype=np.int64)
    ones = np.ones(n, dtype=np.int64)
    times = np.concatenate([submit, start, start, end])
    # Each event row: (delta busy, delta queued jobs, delta queued procs, delta queued work).
    busy = np.concatenate([zeros, procs, zeros, -procs])
    qjobs = np.concatenate([ones, zeros, -ones, zeros])
    qprocs = np.concatenate([procs, zeros, -procs, zeros])
    qwork = np.concatenate([area, zeros, -area, zeros])
    order = np.argsort(times, kind="stable")
    times = times[order]
    last = np.flatnonzero(np.append(times[1:] != times[:-1], True)) if n else np.array([], int)
    columns = {name: np.cumsum(delta[order])[last]
               for name, delta in (("busy_procs", busy), ("queued_jobs", qjobs),
                                   ("queued_procs", qprocs), ("queued_work", qwork))}
    import pandas as pd

    frame = pd.DataFrame({"time": times[last], **columns})
    frame.insert(2, "utilization", frame["busy_procs"] / float(total_procs))
    return frame
