"""The agent's stop and reload while a cycle is blocked in a Slurm call (a slurmctld that
stopped answering): SIGTERM ends ``run()`` within the stop grace time, exit 0, the status
file marked stopped and ``agent_stop`` logged; a SIGHUP received meanwhile is applied when
the read returns.  The Slurm here is tests/scripted_slurm.py's, whose read waits on an Event.
(On the real Slurm: tests/test_agent_live.py, slurmctld stopped with SIGSTOP.)"""
import io
import json
import os
import signal
import threading
import time

from malleo.plugin.agent import logs, status_file
from malleo.plugin.agent.loop import Agent
from malleo.plugin.backends.model import Job
from scripted_slurm import ScriptedSlurm

NOW = 1_800_000_000
GRACE = 1.0
"""The stop grace time of these tests (seconds)."""
UNBLOCK_AFTER = 10.0
"""Seconds after which a test lets the blocked read return, so that an agent that waits for
it (the defect) ends the test with a failure instead of hanging it."""


def job(job_id, nodes, state):
    running = state == "RUNNING"
    return Job(job_id=job_id, name=f"name{job_id}", user="u1", user_id=1, partition="debug",
               state=state, reason="" if running else "Priority", submit_time=NOW - 50,
               start_time=NOW - 10 if running else None, expected_start=None,
               end_time=NOW + 600 if running else None, time_limit=600, num_nodes=nodes,
               max_nodes=None, num_cpus=2 * nodes, priority=0 if running else 7,
               node_list=tuple(f"n{i}" for i in range(1, nodes + 1)) if running else ())


class StalledSlurm(ScriptedSlurm):
    """A Slurm whose controller stops answering: from read number ``stall_at`` on (1-based),
    each cycle read waits until ``resume`` is set."""

    def __init__(self, jobs, stall_at=1):
        super().__init__(jobs, NOW)
        self.stall_at, self.reads = stall_at, 0
        self.stalled = threading.Event()        # a read is waiting
        self.resume = threading.Event()

    def cycle_read(self, ping=True):
        self.reads += 1
        if self.reads >= self.stall_at:
            self.stalled.set()
            self.resume.wait()
        return super().cycle_read(ping)


def signal_when(event, sig, then=None):
    """In a thread: once ``event`` is set, send ``sig`` to this process, call ``then``."""
    def act():
        assert event.wait(30), "the read never started"
        time.sleep(0.2)             # well inside the blocked call
        os.kill(os.getpid(), sig)
        if then is not None:
            then()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def run_logged(agent):
    """``agent.run()`` in this (the main) thread, with its JSON log lines and its seconds."""
    stream = io.StringIO()
    logs.configure("json", "debug", stream=stream)
    t0 = time.monotonic()
    try:
        code = agent.run()
    finally:
        seconds = time.monotonic() - t0
        logs.configure("text", stream=io.StringIO())
    return code, seconds, [json.loads(line) for line in stream.getvalue().splitlines()]


def test_sigterm_during_a_blocked_read_stops_within_the_grace_time(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    slurm = StalledSlurm([job(5, 4, "RUNNING"), job(6, 16, "PENDING")])
    agent = Agent(slurm, policy, period=0.5, poll=0, state_dir=tmp_path / "state",
                  stop_grace=GRACE)
    unblock = threading.Timer(UNBLOCK_AFTER, slurm.resume.set)
    unblock.start()
    try:
        signal_when(slurm.stalled, signal.SIGTERM)
        code, seconds, events = run_logged(agent)
    finally:
        unblock.cancel()
    assert code == 0
    # The signal came 0.2 s into the read; the grace time, then a little bookkeeping.
    assert seconds < 0.2 + GRACE + 1.5, f"run() took {seconds:.1f} s"
    stop = [e for e in events if e["event"] == "agent_stop"]
    assert len(stop) == 1
    assert stop[0]["abandoned"] == "read" and stop[0]["grace"] == GRACE
    assert stop[0]["where"].startswith("state.py:") and "read_snapshot" in stop[0]["where"]
    doc = status_file.read(tmp_path / "state")
    assert doc["agent"]["stopped"] is True and doc["plan"] is None
    assert not status_file.is_running(doc)
    # The read left behind returns later: it plans and writes nothing, and the status file
    # stays as the agent left it.
    slurm.resume.set()
    deadline = time.monotonic() + 10
    while any(t.name == "malleo-cycles" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the cycle left behind did not end"
        time.sleep(0.05)
    assert slurm.writes == {}
    assert status_file.read(tmp_path / "state") == doc


def test_sigterm_between_cycles_still_finishes_at_once(tmp_path):
    """No cycle in flight: the stop needs no grace, nothing is abandoned."""
    policy = tmp_path / "policy.toml"
    policy.write_text("")
    slurm = StalledSlurm([job(5, 4, "RUNNING")], stall_at=10**9)
    agent = Agent(slurm, policy, period=30, poll=0, state_dir=tmp_path / "state",
                  stop_grace=30)
    cycled = threading.Event()
    original = agent._account

    def account(result):
        original(result)
        cycled.set()

    agent._account = account
    signal_when(cycled, signal.SIGINT)
    code, seconds, events = run_logged(agent)
    assert code == 0 and seconds < 5
    stop = [e for e in events if e["event"] == "agent_stop"]
    assert len(stop) == 1 and "abandoned" not in stop[0]
    assert status_file.read(tmp_path / "state")["agent"]["stopped"] is True


def test_sighup_during_a_blocked_read_is_applied_when_it_returns(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    slurm = StalledSlurm([job(5, 4, "RUNNING"), job(6, 16, "PENDING")], stall_at=2)
    agent = Agent(slurm, policy, period=0.3, poll=0, stop_grace=GRACE)
    policy.write_text('order = "sjf"\n')           # in force after the SIGHUP only
    reloaded = threading.Event()
    original = agent.reload_policy

    def reload_policy():
        ok = original()
        reloaded.set()
        return ok

    agent.reload_policy = reload_policy
    seen = {}

    def resume_then_stop():
        time.sleep(0.5)                 # the handler ran; the read still blocks
        seen["reloaded_while_blocked"] = reloaded.is_set()
        slurm.resume.set()
        seen["reloaded"] = reloaded.wait(10)
        time.sleep(0.5)                 # cycles under the new policy
        agent.request_stop()

    signal_when(slurm.stalled, signal.SIGHUP, resume_then_stop)
    code, _, events = run_logged(agent)
    assert code == 0
    assert seen == {"reloaded_while_blocked": False, "reloaded": True}
    assert agent.policy.describe() == "sjf+easy"
    names = [e["event"] for e in events]
    assert names.count("policy_reloaded") == 1
    assert names.index("policy_reloaded") < max(k for k, n in enumerate(names) if n == "cycle")


def test_a_cycle_blocked_too_long_is_reported_stalled_then_unstalled(tmp_path):
    """The main thread watches the cycle: a read that blocks past ``stall_after`` logs
    ``cycle_stalled`` once (with where it waits) and sets the gauge; when the read returns,
    ``cycle_unstalled`` and the gauge back at 0."""
    policy = tmp_path / "policy.toml"
    policy.write_text('order = "fcfs"\nbackfill = "easy"\n')
    slurm = StalledSlurm([job(5, 4, "RUNNING"), job(6, 16, "PENDING")])
    agent = Agent(slurm, policy, period=0.3, poll=0, stop_grace=GRACE)
    agent.stall_after = 0.5
    seen = {}

    def resume_then_stop():
        time.sleep(1.5)                 # past stall_after: reported by now
        seen["gauge_while_blocked"] = agent.metrics.get("malleo_agent_cycle_stalled")
        slurm.resume.set()
        time.sleep(0.8)                 # the read returned; cycles go on
        seen["gauge_after"] = agent.metrics.get("malleo_agent_cycle_stalled")
        agent.request_stop()

    unblock = threading.Timer(UNBLOCK_AFTER, slurm.resume.set)
    unblock.start()
    try:
        threading.Thread(target=lambda: slurm.stalled.wait(30) and resume_then_stop(),
                         daemon=True).start()
        code, _, events = run_logged(agent)
    finally:
        unblock.cancel()
    assert code == 0
    assert seen == {"gauge_while_blocked": 1, "gauge_after": 0}
    stalled = [e for e in events if e["event"] == "cycle_stalled"]
    assert len(stalled) == 1
    assert stalled[0]["part"] == "read" and stalled[0]["seconds"] >= 0.5
    assert "read_snapshot" in stalled[0]["where"]
    unstalled = [e for e in events if e["event"] == "cycle_unstalled"]
    assert len(unstalled) == 1 and unstalled[0]["part"] == "read"
    assert unstalled[0]["seconds"] >= 1.4
    names = [e["event"] for e in events]
    # the first cycle is the one that was stalled (the watch may see it end a little later)
    assert names.index("cycle_stalled") < names.index("cycle")
    assert names.index("cycle_stalled") < names.index("cycle_unstalled")
