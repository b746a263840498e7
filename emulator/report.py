"""One self-contained HTML report from replay results and tuning results.

Inputs: per-job tables written by ``malleo replay --out`` (CSV or Parquet, the columns of
``ReplayResult.jobs``; a malleable replay's size log beside it, ``STEM.sizes.EXT``, is read
too and drawn in the Gantt chart) and tuning results files written by ``malleo tune``
(CSV).  The
page holds a summary table of every replay, the replay plots, and per tuning run its
leaderboard and the objective across trials; PNGs are embedded as base64 ``data:`` URIs,
so the file needs nothing beside it.  docs/plots.md explains the plots.
"""
from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from malleo.emulator import metrics
from malleo.emulator.results import group_history, log_paths
from malleo.errors import MalleoError
from malleo.input_files import read_text
from malleo.limits import MAX_PROCS, MAX_TIME

__all__ = ["Inputs", "read_inputs", "build_report", "check_replay_table", "SECTIONS"]

SECTIONS = ("Summary", "Utilization and queue length", "Wait-time distribution",
            "Bounded slowdown by job class", "Gantt chart", "Tuning")
"""Section titles, in page order (a section without input is left out)."""

_NEEDED = ("submit", "start", "end", "wait", "runtime", "procs", "bsld")
_SIZE_LOG = ("job_id", "time", "procs")
_EXPANDER_LOG = ("job_id", "time", "event", "procs", "estimate")


@dataclass
class Inputs:
    """What the report shows: replays (name -> per-job table), tuning runs (name -> rows),
    and the size histories of malleable replays (name -> job_id -> [(time s, processors)])."""

    replays: dict[str, pd.DataFrame]
    tunes: dict[str, pd.DataFrame]
    sizes: dict[str, dict[int, list[tuple[int, int]]]] = field(default_factory=dict)


def read_inputs(paths: Sequence[str | Path]) -> Inputs:
    """Read each file and sort it into replays or tuning runs by its columns.

    Raises:
        MalleoError: unreadable, or neither kind of file.
    """
    from malleo.emulator.tune.results import is_results_table, read_results

    replays: dict[str, pd.DataFrame] = {}
    tunes: dict[str, pd.DataFrame] = {}
    sizes: dict[str, dict[int, list[tuple[int, int]]]] = {}
    for raw in paths:
        path = Path(raw)
        suffix = path.suffix.lower()
        try:
            if suffix in (".parquet", ".pq"):
                frame = pd.read_parquet(path)
            elif suffix == ".csv":
                text = read_text(path, "CSV table")
                frame = pd.read_csv(io.StringIO(text), nrows=0)
            else:
                raise MalleoError(f"{path}: expected a .csv or .parquet file")
        except (OSError, ValueError, ImportError, pd.errors.ParserError,
                pd.errors.EmptyDataError) as exc:
            raise MalleoError(f"{path}: cannot read: {exc}") from None
        name = _unique(path.stem, {**replays, **tunes})
        if is_results_table(frame.columns):
            tunes[name] = read_results(path, text if suffix == ".csv" else None)
        elif all(c in frame.columns for c in _NEEDED):
            replays[name] = check_replay_table(path, frame if suffix != ".csv"
                                               else _read_csv(path, text))
            history = _size_history(log_paths(path)[0])
            if history is not None:
                sizes[name] = history
        elif list(frame.columns) in (list(_SIZE_LOG), list(_EXPANDER_LOG)):
            raise MalleoError(f"{path}: a log written beside a malleable replay's per-job "
                              "table: pass the table itself; the report reads its size "
                              "log from beside it")
        else:
            raise MalleoError(f"{path}: neither a per-job table from 'malleo replay --out' "
                              f"(columns {', '.join(_NEEDED)}) nor a 'malleo tune' results "
                              "file")
    return Inputs(replays, tunes, sizes)


def _size_history(path: Path) -> dict[int, list[tuple[int, int]]] | None:
    """job_id -> [(time, processors), ...] from a size log, or None when there is none."""
    if not path.exists():
        return None
    if path.suffix.lower() != ".csv":
        try:
            log = pd.read_parquet(path)
        except (OSError, ValueError, ImportError) as exc:
            raise MalleoError(f"{path}: cannot read the size log: {exc}") from None
    else:
        log = _read_csv(path)
    if list(log.columns) != list(_SIZE_LOG):
        raise MalleoError(f"{path}: not a size log (columns {', '.join(_SIZE_LOG)})")
    for column, low, high in (("job_id", None, None), ("time", 0, MAX_TIME),
                              ("procs", 0, MAX_PROCS)):
        log[column] = _integers(path, log, column, low, high)
    return group_history(log["job_id"], log["time"], log["procs"])


def _read_csv(path: Path, text: str | None = None) -> pd.DataFrame:
    """A CSV table whose every record has as many cells as its header (pandas would take
    an extra cell for an index, or shift the columns, without a word).  ``text``: the
    file's content when already read."""
    import csv

    if text is None:
        text = read_text(path, "CSV table")
    try:
        width = None
        for number, record in enumerate(csv.reader(io.StringIO(text)), start=1):
            if width is None:
                width = len(record)
            elif record and len(record) != width:
                raise MalleoError(f"{path}:{number}: {len(record)} fields, the header has "
                                  f"{width}")
        return pd.read_csv(io.StringIO(text), index_col=False)
    except (csv.Error, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise MalleoError(f"{path}: cannot read: {exc}") from None


def _numbers(path: Path, frame: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` as float64; MalleoError at the first empty, non-numeric, NaN or infinite
    cell (``FILE:LINE: column: ...``, LINE counting the header as line 1)."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise MalleoError(f"{path}:{row + 2}: {column}: not a finite number: "
                          f"{str(raw.iloc[row])!r}")
    return values


def _integers(path: Path, frame: pd.DataFrame, column: str, low: int | None,
              high: int | None) -> np.ndarray:
    """``column`` as int64, every cell an integer in ``[low, high]`` (None: unbounded)."""
    values = _numbers(path, frame, column)
    bad = values != np.trunc(values)
    if low is not None:
        bad |= values < low
    if high is not None:
        bad |= values > high
    bad |= np.abs(values) >= 2.0 ** 53
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        span = "" if low is None else f" in {low}..{high:,}"
        raise MalleoError(f"{path}:{row + 2}: {column}: not an integer{span}: "
                          f"{str(frame[column].iloc[row])!r}")
    return values.astype(np.int64)


def check_replay_table(path: Path, jobs: pd.DataFrame) -> pd.DataFrame:
    """A per-job table checked for what the report computes from: at least one row; the
    times integers in 0..MAX_TIME and sizes in 1..MAX_PROCS; bsld a finite number; user
    an integer and backfilled True or False when present; each job's
    ``submit <= start <= end``.

    Raises:
        MalleoError: ``FILE:LINE: column: what is wrong`` (``FILE: no rows`` for a table
            with a header only).
    """
    if jobs.empty:
        raise MalleoError(f"{path}: no rows (a header only): nothing to report")
    jobs = jobs.copy()
    for column in ("submit", "start", "end", "wait", "runtime"):
        jobs[column] = _integers(path, jobs, column, 0, MAX_TIME)
    for column in [c for c in ("procs", "alloc_procs") if c in jobs.columns]:
        jobs[column] = _integers(path, jobs, column, 1, MAX_PROCS)
    jobs["bsld"] = _numbers(path, jobs, "bsld")
    if "user" in jobs.columns:
        jobs["user"] = _integers(path, jobs, "user", None, None)
    if "backfilled" in jobs.columns:
        flags = jobs["backfilled"].map(
            lambda v: {"true": 1, "false": 0, "1": 1, "0": 0}.get(str(v).strip().lower()))
        if flags.isna().any():
            row = int(np.flatnonzero(flags.isna().to_numpy())[0])
            raise MalleoError(f"{path}:{row + 2}: backfilled: not True or False: "
                              f"{str(jobs['backfilled'].iloc[row])!r}")
        jobs["backfilled"] = flags.astype(bool)
    for earlier, later in (("submit", "start"), ("start", "end")):
        bad = np.flatnonzero(jobs[later].to_numpy() < jobs[earlier].to_numpy())
        if bad.size:
            row = int(bad[0])
            raise MalleoError(f"{path}:{row + 2}: {later}: {jobs[later].iloc[row]} is before "
                              f"{earlier} {jobs[earlier].iloc[row]}")
    return jobs


def _unique(name: str, taken: dict) -> str:
    candidate, i = name, 2
    while candidate in taken:
        candidate, i = f"{name}#{i}", i + 1
    return candidate


def summary_of(jobs: pd.DataFrame, procs: int | None, bsld_threshold: float) -> dict[str, Any]:
    """The summary metrics of a per-job table (utilization needs ``procs``)."""
    alloc = jobs["alloc_procs" if "alloc_procs" in jobs.columns else "procs"]
    user = jobs["user"] if "user" in jobs.columns else pd.Series(np.zeros(len(jobs)))
    backfilled = jobs["backfilled"] if "backfilled" in jobs.columns else np.zeros(len(jobs))
    summary, _ = metrics.summarize(
        jobs["submit"].to_numpy(), jobs["start"].to_numpy(), jobs["end"].to_numpy(),
        jobs["runtime"].to_numpy(), alloc.to_numpy(), user.to_numpy(),
        np.asarray(backfilled, dtype=np.int64), procs or 1, bsld_threshold)
    if not procs:
        summary["utilization"] = float("nan")
    return summary


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(fig, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


def build_report(inputs: Inputs, *, procs: int | None = None, objective: str = "bsld",
                 window: tuple[int, int] | None = None, bsld_threshold: float = 10.0,
                 title: str = "malleo report") -> str:
    """The report page as HTML text.

    Args:
        inputs: from :func:`read_inputs`.
        procs: machine processors (utilization); None: utilization is n/a and the timeline
            shows busy processors.
        objective: scores the tuning rows (see :mod:`malleo.emulator.tune.objective`).
        window: the Gantt chart's ``(start, end)`` seconds; default: a day around the
            longest queue.
        bsld_threshold: tau of the bounded slowdown, seconds.
        title: the page title.
    """
    from malleo.emulator import plots
    from malleo.emulator.cli._format import format_metric
    from malleo.emulator.tune.evaluate import DEFAULT_TRIAL
    from malleo.emulator.tune.objective import parse_objective
    from malleo.emulator.tune.runner import score_rows

    if not inputs.replays and not inputs.tunes:
        raise MalleoError("report: nothing to report (no inputs)")
    body: list[str] = []
    runs = inputs.replays
    if runs:
        summaries = {name: summary_of(jobs, procs, bsld_threshold) for name, jobs in runs.items()}
        rows = []
        for key, (label, _unit, better) in metrics.SUMMARY_KEYS.items():
            if key == "dropped":
                continue
            cells = "".join(f"<td>{html.escape(format_metric(key, s.get(key)))}</td>"
                            for s in summaries.values())
            rows.append(f"<tr><th>{html.escape(label)}</th><td>{better or ''}</td>{cells}</tr>")
        head = "".join(f"<th>{html.escape(n)}</th>" for n in runs)
        body.append(_section("Summary", f"<table><tr><th>metric</th><th>better</th>{head}</tr>"
                             + "".join(rows) + "</table>"
                             + ("" if procs else "<p>Utilization needs the machine size "
                                "(--procs).</p>")))
        body.append(_section("Utilization and queue length",
                             _img(plots.timeline_figure(runs, procs), "timeline")))
        body.append(_section("Wait-time distribution",
                             _img(plots.wait_cdf_figure(runs), "wait-time CDF")))
        body.append(_section("Bounded slowdown by job class",
                             _img(plots.bsld_classes_figure(runs), "bsld by class")))
        gantts = "".join(_img(plots.gantt_figure(jobs, window, procs, title=name,
                                                 sizes=inputs.sizes.get(name)),
                              f"Gantt {name}") for name, jobs in runs.items() if len(jobs))
        body.append(_section("Gantt chart", gantts))
    if inputs.tunes:
        goal = parse_objective(objective)
        parts = [f"<p>Scores: {html.escape(goal.describe())}; lower is better.</p>"]
        for name, frame in inputs.tunes.items():
            scored = score_rows(frame, goal)
            default = scored[scored["trial"] == DEFAULT_TRIAL]
            trials = scored[scored["trial"] != DEFAULT_TRIAL]
            if default.empty:
                raise MalleoError(f"{name}: the results file has no default-policy row "
                                  "(trial -1)")
            default_row = default.iloc[0].to_dict()
            parts.append(f"<h3>{html.escape(name)}</h3>")
            parts.append(_leaderboard(trials, default_row))
            parts.append(_img(plots.trials_figure(trials, default_row, goal.text),
                              f"trials {name}"))
        body.append(_section("Tuning", "".join(parts)))
    return _PAGE.format(title=html.escape(title), body="\n".join(body))


def _leaderboard(trials: pd.DataFrame, default: dict[str, Any], top: int = 10) -> str:
    ok = trials[trials["status"] == "ok"].sort_values(["train_score", "trial"]).head(top)
    failed = int((trials["status"] != "ok").sum())

    def num(value) -> str:
        return "n/a" if value is None or value != value else f"{value:,.4g}"

    rows = [f"<tr><td>default</td><td>-</td><td>{num(default['train_score'])}</td>"
            f"<td>{num(default['test_score'])}</td><td>{html.escape(str(default['policy']))}"
            "</td><td></td></tr>"]
    for rank, row in enumerate(ok.to_dict("records"), start=1):
        params = ", ".join(f"{k}={v}" for k, v in json.loads(row["params"]).items())
        rows.append(f"<tr><td>{rank}</td><td>{int(row['trial'])}</td>"
                    f"<td>{num(row['train_score'])}</td><td>{num(row['test_score'])}</td>"
                    f"<td>{html.escape(str(row['policy']))}</td><td>{html.escape(params)}</td>"
                    "</tr>")
    note = f"<p>{len(trials)} trials, {failed} failed.</p>"
    return ("<table><tr><th>rank</th><th>trial</th><th>train</th><th>test (held out)</th>"
            "<th>policy</th><th>parameters</th></tr>" + "".join(rows) + "</table>" + note)


def _section(title: str, content: str) -> str:
    anchor = title.lower().replace(" ", "-")
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{content}\n</section>'


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; max-width: 1250px; margin: 1em auto; padding: 0 1em; }}
table {{ border-collapse: collapse; margin: 0.5em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}
th {{ background: #f3f3f3; }} tr > th:first-child {{ text-align: left; }}
img {{ max-width: 100%; display: block; margin: 0.5em 0; }}
</style></head><body>
<h1>{title}</h1>
{body}
</body></html>
"""
