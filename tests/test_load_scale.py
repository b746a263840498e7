"""Load rescaling of traces (issue 11 point 7; docs/traces.md "Load rescaling")."""
import json

import numpy as np
import pytest

from malleo.emulator.driver import replay
from malleo.emulator.load_scale import offered_load, rescale_submits
from malleo.emulator.swf import read_swf
from malleo.errors import MalleoError


def swf(path, rows, procs=8):
    """rows: (job, submit, runtime, procs)."""
    lines = [f"; MaxProcs: {procs}"] + [f"{j} {s} -1 {r} {p} -1 -1 {p} {r} -1 1 1 1 1 1 1 -1 -1"
                                        for j, s, r, p in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


# 3 jobs of 4 processors x 100 s on 8 processors, submitted at 0, 100, 200:
# rho = 1200 / (8 x 200) = 0.75
ROWS = [(1, 0, 100, 4), (2, 100, 100, 4), (3, 200, 100, 4)]


def test_offered_load_and_rescale_by_hand():
    submit, procs, runtime = np.array([0, 100, 200]), np.full(3, 4), np.full(3, 100)
    assert offered_load(submit, procs, runtime, 8) == 0.75
    scaled, f = rescale_submits(submit, procs, runtime, 8, 1.5)
    assert f == 0.5 and scaled.tolist() == [0, 50, 100]
    scaled, f = rescale_submits(submit + 1000, procs, runtime, 8, 0.25)
    assert f == 3.0 and scaled.tolist() == [1000, 1300, 1600]       # t0 stays


def test_rescale_reaches_the_target_on_a_real_sized_workload():
    from malleo.emulator.driver import load_workload

    t = load_workload(None).table
    args = (t["submit_time"].to_numpy(), t["procs"].to_numpy(), t["runtime"].to_numpy(), 256)
    for target in (0.5, 1.0, 1.5):
        scaled, _ = rescale_submits(*args, target)
        assert np.all(np.diff(scaled) >= 0)
        assert offered_load(scaled, *args[1:]) == pytest.approx(target, rel=1e-4)


def test_rescale_refuses_what_it_cannot_scale():
    with pytest.raises(MalleoError, match="all submitted at one instant"):
        rescale_submits(np.zeros(3), np.ones(3), np.ones(3), 8, 1.0)
    with pytest.raises(MalleoError, match=r"must be in \(0, 1000\]"):
        rescale_submits(np.arange(3), np.ones(3), np.ones(3), 8, -1.0)


def test_trace_rescale_command(malleo_cli, tmp_path):
    src = swf(tmp_path / "t.swf", ROWS)
    out = tmp_path / "scaled.swf"
    res = malleo_cli("trace", "rescale", src, "--load", "1.5", "-o", out)
    assert res.exit_code == 0, res.output
    assert "offered load 0.750 -> 1.500" in res.output
    jobs, meta = read_swf(str(out))
    assert jobs["submit_time"].tolist() == [0, 50, 100]
    assert jobs["runtime"].tolist() == [100, 100, 100]
    assert any("x0.5 by malleo trace rescale" in n for n in meta.notes)
    nowhere = malleo_cli("trace", "rescale", src, "--load", "1.5", "-o",
                         tmp_path / "missing" / "x.swf")
    assert nowhere.exit_code == 2 and "--output" in nowhere.output
    flat = swf(tmp_path / "flat.swf", [(1, 5, 10, 2), (2, 5, 10, 2)])
    bad = malleo_cli("trace", "rescale", flat, "--load", "1", "-o", tmp_path / "x.swf")
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert f"{flat}: cannot rescale" in bad.output


def test_replay_load_option(malleo_cli, tmp_path):
    src = swf(tmp_path / "t.swf", ROWS)
    res = malleo_cli("replay", src, "--load", "1.5", "--json", "-q")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["offered_load"] == 1.5 and data["load_scale"] == 0.5
    # arrivals 0, 50, 100: job 2 starts at 50 beside job 1, job 3 waits until 100
    plain = json.loads(malleo_cli("replay", src, "--json", "-q").output)
    assert plain["offered_load"] == 0.75 and "load_scale" not in plain
    assert data["makespan"] == 200 and plain["makespan"] == 300
    sliced = replay(None, jobs="0:2000", load=1.2)
    assert sliced.summary["offered_load"] == pytest.approx(1.2, rel=1e-3)
    cmp = malleo_cli("compare", src, "--load", "1.5", "--policy", "fcfs+easy", "--json", "-q")
    assert cmp.exit_code == 0 and json.loads(cmp.output)[0]["load_scale"] == 0.5
    bad = malleo_cli("replay", src, "--load", "-1", "-q")
    assert bad.exit_code == 2 and "--load" in bad.output
