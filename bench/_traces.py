"""Where the bench scripts read the shared SWF traces (in place, never copied): the folder
``MALLEO_TRACES`` names, else ``../shared/traces`` beside the repository (the layout the
project's checkouts use; tests/helpers.py looks in the same places)."""
from __future__ import annotations

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]

TRACES = pathlib.Path(os.environ.get("MALLEO_TRACES") or REPO.parent / "shared" / "traces")
"""The traces folder (``MALLEO_TRACES``, else ``../shared/traces`` beside the repository)."""


def trace_path(name: str) -> pathlib.Path:
    """``name`` as given when that file exists, else the file of that name in :data:`TRACES`,
    also without its ``.swf.gz`` (so ``RICC-2010-2.swf.gz`` or ``RICC-2010-2`` works from any
    directory)."""
    path = pathlib.Path(name)
    if path.exists():
        return path
    shared = TRACES / name
    if not shared.exists() and (TRACES / f"{name}.swf.gz").exists():
        return TRACES / f"{name}.swf.gz"
    return shared
