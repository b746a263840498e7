"""``malleo replay``: replay a trace (or the embedded default workload) under one policy."""
from __future__ import annotations

import json

import click

from malleo.emulator.cli._options import (apply_malleability_options, malleability_options,
                                          policy_from_options, policy_options, power_from_options,
                                          power_options, quiet_option, read_options,
                                          workload_options)
from malleo.emulator.cli._options import gantt_colour_option
from malleo.emulator.cli._progress import Progress, span_days
from malleo.emulator.outputs import check_outputs


@click.command(short_help="Replay a trace under one policy and print its metrics.")
@click.argument("trace", required=False, type=click.Path(exists=True, dir_okay=False))
@policy_options
@malleability_options
@workload_options
@power_options
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary (and the policy) as JSON instead of a table.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the per-job table: FILE.csv or FILE.parquet.")
@click.option("--swf-out", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the replayed schedule as an SWF trace (.swf or .swf.gz).")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              metavar="DIR", help="Write the plots (PNG) into DIR (see docs/plots.md).")
@gantt_colour_option
@quiet_option
def replay(trace, config, procs, node_procs, jobs, lenient, procs_from, overrun,
           bsld_threshold, load, as_json, out, swf_out, plot_dir, gantt_colour, quiet,
           **knob_values) -> None:
    """Replay TRACE (an SWF file, optionally gzipped) through the scheduling core and print
    wait, slowdown, utilization and fairness metrics.

    Without TRACE, replays the embedded default workload (Lublin model, 10,000 jobs on 256
    processors, seed 0).  The default policy is FCFS with EASY backfill; options override
    the keys of --config.
    """
    from malleo.emulator.formatting import replay_table
    from malleo.emulator.driver import load_workload, replay as run_replay

    # knob_values: one parameter per policy knob option (malleo.knobs)
    policy, flexible = apply_malleability_options(*policy_from_options(config, **knob_values),
                                                  **knob_values)
    if out is not None and not out.lower().endswith((".csv", ".parquet", ".pq")):
        raise click.BadParameter("must end in .csv or .parquet", param_hint="'--out'")
    check_outputs(files={"--out": out, "--swf-out": swf_out}, dirs={"--plot": plot_dir})
    with Progress(enabled=not quiet) as progress:
        progress.step("reading trace" if trace else "generating the default workload")
        workload = load_workload(trace, procs=procs, swf_fields=bool(swf_out),
                                 **read_options(lenient, procs_from, overrun))
        name = policy.describe(flexible)
        progress.step(f"replaying under {name}")
        result = run_replay(workload, policy, procs=procs, node_procs=node_procs, jobs=jobs,
                            bsld_threshold=bsld_threshold, flexible=flexible, load=load,
                            breakdowns=True, power=power_from_options(**knob_values),
                            progress=progress.replay_counter(_origin(workload)))
        if out:
            progress.step(f"writing {out}")
            result.write(out)
        if swf_out:
            progress.step(f"writing {swf_out}")
            result.to_swf(swf_out)
        if plot_dir:
            from malleo.emulator.plots import applications, processor_sizes, write_replay_plots

            progress.step(f"plotting into {plot_dir}")
            write_replay_plots({name: result.jobs}, plot_dir, procs=result.procs,
                               sizes={name: processor_sizes(result)}, colour=gantt_colour,
                               applications={name: applications(result)})
        progress.finish(f"replayed {result.summary['jobs']:,} jobs under {name} in "
                        f"{progress.elapsed:.1f} s ({span_days(_times(result))} simulated)")
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(replay_table(result.summary))


def _origin(workload) -> int:
    """The first submit time of a loaded workload (seconds), the simulated clock's start."""
    submit = workload.columns["submit_time"]     # not .table: no DataFrame, no pandas
    return int(submit.min()) if len(submit) else 0


def _times(result) -> dict:
    """The replayed jobs' ``submit`` and ``end`` columns, without building the job table."""
    return {"submit": result.column("submit"), "end": result.column("end")}
