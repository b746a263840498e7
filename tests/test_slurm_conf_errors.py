"""A slurm.conf Slurm cannot parse (plugin/backends/errors.py: SlurmConfigError).

At start it is bad input: ``malleo slurm agent`` and ``malleo slurm status`` stop with exit
2, naming the file and Slurm's first complaint (file and line), no traceback.  Once the agent
has completed a cycle it is an outage like any other (an operator may be editing the file):
logged, retried, and the agent goes on when the file is whole again.  The first two need
Slurm's client commands (they produce the parse error), no cluster; the last a live one."""
import os
import shutil

import pytest
from cli_runner import invoke

from malleo.plugin.backends.errors import (SlurmConfigError, SlurmUnavailable, classify,
                                           config_complaint)

BROKEN = 'ClusterName=x\nSlurmctldHost=\nNodeName=a CPUs=zz\nPartitionName=p Nodes=a\n'

needs_commands = pytest.mark.skipif(shutil.which("scontrol") is None or
                                    shutil.which("sinfo") is None,
                                    reason="Slurm's client commands are not installed")


def test_parse_errors_are_config_errors_and_a_missing_file_an_outage():
    text = ('scontrol: error: Parse error in file /etc/x.conf line 3: " CPUs=zz"\n'
            'scontrol: error: No SlurmctldHost defined.\n'
            'scontrol: fatal: Unable to process configuration file')
    exc = classify(text)
    assert type(exc) is SlurmConfigError and isinstance(exc, SlurmUnavailable)
    assert config_complaint(exc) == ('scontrol: error: Parse error in file /etc/x.conf line 3: '
                                     '" CPUs=zz"')
    gone = classify("scontrol: error: s_p_parse_file: cannot stat file /etc/x.conf: No such "
                    "file or directory\nscontrol: fatal: Unable to process configuration file")
    assert type(gone) is SlurmUnavailable


@needs_commands
@pytest.mark.parametrize("backend", ["cli", "auto", "libslurm"])
def test_the_agent_refuses_to_start_on_a_broken_slurm_conf(tmp_path, backend):
    conf = tmp_path / "slurm.conf"
    conf.write_text(BROKEN)
    policy = tmp_path / "easy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    result = invoke("slurm", "agent", "--config", policy, "--slurm-conf", conf,
                    "--backend", backend, "--once", "--dry-run")
    assert result.exit_code == 2, result.output
    assert f"slurm.conf {conf}: Slurm cannot read it: " in result.output
    assert f"Parse error in file {conf} line 2" in result.output
    assert "Traceback" not in result.output


@needs_commands
def test_status_refuses_a_broken_slurm_conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(BROKEN)
    result = invoke("slurm", "status", "--slurm-conf", conf)
    assert result.exit_code == 2, result.output
    assert f"slurm.conf {conf}: Slurm cannot read it: " in result.output
    assert f"Parse error in file {conf} line 2" in result.output


def replace_text(path, text):
    """Write ``text`` to ``path`` in one step (a sibling file renamed over it): Slurm's commands,
    run by the agent at any moment, never read the file half written or empty."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


@pytest.mark.slurm
def test_a_slurm_conf_broken_under_a_running_agent_is_an_outage(slurm_cluster, tmp_path):
    """The cluster's own slurm.conf is broken for a while under a running agent (and put back
    whatever happens): the agent logs the failed cycles, stays up, and completes cycles again
    once the file is whole."""
    from pathlib import Path

    from test_agent_live import AgentProcess

    policy = tmp_path / "easy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    conf = Path(slurm_cluster.conf)
    original = conf.read_text()
    # the CLI backend: Slurm's commands parse the file at every call (libslurm's was parsed
    # once, at start, and does not see the edit)
    agent = AgentProcess(str(conf), policy, tmp_path / "agent.log", "--backend", "cli")
    try:
        agent.wait_for(lambda: agent.events("cycle"), 60, "the agent's first cycle")
        try:
            replace_text(conf, original + "NodeName=zz CPUs=zz\n")
            failed = agent.wait_for(lambda: agent.events("cycle_failed"), 60,
                                    "a cycle to fail on the broken file")
            assert failed[0]["kind"] == "slurm_unavailable"
            assert "Parse error in file" in failed[0]["error"]
        finally:
            replace_text(conf, original)
        seen = len(agent.events("cycle"))
        agent.wait_for(lambda: len(agent.events("cycle")) > seen, 90,
                       "a cycle after the file was put back")
    finally:
        code = agent.stop()
    assert code == 0
    assert not agent.events("cycle_crashed")
