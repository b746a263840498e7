"""Slurm backends: one interface (:class:`SlurmBackend`), three implementations.

- :class:`~malleo.plugin.backends.cli.CliBackend` runs Slurm's commands (``squeue --json``,
  ``sinfo --json``, ``scontrol``, ``sbatch``, ``scancel``) and works with any Slurm that has
  ``--json`` (21.08+; tested live on 22.05, schema-tested for 24.11).
- :class:`~malleo.plugin.backends.libslurm_backend.LibslurmBackend` is the CLI backend whose
  cycle reads go through the site's libslurm (ctypes, no pyslurm): Slurm 22.05 and later with
  ``libslurm-dev`` (slurm.h and libslurm.so) and a C compiler.
- :class:`~malleo.plugin.backends.pyslurm_backend.PyslurmBackend` calls pyslurm, for sites
  running Slurm 25.11 with the matching pyslurm.

:func:`select_backend` picks pyslurm when it imports and was built for the running Slurm's
major.minor, else libslurm when it can run, else the CLI backend;
``MALLEO_SLURM_BACKEND=cli|libslurm|pyslurm|auto`` overrides.
"""
import abc
import logging
import os
import time

from malleo.plugin.backends.errors import (
    BackendNotAvailable, InvalidJobId, InvalidRequest, JobStateError, PermissionDenied,
    SlurmCommandError, SlurmError, SlurmParseError, SlurmUnavailable)
from malleo.plugin.backends.model import Job, Node, Partition

__all__ = [
    "SlurmBackend", "select_backend", "Job", "Node", "Partition",
    "SlurmError", "SlurmUnavailable", "SlurmCommandError", "InvalidJobId", "JobStateError",
    "InvalidRequest", "PermissionDenied", "SlurmParseError", "BackendNotAvailable",
]


class SlurmBackend(abc.ABC):
    """Read a Slurm cluster's state and act on its jobs.

    Units: times are epoch seconds, durations seconds (``None`` = unlimited), sizes nodes and
    CPUs. Every failure raises a :class:`~malleo.plugin.backends.errors.SlurmError` subclass
    carrying Slurm's own message; nothing returns an error code.
    """

    #: Short name used in logs and by MALLEO_SLURM_BACKEND ("cli", "pyslurm").
    name: str = ""
    #: Wall seconds of each part of the last :meth:`cycle_read` (``read``: the whole).
    last_read: dict[str, float] = {}
    #: :meth:`job_rows` gives a :class:`~malleo.plugin.backends.columns.JobTable`, whose
    #: fingerprint the cycle takes instead of a query of its own.
    reads_tables: bool = False

    # --- reading -------------------------------------------------------------------------

    @abc.abstractmethod
    def version(self) -> tuple[int, int, int]:
        """The running Slurm's (major, minor, micro), e.g. (22, 5, 8)."""

    @abc.abstractmethod
    def ping(self) -> None:
        """Return when the controller answers; raise SlurmUnavailable otherwise."""

    @abc.abstractmethod
    def nodes(self) -> list[Node]:
        """Every node, once each, with its partitions."""

    @abc.abstractmethod
    def partitions(self) -> list[Partition]:
        """Every partition."""

    @abc.abstractmethod
    def all_jobs(self) -> list[Job]:
        """Every job the controller still holds (pending, running, recently finished)."""

    def job_rows(self):
        """The agent cycle's read of every job: :meth:`all_jobs` here; the CLI backend's
        compact read returns a :class:`~malleo.plugin.backends.columns.JobTable` (columns,
        iterable as Job records) instead."""
        return tuple(self.all_jobs())

    def node_rows(self):
        """The agent cycle's read of every node: :meth:`nodes` here; the CLI backend's
        compact read returns a :class:`~malleo.plugin.backends.columns.NodeTable`."""
        return tuple(self.nodes())

    def cycle_read(self, ping: bool = True):
        """The agent cycle's whole read: ``(partitions(), node_rows(), job_rows())``, after
        :meth:`ping` when ``ping``, one after the other.  The CLI backend runs its commands
        at once; ``last_read`` (when a backend sets it) holds the seconds of each part."""
        t0 = time.monotonic()
        if ping:
            self.ping()
        parts = self.partitions()
        t1 = time.monotonic()
        nodes = self.node_rows()
        t2 = time.monotonic()
        jobs = self.job_rows()
        t3 = time.monotonic()
        self.last_read = {"ping_partitions": t1 - t0, "nodes": t2 - t1, "jobs": t3 - t2,
                          "read": t3 - t0}
        return parts, nodes, jobs

    @abc.abstractmethod
    def job(self, job_id: int) -> Job:
        """One job by id.

        Raises:
            InvalidJobId: Slurm does not know the id (never existed, or purged).
        """

    def jobs(self, *, states=None, job_ids=None, user: str | None = None,
             partition: str | None = None) -> list[Job]:
        """Jobs filtered client-side (Slurm's JSON output ignores its own filters).

        Args:
            states: keep jobs whose base state is in this collection (e.g. {"PENDING"}).
            job_ids: keep these job ids.
            user: keep this user's jobs.
            partition: keep jobs of this partition.
        """
        states = None if states is None else {s.upper() for s in states}
        ids = None if job_ids is None else {int(j) for j in job_ids}
        return [j for j in self.all_jobs()
                if (states is None or j.state in states)
                and (ids is None or j.job_id in ids)
                and (user is None or j.user == user)
                and (partition is None or j.partition == partition)]

    def pending_jobs(self, **filters) -> list[Job]:
        """Jobs waiting to start, held or not (state PENDING)."""
        return [j for j in self.jobs(**filters) if j.is_pending]

    def running_jobs(self, **filters) -> list[Job]:
        """Jobs holding nodes (running, configuring, completing, suspended)."""
        return [j for j in self.jobs(**filters) if j.is_running]

    def queue_fingerprint(self) -> tuple[tuple[str, str], ...]:
        """A cheap summary of the queue that changes whenever a job arrives, starts or ends:
        the sorted (job id text, state) pairs of the jobs not finished.  Backends override
        it with a cheaper query (the CLI backend: one plain-text ``squeue``)."""
        return tuple(sorted((str(j.job_id), j.state) for j in self.all_jobs()
                            if not j.is_finished))

    def abandon(self) -> None:
        """Stop the Slurm calls in flight in other threads, for an agent that leaves a cycle
        blocked in one (``malleo slurm agent`` stopping): the calls fail or end soon after.
        Here nothing (a call inside libslurm cannot be interrupted; it ends with the
        process); the CLI backend kills the Slurm commands it runs."""

    # --- acting ---------------------------------------------------------------------------

    @abc.abstractmethod
    def set_priority(self, job_id: int, priority: int) -> None:
        """Set a pending job's priority (Slurm refuses it on a held job: JobStateError)."""

    @abc.abstractmethod
    def hold(self, job_id: int) -> None:
        """Hold a pending job (priority 0 until released)."""

    @abc.abstractmethod
    def release(self, job_id: int) -> None:
        """Release a held job."""

    @abc.abstractmethod
    def update_job(self, job_id: int, *, required_nodes=None, num_nodes=None,
                   time_limit: int | None = None) -> None:
        """Change a job's ReqNodeList, node count and/or time limit (only what is given).

        Args:
            required_nodes: node names (list) or host list string; ``[]`` clears it.
            num_nodes: an int n (means exactly n: ``n-n``) or a (min, max) pair.
            time_limit: seconds (Slurm keeps whole minutes, rounding up).

        ReqNodeList and NumNodes apply to pending jobs only (JobStateError otherwise).
        """

    @abc.abstractmethod
    def resize(self, job_id: int, num_nodes: int) -> None:
        """Shrink a running job to ``num_nodes`` nodes (Slurm frees the others)."""

    def job_json(self, job_id: int) -> dict:
        """One job's record from Slurm's structured (JSON) output, as a dict in that Slurm's
        schema (:mod:`~malleo.plugin.backends.parse_json` reads it): for trust decisions
        (the owner's ``user_id``) and the fields the model leaves out (``comment``); the
        reconfiguration endpoint reads jobs through it.

        Raises:
            InvalidJobId: Slurm lists no job with that id.
            SlurmError: Slurm could not be asked.  BackendNotAvailable where the backend
                cannot give it.
        """
        raise BackendNotAvailable(f"the {self.name or type(self).__name__} backend cannot "
                                  f"read a job's JSON record; use the CLI backend")

    def expand(self, job_id: int, more: int, *, timeout: int = 20) -> None:
        """Add ``more`` nodes to running job ``job_id`` (Slurm's expander-job flow: an
        allocation depending on ``expand:job_id`` whose nodes are merged into it; needs
        ``SchedulerParameters=permit_job_expansion``).

        Args:
            timeout: seconds the expander may wait for free nodes before it is withdrawn.

        Raises:
            SlurmError: the expander did not start in time or the merge was refused; the
                job keeps its nodes.  BackendNotAvailable where the backend cannot do it.
        """
        raise BackendNotAvailable(f"the {self.name or type(self).__name__} backend cannot "
                                  f"expand jobs; use the CLI backend")

    @abc.abstractmethod
    def cancel(self, job_id: int) -> None:
        """Cancel a job (pending or running)."""

    @abc.abstractmethod
    def submit(self, *, script: str | None = None, wrap: str | None = None,
               nodes=None, ntasks: int | None = None, time_limit: int | None = None,
               name: str | None = None, partition: str | None = None, hold: bool = False,
               required_nodes=None, output: str | None = None, workdir: str | None = None,
               extra_args=()) -> int:
        """Submit a batch job and return its id.

        Args:
            script: the batch script's text (with ``#!``), or
            wrap: a shell command to wrap in a script (exactly one of script/wrap).
            nodes: node count (int) or (min, max).
            ntasks: number of tasks.
            time_limit: seconds.
            name: job name.
            partition: partition name.
            hold: submit held (priority 0).
            required_nodes: node names or host list (sbatch -w).
            output: stdout/stderr path (Slurm's default: slurm-<id>.out in workdir).
            workdir: working directory of the job.
            extra_args: further sbatch options, passed as they are (CLI backend only).
        """


def _version_prefix(text: str) -> tuple[int, int] | None:
    parts = [p for p in str(text).replace("-", ".").split(".") if p.isdigit()]
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 else None


_FALLBACK_LOGGED: set[str] = set()


def select_backend(conf: str | None = None, kind: str | None = None) -> SlurmBackend:
    """The backend to use for the cluster described by ``conf`` (a slurm.conf path).

    Args:
        conf: slurm.conf path; None uses the environment's SLURM_CONF or Slurm's default.
        kind: "auto" (default), "cli", "libslurm" or "pyslurm"; None reads
            MALLEO_SLURM_BACKEND.

    "auto" returns the pyslurm backend when ``import pyslurm`` works and pyslurm's Slurm
    major.minor equals the running Slurm's (read with ``sinfo --version``); else the libslurm
    backend when it can run here (:func:`libslurm_backend.unavailable_reason`: the site's
    libslurm.so and slurm.h of the running Slurm, a C compiler once, a slurm.conf file); else
    the CLI backend, logging why libslurm could not be used (once per reason and process).

    Raises:
        BackendNotAvailable: kind="pyslurm" or "libslurm" where that backend cannot run.
        ValueError: an unknown kind.
    """
    from malleo.plugin.backends.cli import CliBackend

    kind = (kind or os.environ.get("MALLEO_SLURM_BACKEND") or "auto").lower()
    if kind not in ("auto", "cli", "libslurm", "pyslurm"):
        raise ValueError(f"MALLEO_SLURM_BACKEND/kind {kind!r}: expected auto, cli, libslurm "
                         f"or pyslurm")
    cli = CliBackend(conf=conf)
    if kind == "cli":
        return cli
    if kind == "libslurm":
        from malleo.plugin.backends.libslurm_backend import LibslurmBackend

        return LibslurmBackend(conf=conf, running=cli.version()[:2])
    from malleo.plugin.backends import pyslurm_backend

    running = None
    reason = pyslurm_backend.unavailable_reason()
    if reason is None:
        built_for = _version_prefix(pyslurm_backend.pyslurm_slurm_version())
        running = cli.version()[:2]
        if built_for == running:
            return pyslurm_backend.PyslurmBackend(conf=conf)
        reason = (f"pyslurm was built for Slurm {built_for[0]}.{built_for[1]:02d} but the "
                  f"cluster runs {running[0]}.{running[1]:02d}" if built_for else
                  "pyslurm does not report its Slurm version")
    if kind == "pyslurm":
        raise BackendNotAvailable(f"the pyslurm backend cannot be used: {reason}")
    from malleo.plugin.backends import libslurm_backend

    try:
        running = running or cli.version()[:2]
    except SlurmError as exc:          # no sinfo: the CLI backend reports it on first use
        why = f"the running Slurm's version is unknown ({exc})"
    else:
        why = libslurm_backend.unavailable_reason(conf, running)
    if why is None:
        try:
            return libslurm_backend.LibslurmBackend(conf=conf, running=running)
        except BackendNotAvailable as exc:
            why = str(exc)
    if why not in _FALLBACK_LOGGED:
        _FALLBACK_LOGGED.add(why)
        logging.getLogger("malleo.plugin.backends").warning(
            "reading Slurm through its commands (slower than libslurm): %s", why)
    cli.libslurm_unavailable = why
    return cli
