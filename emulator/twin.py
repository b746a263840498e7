"""The emulator as Slurm's twin: a built-in workload, the emulator's replay of what Slurm was
given, and how closely the two schedules agree (``malleo slurm validate``).

Times are integer seconds; sizes are nodes (the validation runs node-exclusive jobs).  The
measures (docs/scheduling-semantics.md, "Slurm's own scheduler"):

* ``same_order_share``: the largest set of jobs that both schedules start in the same order
  (a pair counts as in order unless one schedule starts a strictly before b and the other b
  strictly before a), over all jobs: the longest non-decreasing subsequence of Slurm's starts
  once jobs are sorted by the emulator's (start, Slurm start).  One job started out of place
  costs one job, not every pair it crosses.
* backfilled in both: jobs both flag as backfilled (Slurm: the ``SchedBackfill`` flag of
  ``sacct``, set when its backfill pass started the job) over jobs either flags.
* ``|start difference|`` in scheduler cycles: ``|emulated - observed start| / cycle``, the
  start of both clocks being the first submit; the cycle is ``bf_interval`` seconds.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pandas as pd

from malleo.errors import MalleoError

SEED = 11
"""Seed of the built-in workload (chosen for robustness: see :func:`robust_share`)."""


def twin_workload(seed: int = SEED, jobs: int = 300, nodes: int = 16, *,
                  span: int = 150) -> pd.DataFrame:
    """A backfill-heavy workload for a live comparison, drawn from the project's workload
    model (Lublin-Feitelson sizes, runtimes, arrival order and users; Tsafrir estimates) and
    compressed to run in a few minutes on ``nodes`` nodes.

    Each job keeps its model size (on a machine of ``nodes`` processors: one node a
    processor), its user, its rank among the model's runtimes and its estimate's rank; those
    ranks are mapped log-uniformly onto 2..10 s runtimes and 1..10 minute time limits (never
    below the runtime).  Arrivals keep the model's order and relative gaps, squeezed into
    ``span`` seconds: the offered work is about twice what the nodes can run meanwhile, so
    a queue builds up and both priorities and backfilling decide the order.

    Returns:
        DataFrame with the columns of ``malleo.plugin.agent.load.SCALED_COLUMNS``
        (job_number, user_id, submit, runtime, limit, nodes), integer seconds, in
        (submit, job_number) order.
    """
    from malleo.emulator.workload import generate_lublin

    if jobs < 1 or nodes < 1 or span < 1:
        raise MalleoError(f"twin workload: jobs, nodes and span must be >= 1, "
                          f"got {jobs}, {nodes}, {span}")
    model = generate_lublin(jobs, nodes, seed=seed)
    run_rank = _ranks(model["run_time"].to_numpy())
    est_rank = _ranks(model["requested_time"].to_numpy())
    runtime = np.rint(np.exp(np.log(2) + run_rank * (np.log(10) - np.log(2)))).astype(np.int64)
    minutes = np.rint(np.exp(est_rank * np.log(10))).astype(np.int64)
    limit = np.maximum(minutes * 60, -(-runtime // 60) * 60)
    submit = model["submit_time"].to_numpy(dtype=np.float64)
    gaps = np.diff(submit, prepend=submit[0])
    gaps = np.sqrt(gaps)                 # keep the bursts, soften the model's long idle gaps
    offset = np.floor(np.cumsum(gaps) / max(gaps.sum(), 1.0) * span).astype(np.int64)
    return pd.DataFrame({
        "job_number": model["job_number"].to_numpy(dtype=np.int64),
        "user_id": model["user_id"].to_numpy(dtype=np.int64),
        "submit": offset - offset[0], "runtime": runtime, "limit": limit,
        "nodes": np.clip(model["requested_procs"].to_numpy(dtype=np.int64), 1, nodes)})


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks in [0, 1] (ties share their mean rank)."""
    ranks = pd.Series(values).rank(method="average").to_numpy()
    return (ranks - 1) / max(len(values) - 1, 1)


def same_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Which jobs form the largest set started in the same order by two schedules.

    Args:
        first, second: per job, start times (seconds) in the two schedules.

    Returns:
        bool mask of one largest consistent set (longest non-decreasing subsequence of
        ``second`` after sorting by (first, second)).
    """
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    order = np.lexsort((second, first))
    tails: list[int] = []          # smallest tail value of a chain of each length
    tail_idx: list[int] = []
    parent = np.full(len(order), -1, dtype=np.int64)
    for pos, job in enumerate(order):
        value = int(second[job])
        k = bisect_right(tails, value)
        if k == len(tails):
            tails.append(value)
            tail_idx.append(pos)
        else:
            tails[k] = value
            tail_idx[k] = pos
        parent[pos] = tail_idx[k - 1] if k > 0 else -1
    mask = np.zeros(len(order), dtype=bool)
    pos = tail_idx[-1] if tail_idx else -1
    while pos >= 0:
        mask[order[pos]] = True
        pos = parent[pos]
    return mask


def emulator_input(observed: pd.DataFrame, calc_period: int, calc_phase: int | None) -> tuple[
        pd.DataFrame, int]:
    """The workload as Slurm received it, for the emulator: submit times (whole seconds)
    from Slurm's records, runtimes as Slurm ran them (end - start), limits and sizes.

    The emulator's clock starts at ``base``: the first submit, moved back to the last
    instant ``t`` with ``t % calc_period == calc_phase`` (Slurm recomputes priorities every
    PriorityCalcPeriod from the controller's start, the emulator when ``now //
    calc_period`` changes); None keeps the first submit.

    Returns:
        (scaled workload with SCALED_COLUMNS, base epoch seconds).
    """
    first = int(observed["submit"].min())
    base = first
    if calc_phase is not None and calc_period > 0:
        base = first - ((first - calc_phase) % calc_period)
    table = pd.DataFrame({
        "job_number": observed["job_number"].to_numpy(dtype=np.int64),
        "user_id": observed["user_id"].to_numpy(dtype=np.int64)
        if "user_id" in observed else np.ones(len(observed), np.int64),
        "submit": observed["submit"].to_numpy(dtype=np.int64) - base,
        "runtime": np.maximum(observed["end"].to_numpy(dtype=np.int64)
                              - observed["start"].to_numpy(dtype=np.int64), 0),
        "limit": observed["limit"].to_numpy(dtype=np.int64),
        "nodes": observed["nodes"].to_numpy(dtype=np.int64)})
    order = np.lexsort((table["job_number"].to_numpy(), table["submit"].to_numpy()))
    return table.iloc[order].reset_index(drop=True), base


def compare(observed: pd.DataFrame, expected: pd.DataFrame, *, base: int,
            cycle: int) -> tuple[dict, pd.DataFrame]:
    """Compare Slurm's schedule with the emulator's.

    Args:
        observed: per job ``job_number``, ``job_id``, ``submit``, ``start``, ``end`` (epoch
            seconds), ``nodes``, ``limit``, ``slurm_backfilled`` (bool, or None unknown).
        expected: the emulator's schedule of :func:`emulator_input` (offsets from ``base``).
        base: epoch of the emulator's time 0.
        cycle: seconds of one scheduler cycle (bf_interval).

    Returns:
        (figures, per-job table).  Figures: ``jobs``, ``same_order_share``,
        ``backfilled_slurm``, ``backfilled_emulator``, ``backfilled_both``,
        ``backfilled_both_share``, ``start_diff_mean_cycles``, ``start_diff_p95_cycles``,
        ``cycle_seconds``, ``first_difference`` (text) and ``first_difference_jobs``.
    """
    table = pd.merge(observed, expected[["job_number", "start", "backfilled"]].rename(
        columns={"start": "emu_start", "backfilled": "emu_backfilled"}), on="job_number")
    if len(table) == 0:
        raise MalleoError("nothing to compare: no job both started in Slurm and emulated")
    table = table.assign(slurm_start=table["start"] - base, submit_offset=table["submit"] - base)
    mask = same_order(table["emu_start"].to_numpy(), table["slurm_start"].to_numpy())
    table["in_order"] = mask
    diff = np.abs(table["emu_start"].to_numpy() - table["slurm_start"].to_numpy()) / max(cycle, 1)
    table["start_diff_cycles"] = diff
    has_flag = table["slurm_backfilled"].notna().all()
    figures = {
        "jobs": int(len(table)),
        "same_order_share": float(mask.mean()),
        "out_of_order": int((~mask).sum()),
        "start_diff_mean_cycles": float(diff.mean()),
        "start_diff_p95_cycles": float(np.percentile(diff, 95)),
        "cycle_seconds": int(cycle),
        "backfilled_emulator": int(table["emu_backfilled"].sum()),
    }
    if has_flag:
        slurm_bf = table["slurm_backfilled"].astype(bool).to_numpy()
        emu_bf = table["emu_backfilled"].astype(bool).to_numpy()
        either = int((slurm_bf | emu_bf).sum())
        figures.update({"backfilled_slurm": int(slurm_bf.sum()),
                        "backfilled_both": int((slurm_bf & emu_bf).sum()),
                        "backfilled_both_share": float((slurm_bf & emu_bf).sum() / either)
                        if either else 1.0})
    else:
        figures.update({"backfilled_slurm": None, "backfilled_both": None,
                        "backfilled_both_share": None})
    text, jobs = first_difference(table)
    figures["first_difference"] = text
    figures["first_difference_jobs"] = jobs
    return figures, table.sort_values(["slurm_start", "job_id"]).reset_index(drop=True)


def first_difference(table: pd.DataFrame) -> tuple[str, list[int]]:
    """The earliest decision the two schedules disagree on, in words.

    The first job (by Slurm's start) outside the same-order set, and the job it was
    swapped with: the one the emulator started strictly before it that Slurm started
    strictly after (or the reverse).
    """
    out = table[~table["in_order"]].sort_values(["slurm_start", "job_id"])
    if len(out) == 0:
        return "none: every job started in the same order", []
    job = out.iloc[0]
    rows = table[table["job_number"] != job["job_number"]]
    swapped = rows[((rows["emu_start"] < job["emu_start"]) & (rows["slurm_start"] > job["slurm_start"]))
                   | ((rows["emu_start"] > job["emu_start"])
                      & (rows["slurm_start"] < job["slurm_start"]))]
    if len(swapped):
        other = swapped.iloc[np.argmin(np.abs(swapped["emu_start"] - job["emu_start"]))]
    else:
        other = None

    def describe(row) -> str:
        flag = row["slurm_backfilled"]
        slurm_how = ("" if flag is None or (isinstance(flag, float) and np.isnan(flag))
                     else (" by its backfill pass" if flag else " by its main scheduler"))
        return (f"job {int(row['job_number'])} (Slurm id {int(row['job_id'])}, "
                f"{int(row['nodes'])} nodes, limit {int(row['limit']) // 60} min, submitted "
                f"+{int(row['submit_offset'])} s): Slurm started it at +{int(row['slurm_start'])} s"
                f"{slurm_how}, the emulator at +{int(row['emu_start'])} s"
                f"{' (backfilled)' if row['emu_backfilled'] else ''}")

    if other is None:
        return describe(job), [int(job["job_number"])]
    first, second = (job, other) if job["slurm_start"] <= other["slurm_start"] else (other, job)
    return ("Slurm started " + describe(first) + "; before " + describe(second)
            + ". The emulator's order of these two is the reverse: "
            + _why(first, second)), [int(first["job_number"]), int(second["job_number"])]


def _why(first, second) -> str:
    """A short hypothesis for a swapped pair from their times."""
    gap = abs(int(first["slurm_start"]) - int(second["emu_start"]))
    if abs(int(first["slurm_start"]) - int(first["emu_start"])) <= 1 and gap <= 1:
        return ("both decisions fall within one second: a start latency or a cycle boundary "
                "decided which went first")
    if int(first["submit_offset"]) > int(second["emu_start"]):
        return ("Slurm started the later-submitted job first although the emulator had "
                "started the other before that job arrived: Slurm's start came late")
    return ("the queues differed at that moment (an earlier job ended at another time, or "
            "the priorities were computed at another instant)")


def robust_share(scaled: pd.DataFrame, policy, nodes: int, *, trials: int = 20,
                 latency: int = 10, seed: int = 1) -> float:
    """The lowest same-order share between the emulator's schedule of ``scaled`` and its
    schedules when every job runs up to ``latency`` tenths of a second longer (a start
    latency that delays every later event), over ``trials`` draws (tenths of seconds)."""
    from malleo.plugin.agent.load import expected_schedule

    rng = np.random.default_rng(seed)
    base = expected_schedule(scaled.assign(submit=scaled["submit"] * 10,
                                           runtime=scaled["runtime"] * 10,
                                           limit=scaled["limit"] * 10), _tenths(policy), nodes)
    worst = 1.0
    for _ in range(trials):
        n = len(scaled)
        jittered = scaled.assign(submit=scaled["submit"] * 10,
                                 runtime=scaled["runtime"] * 10 + rng.integers(0, latency + 1, n),
                                 limit=scaled["limit"] * 10)
        e = expected_schedule(jittered, _tenths(policy), nodes)
        worst = min(worst, float(same_order(base["start"].to_numpy(),
                                            e["start"].to_numpy()).mean()))
    return worst


def _tenths(policy):
    """The policy on a clock of tenths of seconds."""
    mf = policy.multifactor
    return policy.replace(bf_window=policy.bf_window * 10,
                          bf_resolution=policy.bf_resolution * 10,
                          multifactor=type(mf)(**{**mf.__dict__, "max_age": mf.max_age * 10,
                                                  "half_life": mf.half_life * 10,
                                                  "calc_period": mf.calc_period * 10}))


def synced_replay(scaled: pd.DataFrame, slurm_start: np.ndarray, policy, nodes: int
                  ) -> pd.DataFrame:
    """The emulator's decisions re-synchronised with what Slurm did: at every second at
    which something happened in Slurm (a submit, a start, an end), one scheduling pass of
    the core (``malleo._core.plan``, the agent's planner) on Slurm's real state then.

    Running: the jobs Slurm started before ``t`` that end after ``t``; pending: the jobs
    submitted by ``t`` that Slurm had not started before ``t``.  A job's synchronised start
    is the first such ``t`` at which the pass starts it.  Multifactor priorities persist from
    pass to pass and are recomputed when ``t // calc_period`` changes (the plan state carries
    the calculation time), as in a replay.  This measures each decision of the model on the
    state Slurm really was in, without the divergence a free-running replay accumulates
    once one start differs (docs/scheduling-semantics.md).

    Args:
        scaled: from :func:`emulator_input` (submit offsets, runtimes as run in Slurm).
        slurm_start: per row of ``scaled``, Slurm's start (same clock), -1 never started.
        policy, nodes: the imported policy and the cluster's nodes.

    Returns:
        ``scaled`` plus ``start`` (first pass that started it, -1 none) and ``backfilled``.
    """
    from malleo._core import plan

    submit = scaled["submit"].to_numpy(dtype=np.int64)
    runtime = scaled["runtime"].to_numpy(dtype=np.int64)
    limit = scaled["limit"].to_numpy(dtype=np.int64)
    size = scaled["nodes"].to_numpy(dtype=np.int64)
    user = scaled["user_id"].to_numpy(dtype=np.int64)
    s_start = np.asarray(slurm_start, dtype=np.int64)
    s_end = np.where(s_start >= 0, s_start + runtime, -1)
    times = np.unique(np.concatenate([submit, s_start[s_start >= 0], s_end[s_end >= 0]]))
    first = np.full(len(scaled), -1, dtype=np.int64)
    backfilled = np.zeros(len(scaled), dtype=bool)
    prio = np.full(len(scaled), np.nan)
    state = None
    for t in times.tolist():
        run = np.flatnonzero((s_start >= 0) & (s_start < t) & (s_end > t))
        pend = np.flatnonzero((submit <= t) & ((s_start < 0) | (s_start >= t)))
        if len(pend) == 0:
            continue
        running = {"procs": size[run], "start": s_start[run], "est": limit[run],
                   "request": limit[run], "user": user[run]}
        pending = {"submit": submit[pend], "procs": size[pend], "request": limit[pend],
                   "user": user[pend], "priority": prio[pend]}
        decisions = plan(int(t), int(nodes), running, pending, policy, state)
        state = decisions.state
        if policy.order == "multifactor":
            prio[pend] = decisions.priority
        for k in decisions.start.tolist():
            j = pend[k]
            if first[j] < 0:
                first[j] = t
                backfilled[j] = bool(decisions.backfilled[k])
    return scaled.assign(start=first, backfilled=backfilled)
