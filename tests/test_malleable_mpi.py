"""The client library under real MPI (mpirun, several ranks, every run under a timeout):
block redistribution between sizes, and the example solver's size-independent result."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

REPO = Path(__file__).resolve().parent.parent
HEAT = REPO / "examples" / "heat.py"


def mpirun(ranks: int, *argv, env=None, timeout=60) -> subprocess.CompletedProcess:
    """``mpirun -np ranks`` on this host (oversubscribed, TCP, root allowed) under a timeout."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py)")
    if subprocess.run(["which", "mpirun"], capture_output=True).returncode != 0:
        pytest.skip("mpirun not found (apt install openmpi-bin)")
    full = dict(os.environ, OMPI_MCA_btl="self,tcp", OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **(env or {}))
    return subprocess.run(["timeout", str(timeout), "mpirun", "--oversubscribe", "-np", str(ranks),
                           sys.executable, *map(str, argv)],
                          capture_output=True, text=True, env=full, timeout=timeout + 10)


REDISTRIBUTE = """
import sys
import numpy as np
from mpi4py import MPI
from malleo.plugin import malleable
from malleo.plugin.malleable import blocks
comm = MPI.COMM_WORLD
n, cols = 11, 3
state = malleable.restore(comm)
if state is None:                                   # first run: write the checkpoint
    a, b = blocks.row_range(n, comm.size, comm.rank)
    block = np.arange(n * cols, dtype=float).reshape(n, cols)[a:b]
    malleable.client.save(comm, malleable.State({"g": block}, {"g": (n, cols)}, {"k": 7}),
                          malleable.Action("shrink", 1))
else:                                               # second run, another size: check my rows
    a, b = blocks.row_range(n, comm.size, comm.rank)
    expect = np.arange(n * cols, dtype=float).reshape(n, cols)[a:b]
    ok = np.array_equal(state.arrays["g"], expect) and state.values == {"k": 7}
    oks = comm.gather(ok)
    if comm.rank == 0:
        print("ALL-OK" if all(oks) else "MISMATCH", comm.size)
"""


@pytest.mark.parametrize("before, after", [(3, 2), (2, 5), (4, 1)])
def test_arrays_redistribute_between_sizes(tmp_path, before, after):
    script = tmp_path / "redistribute.py"
    script.write_text(REDISTRIBUTE)
    env = {"MALLEO_STATE_DIR": str(tmp_path / "state")}
    first = mpirun(before, script, env=env)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "state" / "resize.json").exists()
    second = mpirun(after, script, env=env)
    assert second.returncode == 0, second.stderr
    assert f"ALL-OK {after}" in second.stdout


def heat_result(tmp_path, ranks: int, n: int, iters: int) -> dict:
    out = tmp_path / f"heat-{ranks}.json"
    proc = mpirun(ranks, HEAT, "--n", n, "--iters", iters, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_heat_result_does_not_depend_on_the_rank_count(tmp_path):
    results = [heat_result(tmp_path, r, 24, 60) for r in (1, 3)]
    assert results[0]["sha256"] == results[1]["sha256"]
    assert results[0]["iterations"] == 60 and 0 < results[0]["sum"] < 24 * 24
