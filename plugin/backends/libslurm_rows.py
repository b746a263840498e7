"""The pyslurm backend's cycle read: libslurm's job and node records straight into columns.

``pyslurm.Jobs.load()`` makes a Python ``Job`` (with its steps and statistics objects) per
job: at 10,000 jobs 0.15-0.2 s of CPU, more than the whole cycle's 100 ms budget, of which
the RPC itself is 0.03 s.  This module calls the same libslurm pyslurm is linked to
(``slurm_load_jobs``, ``slurm_load_node``: ctypes, no Python object per record) and reads
the returned array of C structs as a numpy structured array whose fields are at their C
offsets: numbers become columns in one copy each; strings (partition, node list, a state
description) are read per row only where set; states and reasons are named once per
distinct value by libslurm's own ``slurm_job_state_string``/``slurm_job_state_reason_string``
/``slurm_node_state_string_complete``, the functions squeue and sinfo print with.  The
result is the :class:`~malleo.plugin.backends.columns.JobTable`/``NodeTable`` the CLI
backend's compact read gives, field for field as squeue/sinfo print them
(tests/test_slurm_backends_equal.py compares them on one queue).

The offsets come from Slurm's own header: :func:`layout` compiles a small C program
(``offsetof``/``sizeof`` of the fields read) against ``slurm/slurm.h`` of the Slurm pyslurm
was built for, once; the result is cached by the header's hash (``MALLEO_CACHE_DIR``, else
``$XDG_CACHE_HOME/malleo``, else ``~/.cache/malleo``).  The header is looked up next to the
library (``PREFIX/include`` for ``PREFIX/lib/libslurm.so``), in ``MALLEO_SLURM_INCLUDE``, or
in /usr/include.  Without a C compiler or the header the backend reads through pyslurm's
objects instead (slower, the same tables): ``PyslurmBackend.columns_unavailable`` says why.

"No change" answers: both loads pass the ``last_update`` of the previous answer; Slurm then
answers SLURM_NO_CHANGE_IN_DATA when nothing changed (no RPC payload, no unpacking), and the
previous table is reused.  Nodes change rarely (a job start or end changes a node's state),
so most cycles read no node record at all.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from malleo.plugin.backends import columns
from malleo.plugin.backends.errors import (
    BackendNotAvailable, SlurmConfigError, SlurmError, SlurmUnavailable, classify)

NO_CHANGE = 1900
"""SLURM_NO_CHANGE_IN_DATA (slurm_errno.h)."""
INFINITE = 0xFFFFFFFF
NO_VAL = 0xFFFFFFFE
SHOW_ALL = 0x0001
_NETWORK_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ETIMEDOUT, errno.EPIPE,
                   errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ECONNABORTED}

FIELDS = {
    "job_info_msg_t": ("last_update", "record_count", "job_array"),
    "slurm_job_info_t": ("job_id", "user_id", "partition", "job_state", "state_reason",
                         "state_desc", "priority", "submit_time", "start_time", "end_time",
                         "time_limit", "num_nodes", "max_nodes", "num_cpus", "nodes"),
    "node_info_msg_t": ("last_update", "record_count", "node_array"),
    "node_info_t": ("name", "node_state", "cpus", "alloc_cpus", "partitions"),
    "partition_info_msg_t": ("last_update", "record_count", "partition_array"),
    "partition_info_t": ("name", "max_time", "flags", "state_up", "nodes", "total_cpus"),
}
"""The structs and fields read (their C types: integers of the size the layout gives,
``char *`` for partition, state_desc, nodes, name and partitions)."""

ALTERNATIVES = {"node_info_t.alloc_cpus": "node_info_t.select_nodeinfo"}
"""Fields a Slurm before 25.05 lacks, and what it has instead.  The ``node_info_t`` of 22.05
and 24.11 has no ``alloc_cpus``: the allocated CPUs are behind the opaque ``select_nodeinfo``
pointer, read with ``slurm_get_select_nodeinfo(..., SELECT_NODEDATA_SUBCNT,
NODE_STATE_ALLOCATED, &u16)`` as their sinfo does; 25.11's header has ``alloc_cpus`` and no
``select_nodeinfo`` (checked in the headers of 22.05, 24.11, 25.11 and 26.05)."""

_POINTERS = {"partition", "state_desc", "nodes", "job_array", "node_array", "name",
             "partitions", "partition_array", "select_nodeinfo"}
_SIGNED = {"last_update", "submit_time", "start_time", "end_time"}      # time_t

_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include <slurm/slurm.h>
#ifndef SLURM_VERSION_NUM
#define SLURM_VERSION_NUM(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#endif
#define F(T, f) printf("\"%s.%s\": [%zu, %zu],\n", #T, #f, offsetof(T, f), sizeof(((T *)0)->f));
int main(void) {
    printf("{\n");
%s
    printf("\"sizeof.slurm_job_info_t\": [%zu, 0],\n", sizeof(slurm_job_info_t));
    printf("\"sizeof.node_info_t\": [%zu, 0],\n", sizeof(node_info_t));
    printf("\"sizeof.partition_info_t\": [%zu, 0],\n", sizeof(partition_info_t));
    printf("\"version\": [%d, 0]\n}\n", (int) SLURM_VERSION_NUMBER);
    return 0;
}
"""


_initialised_with: str | None = None
"""The slurm.conf libslurm was initialised with in this process ("" = Slurm's default), or
None: libslurm reads its configuration once per process (``slurm_init``), by pyslurm's
backend or the libslurm one, whichever comes first."""


INIT_PROBE_SECONDS = 20.0
"""How long :func:`initialise`'s probe child may take to initialise libslurm (seconds)."""


def initialise(conf: str | None, init) -> None:
    """Call ``init(path or None)`` the first time in this process, with ``conf`` (else
    SLURM_CONF, else Slurm's default); later calls only check they name the same file.

    libslurm's ``slurm_init`` calls Slurm's ``fatal()`` (which ends the process) on a
    slurm.conf it cannot parse.  So a forked child initialises first (:func:`init_probe`);
    only when it survives does this process call ``init``.

    Raises:
        SlurmConfigError: libslurm cannot parse ``conf`` (the message ends with Slurm's own,
            e.g. ``Parse error in file ... line 3``): bad input, not a reason to read another
            way.
        BackendNotAvailable: ``conf`` is not a file, libslurm cannot initialise with it for
            another reason, or libslurm was initialised with another slurm.conf in this
            process (it cannot switch).
    """
    global _initialised_with
    wanted = str(conf or os.environ.get("SLURM_CONF") or "")
    if _initialised_with is None:
        if wanted and not os.path.isfile(wanted):
            raise BackendNotAvailable(f"slurm.conf {wanted}: no such file")
        why = init_probe(init, wanted or None)
        if why is not None:
            message = f"slurm.conf {wanted or '(default)'}: libslurm cannot initialise with it: {why}"
            if isinstance(classify(why), SlurmConfigError):
                raise SlurmConfigError(message)         # bad input, whichever backend reads
            raise BackendNotAvailable(message)
        init(wanted or None)
        _initialised_with = wanted
    elif wanted != _initialised_with:
        raise BackendNotAvailable(
            f"libslurm was initialised with slurm.conf {_initialised_with or '(default)'} in "
            f"this process; it cannot switch to {wanted or '(default)'}")


def init_probe(init, path: str | None, timeout: float = INIT_PROBE_SECONDS) -> str | None:
    """Run ``init(path)`` in a forked child: None when it returns, else why not (the last
    lines the child wrote to its standard error, at most 1,000 characters, or its exit
    status; a child still running after ``timeout`` seconds is killed).  Costs one fork
    (a few milliseconds), once per process."""
    import select
    import signal

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child: never returns
        status = 3
        try:
            os.close(read_end)
            os.dup2(write_end, 2)
            init(path)
            status = 0
        except BaseException as exc:                 # noqa: BLE001 - reported by the parent
            try:
                os.write(2, f"{type(exc).__name__}: {exc}\n".encode(errors="replace"))
            except OSError:
                pass
        finally:
            os._exit(status)
    os.close(write_end)
    tail = b""
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            tail = (tail + chunk)[-4096:]
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return f"still initialising after {timeout:g} s"
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    text = " ".join(line.strip() for line in tail.decode(errors="replace").splitlines()
                    if line.strip())[-1000:]
    return text or (f"killed by signal {-code}" if code < 0 else f"exit status {code}")


class LayoutUnavailable(Exception):
    """The struct layout cannot be had here (no compiler, no header): read another way."""


def _cache_dir() -> Path:
    base = os.environ.get("MALLEO_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "malleo"


def library_path() -> str | None:
    """The file of the libslurm loaded in this process (pyslurm's), else None."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split()[-1] if line.strip() else ""
                # the file's name, not the path: a folder named like the library (a checkout
                # in .../libslurm-read/) is not it
                if re.match(r"libslurm(full)?(-[0-9.]+)?\.so", os.path.basename(path)):
                    return path
    except OSError:
        pass
    return None


SYSTEM_INCLUDE = Path("/usr/include")
"""Where the system's headers are (Debian's ``libslurm-dev`` puts slurm.h there)."""


def header_for(lib: str) -> Path:
    """``slurm/slurm.h`` of the Slurm ``lib`` belongs to (module docstring).

    Raises:
        LayoutUnavailable: none found.
    """
    candidates = []
    if os.environ.get("MALLEO_SLURM_INCLUDE"):
        candidates.append(Path(os.environ["MALLEO_SLURM_INCLUDE"]))
    libdir = Path(lib).resolve().parent
    candidates += [libdir.parent / "include", libdir.parent.parent / "include",
                   SYSTEM_INCLUDE]
    for inc in candidates:
        if (inc / "slurm" / "slurm.h").is_file():
            return inc / "slurm" / "slurm.h"
    raise LayoutUnavailable(f"no slurm/slurm.h for {lib} (looked in "
                            f"{', '.join(str(c) for c in candidates)}; set MALLEO_SLURM_INCLUDE)")


def layout(header: Path) -> dict[str, tuple[int, int]]:
    """``"struct.field" -> (offset, size)`` for :data:`FIELDS`, and the structs' sizes, from
    ``header`` (compiled once, then cached by the header's hash).

    Raises:
        LayoutUnavailable: no C compiler, or the program did not build or run.
    """
    text = header.read_bytes()
    body = "\n".join(_field_line(t, f) for t, fs in FIELDS.items() for f in fs)
    program = _PROGRAM.replace("%s\n", body + "\n", 1)
    key = hashlib.sha256(text + program.encode()).hexdigest()[:16]
    directory = _private(_cache_dir())
    cached = (directory or Path("/nonexistent")) / f"slurm-layout-{key}.json"
    try:
        if directory is None:
            raise OSError("no private cache directory")
        fd = os.open(cached, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            found = _checked_layout(json.loads(f.read(1 << 16)))
        if found is not None:
            return found
    except (OSError, ValueError):
        pass
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise LayoutUnavailable("no C compiler (cc) to read slurm.h's struct layout")
    with tempfile.TemporaryDirectory(prefix="malleo-layout-") as tmp:
        src, exe = Path(tmp) / "layout.c", Path(tmp) / "layout"
        src.write_text(program)
        build = subprocess.run([cc, "-I", str(header.parent.parent), "-o", str(exe), str(src)],
                               capture_output=True, text=True)
        if build.returncode != 0:
            raise LayoutUnavailable(f"{cc} could not build the layout program against "
                                    f"{header}: {build.stderr.strip()[:300]}")
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=False).stdout
    try:
        found = _checked_layout(json.loads(out))
    except ValueError:
        found = None
    if found is None:
        raise LayoutUnavailable(f"the layout program printed {out[:200]!r}")
    if directory is None:
        return found                # no private cache: compile again next time
    try:
        tmp_file = cached.with_suffix(f".{os.getpid()}.tmp")
        # O_EXCL | O_NOFOLLOW: never write through a link planted at the temporary name.
        fd = os.open(tmp_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(found))
        os.replace(tmp_file, cached)
    except OSError:
        pass                        # an unwritable cache: compile again next time
    return found


def _field_line(struct: str, field: str) -> str:
    """The layout program's line for one field; a field of :data:`ALTERNATIVES` is read
    where the header's Slurm has it (25.05 on), else its replacement is."""
    other = ALTERNATIVES.get(f"{struct}.{field}")
    if other is None:
        return f"    F({struct}, {field})"
    return (f"#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)\n    F({struct}, {field})\n"
            f"#else\n    F({other.replace('.', ', ')})\n#endif")


def _private(directory: Path) -> Path | None:
    """``directory``, made if missing (mode 0700), when it is a real directory owned by this
    user that nobody else may write to; else None.  The cached offsets address memory, so a
    layout is never read from, or written to, a place another user controls (``/var/tmp``
    as MALLEO_CACHE_DIR, a link)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return directory


def _checked_layout(doc) -> dict[str, tuple[int, int]] | None:
    """The layout if ``doc`` holds every field of :data:`FIELDS` and both struct sizes, each
    field a (offset, size) pair of integers inside its struct, sizes 1, 2, 4 or 8; else None
    (a stale or damaged cache file is rebuilt rather than trusted to address memory)."""
    if not isinstance(doc, dict):
        return None
    found = {}
    for key, value in doc.items():
        if (not isinstance(value, list) or len(value) != 2
                or not all(type(v) is int and 0 <= v < 1 << 31 for v in value)):
            return None
        found[key] = (value[0], value[1])
    sizes = {"slurm_job_info_t": found.get("sizeof.slurm_job_info_t"),
             "node_info_t": found.get("sizeof.node_info_t"),
             "partition_info_t": found.get("sizeof.partition_info_t")}
    for struct, fields in FIELDS.items():
        limit = sizes.get(struct)
        for field in fields:
            pair = found.get(f"{struct}.{field}")
            if pair is None and f"{struct}.{field}" in ALTERNATIVES:
                pair = found.get(ALTERNATIVES[f"{struct}.{field}"])
            if pair is None or pair[1] not in (1, 2, 4, 8):
                return None
            if limit is not None and (limit[0] == 0 or pair[0] + pair[1] > limit[0]):
                return None
    return found


def _dtype(lay: dict, struct: str, size_key: str | None) -> np.dtype:
    names, formats, offsets = [], [], []
    for f in FIELDS[struct]:
        if f"{struct}.{f}" not in lay and f"{struct}.{f}" in ALTERNATIVES:
            f = ALTERNATIVES[f"{struct}.{f}"].split(".")[1]
        off, size = lay[f"{struct}.{f}"]
        if f in _POINTERS:
            fmt = f"<u{size}"
        elif f in _SIGNED:
            fmt = f"<i{size}"
        else:
            fmt = f"<u{size}"
        names.append(f)
        formats.append(fmt)
        offsets.append(off)
    spec = {"names": names, "formats": formats, "offsets": offsets}
    if size_key:
        spec["itemsize"] = lay[size_key][0]
    return np.dtype(spec)


class Reader:
    """Loads jobs and nodes from libslurm into columns (module docstring).

    Args:
        lib: path of the libslurm to call (the one pyslurm loaded; initialised by it).
        lay: :func:`layout` of its header.
    """

    def __init__(self, lib: str, lay: dict):
        self.lib = ctypes.CDLL(lib, use_errno=True)
        self.lay = lay
        self.job_dtype = _dtype(lay, "slurm_job_info_t", "sizeof.slurm_job_info_t")
        self.node_dtype = _dtype(lay, "node_info_t", "sizeof.node_info_t")
        self.job_msg = _dtype(lay, "job_info_msg_t", None)
        self.node_msg = _dtype(lay, "node_info_msg_t", None)
        self.part_dtype = _dtype(lay, "partition_info_t", "sizeof.partition_info_t")
        self.part_msg = _dtype(lay, "partition_info_msg_t", None)
        L = self.lib
        L.slurm_load_jobs.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.c_uint16]
        L.slurm_load_node.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.c_uint16]
        L.slurm_free_job_info_msg.argtypes = [ctypes.c_void_p]
        L.slurm_free_node_info_msg.argtypes = [ctypes.c_void_p]
        L.slurm_load_partitions.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.c_uint16]
        L.slurm_free_partition_info_msg.argtypes = [ctypes.c_void_p]
        L.slurm_populate_node_partitions.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        L.slurm_strerror.restype = ctypes.c_char_p
        L.slurm_strerror.argtypes = [ctypes.c_int]
        L.slurm_job_state_string.restype = ctypes.c_char_p
        L.slurm_job_state_string.argtypes = [ctypes.c_uint32]
        # The reason's name: slurm_job_state_reason_string in 24.11 on, slurm_job_reason_string
        # in 22.05 (neither is declared in slurm.h; libslurm exports both, squeue calls them).
        reason_fn = getattr(L, "slurm_job_state_reason_string", None)
        if reason_fn is None:
            reason_fn = L.slurm_job_reason_string
        reason_fn.restype = ctypes.c_char_p
        reason_fn.argtypes = [ctypes.c_uint32]
        self._reason_fn = reason_fn
        if "alloc_cpus" not in self.node_dtype.names:        # before 25.05: ALTERNATIVES
            L.slurm_get_select_nodeinfo.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                    ctypes.c_uint32, ctypes.c_void_p]
        L.slurm_ping.argtypes = [ctypes.c_int]
        L.slurm_node_state_string_complete.restype = ctypes.c_void_p   # xmalloc'd
        L.slurm_node_state_string_complete.argtypes = [ctypes.c_uint32]
        L.slurm_xfree_ptr.argtypes = [ctypes.c_void_p]
        self._jobs = (0, None)      # (last_update, JobTable) of the last answer
        self._nodes = (0, None)
        self._parts = (0, None)     # (last_update, partition message kept for the nodes)
        self._partitions: list = []
        self._parts_version = 0     # partition messages loaded; the node table's:
        self._parts_seen = -1
        self._users: dict[int, bytes] = {}
        self._freeing: threading.Thread | None = None
        self._jobs_lock, self._nodes_lock = threading.Lock(), threading.Lock()
        self.last_rpc: dict[str, object] = {}

    def _load(self, fn, since: int, rpc: str):
        """Call ``fn(since, &msg, SHOW_ALL)``: the message pointer, or None for "no change".

        Raises:
            SlurmUnavailable: the controller did not answer; SlurmError: another error.
        """
        msg = ctypes.c_void_p()
        rc = fn(since, ctypes.byref(msg), SHOW_ALL)
        if rc == 0:
            return msg
        err = ctypes.get_errno()
        if err == NO_CHANGE:
            return None
        text = (self.lib.slurm_strerror(err) or b"").decode("utf-8", "replace")
        message = f"{rpc}: {text} (errno {err})"
        known = classify(message, [rpc])
        if known is not None:
            raise known
        if 1000 <= err < 1900 or 5000 <= err <= 5005 or err in _NETWORK_ERRNOS:
            # SLURM(CTLD)_COMMUNICATIONS_*, SLURM_PROTOCOL_SOCKET_*, or the socket's own
            # errno: nobody answered
            raise SlurmUnavailable(message)
        # Another error: unavailable if the controller does not answer a ping now, as the
        # CLI backend decides for a message it does not know.  A controller stopping under
        # the agent failed slurm_load_* with such an error (test_agent_live's restart on
        # 24.11), which the agent must count as an outage.
        if self.lib.slurm_ping(0) != 0:
            raise SlurmUnavailable(f"{message}; the controller does not answer a ping")
        raise SlurmError(message)

    def _records(self, msg, header_dtype, count_field: str, array_field: str, dtype):
        head = np.frombuffer((ctypes.c_char * header_dtype.itemsize).from_address(msg.value),
                             dtype=header_dtype)[0]
        n = int(head[count_field])
        if n == 0:
            return int(head["last_update"]), np.zeros(0, dtype=dtype)
        raw = (ctypes.c_char * (n * dtype.itemsize)).from_address(int(head[array_field]))
        # a view of libslurm's array (no copy of the whole records): read before the free
        return int(head["last_update"]), np.frombuffer(raw, dtype=dtype)

    @staticmethod
    def _strings(ptrs: np.ndarray) -> list[bytes]:
        at = ctypes.string_at
        return [at(p) if p else b"" for p in ptrs.tolist()]

    def jobs(self) -> columns.JobTable:
        """Every job as a JobTable, reusing the last one when Slurm reports no change.
        One caller at a time (the cycle reads the nodes beside it: their own lock)."""
        with self._jobs_lock:
            return self._load_jobs()

    def _load_jobs(self) -> columns.JobTable:
        since, table = self._jobs
        t0 = time.monotonic()
        msg = self._load(self.lib.slurm_load_jobs, since if table is not None else 0,
                         "slurm_load_jobs")
        if msg is None:
            self.last_rpc.update(jobs_rpc=time.monotonic() - t0, jobs_unchanged=True)
            return table
        t1 = time.monotonic()
        try:
            update, rec = self._records(msg, self.job_msg, "record_count", "job_array",
                                        self.job_dtype)
            table = self._job_table(rec)
            del rec
        except BaseException:
            self.lib.slurm_free_job_info_msg(msg)
            raise
        # Freeing 10,000 records takes 3-6 ms: a thread does it while the cycle plans
        # (ctypes releases the GIL); the previous one is awaited first.
        if self._freeing is not None:
            self._freeing.join()
        self._freeing = threading.Thread(target=self.lib.slurm_free_job_info_msg, args=(msg,),
                                         name="malleo-free-jobs", daemon=True)
        self._freeing.start()
        self._jobs = (update, table)
        self.last_rpc.update(jobs_rpc=t1 - t0, jobs_columns=time.monotonic() - t1,
                             jobs_unchanged=False)
        return table

    def _names(self, codes: np.ndarray, fn) -> np.ndarray:
        """``fn(code)`` for every code, called once per distinct one, as a bytes array."""
        uniq, inverse = np.unique(codes, return_inverse=True)
        texts = [fn(int(c)) or b"" for c in uniq.tolist()]
        return np.array(texts, dtype=f"S{max((len(t) for t in texts), default=1) or 1}")[
            inverse.reshape(-1)] if len(codes) else np.zeros(0, dtype="S1")

    def _user(self, uid: int) -> bytes:
        name = self._users.get(uid)
        if name is None:                # squeue's uid_to_string: the passwd name, else nobody
            try:
                name = pwd.getpwuid(uid).pw_name.encode()
            except KeyError:
                name = b"nobody"
            self._users[uid] = name
        return name

    def _job_table(self, rec: np.ndarray) -> columns.JobTable:
        """The records as squeue's compact read prints and :func:`columns.parse_squeue`
        reads them (print.c of squeue: the rules are cited at each column)."""
        t = columns.JobTable.__new__(columns.JobTable)
        t._jobs = None
        n = len(rec)
        t.job_id = rec["job_id"].astype(np.int64)
        uid = rec["user_id"].astype(np.int64)
        t.user_id = uid
        users = np.unique(uid)
        names = [self._user(int(u)) for u in users.tolist()]
        t.user = (np.array(names, dtype=f"S{max((len(x) for x in names), default=1) or 1}")[
            np.searchsorted(users, uid)] if n else np.zeros(0, dtype="S1"))
        parts = self._strings(rec["partition"])
        t.partition = np.array(parts, dtype=f"S{max((len(x) for x in parts), default=1) or 1}")
        state = self._names(rec["job_state"], self.lib.slurm_job_state_string)
        for flag, base in columns._FLAG_BASE.items():
            state = np.where(state == flag, base, state)
        t.state = state
        # Reason: the state description when set, else the reason's name; its first word
        reason = self._names(rec["state_reason"], self._reason_fn)
        desc_rows = np.flatnonzero(rec["state_desc"])
        if len(desc_rows):
            reason = reason.astype(object)
            for row, text in zip(desc_rows.tolist(), self._strings(rec["state_desc"][desc_rows])):
                reason[row] = text.split(b",")[0].strip()
            reason = reason.astype(bytes)
        t.reason = np.where(reason == b"None", b"", reason)
        t.priority = rec["priority"].astype(np.int64)

        def when(col):                  # _print_time: 0 is N/A; INFINITE/NO_VAL "Unknown"
            v = rec[col].astype(np.int64)
            return np.where((v == INFINITE) | (v == NO_VAL) | (v < 0), 0, v)

        t.submit_time = when("submit_time")
        t.start_time = when("start_time")
        limit = rec["time_limit"].astype(np.int64)
        end = when("end_time")          # "NONE" when unlimited and ending in the future
        t.end_time = np.where((limit == INFINITE) & (end > int(time.time())), 0, end)
        t.time_limit = np.where((limit == INFINITE) | (limit == NO_VAL), -1, limit * 60)
        t.num_nodes = rec["num_nodes"].astype(np.int64)
        max_nodes = rec["max_nodes"].astype(np.int64)
        t.max_nodes = np.where(max_nodes != 0, max_nodes, t.num_nodes)
        t.num_cpus = rec["num_cpus"].astype(np.int64)
        node_list = [b""] * n
        rows = np.flatnonzero(rec["nodes"])
        for row, text in zip(rows.tolist(), self._strings(rec["nodes"][rows])):
            node_list[row] = text
        t.node_list = node_list
        t._flags()
        return t

    def nodes(self) -> columns.NodeTable:
        """Every node as a NodeTable (one row per node and partition, as the compact sinfo
        read expands), reusing the last one when Slurm reports no change of nodes nor
        partitions.  A node's partitions come from the partition records, as sinfo and
        scontrol get them (``slurm_populate_node_partitions``); the last partition message
        is kept for that.  One caller at a time."""
        with self._nodes_lock:
            return self._load_nodes()

    def _load_nodes(self) -> columns.NodeTable:
        since, table = self._nodes
        t0 = time.monotonic()
        self._refresh_partitions()
        part_msg = self._parts[1]
        same_parts = self._parts_seen == self._parts_version     # the table's partitions
        msg = self._load(self.lib.slurm_load_node,
                         since if table is not None and same_parts else 0, "slurm_load_node")
        if msg is None:
            self.last_rpc.update(nodes_rpc=time.monotonic() - t0, nodes_unchanged=True)
            return table
        t1 = time.monotonic()
        try:
            self.lib.slurm_populate_node_partitions(msg, part_msg)
            update, rec = self._records(msg, self.node_msg, "record_count", "node_array",
                                        self.node_dtype)
            table = self._node_table(rec)
        finally:
            self.lib.slurm_free_node_info_msg(msg)
        self._nodes = (update, table)
        self._parts_seen = self._parts_version
        self.last_rpc.update(nodes_rpc=t1 - t0, nodes_columns=time.monotonic() - t1,
                             nodes_unchanged=False)
        return table

    def _refresh_partitions(self) -> bool:
        """Load the partition message unless Slurm reports no change; True when new."""
        part_since, part_msg = self._parts
        fresh = self._load(self.lib.slurm_load_partitions,
                           part_since if part_msg is not None else 0, "slurm_load_partitions")
        if fresh is None:
            return False
        if part_msg is not None:
            self.lib.slurm_free_partition_info_msg(part_msg)
        update, rec = self._records(fresh, self.part_msg, "record_count", "partition_array",
                                    self.part_dtype)
        self._parts = (update, fresh)
        self._partitions = self._partition_records(rec)
        self._parts_version += 1
        return True

    def partitions(self) -> list:
        """Every partition as :class:`~malleo.plugin.backends.model.Partition` records (the
        last ones again when Slurm reports no change), as ``scontrol show partition`` gives
        them.  pyslurm's ``Partitions.load()`` also loads every node (for its CPU counts):
        0.3-0.7 s at 10,000 nodes whenever a node changed."""
        with self._nodes_lock:              # the partition message serves the nodes too
            self._refresh_partitions()
            return list(self._partitions)

    def _partition_records(self, rec: np.ndarray) -> list:
        from malleo.plugin.backends import hostlist
        from malleo.plugin.backends.model import Partition

        states = {3: "UP", 1: "DOWN", 2: "DRAIN", 0: "INACTIVE"}     # PARTITION_* of slurm.h
        out = []
        for name, minutes, flags, up, nodes, cpus in zip(
                self._strings(rec["name"]), rec["max_time"].tolist(), rec["flags"].tolist(),
                rec["state_up"].tolist(), self._strings(rec["nodes"]),
                rec["total_cpus"].tolist()):
            limit = None if minutes in (INFINITE, NO_VAL) else int(minutes) * 60
            out.append(Partition(name=name.decode(), nodes=tuple(hostlist.expand(nodes.decode())),
                                 total_cpus=int(cpus), max_time=limit,
                                 state=states.get(int(up) & 3, "UP"),
                                 is_default=bool(int(flags) & 1)))     # PART_FLAG_DEFAULT
        return out

    def _node_state(self, code: int) -> bytes:
        ptr = self.lib.slurm_node_state_string_complete(code)
        if not ptr:
            return b"UNKNOWN"
        text = ctypes.string_at(ptr)
        self.lib.slurm_xfree_ptr(ptr)           # xfree_ptr frees the block it is given
        return text

    def _select_alloc(self, ptrs: np.ndarray) -> np.ndarray:
        """Allocated CPUs per node on Slurm before 25.05 (:data:`ALTERNATIVES`): one
        ``slurm_get_select_nodeinfo`` call per node (about 1 us each), 0 where it fails."""
        out = np.zeros(len(ptrs), dtype=np.int64)
        value = ctypes.c_uint16()
        ref, get = ctypes.byref(value), self.lib.slurm_get_select_nodeinfo
        for row, ptr in enumerate(ptrs.tolist()):
            value.value = 0
            # SELECT_NODEDATA_SUBCNT (2) of NODE_STATE_ALLOCATED (3): slurm.h's enums
            if ptr and get(ptr, 2, 3, ref) == 0:
                out[row] = value.value
        return out

    def ping(self) -> None:
        """Return when the primary controller answers ``slurm_ping``.

        Raises:
            SlurmUnavailable: it does not (Slurm's message).
        """
        rc = self.lib.slurm_ping(0)
        if rc == 0:
            return
        err = rc if rc > 0 else ctypes.get_errno()
        text = (self.lib.slurm_strerror(err) or b"").decode("utf-8", "replace")
        # worded as ``scontrol ping`` reports the same answer ("... is DOWN")
        raise SlurmUnavailable(f"Slurmctld(primary) is DOWN (slurm_ping: {text}, errno {err})")

    def _node_table(self, rec: np.ndarray) -> columns.NodeTable:
        """Rows as :func:`columns.parse_sinfo` gives them: a node in k partitions is k rows
        (a node in none: one row, partition empty)."""
        names = self._strings(rec["name"])
        parts = [p.split(b",") if p else [b""] for p in self._strings(rec["partitions"])]
        repeat = np.array([len(p) for p in parts], dtype=np.int64)
        t = columns.NodeTable.__new__(columns.NodeTable)
        t._nodes = None
        t.name = np.repeat(np.array(names, dtype=f"S{max(map(len, names), default=1) or 1}"),
                           repeat)
        flat = [x for p in parts for x in p]
        t.partition = np.array(flat, dtype=f"S{max(map(len, flat), default=1) or 1}")
        t.cpus = np.repeat(rec["cpus"].astype(np.int64), repeat)
        if "alloc_cpus" in rec.dtype.names:
            alloc = rec["alloc_cpus"].astype(np.int64)
        else:
            alloc = self._select_alloc(rec["select_nodeinfo"])
        t.alloc_cpus = np.repeat(alloc, repeat)
        state = self._names(rec["node_state"], self._node_state)
        text = [s.decode().lower() for s in state.tolist()]
        t.state = [s for s, k in zip(text, repeat.tolist()) for _ in range(k)]
        t.is_available = np.repeat(columns.available(state), repeat)
        return t


def cycle_read(reader: Reader, ping, node_rows):
    """An agent cycle's read through ``reader``: ``(partitions, nodes, jobs, times)``.

    The jobs' RPC runs in a thread of its own while this one calls ``ping`` (None: no ping)
    and reads the partitions and ``node_rows()`` (libslurm's calls through ctypes release the
    GIL, and slurmctld answers RPCs in threads): the read costs about the jobs' RPC.
    ``times`` splits it in seconds (``ping``, ``partitions``, ``nodes``, ``jobs``, ``*_rpc``:
    libslurm's call, ``*_columns``: the records into columns, absent when Slurm answered
    "no change"; ``read``: the whole)."""
    t0 = time.monotonic()
    got: dict = {}
    reader.last_rpc = {}

    def load_jobs():
        try:
            got["jobs"] = reader.jobs()
        except BaseException as exc:        # re-raised in the caller's thread
            got["error"] = exc
        got["jobs_s"] = time.monotonic() - t0

    worker = threading.Thread(target=load_jobs, name="malleo-jobs-read", daemon=True)
    worker.start()
    try:
        if ping is not None:
            ping()
        t1 = time.monotonic()
        parts = reader.partitions()
        t2 = time.monotonic()
        nodes = node_rows()
        t3 = time.monotonic()
    finally:
        worker.join()
    if "error" in got:
        raise got["error"]
    times = {"ping": t1 - t0, "partitions": t2 - t1, "nodes": t3 - t2, "jobs": got["jobs_s"]}
    times.update({k: v for k, v in reader.last_rpc.items() if isinstance(v, float)})
    times["read"] = time.monotonic() - t0
    return parts, nodes, got["jobs"], times


def make_reader() -> Reader:
    """A :class:`Reader` on the libslurm of this process (pyslurm's, initialised).

    Raises:
        LayoutUnavailable: no libslurm loaded, no header or no compiler.
    """
    lib = library_path()
    if lib is None:
        raise LayoutUnavailable("no libslurm loaded in this process")
    return Reader(lib, layout(header_for(lib)))
