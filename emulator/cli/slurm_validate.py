"""``malleo slurm validate``: measure how closely the emulator predicts Slurm's own scheduler.

On a test cluster running sched/backfill and priority/multifactor (or basic) with no malleo
agent: import the cluster's policy (``malleo policy from-slurm``), submit a workload (``malleo
slurm replay``'s submitter), read what happened from ``sacct`` and convert it as ``malleo
trace from-sacct`` does, replay the submitted workload in the emulator with the imported
policy, and report the agreement (figures: :mod:`malleo.emulator.twin`; rules and results:
docs/scheduling-semantics.md).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import click

SACCT_FORMAT_EXTRA = "Flags"
"""Added to ``sacct``'s RECOMMENDED_FORMAT: ``SchedBackfill`` marks jobs the backfill pass started."""


@click.command("validate", short_help="Measure the emulator against Slurm's own scheduler.")
@click.option("--jobs", "n_jobs", type=click.IntRange(min=2), default=300, show_default=True,
              help="Jobs of the built-in workload.")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed of the built-in workload. [default: the validated one]")
@click.option("--span", type=click.IntRange(min=1), default=120, show_default=True,
              metavar="SECONDS", help="Seconds over which the built-in workload arrives.")
@click.option("--config", "policy_path", type=click.Path(dir_okay=False, exists=True),
              default=None,
              help="Policy to emulate. [default: imported from the cluster, as "
                   "'malleo policy from-slurm' does]")
@click.option("-o", "--output-dir", type=click.Path(file_okay=False), default="malleo-validate",
              show_default=True, help="Where the report, plot, workload and sacct output go.")
@click.option("--force", is_flag=True, help="Write into --output-dir even if it is not empty.")
@click.option("--reuse", is_flag=True,
              help="Submit nothing: re-analyse the workload.csv and sacct.txt of --output-dir "
                   "(after a model change).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=1800,
              show_default=True, metavar="SECONDS", help="Give up waiting for the jobs.")
@click.option("--json", "is_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--partition", default=None, metavar="NAME",
              help="Partition to submit to. [default: the default partition]")
@click.option("--slurm-conf", type=click.Path(dir_okay=False), default=None, envvar="SLURM_CONF",
              show_envvar=True, help="slurm.conf of the cluster. [default: Slurm's]")
def validate(n_jobs, seed, span, policy_path, output_dir, force, reuse, timeout, is_json,
             partition, slurm_conf) -> None:
    """Submit a built-in backfill-heavy workload to the running cluster, collect what Slurm's
    own scheduler did from sacct, replay the same workload in the emulator with the policy
    imported from the cluster, and report how closely they agree: the share of jobs started
    in the same order (same_order_share), the jobs backfilled in both, the mean and p95
    |start difference| in scheduler cycles, and the first differing decision.

    The cluster must run no malleo agent and no other jobs, and keep accounting (sacct with
    slurmdbd: local-slurm.sh up --accounting).  Writes report.md, comparison.png, jobs.csv,
    workload.csv, sacct.txt and slurm.swf into --output-dir.
    """
    import pandas as pd

    from malleo.emulator import slurm_config as sc
    from malleo.emulator import twin
    from malleo.errors import MalleoError

    out = Path(output_dir)
    if reuse:
        for name in ("workload.csv", "sacct.txt", "submitted.csv", "cluster.json"):
            if not (out / name).is_file():
                raise MalleoError(f"--reuse: {out / name} not found (run without --reuse first)")
    elif out.exists() and any(out.iterdir()) and not force:
        raise click.BadParameter(f"{output_dir} is not empty (use --force)",
                                 param_hint="'-o' / '--output-dir'")
    env = dict(os.environ)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    live = sc.live_inputs(slurm_conf) if not reuse else None
    if reuse:
        facts = json.loads((out / "cluster.json").read_text())
    else:
        config = live["config"]
        boot = config.get("BOOT_TIME")
        log_file = config.get("SlurmctldLogFile")
        flags = config.get("DebugFlags")
        facts = {"nodes": live["nodes"],
                 "log_file": log_file.value if log_file and log_file.value != "(null)" else None,
                 "debug_flags": flags.value if flags else "",
                 "boot_time": _epoch(boot.value) if boot else None,
                 "bf_interval": _bf_interval(config),
                 "sched_interval": _bf_interval(config, "sched_interval", 60),
                 "debug_level": (config.get("SlurmctldDebug").value
                                 if config.get("SlurmctldDebug") else "info"),
                 "scheduler": (config.get("SchedulerType").value
                               if config.get("SchedulerType") else "sched/backfill"),
                 "priority": (config.get("PriorityType").value
                              if config.get("PriorityType") else "priority/basic")}
        imported = sc.import_policy(**{k: v for k, v in live.items()})
        out.mkdir(parents=True, exist_ok=True)
        from malleo.emulator.cli.policy_slurm import render

        (out / "imported-policy.toml").write_text(render(imported, "the live cluster"))
        (out / "cluster.json").write_text(json.dumps(facts))
    if policy_path:
        from malleo.policy_file import load_policy

        policy = load_policy(policy_path)
    else:
        from malleo.policy_file import load_policy

        policy = load_policy(out / "imported-policy.toml")
    nodes = int(facts["nodes"])
    if nodes < 1:
        raise MalleoError("the cluster reports no nodes (sinfo)")
    if reuse:
        scaled = pd.read_csv(out / "workload.csv")
        submitted = pd.read_csv(out / "submitted.csv")
    else:
        scaled = twin.twin_workload(twin.SEED if seed is None else seed, n_jobs, nodes,
                                    span=span)
        scaled.to_csv(out / "workload.csv", index=False)
        switched = _backfill_flag(facts, env, on=True)
        try:
            submitted = _submit(scaled, out, partition, slurm_conf, timeout)
        finally:
            if switched:
                _backfill_flag(facts, env, on=False)
        _sacct(submitted["job_id"].tolist(), out / "sacct.txt", env)
        _log_excerpt(facts.get("log_file"), submitted["job_id"].tolist(),
                     out / "controller.log")
    observed = _observed(out, scaled, submitted)
    figures, table = _measure(observed, policy, nodes, {**facts, "output_dir": str(out)})
    table.to_csv(out / "jobs.csv", index=False)
    _plot(table, out / "comparison.png", figures)
    (out / "report.md").write_text(_report(figures, policy, facts), encoding="utf-8")
    (out / "figures.json").write_text(json.dumps(figures, indent=2))
    if is_json:
        click.echo(json.dumps(figures, indent=2))
    else:
        click.echo(_summary(figures))
        click.echo(f"wrote {out / 'report.md'} and {out / 'comparison.png'}", err=True)


def _epoch(text: str) -> int | None:
    """Epoch seconds of scontrol's local ``YYYY-MM-DDTHH:MM:SS``."""
    import time

    try:
        return int(time.mktime(time.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def _backfill_flag(facts: dict, env: dict, *, on: bool) -> bool:
    """Switch DebugFlags=Backfill and SlurmctldDebug=debug on (or back) so the controller log
    shows each backfill and main-scheduler pass; True if it changed something.  Needs an administrator; failing is not fatal (the
    replay then falls back to the cycle's phase)."""
    changed = False
    if "backfill" not in (facts.get("debug_flags") or "").lower().split(","):
        proc = subprocess.run(["scontrol", "setdebugflags", ("+" if on else "-") + "backfill"],
                              capture_output=True, text=True, timeout=60, env=env)
        changed = proc.returncode == 0
    level = (facts.get("debug_level") or "info").strip()
    if level in ("quiet", "fatal", "error", "info", "verbose"):
        # debug level logs each main-scheduler pass ("Running job scheduler")
        proc = subprocess.run(["scontrol", "setdebug", "debug" if on else level],
                              capture_output=True, text=True, timeout=60, env=env)
        changed = changed or proc.returncode == 0
    return changed


def _bf_interval(config, key: str = "bf_interval", default: int = 30) -> int:
    """A whole-seconds SchedulerParameters value (Slurm's default when unset)."""
    params = config.get("SchedulerParameters")
    if params is not None:
        for item in params.value.split(","):
            name, _, value = item.partition("=")
            if name.strip() == key and value.strip().isdigit():
                return max(int(value), 1)
    return default


def _submit(scaled, out: Path, partition, slurm_conf, timeout):
    """Submit with ``malleo slurm replay``'s submitter; the observed CSV and the id map."""
    from malleo.plugin import slurm_replay as load
    from malleo.plugin.backends import select_backend

    backend = select_backend(slurm_conf)
    busy = [j for j in backend.all_jobs() if not j.is_finished]
    if busy:
        from malleo.errors import MalleoError

        raise MalleoError(f"the cluster is not idle: {len(busy)} jobs queued or running "
                          f"(first: {busy[0].job_id}); validate needs it to itself")
    click.echo(f"submitting {len(scaled)} jobs over {int(scaled['submit'].max())} s "
               f"(largest {int(scaled['nodes'].max())} nodes)", err=True)
    workdir = out.resolve()
    observed = load.replay_on_slurm(backend, scaled, out / "replay-observed.csv",
                                    partition=partition, timeout=timeout, workdir=str(workdir))
    submitted = observed[["job_number", "job_id"]]
    submitted.to_csv(out / "submitted.csv", index=False)
    return submitted


_LOG_KEYS = ("_slurm_rpc_submit_batch_job", "Started JobId", "sched: Allocate JobId",
             "_job_complete")


def _log_excerpt(log_file: str | None, job_ids: list[int], path: Path) -> None:
    """Copy the controller log's lines the replay reads (passes, these jobs' submits,
    starts and ends) into the output directory, so ``--reuse`` needs no live log."""
    import re

    if not log_file:
        return
    wanted = {str(j) for j in job_ids}
    job = re.compile(r"JobId=(\d+)")
    try:
        with open(log_file, encoding="utf-8", errors="replace") as src, \
                open(path, "w", encoding="utf-8") as dst:
            for line in src:
                if ("_attempt_backfill: beginning" in line or "jobs to backfill" in line
                        or "Running job scheduler" in line):
                    dst.write(line)
                    continue
                m = job.search(line)
                if m and m.group(1) in wanted and any(key in line for key in _LOG_KEYS):
                    dst.write(line)
    except OSError:
        path.unlink(missing_ok=True)


def _sacct(job_ids: list[int], path: Path, env: dict) -> None:
    """What Slurm recorded, as ``sacct --parsable2`` with the converter's fields (UTC)."""
    from malleo.emulator.sacct import RECOMMENDED_FORMAT
    from malleo.errors import MalleoError

    argv = ["sacct", "-X", "--parsable2", "-j", ",".join(str(j) for j in job_ids),
            f"--format={RECOMMENDED_FORMAT},{SACCT_FORMAT_EXTRA}"]
    import time

    for attempt in range(20):            # slurmdbd receives job ends asynchronously
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              env=dict(env, TZ="UTC"))
        if proc.returncode != 0:
            raise MalleoError(f"sacct failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}"
                              " (validate needs accounting: local-slurm.sh up --accounting)")
        rows = proc.stdout.splitlines()[1:]
        done = sum(1 for row in rows if "|COMPLETED|" in row)
        if done >= len(job_ids):
            break
        time.sleep(1)
    path.write_text(proc.stdout)


def _observed(out: Path, scaled, submitted):
    """sacct.txt -> per workload job: submit, start, end (epoch), limit, nodes, the
    backfill flag; through ``malleo trace from-sacct``'s converter (slurm.swf)."""
    import numpy as np
    import pandas as pd

    from malleo.emulator.sacct import read_sacct, to_swf
    from malleo.emulator.swf import write_swf
    from malleo.emulator.swf_header import TraceMeta
    from malleo.errors import MalleoError

    jobs, _steps = read_sacct(out / "sacct.txt", "parsable", tz="UTC")
    table, origin, report = to_swf(jobs, node_cpus=1)
    write_swf(out / "slurm.swf", table, TraceMeta(
        version="2.2", installation="malleo slurm validate (malleo trace from-sacct's "
                                    "converter; processors = nodes)", unix_start_time=origin))
    ids = [int(str(j).split("_")[0]) for j in report.job_ids]
    swf = pd.DataFrame({
        "job_id": ids,
        "submit": table["submit_time"].to_numpy() + origin,
        "start": np.where(table["wait_time"] >= 0,
                          table["submit_time"] + table["wait_time"] + origin, -1),
        "elapsed": table["run_time"].to_numpy(),
        "sacct_nodes": table["allocated_procs"].to_numpy()})
    swf["end"] = np.where(swf["start"] >= 0, swf["start"] + swf["elapsed"], -1)
    flags = _flags(out / "sacct.txt")
    swf["slurm_backfilled"] = [flags.get(j) for j in swf["job_id"]]
    merged = submitted.merge(scaled.drop(columns=["submit"]), on="job_number").merge(
        swf, on="job_id", how="left")
    missing = merged[merged["start"].isna() | (merged["start"] < 0)]
    if len(missing):
        raise MalleoError(f"sacct has no start for {len(missing)} of {len(merged)} jobs "
                          f"(first: Slurm job {int(missing['job_id'].iloc[0])})")
    for name in ("submit", "start", "end"):
        merged[name] = merged[name].astype(np.int64)
    return merged


def _flags(path: Path) -> dict[int, bool]:
    lines = path.read_text().splitlines()
    if not lines:
        return {}
    header = lines[0].split("|")
    if "Flags" not in header or "JobIDRaw" not in header:
        return {}
    k, r = header.index("Flags"), header.index("JobIDRaw")
    out = {}
    for line in lines[1:]:
        cells = line.split("|")
        if len(cells) == len(header) and cells[r].isdigit():
            out[int(cells[r])] = "SchedBackfill" in cells[k]
    return out


def _measure(observed, policy, nodes: int, facts: dict):
    """Both replays (synchronised and free-running) against Slurm; the figures."""
    import numpy as np

    from malleo.emulator import twin
    from malleo.plugin.slurm_replay import expected_schedule

    phase = None
    calc = int(policy.multifactor.calc_period)
    if policy.order == "multifactor" and facts.get("boot_time"):
        phase = int(facts["boot_time"]) % calc
    cycle = int(facts.get("bf_interval") or 1)
    excerpt = Path(facts.get("output_dir", "")) / "controller.log"
    source = str(excerpt) if excerpt.is_file() else facts.get("log_file")
    log = twin.read_controller_log(source, observed["job_id"].tolist()) if source else None
    times, passes = twin.synced_passes(observed, log, cycle,
                                       int(facts.get("sched_interval") or 60))
    res = int(policy.bf_resolution)
    base = float(int(times["t_submit"].min()) // res * res)   # on Slurm's bf_resolution grid
    synced = twin.synced_replay_log(times, passes, policy, nodes, base=base, calc_period=calc,
                                    calc_phase=phase)
    sync_obs = observed[["job_number", "job_id", "nodes", "limit"]].assign(
        submit=np.rint((times["t_submit"].to_numpy() - base) * 1000).astype(np.int64),
        start=synced["slurm_start_ms"].to_numpy(),
        slurm_backfilled=synced["slurm_jumped"].to_numpy(),
        sched_backfill_flag=observed["slurm_backfilled"].to_numpy())
    figures, table = twin.compare(sync_obs, synced[["job_number", "start", "backfilled"]],
                                  base=0, cycle=cycle, scale=1000)
    scaled, free_base = twin.emulator_input(observed, calc, phase)
    free = expected_schedule(scaled, policy, nodes)
    jumped = dict(zip(synced["job_number"], synced["slurm_jumped"]))
    free_obs = observed.assign(slurm_backfilled=observed["job_number"].map(jumped),
                               sched_backfill_flag=observed["slurm_backfilled"])
    free_figures, free_table = twin.compare(free_obs, free, base=free_base, cycle=cycle)
    figures["method"] = ("synchronised: the core's pass on Slurm's real state at each of "
                         "Slurm's scheduling instants, from the " + times.attrs["source"])
    for key in ("same_order_share", "out_of_order", "start_diff_mean_cycles",
                "start_diff_p95_cycles", "backfilled_emulator", "backfilled_both",
                "backfilled_both_share", "first_difference"):
        figures[f"free_run_{key}"] = free_figures[key]
    flag = observed["slurm_backfilled"]
    figures["sched_backfill_flag"] = (int(flag.astype(bool).sum()) if flag.notna().all()
                                      else None)
    figures["policy"] = policy.describe()
    figures["calc_phase"] = phase
    figures["time_source"] = times.attrs["source"]
    figures["passes"] = synced.attrs.get("passes")
    figures["passes_skipped"] = synced.attrs.get("passes_skipped")
    table = table.merge(free_table[["job_number", "emu_start", "emu_backfilled", "in_order"]]
                        .rename(columns={"emu_start": "free_start",
                                         "emu_backfilled": "free_backfilled",
                                         "in_order": "free_in_order"}), on="job_number")
    table["free_start"] = table["free_start"] + (free_base - base)   # on the synced clock
    return figures, table


def _summary(figures: dict) -> str:
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"
    return "\n".join([
        f"policy {figures['policy']}, {figures['jobs']} jobs",
        f"same order (synchronised replay): {pct(figures['same_order_share'])} "
        f"({figures['out_of_order']} jobs out of order)",
        f"backfilled in both: {figures['backfilled_both']} "
        f"(Slurm {figures['backfilled_slurm']}, emulator {figures['backfilled_emulator']}; "
        f"{pct(figures['backfilled_both_share'])} of those either backfilled; Slurm's "
        f"SchedBackfill flag: {figures.get('sched_backfill_flag')})",
        f"|start difference|: mean {figures['start_diff_mean_cycles']:.2f}, p95 "
        f"{figures['start_diff_p95_cycles']:.2f} cycles of {figures['cycle_seconds']} s",
        f"free-running replay: same order {pct(figures['free_run_same_order_share'])}, "
        f"|start difference| mean {figures['free_run_start_diff_mean_cycles']:.2f} cycles",
        f"first difference: {figures['first_difference']}"])


def _report(figures: dict, policy, facts: dict) -> str:
    from malleo.policy_file import dump_policy

    return "\n".join([
        "# malleo slurm validate: the emulator against Slurm's own scheduler", "",
        f"Cluster: {facts['nodes']} nodes, {facts['scheduler']}, {facts['priority']}; "
        f"scheduler cycle (bf_interval) {figures['cycle_seconds']} s; priority "
        f"recalculation phase {figures['calc_phase']} s.", "",
        "## Figures", "", "```", _summary(figures), "```", "",
        "*Synchronised*: at each instant Slurm's controller ran a scheduling pass (from its "
        "log; without it, every whole second), one pass of malleo's core on the state Slurm "
        "was really in (its running jobs, its queue): a backfill pass with the policy, a main "
        "pass without backfilling; a job's emulated start is the first pass that starts it.  "
        "*Backfilled* means, on both sides, started while a job ahead in the queue order kept "
        "waiting (Slurm's own SchedBackfill flag is counted beside).  *Free-running*: "
        "the whole workload replayed by the emulator alone (runtimes as Slurm ran them); a "
        "start that differs by a second changes every later state, so it diverges more.",
        "", "![comparison](comparison.png)", "",
        "## Policy used (imported from the cluster)", "", "```toml", dump_policy(policy), "```",
        "", "Per-job figures: jobs.csv; what Slurm recorded: sacct.txt (converted: slurm.swf).",
        ""])


def _plot(table, path: Path, figures: dict) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    for ax, col, flag, title in ((ax1, "emu_start", "in_order", "synchronised"),
                                 (ax2, "free_start", "free_in_order", "free-running")):
        ok = table[flag].to_numpy()
        ax.scatter(table["slurm_start"][ok], table[col][ok], s=8, label="same order")
        ax.scatter(table["slurm_start"][~ok], table[col][~ok], s=12, c="tab:red",
                   label="out of order")
        top = max(table["slurm_start"].max(), table[col].max())
        ax.plot([0, top], [0, top], lw=0.8, c="grey")
        ax.set_xlabel("Slurm start (s)")
        ax.set_ylabel("emulator start (s)")
        ax.set_title(f"{title}: {100 * ok.mean():.1f}% same order")
        ax.legend(loc="upper left", fontsize=8)
    diff = (table["emu_start"] - table["slurm_start"]) / max(figures["cycle_seconds"], 1)
    ax3.hist(diff, bins=41)
    ax3.set_xlabel("emulator - Slurm start (cycles)")
    ax3.set_ylabel("jobs")
    ax3.set_title("start difference (synchronised)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
