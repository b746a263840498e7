"""Tuning trials as a Slurm job array, through submitit.

submitit pickles the trial function and its arguments into a shared folder, submits one
``sbatch --array`` job, and each array task writes its result pickle into that folder.
This module reads those result pickles itself and asks ``squeue`` (not ``sacct``) whether
a task is still queued or running: submitit's own state watcher calls ``sacct``, which
needs slurmdbd, and a site or a test cluster without accounting storage would make it
wait forever for a task that died without a result.  A task that left the queue without
a result pickle, or whose function raised, turns its trials into ``failed`` rows (with
the task's log file named); they are retried by rerunning the same command.
"""
from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from malleo.emulator.tune.evaluate import Setup, evaluate, params_key
from malleo.errors import MalleoError

__all__ = ["run_array", "run_chunk", "MAX_TASKS"]

MAX_TASKS = 1000
"""At most this many array tasks per sweep (Slurm's default MaxArraySize is 1001);
larger sweeps put several trials in each task."""

GRACE_SECONDS = 10.0
"""A task absent from squeue this long without a result pickle has failed."""


def run_chunk(setup: Setup, chunk: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """What one array task runs: the trials of ``chunk``, one results row each."""
    return [evaluate(setup, trial, params) for trial, params in chunk]


def run_array(setup: Setup, todo: list[tuple[int, dict[str, Any]]],
              record: Callable[[dict[str, Any]], None], *, folder: str,
              partition: str | None = None, time_min: int = 30, array_size: int = 2,
              poll_seconds: float = 1.0, timeout_seconds: float | None = None) -> None:
    """Evaluate ``todo`` as one Slurm job array and ``record`` every row as it arrives.

    Args:
        setup: the tuning setup (the trace path must be readable from the nodes).
        todo: ``(trial, params)`` to evaluate.
        record: called with each finished row (ok or failed), in arrival order.
        folder: shared directory for submitit's pickles and the tasks' logs.
        partition: Slurm partition (None: the cluster's default).
        time_min: time limit of each task, minutes.
        array_size: tasks running at once (``--array=...%N``).
        poll_seconds: seconds between checks of the result files and squeue.
        timeout_seconds: give up waiting after this long (the remaining trials become
            failed rows and the array is cancelled); None waits as long as it takes.

    Raises:
        MalleoError: submitit is not installed, or sbatch refused the array.
    """
    if not todo:
        return
    try:
        import submitit
    except ImportError:
        raise MalleoError("--executor slurm needs submitit, which is not installed "
                          "(pip install 'malleo[tune]')") from None
    folder_path = Path(folder).resolve()
    folder_path.mkdir(parents=True, exist_ok=True)
    per_task = max(1, math.ceil(len(todo) / MAX_TASKS))
    chunks = [todo[i:i + per_task] for i in range(0, len(todo), per_task)]
    executor = submitit.SlurmExecutor(folder=folder_path / "%j", python=sys.executable)
    parameters: dict[str, Any] = {"time": int(time_min), "array_parallelism": int(array_size),
                                  "nodes": 1, "ntasks_per_node": 1, "cpus_per_task": 1,
                                  "job_name": "malleo-tune"}
    if partition:
        parameters["partition"] = partition
    executor.update_parameters(**parameters)
    try:
        jobs = executor.map_array(run_chunk, [setup] * len(chunks), chunks)
    except Exception as exc:            # submitit raises its own error types for sbatch
        raise MalleoError(f"--executor slurm: submitting the array failed: {exc}") from None
    array_id = jobs[0].job_id.split("_")[0]
    pending = dict(zip(range(len(jobs)), zip(jobs, chunks)))
    absent_since: dict[int, float] = {}
    started = time.monotonic()
    while pending:
        queued = _queued_tasks(array_id)
        for index in list(pending):
            job, chunk = pending[index]
            if job.paths.result_pickle.exists():
                rows = _rows_of(job, chunk)
            elif queued is not None and job.job_id not in queued and \
                    not any(q.startswith(array_id + "_[") for q in queued):
                first = absent_since.setdefault(index, time.monotonic())
                if time.monotonic() - first < GRACE_SECONDS:
                    continue
                rows = _failed(chunk, f"array task {job.job_id} ended without a result "
                                      f"(log: {job.paths.stderr})")
            else:
                absent_since.pop(index, None)
                continue
            del pending[index]
            for row in rows:
                record(row)
        if pending and timeout_seconds is not None and \
                time.monotonic() - started > timeout_seconds:
            subprocess.run(["scancel", array_id], capture_output=True)
            for job, chunk in pending.values():
                for row in _failed(chunk, f"array task {job.job_id} did not finish within "
                                          f"{timeout_seconds:g} s (cancelled)"):
                    record(row)
            return
        if pending:
            time.sleep(poll_seconds)


def _rows_of(job, chunk) -> list[dict[str, Any]]:
    try:
        rows = job.result()
    except Exception as exc:           # the task's function raised: submitit re-raises it
        text = str(exc).strip().splitlines()
        return _failed(chunk, f"array task {job.job_id} failed: "
                              f"{text[-1] if text else type(exc).__name__} "
                              f"(log: {job.paths.stderr})")
    return rows


def _failed(chunk, error: str) -> list[dict[str, Any]]:
    return [{"trial": trial, "params": params_key(params), "policy": "", "status": "failed",
             "error": error, "seconds": 0.0} for trial, params in chunk]


def _queued_tasks(array_id: str) -> set[str] | None:
    """Ids (``123_4``, and ``123`` or ``123_[5-9]`` for not-yet-split tasks) squeue still
    lists for the array; None when squeue cannot be asked (treated as "still running")."""
    try:
        proc = subprocess.run(["squeue", "-h", "-r", "-j", array_id, "-o", "%i"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        # squeue fails for a job id it no longer knows: nothing of the array is queued.
        return set() if "Invalid job id" in proc.stderr else None
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}
