"""The unit / integration split a newcomer relies on (issue 13 point 4): every collected
test carries exactly one of the two markers, and each test that needs a live service is an
integration test."""
import subprocess
import sys
from pathlib import Path

from conftest import INTEGRATION_MARKERS

REPO = Path(__file__).resolve().parents[1]


def test_every_collected_test_is_unit_or_integration(request):
    for item in request.session.items:
        kinds = [name for name in ("unit", "integration") if item.get_closest_marker(name)]
        assert len(kinds) == 1, (item.nodeid, kinds)
        needs_service = any(item.get_closest_marker(name) for name in INTEGRATION_MARKERS)
        assert kinds == (["integration"] if needs_service else ["unit"]), item.nodeid


def test_marker_selection_splits_a_file_with_both_kinds():
    """``-m unit`` and ``-m integration`` select disjoint parts of a mixed file, whole."""
    path = "tests/test_docs_shell.py"

    def collected(marker):
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m",
                              marker, path], cwd=REPO, capture_output=True, text=True).stdout
        return {line for line in out.splitlines() if line.startswith(path + "::")}

    unit, integration = collected("unit"), collected("integration")
    everything = collected("unit or integration")
    assert unit and integration and not unit & integration
    assert unit | integration == everything
    assert all("runs_as_written" in nodeid for nodeid in integration)


SUBPROCESS_SCRIPTS = {"test_startup_imports.py", "test_knob_schema.py"}
"""Files whose CliRunner runs inside a child ``python -c`` script (a fresh interpreter where
``tests/`` is not importable); they pass ``catch_exceptions=False`` themselves."""


def test_every_cli_test_runs_the_shared_runner():
    """Tests run ``malleo`` through ``cli_runner`` (catch_exceptions=False), never a bare
    click CliRunner whose default hides a traceback in ``result.exception``."""
    offenders = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name in ("cli_runner.py", Path(__file__).name):     # the runner; this check
            continue
        text = path.read_text()
        if path.name in SUBPROCESS_SCRIPTS:
            calls = text.count("CliRunner().invoke(")
            if calls != text.count("catch_exceptions=False"):
                offenders.append(path.name)
        elif "from click.testing import CliRunner" in text or "CliRunner()" in text:
            offenders.append(path.name)
    assert not offenders, offenders
