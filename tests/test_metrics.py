"""Metrics on tiny schedules whose values are computed by hand (docs/metrics.md)."""
import math

import numpy as np
import pytest

from malleo.emulator import metrics


def test_job_metrics_by_hand():
    # wait 0, 5, 10; response 100, 10, 10; the third job runs 0 s.
    m = metrics.job_metrics([0, 0, 10], [0, 5, 20], [100, 5, 0], bsld_threshold=2)
    assert m["wait"].tolist() == [0, 5, 10]
    assert m["response"].tolist() == [100, 10, 10]
    assert m["slowdown"].tolist() == [1.0, 2.0, 10.0]      # 0 s job counts as 1 s
    assert m["bsld"].tolist() == [1.0, 2.0, 5.0]           # 10 / max(5, 2), 10 / max(0, 2)


def test_bounded_slowdown_threshold_and_floor():
    m = metrics.job_metrics([0, 0], [0, 3], [4, 4], bsld_threshold=10)
    # (0 + 4) / 10 < 1 -> 1;  (3 + 4) / 10 < 1 -> 1
    assert m["bsld"].tolist() == [1.0, 1.0]
    assert m["slowdown"].tolist() == [1.0, 7 / 4]


def test_job_metrics_rejects_non_positive_threshold():
    with pytest.raises(ValueError, match="bsld_threshold"):
        metrics.job_metrics([0], [0], [1], bsld_threshold=0)


@pytest.mark.parametrize("values, expected", [
    ([3.0, 3.0, 3.0], 1.0),
    ([1.0, 0.0, 0.0, 0.0], 0.25),
    ([1.0, 2.0], 9 / 10),
])
def test_jain_index(values, expected):
    assert metrics.jain_index(np.array(values)) == pytest.approx(expected)


def test_jain_index_undefined():
    assert math.isnan(metrics.jain_index(np.array([])))
    assert math.isnan(metrics.jain_index(np.zeros(3)))


def _tiny():
    # P = 4.  Job 0: 4 procs [0, 10); job 1: 2 procs [10, 20); job 2: 2 procs [10, 30).
    return dict(submit=np.array([0, 0, 5]), start=np.array([0, 10, 10]),
                end=np.array([10, 20, 30]), runtime=np.array([10, 10, 20]),
                procs=np.array([4, 2, 2]), user=np.array([1, 1, 2]),
                backfilled=np.array([0, 0, 1]))


def test_summary_by_hand():
    s, users = metrics.summarize(**_tiny(), total_procs=4, bsld_threshold=10,
                                 dropped={"runtime_missing": 2, "procs_missing": 0})
    assert s["jobs"] == 3
    assert s["dropped"] == 2
    assert s["dropped_by_reason"] == {"runtime_missing": 2, "procs_missing": 0}
    assert s["wait_mean"] == 5.0                       # waits 0, 10, 5
    assert s["wait_median"] == 5.0
    assert s["wait_p95"] == pytest.approx(9.5)         # linear interpolation
    assert s["wait_p99"] == pytest.approx(9.9)
    assert s["wait_max"] == 10
    assert s["response_mean"] == pytest.approx(55 / 3)  # 10, 20, 25
    assert s["bsld_mean"] == pytest.approx((1 + 2 + 1.25) / 3)
    assert s["slowdown_mean"] == pytest.approx((1 + 2 + 1.25) / 3)
    assert s["makespan"] == 30
    assert s["utilization"] == pytest.approx(100 / (4 * 30))   # 40 + 20 + 40 proc-s
    assert s["throughput"] == pytest.approx(3 * 3600 / 30)
    assert s["backfilled"] == 1
    assert s["users"] == 2
    # user 1: bsld 1 and 2 -> 1.5; user 2: 1.25
    assert users.loc[1, "bsld_mean"] == 1.5 and users.loc[2, "bsld_mean"] == 1.25
    assert users["jobs"].tolist() == [2, 1]
    assert s["fairness_jain"] == pytest.approx(2.75 ** 2 / (2 * (1.5 ** 2 + 1.25 ** 2)))


def test_summary_makespan_counts_from_first_submit():
    t = _tiny()
    t["submit"] = t["submit"] + 100
    t["start"] = t["start"] + 100
    t["end"] = t["end"] + 100
    s, _ = metrics.summarize(**t, total_procs=4)
    assert s["makespan"] == 30
    assert s["utilization"] == pytest.approx(100 / 120)


def test_summary_of_no_jobs():
    empty = np.array([], dtype=np.int64)
    s, users = metrics.summarize(empty, empty, empty, empty, empty, empty, empty, 4)
    assert s["jobs"] == 0 and s["users"] == 0 and len(users) == 0
    assert math.isnan(s["wait_mean"]) and math.isnan(s["utilization"])


def test_timeline_by_hand():
    t = _tiny()
    tl = metrics.timeline(t["submit"], t["start"], t["end"], t["procs"], t["runtime"], 4)
    assert tl["time"].tolist() == [0, 5, 10, 20, 30]
    assert tl["busy_procs"].tolist() == [4, 4, 4, 2, 0]
    assert tl["utilization"].tolist() == [1.0, 1.0, 1.0, 0.5, 0.0]
    assert tl["queued_jobs"].tolist() == [1, 2, 0, 0, 0]
    assert tl["queued_procs"].tolist() == [2, 4, 0, 0, 0]
    assert tl["queued_work"].tolist() == [20, 60, 0, 0, 0]     # 2x10, + 2x20


def test_timeline_zero_runtime_and_zero_wait_jobs_leave_no_trace():
    tl = metrics.timeline(np.array([0, 3]), np.array([0, 3]), np.array([5, 3]),
                          np.array([2, 1]), np.array([5, 0]), 2)
    assert tl["time"].tolist() == [0, 3, 5]
    assert tl["busy_procs"].tolist() == [2, 2, 0]
    assert tl["queued_jobs"].tolist() == [0, 0, 0]


def test_timeline_matches_a_naive_sweep():
    rng = np.random.default_rng(7)
    n = 60
    submit = np.sort(rng.integers(0, 200, n))
    start = submit + rng.integers(0, 50, n)
    runtime = rng.integers(0, 40, n)
    end = start + runtime
    procs = rng.integers(1, 5, n)
    tl = metrics.timeline(submit, start, end, procs, runtime, 16)
    for row in tl.itertuples():
        t = row.time
        running = (start <= t) & (t < end)
        waiting = (submit <= t) & (t < start)
        assert row.busy_procs == procs[running].sum()
        assert row.queued_jobs == waiting.sum()
        assert row.queued_procs == procs[waiting].sum()
        assert row.queued_work == (procs * runtime)[waiting].sum()
    assert set(tl["time"]) == set(submit) | set(start) | set(end)
