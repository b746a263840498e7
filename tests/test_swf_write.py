"""write_swf: header lines, replayed schedules, compression, and read/write round trips."""
import gzip

import numpy as np
import pandas as pd
import pytest

import malleo
from malleo.emulator import read_swf, write_swf
from malleo.emulator.swf_fields import FIELDS
from malleo.emulator.swf_header import TraceMeta
from malleo.errors import TraceError

SOURCE_TEXT = """; Version: 2.2
; Computer: Test Machine
; Installation: Test Site
; UnixStartTime: 1000
; MaxProcs: 32
; Note: first line
;       second line
; Queue: 1 batch
; Custom: kept
1\t0\t5\t100\t4\t12.5\t-1\t4\t200\t-1\t1\t7\t1\t-1\t1\t-1\t-1\t-1
2   3  1   50   2   -1    2048.25   2   60   -1 1 8 1 -1 1 -1 -1 -1
3 3 0 70.0 8 0.3333333333333333 -1 8 -1 -1 0 7 2 -1 1 -1 -1 -1
4 9 -1 -1 2 -1 -1 2 60 -1 5 9 1 -1 1 -1 -1 -1
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "source.swf"
    path.write_text(SOURCE_TEXT)
    return path


@pytest.mark.parametrize("name", ["copy.swf", "copy.swf.gz"])
def test_round_trip_with_tabs_and_decimals(tmp_path, source, name):
    jobs, meta = read_swf(source)
    out = tmp_path / name
    write_swf(out, jobs, meta)
    again, meta2 = read_swf(out)
    pd.testing.assert_frame_equal(again, jobs)
    assert meta.dropped["runtime_missing"] == 1      # job 4: written tables hold kept jobs
    assert sum(meta2.dropped.values()) == 0
    for attr in ("version", "computer", "installation", "unix_start_time", "max_procs",
                 "notes", "queues", "other"):
        assert getattr(meta2, attr) == getattr(meta, attr), attr
    assert meta2.max_jobs == meta2.max_records == len(jobs)
    if name.endswith(".gz"):
        assert out.read_bytes()[:2] == b"\x1f\x8b"
        assert gzip.decompress(out.read_bytes()).startswith(b"; Version: 2.2\n")


def test_round_trip_of_a_random_table(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    table = {name: rng.integers(-1, 100_000, n) for name in FIELDS}
    table["submit_time"] = np.sort(rng.integers(0, 10**7, n))
    table["run_time"] = rng.integers(0, 10**5, n)
    table["allocated_procs"] = rng.integers(1, 64, n)
    table["avg_cpu_time"] = np.round(rng.uniform(0, 1e5, n), rng.integers(0, 6))
    table["used_memory"] = rng.uniform(-1, 1e6, n)
    table["requested_memory"] = rng.integers(-1, 10**6, n).astype(np.float64)
    frame = pd.DataFrame(table)
    out = tmp_path / "random.swf"
    write_swf(out, frame, TraceMeta(max_procs=64))
    jobs, meta = read_swf(out)
    assert meta.dropped == {"runtime_missing": 0, "procs_missing": 0,
                            "larger_than_machine": 0}
    for name in FIELDS:
        assert np.array_equal(jobs[name].to_numpy(), frame[name].to_numpy()), name


def test_replayed_schedule(tmp_path, source):
    jobs, meta = read_swf(source, overrun="cut")
    start = jobs["submit_time"].to_numpy() + np.array([10, 0, 4])
    out = tmp_path / "replayed.swf"
    write_swf(out, jobs, meta, source="source.swf", policy="easy-fcfs", start=start)
    text = out.read_text()
    assert (f"; Note: replayed by malleo {malleo.__version__} from source.swf with policy "
            f"easy-fcfs") in text
    assert "; Note: fields 3 (wait_time = start - submit), 4 (run_time) and 5" in text
    again, meta2 = read_swf(out)
    assert again["wait_time"].tolist() == [10, 0, 4]
    assert again["run_time"].tolist() == jobs["runtime"].tolist()
    assert again["allocated_procs"].tolist() == jobs["procs"].tolist()
    for name in ("job_number", "submit_time", "user_id", "requested_time", "avg_cpu_time"):
        assert again[name].tolist() == jobs[name].tolist(), name
    assert meta2.notes[:1] == ["first line\nsecond line"]


def test_replay_start_checks(tmp_path, source):
    jobs, meta = read_swf(source)
    with pytest.raises(TraceError, match="start has 2 values for 3 jobs"):
        write_swf(tmp_path / "x.swf", jobs, meta, start=[0, 1])
    with pytest.raises(TraceError, match="job 2 starts before its submit time"):
        write_swf(tmp_path / "x.swf", jobs, meta, start=[0, 0, 100])


def test_missing_columns_and_unwritable_path(tmp_path, source):
    jobs, meta = read_swf(source)
    with pytest.raises(TraceError, match=r"lacks columns \['status'\]"):
        write_swf(tmp_path / "x.swf", jobs.drop(columns="status"))
    with pytest.raises(TraceError, match="cannot write"):
        write_swf(tmp_path / "no-such-dir" / "x.swf", jobs)


def test_header_without_meta_and_extra_notes(tmp_path, source):
    jobs, _ = read_swf(source)
    out = tmp_path / "bare.swf"
    write_swf(out, jobs, notes=["hello"])
    lines = out.read_text().splitlines()
    assert lines[0] == "; Version: 2.2"
    assert "; MaxJobs: 3" in lines and "; MaxRecords: 3" in lines
    assert "; Note: hello" in lines
    with pytest.raises(TraceError, match="machine size unknown"):
        read_swf(out)
    assert len(read_swf(out, procs=8)[0]) == 3
