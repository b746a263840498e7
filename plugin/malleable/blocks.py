"""Block distribution of 2-D arrays by rows over the ranks of a communicator.

Rank r of p holds rows ``[offset(r), offset(r) + count(r))`` of an array with n rows: the first
``n % p`` ranks get ``n // p + 1`` rows, the others ``n // p``. The library gathers a distributed
array on rank 0 before a resize and scatters it again at the new size, so any size works.
"""
import numpy as np


def counts(n: int, size: int) -> list[int]:
    """Rows of each rank when n rows are split over ``size`` ranks (sum == n)."""
    if size < 1 or n < 0:
        raise ValueError(f"counts({n}, {size}): need n >= 0 and size >= 1")
    base, extra = divmod(n, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def row_range(n: int, size: int, rank: int) -> tuple[int, int]:
    """(first row, one past the last row) of ``rank``'s block."""
    c = counts(n, size)
    start = sum(c[:rank])
    return start, start + c[rank]


def gather(comm, local: np.ndarray, n_rows: int) -> np.ndarray | None:
    """The whole array on rank 0 (None elsewhere) from every rank's block of rows.

    Collective. ``local`` is C-contiguous float64 of shape (count(rank), cols).
    """
    local = np.ascontiguousarray(local, dtype=np.float64)
    cols = local.shape[1]
    sizes = [c * cols for c in counts(n_rows, comm.size)]
    whole = np.empty((n_rows, cols), dtype=np.float64) if comm.rank == 0 else None
    comm.Gatherv(local, [whole, sizes] if comm.rank == 0 else None, root=0)
    return whole


def scatter(comm, whole: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """This rank's block of rows of ``whole`` (given on rank 0 only; ``shape`` everywhere).

    Collective. Returns a new C-contiguous float64 array of shape (count(rank), cols).
    """
    n_rows, cols = shape
    c = counts(n_rows, comm.size)
    local = np.empty((c[comm.rank], cols), dtype=np.float64)
    send = None
    if comm.rank == 0:
        whole = np.ascontiguousarray(whole, dtype=np.float64)
        if whole.shape != (n_rows, cols):
            raise ValueError(f"scatter: array of shape {whole.shape}, expected {shape}")
        send = [whole, [k * cols for k in c]]
    comm.Scatterv(send, local, root=0)
    return local
