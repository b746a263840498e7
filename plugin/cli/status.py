"""``malleo slurm status`` and ``malleo slurm diag``: what the running agent decided.

Both read the running agent's status file (:mod:`malleo.plugin.agent.status_file`).  Status
falls back to a local plan, through the same live planner the agent uses, only when no agent
runs (or with ``--local``), and says so; diag needs a running (or stopped) agent's file.
Guide: docs/sysadmins.md.
"""
from __future__ import annotations

import json
import os
import time

import click

from malleo.errors import MalleoError
from malleo.plugin.cli import squeue_format

PING_TIMEOUT = 5.0
"""Seconds ``status`` waits for ``scontrol ping`` before it reports the cluster unreachable."""

STATE_DIR = click.option("--state-dir", type=click.Path(file_okay=False), default=None,
                         envvar="MALLEO_STATE_DIR", show_envvar=True,
                         help="Where the agent writes its status file agent.json. "
                              "[default: /run/malleo for root, else $XDG_RUNTIME_DIR/malleo]")


def _state_dir(value):
    from malleo.plugin.agent import status_file

    return status_file.default_dir() if value is None else value


def _agent_doc(state_dir, slurm_conf, partition) -> tuple[dict | None, str]:
    """The running agent's status document, or None with why not (no agent runs, or it
    manages another cluster or partition than the one asked for)."""
    from malleo.plugin.agent import status_file
    from malleo.plugin.agent.status_view import effective_conf

    doc = status_file.read(state_dir)
    if doc is None:
        return None, f"no agent status file in {state_dir}"
    if not status_file.is_running(doc):
        agent = doc.get("agent", {})
        return None, (f"the agent that wrote {state_dir}/{status_file.FILE_NAME} "
                      f"(pid {agent.get('pid')} on {agent.get('host')}) no longer runs")
    agent = doc["agent"]
    if agent.get("slurm_conf") != effective_conf(slurm_conf):
        return None, f"the running agent manages the cluster of {agent.get('slurm_conf')}"
    if partition is not None and partition != (doc.get("plan") or {}).get("partition", partition):
        return None, f"the running agent manages partition {doc['plan']['partition']}"
    if doc.get("plan") is None:
        return None, "the running agent has not completed a cycle yet"
    return doc, ""


def _local_plan(config, partition, unit, slurm_conf) -> dict:
    """Plan once here, as a freshly started agent would (no previous reservations)."""
    from malleo.plugin.agent.live_plan import LivePlanner
    from malleo.plugin.agent.loop import load_agent_policy
    from malleo.plugin.agent.state import read_snapshot
    from malleo.plugin.agent.status_view import plan_document
    from malleo.plugin.backends import select_backend
    from malleo.plugin.backends.cli import CliBackend
    from malleo.plugin.backends.errors import SlurmConfigError, SlurmUnavailable, config_refusal
    from malleo.policy import Policy

    policy = load_agent_policy(config) if config else Policy()
    if slurm_conf is not None and not os.path.isfile(slurm_conf):
        raise MalleoError(f"--slurm-conf/SLURM_CONF {slurm_conf}: no such file")
    try:
        CliBackend(conf=slurm_conf, timeout=PING_TIMEOUT).ping()
    except SlurmConfigError as exc:
        raise MalleoError(config_refusal(exc, slurm_conf)) from None
    except SlurmUnavailable as exc:
        first = " ".join(str(exc).split())
        raise MalleoError(f"the Slurm controller {_controller(slurm_conf)} does not answer "
                          f"({first}); is SLURM_CONF stale?") from None
    backend = select_backend(slurm_conf)
    try:
        return plan_document(LivePlanner(policy, unit=unit, partition=partition)
                             .plan(read_snapshot(backend, compact=False)))
    except ValueError as exc:
        raise MalleoError(str(exc)) from None


def _controller(conf: str | None) -> str:
    """``host:port (from FILE)`` as a slurm.conf names its controller, for error messages."""
    path = conf or os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    host, port = "?", "6817"
    try:
        for line in open(path, encoding="utf-8", errors="replace"):
            key, _, value = line.split("#")[0].strip().partition("=")
            if key.lower() in ("slurmctldhost", "controlmachine") and host == "?":
                host = value.split("(")[0].strip()
            elif key.lower() == "slurmctldport":
                port = value.strip()
    except OSError:
        pass
    return f"{host}:{port} (from {path})"


def _ago(epoch) -> str:
    if not epoch:
        return "never"
    return f"{squeue_format.utc(epoch)} ({max(time.time() - epoch, 0):.0f} s ago)"


@click.command(short_help="The queue as malleo plans it, like squeue (the running agent's).")
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              envvar="MALLEO_POLICY", show_envvar=True,
              help="Policy file of a local plan (when no agent runs). [default: FCFS + EASY]")
@click.option("--local", is_flag=True,
              help="Plan here even when an agent runs (as a freshly started agent would).")
@click.option("-o", "--format", "fmt", default=None, metavar="FORMAT",
              help="Columns, squeue-style (%.8i %P %j %u %t %l %D %R %Q %S ... and "
                   "%{rank} %{wanted} %{note}); docs/sysadmins.md lists them.")
@click.option("--noheader", "noheader", is_flag=True, help="No header lines (as squeue -h).")
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.option("--priority", "sprio", is_flag=True,
              help="sprio-like: each pending job's multifactor priority factors.")
@STATE_DIR
@click.option("--partition", default=None, metavar="NAME",
              help="Partition of a local plan. [default: the default partition]")
@click.option("--unit", type=click.Choice(("nodes", "cpus")), default="nodes",
              show_default=True, help="Plan units of a local plan.")
@click.option("--slurm-conf", type=click.Path(dir_okay=False), default=None,
              envvar="SLURM_CONF", show_envvar=True, help="slurm.conf of the cluster.")
def status(config, local, fmt, noheader, as_json, sprio, state_dir, partition, unit,
           slurm_conf) -> None:
    """Show every job of the managed partition as the running agent planned it at its last
    cycle: running jobs, then pending jobs in the order malleo wants them (rank 1 first)
    with their Slurm priority, the priority the agent writes, the planned start and a note,
    then the jobs left out of the plan and why.  Times are UTC.

    With no agent running (no live status file in --state-dir), or with --local, plan once
    here with --config's policy and say so.  Exit status 2 when Slurm does not answer
    within a few seconds (a stale SLURM_CONF) or on bad options.
    """
    state_dir = _state_dir(state_dir)
    doc, why = (None, "--local given") if local else _agent_doc(state_dir, slurm_conf, partition)
    if doc is not None:
        plan = doc["plan"]
        source = {"source": "agent", "agent": doc["agent"]}
        agent = doc["agent"]
        banner = (f"agent pid {agent['pid']} on {agent['host']} ({agent['mode']} mode), policy "
                  f"{agent['policy']} from {agent['config']}; last cycle "
                  f"{_ago(agent.get('last_cycle_end'))}")
    else:
        plan = _local_plan(config, partition, unit, slurm_conf)
        source = {"source": "local", "why": why}
        banner = f"local plan ({why}), policy {plan['policy']}"
    if sprio and plan["order"] != "multifactor":
        raise MalleoError(f"--priority: policy {plan['policy']} orders jobs by "
                          f"{plan['order']}; priority factors exist under multifactor only")
    if as_json:
        click.echo(json.dumps({**source, **plan}, indent=2))
        return
    if sprio:
        _print_factors(plan, noheader)
        return
    rows = plan["running"] + plan["pending"] + plan["skipped"]
    if not noheader:
        click.echo(f"{banner}")
        click.echo(f"partition {plan['partition']}: {plan['busy']}/{plan['total']} "
                   f"{plan['unit']} busy, {len(plan['running'])} running, "
                   f"{len(plan['pending'])} pending planned, {len(plan['skipped'])} not "
                   f"planned; now {squeue_format.utc(plan['now'])}")
    for line in squeue_format.render(rows, fmt or squeue_format.DEFAULT_FORMAT,
                                     header=not noheader):
        click.echo(line)


def _print_factors(plan: dict, noheader: bool) -> None:
    if not noheader:
        click.echo(f"{'JOBID':>8} {'PARTITION':>9} {'USER':>8} {'RANK':>4} {'PRIORITY':>10} "
                   f"{'AGE':>10} {'JOBSIZE':>10} {'FAIRSHARE':>10}")
    for row in plan["pending"]:
        f = row.get("factors")
        if f is None:
            continue
        w = f["weighted"]
        click.echo(f"{row['job_id']:>8} {row['partition'][:9]:>9} {row['user'][:8]:>8} "
                   f"{row['rank']:>4} {f['priority']:>10.2f} {w['age']:>10.2f} "
                   f"{w['size']:>10.2f} {w['fairshare']:>10.2f}")


@click.command(short_help="sdiag-like counters of the running agent since it started.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@STATE_DIR
def diag(as_json, state_dir) -> None:
    """Cycles, cycle latency, decisions applied and skipped, errors by kind, stale plans and
    policy reloads since the agent started, read from its status file (exit 2 when no agent
    has written one in --state-dir)."""
    from malleo.plugin.agent import status_file

    state_dir = _state_dir(state_dir)
    doc = status_file.read(state_dir)
    if doc is None:
        raise MalleoError(f"--state-dir {state_dir}: no agent status file "
                          f"({status_file.FILE_NAME}); is `malleo slurm agent` running with "
                          f"this --state-dir?")
    running = status_file.is_running(doc)
    if as_json:
        click.echo(json.dumps({"running": running, "agent": doc["agent"], **doc["diag"]},
                              indent=2))
        return
    a, d = doc["agent"], doc["diag"]
    lat = d["cycle_seconds"]
    state = "running" if running else "NOT running (last status of a stopped agent)"
    lines = [
        "*" * 55,
        f"malleo agent {state}: pid {a['pid']} on {a['host']}, malleo {a['version']}",
        f"Policy in force:      {a['policy']} ({a['config']}), {a['mode']} mode",
        f"Started:              {squeue_format.utc(d['started'])}",
        f"Last cycle:           {_ago(a.get('last_cycle_end'))}",
        f"Status written:       {_ago(a.get('written'))}",
        "",
        f"Cycles:               {d['cycles']} ({d['idle_cycles']} idle)",
        "Cycle errors:         " + ", ".join(f"{k} {v}" for k, v in d["cycle_errors"].items()),
        f"Cycle seconds:        last {lat['last']:.4f}, mean {lat['mean']:.4f}, "
        f"max {lat['max']:.4f}",
        f"Priority writes:      {d['decisions_applied']} applied, skipped " +
        ", ".join(f"{k} {v}" for k, v in d["decisions_skipped"].items()),
        f"Node counts set:      {d['sizes_applied']}",
        f"Stale plans:          {d['stale_plans']}",
        "Policy reloads:       " + ", ".join(f"{k} {v}" for k, v in d["policy_reloads"].items()),
    ]
    for line in lines:
        click.echo(line)
