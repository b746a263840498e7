"""The Slurm side of a resize, run from inside the job (its batch step) by the launcher.

- shrink: ``scontrol update JobId=J NumNodes=n`` (Slurm keeps the batch host and releases the
  rest); retried while Slurm answers "the DB index is being set".
- expand: an expander allocation ``salloc --no-shell -N k --dependency=expand:J`` that must
  start within a timeout, then ``scontrol update JobId=B NumNodes=0`` hands its nodes to J and
  B is cancelled. Needs ``SchedulerParameters=permit_job_expansion``. If the expander does not
  start in time it is cancelled and J keeps its nodes.

Every function returns the job's node list as Slurm reports it afterwards, so the caller
relaunches on what Slurm really allocated, whatever happened.
"""
from __future__ import annotations

import os
import re
import subprocess
import time

from malleo.plugin.backends import parse_scontrol


class ResizeError(Exception):
    """A resize that did not happen; the job keeps its old nodes."""


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy())


def job_record(job_id: int) -> dict[str, str]:
    """``scontrol show job -o J`` as a dict (raises ResizeError if Slurm does not answer)."""
    proc = _run(["scontrol", "show", "job", "-o", str(int(job_id))], 30)
    recs = parse_scontrol.records(proc.stdout)
    if proc.returncode != 0 or not recs:
        raise ResizeError(f"scontrol show job {job_id}: {proc.stderr.strip() or 'no record'}")
    return recs[0]


def node_list(job_id: int) -> list[str]:
    """The job's allocated node names, in Slurm's order."""
    return list(parse_scontrol.job(job_record(job_id)).node_list)


def shrink(job_id: int, nodes: int, retry_for: float = 15.0) -> list[str]:
    """Shrink running job ``job_id`` to ``nodes`` nodes.

    Raises:
        ResizeError: Slurm refused (the message says why).
        ValueError: ``nodes`` is below 1 (never sent to Slurm).
    """
    if type(nodes) is not int or nodes < 1:
        raise ValueError(f"shrink of job {job_id} to {nodes!r} nodes: need a whole count >= 1")
    deadline = time.monotonic() + retry_for
    while True:
        proc = _run(["scontrol", "update", f"JobId={int(job_id)}", f"NumNodes={int(nodes)}"], 30)
        if proc.returncode == 0:
            return node_list(job_id)
        message = (proc.stderr or proc.stdout).strip()
        if "DB index" not in message or time.monotonic() > deadline:
            raise ResizeError(f"shrink of job {job_id} to {nodes} nodes refused: {message}")
        time.sleep(1.0)


def expand(job_id: int, more: int, timeout: int = 20) -> list[str]:
    """Add ``more`` nodes to running job ``job_id`` through an expander allocation.

    Args:
        timeout: seconds the expander may wait for nodes before it is given up.

    Raises:
        ResizeError: the expander did not start in time, or the merge was refused; any
            expander is cancelled and the job keeps its nodes.
        ValueError: ``more`` is below 1 (never sent to Slurm).
    """
    if type(more) is not int or more < 1:
        raise ValueError(f"expand of job {job_id} by {more!r} nodes: need a whole count >= 1")
    rec = job_record(job_id)
    argv = ["salloc", "--no-shell", f"--nodes={int(more)}", f"--dependency=expand:{int(job_id)}",
            f"--immediate={int(timeout)}", f"--job-name=malleo-expand-{int(job_id)}"]
    if rec.get("Partition"):
        argv.append(f"--partition={rec['Partition']}")
    if rec.get("TimeLimit") not in (None, "", "UNLIMITED"):
        argv.append(f"--time={rec['TimeLimit']}")
    try:
        proc = _run(argv, timeout + 30)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = f"salloc hung ({exc})"
        proc = None
    match = re.search(r"Granted job allocation (\d+)", out)
    if proc is None or proc.returncode != 0 or match is None:
        _cancel_expanders(job_id)
        raise ResizeError(f"expander for job {job_id} (+{more} nodes) did not start within "
                          f"{timeout} s: {out.strip().splitlines()[-1] if out.strip() else 'no output'}")
    expander = int(match.group(1))
    merge = _run(["scontrol", "update", f"JobId={expander}", "NumNodes=0"], 30)
    _run(["scancel", str(expander)], 30)
    if merge.returncode != 0:
        raise ResizeError(f"merging expander {expander} into job {job_id} refused: "
                          f"{(merge.stderr or merge.stdout).strip()}")
    return node_list(job_id)


def _cancel_expanders(job_id: int) -> None:
    """Cancel any expander of ``job_id`` still queued (salloc normally withdraws it itself)."""
    _run(["scancel", f"--name=malleo-expand-{int(job_id)}"], 30)
