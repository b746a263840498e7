"""The agent's operations that need no cluster: policy loading and reloading, the Prometheus
endpoint, structured logs, shadow-mode comparison.  (Everything that talks to Slurm is tested
live in tests/test_agent_live.py and tests/test_agent_apply.py.)"""
import io
import json
import logging
import urllib.request

import pytest

from malleo.errors import PolicyError
from malleo.plugin.agent import logs
from malleo.plugin.agent.loop import Agent, load_agent_policy
from malleo.plugin.agent.metrics_http import Metrics, serve
from malleo.plugin.agent.shadow import compare, inversions
from malleo.plugin.backends.cli import CliBackend


def agent_for(path, **kw):
    # The backend is never called by these tests (no cycle runs).
    return Agent(CliBackend(conf="/nonexistent/slurm.conf"), path, **kw)


def test_policy_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('order = "fcfs"\nbackfill = "sometimes"\n')
    with pytest.raises(PolicyError, match=rf"{bad}:2: backfill"):
        load_agent_policy(bad)
    oracle = tmp_path / "oracle.toml"
    oracle.write_text('# live\n\nestimate = "actual"\n')
    with pytest.raises(PolicyError, match=rf"{oracle}:3: estimate: 'actual'"):
        load_agent_policy(oracle)
    with pytest.raises(PolicyError, match="period"):
        agent_for(tmp_path / "missing.toml", period=0)


def test_reload_keeps_the_old_policy_when_the_new_one_is_invalid(tmp_path, caplog):
    path = tmp_path / "policy.toml"
    path.write_text('order = "fcfs"\nbackfill = "easy"\n')
    agent = agent_for(path)
    path.write_text('order = "sjf"\nbackfill = 3\n')
    with caplog.at_level(logging.ERROR, logger=logs.LOGGER_NAME):
        assert agent.reload_policy() is False
    assert agent.policy.describe() == "fcfs+easy"
    record = next(r for r in caplog.records if r.getMessage() == "policy_reload_rejected")
    assert f"{path}:2: backfill" in record.malleo_fields["error"]
    assert agent.metrics.get("malleo_agent_policy_reloads_total", result="rejected") == 1
    path.write_text('order = "sjf"\nbackfill = "conservative"\n')
    assert agent.reload_policy() is True
    assert agent.policy.describe() == "sjf+conservative"
    assert agent.metrics.get("malleo_agent_policy_reloads_total", result="ok") == 1


def test_signal_requests_are_flags(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text("")
    agent = agent_for(path)
    agent.request_reload()
    assert agent._reload and agent._wake.is_set()
    agent.request_stop()
    assert agent._stop.is_set()
    # A stopped agent leaves run() at once with status 0, without touching Slurm.
    assert agent.run() == 0


def test_metrics_endpoint_serves_prometheus_text():
    metrics = Metrics()
    metrics.inc("malleo_agent_cycles_total")
    metrics.inc("malleo_agent_cycle_errors_total", kind="slurm_unavailable")
    metrics.inc("malleo_agent_decisions_skipped_total", 2, reason="vanished")
    metrics.set("malleo_agent_queue_pending", 12)
    for seconds in (0.02, 0.3, 7.0):
        metrics.observe_cycle(seconds)
    server = serve(metrics, 0, host="127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = resp.read().decode()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    finally:
        server.shutdown()
    lines = text.splitlines()
    assert "malleo_agent_cycles_total 1" in lines
    assert 'malleo_agent_cycle_errors_total{kind="slurm_unavailable"} 1' in lines
    assert 'malleo_agent_decisions_skipped_total{reason="vanished"} 2' in lines
    assert "malleo_agent_queue_pending 12" in lines
    assert "malleo_agent_decisions_applied_total 0" in lines       # counters start at 0
    assert 'malleo_agent_cycle_seconds_bucket{le="0.025"} 1' in lines
    assert 'malleo_agent_cycle_seconds_bucket{le="0.5"} 2' in lines
    assert 'malleo_agent_cycle_seconds_bucket{le="+Inf"} 3' in lines
    assert "malleo_agent_cycle_seconds_count 3" in lines
    assert "# TYPE malleo_agent_cycle_seconds histogram" in lines


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_structured_logs(fmt):
    stream = io.StringIO()
    logger = logs.configure(fmt, stream=stream)
    try:
        logs.event(logger, logging.INFO, "cycle", pending=3, start_now=[7, 9], note="two words")
    finally:
        logs.configure("text")
    line = stream.getvalue().strip()
    if fmt == "json":
        doc = json.loads(line)
        assert doc["event"] == "cycle" and doc["level"] == "INFO"
        assert doc["pending"] == 3 and doc["start_now"] == [7, 9] and doc["ts"].endswith("Z")
    else:
        assert " INFO cycle pending=3 start_now=[7, 9] note=\"two words\"" in line
    with pytest.raises(ValueError):
        logs.configure("xml")


def test_inversions_count_strict_disagreements_only():
    planned = {1: 0, 2: 1, 3: 2, 4: 3}
    assert inversions(planned, {1: 10, 2: 10, 3: 11, 4: 12}) == []
    assert inversions(planned, {1: 12, 2: 10, 3: 11}) == [(1, 2), (1, 3)]
    assert inversions(planned, {4: 1, 9: 0}) == []          # unknown ids are ignored


def test_shadow_compare_reports_early_late_and_overtaking():
    report = compare(previous_order=[5, 6, 7, 8], previous_starts={5},
                     starts={7: 100}, still_pending={5, 6, 8})
    assert report.started == [7]
    assert report.early == [7] and report.late == [5]
    assert sorted(report.inversions) == [(5, 7), (6, 7)]
