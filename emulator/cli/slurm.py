"""``malleo slurm``: run the policy agent on a live Slurm, show its view, generate load.

Guide: docs/agent.md.  Commands talk to the cluster of ``--slurm-conf`` (default: the
``SLURM_CONF`` environment variable, else Slurm's own default) through ``select_backend()``.
"""
from __future__ import annotations

import json
import sys
import time

import click

from malleo.emulator.cli._options import _check_slice

_CONF = click.option("--slurm-conf", type=click.Path(dir_okay=False), default=None,
                     envvar="SLURM_CONF", show_envvar=True,
                     help="slurm.conf of the cluster. [default: Slurm's]")
_PARTITION = click.option("--partition", default=None, metavar="NAME",
                          help="Partition to manage. [default: the default partition]")
_UNIT = click.option("--unit", type=click.Choice(("nodes", "cpus")), default="nodes",
                     show_default=True,
                     help="Plan in whole nodes (node-exclusive partitions) or in CPUs.")


@click.group(short_help="Run malleo as the scheduling policy of a live Slurm cluster.")
def slurm() -> None:
    """Run malleo's scheduling core on a live Slurm cluster (guide: docs/agent.md)."""


@slurm.command(short_help="The policy agent: plan every cycle, steer Slurm by priorities.")
@click.option("--config", required=True, type=click.Path(dir_okay=False),
              envvar="MALLEO_POLICY", show_envvar=True,
              help="Policy file (TOML, docs/policy-file.md); SIGHUP reloads it.")
@click.option("--period", type=click.FloatRange(min=0, min_open=True), default=5.0,
              show_default=True, metavar="SECONDS", help="Seconds between full cycles.")
@click.option("--poll", type=click.FloatRange(min=0), default=0.5, show_default=True,
              metavar="SECONDS",
              help="Between cycles, check the queue this often and run a cycle as soon as "
                   "a job arrives, starts or ends (0: period only).")
@click.option("--dry-run", is_flag=True,
              help="Shadow mode: plan and log what would be written, apply nothing, and "
                   "report how Slurm's start order differs from the plan.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), default=None,
              metavar="PORT", help="Serve Prometheus metrics on http://0.0.0.0:PORT/metrics.")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0 done, 1 Slurm failed).")
@click.option("--log-format", type=click.Choice(("json", "text")), default="text",
              show_default=True, help="Log lines on stderr: JSON objects or text.")
@click.option("--backend", type=click.Choice(("auto", "cli", "pyslurm")), default=None,
              envvar="MALLEO_SLURM_BACKEND", show_envvar=True,
              help="Slurm backend. [default: auto]")
@click.option("--reconfig-socket", default=None, type=click.Path(dir_okay=False),
              envvar="MALLEO_RECONFIG_SOCKET", show_envvar=True,
              help="Also serve malleable jobs' expand/shrink questions on this Unix socket, "
                   "decided with the agent's policy (docs/malleable.md).")
@_PARTITION
@_UNIT
@_CONF
def agent(config, period, poll, dry_run, metrics_port, once, log_format, backend, partition,
          unit, slurm_conf, reconfig_socket) -> None:
    """Run the malleo policy agent.

    Each cycle reads the queue and the nodes, runs the core's plan with the policy of
    --config, and writes job priorities so that the jobs the plan starts now rank highest
    and the others follow the planned order; Slurm's scheduler does the starting.

    Exit status: 0 after SIGTERM/SIGINT (the current cycle is finished first) or a
    completed --once; 1 when --once could not reach Slurm; 2 bad configuration.
    """
    from malleo.plugin.agent.logs import configure
    from malleo.plugin.agent.loop import Agent
    from malleo.plugin.agent.metrics_http import Metrics, serve
    from malleo.plugin.backends import select_backend

    configure(log_format)
    metrics = Metrics()
    the_agent = Agent(select_backend(slurm_conf, backend), config, period=period, poll=poll,
                      dry_run=dry_run, unit=unit, partition=partition, metrics=metrics)
    server = None
    if metrics_port is not None:
        try:
            server = serve(metrics, metrics_port)
        except OSError as exc:
            from malleo.errors import MalleoError

            raise MalleoError(f"--metrics-port {metrics_port}: {exc.strerror or exc}") from None
        import logging

        from malleo.plugin.agent.logs import LOGGER_NAME, event

        event(logging.getLogger(LOGGER_NAME), logging.INFO, "metrics_serving",
              port=server.server_address[1], path="/metrics")
    endpoint = None
    if reconfig_socket is not None:
        from malleo.plugin.backends.cli import CliBackend
        from malleo.plugin.reconfig.server import Endpoint

        try:
            endpoint = Endpoint(reconfig_socket, CliBackend(conf=slurm_conf),
                                policy=lambda: the_agent.policy).start()
        except OSError as exc:
            from malleo.errors import MalleoError

            raise MalleoError(f"--reconfig-socket {reconfig_socket}: {exc.strerror or exc}") from None
    try:
        code = the_agent.run(once=once)
    finally:
        if server is not None:
            server.shutdown()
        if endpoint is not None:
            endpoint.stop()
    sys.exit(code)


def _iso(epoch: int | None) -> str:
    if epoch is None or epoch < 0:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))


@slurm.command(short_help="The queue as malleo sees it: priorities, planned starts.")
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              envvar="MALLEO_POLICY", show_envvar=True,
              help="Policy file. [default: FCFS with EASY backfill]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_PARTITION
@_UNIT
@_CONF
def status(config, as_json, partition, unit, slurm_conf) -> None:
    """Plan once on the live state (applying nothing) and show every job of the partition:
    running jobs, then pending jobs in the order malleo wants them, with their current
    and wanted Slurm priority and their planned start ("now", a reservation, or "-")."""
    from malleo._core import plan
    from malleo.plugin.agent.apply import assign_priorities, wanted_order
    from malleo.plugin.agent.loop import load_agent_policy
    from malleo.plugin.agent.state import plan_inputs, read_snapshot
    from malleo.plugin.backends import select_backend
    from malleo.policy import Policy

    policy = load_agent_policy(config) if config else Policy()
    backend = select_backend(slurm_conf)
    snapshot = read_snapshot(backend)
    try:
        inputs = plan_inputs(snapshot, unit=unit, partition=partition, estimate=policy.estimate)
    except ValueError as exc:
        from malleo.errors import MalleoError

        raise MalleoError(str(exc)) from None
    jobs = {j.job_id: j for j in snapshot.jobs}
    pending_rows, order, starts = [], [], set()
    if inputs.total >= 1 and len(inputs.pending_ids):
        decisions = plan(inputs.now, inputs.total, inputs.running, inputs.pending, policy)
        order = wanted_order(decisions, inputs.pending_ids)
        starts = {int(inputs.pending_ids[i]) for i in decisions.start}
        index = {int(j): k for k, j in enumerate(inputs.pending_ids.tolist())}
        current = dict(zip(inputs.pending_ids.tolist(), inputs.pending_priority.tolist()))
        writes = assign_priorities(order, current)
        for rank, job_id in enumerate(order):
            k = index[job_id]
            resv = int(decisions.reservation[k])
            pending_rows.append({
                "job_id": job_id, "user": jobs[job_id].user, "size": int(inputs.pending["procs"][k]),
                "limit": int(inputs.pending["request"][k]), "state": "PENDING", "rank": rank,
                "priority": int(current[job_id]), "wanted_priority": writes.get(job_id, current[job_id]),
                "planned_start": inputs.now if job_id in starts else (resv if resv >= 0 else None),
                "starts_now": job_id in starts, "backfilled": bool(decisions.backfilled[k])})
    running_rows = [{"job_id": int(j), "user": jobs[int(j)].user,
                     "size": int(inputs.running["procs"][k]),
                     "start": int(inputs.running["start"][k]),
                     "expected_end": int(inputs.running["start"][k] + inputs.running["est"][k])}
                    for k, j in enumerate(inputs.running_ids.tolist())]
    doc = {"now": inputs.now, "policy": policy.describe(), "partition": inputs.partition,
           "unit": unit, "total": inputs.total, "busy": inputs.busy, "running": running_rows,
           "pending": pending_rows,
           "skipped": [{"job_id": j, "why": why} for j, why in sorted(inputs.skipped.items())]}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"partition {inputs.partition}: {inputs.busy}/{inputs.total} {unit} busy, "
               f"{len(running_rows)} running, {len(pending_rows)} pending planned, "
               f"{len(doc['skipped'])} not planned; policy {policy.describe()}; "
               f"now {_iso(inputs.now)}")
    click.echo(f"{'JOBID':>8} {'USER':<10} {'SIZE':>5} {'STATE':<8} {'PRIORITY':>11} "
               f"{'WANTED':>11} {'PLANNED START':<20} NOTE")
    for row in running_rows:
        click.echo(f"{row['job_id']:>8} {row['user'][:10]:<10} {row['size']:>5} {'RUNNING':<8} "
                   f"{'':>11} {'':>11} {_iso(row['start']):<20} "
                   f"expected end {_iso(row['expected_end'])}")
    for row in pending_rows:
        note = "starts now" + (" (backfill)" if row["backfilled"] else "") if row["starts_now"] \
            else ("reservation" if row["planned_start"] is not None else "")
        wanted = "" if row["wanted_priority"] == row["priority"] else str(row["wanted_priority"])
        click.echo(f"{row['job_id']:>8} {row['user'][:10]:<10} {row['size']:>5} {'PENDING':<8} "
                   f"{row['priority']:>11} {wanted:>11} {_iso(row['planned_start']):<20} {note}")
    for row in doc["skipped"]:
        click.echo(f"{row['job_id']:>8} {jobs[row['job_id']].user[:10]:<10} {'':>5} "
                   f"{'PENDING':<8} {jobs[row['job_id']].priority:>11} {'':>11} {'-':<20} "
                   f"not planned: {row['why']}")


@slurm.command(short_help="Submit a trace to a real Slurm as sleep jobs (load generator).")
@click.argument("trace", required=False, type=click.Path(dir_okay=False))
@click.option("--time-scale", type=click.FloatRange(min=0, min_open=True), required=True,
              metavar="S", help="Divide submit times, runtimes and time limits by S.")
@click.option("--nodes", type=click.IntRange(min=1), required=True, metavar="N",
              help="Nodes of the target cluster: job sizes are mapped onto them.")
@click.option("--jobs", "jobs", default=None, metavar="START:COUNT", callback=_check_slice,
              help="Submit only COUNT jobs from position START (0-based, submit order).")
@click.option("--procs", type=click.IntRange(min=1), default=None,
              help="Processors of the trace's machine. [default: the trace header's]")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="replay-observed.csv",
              show_default=True, metavar="CSV", help="Where to write the observed schedule.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Give up waiting after this long (exit 2).")
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              help="Also replay the scaled workload in the emulator under this policy and "
                   "report how Slurm's order and backfilled jobs differ from it.")
@click.option("--dry-run", is_flag=True, help="Print the scaled workload as CSV; submit nothing.")
@_PARTITION
@_CONF
def replay(trace, time_scale, nodes, jobs, procs, output, timeout, config, dry_run, partition,
           slurm_conf) -> None:
    """Submit TRACE (SWF, optionally gzipped; default: the embedded workload model) to Slurm
    as `sleep` jobs, with submit times, runtimes and time limits divided by S and sizes
    mapped to whole nodes; wait for every job and write the observed submit, start and end
    times as CSV."""
    import numpy as np

    from malleo.emulator.driver import load_workload
    from malleo.errors import MalleoError
    from malleo.plugin.agent import load

    workload = load_workload(trace, procs=procs)
    table = workload.table
    table = table.iloc[np.lexsort((table["job_number"].to_numpy(),
                                   table["submit_time"].to_numpy()))]
    if jobs is not None:
        start, count = jobs
        if start >= len(table):
            raise MalleoError(f"--jobs: START {start} is past the last job ({len(table)} jobs)")
        table = table.iloc[start:start + count]
    machine = procs or workload.procs
    if not machine:
        raise MalleoError("--procs: the trace header does not give the machine size")
    scaled = load.scale_workload(table, time_scale=time_scale, nodes=nodes, procs=machine)
    if dry_run:
        click.echo(scaled.to_csv(index=False), nl=False)
        return
    from malleo.plugin.backends import select_backend

    backend = select_backend(slurm_conf)
    click.echo(f"submitting {len(scaled)} jobs over {int(scaled['submit'].iloc[-1])} s "
               f"onto {nodes} nodes", err=True)
    observed = load.replay_on_slurm(backend, scaled, output, partition=partition,
                                    timeout=timeout)
    done = int((observed["state"] == "COMPLETED").sum())
    click.echo(f"wrote {output}: {done} of {len(observed)} jobs completed", err=True)
    if config:
        from malleo.plugin.agent.loop import load_agent_policy

        expected = load.expected_schedule(scaled, load_agent_policy(config), nodes)
        diff = load.compare_with_emulator(observed, expected)
        click.echo(json.dumps(diff))


@slurm.command(short_help="Serve malleable jobs' expand/shrink questions on a Unix socket.")
@click.option("--socket", "socket_path", default="/run/malleo/reconfig.sock", show_default=True,
              envvar="MALLEO_RECONFIG_SOCKET", show_envvar=True, type=click.Path(dir_okay=False),
              help="Socket the jobs connect to (their MALLEO_RECONFIG_SOCKET).")
@click.option("--config", default=None, type=click.Path(dir_okay=False, exists=True),
              envvar="MALLEO_POLICY", show_envvar=True,
              help="Policy file (queue order of the waiting jobs). [default: the default policy]")
@_CONF
def reconfig(socket_path, config, slurm_conf) -> None:
    """Run the reconfiguration endpoint for malleable jobs (guide: docs/malleable.md).

    Callers are authenticated by SO_PEERCRED and must own the job (or be root); the answer
    is expand, shrink or none from the DMR rule on the live queue. Stops on SIGINT/SIGTERM.
    """
    from malleo.plugin.reconfig.serve import serve_forever

    policy = None
    if config:
        from malleo.plugin.agent.loop import load_agent_policy
        policy = load_agent_policy(config)
    serve_forever(socket_path, slurm_conf=slurm_conf, policy=policy)


def _register() -> None:
    from malleo.emulator.cli.slurm_validate import validate

    slurm.add_command(validate)


_register()
