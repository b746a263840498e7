"""Build malleo: cythonize _core/*.pyx and map the three source folders under `malleo`.

Set MALLEO_CYTHON_DEBUG=1 to build with the debug directives (boundscheck and
initializedcheck on); CI's `make test` builds that way once.
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("MALLEO_CYTHON_DEBUG", "0") not in ("", "0", "false", "no")

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "initializedcheck": DEBUG,
    "nonecheck": False,
    "cdivision": True,
    "embedsignature": True,
}

extensions = [
    Extension(
        "malleo._core." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include(), "_core"],
        define_macros=[
            ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
            ("MALLEO_DEBUG_DIRECTIVES", "1" if DEBUG else "0"),
        ],
        extra_compile_args=["-O3"] if not DEBUG else ["-O1"],
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

setup(
    packages=sorted(PACKAGES),
    package_dir=PACKAGES,
    package_data={"malleo._core": ["*.pxd", "*.pyi"], "malleo": ["py.typed"]},
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        include_path=["_core"],
        # Rebuild when the debug switch flips, not only when sources change.
        force=os.environ.get("MALLEO_CYTHON_FORCE", "0") == "1",
    ),
    zip_safe=False,
)
