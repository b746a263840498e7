"""``malleo trace info`` and ``malleo trace generate`` through click's CliRunner."""
import importlib.util
import json

import pytest
from cli_runner import MalleoRunner

from malleo.emulator import read_swf
from malleo.emulator.cli import cli

GOOD = """; Version: 2.2
; Computer: Tiny
; MaxProcs: 16
; Note: a test trace
1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
2 50 0 300 8 -1 -1 8 200 -1 1 2 1 -1 1 -1 -1 -1
3 100 0 -1 8 -1 -1 8 200 -1 5 2 1 -1 1 -1 -1 -1
4 100 0 10 32 -1 -1 32 200 -1 1 3 1 -1 1 -1 -1 -1
"""


def run(*args):
    return MalleoRunner().invoke(cli, list(args))


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.swf"
    path.write_text(GOOD)
    return path


def test_info_text(good):
    result = run("trace", "info", str(good))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "computer: Tiny" in out
    assert "machine: 16 processors (from MaxProcs)" in out
    assert "jobs: 2 kept, 2 dropped" in out
    assert "dropped runtime_missing: 1" in out
    assert "dropped larger_than_machine: 1" in out
    assert "users: 2" in out
    # 4*100 + 8*300 processor-seconds over 16 processors * 50 s of submits.
    assert "offered load: 3.500" in out


def test_info_json_and_procs_option(good):
    result = run("trace", "info", str(good), "--procs", "64", "--json")
    assert result.exit_code == 0
    summary = json.loads(result.output)
    assert summary["machine"] == {"procs": 64, "from": "option"}
    assert summary["jobs"]["kept"] == 3
    assert summary["jobs"]["dropped"] == {"runtime_missing": 1, "procs_missing": 0,
                                          "larger_than_machine": 0}
    assert summary["span"]["seconds"] == 100
    assert summary["procs"]["quantiles"]["0.5"] == 8.0
    assert summary["offered_load"] == pytest.approx((400 + 2400 + 320) / (64 * 100))


def test_info_overrun_cut(good):
    result = run("trace", "info", str(good), "--overrun", "cut", "--json")
    summary = json.loads(result.output)
    assert summary["runtime"]["quantiles"]["1"] == 200.0
    assert summary["estimates"]["overran_request"] == 1


def test_bad_line_exits_2_with_file_and_line(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text(GOOD + "5 120 0 10 abc -1 -1 4 200 -1 1 3 1 -1 1 -1 -1 -1\n")
    result = run("trace", "info", str(path))
    assert result.exit_code == 2
    assert result.output.strip() == (f"malleo: error: {path}:9: field 5 (allocated_procs): "
                                     f"not a number: 'abc'")
    assert "Traceback" not in result.output


def test_lenient_reports_skipped_lines(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text(GOOD + "5 120 0 10\n")
    result = MalleoRunner().invoke(cli, ["trace", "info", str(path), "--lenient"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    assert "bad lines skipped, field_count: 1" in result.output
    assert f"malleo: warning: {path}: skipped 1 bad job lines (1 field_count)" in result.output


def test_missing_file_and_missing_machine_size(tmp_path):
    result = run("trace", "info", str(tmp_path / "nope.swf"))
    assert result.exit_code == 2
    assert result.output.strip() == f"malleo: error: {tmp_path / 'nope.swf'}: no such file"
    bare = tmp_path / "bare.swf"
    bare.write_text("1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = run("trace", "info", str(bare))
    assert result.exit_code == 2 and "--procs" in result.output
    assert run("trace", "info", str(bare), "--procs", "4").exit_code == 0


def test_unsorted_warning_is_printed_once(tmp_path):
    path = tmp_path / "unsorted.swf"
    path.write_text(GOOD.replace("2 50 0", "2 500 0"))
    result = run("trace", "info", str(path))
    assert result.exit_code == 0
    assert result.output.count("2 job lines have a submit time earlier") == 1
    assert "out of submit order in the file: 2 (sorted)" in result.output


HAS_WORKLOAD = importlib.util.find_spec("malleo.emulator.workload") is not None


@pytest.mark.skipif(not HAS_WORKLOAD, reason="malleo.emulator.workload is not there yet")
def test_generate_writes_a_readable_trace(tmp_path):
    out = tmp_path / "gen.swf.gz"
    result = run("trace", "generate", "--jobs", "200", "--procs", "128", "--seed", "7",
                 "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"wrote 200 jobs to {out}" in result.output
    jobs, meta = read_swf(out)
    assert meta.max_procs == meta.max_nodes == 128 and meta.procs == 128
    assert any("Lublin" in note and "seed 7" in note for note in meta.notes)
    assert len(jobs) + sum(meta.dropped.values()) == 200
    again = tmp_path / "again.swf"
    run("trace", "generate", "--jobs", "200", "--procs", "128", "--seed", "7", "-o", str(again))
    assert read_swf(again)[0].equals(jobs)


def test_generate_needs_its_options(tmp_path):
    result = MalleoRunner().invoke(cli, ["trace", "generate", "--procs", "8", "-o",
                                      str(tmp_path / "x.swf")])
    assert result.exit_code == 2
    assert "--jobs" in result.output
