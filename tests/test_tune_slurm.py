"""malleo tune --executor slurm: a small sweep as a job array on the real local Slurm."""
import pandas as pd
import pytest

from malleo.emulator.swf import write_swf
from malleo.emulator.swf_header import TraceMeta
from malleo.emulator.tune.evaluate import Setup
from malleo.emulator.tune.objective import parse_objective
from malleo.emulator.tune.results import read_results
from malleo.emulator.tune.runner import run_tune
from malleo.emulator.tune.space import loads_space
from malleo.emulator.workload import generate_lublin
from malleo.errors import MalleoError

pytest.importorskip("submitit")

SPACE = 'order = ["fcfs", "sjf", "wfp3"]\nbackfill = ["easy", "conservative"]\n'
COLUMNS = ["trial", "params", "policy", "status", "train_jobs", "test_jobs", "train_score",
           "test_score", "train_bsld_mean", "test_wait_p95", "train_utilization"]


@pytest.mark.slurm
def test_slurm_array_sweep_equals_a_local_sweep(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.conf)
    trace = tmp_path / "t.swf"
    write_swf(trace, generate_lublin(300, 32, seed=8), TraceMeta(max_procs=32))
    setup = Setup(trace=str(trace))
    space = loads_space(SPACE)
    goal = parse_objective("bsld+0.001*p95_wait")
    local = run_tune(setup, space, goal, search="grid", workers=1,
                     results_path=tmp_path / "local.csv")
    remote = run_tune(setup, space, goal, search="grid", results_path=tmp_path / "slurm.csv",
                      executor="slurm",
                      slurm={"folder": str(tmp_path / "shared"), "time_min": 5,
                             "array_size": 4, "timeout_seconds": 240})
    assert not remote.failed, remote.failed
    pd.testing.assert_frame_equal(local.rows[COLUMNS], remote.rows[COLUMNS])
    assert local.default["train_score"] == remote.default["train_score"]
    # Every array task left its result and log in the shared folder.
    assert len(list((tmp_path / "shared").glob("*/*_result.pkl"))) == 7


@pytest.mark.slurm
def test_slurm_failed_trials_are_reported_and_rerun(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.conf)
    trace = tmp_path / "t.swf"
    write_swf(trace, generate_lublin(200, 32, seed=9), TraceMeta(max_procs=32))
    setup = Setup(trace=str(trace))
    space = loads_space('order = ["fcfs", "sjf"]\n')
    goal = parse_objective("bsld")
    results = tmp_path / "r.csv"
    # The tasks find the trace corrupted after the driver read it: their trials fail. The
    # driver keys its cache on the trace's content, so it is made to keep the good content's
    # hash (as if the file changed between its read and the tasks' reads).
    good = trace.read_bytes()
    from malleo.emulator.tune import evaluate as tune_evaluate

    tune_evaluate.Context.get(setup)        # the driver has read the good trace already
    good_hash, real_hash = tune_evaluate.content_hash(str(trace)), tune_evaluate.content_hash
    monkeypatch.setattr(tune_evaluate, "content_hash",
                        lambda path: good_hash if str(path) == str(trace) else real_hash(path))
    trace.write_bytes(bytes(b if b in b"\n;" else ord("x") for b in good))
    try:
        with pytest.raises(MalleoError, match="default policy's replay failed"):
            run_tune(setup, space, goal, search="grid", results_path=results,
                     executor="slurm", slurm={"folder": str(tmp_path / "shared"),
                                              "time_min": 5, "array_size": 2,
                                              "timeout_seconds": 240})
    finally:
        trace.write_bytes(good)
    recorded = read_results(results)
    assert sorted(recorded["trial"]) == [-1, 0, 1]
    assert (recorded["status"] == "failed").all()
    assert recorded["error"].str.contains("TraceError").all()
    seen = []
    again = run_tune(setup, space, goal, search="grid", results_path=results,
                     executor="slurm", slurm={"folder": str(tmp_path / "shared"),
                                              "time_min": 5, "array_size": 2,
                                              "timeout_seconds": 240},
                     on_row=lambda row, done, total: seen.append(row["trial"]))
    assert sorted(seen) == [-1, 0, 1]
    assert not again.failed and (again.rows["status"] == "ok").all() and len(again.rows) == 2


@pytest.mark.slurm
def test_slurm_tpe_runs_in_rounds_through_the_cli(slurm_cluster, tmp_path, monkeypatch):
    from cli_runner import MalleoRunner

    from malleo.emulator.cli import cli
    from malleo.policy_file import load_policy

    monkeypatch.setenv("SLURM_CONF", slurm_cluster.conf)
    trace = tmp_path / "t.swf"
    write_swf(trace, generate_lublin(200, 32, seed=10), TraceMeta(max_procs=32))
    space = tmp_path / "space.toml"
    space.write_text(SPACE + "bf_max_job_test = { low = 1, high = 20 }\n")
    results = tmp_path / "r.csv"
    out = MalleoRunner().invoke(cli, [
        "tune", str(trace), "--space", str(space), "--search", "tpe", "--trials", "3",
        "--executor", "slurm", "--array-size", "2", "--time", "5", "--results", str(results),
        "--slurm-dir", str(tmp_path / "shared"), "--out", str(tmp_path / "best.toml"), "-q"],
        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    frame = read_results(results)
    assert sorted(frame["trial"]) == [-1, 0, 1, 2] and (frame["status"] == "ok").all()
    # Rounds of --array-size trials: a default array, then 2 + 1 trials.
    pickles = list((tmp_path / "shared").glob("*/*_result.pkl"))
    assert len(pickles) == 4
    assert len({p.parent.name.split("_")[0] for p in pickles}) == 3
    load_policy(tmp_path / "best.toml")
