"""One parser family for Slurm's values (malleo/slurm_values.py), used by the backends and
by the sacct converter, and the MAX_TIME/MAX_PROCS rule for live values."""
import msgspec
import pytest

from malleo import slurm_values as values
from malleo.emulator import sacct
from malleo.limits import MAX_PROCS, MAX_TIME
from malleo.plugin.agent.state import Snapshot, plan_inputs
from malleo.plugin.backends import parse_json, parse_scontrol
from malleo.plugin.backends.errors import SlurmParseError
from malleo.plugin.backends.model import Job, Node


@pytest.mark.parametrize("text, seconds", [
    ("5", 300), ("01:30", 90), ("02:00:01", 7201), ("1-00:00:00", 86400), ("2-3", 183600),
    ("1-01:02", 86400 + 3600 + 120), ("00:00:01.500", 1), ("UNLIMITED", None),
    ("Partition_Limit", None), ("infinite", None), ("", None), ("N/A", None)])
def test_every_reader_parses_durations_alike(text, seconds):
    assert values.duration(text) == seconds
    assert parse_scontrol.duration(text) == seconds
    if text:
        assert sacct.parse_duration(text) == seconds


def test_bad_durations_name_the_text():
    with pytest.raises(ValueError, match="'soon'"):
        values.duration("soon")
    with pytest.raises(SlurmParseError, match="'soon'"):
        parse_scontrol.duration("soon")


@pytest.mark.parametrize("raw, expected", [
    (7, 7), ("12", 12), (None, None), ({"set": True, "infinite": False, "number": 5}, 5),
    ({"set": False, "infinite": False, "number": 0}, None),
    ({"set": True, "infinite": True, "number": 0}, None),
    (values.NO_VAL, None), (values.INFINITE, None), (values.NO_VAL64, None)])
def test_json_numbers_agree_between_squeue_and_sacct(raw, expected):
    assert values.number(raw) == expected
    assert parse_json.number(raw) == expected
    assert sacct._number(raw) == expected     # "infinite" is no longer -1 here


def test_sacct_limits_keep_minus_one_for_unlimited():
    assert sacct._limit({"set": True, "infinite": True, "number": 0}) == -1
    assert sacct._limit(None) == -1
    assert sacct._limit({"set": True, "infinite": False, "number": 10}) == 600
    assert values.is_infinite({"infinite": True}) and values.is_infinite("UNLIMITED")
    assert not values.is_infinite(5) and not values.is_infinite({"set": False})


NOW = 1_800_000_000


def live_job(job_id, state="PENDING", **kw):
    base = dict(job_id=job_id, name="j", user="u", user_id=1, partition="p", state=state,
                reason="", submit_time=NOW - 10, start_time=NOW - 5 if state == "RUNNING" else None,
                expected_start=None, end_time=None, time_limit=600, num_nodes=1, max_nodes=None,
                num_cpus=1, priority=1, node_list=("a",) if state == "RUNNING" else ())
    base.update(kw)
    return Job(**base)


def snapshot(*jobs, cpus=1):
    nodes = (Node("a", "IDLE", cpus=cpus, partitions=("p",)),
             Node("b", "IDLE", cpus=cpus, partitions=("p",)))
    return Snapshot(NOW, nodes, tuple(jobs), {"p": None}, "p")


def test_live_values_beyond_the_limits_are_clamped_or_refused_never_wrapped():
    long_limit = live_job(1, time_limit=2 ** 40)                  # Slurm allows ~8,000 years
    far_submit = live_job(2, submit_time=MAX_TIME + 1)
    huge = live_job(3, num_nodes=2 ** 31 + 5, num_cpus=2 ** 31 + 5)
    run = live_job(4, "RUNNING", start_time=MAX_TIME + 7, time_limit=2 ** 50)
    inputs = plan_inputs(snapshot(long_limit, far_submit, huge, run))
    assert inputs.pending_ids.tolist() == [1]
    assert inputs.pending["request"].tolist() == [MAX_TIME]          # clamped
    assert "submit time" in inputs.skipped[2] and "MAX_TIME" in inputs.skipped[2]
    assert inputs.skipped[3] == "needs 2147483653 nodes, 2 usable"   # not wrapped to int32
    assert inputs.running_ids.tolist() == [4]                         # holds its node
    assert inputs.running["start"].tolist() == [inputs.now]
    assert inputs.running["est"].tolist() == [MAX_TIME]
    with pytest.raises(ValueError, match=r"partition p: usable cpus 33554432 is outside 0..16777216"):
        plan_inputs(snapshot(cpus=MAX_PROCS), unit="cpus")


def test_job_comment_is_read_by_both_parsers():
    rec = parse_scontrol.records("JobId=5 JobName=x UserId=u(1) Partition=p JobState=RUNNING "
                                 "Comment=malleo:min=1,max=4,period=10 NumNodes=2 NumCPUs=2 "
                                 "Priority=1 SubmitTime=2026-01-01T00:00:00 TimeLimit=10:00\n")
    assert parse_scontrol.job(rec[0]).comment == "malleo:min=1,max=4,period=10"
    doc = {"jobs": [{"job_id": 5, "job_state": "RUNNING", "comment": "malleo:min=1,max=2,period=5"}]}
    assert parse_json.jobs_from_squeue(doc)[0].comment == "malleo:min=1,max=2,period=5"
    assert msgspec.structs.replace(live_job(1)).comment == ""
