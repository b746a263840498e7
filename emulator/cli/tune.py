"""``malleo tune``: search the policy space on a trace and write the best policy (TOML).

    malleo tune TRACE --space space.toml --objective OBJ [--search grid|random|tpe]
                [--trials N] [--seed S] [--split 0.7 | --no-split] [--workers N]
                [--results FILE.csv] [--executor local|slurm] [--out best.toml]

docs/tuning.md is the guide (space file schema, objectives, executors).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import click

from malleo.emulator.cli._options import read_options
from malleo.errors import MalleoError


@click.command(short_help="Search the policy space on a trace; write the best policy.")
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option("--space", "space_path", type=click.Path(dir_okay=False), required=True,
              metavar="FILE", help="Search space (TOML: choices and ranges per policy key; "
                                   "see docs/tuning.md).")
@click.option("--objective", default="bsld", show_default=True, metavar="OBJ",
              help="Minimised score: a metric (bsld, p95_wait, utilization, makespan, "
                   "fairness, ...) or a weighted sum like 'bsld+0.001*p95_wait'; "
                   "higher-is-better metrics count negated.")
@click.option("--search", type=click.Choice(("grid", "random", "tpe")), default="tpe",
              show_default=True, help="Search strategy (tpe: optuna's model-based search).")
@click.option("--trials", type=click.IntRange(min=1), default=None,
              help="Trials to run, at most 100,000; each point runs once, so a space with "
                   "fewer points gives fewer. [default: the whole grid; 20 for random and "
                   "tpe]")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seed of the random and tpe searches.")
@click.option("--split", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.7, show_default=True, metavar="FRACTION",
              help="Tune on the jobs submitted in the first FRACTION of the trace's time "
                   "span, report the score on the rest (held out).")
@click.option("--no-split", is_flag=True, help="Tune and score on the whole trace.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes. [default: the core count]")
@click.option("--results", "results_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.csv", help="Results file, one row per trial, written as trials "
                                      "finish; rerunning with it skips finished trials "
                                      "(it must be yours: a link or another user's file "
                                      "is refused). [default: TRACE.SETUP.tune.csv in "
                                      "~/.local/state/malleo/tune/, private]")
@click.option("--executor", type=click.Choice(("local", "slurm")), default="local",
              show_default=True, help="Run trials in local processes or as a Slurm job "
                                      "array (submitit).")
@click.option("--partition", default=None, help="slurm executor: partition of the array.")
@click.option("--time", "time_min", type=click.IntRange(min=1), default=30, show_default=True,
              metavar="MINUTES", help="slurm executor: time limit of each array task.")
@click.option("--array-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="slurm executor: array tasks running at once (and trials per TPE round). "
                   "[default: --workers]")
@click.option("--slurm-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="slurm executor: shared directory for task files and logs (visible to "
                   "every node). [default: the results file's name + .slurm/]")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="best.toml",
              show_default=True, help="Write the best policy here (policy-file TOML).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Leaderboard rows.")
@click.option("--procs", type=click.IntRange(min=1), default=None,
              help="Processors of the machine. [default: the trace header's]")
@click.option("--node-procs", type=click.IntRange(min=0), default=0, metavar="C",
              help="Allocate whole nodes of C processors. [default: 0]")
@click.option("--lenient", is_flag=True, help="Skip malformed trace lines (counted).")
@click.option("--procs-from", type=click.Choice(("allocated", "requested")),
              default="allocated", show_default=True, help="SWF processor field preferred.")
@click.option("--overrun", type=click.Choice(("extend", "cut")), default="extend",
              show_default=True, help="A job that ran past its request: extend its "
                                      "estimate, or cut its runtime.")
@click.option("--bsld-threshold", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, metavar="SECONDS", help="Bounded slowdown threshold.")
@click.option("--json", "as_json", is_flag=True, help="Print the leaderboard as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on stderr.")
def tune(trace, space_path, objective, search, trials, seed, split, no_split, workers,
         results_path, executor, partition, time_min, array_size, slurm_dir, out_path, top,
         procs, node_procs, lenient, procs_from, overrun, bsld_threshold, as_json,
         quiet) -> None:
    """Search the policy parameters of --space on TRACE, minimising --objective.

    Every trial replays the train part (the first --split of the time span) and the
    held-out test part; the leaderboard ranks by train score and shows the test score
    and the default policy's (fcfs+easy) beside it.  The best policy is written to
    --out, ready for 'malleo replay --config' and the Slurm agent.
    """
    from malleo.emulator.outputs import check_outputs
    from malleo.emulator.tune.evaluate import Setup

    if not split == split:
        raise click.BadParameter("must be a fraction in (0, 1), got nan", param_hint="'--split'")
    from malleo.emulator.tune.objective import parse_objective
    from malleo.emulator.tune.runner import TrialBar, default_results_path, run_tune
    from malleo.emulator.tune.space import load_space
    from malleo.emulator.tune.space_limits import check_space_size
    from malleo.policy_file import dump_policy

    check_outputs(files={"--out": out_path, "--results": results_path},
                  dirs={"--slurm-dir": slurm_dir if executor == "slurm" else None})
    space = load_space(space_path)
    check_space_size(space, search, trials)
    goal = parse_objective(objective)
    setup = Setup(trace=os.path.abspath(trace), procs=procs, node_procs=node_procs,
                  read_options=read_options(lenient, procs_from, overrun),
                  bsld_threshold=bsld_threshold, split=None if no_split else split,
                  fixed=space.fixed)
    if results_path is None:
        results_path = default_results_path(setup)
    slurm = None
    if executor == "slurm":
        slurm = {"partition": partition, "time_min": time_min,
                 "array_size": array_size or workers or os.cpu_count() or 1,
                 "folder": slurm_dir or str(Path(results_path).with_suffix("")) + ".slurm"}
    if not quiet:
        click.echo(f"malleo: tuning {Path(trace).name} ({search} search); results in "
                   f"{results_path}", err=True)
    bar = TrialBar(goal, enabled=not quiet)
    result = run_tune(setup, space, goal, search=search, trials=trials, seed=seed,
                      workers=workers, results_path=results_path, executor=executor,
                      slurm=slurm, on_row=bar)
    if result.best_policy is not None:
        Path(out_path).write_text(
            f"# best of malleo tune {Path(trace).name}: objective {goal.text}, "
            f"train score {result.best['train_score']:.6g}\n" + dump_policy(result.best_policy))
    if as_json:
        click.echo(json.dumps(_leaderboard_json(result, top), indent=2))
    else:
        click.echo(leaderboard(result, top, results_path))
    for row in result.failed:
        click.echo(f"malleo: trial {row['trial']} failed: {row['error']}", err=True)
    if result.failed:
        click.echo(f"malleo: {len(result.failed)} trial(s) failed; rerun the same command to "
                   "retry them (finished trials are skipped)", err=True)
    if result.best_policy is None:
        raise MalleoError("every trial failed: no policy written")
    if result.best_policy.estimate == "actual":
        click.echo("malleo: note: the best policy plans with estimate = \"actual\" (real "
                   "runtimes, an oracle): the Slurm agent refuses it; to deploy, tune with "
                   "estimate = \"request\" or \"predict\"", err=True)
    click.echo(f"best policy written to {out_path}", err=as_json)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"


def _params_text(params_json: str) -> str:
    params = json.loads(params_json)
    return " ".join(f"{k.removeprefix('multifactor.')}={_short(v)}" for k, v in params.items())


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def leaderboard(result, top: int, results_path) -> str:
    """The leaderboard as text: the default policy, then the best ``top`` trials."""
    rows = result.rows[result.rows["status"] == "ok"].head(top)
    default = result.default
    has_test = result.cut_time is not None
    header = ["rank", "trial", "train", "test" if has_test else "", "policy", "parameters"]
    lines = [["default", "-", _fmt(default["train_score"]),
              _fmt(default["test_score"]) if has_test else "", default["policy"], ""]]
    for rank, row in enumerate(rows.to_dict("records"), start=1):
        lines.append([str(rank), str(int(row["trial"])), _fmt(row["train_score"]),
                      _fmt(row["test_score"]) if has_test else "", row["policy"],
                      _params_text(row["params"])])
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]
    out = [f"objective: {result.objective.describe()}"]
    if has_test:
        out.append(f"train: jobs submitted before t={result.cut_time:,} s "
                   f"({int(default['train_jobs']):,} jobs); test: the rest "
                   f"({int(default['test_jobs']):,} jobs, held out)")
    else:
        out.append(f"no split: scored on all {int(default['train_jobs']):,} jobs")
    out.append("")
    for i, row in enumerate([header, *lines]):
        cells = [f"{row[0]:<{widths[0]}}", f"{row[1]:>{widths[1]}}", f"{row[2]:>{widths[2]}}",
                 f"{row[3]:>{widths[3]}}", f"{row[4]:<{widths[4]}}", row[5]]
        out.append("  ".join(cells).rstrip())
    if result.best is not None:
        best = result.best
        gain = _gain(default["train_score"], best["train_score"])
        out.append("")
        out.append(f"best (trial {int(best['trial'])}): train {_fmt(best['train_score'])} vs "
                   f"default {_fmt(default['train_score'])}{gain}")
        if has_test:
            out.append(f"held-out test: {_fmt(best['test_score'])} vs default "
                       f"{_fmt(default['test_score'])}"
                       f"{_gain(default['test_score'], best['test_score'])}")
    out.append(f"{len(result.rows)} trials in {results_path} (scores: lower is better)")
    return "\n".join(out)


def _gain(default: float, best: float) -> str:
    if not (default == default and best == best) or default == 0:
        return ""
    change = (best - default) / abs(default) * 100
    return f" ({change:+.1f} %)"


def _leaderboard_json(result, top: int) -> dict:
    rows = result.rows[result.rows["status"] == "ok"].head(top)
    keep = ["trial", "policy", "params", "train_score", "test_score"]
    return _json_ready({
        "objective": result.objective.text, "cut_time": result.cut_time,
        "default": {**{k: result.default[k] for k in keep}, "params": {}},
        "leaderboard": [{**{k: r[k] for k in keep}, "params": json.loads(r["params"])}
                        for r in rows.to_dict("records")],
        "failed": [{"trial": r["trial"], "error": r["error"]} for r in result.failed],
    })


def _json_ready(value):
    """numpy scalars -> Python scalars and NaN -> None, recursively."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
