"""Make freed job-sized arrays go back to the system at once (glibc's malloc; issue 16).

A replay makes and frees many job-sized numpy arrays (3.4 MiB each for RICC-2010-2's
447,794 int64 values).  glibc serves a block larger than its mmap threshold (128 KiB at
start) with its own memory mapping, unmapped when freed; but when such a block is freed it
raises the threshold to the block's size (up to 32 MiB), so every later block of that size
comes from the heap instead, and a heap block freed below a live one stays in the process
(the heap only shrinks from its top).  ``malleo replay`` of RICC-2010-2 with EASY peaked
at 113 MB that way instead of 94 MB.  Setting the threshold (``mallopt``) fixes it, which
turns that adjustment off: blocks above it are always mappings, so the resident memory
follows what is alive.

The CLI calls :func:`map_large_blocks` once, before its command runs; a library user can
too.  A no-op off glibc, or when ``MALLOC_MMAP_THRESHOLD_`` is set (the user's choice wins).
"""
from __future__ import annotations

import os

__all__ = ["MMAP_THRESHOLD", "map_large_blocks"]

MMAP_THRESHOLD = 1 << 20
"""Blocks of more than this many bytes (1 MiB: 131,072 int64 values) are memory mappings,
returned to the system when freed.  Smaller ones (a trace of a few thousand jobs, the
blocks of :func:`malleo.emulator.metrics.job_metric`) stay in the heap and are reused."""

_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number (malloc.h)."""


def map_large_blocks(threshold: int = MMAP_THRESHOLD) -> bool:
    """Set glibc's mmap threshold to ``threshold`` bytes (fixed: no dynamic raise).

    Returns:
        True if it was set; False off glibc, when ``mallopt`` refuses it, or when the
        ``MALLOC_MMAP_THRESHOLD_`` environment variable already chose one.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version      # glibc only (musl has no such mallopt parameter)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
