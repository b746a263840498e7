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
from malleo.limits import MAX_TIME

SEED = 11
"""Seed of the built-in workload (chosen for robustness: see :func:`robust_share`)."""


def twin_workload(seed: int = SEED, jobs: int = 300, nodes: int = 16, *,
                  span: int = 120) -> pd.DataFrame:
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
        DataFrame with the columns of ``malleo.plugin.slurm_replay.SCALED_COLUMNS``
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
            cycle: int, scale: int = 1) -> tuple[dict, pd.DataFrame]:
    """Compare Slurm's schedule with the emulator's.

    Args:
        observed: per job ``job_number``, ``job_id``, ``submit``, ``start``, ``end`` (epoch
            seconds), ``nodes``, ``limit``, ``slurm_backfilled`` (bool, or None unknown).
        expected: the emulator's schedule of :func:`emulator_input` (offsets from ``base``).
        base: epoch of the emulator's time 0.
        cycle: seconds of one scheduler cycle (bf_interval).
        scale: time units a second (1000 when the times are milliseconds); figures and
            texts are in seconds and cycles whatever it is.

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
    table = table.assign(slurm_start=(table["start"] - base) / scale,
                         submit_offset=(table["submit"] - base) / scale)
    never = table["emu_start"].to_numpy() < 0
    table["emu_start"] = np.where(never, np.nan, table["emu_start"] / scale)
    emu = np.where(never, np.inf, table["emu_start"].to_numpy())
    slurm = table["slurm_start"].to_numpy()
    mask = same_order(np.rint(np.where(never, 1e15, emu) * scale).astype(np.int64),
                      np.rint(slurm * scale).astype(np.int64))
    table["in_order"] = mask
    diff = np.abs(emu - slurm) / max(cycle, 1)
    table["start_diff_cycles"] = diff
    diff = diff[~never] if (~never).any() else np.zeros(1)
    has_flag = table["slurm_backfilled"].notna().all()
    figures = {
        "jobs": int(len(table)),
        "same_order_share": float(mask.mean()),
        "out_of_order": int((~mask).sum()),
        "not_started_by_emulator": int(never.sum()),
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
    emu_job = np.inf if np.isnan(job["emu_start"]) else job["emu_start"]
    emu_rows = rows["emu_start"].fillna(np.inf)
    swapped = rows[((emu_rows < emu_job) & (rows["slurm_start"] > job["slurm_start"]))
                   | ((emu_rows > emu_job) & (rows["slurm_start"] < job["slurm_start"]))]
    if len(swapped):
        other = swapped.iloc[np.argmin(np.abs(swapped["slurm_start"].to_numpy()
                                              - job["slurm_start"]))]
    else:
        other = None

    def describe(row) -> str:
        flag = row["sched_backfill_flag"] if "sched_backfill_flag" in row.index else None
        slurm_how = ("" if flag is None or (isinstance(flag, float) and np.isnan(flag))
                     else (" by its backfill pass" if flag else " by its main scheduler"))
        if row["slurm_backfilled"] is True or row["slurm_backfilled"] == 1:
            slurm_how += " (past a waiting job)"
        emu = ("never" if np.isnan(row["emu_start"]) else f"at +{row['emu_start']:.2f} s"
               + (" (backfilled)" if row["emu_backfilled"] else ""))
        return (f"job {int(row['job_number'])} (Slurm id {int(row['job_id'])}, "
                f"{int(row['nodes'])} nodes, limit {int(row['limit']) // 60} min, submitted "
                f"+{row['submit_offset']:.2f} s): Slurm started it at "
                f"+{row['slurm_start']:.2f} s{slurm_how}, the emulator {emu}")

    if other is None:
        return describe(job), [int(job["job_number"])]
    first, second = (job, other) if job["slurm_start"] <= other["slurm_start"] else (other, job)
    return ("Slurm started " + describe(first) + "; before " + describe(second)
            + ". The emulator's order of these two is the reverse: "
            + _why(first, second)), [int(first["job_number"]), int(second["job_number"])]


def _why(first, second) -> str:
    """A short hypothesis for a swapped pair from their times."""
    if np.isnan(first["emu_start"]) or np.isnan(second["emu_start"]):
        return ("the model never started one of them on the state Slurm was in at its passes "
                "(it ranked other jobs first or saw no room that did not delay a reservation)")
    gap = abs(first["slurm_start"] - second["emu_start"])
    if abs(first["slurm_start"] - first["emu_start"]) <= 1 and gap <= 1:
        return ("both decisions fall within one second: a start latency or a cycle boundary "
                "decided which went first")
    if first["submit_offset"] > second["emu_start"]:
        return ("Slurm started the later-submitted job first although the emulator had "
                "started the other before that job arrived: Slurm's start came late")
    return ("the queues differed at that moment (an earlier job ended at another time, or "
            "the priorities were computed at another instant)")


def robust_share(scaled: pd.DataFrame, policy, nodes: int, *, trials: int = 20,
                 latency: int = 10, seed: int = 1) -> float:
    """The lowest same-order share between the emulator's schedule of ``scaled`` and its
    schedules when every job runs up to ``latency`` tenths of a second longer (a start
    latency that delays every later event), over ``trials`` draws (tenths of seconds)."""
    from malleo.plugin.slurm_replay import expected_schedule

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




def read_controller_log(path, job_ids) -> dict:
    """Sub-second facts from slurmctld's log (``[YYYY-MM-DDTHH:MM:SS.mmm]`` stamps, the
    local time of the machine): per job id the submit, start and end instants and which
    scheduler started it, and the instants at which the backfill pass ran (a pass is a run
    of ``_attempt_backfill`` lines less than 0.2 s apart; needs DebugFlags=Backfill, which
    ``malleo slurm validate`` switches on for its run).

    Returns:
        ``{"submit": {id: s}, "start": {id: s}, "end": {id: s}, "by": {id: "backfill" |
        "main"}, "init_prio": {id: p}, "bf_passes": [s, ...], "main_passes": [s, ...]}``
        (main passes: the ``Running job scheduler`` lines of SlurmctldDebug=debug), epoch
        seconds as floats; empty when the file cannot be read.
    """
    import re
    import time as _time

    wanted = {int(j) for j in job_ids}
    out = {"submit": {}, "start": {}, "end": {}, "by": {}, "init_prio": {}, "bf_passes": [],
           "main_passes": []}
    stamp = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?\] (.*)$")
    job = re.compile(r"JobId=(\d+)")
    cache: dict[str, float] = {}
    last_bf = -1.0
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return out
    with handle:
        for line in handle:
            m = stamp.match(line)
            if not m:
                continue
            text = m.group(3)
            if "_attempt_backfill" not in text and "JobId=" not in text \
                    and "Running job scheduler" not in text:
                continue
            base = cache.get(m.group(1))
            if base is None:
                base = float(_time.mktime(_time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")))
                cache[m.group(1)] = base
            t = base + (float(m.group(2)) if m.group(2) else 0.0)
            if "_attempt_backfill" in text:
                if t - last_bf > 0.2:
                    out["bf_passes"].append(t)
                last_bf = t
            if "Running job scheduler" in text:
                out["main_passes"].append(t)
            j = job.search(text)
            if not j or int(j.group(1)) not in wanted:
                continue
            jid = int(j.group(1))
            if "_slurm_rpc_submit_batch_job" in text:
                out["submit"][jid] = t
                p = re.search(r"InitPrio=(\d+)", text)
                if p:
                    out["init_prio"][jid] = int(p.group(1))
            elif "Started JobId" in text:       # the last start counts (a requeued job
                out["start"][jid] = t           # starts again)
                out["by"][jid] = "backfill"
            elif "sched: Allocate JobId" in text:
                out["start"][jid] = t
                out["by"][jid] = "main"
            elif "_job_complete" in text and text.rstrip().endswith("done"):
                out["end"][jid] = t
    return out


def synced_passes(observed: pd.DataFrame, log: dict | None, cycle: int,
                  sched_interval: int = 60) -> tuple[
        pd.DataFrame, list[tuple[float, bool]]]:
    """Per job the instants (epoch seconds, floats) of submit, start and end, and the
    scheduling passes to replay: ``(instant, is_backfill)``.

    From the controller log when it covers every job (sub-second, the passes Slurm ran:
    each backfill pass and each main-scheduler pass; without those lines, passes every
    ``cycle`` and ``sched_interval`` seconds at the phase of the starts each made);
    otherwise from sacct's whole seconds, with a backfill pass every ``cycle`` seconds and a
    main pass at every second something was submitted or ended.
    """
    ids = observed["job_id"].astype(int).tolist()
    times = observed[["job_number", "job_id", "nodes", "limit", "user_id"]].copy()
    complete = bool(log) and all(j in log["submit"] and j in log["start"] and j in log["end"]
                                 for j in ids)
    if complete:
        times["t_submit"] = [log["submit"][j] for j in ids]
        times["t_start"] = [log["start"][j] for j in ids]
        times["t_end"] = [log["end"][j] for j in ids]
        first, last = times["t_submit"].min(), times["t_end"].max()
        passes = [(t, True) for t in log["bf_passes"] if first <= t <= last]
        if not passes:
            passes = _periodic(log, ids, "backfill", cycle, first, last, True)
        mains = [(t, False) for t in log["main_passes"] if first <= t <= last]
        if not mains:
            mains = _periodic(log, ids, "main", sched_interval, first, last, False)
        passes += mains
    else:
        times["t_submit"] = observed["submit"].to_numpy(dtype=float)
        times["t_start"] = observed["start"].to_numpy(dtype=float)
        times["t_end"] = observed["end"].to_numpy(dtype=float)
        first, last = times["t_submit"].min(), times["t_end"].max()
        passes = [(float(t), True) for t in np.arange(first, last + cycle, cycle)]
        mains = np.unique(np.concatenate([times["t_submit"].to_numpy(),
                                          times["t_end"].to_numpy()]))
        passes += [(float(t), False) for t in mains]
    passes.sort()
    times.attrs["source"] = "controller log" if complete else "sacct (whole seconds)"
    return times, passes


def _periodic(log: dict, ids, by: str, period: int, first: float, last: float,
              is_bf: bool) -> list[tuple[float, bool]]:
    """Passes every ``period`` seconds at the phase of the starts the ``by`` scheduler made
    (the median of their instants modulo the period)."""
    made = [log["start"][j] for j in ids if log["by"].get(j) == by]
    if not made:
        return []
    phase = float(np.median([t % period for t in made]))
    k0 = int((first - phase) // period)
    return [(phase + k * period, is_bf) for k in range(k0, int((last - phase) // period) + 2)]


def synced_replay_log(times: pd.DataFrame, passes, policy, nodes: int, *, base: float,
                      calc_period: int, calc_phase: float | None) -> pd.DataFrame:
    """The model's decisions on Slurm's real state at Slurm's own scheduling instants.

    At each pass instant (from :func:`synced_passes`): running = jobs Slurm started before it
    and that had not ended; pending = jobs submitted before it that Slurm had not started
    before it.  A backfill pass is one pass of the core (``malleo._core.plan``) with the
    policy; a main-scheduler pass the same with ``backfill = "none"`` (Slurm's main
    scheduler starts jobs in priority order and stops at the first that does not fit).
    Multifactor priorities are Slurm's: a new job's is computed at its submit instant (age
    0), and every pending job's again at each instant ``calc_phase + k * calc_period``
    (Slurm's decay thread), with its age then; passes use them as they stand.  Times inside
    are milliseconds from ``base``.  Fair share counts no usage (factor 1).

    Returns:
        ``times`` plus ``start`` (ms from base of the first pass that started the job, -1
        if none), ``backfilled``, ``slurm_start_ms`` and ``slurm_jumped`` (Slurm started
        it while a job ahead of it in the model's queue order kept waiting: backfilled in
        the emulator's sense).
    """
    from malleo._core import plan

    def ms(x):
        return np.rint((np.asarray(x, dtype=float) - base) * 1000).astype(np.int64)

    submit, s_start, s_end = ms(times["t_submit"]), ms(times["t_start"]), ms(times["t_end"])
    limit = times["limit"].to_numpy(dtype=np.int64) * 1000
    size = times["nodes"].to_numpy(dtype=np.int64)
    user = times["user_id"].to_numpy(dtype=np.int64)
    mf = policy.multifactor
    big = MAX_TIME                          # "never" on the millisecond clock (795 days)
    scaled_mf = type(mf)(**{**mf.__dict__, "max_age": mf.max_age * 1000,
                            "half_life": mf.half_life * 1000, "calc_period": big})
    bf_policy = policy.replace(bf_window=policy.bf_window * 1000,
                               bf_resolution=policy.bf_resolution * 1000, multifactor=scaled_mf)
    main_policy = bf_policy.replace(backfill="none")
    from malleo._core import PlanState
    from malleo._core.priority import multifactor_priority

    first = np.full(len(times), -1, dtype=np.int64)
    backfilled = np.zeros(len(times), dtype=bool)
    is_mf = policy.order == "multifactor"
    prio = np.full(len(times), np.nan)
    if is_mf:
        prio = np.array([multifactor_priority(scaled_mf, int(t), int(t), int(n), int(nodes), 1.0)
                         for t, n in zip(submit, size)])
    state = PlanState()
    state.calc_time = 0                     # priorities come from here, never recomputed
    period = calc_period * 1000
    next_calc = None
    if is_mf and calc_phase is not None:
        next_calc = int(round((calc_phase - base) * 1000)) % period
    jumped = np.zeros(len(times), dtype=bool)
    skipped = 0
    instants = [int(round((instant - base) * 1000)) for instant, _ in passes]
    for i, (instant, is_bf) in enumerate(passes):
        now = instants[i]
        if now < 0:
            continue
        while next_calc is not None and next_calc <= now:
            waiting = np.flatnonzero((submit <= next_calc) & (s_start >= next_calc))
            for j in waiting.tolist():       # Slurm's decay thread at next_calc
                prio[j] = multifactor_priority(scaled_mf, int(next_calc), int(submit[j]),
                                               int(size[j]), int(nodes), 1.0)
            next_calc += period
        run = np.flatnonzero((s_start < now) & (s_end > now))
        pend = np.flatnonzero((submit <= now) & (s_start >= now))
        if len(pend) == 0:
            continue
        if size[run].sum() > nodes:
            skipped += 1        # the log's instants overlap here (a start logged before
            continue            # the end that freed its nodes): no state to replay
        pend = pend[np.lexsort((times["job_id"].to_numpy()[pend], submit[pend]))]
        until = instants[i + 1] if i + 1 < len(instants) else now + 1
        for j in pend[(s_start[pend] >= now) & (s_start[pend] < until)].tolist():
            # Slurm started j by this pass: was a job ahead of it (the model's queue
            # order) left waiting?  The emulator's meaning of "backfilled".
            later = pend[s_start[pend] > s_start[j]]
            ahead = (prio[later] > prio[j]) | ((prio[later] == prio[j])
                                                & (submit[later] < submit[j])) if is_mf \
                else submit[later] < submit[j]
            jumped[j] = bool(ahead.any())
        running = {"procs": size[run], "start": s_start[run], "est": limit[run],
                   "request": limit[run], "user": user[run]}
        pending = {"submit": submit[pend], "procs": size[pend], "request": limit[pend],
                   "user": user[pend], "priority": prio[pend]}
        decisions = plan(now, int(nodes), running, pending,
                         bf_policy if is_bf else main_policy, state)
        for k in decisions.start.tolist():
            j = pend[k]
            if first[j] < 0:
                first[j] = now
                backfilled[j] = bool(decisions.backfilled[k])
    out = times.assign(start=first, backfilled=backfilled, slurm_start_ms=s_start,
                       slurm_jumped=jumped)
    out.attrs["passes_skipped"] = skipped
    out.attrs["passes"] = len(passes)
    return out


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
