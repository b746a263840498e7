"""Rigid and malleable columns side by side in one ``malleo compare`` (issue 11 point 6):
per-column malleability from a spec's ;KEY=VALUE pairs or a --config file, the table and
plots showing completion time, resizes and the work metrics, and the Gantt chart coloured
by kind or application with each resize marked."""
import json

import numpy as np
import pandas as pd
import pytest

from malleo.emulator import plots
from malleo.emulator.cli._options import parse_column_spec
from malleo.emulator.driver import replay
from malleo.errors import MalleoError
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Policy


def test_column_spec_pairs():
    policy, mall, flex = parse_column_spec(
        "sjf+easy;fraction=0.5;policy=head-unblock;users=3,7;power_of_two=true;"
        "malleability.reconfig_fixed=10")
    assert (policy.order, policy.backfill) == ("sjf", "easy")
    assert mall == {"policy": "head-unblock", "power_of_two": True, "reconfig_fixed": 10.0}
    assert flex == {"fraction": 0.5, "users": (3, 7)}
    assert parse_column_spec("fcfs+easy")[1:] == ({}, {})
    for bad, message in (("fcfs+easy;colour=red", "unknown key 'colour'"),
                         ("fcfs+easy;fraction", "expected KEY=VALUE"),
                         ("fcfs+easy;fraction=lots", "fraction='lots' is not a number"),
                         ("fcfs+easy;fraction=2", "flexible.fraction: must be in [0, 1]"),
                         ("fcfs+easy;policy=grow", "malleability.policy: must be one of")):
        with pytest.raises(MalleoError) as info:
            parse_column_spec(bad)
        assert message in str(info.value), str(info.value)


def test_compare_rigid_and_malleable_columns(malleo_cli, tmp_path):
    cfg = tmp_path / "mall.toml"
    cfg.write_text('[malleability]\npolicy = "head-unblock"\n[flexible]\nfraction = 0.5\n')
    args = ["compare", "--jobs", "0:600", "-q", "--policy", "fcfs+easy",
            "--policy", "fcfs+easy;fraction=0.5;reconfig_fixed=10", "--config", cfg]
    out = malleo_cli(*args, "--json")
    assert out.exit_code == 0, out.output
    rigid, mall, from_file = json.loads(out.output)
    assert "reconfigurations_expand" not in rigid and rigid["proc_hours_held"] > 0
    assert mall["reconfigurations"] > 0 and mall["policy"]["flexible"]["fraction"] == 0.5
    assert mall["policy"]["malleability"]["reconfig_fixed"] == 10.0
    assert from_file["reconfig_policy"] == "head-unblock"
    # the column is the replay of the same policy and flexible jobs
    alone = replay(None, Policy(malleability=Malleability(reconfig_fixed=10)),
                   jobs="0:600", flexible=FlexibleJobs(fraction=0.5)).summary
    assert mall["workload_completion"] == alone["workload_completion"]
    assert mall["resized_jobs"] == alone["resized_jobs"]
    table = malleo_cli(*args)
    assert table.exit_code == 0, table.output
    rows = {line.split("  ")[0]: line for line in table.output.splitlines()}
    for label in ("workload completion", "reconfigurations", "resized jobs",
                  "parallel efficiency", "energy"):
        assert label in rows, label
    # a rigid column's completion is its makespan
    assert f"{rigid['makespan']:,} s" in rows["workload completion"]
    bad = malleo_cli("compare", "--jobs", "0:10", "-q", "--policy", "fcfs+easy;grow=1")
    assert bad.exit_code == 2 and "--policy" in bad.output and "Traceback" not in bad.output


def test_compare_plots_metrics_and_gantt_by_kind(malleo_cli, tmp_path):
    out = malleo_cli("compare", "--jobs", "0:300", "-q", "--policy", "fcfs+easy",
                     "--policy", "fcfs+easy;fraction=1", "--plot", tmp_path / "p",
                     "--gantt-colour", "kind")
    assert out.exit_code == 0, out.output
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert "metrics.png" in names and "gantt-fcfs_easy_fraction_1.png" in names


def test_gantt_marks_each_resize_and_colours_by_kind_or_application():
    # job 1 (malleable): 2 processors, 4 at 10 s, 2 at 20 s, ends at 30; job 2 rigid.
    jobs = pd.DataFrame({"job_id": [1, 2], "start": [0, 0], "end": [30, 30],
                         "alloc_procs": [2, 2], "kind": ["malleable", "rigid"],
                         "user": [1, 2]})
    sizes = {1: [(0, 2), (10, 4), (20, 2)]}
    fig = plots.gantt_figure(jobs, (0, 30), 8, sizes=sizes, colour="kind")
    axes = fig.axes[0]
    marks = {c.get_label(): c.get_offsets().tolist() for c in axes.collections
             if c.get_label().startswith(("expansion", "shrink"))}
    scale = 60.0                                        # a 30 s window is drawn in minutes
    assert [x * scale for x, _ in marks["expansion (1)"]] == [10.0]
    assert [x * scale for x, _ in marks["shrink (1)"]] == [20.0]
    faces = [tuple(np.round(c.get_facecolors()[0], 3)) for c in axes.collections
             if type(c).__name__ == "PolyCollection"]
    from matplotlib.colors import to_rgba
    assert {tuple(np.round(to_rgba(plots.KIND_COLOURS[k]), 3))
            for k in ("rigid", "malleable")} <= set(faces)
    assert "colour = kind" in axes.get_title()
    by_app = plots.gantt_figure(jobs, (0, 30), 8, sizes=sizes, colour="application",
                                applications=[5, 9])
    assert "colour = application" in by_app.axes[0].get_title()
    with pytest.raises(ValueError, match="colour"):
        plots.gantt_figure(jobs, (0, 30), 8, colour="size")
