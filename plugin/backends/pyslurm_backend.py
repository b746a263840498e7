"""The pyslurm backend, for sites running Slurm 25.11 with pyslurm 25.11.

Written against pyslurm's documented API (pyslurm.github.io, 25.11): ``pyslurm.Jobs.load()``,
``pyslurm.Job.load(id)``, ``Job.modify(JobSubmitDescription(...))``, ``Job.hold()``,
``Job.release()``, ``Job.cancel()``, ``JobSubmitDescription(...).submit()``,
``pyslurm.Nodes.load()``, ``pyslurm.Partitions.load()``, ``pyslurm.RPCError``.

pyslurm 25.11 builds only against Slurm 25.11 ("Slurm version mismatch" against Debian's 22.05
and 24.11); ``make test-slurm-25.11`` builds both (slurm-docker/build-slurm.sh,
build-pyslurm.sh) and runs every slurm-marked test with this backend live on 25.11.7, and
tests/test_slurm_backends_equal.py checks it reads and decides exactly as the CLI backend.
Units follow the interface: pyslurm's minutes become seconds here.

Node counts: pyslurm 25.11.2's ``Job.modify()`` drops ``nodes`` (its
``JobSubmitDescription`` fills min/max nodes only for a new submission, not for an update),
so a node-count change through it does nothing and raises nothing. :meth:`update_job`'s
``num_nodes`` and :meth:`resize` therefore go through ``scontrol update`` (the CLI backend on
the same slurm.conf); everything else goes through pyslurm.

Initialisation: ``import pyslurm`` calls libslurm's ``slurm_init()``, which reads slurm.conf
then and never again, and ends the process where none is found. This module imports it with
``PYSLURM_DISABLE_AUTO_INIT=1`` and initialises on the first :class:`PyslurmBackend`, with its
``conf`` (else SLURM_CONF / Slurm's default); a later backend naming another slurm.conf
raises BackendNotAvailable rather than silently talking to the first cluster.
"""
import os
import time

from malleo.plugin.backends import SlurmBackend, hostlist
from malleo.plugin.backends.errors import (
    BackendNotAvailable, SlurmCommandError, SlurmError, SlurmUnavailable, classify)
from malleo.plugin.backends.model import Job, Node, Partition

_AUTO_INIT = os.environ.get("PYSLURM_DISABLE_AUTO_INIT")
os.environ["PYSLURM_DISABLE_AUTO_INIT"] = "1"
try:  # pragma: no cover - depends on the site
    import pyslurm
    _IMPORT_ERROR: Exception | None = None
except Exception as exc:  # ImportError, or a version-mismatch error raised at import
    pyslurm = None
    _IMPORT_ERROR = exc
finally:
    if _AUTO_INIT is None:
        os.environ.pop("PYSLURM_DISABLE_AUTO_INIT", None)
    else:
        os.environ["PYSLURM_DISABLE_AUTO_INIT"] = _AUTO_INIT

SKIP_REASON = ("pyslurm is not importable here: pyslurm 25.11 builds only against Slurm 25.11 "
               "(Debian ships 22.05, 24.11 and 26.05; `make test-slurm-25.11` builds Slurm "
               "25.11 and pyslurm and runs this backend there)")


def unavailable_reason() -> str | None:
    """None when pyslurm imports, else why the pyslurm backend cannot run here."""
    if pyslurm is not None:
        return None
    return f"{SKIP_REASON} (import error: {_IMPORT_ERROR})"


def pyslurm_slurm_version() -> str:
    """The Slurm version pyslurm was built for ("25.11.7": the headers it was compiled with;
    pyslurm's own version follows Slurm's major.minor, its micro does not)."""
    api = getattr(pyslurm, "slurm_api_version", None)
    if callable(api):
        return ".".join(str(int(x)) for x in api())
    return str(getattr(pyslurm, "__version__", ""))


def _init(conf: str | None) -> None:
    """Initialise libslurm once per process with ``conf`` (see the module docstring): the
    record is :func:`libslurm_rows.initialise`'s, shared with the libslurm backend."""
    from malleo.plugin.backends import libslurm_rows

    def init(path):
        if path:
            os.environ["SLURM_CONF"] = path
        pyslurm.slurm_init(path)

    libslurm_rows.initialise(conf, init)


def _minutes_to_seconds(value) -> int | None:
    if value is None or isinstance(value, str):  # None / "UNLIMITED"
        return None
    return int(value) * 60


def _time_str(seconds: int) -> str:
    from malleo.plugin.backends.cli import slurm_duration
    return slurm_duration(seconds)


def _translate(exc: Exception, rpc: str) -> SlurmError:
    message = str(exc)
    return classify(message, [rpc]) or SlurmCommandError(message, [rpc])


class PyslurmBackend(SlurmBackend):
    """Slurm through pyslurm's RPC bindings.

    Args:
        conf: slurm.conf path; exported as SLURM_CONF before pyslurm's first RPC (libslurm
            reads it once per process).

    Raises:
        BackendNotAvailable: pyslurm does not import here.
    """

    name = "pyslurm"

    def __init__(self, conf: str | None = None, read: str | None = None):
        reason = unavailable_reason()
        if reason is not None:
            raise BackendNotAvailable(reason)
        read = (read or os.environ.get("MALLEO_PYSLURM_READ") or "columns").lower()
        if read not in ("columns", "objects"):
            raise ValueError(f"MALLEO_PYSLURM_READ/read {read!r}: expected columns or objects")
        _init(conf)
        self.conf = conf
        self.read = read
        self._reader = None
        self.columns_unavailable: str | None = None

    def _columns(self):
        """The libslurm column reader (:mod:`~malleo.plugin.backends.libslurm_rows`), made on
        first use; None when ``read="objects"`` or it cannot work here (the reason in
        :attr:`columns_unavailable`): the cycle then reads pyslurm's objects."""
        if self.read != "columns" or self.columns_unavailable is not None:
            return None
        if self._reader is None:
            from malleo.plugin.backends import libslurm_rows

            try:
                self._reader = libslurm_rows.make_reader()
            except libslurm_rows.LayoutUnavailable as exc:
                self.columns_unavailable = str(exc)
                return None
        return self._reader

    @property
    def reads_tables(self) -> bool:
        """The cycle's reads are columns (see :class:`SlurmBackend`)."""
        return self._columns() is not None

    def _call(self, rpc: str, fn, *args):
        try:
            return fn(*args)
        except pyslurm.RPCError as exc:
            raise _translate(exc, rpc) from None

    # --- reading -------------------------------------------------------------------------

    def version(self) -> tuple[int, int, int]:
        """The running slurmctld's version (from its configuration, one RPC)."""
        text = str(self._call("slurm_load_ctl_conf", pyslurm.slurmctld.Config.load).version)
        parts = [int(p) for p in text.split("-")[0].split(".")[:3] if p.isdigit()]
        return tuple((parts + [0, 0, 0])[:3])

    def ping(self) -> None:
        # slurmctld.ping_primary(), not a load: with the controller stopped, pyslurm 25.11.2's
        # Nodes.load() returned an empty collection without an error (the agent then saw "no
        # usable nodes" instead of an outage).
        try:
            resp = pyslurm.slurmctld.ping_primary()
        except pyslurm.RPCError as exc:
            raise SlurmUnavailable(str(exc)) from None
        if not resp.is_responding:
            raise SlurmUnavailable(f"Unable to contact slurm controller {resp.hostname} "
                                   "(ping: not responding)")

    def nodes(self) -> list[Node]:
        out = []
        loaded = self._call("slurm_load_node", pyslurm.Nodes.load)
        if not len(loaded):     # a cluster has nodes: an unanswered RPC (see ping())
            self.ping()
            raise SlurmUnavailable("slurm_load_node: pyslurm returned no nodes")
        for node in loaded.values():
            base, *flags = str(node.state or "UNKNOWN").upper().split("+")
            out.append(Node(name=node.name, state=base, flags=tuple(flags),
                            cpus=int(node.total_cpus or 0),
                            alloc_cpus=int(getattr(node, "allocated_cpus", 0) or 0),
                            partitions=tuple(node.partitions or ())))
        return out

    def partitions(self) -> list[Partition]:
        out = []
        for part in self._call("slurm_load_partitions", pyslurm.Partitions.load).values():
            out.append(Partition(name=part.name, nodes=tuple(hostlist.expand(part.nodes)),
                                 total_cpus=int(part.total_cpus or 0),
                                 max_time=_minutes_to_seconds(part.max_time),
                                 state=str(part.state or "UP").upper(),
                                 is_default=bool(part.is_default)))
        return out

    @staticmethod
    def _job(pj) -> Job:
        state = str(pj.state or "UNKNOWN").upper()
        started = state != "PENDING"
        reason = pj.state_reason or ""
        reason = "" if reason == "None" else reason
        return Job(
            job_id=int(pj.id), name=pj.name or "", user=pj.user_name or "",
            user_id=pj.user_id, partition=pj.partition or "", state=state, reason=reason,
            submit_time=int(pj.submit_time or 0),
            start_time=int(pj.start_time) if started and pj.start_time else None,
            expected_start=int(pj.start_time) if not started and pj.start_time else None,
            end_time=int(pj.end_time) if started and pj.end_time else None,
            time_limit=_minutes_to_seconds(pj.time_limit),
            num_nodes=int(pj.num_nodes or 0),
            max_nodes=(int(pj.max_nodes) if not started and pj.max_nodes
                       and int(pj.max_nodes) > int(pj.num_nodes or 0) else None),
            num_cpus=int(pj.cpus or 0),
            priority=int(pj.priority or 0),
            node_list=tuple(hostlist.expand(pj.allocated_nodes)) if started else (),
            required_nodes=tuple(hostlist.expand(pj.required_nodes)),
            is_held=state == "PENDING" and reason.startswith("JobHeld"))

    def all_jobs(self) -> list[Job]:
        return [self._job(j) for j in self._call("slurm_load_jobs", pyslurm.Jobs.load).values()]

    def job_rows(self):
        """The cycle's read of every job: a :class:`~malleo.plugin.backends.columns.JobTable`
        straight from libslurm's records (no Python object per job; Slurm's "no change"
        answer reuses the last one), else :meth:`all_jobs`."""
        reader = self._columns()
        return tuple(self.all_jobs()) if reader is None else reader.jobs()

    def node_rows(self):
        """The cycle's read of every node: a :class:`~malleo.plugin.backends.columns.NodeTable`
        from libslurm's records (the last one again when Slurm reports no change), else
        :meth:`nodes`."""
        reader = self._columns()
        if reader is None:
            return tuple(self.nodes())
        table = reader.nodes()
        if not len(table.name):     # a cluster has nodes: an unanswered RPC (see ping())
            self.ping()
            raise SlurmUnavailable("slurm_load_node: libslurm returned no nodes")
        return table

    def queue_fingerprint(self) -> tuple:
        """With the column reader, the fingerprint of its JobTable (equal to the cycle
        read's, and a "no change" answer of about a millisecond when nothing changed);
        else :meth:`SlurmBackend.queue_fingerprint`."""
        reader = self._columns()
        if reader is None:
            return super().queue_fingerprint()
        return reader.jobs().fingerprint()

    def cycle_read(self, ping: bool = True):
        """The agent cycle's read (see :meth:`SlurmBackend.cycle_read`), in this process.

        With the column reader the jobs' RPC runs in a thread of its own while this one
        pings and reads the partitions and nodes (libslurm's calls through ctypes release
        the GIL, and slurmctld answers RPCs in threads): the read costs about the jobs'
        RPC.  ``last_read`` splits it (``*_rpc``: libslurm's call, ``*_columns``: the
        records into columns, absent when Slurm answered "no change")."""
        reader = self._columns()
        if reader is not None:
            from malleo.plugin.backends import libslurm_rows

            parts, nodes, jobs, self.last_read = libslurm_rows.cycle_read(
                reader, self.ping if ping else None, self.node_rows)
            return parts, nodes, jobs
        t0 = time.monotonic()
        if ping:
            self.ping()
        t1 = time.monotonic()
        parts = self.partitions()
        t2 = time.monotonic()
        nodes = self.node_rows()
        t3 = time.monotonic()
        jobs = self.job_rows()
        t4 = time.monotonic()
        self.last_read = {"ping": t1 - t0, "partitions": t2 - t1, "nodes": t3 - t2,
                          "jobs": t4 - t3, "read": t4 - t0}
        return parts, nodes, jobs

    def _load_job(self, job_id: int):
        """``pyslurm.Job.load``, or None when pyslurm's own step read keeps failing.

        For a job that is not pending, pyslurm 25.11.2's ``Job.load`` makes a second RPC for
        the job's steps and indexes the answer by the job's id: when the answer holds steps
        but none of this job's (a job being cancelled or ending between the two RPCs; seen
        in CI, ``KeyError: 139`` from ``step.pyx``) that is a KeyError, not an RPCError.
        The race passes, so read again; the job record is what is wanted, not its steps."""
        for attempt in range(3):
            try:
                return self._call("slurm_load_job", pyslurm.Job.load, int(job_id))
            except KeyError:
                time.sleep(0.05 * (attempt + 1))
        return None

    def job(self, job_id: int) -> Job:
        loaded = self._load_job(job_id)
        if loaded is None:
            return self._scontrol().job(job_id)
        return self._job(loaded)

    def job_json(self, job_id: int) -> dict:
        """Slurm's own JSON record of the job, through ``scontrol --json`` (the CLI backend):
        pyslurm's Job object is not that schema, and the reconfiguration endpoint decides
        trust (the owner) on it.  Without this the endpoint failed on this backend
        (AttributeError, answered as an internal error)."""
        return self._scontrol().job_json(job_id)

    # --- acting ----------------------------------------------------------------------------

    def _modify(self, job_id: int, **changes) -> None:
        desc = pyslurm.JobSubmitDescription(**changes)
        self._call("slurm_update_job", pyslurm.Job(int(job_id)).modify, desc)

    def set_priority(self, job_id: int, priority: int) -> None:
        if priority < 0:
            raise ValueError(f"priority {priority}: must be >= 0")
        self._modify(job_id, priority=int(priority))

    def hold(self, job_id: int) -> None:
        self._call("slurm_update_job", pyslurm.Job(int(job_id)).hold)

    def release(self, job_id: int) -> None:
        self._call("slurm_update_job", pyslurm.Job(int(job_id)).release)

    def update_job(self, job_id: int, *, required_nodes=None, num_nodes=None,
                   time_limit: int | None = None) -> None:
        changes = {}
        if required_nodes is not None:
            changes["required_nodes"] = (required_nodes if isinstance(required_nodes, str)
                                         else hostlist.compress(required_nodes))
        if time_limit is not None:
            changes["time_limit"] = _time_str(time_limit)
        if not changes and num_nodes is None:
            raise ValueError("update_job: nothing to change")
        if changes:
            self._modify(job_id, **changes)
        if num_nodes is not None:       # pyslurm's modify drops nodes: see the module docstring
            self._scontrol().update_job(job_id, num_nodes=num_nodes)

    def resize(self, job_id: int, num_nodes: int) -> None:
        if num_nodes < 1:
            raise ValueError(f"resize to {num_nodes} nodes: need at least 1")
        self._scontrol().resize(job_id, num_nodes)

    def _scontrol(self):
        from malleo.plugin.backends.cli import CliBackend

        return CliBackend(conf=self.conf)

    def cancel(self, job_id: int) -> None:
        # pyslurm 25.11.2's cancel of an unknown id returns without error: read it first
        # (InvalidJobId when Slurm does not know it), as the CLI backend's scancel reports.
        self._load_job(job_id)
        self._call("slurm_kill_job", pyslurm.Job(int(job_id)).cancel)

    def submit(self, *, script: str | None = None, wrap: str | None = None,
               nodes=None, ntasks: int | None = None, time_limit: int | None = None,
               name: str | None = None, partition: str | None = None, hold: bool = False,
               required_nodes=None, output: str | None = None, workdir: str | None = None,
               extra_args=()) -> int:
        if (script is None) == (wrap is None):
            raise ValueError("submit: give exactly one of script= and wrap=")
        if extra_args:
            raise ValueError("submit: extra_args (raw sbatch options) need the CLI backend")
        desc = {"script": script if script is not None else f"#!/bin/sh\n{wrap}\n",
                "working_directory": workdir or os.getcwd()}
        if nodes is not None:
            lo, hi = nodes if isinstance(nodes, (tuple, list)) else (nodes, nodes)
            desc["nodes"] = {"min": int(lo), "max": int(hi)}
        if ntasks is not None:
            desc["ntasks"] = int(ntasks)
        if time_limit is not None:
            desc["time_limit"] = _time_str(time_limit)
        if name is not None:
            desc["name"] = name
        if partition is not None:
            desc["partitions"] = partition
        if hold:
            desc["priority"] = 0  # pyslurm's documented equivalent of sbatch --hold
        if required_nodes is not None:
            desc["required_nodes"] = (required_nodes if isinstance(required_nodes, str)
                                      else hostlist.compress(required_nodes))
        if output is not None:
            desc["standard_output"] = output
        sub = pyslurm.JobSubmitDescription(**desc)
        return int(self._call("slurm_submit_batch_job", sub.submit))
