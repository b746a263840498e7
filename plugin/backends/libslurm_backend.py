"""The libslurm backend: the cycle's reads through the site's own libslurm, the rest through
Slurm's commands.

For sites without pyslurm (which builds only against Slurm 25.11): malleo loads the
``libslurm.so`` of the running Slurm itself (ctypes), initialises it against the cluster's
slurm.conf (``slurm_init``) and reads jobs, nodes and partitions with
:class:`~malleo.plugin.backends.libslurm_rows.Reader` straight into columns: at 10,000 jobs
the read costs about the jobs' RPC instead of squeue's ~0.1 s of formatting and the parse.
Everything else (writes, single-job reads, ``all_jobs``/``nodes``, JSON records) is the
:class:`~malleo.plugin.backends.cli.CliBackend` it extends, on the same slurm.conf.

What it needs (Debian: ``apt-get install libslurm-dev``, which brings both files):

- ``libslurm.so``: ``MALLEO_LIBSLURM`` (a path), else the libslurm already loaded in this
  process (pyslurm's: one libslurm per process), else ``PREFIX/lib[64]/libslurm.so`` next to
  the ``sinfo`` on PATH (``PREFIX/bin/sinfo``), else ``/usr/lib/<multiarch>/libslurm.so``,
  ``/usr/lib64``, ``/usr/lib``, ``/usr/local/lib``;
- ``slurm/slurm.h`` of that Slurm and a C compiler, once, for the struct layout
  (:func:`~malleo.plugin.backends.libslurm_rows.layout`, cached in a private directory);
- the header's Slurm major.minor equal to the running Slurm's (``sinfo --version``): a
  header of another release describes other structs;
- a slurm.conf file (the ``conf`` given, else SLURM_CONF, else ``/etc/slurm/slurm.conf`` for
  a libslurm under /usr): libslurm's ``slurm_init`` ends the process when it finds none, so
  a configless site (no file) reads through the commands instead.

:func:`unavailable_reason` says which is missing; ``select_backend`` then falls back to the
CLI backend and logs the reason once ("auto"), or raises BackendNotAvailable ("libslurm").
Checked against the headers of Slurm 22.05, 24.11, 25.11 and 26.05; where they differ the
reader adapts (``libslurm_rows.ALTERNATIVES``, the reason-name function), said at each place.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from malleo.plugin.backends import libslurm_rows
from malleo.plugin.backends.cli import CliBackend
from malleo.plugin.backends.errors import BackendNotAvailable, SlurmUnavailable


def library_candidates() -> list[Path]:
    """Where libslurm.so is looked for, in order (module docstring)."""
    found = []
    if os.environ.get("MALLEO_LIBSLURM"):
        return [Path(os.environ["MALLEO_LIBSLURM"])]
    loaded = libslurm_rows.library_path()
    if loaded:
        return [Path(loaded)]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    sinfo = shutil.which("sinfo")
    if sinfo:
        prefix = Path(sinfo).resolve().parent.parent
        found += [prefix / "lib" / "libslurm.so", prefix / "lib64" / "libslurm.so"]
        if multiarch:
            found.append(prefix / "lib" / multiarch / "libslurm.so")
    if multiarch:
        found.append(Path("/usr/lib") / multiarch / "libslurm.so")
    found += [Path("/usr/lib64/libslurm.so"), Path("/usr/lib/libslurm.so"),
              Path("/usr/local/lib/libslurm.so")]
    return list(dict.fromkeys(found))


def find_library() -> Path:
    """The libslurm.so to load.

    Raises:
        libslurm_rows.LayoutUnavailable: none found (the places looked in).
    """
    candidates = library_candidates()
    for path in candidates:
        if path.is_file():
            return path
    raise libslurm_rows.LayoutUnavailable(
        "no libslurm.so (looked in " + ", ".join(str(p) for p in candidates)
        + "; Debian: apt-get install libslurm-dev, or set MALLEO_LIBSLURM)")


def conf_file(conf: str | None, lib: Path) -> str:
    """The slurm.conf libslurm will read (module docstring).

    Raises:
        libslurm_rows.LayoutUnavailable: none (a configless site), or not a file.
    """
    wanted = str(conf or os.environ.get("SLURM_CONF") or "")
    if not wanted:
        default = Path("/etc/slurm/slurm.conf")
        if str(lib.resolve()).startswith("/usr/") and default.is_file():
            return str(default)
        raise libslurm_rows.LayoutUnavailable(
            "no slurm.conf file named (give --slurm-conf or set SLURM_CONF): libslurm's "
            "slurm_init ends the process when it finds none")
    if not os.path.isfile(wanted):
        raise libslurm_rows.LayoutUnavailable(f"slurm.conf {wanted}: no such file")
    return wanted


def prepare(conf: str | None, running: tuple[int, int] | None) -> tuple[Path, dict, str]:
    """Everything the backend needs short of loading the library: ``(library, layout,
    slurm.conf)``.

    Args:
        running: the running Slurm's (major, minor), or None not to check it.

    Raises:
        libslurm_rows.LayoutUnavailable: why it cannot be used here.
    """
    lib = find_library()
    lay = libslurm_rows.layout(libslurm_rows.header_for(str(lib)))
    number = lay["version"][0]
    header = (number >> 16, (number >> 8) & 0xFF)
    if running is not None and header != tuple(running):
        raise libslurm_rows.LayoutUnavailable(
            f"slurm.h next to {lib} is Slurm {header[0]}.{header[1]:02d} but the cluster runs "
            f"{running[0]}.{running[1]:02d} (install the libslurm-dev of the running Slurm)")
    path = conf_file(conf, lib)
    wanted = libslurm_rows._initialised_with
    if wanted is not None and wanted != path and wanted != str(conf or ""):
        raise libslurm_rows.LayoutUnavailable(
            f"libslurm was initialised with slurm.conf {wanted or '(default)'} in this process; "
            f"it cannot switch to {path}")
    return lib, lay, path


def unavailable_reason(conf: str | None, running: tuple[int, int] | None) -> str | None:
    """None when the libslurm backend can run here for ``conf``, else why not."""
    try:
        prepare(conf, running)
    except libslurm_rows.LayoutUnavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"libslurm: {exc}"
    return None


class LibslurmBackend(CliBackend):
    """The CLI backend whose cycle reads (:meth:`cycle_read`, :meth:`job_rows`,
    :meth:`node_rows`, :meth:`partitions`, :meth:`queue_fingerprint`) go through libslurm
    (module docstring).

    Args:
        conf: slurm.conf path (libslurm's, and SLURM_CONF of every command).
        timeout: seconds before a command counts as hung.

    Raises:
        BackendNotAvailable: libslurm cannot be used here (the reason), or was initialised
            with another slurm.conf in this process.
    """

    name = "libslurm"
    reads_tables = True

    def __init__(self, conf: str | None = None, timeout: float = 60.0,
                 running: tuple[int, int] | None = None):
        super().__init__(conf=conf, timeout=timeout, read="compact")
        try:
            lib, lay, path = prepare(conf, running)
            # RTLD_GLOBAL: the plugins slurm_init loads (auth_munge.so, hash_k12.so) take
            # libslurm's symbols (slurm_conf, slurm_get_log_level) from the global scope; loaded
            # locally, their dlopen fails and a lazily bound call ends the process.
            handle = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL, use_errno=True)
        except libslurm_rows.LayoutUnavailable as exc:
            raise BackendNotAvailable(f"the libslurm backend cannot be used: {exc}") from None
        except OSError as exc:
            raise BackendNotAvailable(f"the libslurm backend cannot load {lib}: {exc}") from None
        if "pyslurm" in sys.modules:
            # pyslurm's libslurm is this one (library_candidates): initialise it through
            # pyslurm's backend, which shares libslurm_rows' record of the slurm.conf.
            from malleo.plugin.backends import pyslurm_backend

            if pyslurm_backend.pyslurm is not None:
                pyslurm_backend._init(path)
        handle.slurm_init.argtypes = [ctypes.c_char_p]
        handle.slurm_init.restype = None
        libslurm_rows.initialise(path, lambda p: handle.slurm_init(p.encode() if p else None))
        self.library = str(lib)
        self._reader = libslurm_rows.Reader(str(lib), lay)

    def __repr__(self) -> str:
        return f"LibslurmBackend(conf={self.conf!r}, library={self.library!r})"

    def ping(self) -> None:
        """``slurm_ping`` of the primary controller (no process started)."""
        self._reader.ping()

    def partitions(self):
        return self._reader.partitions()

    def job_rows(self):
        """Every job as a :class:`~malleo.plugin.backends.columns.JobTable` from libslurm's
        records (the last one again when Slurm reports no change)."""
        return self._reader.jobs()

    def node_rows(self):
        """Every node as a :class:`~malleo.plugin.backends.columns.NodeTable` from libslurm's
        records (the last one again when Slurm reports no change of nodes and partitions)."""
        table = self._reader.nodes()
        if not len(table.name):     # a cluster has nodes: an unanswered RPC
            self.ping()
            raise SlurmUnavailable("slurm_load_node: libslurm returned no nodes")
        return table

    def queue_fingerprint(self) -> tuple:
        """The fingerprint of the JobTable (equal to the CLI compact read's; about a
        millisecond when Slurm answers "no change")."""
        return self._reader.jobs().fingerprint()

    def cycle_read(self, ping: bool = True):
        """The agent cycle's read (:func:`libslurm_rows.cycle_read`: the jobs' RPC in a
        thread beside the ping, partitions and nodes); ``last_read`` splits it."""
        parts, nodes, jobs, self.last_read = libslurm_rows.cycle_read(
            self._reader, self.ping if ping else None, self.node_rows)
        return parts, nodes, jobs
