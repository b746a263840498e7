"""Each MPI rank reports its rank, the world size and its Slurm node; rank 0 prints them all.

Example job of the slurm-docker cluster (docs/docker.md): it checks that Open MPI, PMIx, mpi4py
and Slurm's srun --mpi=pmix work together across nodes.
"""
import os
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
node = os.environ.get("SLURMD_NODENAME", socket.gethostname())
reports = comm.gather((comm.Get_rank(), comm.Get_size(), node), root=0)
if comm.Get_rank() == 0:
    for rank, size, where in reports:
        print(f"rank {rank} of {size} on {where}")
