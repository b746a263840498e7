"""The agent's status file: how ``malleo slurm status`` and ``diag`` ask the running agent.

After every cycle (and when it stops) the agent writes ``STATE_DIR/agent.json``: its plan of
the last cycle, the policy in force, when it last cycled, and the counters since it started
(:func:`malleo.plugin.agent.status_view.agent_document`).  The write is atomic (a temporary
file in the same directory, then ``os.replace``), so a reader sees the old or the new file,
never a torn one.

The directory is private to the agent's user: created with mode 0755 when missing, and
refused when it is a symlink, owned by another user, or writable by group or others (a
local user could otherwise plant a file there).  The file itself is 0644: every user may
read the plan, as every user may run squeue.

Default directory (:func:`default_dir`): ``$MALLEO_STATE_DIR``, else ``/run/malleo`` for
root, else ``$XDG_RUNTIME_DIR/malleo``, else ``/tmp/malleo-UID``.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
from pathlib import Path

FILE_NAME = "agent.json"
"""Name of the status file inside the state directory."""


def default_dir() -> Path:
    """The state directory used when none is given (module docstring)."""
    env = os.environ.get("MALLEO_STATE_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/run/malleo")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "malleo"
    return Path(tempfile.gettempdir()) / f"malleo-{os.geteuid()}"


def private_dir(path: Path) -> Path:
    """Create ``path`` (0755) if missing and check it is safe to write into.

    Raises:
        OSError: a symlink, another user's directory, or group/other-writable.
    """
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path}: not a directory (a symlink?)")
    if info.st_uid != os.geteuid():
        raise OSError(f"{path}: owned by uid {info.st_uid}, not {os.geteuid()}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(f"{path}: writable by group or others (chmod go-w)")
    return path


def write(directory: str | os.PathLike, doc: dict) -> Path:
    """Atomically replace ``directory``/agent.json with ``doc`` (JSON).

    Raises:
        OSError: the directory is unsafe (see :func:`private_dir`) or not writable.
    """
    folder = private_dir(Path(directory))
    text = json.dumps(doc, separators=(",", ":"))      # one C call; json.dump is slower
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".agent.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        target = folder / FILE_NAME
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read(directory: str | os.PathLike) -> dict | None:
    """The status document in ``directory``, None when there is none or it is unreadable."""
    path = Path(directory) / FILE_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_running(doc: dict | None) -> bool:
    """True when ``doc`` was written by an agent that still runs: not marked stopped, and
    its process is alive on this host (the file names its host and pid)."""
    if not doc or doc.get("agent", {}).get("stopped"):
        return False
    agent = doc.get("agent", {})
    if agent.get("host") != socket.gethostname():
        return False
    pid = agent.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True         # alive, run by another user
    return True
