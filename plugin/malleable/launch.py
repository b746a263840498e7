"""Run a malleable MPI application inside its Slurm batch job, relaunching it at each resize.

    python -m malleo.plugin.malleable.launch [--ranks-per-node R] [--step-timeout S]
        [--expand-timeout S] [--state-dir DIR] -- COMMAND [ARGS...]

Each step is ``srun --mpi=pmix -N n -n n*R --nodelist=<the job's nodes> COMMAND`` under a
timeout. When a step ends having recorded a resize request (see
:mod:`malleo.plugin.malleable.client`), the launcher resizes the Slurm job
(:mod:`~malleo.plugin.malleable.slurm_resize`) and starts the next step on the nodes Slurm then
reports; a resize that fails leaves the job on its old nodes and the next step restores the
same checkpoint there. A step that fails right after a resize (a rank dies) is restarted once
from that checkpoint on the nodes the job had before the resize (an expand is undone by a
shrink); any other failing step ends the job with its exit status. It prints one line per step, ``malleo: step K: N nodes LIST``: the job's
own log of its node counts.

The state directory (checkpoint and resize request) is removed when the job's last step ends,
whatever its outcome, if the launcher created it (the default ``./malleo-$SLURM_JOB_ID``, or a
``--state-dir`` that did not exist); a ``--state-dir`` that existed keeps only its other files.

Exit status: 0 when a step ends without a request; the step's status when it fails; 124 when
a step exceeds its timeout; 2 for bad usage.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from malleo.plugin.backends import hostlist
from malleo.plugin.malleable import client, slurm_resize, spec
from malleo.plugin.malleable.slurm_resize import nodes_text


def _say(message: str) -> None:
    print(f"malleo: {message}", flush=True)


def resize_target(request: object, current: int, declared: spec.DeclaredMalleability | None) -> int | None:
    """The node count to resize to from a step's request record (``resize.json``), or None
    to stay at ``current``: the only numbers ever passed to ``scontrol update NumNodes=``.

    The record must be ``{"action": "expand"|"shrink", "nodes": int}`` with the target on the
    side of ``current`` its action says; the target is then clamped into the job's declared
    [min, max] (and to at least 1). A job that declares no malleability is never resized.
    """
    if declared is None or not isinstance(request, dict):
        return None
    action, target = request.get("action"), request.get("nodes")
    if action not in ("expand", "shrink") or type(target) is not int:
        return None
    target = min(max(target, declared.min_nodes, 1), declared.max_nodes)
    if (action == "expand" and target <= current) or (action == "shrink" and target >= current):
        return None
    return target


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m malleo.plugin.malleable.launch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--step-timeout", type=float, default=3600.0,
                        help="seconds one MPI step may run (failed spawns hang)")
    parser.add_argument("--expand-timeout", type=int, default=20,
                        help="seconds an expander allocation may wait for nodes")
    parser.add_argument("--state-dir", default=None,
                        help="checkpoint directory, on storage every node shares (default: ./malleo-$SLURM_JOB_ID, "
                             "in the job's working directory); emptied at start")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("give the application's command after --")
    if args.ranks_per_node < 1:
        parser.error("--ranks-per-node must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    job_id = int(os.environ.get("SLURM_JOB_ID", "0") or 0)
    if job_id <= 0:
        print("malleo launch: SLURM_JOB_ID is not set: run me inside a Slurm batch job",
              file=sys.stderr)
        return 2
    try:
        record = slurm_resize.job(job_id)
    except slurm_resize.ResizeError as exc:
        print(f"malleo launch: {exc}", file=sys.stderr)
        return 1
    try:
        declared = spec.parse(record.comment or None)
    except spec.SpecError as exc:
        print(f"malleo launch: {exc}", file=sys.stderr)
        return 2
    state = Path(args.state_dir or Path.cwd() / f"malleo-{job_id}")
    is_ours = not state.exists()
    state.mkdir(parents=True, exist_ok=True)
    _remove_state_files(state)    # left by an earlier job of this id
    try:
        return _run_steps(args, job_id, declared, state)
    finally:
        _remove_state_files(state)
        if is_ours:
            shutil.rmtree(state, ignore_errors=True)


def _remove_state_files(state: Path) -> None:
    """The checkpoint and request files (and their temporaries) the client writes."""
    for name in (client.CHECKPOINT, client.REQUEST, client.CHECKPOINT + ".tmp.npz",
                 client.REQUEST + ".tmp"):
        (state / name).unlink(missing_ok=True)
    _remove_ready_files(state)


def _remove_ready_files(state: Path) -> None:
    """The ranks' start-up marks (client.wait_for_ranks) of the steps so far."""
    for path in state.glob(client.READY_PREFIX + "*"):
        path.unlink(missing_ok=True)


def _run_steps(args: argparse.Namespace, job_id: int, declared, state: Path) -> int:
    """The steps of the job, each on the nodes Slurm reports after the previous resize."""
    nodes = slurm_resize.node_list(job_id)
    before: list[str] | None = None       # the nodes before the resize this step starts from
    step = 0
    while True:
        step += 1
        names = hostlist.compress(nodes)
        _say(f"step {step}: {nodes_text(len(nodes))} {names}")
        env = dict(os.environ, MALLEO_STATE_DIR=str(state), MALLEO_NODES=str(len(nodes)),
                   MALLEO_STEP=str(step),
                   SLURM_JOB_NODELIST=names, SLURM_NODELIST=names,
                   SLURM_JOB_NUM_NODES=str(len(nodes)), SLURM_NNODES=str(len(nodes)))
        if declared is not None:
            env["MALLEO_PERIOD"] = str(declared.period)
            env["MALLEO_MIN_NODES"] = str(declared.min_nodes)
            env["MALLEO_MAX_NODES"] = str(declared.max_nodes)
        argv = ["srun", "--mpi=pmix", "--kill-on-bad-exit=1", f"--nodes={len(nodes)}",
                f"--ntasks={len(nodes) * args.ranks_per_node}", f"--nodelist={names}",
                *args.command]
        began = time.monotonic()
        try:
            rc = subprocess.run(argv, env=env, timeout=args.step_timeout).returncode
        except subprocess.TimeoutExpired:
            _say(f"step {step}: no end within {args.step_timeout:g} s; stopping")
            return 124
        request_path = state / client.REQUEST
        _remove_ready_files(state)
        _say(f"step {step}: ended after {time.monotonic() - began:.1f} s")
        if rc != 0:
            _say(f"step {step}: exit status {rc}")
            if before is None or not (state / client.CHECKPOINT).exists():
                return rc
            # The step started from a resize's checkpoint and failed (a rank died, a new node
            # misbehaved): go back to the size before the resize and restart from it.
            request_path.unlink(missing_ok=True)
            try:
                if len(before) < len(nodes):
                    nodes = slurm_resize.shrink(job_id, len(before))
            except slurm_resize.ResizeError as exc:
                _say(f"cannot go back to {nodes_text(len(before))}: {exc}")
                return rc
            _say(f"back to {nodes_text(len(nodes))}, restarting from the checkpoint")
            before = None
            continue
        if not request_path.exists():
            _say(f"step {step}: done")
            return 0
        try:
            request = json.loads(request_path.read_text())
        except (OSError, ValueError, RecursionError) as exc:
            request = None
            _say(f"step {step}: unreadable resize request ({exc}); staying on {len(nodes)}")
        request_path.unlink(missing_ok=True)
        target = resize_target(request, len(nodes), declared)
        if target is None:
            _say(f"step {step}: resize request {request!r} is not a resize within the job's "
                 f"bounds; staying on {len(nodes)} nodes")
            before = None
            continue
        before = list(nodes)
        began = time.monotonic()
        try:
            if target < len(nodes):
                nodes = slurm_resize.shrink(job_id, target)
            elif target > len(nodes):
                nodes = slurm_resize.expand(job_id, target - len(nodes), args.expand_timeout)
            _say(f"{request['action']} to {nodes_text(target)}: now {nodes_text(len(nodes))} "
                 f"(Slurm side {time.monotonic() - began:.1f} s)")
        except slurm_resize.ResizeError as exc:
            _say(f"{request['action']} to {nodes_text(target)} failed, staying on "
                 f"{nodes_text(len(nodes))}: {exc}")
            nodes = slurm_resize.node_list(job_id)
            before = None


if __name__ == "__main__":
    sys.exit(main())
