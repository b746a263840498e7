"""Work, efficiency, resize and energy metrics, per application and per size class
(issue 11 point 5; docs/metrics.md "Work, efficiency and energy")."""
import json
import math

import numpy as np
import pytest

from malleo.emulator.driver import replay
from malleo.emulator.power import PowerModel
from malleo.emulator.work_metrics import size_class
from malleo.errors import PolicyError
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Policy


def swf(path, rows, procs=8):
    """rows: (job, submit, runtime, procs, executable); user 1, queue 1."""
    lines = [f"; MaxProcs: {procs}", f"; MaxNodes: {procs}"]
    lines += [f"{j} {s} -1 {r} {p} -1 -1 {p} {r} -1 1 1 1 {exe} 1 1 -1 -1"
              for j, s, r, p, exe in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_size_classes():
    assert size_class(np.array([0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 256])).tolist() == [
        "1", "1", "2", "3-4", "3-4", "5-8", "5-8", "9-16", "9-16", "17-32", "129-256"]


def test_rigid_work_energy_and_breakdowns_by_hand(tmp_path):
    # 8 processors: job 1 (4 procs, 100 s, application 7) runs 0-100; job 2 (8 procs,
    # 50 s, application 9) waits for it and runs 100-150.  Held = useful = 400 + 400
    # processor-seconds; capacity 8 x 150 = 1200; idle 400 processor-seconds.
    trace = swf(tmp_path / "t.swf", [(1, 0, 100, 4, 7), (2, 0, 50, 8, 9)])
    linear = Policy(malleability=Malleability(speedup="linear"))
    s = replay(str(trace), linear, power=PowerModel(idle_watts=10, busy_watts=100),
               breakdowns=True).summary
    assert s["makespan"] == 150
    assert s["proc_hours_held"] == pytest.approx(800 / 3600)
    assert s["proc_hours_useful"] == pytest.approx(800 / 3600)
    assert s["parallel_efficiency"] == 1.0
    assert s["utilization_useful"] == pytest.approx(800 / 1200)
    assert s["energy_busy_kwh"] == pytest.approx(100 * 800 / 3.6e6)
    assert s["energy_idle_kwh"] == pytest.approx(10 * 400 / 3.6e6)
    assert s["energy_kwh"] == pytest.approx((100 * 800 + 10 * 400) / 3.6e6)
    assert "resized_jobs" not in s           # a rigid replay has no resize
    apps = s["by_application"]
    assert list(apps) == ["7", "9"] or list(apps) == ["9", "7"]     # equal work: stable
    assert apps["7"]["jobs"] == 1 and apps["7"]["wait_mean"] == 0
    assert apps["9"]["wait_mean"] == 100 and apps["9"]["response_mean"] == 150
    assert apps["9"]["proc_hours_held"] == pytest.approx(400 / 3600)
    assert list(s["by_size_class"]) == ["3-4", "5-8"]
    assert s["by_size_class"]["5-8"]["bsld_mean"] == 3.0
    # under Amdahl F = 0.5 (the policy's model), useful = S(4) x 100 + S(8) x 50
    amdahl = replay(str(trace), Policy(malleability=Malleability(speedup="amdahl:0.5")))
    useful = 100 / (0.5 + 0.5 / 4) + 50 / (0.5 + 0.5 / 8)
    assert amdahl.summary["proc_hours_useful"] == pytest.approx(useful / 3600)
    assert amdahl.summary["parallel_efficiency"] == pytest.approx(useful / 800)
    assert amdahl.summary["proc_hours_held"] == s["proc_hours_held"]


def test_rigid_work_models():
    from malleo.emulator.flex import speedup_value
    from malleo.emulator.work_metrics import rigid_work

    units, runtime = np.array([1, 4, 16]), np.array([10, 10, 10])
    assert rigid_work(units, runtime, "linear").tolist() == [10, 40, 160]
    assert rigid_work(units, runtime, "linear", unit=4).tolist() == [40, 160, 640]
    assert rigid_work(units, runtime, "amdahl:0.1~0.3") == pytest.approx(
        [10 / (0.2 + 0.8 / p) for p in (1, 4, 16)])
    assert rigid_work(units, runtime, "downey:8,0.5") == pytest.approx(
        [10 * speedup_value("downey", p, 8, 0.5) for p in (1, 4, 16)])


def test_malleable_accounting_adds_up():
    """On a 50%-malleable replay: the breakdowns partition the jobs and the work, held is
    the jobs' processor-seconds, the resize counts match the job columns."""
    res = replay(None, Policy(malleability=Malleability(reconfig_fixed=10,
                                                        reconfig_per_proc=0.5)),
                 jobs="0:1200", flexible=FlexibleJobs(fraction=0.5), breakdowns=True)
    s, j = res.summary, res.jobs
    held = j["proc_seconds"].sum()
    assert s["proc_hours_held"] == pytest.approx(held / 3600)
    assert s["parallel_efficiency"] == pytest.approx(s["proc_hours_useful"]
                                                     / s["proc_hours_held"])
    assert s["parallel_efficiency"] < 1          # Amdahl 0.05 and 10 s per reconfiguration
    resized = (j["n_expand"] + j["n_shrink"]) > 0
    assert s["resized_jobs"] == resized.sum() > 0
    assert s["resized_jobs_faster"] == (resized & (j["elapsed"] < j["runtime"])).sum()
    assert s["resized_jobs_slower"] == (resized & (j["elapsed"] > j["runtime"])).sum()
    assert s["resize_time_saved"] == (j["runtime"] - j["elapsed"])[resized].sum()
    assert s["reconfigurations"] == s["reconfigurations_expand"] + s["reconfigurations_shrink"]
    for key in ("by_application", "by_size_class"):
        groups = s[key].values()
        assert sum(g["jobs"] for g in groups) == len(j)
        assert sum(g["resized_jobs"] for g in groups) == s["resized_jobs"]
        assert sum(g["proc_hours_held"] for g in groups) == pytest.approx(held / 3600)
    assert s["reconfig_time_total"] > 0 and not math.isnan(s["energy_kwh"])
    # linear speedup and no cost: the work done is the work demanded (to a second of
    # work at the final size), all of it useful
    free = replay(None, Policy(malleability=Malleability(speedup="linear")), jobs="0:1200",
                  flexible=FlexibleJobs(fraction=0.5)).summary
    demanded = (j["alloc_procs"] * j["runtime"]).sum() / 3600
    assert free["proc_hours_useful"] == pytest.approx(demanded, rel=1e-3)
    assert "by_application" not in replay(None, jobs="0:50").summary      # not asked


def test_applications_beyond_the_cap_are_summed_as_other(tmp_path):
    from malleo.emulator.work_metrics import MAX_GROUPS

    rows = [(i + 1, i, 10 + i, 1, i) for i in range(MAX_GROUPS + 5)]
    s = replay(str(swf(tmp_path / "t.swf", rows)), breakdowns=True).summary
    apps = s["by_application"]
    assert s["applications"] == MAX_GROUPS + 5 and len(apps) == MAX_GROUPS
    assert list(apps)[0] == str(MAX_GROUPS + 4)           # the most processor-hours first
    assert apps["other"]["jobs"] == 6 and sum(a["jobs"] for a in apps.values()) == len(rows)


def test_power_model_is_checked_by_the_schema():
    with pytest.raises(PolicyError, match="busy_watts"):
        PowerModel(busy_watts=-1)
    with pytest.raises(PolicyError, match="idle_watts"):
        PowerModel(idle_watts=float("nan"))


def test_cli_replay_shows_the_metrics_and_takes_the_power_options(malleo_cli, tmp_path):
    trace = swf(tmp_path / "t.swf", [(1, 0, 100, 4, 7), (2, 0, 50, 8, 9)])
    out = malleo_cli("replay", trace, "--json", "-q", "--idle-watts", "0",
                     "--busy-watts", "36")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["energy_kwh"] == pytest.approx(36 * 800 / 3.6e6)
    assert data["idle_watts"] == 0 and data["busy_watts"] == 36
    assert set(data["by_application"]) == {"7", "9"}
    table = malleo_cli("replay", trace, "-q")
    assert table.exit_code == 0, table.output
    for label in ("processor-hours held", "parallel efficiency", "utilization (useful work)",
                  "energy", "size class (processors held)", "application (SWF field 14)"):
        assert label in table.output
    bad = malleo_cli("replay", trace, "-q", "--busy-watts", "-5")
    assert bad.exit_code == 2 and "--busy-watts" in bad.output
    assert "Traceback" not in bad.output
    mall = malleo_cli("replay", "--jobs", "0:400", "-q", "--malleable", "0.5")
    assert mall.exit_code == 0 and "resized jobs" in mall.output


def test_the_assumed_speedup_model_is_named_in_the_table_and_json(malleo_cli):
    out = malleo_cli("replay", "--jobs", "0:50")
    assert "speedup model                    amdahl:0.05 (assumed by useful work" in out.output
    doc = json.loads(malleo_cli("replay", "--jobs", "0:50", "--json",
                                "--speedup", "linear").output)
    assert doc["speedup_model"] == "linear"
    assert doc["parallel_efficiency"] == pytest.approx(1.0)
