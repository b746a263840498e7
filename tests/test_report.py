"""malleo report: one self-contained HTML page from replay CSVs and tune results."""
import base64
import re

import pandas as pd
import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.emulator.report import SECTIONS
from malleo.emulator.swf import write_swf
from malleo.emulator.swf_header import TraceMeta
from malleo.emulator.workload import generate_lublin


def run(*args):
    return MalleoRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    trace = folder / "t.swf"
    write_swf(trace, generate_lublin(250, 32, seed=6), TraceMeta(max_procs=32))
    assert run("replay", trace, "--out", folder / "fcfs.csv", "-q").exit_code == 0
    assert run("replay", trace, "--order", "sjf", "--out", folder / "sjf.csv",
               "-q").exit_code == 0
    space = folder / "space.toml"
    space.write_text('order = ["fcfs", "sjf"]\nbackfill = ["easy", "none"]\n')
    assert run("tune", trace, "--space", space, "--search", "grid", "--workers", "1",
               "--results", folder / "tune.csv", "--out", folder / "best.toml",
               "-q").exit_code == 0
    return folder


def images(page):
    return re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)


def test_report_has_every_section_and_embedded_pngs(inputs, tmp_path):
    out = tmp_path / "report.html"
    result = run("report", inputs / "fcfs.csv", inputs / "sjf.csv", inputs / "tune.csv",
                 "-o", out, "--procs", "32")
    assert result.exit_code == 0
    assert "2 replays, 1 tuning runs" in result.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for section in SECTIONS:
        assert f"<h2>{section}</h2>" in page
    pngs = images(page)
    # timeline, CDF, classes, a Gantt chart per replay, the trials plot
    assert len(pngs) == 3 + 2 + 1
    for data in pngs:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<th>fcfs</th><th>sjf</th>" in page
    assert "bounded slowdown mean" in page and "%" in page
    assert "test (held out)" in page and "fcfs+easy" in page
    assert "http" not in page.replace("http-equiv", "")       # nothing fetched from outside


def test_report_of_replays_only_leaves_tuning_out(inputs, tmp_path):
    out = tmp_path / "r.html"
    assert run("report", inputs / "fcfs.csv", "-o", out, "--window", "0:86400").exit_code == 0
    page = out.read_text()
    assert "<h2>Tuning</h2>" not in page and "<h2>Gantt chart</h2>" in page
    assert "Utilization needs the machine size" in page


def test_report_of_a_tune_run_only(inputs, tmp_path):
    out = tmp_path / "t.html"
    assert run("report", inputs / "tune.csv", "-o", out, "--objective", "p95_wait"
               ).exit_code == 0
    page = out.read_text()
    assert "<h2>Tuning</h2>" in page and "<h2>Summary</h2>" not in page
    assert "wait_p95" in page and len(images(page)) == 1


def test_report_rejects_other_files(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    result = MalleoRunner().invoke(cli, ["report", str(other), "-o", str(tmp_path / "x.html")])
    assert result.exit_code == 2
    assert "neither a per-job table" in result.output
    result = MalleoRunner().invoke(cli, ["report", str(other), "--window", "5:1"])
    assert result.exit_code == 2


def test_report_reads_parquet_replays(inputs, tmp_path):
    pytest.importorskip("pyarrow")
    trace = inputs / "t.swf"
    table = tmp_path / "easy.parquet"
    assert run("replay", trace, "--out", table, "-q").exit_code == 0
    out = tmp_path / "p.html"
    assert run("report", table, inputs / "fcfs.csv", "-o", out, "--procs", "32").exit_code == 0
    page = out.read_text()
    assert "<th>easy</th><th>fcfs</th>" in page
    # The same replay read from Parquet and CSV gives the same summary column.
    rows = re.findall(r"<tr><th>([^<]+)</th><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>",
                      page)
    assert rows and all(a == b for _, a, b in rows)


def test_malleable_replay_writes_its_logs_and_the_report_draws_the_sizes(inputs, tmp_path):
    from malleo.emulator.driver import load_workload, replay
    from malleo.emulator.plots import processor_sizes
    from malleo.emulator.report import read_inputs
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability, Policy

    trace = inputs / "t.swf"
    table = tmp_path / "mall.csv"
    assert run("replay", trace, "--malleable", "0.5", "--speedup", "amdahl:0.05",
               "--expand-mode", "slurm", "--out", table, "-q").exit_code == 0
    sizes, expanders = tmp_path / "mall.sizes.csv", tmp_path / "mall.expanders.csv"
    assert sizes.exists() and expanders.exists()
    # The files hold what the Python API returns for the same replay.
    result = replay(load_workload(str(trace)), Policy(malleability=Malleability(
        speedup="amdahl:0.05", expand_mode="slurm")), flexible=FlexibleJobs(fraction=0.5))
    read = read_inputs([table])
    assert read.sizes["mall"] == processor_sizes(result)
    assert any(len(h) > 1 for h in read.sizes["mall"].values())
    assert pd.read_csv(expanders).equals(result.expander_log.reset_index(drop=True))
    # The Gantt chart follows the size log: without it the drawing differs.
    with_sizes = images(_report(table, tmp_path / "a.html"))
    sizes.rename(tmp_path / "moved.csv")
    without = images(_report(table, tmp_path / "b.html"))
    assert with_sizes[:3] == without[:3] and with_sizes[3] != without[3]
    # A log passed in place of its table is refused, naming the file.
    res = MalleoRunner().invoke(cli, ["report", str(expanders), "-o", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "mall.expanders.csv" in res.output
    assert "pass the table itself" in res.output


def _report(table, out):
    assert run("report", table, "-o", out, "--procs", "32", "--window", "0:200000"
               ).exit_code == 0
    return out.read_text()
