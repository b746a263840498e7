"""Issue 12's input cases (points 2, 4-11, 18): every bad input is refused before any work,
with exit status 2 and a message naming the file, line, field or option; no traceback.

Each test reproduces one reported case; each failed (traceback, exit 0, hang or a wrong
result) before the fix.
"""
import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.emulator.swf import read_swf, write_swf
from malleo.emulator.swf_header import TraceMeta
from malleo.emulator.tune.evaluate import Setup
from malleo.emulator.tune.objective import parse_objective
from malleo.emulator.tune.results import ResultsFile, private_dir
from malleo.emulator.tune.runner import TrialBar, default_results_path, run_tune
from malleo.emulator.tune.space import loads_space
from malleo.emulator.workload import generate_lublin
from malleo.errors import MalleoError, PolicyError, TraceError

JOB = "{n} {submit} -1 100 {procs} -1 -1 {procs} {req} -1 1 1 1 1 1 1 -1 -1"


def run(*args, input=None):
    """The CLI in process; an exception escaping it fails the test (a traceback)."""
    return MalleoRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False,
                              input=input)


def refused(result, *needles):
    """Exit 2 with one ``malleo: error:`` line (or click's usage error) naming each needle."""
    assert result.exit_code == 2, result.output
    for needle in needles:
        assert needle in result.output, (needle, result.output)
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("inputs") / "small.swf"
    write_swf(path, generate_lublin(120, 16, seed=2), TraceMeta(max_procs=16))
    return path


# --------------------------------------------------------------- point 2: the SWF reader

def test_b_swf_requested_time_beyond_the_limit_is_refused_not_over_allocated(tmp_path):
    """b.swf of the issue: two runtimes of 2**63-1 made job 2 (4 procs) start beside job 1
    (2 procs) on a 4-processor machine."""
    path = tmp_path / "b.swf"
    path.write_text("; MaxProcs: 4\n"
                    + JOB.format(n=1, submit=0, procs=2, req=2**63 - 1) + "\n"
                    + JOB.format(n=2, submit=1, procs=4, req=2**63 - 1) + "\n")
    result = run("replay", path, "--backfill", "slurm", "--out", tmp_path / "b.csv")
    refused(result, f"{path}:2: field 9 (requested_time)", "beyond the largest time")
    assert not (tmp_path / "b.csv").exists()


@pytest.mark.parametrize("field, value", [("submit", 2**36 + 1), ("procs", 2**24 + 1),
                                          ("req", 2**62 + 5)])
def test_times_and_sizes_beyond_malleo_limits_are_refused(tmp_path, field, value):
    values = {"n": 1, "submit": 0, "procs": 1, "req": 100} | {field: value}
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 4\n" + JOB.format(**values) + "\n")
    with pytest.raises(TraceError, match=rf"{path}:2: field \d+ \(\w+\): {value} is beyond"):
        read_swf(path, procs=4)


def test_lenient_mode_skips_and_counts_lines_beyond_the_limits(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 4\n" + JOB.format(n=1, submit=0, procs=1, req=2**40) + "\n"
                    + JOB.format(n=2, submit=0, procs=1, req=100) + "\n")
    jobs, meta = read_swf(path, lenient=True)
    assert jobs["job_number"].tolist() == [2] and meta.bad_lines == {"beyond_limit": 1}


def test_header_machine_size_beyond_the_limit_names_its_line(tmp_path):
    path = tmp_path / "a.swf"
    path.write_text("; Version: 2.2\n; MaxProcs: 2147483648\n"
                    + JOB.format(n=1, submit=0, procs=4, req=200) + "\n")
    refused(run("replay", path), f"{path}:2: header MaxProcs: 2147483648")


# --------------------------------------------------------- point 4: bombs and endless files

def _newline_bomb(path: Path, megabytes: int) -> None:
    """A gzip of ``megabytes`` MiB of newlines: one small member, repeated (a multi-member
    gzip file is one stream of their contents)."""
    member = gzip.compress(b"\n" * (16 << 20), compresslevel=9)
    path.write_bytes(gzip.compress(b"; MaxProcs: 4\n") + member * (megabytes // 16))


def test_a_newline_bomb_is_read_in_bounded_memory(tmp_path):
    """256 MiB of newlines (a 260 KB file) under a 1.5 GiB address-space limit: the old
    scanner asked for 152 bytes per newline (38 GiB) and died with a MemoryError."""
    path = tmp_path / "bomb.swf.gz"
    _newline_bomb(path, 256)
    assert path.stat().st_size < 1 << 20

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "malleo", "trace", "info", str(path)],
                          capture_output=True, text=True, timeout=300, preexec_fn=limit,
                          env=env)
    assert proc.returncode == 2, proc.stderr
    assert "no job lines (header only)" in proc.stderr and "Traceback" not in proc.stderr


def test_lenient_reading_keeps_counts_not_every_bad_line(tmp_path):
    """A lenient read of many bad lines counts them all but keeps only a few examples
    (the scanner used to keep a report per bad line: memory proportional to the bytes)."""
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 4\n" + "x\n" * 20000 + "1 2\n" * 500
                    + JOB.format(n=1, submit=0, procs=1, req=100) + "\n")
    from malleo._core import _swfscan
    from malleo.emulator.swf import _IS_INT, _scan_file

    scanner = _swfscan.Scanner(_IS_INT, True)
    _scan_file(str(path), scanner)
    assert scanner.bad_counts == {_swfscan.BAD_NUMBER: 20000, _swfscan.BAD_FIELD_COUNT: 500}
    assert len(scanner.bad) == 6
    jobs, meta = read_swf(path, lenient=True)
    assert len(jobs) == 1 and meta.bad_lines == {"field_count": 500, "not_a_number": 20000}
    assert meta.lines["job"] == 20501
    assert sum("not a number" in w for w in meta.warnings) == 3


def test_a_character_device_is_refused_without_reading():
    """/dev/zero was read forever."""
    proc = subprocess.run([sys.executable, "-m", "malleo", "trace", "info", "/dev/zero"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "/dev/zero: not a regular file or a pipe (a character device)" in proc.stderr


@pytest.mark.parametrize("command", [
    ["policy", "show", "/dev/zero"],
    ["trace", "from-sacct", "/dev/zero", "-o", "{tmp}/o.swf"],
    ["report", "/dev/zero.csv", "-o", "{tmp}/r.html"],
])
def test_other_readers_refuse_a_device_without_reading(tmp_path, command):
    """policy, sacct and report inputs read /dev/zero forever before."""
    device = tmp_path / "zero.csv"
    os.symlink("/dev/zero", device)
    args = [a.replace("{tmp}", str(tmp_path)).replace("/dev/zero.csv", str(device))
            for a in command]
    proc = subprocess.run([sys.executable, "-m", "malleo", *args], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file or a pipe" in proc.stderr


def test_an_endless_line_from_a_pipe_is_refused(tmp_path):
    """A pipe is read as a stream, but a line without end cannot grow memory forever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"head -c 4000000 /dev/zero > {fifo}"])
    try:
        with pytest.raises(TraceError, match=r"fifo:1: a line longer than 1,048,576 bytes"):
            read_swf(fifo, procs=4)
    finally:
        writer.kill()
        writer.wait()


# ------------------------------------------------------------------ point 5: output paths

def test_replay_out_into_a_missing_directory_is_refused_before_the_replay(small_trace):
    result = run("replay", small_trace, "--out", "no-such-dir/x.csv")
    refused(result, "--out: no-such-dir/x.csv: directory no-such-dir does not exist")
    assert "replaying" not in result.output


@pytest.mark.parametrize("option", ["--out", "--swf-out", "--plot"])
def test_replay_outputs_under_a_file_are_refused(small_trace, tmp_path, option):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    name = "x.csv" if option == "--out" else "x.swf"
    refused(run("replay", small_trace, option, blocker / name, "-q"), option, "not a directory")


def test_plot_under_proc_is_refused(small_trace):
    refused(run("replay", small_trace, "--plot", "/proc/self/plots", "-q"),
            "--plot: /proc/self/plots: a /proc or /sys path")


def test_report_output_is_checked_before_reading(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("job_id\n")          # would be refused too, but the output comes first
    refused(run("report", table, "-o", tmp_path / "missing" / "r.html"), "--output",
            "does not exist")


def test_tune_out_is_checked_before_any_trial(small_trace, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('order = ["fcfs", "sjf"]\n')
    results = tmp_path / "r.csv"
    refused(run("tune", small_trace, "--space", space, "--search", "grid", "--workers", "1",
                "--results", results, "--out", tmp_path / "no" / "best.toml", "-q"),
            "--out", "does not exist")
    assert not results.exists()


def test_from_sacct_map_is_checked_before_the_swf_is_written(tmp_path):
    text = ("JobID|Submit|Start|End|State|AllocCPUS\n"
            "1|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:01:00|COMPLETED|4\n")
    source = tmp_path / "in.txt"
    source.write_text(text)
    out = tmp_path / "out.swf"
    refused(run("trace", "from-sacct", source, "-o", out, "--map", tmp_path / "no" / "m.csv"),
            "--map", "does not exist")
    assert not out.exists()


@pytest.mark.parametrize("kind", ["regular", "long", "proc"])
def test_reconfig_socket_path_is_checked(tmp_path, kind):
    path = {"regular": tmp_path / "plain-file", "long": tmp_path / ("s" * 120),
            "proc": Path("/proc/self/reconfig.sock")}[kind]
    if kind == "regular":
        path.write_text("keep me")
    needle = {"regular": "exists and is not a socket", "long": "a Unix socket path holds at "
              "most 107", "proc": "a /proc or /sys path"}[kind]
    refused(run("slurm", "reconfig", "--socket", path), "--socket", needle)
    if kind == "regular":
        assert path.read_text() == "keep me"


# -------------------------------------------------------------- point 6: deeply nested TOML

@pytest.mark.parametrize("body", ["a = " + "[" * 5000 + "]" * 5000,
                                  "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_deeply_nested_policy_file_is_refused(tmp_path, body):
    path = tmp_path / "deep.toml"
    path.write_text(body + "\n")
    refused(run("policy", "show", path), f"{path}:1: invalid TOML: arrays or inline tables "
                                         "nested too deeply")


def test_deeply_nested_space_file_is_refused():
    with pytest.raises(PolicyError, match="space.toml:1: invalid TOML: .* nested too deeply"):
        loads_space("order = " + "[" * 5000 + "]" * 5000, source="space.toml")


def test_an_integer_of_thousands_of_digits_in_toml_is_refused():
    from malleo.policy_file import loads_policy

    with pytest.raises(PolicyError, match="invalid TOML"):
        loads_policy("bf_window = " + "9" * 5000)


# ------------------------------------------------------------------- point 7: from-sacct

SACCT_JOB = {"job_id": 1, "user": "a", "group": "g", "partition": "p", "qos": "n",
             "state": {"current": "COMPLETED"},
             "time": {"submission": 1000, "start": 1010, "end": 1110, "elapsed": 100,
                      "limit": 10},
             "tres": {"allocated": [{"type": "cpu", "count": 2}], "requested": []},
             "allocation_nodes": 1, "steps": []}


@pytest.mark.parametrize("change, needle", [
    ({"time": {"submission": 1000, "elapsed": "NaN"}},
     "jobs[0].time.elapsed: NaN is not a JSON number"),
    ({"time": {"submission": 1000, "elapsed": "Infinity"}},
     "jobs[0].time.elapsed: Infinity is not a JSON number"),
    ({"time": "x"}, "jobs[0].time: expected an object, got string 'x'"),
    ({"array": 5}, "jobs[0].array: expected an object"),
    ({"tres": [1]}, "jobs[0].tres: expected an object, got array"),
    ({"steps": 5}, "jobs[0].steps: expected an array"),
    ({"user": ["a"]}, "jobs[0].user: expected a string, got array"),
    ({"partition": ["p"]}, "jobs[0].partition: expected a string, got array"),
    ({"state": 5}, "jobs[0].state: expected a state"),
    ({"steps": [{"step": [1]}]}, "jobs[0].steps[0].step: expected an object"),
    ({"steps": [None]}, "jobs[0].steps[0]: expected an object, got null"),
    ({"steps": [{"step": {"id": "0"}}, None]}, "jobs[0].steps[1]: expected an object, got null"),
    ({"tres": {"allocated": [None]}}, "jobs[0].tres.allocated[0]: expected an object, got null"),
    ({"time": {"submission": 1000, "start": 1010, "end": 1110, "limit": 2**31}},
     "jobs[0].time.limit: 128849018880 s is outside"),
    ({"tres": {"allocated": [{"type": "cpu", "count": 2**30}]}}, "jobs[0].tres.allocated: "),
])
def test_malformed_sacct_json_names_the_field(tmp_path, change, needle):
    text = json.dumps({"jobs": [SACCT_JOB | change]})
    text = text.replace('"NaN"', "NaN").replace('"Infinity"', "Infinity")
    source = tmp_path / "in.json"
    source.write_text(text)
    refused(run("trace", "from-sacct", source, "-o", tmp_path / "o.swf"), needle)


def test_deeply_nested_sacct_json_is_refused(tmp_path):
    source = tmp_path / "in.json"
    source.write_text('{"jobs": ' + "[" * 5000 + "]" * 5000 + "}")
    refused(run("trace", "from-sacct", source, "-o", tmp_path / "o.swf"),
            "invalid JSON: nested too deeply")


def test_sacct_timelimit_overflow_is_refused(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("JobID|Submit|Start|End|State|AllocCPUS|Timelimit\n"
                      "1|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:01:00|"
                      "COMPLETED|4|999999999999999999999\n")
    refused(run("trace", "from-sacct", source, "-o", tmp_path / "o.swf"),
            f"{source}:2: Timelimit: ", "outside the times malleo supports")


# ---------------------------------------------------------------------- point 8: report

@pytest.fixture(scope="module")
def replay_csv(tmp_path_factory, small_trace):
    out = tmp_path_factory.mktemp("report") / "r.csv"
    assert run("replay", small_trace, "--out", out, "-q").exit_code == 0
    return out.read_text().splitlines()


def _cell(lines, column, value, row=1):
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    return [*lines[:row], ",".join(cells), *lines[row + 1:]]


@pytest.mark.parametrize("edit, needle", [
    (lambda lines: lines[:1], "no rows (a header only)"),
    (lambda lines: _cell(lines, "bsld", "nan"), ":2: bsld: not a finite number: 'nan'"),
    (lambda lines: _cell(lines, "bsld", "inf"), ":2: bsld: not a finite number: 'inf'"),
    (lambda lines: _cell(lines, "start", "soon", 3), ":4: start: not a finite number"),
    (lambda lines: _cell(lines, "start", "68719476000"), ":2: end: "),
    (lambda lines: [lines[0], lines[1] + ",99", *lines[2:]], ":2: 18 fields, the header has 17"),
])
def test_bad_replay_tables_are_refused_by_report(tmp_path, replay_csv, edit, needle):
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(edit(replay_csv)) + "\n")
    refused(run("report", path, "-o", tmp_path / "r.html"), f"{path}", needle)
    assert not (tmp_path / "r.html").exists()


def test_tune_results_with_a_non_numeric_metric_are_refused(tmp_path):
    from malleo.emulator.tune.results import COLUMNS

    path = tmp_path / "t.csv"
    row = {c: "" for c in COLUMNS} | {"setup": "x", "trial": "-1", "params": "{}",
                                      "status": "ok", "train_bsld_mean": "lots"}
    pd.DataFrame([row], columns=list(COLUMNS)).to_csv(path, index=False)
    refused(run("report", path, "-o", tmp_path / "r.html"), ":2: train_bsld_mean: not a finite")


# ------------------------------------------------------------------------ point 9: tune

@pytest.mark.parametrize("space, needle", [
    ("bf_window = { low = 1, high = 1000000000, step = 1 }", "step 1 is too small"),
    ("[multifactor]\nweight_age = { low = 0.0, high = 1.0, step = 1e-300 }",
     "step 1e-300 is too small"),
    ("[multifactor]\nweight_age = { low = 0.0, high = inf }", "high = inf: must be a finite"),
    ("bf_max_job_test = { low = 1, high = 100000000000000000000 }", "high"),
    ("bf_max_job_test = { low = 1, high = 1000, num = 1000 }\n"
     "bf_window = { low = 60, high = 60000, num = 1000 }", "the grid has 1,000,000 points"),
])
def test_tune_refuses_spaces_too_large_or_beyond_limits(small_trace, tmp_path, space, needle):
    path = tmp_path / "space.toml"
    path.write_text(space + "\n")
    result = run("tune", small_trace, "--space", path, "--search", "grid", "--workers", "1",
                 "--results", tmp_path / "r.csv", "--out", tmp_path / "best.toml", "-q")
    refused(result, needle)
    assert not (tmp_path / "r.csv").exists()


def test_a_large_grid_cut_by_trials_runs_its_first_points(small_trace, tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("bf_max_job_test = { low = 1, high = 1000, num = 1000 }\n"
                    "bf_window = { low = 60, high = 60000, num = 1000 }\n")
    result = run("tune", small_trace, "--space", path, "--search", "grid", "--trials", "2",
                 "--workers", "1", "--results", tmp_path / "r.csv", "--out",
                 tmp_path / "best.toml", "-q")
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "r.csv")) == 3          # the default and 2 trials


def test_trial_bar_prints_a_line_at_least_every_period_off_a_terminal():
    import io

    stream = io.StringIO()
    bar = TrialBar(parse_objective("bsld"), stream=stream)
    bar.every = 0.0
    for done in range(1, 5):
        bar({"trial": done, "status": "ok", "train_bsld": 1.0}, done, 1000)
    assert len(stream.getvalue().splitlines()) == 4


# ------------------------------------------------------- points 10 and 18: tune's state

def test_resume_is_keyed_on_the_trace_content(tmp_path):
    """Runtimes changed at equal file size: the old code resumed the stale results."""
    trace = tmp_path / "t.swf"
    lines = ["; MaxProcs: 4"] + [JOB.format(n=i, submit=i * 10, procs=4, req=100)
                                  for i in range(1, 21)]
    trace.write_text("\n".join(lines) + "\n")
    space = loads_space('order = ["fcfs", "sjf"]')
    goal = parse_objective("bsld")
    results = tmp_path / "r.csv"
    first = run_tune(Setup(trace=str(trace), split=None), space, goal, search="grid",
                     workers=1, results_path=results)
    trace.write_text("\n".join(lines).replace(" 100 4 ", " 900 4 ") + "\n")   # same size
    assert trace.stat().st_size == len("\n".join(lines)) + 1
    with pytest.raises(MalleoError, match="holds trials of another setup"):
        run_tune(Setup(trace=str(trace), split=None), space, goal, search="grid", workers=1,
                 results_path=results)
    second = run_tune(Setup(trace=str(trace), split=None), space, goal, search="grid",
                      workers=1, results_path=tmp_path / "r2.csv")
    assert second.default["train_bsld_mean"] > first.default["train_bsld_mean"]


def test_default_results_live_in_a_private_directory(tmp_path, monkeypatch, small_trace):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = Path(default_results_path(Setup(trace=str(small_trace))))
    assert path.parent == tmp_path / "state" / "malleo" / "tune"
    assert not str(path).startswith("/tmp/malleo-tune")
    for folder in (path.parent, path.parent.parent):
        assert os.stat(folder).st_mode & 0o777 == 0o700


def test_a_linked_private_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "state").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "state" / "malleo").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(MalleoError, match="not a private directory"):
        private_dir("tune")


def test_a_results_file_behind_a_link_is_refused(tmp_path):
    target = tmp_path / "target.csv"
    target.write_text("")
    link = tmp_path / "r.csv"
    link.symlink_to(target)
    with pytest.raises(MalleoError, match="a symbolic link"):
        ResultsFile(link, "abc")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_results_file_owned_by_another_user_is_refused(tmp_path):
    """A file planted by nobody made root's tune write nobody's choice to best.toml."""
    path = tmp_path / "r.csv"
    ResultsFile(path, "abc")
    os.chown(path, 65534, 65534)
    with pytest.raises(MalleoError, match="owned by uid 65534, not by you"):
        ResultsFile(path, "abc")


def test_a_results_file_writable_by_others_is_refused(tmp_path):
    path = tmp_path / "r.csv"
    ResultsFile(path, "abc")
    path.chmod(0o666)
    with pytest.raises(MalleoError, match="writable by group or others"):
        ResultsFile(path, "abc")


def test_new_results_files_are_private(tmp_path):
    path = tmp_path / "r.csv"
    ResultsFile(path, "abc")
    assert path.stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------------ point 11: the SWF round trip

def test_a_float_beyond_the_largest_double_is_refused_not_read_as_inf(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 4\n1 0 -1 100 2 1e400 -1 2 200 -1 1 1 1 1 1 1 -1 -1\n")
    with pytest.raises(TraceError, match=r"t.swf:2: field 6 \(avg_cpu_time\): not finite"):
        read_swf(path)


def test_an_integer_above_2_53_in_float_notation_is_refused_not_rounded(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 4\n1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 9007199254740993.0 "
                    "1 1 -1 -1\n")
    with pytest.raises(TraceError, match=r"t.swf:2: field 14 \(executable\): 2\*\*53 or more"):
        read_swf(path)


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_cr_and_crlf_line_ends_are_lines(tmp_path, end):
    path = tmp_path / "t.swf"
    text = end.join(["; MaxProcs: 4", JOB.format(n=1, submit=0, procs=2, req=200),
                     JOB.format(n=2, submit=5, procs=2, req=200)]) + end
    path.write_bytes(text.encode())
    jobs, meta = read_swf(path)
    assert jobs["job_number"].tolist() == [1, 2] and meta.max_procs == 4
    assert meta.lines["total"] == 3


def test_cr_line_ends_split_across_read_chunks(tmp_path):
    """A \\r\\n pair cut by a chunk boundary is one line end, not two."""
    from malleo.emulator import swf

    body = "".join(JOB.format(n=i, submit=i, procs=1, req=200) + "\r\n" for i in range(1, 3000))
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(("; MaxProcs: 4\r\n" + body).encode()))
    jobs, meta = read_swf(path)
    assert len(jobs) == 2999 and meta.lines["blank"] == 0
    assert len(body) > 2 * swf._READ_CHUNK or True     # several chunks of decompressed text


def test_generate_refuses_a_machine_beyond_the_limit(tmp_path):
    refused(run("trace", "generate", "--jobs", "10", "--procs", "99999999999999999999",
                "-o", tmp_path / "g.swf"), "--procs")
    assert not (tmp_path / "g.swf").exists()
