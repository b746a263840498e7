"""``malleo policy from-slurm``: the policy that mirrors a Slurm site's own scheduler.

The mapping is :mod:`malleo.emulator.slurm_config`; the rules and what stays different are in
docs/scheduling-semantics.md ("Slurm's own scheduler").
"""
from __future__ import annotations

import json
from pathlib import Path

import click


def _cluster(ctx, param, value):
    if value is None:
        return None
    nodes, sep, cpus = value.partition(":")
    if not (sep and nodes.isdigit() and cpus.isdigit() and int(nodes) > 0 and int(cpus) > 0):
        raise click.BadParameter(f"expected NODES:CPUS (positive integers, CPUs in all), "
                                 f"got {value!r}")
    return int(nodes), int(cpus)


def render(imported, origin: str) -> str:
    """The imported policy as TOML, headed by comments listing what was mapped, what is not
    modelled (scheduling settings) and what was ignored (other settings)."""
    from malleo.policy_file import dump_policy

    out = [f"# malleo policy imported from {origin} by 'malleo policy from-slurm'",
           f"# policy: {imported.policy.describe()}", "#", "# mapped:"]
    out += [f"#   {s.key} = {s.value} ({s.where}) -> {what}" for s, what in imported.used]
    out += ["#", f"# NOT MODELLED ({len(imported.unmodelled)} scheduling settings; "
                 "docs/scheduling-semantics.md):"]
    out += [f"#   {s.key} = {s.value} ({s.where}): {why}" for s, why in imported.unmodelled]
    if imported.notes:
        out += ["#", "# notes:"] + [f"#   {note}" for note in imported.notes]
    if imported.ignored:
        out += ["#", f"# ignored ({len(imported.ignored)} settings that are not about "
                     "scheduling):", "#   " + ", ".join(imported.ignored)]
    return "\n".join(out) + "\n\n" + dump_policy(imported.policy)


def as_json(imported) -> dict:
    """The import as plain data (``--json``)."""
    from malleo.policy_file import policy_to_dict

    return {"name": imported.policy.describe(), "policy": policy_to_dict(imported.policy),
            "mapped": [{"key": s.key, "value": s.value, "where": s.where, "to": what}
                       for s, what in imported.used],
            "unmodelled": [{"key": s.key, "value": s.value, "where": s.where, "why": why}
                           for s, why in imported.unmodelled],
            "ignored": imported.ignored, "notes": imported.notes}


@click.command("from-slurm", short_help="Import a Slurm site's scheduler settings as a policy.")
@click.argument("config", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--partitions", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="'scontrol show partition -o' output (partition priorities). "
                   "[default: the PartitionName lines of CONFIG]")
@click.option("--qos", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="'sacctmgr -nP show qos format=Name,Priority' output (QOS factors).")
@click.option("--limits", "limit_files", type=click.Path(dir_okay=False), multiple=True,
              metavar="FILE", help="'sacctmgr -P show qos format=Name,MaxJobsPU,...' or "
                                   "'show assoc format=Account,User,MaxJobs,...' output (with "
                                   "its header): per-user and group limits, listed as not "
                                   "modelled. Repeatable.")
@click.option("--sprio", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="'sprio -w' output: the weights the controller uses (they win).")
@click.option("--cluster", default=None, metavar="NODES:CPUS", callback=_cluster,
              help="Nodes and CPUs in all, for the job-size weight. [default: CONFIG's "
                   "NodeName lines; the live cluster's sinfo]")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the policy file here instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@click.option("--json", "is_json", is_flag=True, help="Print the import as JSON.")
@click.option("--slurm-conf", type=click.Path(dir_okay=False), default=None,
              envvar="SLURM_CONF", show_envvar=True,
              help="Without CONFIG: the live cluster to ask. [default: Slurm's]")
def from_slurm(config, partitions, qos, limit_files, sprio, cluster, output, force, is_json,
               slurm_conf) -> None:
    """Write the malleo policy that mirrors a Slurm site's sched/backfill and
    priority/multifactor settings.

    CONFIG is a slurm.conf or the output of 'scontrol show config' ('-' reads stdin).
    Without CONFIG, the running cluster is asked (scontrol show config, scontrol show
    partition, sinfo, and sacctmgr for the QOS priorities and the QOS and association
    limits when accounting runs).

    Every scheduling setting malleo does not model is listed in the output (comments, or
    "unmodelled" with --json); other settings are listed as ignored.  Exit status 2 for an
    unreadable file or a bad value (FILE:LINE: Key: ...).
    """
    import sys

    from malleo.emulator import slurm_config as sc
    from malleo.errors import MalleoError

    if output is not None:
        path = Path(output)
        if path.exists() and not force:
            raise click.BadParameter(f"{output} exists (use --force to overwrite)",
                                     param_hint="'-o' / '--output'")
        if not path.parent.is_dir():
            raise click.BadParameter(f"{path.parent} is not a directory",
                                     param_hint="'-o' / '--output'")
    kwargs: dict = {}
    if config is None:
        live = sc.live_inputs(slurm_conf)
        parsed = live.pop("config")
        origin = "the live cluster (scontrol show config)"
        kwargs.update(live)
    else:
        text = sys.stdin.read() if config == "-" else None
        parsed = sc.read_config("<stdin>" if config == "-" else config, text)
        origin = config
    if partitions:
        kwargs["partitions"] = sc.read_partitions(partitions)
    if qos:
        kwargs["qos"] = sc.read_qos(qos)
    if limit_files:
        kwargs["limits"] = [limit for name in limit_files for limit in sc.read_limits(name)]
    if sprio:
        kwargs["sprio"] = sc.read_sprio_weights(sprio)
    if cluster:
        kwargs["nodes"], kwargs["cpus"] = cluster
    try:
        imported = sc.import_policy(parsed, **kwargs)
    except MalleoError:
        raise
    if is_json:
        click.echo(json.dumps(as_json(imported), indent=2))
        if output is None:
            return
    text = render(imported, origin)
    if output is None:
        click.echo(text, nl=False)
        return
    Path(output).write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}: {imported.policy.describe()}, {len(imported.unmodelled)} "
               f"scheduling settings not modelled (listed in the file)", err=True)
