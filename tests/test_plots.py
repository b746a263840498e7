"""Plots: every figure renders headless into a PNG that decodes; replay/compare --plot."""
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.image import imread

from malleo.emulator import plots
from malleo.emulator.cli import cli
from malleo.emulator.driver import replay
from malleo.emulator.swf import write_swf
from malleo.emulator.swf_header import TraceMeta
from malleo.emulator.workload import generate_lublin
from malleo.policy import Policy

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs():
    table = generate_lublin(300, 32, seed=2)
    return {name: replay(table, policy, procs=32).jobs for name, policy in
            (("fcfs+easy", Policy()), ("sjf+conservative",
                                       Policy(order="sjf", backfill="conservative")))}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("plots") / "t.swf"
    write_swf(path, generate_lublin(200, 32, seed=4), TraceMeta(max_procs=32))
    return str(path)


def check_png(path, min_width=400):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    image = imread(path)
    assert image.ndim == 3 and image.shape[1] >= min_width and image.shape[0] >= 300
    # Not a blank canvas: several distinct colours were drawn.
    rgba = (image[..., :3] * 255).astype(np.uint32)
    packed = (rgba[..., 0] << 16) | (rgba[..., 1] << 8) | rgba[..., 2]
    assert np.unique(packed).size > 10


def texts(fig):
    """Every title, axis label and legend entry of a figure."""
    out = []
    for axes in fig.axes:
        out += [axes.get_title(), axes.get_xlabel(), axes.get_ylabel()]
        legend = axes.get_legend()
        if legend is not None:
            out += [t.get_text() for t in legend.get_texts()]
    return " | ".join(out)


def test_timeline_has_titles_units_and_a_line_per_run(runs, tmp_path):
    fig = plots.timeline_figure(runs, procs=32)
    words = texts(fig)
    for expected in ("Utilization over time", "% of processors", "Queue length",
                     "waiting jobs", "days", "fcfs+easy", "sjf+conservative"):
        assert expected in words
    fig.savefig(tmp_path / "t.png")
    check_png(tmp_path / "t.png")
    # Without the machine size it shows busy processors instead.
    assert "busy processors" in texts(plots.timeline_figure(runs, procs=None))


def test_timeline_sampling_keeps_long_runs_bounded(runs):
    jobs = runs["fcfs+easy"]
    big = jobs.loc[jobs.index.repeat(20)].reset_index(drop=True)
    big["submit"] += np.arange(len(big)) % 20
    fig = plots.timeline_figure({"x": big}, procs=32 * 20)
    line = fig.axes[0].get_lines()[0]
    assert len(line.get_xdata()) <= plots.MAX_LINE_POINTS


def test_wait_cdf_reaches_100_percent(runs, tmp_path):
    fig = plots.wait_cdf_figure(runs)
    assert "Wait-time distribution" in texts(fig) and "seconds" in texts(fig)
    for line in fig.axes[0].get_lines():
        if len(line.get_ydata()) > 2:
            assert line.get_ydata()[-1] == pytest.approx(100)
    fig.savefig(tmp_path / "w.png")
    check_png(tmp_path / "w.png")


def test_bsld_classes_bars_are_the_class_means(runs, tmp_path):
    fig = plots.bsld_classes_figure(runs)
    size_axes = fig.axes[0]
    jobs = runs["fcfs+easy"]
    bars = size_axes.containers[0]
    serial = jobs[jobs["procs"] == 1]["bsld"].mean()
    assert bars[0].get_height() == pytest.approx(serial)
    assert "by job size" in texts(fig) and "by runtime" in texts(fig)
    fig.savefig(tmp_path / "b.png")
    check_png(tmp_path / "b.png")


def test_gantt_never_draws_more_processors_than_the_machine(runs, tmp_path):
    jobs = runs["fcfs+easy"]
    window = (int(jobs["start"].min()), int(jobs["start"].min()) + 86400)
    fig = plots.gantt_figure(jobs, window, procs=32, title="fcfs+easy")
    axes = fig.axes[0]
    assert axes.get_ylim() == (0, 32)
    boxes = axes.collections[0].get_paths()
    assert boxes
    for path in boxes:
        ys = path.vertices[:, 1]
        assert ys.min() >= 0 and ys.max() <= 32
    fig.savefig(tmp_path / "g.png")
    check_png(tmp_path / "g.png")


def test_gantt_default_window_is_inside_the_schedule(runs):
    jobs = runs["sjf+conservative"]
    start, end = plots.default_window(jobs, length=3600)
    assert end - start == 3600
    assert jobs["submit"].min() <= start and end <= jobs["end"].max()


def test_trials_figure(tmp_path):
    import pandas as pd

    rows = pd.DataFrame({"trial": [0, 1, 2, 3], "status": ["ok", "ok", "failed", "ok"],
                         "train_score": [5.0, 3.0, np.nan, 4.0],
                         "test_score": [6.0, 2.5, np.nan, 4.5]})
    fig = plots.trials_figure(rows, {"train_score": 4.5, "test_score": 5.5}, "bsld")
    words = texts(fig)
    for expected in ("Objective across trials", "best train score so far",
                     "default policy, test", "failed (1)"):
        assert expected in words
    running = [line for line in fig.axes[0].get_lines()
               if line.get_label() == "best train score so far"][0]
    assert list(running.get_ydata()) == [5.0, 3.0, 3.0]
    fig.savefig(tmp_path / "tr.png")
    check_png(tmp_path / "tr.png")


def test_replay_and_compare_plot_options_write_pngs(trace, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["replay", trace, "--plot", str(tmp_path / "one"), "-q"],
                           catch_exceptions=False)
    assert result.exit_code == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == [
        "bsld_classes.png", "gantt-fcfs_easy.png", "timeline.png", "wait_cdf.png"]
    result = runner.invoke(cli, ["compare", trace, "--policy", "fcfs+easy", "--policy",
                                 "sjf+easy", "--plot", str(tmp_path / "two"), "-q"],
                           catch_exceptions=False)
    assert result.exit_code == 0
    names = sorted(p.name for p in (tmp_path / "two").iterdir())
    assert names == ["bsld_classes.png", "gantt-fcfs_easy.png", "gantt-sjf_easy.png",
                     "timeline.png", "wait_cdf.png"]
    for path in (tmp_path / "two").iterdir():
        check_png(path)


def test_malleo_and_replay_do_not_import_matplotlib_or_optuna():
    code = ("import sys, malleo, malleo.emulator, malleo.emulator.cli.replay, "
            "malleo.emulator.cli.compare, malleo.emulator.cli.tune, malleo.emulator.driver\n"
            "bad = [m for m in ('matplotlib', 'optuna', 'submitit') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)
