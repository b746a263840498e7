"""Build malleo: cythonize _core/*.pyx and map the three source folders under `malleo`.

Set MALLEO_CYTHON_DEBUG=1 to build with the debug directives (boundscheck and
initializedcheck on); CI's `make test` builds that way once.  Set MALLEO_COUNT=1 to compile
in the conservative kept pass's counters (``_core/counters.pxd``, read by
``malleo._core.loop.kept_counters()``; off by default, measurement only).

Every build is consistent: ``_core/.cython-directives`` records the directives and
optimisation flags the generated ``_core/*.c`` files and the compiled modules were made with;
when this build's differ (a release ``pip install .`` after a debug in-place build, or the
reverse) every module is regenerated and recompiled, so ``malleo --version`` (the
``_buildinfo`` module) always describes the modules beside it.  Wheels hold what runs: the
compiled modules, ``.py``, ``.pxd`` and ``.pyi`` files, never the generated ``.c`` files.
"""
import glob
import json
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext

DEBUG = os.environ.get("MALLEO_CYTHON_DEBUG", "0") not in ("", "0", "false", "no")
COUNT = os.environ.get("MALLEO_COUNT", "0") not in ("", "0", "false", "no")

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "initializedcheck": DEBUG,
    "nonecheck": False,
    "cdivision": True,
    "embedsignature": True,
}

OPTIMISATION = ["-O1"] if DEBUG else ["-O3"]
STAMP = os.path.join("_core", ".cython-directives")


STAMP_TEXT = json.dumps({"directives": DIRECTIVES, "cflags": OPTIMISATION, "count": COUNT},
                        sort_keys=True)


def _directives_changed() -> bool:
    """True when the last completed build used other directives or flags (rebuild all)."""
    try:
        with open(STAMP, encoding="utf-8") as stamp:
            return stamp.read() != STAMP_TEXT
    except OSError:
        return True


FORCE = os.environ.get("MALLEO_CYTHON_FORCE", "0") == "1" or _directives_changed()

KNOB_CODES = os.path.join("_core", "_knob_codes.pxi")


def _write_knob_codes() -> None:
    """Write the core's code constants (``_core/_knob_codes.pxi``, included by
    ``_core/_types.pxd``) from ``malleo.knobs.KNOBS``: one enum per scheduler choice knob.

    ``malleo/knobs.py`` is loaded on its own (a bare ``malleo`` package object: the real
    ``malleo/__init__.py`` refuses a source tree before its editable install); the file is
    rewritten only when its text changes, so an unchanged schema recompiles nothing.
    """
    import importlib
    import sys
    import types

    names = ("malleo", "malleo.limits", "malleo.knobs")
    saved = {name: sys.modules.pop(name, None) for name in names}
    package = types.ModuleType("malleo")
    package.__path__ = [os.path.abspath("malleo")]
    sys.modules["malleo"] = package
    try:
        text = importlib.import_module("malleo.knobs").core_codes_pxi()
    finally:
        for name in names:
            sys.modules.pop(name, None)
            if saved[name] is not None:
                sys.modules[name] = saved[name]
    try:
        with open(KNOB_CODES, encoding="utf-8") as old:
            if old.read() == text:
                return
    except OSError:
        pass
    with open(KNOB_CODES, "w", encoding="utf-8") as out:
        out.write(text)


_write_knob_codes()

extensions = [
    Extension(
        "malleo._core." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include(), "_core"],
        define_macros=[
            ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
            ("MALLEO_DEBUG_DIRECTIVES", "1" if DEBUG else "0"),
            ("MALLEO_COUNT", "1" if COUNT else "0"),
        ],
        extra_compile_args=OPTIMISATION,
    )
    for path in sorted(glob.glob("_core/*.pyx"))
]

ROOTS = {"malleo": "malleo", "malleo._core": "_core", "malleo.emulator": "emulator",
         "malleo.plugin": "plugin"}


def _packages():
    """Every package under the mapped folders (a folder with an __init__.py)."""
    found = {}
    for name, folder in ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if "__init__.py" in filenames:
                rel = os.path.relpath(dirpath, folder)
                pkg = name if rel == "." else name + "." + rel.replace(os.sep, ".")
                found[pkg] = dirpath
    return found


PACKAGES = _packages()

class build_ext(_build_ext):
    """setuptools' build_ext, forced to recompile every module when the directives changed.

    Its own staleness test compares file times only: a module compiled by an earlier build
    with other flags would otherwise be kept beside freshly compiled ones.
    """

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = self.force or FORCE
        # Compile the modules side by side (one gcc per core; MALLEO_BUILD_JOBS overrides):
        # make test compiles the core several times (host, wheel, chroots, Debian 12).
        if not self.parallel:
            self.parallel = int(os.environ.get("MALLEO_BUILD_JOBS", "0")) or os.cpu_count() or 1

    def run(self) -> None:
        super().run()
        # Written only once every module is built: pip runs setup.py several times per install.
        with open(STAMP, "w", encoding="utf-8") as stamp:
            stamp.write(STAMP_TEXT)


setup(
    cmdclass={"build_ext": build_ext},
    packages=sorted(PACKAGES),
    package_dir=PACKAGES,
    package_data={"malleo._core": ["*.pxd", "*.pyi", "_knob_codes.pxi"], "malleo": ["py.typed"]},
    # Sources of the compiled modules are not package data (setuptools would otherwise add
    # every extension source listed in SOURCES.txt to the wheel).
    exclude_package_data={"malleo._core": ["*.c", "*.pyx", "*.html", ".cython-directives"]},
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        include_path=["_core"],
        # Regenerate when the directives change, not only when sources change.
        force=FORCE,
    ),
    zip_safe=False,
)
