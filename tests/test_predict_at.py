"""When a ``predict`` estimate is made (``predict_at``, issue 18): ``pass`` re-evaluates a
waiting job's prediction at every pass from the user's runs completed so far; ``submit``
makes it once, from the user's runs ended by the job's submit time (those ended at that
very time included), as Tsafrir, Etsion and Feitelson 2007 and predictsim do
(docs/scheduling-semantics.md, Planning estimate).

Hand-made replays worked out below; the core against the oracle (tests/oracle.py, which
shares no code with the core) on generated workloads and on the head of every real trace;
properties of ``submit`` (each estimate is the one its submit time determines, the replay
is deterministic, ``plan`` at every event time is the replay); the policy file, the
command line and ``compare --policy`` names.  Times are seconds, sizes processors.
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_runner import invoke
from helpers import EXAMPLES, TraceHead, assert_same_schedule, core_run, oracle_run, trace_paths
from oracle import ORACLE_BACKFILLS, ORACLE_ORDERS
from strategies import Workload, workloads
from test_core_plan import replay_with_plan

from malleo._core import PlanState, plan, simulate
from malleo.emulator.cli._options import parse_column_spec, parse_policy_spec
from malleo.errors import MalleoError, PolicyError
from malleo.limits import MAX_PREDICT_RUNS
from malleo.policy import PRESETS, Policy, preset
from malleo.policy_file import dump_policy, loads_policy

ONE_USER = Workload(submit=[0, 0, 150, 150], runtime=[100, 20, 30, 40],
                    estimate=[1000] * 4, procs=[1] * 4, user=[7] * 4, total_procs=1)
"""P=1, one user, requests 1000 s.  Job 0 runs 0-100 (no history: estimate 1000).  Job 1
(submitted at 0) starts at 100: ``pass`` predicts from job 0's 100 s, ``submit`` from
nothing ended by 0 (the request, 1000).  Jobs 2 and 3 (submitted at 150, runs ended by
then: 100 and 20) are both predicted 60 at submission; job 3 starts at 180, when ``pass``
has seen job 2's 30 s too: (20 + 30) / 2 = 25."""


def _est(workload, **knobs):
    n = len(workload.submit)
    policy = Policy(estimate="predict", **knobs)
    return simulate(np.array(workload.submit), np.array(workload.runtime),
                    np.array(workload.estimate), np.array(workload.procs, np.int32),
                    np.array(workload.user, np.int32), np.zeros(n, np.int32),
                    np.zeros(n, np.int32), workload.total_procs, policy)


def test_submit_fixes_the_prediction_at_submission():
    passed = _est(ONE_USER)
    fixed = _est(ONE_USER, predict_at="submit")
    assert passed["start"].tolist() == fixed["start"].tolist() == [0, 100, 150, 180]
    assert passed["est"].tolist() == [1000, 100, 60, 25]
    assert fixed["est"].tolist() == [1000, 1000, 60, 60]
    assert _est(ONE_USER, predict_at="submit", predict_cold="request")["est"].tolist() \
        == [1000, 1000, 60, 60]
    assert _est(ONE_USER, predict_at="submit", predict_runs=1)["est"].tolist() \
        == [1000, 1000, 20, 20]


def test_runs_ended_at_the_submit_time_count():
    # job 0 runs 0 s and ends at 0, in the pass that starts it; job 1, submitted at 0,
    # is predicted from it (0 s) in the pass repeated at 0, and fixed from then on
    w = Workload(submit=[0, 0, 0], runtime=[0, 50, 10], estimate=[1000, 1000, 1000],
                 procs=[1, 1, 1], user=[3, 3, 3], total_procs=1)
    fixed = _est(w, predict_at="submit")
    assert fixed["est"].tolist() == [1000, 0, 0]
    assert _est(w)["est"].tolist() == [1000, 0, 25]
    for runner in (core_run, oracle_run):
        assert runner(w, "fcfs", "easy", "predict", predict_at="submit")["start"] == [0, 0, 50]


def test_incremental_correction_still_moves_a_fixed_prediction():
    # job 1 is predicted 10 s at submission (job 0's run) but runs 500 s: its expected
    # end moves by Tsafrir's steps (start + 10 + 1 min, + 5 min ...), so the head (job 2,
    # the whole machine, submitted at 100) is reserved at 20 + 10 + 300, not at the request
    w = Workload(submit=[0, 20, 100], runtime=[10, 500, 10], estimate=[5000] * 3,
                 procs=[1, 1, 2], user=[1, 1, 2], total_procs=2)
    for runner in (core_run, oracle_run):
        r = runner(w, "fcfs", "easy", "predict", predict_at="submit", correction="incremental")
        assert r["start"] == [0, 20, 520]
        assert r["reservation"][2] == 20 + 10 + 300     # at 100: +1 min is past, +5 min not
        r = runner(w, "fcfs", "easy", "predict", predict_at="submit")
        assert r["reservation"][2] == 20 + 5000         # the request correction
    est = _est(w, predict_at="submit", correction="incremental")["est"].tolist()
    assert est == [5000, 10, 5000]


@pytest.mark.parametrize("backfill", ORACLE_BACKFILLS)
@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None)
@given(workload=workloads(max_jobs=60), order=st.sampled_from(ORACLE_ORDERS),
       predict_at=st.sampled_from(["pass", "submit"]),
       runs=st.sampled_from([1, 2, 3]), cold=st.sampled_from(["fewer", "request"]),
       correction=st.sampled_from(["request", "incremental"]),
       backfill_order=st.sampled_from(["queue", "sjf"]))
def test_core_matches_oracle(backfill, workload, order, predict_at, runs, cold, correction,
                             backfill_order):
    # runtimes longer than requests and predictions: corrections come into play
    long = Workload(workload.submit, [r * 97 for r in workload.runtime],
                    [e * 113 for e in workload.estimate], workload.procs, workload.user,
                    workload.total_procs)
    assert_same_schedule(long, order, backfill, "predict", predict_at=predict_at,
                         predict_runs=runs, predict_cold=cold, correction=correction,
                         backfill_order=backfill_order)


@pytest.mark.parametrize("predict_at", ["pass", "submit"])
@pytest.mark.parametrize("path", trace_paths(), ids=lambda p: p.name)
def test_core_matches_oracle_on_real_trace_heads(path, predict_at):
    head = TraceHead(path, 400)
    # EASY++ (SJBF candidates, incremental correction) and EASY+ under each predict_at
    assert_same_schedule(head, "fcfs", "easy", "predict", predict_at=predict_at,
                         backfill_order="sjf", correction="incremental")
    assert_same_schedule(head, "sjf", "conservative", "predict", predict_at=predict_at)


def _expected_at_submit(workload, end, runs=2, cold="fewer"):
    """Each job's prediction from the runs of its user ended by its submit time, computed
    from the replay's own end times (completions at one time in job order: exact without
    zero-runtime jobs, whose completions come in later rounds at the same time)."""
    done = sorted(range(len(end)), key=lambda j: (end[j], j))
    out = []
    for j, submit in enumerate(workload.submit):
        past = [workload.runtime[k] for k in done
                if end[k] <= submit and workload.user[k] == workload.user[j]]
        window = past[-runs:]
        if not window or (len(past) < runs and cold == "request"):
            out.append(workload.estimate[j])
        else:
            out.append(min(sum(window) // len(window), workload.estimate[j]))
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(workload=workloads(max_jobs=50, min_runtime=1), order=st.sampled_from(ORACLE_ORDERS),
       backfill=st.sampled_from(ORACLE_BACKFILLS), runs=st.sampled_from([1, 2, 3]),
       cold=st.sampled_from(["fewer", "request"]))
def test_submit_estimates_are_those_of_the_submit_time_and_replays_repeat(
        workload, order, backfill, runs, cold):
    knobs = dict(estimate="predict", order=order, backfill=backfill, predict_at="submit",
                 predict_runs=runs, predict_cold=cold, backfill_order="sjf",
                 correction="incremental")
    n = len(workload.submit)
    args = (np.array(workload.submit), np.array(workload.runtime),
            np.array(workload.estimate), np.array(workload.procs, np.int32),
            np.array(workload.user, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32),
            workload.total_procs)
    first = simulate(*args, Policy(**knobs))
    again = simulate(*args, Policy(**knobs))
    for key in ("start", "end", "reservation", "backfilled", "est"):
        assert first[key].tolist() == again[key].tolist()
    # a job that waited past its submit time started with the prediction of that time
    # (one started at it may have started before the runs ended at that time were seen)
    expected = _expected_at_submit(workload, first["end"].tolist(), runs, cold)
    waited = [j for j in range(n) if first["start"][j] > workload.submit[j]]
    assert [first["est"][j] for j in waited] == [expected[j] for j in waited]


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None)
@given(workload=workloads(max_jobs=40), order=st.sampled_from(["fcfs", "sjf", "wfp3"]),
       backfill=st.sampled_from(ORACLE_BACKFILLS), correction=st.sampled_from(
           ["request", "incremental"]))
def test_plan_at_every_event_is_the_replay(workload, order, backfill, correction):
    n = len(workload.submit)
    w = (np.array(workload.submit, np.int64), np.array(workload.runtime, np.int64),
         np.array(workload.estimate, np.int64), np.array(workload.procs, np.int32),
         np.array(workload.user, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
         workload.total_procs)
    policy = Policy(order=order, backfill=backfill, estimate="predict", predict_at="submit",
                    backfill_order="sjf", correction=correction, bf_max_job_test=3,
                    bf_window=900, bf_resolution=30)
    expected = simulate(*w[:5], w[5].astype(np.int32), w[6].astype(np.int32), w[7], policy)
    got = replay_with_plan(w, policy)
    for key in ("start", "reservation", "backfilled", "est"):
        assert got[key].tolist() == expected[key].tolist(), key


def test_plan_predicts_from_the_runs_ended_by_the_submit_time():
    state = PlanState()
    for end, runtime in [(100, 100), (300, 200), (400, 50)]:
        state.record_completion(5, 1, end - runtime, end)
    running = {"procs": [4], "start": [400], "est": [1000], "request": [1000]}
    pending = {"submit": [250, 350, 400], "procs": [2, 2, 2], "request": [900, 900, 90],
               "user": [5, 5, 5]}
    at_submit = plan(450, 4, running, pending, Policy(estimate="predict", predict_at="submit"),
                     state)
    # ended by 250: 100; by 350: 100, 200; by 400: 200, 50 (capped at the 90 asked)
    assert at_submit.est.tolist() == [100, 150, 90]
    at_pass = plan(450, 4, running, pending, Policy(estimate="predict"), state)
    assert at_pass.est.tolist() == [125, 125, 90]
    assert at_submit.state.horizon == 250 and state.horizon == -1    # plan is pure


def test_plan_state_keeps_what_later_submit_predictions_need():
    state = PlanState()
    state.set_horizon(1000)
    for k in range(3 * MAX_PREDICT_RUNS):      # runs ended by the horizon: the last kept
        state.record_completion(1, 1, k, 2 * k + 1)             # runtime k + 1
    for k in range(5):                          # runs after it: all kept
        state.record_completion(1, 1, 2000 + k, 2000 + 2 * k + 7)   # runtime k + 7
    kept = state.timeline[1]
    assert len(kept) == MAX_PREDICT_RUNS + 5
    assert kept[:MAX_PREDICT_RUNS] == tuple(
        (2 * k + 1, k + 1) for k in range(2 * MAX_PREDICT_RUNS, 3 * MAX_PREDICT_RUNS))
    # a job submitted at the horizon sees the newest runs before it, whatever its window
    assert state.predict(1, 10**6, 1000, runs=MAX_PREDICT_RUNS) == sum(
        range(2 * MAX_PREDICT_RUNS + 1, 3 * MAX_PREDICT_RUNS + 1)) // MAX_PREDICT_RUNS
    assert state.predict(1, 10**6, 2011, runs=2) == (9 + 8) // 2     # ended 2009, 2011
    assert state.predict(2, 77, 2003) == 77                  # no runs: the request
    assert state.copy().timeline == state.timeline


def test_learned_and_other_estimates_ignore_predict_at():
    n = len(ONE_USER.submit)
    args = (np.array(ONE_USER.submit), np.array(ONE_USER.runtime),
            np.array(ONE_USER.estimate), np.array(ONE_USER.procs, np.int32),
            np.array(ONE_USER.user, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32), 1)
    for estimate in ("request", "actual", "learned"):
        a = simulate(*args, Policy(estimate=estimate))
        b = simulate(*args, Policy(estimate=estimate, predict_at="submit"))
        assert a["est"].tolist() == b["est"].tolist(), estimate


def test_policy_file_key_and_refusal():
    policy = loads_policy('estimate = "predict"\npredict_at = "submit"\n')
    assert policy.predict_at == "submit" and policy.core.is_predict_at_submit
    assert not Policy().core.is_predict_at_submit and Policy().predict_at == "pass"
    assert loads_policy(dump_policy(policy)) == policy
    with pytest.raises(PolicyError, match=r"site.toml:2: predict_at: must be one of "
                                          r"pass, submit, got 'arrival'"):
        loads_policy('estimate = "predict"\npredict_at = "arrival"\n', "site.toml")
    with pytest.raises(PolicyError, match="predict_at"):
        Policy(predict_at="never")


def test_easy_plus_plus_predicts_at_submission():
    assert PRESETS["easy++"]["predict_at"] == "submit"
    assert preset("easy++").describe() == "easy++"
    assert preset("easy++").replace(predict_at="pass").describe() \
        == "fcfs+easy+sjbf/predict/incremental"


def test_command_line_option_and_config(tmp_path):
    short = ["--jobs", "0:300", "--quiet", "--json", "--estimate", "predict"]
    passed = json.loads(invoke("replay", *short).output)
    fixed = json.loads(invoke("replay", *short, "--predict-at", "submit").output)
    assert passed["policy"]["predict_at"] == "pass"
    assert fixed["policy"]["predict_at"] == "submit"
    assert fixed["policy_name"] == "fcfs+easy/predict[at=submit]"
    config = tmp_path / "p.toml"
    config.write_text('estimate = "predict"\npredict_at = "submit"\n')
    assert json.loads(invoke("replay", "--jobs", "0:300", "--quiet", "--json", "--config",
                             config).output)["policy"] == fixed["policy"]
    bad = invoke("replay", *short, "--predict-at", "later")
    assert bad.exit_code == 2 and "--predict-at" in bad.output
    assert "Traceback" not in bad.output
    config.write_text('estimate = "predict"\npredict_at = 1\n')
    bad = invoke("replay", "--jobs", "0:300", "--quiet", "--config", config)
    assert bad.exit_code == 2 and "p.toml:2" in bad.output and "predict_at" in bad.output
    assert "Traceback" not in bad.output


NAMED = [
    Policy(),
    Policy(order="sjf", backfill="slurm", bf_max_job_test=50, estimate="actual"),
    Policy(backfill_order="sjf", estimate="predict", correction="incremental"),
    Policy(estimate="predict", predict_runs=3, predict_cold="request"),
    Policy(estimate="predict", predict_at="submit"),
    Policy(estimate="predict", predict_runs=1, predict_cold="fewer", predict_at="submit",
           correction="incremental", backfill_order="sjf", order="wfp3",
           backfill="conservative"),
    Policy(correction="incremental"),
    Policy(estimate="learned", correction="incremental", backfill_order="sjf"),
    preset("easy++"),
    preset("easy++").replace(predict_at="pass"),
]


@pytest.mark.parametrize("policy", NAMED, ids=lambda p: p.describe())
def test_describe_reads_back_as_a_policy_spec(policy):
    assert parse_policy_spec(policy.describe()) == policy
    assert parse_column_spec(policy.describe())[0] == policy


def test_column_pairs_set_top_level_knobs_and_refuse_bad_ones():
    policy, mall, flex = parse_column_spec("fcfs+easy/predict;predict_runs=3;predict_at=submit")
    assert (policy.predict_runs, policy.predict_at, mall, flex) == (3, "submit", {}, {})
    assert parse_policy_spec(policy.describe()) == policy
    with pytest.raises(MalleoError, match="predict_at"):
        parse_column_spec("fcfs+easy/predict;predict_at=later")
    with pytest.raises(MalleoError, match="predict_runs"):
        parse_column_spec("fcfs+easy/predict;predict_runs=x")
    with pytest.raises(MalleoError, match=r"predict_at"):
        parse_policy_spec("fcfs+easy/predict[at=later]")
    with pytest.raises(MalleoError, match=r"\[runs=N"):
        parse_policy_spec("fcfs+easy/request[runs=3]")


def test_compare_takes_its_column_names_back():
    short = ["--jobs", "0:200", "--quiet", "--json"]
    specs = ["fcfs+easy/predict;predict_runs=3;predict_at=submit", "easy++",
             "fcfs+easy;backfill_order=sjf;estimate=predict;correction=incremental"]
    first = invoke("compare", *short, *[a for s in specs for a in ("--policy", s)])
    assert first.exit_code == 0, first.output
    columns = json.loads(first.output)
    names = [c["policy_name"] for c in columns]
    assert names == ["fcfs+easy/predict[runs=3,cold=fewer,at=submit]", "easy++",
                     "fcfs+easy+sjbf/predict/incremental"]
    again = invoke("compare", *short, *[a for s in names for a in ("--policy", s)])
    assert again.exit_code == 0, again.output
    back = json.loads(again.output)
    assert [c["name"] for c in back] == names
    assert [c["policy"] for c in back] == [c["policy"] for c in columns]
    assert [c["bsld_mean"] for c in back] == [c["bsld_mean"] for c in columns]
    bad = invoke("compare", *short, "--policy", "fcfs+easy/predict;predict_at=later")
    assert bad.exit_code == 2 and "--policy" in bad.output and "predict_at" in bad.output
    assert "Traceback" not in bad.output
