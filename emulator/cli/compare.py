"""``malleo compare``: several policies on one trace, side by side."""
from __future__ import annotations

import json
from pathlib import Path

import click

from malleo.emulator.cli._options import (MALLEABILITY_OPTION_KEYS, apply_malleability_options,
                                          malleability_options, parse_column_spec,
                                          parse_policy_spec,
                                          power_from_options, power_options, quiet_option,
                                          read_options, workload_options)
from malleo.emulator.cli._options import gantt_colour_option
from malleo.emulator.cli._progress import Progress, span_days
from malleo.errors import MalleoError

DEFAULT_SPECS = ("fcfs+none", "fcfs+easy", "fcfs+conservative", "fcfs+slurm")
"""Compared when neither --policy nor --config is given: FCFS under every backfill mode."""


def _check_specs(_ctx, param, values):
    try:
        return [(spec, *parse_column_spec(spec)) for spec in values]
    except MalleoError as exc:
        raise click.BadParameter(str(exc), param=param) from None


def _column(policy, mall: dict, flex: dict, options: dict):
    """A --policy column: the shared malleability options, then its own ;KEY=VALUE pairs."""
    import dataclasses

    policy, flexible = apply_malleability_options(policy, **options)
    if mall:
        policy = policy.replace(malleability=dataclasses.replace(policy.malleability, **mall))
    return policy, (flexible.replace(**flex) if flex else flexible)


@click.command(short_help="Replay one trace under several policies, side by side.")
@click.argument("trace", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--policy", "specs", multiple=True, callback=_check_specs,
              metavar="ORDER+BACKFILL[(K=N)][/ESTIMATE][;KEY=VALUE...]",
              help="A policy to compare, e.g. fcfs+easy, sjf+conservative, "
                   "fcfs+slurm(K=50), wfp3+easy/predict, or a preset: easy++; ;KEY=VALUE pairs give the column "
                   "its own [malleability]/[flexible] keys, e.g. "
                   "'fcfs+easy;fraction=0.5;policy=dmr'. Repeatable.")
@click.option("--config", "configs", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="A policy file to compare (TOML). Repeatable.")
@malleability_options
@workload_options
@power_options
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of {name, summary, policy} instead of a table.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              metavar="DIR", help="Write the plots (PNG) into DIR (see docs/plots.md).")
@gantt_colour_option
@quiet_option
def compare(trace, specs, configs, procs, node_procs, jobs, lenient, procs_from,
            overrun, bsld_threshold, load, as_json, plot_dir, gantt_colour, quiet,
            **flex) -> None:
    """Replay TRACE (default: the embedded default workload) once per policy and print the
    metrics side by side, the best value of each metric marked with '*'.

    Policies come from --policy specs, then --config files, in the order given; with
    neither, FCFS under each backfill mode (none, easy, conservative, slurm) is compared.
    The malleability options (--malleable etc.) apply to the --policy specs and the
    defaults; a spec's own ;KEY=VALUE pairs override them for its column; a --config
    file keeps its own [malleability] and [flexible] tables.  Rigid and malleable columns
    side by side: --policy fcfs+easy --policy 'fcfs+easy;fraction=0.5'.
    """
    from malleo.emulator.formatting import compare_table
    from malleo.emulator.driver import load_workload, replay
    from malleo.policy_file import load_config

    from malleo.emulator.outputs import check_outputs

    check_outputs(dirs={"--plot": plot_dir})
    power = power_from_options(**flex)
    flex = {k: v for k, v in flex.items() if k in MALLEABILITY_OPTION_KEYS}
    policies = [(spec, *_column(policy, mall, own, flex)) for spec, policy, mall, own in specs]
    policies += [(Path(path).name, *load_config(path)) for path in configs]
    if not policies:
        policies = [(spec, *apply_malleability_options(parse_policy_spec(spec), **flex))
                    for spec in DEFAULT_SPECS]
    results = []
    with Progress(enabled=not quiet) as progress:
        progress.step("reading trace" if trace else "generating the default workload")
        # only the fields a replay reads (no SWF output here), no DataFrame: issue 16
        workload = load_workload(trace, procs=procs, swf_fields=False,
                                 **read_options(lenient, procs_from, overrun))
        submit = workload.columns["submit_time"]
        origin = int(submit.min()) if len(submit) else 0
        del submit
        for i, (name, policy, flexible) in enumerate(policies, start=1):
            progress.step(f"replaying {name} ({i}/{len(policies)})")
            results.append(replay(workload, policy, procs=procs, node_procs=node_procs,
                                  jobs=jobs, bsld_threshold=bsld_threshold,
                                  flexible=flexible, power=power, load=load,
                                  breakdowns=True, progress=progress.replay_counter(origin)))
        days = span_days({k: results[0].column(k) for k in ("submit", "end")})
        progress.finish(f"replayed {results[0].summary['jobs']:,} jobs under "
                        f"{len(policies)} policies in {progress.elapsed:.1f} s "
                        f"({days} simulated)")
    names = _unique([name for name, _, _ in policies])
    if plot_dir:
        from malleo.emulator.plots import applications, processor_sizes, write_replay_plots

        write_replay_plots({name: r.jobs for name, r in zip(names, results)}, plot_dir,
                           procs=results[0].procs,
                           sizes={name: processor_sizes(r) for name, r in zip(names, results)},
                           colour=gantt_colour,
                           applications={name: applications(r)
                                         for name, r in zip(names, results)},
                           summaries={name: r.summary for name, r in zip(names, results)})
    if as_json:
        click.echo(json.dumps([{"name": name, **result.to_dict()}
                               for name, result in zip(names, results)], indent=2))
        return
    first = results[0].summary
    click.echo(f"source   {first['source']}")
    click.echo(f"machine  {first['procs']:,} processors"
               + (f", exclusive nodes of {first['node_procs']}" if first["node_procs"] else ""))
    click.echo("")
    click.echo(compare_table(names, [r.summary for r in results]))


def _unique(names: list[str]) -> list[str]:
    """Suffix repeated names with #2, #3 so columns stay distinguishable."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
