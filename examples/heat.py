"""A malleable 2-D heat-diffusion (Jacobi) solver over a block-distributed grid (mpi4py).

The N x N grid holds 1.0 on its top edge and 0.0 on the other edges; every iteration replaces
each interior point by the mean of its four neighbours. Rank r holds a block of whole rows
(malleo.plugin.malleable.blocks) and swaps one ghost row with each neighbour per iteration.
Every --every iterations it checks in with malleo; when the agent expands or shrinks the job,
check() checkpoints the grid and the solver returns, and the launcher restarts it at the new
size, where restore() hands it its rows again. The arithmetic per point does not depend on the
decomposition, so any sequence of sizes gives the bit-identical grid: --out records its SHA-256.

    srun --mpi=pmix -n 4 python heat.py --n 64 --iters 500 --out result.json   (fixed size)
    sbatch heat.sbatch                                                        (malleable)
"""
import argparse
import hashlib
import json
import time

import numpy as np
from mpi4py import MPI

from malleo.plugin import malleable
from malleo.plugin.malleable import blocks


def initial_block(n: int, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of the initial grid: 1.0 on row 0, zero elsewhere."""
    block = np.zeros((stop - start, n))
    if start == 0 and stop > 0:
        block[0, :] = 1.0
    return block


def sweep(comm, u: np.ndarray, n: int, start: int) -> np.ndarray:
    """One Jacobi iteration of this rank's rows (ghost rows from the neighbours)."""
    up, down = comm.rank - 1, comm.rank + 1
    padded = np.zeros((u.shape[0] + 2, n))
    padded[1:-1] = u
    if up >= 0:
        comm.Sendrecv(u[0].copy(), dest=up, recvbuf=padded[0], source=up)
    if down < comm.size:
        comm.Sendrecv(u[-1].copy(), dest=down, recvbuf=padded[-1], source=down)
    new = u.copy()
    inner = ((padded[:-2, 1:-1] + padded[2:, 1:-1]) + padded[1:-1, :-2]) + padded[1:-1, 2:]
    new[:, 1:-1] = 0.25 * inner
    rows = np.arange(start, start + u.shape[0])
    edge = (rows == 0) | (rows == n - 1)
    new[edge] = u[edge]                      # the top and bottom edges stay fixed
    return new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64, help="grid points per side")
    parser.add_argument("--iters", type=int, default=500, help="Jacobi iterations in all")
    parser.add_argument("--every", type=int, default=10, help="iterations between check-ins")
    parser.add_argument("--delay", type=float, default=0.0,
                        help="seconds to sleep per iteration (stands in for real work)")
    parser.add_argument("--out", default=None, help="JSON file for the result (rank 0)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    n = args.n
    if n < comm.size:
        raise SystemExit(f"--n {n}: need at least one row per rank ({comm.size} ranks)")
    start, stop = blocks.row_range(n, comm.size, comm.rank)

    state = malleable.restore(comm)
    if state is None:
        u, it = initial_block(n, start, stop), 0
    else:
        u, it = state.arrays["u"], int(state.values["iteration"])
    if comm.rank == 0:
        print(f"heat: {comm.size} ranks from iteration {it}", flush=True)

    while it < args.iters:
        u = sweep(comm, u, n, start)
        it += 1
        if args.delay:
            time.sleep(args.delay)
        if it % args.every == 0 and it < args.iters:
            action = malleable.check(comm, malleable.State(
                arrays={"u": u}, shapes={"u": (n, n)}, values={"iteration": it}))
            if action.is_resize:
                if comm.rank == 0:
                    print(f"heat: {action.kind} to {action.nodes} nodes at iteration {it}",
                          flush=True)
                return

    whole = blocks.gather(comm, u, n)
    if comm.rank == 0:
        digest = hashlib.sha256(whole.tobytes()).hexdigest()
        result = {"n": n, "iterations": it, "sha256": digest, "sum": float(whole.sum())}
        print(f"heat: done: {json.dumps(result)}", flush=True)
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(result, fh)


if __name__ == "__main__":
    main()
