"""``malleo slurm``: run the policy agent on a live Slurm, show its view, generate load.

Guide: docs/agent.md.  Commands talk to the cluster of ``--slurm-conf`` (default: the
``SLURM_CONF`` environment variable, else Slurm's own default) through ``select_backend()``.
``status`` and ``diag`` are in :mod:`malleo.plugin.cli.status`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from malleo.emulator.cli._options import _check_slice
from malleo.plugin.cli.status import STATE_DIR, diag, status

_CONF = click.option("--slurm-conf", type=click.Path(dir_okay=False), default=None,
                     envvar="SLURM_CONF", show_envvar=True,
                     help="slurm.conf of the cluster. [default: Slurm's]")
_PARTITION = click.option("--partition", default=None, metavar="NAME",
                          help="Partition to manage. [default: the default partition]")
_LOG_FORMAT = click.option("--log-format", type=click.Choice(("json", "text")), default="text",
                           show_default=True, envvar="MALLEO_LOG_FORMAT", show_envvar=True,
                           help="Log lines on stderr (UTC times): JSON objects or text.")
_LOG_LEVEL = click.option("--log-level", type=click.Choice(("debug", "info", "warning", "error")),
                          default="info", show_default=True, envvar="MALLEO_LOG_LEVEL",
                          show_envvar=True,
                          help="Least severe log lines shown (debug: also idle cycles).")
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
              metavar="PORT", help="Serve Prometheus metrics on http://ADDRESS:PORT/metrics.")
@click.option("--metrics-address", default="0.0.0.0", show_default=True, metavar="ADDRESS",
              envvar="MALLEO_METRICS_ADDRESS", show_envvar=True,
              help="Address the metrics server binds (127.0.0.1: this host only; :: for IPv6).")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0 done, 1 Slurm failed).")
@click.option("--stop-grace", type=click.FloatRange(min=0), default=5.0, show_default=True,
              metavar="SECONDS",
              help="On SIGTERM/SIGINT, wait this long for the cycle in flight (a Slurm call "
                   "that does not return), then exit without it.")
@STATE_DIR
@_LOG_FORMAT
@_LOG_LEVEL
@click.option("--backend", type=click.Choice(("auto", "cli", "libslurm", "pyslurm")), default=None,
              envvar="MALLEO_SLURM_BACKEND", show_envvar=True,
              help="Slurm backend. [default: auto]")
@click.option("--reconfig-socket", default=None, type=click.Path(dir_okay=False),
              envvar="MALLEO_RECONFIG_SOCKET", show_envvar=True,
              help="Also serve malleable jobs' expand/shrink questions on this Unix socket, "
                   "decided with the agent's policy (docs/malleable.md).")
@_PARTITION
@_UNIT
@_CONF
def agent(config, period, poll, dry_run, metrics_port, metrics_address, once, stop_grace,
          state_dir, log_format, log_level, backend, partition, unit, slurm_conf,
          reconfig_socket) -> None:
    """Run the malleo policy agent.

    Each cycle reads the queue and the nodes, runs the core's plan with the policy of
    --config, and writes job priorities so that the jobs the plan starts now rank highest
    and the others follow the planned order; Slurm's scheduler does the starting.

    Exit status: 0 after SIGTERM/SIGINT (the current cycle is finished first, or left
    after --stop-grace seconds) or a completed --once; 1 when --once could not reach
    Slurm; 2 bad configuration.
    """
    from malleo.plugin.agent import status_file
    from malleo.plugin.agent.logs import configure
    from malleo.plugin.agent.loop import Agent
    from malleo.plugin.agent.metrics_http import Metrics, serve
    from malleo.plugin.backends import select_backend

    if reconfig_socket is not None:
        from malleo.emulator.outputs import check_socket_path

        check_socket_path(reconfig_socket, "--reconfig-socket")
    if slurm_conf is not None and not Path(slurm_conf).is_file():
        from malleo.errors import MalleoError

        raise MalleoError(f"--slurm-conf/SLURM_CONF {slurm_conf}: no such file")
    state_dir = status_file.default_dir() if state_dir is None else Path(state_dir)
    try:
        status_file.private_dir(state_dir)          # checked before the first cycle
    except OSError as exc:
        from malleo.errors import MalleoError

        raise MalleoError(f"--state-dir {state_dir}: {getattr(exc, 'strerror', None) or exc}"
                          ) from None
    configure(log_format, log_level)
    metrics = Metrics()
    the_agent = Agent(_backend_or_refuse(slurm_conf, backend), config, period=period, poll=poll,
                      dry_run=dry_run, unit=unit, partition=partition, metrics=metrics,
                      state_dir=state_dir, stop_grace=stop_grace)
    server = None
    if metrics_port is not None:
        try:
            server = serve(metrics, metrics_port, host=metrics_address)
        except (OSError, OverflowError) as exc:
            from malleo.errors import MalleoError

            raise MalleoError(f"--metrics-address {metrics_address} --metrics-port "
                              f"{metrics_port}: {getattr(exc, 'strerror', None) or exc}") from None
        import logging

        from malleo.plugin.agent.logs import LOGGER_NAME, event

        event(logging.getLogger(LOGGER_NAME), logging.INFO, "metrics_serving",
              address=metrics_address, port=server.server_address[1], path="/metrics")
    endpoint = None
    if reconfig_socket is not None:
        from malleo.plugin.backends.cli import CliBackend
        from malleo.plugin.reconfig.server import Endpoint

        from malleo.plugin.reconfig.decide import decide

        def agent_decide(backend, job_id, bounds, nodes, policy):
            # the agent's own planner: the answer carries its estimates, history, reservations
            return decide(backend, job_id, bounds, nodes, policy, planner=the_agent.planner)

        try:
            endpoint = Endpoint(reconfig_socket, CliBackend(conf=slurm_conf),
                                policy=lambda: the_agent.policy, decide=agent_decide).start()
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


def _backend_or_refuse(slurm_conf, kind):
    """``select_backend``, with a slurm.conf Slurm cannot parse refused as bad input (exit 2,
    the file and Slurm's first complaint) rather than Slurm's error lines (exit 1)."""
    from malleo.plugin.backends import select_backend
    from malleo.plugin.backends.errors import SlurmConfigError, config_refusal

    try:
        return select_backend(slurm_conf, kind)
    except SlurmConfigError as exc:
        from malleo.errors import MalleoError

        raise MalleoError(config_refusal(exc, slurm_conf)) from None


slurm.add_command(status)
slurm.add_command(diag)


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
@click.option("--quiet", "-q", is_flag=True,
              help="No progress bar and no summary on stderr (the bar shows only on a terminal).")
@_PARTITION
@_CONF
def replay(trace, time_scale, nodes, jobs, procs, output, timeout, config, dry_run, quiet,
           partition, slurm_conf) -> None:
    """Submit TRACE (SWF, optionally gzipped; default: the embedded workload model) to Slurm
    as `sleep` jobs, with submit times, runtimes and time limits divided by S and sizes
    mapped to whole nodes; wait for every job and write the observed submit, start and end
    times as CSV.

    On a terminal a progress bar shows the jobs submitted, then finished; at the end a
    summary (states, waits, makespan, and with --config how Slurm's order differed from the
    emulator's) goes to stderr, and with --config the difference as JSON to stdout."""
    import numpy as np

    from malleo.emulator.driver import load_workload
    from malleo.emulator.outputs import check_outputs
    from malleo.errors import MalleoError
    from malleo.plugin import slurm_replay as load

    if not dry_run:
        check_outputs(files={"--output": output})
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

    from malleo.emulator.cli._progress import Bar

    backend = select_backend(slurm_conf)
    if not quiet:
        click.echo(f"submitting {len(scaled)} jobs over {int(scaled['submit'].iloc[-1])} s "
                   f"onto {nodes} nodes", err=True)
    total = len(scaled)
    submitted = Bar(total, "jobs submitted", enabled=not quiet)
    finished = Bar(total, "jobs finished", enabled=not quiet)
    try:
        observed = load.replay_on_slurm(
            backend, scaled, output, partition=partition, timeout=timeout,
            on_submit=lambda k, _job_id: submitted.update(k + 1, force=k + 1 == total),
            on_poll=lambda done, running, _total: finished.update(
                done, f"running {running}, waiting {total - done - running}"))
    finally:
        finished.close()
    diff = None
    if config:
        from malleo.plugin.agent.loop import load_agent_policy

        expected = load.expected_schedule(scaled, load_agent_policy(config), nodes)
        diff = load.compare_with_emulator(observed, expected)
    if not quiet:
        click.echo(replay_summary(observed, output, diff), err=True)
    if diff is not None:
        click.echo(json.dumps(diff))


def replay_summary(observed, output: str, diff: dict | None) -> str:
    """The end summary of ``malleo slurm replay``: what Slurm did with the jobs (seconds of
    the scaled time), and with ``diff`` how its order differed from the emulator's."""
    states = observed["state"].value_counts()
    started = observed[observed["start"] >= 0]
    lines = [f"wrote {output}: {int(states.get('COMPLETED', 0))} of {len(observed)} jobs "
             "completed" + "".join(f", {n} {state.lower()}" for state, n in states.items()
                                   if state != "COMPLETED")]
    if len(started):
        waits = started["wait"][started["wait"] >= 0]
        span = int(observed["end"].max() - observed["submit"][observed["submit"] >= 0].min())
        lines.append(f"  wait mean {waits.mean():.1f} s, max {int(waits.max())} s; "
                     f"makespan {span} s (scaled time)")
    if diff is not None:
        lines.append(f"  against the emulator: {len(diff['inversions'])} start-order "
                     f"inversion(s); backfilled {len(diff['backfilled_observed'])} by Slurm, "
                     f"{len(diff['backfilled_expected'])} planned; "
                     f"{len(diff['not_started'])} never started")
    return "\n".join(lines)


@slurm.command(short_help="Serve malleable jobs' expand/shrink questions on a Unix socket.")
@click.option("--socket", "socket_path", default="/run/malleo/reconfig.sock", show_default=True,
              envvar="MALLEO_RECONFIG_SOCKET", show_envvar=True, type=click.Path(dir_okay=False),
              help="Socket the jobs connect to (their MALLEO_RECONFIG_SOCKET).")
@click.option("--config", default=None, type=click.Path(dir_okay=False, exists=True),
              envvar="MALLEO_POLICY", show_envvar=True,
              help="Policy file (queue order of the waiting jobs). [default: the default policy]")
@_LOG_FORMAT
@_LOG_LEVEL
@_CONF
def reconfig(socket_path, config, log_format, log_level, slurm_conf) -> None:
    """Run the reconfiguration endpoint for malleable jobs (guide: docs/malleable.md).

    Callers are authenticated by SO_PEERCRED and must own the job (or be root); the answer
    is expand, shrink or none from the DMR rule on the live queue. Stops on SIGINT/SIGTERM.
    """
    from malleo.emulator.outputs import check_socket_path
    from malleo.plugin.agent.logs import configure
    from malleo.plugin.reconfig.serve import serve_forever

    check_socket_path(socket_path, "--socket")
    configure(log_format, log_level)
    policy = None
    if config:
        from malleo.plugin.agent.loop import load_agent_policy
        policy = load_agent_policy(config)
    serve_forever(socket_path, slurm_conf=slurm_conf, policy=policy)


def _register() -> None:
    from malleo.emulator.cli.slurm_validate import validate

    slurm.add_command(validate)


_register()
