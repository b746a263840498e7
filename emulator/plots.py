"""Plots of replays and tuning runs (matplotlib, headless: figures render with Agg, no
display, no pyplot state).  docs/plots.md explains each one.

Inputs are per-job tables with the columns of ``ReplayResult.jobs`` (``submit``,
``start``, ``end``, ``wait``, ``runtime``, ``alloc_procs`` or ``procs``, ``bsld``,
``user``), so the same functions draw a fresh replay and a CSV written by
``malleo replay --out``.  Times are seconds on the trace's clock; axes show hours or days
since the first submit.  matplotlib is imported by this module only: ``import malleo``
and ``malleo replay`` without ``--plot`` never load it.
"""
from __future__ import annotations

import heapq
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from malleo.emulator import metrics

__all__ = ["timeline_figure", "wait_cdf_figure", "bsld_classes_figure", "gantt_figure",
           "metrics_figure", "GANTT_COLOURS",
           "trials_figure", "write_replay_plots", "SIZE_CLASSES", "RUNTIME_CLASSES",
           "default_window", "MAX_LINE_POINTS", "size_segments", "first_fit_rectangles",
           "processor_sizes", "timeline_bin", "binned", "BINS"]

SIZE_CLASSES: tuple[tuple[str, int, int], ...] = (
    ("1", 1, 1), ("2–4", 2, 4), ("5–16", 5, 16), ("17–64", 17, 64),
    ("65–256", 65, 256), ("257–1024", 257, 1024), (">1024", 1025, 2**62))
"""Job size classes: (label, lowest, highest processors)."""

RUNTIME_CLASSES: tuple[tuple[str, int, int], ...] = (
    ("<1 min", 0, 59), ("1–10 min", 60, 599), ("10 min–1 h", 600, 3599),
    ("1–4 h", 3600, 14399), ("4–24 h", 14400, 86399), (">24 h", 86400, 2**62))
"""Runtime classes: (label, shortest, longest seconds)."""

MAX_LINE_POINTS = 4000
"""Timeline curves are sampled at most at this many instants (a step function sampled)."""

RAW_TIMELINE_EVENTS = 2000
"""A run whose timeline changes at most this many times is drawn as its exact step function;
a longer one as per-bin means with a min-max band (see :data:`BINS`)."""

BINS: tuple[tuple[int, str], ...] = (
    (60, "1-minute"), (300, "5-minute"), (900, "15-minute"), (3600, "hourly"),
    (6 * 3600, "6-hour"), (86400, "daily"), (7 * 86400, "weekly"), (30 * 86400, "30-day"))
"""Aggregation bins of a long timeline, (seconds, adjective): the finest giving at most
:data:`MAX_BINS` bins over the span is used."""

MAX_BINS = 400
"""At most this many bins across a figure about 1,000 pixels wide: 2.5 pixels or more each,
so the mean line and its band stay readable."""

GANTT_MAX_JOBS = 5000
"""A Gantt window holding more jobs draws only the first this many (by start)."""


def _procs_column(jobs: pd.DataFrame) -> np.ndarray:
    column = "alloc_procs" if "alloc_procs" in jobs.columns else "procs"
    return jobs[column].to_numpy(dtype=np.int64)


def _time_unit(span: float) -> tuple[float, str]:
    return (86400.0, "days") if span > 3 * 86400 else (3600.0, "hours")


def _timeline(jobs: pd.DataFrame, procs: int | None) -> pd.DataFrame:
    alloc = _procs_column(jobs)
    total = procs or max(1, int(alloc.max(initial=1)))
    return metrics.timeline(jobs["submit"].to_numpy(), jobs["start"].to_numpy(),
                            jobs["end"].to_numpy(), alloc, jobs["runtime"].to_numpy(), total)


def _sampled(line: pd.DataFrame, columns: Sequence[str], t0: float, t1: float
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The step function ``line`` sampled at up to MAX_LINE_POINTS instants in [t0, t1]."""
    times = line["time"].to_numpy(dtype=np.float64)
    if len(times) <= MAX_LINE_POINTS:
        return times, {c: line[c].to_numpy() for c in columns}
    grid = np.linspace(t0, t1, MAX_LINE_POINTS)
    index = np.clip(np.searchsorted(times, grid, side="right") - 1, 0, len(times) - 1)
    return grid, {c: line[c].to_numpy()[index] for c in columns}


def timeline_bin(span: float) -> tuple[int, str]:
    """The aggregation bin for a timeline spanning ``span`` seconds: (seconds, adjective),
    the finest of :data:`BINS` giving at most :data:`MAX_BINS` bins (the coarsest if none)."""
    for width, name in BINS:
        if span / width <= MAX_BINS:
            return width, name
    return BINS[-1]


def binned(times: np.ndarray, values: np.ndarray, t0: float, width: int, bins: int,
           end: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time-weighted mean, minimum and maximum of a step function over equal bins.

    Args:
        times: increasing instants (s); ``values[i]`` holds on ``[times[i], times[i+1])``,
            the last one until the end of the last bin; before ``times[0]`` the value is 0.
        t0: start of the first bin (s); ``width``: bin length (s); ``bins``: their number.
        end: where the last bin stops (s), if before its full width (the end of the run):
            its mean is over the part up to ``end`` only.

    Returns:
        ``(mean, low, high)``, one entry per bin ``[t0 + k*width, t0 + (k+1)*width)``;
        ``low``/``high`` over every value the function takes inside the bin.
    """
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if len(times) == 0 or times[0] > t0:  # the function is 0 before its first event
        times = np.concatenate([[min(t0, times[0]) if len(times) else t0], times])
        values = np.concatenate([[0.0], values])
    edges = t0 + width * np.arange(bins + 1, dtype=np.float64)
    if end is not None and edges[-2] < end < edges[-1]:
        edges[-1] = end
    # area under the step function from times[0] to each edge
    area = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    k = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, len(times) - 1)
    at_edge = area[k] + values[k] * (edges - times[k])
    mean = np.diff(at_edge) / np.diff(edges)
    # The values taken inside bin j: segments first[j] .. last[j] - 1 (reduceat on
    # interleaved start/end pairs; a sentinel makes an end at len(values) valid).
    first = k[:-1]
    last = np.maximum(np.searchsorted(times, edges[1:], side="left"), first + 1)
    pairs = np.column_stack([first, last]).ravel()
    padded = np.append(values, 0.0)
    low = np.minimum.reduceat(padded, pairs)[::2]
    high = np.maximum.reduceat(padded, pairs)[::2]
    return mean, low, high


def timeline_figure(runs: Mapping[str, pd.DataFrame], procs: int | None = None) -> Figure:
    """Utilization (or busy processors) and queue length over time, one line per run.

    A run whose timeline changes at most :data:`RAW_TIMELINE_EVENTS` times is drawn exactly
    (a step function). Longer runs (a trace of months) are aggregated to a resolution chosen
    from the span (:func:`timeline_bin`: hourly for two weeks, daily for a year, weekly for
    two years): each
    bin's time-weighted mean as a line, its minimum-maximum as a band, the resolution
    written on the time axis.

    Args:
        runs: name -> per-job table.
        procs: machine processors; None draws busy processors instead of utilization.
    """
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    t0 = min(float(j["submit"].min()) for j in runs.values() if len(j))
    t1 = max(float(j["end"].max()) for j in runs.values() if len(j))
    scale, unit = _time_unit(t1 - t0)
    width, adjective = timeline_bin(t1 - t0)
    bins = max(1, int(np.ceil((t1 - t0) / width)))
    aggregated = False
    for name, jobs in runs.items():
        if not len(jobs):
            continue
        line = _timeline(jobs, procs)
        column = "utilization" if procs else "busy_procs"
        factor = 100.0 if procs else 1.0
        if len(line) <= RAW_TIMELINE_EVENTS:
            x, values = _sampled(line, (column, "queued_jobs"), t0, t1)
            x = (x - t0) / scale
            drawn = top.step(x, factor * values[column], where="post", label=name, lw=1)
            bottom.step(x, values["queued_jobs"], where="post", label=name, lw=1,
                        color=drawn[0].get_color())
            continue
        aggregated = True
        x = (t0 + width * (np.arange(bins) + 0.5) - t0) / scale
        times = line["time"].to_numpy()
        for axes, values, k in ((top, line[column].to_numpy(), factor),
                                (bottom, line["queued_jobs"].to_numpy(), 1.0)):
            mean, low, high = binned(times, values, t0, width, bins, end=t1)
            drawn = axes.plot(x, k * mean, label=f"{name} ({adjective} mean)", lw=1)
            axes.fill_between(x, k * low, k * high, color=drawn[0].get_color(), alpha=0.2,
                              lw=0, label=f"{name} ({adjective} min–max)")
    if aggregated:
        bottom.set_xlabel(f"time since first submit ({unit}); long runs: {adjective} mean, "
                          f"band = {adjective} min–max")
    else:
        bottom.set_xlabel(f"time since first submit ({unit})")
    if procs:
        top.set_ylabel("utilization (% of processors)")
        top.set_ylim(0, 105)
    else:
        top.set_ylabel("busy processors")
    top.set_title("Utilization over time" if procs else "Busy processors over time")
    bottom.set_title("Queue length over time (jobs submitted, not started)")
    bottom.set_ylabel("waiting jobs")
    for axes in (top, bottom):
        axes.grid(alpha=0.3)
        axes.legend(loc="upper right", fontsize="small")
    return fig


def wait_cdf_figure(runs: Mapping[str, pd.DataFrame]) -> Figure:
    """The cumulative distribution of wait times, one curve per run (log time axis)."""
    fig = Figure(figsize=(8, 5), layout="constrained")
    axes = fig.subplots()
    for name, jobs in runs.items():
        wait = np.sort(jobs["wait"].to_numpy(dtype=np.float64))
        if not wait.size:
            continue
        share = np.arange(1, wait.size + 1) / wait.size
        axes.step(np.maximum(wait, 1.0), 100 * share, where="post",
                  label=f"{name} (median {np.median(wait):,.0f} s)")
    axes.set_xscale("log")
    axes.set_xlabel("wait time (seconds, log scale; waits under 1 s drawn at 1 s)")
    axes.set_ylabel("jobs waiting at most this long (%)")
    axes.set_ylim(0, 101)
    axes.set_title("Wait-time distribution (CDF)")
    for seconds, label in ((60, "1 min"), (3600, "1 h"), (86400, "1 day")):
        axes.axvline(seconds, color="grey", lw=0.6, ls=":")
        axes.text(seconds, 2, f" {label}", color="grey", fontsize="small")
    axes.grid(alpha=0.3, which="both")
    axes.legend(loc="lower right", fontsize="small")
    return fig


def _class_means(values: np.ndarray, key: np.ndarray,
                 classes: Sequence[tuple[str, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    means = np.full(len(classes), np.nan)
    counts = np.zeros(len(classes), dtype=np.int64)
    for i, (_label, low, high) in enumerate(classes):
        mask = (key >= low) & (key <= high)
        counts[i] = int(mask.sum())
        if counts[i]:
            means[i] = float(values[mask].mean())
    return means, counts


def bsld_classes_figure(runs: Mapping[str, pd.DataFrame]) -> Figure:
    """Mean bounded slowdown by job size class and by runtime class, bars per run."""
    fig = Figure(figsize=(12, 5), layout="constrained")
    panels = fig.subplots(1, 2)
    names = list(runs)
    width = 0.8 / max(len(names), 1)
    for axes, (title, classes, column) in zip(panels, (
            ("by job size (processors)", SIZE_CLASSES, "procs"),
            ("by runtime", RUNTIME_CLASSES, "runtime"))):
        first_counts = None
        for i, name in enumerate(names):
            jobs = runs[name]
            means, counts = _class_means(jobs["bsld"].to_numpy(dtype=np.float64),
                                         jobs[column].to_numpy(dtype=np.int64), classes)
            first_counts = counts if first_counts is None else first_counts
            x = np.arange(len(classes)) + (i - (len(names) - 1) / 2) * width
            axes.bar(x, np.nan_to_num(means, nan=0.0), width=width, label=name)
        axes.set_xticks(np.arange(len(classes)),
                        [f"{label}\n{n:,} jobs" for (label, _, _), n in
                         zip(classes, first_counts)], fontsize="small")
        axes.set_yscale("log")
        axes.set_ylabel("mean bounded slowdown (1 = no delay, log scale)")
        axes.set_title(f"Mean bounded slowdown {title}")
        axes.grid(alpha=0.3, axis="y", which="both")
        axes.legend(fontsize="small")
    return fig


def default_window(jobs: pd.DataFrame, length: int = 86400) -> tuple[int, int]:
    """A Gantt window of ``length`` seconds (or the whole span if shorter) centred on the
    moment the queue was longest."""
    t0, t1 = int(jobs["submit"].min()), int(jobs["end"].max())
    if t1 - t0 <= length:
        return t0, t1
    line = _timeline(jobs, None)
    peak = int(line["time"].to_numpy()[int(np.argmax(line["queued_jobs"].to_numpy()))])
    start = min(max(t0, peak - length // 2), t1 - length)
    return start, start + length


def processor_sizes(result) -> dict[int, list[tuple[int, int]]]:
    """A malleable replay's size history in processors: job_id -> [(time s, processors)]
    (``ReplayResult.size_history()`` logs whole nodes on node-exclusive machines); empty
    for a rigid replay."""
    unit = int(result.node_procs) or 1
    return {job: [(time, size * unit) for time, size in history]
            for job, history in result.size_history().items()}


def applications(result) -> np.ndarray:
    """SWF field 14 (application number) of each job of a replay, -1 when unknown."""
    table = result.swf_table
    if table is not None and "executable" in table.columns:
        return table["executable"].to_numpy()
    return np.full(len(result.jobs), -1)


def size_segments(start: int, end: int, procs: int,
                  history: Sequence[tuple[int, int]] | None = None
                  ) -> list[tuple[int, int, int]]:
    """One job's run as ``(from, to, processors)`` pieces (seconds, half-open).

    Without a history the job is one piece ``(start, end, procs)``.  A history is
    ``[(time, size), ...]`` in time order (its start first): each size holds from its
    time to the next entry's time (the last one to ``end``); pieces are cut to
    [start, end), empty ones dropped (a later entry at the same time wins) and neighbours
    of equal size merged.  The pieces are contiguous and cover [start, end).
    """
    if end <= start:
        return []
    if not history:
        return [(int(start), int(end), int(procs))]
    pieces: list[tuple[int, int, int]] = []
    for i, (time, size) in enumerate(history):
        t0 = max(int(time), int(start))
        t1 = min(int(history[i + 1][0]) if i + 1 < len(history) else int(end), int(end))
        if t1 <= t0:
            continue
        if pieces and pieces[-1][2] == size and pieces[-1][1] == t0:
            pieces[-1] = (pieces[-1][0], t1, int(size))
        else:
            pieces.append((t0, t1, int(size)))
    if pieces and pieces[0][0] > start:          # a history starting late: its first size
        pieces[0] = (int(start), *pieces[0][1:])
    return pieces


def first_fit_rectangles(pieces: Sequence[Sequence[tuple[int, int, int]]]
                         ) -> list[tuple[int, int, int, int, int]]:
    """Place jobs' pieces (from :func:`size_segments`) on processor rows first-fit.

    Returns ``(job, x0, x1, y0, y1)`` rectangles (``job`` the index into ``pieces``,
    seconds, processor rows [y0, y1)).  At each instant, releases (ends, shrinks) come
    before acquisitions (starts, expansions); a job acquiring takes the lowest free rows,
    a job shrinking keeps its lowest rows.  Two rectangles never overlap while the
    processors in use never exceed the rows (the peak of the summed sizes), so a job
    whose rows are not contiguous is drawn as several rectangles.
    """
    events = []                                   # (time, acquires?, job, new size)
    for job, segs in enumerate(pieces):
        previous, last_end = 0, None
        for t0, t1, size in segs:
            if last_end is not None and t0 > last_end:
                events.append((last_end, 0, job, 0))
                previous = 0
            events.append((t0, int(size > previous), job, size))
            previous, last_end = size, t1
        if last_end is not None:
            events.append((last_end, 0, job, 0))
    events.sort()
    busy, peak = 0, 0
    sizes = [0] * len(pieces)
    for _time, _up, job, size in events:
        busy += size - sizes[job]
        sizes[job] = size
        peak = max(peak, busy)
    free = np.ones(peak, dtype=bool)
    held = [np.empty(0, dtype=np.int64) for _ in pieces]
    since = [0] * len(pieces)
    out: list[tuple[int, int, int, int, int]] = []
    for time, _up, job, size in events:
        slots = held[job]
        if time > since[job]:
            out.extend((job, since[job], time, low, high + 1) for low, high in _runs(slots))
        if size < slots.size:
            free[slots[size:]] = True
            slots = slots[:size]
        elif size > slots.size:
            taken = np.flatnonzero(free)[:size - slots.size]
            free[taken] = False
            slots = np.sort(np.concatenate((slots, taken)))
        held[job], since[job] = slots, time
    return out


GANTT_COLOURS = ("user", "kind", "application")
"""What colours a Gantt chart's jobs: the SWF user, the job kind, the application (SWF
field 14)."""

KIND_COLOURS = {"rigid": "tab:blue", "moldable": "tab:green", "malleable": "tab:orange"}
"""The colour of each job kind (``colour="kind"``)."""


def gantt_figure(jobs: pd.DataFrame, window: tuple[int, int] | None = None,
                 procs: int | None = None, title: str = "",
                 sizes: Mapping[int, Sequence[tuple[int, int]]] | None = None,
                 colour: str = "user", applications: Sequence[int] | None = None) -> Figure:
    """Jobs as rectangles: x from start to end, height their processors, colour per user
    (or per kind, or per application).

    The core records how many processors a job held, not which: processors are drawn
    first-fit (:func:`first_fit_rectangles`: lowest free rows, releases before
    acquisitions), so a job may appear as several rectangles; the drawing shows
    occupancy, not the real placement.  A job with a size history (``sizes``) is drawn
    as a sequence of pieces whose height follows its size; flexible jobs (``kind`` not
    rigid, or a history with more than one size) are hatched.

    Args:
        jobs: per-job table (``kind`` optional, from a malleable replay).
        window: ``(start, end)`` seconds; default :func:`default_window`.
        procs: machine processors (the y range); default the peak processors in use.
        sizes: job_id -> [(time s, processors), ...] (:func:`processor_sizes`); None for
            a rigid replay.  Each resize in the window is marked on the job: a black
            up-triangle for an expansion, a down-triangle for a shrink.
        colour: one of :data:`GANTT_COLOURS`.
        applications: SWF field 14 per row of ``jobs`` (``colour="application"``; None:
            every job -1).
    """
    if colour not in GANTT_COLOURS:
        raise ValueError(f"colour: must be one of {', '.join(GANTT_COLOURS)}, got {colour!r}")
    if window is None:
        window = default_window(jobs)
    w0, w1 = window
    sizes = sizes or {}
    start = jobs["start"].to_numpy(dtype=np.int64)
    end = jobs["end"].to_numpy(dtype=np.int64)
    alloc = _procs_column(jobs)
    ids = jobs["job_id"].tolist() if "job_id" in jobs.columns else [None] * len(jobs)
    kinds = (jobs["kind"].astype(str).to_numpy() if "kind" in jobs.columns
             else np.full(len(jobs), "rigid"))
    users = jobs["user"].to_numpy() if "user" in jobs.columns else np.zeros(len(jobs))
    apps = (np.asarray(applications) if applications is not None
            else np.full(len(jobs), -1))
    inside = np.flatnonzero((start < w1) & (end > w0) & (end > start))
    inside = inside[np.argsort(start[inside], kind="stable")][:GANTT_MAX_JOBS]
    pieces = [size_segments(int(start[j]), int(end[j]), int(alloc[j]), sizes.get(ids[j]))
              for j in inside]
    flexible = [kinds[j] != "rigid" or len({s for _, _, s in p}) > 1
                for j, p in zip(inside, pieces)]
    rectangles = first_fit_rectangles(pieces)
    peak = max((y1 for *_, y1 in rectangles), default=1)
    height = max(procs or peak, peak, 1)
    palette = _tab20()
    span = w1 - w0
    scale, unit = (3600.0, "hours") if span > 3 * 3600 else (60.0, "minutes")
    drawn: dict[bool, tuple[list, list]] = {False: ([], []), True: ([], [])}
    for k, x0, x1, y0, y1 in rectangles:
        x0, x1 = max(x0, w0), min(x1, w1)
        if x1 <= x0:
            continue
        a, b = (x0 - w0) / scale, (x1 - w0) / scale
        polys, colours = drawn[flexible[k]]
        polys.append([(a, y0), (b, y0), (b, y1), (a, y1)])
        row = inside[k]
        if colour == "kind":
            colours.append(KIND_COLOURS.get(str(kinds[row]), "tab:grey"))
        else:
            key = users[row] if colour == "user" else apps[row]
            colours.append(palette[hash(int(key)) % len(palette)])
    marks = _resize_marks(pieces, rectangles, w0, w1)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots()
    for flex in (False, True):
        polys, colours = drawn[flex]
        if polys:
            axes.add_collection(PolyCollection(
                polys, facecolors=colours, edgecolors="black", linewidths=0.2,
                hatch="//" if flex else None))
    for up, marker in ((True, "^"), (False, "v")):
        pts = [((t - w0) / scale, y) for t, y, grew in marks if grew == up]
        if pts:
            axes.scatter(*zip(*pts), marker=marker, s=14, color="black", zorder=3,
                         label=f"{'expansion' if up else 'shrink'} ({len(pts):,})")
    n_flex = int(sum(flexible))
    marks_handles = axes.get_legend_handles_labels()[0]      # the resize marks
    handles = [
        Patch(facecolor="lightgrey", edgecolor="black", lw=0.4,
              label=f"rigid job ({len(inside) - n_flex:,})"),
        Patch(facecolor="lightgrey", edgecolor="black", lw=0.4, hatch="//",
              label=f"malleable/moldable job ({n_flex:,}),\nhatched; height follows\n"
                    f"its size over time")]
    if colour == "kind":
        handles += [Patch(facecolor=KIND_COLOURS.get(k, "tab:grey"), edgecolor="black",
                          lw=0.4, label=k) for k in sorted({str(kinds[j]) for j in inside})]
    handles += marks_handles
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0),
                fontsize="small", title="job kind")
    axes.set_xlim(0, span / scale)
    axes.set_ylim(0, height)
    axes.set_xlabel(f"time since window start t={w0:,} s ({unit})")
    axes.set_ylabel("processors (first-fit drawing)")
    axes.set_title((title + ": " if title else "") + f"Gantt chart, {len(inside):,} jobs in "
                   f"[{w0:,} s, {w1:,} s], colour = {colour}")
    axes.axhline(height, color="black", lw=0.8)
    return fig


def _resize_marks(pieces: Sequence[Sequence[tuple[int, int, int]]],
                  rectangles: Sequence[tuple[int, int, int, int, int]], w0: int, w1: int
                  ) -> list[tuple[int, float, bool]]:
    """``(time, y, grew)`` per size change of a job inside [w0, w1): at the middle of the
    rows the job holds from that instant (its rectangles starting then)."""
    starts: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, x0, _x1, y0, y1 in rectangles:
        starts.setdefault((k, x0), []).append((y0, y1))
    out = []
    for k, segs in enumerate(pieces):
        for (_a, _b, before), (t, _e, after) in zip(segs, segs[1:]):
            if before == after or not w0 <= t < w1:
                continue
            rows = starts.get((k, t), [])
            if rows:
                low = min(y0 for y0, _ in rows)
                high = max(y1 for _, y1 in rows)
                out.append((t, (low + high) / 2.0, after > before))
    return out


def _runs(slots: np.ndarray) -> list[tuple[int, int]]:
    """Sorted processor numbers -> contiguous (first, last) ranges."""
    if not slots.size:
        return []
    breaks = np.flatnonzero(np.diff(slots) != 1)
    firsts = np.concatenate(([slots[0]], slots[breaks + 1]))
    lasts = np.concatenate((slots[breaks], [slots[-1]]))
    return list(zip(firsts.tolist(), lasts.tolist()))


def _tab20() -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return [cmap(i) for i in range(20)]


def trials_figure(rows: pd.DataFrame, default: Mapping[str, Any], objective: str) -> Figure:
    """A tuning run: train (and test) score of each trial, the running best, the default.

    Args:
        rows: trial rows with ``trial``, ``status``, ``train_score``, ``test_score``.
        default: the default policy's row (``train_score``, ``test_score``).
        objective: the objective's text (axis label).
    """
    ok = rows[rows["status"] == "ok"].sort_values("trial")
    fig = Figure(figsize=(10, 5), layout="constrained")
    axes = fig.subplots()
    x = ok["trial"].to_numpy()
    train = ok["train_score"].to_numpy(dtype=np.float64)
    test = ok["test_score"].to_numpy(dtype=np.float64)
    axes.scatter(x, train, s=18, label="trial, train score", color="tab:blue")
    if np.isfinite(test).any():
        axes.scatter(x, test, s=18, marker="x", label="trial, held-out test score",
                     color="tab:orange")
    if train.size:
        axes.step(x, np.fmin.accumulate(train), where="post", color="tab:blue", lw=1.2,
                  label="best train score so far")
    axes.axhline(float(default["train_score"]), color="tab:blue", ls="--", lw=1,
                 label="default policy, train")
    test_default = float(default.get("test_score", float("nan")))
    if test_default == test_default:
        axes.axhline(test_default, color="tab:orange", ls="--", lw=1,
                     label="default policy, test")
    failed = rows[rows["status"] != "ok"]
    if len(failed):
        axes.scatter(failed["trial"], np.full(len(failed), np.nanmax(train) if train.size
                     else 0), marker="v", color="red", label=f"failed ({len(failed)})")
    axes.set_xlabel("trial (in the order they were numbered)")
    axes.set_ylabel(f"score: {objective} (lower is better)")
    axes.set_title("Objective across trials")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    return fig


METRICS_PANELS = (("workload_completion", "workload completion (h)", 1 / 3600.0),
                  ("reconfigurations", "reconfigurations", 1.0),
                  ("parallel_efficiency", "parallel efficiency", 1.0),
                  ("utilization_useful", "utilization, useful work (%)", 100.0),
                  ("energy_kwh", "energy (kWh)", 1.0),
                  ("wait_mean", "mean wait (h)", 1 / 3600.0))
"""The panels of :func:`metrics_figure`: summary key, axis title, scale."""


def metrics_figure(summaries: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Runs side by side (one bar per run, in order) for completion time, resizes, parallel
    efficiency, useful utilization, energy and mean wait.  A rigid run's completion is its
    makespan and its resizes 0 (as in ``malleo compare``'s table)."""
    names = list(summaries)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 3).ravel()
    colours = [_tab20()[2 * (i % 10)] for i in range(len(names))]
    for ax, (key, label, scale) in zip(axes, METRICS_PANELS):
        values = []
        for name in names:
            s = summaries[name]
            value = s.get(key, s.get("makespan") if key == "workload_completion"
                          else 0 if key == "reconfigurations" else None)
            values.append(float("nan") if value is None else float(value) * scale)
        ax.bar(range(len(names)), values, color=colours)
        ax.set_title(label, fontsize="medium")
        ax.set_xticks(range(len(names)), [str(i + 1) for i in range(len(names))])
        ax.grid(axis="y", alpha=0.3)
    fig.legend(handles=[Patch(color=c, label=f"{i + 1}: {n}")
                        for i, (n, c) in enumerate(zip(names, colours))],
               loc="outside lower center", ncols=min(len(names), 3), fontsize="small")
    return fig


def slug(name: str) -> str:
    """A file-name-safe form of a run name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "run"


def write_replay_plots(runs: Mapping[str, pd.DataFrame], directory: str | Path,
                       procs: int | None = None, window: tuple[int, int] | None = None,
                       dpi: int = 110,
                       sizes: Mapping[str, Mapping[int, Sequence[tuple[int, int]]]] | None
                       = None, colour: str = "user",
                       applications: Mapping[str, Sequence[int]] | None = None,
                       summaries: Mapping[str, Mapping[str, Any]] | None = None
                       ) -> list[Path]:
    """Write every replay plot as PNG into ``directory`` (created): ``timeline.png``,
    ``wait_cdf.png``, ``bsld_classes.png``, ``gantt-<run>.png`` per run and, given
    ``summaries`` of two runs or more, ``metrics.png`` (:func:`metrics_figure`).

    ``sizes`` maps a run name to its size history in processors (:func:`processor_sizes`)
    so the Gantt chart draws malleable jobs' size changes and marks each resize; runs
    absent from it draw every job at one size.  ``colour`` and ``applications`` (run name
    -> SWF field 14 per job) go to :func:`gantt_figure`.

    Returns:
        The written paths.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    runs = {name: jobs for name, jobs in runs.items()}
    written = []
    figures = [("timeline.png", timeline_figure(runs, procs)),
               ("wait_cdf.png", wait_cdf_figure(runs)),
               ("bsld_classes.png", bsld_classes_figure(runs))]
    for name, jobs in runs.items():
        if len(jobs):
            figures.append((f"gantt-{slug(name)}.png",
                            gantt_figure(jobs, window, procs, title=name,
                                         sizes=(sizes or {}).get(name), colour=colour,
                                         applications=(applications or {}).get(name))))
    if summaries and len(summaries) > 1:
        figures.append(("metrics.png", metrics_figure(summaries)))
    for file_name, fig in figures:
        path = directory / file_name
        fig.savefig(path, dpi=dpi)
        written.append(path)
    return written
