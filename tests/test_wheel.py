"""A wheel built from a checkout in any state is consistent and holds only what runs.

The checkout is copied as `make test` leaves it (a debug in-place build: ``_core/*.c``
generated with the debug directives, ``_core/*.so`` and ``build/`` from that build); a
release wheel is built from the copy with pip, as `pip install .` does. The wheel must report
the release build it holds (``malleo --version``) and carry no ``.c`` or ``.pyx`` file.
"""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _copy_checkout(dest: Path) -> None:
    """Tracked and untracked, not ignored files, plus this checkout's build products."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    products = [p.relative_to(REPO) for p in REPO.glob("_core/*")
                if p.suffix in (".c", ".so") or p.name == "_knob_codes.pxi"]
    stamp = REPO / "_core" / ".cython-directives"
    for rel in [Path(os.fsdecode(f)) for f in listed if f] + products + (
            [stamp.relative_to(REPO)] if stamp.exists() else []):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if (REPO / "build").is_dir():
        shutil.copytree(REPO / "build", dest / "build", symlinks=True)


@pytest.mark.slow
def test_release_wheel_after_a_debug_in_place_build(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout")
    src = tmp_path / "src"
    _copy_checkout(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_CYTHON")}
    debug = subprocess.run([sys.executable, "-c", "import malleo._core as c; print(c.debug_directives())"],
                           cwd="/", capture_output=True, text=True, env=env)
    if debug.stdout.strip() != "True":  # make the debug in-place state `make test` leaves
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "--quiet"], cwd=src,
                       env={**env, "MALLEO_CYTHON_DEBUG": "1"}, check=True, capture_output=True)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                            "--no-build-isolation", "--disable-pip-version-check",
                            "-w", str(tmp_path / "dist"), str(src)],
                           cwd=src, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("malleo-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".c", ".pyx", ".html"))], names
    modules = sorted(p.stem for p in (REPO / "_core").glob("*.pyx"))
    compiled = sorted(Path(n).name.split(".")[0] for n in names
                      if n.startswith("malleo/_core/") and n.endswith(".so"))
    assert compiled == modules
    assert "malleo/_core/_types.pxd" in names and "malleo/_core/plan.pyi" in names
    assert "malleo/_core/_knob_codes.pxi" in names      # generated; _types.pxd includes it

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--disable-pip-version-check", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    version = subprocess.run([sys.executable, "-m", "malleo", "--version"], cwd="/",
                             env={**env, "PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1"},
                             capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
    assert "compiled Cython core (release directives" in version.stdout, version.stdout
    # Python started in the checkout: its malleo/ folder shadows the wheel; a clear error.
    shadowed = subprocess.run([sys.executable, "-c", "import malleo.emulator"], cwd=src,
                              env={**env, "PYTHONPATH": str(target)}, capture_output=True, text=True)
    assert "is the source tree's malleo/ folder" in shadowed.stderr, shadowed.stderr
    # Every module of the wheel was compiled from release-generated C: boundscheck code
    # (a bounds test before each buffer access) is absent from the regenerated sources.
    for c_file in (src / "_core").glob("*.c"):
        assert "__Pyx_RaiseBufferIndexError(" not in c_file.read_text().split("/* #### Code section: utility_code_def")[0], c_file
