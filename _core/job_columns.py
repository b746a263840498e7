"""The job columns the core's entrances take, converted and checked in one place.

``replay_columns`` serves both event loops (loop.pyx ``simulate``, malleable_loop.pyx
``simulate_malleable``), ``plan_columns`` serves ``plan`` (plan.pyx).  Every value is
checked against the core's limits (``malleo.limits``: times in 0..MAX_TIME seconds,
machine sizes in 1..MAX_PROCS processors) before any conversion that could wrap
(``int64`` sizes are checked before they become ``int32``).  Every error is a
``ValueError`` naming the column and the first offending job (its 0-based position, or
``label.column`` and row for ``plan``'s tables).
"""
import numpy as np

from malleo.limits import MAX_PROCS, MAX_TIME
from malleo.order_stats import distinct_inverse
from malleo._core.priority import queue_partition_term

KIND_NAMES = "0 (rigid), 1 (moldable) or 2 (malleable)"


def column(name, values, dtype, n):
    """``values`` as a contiguous 1-D array of ``dtype``, of length ``n`` unless ``n`` is
    None.  Integer columns are read as int64 first and refused when not integral."""
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not an array: {exc}") from None
    if raw.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D array, got shape {raw.shape}")
    if n is not None and raw.shape[0] != n:
        raise ValueError(f"{name}: length {raw.shape[0]} differs from {n}")
    if np.dtype(dtype).kind in "iu":
        if raw.dtype.kind == "f":
            bad = ~np.isfinite(raw) | (raw != np.floor(raw)) | (np.abs(raw) > 2.0**62)
            if bad.any():
                k = int(np.argmax(bad))
                raise ValueError(f"{name}: must be integers, job {k} has {raw[k]}")
        elif raw.dtype.kind not in "iub" and raw.shape[0]:
            try:
                raw = raw.astype(np.int64)
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"{name}: not convertible to integers: {exc}") from None
        elif raw.dtype.kind == "u" and raw.dtype.itemsize == 8 and raw.shape[0] \
                and int(raw.max()) > 2**62:
            k = int(np.argmax(raw > 2**62))
            raise ValueError(f"{name}: job {k} has {raw[k]}, beyond any supported value")
        return np.ascontiguousarray(raw, dtype=np.int64)
    try:
        return np.ascontiguousarray(raw, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not convertible to {np.dtype(dtype).name}: {exc}") from None


def check_range(name, arr, low, high, what="job"):
    """Refuse the first value of ``arr`` outside ``low..high`` (inclusive)."""
    if arr.shape[0]:
        bad = (arr < low) | (arr > high)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{name}: must be in {low}..{high}, {what} {k} has {arr[k]}")


def machine_size(total_procs, name="total_procs"):
    """The machine size as an int in 1..MAX_PROCS."""
    total = getattr(total_procs, "total_procs", total_procs)
    try:
        total = int(total)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}: need an int number of processors, got {total_procs!r}") \
            from None
    if not 1 <= total <= MAX_PROCS:
        raise ValueError(f"{name}: must be in 1..{MAX_PROCS} processors, got {total}")
    return total


def user_codes(user):
    """Users renumbered 0..n_users-1 (int32) and n_users (>= 1)."""
    user = np.asarray(user).reshape(-1)
    users, code = distinct_inverse(user)     # issue 16: the replay's peak memory
    code = code.astype(np.int32)
    return code, max(len(users), 1)


def replay_columns(submit, runtime, estimate, procs, user, queue, partition, total_procs,
                   core):
    """Check a replay's jobs; returns (columns, machine size, users).

    Invariants checked: machine size in 1..MAX_PROCS; submit non-decreasing; submit,
    runtime and estimate in 0..MAX_TIME; each job's procs in 1..total_procs.

    Returns:
        ``{"submit", "runtime", "request"}`` (int64), ``"procs"`` (int32), ``"user"``
        (int32 dense codes), ``"qp"`` (float64 multifactor queue + partition term of the
        compiled policy ``core``); the int; n_users.
    """
    total = machine_size(total_procs)
    submit_a = column("submit", submit, np.int64, None)
    n = submit_a.shape[0]
    out = {"submit": submit_a,
           "runtime": column("runtime", runtime, np.int64, n),
           "request": column("estimate", estimate, np.int64, n)}
    procs_a = column("procs", procs, np.int64, n)
    # users: coded at once, their int64 copy freed before the queues' (issue 16: memory)
    out["user"], n_users = user_codes(column("user", user, np.int64, n))
    queue_a = column("queue", queue, np.int64, n)
    partition_a = column("partition", partition, np.int64, n)
    if n:
        down = np.diff(submit_a) < 0
        if down.any():
            k = int(np.argmax(down)) + 1
            raise ValueError(f"submit: must be sorted, job {k} submits at {submit_a[k]} "
                             f"before job {k - 1} at {submit_a[k - 1]}")
    for name, key in (("submit", "submit"), ("runtime", "runtime"), ("estimate", "request")):
        check_range(name, out[key], 0, MAX_TIME)
    if n:
        bad = (procs_a < 1) | (procs_a > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"procs: must be in 1..{total} (total_procs), job {k} has "
                             f"{procs_a[k]}")
    out["procs"] = procs_a.astype(np.int32)
    del procs_a
    out["qp"] = np.ascontiguousarray(queue_partition_term(queue_a, partition_a, core),
                                     dtype=np.float64)
    return out, total, n_users


def flex_columns(procs, kind, min_procs, max_procs, speedup_a, speedup_b, total, label="",
                 what="job"):
    """Check the malleability columns of jobs of sizes ``procs`` (int32) on a machine of
    ``total``: kind in 0..2; 1 <= min <= procs <= max <= total; finite speedup
    parameters.  Returns ``{"kind", "min_procs", "max_procs", "speedup_a", "speedup_b"}``
    (uint8, int32, int32, float64, float64)."""
    n = procs.shape[0]
    kind_a = column(f"{label}kind", kind, np.int64, n)
    lo = column(f"{label}min_procs", min_procs, np.int64, n)
    hi = column(f"{label}max_procs", max_procs, np.int64, n)
    pa = column(f"{label}speedup_a", speedup_a, np.float64, n)
    pb = column(f"{label}speedup_b", speedup_b, np.float64, n)
    if n:
        p = procs.astype(np.int64)
        bad = (lo < 1) | (lo > p) | (hi < p) | (hi > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{label}min_procs/max_procs: need 1 <= min <= procs <= max <= "
                             f"{total}, {what} {k} has {lo[k]} <= {p[k]} <= {hi[k]}")
        if ((kind_a < 0) | (kind_a > 2)).any():
            raise ValueError(f"{label}kind: must be {KIND_NAMES}")
        for name, arr in (("speedup_a", pa), ("speedup_b", pb)):
            if not np.isfinite(arr).all():
                k = int(np.argmax(~np.isfinite(arr)))
                raise ValueError(f"{label}{name}: must be finite, {what} {k} has {arr[k]}")
    return {"kind": kind_a.astype(np.uint8), "min_procs": lo.astype(np.int32),
            "max_procs": hi.astype(np.int32), "speedup_a": pa, "speedup_b": pb}


def table_columns(table, label, required, optional):
    """Columns of a DataFrame or a dict of arrays (``plan``'s ``running``/``pending``) as
    numpy arrays of one length: ``required`` name -> dtype, ``optional`` name ->
    (dtype, default).  Integer columns arrive as int64 (sizes are cast by the caller
    after their range check)."""
    out = {}
    n = None
    for name, (dtype, default) in {**{c: (d, None) for c, d in required.items()},
                                   **optional}.items():
        present = table is not None and name in table
        if not present:
            if name in required:
                raise ValueError(f"{label}: missing column {name!r}")
            out[name] = default
            continue
        try:
            arr = column(f"{label}.{name}", table[name], dtype, None)
        except ValueError as exc:
            raise ValueError(str(exc).replace(" job ", " row ")) from None
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise ValueError(f"{label}.{name}: length {arr.shape[0]} differs from {n}")
        out[name] = arr
    n = 0 if n is None else n
    for name, (dtype, default) in optional.items():
        if not isinstance(out[name], np.ndarray):
            out[name] = np.full(n, default, dtype=np.int64 if np.dtype(dtype).kind in "iu"
                                else dtype)
    return out, n


FLEX_COLUMNS = {"kind": (np.int64, 0), "min_procs": (np.int64, -1),
                "max_procs": (np.int64, -1), "speedup_a": (np.float64, 0.0),
                "speedup_b": (np.float64, 0.0)}
"""Optional malleability columns of both of ``plan``'s tables (docs/malleability.md)."""

RUNNING_REQUIRED = {"procs": np.int64, "start": np.int64, "est": np.int64,
                    "request": np.int64}
RUNNING_OPTIONAL = {"user": (np.int64, 0), **FLEX_COLUMNS, "p0": (np.int64, -1),
                    "work_done": (np.float64, np.nan), "resume": (np.int64, -1),
                    "last_reconf": (np.int64, -1), "at_point": (np.int64, 1)}
PENDING_REQUIRED = {"submit": np.int64, "procs": np.int64, "request": np.int64}
PENDING_OPTIONAL = {"user": (np.int64, 0), "queue": (np.int64, 0),
                    "partition": (np.int64, 0), "reservation": (np.int64, -1),
                    "priority": (np.float64, np.nan), "runtime": (np.int64, -1),
                    "parent": (np.int64, -1), **FLEX_COLUMNS}
"""``plan``'s columns: required name -> dtype, optional name -> (dtype, default)."""


def plan_columns(now, cluster, running, pending, core):
    """Check ``plan``'s inputs; returns (now, total, busy, running columns, n_run, pending
    columns, n_pend).  Sizes come back int32 after their range check, the size ranges
    resolved (-1: the job's procs) and the malleability columns checked."""
    try:
        t = int(now)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"now: need an int time in seconds, got {now!r}") from None
    if not 0 <= t <= MAX_TIME:
        raise ValueError(f"now: must be in 0..{MAX_TIME} seconds, got {t}")
    total = machine_size(cluster, "cluster")
    run, n_run = table_columns(running, "running", RUNNING_REQUIRED, RUNNING_OPTIONAL)
    pend, n_pend = table_columns(pending, "pending", PENDING_REQUIRED, PENDING_OPTIONAL)
    for label, cols, names in (("running", run, ("start", "est", "request")),
                               ("pending", pend, ("submit", "request"))):
        for name in names:
            check_range(f"{label}.{name}", cols[name], 0, MAX_TIME, "row")
        check_range(f"{label}.procs", cols["procs"], 1, total, "row")
    if (run["start"] > t).any():
        raise ValueError(f"running.start: a job starts after now={t}")
    if (pend["submit"] > t).any():
        raise ValueError(f"pending.submit: a job submits after now={t}")
    busy = int(run["procs"].sum(dtype=np.int64))
    if busy > total:
        raise ValueError(f"running: {busy} processors busy on a machine of {total}")
    if core.is_actual:
        bad = (pend["runtime"] < 0) | (pend["runtime"] > MAX_TIME)
        if bad.any():
            raise ValueError(f"pending.runtime: required (0..{MAX_TIME}) by estimate 'actual'")
    parent = pend["parent"]
    has_exp = parent >= 0
    if ((parent >= n_run).any() or parent.min(initial=-1) < -1
            or len(np.unique(parent[has_exp])) != int(has_exp.sum())):
        raise ValueError(f"pending.parent: must be -1 or a running row (0..{n_run - 1}), "
                         "at most one expander per running job")
    for label, cols in (("running", run), ("pending", pend)):
        cols["procs"] = cols["procs"].astype(np.int32)
        lo = np.where(cols["min_procs"] < 0, cols["procs"], cols["min_procs"])
        hi = np.where(cols["max_procs"] < 0, cols["procs"], cols["max_procs"])
        cols.update(flex_columns(cols["procs"], cols["kind"], lo, hi, cols["speedup_a"],
                                 cols["speedup_b"], total, f"{label}.", "row"))
    p0 = np.where(run["p0"] < 0, run["procs"], run["p0"])
    check_range("running.p0", p0, 1, total, "row")
    run["p0"] = p0.astype(np.int32)
    return t, total, busy, run, n_run, pend, n_pend
