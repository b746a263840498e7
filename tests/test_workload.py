"""The Lublin-Feitelson workload model with Tsafrir estimates (malleo.emulator.workload).

Statistical tests draw 20,000 jobs and compare what comes out with values computed here
from the documented parameters (the paper's batch column, docs/workload-model.md), not
with the generator's own intermediate results.  Tolerances are about four standard
deviations of the statistic (measured over seeds), so a seeded run is stable and a wrong
model fails.
"""
import math

import numpy as np
import pandas as pd
import pytest

from malleo.emulator.swf_fields import FIELDS, FLOAT_FIELDS
from malleo.emulator.workload import (INTERACTIVE_PARAMS, POPULARITY_RANK, LublinParams,
                                      daily_cycle_weights, generate_lublin)
from malleo.errors import MalleoError

N = 20_000
PROCS = 256
DEFAULTS = LublinParams()
HOUR = 3600


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return generate_lublin(N, PROCS, seed=7)


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Regularized lower incomplete gamma P(shape, x / scale), by its power series."""
    z = x / scale
    if z <= 0.0:
        return 0.0
    log_front = -z + shape * math.log(z) - math.lgamma(shape + 1.0)
    term, total, n = 1.0, 1.0, 0
    while term > 1e-17 * total:
        n += 1
        term *= z / (shape + n)
        total += term
    return min(1.0, math.exp(log_front + math.log(total)))


def two_stage_cdf(u: float, low: float, med: float, hi: float, prob: float) -> float:
    first = min(max((u - low) / (med - low), 0.0), 1.0)
    second = min(max((u - med) / (hi - med), 0.0), 1.0)
    return prob * first + (1.0 - prob) * second


def is_pow2(size: np.ndarray) -> np.ndarray:
    return (size & (size - 1)) == 0


# --- the table's shape -------------------------------------------------------------------

def test_columns_dtypes_and_fixed_fields(table):
    assert list(table.columns) == list(FIELDS)
    for name in FIELDS:
        assert table[name].dtype == (np.float64 if name in FLOAT_FIELDS else np.int64), name
    assert len(table) == N
    assert table["job_number"].tolist() == list(range(1, N + 1))
    submit = table["submit_time"].to_numpy()
    assert submit[0] == 0 and np.all(np.diff(submit) >= 0)
    assert (table["wait_time"] == -1).all()
    assert (table["status"] == 1).all()
    assert (table["run_time"] >= 1).all()
    assert (table["run_time"] <= math.exp(DEFAULTS.log_runtime_cap)).all()
    assert (table["allocated_procs"] == table["requested_procs"]).all()
    assert table["allocated_procs"].between(1, PROCS).all()
    for name in ("avg_cpu_time", "used_memory", "requested_memory", "executable", "queue",
                 "partition", "preceding_job", "think_time"):
        assert (table[name] == -1).all(), name


@pytest.mark.parametrize("procs", [1, 2, 3, 100, 128, 1000])
def test_size_never_above_the_machine(procs):
    size = generate_lublin(3000, procs, seed=procs)["allocated_procs"]
    assert size.between(1, procs).all()
    if procs >= 2:
        assert (size > 1).any()
    else:
        assert (size == 1).all()


# --- job sizes ---------------------------------------------------------------------------

def test_serial_fraction_is_serial_prob(table):
    serial = (table["allocated_procs"] == 1).mean()
    assert serial == pytest.approx(0.2927, abs=0.015)


def expected_pow2_among_parallel(serial_prob, pow2_prob, low, med, hi, prob):
    """P(size is a power of two | parallel) on a machine of 2**hi processors."""
    chosen = pow2_prob / (1.0 - serial_prob)
    # A size rounded from 2**x lands on 2**k when 2**x is within 0.5 of it.
    accidental = sum(two_stage_cdf(math.log2(2**k + 0.5), low, med, hi, prob)
                     - two_stage_cdf(math.log2(2**k - 0.5), low, med, hi, prob)
                     for k in range(1, int(hi) + 1))
    return chosen + (1.0 - chosen) * accidental


def test_power_of_two_fraction_among_parallel_jobs(table):
    size = table["allocated_procs"].to_numpy()
    parallel = size[size > 1]
    # Documented bounds on 256 processors: u_hi = log2(256), u_med = u_hi - 2.
    expected = expected_pow2_among_parallel(0.2927, 0.6686, 1.2, 6.0, 8.0, 0.875)
    assert expected > 0.945
    assert is_pow2(parallel).mean() == pytest.approx(expected, abs=0.01)


def test_size_parameters_override():
    size = generate_lublin(N, PROCS, seed=1, serial_prob=0.5, pow2_prob=0.2,
                           u_prob=0.5)["allocated_procs"].to_numpy()
    assert (size == 1).mean() == pytest.approx(0.5, abs=0.015)
    expected = expected_pow2_among_parallel(0.5, 0.2, 1.2, 6.0, 8.0, 0.5)
    assert is_pow2(size[size > 1]).mean() == pytest.approx(expected, abs=0.02)
    # u_prob moves mass to the upper stage U(6, 8): a size of 64 or more needs x >= 5.5
    # on the power-of-two branch (0.2 / 0.5 of the parallel jobs) and 2**x >= 63.5 off it.
    chosen = 0.2 / 0.5
    expected_big = (chosen * (1.0 - two_stage_cdf(5.5, 1.2, 6.0, 8.0, 0.5))
                    + (1.0 - chosen) * (1.0 - two_stage_cdf(math.log2(63.5), 1.2, 6.0, 8.0, 0.5)))
    assert (size[size > 1] >= 64).mean() == pytest.approx(expected_big, abs=0.015)


# --- runtimes ----------------------------------------------------------------------------

def long_runtime_probability(size: float, threshold: float, p: LublinParams) -> float:
    """P(runtime >= threshold s) for one job of ``size`` processors, from the parameters."""
    first = min(max(p.pa * size + p.pb, 0.0), 1.0)

    def mixture_cdf(x):
        return first * gamma_cdf(x, p.a1, p.b1) + (1.0 - first) * gamma_cdf(x, p.a2, p.b2)

    cap = mixture_cdf(p.log_runtime_cap)
    return (cap - mixture_cdf(math.log(threshold))) / cap


def test_runtime_hyper_gamma_depends_on_size(table):
    size = table["allocated_procs"].to_numpy()
    run = table["run_time"].to_numpy()
    serial = size == 1
    expected_serial = long_runtime_probability(1, 3000, DEFAULTS)
    assert (run[serial] >= 3000).mean() == pytest.approx(expected_serial, abs=0.035)
    big = size >= 64
    expected_big = np.mean([long_runtime_probability(s, 3000, DEFAULTS) for s in size[big]])
    assert (run[big] >= 3000).mean() == pytest.approx(expected_big, abs=0.035)
    # The size dependence is real: big jobs run long markedly more often.
    assert expected_big - expected_serial > 0.2


def test_gamma_cdf_helper_against_known_values():
    # Exponential (shape 1) and Erlang-2 closed forms.
    assert gamma_cdf(2.0, 1.0, 1.0) == pytest.approx(1.0 - math.exp(-2.0), rel=1e-12)
    assert gamma_cdf(3.0, 2.0, 1.5) == pytest.approx(1.0 - math.exp(-2.0) * 3.0, rel=1e-12)


# --- arrivals ----------------------------------------------------------------------------

def expected_slot_shares(anum: float, bnum: float) -> np.ndarray:
    """Share of a day's arrivals per half-hour slot, from the documented cycle."""
    slot = np.arange(48)
    point = 11 + (slot - 10) % 48
    mass = np.array([gamma_cdf(j + 0.5, anum, bnum) - gamma_cdf(j - 0.5, anum, bnum)
                     for j in point])
    return mass / mass.sum()


def test_daily_cycle_weights_match_the_gamma_slots():
    shares = expected_slot_shares(6.1271, 5.2740)
    weights = daily_cycle_weights(6.1271, 5.2740)
    assert weights.mean() == pytest.approx(1.0)
    np.testing.assert_allclose(weights / weights.sum(), shares, rtol=1e-6)
    # The batch cycle peaks in the early afternoon.
    assert 12 * 2 <= int(np.argmax(shares)) <= 15 * 2


def test_arrivals_follow_the_daily_cycle(table):
    shares = expected_slot_shares(6.1271, 5.2740)
    slot = (table["submit_time"].to_numpy() % 86_400) // 1800
    working = np.arange(16, 36)  # 08:00-18:00
    night = np.arange(0, 12)  # 00:00-06:00
    assert np.isin(slot, working).mean() == pytest.approx(shares[working].sum(), abs=0.04)
    assert np.isin(slot, night).mean() == pytest.approx(shares[night].sum(), abs=0.02)
    # Far from a flat day: working hours are 20/48 of the clock but most of the jobs.
    assert shares[working].sum() > 0.55 and shares[night].sum() < 0.15


def offered_load(frame: pd.DataFrame, procs: int) -> float:
    work = (frame["run_time"] * frame["allocated_procs"]).sum()
    return work / (procs * frame["submit_time"].iloc[-1])


def test_target_load_is_reached():
    for load in (0.5, 0.9, 1.4):
        frame = generate_lublin(5000, PROCS, seed=3, load=load)
        assert offered_load(frame, PROCS) == pytest.approx(load, rel=1e-3)


def test_arrival_scale_stretches_interarrivals():
    base = generate_lublin(5000, PROCS, seed=4)
    slow = generate_lublin(5000, PROCS, seed=4, arrival_scale=2.0)
    # Sizes and runtimes are drawn first, so only the arrivals differ.
    assert (base["run_time"] == slow["run_time"]).all()
    ratio = slow["submit_time"].iloc[-1] / base["submit_time"].iloc[-1]
    assert ratio == pytest.approx(2.0, rel=0.02)


# --- users -------------------------------------------------------------------------------

def test_users_are_zipf_popular_and_grouped(table):
    user = table["user_id"].to_numpy()
    harmonic = sum(1.0 / k for k in range(1, 101))
    assert user.min() >= 1 and user.max() <= 100
    assert (user == 1).mean() == pytest.approx(1.0 / harmonic, abs=0.015)
    assert (user == 2).mean() == pytest.approx(0.5 / harmonic, abs=0.012)
    assert (table["group_id"] == 1 + (table["user_id"] - 1) % 10).all()


# --- estimates ---------------------------------------------------------------------------

def popular_values(max_estimate: int) -> set[int]:
    return {v for v in POPULARITY_RANK if v < max_estimate} | {max_estimate}


def test_estimates_are_popular_values_never_below_runtime(table):
    estimate = table["requested_time"].to_numpy()
    assert (estimate >= table["run_time"].to_numpy()).all()
    assert set(np.unique(estimate)) <= popular_values(48 * HOUR)
    assert 15 * 60 in estimate and HOUR in estimate and 48 * HOUR in estimate


def test_short_jobs_use_the_popularity_distribution(table):
    # Jobs shorter than every popular value may take any: their estimates follow the
    # popularity exactly (10% the maximum, the rest Zipf over the documented ranking).
    short = table[table["run_time"] <= 60]["requested_time"].to_numpy()
    assert short.size > 2000
    others = [v for v in POPULARITY_RANK if v < 48 * HOUR]
    harmonic = sum(1.0 / k for k in range(1, len(others) + 1))
    assert (short == 48 * HOUR).mean() == pytest.approx(0.10, abs=0.025)
    assert (short == others[0]).mean() == pytest.approx(0.9 / harmonic, abs=0.03)
    assert (short == others[1]).mean() == pytest.approx(0.9 / 2 / harmonic, abs=0.025)


def test_long_jobs_choose_among_the_values_that_fit(table):
    # A job of 6-8 h fits under 8 h and up only; it picks among those in proportion to
    # their popularity, so the maximum's share is its popularity renormalised.
    run = table["run_time"].to_numpy()
    band = (run > 6 * HOUR) & (run <= 8 * HOUR)
    estimate = table["requested_time"].to_numpy()[band]
    assert band.sum() > 1000
    others = [v for v in POPULARITY_RANK if v < 48 * HOUR]
    harmonic = sum(1.0 / k for k in range(1, len(others) + 1))
    popularity = {v: 0.9 / (rank * harmonic) for rank, v in enumerate(others, start=1)}
    fitting = sum(w for v, w in popularity.items() if v >= 8 * HOUR) + 0.10
    assert (estimate == 48 * HOUR).mean() == pytest.approx(0.10 / fitting, abs=0.05)
    assert (estimate == 8 * HOUR).mean() == pytest.approx(popularity[8 * HOUR] / fitting,
                                                          abs=0.05)


def test_estimate_parameters_override():
    frame = generate_lublin(N, PROCS, seed=5, estimate_max=60 * HOUR,
                            estimate_max_fraction=0.5)
    estimate = frame["requested_time"].to_numpy()
    assert set(np.unique(estimate)) <= popular_values(60 * HOUR)
    short = estimate[frame["run_time"].to_numpy() <= 60]
    assert (short == 60 * HOUR).mean() == pytest.approx(0.5, abs=0.03)


def test_estimate_max_must_cover_the_longest_runtime():
    with pytest.raises(MalleoError, match="estimate_max"):
        generate_lublin(10, PROCS, estimate_max=24 * HOUR)


# --- presets, determinism, validation ----------------------------------------------------

def test_interactive_preset():
    frame = generate_lublin(N, PROCS, seed=6, **INTERACTIVE_PARAMS)
    size = frame["allocated_procs"].to_numpy()
    assert (size == 1).mean() == pytest.approx(0.1541, abs=0.015)
    # u_hi = log2(256) - 1.5 = 6.5: rounded power-of-two sizes reach 2**7 at most.
    assert size.max() <= 128


def test_same_seed_same_table_other_seed_other_table():
    first = generate_lublin(2000, PROCS, seed=11)
    again = generate_lublin(2000, PROCS, seed=11)
    other = generate_lublin(2000, PROCS, seed=12)
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(other)
    assert not (first["run_time"] == other["run_time"]).all()


@pytest.mark.parametrize("args, kwargs, name", [
    ((0, PROCS), {}, "jobs"),
    ((-5, PROCS), {}, "jobs"),
    ((2.5, PROCS), {}, "jobs"),
    ((10, 0), {}, "procs"),
    ((10, "256"), {}, "procs"),
    ((10, PROCS, -1), {}, "seed"),
    ((10, PROCS), {"serial_probability": 0.3}, "serial_probability"),
    ((10, PROCS), {"serial_prob": 1.5}, "serial_prob"),
    ((10, PROCS), {"serial_prob": 0.5, "pow2_prob": 0.6}, "pow2_prob"),
    ((10, PROCS), {"a1": 0.0}, "a1"),
    ((10, PROCS), {"barr": "fast"}, "barr"),
    ((10, PROCS), {"load": -1.0}, "load"),
    ((1, PROCS), {"load": 0.5}, "load"),
    ((10, PROCS), {"users": 0}, "users"),
    ((10, PROCS), {"arrival_scale": float("nan")}, "arrival_scale"),
])
def test_bad_arguments_raise_naming_the_parameter(args, kwargs, name):
    with pytest.raises(MalleoError, match=name):
        generate_lublin(*args, **kwargs)
