"""The endpoint's socket file, created without trusting any path another user can change.

Root runs the endpoint, so a path that another user can redirect would let that user point
root's ``bind``, ``chmod`` or ``unlink`` at any file. Every step here works on a directory file
descriptor, never on a path re-resolved later:

- :func:`open_dir` walks the socket's directory from ``/`` one component at a time
  (``O_PATH | O_NOFOLLOW``), creating missing components (mode 0755). Every directory on the
  way must be *trusted*: owned by root or the server's user, and not writable by group or
  others unless sticky (``/tmp``). A symbolic link on the way is followed only when it lies in
  a trusted directory and is owned by root or the server's user (``/var/run -> /run``); the
  socket's own directory must be a real directory, owned by root or the server's user.
- :func:`bind` removes a stale socket of the server's user at the name (refusing anything
  else there, and a socket something still listens on), binds through
  ``/proc/self/fd/DIRFD/NAME`` (the already-checked directory, whatever the path points at
  now), and sets the mode through an ``O_PATH | O_NOFOLLOW`` descriptor of the new file, which
  must be a socket owned by the server's user: a link swapped in is never followed.
- :func:`remove` unlinks the socket through the directory descriptor, and only a socket.
"""
from __future__ import annotations

import errno
import os
import socket
import stat

MAX_LINKS = 40
"""Symbolic links followed on one path at most (the kernel's own limit)."""


class UnsafeSocketPath(PermissionError):
    """The socket's path runs through something another user could change."""


def _trusted_owner(st: os.stat_result) -> bool:
    return st.st_uid in (0, os.geteuid())


def _check_dir(st: os.stat_result, where: str) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, f"{where} is not a directory")
    if not _trusted_owner(st):
        raise UnsafeSocketPath(errno.EPERM, f"{where} is owned by uid {st.st_uid}, not root or "
                                            f"the endpoint's user (uid {os.geteuid()})")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UnsafeSocketPath(errno.EPERM, f"{where} is writable by group or others "
                                            f"(mode {stat.S_IMODE(st.st_mode):04o}) and not sticky")


def _open_path(name: str, dir_fd: int | None) -> int:
    return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_DIRECTORY,
                   dir_fd=dir_fd)


def open_dir(directory: str | os.PathLike, create: bool = True) -> int:
    """An ``O_PATH`` descriptor of ``directory``, checked as the module docstring says.

    Raises:
        UnsafeSocketPath: a directory or link on the way is not trusted.
        OSError: a component cannot be created or is not a directory.
    """
    pending = [p for p in os.path.abspath(os.fspath(directory)).split("/") if p]
    fd = _open_path("/", None)
    where = "/"
    links = 0
    try:
        _check_dir(os.fstat(fd), where)
        while pending:
            name = pending.pop(0)
            if name == ".":
                continue
            if name == "..":                  # from a link's target: the real parent
                nxt = _open_path("..", fd)
                os.close(fd)
                fd = nxt
                where = os.path.dirname(where.rstrip("/")) or "/"
                _check_dir(os.fstat(fd), where)
                continue
            here = os.path.join(where, name)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass                       # someone else made it first: checked below
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not pending:
                    raise UnsafeSocketPath(errno.ELOOP, f"{here}: the socket's directory is a "
                                                        f"symbolic link")
                if not _trusted_owner(st):
                    raise UnsafeSocketPath(errno.EPERM, f"{here}: a symbolic link owned by "
                                                        f"uid {st.st_uid}")
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, f"{directory}: too many symbolic links")
                target = os.readlink(name, dir_fd=fd)
                pending[:0] = [p for p in target.split("/") if p]
                if target.startswith("/"):
                    os.close(fd)
                    fd = _open_path("/", None)
                    where = "/"
                    _check_dir(os.fstat(fd), where)
                continue
            nxt = _open_path(name, fd)
            os.close(fd)
            fd = nxt
            where = here
            _check_dir(os.fstat(fd), where)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _proc_path(dir_fd: int, name: str) -> str:
    return f"/proc/self/fd/{dir_fd}/{name}"


def _is_listening(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def bind(sock: socket.socket, dir_fd: int, name: str, mode: int = 0o666) -> None:
    """Bind ``sock`` to ``name`` in the directory ``dir_fd`` and give the file ``mode``.

    Raises:
        UnsafeSocketPath: something other than a stale socket of the server's user is at
            ``name``, or the bound file is not the server's socket.
        OSError: a live endpoint already serves ``name``, or the bind fails.
    """
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"socket name {name!r}: must be a plain file name")
    path = _proc_path(dir_fd, name)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
            raise UnsafeSocketPath(errno.EEXIST, f"{name}: exists and is not a socket of the "
                                                 f"endpoint's user (uid {st.st_uid}, mode "
                                                 f"{st.st_mode:o}); remove it first")
        if _is_listening(path):
            raise OSError(errno.EADDRINUSE, f"{name}: another endpoint already serves it")
        os.unlink(name, dir_fd=dir_fd)
    sock.bind(path)
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
            raise UnsafeSocketPath(errno.EPERM, f"{name}: replaced after bind (mode "
                                                f"{st.st_mode:o}, uid {st.st_uid})")
        os.chmod(f"/proc/self/fd/{fd}", mode)   # the inode fd holds: never a link's target
    finally:
        os.close(fd)


def remove(dir_fd: int, name: str) -> None:
    """Unlink ``name`` in ``dir_fd`` if it is a socket of the server's user."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid():
        os.unlink(name, dir_fd=dir_fd)
