"""Output paths checked before any work starts, so a long replay or tuning run is never lost
to a path it cannot write at the end.

Every command that writes a file checks each output path first with these functions; a
path that cannot be written is a :class:`malleo.errors.MalleoError` naming the option and
the reason (exit status 2):

* a file (:func:`check_output_file`): not an existing directory or socket; its parent
  exists, is a directory, and is writable on a read-write filesystem; an existing file
  must be writable; nothing under ``/proc`` or ``/sys``;
* a directory (:func:`check_output_dir`), created with its parents when absent: an
  existing path must be a writable directory, else the nearest existing ancestor must be;
* a Unix socket path (:func:`check_socket_path`): at most 107 bytes (``sun_path``), not
  an existing path of another kind, nothing under ``/proc`` or ``/sys``.

Writability is judged with ``os.access`` (the real user's rights) plus the filesystem's
read-only flag, which also stops root from writing to read-only mounts.  The check cannot
rule out a failure later (a full disk, a directory removed meanwhile); writers still
report those with a message.
"""
from __future__ import annotations

import os
import stat

from malleo.errors import MalleoError

__all__ = ["check_output_file", "check_output_dir", "check_socket_path", "check_outputs",
           "SUN_PATH_MAX"]

SUN_PATH_MAX = 107
"""Longest Unix socket path in bytes (Linux ``sun_path`` is 108 bytes with its NUL)."""

_PSEUDO = ("/proc", "/sys")


def _fail(option: str, path: str, reason: str) -> MalleoError:
    return MalleoError(f"{option}: {path}: {reason}")


def _pseudo(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + "/") for root in _PSEUDO)


def _writable_dir(directory: str) -> str | None:
    """Why files cannot be created in the existing path ``directory``, or None."""
    try:
        mode = os.stat(directory).st_mode
    except OSError as exc:
        return f"cannot use {directory}: {exc.strerror}"
    if not stat.S_ISDIR(mode):
        return f"{directory} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"directory {directory} is not writable"
    if _read_only(directory):
        return f"directory {directory} is on a read-only filesystem"
    return None


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_output_file(path: str | os.PathLike, option: str) -> None:
    """Check that a file can be written at ``path`` (created or replaced).

    Raises:
        MalleoError: ``OPTION: PATH: why not``.
    """
    path = os.fspath(path)
    if not path:
        raise _fail(option, path, "an empty path")
    if _pseudo(path):
        raise _fail(option, path, "a /proc or /sys path is not an output file")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise _fail(option, path, "a part of its directory is not a directory") from None
    except OSError as exc:
        raise _fail(option, path, f"cannot use it: {exc.strerror}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise _fail(option, path, "is a directory, not a file")
        if stat.S_ISSOCK(mode):
            raise _fail(option, path, "is a socket, not a file")
        if not os.access(path, os.W_OK) or (stat.S_ISREG(mode) and _read_only(path)):
            raise _fail(option, path, "exists and is not writable")
        return
    parent = os.path.dirname(path) or "."
    if not os.path.lexists(parent):
        raise _fail(option, path, f"directory {parent} does not exist")
    problem = _writable_dir(parent)
    if problem:
        raise _fail(option, path, problem)


def check_output_dir(path: str | os.PathLike, option: str) -> None:
    """Check that files can be written into the directory ``path`` (made when absent).

    Raises:
        MalleoError: ``OPTION: PATH: why not``.
    """
    path = os.fspath(path)
    if not path:
        raise _fail(option, path, "an empty path")
    if _pseudo(path):
        raise _fail(option, path, "a /proc or /sys path is not an output directory")
    ancestor = path
    while not os.path.lexists(ancestor):
        parent = os.path.dirname(ancestor.rstrip("/")) or "."
        if parent == ancestor:
            break
        ancestor = parent
    problem = _writable_dir(ancestor)
    if problem:
        raise _fail(option, path, problem)


def check_socket_path(path: str | os.PathLike, option: str) -> None:
    """Check that a Unix socket can be bound at ``path`` (its directory may be created
    by the server).

    Raises:
        MalleoError: ``OPTION: PATH: why not``.
    """
    path = os.fspath(path)
    if not path:
        raise _fail(option, path, "an empty path")
    size = len(os.fsencode(path))
    if size > SUN_PATH_MAX:
        raise _fail(option, path, f"{size} bytes long: a Unix socket path holds at most "
                                  f"{SUN_PATH_MAX}")
    if _pseudo(path):
        raise _fail(option, path, "a /proc or /sys path cannot hold a socket")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _fail(option, path, f"cannot use it: {exc.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise _fail(option, path, "exists and is not a socket (refusing to replace it)")


def check_outputs(files: dict[str, str | os.PathLike | None] | None = None,
                  dirs: dict[str, str | os.PathLike | None] | None = None) -> None:
    """Check every given output of a command (option -> path; None means not asked).

    Raises:
        MalleoError: for the first path that cannot be written, naming its option.
    """
    for option, path in (files or {}).items():
        if path is not None:
            check_output_file(path, option)
    for option, path in (dirs or {}).items():
        if path is not None:
            check_output_dir(path, option)
