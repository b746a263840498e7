"""The replay's memory savings keep every output (issue 16): int32 ids read where they fit
and widened back in the result, per-job metrics derived on read, the summary's groups
without np.unique's inverse, the fixed mmap threshold.  Figures: bench/replay_memory.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

from malleo.emulator.driver import NARROWED_FIELDS, load_workload, replay
from malleo.emulator import metrics
from malleo.emulator.malloc_tuning import map_large_blocks
from malleo.emulator.results import JOB_COLUMNS, JobColumns
from malleo.emulator.swf import read_swf
from malleo.errors import TraceError
from malleo.policy import Policy
from tests.test_swf_read import job, write


def _trace(tmp_path, big_user=1):
    lines = [job(i, 10 * i, run=50 + 7 * (i % 5), procs=1 + i % 8, user=1 + i % 3,
                 queue=i % 2, partition=1, executable=(i % 4) - 1, req_time=120)
             for i in range(1, 41)]
    lines.append(job(41, 500, user=big_user, executable=3))
    return write(tmp_path, lines)


def test_read_swf_narrows_ids_that_fit_and_keeps_the_others_int64(tmp_path):
    path = _trace(tmp_path, big_user=2**31)        # one user id beyond int32
    wide, _ = read_swf(path, as_columns=True)
    narrow, _ = read_swf(path, as_columns=True, narrow=NARROWED_FIELDS)
    for name in NARROWED_FIELDS:
        expect = np.int64 if name == "user_id" else np.int32
        assert narrow[name].dtype == expect, name
        assert np.array_equal(narrow[name], wide[name]), name
    for name in ("submit_time", "run_time", "runtime", "estimate", "procs"):
        assert narrow[name].dtype == wide[name].dtype
    assert wide["job_number"].dtype == np.int64     # no narrowing unless asked


def test_read_swf_refuses_to_narrow_what_it_reads_itself(tmp_path):
    path = _trace(tmp_path)
    with pytest.raises(TraceError, match="narrow: run_time"):
        read_swf(path, narrow=("run_time",))
    with pytest.raises(TraceError, match="narrow: nonsense"):
        read_swf(path, narrow=("nonsense",))


@pytest.mark.parametrize("policy", [Policy(), Policy(order="sjf", backfill="conservative")])
def test_a_narrowed_workload_replays_to_the_same_tables_and_dtypes(tmp_path, policy):
    path = _trace(tmp_path)
    narrowed = load_workload(str(path), swf_fields=False)
    assert {narrowed.columns[n].dtype for n in NARROWED_FIELDS} == {np.dtype(np.int32)}
    full = replay(load_workload(str(path)), policy, breakdowns=True)
    lean = replay(narrowed, policy, breakdowns=True)
    assert lean.column("procs", as_stored=True).dtype == np.int32   # before .jobs is built
    assert lean.column("procs").dtype == np.int64
    assert lean.to_dict() == full.to_dict()         # NaN as None: comparable
    assert list(lean.jobs.columns) == list(JOB_COLUMNS)
    assert list(lean.jobs.dtypes) == list(full.jobs.dtypes)
    assert lean.jobs.equals(full.jobs)
    assert lean.users.equals(full.users)
    assert lean.swf_table["executable"].dtype == np.int64
    for name in JOB_COLUMNS:
        assert np.array_equal(lean.column(name), full.column(name)), name
        assert lean.column(name).dtype == full.column(name).dtype, name


def test_per_job_metrics_derived_on_read_equal_the_kept_ones():
    rng = np.random.default_rng(7)
    n = 3 * (1 << 16) + 123                         # several blocks of job_metric
    submit = np.sort(rng.integers(0, 10**7, n))
    start = submit + rng.integers(0, 10**6, n)
    runtime = rng.integers(0, 10**5, n)
    kept = metrics.job_metrics(submit, start, runtime, 10)
    columns = JobColumns({"submit": submit, "start": start, "runtime": runtime},
                         JOB_COLUMNS, 10)
    for name in metrics.PER_JOB:
        assert name not in columns                  # not stored
        assert columns[name].dtype == kept[name].dtype
        assert np.array_equal(columns[name], kept[name]), name
    assert np.array_equal(metrics.job_metric("bsld", submit, start, runtime, 2.5),
                          np.maximum((start - submit + runtime) / np.maximum(runtime, 2.5),
                                     1.0))
    with pytest.raises(KeyError):
        columns["end"]


def test_user_groups_match_numpys_unique_inverse():
    user = np.array([5, -1, 5, 7, 2**40, -1, 5], dtype=np.int64)
    ids, group, jobs = metrics.user_groups(user)
    expect_ids, inverse, counts = np.unique(user, return_inverse=True, return_counts=True)
    assert np.array_equal(ids, expect_ids)
    assert np.array_equal(group, inverse.ravel())
    assert np.array_equal(jobs, counts) and jobs.dtype == np.int64


def test_the_mmap_threshold_is_set_on_glibc_unless_the_environment_chose_one():
    probe = ("from malleo.emulator.malloc_tuning import map_large_blocks; "
             "print(map_large_blocks())")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    chosen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**env, "MALLOC_MMAP_THRESHOLD_": "131072"}, check=True)
    assert chosen.stdout.strip() == "False"
    if sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION"):
        mine = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env=env, check=True)
        assert mine.stdout.strip() == "True"
    assert isinstance(map_large_blocks(), bool)
