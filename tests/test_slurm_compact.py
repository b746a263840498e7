"""The compact read of the agent's cycle (plugin/backends/columns.py, issue 16).

Unit tests: the parser on good and bad squeue/sinfo text (a SlurmParseError naming the line
and the field).  Live tests (marker ``slurm``, the local Slurm of tests/slurm_fixture.py):
the compact read and the JSON read of one real queue (held, pending, running, array and
range jobs, names holding the delimiter and a newline) give the same plan inputs and plan.
"""
import time

import numpy as np
import pytest

from malleo.plugin.backends import columns
from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.backends.errors import SlurmParseError

F = columns.SQUEUE_FIELDS


def line(**over) -> str:
    """One compact squeue line, running job 7 by default; ``over`` replaces fields."""
    rec = dict(JobID="7", UserId="1000", UserName="alice", Partition="batch", State="RUNNING",
               PriorityLong="4294901759", SubmitTime="1796150319", StartTime="1796150320",
               EndTime="1796150620", TimeLimit="5:00", NumNodes="2", MaxNodes="2",
               NumCPUs="4", NodeList="n[1-2]", Reason="None")
    rec.update(over)
    return "".join(f"{rec[f]}|" for f in F) + "\n"


def test_argv_asks_every_field_whole_with_the_separator():
    argv = columns.squeue_argv()
    fmt = argv[-1].removeprefix("--Format=")
    assert fmt.split(",") == [f"{f}:|" for f in F]        # width 0: never cut
    assert "--states=all" in argv and "--noheader" in argv
    assert columns.TIME_ENV == {"SLURM_TIME_FORMAT": "%s"}
    assert "Name" not in F and "Comment" not in F           # no free text is read


def test_parse_squeue_columns():
    text = (line() + line(JobID="8", State="PENDING", StartTime="N/A", EndTime="N/A",
                          NodeList="", TimeLimit="1-02:00:00", NumNodes="1", MaxNodes="3",
                          PriorityLong="0", Reason="JobHeldUser")
            + line(JobID="9", State="PENDING", StartTime="N/A", EndTime="N/A", NodeList="",
                   TimeLimit="UNLIMITED", Reason="ReqNodeNotAvail, UnavailableNodes:n3")
            + line(JobID="10", State="PENDING", TimeLimit="NOT_SET", NodeList="",
                   Reason="a|b state_desc"))
    t = columns.parse_squeue(text)
    assert t.job_id.tolist() == [7, 8, 9, 10]
    assert t.time_limit.tolist() == [300, 93600, -1, -1]
    assert t.start_time.tolist() == [1796150320, 0, 0, 1796150320]
    assert t.reason.tolist() == [b"", b"JobHeldUser", b"ReqNodeNotAvail", b"a|b state_desc"]
    assert t.is_held.tolist() == [False, True, False, False]
    running, held = t.job(0), t.job(1)
    assert running.node_list == ("n1", "n2") and running.start_time == 1796150320
    assert running.end_time == 1796150620 and running.max_nodes is None
    assert held.start_time is None and held.max_nodes == 3 and held.is_held
    assert held.name == "" and held.comment == ""           # free text is not read
    assert len(list(t)) == 4


@pytest.mark.parametrize("text, where", [
    (line()[:-3] + "\n", "line 1: field 15 (Reason) missing"),
    (line() + "7|1000|\n", "line 2: field 3 (UserName) missing"),
    (line() + line().rstrip("\n") + "extra\n", "line 2: text after the last field (Reason)"),
    (line(JobID="7x"), "line 1: field 1 (JobID): not a number: '7x'"),
    (line() + line(UserId="-3"), "line 2: field 2 (UserId): not a number: '-3'"),
    (line(SubmitTime="2026-12-01T10:00:00"),
     "line 1: field 7 (SubmitTime): not a number: '2026-12-01T10:00:00'"),
    (line(TimeLimit="soon"), "line 1: field 10 (TimeLimit): 'soon' is not a Slurm duration"),
    (line(NumCPUs="99999999999999999999"),
     "line 1: field 13 (NumCPUs): not a number: '99999999999999999999'"),
])
def test_parse_squeue_refuses_bad_lines_naming_line_and_field(text, where):
    with pytest.raises(SlurmParseError) as err:
        columns.parse_squeue(text)
    assert str(err.value).startswith(f"squeue --Format: {where}")


def test_fingerprint_ignores_row_order_and_finished_jobs():
    a = columns.parse_squeue(line() + line(JobID="8", State="PENDING")
                             + line(JobID="9", State="COMPLETED"))
    b = columns.parse_fingerprint(b"8|PENDING|\n7|RUNNING|\n")
    assert a.fingerprint() == b
    assert columns.parse_fingerprint(b"8|PENDING|\n7|COMPLETING|\n") != b
    assert columns.parse_fingerprint(b"8|PENDING|\n") != b
    with pytest.raises(SlurmParseError, match="line 2: field 2 \\(State\\) missing"):
        columns.parse_fingerprint(b"8|PENDING|\n7|\n")


def test_state_flags_read_as_the_base_state_the_plan_needs():
    t = columns.parse_squeue(line(State="REQUEUE_HOLD", PriorityLong="0", NodeList="")
                             + line(JobID="8", State="STOPPED")
                             + line(JobID="9", State="CONFIGURING"))
    assert t.state.tolist() == [b"PENDING", b"RUNNING", b"CONFIGURING"]
    assert t.is_held.tolist() == [True, False, False]
    assert t.is_active.tolist() == [False, True, True]


def test_parse_squeue_empty_queue():
    t = columns.parse_squeue(b"")
    assert len(t) == 0 and t.job_id.dtype == np.int64


def test_parse_sinfo_merges_partitions_and_reads_availability():
    text = ("n1|batch|idle|32|0/32/0/32|\n"
            "n1|debug|idle|32|0/32/0/32|\n"
            "n2|batch|idle+drain|32|0/0/32/32|\n"
            "n3|batch|mixed|32|8/24/0/32|\n"
            "n4|batch|down+not_responding|32|0/0/32/32|\n")
    t = columns.parse_sinfo(text)
    names, cpus = t.usable("batch")
    assert names == ["n1", "n3"] and cpus.tolist() == [32, 32]
    nodes = {n.name: n for n in t}
    assert nodes["n1"].partitions == ("batch", "debug")
    assert nodes["n2"].state == "IDLE" and nodes["n2"].flags == ("DRAIN",)
    assert nodes["n3"].alloc_cpus == 8 and nodes["n3"].is_available
    assert not nodes["n4"].is_available


def test_parse_sinfo_expands_groups():
    """The grouped read (one line per group of alike nodes, as sinfo without --Node
    prints): every node of a group is a row; a group's CPUsState is its sum, split exactly
    for idle, full and one-node groups, as the mean for several partly allocated nodes."""
    text = ("n[1-3],m7|batch|idle|32|0/128/0/128|\n"
            "n[4-5]|batch|allocated|16|32/0/0/32|\n"
            "n6|batch|mixed|32|8/24/0/32|\n"
            "n[7-8]|batch|mixed|32|24/40/0/64|\n"
            "n[1-2]|debug|idle+drain|32|0/0/64/64|\n")
    t = columns.parse_sinfo(text)
    assert [n.decode() for n in t.name.tolist()] == [
        "n1", "n2", "n3", "m7", "n4", "n5", "n6", "n7", "n8", "n1", "n2"]
    assert t.partition.tolist() == [b"batch"] * 9 + [b"debug"] * 2
    assert t.cpus.tolist() == [32] * 4 + [16, 16] + [32] * 5
    assert t.alloc_cpus.tolist() == [0] * 4 + [16, 16, 8, 12, 12, 0, 0]
    assert t.is_available.tolist() == [True] * 9 + [False] * 2
    names, cpus = t.usable("batch")
    assert names == ["n1", "n2", "n3", "m7", "n4", "n5", "n6", "n7", "n8"]
    assert t.distinct_names() == 9
    nodes = {n.name: n for n in t}
    assert nodes["n1"].partitions == ("batch", "debug") and nodes["n1"].flags == ()
    assert t.usable("debug")[0] == []
    with pytest.raises(SlurmParseError, match=r"line 1: field 1 \(NodeList\)"):
        columns.parse_sinfo("n[1-|batch|idle|32|0/32/0/32|\n")


@pytest.mark.parametrize("text, where", [
    ("n1|batch|idle|32|\n", "line 1: field 5 (CPUsState) missing"),
    ("n1|batch|idle|x|0/32/0/32|\n", "line 1: field 4 (CPUs): not a number: 'x'"),
    ("n1|batch|idle|32|0/32|\n", "line 1: field 5 (CPUsState): '0/32' is not A/I/O/T"),
    ("n1|batch|idle|32|0/32/0/32|n2|\n", "line 1: 6 fields where 5"),
])
def test_parse_sinfo_refuses_bad_lines(text, where):
    with pytest.raises(SlurmParseError) as err:
        columns.parse_sinfo(text)
    assert str(err.value).startswith(f"sinfo --Format: {where}")


def test_backend_read_mode_is_checked(monkeypatch):
    monkeypatch.setenv("MALLEO_SLURM_READ", "xml")
    with pytest.raises(ValueError, match="MALLEO_SLURM_READ/read 'xml'"):
        CliBackend()
    assert CliBackend(read="json").read == "json"
    monkeypatch.delenv("MALLEO_SLURM_READ")
    assert CliBackend().read == "compact"


# --- live: the compact and the JSON read of one real queue ---------------------------------

def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.3)


def _inputs_equal(a, b):
    assert (a.now, a.unit, a.partition, a.total) == (b.now, b.unit, b.partition, b.total)
    assert a.running_ids.tolist() == b.running_ids.tolist()
    assert a.pending_ids.tolist() == b.pending_ids.tolist()
    for key in a.running:
        assert a.running[key].tolist() == b.running[key].tolist(), key
        assert a.running[key].dtype == b.running[key].dtype, key
    for key in a.pending:
        np.testing.assert_array_equal(a.pending[key], b.pending[key], err_msg=key)
        assert a.pending[key].dtype == b.pending[key].dtype, key
    assert a.pending_priority.tolist() == b.pending_priority.tolist()
    assert a.skipped == b.skipped
    assert [j.job_id for j in a.finished] == [j.job_id for j in b.finished]


@pytest.mark.slurm
def test_compact_and_json_reads_give_the_same_plan(slurm_cluster, slurm_jobs):
    from malleo.emulator.cli._options import parse_policy_spec
    from malleo.plugin.agent.live_plan import LivePlanner
    from malleo.plugin.agent.state import Snapshot, plan_inputs, read_snapshot

    json_b = CliBackend(conf=slurm_cluster.conf, read="json")
    compact = CliBackend(conf=slurm_cluster.conf, read="compact")
    total = sum(n.is_available for n in json_b.nodes())

    def sub(*args):
        out = json_b._run(["sbatch", "--parsable", "--output=/dev/null", "--chdir=/tmp", *args])
        job_id = int(out.strip().split(";")[0])
        slurm_jobs.append(job_id)
        return job_id

    done = sub("-N1", "-t", "1", "--wrap", "true")                  # a COMPLETED record
    _wait(lambda: json_b.job(done).state == "COMPLETED", 60, f"job {done} to complete")
    running = [sub("-N2", "-t", "30", "-J", "run|ning", "--wrap", "sleep 300"),
               sub("-n3", "-t", "1-00:00:00", "--wrap", "sleep 300")]
    array = sub("-N1", "-t", "7", "--array=1-3", "-J", "arr\nay|x", "--wrap", "sleep 300")
    _wait(lambda: sum(j.state == "RUNNING" for j in json_b.all_jobs()) >= 5, 60,
          "2 jobs and 3 array tasks to run")
    used = sum(j.num_nodes for j in json_b.all_jobs() if j.state == "RUNNING")
    sub(f"-N{total - used}", "-t", "30", "--wrap", "sleep 300")      # fills the machine
    _wait(lambda: sum(n.alloc_cpus > 0 for n in json_b.nodes() if n.is_available) == total, 60,
          "the machine to fill")
    sub("--hold", "-N2", "-t", "10", "-J", "held|a|b", "--wrap", "sleep 1")
    sub("--hold", "--array=1-4", "-N1", "-t", "5", "--wrap", "sleep 1")
    sub("-N1-3", "-t", "20", "-J", "range\n|", "--wrap", "sleep 1")
    sub("-N1", "--wrap", "sleep 1")                                 # no time limit
    sub(f"-N{total}", "-t", "60", "--wrap", "sleep 1")
    sub("--begin=now+1hour", "-N1", "-t", "5", "--wrap", "sleep 1")  # reason BeginTime
    sub("-n5", "-t", "15", "--wrap", "sleep 1")
    time.sleep(1.5)                                                 # one scheduling pass

    for _ in range(3):             # a job may start or end between the two reads: retry
        slow = read_snapshot(json_b)
        fast = read_snapshot(compact)
        if sorted((j.job_id, j.state) for j in slow.jobs) == \
           sorted((int(i), s.decode()) for i, s in zip(fast.jobs.job_id, fast.jobs.state)):
            break
        time.sleep(1)
    else:
        pytest.fail("the queue kept changing between the two reads")
    assert isinstance(fast.jobs, columns.JobTable) and isinstance(fast.nodes, columns.NodeTable)
    assert compact.queue_fingerprint() == fast.jobs.fingerprint()   # the agent's change poll
    assert array in fast.jobs.job_id.tolist() and running[0] in fast.jobs.job_id.tolist()
    # the same read time for both, so `now` compares
    fast = Snapshot(slow.read_time, fast.nodes, fast.jobs, fast.partitions,
                    fast.default_partition)
    assert sorted(fast.nodes, key=lambda n: n.name) == sorted(slow.nodes, key=lambda n: n.name)
    slow_jobs = {j.job_id: j for j in slow.jobs}
    for job in fast.jobs:                   # every field but the free text not read
        if job.is_finished and job.state != "COMPLETED":
            continue        # never planned (squeue prints a cancelled job's requested CPUs)
        want = slow_jobs[job.job_id]
        assert job == type(want)(**{**{f: getattr(want, f) for f in want.__struct_fields__},
                                    "name": "", "comment": "", "required_nodes": ()}), job
    for unit in ("nodes", "cpus"):
        a = plan_inputs(slow, unit=unit, previous_reservation={done: 5},
                        previous_priority={running[0]: 1.5})
        b = plan_inputs(fast, unit=unit, previous_reservation={done: 5},
                        previous_priority={running[0]: 1.5})
        _inputs_equal(a, b)
        assert a.skipped and len(a.pending_ids) and len(a.running_ids) >= 5
        assert any(v == "held" for v in a.skipped.values())
        assert any(v == "reason BeginTime" for v in a.skipped.values())
    policy = parse_policy_spec("fcfs+conservative")
    p1 = LivePlanner(policy).plan(slow)
    p2 = LivePlanner(policy).plan(fast)
    assert p1.order == p2.order and p1.started_now == p2.started_now
    assert p1.decisions.reservation.tolist() == p2.decisions.reservation.tolist()


@pytest.mark.slurm
def test_reads_at_once_equal_reads_one_by_one(slurm_cluster, slurm_jobs):
    """The cycle's read (ping, partitions, grouped sinfo and squeue started at once) gives
    what the same reads give one after the other, and times each part."""
    from malleo.plugin.backends import SlurmBackend

    backend = CliBackend(conf=slurm_cluster.conf, read="compact")
    for k in range(3):
        out = backend._run(["sbatch", "--parsable", "--hold", "-N1", "-t", "5",
                            "--output=/dev/null", "--chdir=/tmp", "--wrap", "true"])
        slurm_jobs.append(int(out.strip().split(";")[0]))

    def view(read):
        parts, nodes, jobs = read
        return (parts, sorted(nodes, key=lambda n: n.name),
                sorted(jobs, key=lambda j: j.job_id), jobs.fingerprint())

    # a node ending an earlier test's job changes state between two reads: read until
    # nothing moved in between
    for _ in range(30):
        at_once = backend.cycle_read()
        times = dict(backend.last_read)
        if view(at_once) == view(SlurmBackend.cycle_read(backend)):
            break
        time.sleep(1)
    else:
        pytest.fail("the reads at once and one by one kept differing for 30 s")
    assert set(times) >= {"ping", "partitions", "sinfo", "squeue", "parse_sinfo",
                          "parse_squeue", "read"}
    parts, nodes, jobs = at_once
    assert len(nodes.name) == len(slurm_cluster.node_names)
    assert set(slurm_jobs) <= set(jobs.job_id.tolist())


@pytest.mark.parametrize("text", ["", "n1", "n[1-3]", "n[1-3,7],gpu[08-10],login",
                                  "r[1-2]n[01-04]", "(null)", "a[3-3]b"])
def test_hostlist_count_is_the_length_of_the_expansion(text):
    from malleo.plugin.backends import hostlist

    assert hostlist.count(text) == len(hostlist.expand(text))


def test_plan_inputs_on_columns_equal_the_job_path_with_unusable_nodes():
    """Drained and down nodes and a second partition: the column path (which counts a
    running job's nodes without naming them only when every node is usable) gives the
    tables the Job path gives."""
    from malleo.plugin.agent.state import Snapshot, plan_inputs

    jobs = (line(JobID="1", NodeList="n[1-2]", NumNodes="2")
            + line(JobID="2", NodeList="n[3-4]", NumNodes="2", NumCPUs="8")
            + line(JobID="3", Partition="batch,other", State="PENDING", NodeList="",
                   StartTime="N/A", EndTime="N/A", NumNodes="3", Reason="Priority")
            + line(JobID="4", State="PENDING", NodeList="", NumNodes="9", Reason="Resources")
            + line(JobID="5", State="COMPLETED", NodeList="n1", NumNodes="1"))
    nodes = "".join(f"n{i}|batch|{st}|4|{a}/0/0/4|\n" for i, st, a in
                    ((1, "allocated", 4), (2, "allocated", 4), (3, "allocated+drain", 4),
                     (4, "mixed", 2), (5, "idle", 0), (6, "down", 0)))
    nodes += "n7|other|idle|4|0/4/0/4|\n"
    for node_text in (nodes, "".join(f"n{i}|batch|idle|4|0/4/0/4|\n" for i in range(1, 8))):
        table, ntable = columns.parse_squeue(jobs), columns.parse_sinfo(node_text)
        fast = Snapshot(1796160000.0, ntable, table, {"batch": None, "other": 3600}, "batch")
        slow = Snapshot(1796160000.0, tuple(ntable), tuple(table), fast.partitions, "batch")
        for unit in ("nodes", "cpus"):
            _inputs_equal(plan_inputs(fast, unit=unit), plan_inputs(slow, unit=unit))


def test_plan_inputs_on_columns_equal_the_job_path_with_predictions():
    """estimate = "predict", at the pass and at submission (predict_at): the running jobs'
    estimates from the column path equal the Job path's."""
    from malleo._core import PlanState
    from malleo.plugin.agent.state import Snapshot, plan_inputs

    state = PlanState()
    for start, end in ((1796140000, 1796140100), (1796150000, 1796150030)):
        state.record_completion(1000, 2, start, end)
    jobs = (line(JobID="1", SubmitTime="1796145000") + line(JobID="2", NodeList="n[3-4]")
            + line(JobID="3", State="PENDING", NodeList="", NumNodes="1", Reason="Priority"))
    nodes = "".join(f"n{i}|batch|idle|4|0/4/0/4|\n" for i in range(1, 7))
    table, ntable = columns.parse_squeue(jobs), columns.parse_sinfo(nodes)
    fast = Snapshot(1796160000.0, ntable, table, {"batch": None}, "batch")
    slow = Snapshot(1796160000.0, tuple(ntable), tuple(table), fast.partitions, "batch")
    for at in ("pass", "submit"):
        kw = dict(estimate="predict", history=state.history, recent=state.recent,
                  predict_at=at, plan_state=state)
        a, b = plan_inputs(fast, **kw), plan_inputs(slow, **kw)
        _inputs_equal(a, b)
        assert a.running["est"].tolist() != a.running["request"].tolist()


def test_a_completing_job_plans_as_ending_now_so_nothing_backfills_ahead_of_the_head():
    """A COMPLETING job has ended; its nodes come back when the epilog is done.  Planned
    until start + limit, it would hide them from the head's reservation and let a short job
    backfill ahead of the head in that window (a live EASY run on CI started job 30 of
    tests/test_agent_live.py so).  Planned as ending at now + 1 (Slurm's backfill gives
    the head the same start), the head waits for them and the short job does not jump."""
    from malleo._core import plan
    from malleo.plugin.agent.state import Snapshot, plan_inputs
    from malleo.policy import Policy

    now = 1796160000
    jobs = (line(JobID="1", State="COMPLETING", NodeList="n[1-2]", NumNodes="2",
                 StartTime=str(now - 100), TimeLimit="1:00:00")
            + line(JobID="2", NodeList="n3", NumNodes="1", StartTime=str(now - 50),
                   TimeLimit="1:00:00")
            + line(JobID="3", State="PENDING", NodeList="", NumNodes="3", TimeLimit="10:00",
                   StartTime="N/A", EndTime="N/A", Reason="Resources")
            + line(JobID="4", State="PENDING", NodeList="", NumNodes="1", TimeLimit="5:00",
                   StartTime="N/A", EndTime="N/A", Reason="Priority"))
    nodes = "".join(f"n{i}|batch|{st}|4|{a}/0/0/4|\n" for i, st, a in
                    ((1, "completing", 4), (2, "completing", 4), (3, "allocated", 4),
                     (4, "idle", 0)))
    table, ntable = columns.parse_squeue(jobs), columns.parse_sinfo(nodes)
    fast = Snapshot(float(now), ntable, table, {"batch": None}, "batch")
    slow = Snapshot(float(now), tuple(ntable), tuple(table), fast.partitions, "batch")
    for estimate in ("request", "predict"):
        a, b = plan_inputs(fast, estimate=estimate), plan_inputs(slow, estimate=estimate)
        _inputs_equal(a, b)
        assert a.total == 4 and a.running_ids.tolist() == [1, 2]
        assert a.running["est"].tolist() == [101, 3600]      # job 1 ends at now + 1
        assert a.running["request"].tolist() == [3600, 3600]
        decisions = plan(a.now, a.total, a.running, a.pending, Policy(backfill="easy"))
        assert decisions.start.tolist() == []                 # job 4 would delay job 3
    # The same queue with job 1 running: its nodes are busy for an hour, job 4 backfills.
    running = columns.parse_squeue(jobs.replace("|COMPLETING|", "|RUNNING|"))
    c = plan_inputs(Snapshot(float(now), ntable, running, {"batch": None}, "batch"))
    decisions = plan(c.now, c.total, c.running, c.pending, Policy(backfill="easy"))
    assert c.pending_ids[decisions.start].tolist() == [4]
