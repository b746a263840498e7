"""``malleo trace from-sacct``: a site's Slurm accounting history as an SWF trace.

    malleo trace from-sacct INPUT -o OUT.swf[.gz] [--format parsable|json] [--tz ZONE]
                            [--procs P] [--node-cpus C] [--computer NAME] [--map FILE.csv]

INPUT is the output of ``sacct --parsable2 --format=<RECOMMENDED_FORMAT>`` or
``sacct --json`` (``-`` reads stdin).  Mappings: :mod:`malleo.emulator.sacct` and
docs/tuning.md.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from malleo.emulator.sacct import RECOMMENDED_FORMAT, read_sacct, to_swf
from malleo.errors import TraceError


@click.command("from-sacct", short_help="Convert sacct output (--parsable2 or --json) to SWF.")
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Output SWF file (gzip-compressed if it ends in .gz).")
@click.option("--format", "fmt", type=click.Choice(("parsable", "json")), default=None,
              help="Input format. [default: guessed: JSON if it starts with '{']")
@click.option("--tz", default="UTC", show_default=True, metavar="ZONE",
              help="Time zone of the timestamps of --parsable2 output (sacct prints the "
                   "local time of the machine it ran on), an IANA name like Europe/Paris.")
@click.option("--procs", type=click.IntRange(min=1), default=None,
              help="Machine size in processors, written as the header's MaxProcs.")
@click.option("--node-cpus", type=click.IntRange(min=1), default=None, metavar="C",
              help="Count processors as nodes x C (AllocNodes, ReqNodes) instead of CPUs: "
                   "the view of a node-exclusive site.")
@click.option("--computer", default=None, help="Header Computer line (the cluster's name).")
@click.option("--map", "map_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.csv", help="Also write swf_job,slurm_job_id for every job.")
def from_sacct(input_path, output, fmt, tz, procs, node_cpus, computer, map_path) -> None:
    """Convert Slurm accounting records to an SWF trace.

    Give sacct this field list (others are ignored; missing optional ones become -1):

    \b
      sacct -a --parsable2 -S START -E END -s CD,F,TO,CA,NF,OOM,PR,DL,BF \\
            --format=JobID,JobIDRaw,User,Group,Partition,QOS,Submit,Start,End,\\
      Elapsed,Timelimit,State,AllocCPUS,ReqCPUS,AllocNodes,ReqNodes

    Job steps are folded into their jobs, array tasks stay separate jobs, jobs that never
    started are kept with run time -1 (the SWF reader drops them, counted), unfinished
    jobs are skipped.  Users, groups, QOS (SWF queue) and partitions become numbers
    1..k by sorted name; the header records each mapping.
    """
    from malleo.emulator.outputs import check_outputs
    from malleo.emulator.swf import write_swf
    from malleo.emulator.swf_header import TraceMeta

    check_outputs(files={"--output": output, "--map": map_path})
    if input_path == "-":
        with tempfile.NamedTemporaryFile("w", suffix=".sacct", delete=False) as handle:
            handle.write(sys.stdin.read())
        source = Path(handle.name)
    else:
        source = Path(input_path)
    try:
        jobs, _steps = read_sacct(source, fmt, tz=tz)
    finally:
        if input_path == "-":
            source.unlink()
    table, origin, report = to_swf(jobs, node_cpus=node_cpus)
    if not report.jobs:
        raise TraceError(f"{input_path}: no finished jobs to convert (is it sacct output "
                         f"with --format={RECOMMENDED_FORMAT}?)")
    meta = TraceMeta(
        version="2.2", computer=computer,
        installation="converted from Slurm accounting by malleo trace from-sacct",
        max_procs=procs, unix_start_time=origin, time_zone_string=tz,
        queues=[f"{n} QOS {name}" for name, n in report.qos.items()],
        partitions=[f"{n} {name}" for name, n in report.partitions.items()],
        notes=["users: " + ", ".join(f"{name}={n}" for name, n in report.users.items()),
               "groups: " + ", ".join(f"{name}={n}" for name, n in report.groups.items()),
               "SWF queue = Slurm QOS, partition = Slurm partition; job numbers 1..N in "
               "submit order",
               *report.lines()])
    if node_cpus:
        meta.notes.append(f"processors = nodes x {node_cpus}")
    write_swf(output, table, meta)
    if map_path:
        import pandas as pd

        pd.DataFrame({"swf_job": table["job_number"], "slurm_job_id": report.job_ids}
                     ).to_csv(map_path, index=False)
    for line in report.lines()[1:]:
        click.echo(f"malleo: note: {line}", err=True)
    click.echo(f"wrote {report.jobs} jobs to {output}")
