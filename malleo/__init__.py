"""malleo: an HPC batch scheduler core with an SWF replay emulator and a Slurm policy agent.

Subpackages:
    malleo._core     the compiled scheduling core (``plan`` and the event loop)
    malleo.emulator  trace I/O, workload models, the replay driver, metrics, the CLI
    malleo.plugin    the Slurm integration (backends, the policy agent)
"""
import importlib.util as _util
import os as _os


def _check_not_shadowed() -> None:
    """Fail with a clear message when this is a source checkout's ``malleo/`` folder that
    shadows the installed package.

    Installed (wheel layout) ``malleo/emulator`` sits beside this file. In a checkout the
    subpackages live in ``../_core``, ``../emulator`` and ``../plugin`` and only an editable
    install of *this* checkout maps them under ``malleo``; anything else (Python started in
    the checkout after ``pip install .``, or in another checkout) would fail later with a
    confusing ``No module named 'malleo.emulator'`` or mix two versions.
    """
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.path.isdir(_os.path.join(here, "emulator")):
        return
    checkout = _os.path.dirname(here)
    spec = _util.find_spec("malleo.emulator")
    origin = spec.origin if spec is not None else None
    if origin and _os.path.dirname(_os.path.dirname(_os.path.abspath(origin))) == checkout:
        return
    raise ImportError(
        f"malleo: {here} is the source tree's malleo/ folder, found first on sys.path "
        "(Python was started in the checkout), and it shadows "
        + ("the installed malleo" if origin else "the installed malleo, or malleo is not installed")
        + ". Run Python from another directory (or with -P), or install this checkout in "
        "editable mode: pip install -e .")


_check_not_shadowed()


def __getattr__(name: str) -> str:
    """``malleo.__version__``, read from the installed distribution's metadata on first use
    (importlib.metadata costs 20-40 ms of start-up, paid only by commands that print it)."""
    if name != "__version__":
        raise AttributeError(f"module 'malleo' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("malleo")
    except PackageNotFoundError:  # running from a source tree that was never installed
        value = "0+unknown"
    globals()["__version__"] = value
    return value


__all__ = ["__version__"]
