"""Every real trace in ../shared/traces reads cleanly, with the job counts SOURCES.md gives.

The expected counts are parsed from SOURCES.md's table (``| file | jobs | ...``), so a
trace added there is checked too.  Figures quoted from its "content notes" are checked
for the traces they describe.  Skipped when the folder is absent.
"""
import re

import pytest

from malleo.emulator import read_swf
from malleo.emulator.trace_summary import summarize

from helpers import TRACES          # MALLEO_TRACES, or ../shared/traces beside the repo
SOURCES = TRACES / "SOURCES.md"

pytestmark = pytest.mark.skipif(not SOURCES.is_file(),
                                reason=f"real traces not present ({TRACES} has no SOURCES.md)")


def _job_counts() -> dict[str, int]:
    if not SOURCES.is_file():
        return {}
    rows = re.findall(r"^\| (\S+\.swf(?:\.gz)?) \| ([\d,]+) \|", SOURCES.read_text(), re.M)
    return {name: int(count.replace(",", "")) for name, count in rows}


COUNTS = _job_counts()


def test_sources_table_was_found():
    assert len(COUNTS) >= 7, COUNTS
    assert COUNTS["SDSC-SP2-1998-4.2-cln.swf.gz"] == 59_715


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_trace_reads_with_the_documented_job_count(name):
    jobs, meta = read_swf(TRACES / name)
    assert meta.lines["job"] == COUNTS[name]
    assert len(jobs) + sum(meta.dropped.values()) == COUNTS[name]
    assert meta.bad_lines == {} and meta.unsorted == 0
    assert jobs["submit_time"].is_monotonic_increasing
    assert (jobs["procs"] >= 1).all() and (jobs["procs"] <= meta.procs).all()
    assert (jobs["runtime"] <= jobs["estimate"]).all()


# (file, procs used, where from, dropped, overran request) per SOURCES.md's notes.
DOCUMENTED = [
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 128, "MaxProcs",
     {"runtime_missing": 5671, "procs_missing": 0, "larger_than_machine": 0}, 4134),
    ("KTH-SP2-1996-2.1-cln.swf.gz", 100, "MaxProcs",
     {"runtime_missing": 0, "procs_missing": 1, "larger_than_machine": 0}, 475),
    ("RICC-2010-2.swf.gz", 8192, "MaxProcs",
     {"runtime_missing": 0, "procs_missing": 0, "larger_than_machine": 0}, None),
    ("LCG-2005-1.swf.gz", 24515, "MaxProcs",
     {"runtime_missing": 0, "procs_missing": 0, "larger_than_machine": 0}, None),
    ("lublin_256.swf.gz", 256, "MaxNodes",
     {"runtime_missing": 0, "procs_missing": 0, "larger_than_machine": 0}, 0),
]


@pytest.mark.parametrize("name,procs,origin,dropped,overran", DOCUMENTED)
def test_documented_figures(name, procs, origin, dropped, overran):
    if not (TRACES / name).is_file():
        pytest.skip(f"{name} not in {TRACES}")
    jobs, meta = read_swf(TRACES / name)
    assert (meta.procs, meta.procs_source) == (procs, origin)
    assert meta.dropped == dropped
    summary = summarize(jobs, meta)
    if overran is not None:
        assert summary["estimates"]["overran_request"] == overran
    assert 0 < summary["offered_load"] < 2


def test_nasa_has_no_requests_so_estimates_are_runtimes():
    jobs, meta = read_swf(TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz")
    assert (jobs["requested_time"] == -1).all()
    assert (jobs["estimate"] == jobs["runtime"]).all()
    assert meta.queues == ["0  interactive", "1  batch"]


def test_a_real_trace_round_trips_through_write_swf(tmp_path):
    from malleo.emulator import write_swf

    jobs, meta = read_swf(TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz")
    write_swf(tmp_path / "sdsc.swf.gz", jobs, meta)
    again, meta2 = read_swf(tmp_path / "sdsc.swf.gz")
    assert again.equals(jobs)
    assert meta2.queues == meta.queues and meta2.other == meta.other
