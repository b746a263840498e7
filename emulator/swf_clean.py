"""Derived columns of the job table and the rules that drop jobs which cannot be replayed.

Given the 18 SWF fields of every job line, :func:`derive` computes what the core consumes:

* ``procs`` (processors): ``allocated_procs`` when > 0, else ``requested_procs``
  (``procs_from="requested"`` swaps the preference);
* ``runtime`` (seconds): ``run_time`` (field 4);
* ``estimate`` (seconds): ``requested_time`` when > 0, else the runtime; when the job ran
  longer than it asked, ``overrun="extend"`` (default) raises the estimate to the runtime,
  ``overrun="cut"`` cuts the runtime at the request instead;

and which jobs to drop, by the first reason that applies, in this order:

* ``runtime_missing``: ``run_time`` < 0 (-1, not recorded);
* ``procs_missing``: neither processor field is > 0;
* ``larger_than_machine``: ``procs`` > the machine's processors.
"""
from __future__ import annotations

import numpy as np

DROP_REASONS: tuple[str, ...] = ("runtime_missing", "procs_missing", "larger_than_machine")
"""Why a job is dropped, in the order the rules are applied."""

PROCS_FROM = ("allocated", "requested")
OVERRUN = ("extend", "cut")


def derive(columns: dict[str, np.ndarray], machine_procs: int, *,
           procs_from: str = "allocated", overrun: str = "extend"
           ) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, int]]:
    """Compute ``procs``, ``runtime`` and ``estimate`` and the jobs to keep.

    Args:
        columns: the SWF fields by name (int64 arrays of one length n; only
            ``run_time``, ``allocated_procs``, ``requested_procs`` and ``requested_time``
            are read).
        machine_procs: processors of the machine (> 0).
        procs_from: "allocated" or "requested": which processor field is preferred (the
            other is the fallback when the preferred one is <= 0).
        overrun: "extend" or "cut": what to do with a job whose runtime exceeds its
            request.

    Returns:
        ``(derived, keep, dropped)``: ``derived`` maps ``procs`` (int32), ``runtime`` and
        ``estimate`` (int64, seconds) to arrays of length n; ``keep`` is a boolean mask of
        the replayable jobs; ``dropped`` maps each reason of :data:`DROP_REASONS` to a
        count (zeros included).  For kept jobs ``1 <= procs <= machine_procs`` and
        ``0 <= runtime <= estimate``.
    """
    if procs_from not in PROCS_FROM:
        raise ValueError(f"procs_from must be one of {PROCS_FROM}, not {procs_from!r}")
    if overrun not in OVERRUN:
        raise ValueError(f"overrun must be one of {OVERRUN}, not {overrun!r}")
    first, second = ((columns["allocated_procs"], columns["requested_procs"])
                     if procs_from == "allocated"
                     else (columns["requested_procs"], columns["allocated_procs"]))
    # Each full-length temporary costs 8 bytes a job (issue 16: this is the read's peak
    # memory), so the columns are derived in place where the values allow it.
    procs = np.where(first > 0, first, second)
    runtime = np.array(columns["run_time"], dtype=np.int64)         # our own copy
    requested = columns["requested_time"]
    estimate = np.where(requested > 0, requested, runtime).astype(np.int64, copy=False)
    over = runtime > estimate
    if overrun == "extend":
        np.copyto(estimate, runtime, where=over)
    else:
        np.copyto(runtime, estimate, where=over)
    del over

    no_runtime = runtime < 0
    no_procs = ~no_runtime & (procs <= 0)
    too_large = ~no_runtime & ~no_procs & (procs > machine_procs)
    keep = ~(no_runtime | no_procs | too_large)
    dropped = {"runtime_missing": int(no_runtime.sum()),
               "procs_missing": int(no_procs.sum()),
               "larger_than_machine": int(too_large.sum())}
    del no_runtime, no_procs, too_large
    # Clip before narrowing so dropped rows cannot overflow int32; they are removed anyway.
    procs32 = np.clip(procs, -1, np.iinfo(np.int32).max, out=procs).astype(np.int32)
    del procs
    derived = {"procs": procs32, "runtime": runtime, "estimate": estimate}
    return derived, keep, dropped
