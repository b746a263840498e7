"""``malleo report``: one self-contained HTML page from replay and tuning results."""
from __future__ import annotations

from pathlib import Path

import click


def _window(_ctx, param, value):
    if value is None:
        return None
    try:
        start, end = (int(v) for v in value.split(":"))
    except ValueError:
        raise click.BadParameter("expected START:END in seconds, e.g. 86400:172800",
                                 param=param) from None
    if end <= start:
        raise click.BadParameter(f"END must be after START, got {value}", param=param)
    return start, end


@click.command(short_help="An HTML report (summary table and plots) of replay/tune results.")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="report.html",
              show_default=True, help="The HTML file to write (plots embedded).")
@click.option("--procs", type=click.IntRange(min=1), default=None,
              help="Machine processors, for utilization (the per-job CSV does not hold it).")
@click.option("--objective", default="bsld", show_default=True, metavar="OBJ",
              help="Objective scoring tuning results (as for malleo tune).")
@click.option("--window", default=None, metavar="START:END", callback=_window,
              help="Gantt chart window, seconds on the trace's clock. "
                   "[default: a day around the longest queue]")
@click.option("--bsld-threshold", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, metavar="SECONDS", help="Bounded slowdown threshold.")
@click.option("--title", default="malleo report", show_default=True, help="Page title.")
def report(results, output, procs, objective, window, bsld_threshold, title) -> None:
    """Write one HTML page from RESULTS: per-job tables from 'malleo replay --out'
    (.csv or .parquet) and results files of 'malleo tune' (.csv).

    Replays give the summary table, utilization and queue length over time, the
    wait-time CDF, mean bounded slowdown by size and runtime class and a Gantt chart;
    tuning runs give their leaderboard and the objective across trials.
    """
    from malleo.emulator.outputs import check_outputs
    from malleo.emulator.report import build_report, read_inputs

    check_outputs(files={"--output": output})
    inputs = read_inputs(results)
    page = build_report(inputs, procs=procs, objective=objective, window=window,
                        bsld_threshold=bsld_threshold, title=title)
    Path(output).write_text(page, encoding="utf-8")
    click.echo(f"wrote {output} ({len(inputs.replays)} replays, {len(inputs.tunes)} "
               f"tuning runs)")
