"""Plots: every figure renders headless into a PNG that decodes; replay/compare --plot."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from cli_runner import MalleoRunner
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


def test_size_segments_follow_the_history_cut_to_the_run():
    # same-time entries: the later wins; equal neighbours merge; entries past the end drop
    history = [(10, 4), (20, 4), (30, 8), (30, 6), (70, 2)]
    assert plots.size_segments(10, 60, 4, history) == [(10, 30, 4), (30, 60, 6)]
    assert plots.size_segments(5, 9, 3, None) == [(5, 9, 3)]
    assert plots.size_segments(5, 5, 3, None) == []


def test_first_fit_rectangles_of_a_hand_made_size_history():
    # A shrinks 4 -> 2 at 40 (keeps rows 0-1), B (rigid, 2) starts then on rows 2-3;
    # at 70 B ends before A grows back to 4: releases come before acquisitions.
    a = plots.size_segments(0, 100, 4, [(0, 4), (40, 2), (70, 4)])
    b = plots.size_segments(40, 70, 2, None)
    assert a == [(0, 40, 4), (40, 70, 2), (70, 100, 4)]
    assert sorted(plots.first_fit_rectangles([a, b])) == [
        (0, 0, 40, 0, 4), (0, 40, 70, 0, 2), (0, 70, 100, 0, 4), (1, 40, 70, 2, 4)]


def test_first_fit_rectangles_split_an_expansion_over_free_rows():
    # rows: X 0, Y 1 (ends at 30), Z 2, W 3; at 50 Z grows 1 -> 3 and takes rows 1 and 4
    x, y, w = ([(0, 100, 1)], [(0, 30, 1)], [(0, 100, 1)])
    z = plots.size_segments(0, 100, 1, [(0, 1), (50, 3)])
    assert sorted(plots.first_fit_rectangles([x, y, z, w])) == [
        (0, 0, 100, 0, 1), (1, 0, 30, 1, 2), (2, 0, 50, 2, 3), (2, 50, 100, 1, 3),
        (2, 50, 100, 4, 5), (3, 0, 100, 3, 4)]


def overlapping_pairs(rectangles):
    r = np.array([rect[1:] for rect in rectangles], dtype=np.int64)
    x0, x1, y0, y1 = (r[:, i] for i in range(4))
    overlap = ((np.maximum.outer(x0, x0) < np.minimum.outer(x1, x1))
               & (np.maximum.outer(y0, y0) < np.minimum.outer(y1, y1)))
    np.fill_diagonal(overlap, False)
    return int(overlap.sum())


@pytest.fixture(scope="module")
def malleable():
    from malleo.flexible import FlexibleJobs
    from malleo.policy import Malleability

    table = generate_lublin(200, 32, seed=2)
    return replay(table, Policy(malleability=Malleability(policy="dmr")), procs=32,
                  flexible=FlexibleJobs(fraction=1.0))


def test_malleable_gantt_draws_size_changes_without_overlaps(malleable, tmp_path):
    jobs, sizes = malleable.jobs, plots.processor_sizes(malleable)
    assert sum(len({s for _, s in h}) > 1 for h in sizes.values()) > 0
    pieces = [plots.size_segments(r.start, r.end, r.alloc_procs, sizes.get(r.job_id))
              for r in jobs.itertuples()]
    # the pieces hold exactly the processor-seconds the replay charged each job
    assert [sum((t1 - t0) * p for t0, t1, p in job) for job in pieces] == \
        jobs["proc_seconds"].tolist()
    rectangles = plots.first_fit_rectangles(pieces)
    assert max(rect[4] for rect in rectangles) <= 32
    assert overlapping_pairs(rectangles) == 0
    changed = [i for i, job in enumerate(pieces) if len({p for *_, p in job}) > 1]
    heights = {}
    for k, t0, t1, y0, y1 in rectangles:
        heights[(k, t0)] = heights.get((k, t0), 0) + y1 - y0
    assert {(k, t0): p for k in changed for t0, _, p in pieces[k]}.items() <= heights.items()

    window = (int(jobs["start"].min()), int(jobs["end"].max()))
    fig = plots.gantt_figure(jobs, window, procs=32, title="dmr", sizes=sizes)
    axes = fig.axes[0]
    assert axes.get_ylim() == (0, 32)
    hatched = [c for c in axes.collections if c.get_hatch()]
    assert len(hatched) == 1 and len(hatched[0].get_paths()) >= len(jobs)
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels[0].startswith("rigid job (0)")
    assert labels[1].startswith(f"malleable/moldable job ({len(jobs)})")
    fig.savefig(tmp_path / "m.png")
    check_png(tmp_path / "m.png")


def test_replay_plot_option_draws_malleable_gantt(trace, tmp_path):
    result = MalleoRunner().invoke(cli, ["replay", trace, "--malleable", "1",
                                      "--plot", str(tmp_path / "p")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    gantts = list((tmp_path / "p").glob("gantt-*.png"))
    assert len(gantts) == 1
    check_png(gantts[0])


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
    runner = MalleoRunner()
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
                     "metrics.png", "timeline.png", "wait_cdf.png"]
    for path in (tmp_path / "two").iterdir():
        check_png(path)


def test_malleo_and_replay_do_not_import_matplotlib_or_optuna():
    code = ("import sys, malleo, malleo.emulator, malleo.emulator.cli.replay, "
            "malleo.emulator.cli.compare, malleo.emulator.cli.tune, malleo.emulator.driver\n"
            "bad = [m for m in ('matplotlib', 'optuna', 'submitit') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _brute_binned(times, values, t0, width, bins, end=None):
    """Second-by-second reference for plots.binned (integer times)."""
    times, values = list(times), list(values)
    out = []
    for k in range(bins):
        lo = t0 + k * width
        hi = min(lo + width, end) if end is not None and k == bins - 1 else lo + width
        seconds = []
        for t in range(lo, hi):
            i = max((j for j, ti in enumerate(times) if ti <= t), default=None)
            seconds.append(0 if i is None else values[i])
        out.append((sum(seconds) / len(seconds), min(seconds), max(seconds)))
    return out


@pytest.mark.parametrize("times, values, end", [
    ([0, 5, 17, 18, 40], [3, 1, 7, 0, 2], None),
    ([4, 10, 20, 21, 22, 55], [1, 5, 2, 9, 4, 6], 57),       # events on bin edges; a short last bin
    ([0, 31], [8, 2], None),                                 # empty bins hold the last value
])
def test_binned_means_and_bands_match_a_second_by_second_count(times, values, end):
    width, bins = 10, 6
    mean, low, high = plots.binned(np.array(times), np.array(values), 0, width, bins, end=end)
    expected = _brute_binned(times, values, 0, width, bins, end)
    assert mean.tolist() == pytest.approx([e[0] for e in expected])
    assert low.tolist() == [e[1] for e in expected] and high.tolist() == [e[2] for e in expected]


def test_timeline_bin_follows_the_span():
    day = 86400
    assert plots.timeline_bin(2 * 3600) == (60, "1-minute")
    assert plots.timeline_bin(15 * day) == (3600, "hourly")
    assert plots.timeline_bin(30 * day) == (6 * 3600, "6-hour")
    assert plots.timeline_bin(300 * day) == (day, "daily")
    assert plots.timeline_bin(700 * day) == (7 * day, "weekly")


def test_a_long_timeline_is_aggregated_and_says_so(tmp_path):
    """A 700-day run with a change every 30 minutes: one point a week with a min-max band,
    the resolution on the time axis (issue 17: SDSC-SP2 was a solid band)."""
    n = 700 * 48
    submit = np.arange(n, dtype=np.int64) * 1800
    jobs = pd.DataFrame({"submit": submit, "start": submit, "end": submit + 1800 * (1 + np.arange(n) % 3),
                         "wait": 0, "runtime": 1800 * (1 + np.arange(n) % 3), "procs": 1 + np.arange(n) % 4})
    fig = plots.timeline_figure({"fcfs+easy": jobs}, procs=16)
    top = fig.axes[0]
    weeks = int(np.ceil(jobs["end"].max() / (7 * 86400)))                # 700 days and a bit
    assert len(top.get_lines()[0].get_xdata()) == weeks == 101
    assert "weekly mean, band = weekly min–max" in fig.axes[1].get_xlabel()
    assert [t.get_text() for t in top.get_legend().get_texts()] == [
        "fcfs+easy (weekly mean)", "fcfs+easy (weekly min–max)"]
    means = top.get_lines()[0].get_ydata()
    assert 0 < means.min() and means.max() <= 100
    fig.savefig(tmp_path / "t.png")
    check_png(tmp_path / "t.png")
