"""Unit tests of the Slurm backends' parsing, error typing and selection (no cluster needed).

Inputs: outputs of malleo's own local Slurm 22.05 captured by tests/data/slurm/capture.sh, and
Slurm 24.11 documents constructed from its documented v0.0.41 schema (see that folder's README).
"""
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from malleo.plugin.backends import hostlist, parse_json, parse_scontrol, select_backend
from malleo.plugin.backends.cli import CliBackend, slurm_duration
from malleo.plugin.backends.errors import (
    BackendNotAvailable, InvalidJobId, InvalidRequest, JobStateError, PermissionDenied,
    SlurmCommandError, SlurmParseError, SlurmUnavailable, classify)
from malleo.plugin.backends import pyslurm_backend
from malleo.plugin.backends.model import Job

DATA = Path(__file__).resolve().parent / "data" / "slurm"


def load(name):
    return json.loads((DATA / name).read_text())


@pytest.fixture
def utc(monkeypatch):
    """scontrol prints local time; the captures were taken on a UTC machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# --- host lists -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, names", [
    ("n[1-3,7]", ["n1", "n2", "n3", "n7"]),
    ("n[7,9]", ["n7", "n9"]),
    ("gpu[08-10],login", ["gpu08", "gpu09", "gpu10", "login"]),
    ("a1,b[2-3]", ["a1", "b2", "b3"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ("", []), ("(null)", []), (None, []),
])
def test_hostlist_expand(text, names):
    assert hostlist.expand(text) == names


@pytest.mark.parametrize("bad", ["n[1-3", "n[a-b]", "n[1-]x["])
def test_hostlist_expand_rejects_malformed(bad):
    with pytest.raises(SlurmParseError, match="host list"):
        hostlist.expand(bad)


def test_hostlist_compress_examples():
    assert hostlist.compress(["n1", "n2", "n3", "n7"]) == "n[1-3,7]"
    assert hostlist.compress(["n5"]) == "n5"
    assert hostlist.compress(["gpu09", "gpu10", "login"]) == "gpu[09-10],login"


@given(st.sets(st.integers(0, 300), min_size=1, max_size=40))
def test_hostlist_round_trip(nums):
    names = [f"n{i}" for i in sorted(nums)]
    assert hostlist.expand(hostlist.compress(names)) == names


# --- numbers and durations ---------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (5, 5), (None, None), (0, 0), (2.0, 2),
    ({"set": True, "infinite": False, "number": 42}, 42),
    ({"set": False, "infinite": False, "number": 0}, None),
    ({"set": False, "infinite": True, "number": 0}, None),
    ({"set": True, "infinite": True, "number": 7}, None),
])
def test_number_both_schemas(value, expected):
    assert parse_json.number(value) == expected


def test_number_rejects_text():
    with pytest.raises(SlurmParseError, match="time_limit: expected a number"):
        parse_json.number("soon", "time_limit")


@pytest.mark.parametrize("text, seconds", [
    ("00:05:00", 300), ("1:00", 60), ("5:00", 300), ("2:00:00", 7200), ("365-00:00:00", 365 * 86400),
    ("1-02:03:04", 93784), ("1-02", 93600), ("UNLIMITED", None), ("Partition_Limit", None),
])
def test_scontrol_duration(text, seconds):
    assert parse_scontrol.duration(text) == seconds


def test_slurm_duration_rounds_up_to_minutes():
    assert slurm_duration(60) == "0-00:01:00"
    assert slurm_duration(90) == "0-00:02:00"
    assert slurm_duration(86400 + 3600) == "1-01:00:00"
    with pytest.raises(ValueError):
        slurm_duration(0)


# --- squeue --json -----------------------------------------------------------------------------

def test_squeue_22_05_captured():
    doc = load("squeue-22.05.json")
    assert parse_json.slurm_version(doc) == (22, 5, 8)
    jobs = {j.job_id: j for j in parse_json.jobs_from_squeue(doc)}
    assert sorted(jobs) == [1, 2, 3, 4, 5, 6, 7]
    run2 = jobs[1]
    assert (run2.state, run2.name, run2.user, run2.user_id) == ("RUNNING", "run2", "root", 0)
    assert run2.node_list == ("n1", "n2") and run2.num_nodes == 2 and run2.time_limit == 600
    assert run2.start_time >= run2.submit_time > 1_700_000_000 and run2.expected_start is None
    assert jobs[2].time_limit == 60 and jobs[2].node_list == ("n3",)
    assert jobs[3].state == "COMPLETED" and jobs[3].is_finished
    held = jobs[4]
    assert held.is_pending and held.is_held and held.priority == 0 and held.reason == "JobHeldUser"
    assert held.num_nodes == 3 and held.time_limit == 300 and held.node_list == ()
    assert held.max_nodes is None and run2.max_nodes is None
    big = jobs[5]
    assert big.is_pending and not big.is_held and big.priority == 777 and big.num_nodes == 16
    assert big.time_limit == 7200 and big.start_time is None
    req = jobs[6]
    assert req.required_nodes == ("n7", "n9") and req.node_list == ("n7", "n9")
    assert jobs[7].name == "two words"


def test_squeue_24_11_constructed():
    doc = load("squeue-24.11.json")
    assert parse_json.slurm_version(doc) == (24, 11, 5)
    jobs = {j.job_id: j for j in parse_json.jobs_from_squeue(doc)}
    t = 1796000000
    run2 = jobs[11]
    assert run2.state == "RUNNING" and run2.is_running
    assert (run2.submit_time, run2.start_time, run2.end_time) == (t, t + 1, t + 601)
    assert run2.node_list == ("n1", "n2") and run2.num_nodes == 2 and run2.num_cpus == 4
    assert run2.time_limit == 600 and run2.priority == 4294901759
    held = jobs[12]
    assert held.is_held and held.priority == 0 and held.expected_start is None
    assert (held.num_nodes, held.max_nodes) == (3, 5)
    big = jobs[13]
    assert not big.is_held and big.priority == 777 and big.expected_start == t + 601
    assert big.reason == "Resources" and big.time_limit == 7200 and big.max_nodes is None
    assert jobs[14].required_nodes == ("n7", "n9") and jobs[14].node_list == ()
    assert jobs[15].time_limit is None and jobs[15].end_time is None
    assert jobs[16].state == "COMPLETING" and jobs[16].is_running
    assert jobs[17].state == "COMPLETED" and jobs[17].is_finished


def test_squeue_json_and_scontrol_text_agree(utc):
    """The same capture read two ways gives the same jobs (Reason and EndTime aside)."""
    from_json = {j.job_id: j for j in parse_json.jobs_from_squeue(load("squeue-22.05.json"))}
    text = (DATA / "scontrol-job-22.05.txt").read_text()
    from_text = {j.job_id: j for j in map(parse_scontrol.job, parse_scontrol.records(text))}
    assert from_json.keys() == from_text.keys()
    for job_id, a in from_json.items():
        b = from_text[job_id]
        for field in ("name", "user", "user_id", "partition", "state", "submit_time", "start_time",
                      "time_limit", "num_nodes", "max_nodes", "num_cpus", "priority", "node_list",
                      "required_nodes", "is_held"):
            assert getattr(a, field) == getattr(b, field), (job_id, field)


def test_squeue_without_jobs_is_a_parse_error():
    with pytest.raises(SlurmParseError, match="no 'jobs' list"):
        parse_json.jobs_from_squeue({"meta": {}, "errors": []})


def test_squeue_job_fields_land_in_their_places():
    """Every field read from its own key, in both number shapes (the parser builds Job
    positionally: a field out of place fails here)."""
    plain = {"job_id": 41, "name": "nm", "user_name": "alice", "user_id": 1001,
             "partition": "batch", "job_state": "RUNNING", "state_reason": "None",
             "priority": 900, "submit_time": 1_800_000_000, "start_time": 1_800_000_010,
             "end_time": 1_800_000_610, "time_limit": 10, "node_count": 2, "max_nodes": 4,
             "cpus": 8, "nodes": "n[3-4]", "required_nodes": "n3", "comment": "c",
             "hold": False}
    expected = Job(job_id=41, name="nm", user="alice", user_id=1001, partition="batch",
                   state="RUNNING", reason="", submit_time=1_800_000_000,
                   start_time=1_800_000_010, expected_start=None, end_time=1_800_000_610,
                   time_limit=600, num_nodes=2, max_nodes=None, num_cpus=8, priority=900,
                   node_list=("n3", "n4"), required_nodes=("n3",), is_held=False, comment="c")
    wrapped = {k: ({"set": True, "infinite": False, "number": v}
                   if isinstance(v, int) and not isinstance(v, bool) and k != "job_id" else v)
               for k, v in plain.items()}
    wrapped["job_state"] = ["RUNNING"]
    for rec in (plain, wrapped):
        assert parse_json.jobs_from_squeue({"jobs": [rec]}) == [expected]
    pending = dict(plain, job_state="PENDING", nodes="", state_reason="JobHeldAdmin",
                   priority=4294967294, time_limit=4294967295, hold=None)
    job = parse_json.jobs_from_squeue({"jobs": [pending]})[0]
    assert (job.start_time, job.expected_start, job.end_time) == (None, 1_800_000_010, None)
    assert (job.max_nodes, job.node_list, job.priority, job.time_limit) == (4, (), 0, None)
    assert job.is_held and job.reason == "JobHeldAdmin"


@pytest.mark.parametrize("version", ["22.05", "24.11", "25.11", "26.05"])
def test_squeue_output_read_as_text_bytes_or_dict_alike(version):
    """The CLI backend decodes squeue's output straight into typed records; a document
    decoded to a dict first (the reconfig endpoint's path) gives the same jobs."""
    text = (DATA / f"squeue-{version}.json").read_text()
    jobs = parse_json.jobs_from_squeue(text)
    assert len(jobs) >= 6
    assert jobs == parse_json.jobs_from_squeue(text.encode())
    assert jobs == parse_json.jobs_from_squeue(json.loads(text))


def test_squeue_values_of_a_wrong_type_are_named():
    with pytest.raises(SlurmParseError, match=r"\$\.jobs\[1\]\.priority"):
        parse_json.jobs_from_squeue('{"jobs": [{"job_id": 1}, {"job_id": 2, "priority": [7]}]}')
    with pytest.raises(SlurmParseError, match="not JSON"):
        parse_json.jobs_from_squeue(b'{"jobs": [')
    with pytest.raises(SlurmParseError, match="squeue --json job 3 cpus: expected a number"):
        parse_json.jobs_from_squeue({"jobs": [{"job_id": 3, "job_state": "PENDING",
                                               "cpus": "many"}]})
    with pytest.raises(SlurmParseError, match="without job_id"):
        parse_json.jobs_from_squeue({"jobs": [{"name": "x"}]})


def test_json_errors_are_collected():
    doc = {"errors": [{"description": "Failed while looking for jobs", "error_number": -1,
                       "error": "Unspecified error", "source": "slurm_load_jobs"}], "jobs": []}
    assert parse_json.errors(doc) == ["Failed while looking for jobs: Unspecified error"]
    assert parse_json.errors({"jobs": []}) == []


# --- sinfo --json and scontrol show node/partition ---------------------------------------------

@pytest.mark.parametrize("name", ["sinfo-22.05.json", "sinfo-24.11.json"])
def test_sinfo_both_schemas(name):
    nodes = {n.name: n for n in parse_json.nodes_from_sinfo(load(name))}
    assert sorted(nodes, key=lambda s: int(s[1:])) == [f"n{i}" for i in range(1, 17)]
    assert all(n.cpus == 2 for n in nodes.values())
    assert nodes["n1"].state == "ALLOCATED" and nodes["n1"].alloc_cpus == 2
    assert nodes["n16"].flags == ("DRAIN",) and not nodes["n16"].is_available
    assert nodes["n15"].is_idle and nodes["n15"].partitions[0] == "debug"


def test_sinfo_24_11_groups_and_partitions():
    nodes = {n.name: n for n in parse_json.nodes_from_sinfo(load("sinfo-24.11.json"))}
    assert nodes["n3"].state == nodes["n4"].state == "MIXED"
    assert nodes["n3"].alloc_cpus == 1 and nodes["n3"].is_available and not nodes["n3"].is_idle
    assert nodes["n1"].partitions == ("debug", "long")


def test_sinfo_unknown_shape():
    with pytest.raises(SlurmParseError, match="neither a 'nodes' nor a 'sinfo'"):
        parse_json.nodes_from_sinfo({"meta": {}})


def test_scontrol_nodes_match_sinfo():
    text = (DATA / "scontrol-node-22.05.txt").read_text()
    from_text = {n.name: n for n in map(parse_scontrol.node, parse_scontrol.records(text))}
    from_json = {n.name: n for n in parse_json.nodes_from_sinfo(load("sinfo-22.05.json"))}
    assert from_text == from_json


def test_scontrol_partition():
    text = (DATA / "scontrol-partition-22.05.txt").read_text()
    (part,) = map(parse_scontrol.partition, parse_scontrol.records(text))
    assert part.name == "debug" and part.is_default and part.state == "UP"
    assert part.total_nodes == 16 and part.total_cpus == 32 and part.max_time is None


def test_scontrol_records_keep_spaces_in_values():
    (rec,) = parse_scontrol.records("JobId=7 JobName=two words UserId=root(0) Reason=None")
    assert rec == {"JobId": "7", "JobName": "two words", "UserId": "root(0)", "Reason": "None"}


# --- error typing ------------------------------------------------------------------------------

@pytest.mark.parametrize("message, cls", [
    # Messages printed by Slurm 22.05 on the local cluster.
    ("Invalid job id specified for job 99999", InvalidJobId),
    ("slurm_load_jobs error: Invalid job id specified", InvalidJobId),
    ("scancel: error: Kill job error on job id 99999: Invalid job id specified", InvalidJobId),
    ("Job is no longer pending execution for job 1", JobStateError),
    ("Job is in held state, pending scheduler release for job 3", JobStateError),
    ("Invalid node name specified for job 1", InvalidRequest),
    ("sbatch: error: Batch job submission failed: Invalid partition name specified", InvalidRequest),
    ("scontrol: error: Invalid TimeLimit value", InvalidRequest),
    ("sbatch: unrecognized option '--bogus'", InvalidRequest),
    ("slurm_load_jobs error: Unable to contact slurm controller (connect failure)", SlurmUnavailable),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
     SlurmUnavailable),
    ("Access/permission denied for job 5", PermissionDenied),
])
def test_classify_keeps_slurms_message(message, cls):
    err = classify(message, ["scontrol", "update", "JobId=1"], 1)
    assert type(err) is cls
    assert str(err).startswith(message)
    if isinstance(err, SlurmCommandError):
        assert err.message == message and err.returncode == 1 and err.command[0] == "scontrol"


def test_classify_unknown_message():
    assert classify("Unexpected message received for job 1") is None


def test_missing_commands_are_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    backend = CliBackend()
    with pytest.raises(SlurmUnavailable, match="sinfo not found"):
        backend.version()
    with pytest.raises(SlurmUnavailable, match="squeue not found"):
        backend.all_jobs()


# --- backend selection -------------------------------------------------------------------------

def test_select_backend_cli_and_bad_kind():
    assert isinstance(select_backend(kind="cli"), CliBackend)
    with pytest.raises(ValueError, match="expected auto, cli, libslurm or pyslurm"):
        select_backend(kind="slurmrestd")


@pytest.mark.skipif(pyslurm_backend.pyslurm is not None, reason="pyslurm imports here")
def test_select_backend_without_pyslurm(monkeypatch):
    monkeypatch.delenv("MALLEO_SLURM_BACKEND", raising=False)
    assert isinstance(select_backend(), CliBackend)
    with pytest.raises(BackendNotAvailable, match="pyslurm 25.11 builds only against Slurm 25.11"):
        select_backend(kind="pyslurm")
    monkeypatch.setenv("MALLEO_SLURM_BACKEND", "pyslurm")
    with pytest.raises(BackendNotAvailable):
        select_backend()


# --- Slurm 25.11 (built from source) and 26.05 (Debian forky): captured live -------------------

def test_squeue_25_11_and_26_05_captured():
    """data_parser v0.0.44 (25.11.7) and v0.0.45 (26.05.5): the v0.0.41 shape, read unchanged.

    26.05 changed a default: a job without a time limit on a MaxTime=UNLIMITED partition gets
    TimeLimit=365-00:00:00 (scontrol says the same), not UNLIMITED; it is kept as reported.
    """
    for version, micro in (("25.11", 7), ("26.05", 5)):
        doc = load(f"squeue-{version}.json")
        major, minor = (int(x) for x in version.split("."))
        assert parse_json.slurm_version(doc) == (major, minor, micro)
        jobs = {j.job_id: j for j in parse_json.jobs_from_squeue(doc)}
        run2 = jobs[1]
        assert (run2.state, run2.name, run2.user, run2.user_id) == ("RUNNING", "run2", "root", 0)
        assert run2.node_list == ("n1", "n2") and run2.num_nodes == 2 and run2.time_limit == 600
        assert run2.start_time >= run2.submit_time > 1_700_000_000 and run2.end_time
        held = jobs[4]
        assert held.is_held and held.priority == 0 and held.reason == "JobHeldUser"
        assert held.num_nodes == 3 and held.time_limit == 300 and held.max_nodes is None
        big = jobs[5]
        assert big.is_pending and not big.is_held and big.priority == 777 and big.num_nodes == 16
        assert big.time_limit == 7200 and big.start_time is None
        assert jobs[6].required_nodes == ("n7", "n9") and jobs[6].node_list == ("n7", "n9")
        assert jobs[7].name == "two words"
    assert parse_json.jobs_from_squeue(load("squeue-25.11.json"))[-1].time_limit is None
    assert parse_json.jobs_from_squeue(load("squeue-26.05.json"))[-1].time_limit == 365 * 86400


@pytest.mark.parametrize("version", ["25.11", "26.05"])
def test_sinfo_25_11_and_26_05_captured(version):
    nodes = {n.name: n for n in parse_json.nodes_from_sinfo(load(f"sinfo-{version}.json"))}
    assert sorted(nodes, key=lambda s: int(s[1:])) == [f"n{i}" for i in range(1, 17)]
    assert all(n.cpus == 2 for n in nodes.values())
    assert nodes["n1"].state == "ALLOCATED" and nodes["n1"].alloc_cpus == 2
    assert nodes["n16"].flags == ("DRAIN",) and not nodes["n16"].is_available
    assert nodes["n15"].is_idle and nodes["n15"].partitions == ("debug",)


@pytest.mark.parametrize("version", ["25.11", "26.05"])
def test_scontrol_text_reads_on_25_11_and_26_05(version, utc):
    """``scontrol show job -o`` of the same capture gives the JSON's jobs (those in both)."""
    from_json = {j.job_id: j for j in parse_json.jobs_from_squeue(load(f"squeue-{version}.json"))}
    text = (DATA / f"scontrol-job-{version}.txt").read_text()
    from_text = {j.job_id: j for j in map(parse_scontrol.job, parse_scontrol.records(text))}
    assert set(from_json) <= set(from_text)
    for job_id, a in from_json.items():
        b = from_text[job_id]
        for field in ("name", "user", "user_id", "partition", "submit_time", "time_limit",
                      "num_nodes", "priority", "required_nodes", "is_held"):
            assert getattr(a, field) == getattr(b, field), (version, job_id, field)


@pytest.mark.parametrize("version", ["22.05", "24.11", "25.11", "26.05"])
def test_sinfo_output_read_as_text_bytes_or_dict_alike(version):
    """The CLI backend decodes sinfo's output straight into typed records (msgspec)."""
    text = (DATA / f"sinfo-{version}.json").read_text()
    nodes = parse_json.nodes_from_sinfo(text)
    assert len(nodes) == 16 and all(n.cpus == 2 for n in nodes)
    assert nodes == parse_json.nodes_from_sinfo(text.encode())
    assert nodes == parse_json.nodes_from_sinfo(json.loads(text))


def test_sinfo_values_of_a_wrong_type_are_named():
    with pytest.raises(SlurmParseError, match=r"\$\.nodes\[0\]\.partitions"):
        parse_json.nodes_from_sinfo('{"nodes": [{"name": "n1", "partitions": 3}]}')
    with pytest.raises(SlurmParseError, match="sinfo node n2 cpus: expected a number"):
        parse_json.nodes_from_sinfo({"nodes": [{"name": "n2", "cpus": "two"}]})
    with pytest.raises(SlurmParseError, match="sinfo node n3 cpus.maximum"):
        parse_json.nodes_from_sinfo({"sinfo": [{"nodes": {"nodes": ["n3"]},
                                                "cpus": {"maximum": "x"}}]})
    with pytest.raises(SlurmParseError, match="a node without name"):
        parse_json.nodes_from_sinfo({"nodes": [{"cpus": 2}]})
