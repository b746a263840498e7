"""What the ``malleo`` command imports for a small job (issue 16: start-up under 0.25 s).

Each check runs in a fresh interpreter started outside the checkout (so the installed
malleo runs) and lists the heavy packages it loaded; timings are bench/startup.py's.
"""
import json
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


def loaded(tmp_path, *argv: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], input=json.dumps(HEAVY),
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
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv],
                          input=json.dumps(["importlib.metadata", "email"]),
                          cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_writing_the_job_table_still_works_and_loads_pandas(tmp_path):
    """The job table is built on demand: --out needs it (and pandas) and gets it."""
    out = tmp_path / "jobs.csv"
    names = loaded(tmp_path, "replay", "--jobs", "0:10", "--quiet", "--out", str(out))
    assert "pandas" in names
    assert out.read_text().splitlines()[0].startswith("job_id,submit,start,end")
    assert len(out.read_text().splitlines()) == 11
