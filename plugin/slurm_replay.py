"""``malleo slurm replay``: a workload trace submitted to a real Slurm as sleep jobs.

A load generator for test clusters, and one half of the live proof: the same scaled workload
replayed through the emulator (:func:`expected_schedule`) gives the schedule the agent must
reproduce on Slurm.

Scaling (``time_scale`` S, cluster of N nodes, trace machine of P processors):

- submit offset: ``(submit - first submit) / S``, rounded down to whole seconds;
- runtime (the ``sleep``): ``runtime / S`` rounded to whole seconds;
- time limit: ``estimate / S`` rounded up to whole minutes (Slurm's unit), at least one
  minute and never below the scaled runtime;
- size: ``ceil(procs * N / P)`` nodes, between 1 and N (node-exclusive jobs).

All scaled values are integers, so the emulator replays exactly what Slurm is given.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from malleo.errors import MalleoError
from malleo.plugin.backends import SlurmBackend

SCALED_COLUMNS = ("job_number", "user_id", "submit", "runtime", "limit", "nodes")
"""Columns of a scaled workload: trace job number, user, submit offset (s), runtime (s),
time limit (s, whole minutes) and nodes, one row per job in (submit, job number) order."""

OBSERVED_COLUMNS = ("job_number", "job_id", "nodes", "runtime", "limit", "submit_offset",
                    "submit", "start", "end", "wait", "state")
"""Columns of the CSV ``malleo slurm replay`` writes (times epoch seconds, ``wait`` seconds)."""


def scale_workload(table: pd.DataFrame, *, time_scale: float, nodes: int,
                   procs: int) -> pd.DataFrame:
    """Scale a job table (``load_workload``'s: ``submit_time``, ``runtime``, ``estimate``,
    ``procs``, ``job_number``, ``user_id``) onto a Slurm cluster of ``nodes`` nodes.

    Args:
        table: the jobs to replay (already sliced), any order.
        time_scale: S > 0: every time is divided by it.
        nodes: N >= 1 nodes of the target cluster.
        procs: P >= 1 processors of the trace's machine.

    Returns:
        A DataFrame with :data:`SCALED_COLUMNS` (module docstring for the rules).

    Raises:
        MalleoError: a non-positive scale, node count or machine size, or an empty table.
    """
    if not time_scale > 0:
        raise MalleoError(f"time-scale: must be > 0, got {time_scale}")
    if nodes < 1 or procs < 1:
        raise MalleoError(f"nodes and procs must be >= 1, got nodes={nodes}, procs={procs}")
    if len(table) == 0:
        raise MalleoError("the workload has no jobs to replay")
    table = table.iloc[np.lexsort((table["job_number"].to_numpy(),
                                   table["submit_time"].to_numpy()))]
    submit = table["submit_time"].to_numpy(dtype=np.float64)
    runtime = table["runtime"].to_numpy(dtype=np.float64)
    estimate = table["estimate"].to_numpy(dtype=np.float64)
    size = table["procs"].to_numpy(dtype=np.int64)
    offset = np.floor((submit - submit[0]) / time_scale).astype(np.int64)
    run = np.maximum(np.rint(runtime / time_scale), 0).astype(np.int64)
    minutes = np.ceil(np.maximum(np.ceil(estimate / time_scale), run) / 60.0)
    limit = (np.maximum(minutes, 1) * 60).astype(np.int64)
    n = np.clip(-(-size * nodes // procs), 1, nodes).astype(np.int64)
    return pd.DataFrame({
        "job_number": table["job_number"].to_numpy(dtype=np.int64),
        "user_id": table["user_id"].to_numpy(dtype=np.int64),
        "submit": offset, "runtime": run, "limit": limit, "nodes": n})


def expected_schedule(scaled: pd.DataFrame, policy, nodes: int) -> pd.DataFrame:
    """The emulator's schedule of a scaled workload on ``nodes`` nodes under ``policy``:
    ``scaled`` plus ``start``, ``end`` (offsets, seconds), ``reservation`` and ``backfilled``.

    The workload goes through the emulator's own entrance (:func:`malleo.emulator.replay`,
    the one ``malleo replay`` uses) as a job table of whole-node jobs on a machine of
    ``nodes`` processors, so the live proof compares Slurm with exactly what a replay says.
    """
    from malleo.emulator import replay

    n = len(scaled)
    table = pd.DataFrame({
        # positions as job numbers: (submit, number) order is scaled's own order
        "job_number": np.arange(1, n + 1, dtype=np.int64),
        "submit_time": scaled["submit"].to_numpy(np.int64),
        "runtime": scaled["runtime"].to_numpy(np.int64),
        "estimate": scaled["limit"].to_numpy(np.int64),
        "procs": scaled["nodes"].to_numpy(np.int32),
        "user_id": scaled["user_id"].to_numpy(np.int32),
        "queue": np.zeros(n, np.int32), "partition": np.zeros(n, np.int32)})
    jobs = replay(table, policy, procs=int(nodes)).jobs.set_index("job_id")
    jobs = jobs.loc[np.arange(1, n + 1)]
    return scaled.assign(start=jobs["start"].to_numpy(), end=jobs["end"].to_numpy(),
                         reservation=jobs["reservation"].to_numpy(),
                         backfilled=jobs["backfilled"].to_numpy().astype(bool))


def fcfs_backfilled(submit, start, job_order) -> np.ndarray:
    """Which jobs started while a job ahead of them in first-come-first-served order was
    still waiting (submitted at or before their start, started strictly after it).

    Args:
        submit, start: per job, seconds.
        job_order: per job, the tie-breaker of equal submits (job id or trace index).

    Returns:
        bool array.  For an FCFS policy this is the emulator's ``backfilled`` flag.
    """
    submit = np.asarray(submit, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    key = list(zip(submit.tolist(), np.asarray(job_order).tolist()))
    out = np.zeros(len(submit), dtype=bool)
    for j in range(len(submit)):
        for i in range(len(submit)):
            if key[i] < key[j] and submit[i] <= start[j] < start[i]:
                out[j] = True
                break
    return out


def submit_workload(backend: SlurmBackend, scaled: pd.DataFrame, *, partition: str | None = None,
                    name_prefix: str = "malleo-replay", workdir: str | None = None,
                    on_submit=None, clock=time.time, sleep=time.sleep) -> list[int]:
    """Submit every job of ``scaled`` at its submit offset from now, as ``sleep RUNTIME``.

    Args:
        backend: where to submit.
        scaled: from :func:`scale_workload`.
        partition: partition to submit to (None: Slurm's default).
        name_prefix: job names are ``PREFIX-JOBNUMBER``.
        workdir: the jobs' working directory (None: the current one); output goes to /dev/null.
        on_submit: called as ``on_submit(row_index, job_id)`` after each submission.

    Returns:
        Slurm job ids, one per row.
    """
    t0 = clock()
    ids = []
    for k, row in enumerate(scaled.itertuples(index=False)):
        delay = t0 + int(row.submit) - clock()
        if delay > 0:
            sleep(delay)
        job_id = backend.submit(wrap=f"sleep {int(row.runtime)}", nodes=int(row.nodes),
                                time_limit=int(row.limit), name=f"{name_prefix}-{row.job_number}",
                                partition=partition, output="/dev/null", workdir=workdir)
        ids.append(job_id)
        if on_submit is not None:
            on_submit(k, job_id)
    return ids


def wait_for_jobs(backend: SlurmBackend, job_ids: list[int], *, timeout: float | None = None,
                  poll: float = 1.0, clock=time.monotonic, sleep=time.sleep,
                  on_poll=None) -> dict:
    """Wait until every job has finished; return id -> :class:`Job` as last read.

    ``on_poll``, if given, is called after each read of the queue as
    ``on_poll(finished, running, total)`` (job counts; purged jobs count as finished).

    Raises:
        MalleoError: ``timeout`` seconds passed first (the message counts what is left).
    """
    deadline = None if timeout is None else clock() + timeout
    wanted = set(job_ids)
    while True:
        jobs = {j.job_id: j for j in backend.jobs(job_ids=wanted)}
        left = [j for j in wanted if j not in jobs or not jobs[j].is_finished]
        # A job Slurm no longer lists (purged after MinJobAge) cannot be waited for.
        left = [j for j in left if j in jobs]
        if on_poll is not None:
            running = sum(1 for j in left if jobs[j].is_running)
            on_poll(len(wanted) - len(left), running, len(wanted))
        if not left:
            return jobs
        if deadline is not None and clock() > deadline:
            raise MalleoError(f"timeout: {len(left)} of {len(wanted)} jobs still not finished "
                              f"after {timeout:g} s (first: {sorted(left)[:5]})")
        sleep(poll)


def observed_table(scaled: pd.DataFrame, job_ids: list[int], jobs: dict) -> pd.DataFrame:
    """One row per replayed job with :data:`OBSERVED_COLUMNS` (missing values -1 / "")."""
    rows = []
    for row, job_id in zip(scaled.itertuples(index=False), job_ids):
        job = jobs.get(job_id)
        submit = job.submit_time if job else -1
        start = job.start_time if job and job.start_time else -1
        end = job.end_time if job and job.end_time else -1
        rows.append({"job_number": int(row.job_number), "job_id": int(job_id),
                     "nodes": int(row.nodes), "runtime": int(row.runtime),
                     "limit": int(row.limit), "submit_offset": int(row.submit),
                     "submit": submit, "start": start, "end": end,
                     "wait": start - submit if start >= 0 and submit >= 0 else -1,
                     "state": job.state if job else "PURGED"})
    return pd.DataFrame(rows, columns=list(OBSERVED_COLUMNS))


def replay_on_slurm(backend: SlurmBackend, scaled: pd.DataFrame, output: str | Path | None = None,
                    *, partition: str | None = None, timeout: float | None = None,
                    workdir: str | None = None, on_submit=None, on_poll=None) -> pd.DataFrame:
    """Submit ``scaled``, wait for every job, and return (and write as CSV) what Slurm did.

    ``on_submit`` and ``on_poll``: progress callbacks of :func:`submit_workload` and
    :func:`wait_for_jobs`.
    """
    ids = submit_workload(backend, scaled, partition=partition, workdir=workdir,
                          on_submit=on_submit)
    jobs = wait_for_jobs(backend, ids, timeout=timeout, on_poll=on_poll)
    observed = observed_table(scaled, ids, jobs)
    if output is not None:
        observed.to_csv(output, index=False)
    return observed


def compare_with_emulator(observed: pd.DataFrame, expected: pd.DataFrame) -> dict:
    """How an observed FCFS schedule differs from the emulator's (order and backfilling).

    Returns:
        ``{"inversions": [(job_number, job_number)...], "backfilled_observed": [...],
        "backfilled_expected": [...], "not_started": [...]}``: pairs the emulator started
        strictly in one order and Slurm strictly in the other, and the backfilled sets.
    """
    from malleo.plugin.agent.shadow import inversions

    started = observed[observed["start"] >= 0]
    planned = dict(zip(expected["job_number"].tolist(), expected["start"].tolist()))
    starts = dict(zip(started["job_number"].tolist(), started["start"].tolist()))
    bf_obs = fcfs_backfilled(started["submit"], started["start"], started["job_id"])
    return {
        "inversions": inversions(planned, starts),
        "backfilled_observed": sorted(started["job_number"][bf_obs].tolist()),
        "backfilled_expected": sorted(expected["job_number"][expected["backfilled"]].tolist()),
        "not_started": sorted(observed["job_number"][observed["start"] < 0].tolist()),
    }

