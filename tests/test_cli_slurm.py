"""``malleo slurm agent|status|replay`` through click's CliRunner (live where Slurm is needed)."""
import json
import time

import pandas as pd
import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.plugin.agent.apply import BAND_LOW
from malleo.plugin.slurm_replay import OBSERVED_COLUMNS, SCALED_COLUMNS

SWF = """; MaxProcs: 64
; MaxNodes: 64
1 0 0 100 8 -1 -1 8 600 -1 1 3 1 -1 1 -1 -1 -1
2 50 0 35 64 -1 -1 64 90 -1 1 4 1 -1 1 -1 -1 -1
3 51 0 0 1 -1 -1 1 30 -1 1 3 1 -1 1 -1 -1 -1
4 400 0 1000 20 -1 -1 20 1200 -1 1 5 1 -1 1 -1 -1 -1
"""


def run(*args, **kw):
    return MalleoRunner().invoke(cli, list(args), catch_exceptions=False, **kw)


def test_replay_dry_run_scales_a_trace(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    result = run("slurm", "replay", str(trace), "--time-scale", "10", "--nodes", "16",
                 "--dry-run")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(pd.io.common.StringIO(result.output))
    assert tuple(table.columns) == SCALED_COLUMNS
    assert table["submit"].tolist() == [0, 5, 5, 40]          # seconds / 10, rounded down
    assert table["runtime"].tolist() == [10, 4, 0, 100]         # seconds / 10, rounded
    assert table["limit"].tolist() == [60, 60, 60, 120]         # whole minutes, at least 1
    assert table["nodes"].tolist() == [2, 16, 1, 5]             # ceil(procs * 16 / 64)
    sliced = run("slurm", "replay", str(trace), "--time-scale", "10", "--nodes", "16",
                 "--jobs", "1:2", "--dry-run")
    assert pd.read_csv(pd.io.common.StringIO(sliced.output))["job_number"].tolist() == [2, 3]


def test_replay_default_workload_dry_run():
    result = run("slurm", "replay", "--time-scale", "100", "--nodes", "8", "--jobs", "0:5",
                 "--dry-run")
    assert result.exit_code == 0
    table = pd.read_csv(pd.io.common.StringIO(result.output))
    assert len(table) == 5 and table["nodes"].between(1, 8).all()
    assert (table["limit"] % 60 == 0).all() and (table["limit"] >= table["runtime"]).all()


@pytest.mark.parametrize("args, message", [
    (["--time-scale", "0", "--nodes", "4"], "--time-scale"),
    (["--time-scale", "2", "--nodes", "4", "--jobs", "x"], "--jobs"),
    (["--time-scale", "2"], "--nodes"),
])
def test_replay_usage_errors(args, message):
    result = MalleoRunner().invoke(cli, ["slurm", "replay", *args, "--dry-run"])
    assert result.exit_code == 2 and message in result.output


def test_agent_bad_config_exits_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('order = "fcfs"\nbackfill = "sometimes"\n')
    result = MalleoRunner().invoke(cli, ["slurm", "agent", "--config", str(bad), "--once"])
    assert result.exit_code == 2
    assert f"malleo: error: {bad}:2: backfill: must be one of" in result.output
    missing = MalleoRunner().invoke(cli, ["slurm", "agent", "--once"])
    assert missing.exit_code == 2 and "--config" in missing.output


# --- live --------------------------------------------------------------------------------


@pytest.mark.slurm
def test_status_shows_planned_starts_and_wanted_priorities(slurm_cluster, slurm_jobs, tmp_path):
    backend = slurm_cluster.backend
    nodes = len(slurm_cluster.node_names)
    env = {"SLURM_CONF": slurm_cluster.conf}

    def submit(**kw):
        job_id = backend.submit(wrap="sleep 60", output="/dev/null", workdir=str(tmp_path), **kw)
        slurm_jobs.append(job_id)
        return job_id

    blocker = submit(nodes=nodes - 4, time_limit=600)
    deadline = time.monotonic() + 30
    while not backend.job(blocker).is_running:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    head = submit(nodes=nodes - 2, time_limit=60)    # waits for the blocker: a reservation
    whole = submit(nodes=nodes, time_limit=60)
    # Too long to end before the head's reservation, but it fits in the 2 nodes the head
    # leaves free then: EASY starts it now; Slurm's own (conservative) backfill does not,
    # since it would delay `whole`.
    small = submit(nodes=2, time_limit=3600)
    result = run("slurm", "status", "--json", env=env)
    doc = json.loads(result.output)
    assert doc["policy"] == "fcfs+easy" and doc["total"] == nodes
    assert [r["job_id"] for r in doc["running"]] == [blocker]
    rows = {r["job_id"]: r for r in doc["pending"]}
    assert [r["job_id"] for r in doc["pending"]] == [small, head, whole]
    assert rows[small]["starts_now"] and rows[small]["backfilled"]
    assert rows[head]["planned_start"] == doc["running"][0]["expected_end"]
    assert rows[whole]["planned_start"] is None                # EASY: one reservation
    assert rows[small]["wanted_priority"] > rows[head]["wanted_priority"] \
        > rows[whole]["wanted_priority"] >= BAND_LOW
    text = run("slurm", "status", env=env).output
    assert "starts now (backfill)" in text and "reservation" in text


@pytest.mark.slurm
def test_replay_on_live_slurm_writes_the_observed_csv(slurm_cluster, tmp_path, monkeypatch):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    policy = tmp_path / "easy.toml"
    policy.write_text('backfill = "easy"\n')
    out = tmp_path / "observed.csv"
    monkeypatch.chdir(tmp_path)
    result = run("slurm", "replay", str(trace), "--time-scale", "200", "--nodes", "16",
                 "-o", str(out), "--timeout", "120", "--config", str(policy),
                 env={"SLURM_CONF": slurm_cluster.conf})
    assert result.exit_code == 0
    observed = pd.read_csv(out)
    assert tuple(observed.columns) == OBSERVED_COLUMNS
    assert (observed["state"] == "COMPLETED").all()
    assert (observed["start"] >= observed["submit"]).all()
    assert observed["nodes"].tolist() == [2, 16, 1, 5]
    diff = json.loads(result.output.strip().splitlines()[-1])
    assert diff["not_started"] == []
    # Not a terminal: no progress bar, only the end summary on stderr (issue 17.9).
    assert "jobs submitted" not in result.stderr and "\r" not in result.stderr
    assert f"wrote {out}: 4 of 4 jobs completed\n  wait mean " in result.stderr
    assert "against the emulator: " in result.stderr
    quiet = run("slurm", "replay", str(trace), "--time-scale", "200", "--nodes", "16",
                "-o", str(out), "--timeout", "120", "--quiet",
                env={"SLURM_CONF": slurm_cluster.conf})
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == ""


@pytest.mark.slurm
def test_agent_once_retries_an_unreachable_controller_then_exits_1(slurm_cluster, tmp_path):
    """The live cluster's slurm.conf pointed at a port nobody listens on: every cycle fails
    at the controller ping, the agent backs off 1 s then 2 s, and --once gives up (exit 1).
    The agent runs as a process of its own: with the pyslurm backend, libslurm reads one
    slurm.conf per process, and this one is not the session's."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    conf = tmp_path / "slurm.conf"
    lines = Path(slurm_cluster.conf).read_text().splitlines()
    conf.write_text("\n".join("SlurmctldPort=1" if line.startswith("SlurmctldPort=") else line
                              for line in lines) + "\n")
    policy = tmp_path / "easy.toml"
    policy.write_text('backfill = "easy"\n')
    # From tmp_path, not the checkout (whose malleo/ folder would shadow the installed one);
    # the environment keeps MALLEO_SLURM_BACKEND, PYTHONPATH and LD_LIBRARY_PATH.
    proc = subprocess.run([sys.executable, "-m", "malleo", "slurm", "agent", "--config",
                           str(policy), "--once", "--log-format", "json", "--slurm-conf",
                           str(conf)], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path, env=dict(os.environ))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [json.loads(line) for line in (proc.stdout + proc.stderr).splitlines()
              if '"cycle_failed"' in line]
    assert [f["retry_in"] for f in failed] == [1.0, 2.0, 4.0]
    assert {f["kind"] for f in failed} == {"slurm_unavailable"}
    if os.environ.get("MALLEO_SLURM_BACKEND", "cli") == "pyslurm":
        assert failed[0]["error"] and "\n" not in failed[0]["error"]
        return
    assert "DOWN" in failed[0]["error"] and "\n" not in failed[0]["error"]
