"""The CLI/JSON backend: Slurm's own commands, which exist wherever Slurm does.

Reads with ``squeue --json`` (jobs), ``sinfo -N --json`` (nodes), ``scontrol show partition -o``
and ``scontrol show job -o`` (partitions, one job), and one job's structured record with
``scontrol --json show job`` (23.02 on) or ``squeue --json``; acts with ``scontrol update|hold|release``,
``scancel`` and ``sbatch --parsable``. Each command runs with ``SLURM_CONF`` set to the
backend's ``conf`` (when given) and a timeout; every failure becomes a typed SlurmError with
Slurm's message. A message no pattern recognises is checked against ``scontrol ping``: a
controller that does not answer makes it SlurmUnavailable.
"""
import json
import math
import os
import re
import subprocess
import tempfile
import threading
import time

import orjson

from malleo.plugin.backends import SlurmBackend, columns, hostlist, parse_json, parse_scontrol
from malleo.plugin.backends.errors import (
    InvalidJobId, SlurmCommandError, SlurmError, SlurmParseError, SlurmUnavailable, classify)
from malleo.plugin.backends.model import FINISHED_STATES, Job, Node, Partition


def slurm_duration(seconds: int) -> str:
    """``D-HH:MM:SS`` for a positive number of seconds, rounded up to whole minutes (Slurm's unit)."""
    if seconds <= 0:
        raise ValueError(f"time limit {seconds} s: must be positive")
    minutes = math.ceil(seconds / 60)
    d, rem = divmod(minutes, 24 * 60)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00"


def _node_range(num_nodes) -> str:
    if isinstance(num_nodes, (tuple, list)):
        lo, hi = num_nodes
    else:
        lo = hi = int(num_nodes)
    if not 1 <= lo <= hi:
        raise ValueError(f"node count {num_nodes!r}: need 1 <= min <= max")
    return f"{lo}-{hi}"


def _hostlist_arg(nodes) -> str:
    return nodes if isinstance(nodes, str) else hostlist.compress(nodes)


READS = ("compact", "json")
"""The cycle's read modes (``CliBackend(read=...)``, ``MALLEO_SLURM_READ``)."""


class CliBackend(SlurmBackend):
    """Slurm through its command-line tools.

    Args:
        conf: slurm.conf to use (sets SLURM_CONF for every command); None inherits the
            environment's.
        timeout: seconds before a command counts as hung (SlurmUnavailable).
        read: how the agent's cycle reads the queue and the nodes (:meth:`job_rows`,
            :meth:`node_rows`): "compact" (the default; ``squeue``/``sinfo --Format`` text
            of the fields the plan needs, parsed into columns:
            :mod:`~malleo.plugin.backends.columns`) or "json" (``squeue``/``sinfo --json``,
            as :meth:`all_jobs` and :meth:`nodes` always read); None reads
            ``MALLEO_SLURM_READ``.  Trust decisions read JSON either way (:meth:`job_json`).
    """

    name = "cli"
    #: Why ``select_backend("auto")`` did not pick the libslurm backend (None: not asked).
    libslurm_unavailable: str | None = None

    def __init__(self, conf: str | None = None, timeout: float = 60.0,
                 read: str | None = None):
        read = (read or os.environ.get("MALLEO_SLURM_READ") or "compact").lower()
        if read not in READS:
            raise ValueError(f"MALLEO_SLURM_READ/read {read!r}: expected compact or json")
        self.conf = conf
        self.timeout = timeout
        self.read = read
        self._env = dict(os.environ)
        self._scontrol_json: bool | None = None     # scontrol --json exists (23.02 on)
        self._children: set[subprocess.Popen] = set()      # running commands (abandon)
        self._children_lock = threading.Lock()
        if conf is not None:
            self._env["SLURM_CONF"] = str(conf)

    def __repr__(self) -> str:
        return f"CliBackend(conf={self.conf!r})"

    @property
    def reads_tables(self) -> bool:
        """The compact read gives a JobTable (see :class:`SlurmBackend`)."""
        return self.read == "compact"

    # --- running commands -----------------------------------------------------------------

    def _run(self, argv: list[str], stdin: str | None = None, check_stderr: bool = False,
             in_scratch: bool = False, env: dict | None = None, text: bool = True):
        """Run a Slurm command and return its stdout; raise a typed SlurmError on failure.

        ``check_stderr`` treats an ``error:`` line on stderr as failure even with exit 0
        (scancel reports unknown jobs that way). ``in_scratch`` runs it in a private temporary
        directory, removed afterwards: for commands that drop files into their working
        directory (``scontrol update NumNodes=`` writes ``slurm_job_<id>_resize.sh/.csh``).
        ``env``: variables added to the command's environment; ``text=False`` returns
        stdout as bytes (the compact reads parse bytes).
        """
        if in_scratch:
            with tempfile.TemporaryDirectory(prefix="malleo-scontrol-") as scratch:
                return self._run_in(argv, stdin, check_stderr, scratch, env, text)
        return self._run_in(argv, stdin, check_stderr, None, env, text)

    def _run_in(self, argv: list[str], stdin: str | None, check_stderr: bool,
                cwd: str | None, env: dict | None = None, text: bool = True):
        proc = self._spawn(argv, stdin=subprocess.PIPE if stdin is not None else None,
                           env=env, cwd=cwd, text=text)
        try:
            out, err = proc.communicate(stdin, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"{' '.join(argv)}: no answer within {self.timeout:g} s") from None
        finally:
            self._reap(proc)
        return self._checked(argv, proc.returncode, out, err, check_stderr, text)

    def _spawn(self, argv: list[str], *, stdin=subprocess.DEVNULL, env: dict | None = None,
               cwd: str | None = None, text: bool = False) -> subprocess.Popen:
        """Start a Slurm command (output captured), registered for :meth:`abandon` until
        :meth:`_reap`."""
        try:
            proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=text, cwd=cwd,
                                    env={**self._env, **env} if env else self._env)
        except FileNotFoundError:
            raise SlurmUnavailable(f"{argv[0]} not found: is Slurm's client installed "
                                   f"(slurm-client) and on PATH?") from None
        with self._children_lock:
            self._children.add(proc)
        return proc

    def _reap(self, proc: subprocess.Popen) -> None:
        """Forget ``proc``; kill it first if it still runs (a timeout, an exception)."""
        with self._children_lock:
            self._children.discard(proc)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    def abandon(self) -> None:
        """Kill the Slurm commands running now (SIGKILL): their callers get SlurmError.
        A killed ``scontrol update`` was applied by slurmctld or not at all."""
        with self._children_lock:
            running = list(self._children)
        for proc in running:
            if proc.poll() is None:
                proc.kill()

    def _checked(self, argv: list[str], returncode: int, out, err, check_stderr: bool = False,
                 text: bool = True):
        """``out`` when the command succeeded, else the typed SlurmError raised."""
        err = (err if text else err.decode("utf-8", "replace")).strip()
        if returncode != 0 or (check_stderr and "error:" in err):
            out = out if text else out.decode("utf-8", "replace")
            raise self._error(err or out.strip() or f"exit status {returncode}", argv,
                              returncode)
        return out

    def _start(self, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        """Start a read-only command whose output :meth:`_collect` reads (bytes)."""
        return self._spawn(argv, env=env)

    def _collect(self, proc: subprocess.Popen, deadline: float) -> bytes:
        """The stdout of a command :meth:`_start` started, as :meth:`_run` checks it."""
        try:
            out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"{' '.join(proc.args)}: no answer within "
                                   f"{self.timeout:g} s") from None
        finally:
            self._reap(proc)
        return self._checked(list(proc.args), proc.returncode, out, err, text=False)

    def _error(self, message: str, argv: list[str], returncode: int | None) -> SlurmError:
        known = classify(message, argv, returncode)
        if known is not None:
            return known
        if argv[:2] != ["scontrol", "ping"] and not self._controller_answers():
            return SlurmUnavailable(f"{message} ({' '.join(argv)}); slurmctld does not answer "
                                    f"'scontrol ping'")
        return SlurmCommandError(message, argv, returncode)

    def _controller_answers(self) -> bool:
        """Whether ``scontrol ping`` reports the controller UP (never raises)."""
        try:
            self.ping()
        except (OSError, SlurmError):
            return False
        return True

    def _json(self, argv: list[str]) -> dict:
        out = self._run(argv)
        try:
            doc = orjson.loads(out)          # issue 16: 3.8 MB of squeue --json in ~25 ms
        except orjson.JSONDecodeError as exc:
            raise SlurmParseError(f"{' '.join(argv)}: output is not JSON ({exc})") from None
        problems = parse_json.errors(doc)
        if problems:
            # squeue/sinfo --json exit 0 and list errors in the document (22.05 says only
            # "Unspecified error" when the controller is unreachable).
            raise self._error("; ".join(problems), argv, 0)
        return doc

    # --- reading ------------------------------------------------------------------------------

    def version(self) -> tuple[int, int, int]:
        """(major, minor, micro) from ``sinfo --version`` (``slurm-wlm 22.05.8``, ``slurm 24.11.5``)."""
        out = self._run(["sinfo", "--version"]).split()
        nums = out[-1].split("-")[0].split(".") if out else []
        try:
            return int(nums[0]), int(nums[1]), int(nums[2]) if len(nums) > 2 else 0
        except (IndexError, ValueError):
            raise SlurmParseError(f"sinfo --version: cannot read {' '.join(out)!r}") from None

    def ping(self) -> None:
        """Raise SlurmUnavailable unless ``scontrol ping`` reports the controller UP."""
        try:
            out = self._run(["scontrol", "ping"])
        except SlurmCommandError as exc:
            raise SlurmUnavailable(exc.message) from None
        if " is UP" not in out:
            raise SlurmUnavailable(out.strip() or "scontrol ping: no controller is UP")

    def _typed_json(self, argv: list[str], decode):
        """Run ``argv`` and decode its JSON into typed records (``decode``: issue 16);
        the document's own ``errors`` raise as a failed command would."""
        doc = decode(self._run(argv))
        problems = parse_json.errors(doc)
        if problems:
            raise self._error("; ".join(problems), argv, 0)
        return doc

    def nodes(self) -> list[Node]:
        doc = self._typed_json(["sinfo", "-N", "--json"], parse_json.decode_sinfo)
        return parse_json.nodes_from_sinfo(doc)

    def partitions(self) -> list[Partition]:
        out = self._run(["scontrol", "show", "partition", "-o"])
        return [parse_scontrol.partition(r) for r in parse_scontrol.records(out)]

    def all_jobs(self) -> list[Job]:
        # --states=all: 24.11's squeue --json applies squeue's default state filter and leaves
        # out finished jobs (22.05 listed every job and ignores the option).
        doc = self._typed_json(["squeue", "--json", "--states=all"], parse_json.decode_squeue)
        return parse_json.jobs_from_squeue(doc)

    def job_rows(self):
        """The cycle's read of every job: with ``read="compact"`` one
        ``squeue --noheader --all --states=all --Format=...`` (about 110 bytes a job, times
        as epoch seconds) parsed into a :class:`~malleo.plugin.backends.columns.JobTable`;
        with ``read="json"`` :meth:`all_jobs`."""
        if self.read == "json":
            return tuple(self.all_jobs())
        argv = columns.squeue_argv()
        return columns.parse_squeue(self._run(argv, env=columns.TIME_ENV, text=False),
                                    command="squeue --Format")

    def node_rows(self):
        """The cycle's read of every node: with ``read="compact"`` one
        ``sinfo --noheader --all --Format=...`` (one line per group of alike nodes) parsed into a
        :class:`~malleo.plugin.backends.columns.NodeTable`; with ``read="json"`` :meth:`nodes`."""
        if self.read == "json":
            return tuple(self.nodes())
        return columns.parse_sinfo(self._run(columns.sinfo_argv(), text=False),
                                   command="sinfo --Format")

    def cycle_read(self, ping: bool = True):
        """The agent cycle's whole read: ``(partitions, node_rows(), job_rows())``, after
        :meth:`ping` when ``ping``.

        With ``read="compact"`` the four commands (``scontrol ping``, ``scontrol show
        partition -o``, the compact sinfo and squeue) run at once, each its own process, and
        their outputs are parsed as they arrive (the partitions and nodes while squeue still
        runs): the read costs about the longest of them (squeue at 10,000 jobs) instead of
        their sum.  The ping is awaited first: an unreachable controller raises
        SlurmUnavailable at once, the other commands killed, as a ping before the reads
        did.  ``self.last_read`` holds the wall seconds of each part (``ping``,
        ``partitions``, ``sinfo``, ``squeue``: start to exit; ``parse_sinfo``,
        ``parse_squeue``; ``read``: the whole), for bench/live_cycle.py and the cycle's log.

        Raises:
            SlurmError: as the commands run one by one would (the first failure).
        """
        if self.read != "compact":
            return super().cycle_read(ping)
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        times: dict[str, float] = {}
        started: dict[str, subprocess.Popen] = {}
        try:
            if ping:
                started["ping"] = self._start(["scontrol", "ping"])
            started["partitions"] = self._start(["scontrol", "show", "partition", "-o"])
            started["sinfo"] = self._start(columns.sinfo_argv())
            started["squeue"] = self._start(columns.squeue_argv(), env=columns.TIME_ENV)

            def collect(name: str) -> bytes:
                out = self._collect(started.pop(name), deadline)
                times[name] = time.monotonic() - t0
                return out

            if ping:
                answer = collect("ping").decode("utf-8", "replace")
                if " is UP" not in answer:
                    raise SlurmUnavailable(answer.strip() or "scontrol ping: no controller is UP")
            text = collect("partitions").decode("utf-8", "replace")
            parts = [parse_scontrol.partition(r) for r in parse_scontrol.records(text)]
            out = collect("sinfo")
            t1 = time.monotonic()
            nodes = columns.parse_sinfo(out, command="sinfo --Format")
            times["parse_sinfo"] = time.monotonic() - t1
            out = collect("squeue")
            t1 = time.monotonic()
            jobs = columns.parse_squeue(out, command="squeue --Format")
            times["parse_squeue"] = time.monotonic() - t1
        except SlurmCommandError as exc:
            if exc.command[:2] == ["scontrol", "ping"]:
                raise SlurmUnavailable(exc.message) from None
            raise
        finally:
            for proc in started.values():       # after a failure: stop the others
                self._reap(proc)
        times["read"] = time.monotonic() - t0
        self.last_read = times
        return parts, nodes, jobs

    def job(self, job_id: int) -> Job:
        out = self._run(["scontrol", "show", "job", "-o", str(int(job_id))])
        recs = parse_scontrol.records(out)
        if not recs:
            raise SlurmParseError(f"scontrol show job {job_id}: empty output")
        return parse_scontrol.job(recs[0])

    def job_json(self, job_id: int) -> dict:
        """One job's record from Slurm's structured (JSON) output, as a dict in that Slurm's
        schema (:mod:`~malleo.plugin.backends.parse_json` reads both).

        For trust decisions and the fields the model leaves out (``comment``): the owner
        (``user_id``) is a field of its own here, while ``scontrol show job -o`` is free text in
        which a comment or a path can imitate other keys. ``scontrol --json show job J`` from
        Slurm 23.02 on; before (22.05 has no ``scontrol --json``, and its ``squeue --json``
        ignores ``-j``) ``squeue --json`` filtered on the job id client-side.

        Raises:
            InvalidJobId: Slurm lists no job with that id.
            SlurmParseError: the output is not a job list, or lists the id twice.
            SlurmError: Slurm could not be asked.
        """
        job_id = int(job_id)
        if self._scontrol_json is None:
            self._scontrol_json = self.version() >= (23, 2, 0)
        argv = (["scontrol", "--json", "show", "job", str(job_id)] if self._scontrol_json
                else ["squeue", "--json", "--states=all"])
        recs = self._json(argv).get("jobs")
        if not isinstance(recs, list):
            raise SlurmParseError(f"{' '.join(argv)}: no 'jobs' list in the document")
        found = [r for r in recs if isinstance(r, dict) and type(r.get("job_id")) is int
                 and r["job_id"] == job_id]
        if not found:
            raise InvalidJobId(f"job {job_id} is not in Slurm's job list", argv, 0)
        if len(found) > 1:
            raise SlurmParseError(f"{' '.join(argv)}: job {job_id} listed {len(found)} times")
        return found[0]

    def node(self, name: str) -> Node:
        """One node by name, from ``scontrol show node -o``."""
        recs = parse_scontrol.records(self._run(["scontrol", "show", "node", "-o", name]))
        if not recs:
            raise SlurmParseError(f"scontrol show node {name}: empty output")
        return parse_scontrol.node(recs[0])

    def queue_fingerprint(self) -> tuple:
        """One plain-text squeue (much cheaper than ``squeue --json`` on long queues); see
        :meth:`SlurmBackend.queue_fingerprint`.  With ``read="compact"`` the ids and states
        as a digest (:func:`columns.fingerprint`, equal to :meth:`JobTable.fingerprint` of
        the same queue); else ``--format=%i|%T`` pairs."""
        if self.read == "compact":
            return columns.parse_fingerprint(self._run(columns.fingerprint_argv(), text=False))
        out = self._run(["squeue", "--noheader", "--all", "--format=%i|%T"])
        pairs = []
        for line in out.splitlines():
            jid, _, state = line.strip().partition("|")
            if jid and state not in FINISHED_STATES:
                pairs.append((jid, state))
        return tuple(sorted(pairs))

    # --- acting ----------------------------------------------------------------------------

    def _update(self, job_id: int, **fields: str) -> None:
        argv = ["scontrol", "update", f"JobId={int(job_id)}"]
        argv += [f"{k}={v}" for k, v in fields.items()]
        self._run(argv, in_scratch="NumNodes" in fields)

    def set_priority(self, job_id: int, priority: int) -> None:
        if priority < 0:
            raise ValueError(f"priority {priority}: must be >= 0")
        self._update(job_id, Priority=str(int(priority)))

    def hold(self, job_id: int) -> None:
        self._run(["scontrol", "hold", str(int(job_id))])

    def release(self, job_id: int) -> None:
        self._run(["scontrol", "release", str(int(job_id))])

    def update_job(self, job_id: int, *, required_nodes=None, num_nodes=None,
                   time_limit: int | None = None) -> None:
        fields: dict[str, str] = {}
        if required_nodes is not None:
            fields["ReqNodeList"] = _hostlist_arg(required_nodes)
        if num_nodes is not None:
            # Slurm refuses a plain count for pending jobs ("NumNodes=3"); a range works.
            fields["NumNodes"] = _node_range(num_nodes)
        if time_limit is not None:
            fields["TimeLimit"] = slurm_duration(time_limit)
        if not fields:
            raise ValueError("update_job: nothing to change")
        self._update(job_id, **fields)

    def resize(self, job_id: int, num_nodes: int) -> None:
        if num_nodes < 1:
            raise ValueError(f"resize to {num_nodes} nodes: need at least 1")
        # On a running job a plain count shrinks it (a range is refused there).
        self._update(job_id, NumNodes=str(int(num_nodes)))

    def expand(self, job_id: int, more: int, *, timeout: int = 20) -> None:
        """``salloc --no-shell -N more --dependency=expand:J --immediate=timeout``, then
        ``scontrol update JobId=B NumNodes=0`` hands the expander B's nodes to J and B is
        cancelled.  If B does not start in time, any expander of J left queued is cancelled."""
        if more < 1:
            raise ValueError(f"expand by {more} nodes: need at least 1")
        job = self.job(job_id)
        argv = ["salloc", "--no-shell", f"--nodes={int(more)}",
                f"--dependency=expand:{int(job_id)}", f"--immediate={int(timeout)}",
                f"--job-name=malleo-expand-{int(job_id)}"]
        if job.partition:
            argv.append(f"--partition={job.partition}")
        if job.time_limit is not None:
            argv.append("--time=" + slurm_duration(job.time_limit))
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, env=self._env,
                                  timeout=timeout + self.timeout)
            out = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            proc, out = None, f"salloc: no answer within {timeout + self.timeout:g} s"
        match = re.search(r"Granted job allocation (\d+)", out)
        if proc is None or proc.returncode != 0 or match is None:
            self._run(["scancel", f"--name=malleo-expand-{int(job_id)}"])
            last = out.strip().splitlines()[-1] if out.strip() else "no output"
            noun = "node" if more == 1 else "nodes"
            raise SlurmCommandError(f"expander for job {job_id} (+{more} {noun}) did not start "
                                    f"within {timeout} s: {last}", argv,
                                    proc.returncode if proc else None)
        expander = int(match.group(1))
        try:
            self._update(expander, NumNodes="0")
        finally:
            try:
                self._run(["scancel", str(expander)])
            except SlurmError:
                pass            # an expander emptied by the merge may already be gone

    def cancel(self, job_id: int) -> None:
        # scancel exits 0 for unknown ids; -v makes it print the error, which _run checks.
        self._run(["scancel", "-v", str(int(job_id))], check_stderr=True)

    def submit(self, *, script: str | None = None, wrap: str | None = None,
               nodes=None, ntasks: int | None = None, time_limit: int | None = None,
               name: str | None = None, partition: str | None = None, hold: bool = False,
               required_nodes=None, output: str | None = None, workdir: str | None = None,
               extra_args=()) -> int:
        if (script is None) == (wrap is None):
            raise ValueError("submit: give exactly one of script= and wrap=")
        argv = ["sbatch", "--parsable"]
        if nodes is not None:
            argv.append("--nodes=" + (_node_range(nodes) if isinstance(nodes, (tuple, list))
                                      else str(int(nodes))))
        if ntasks is not None:
            argv.append(f"--ntasks={int(ntasks)}")
        if time_limit is not None:
            argv.append("--time=" + slurm_duration(time_limit))
        if name is not None:
            argv.append(f"--job-name={name}")
        if partition is not None:
            argv.append(f"--partition={partition}")
        if hold:
            argv.append("--hold")
        if required_nodes is not None:
            argv.append("--nodelist=" + _hostlist_arg(required_nodes))
        if output is not None:
            argv.append(f"--output={output}")
        if workdir is not None:
            argv.append(f"--chdir={workdir}")
        argv += list(extra_args)
        if wrap is not None:
            argv.append(f"--wrap={wrap}")
        out = self._run(argv, stdin=script)
        # --parsable prints "<id>" or "<id>;<cluster>".
        first = out.strip().split(";")[0]
        if not first.isdigit():
            raise SlurmParseError(f"sbatch --parsable printed {out.strip()!r}, not a job id")
        return int(first)
