"""The bench/ scripts run from anywhere (issue 16): each answers ``--help`` with its usage
from a folder outside the repository, without running its benchmark, and they all find the
shared traces the same way (bench/_traces.py: MALLEO_TRACES, else ../shared/traces beside the
repository).  The figures themselves are the scripts' output, never asserted here."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MALLEO_TRACES")}
    env.update(extra)
    return env


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_answers_help_from_elsewhere(script, tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH / script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {script}"), proc.stdout[:200]


def test_the_traces_folder_is_found_one_way(tmp_path):
    ask = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(BENCH)!r}); "
                                 "import _traces; print(_traces.TRACES)"]
    named = subprocess.run(ask, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env=_env(MALLEO_TRACES=str(tmp_path / "mine")))
    assert named.stdout.strip() == str(tmp_path / "mine"), named.stderr
    beside = subprocess.run(ask, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env=_env())
    assert beside.stdout.strip() == str(BENCH.parent.parent / "shared" / "traces")
    hard_coded = [p.name for p in BENCH.glob("*.py") if "/work/shared" in p.read_text()]
    assert not hard_coded, f"traces path hard-coded in {hard_coded}: use bench/_traces.py"


def test_cascade_merge_study_sees_no_difference_without_an_overtake(tmp_path):
    """bench/cascade_merge_study.py's finding (docs/core.md "Merging re-plans") on a few
    hundred workloads: differences only after an overtake, and both kinds of pairs seen."""
    proc = subprocess.run([sys.executable, str(BENCH / "cascade_merge_study.py"), "--seeds",
                           "300"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not [l for l in lines if l.startswith("DIFFERENT") and "no overtake" in l], lines
    assert any(l.startswith("same state, no overtake") for l in lines), lines
    assert any("an overtake" in l for l in lines), lines
