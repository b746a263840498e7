"""malleo trace from-sacct: sacct --parsable2 / --json -> SWF, on captured and hand-written input."""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.emulator.sacct import (RECOMMENDED_FORMAT, parse_duration, parse_json,
                                   parse_parsable2, read_sacct, to_swf)
from malleo.emulator.swf import read_swf
from malleo.errors import TraceError

DATA = Path(__file__).parent / "data" / "sacct"
HEADER = RECOMMENDED_FORMAT.replace(",", "|")


def convert(text, **options):
    jobs, _ = parse_parsable2(text, source="in.txt", **{k: v for k, v in options.items()
                                                        if k == "tz"})
    return to_swf(jobs, node_cpus=options.get("node_cpus"))


def line(job_id="10", raw="10", user="alice", group="lab", partition="batch", qos="normal",
         submit="2024-03-01T10:00:00", start="2024-03-01T10:00:30",
         end="2024-03-01T11:00:30", elapsed="01:00:00", limit="02:00:00", state="COMPLETED",
         alloc_cpus="8", req_cpus="8", alloc_nodes="2", req_nodes="2"):
    return "|".join([job_id, raw, user, group, partition, qos, submit, start, end, elapsed,
                     limit, state, alloc_cpus, req_cpus, alloc_nodes, req_nodes])


def test_parse_duration_forms():
    assert parse_duration("5") == 300                  # bare number: minutes (sacct -c)
    assert parse_duration("01:30") == 90               # MM:SS
    assert parse_duration("02:00:01") == 7201
    assert parse_duration("1-00:00:00") == 86400
    assert parse_duration("2-3") == (2 * 24 + 3) * 3600
    assert parse_duration("1-01:02") == 86400 + 3600 + 120
    assert parse_duration("00:00:01.500") == 1
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_one_job_maps_every_field():
    table, origin, report = convert(HEADER + "\n" + line())
    row = table.iloc[0]
    assert origin == 1709287200                         # 2024-03-01T10:00:00 UTC
    assert (row.job_number, row.submit_time, row.wait_time, row.run_time) == (1, 0, 30, 3600)
    assert (row.allocated_procs, row.requested_procs, row.requested_time) == (8, 8, 7200)
    assert (row.status, row.user_id, row.group_id, row.queue, row.partition) == (1, 1, 1, 1, 1)
    assert (row.avg_cpu_time, row.used_memory, row.executable, row.preceding_job) == \
        (-1, -1, -1, -1)
    assert report.users == {"alice": 1} and report.qos == {"normal": 1}


def test_time_zone_of_text_timestamps():
    _, utc, _ = convert(HEADER + "\n" + line())
    _, paris, _ = convert(HEADER + "\n" + line(), tz="Europe/Paris")
    assert utc - paris == 3600                          # CET is UTC+1 in March
    with pytest.raises(TraceError, match="unknown time zone"):
        convert(HEADER + "\n" + line(), tz="Mars/Olympus")


@pytest.mark.parametrize("state, status", [
    ("COMPLETED", 1), ("FAILED", 0), ("TIMEOUT", 0), ("NODE_FAIL", 0), ("OUT_OF_MEMORY", 0),
    ("PREEMPTED", 0), ("BOOT_FAIL", 0), ("DEADLINE", 0), ("CANCELLED", 5),
    ("CANCELLED by 1234", 5), ("CANCELLED+", 5)])
def test_state_to_status(state, status):
    table, _, report = convert(HEADER + "\n" + line(state=state))
    assert table.status.tolist() == [status] and not report.unknown_states


def test_unknown_state_is_kept_with_status_minus_one_and_counted():
    table, _, report = convert(HEADER + "\n" + line(state="EXPLODED"))
    assert table.status.tolist() == [-1]
    assert report.unknown_states == {"EXPLODED": 1}
    assert "unknown state 'EXPLODED'" in " ".join(report.lines())


def test_unfinished_jobs_are_skipped_and_counted():
    text = "\n".join([HEADER, line(job_id="1", raw="1"),
                      line(job_id="2", raw="2", state="RUNNING", end="Unknown"),
                      line(job_id="3", raw="3", state="PENDING", start="Unknown", end="Unknown")])
    table, _, report = convert(text)
    assert len(table) == 1 and report.unfinished == {"RUNNING": 1, "PENDING": 1}


@pytest.mark.parametrize("limit", ["UNLIMITED", "Partition_Limit", "INVALID", ""])
def test_unlimited_or_missing_time_limit_is_minus_one(limit):
    table, _, _ = convert(HEADER + "\n" + line(limit=limit))
    assert table.requested_time.tolist() == [-1]


def test_never_started_jobs_are_kept_with_minus_one_and_dropped_by_the_reader(tmp_path):
    text = "\n".join([HEADER, line(job_id="1", raw="1"),
                      line(job_id="2", raw="2", start="None", elapsed="00:00:00",
                           state="CANCELLED by 0", alloc_cpus="0", alloc_nodes="0"),
                      # sacct -c (jobcomp) shows start = end and 0 allocated CPUs instead
                      line(job_id="3", raw="3", start="2024-03-01T10:05:00",
                           end="2024-03-01T10:05:00", elapsed="00:00:00", state="CANCELLED",
                           alloc_cpus="0", alloc_nodes="4294967294")])
    table, _, report = convert(text)
    assert report.never_started == 2
    assert table.wait_time.tolist() == [30, -1, -1]
    assert table.run_time.tolist() == [3600, -1, -1]
    assert table.status.tolist() == [1, 5, 5]
    out = tmp_path / "o.swf"
    source = tmp_path / "in.txt"
    source.write_text(text)
    assert MalleoRunner().invoke(cli, ["trace", "from-sacct", str(source), "-o", str(out)],
                              catch_exceptions=False).exit_code == 0
    jobs, meta = read_swf(out, procs=64)
    assert len(jobs) == 1 and meta.dropped["runtime_missing"] == 2


def test_steps_fold_into_their_job_and_arrays_stay_separate():
    text = "\n".join([HEADER,
                      line(job_id="20", raw="20"),
                      line(job_id="20.batch", raw="20.batch", user="", group="", partition="",
                           qos="", limit=""),
                      line(job_id="20.0", raw="20.0", user="", limit=""),
                      line(job_id="21_1", raw="22"), line(job_id="21_2", raw="23"),
                      line(job_id="99.extern", raw="99.extern")])
    table, _, report = convert(text)
    assert len(table) == 3
    assert report.steps_folded == 2 and report.orphan_steps == 1
    assert report.job_ids == ["20", "21_1", "21_2"]


def test_missing_optional_fields_and_no_val_counts():
    text = "JobID|Submit|Start|End|State|AllocCPUS|ReqNodes\n" \
           "5|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:03:00|COMPLETED|4|4294967294"
    table, _, report = convert(text)
    row = table.iloc[0]
    assert (row.wait_time, row.run_time, row.allocated_procs) == (60, 120, 4)
    assert (row.requested_procs, row.requested_time, row.user_id, row.queue) == (-1, -1, -1, -1)
    assert report.users == {}


def test_users_groups_partitions_qos_get_stable_sorted_numbers():
    text = "\n".join([HEADER, line(job_id="1", raw="1", user="zoe", qos="high"),
                      line(job_id="2", raw="2", user="bob(1001)", partition="gpu"),
                      line(job_id="3", raw="3", user="zoe", submit="2024-03-01T09:00:00",
                           start="2024-03-01T09:00:00")])
    table, _, report = convert(text)
    assert report.users == {"bob": 1, "zoe": 2}
    assert report.partitions == {"batch": 1, "gpu": 2} and report.qos == {"high": 1, "normal": 2}
    # Rows are in submit order: job 3 (09:00) first.
    assert report.job_ids == ["3", "1", "2"]
    assert table.user_id.tolist() == [2, 2, 1] and table.queue.tolist() == [2, 1, 2]


def test_node_cpus_gives_a_node_exclusive_view():
    table, _, _ = convert(HEADER + "\n" + line(alloc_cpus="3", alloc_nodes="2", req_nodes="2"),
                          node_cpus=16)
    assert (table.allocated_procs[0], table.requested_procs[0]) == (32, 32)


@pytest.mark.parametrize("text, message", [
    ("JobID|Start|End|State\n1|x|y|z", "in.txt:1: sacct header lacks Submit"),
    ("JobID|Submit|Start|End|State\n1|2024-01-01T00:00:00|x|y|COMPLETED",
     "no processor field"),
    (HEADER + "\n" + line() + "|extra", "in.txt:2: 17 fields, the header has 16"),
    (HEADER + "\n" + line(start="yesterday"), "in.txt:2: Start: not a timestamp"),
    (HEADER + "\n" + line(alloc_cpus="8K"), "in.txt:2: AllocCPUS: not an integer"),
    (HEADER + "\n" + line(elapsed="long"), "in.txt:2: Elapsed: not a Slurm duration"),
    ("", "empty sacct output")])
def test_errors_name_file_and_line(text, message):
    with pytest.raises(TraceError, match=message):
        convert(text)


# ----------------------------------------------------------------------------- captures

def test_captured_jobcomp_output_of_the_local_slurm():
    """``sacct -c`` (jobcomp/filetxt, no slurmdbd) on the local Slurm: no steps, arrays
    without their _N suffix, users as name(uid), ReqCPUS empty, AllocNodes NO_VAL."""
    jobs, steps = read_sacct(DATA / "jobcomp-22.05-parsable2.txt")
    table, _, report = to_swf(jobs)
    assert steps == 0 and report.jobs == 9 and report.never_started == 1
    assert report.users == {"root": 1}
    by_id = dict(zip(report.job_ids, table.to_dict("records")))
    assert by_id["3"]["run_time"] == 60 and by_id["3"]["status"] == 0       # TIMEOUT
    assert by_id["3"]["requested_time"] == 60
    assert by_id["2"]["status"] == 0 and by_id["4"]["status"] == 5
    assert by_id["7"]["allocated_procs"] == 4                                # 2 nodes x 2
    assert by_id["5"]["run_time"] == -1 and by_id["5"]["wait_time"] == -1  # cancelled held


def test_captured_slurmdbd_parsable_and_json_agree():
    text_jobs, text_steps = read_sacct(DATA / "slurmdbd-22.05-parsable2.txt")
    json_jobs, json_steps = read_sacct(DATA / "slurmdbd-22.05.json")
    text_table, text_origin, text_report = to_swf(text_jobs)
    json_table, json_origin, json_report = to_swf(json_jobs)
    assert text_steps == json_steps == 10
    assert text_report.steps_folded == json_report.steps_folded == 10
    assert text_origin == json_origin
    assert text_report.job_ids == json_report.job_ids == \
        ["1", "2", "3", "4", "5", "6_3", "7", "6_1", "6_2"]
    assert text_table.equals(json_table)
    by_id = dict(zip(text_report.job_ids, text_table.to_dict("records")))
    assert by_id["7"]["requested_time"] == 300 and by_id["7"]["allocated_procs"] == 4
    assert by_id["1"]["requested_time"] == -1                                 # UNLIMITED
    assert by_id["6_1"]["wait_time"] == 2                                     # array task
    assert by_id["5"]["status"] == 5 and by_id["5"]["run_time"] == -1


def test_cli_writes_mappings_into_the_header(tmp_path):
    out = tmp_path / "site.swf.gz"
    ids = tmp_path / "ids.csv"
    result = MalleoRunner().invoke(cli, ["trace", "from-sacct", str(DATA / "slurmdbd-22.05.json"),
                                      "-o", str(out), "--procs", "8", "--map", str(ids),
                                      "--computer", "malleo-local"])
    assert result.exit_code == 0
    assert "wrote 9 jobs" in result.stdout and "10 job steps folded" in result.stderr
    jobs, meta = read_swf(out)
    assert meta.procs == 8 and meta.computer == "malleo-local"
    assert "users: root=1" in meta.notes and meta.queues == ["1 QOS normal"]
    assert meta.partitions == ["1 debug"]
    assert len(jobs) == 8 and meta.dropped["runtime_missing"] == 1
    assert ids.read_text().splitlines()[:3] == ["swf_job,slurm_job_id", "1,1", "2,2"]
    replayed = MalleoRunner().invoke(cli, ["replay", str(out), "--json", "-q"],
                                  catch_exceptions=False)
    assert replayed.exit_code == 0


def test_cli_bad_input_exits_2(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("JobID|State\n1|COMPLETED\n")
    result = MalleoRunner().invoke(cli, ["trace", "from-sacct", str(bad), "-o",
                                      str(tmp_path / "o.swf")])
    assert result.exit_code == 2 and f"malleo: error: {bad}:1: sacct header lacks" in result.output
    result = MalleoRunner().invoke(cli, ["trace", "from-sacct", str(bad), "--format", "json",
                                      "-o", str(tmp_path / "o.swf")])
    assert result.exit_code == 2 and "invalid JSON" in result.output


def test_json_of_slurm_24_schema_numbers():
    """Slurm 23+ wraps numbers as {set, infinite, number} and lists states."""
    text = """{"jobs": [{"job_id": 41, "array": {"job_id": 0, "task_id": {"set": false,
      "infinite": false, "number": 0}}, "user": "ann", "group": "g", "partition": "p",
      "qos": "normal", "state": {"current": ["COMPLETED"], "reason": "None"},
      "time": {"submission": 1000, "start": 1010, "end": 1110, "elapsed": 100,
               "limit": {"set": true, "infinite": false, "number": 10}},
      "tres": {"allocated": [{"type": "cpu", "count": 4}, {"type": "node", "count": 1}],
               "requested": [{"type": "cpu", "count": 4}, {"type": "node", "count": 1}]},
      "allocation_nodes": 1, "steps": []},
     {"job_id": 42, "array": {"job_id": 0, "task_id": {"set": false, "infinite": false,
      "number": 0}}, "user": "ann", "group": "g", "partition": "p", "qos": "normal",
      "state": {"current": ["TIMEOUT"]},
      "time": {"submission": 1000, "start": 1020, "end": 1220, "elapsed": 200,
               "limit": {"set": true, "infinite": true, "number": 0}},
      "tres": {"allocated": [{"type": "cpu", "count": 2}], "requested": []},
      "allocation_nodes": 1, "steps": []}]}"""
    jobs, _ = parse_json(text)
    table, origin, report = to_swf(jobs)
    assert origin == 1000 and report.job_ids == ["41", "42"]
    assert table.requested_time.tolist() == [600, -1]
    assert table.status.tolist() == [1, 0] and table.run_time.tolist() == [100, 200]
    assert table.allocated_procs.tolist() == [4, 2] and table.wait_time.tolist() == [10, 20]


# ----------------------------------------------------------------------------- live

@pytest.mark.slurm
def test_live_capture_from_the_local_slurm(slurm_cluster, slurm_jobs, tmp_path):
    """Run two jobs on the session's local Slurm, read them back with sacct (slurmdbd if
    configured, else ``sacct -c`` from jobcomp/filetxt) and convert them."""
    env = dict(os.environ, SLURM_CONF=slurm_cluster.conf)
    if shutil.which("sacct") is None:
        pytest.skip("sacct is not installed")
    submitted = []
    for args in (["-n", "1", "--wrap", "sleep 1"], ["-n", "2", "--wrap", "exit 3"]):
        out = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", *args], env=env,
                             capture_output=True, text=True, check=True, cwd=tmp_path)
        submitted.append(out.stdout.strip().split(";")[0])
    slurm_jobs.extend(int(j) for j in submitted)
    config = subprocess.run(["scontrol", "show", "config"], env=env, capture_output=True,
                            text=True).stdout
    use_dbd = "accounting_storage/slurmdbd" in config
    command = ["sacct", "--parsable2", f"--format={RECOMMENDED_FORMAT}", "-S", "now-1hours",
               "-E", "now", "-j", ",".join(submitted)]
    if not use_dbd:
        command.insert(1, "-c")
    deadline = time.monotonic() + 90
    text = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        text = proc.stdout
        done = [l for l in text.splitlines()[1:] if "." not in l.split("|")[0]
                and l.split("|")[11].split()[0] in ("COMPLETED", "FAILED")]
        if len(done) >= 2:
            break
        time.sleep(2)
    if len(text.splitlines()) < 3:
        pytest.skip(f"sacct returned no records for the jobs ({' '.join(command)}): "
                    "jobcomp/accounting not recording here")
    source = tmp_path / "live.txt"
    source.write_text(text)
    jobs, _ = read_sacct(source)
    table, _, report = to_swf(jobs)
    wanted = {j: s for j, s in zip(submitted, (1, 0))}
    got = dict(zip(report.job_ids, table.status.tolist()))
    assert {j: got[j] for j in wanted} == wanted
    runtimes = dict(zip(report.job_ids, table.run_time.tolist()))
    assert all(0 <= runtimes[j] <= 60 for j in submitted)
