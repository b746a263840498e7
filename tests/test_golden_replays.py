"""Golden replays: small workloads of the project's own model (the Lublin-Feitelson
generator, emulator/workload/lublin.py), replayed under a few policies and compared byte
for byte with the checked-in per-job CSV of tests/golden/.

The CSVs were written by the code before the core refactor of issue 13 (a build of
a6096f3).  Regenerate them only on purpose, after a change of the schedules that was
meant::

    MALLEO_REGEN_GOLDEN=1 python -m pytest tests/test_golden_replays.py
"""
import io
import os
from pathlib import Path

import pytest

from malleo.emulator.driver import replay
from malleo.emulator.workload.lublin import generate_lublin
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Multifactor, Policy

GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = os.environ.get("MALLEO_REGEN_GOLDEN") == "1"

CASES = {
    # name: (jobs, processors, seed, policy[, flexible jobs])
    "lublin-200x64-fcfs-easy": (200, 64, 1, Policy()),
    "lublin-200x64-sjf-conservative-predict": (
        200, 64, 2, Policy(order="sjf", backfill="conservative", estimate="predict")),
    "lublin-200x64-multifactor-slurm": (
        200, 64, 3, Policy(order="multifactor", backfill="slurm", bf_max_job_test=5,
                           bf_resolution=30, bf_window=7200,
                           multifactor=Multifactor(weight_size=500.0, calc_period=60,
                                                   half_life=3600))),
    "lublin-150x64-malleable-dmr": (
        150, 64, 4, Policy(malleability=Malleability(speedup="amdahl:0.1", reconfig_fixed=5.0)),
        FlexibleJobs(fraction=0.5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_replay(name):
    jobs, procs, seed, policy, *flexible = CASES[name]
    result = replay(generate_lublin(jobs, procs, seed=seed), policy, procs=procs,
                    flexible=flexible[0] if flexible else None)
    buffer = io.StringIO()
    result.jobs.to_csv(buffer, index=False, lineterminator="\n")
    text = buffer.getvalue()
    path = GOLDEN / f"{name}.csv"
    if REGEN:
        path.write_text(text)
        pytest.skip(f"rewrote {path.name}")
    assert path.is_file(), f"{path} missing: MALLEO_REGEN_GOLDEN=1 writes it"
    expected = path.read_text()
    if text != expected:
        got, want = text.splitlines(), expected.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        pytest.fail(f"{name}: line {first + 1} differs from the golden CSV:\n"
                    f"  golden: {want[first] if first < len(want) else '<end>'}\n"
                    f"  now:    {got[first] if first < len(got) else '<end>'}")
