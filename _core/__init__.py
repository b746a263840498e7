"""malleo._core: the compiled scheduling core (Cython).

Everything time-valued is integer seconds (``simtime_t``), everything size-valued is
processors (``procs_t``).  See docs/architecture.md for the contract of ``plan``.
"""
from malleo._core._buildinfo import BUILD_INFO, is_compiled, debug_directives

__all__ = ["BUILD_INFO", "is_compiled", "debug_directives"]
