"""Prediction variants and learned predictions (issue 18 points 2 and 3).

``predict_runs``, ``predict_cold`` and ``correction`` (docs/scheduling-semantics.md,
Planning estimate): the core against the oracle on generated workloads and on the head of
real traces, the schedule properties under every variant, the expected-end rule's
increments one by one, and the knobs' refusals.  Learned predictions
(docs/policies.md, "Learned predictions"): the core against the oracle's independent
learner, and the guarantee that a prediction made at t never depends on a job that had
not ended by t.
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (EXAMPLES, TraceHead, arrival_passes_workload, assert_same_schedule,
                     core_run, trace_paths)
from oracle import ORACLE_BACKFILLS, ORACLE_ORDERS, TSAFRIR_STEPS_MIN
from strategies import Workload, workloads

from malleo._core import plan, simulate
from malleo._core.backfill import expected_end
from malleo.errors import PolicyError
from malleo.policy import Policy
from malleo.policy_file import loads_policy

variants = st.fixed_dictionaries({
    "predict_runs": st.sampled_from([1, 2, 3, 5]),
    "predict_cold": st.sampled_from(["fewer", "request"]),
    "correction": st.sampled_from(["request", "incremental"]),
})


@pytest.mark.parametrize("backfill", ORACLE_BACKFILLS)
@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=workloads(max_jobs=60), order=st.sampled_from(ORACLE_ORDERS), knobs=variants,
       est_mode=st.sampled_from(["predict", "request", "learned"]))
def test_core_matches_oracle_under_prediction_variants(backfill, workload, order, knobs,
                                                       est_mode):
    # long runtimes against short requests and predictions: Tsafrir's steps come into play
    long = type(workload)(workload.submit, [r * 97 for r in workload.runtime],
                          [e * 113 for e in workload.estimate], workload.procs,
                          workload.user, workload.total_procs)
    assert_same_schedule(long, order, backfill, est_mode, **knobs)


@pytest.mark.parametrize("est_mode", ["predict", "learned"])
@pytest.mark.parametrize("path", trace_paths(), ids=lambda p: p.name)
def test_core_matches_oracle_on_real_trace_heads(path, est_mode):
    head = TraceHead(path, 300)
    assert_same_schedule(head, "sjf", "easy", est_mode, predict_runs=3, correction="incremental")


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(max_jobs=60), knobs=variants,
       backfill=st.sampled_from(ORACLE_BACKFILLS), est_mode=st.sampled_from(["predict", "learned"]))
def test_variants_never_oversubscribe_and_rerun_identically(workload, knobs, backfill,
                                                             est_mode):
    first = core_run(workload, "sjf", backfill, est_mode, **knobs)
    assert first == core_run(workload, "sjf", backfill, est_mode, **knobs)
    events = sorted([(s, p) for s, p in zip(first["start"], workload.procs)]
                    + [(e, -p) for e, p in zip(first["end"], workload.procs)],
                    key=lambda x: (x[0], x[1]))
    used = 0
    for _, delta in events:
        used += delta
        assert used <= workload.total_procs


def test_incremental_steps_one_by_one():
    # est 100 s, request 40 h: 100 + 60, then 100 + 300, 100 + 900 ... below the request
    request = 40 * 3600
    ends = [100 + 60 * m for m in TSAFRIR_STEPS_MIN if 100 + 60 * m < request]
    assert ends[:4] == [160, 400, 1000, 1900] and ends[-1] == 100 + 72000
    for before, after in zip([100] + ends, ends):
        assert expected_end(0, 100, request, before, True) == after
        assert expected_end(0, 100, request, before, False) == request
    # past the last step below the request: the request, then one second from now
    assert expected_end(0, 100, request, ends[-1], True) == request
    assert expected_end(0, 100, request, request + 5, True) == request + 6
    # a step that would reach the request stops at it
    assert expected_end(0, 100, 200, 100, True) == 160
    assert expected_end(0, 100, 200, 160, True) == 200
    # started at 1000: the same steps from the start
    assert expected_end(1000, 100, request, 1170, True) == 1400


def test_predict_runs_and_cold_start_in_a_replay():
    # one user, one processor: jobs run back to back; job k's estimate is the prediction
    runtime = [10, 20, 30, 40, 50]
    submit = [0, 0, 0, 0, 0]
    n = len(runtime)
    args = (submit, runtime, [1000] * n, [1] * n, [7] * n, [0] * n, [0] * n, 1)
    est = lambda **k: simulate(*args, Policy(estimate="predict", **k))["est"].tolist()
    assert est() == [1000, 10, 15, 25, 35]
    assert est(predict_runs=3) == [1000, 10, 15, 20, 30]
    assert est(predict_runs=3, predict_cold="request") == [1000, 1000, 1000, 20, 30]
    assert est(predict_runs=1) == [1000, 10, 20, 30, 40]


def test_knobs_refused_with_the_key_named():
    with pytest.raises(PolicyError, match="predict_runs"):
        Policy(predict_runs=0)
    with pytest.raises(PolicyError, match="correction"):
        Policy(correction="tsafrir")
    with pytest.raises(PolicyError, match=r"policy>:2: predict_cold"):
        loads_policy('estimate = "predict"\npredict_cold = "zero"\n')
    p = loads_policy('estimate = "predict"\npredict_runs = 4\ncorrection = "incremental"\n')
    assert (p.predict_runs, p.correction) == (4, "incremental")


def test_cli_takes_the_variants_and_refuses_bad_values(malleo_cli):
    if not trace_paths():
        pytest.skip("no real traces: set MALLEO_TRACES")
    trace = trace_paths()[0]
    ok = malleo_cli("replay", trace, "--jobs", "0:200", "--estimate", "predict",
                    "--predict-runs", "3", "--predict-cold", "request",
                    "--correction", "incremental", "--json", "--quiet")
    assert ok.exit_code == 0, ok.output
    bad = malleo_cli("replay", trace, "--jobs", "0:200", "--predict-runs", "0")
    assert bad.exit_code == 2 and "--predict-runs" in bad.output


def test_plan_refuses_learned():
    with pytest.raises(ValueError, match="learned"):
        plan(0, 4, {"procs": [], "start": [], "est": [], "request": []},
             {"submit": [0], "procs": [1], "request": [60]}, Policy(estimate="learned"))


def _learned(submit, runtime, request, procs, user, total):
    return simulate(submit, runtime, request, procs, user, np.zeros(len(submit), np.int32),
                    np.zeros(len(submit), np.int32), total,
                    Policy(estimate="learned", order="sjf"))


@pytest.mark.parametrize("path", trace_paths()[:3], ids=lambda p: p.name)
def test_learned_predictions_never_see_a_job_not_ended(path):
    """Change the runtime of every job still running (or not started) at time T: every
    job submitted up to T keeps its prediction, and the schedule up to T is unchanged.
    A learner that read any runtime before the job's end would move some of them."""
    head = TraceHead(path, 1500)
    submit = np.array(head.submit, np.int64)
    runtime = np.array(head.runtime, np.int64)
    request = np.array(head.estimate, np.int64)
    procs = np.array(head.procs, np.int32)
    user = np.array(head.user, np.int32)
    base = _learned(submit, runtime, request, procs, user, head.total_procs)
    cut = int(np.median(submit))
    pending = base["end"] > cut            # not ended by the cut: their runtimes may change
    # a new runtime within the request (a submission feature, unchanged), still ending
    # after the cut for a job running at the cut
    floor = np.maximum(cut - base["start"] + 1, 0)
    changed = runtime.copy()
    changed[pending] = np.where(request[pending] > runtime[pending], request[pending],
                                np.maximum(runtime[pending] // 2, floor[pending]))
    assert (changed[pending] != runtime[pending]).sum() > 10
    other = _learned(submit, changed, request, procs, user, head.total_procs)
    known = submit <= cut
    assert pending.any() and known.sum() > 100
    # every job submitted by the cut was predicted from the same finished jobs
    assert (other["est"][known] == base["est"][known]).all()
    started = base["start"] <= cut
    assert (other["start"][started] == base["start"][started]).all()
    # and the change is seen once those jobs end: some later prediction moves
    assert (other["est"][~known] != base["est"][~known]).any()


def test_learned_predictions_use_the_runtimes_of_ended_jobs():
    # the learner is trained: a user whose jobs all run 500 s of a 10000 s request gets
    # predictions well below the request once enough of them ended
    n = 400
    submit = np.arange(n, dtype=np.int64) * 600
    runtime = np.full(n, 500, np.int64)
    request = np.full(n, 10000, np.int64)
    r = _learned(submit, runtime, request, np.ones(n, np.int32), np.zeros(n, np.int32), 4)
    assert r["est"][0] == 10000 or r["est"][0] >= 1
    assert np.median(np.abs(r["est"][-100:] - 500)) < 250


def test_easy_plus_plus_preset_everywhere(malleo_cli):
    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.policy import preset

    p = preset("easy++")
    assert (p.order, p.backfill, p.backfill_order, p.estimate, p.predict_at, p.correction) == (
        "fcfs", "easy", "sjf", "predict", "submit", "incremental")
    assert p.describe() == "easy++" and parse_policy_spec("easy++") == p
    assert p.replace(correction="request").describe() != "easy++"
    with pytest.raises(PolicyError, match="preset"):
        preset("easy+++")
    if not trace_paths():
        pytest.skip("no real traces: set MALLEO_TRACES")
    trace = trace_paths()[0]
    a = malleo_cli("replay", trace, "--jobs", "0:300", "--preset", "easy++", "--json", "--quiet")
    b = malleo_cli("replay", trace, "--jobs", "0:300", "--backfill-order", "sjf",
                   "--estimate", "predict", "--predict-at", "submit", "--correction",
                   "incremental", "--json", "--quiet")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ja, jb = json.loads(a.output), json.loads(b.output)
    assert ja["bsld_mean"] == jb["bsld_mean"] and ja["wait_mean"] == jb["wait_mean"]
    bad = malleo_cli("replay", trace, "--preset", "easy+")
    assert bad.exit_code == 2 and "--preset" in bad.output


def arrival_passes(seed: int) -> Workload:
    """helpers.arrival_passes_workload (many passes plan only arrivals: most runs end at
    their request, where a learned prediction below it is corrected up to, so nothing
    comes back) as lists for the oracle."""
    submit, runtime, request, procs, user, _, _, total = arrival_passes_workload(seed)
    return Workload(submit.tolist(), runtime.tolist(), request.tolist(), procs.tolist(),
                    user.tolist(), total)


@pytest.mark.parametrize("order", ["fcfs", "wfp3", "multifactor"])
@pytest.mark.parametrize("bf_order", ["queue", "sjf"])
@pytest.mark.parametrize("seed", [1, 2])
def test_learned_conservative_replans_as_the_oracle(order, bf_order, seed):
    """Learned estimates are fixed at submission, so conservative keeps its profile and
    the holder index between passes (backfill.pxd: kept_by_holders), and a pass where
    nothing came back plans only its arrivals (every block skipped).  `plan` refuses
    learned, so the reference is the oracle with its own learner."""
    assert_same_schedule(arrival_passes(seed), order, "conservative", "learned",
                         backfill_order=bf_order)
