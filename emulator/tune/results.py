"""The tuning results file: one CSV row per finished trial, appended as trials finish.

Rows are written and flushed one by one, so an interrupted run loses only the trials in
flight; a rerun with the same ``--results`` file skips every trial already recorded as
``ok`` (failed trials run again).  The first column, ``setup``, is the fingerprint of the
run's setup (:meth:`Setup.fingerprint`): a file made for another trace, split or fixed
values is refused rather than mixed.  Scores are not stored: they are computed from the
recorded metrics, so one results file serves any objective.

A results file decides which policy a run writes as its best, so it is opened safely:
never through a symbolic link, and an existing file owned by another user, or writable
by group or others, is refused (another user could plant rows).  New files are created
0600.  Without ``--results`` the file lives in the user's private state directory
(:func:`private_dir`: ``$XDG_STATE_HOME/malleo`` or ``~/.local/state/malleo``, mode 0700,
checked to be the user's own and not a link).
"""
from __future__ import annotations

import csv
import io
import math
import os
import stat
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from malleo.emulator.tune.objective import RECORDED_METRICS
from malleo.errors import MalleoError
from malleo.input_files import read_text

__all__ = ["COLUMNS", "ResultsFile", "read_results", "is_results_table", "private_dir"]

COLUMNS: tuple[str, ...] = (
    "setup", "trial", "params", "policy", "status", "error", "seconds",
    "train_jobs", "test_jobs",
    *(f"train_{k}" for k in RECORDED_METRICS), *(f"test_{k}" for k in RECORDED_METRICS),
)
"""Columns of a results file, in order.  ``trial`` -1 is the default policy's row."""


def is_results_table(columns: Iterable[str]) -> bool:
    """True when ``columns`` are those of a tuning results file."""
    return {"setup", "trial", "params", "status", "train_jobs"} <= set(columns)


def read_results(path: str | Path, text: str | None = None) -> pd.DataFrame:
    """A results file as a DataFrame (columns :data:`COLUMNS`), checked: every row has as
    many cells as the header, ``trial`` and ``train_jobs`` are integers, ``params`` is
    JSON, and metric cells are numbers (empty for none; infinities refused).

    Args:
        path: the file (named in messages).
        text: its content when already read (else the file is read).

    Raises:
        MalleoError: unreadable, or not a valid tuning results file
            (``FILE:LINE: column: what is wrong``).
    """
    import json

    try:
        if text is None:
            text = read_text(path, "tuning results file")
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False,
                            na_values=["", "nan", "NaN"], index_col=False,
                            dtype={"error": str, "params": str, "policy": str})
    except (OSError, UnicodeDecodeError, pd.errors.ParserError,
            pd.errors.EmptyDataError) as exc:
        raise MalleoError(f"{path}: cannot read tuning results: {exc}") from None
    if not is_results_table(frame.columns):
        raise MalleoError(f"{path}: not a malleo tune results file (missing columns "
                          "setup, trial, params, status)")
    _check_cell_counts(path, text, len(frame.columns))
    for column in frame.columns:
        if column in ("setup", "params", "policy", "status", "error"):
            continue
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = frame[column].notna() & (values.isna() | values.abs().eq(float("inf")))
        if column in ("trial", "train_jobs", "test_jobs"):
            bad |= values.notna() & ((values != values.round()) | (values.abs() >= 2**53))
        if column == "trial":
            bad |= values.isna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            what = "an integer" if column in ("trial", "train_jobs", "test_jobs") \
                else "a finite number"
            raise MalleoError(f"{path}:{row + 2}: {column}: not {what}: "
                              f"{str(frame[column].iloc[row])!r}")
        frame[column] = values
    for row, params in enumerate(frame["params"].tolist()):
        try:
            if not isinstance(json.loads(params), dict):
                raise ValueError("not an object")
        except (TypeError, ValueError, RecursionError):
            raise MalleoError(f"{path}:{row + 2}: params: not a JSON object: "
                              f"{str(params)[:80]!r}") from None
    frame["error"] = frame["error"].fillna("").astype(str)
    return frame


def _check_cell_counts(path, text: str, width: int) -> None:
    """Every CSV record has ``width`` cells (pandas would silently shift or drop extras)."""
    for number, record in enumerate(csv.reader(io.StringIO(text)), start=1):
        if record and len(record) != width:
            raise MalleoError(f"{path}:{number}: {len(record)} fields, the header has "
                              f"{width}")


def private_dir(*parts: str) -> Path:
    """The user's private malleo state directory (``$XDG_STATE_HOME/malleo``, default
    ``~/.local/state/malleo``) or a sub-directory of it, created mode 0700 when absent.

    Each of these directories must be a real directory (not a link) owned by the user
    and closed to group and others; one made by this user with a wider mode is narrowed
    to 0700.

    Raises:
        MalleoError: a directory is a link, owned by another user, or cannot be made.
    """
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"),
                                                          ".local", "state")
    path = Path(base) / "malleo"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MalleoError(f"{path.parent}: cannot create the state directory: "
                          f"{exc.strerror or exc}") from None
    for part in ("", *parts):
        path = path / part if part else path
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise MalleoError(f"{path}: cannot create the private directory: "
                              f"{exc.strerror or exc}") from None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise MalleoError(f"{path}: not a private directory (a link or not a "
                              f"directory: {exc.strerror or exc})") from None
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid():
                raise MalleoError(f"{path}: owned by uid {info.st_uid}, not by you: "
                                  "refused as the private state directory")
            if info.st_mode & 0o077:
                os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    return path


def _open_own(path: Path, flags: int) -> int:
    """Open an existing results file without following a link; refuse a file that is not
    a regular file owned by this user and closed to writes by group and others."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW)
    except OSError as exc:
        reason = "a symbolic link" if exc.errno == 40 else (exc.strerror or str(exc))
        raise MalleoError(f"{path}: cannot open the results file: {reason}") from None
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "not a regular file"
    elif info.st_uid != os.geteuid():
        problem = (f"owned by uid {info.st_uid}, not by you (its rows would decide the "
                   "best policy)")
    elif info.st_mode & 0o022:
        problem = (f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o}); "
                   "chmod go-w it")
    if problem:
        os.close(fd)
        raise MalleoError(f"{path}: results file refused: {problem}")
    return fd


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
        text = ""
        if os.path.lexists(self.path):
            fd = _open_own(self.path, os.O_RDONLY)
            with open(fd, "rb") as handle:
                raw = handle.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MalleoError(f"{self.path}: not a UTF-8 text file ({exc.reason})") \
                    from None
        if text:
            frame = read_results(self.path, text)
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
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if os.path.lexists(self.path):
                    fd = _open_own(self.path, os.O_WRONLY | os.O_TRUNC)
                else:
                    fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                                 os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                raise MalleoError(f"{self.path}: cannot create the results file: "
                                  f"{exc.strerror or exc}") from None
            with open(fd, "w", newline="") as handle:
                csv.writer(handle).writerow(COLUMNS)

    def append(self, row: dict[str, Any]) -> None:
        """Write one finished trial (flushed at once) and remember it.  The file is
        reopened for each row without following links and checked again."""
        row = {**row, "setup": self.setup}
        fd = _open_own(self.path, os.O_WRONLY | os.O_APPEND)
        with open(fd, "w", newline="") as handle:
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
