"""Malleability options: the Malleability (scheduler) and FlexibleJobs (workload synthesis)
value objects, their policy-file tables, the CLI options, the trace-to-flexible conversion
and the malleable replay result."""
import json

import numpy as np
import pytest
from cli_runner import MalleoRunner

from malleo.emulator.cli import cli
from malleo.emulator.driver import replay
from malleo.emulator.flex import flexible_jobs
from malleo.errors import PolicyError
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Policy, parse_speedup
from malleo.policy_file import dump_policy, loads_config, loads_policy


HALF = FlexibleJobs(fraction=0.5)


def test_defaults_are_rigid_and_validated():
    assert not FlexibleJobs().enabled
    assert Policy().describe() == "fcfs+easy"
    assert Policy().describe(FlexibleJobs()) == "fcfs+easy"
    assert Policy().describe(FlexibleJobs(fraction=0.5)) == \
        "fcfs+easy[50% malleable dmr/amdahl:0.05/in-place]"
    with pytest.raises(PolicyError, match="fraction"):
        FlexibleJobs(fraction=1.5)
    with pytest.raises(PolicyError, match="max_factor"):
        FlexibleJobs(max_factor=0.5)
    with pytest.raises(TypeError):      # workload synthesis is not the scheduler's
        Malleability(fraction=0.5)
    with pytest.raises(PolicyError, match="policy"):
        Malleability(policy="grow")
    with pytest.raises(PolicyError, match="F must be in"):
        Malleability(speedup="amdahl:1.5")
    with pytest.raises(PolicyError, match="takes 2 parameter"):
        Malleability(speedup="downey:5")


def test_parse_speedup_ranges():
    assert parse_speedup("linear") == ("linear", ())
    assert parse_speedup("amdahl:0.05") == ("amdahl", ((0.05, 0.05),))
    assert parse_speedup("downey:10~50,1") == ("downey", ((10.0, 50.0), (1.0, 1.0)))
    with pytest.raises(PolicyError, match="LO > HI"):
        parse_speedup("amdahl:0.2~0.1")


def test_policy_file_round_trip_and_line_errors():
    pol = Policy(malleability=Malleability(power_of_two=True, speedup="downey:8~64,0.5",
                                           policy="head-unblock"))
    flex = FlexibleJobs(fraction=0.25, queues=(1, 3))
    assert loads_policy(dump_policy(pol)) == pol
    assert loads_config(dump_policy(pol, flexible=flex)) == (pol, flex)
    assert loads_config(dump_policy(pol)) == (pol, FlexibleJobs())
    assert "[malleability]" not in dump_policy(Policy())
    assert "[flexible]" not in dump_policy(pol, flexible=FlexibleJobs())
    text = 'order = "fcfs"\n[malleability]\npolicy = "dmr"\nmin_interval = -3\n'
    with pytest.raises(PolicyError, match=r"^p.toml:4: malleability.min_interval: must be in 0\.\."):
        loads_policy(text, "p.toml")
    with pytest.raises(PolicyError, match=r"^p.toml:3: malleability.colour: unknown key"):
        loads_policy("[malleability]\npolicy = \"dmr\"\ncolour = 1\n", "p.toml")
    with pytest.raises(PolicyError, match=r"^p.toml:3: flexible.seed: must be in 0\.\."):
        loads_config("[flexible]\nfraction = 0.5\nseed = -1\n", "p.toml")
    with pytest.raises(PolicyError, match=r"^p.toml:2: flexible.policy: unknown key"):
        loads_config("[flexible]\npolicy = \"dmr\"\n", "p.toml")
    with pytest.raises(PolicyError, match=r"^p.toml:2: malleability.power_of_two: must be a "
                                          r"boolean"):
        loads_policy("[malleability]\npower_of_two = 1\n", "p.toml")


def test_flexible_jobs_rules_and_reproducibility():
    p0 = np.array([1, 2, 4, 8, 16, 32, 64, 3] * 50)
    queue = np.arange(p0.size) % 3
    user = np.arange(p0.size) % 5
    flex = FlexibleJobs(fraction=0.5, min_procs=4, queues=(0, 2), min_factor=0.5,
                        max_factor=2.0, seed=7)
    mal = Malleability(speedup="amdahl:0.01~0.1")
    a = flexible_jobs(p0, queue, user, 64, flex, mal)
    b = flexible_jobs(p0, queue, user, 64, flex, mal)
    for key in a:
        assert a[key].tolist() == b[key].tolist()
    flex = a["kind"] == 2
    assert flex.any() and not flex.all()
    assert (p0[flex] >= 4).all() and np.isin(queue[flex], (0, 2)).all()
    assert (a["min_procs"] <= p0).all() and (a["max_procs"] >= p0).all()
    assert (a["max_procs"] <= 64).all()
    assert (a["min_procs"][~flex] == p0[~flex]).all()
    assert ((a["speedup_a"] >= 0.01) & (a["speedup_a"] <= 0.1)).all()
    c = flexible_jobs(p0, queue, user, 64, FlexibleJobs(fraction=0.5, seed=8))
    assert c["kind"].tolist() != flexible_jobs(p0, queue, user, 64,
                                               FlexibleJobs(fraction=0.5, seed=7))["kind"].tolist()


def test_malleable_replay_result():
    pol = Policy(malleability=Malleability(speedup="amdahl:0.05",
                                           reconfig_fixed=10, reconfig_per_proc=0.5))
    res = replay(None, pol, jobs="0:1500", flexible=HALF)
    j = res.jobs
    assert set(j["kind"]) == {"rigid", "malleable"}
    assert (j.loc[j["kind"] == "rigid", "n_expand"] == 0).all()
    s = res.summary
    assert s["reconfigurations_expand"] == int(j["n_expand"].sum()) > 0
    assert s["expand_mode"] == "in-place"
    assert s["workload_completion"] == int(j["end"].max() - j["submit"].min())
    assert set(s["by_kind"]) == {"rigid", "malleable"}
    assert sum(v["jobs"] for v in s["by_kind"].values()) == len(j)
    hist = res.size_history()
    assert len(hist) == len(j)
    some = int(j.loc[j["n_expand"] > 0, "job_id"].iloc[0])
    assert len(hist[some]) >= 2
    assert 0 < s["utilization"] <= 1


def test_slurm_mode_replay_reports_its_expanders():
    """In slurm expand mode every expansion is a merged expander: the result's expander
    log agrees with the job columns, the size log and the summary counts."""
    pol = Policy(malleability=Malleability(speedup="amdahl:0.05",
                                           reconfig_fixed=10, reconfig_per_proc=0.5,
                                           expand_mode="slurm"))
    res = replay(None, pol, jobs="0:1500", flexible=HALF)
    log, s, j = res.expander_log, res.summary, res.jobs
    assert list(log.columns) == ["job_id", "time", "event", "procs", "estimate"]
    assert s["expanders_merged"] == int(j["n_expand"].sum()) > 0
    assert s["expanders_requested"] == (log["event"] == "request").sum()
    assert s["expanders_requested"] == s["expanders_merged"] + s["expanders_cancelled"]
    assert (log["time"].diff().dropna() >= 0).all() and (log["procs"] > 0).all()
    merges = log[log["event"] == "merge"]
    per_job = merges.groupby("job_id").size()
    assert per_job.tolist() == j.set_index("job_id")["n_expand"].loc[per_job.index].tolist()
    # each merge grows its job at that time in the size log
    sizes = res.size_log.set_index(["job_id", "time"])["size"]
    for job, time in zip(merges["job_id"].head(50), merges["time"].head(50)):
        assert (job, time) in sizes.index
    ends = j.set_index("job_id")["end"]
    cancels = log[log["event"] == "cancel"]
    assert (cancels["time"].to_numpy() == ends.loc[cancels["job_id"]].to_numpy()).all()
    assert 0 <= s["expander_wait_mean"] <= s["expander_wait_max"]
    in_place = replay(None, Policy(malleability=Malleability(
        speedup="amdahl:0.05", reconfig_fixed=10, reconfig_per_proc=0.5)),
        jobs="0:1500", flexible=HALF)
    assert in_place.expander_log.empty and "expanders_requested" not in in_place.summary


def test_moldable_replay_starts_some_jobs_at_other_sizes():
    pol = Policy(malleability=Malleability(moldable_start=True, policy="none"))
    res = replay(None, pol, jobs="0:1500", flexible=FlexibleJobs(fraction=0.5, kind="moldable"))
    j = res.jobs
    assert set(j["kind"]) == {"rigid", "moldable"}
    first = res.size_log.groupby("job_id")["size"].first()
    sized = j.set_index("job_id")["alloc_procs"]
    other = first[first != sized.loc[first.index]]
    assert len(other) > 0
    assert set(j.set_index("job_id").loc[other.index, "kind"]) == {"moldable"}
    assert (j["n_expand"] == 0).all() and (j["n_shrink"] == 0).all()


def test_slurm_expand_mode_replays_and_says_so():
    base = dict(speedup="amdahl:0.05", policy="dmr", reconfig_fixed=10,
                reconfig_per_proc=0.5)
    inplace = replay(None, Policy(malleability=Malleability(**base)), jobs="0:1500",
                     flexible=HALF)
    slurm = replay(None, Policy(malleability=Malleability(**base, expand_mode="slurm")),
                   jobs="0:1500", flexible=HALF)
    assert inplace.summary["expand_mode"] == "in-place"
    assert slurm.summary["expand_mode"] == "slurm"
    j = slurm.jobs
    assert (j["n_expand"] > 0).any()
    assert (j.loc[j["kind"] == "rigid", "n_expand"] == 0).all()
    assert not inplace.jobs["end"].equals(j["end"])


def test_cli_replay_expand_mode_slurm():
    out = MalleoRunner().invoke(cli, ["replay", "--jobs", "0:800", "-q", "--json", "--malleable",
                                   "0.5", "--reconfig-policy", "dmr", "--expand-mode", "slurm"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["expand_mode"] == "slurm"
    assert data["policy"]["malleability"]["expand_mode"] == "slurm"


def test_cli_replay_and_compare_take_the_options():
    runner = MalleoRunner()
    out = runner.invoke(cli, ["replay", "--jobs", "0:800", "-q", "--json", "--malleable", "0.5",
                              "--speedup", "amdahl:0.05", "--reconfig-cost", "10+0.5",
                              "--reconfig-policy", "dmr", "--reconfig-points", "checkin:600",
                              "--min-interval", "60"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["expand_mode"] == "in-place"
    assert data["policy"]["malleability"]["reconfig_fixed"] == 10.0
    assert data["policy"]["malleability"]["checkin_period"] == 600
    bad = runner.invoke(cli, ["replay", "--jobs", "0:10", "-q", "--malleable", "0.5",
                              "--reconfig-cost", "ten"])
    assert bad.exit_code == 2 and "--reconfig-cost" in bad.output
    cmp = runner.invoke(cli, ["compare", "--jobs", "0:500", "-q", "--json", "--policy",
                              "fcfs+easy", "--malleable", "1", "--reconfig-policy",
                              "head-unblock"])
    assert cmp.exit_code == 0, cmp.output
    assert json.loads(cmp.output)[0]["reconfig_policy"] == "head-unblock"


def test_cli_options_keep_their_names_and_fill_the_right_table(tmp_path):
    """The workload options (--malleable, --flex-*, --min/max-factor) set [flexible], the
    others [malleability]; a --config file's [flexible] table is read by replay and the
    options override it; a live policy file with [flexible] is refused with its line."""
    runner = MalleoRunner()
    out = runner.invoke(cli, ["replay", "--jobs", "0:300", "-q", "--json", "--malleable",
                              "0.5", "--flex-seed", "3", "--max-factor", "4",
                              "--reconfig-policy", "head-unblock"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)["policy"]
    assert data["flexible"] == {**FlexibleJobs().to_dict(), "fraction": 0.5, "seed": 3,
                                "max_factor": 4.0}
    assert data["malleability"]["policy"] == "head-unblock"
    assert "fraction" not in data["malleability"]
    cfg = tmp_path / "emu.toml"
    cfg.write_text('[malleability]\npolicy = "dmr"\n\n[flexible]\nfraction = 0.25\n'
                   'seed = 9\n')
    out = runner.invoke(cli, ["replay", "--jobs", "0:300", "-q", "--json", "--config",
                              str(cfg), "--flex-seed", "4"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    flex = json.loads(out.output)["policy"]["flexible"]
    assert flex["fraction"] == 0.25 and flex["seed"] == 4
    shown = runner.invoke(cli, ["policy", "show", str(cfg)], catch_exceptions=False)
    assert shown.exit_code == 0 and "[flexible]" in shown.output
    old = tmp_path / "old.toml"
    old.write_text('[malleability]\nfraction = 0.5\n')
    bad = runner.invoke(cli, ["replay", "--jobs", "0:10", "-q", "--config", str(old)],
                        catch_exceptions=False)
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert f"{old}:2: malleability.fraction: moved to [flexible] fraction" in bad.output


def test_live_agent_policy_refuses_workload_synthesis(tmp_path):
    from malleo.policy_file import load_policy

    path = tmp_path / "site.toml"
    path.write_text('backfill = "easy"\n[flexible]\nfraction = 0.5\n')
    with pytest.raises(PolicyError, match=rf"^{path}:2: flexible: workload synthesis"):
        load_policy(path)
