"""The agent's whole cycle against a real Slurm, part by part (figures only, no assertions).

Runs ``Agent.cycle()`` (plugin/agent/loop.py: the ping and the read of Slurm's state, the
conversion, the plan, the priorities and their writes) on the cluster ``--slurm-conf`` names
(it writes its pending jobs' priorities: never name a production cluster),
``--cycles`` times in priority mode, and prints for each cycle the wall seconds of every part
(``CycleResult.parts``: ``read`` and the backend's split of it, ``convert``, ``plan``,
``apply``), the whole cycle's wall seconds, and the CPU seconds of this process and of the
Slurm commands it ran.  The first cycle writes the priorities the plan wants (every pending
job's, once); the next ones find them written, as the running agent does between changes.

A cluster of 10,000 nodes and 10,000 pending jobs: bench/live_cluster.sh (about 4 minutes).

    python bench/live_cycle.py --slurm-conf FILE [--policy fcfs+conservative] [--cycles 4]
        [--backend cli|libslurm|pyslurm] [--read compact|json] [--change] [--sequential]

``--backend libslurm`` reads through the site's libslurm (plugin/backends/libslurm_backend.py:
libslurm-dev installed); its parts are ``read.jobs_rpc`` (libslurm's call), ``read.jobs_columns``
(the records into columns), the same for nodes, ``read.ping`` and ``read.partitions``.

``--sequential`` reads as the agent did before (the ping, then each command after the
other: the base class's ``cycle_read``), for comparison.  The other figures of the cycle
without Slurm (synthetic queues, every schema) are bench/plan_agent.py's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fcfs+conservative")
    ap.add_argument("--cycles", type=int, default=4)
    ap.add_argument("--backend", choices=("cli", "libslurm", "pyslurm"), default="cli")
    ap.add_argument("--read", choices=("compact", "json"), default="compact")
    ap.add_argument("--change", action="store_true",
                    help="before each cycle after the first, submit one held job (sbatch "
                         "--hold, not timed), so the cycle reads a queue that changed, as a "
                         "cycle triggered by the agent's change poll does; cancelled at the "
                         "end")
    ap.add_argument("--sequential", action="store_true",
                    help="read one command after the other (the agent before issue 16's "
                         "concurrent read)")
    ap.add_argument("--slurm-conf", default=None,
                    help="slurm.conf of the cluster to measure (required: the bench writes "
                         "the priorities of its pending jobs and submits held jobs there)")
    args = ap.parse_args()
    conf = args.slurm_conf
    if not conf:        # make bench runs every script: no cluster named, nothing to measure
        print("live_cycle: skipped (name a cluster with --slurm-conf: bench/live_cluster.sh)")
        return 0
    if not os.path.isfile(conf):
        print(f"live_cycle: --slurm-conf {conf}: no such file", file=sys.stderr)
        return 2
    os.environ["SLURM_CONF"] = conf         # for the sbatch/scancel of --change

    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.plugin.backends.errors import SlurmError

    try:
        return _run(args, conf, parse_policy_spec(args.policy))
    except SlurmError as exc:
        print(f"live_cycle: {exc}", file=sys.stderr)
        return 1


def _run(args, conf: str, policy) -> int:
    from malleo.plugin.agent.loop import Agent
    from malleo.plugin.backends import SlurmBackend, select_backend
    from malleo.plugin.backends.cli import CliBackend

    if args.backend == "cli":
        backend = CliBackend(conf=conf, read=args.read)
    else:
        backend = select_backend(conf, kind=args.backend)
    if args.sequential:
        backend.cycle_read = lambda ping=True: SlurmBackend.cycle_read(backend, ping)
    with tempfile.TemporaryDirectory(prefix="malleo-live-cycle-") as tmp:
        policy_file = Path(tmp) / "policy.toml"
        lines = [f'order = "{policy.order}"', f'backfill = "{policy.backfill}"']
        policy_file.write_text("\n".join(lines) + "\n")
        agent = Agent(backend, policy_file, dry_run=False)
        version = ".".join(map(str, backend.version()))
        rows, extra = [], []
        for k in range(args.cycles):
            if args.change and k:
                out = subprocess.run(["sbatch", "--parsable", "--hold", "-N1", "-t", "5",
                                      "-o", "/dev/null", "--chdir", "/tmp", "--wrap", "true"],
                                     capture_output=True, text=True, check=True).stdout
                extra.append(out.strip().split(";")[0])
                time.sleep(0.2)
            cpu0, child0 = _cpu()
            t0 = time.perf_counter()
            result = agent.cycle()
            wall = time.perf_counter() - t0
            cpu1, child1 = _cpu()
            row = {"cycle": k + 1, "wall_s": round(wall, 4),
                   "cpu_agent_s": round(cpu1 - cpu0, 4),
                   "cpu_slurm_commands_s": round(child1 - child0, 4),
                   "writes": len(result.writes),
                   **{f"{part}_s": round(v, 4) for part, v in result.parts.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
        steady = rows[1:] or rows
        inputs = result.inputs
        summary = {
            "slurm": version, "backend": backend.name,
            "read": ("sequential" if args.sequential else "libslurm columns"
                     if backend.name in ("libslurm", "pyslurm") and backend.reads_tables
                     else getattr(backend, "read", "pyslurm objects")),
            "policy": policy.describe(), "pending": len(inputs.pending_ids),
            "running": len(inputs.running_ids), "skipped": len(inputs.skipped),
            "nodes": inputs.total, "starts_now": len(result.started_now),
            "steady_cycles": len(steady),
            "steady_wall_median_s": round(statistics.median(r["wall_s"] for r in steady), 4),
            "steady_cpu_agent_median_s": round(
                statistics.median(r["cpu_agent_s"] for r in steady), 4),
            "steady_cpu_slurm_commands_median_s": round(
                statistics.median(r["cpu_slurm_commands_s"] for r in steady), 4),
        }
        for part in sorted({p for r in steady for p in r if p.endswith("_s")
                            and p not in ("wall_s", "cpu_agent_s", "cpu_slurm_commands_s")}):
            summary[f"steady_{part}_median"] = round(
                statistics.median(r.get(part, 0.0) for r in steady), 4)
        summary["change_between_cycles"] = args.change
        summary["load_average"] = os.getloadavg()[0]
        print(json.dumps(summary, indent=2))
        if extra:
            subprocess.run(["scancel", *extra], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
