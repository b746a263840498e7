"""A tuning run: evaluate the default policy and the search's trials, stream the rows to the
results file, and rank them.

Trials run in a local process pool (``workers`` processes, each loading the trace once)
or as a Slurm job array through submitit (:mod:`malleo.emulator.tune.slurm`).  Every
finished trial is appended to the results file at once, so an interrupted run resumes
where it stopped.
"""
from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from malleo.emulator.tune.evaluate import DEFAULT_TRIAL, Context, Setup, evaluate, params_key
from malleo.emulator.tune.objective import Objective
from malleo.emulator.tune.results import ResultsFile, private_dir
from malleo.emulator.tune.search import SEARCHES, TpeSearch, fixed_points, DEFAULT_TRIALS
from malleo.emulator.tune.space import Space
from malleo.emulator.tune.space_limits import check_space_size
from malleo.errors import MalleoError
from malleo.policy import Policy

__all__ = ["TuneResult", "run_tune", "score_rows", "TrialBar", "default_results_path"]


def default_results_path(setup: Setup, fingerprint: str | None = None) -> str:
    """Where a run keeps its results without ``--results``: ``TRACE.FINGERPRINT.tune.csv``
    in the user's private state directory (:func:`malleo.emulator.tune.results.private_dir`),
    so the same trace and setup resume, and no other user can plant or read the file."""
    name = Path(setup.trace).name.removesuffix(".gz") if setup.trace else "default-workload"
    return str(private_dir("tune") / f"{name}.{fingerprint or setup.fingerprint()}.tune.csv")


@dataclass
class TuneResult:
    """The outcome of a tuning run.

    Attributes:
        rows: every recorded trial (results-file columns) plus ``train_score`` and
            ``test_score`` under the run's objective, sorted best train score first;
            the default policy's row (trial -1) is not among them.
        default: the default policy's row (with its scores).
        best: the best trial's row (lowest train score), or None if every trial failed.
        best_policy: the best trial's policy, or None.
        failed: rows of trials that failed in this run (status "failed").
        objective: the objective the scores use.
        cut_time: submit time (s) where the test part starts, None without a split.
    """

    rows: pd.DataFrame
    default: dict[str, Any]
    best: dict[str, Any] | None
    best_policy: Policy | None
    failed: list[dict[str, Any]]
    objective: Objective
    cut_time: int | None


def score_rows(rows: pd.DataFrame, objective: Objective) -> pd.DataFrame:
    """``rows`` with ``train_score`` and ``test_score`` columns under ``objective``."""
    rows = rows.copy()
    for part in ("train", "test"):
        rows[f"{part}_score"] = [
            objective.score({key: row.get(f"{part}_{key}") for _, key, _ in objective.terms})
            for row in rows.to_dict("records")]
    return rows


def run_tune(setup: Setup, space: Space, objective: Objective, *, search: str = "tpe",
             trials: int | None = None, seed: int = 0, workers: int | None = None,
             results_path: str | os.PathLike | None = None, executor: str = "local",
             slurm: dict[str, Any] | None = None,
             on_row: Callable[[dict[str, Any], int, int], None] | None = None) -> TuneResult:
    """Run a tuning search (see docs/tuning.md).

    Args:
        setup: the trace, machine, split and fixed values.
        space: the search space.
        objective: the score to minimise.
        search: ``grid``, ``random`` or ``tpe``.
        trials: trials to run (grid: the first N points; default: the whole grid, or
            :data:`DEFAULT_TRIALS`).
        seed: seed of the random and TPE searches.
        workers: local processes (default: the core count); 1 runs in this process.
        results_path: the results CSV (resumed when it exists; refused when it is a
            link or owned by another user); None: :func:`default_results_path`, in the
            user's private state directory.
        executor: ``local`` or ``slurm``.
        slurm: options of the Slurm executor (:func:`malleo.emulator.tune.slurm.run_array`).
        on_row: called after each finished trial with ``(row, done, total)``.

    Raises:
        MalleoError: a bad argument, a space above :mod:`malleo.emulator.tune.space_limits`,
            a split leaving no jobs, a results file of another setup or not safely ours,
            or a Slurm executor problem.
    """
    if search not in SEARCHES:
        raise MalleoError(f"search: must be one of {', '.join(SEARCHES)}, got {search!r}")
    if trials is not None and trials < 1:
        raise MalleoError(f"trials: must be >= 1, got {trials}")
    if executor not in ("local", "slurm"):
        raise MalleoError(f"executor: must be local or slurm, got {executor!r}")
    check_space_size(space, search, trials)
    workers = workers or os.cpu_count() or 1
    context = Context.get(setup)         # reads the trace once here: errors surface early
    fingerprint = setup.fingerprint()
    if results_path is None:
        results_path = default_results_path(setup, fingerprint)
    results = ResultsFile(results_path, fingerprint)
    failed: list[dict[str, Any]] = []

    if search == "tpe":
        total = DEFAULT_TRIALS if trials is None else trials
    else:
        points = fixed_points(space, search, trials, seed)
        total = len(points)
    total += 1                                                    # the default policy
    progress = {"done": 0}

    def record(row: dict[str, Any]) -> None:
        results.append(row)
        if row["status"] != "ok":
            failed.append(row)
        progress["done"] += 1
        if on_row is not None:
            on_row(row, progress["done"], total)

    def pending_of(points: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict]]:
        todo = []
        for trial, params in points:
            if results.has(trial, params_key(params)):
                progress["done"] += 1
            else:
                todo.append((trial, params))
        return todo

    first = pending_of([(DEFAULT_TRIAL, {})])
    if search != "tpe":
        todo = first + pending_of(points)
        if executor == "slurm":
            from malleo.emulator.tune.slurm import run_array

            run_array(setup, todo, record, **(slurm or {}))
        else:
            _run_local(setup, todo, workers, record)
    else:
        done = [r for r in results.rows() if int(r["trial"]) != DEFAULT_TRIAL]
        # A resumed run seeds its sampler differently, else its first (random start-up)
        # draws would repeat the recorded ones.
        tpe = TpeSearch(space, seed + len(done))
        for row in sorted(done, key=lambda r: int(r["trial"])):
            score = objective.score({k: row.get(f"train_{k}") for _, k, _ in objective.terms}) \
                if row["status"] == "ok" else float("nan")
            tpe.add_done(int(row["trial"]), json.loads(row["params"]), score)
        progress["done"] += sum(1 for r in done if r["status"] == "ok")
        remaining = max(0, total - 1 - sum(1 for r in done if r["status"] == "ok"))
        if executor == "slurm":
            from malleo.emulator.tune.slurm import run_array

            if first:
                run_array(setup, first, record, **(slurm or {}))
            batch = max(1, int((slurm or {}).get("array_size") or workers))
            while remaining > 0:
                asked = []
                for _ in range(min(batch, remaining)):
                    point = tpe.ask()
                    if point is None:
                        break
                    asked.append(point)
                if not asked:
                    break
                scores: dict[int, float] = {}

                def told(row, scores=scores):
                    record(row)
                    scores[int(row["trial"])] = _train_score(row, objective)
                run_array(setup, asked, told, **(slurm or {}))
                for number, _ in asked:
                    tpe.tell(number, scores.get(number, float("nan")))
                remaining -= len(asked)
        else:
            _run_tpe_local(setup, tpe, first, remaining, workers, objective, record)

    rows = score_rows(pd.DataFrame(results.rows()), objective)
    default_rows = rows[rows["trial"] == DEFAULT_TRIAL]
    if default_rows.empty or default_rows.iloc[0]["status"] != "ok":
        error = default_rows.iloc[0]["error"] if not default_rows.empty else "not run"
        raise MalleoError(f"the default policy's replay failed: {error}")
    default = default_rows.iloc[0].to_dict()
    rows = rows[rows["trial"] != DEFAULT_TRIAL]
    ok = rows[rows["status"] == "ok"].sort_values(["train_score", "trial"], na_position="last")
    rows = pd.concat([ok, rows[rows["status"] != "ok"]]).reset_index(drop=True)
    best = ok.iloc[0].to_dict() if len(ok) and ok.iloc[0]["train_score"] == \
        ok.iloc[0]["train_score"] else None
    best_policy = space.policy(json.loads(best["params"])) if best is not None else None
    return TuneResult(rows, default, best, best_policy, failed, objective, context.cut_time)


def _train_score(row: dict[str, Any], objective: Objective) -> float:
    if row["status"] != "ok":
        return float("nan")
    return objective.score({k: row.get(f"train_{k}") for _, k, _ in objective.terms})


def _pool(setup: Setup, workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, initializer=_warm, initargs=(setup,))


def _warm(setup: Setup) -> None:
    """Pool initializer: load the trace once per worker process."""
    Context.get(setup)


def _run_local(setup: Setup, todo: list[tuple[int, dict]], workers: int,
               record: Callable[[dict], None]) -> None:
    if not todo:
        return
    if workers <= 1 or len(todo) == 1:
        for trial, params in todo:
            record(evaluate(setup, trial, params))
        return
    with _pool(setup, min(workers, len(todo))) as pool:
        futures = [pool.submit(evaluate, setup, trial, params) for trial, params in todo]
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                record(future.result())


def _run_tpe_local(setup: Setup, tpe: TpeSearch, first: list[tuple[int, dict]],
                   remaining: int, workers: int, objective: Objective,
                   record: Callable[[dict], None]) -> None:
    if workers <= 1:
        for trial, params in first:
            record(evaluate(setup, trial, params))
        for _ in range(remaining):
            point = tpe.ask()
            if point is None:
                break
            number, params = point
            row = evaluate(setup, number, params)
            record(row)
            tpe.tell(number, _train_score(row, objective))
        return
    with _pool(setup, workers) as pool:
        in_flight: dict[Future, int | None] = {
            pool.submit(evaluate, setup, trial, params): None for trial, params in first}
        while remaining > 0 or in_flight:
            while remaining > 0 and len(in_flight) < workers:
                point = tpe.ask()
                if point is None:
                    # Nothing new while points are in flight: their scores may
                    # steer the sampler elsewhere, so ask again once they are told.
                    if not any(n is not None for n in in_flight.values()):
                        remaining = 0
                    break
                number, params = point
                in_flight[pool.submit(evaluate, setup, number, params)] = number
                remaining -= 1
            finished, _ = wait(set(in_flight), return_when=FIRST_COMPLETED)
            for future in finished:
                number = in_flight.pop(future)
                row = future.result()
                record(row)
                if number is not None:
                    tpe.tell(number, _train_score(row, objective))


class TrialBar:
    """A progress bar of finished trials on stderr: ``[#####-----] 12/40  best 3.21  ETA 20 s``.

    Redrawn in place on a terminal; elsewhere one line at every tenth of the run, and at
    least one every :attr:`every` seconds (60) while trials finish, so a long tune shows
    it is alive in a log too.
    """

    every = 60.0

    def __init__(self, objective: Objective, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.is_tty = self.stream.isatty()
        self.objective = objective
        self.best = float("nan")
        self.failed = 0
        self.started = time.monotonic()
        self._last_tenth = -1
        self._last_line = self.started

    def __call__(self, row: dict[str, Any], done: int, total: int) -> None:
        score = _train_score(row, self.objective)
        if row["status"] != "ok":
            self.failed += 1
        elif int(row["trial"]) != DEFAULT_TRIAL and not (score >= self.best):
            self.best = score
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / max(total, 1))
        elapsed = time.monotonic() - self.started
        eta = elapsed / done * (total - done) if done else float("nan")
        line = (f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} trials"
                f"  best {self.best:.4g}" + (f"  failed {self.failed}" if self.failed else "")
                + (f"  ETA {eta:.0f} s" if done < total and eta == eta else "")
                + (f"  done in {elapsed:.1f} s" if done >= total else ""))
        if self.is_tty:
            self.stream.write("\r\x1b[K" + line + ("\n" if done >= total else ""))
            self.stream.flush()
        else:
            tenth = int(10 * done / max(total, 1))
            now = time.monotonic()
            if tenth != self._last_tenth or done >= total or now - self._last_line >= self.every:
                self._last_tenth = tenth
                self._last_line = now
                self.stream.write(line + "\n")
                self.stream.flush()
