"""Operating the agent (issue 17 points 5-8): status in squeue's and sprio's conventions from
the running agent's status file, diag, Prometheus metrics scraped and parsed with
prometheus_client's parser, idle cycles at DEBUG with a periodic summary, one logging setup
(UTC, --log-format) for the agent and the reconfiguration endpoint."""
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from cli_runner import MalleoRunner
from prometheus_client.parser import text_string_to_metric_families

import malleo
from malleo.emulator.cli import cli
from malleo.plugin.agent import logs
from malleo.plugin.agent.loop import Agent
from malleo.plugin.agent.metrics_http import LABELS, Metrics, serve
from malleo.plugin.backends.model import Job
from scripted_slurm import ScriptedSlurm

NOW = 1_800_000_000


def job(job_id, uid, nodes, state, submit, first=1, limit=3600):
    running = state == "RUNNING"
    return Job(job_id=job_id, name=f"name{job_id}", user=f"u{uid}", user_id=uid,
               partition="debug", state=state, reason="" if running else "Priority",
               submit_time=submit, start_time=NOW - 100 if running else None,
               expected_start=None, end_time=NOW + limit if running else None,
               time_limit=limit, num_nodes=nodes, max_nodes=None, num_cpus=2 * nodes,
               priority=0 if running else 7,
               node_list=tuple(f"n{i}" for i in range(first, first + nodes)) if running else ())


@pytest.fixture
def running_agent(tmp_path, monkeypatch):
    """An agent of this process after one cycle: 12 of 16 nodes busy, three pending jobs."""
    policy = tmp_path / "policy.toml"
    policy.write_text('order = "multifactor"\nbackfill = "easy"\n')
    slurm = ScriptedSlurm([job(5, 1, 12, "RUNNING", NOW - 200),
                           job(6, 1, 8, "PENDING", NOW - 50),
                           job(7, 2, 2, "PENDING", NOW - 40, limit=600),
                           job(8, 2, 16, "PENDING", NOW - 30)], NOW)
    monkeypatch.setattr("time.time", lambda: NOW)
    agent = Agent(slurm, policy, state_dir=tmp_path / "state")
    agent.last_cycle = agent.cycle()
    agent.publish()             # what run() does after every cycle
    return agent, tmp_path / "state"


def status(*args):
    return MalleoRunner().invoke(cli, ["slurm", "status", *args], catch_exceptions=False)


def test_status_has_squeue_columns_ranks_and_utc_times(running_agent):
    agent, state = running_agent
    out = status("--state-dir", str(state))
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith(f"agent pid {os.getpid()} on ")
    assert "policy multifactor+easy" in lines[0] and "last cycle 2027-01-15T08:00:00Z" in lines[0]
    header = lines[2].split()
    assert header[:8] == ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME_LIMIT", "NODES",
                          "RANK"]
    assert header[-2:] == ["NOTE", "NODELIST(REASON)"]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert rows["5"].split()[4] == "R" and rows["5"].endswith("n[1-12]")
    assert "01:00:00" in rows["5"] and "2027-01-15T07:58:20Z" in rows["5"]   # start, UTC
    assert rows["7"].split()[7] == "1" and "starts now" in rows["7"]
    # u1's running job counts in its fair share: u2's big job goes before u1's
    assert rows["8"].split()[7] == "2" and "reservation" in rows["8"]
    assert "2027-01-15T08:58:20Z" in rows["8"]              # when job 5 ends
    assert rows["6"].split()[7] == "3"
    assert "queued: no reservation under easy backfill" in rows["6"]
    assert rows["6"].endswith("(Priority)")
    custom = status("--state-dir", str(state), "--noheader", "-o", "%i|%.4{rank}|%t|%l")
    assert custom.output.splitlines() == ["5|    |R|01:00:00", "7|   1|PD|00:10:00",
                                          "8|   2|PD|01:00:00", "6|   3|PD|01:00:00"]
    bad = MalleoRunner().invoke(cli, ["slurm", "status", "--state-dir", str(state), "-o", "%i %k"])
    assert bad.exit_code == 2 and "--format: unknown field '%k'" in bad.output


def test_status_priority_breakdown_like_sprio(running_agent):
    agent, state = running_agent
    out = status("--state-dir", str(state), "--priority")
    lines = out.output.splitlines()
    assert lines[0].split() == ["JOBID", "PARTITION", "USER", "RANK", "PRIORITY", "AGE",
                                "JOBSIZE", "FAIRSHARE"]
    for line in lines[1:]:
        _, _, _, _, total, age, size, fair = line.split()
        assert float(total) == pytest.approx(float(age) + float(size) + float(fair), abs=0.02)
    doc = json.loads(status("--state-dir", str(state), "--json").output)
    assert doc["source"] == "agent" and doc["agent"]["policy"] == "multifactor+easy"
    assert [r["rank"] for r in doc["pending"]] == [1, 2, 3]


def test_diag_summarises_since_start(running_agent):
    agent, state = running_agent
    text = MalleoRunner().invoke(cli, ["slurm", "diag", "--state-dir", str(state)],
                              catch_exceptions=False).output
    assert "malleo agent running" in text and "Cycles:               1 (0 idle)" in text
    assert "Policy in force:      multifactor+easy" in text
    doc = json.loads(MalleoRunner().invoke(cli, ["slurm", "diag", "--state-dir", str(state),
                                              "--json"]).output)
    assert doc["running"] and doc["cycles"] == 1 and doc["decisions_applied"] == 3
    assert doc["cycle_errors"] == {"slurm_unavailable": 0, "slurm": 0, "internal": 0}
    missing = MalleoRunner().invoke(cli, ["slurm", "diag", "--state-dir", str(state / "none")])
    assert missing.exit_code == 2 and "no agent status file" in missing.output


def test_status_file_is_written_atomically_in_a_private_directory(running_agent, tmp_path):
    from malleo.plugin.agent import status_file

    agent, state = running_agent
    assert oct(os.stat(state).st_mode & 0o777) == "0o755"
    assert oct(os.stat(state / "agent.json").st_mode & 0o777) == "0o644"
    assert [p.name for p in state.iterdir()] == ["agent.json"]      # no temporary left
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(OSError, match="writable by group or others"):
        status_file.write(open_dir, {})


def scrape(server) -> dict:
    port = server.server_address[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_parse_labelled_counters_never_unlabelled_and_info(running_agent):
    agent, _ = running_agent
    agent.metrics.inc("malleo_agent_policy_reloads_total", result="rejected")
    server = serve(agent.metrics, 0, host="127.0.0.1")
    try:
        families = scrape(server)
    finally:
        server.shutdown()
    for name, (label, allowed) in LABELS.items():
        family = families[name.removesuffix("_total")]
        samples = [s for s in family.samples if s.name == name]
        assert sorted(s.labels[label] for s in samples) == sorted(allowed), name
        assert all(s.labels for s in samples), f"{name} has an unlabelled series"
    reloads = {s.labels["result"]: s.value
               for s in families["malleo_agent_policy_reloads"].samples}
    assert reloads == {"ok": 0.0, "rejected": 1.0}
    info = families["malleo_agent"].samples[0] if "malleo_agent" in families else \
        families["malleo_agent_info"].samples[0]
    assert info.value == 1 and info.labels["version"] == malleo.__version__
    assert info.labels["policy"] == "multifactor+easy" and info.labels["mode"] == "priority"
    assert families["malleo_agent_cycles"].samples[0].value == 1
    with pytest.raises(ValueError, match="labels"):
        Metrics().inc("malleo_agent_policy_reloads_total")


def test_metrics_address_option_binds_where_told(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text("")
    (tmp_path / "empty.conf").write_text("")
    out = MalleoRunner().invoke(cli, ["slurm", "agent", "--config", str(policy), "--once",
                                   "--metrics-port", "1", "--metrics-address", "192.0.2.1",
                                   "--slurm-conf", str(tmp_path / "empty.conf"),
                                   "--state-dir", str(tmp_path / "s"), "--backend", "cli"])
    assert out.exit_code == 2
    assert "--metrics-address 192.0.2.1 --metrics-port 1:" in out.output


@pytest.fixture
def restore_logging():
    """Undo logs.configure(): the malleo logger propagates to the root again (caplog)."""
    yield
    root = logging.getLogger(logs.ROOT_LOGGER)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
    root.propagate = True


def test_idle_cycles_log_at_debug_with_a_periodic_summary(tmp_path, monkeypatch,
                                                          restore_logging):
    policy = tmp_path / "policy.toml"
    policy.write_text("")
    slurm = ScriptedSlurm([job(5, 1, 4, "RUNNING", NOW - 200)], NOW)
    monkeypatch.setattr("time.time", lambda: NOW)
    stream = io.StringIO()
    logs.configure("json", "info", stream=stream)
    try:
        agent = Agent(slurm, policy)
        agent.summary_every = 0.0               # a summary after every cycle
        for _ in range(3):
            result = agent.cycle()
            assert result.is_idle
            agent._maybe_summarise()
    finally:
        logs.configure("text", stream=io.StringIO())
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["summary"] * 3
    assert events[0]["cycles"] == 1 and events[0]["idle_cycles"] == 1
    assert events[0]["ts"].endswith("Z")
    assert agent.metrics.get("malleo_agent_idle_cycles_total") == 3
    debug = io.StringIO()
    logs.configure("text", "debug", stream=debug)
    Agent(slurm, policy).cycle()
    line = debug.getvalue().splitlines()[0]
    assert " DEBUG cycle " in line and line.split()[0].endswith("Z")


def test_reconfig_endpoint_logs_in_the_same_format_and_when_it_stops(tmp_path):
    sock = tmp_path / "reconfig.sock"
    proc = subprocess.Popen([sys.executable, "-m", "malleo", "slurm", "reconfig", "--socket",
                             str(sock), "--log-format", "json",
                             "--slurm-conf", str(tmp_path / "none.conf")],
                            stderr=subprocess.PIPE, text=True, cwd=str(tmp_path))
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    events = [json.loads(line) for line in err.splitlines()]
    assert events[0]["event"].startswith("reconfig endpoint listening on")
    assert events[-1]["event"].startswith("reconfig endpoint stopped on SIGTERM")
    assert all(e["ts"].endswith("Z") for e in events)
    assert not sock.exists()


@pytest.mark.parametrize("make", ["symlink", "group_writable", "file"])
def test_an_unsafe_state_dir_is_refused_before_the_first_cycle(tmp_path, make):
    policy = tmp_path / "p.toml"
    policy.write_text("")
    target = tmp_path / "s"
    if make == "symlink":
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    elif make == "group_writable":
        target.mkdir()
        target.chmod(0o775)
    else:
        target.write_text("")
    (tmp_path / "empty.conf").write_text("")
    out = MalleoRunner().invoke(cli, ["slurm", "agent", "--config", str(policy), "--once",
                                   "--slurm-conf", str(tmp_path / "empty.conf"),
                                   "--state-dir", str(target), "--backend", "cli"],
                             catch_exceptions=False)
    assert out.exit_code == 2, out.output
    assert (f"--state-dir {target}:" in out.output
            or ("'--state-dir'" in out.output and "is a file" in out.output))
    assert "Traceback" not in out.output


def test_agent_with_a_missing_slurm_conf_exits_2_at_once(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text("")
    out = MalleoRunner().invoke(cli, ["slurm", "agent", "--config", str(policy), "--once",
                                   "--slurm-conf", str(tmp_path / "none.conf"),
                                   "--state-dir", str(tmp_path / "s"), "--backend", "cli"],
                             catch_exceptions=False)
    assert out.exit_code == 2, out.output
    assert out.output == f"malleo: error: --slurm-conf/SLURM_CONF {tmp_path}/none.conf: no such file\n"
