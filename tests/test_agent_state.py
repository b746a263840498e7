"""Live state -> plan inputs, on Slurm outputs captured from 22.05 and built for 24.11
(tests/data/slurm/), parsed by the CLI backend's own parsers: no fake backend."""
import json
import zlib
from dataclasses import replace

from msgspec.structs import replace as replace_job
from pathlib import Path

import numpy as np
import pytest

from malleo._core import plan
from malleo.plugin.agent.state import (
    UNLIMITED_SECONDS, Snapshot, plan_inputs, predicted_estimate, user_key)
from malleo.plugin.backends import parse_json
from malleo.policy import Policy

DATA = Path(__file__).parent / "data" / "slurm"


def snapshot(version: str, read_time: float | None = None, max_time=None) -> Snapshot:
    jobs = parse_json.jobs_from_squeue(json.loads((DATA / f"squeue-{version}.json").read_text()))
    nodes = parse_json.nodes_from_sinfo(json.loads((DATA / f"sinfo-{version}.json").read_text()))
    latest = max(max(j.submit_time, j.start_time or 0) for j in jobs)
    return Snapshot(read_time if read_time is not None else latest + 5, tuple(nodes), tuple(jobs),
                    {"debug": max_time, "long": None}, "debug")


def test_captured_2205_nodes_mode():
    snap = snapshot("22.05")
    inputs = plan_inputs(snap)
    # n16 is drained: 15 usable nodes.  Running jobs 1, 2, 6, 7 (job 3 completed).
    assert inputs.total == 15 and inputs.partition == "debug"
    assert inputs.running_ids.tolist() == [1, 2, 6, 7]
    assert inputs.running["procs"].tolist() == [2, 1, 2, 1]
    assert inputs.busy == 6
    # Job 7 has no time limit and the partition no MaxTime.
    assert inputs.running["request"].tolist() == [600, 60, 900, UNLIMITED_SECONDS]
    assert inputs.running["est"].tolist() == inputs.running["request"].tolist()
    # Job 4 is held (left alone); job 5 asks for 16 nodes, more than the 15 usable.
    assert inputs.pending_ids.tolist() == []
    assert inputs.skipped == {4: "held", 5: "needs 16 nodes, 15 usable"}
    assert [j.job_id for j in inputs.finished] == [3]
    assert inputs.now == int(snap.read_time)


def test_captured_2205_cpus_mode_plans_the_large_job():
    inputs = plan_inputs(snapshot("22.05"), unit="cpus")
    assert inputs.total == 30                     # 15 usable nodes x 2 CPUs
    assert inputs.running["procs"].tolist() == [4, 2, 4, 2]
    assert inputs.pending_ids.tolist() == [5] and inputs.pending["procs"].tolist() == [16]
    assert inputs.pending["request"].tolist() == [7200]
    assert inputs.pending_priority.tolist() == [777]


def test_captured_2411_schema():
    snap = snapshot("24.11")
    inputs = plan_inputs(snap)
    assert inputs.total == 15
    # Job 16 is COMPLETING: it still holds n3, n4.
    assert inputs.running_ids.tolist() == [11, 15, 16]
    assert inputs.running["procs"].tolist() == [2, 1, 2]
    # Job 13 (16 nodes) does not fit the 15 usable; job 12 is held.
    assert inputs.pending_ids.tolist() == [14]
    assert inputs.pending["procs"].tolist() == [2]
    assert inputs.pending["request"].tolist() == [900]
    assert set(inputs.skipped) == {12, 13}
    decisions = plan(inputs.now, inputs.total, inputs.running, inputs.pending, Policy())
    assert decisions.start.tolist() == [0]        # 10 nodes free: it starts now


def test_partition_max_time_bounds_unlimited_jobs():
    inputs = plan_inputs(snapshot("22.05", max_time=3600))
    assert inputs.running["request"].tolist()[-1] == 3600


def test_now_never_precedes_what_slurm_reports():
    # The agent's clock lags the controller's: now is raised to the latest submit/start.
    snap = snapshot("24.11", read_time=0)
    inputs = plan_inputs(snap)
    assert inputs.now == max(max(j.submit_time, j.start_time or 0) for j in snap.jobs
                             if j.state != "COMPLETED")
    assert (inputs.pending["submit"] <= inputs.now).all()
    assert (inputs.running["start"] <= inputs.now).all()


def test_pending_order_and_previous_pass_columns():
    snap = snapshot("22.05")
    base = next(j for j in snap.jobs if j.job_id == 5)
    extra = [replace_job(base, job_id=20 + k, submit_time=base.submit_time - k, num_nodes=1,
                     num_cpus=1, reason="Priority", priority=100 + k) for k in range(3)]
    snap = replace(snap, jobs=snap.jobs + tuple(extra))
    inputs = plan_inputs(snap, previous_reservation={21: 1234}, previous_priority={22: 0.5})
    # (submit, id) order: 22 submitted first.
    assert inputs.pending_ids.tolist() == [22, 21, 20]
    assert inputs.pending["reservation"].tolist() == [-1, 1234, -1]
    prio = inputs.pending["priority"]
    assert prio[0] == 0.5 and np.isnan(prio[1]) and np.isnan(prio[2])
    assert inputs.pending_priority.tolist() == [102, 101, 100]


def test_ineligible_reasons_are_skipped():
    snap = snapshot("24.11")
    job = next(j for j in snap.jobs if j.job_id == 14)
    snap = replace(snap, jobs=tuple(replace_job(j, reason="Dependency") if j is job else j
                                    for j in snap.jobs))
    inputs = plan_inputs(snap)
    assert 14 not in inputs.pending_ids.tolist() and inputs.skipped[14] == "reason Dependency"


def test_draining_node_is_neither_machine_nor_busy():
    snap = snapshot("22.05")
    nodes = tuple(replace(n, flags=("DRAIN",)) if n.name == "n1" else n for n in snap.nodes)
    inputs = plan_inputs(replace(snap, nodes=nodes))
    assert inputs.total == 14
    assert inputs.running["procs"].tolist() == [1, 1, 2, 1]   # job 1 keeps only n2


def test_other_partitions_are_ignored():
    inputs = plan_inputs(snapshot("24.11"), partition="long")
    assert inputs.total == 1                      # only n1 is in "long"
    assert inputs.pending_ids.tolist() == [] and inputs.running_ids.tolist() == []


def test_errors():
    snap = snapshot("22.05")
    with pytest.raises(ValueError, match="unit"):
        plan_inputs(snap, unit="gpus")
    with pytest.raises(ValueError, match="actual"):
        plan_inputs(snap, estimate="actual")
    with pytest.raises(ValueError, match="partition 'nope'"):
        plan_inputs(snap, partition="nope")


def test_user_keys_are_stable():
    job = snapshot("22.05").jobs[0]
    assert user_key(job) == 0                     # root's uid
    anonymous = replace_job(job, user_id=None, user="alice")
    assert user_key(anonymous) == zlib.crc32(b"alice") & 0x7FFFFFFF
    assert user_key(anonymous) != user_key(replace_job(anonymous, user="bob"))


def test_predicted_estimate_rules():
    history = {1: (100, 0, 1), 2: (100, 51, 5)}
    assert predicted_estimate(history, 1, 600) == 100
    assert predicted_estimate(history, 2, 600) == 75          # (100 + 51) // 2
    assert predicted_estimate(history, 2, 60) == 60           # capped by the request
    assert predicted_estimate(history, 3, 600) == 600         # no history: the request


def test_predict_mode_uses_history_for_running_jobs():
    snap = snapshot("22.05")
    inputs = plan_inputs(snap, estimate="predict", history={0: (30, 10, 2)})
    assert inputs.running["est"].tolist() == [20, 20, 20, 20]
    assert inputs.running["request"].tolist()[0] == 600


def test_running_estimates_with_predict_at_submit_are_the_predictions_at_submission():
    """Jobs 1, 2 (submitted at T) and 6, 7 (at T + 3), all of user 0: with predict_at
    submit each starts from the runs ended by its own submit time, not from the history now."""
    from malleo._core import PlanState

    t = 1796009531
    state = PlanState()
    state.record_completion(0, 1, t - 100, t - 60)        # 40 s, ended before T
    state.record_completion(0, 1, t - 10, t + 2)          # 12 s, ended between T and T + 3
    state.record_completion(0, 1, t + 3, t + 4)           # 1 s, ended after T + 3
    snap = snapshot("22.05")
    kw = dict(estimate="predict", history=state.history, recent=state.recent)
    at_submit = plan_inputs(snap, predict_at="submit", plan_state=state, **kw)
    at_pass = plan_inputs(snap, **kw)
    assert at_submit.running_ids.tolist() == [1, 2, 6, 7]
    # T: 40 s alone (fewer runs: their mean), capped at job 2's 60 s limit; T + 3: 40, 12
    assert at_submit.running["est"].tolist() == [40, 40, 26, 26]
    assert at_pass.running["est"].tolist() == [6, 6, 6, 6]          # (12 + 1) // 2
