"""Issue 12, points 1-3: every value beyond the core's limits (malleo.limits: times up to
MAX_TIME seconds, sizes up to MAX_PROCS processors, floats finite) is refused by name at
the boundary it enters (CLI option, policy file, ``simulate``, ``plan``), never wrapped,
saturated or cast silently.  Each case failed on the code before the knob schema.
"""
import numpy as np
import pytest

from malleo._core import plan, simulate
from malleo._core.malleable_loop import simulate_malleable
from malleo.errors import PolicyError
from malleo.limits import MAX_PROCS, MAX_TIME
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Policy

BIG = "99999999999999999999"
NO_RUNNING = {"procs": [], "start": [], "est": [], "request": []}


@pytest.mark.parametrize("args, option", [
    (["--bf-window", BIG], "--bf-window"),
    (["--bf-resolution", BIG], "--bf-resolution"),
    (["--bf-max-job-test", "2147483648"], "--bf-max-job-test"),
    (["--procs", "2147483648"], "--procs"),
    (["--node-procs", "2147483648"], "--node-procs"),
    (["--min-interval", BIG], "--min-interval"),
    (["--flex-seed", "-1"], "--flex-seed"),
    (["--max-factor", "inf"], "--max-factor"),
    (["--max-factor", "1e308"], "--max-factor"),
    (["--max-factor", "nan"], "--max-factor"),
    (["--reconfig-cost", f"{BIG}+0"], "--reconfig-cost FIXED"),
    (["--reconfig-points", f"checkin:{BIG}"], "--reconfig-points checkin:SECONDS"),
    (["--flex-queue", BIG], "--flex-queue"),
    (["--speedup", "downey:inf,1"], "--speedup"),
])
def test_replay_refuses_out_of_range_options_by_name(malleo_cli, args, option):
    result = malleo_cli("replay", "--jobs", "0:10", "-q", *args)
    assert result.exit_code == 2, result.output
    assert option in result.output
    assert "Traceback" not in result.output


def test_compare_refuses_a_huge_slurm_k_by_name(malleo_cli):
    result = malleo_cli("compare", "--jobs", "0:10", "-q", "--policy",
                        "fcfs+slurm(K=99999999999)")
    assert result.exit_code == 2, result.output
    assert "K (bf_max_job_test)" in result.output and "2147483647" in result.output


@pytest.mark.parametrize("text, key", [
    ("bf_window = 99999999999999\n", "bf_window"),
    ("[flexible]\nmax_factor = inf\n", "flexible.max_factor"),
    ("[flexible]\nseed = -1\n", "flexible.seed"),
])
def test_policy_show_refuses_what_replay_could_not_run(malleo_cli, tmp_path, text, key):
    path = tmp_path / "p.toml"
    path.write_text(text)
    result = malleo_cli("policy", "show", path)
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and key in result.output


@pytest.mark.parametrize("changes", [
    dict(bf_window=MAX_TIME + 1), dict(bf_resolution=2**63), dict(bf_max_job_test=2**31),
])
def test_policy_refuses_beyond_the_limits(changes):
    with pytest.raises(PolicyError):
        Policy(**changes)


@pytest.mark.parametrize("changes", [
    dict(max_factor=float("inf")), dict(max_factor=1e308), dict(seed=-1),
])
def test_flexible_jobs_refuse_beyond_the_limits(changes):
    with pytest.raises(PolicyError):
        FlexibleJobs(**changes)


@pytest.mark.parametrize("changes", [
    dict(reconfig_fixed=float("nan")), dict(min_interval=MAX_TIME + 1),
    dict(speedup="amdahl:nan"),
])
def test_malleability_refuses_beyond_the_limits(changes):
    with pytest.raises(PolicyError):
        Malleability(**changes)


def _sim(**cols):
    base = dict(submit=[0, 1], runtime=[100, 100], estimate=[100, 100], procs=[2, 4],
                user=[0, 0], queue=[0, 0], partition=[0, 0])
    base.update(cols)
    return simulate(*(np.asarray(base[k]) for k in ("submit", "runtime", "estimate", "procs",
                                                     "user", "queue", "partition")),
                    4, Policy(backfill="slurm"))


@pytest.mark.parametrize("cols, column", [
    (dict(runtime=[2**63 - 1, 100]), "runtime"),          # issue 12.2: over-allocated before
    (dict(runtime=[2**62 + 5, 100]), "runtime"),
    (dict(estimate=[2**63 - 1, 2**63 - 1]), "estimate"),
    (dict(submit=[0, 2**63 - 1]), "submit"),
    (dict(procs=[2, 2**32 + 2]), "procs"),                 # would wrap to 2 in int32
    (dict(runtime=[1.5, 100]), "runtime"),
])
def test_simulate_refuses_values_beyond_the_limits(cols, column):
    with pytest.raises(ValueError, match=column):
        _sim(**cols)


def test_simulate_refuses_a_machine_beyond_max_procs():
    with pytest.raises(ValueError, match="total_procs"):
        simulate([0], [1], [1], [1], [0], [0], [0], MAX_PROCS + 1, Policy())


def test_simulate_malleable_refuses_nan_speedups():
    with pytest.raises(ValueError, match="speedup_a"):
        simulate_malleable([0], [10], [10], [2], [0], [0], [0], 4,
                           Policy(),
                           [2], [1], [4], [np.nan], [0.0])


def test_plan_refuses_now_beyond_max_time():
    with pytest.raises(ValueError, match="now"):
        plan(2**63 - 1, 4, NO_RUNNING, {"submit": [0], "procs": [1], "request": [10]},
             Policy())
    with pytest.raises(ValueError, match="now"):
        plan(MAX_TIME + 1, 4, NO_RUNNING, {"submit": [0], "procs": [1], "request": [10]},
             Policy())


def test_plan_int64_procs_do_not_wrap():
    pending = {"submit": [0], "procs": np.array([2**32 + 2], dtype=np.int64),
               "request": [10]}
    with pytest.raises(ValueError, match="pending.procs"):
        plan(0, 4, NO_RUNNING, pending, Policy())


@pytest.mark.parametrize("pending, what", [
    ({"submit": [0], "procs": [1], "request": [2**63 - 1]}, "pending.request"),
    ({"submit": ["x"], "procs": [1], "request": [1]}, "pending.submit"),
    ({"submit": [0], "procs": [1.5], "request": [1]}, "pending.procs"),
    ({"submit": [0], "procs": [1], "request": [1], "speedup_a": [np.nan]},
     "pending.speedup_a"),
    ({"submit": [0], "procs": [1], "request": [1], "kind": [7]}, "pending.kind"),
])
def test_plan_raises_value_error_as_documented(pending, what):
    with pytest.raises(ValueError, match=what):
        plan(10, 4, NO_RUNNING, pending, Policy())


@pytest.mark.parametrize("cluster", [0, MAX_PROCS + 1, "many", None])
def test_plan_refuses_a_bad_cluster(cluster):
    with pytest.raises(ValueError, match="cluster"):
        plan(0, cluster, NO_RUNNING, {"submit": [0], "procs": [1], "request": [1]}, Policy())
