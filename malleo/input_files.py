"""Read a user's text input file (policy, space, sacct output, CSV) with a few refusals.

Only a regular file or a pipe is read: a device such as ``/dev/zero`` would be read
forever, a directory or a socket cannot be.  Files above ``max_bytes`` are refused before
reading (policy and space files are a few kB).  Errors are the caller's
:class:`malleo.errors.MalleoError` subclass, naming the file.
"""
from __future__ import annotations

import os
import stat

from malleo.errors import MalleoError

__all__ = ["read_text"]


def read_text(path: str | os.PathLike, what: str, error: type[MalleoError] = MalleoError,
              max_bytes: int | None = None) -> str:
    """The UTF-8 text of ``path``.

    Args:
        path: the file.
        what: what the file is, for messages (``policy file``).
        error: the exception class to raise.
        max_bytes: refuse a larger file (None: no limit); a pipe is read up to it.

    Raises:
        error: ``PATH: cannot read WHAT: ...``, ``PATH: not a regular file or a pipe``,
            ``PATH: larger than N bytes``, ``PATH: not a UTF-8 text file``.
    """
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise error(f"{path}: is a directory, not a {what}")
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise error(f"{path}: not a regular file or a pipe: refused as a {what}")
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise error(f"{path}: larger than {max_bytes:,} bytes: not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a UTF-8 text file ({exc.reason})") from None
