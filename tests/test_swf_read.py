"""read_swf on small files written into tmp_path: parsing, compression, cleaning, errors."""
import bz2
import gzip
import lzma
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from malleo.emulator import read_swf
from malleo.emulator.swf import DERIVED
from malleo.emulator.swf_fields import FIELDS, FLOAT_FIELDS
from malleo.errors import TraceError
from malleo.limits import MAX_PROCS, MAX_TIME

HEADER = "; Version: 2.2\n; MaxProcs: 64\n"


def job(number, submit, run=100, procs=4, *, wait=0, req_procs=None, req_time=200,
        user=1, status=1, sep=" ", cpu=-1, **fields):
    """One SWF job line; fields not named are -1."""
    values = dict.fromkeys(FIELDS, -1)
    values.update(job_number=number, submit_time=submit, wait_time=wait, run_time=run,
                  allocated_procs=procs, avg_cpu_time=cpu,
                  requested_procs=procs if req_procs is None else req_procs,
                  requested_time=req_time, status=status, user_id=user, group_id=1,
                  **fields)
    return sep.join(str(values[name]) for name in FIELDS)


def write(tmp_path, lines, name="t.swf", header=HEADER):
    path = tmp_path / name
    path.write_text(header + "".join(line + "\n" for line in lines))
    return path


def test_columns_dtypes_and_values(tmp_path):
    path = write(tmp_path, [job(1, 0, run=10, procs=2), job(2, 5, run=20, procs=8)])
    jobs, meta = read_swf(path)
    assert list(jobs.columns) == list(FIELDS) + list(DERIVED)
    for name in FIELDS:
        expected = np.float64 if name in FLOAT_FIELDS else np.int64
        assert jobs[name].dtype == expected, name
    assert jobs["procs"].dtype == np.int32
    assert jobs["runtime"].dtype == np.int64 and jobs["estimate"].dtype == np.int64
    assert list(jobs.index) == [0, 1]
    assert jobs["job_number"].tolist() == [1, 2]
    assert jobs["procs"].tolist() == [2, 8]
    assert jobs["runtime"].tolist() == [10, 20]
    assert jobs["estimate"].tolist() == [200, 200]
    assert meta.procs == 64 and meta.procs_source == "MaxProcs"
    assert meta.lines == {"total": 4, "comment": 2, "blank": 0, "job": 2, "kept": 2}
    assert meta.source == str(path)


def test_tabs_runs_of_blanks_crlf_and_blank_lines(tmp_path):
    lines = ["\t" + job(1, 0, sep="\t \t") + "   \r", "", "   ", job(2, 3, sep="    ")]
    jobs, meta = read_swf(write(tmp_path, lines))
    assert jobs["submit_time"].tolist() == [0, 3]
    assert meta.lines["blank"] == 2


def test_decimals_in_float_fields_and_integral_decimals_in_int_fields(tmp_path):
    line = job(1, 0, cpu=12.75, used_memory=1.5e3).replace(" 100 ", " 100.0 ", 1)
    jobs, _ = read_swf(write(tmp_path, [line]))
    assert jobs["avg_cpu_time"].tolist() == [12.75]
    assert jobs["used_memory"].tolist() == [1500.0]
    assert jobs["run_time"].tolist() == [100] and jobs["run_time"].dtype == np.int64


def test_long_decimal_is_read_exactly(tmp_path):
    jobs, _ = read_swf(write(tmp_path, [job(1, 0, cpu="0.1234567890123456789")]))
    assert jobs["avg_cpu_time"].tolist() == [float("0.1234567890123456789")]


@pytest.mark.parametrize("suffix,compress", [
    (".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress),
    ("", gzip.compress),   # recognised by content, not by name
])
def test_compressed_files(tmp_path, suffix, compress):
    text = (HEADER + job(1, 0) + "\n" + job(2, 1) + "\n").encode()
    path = tmp_path / f"t.swf{suffix}"
    path.write_bytes(compress(text))
    jobs, meta = read_swf(path)
    assert len(jobs) == 2 and meta.procs == 64


@pytest.mark.parametrize("suffix,compress", [
    (".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_truncated_compressed_file_names_the_file(tmp_path, suffix, compress):
    data = compress((HEADER + "".join(job(i, i) + "\n" for i in range(1, 200))).encode())
    path = tmp_path / f"t.swf{suffix}"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=re.escape(str(path)) + ": truncated"):
        read_swf(path)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_concatenated_streams_are_all_read(tmp_path, compress):
    path = tmp_path / "multi.swf.z"
    path.write_bytes(compress((HEADER + job(1, 0) + "\n").encode())
                     + compress((job(2, 1) + "\n").encode()))
    jobs, _ = read_swf(path)
    assert jobs["job_number"].tolist() == [1, 2]


def test_zero_padded_gzip(tmp_path):
    path = tmp_path / "padded.swf.gz"
    path.write_bytes(gzip.compress((HEADER + job(1, 0) + "\n").encode()) + b"\x00" * 512)
    assert len(read_swf(path)[0]) == 1


def test_a_few_bytes_of_a_compressed_file(tmp_path):
    path = tmp_path / "stub.gz"
    path.write_bytes(b"\x1f")
    with pytest.raises(TraceError, match=r"stub.gz: truncated gzip file: 1 bytes$"):
        read_swf(path)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "t.swf.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 20)
    with pytest.raises(TraceError, match=re.escape(str(path)) + ": cannot decompress gzip"):
        read_swf(path)


def test_missing_file(tmp_path):
    path = tmp_path / "absent.swf"
    with pytest.raises(TraceError, match=f"^{re.escape(str(path))}: no such file$"):
        read_swf(path)


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.swf"
    empty.write_text("")
    with pytest.raises(TraceError, match=f"^{re.escape(str(empty))}: empty file"):
        read_swf(empty)
    header_only = write(tmp_path, [], name="h.swf")
    with pytest.raises(TraceError, match=f"^{re.escape(str(header_only))}: no job lines"):
        read_swf(header_only)


def test_wrong_field_count(tmp_path):
    path = write(tmp_path, [job(1, 0), job(2, 1).rsplit(" ", 1)[0]])
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}:4: expected 18 fields, found 17"
    path = write(tmp_path, [job(1, 0) + " 7"], name="long.swf")
    with pytest.raises(TraceError, match=r":3: expected 18 fields, found 19$"):
        read_swf(path)


def test_non_numeric_field(tmp_path):
    path = write(tmp_path, [job(1, 0), job(2, 1, cpu="1.2x")])
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}:4: field 6 (avg_cpu_time): not a number: '1.2x'"


def test_fractional_value_in_integer_field(tmp_path):
    path = write(tmp_path, [job(1, 0, run="3.5")])
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}:3: field 4 (run_time): not an integer: '3.5'"


def test_negative_submit_time(tmp_path):
    path = write(tmp_path, [job(1, 0), job(2, -5)])
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}:4: field 2 (submit_time): negative submit time: -5"


def test_lenient_skips_and_counts_bad_lines(tmp_path):
    lines = [job(1, 0), job(2, 1).rsplit(" ", 1)[0], job(3, 2, cpu="abc"),
             job(4, 3, run="1.5"), job(5, -1), job(6, 4), job(7, 5, cpu="?")]
    path = write(tmp_path, lines)
    jobs, meta = read_swf(path, lenient=True)
    assert jobs["job_number"].tolist() == [1, 6]
    assert meta.bad_lines == {"field_count": 1, "not_a_number": 2, "not_an_integer": 1,
                              "negative_submit": 1}
    assert meta.lines["job"] == 7 and meta.lines["kept"] == 2
    assert meta.warnings[0] == f"{path}: skipped 5 bad job lines (1 field_count, " \
        "2 not_a_number, 1 not_an_integer, 1 negative_submit)"
    assert f"{path}:5: field 6 (avg_cpu_time): not a number: 'abc'" in meta.warnings


def test_lenient_with_no_valid_line_still_fails(tmp_path):
    path = write(tmp_path, ["1 2 3", "x"])
    with pytest.raises(TraceError, match="no valid job lines"):
        read_swf(path, lenient=True)


def test_header_parsing(tmp_path):
    header = """; Version: 2.2
; Computer: IBM SP2
; Installation: Somewhere
; Information: http://example.org/
;              http://example.org/other
; MaxJobs: 3
; MaxRecords: 2
; UnixStartTime: 843480031
; TimeZone: 3600
; TimeZoneString: Europe/Stockholm
; StartTime: Mon Sep 23 14:00:31 CEST 1996
; EndTime:   Fri Aug 29 10:55:01 CEST 1997
; MaxNodes: 100
; MaxProcs: 200
; MaxRuntime: oops
; Note: first note
;       continues here
;
; Note: second note
; MaxQueues: 2
; Queue:  0  interactive
; Queue:  1  batch
; Partition: 1 main
; SiteSpecific: value one
; SiteSpecific: value two
;   free text with no key
"""
    jobs, meta = read_swf(write(tmp_path, [job(1, 0), job(2, 1)], header=header))
    assert meta.version == "2.2" and meta.computer == "IBM SP2"
    assert meta.installation == "Somewhere"
    assert meta.information == "http://example.org/\nhttp://example.org/other"
    assert (meta.max_jobs, meta.max_records, meta.max_nodes, meta.max_procs) == (3, 2, 100, 200)
    assert meta.unix_start_time == 843480031 and meta.time_zone == 3600
    assert meta.time_zone_string == "Europe/Stockholm"
    assert meta.start_time == "Mon Sep 23 14:00:31 CEST 1996"
    assert meta.end_time == "Fri Aug 29 10:55:01 CEST 1997"
    assert meta.notes == ["first note\ncontinues here", "second note"]
    assert meta.max_queues == 2 and meta.queues == ["0  interactive", "1  batch"]
    assert meta.partitions == ["1 main"]
    assert meta.other == {"SiteSpecific": "value one\nvalue two\nfree text with no key"}
    assert meta.max_runtime is None
    assert any(":15: header MaxRuntime: not an integer" in w for w in meta.warnings)
    assert meta.procs == 200


def test_machine_size_precedence_and_missing(tmp_path):
    lines = [job(1, 0, procs=2)]
    path = write(tmp_path, lines, header="; MaxNodes: 16\n")
    assert read_swf(path)[1].procs == 16
    assert read_swf(path)[1].procs_source == "MaxNodes"
    assert read_swf(path, procs=8)[1].procs == 8
    bare = write(tmp_path, lines, name="bare.swf", header="")
    with pytest.raises(TraceError, match=r"machine size unknown.*--procs"):
        read_swf(bare)
    assert read_swf(bare, procs=4)[1].procs_source == "option"


def test_cleaning_counts_and_derived_fields(tmp_path):
    lines = [
        job(1, 0, run=-1),                          # runtime_missing
        job(2, 1, procs=-1, req_procs=-1),          # procs_missing
        job(3, 2, procs=0, req_procs=0),            # procs_missing
        job(4, 3, procs=65),                        # larger_than_machine (64)
        job(5, 4, procs=-1, req_procs=6),           # requested used when not allocated
        job(6, 5, run=300, req_time=200),           # overrun
        job(7, 6, run=50, req_time=-1),             # no request: estimate = runtime
        job(8, 7, run=-1, procs=-1),                # runtime_missing counted first
        job(9, 8, procs=2, req_procs=16),
    ]
    path = write(tmp_path, lines)
    jobs, meta = read_swf(path)
    assert meta.dropped == {"runtime_missing": 2, "procs_missing": 2, "larger_than_machine": 1}
    assert jobs["job_number"].tolist() == [5, 6, 7, 9]
    assert jobs["procs"].tolist() == [6, 4, 4, 2]
    assert jobs["runtime"].tolist() == [100, 300, 50, 100]
    assert jobs["estimate"].tolist() == [200, 300, 50, 200]
    assert jobs["run_time"].tolist() == [100, 300, 50, 100]

    cut, _ = read_swf(path, overrun="cut")
    assert cut["runtime"].tolist() == [100, 200, 50, 100]
    assert cut["estimate"].tolist() == [200, 200, 50, 200]
    assert cut["run_time"].tolist() == [100, 300, 50, 100]   # the field itself is kept

    requested, meta_r = read_swf(path, procs_from="requested")
    assert requested["procs"].tolist() == [6, 4, 4, 16]
    assert meta_r.options["procs_from"] == "requested"


def test_invariants_of_kept_jobs(tmp_path):
    rng = np.random.default_rng(5)
    lines = [job(i, int(rng.integers(0, 1000)), run=int(rng.integers(-1, 500)),
                 procs=int(rng.integers(-1, 80)), req_procs=int(rng.integers(-1, 80)),
                 req_time=int(rng.integers(-1, 500))) for i in range(1, 400)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for overrun in ("extend", "cut"):
            jobs, meta = read_swf(write(tmp_path, lines), overrun=overrun)
            assert len(jobs) + sum(meta.dropped.values()) == len(lines)
            assert (jobs["procs"] >= 1).all() and (jobs["procs"] <= meta.procs).all()
            assert (jobs["runtime"] >= 0).all()
            assert (jobs["runtime"] <= jobs["estimate"]).all()
            assert jobs["submit_time"].is_monotonic_increasing


def test_out_of_order_submits_are_sorted_stably_with_a_warning(tmp_path):
    lines = [job(1, 10), job(2, 5), job(3, 10), job(4, 5), job(5, 20)]
    path = write(tmp_path, lines)
    with pytest.warns(UserWarning, match="2 job lines have a submit time earlier"):
        jobs, meta = read_swf(path)
    assert jobs["job_number"].tolist() == [2, 4, 1, 3, 5]
    assert list(jobs.index) == list(range(5))
    assert meta.unsorted == 2
    assert any("2 job lines" in w for w in meta.warnings)


def test_one_out_of_order_line_is_named_in_the_singular(tmp_path):
    with pytest.warns(UserWarning, match="1 job line has a submit time earlier"):
        read_swf(write(tmp_path, [job(1, 5), job(2, 0)]))


def test_sorted_file_gives_no_warning(tmp_path):
    path = write(tmp_path, [job(1, 0), job(2, 0), job(3, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jobs, meta = read_swf(path)
    assert meta.unsorted == 0 and jobs["job_number"].tolist() == [1, 2, 3]


def test_bad_options(tmp_path):
    path = write(tmp_path, [job(1, 0)])
    with pytest.raises(TraceError, match="overrun"):
        read_swf(path, overrun="clip")
    with pytest.raises(TraceError, match="procs_from"):
        read_swf(path, procs_from="max")
    with pytest.raises(TraceError, match="procs must be a positive"):
        read_swf(path, procs=0)


def test_agrees_with_pandas_on_a_generated_file(tmp_path):
    rng = np.random.default_rng(11)
    rows = rng.integers(-1, 10_000, size=(500, 18))
    rows[:, 1] = np.sort(rng.integers(0, 10**6, size=500))
    rows[:, 3] = rng.integers(0, 5000, size=500)
    rows[:, 4] = rng.integers(1, 64, size=500)
    lines = [" ".join(map(str, r)) for r in rows]
    path = write(tmp_path, lines)
    jobs, _ = read_swf(path)
    reference = pd.read_csv(path, sep=r"\s+", comment=";", header=None).to_numpy()
    assert np.array_equal(jobs[list(FIELDS)].to_numpy(np.int64), reference)


def test_strict_mode_reports_the_first_bad_line_in_the_file(tmp_path):
    path = write(tmp_path, [job(1, 0), job(2, -3), job(3, 1, cpu="x")])
    with pytest.raises(TraceError, match=r":4: field 2 \(submit_time\)"):
        read_swf(path)
    path = write(tmp_path, [job(1, 0), job(2, 1, cpu="x"), job(3, -3)], name="b.swf")
    with pytest.raises(TraceError, match=r":4: field 6 \(avg_cpu_time\)"):
        read_swf(path)


def test_comment_lines_inside_the_body_and_trailing_comments(tmp_path):
    lines = [job(1, 0), "; Note: a note between jobs", job(2, 1) + " ; trailing remark"]
    jobs, meta = read_swf(write(tmp_path, lines))
    assert jobs["job_number"].tolist() == [1, 2]
    assert meta.notes == ["a note between jobs"]


def test_large_integers_are_exact_and_overflow_is_an_error(tmp_path):
    big = 2**53 + 1            # not representable as a double
    jobs, _ = read_swf(write(tmp_path, [job(1, 0, executable=big)]))
    assert jobs["executable"].tolist() == [big]
    path = write(tmp_path, [job(1, 0, executable="1e19")], name="huge.swf")
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == (f"{path}:3: field 14 (executable): out of range for a "
                              f"64-bit integer: '1e19'")
    jobs, _ = read_swf(write(tmp_path, [job(1, 0, executable="2.5e3")], name="e.swf"))
    assert jobs["executable"].tolist() == [2500]


def test_a_directory_is_not_a_trace(tmp_path):
    with pytest.raises(TraceError, match=f"^{re.escape(str(tmp_path))}: is a directory"):
        read_swf(tmp_path)


def test_every_job_dropped_gives_an_empty_table(tmp_path):
    jobs, meta = read_swf(write(tmp_path, [job(1, 0, procs=100), job(2, 1, run=-1)]))
    assert len(jobs) == 0 and list(jobs.columns) == list(FIELDS) + list(DERIVED)
    assert jobs["procs"].dtype == np.int32
    assert meta.dropped == {"runtime_missing": 1, "procs_missing": 0, "larger_than_machine": 1}


NUMBER_FORMATS = [str, repr, lambda v: f"{v:.3f}", lambda v: f"{v:e}", lambda v: f"{v:+.2f}",
                  lambda v: f"{v:.17g}"]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
                       min_size=3, max_size=3),
       ints=st.lists(st.integers(min_value=-(2**62), max_value=2**62), min_size=15, max_size=15),
       fmt=st.sampled_from(range(len(NUMBER_FORMATS))),
       seps=st.lists(st.sampled_from([" ", "\t", "  ", " \t "]), min_size=17, max_size=17))
def test_scanner_matches_python_number_parsing(tmp_path_factory, values, ints, fmt, seps):
    """Whatever the notation and separators, a field reads as Python's float()/int() of
    its token: the compiled scanner's fast path agrees with correctly rounded parsing."""
    int_values, float_values = iter(ints), iter(values)
    tokens = {name: NUMBER_FORMATS[fmt](next(float_values)) if name in FLOAT_FIELDS
              else str(next(int_values)) for name in FIELDS}
    # Keep the job replayable so its row is returned: submit >= 0, runtime >= 0, 1 proc,
    # and the fields the core consumes within malleo.limits.
    tokens.update(submit_time=str(abs(int(tokens["submit_time"])) % (MAX_TIME + 1)),
                  run_time=str(abs(int(tokens["run_time"])) % (MAX_TIME + 1)),
                  requested_time=str(int(tokens["requested_time"]) % (MAX_TIME + 1)),
                  requested_procs=str(int(tokens["requested_procs"]) % (MAX_PROCS + 1)),
                  allocated_procs="1")
    line = tokens["job_number"] + "".join(
        sep + tokens[name] for sep, name in zip(seps, FIELDS[1:]))
    path = tmp_path_factory.mktemp("scan") / "t.swf"
    path.write_text(line + "\n")
    jobs, _ = read_swf(path, procs=1)
    assert len(jobs) == 1
    for name in FIELDS:
        expected = float(tokens[name]) if name in FLOAT_FIELDS else int(tokens[name])
        assert jobs[name].iloc[0] == expected, (name, tokens[name])


@pytest.mark.parametrize("token,value", [
    ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)),
    ("1000000000000000001", 10**18 + 1), ("+42", 42), ("00000000000000000000007", 7)])
def test_integer_edges(tmp_path, token, value):
    jobs, _ = read_swf(write(tmp_path, [job(1, 0, think_time=token)]))
    assert jobs["think_time"].tolist() == [value]


@pytest.mark.parametrize("token", ["9223372036854775808", "-9223372036854775809",
                                   "99999999999999999999"])
def test_integer_overflow(tmp_path, token):
    with pytest.raises(TraceError, match=r"field 18 \(think_time\): out of range"):
        read_swf(write(tmp_path, [job(1, 0, think_time=token)]))


@pytest.mark.parametrize("token", ["1-2", "--1", ".", "1e", "1e+", "0x10", "nan", "inf", "1,5"])
def test_malformed_numbers(tmp_path, token):
    with pytest.raises(TraceError, match=r"field 6 \(avg_cpu_time\): not a number"):
        read_swf(write(tmp_path, [job(1, 0, cpu=token)]))


def test_columns_of_chosen_fields_without_pandas(tmp_path):
    """``as_columns`` gives the DataFrame's arrays; ``fields`` stores only the fields asked
    for (plus those the checks and derivation read), yet still checks every field."""
    lines = [job(1, 0, run=10, procs=2, think_time=7), job(2, 5, run=20, procs=8, queue=3),
             job(3, 9, run=5, procs=100)]                  # larger than the machine: dropped
    path = write(tmp_path, lines)
    frame, meta = read_swf(path)
    columns, meta2 = read_swf(path, as_columns=True)
    assert list(columns) == list(frame.columns)
    assert all(np.array_equal(columns[c], frame[c].to_numpy()) for c in frame.columns)
    assert all(columns[c].dtype == frame[c].dtype for c in frame.columns)
    assert meta2.dropped == meta.dropped and meta2.lines == meta.lines
    lean, meta3 = read_swf(path, as_columns=True, fields=["job_number", "queue"])
    assert list(lean) == ["job_number", "submit_time", "run_time", "allocated_procs",
                          "requested_procs", "requested_time", "queue", *DERIVED]
    assert all(np.array_equal(lean[c], columns[c]) for c in lean)
    assert meta3.dropped == meta.dropped
    bad = write(tmp_path, lines + [job(4, 12).replace(" -1", " x", 1)], name="bad.swf")
    with pytest.raises(TraceError, match=r"bad.swf:6: field 6 \(avg_cpu_time\): not a number"):
        read_swf(bad, as_columns=True, fields=["job_number"])
    with pytest.raises(TraceError, match="unknown SWF field.*nodes"):
        read_swf(path, fields=["nodes"])
