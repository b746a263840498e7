"""malleo._core: the compiled scheduling core (Cython).

Everything time-valued is integer seconds (``simtime_t``), everything size-valued is
processors (``procs_t``).  See docs/architecture.md for the contract of ``simulate`` and
``plan``, and docs/core.md for how the core works.
"""
import importlib
import sys
import types

_EXPORTS = {
    "BUILD_INFO": "malleo._core._buildinfo", "is_compiled": "malleo._core._buildinfo",
    "debug_directives": "malleo._core._buildinfo", "simulate": "malleo._core.loop",
    "Decisions": "malleo._core.plan", "PlanState": "malleo._core.plan",
}
"""Public name -> defining module, imported on first use (PEP 562): ``malleo --version``
reads the build information without loading numpy and the event loop (issue 16)."""

__all__ = sorted([*_EXPORTS, "plan"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'malleo._core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Core(types.ModuleType):
    """``malleo._core.plan`` is the function, also after the submodule of the same name is
    imported (the import system binds a submodule on its package; the setter ignores that)."""

    @property
    def plan(self):
        return importlib.import_module("malleo._core.plan").plan

    @plan.setter
    def plan(self, _submodule) -> None:
        pass


sys.modules[__name__].__class__ = _Core
