"""malleo._core: the compiled scheduling core (Cython).

Everything time-valued is integer seconds (``simtime_t``), everything size-valued is
processors (``procs_t``).  See docs/architecture.md for the contract of ``simulate`` and
``plan``, and docs/core.md for how the core works.
"""
from malleo._core._buildinfo import BUILD_INFO, is_compiled, debug_directives
from malleo._core.loop import simulate
from malleo._core.plan import Decisions, PlanState, plan

__all__ = ["BUILD_INFO", "is_compiled", "debug_directives", "simulate", "plan", "Decisions",
           "PlanState"]
