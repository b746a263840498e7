"""The installed package: one import package `malleo`, a compiled core, a working entry point."""
import site
from importlib.metadata import distributions

from click.testing import CliRunner

import malleo
from malleo._core import debug_directives, is_compiled
from malleo.emulator.cli import cli


def test_version_names_the_compiled_core():
    result = CliRunner().invoke(cli, ["--version"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.startswith(f"malleo {malleo.__version__}, compiled Cython core")
    assert ("debug" if debug_directives() else "release") in result.output


def test_core_is_compiled():
    assert is_compiled() is True


def test_nothing_but_malleo_at_the_top_of_site_packages():
    installed = [d for d in distributions(path=site.getsitepackages())
                 if d.metadata["Name"] == "malleo"]
    assert installed, "malleo is not installed in site-packages"
    tops = {f.parts[0] for f in installed[0].files or []}
    # A regular install records `malleo/...`; an editable one only its finder (__editable__*).
    assert not tops & {"_core", "emulator", "plugin"}, sorted(tops)
    assert any(t == "malleo" or t.startswith("__editable__") for t in tops), sorted(tops)


def test_subpackages_import_under_malleo():
    import malleo._core
    import malleo.emulator
    import malleo.plugin

    assert malleo._core.__name__ == "malleo._core"
    assert malleo.emulator.__name__ == "malleo.emulator"
    assert malleo.plugin.__name__ == "malleo.plugin"


def test_unknown_command_exits_2():
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_a_source_tree_malleo_folder_that_shadows_the_install_says_so(tmp_path):
    """Python started in a checkout whose malleo/ folder is not the installed package (after
    ``pip install .``, or another checkout) fails with one clear ImportError, not with
    ``No module named 'malleo.emulator'`` later."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(Path(malleo.__file__).parent, tmp_path / "malleo",
                    ignore=shutil.ignore_patterns("emulator", "_core", "plugin", "__pycache__"))
    (tmp_path / "emulator").mkdir()  # a checkout's layout: subpackages beside malleo/
    proc = subprocess.run([sys.executable, "-c", "import malleo.emulator"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: malleo: {tmp_path / 'malleo'} is the source tree's "
                           "malleo/ folder"), proc.stderr
    assert "pip install -e ." in last
    # The same interpreter started elsewhere imports the installed malleo.
    assert subprocess.run([sys.executable, "-c", "import malleo.emulator"], cwd="/").returncode == 0
