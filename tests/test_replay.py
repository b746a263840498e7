"""The replay driver through the real core: tiny hand-computed schedules, the default
workload end to end, slices, node-exclusive machines and the writers."""
import math

import numpy as np
import pandas as pd
import pytest

from malleo.emulator import load_workload, read_swf, replay
from malleo.emulator.results import JOB_COLUMNS
from malleo.emulator.swf_fields import FIELDS
from malleo.errors import MalleoError
from malleo.policy import Policy

from helpers import TRACES          # MALLEO_TRACES, or ../shared/traces beside the repo
SDSC = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"


def swf_table(rows):
    """A table of the 18 SWF fields from (job_number, submit, run_time, procs,
    requested_time, user) tuples; every other field is -1."""
    data = {name: np.full(len(rows), -1, dtype=np.float64 if name in
                          ("avg_cpu_time", "used_memory", "requested_memory") else np.int64)
            for name in FIELDS}
    for i, (number, submit, run, procs, request, user) in enumerate(rows):
        data["job_number"][i] = number
        data["submit_time"][i] = submit
        data["run_time"][i] = run
        data["allocated_procs"][i] = procs
        data["requested_procs"][i] = procs
        data["requested_time"][i] = request
        data["user_id"][i] = user
        data["status"][i] = 1
    return pd.DataFrame(data)


TINY = [  # job, submit, runtime, procs, request, user  (P = 4)
    (1, 0, 10, 4, 10, 1),
    (2, 0, 10, 2, 10, 1),
    (3, 5, 20, 2, 20, 2),
]


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_tiny_schedule_by_hand(backfill):
    result = replay(swf_table(TINY), Policy(backfill=backfill), procs=4)
    jobs = result.jobs
    assert list(jobs.columns) == list(JOB_COLUMNS)
    assert jobs["job_id"].tolist() == [1, 2, 3]
    assert jobs["start"].tolist() == [0, 10, 10]
    assert jobs["end"].tolist() == [10, 20, 30]
    assert jobs["wait"].tolist() == [0, 10, 5]
    assert jobs["bsld"].tolist() == [1.0, 2.0, 1.25]
    s = result.summary
    assert s["jobs"] == 3 and s["dropped"] == 0
    assert s["utilization"] == pytest.approx(100 / 120)
    assert s["makespan"] == 30
    assert s["wait_mean"] == 5.0
    assert s["policy"] == f"fcfs+{backfill}" and s["procs"] == 4


def test_input_order_does_not_matter():
    rows = [(7, 5, 3, 1, 3, 1), (2, 5, 3, 1, 3, 1), (9, 0, 3, 1, 3, 1), (4, 5, 3, 1, 3, 1)]
    shuffled = replay(swf_table(rows), procs=1)
    assert shuffled.jobs["job_id"].tolist() == [9, 2, 4, 7]      # (submit, job number)
    assert shuffled.jobs["start"].tolist() == [0, 5, 8, 11]


def test_table_with_derived_columns_is_used_as_is():
    table = swf_table(TINY).assign(procs=np.int32([4, 2, 2]), runtime=[10, 10, 20],
                                   estimate=[10, 10, 20])
    assert replay(table, procs=4).jobs["start"].tolist() == [0, 10, 10]


def test_a_raw_table_needs_the_machine_size():
    with pytest.raises(MalleoError, match="procs"):
        replay(swf_table(TINY))


def test_jobs_larger_than_the_machine_are_dropped():
    rows = TINY + [(4, 6, 5, 5, 5, 1)]
    result = replay(swf_table(rows), procs=4)
    assert result.dropped == {"larger_than_machine": 1}
    assert result.summary["dropped"] == 1
    assert 4 not in result.jobs["job_id"].tolist()


def test_nothing_left_to_replay():
    result = replay(swf_table([(1, 0, 10, 8, 10, 1)]), procs=4)
    assert len(result.jobs) == 0 and len(result.timeline) == 0
    assert result.summary["jobs"] == 0 and result.dropped == {"larger_than_machine": 1}
    data = result.to_dict()
    assert data["wait_mean"] is None and data["utilization"] is None


def test_node_exclusive_allocation():
    rows = [(1, 0, 10, 1, 10, 1), (2, 0, 10, 1, 10, 1), (3, 0, 10, 1, 10, 1),
            (4, 0, 10, 9, 10, 1)]
    shared = replay(swf_table(rows[:3]), procs=8)
    assert shared.jobs["start"].tolist() == [0, 0, 0]
    exclusive = replay(swf_table(rows), procs=8, node_procs=4)
    # 2 nodes of 4: each 1-processor job holds a whole node; 9 processors need 3 nodes.
    assert exclusive.dropped == {"larger_than_machine": 1}
    assert exclusive.jobs["start"].tolist() == [0, 0, 10]
    assert exclusive.jobs["alloc_procs"].tolist() == [4, 4, 4]
    assert exclusive.jobs["procs"].tolist() == [1, 1, 1]
    assert exclusive.summary["utilization"] == pytest.approx(120 / (8 * 20))
    assert exclusive.summary["utilization_used"] == pytest.approx(30 / (8 * 20))
    assert exclusive.timeline["busy_procs"].max() == 8


def test_node_exclusive_drop_of_a_job_that_fits_the_processors_but_not_the_nodes():
    # 10 processors, nodes of 4: 2 nodes; 9 processors fit the machine but need 3 nodes
    rows = [(1, 0, 10, 9, 10, 1), (2, 0, 10, 2, 10, 1), (3, 0, 10, 3, 10, 1)]
    result = replay(swf_table(rows), procs=10, node_procs=4)
    assert result.dropped == {"larger_than_machine": 1}
    assert result.jobs["job_id"].tolist() == [2, 3]
    assert result.jobs["procs"].tolist() == [2, 3]
    assert result.jobs["alloc_procs"].tolist() == [4, 4]
    assert result.summary["utilization_used"] == pytest.approx(50 / (8 * 10))


def test_node_exclusive_machine_size_rounds_down_to_whole_nodes():
    result = replay(swf_table(TINY), procs=10, node_procs=4)     # 2 nodes
    assert result.procs == 8 and result.summary["procs"] == 8


@pytest.mark.parametrize("bad, message", [
    (dict(node_procs=-1), "node_procs"),
    (dict(node_procs=5), "node_procs"),
    (dict(jobs="3"), "START:COUNT"),
    (dict(jobs="0:0"), "COUNT >= 1"),
    (dict(jobs="9:1"), "past the last job"),
    (dict(bsld_threshold=0), "bsld_threshold"),
])
def test_bad_arguments(bad, message):
    with pytest.raises(MalleoError, match=message):
        replay(swf_table(TINY), procs=4, **bad)


def test_default_workload_end_to_end():
    result = replay()
    jobs = result.jobs
    assert result.source.startswith("lublin(")
    assert result.procs == 256
    assert len(jobs) + result.summary["dropped"] == 10000
    assert (jobs["start"] >= jobs["submit"]).all()
    assert (jobs["end"] == jobs["start"] + jobs["runtime"]).all()
    key = jobs["submit"].to_numpy() * 10**7 + jobs["job_id"].to_numpy()
    assert (np.diff(key) > 0).all()
    assert result.timeline["busy_procs"].max() <= 256
    assert 0 < result.summary["utilization"] <= 1
    assert result.summary["bsld_mean"] >= 1
    assert result.summary["users"] == len(result.users)
    assert 0 < result.summary["fairness_jain"] <= 1
    assert result.summary["backfilled"] == int(jobs["backfilled"].sum()) > 0


def test_timeline_mean_utilization_is_the_summary_utilization():
    result = replay(None, Policy(backfill="conservative"), jobs="0:3000", node_procs=4)
    tl = result.timeline
    span = np.diff(tl["time"].to_numpy())
    mean = float(np.sum(tl["utilization"].to_numpy()[:-1] * span) / np.sum(span))
    assert tl["time"].iloc[0] == result.jobs["submit"].min()
    assert tl["time"].iloc[-1] == result.jobs["end"].max()
    assert mean == pytest.approx(result.summary["utilization"], rel=1e-12)
    assert tl["busy_procs"].iloc[-1] == 0 and tl["queued_jobs"].iloc[-1] == 0


def test_slice_replays_those_jobs_on_an_empty_machine():
    whole = load_workload()
    part = replay(whole, jobs="100:50")
    order = whole.table.sort_values(["submit_time", "job_number"], kind="stable")
    assert part.jobs["job_id"].tolist() == order["job_number"].iloc[100:150].tolist()
    assert part.jobs["start"].iloc[0] == part.jobs["submit"].iloc[0]   # empty machine
    assert replay(whole, jobs=(100, 50)).jobs.equals(part.jobs)


def test_a_loaded_workload_replays_like_its_source():
    policy = Policy(order="sjf", backfill="conservative")
    sliced = dict(jobs="0:500")
    assert replay(load_workload(), policy, **sliced).jobs.equals(
        replay(None, policy, **sliced).jobs)


def test_policies_change_the_schedule():
    easy = replay(None, Policy(backfill="easy"), jobs="0:2000")
    none = replay(None, Policy(backfill="none"), jobs="0:2000")
    assert none.summary["backfilled"] == 0
    assert easy.summary["wait_mean"] < none.summary["wait_mean"]


def test_csv_and_parquet_round_trip(tmp_path):
    result = replay(None, jobs="0:300")
    result.write(tmp_path / "jobs.csv")
    back = pd.read_csv(tmp_path / "jobs.csv")
    pd.testing.assert_frame_equal(back, result.jobs, check_dtype=False)
    pytest.importorskip("pyarrow")
    result.write(tmp_path / "jobs.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "jobs.parquet"), result.jobs)


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path, monkeypatch):
    import malleo.emulator.results as results

    real = results.importlib.util.find_spec
    monkeypatch.setattr(results.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(MalleoError, match="pyarrow"):
        replay(swf_table(TINY), procs=4).to_parquet(tmp_path / "x.parquet")


def test_unknown_output_extension(tmp_path):
    with pytest.raises(MalleoError, match="csv or .parquet"):
        replay(swf_table(TINY), procs=4).write(tmp_path / "x.txt")


def test_swf_output_reads_back_as_the_schedule(tmp_path):
    result = replay(None, Policy(order="sjf"), jobs="0:400")
    path = tmp_path / "schedule.swf"
    result.to_swf(path)
    jobs, meta = read_swf(path)
    assert meta.procs == 256
    assert any("sjf+easy" in note and "lublin(" in note for note in meta.notes)
    assert jobs["job_number"].tolist() == result.jobs["job_id"].tolist()
    assert (jobs["wait_time"].to_numpy() == result.jobs["wait"].to_numpy()).all()
    assert (jobs["run_time"].to_numpy() == result.jobs["runtime"].to_numpy()).all()
    assert (jobs["submit_time"].to_numpy() == result.jobs["submit"].to_numpy()).all()


def test_to_dict_is_json_ready():
    import json

    data = replay(swf_table(TINY), procs=4).to_dict()
    assert json.loads(json.dumps(data))["policy"]["order"] == "fcfs"
    assert data["policy_name"] == "fcfs+easy"
    empty = replay(swf_table(TINY), procs=4, jobs="0:1").to_dict()
    assert empty["jobs"] == 1 and empty["wait_p95"] == 0.0


@pytest.mark.skipif(not SDSC.exists(), reason=f"real traces not found at {TRACES}")
def test_real_trace_slice_keeps_the_readers_drop_counts():
    result = replay(SDSC, Policy(backfill="easy"), jobs="0:3000")
    _, meta = read_swf(SDSC)
    assert result.procs == 128
    assert result.dropped == {k: v for k, v in meta.dropped.items() if v}
    assert len(result.jobs) == 3000
    assert result.timeline["busy_procs"].max() <= 128
    assert not math.isnan(result.summary["bsld_mean"])


# --- columns without pandas (issue 16: start-up and memory) ------------------------------------

def test_a_workload_without_swf_fields_replays_alike_and_refuses_swf(tmp_path):
    full = load_workload(None)
    lean = load_workload(None, swf_fields=False)
    assert sorted(lean.columns) == sorted(["job_number", "submit_time", "user_id", "queue",
                                           "partition", "executable", "procs", "runtime",
                                           "estimate"])      # executable: by_application
    policy = Policy(backfill="conservative")
    a, b = replay(full, policy, jobs="0:2000"), replay(lean, policy, jobs="0:2000")
    assert a.summary == b.summary
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.users, b.users)
    a.to_swf(tmp_path / "full.swf")
    with pytest.raises(MalleoError, match="without the SWF fields wait_time"):
        b.to_swf(tmp_path / "lean.swf")
    assert not (tmp_path / "lean.swf").exists()


def test_the_result_shares_nothing_writable_with_the_workload():
    workload = load_workload(None)
    before = {k: v.copy() for k, v in workload.columns.items()}
    result = replay(workload, Policy(), jobs="0:500")
    jobs, swf = result.jobs, result.swf_table
    jobs.loc[:, "submit"] = -5
    jobs.loc[:, "user"] = -5
    swf.loc[:, "requested_time"] = -5
    assert all(np.array_equal(before[k], v) for k, v in workload.columns.items())
    assert (result.jobs["submit"] == -5).all()      # the frame is built once, then kept


def test_per_user_means_are_pandas_groupby_means_to_the_bit():
    from malleo.emulator import metrics

    rng = np.random.default_rng(5)
    user = rng.integers(1, 40, 20_000)
    bsld = np.exp(rng.normal(0, 4, user.size))          # spans many orders of magnitude
    wait = rng.integers(0, 10**9, user.size)
    got = metrics.user_metrics(user, bsld, wait)
    frame = pd.DataFrame({"user": user, "bsld": bsld, "wait": wait})
    grouped = frame.groupby("user", sort=True)
    want = pd.DataFrame({"jobs": grouped.size(), "bsld_mean": grouped["bsld"].mean(),
                         "wait_mean": grouped["wait"].mean()})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
