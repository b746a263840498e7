"""What the ``malleo`` command imports for a small job (issue 16: start-up under 0.25 s).

Each check runs in a fresh interpreter started outside the checkout (so the installed
malleo runs) and lists the heavy packages it loaded; timings are bench/startup.py's.
"""
import json
import os
import subprocess
import sys

import pytest

HEAVY = ("pandas", "matplotlib", "pyarrow", "scipy", "malleo.plugin", "msgspec", "orjson")
"""Packages a replay that only prints its summary, or ``--version``, must not load."""

PROBE = """
import json, sys
from click.testing import CliRunner
from malleo.emulator.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:], catch_exceptions=False)
assert result.exit_code == 0, result.output
heavy = json.loads(sys.stdin.read())
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy
                        or any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def loaded(tmp_path, *argv: str, watch: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``watch`` (and their submodules) that ``malleo ARGV`` loaded."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], input=json.dumps(watch),
                          cwd=tmp_path, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["replay", "--jobs", "0:10", "--quiet"],
    ["replay", "--jobs", "0:10", "--quiet", "--json", "--backfill", "conservative"],
    ["compare", "--jobs", "0:10", "--quiet", "--policy", "fcfs+easy", "--policy", "sjf+easy"],
])
def test_small_commands_import_no_heavy_package(tmp_path, argv):
    assert loaded(tmp_path, *argv) == []


@pytest.mark.parametrize("argv", [
    ["replay", "--jobs", "0:10", "--quiet"],
    ["replay", "--jobs", "0:10", "--quiet", "--json", "--backfill", "conservative"],
])
def test_a_replay_does_not_read_the_distribution_metadata(tmp_path, argv):
    """``malleo.__version__`` is read on first use: importlib.metadata (and the email
    package it pulls in) cost 20-40 ms, paid only by commands that print the version."""
    assert loaded(tmp_path, *argv, watch=("importlib.metadata", "email")) == []


def test_writing_the_job_table_still_works_and_loads_pandas(tmp_path):
    """The job table is built on demand: --out needs it (and pandas) and gets it."""
    out = tmp_path / "jobs.csv"
    names = loaded(tmp_path, "replay", "--jobs", "0:10", "--quiet", "--out", str(out))
    assert "pandas" in names
    assert out.read_text().splitlines()[0].startswith("job_id,submit,start,end")
    assert len(out.read_text().splitlines()) == 11


@pytest.mark.parametrize("argv", [
    ["replay", "--jobs", "0:10", "--quiet"],
    ["replay", "--jobs", "0:10", "--quiet", "--json", "--backfill", "conservative"],
])
def test_a_replay_imports_neither_numpy_ma_nor_tomllib(tmp_path, argv):
    """numpy 2's np.unique and np.percentile import numpy.ma at their first call (6-13 ms;
    malleo.order_stats computes the same without it) and reading TOML needs tomllib only
    when a policy file is given."""
    assert loaded(tmp_path, *argv, watch=("numpy.ma", "tomllib")) == []


def test_a_policy_file_is_still_read(tmp_path, malleo_cli):
    """The TOML reader, imported on use, still reads a policy file given to replay."""
    policy = tmp_path / "policy.toml"
    policy.write_text('backfill = "conservative"\n')
    result = malleo_cli("replay", "--jobs", "0:10", "--quiet", "--json", "--config", policy)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["policy"]["backfill"] == "conservative"


THREADS = """
import os, sys
if sys.argv[1] == "cli":
    from click.testing import CliRunner
    from malleo.emulator.cli import cli
    result = CliRunner().invoke(cli, ["replay", "--jobs", "0:10", "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
else:
    import numpy
print(len(os.listdir("/proc/self/task")), "OPENBLAS_NUM_THREADS" in os.environ)
"""


def test_a_command_loads_numpy_with_one_blas_thread_and_leaves_the_environment(tmp_path):
    """numpy's OpenBLAS starts a thread per core at import unless OPENBLAS_NUM_THREADS is
    set; the CLI sets it to 1 while a command loads, then unsets it (children inherit
    nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def threads(mode: str) -> tuple[int, bool]:
        out = subprocess.run([sys.executable, "-c", THREADS, mode], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[0]), out[1] == "True"

    plain, _ = threads("numpy")
    if plain == 1:
        pytest.skip("this numpy starts no BLAS threads (one core, or no OpenBLAS)")
    assert threads("cli") == (1, False)
