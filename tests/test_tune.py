"""malleo tune: the space file, objectives, searches, the time split, resumable results, CLI."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.emulator.driver import replay
from malleo.emulator.swf import write_swf
from malleo.emulator.swf_header import TraceMeta
from malleo.emulator.tune.evaluate import DEFAULT_TRIAL, Setup, evaluate, split_index
from malleo.emulator.tune.objective import parse_objective
from malleo.emulator.tune.results import COLUMNS, ResultsFile, read_results
from malleo.emulator.tune.runner import run_tune
from malleo.emulator.tune.search import TpeSearch, fixed_points, space_points
from malleo.emulator.tune.space import loads_space
from malleo.emulator.workload import generate_lublin
from malleo.errors import MalleoError, PolicyError
from malleo.policy import Policy
from malleo.policy_file import load_policy

SPACE = """\
order = ["fcfs", "sjf", "wfp3"]
backfill = ["easy", "conservative"]
estimate = "request"
"""


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "small.swf"
    write_swf(path, generate_lublin(400, 64, seed=5), TraceMeta(max_procs=64, max_nodes=64))
    return str(path)


def run(*args):
    return MalleoRunner().invoke(cli, list(args))


# ----------------------------------------------------------------------------- space

def test_space_choices_ranges_and_fixed():
    space = loads_space(SPACE + """
bf_max_job_test = { low = 1, high = 100, num = 3 }
bf_window = { low = 3600, high = 10800, step = 3600 }
[multifactor]
weight_age = { low = 1.0, high = 100.0, num = 3, log = true }
""")
    assert [p.name for p in space.params] == ["order", "backfill", "bf_max_job_test",
                                              "bf_window", "multifactor.weight_age"]
    assert space.fixed == {"estimate": "request"}
    assert space.params[2].grid() == [1, 50, 100]
    assert space.params[3].grid() == [3600, 7200, 10800]
    assert space.params[4].grid() == pytest.approx([1.0, 10.0, 100.0])
    assert space.grid_size() == 3 * 2 * 3 * 3 * 3 == len(space.grid())
    policy = space.policy({"order": "sjf", "multifactor.weight_age": 10.0})
    assert policy.order == "sjf" and policy.multifactor.weight_age == 10.0


def test_space_samples_stay_in_range_and_on_the_lattice():
    space = loads_space("bf_window = { low = 3600, high = 36000, step = 3600 }\n"
                        "bf_max_job_test = { low = 1, high = 1000, log = true }\n")
    rng = np.random.default_rng(1)
    for _ in range(200):
        point = space.sample(rng)
        assert 3600 <= point["bf_window"] <= 36000 and point["bf_window"] % 3600 == 0
        assert 1 <= point["bf_max_job_test"] <= 1000
        assert isinstance(point["bf_max_job_test"], int)


@pytest.mark.parametrize("text, line, message", [
    ('order = ["fcfs"]\nodrer = ["sjf"]\n', 2, "odrer: unknown key"),
    ('order = ["fcfs", "fifo"]\n', 1, "order: must be one of"),
    ('order = ["fcfs"]\nbf_window = { low = 7200, high = 3600 }\n', 2, "low (7200) must be <="),
    ('order = ["fcfs"]\n\nbf_window = { low = 0, high = 10 }\n', 3, "bf_window: low = 0: must be in 1..68719476736"),
    ('order = { low = 1, high = 2 }\n', 1, "a string key takes an array of choices"),
    ('bf_window = { low = 1.5, high = 10 }\n', 1, "must be an integer"),
    ('bf_window = { low = 1, high = 10, stride = 2 }\n', 1, "unknown range key 'stride'"),
    ('[multifactor]\nweight_age = { low = 0.0, high = 1.0, log = true }\n', 2, "log needs low > 0"),
    ('[multifactor]\nweight_agee = [1.0]\n', 2, "multifactor.weight_agee: unknown"),
    ('order = []\n', 1, "empty array"),
    ('estimate = "request"\n', 1, "nothing to tune"),
    ('order = ["fcfs"\n', 1, "invalid TOML"),
])
def test_space_errors_name_file_line_and_key(text, line, message):
    with pytest.raises(PolicyError) as info:
        loads_space(text, source="space.toml")
    assert str(info.value).startswith(f"space.toml:{line}: ")
    assert message in str(info.value)


def test_bad_space_file_exits_2_with_file_line(tmp_path, trace):
    space = tmp_path / "space.toml"
    space.write_text('order = ["fcfs"]\nbackfill = ["easy", "sometimes"]\n')
    result = MalleoRunner().invoke(cli, ["tune", trace, "--space", str(space)])
    assert result.exit_code == 2
    assert f"malleo: error: {space}:2: backfill: must be one of" in result.output
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------- objectives

def test_objectives_single_and_weighted():
    summary = {"bsld_mean": 4.0, "wait_p95": 1000.0, "utilization": 0.5, "makespan": 9.0,
               "fairness_jain": 0.25}
    assert parse_objective("bsld").score(summary) == 4.0
    assert parse_objective("p95_wait").score(summary) == 1000.0
    assert parse_objective("makespan").score(summary) == 9.0
    # Higher-is-better metrics count negated: minimising the score maximises them.
    assert parse_objective("utilization").score(summary) == -0.5
    assert parse_objective("fairness").score(summary) == -0.25
    assert parse_objective("bsld+0.001*p95_wait").score(summary) == pytest.approx(5.0)
    assert parse_objective("2*bsld + 10*utilization").score(summary) == pytest.approx(3.0)
    assert math.isnan(parse_objective("bsld").score({"bsld_mean": float("nan")}))


@pytest.mark.parametrize("text, message", [
    ("bsdl", "unknown metric 'bsdl'"), ("0*bsld", "must be > 0"),
    ("bsld-utilization", "cannot read term"), ("", "cannot read term")])
def test_bad_objectives(text, message):
    with pytest.raises(MalleoError, match=message):
        parse_objective(text)


# ----------------------------------------------------------------------------- search

def test_grid_and_random_points():
    space = loads_space(SPACE)
    grid = fixed_points(space, "grid", None, 0)
    assert [t for t, _ in grid] == list(range(6))
    assert grid[0][1] == {"order": "fcfs", "backfill": "easy"}
    assert len(fixed_points(space, "grid", 4, 0)) == 4
    first = fixed_points(space, "random", 5, seed=3)
    assert first == fixed_points(space, "random", 5, seed=3)
    assert len({json.dumps(p, sort_keys=True) for _, p in first}) == 5     # distinct
    # Only 6 distinct points exist: asking for 10 gives the 6.
    assert len(fixed_points(space, "random", 10, seed=3)) == 6


def test_tpe_is_seeded_and_in_range():
    space = loads_space("bf_window = { low = 60, high = 86400 }\norder = [\"fcfs\", \"sjf\"]\n")

    def draws(seed):
        tpe = TpeSearch(space, seed)
        out = []
        for _ in range(12):
            number, params = tpe.ask()
            tpe.tell(number, float(params["bf_window"]))
            out.append(params)
        return out

    first = draws(7)
    assert first == draws(7)
    assert all(60 <= p["bf_window"] <= 86400 and p["order"] in ("fcfs", "sjf") for p in first)


def test_space_points_counts_the_lattices():
    assert space_points(loads_space(SPACE)) == 6
    assert space_points(loads_space('order = ["fcfs", "sjf"]\n'
                                    "bf_max_job_test = { low = 1, high = 12 }\n"
                                    "bf_window = { low = 60, high = 600, step = 60 }\n")) \
        == 2 * 12 * 10
    assert space_points(loads_space("[multifactor]\nweight_age = { low = 0.0, high = 9.5 }\n")) \
        is None


def test_tpe_asks_each_point_once_and_stops_when_the_space_is_tried():
    space = loads_space('order = ["fcfs", "sjf", "wfp3"]\n'
                        "bf_max_job_test = { low = 1, high = 3 }\n")
    tpe = TpeSearch(space, 2)
    seen = []
    while (point := tpe.ask()) is not None:
        number, params = point
        seen.append(json.dumps(params, sort_keys=True))
        tpe.tell(number, 1.0 if params["order"] == "sjf" else 2.0)
    assert len(seen) == len(set(seen)) == 9
    assert len(tpe.study.trials) >= 9          # repeats were told, not returned


def test_tpe_repeats_of_a_point_in_flight_share_its_score():
    tpe = TpeSearch(loads_space('order = ["fcfs", "sjf"]\n'), 0)
    first, second = tpe.ask(), tpe.ask()
    assert {first[1]["order"], second[1]["order"]} == {"fcfs", "sjf"}
    assert tpe.ask() is None                   # both points in flight: nothing new
    tpe.tell(second[0], 5.0)
    tpe.tell(first[0], float("nan"))
    assert tpe.ask() is None
    states = {t.state.name for t in tpe.study.trials}
    assert states <= {"COMPLETE", "FAIL"}      # no trial left open


@pytest.mark.parametrize("workers", [1, 2])
def test_tpe_run_replays_each_point_once(trace, tmp_path, workers):
    space = loads_space('order = ["fcfs", "sjf"]\nbackfill = ["easy", "conservative"]\n')
    result = run_tune(Setup(trace=trace), space, parse_objective("bsld"), search="tpe",
                      trials=500, seed=3, workers=workers, results_path=tmp_path / "r.csv")
    assert len(result.rows) == 4 and result.rows["params"].nunique() == 4
    assert len(read_results(tmp_path / "r.csv")) == 5          # and the default policy


# ----------------------------------------------------------------------------- split

def test_split_index_cuts_by_submit_time():
    submit = np.array([0, 10, 20, 30, 100])
    assert split_index(submit, 0.5) == 4          # cut at 50 s: jobs at 0..30
    assert split_index(submit, 0.05) == 1         # cut at 5 s
    assert split_index(np.array([], dtype=np.int64), 0.5) == 0


def test_trial_replays_train_and_test_parts_separately(trace):
    setup = Setup(trace=trace, split=0.6)
    row = evaluate(setup, 0, {"order": "sjf"})
    assert row["status"] == "ok", row["error"]
    table = generate_lublin(400, 64, seed=5)
    submit = np.sort(table["submit_time"].to_numpy())
    n_train = split_index(submit, 0.6)
    assert (row["train_jobs"], row["test_jobs"]) == (n_train, 400 - n_train)
    policy = Policy(order="sjf")
    train = replay(trace, policy, jobs=(0, n_train))
    test = replay(trace, policy, jobs=(n_train, 400 - n_train))
    assert row["train_bsld_mean"] == pytest.approx(train.summary["bsld_mean"])
    assert row["test_wait_p95"] == pytest.approx(test.summary["wait_p95"])


def test_a_split_leaving_no_jobs_is_an_error(tmp_path):
    table = generate_lublin(50, 16, seed=1).assign(submit_time=0)
    path = tmp_path / "same.swf"
    write_swf(path, table, TraceMeta(max_procs=16))
    with pytest.raises(MalleoError, match="split: a train fraction"):
        run_tune(Setup(trace=str(path), split=0.5), loads_space(SPACE), parse_objective("bsld"),
                 search="grid", workers=1, results_path=tmp_path / "r.csv")


# ----------------------------------------------------------------------------- runs

def test_grid_run_ranks_by_train_score_and_keeps_default(trace, tmp_path):
    goal = parse_objective("bsld")
    result = run_tune(Setup(trace=trace), loads_space(SPACE), goal, search="grid",
                      workers=1, results_path=tmp_path / "r.csv")
    assert len(result.rows) == 6 and (result.rows["status"] == "ok").all()
    scores = result.rows["train_score"].to_numpy()
    assert list(scores) == sorted(scores)
    assert result.best["train_score"] == scores.min()
    assert result.default["trial"] == DEFAULT_TRIAL and result.default["policy"] == "fcfs+easy"
    assert math.isfinite(result.default["test_score"])
    assert result.best_policy == Policy().replace(**json.loads(result.best["params"]))


def test_pool_gives_the_same_numbers_as_one_process(trace, tmp_path):
    goal = parse_objective("bsld")
    space = loads_space(SPACE)
    one = run_tune(Setup(trace=trace), space, goal, search="grid", workers=1,
                   results_path=tmp_path / "one.csv")
    two = run_tune(Setup(trace=trace), space, goal, search="grid", workers=2,
                   results_path=tmp_path / "two.csv")
    cols = ["trial", "params", "train_score", "test_score", "train_utilization"]
    pd.testing.assert_frame_equal(one.rows[cols].sort_values("trial").reset_index(drop=True),
                                  two.rows[cols].sort_values("trial").reset_index(drop=True))


def test_interrupted_run_resumes_without_repeating_trials(trace, tmp_path):
    goal = parse_objective("p95_wait")
    space = loads_space(SPACE)
    path = tmp_path / "r.csv"
    full = run_tune(Setup(trace=trace), space, goal, search="grid", workers=1,
                    results_path=path)
    text = path.read_text().splitlines()
    assert len(text) == 1 + 7                                   # header, default, 6 trials
    path.write_text("\n".join(text[:4]) + "\n")                 # "interrupted" after 3 rows
    seen = []
    resumed = run_tune(Setup(trace=trace), space, goal, search="grid", workers=1,
                       results_path=path, on_row=lambda row, done, total: seen.append(row))
    assert len(seen) == 4                                       # only the missing trials ran
    assert len(path.read_text().splitlines()) == 1 + 7
    cols = ["trial", "train_score", "test_score"]
    pd.testing.assert_frame_equal(full.rows[cols], resumed.rows[cols])
    seen.clear()
    run_tune(Setup(trace=trace), space, goal, search="grid", workers=1, results_path=path,
             on_row=lambda row, done, total: seen.append(row))
    assert seen == []


def test_results_file_of_another_setup_is_refused(trace, tmp_path):
    path = tmp_path / "r.csv"
    space = loads_space(SPACE)
    run_tune(Setup(trace=trace), space, parse_objective("bsld"), search="grid", trials=1,
             workers=1, results_path=path)
    with pytest.raises(MalleoError, match="another setup"):
        run_tune(Setup(trace=trace, split=0.5), space, parse_objective("bsld"),
                 search="grid", trials=1, workers=1, results_path=path)
    assert read_results(path).columns.tolist() == list(COLUMNS)


def test_failed_trials_are_recorded_reported_and_retried(trace, tmp_path, monkeypatch):
    import malleo.emulator.driver as driver

    real = driver.replay

    def flaky(workload, policy, **kwargs):
        if policy.order == "wfp3":
            raise RuntimeError("node on fire")
        return real(workload, policy, **kwargs)

    monkeypatch.setattr(driver, "replay", flaky)
    path = tmp_path / "r.csv"
    space = loads_space(SPACE)
    result = run_tune(Setup(trace=trace), space, parse_objective("bsld"), search="grid",
                      workers=1, results_path=path)
    assert len(result.failed) == 2
    assert all("RuntimeError: node on fire" in r["error"] for r in result.failed)
    assert set(result.rows[result.rows["status"] != "ok"]["trial"]) == {4, 5}
    monkeypatch.setattr(driver, "replay", real)
    seen = []
    again = run_tune(Setup(trace=trace), space, parse_objective("bsld"), search="grid",
                     workers=1, results_path=path,
                     on_row=lambda row, done, total: seen.append(row["trial"]))
    assert sorted(seen) == [4, 5] and not again.failed
    assert (again.rows["status"] == "ok").all() and len(again.rows) == 6


def test_tpe_run_resumes_with_new_points(trace, tmp_path):
    space = loads_space("order = [\"fcfs\", \"sjf\", \"saf\", \"wfp3\"]\n"
                        "backfill = [\"easy\", \"conservative\", \"slurm\"]\n"
                        "bf_max_job_test = { low = 1, high = 64 }\n")
    path = tmp_path / "r.csv"
    goal = parse_objective("bsld")
    first = run_tune(Setup(trace=trace), space, goal, search="tpe", trials=4, seed=1,
                     workers=1, results_path=path)
    assert len(first.rows) == 4
    more = run_tune(Setup(trace=trace), space, goal, search="tpe", trials=7, seed=1,
                    workers=2, results_path=path)
    assert sorted(more.rows["trial"]) == list(range(7))
    assert more.rows["params"].nunique() == 7


# ----------------------------------------------------------------------------- CLI

def test_cli_writes_leaderboard_and_a_policy_replay_accepts(trace, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    best = tmp_path / "best.toml"
    results = tmp_path / "r.csv"
    out = run("tune", trace, "--space", str(space), "--objective", "bsld+0.001*p95_wait",
              "--search", "grid", "--workers", "1", "--results", str(results),
              "--out", str(best), "-q")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "objective: 1*bsld_mean + 0.001*wait_p95 (minimised)"
    assert any(line.startswith("default ") for line in lines)
    assert "held-out test:" in out.output
    header = next(line for line in lines if line.startswith("rank"))
    assert header.split()[:4] == ["rank", "trial", "train", "test"]
    policy = load_policy(best)
    frame = read_results(results)
    assert len(frame) == 7
    # The file replays unchanged, and the whole-trace replay equals the recorded numbers.
    replayed = run("replay", trace, "--config", str(best), "--json", "-q")
    assert replayed.exit_code == 0
    assert json.loads(replayed.output)["policy_name"] == policy.describe()
    # ... and the Slurm agent reads the same file as its live policy.
    from malleo.plugin.agent.loop import load_agent_policy

    assert load_agent_policy(best) == policy


def test_cli_warns_when_the_best_policy_is_not_deployable(trace, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('order = ["sjf"]\nestimate = "actual"\n')
    out = run("tune", trace, "--space", str(space), "--search", "grid", "--workers", "1",
              "--results", str(tmp_path / "r.csv"), "--out", str(tmp_path / "b.toml"), "-q")
    assert out.exit_code == 0
    assert "the Slurm agent refuses it" in out.stderr


def test_cli_no_split_best_score_is_the_replay_of_best_toml(trace, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    best = tmp_path / "best.toml"
    out = run("tune", trace, "--space", str(space), "--objective", "p95_wait", "--search",
              "random", "--trials", "4", "--seed", "2", "--no-split", "--workers", "1",
              "--results", str(tmp_path / "r.csv"), "--out", str(best), "--json", "-q")
    board = json.loads(out.stdout)
    assert board["cut_time"] is None and board["default"]["test_score"] is None
    replayed = json.loads(run("replay", trace, "--config", str(best), "--json", "-q").output)
    assert replayed["wait_p95"] == pytest.approx(board["leaderboard"][0]["train_score"])
    assert board["leaderboard"][0]["train_score"] == min(r["train_score"]
                                                         for r in board["leaderboard"])


def test_cli_progress_bar_goes_to_stderr(trace, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    result = MalleoRunner().invoke(
        cli, ["tune", trace, "--space", str(space), "--search", "grid", "--workers", "1",
              "--results", str(tmp_path / "r.csv"), "--out", str(tmp_path / "b.toml")],
        catch_exceptions=False)
    assert "7/7 trials" in result.stderr
    assert "7/7 trials" not in result.stdout
