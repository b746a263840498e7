"""malleo.emulator: trace I/O, workload models, the replay driver, metrics and reports.

The public names below are imported on first use, so ``import malleo.emulator`` stays cheap.
"""
import importlib

_EXPORTS = {
    "read_swf": "malleo.emulator.swf",
    "write_swf": "malleo.emulator.swf",
    # The driver module is not named "replay": importing a submodule binds its name on
    # the package, which would shadow the replay function.
    "replay": "malleo.emulator.driver",
    "load_workload": "malleo.emulator.driver",
    "ReplayResult": "malleo.emulator.results",
    "generate_lublin": "malleo.emulator.workload",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'malleo.emulator' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
