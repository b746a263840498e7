"""The tuning results file: one CSV row per finished trial, appended as trials finish.

Rows are written and flushed one by one, so an interrupted run loses only the trials in
flight; a rerun with the same ``--results`` file skips every trial already recorded as
``ok`` (failed trials run again).  The first column, ``setup``, is the fingerprint of the
run's setup (:meth:`Setup.fingerprint`): a file made for another trace, split or fixed
values is refused rather than mixed.  Scores are not stored: they are computed from the
recorded metrics, so one results file serves any objective.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from malleo.emulator.tune.objective import RECORDED_METRICS
from malleo.errors import MalleoError

__all__ = ["COLUMNS", "ResultsFile", "read_results", "is_results_table"]

COLUMNS: tuple[str, ...] = (
    "setup", "trial", "params", "policy", "status", "error", "seconds",
    "train_jobs", "test_jobs",
    *(f"train_{k}" for k in RECORDED_METRICS), *(f"test_{k}" for k in RECORDED_METRICS),
)
"""Columns of a results file, in order.  ``trial`` -1 is the default policy's row."""


def is_results_table(columns: Iterable[str]) -> bool:
    """True when ``columns`` are those of a tuning results file."""
    return {"setup", "trial", "params", "status", "train_jobs"} <= set(columns)


def read_results(path: str | Path) -> pd.DataFrame:
    """A results file as a DataFrame (columns :data:`COLUMNS`).

    Raises:
        MalleoError: unreadable, or not a tuning results file.
    """
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"],
                            dtype={"error": str, "params": str, "policy": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise MalleoError(f"{path}: cannot read tuning results: {exc}") from None
    if not is_results_table(frame.columns):
        raise MalleoError(f"{path}: not a malleo tune results file (missing columns "
                          "setup, trial, params, status)")
    frame["error"] = frame["error"].fillna("").astype(str)
    return frame


class ResultsFile:
    """Append-only results CSV of one setup.

    Args:
        path: the CSV file (created with a header row when absent or empty).
        setup: the setup fingerprint every row must carry.

    Raises:
        MalleoError: the file holds rows of another setup, or has other columns.
    """

    def __init__(self, path: str | Path, setup: str) -> None:
        self.path = Path(path)
        self.setup = setup
        self.done: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, dict[str, Any]] = {}
        if self.path.exists() and self.path.stat().st_size > 0:
            frame = read_results(self.path)
            if list(frame.columns) != list(COLUMNS):
                raise MalleoError(f"{self.path}: its columns differ from this malleo's "
                                  "results format: use another --results file")
            other = sorted(set(frame["setup"].astype(str)) - {setup})
            if other:
                raise MalleoError(f"{self.path}: holds trials of another setup ({other[0]}: "
                                  "another trace, split, machine or fixed values); use "
                                  "another --results file")
            for row in frame.to_dict("records"):
                key = _row_key(row)
                if row["status"] == "ok":
                    self.done[key] = row
                    self.failed.pop(key, None)
                elif key not in self.done:
                    self.failed[key] = row
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("w", newline="") as handle:
                csv.writer(handle).writerow(COLUMNS)

    def append(self, row: dict[str, Any]) -> None:
        """Write one finished trial (flushed at once) and remember it."""
        row = {**row, "setup": self.setup}
        with self.path.open("a", newline="") as handle:
            csv.writer(handle).writerow([_cell(row.get(c)) for c in COLUMNS])
        key = _row_key(row)
        if row["status"] == "ok":
            self.done[key] = row
            self.failed.pop(key, None)
        else:
            self.failed[key] = row

    def has(self, trial: int, params_key: str) -> bool:
        """True when this trial finished ``ok`` already."""
        return f"{int(trial)}|{params_key}" in self.done

    def rows(self) -> list[dict[str, Any]]:
        """Every ok row and every still-failed row, by trial number."""
        return sorted([*self.done.values(), *self.failed.values()], key=lambda r: int(r["trial"]))


def _row_key(row: dict[str, Any]) -> str:
    return f"{int(row['trial'])}|{row['params']}"


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)
    return value
