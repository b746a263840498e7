"""Figures for the local Slurm and the CLI backend (root and Debian's Slurm needed; else skips).

- bring-up time of slurm-docker/local-slurm.sh (16 nodes) and its teardown time;
- reading the queue with 1,000 held jobs: ``squeue --json`` (the command) and its parsing,
  ``sinfo -N --json`` and its parsing, each the median of 5 reads.

Uses the cluster named by SLURM_CONF if it answers (then no bring-up/teardown figures).
Prints figures; asserts nothing about speed.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "slurm-docker" / "local-slurm.sh"
N_JOBS = 1000


def timed(fn, repeat=5):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    from malleo.plugin.backends import parse_json
    from malleo.plugin.backends.cli import CliBackend

    conf = os.environ.get("SLURM_CONF")
    directory = None
    if not (conf and subprocess.run(["scontrol", "ping"], capture_output=True).returncode == 0):
        if os.geteuid() != 0 or shutil.which("slurmctld") is None:
            print("slurm_backend: skipped (needs root and Debian's Slurm: slurm-docker/install-deps.sh)")
            return 0
        directory = tempfile.mkdtemp(prefix="malleo-bench-slurm-")
        t0 = time.perf_counter()
        up = subprocess.run(["bash", str(SCRIPT), "up", "--nodes", "16", "--dir", directory],
                            capture_output=True, text=True)
        print(f"bring-up (16 nodes, all idle): {time.perf_counter() - t0:.2f} s")
        if up.returncode != 0:
            print(up.stderr, file=sys.stderr)
            return 1
        conf = up.stdout.strip().splitlines()[-1].split("=", 1)[1]
    backend = CliBackend(conf=conf)
    env = dict(os.environ, SLURM_CONF=conf)
    try:
        t0 = time.perf_counter()
        for i in range(N_JOBS):
            backend.submit(wrap="sleep 60", hold=True, nodes=1 + i % 4, time_limit=60 * (1 + i % 30),
                           name=f"bench{i}", output="/dev/null", workdir="/tmp")
        print(f"submit {N_JOBS} held jobs (sbatch each): {time.perf_counter() - t0:.1f} s")

        cmd_s, raw = timed(lambda: subprocess.run(["squeue", "--json"], capture_output=True,
                                                  text=True, env=env).stdout)
        parse_s, jobs = timed(lambda: parse_json.jobs_from_squeue(json.loads(raw)))
        total_s, _ = timed(backend.all_jobs)
        print(f"squeue --json with {len(jobs)} jobs ({len(raw) / 1e6:.1f} MB): command {cmd_s * 1e3:.0f} ms, "
              f"json+parse {parse_s * 1e3:.0f} ms, backend.all_jobs() {total_s * 1e3:.0f} ms")
        cmd_s, raw = timed(lambda: subprocess.run(["sinfo", "-N", "--json"], capture_output=True,
                                                  text=True, env=env).stdout)
        parse_s, nodes = timed(lambda: parse_json.nodes_from_sinfo(json.loads(raw)))
        print(f"sinfo -N --json with {len(nodes)} nodes: command {cmd_s * 1e3:.0f} ms, "
              f"json+parse {parse_s * 1e3:.1f} ms")
    finally:
        if directory is not None:
            t0 = time.perf_counter()
            subprocess.run(["bash", str(SCRIPT), "down", "--dir", directory], capture_output=True)
            print(f"teardown (scancel {N_JOBS} jobs, stop daemons, wipe): {time.perf_counter() - t0:.2f} s")
        else:
            ids = [str(j.job_id) for j in backend.jobs() if j.name.startswith("bench")]
            if ids:
                subprocess.run(["scancel", *ids], env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
