"""The job columns both event loops take (loop.pyx ``simulate``, malleable_loop.pyx
``simulate_malleable``): conversion to contiguous 1-D arrays and the checks of their values.

Times are seconds, sizes processors.  Every error is a ``ValueError`` naming the column and
the first offending job (its 0-based position).
"""
import numpy as np


def column(name, values, dtype, n, writable=False):
    """``values`` as a contiguous 1-D array of ``dtype`` (a private copy when ``writable``),
    of length ``n`` unless ``n`` is None."""
    arr = np.array(values, dtype=dtype, copy=True) if writable else \
        np.ascontiguousarray(values, dtype=dtype)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name}: length {arr.shape[0]} differs from submit's length {n}")
    return arr


def check_jobs(submit, runtime, request, procs, total_procs) -> int:
    """Check a replay's jobs and return the machine size as an int.

    Invariants: ``total_procs >= 1``; ``submit`` non-decreasing; submit, runtime and
    request ``>= 0``; each job's procs in ``1..total_procs``.
    """
    total = int(total_procs)
    if total < 1:
        raise ValueError(f"total_procs: must be >= 1, got {total}")
    if len(submit):
        down = np.diff(submit) < 0
        if down.any():
            k = int(np.argmax(down)) + 1
            raise ValueError(f"submit: must be sorted, job {k} submits at {submit[k]} "
                             f"before job {k - 1} at {submit[k - 1]}")
        for name, arr in (("submit", submit), ("runtime", runtime), ("estimate", request)):
            if (arr < 0).any():
                k = int(np.argmax(arr < 0))
                raise ValueError(f"{name}: must be >= 0, job {k} has {arr[k]}")
        bad = (procs < 1) | (procs > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"procs: must be in 1..{total} (total_procs), job {k} has {procs[k]}")
    return total
