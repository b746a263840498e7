"""Issue 11's command-line cases, run exactly as a user would: c4 (a dmr shrink must not
starve the queue head) and c2 (an expansion that does not pay is not taken), plus the
start-size and efficiency options end to end (docs/malleability.md)."""
import json

import pandas as pd
import pytest

from cli_runner import invoke

C4 = ("; MaxProcs: 8\n; MaxNodes: 8\n"
      "1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 1 1 1 -1 -1\n"
      "2 10 -1 100 8 -1 -1 8 100 -1 1 2 1 1 1 1 -1 -1\n"
      "3 11 -1 1000 2 -1 -1 2 1000 -1 1 3 1 1 1 1 -1 -1\n")
C2 = "; MaxProcs: 8\n; MaxNodes: 8\n1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n"


@pytest.mark.parametrize("policy", ["none", "dmr", "head-unblock", "efficiency"])
@pytest.mark.parametrize("backfill", ["easy", "conservative", "slurm"])
def test_c4_the_head_waits_90_s_under_every_policy(tmp_path, policy, backfill):
    trace = tmp_path / "c4.swf"
    trace.write_text(C4)
    out = tmp_path / "c4.csv"
    result = invoke("replay", trace, "--malleable", "1", "--flex-user", "1", "--speedup",
                    "linear", "--min-factor", "0.5", "--max-factor", "1",
                    "--reconfig-policy", policy, "--backfill", backfill, "--out", out)
    assert result.exit_code == 0, result.output
    jobs = pd.read_csv(out).set_index("job_id")
    assert jobs.loc[2, "wait"] == 90
    assert jobs.loc[1, "n_shrink"] == 0


def test_c2_an_expansion_that_does_not_pay_is_not_taken(tmp_path):
    trace = tmp_path / "c2.swf"
    trace.write_text(C2)
    result = invoke("replay", trace, "--malleable", "1", "--speedup", "amdahl:0.5",
                    "--max-factor", "2", "--reconfig-cost", "20+0", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["workload_completion"] == 100
    assert summary["reconfigurations_expand"] == 0
    # held and useful utilization: 4 of 8 processors held, S(4) = 1.6 of them useful
    assert summary["utilization"] == pytest.approx(0.5)
    assert summary["utilization_useful"] == pytest.approx(1.6 / 8)
    # without the cost the expansion pays (160 / S(8) = 90 s): taken
    free = json.loads(invoke("replay", trace, "--malleable", "1", "--speedup", "amdahl:0.5",
                             "--max-factor", "2", "--json").output)
    assert free["workload_completion"] == 90 and free["reconfigurations_expand"] == 1
    assert free["utilization"] == pytest.approx(1.0)
    assert free["utilization_useful"] == pytest.approx(160 / (8 * 90))
    # a minimum gain above 10 s refuses it
    gain = json.loads(invoke("replay", trace, "--malleable", "1", "--speedup", "amdahl:0.5",
                             "--max-factor", "2", "--min-gain", "10", "--json").output)
    assert gain["workload_completion"] == 100


def held(csv):
    """Each job's size held (never resized here): processor-seconds / elapsed."""
    jobs = pd.read_csv(csv)
    return (jobs["proc_seconds"] // jobs["elapsed"]).tolist()


def test_start_size_option_and_policy_file_key(tmp_path):
    trace = tmp_path / "c2.swf"
    trace.write_text(C2)
    base = ("replay", trace, "--malleable", "1", "--speedup", "amdahl:0.05",
            "--min-factor", "0.5", "--reconfig-policy", "none")
    out = tmp_path / "min.csv"
    assert invoke(*base, "--start-size", "min", "--out", out).exit_code == 0
    assert held(out) == [2]
    policy = tmp_path / "p.toml"
    policy.write_text("[malleability]\nstart_size = \"preferred\"\n"
                      "efficiency_threshold = 0.9\n[flexible]\nmax_factor = 2.0\n")
    out = tmp_path / "pref.csv"
    result = invoke(*base, "--config", policy, "--out", out)
    assert result.exit_code == 0, result.output
    # Amdahl 0.05: S(p) / p >= 0.9 up to p = 3 (S(3) / 3 = 0.909, S(4) / 4 = 0.870)
    assert held(out) == [3]
    bad = invoke(*base, "--start-size", "half")
    assert bad.exit_code == 2 and "--start-size" in bad.output
    policy.write_text("[malleability]\nefficiency_threshold = 0\n")
    bad = invoke(*base, "--config", policy)
    assert bad.exit_code == 2 and "efficiency_threshold" in bad.output
