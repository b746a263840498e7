"""``malleo replay``, ``malleo compare`` and ``malleo policy`` through click's CliRunner."""
import json
import re

import pandas as pd
import pytest
from cli_runner import MalleoRunner

from malleo.emulator import read_swf
from malleo.emulator.cli import cli

SHORT = ["--jobs", "0:400", "--quiet"]


def run(*args, code=0):
    result = MalleoRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result


def row(output, label):
    """The value text of the metrics-table line starting with ``label``."""
    match = re.search(rf"^{re.escape(label)}\s+(.+)$", output, re.M)
    assert match, f"no row {label!r} in:\n{output}"
    return match.group(1)


def test_replay_default_workload_prints_the_metrics_table():
    out = run("replay", "--quiet").stdout
    assert "lublin(jobs=10000, procs=256, seed=0)" in row(out, "source")
    assert row(out, "machine") == "256 processors"
    assert row(out, "policy") == "fcfs+easy"
    assert row(out, "jobs replayed").replace(",", "").isdigit()
    for label in ("jobs dropped", "wait mean", "wait median", "wait p95", "wait p99",
                  "wait max", "response time mean", "bounded slowdown mean",
                  "slowdown mean", "utilization", "makespan", "throughput",
                  "Jain fairness of user mean bsld"):
        row(out, label)
    assert row(out, "utilization").endswith("%")


def test_replay_json_and_policy_options():
    out = run("replay", *SHORT, "--order", "sjf", "--backfill", "slurm",
              "--bf-max-job-test", "3", "--bf-window", "600", "--bf-resolution", "5",
              "--estimate", "actual", "--json").stdout
    data = json.loads(out)
    assert data["policy_name"] == "sjf+slurm(K=3)/actual"
    assert data["policy"]["bf_window"] == 600 and data["policy"]["bf_resolution"] == 5
    assert data["jobs"] == 400
    assert 0 < data["utilization"] <= 1


def test_replay_config_file_and_overriding_options(tmp_path):
    config = tmp_path / "site.toml"
    config.write_text('order = "sjf"\nbackfill = "none"\n')
    data = json.loads(run("replay", *SHORT, "--config", str(config), "--json").stdout)
    assert data["policy_name"] == "sjf+none"
    assert data["backfilled"] == 0
    data = json.loads(run("replay", *SHORT, "--config", str(config), "--backfill",
                          "conservative", "--json").stdout)
    assert data["policy_name"] == "sjf+conservative"


def test_replay_writes_csv_parquet_and_swf(tmp_path):
    csv, swf = tmp_path / "jobs.csv", tmp_path / "out.swf.gz"
    run("replay", *SHORT, "--out", str(csv), "--swf-out", str(swf))
    jobs = pd.read_csv(csv)
    assert len(jobs) == 400 and {"job_id", "wait", "bsld", "backfilled"} <= set(jobs.columns)
    back, meta = read_swf(swf)
    assert back["wait_time"].tolist() == jobs["wait"].tolist()
    assert any("fcfs+easy" in note for note in meta.notes)
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "jobs.parquet"
    run("replay", *SHORT, "--out", str(parquet))
    assert pd.read_parquet(parquet)["wait"].tolist() == jobs["wait"].tolist()


def test_replay_node_procs_and_machine_size():
    out = run("replay", *SHORT, "--procs", "512", "--node-procs", "8").stdout
    assert row(out, "machine") == "512 processors (64 exclusive nodes of 8)"
    row(out, "utilization (used procs)")


def test_replay_a_trace_file(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n"
                     "1 0 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "2 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "3 5 -1 20 2 -1 -1 2 20 -1 1 2 1 -1 1 -1 -1 -1\n"
                     "4 6 -1 -1 2 -1 -1 2 20 -1 5 2 1 -1 1 -1 -1 -1\n")
    out = run("replay", str(trace), "--quiet").stdout
    assert row(out, "jobs replayed") == "3"
    assert row(out, "jobs dropped") == "1  (runtime missing 1)"
    assert row(out, "wait mean") == "5 s"
    assert row(out, "makespan") == "30 s"
    assert row(out, "utilization") == "83.33 %"


@pytest.mark.parametrize("args, needle", [
    (["--order", "random"], "'--order'"),
    (["--backfill", "easy-ish"], "'--backfill'"),
    (["--jobs", "ten"], "'--jobs'"),
    (["--jobs", "5:0"], "'--jobs'"),
    (["--procs", "0"], "'--procs'"),
    (["--bf-window", "0"], "'--bf-window'"),
    (["--bsld-threshold", "0"], "'--bsld-threshold'"),
    (["--overrun", "ignore"], "'--overrun'"),
    (["--out", "jobs.xlsx"], "'--out'"),
    (["/no/such/trace.swf"], "does not exist"),
])
def test_replay_bad_options_exit_2_naming_the_option(args, needle):
    result = run("replay", "--quiet", *args, code=2)
    assert needle in result.output


def test_replay_bad_policy_file_names_file_and_line(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('order = "sjf"\nbf_windoww = 10\n')
    result = run("replay", "--quiet", "--config", str(config), code=2)
    assert f"malleo: error: {config}:2: bf_windoww: unknown key" in result.stderr
    config.write_text('order = "sjf"\n\nbf_window = "long"\n')
    result = run("replay", "--quiet", "--config", str(config), code=2)
    assert f"{config}:3: bf_window: must be an integer" in result.stderr
    config.write_text('[multifactor]\nweight_age = -1\n')
    result = run("replay", "--quiet", "--config", str(config), code=2)
    assert f"{config}:2: multifactor.weight_age: must be in [0, 1e+15]" in result.stderr


def test_replay_corrupt_trace_exits_2_with_the_line(tmp_path):
    trace = tmp_path / "corrupt.swf"
    trace.write_text("; MaxProcs: 4\n1 0 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "2 0 -1 ten 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = run("replay", "--quiet", str(trace), code=2)
    assert result.stderr.startswith("malleo: error: ")
    assert f"{trace}:3" in result.stderr
    run("replay", "--quiet", "--lenient", str(trace))


def test_replay_trace_without_machine_size_asks_for_procs(tmp_path):
    trace = tmp_path / "nosize.swf"
    trace.write_text("1 0 -1 10 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert "--procs" in run("replay", "--quiet", str(trace), code=2).stderr
    assert row(run("replay", "--quiet", "--procs", "8", str(trace)).stdout,
               "jobs replayed") == "1"


def test_compare_policies_side_by_side():
    out = run("compare", *SHORT, "--policy", "fcfs+none", "--policy", "sjf+conservative",
              "--policy", "fcfs+slurm(K=20)").stdout
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "better", "fcfs+none", "sjf+conservative",
                              "fcfs+slurm(K=20)"]
    wait = row(out, "wait mean")
    assert wait.startswith("lower") and wait.count("*") >= 1
    assert row(out, "utilization").startswith("higher")
    assert "*" not in row(out, "jobs replayed")
    assert "best value" in out


def test_compare_marks_the_best_value():
    data = json.loads(run("compare", *SHORT, "--policy", "fcfs+none", "--policy",
                          "fcfs+easy", "--json").stdout)
    assert [d["name"] for d in data] == ["fcfs+none", "fcfs+easy"]
    out = run("compare", *SHORT, "--policy", "fcfs+none", "--policy", "fcfs+easy").stdout
    cells = re.findall(r"[\d,.]+ s\*?", row(out, "wait mean"))
    best = 0 if data[0]["wait_mean"] < data[1]["wait_mean"] else 1
    assert cells[best].endswith("*") and not cells[1 - best].endswith("*")


def test_compare_default_policies_and_config_files(tmp_path):
    data = json.loads(run("compare", *SHORT, "--json").stdout)
    assert [d["name"] for d in data] == ["fcfs+none", "fcfs+easy", "fcfs+conservative",
                                         "fcfs+slurm"]
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('order = "ljf"\n')
    b.write_text('order = "saf"\nbackfill = "none"\n')
    data = json.loads(run("compare", *SHORT, "--config", str(a), "--config", str(b),
                          "--json").stdout)
    assert [(d["name"], d["policy_name"]) for d in data] == [("a.toml", "ljf+easy"),
                                                             ("b.toml", "saf+none")]


@pytest.mark.parametrize("args, needle", [
    (["--policy", "fcfs"], "'--policy'"),
    (["--policy", "fifo+easy"], "'--policy'"),
    (["--policy", "fcfs+easy(K=3)"], "'--policy'"),
    (["/no/such/trace"], "does not exist"),
])
def test_compare_bad_input(args, needle):
    assert needle in run("compare", "--quiet", *args, code=2).output


def test_compare_bad_config(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("order = 3\n")
    assert f"{bad}:1: order: must be a string" in run(
        "compare", "--quiet", "--config", str(bad), code=2).stderr


def test_policy_init_and_show(tmp_path):
    text = run("policy", "init").stdout
    assert text.startswith("# malleo policy file")
    path = tmp_path / "p.toml"
    run("policy", "init", "-o", str(path))
    assert path.read_text() == text
    assert "exists" in run("policy", "init", "-o", str(path), code=2).output
    run("policy", "init", "-o", str(path), "--force")
    path.write_text('backfill = "conservative"\n')
    shown = run("policy", "show", str(path)).stdout
    assert "fcfs+conservative" in shown.splitlines()[0]
    assert 'order = "fcfs"' in shown and "bf_window = 86400" in shown
    data = json.loads(run("policy", "show", str(path), "--json").stdout)
    assert data["name"] == "fcfs+conservative" and data["multifactor"]["max_age"] == 604800


def test_policy_show_bad_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("[multifactor]\nsize_favor = 'tiny'\n")
    assert f"{path}:2: multifactor.size_favor" in run("policy", "show", str(path),
                                                      code=2).stderr
    assert "cannot read" in run("policy", "show", str(tmp_path / "none.toml"), code=2).stderr


class _Terminal:
    """A stderr stand-in that claims to be a terminal and records what is written."""

    def __init__(self, is_tty=True):
        self.text = ""
        self.is_tty = is_tty

    def isatty(self):
        return self.is_tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_line_on_a_terminal_only():
    import time

    from malleo.emulator.cli._progress import Progress

    terminal = _Terminal()
    with Progress(True, terminal) as progress:
        progress.step("replaying 10 jobs")
        deadline = time.monotonic() + 10
        while "replaying 10 jobs" not in terminal.text and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "replaying 10 jobs" in terminal.text and " s" in terminal.text
    assert terminal.text.endswith("\r\x1b[K")          # the line is erased at the end
    for stream, enabled in ((_Terminal(), False), (_Terminal(is_tty=False), True)):
        with Progress(enabled, stream) as progress:
            progress.step("x")
        assert stream.text == ""
