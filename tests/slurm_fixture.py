"""The real local Slurm for ``slurm``-marked tests: one cluster per pytest session.

``slurm_cluster`` uses the cluster named by ``SLURM_CONF`` when ``scontrol ping`` reports it UP;
otherwise it starts one with ``slurm-docker/local-slurm.sh up`` in a private temporary
directory (16 nodes) and stops it with ``down`` at the end of the session.  A session killed
without its teardown (SIGKILL, a CI time-out) leaves its cluster running: each session first
stops the clusters of dead sessions (:func:`sweep_stale_clusters`; their directories record the
owning pytest's PID and start time).

Without root or without Slurm's binaries the slurm tests skip with the reason, unless
``MALLEO_REQUIRE_SLURM=1`` (set by tests/run-suite.sh when it runs as root, i.e. under
``make test`` in CI): then they fail, so a CI machine cannot silently skip them. A cluster
that should start but does not is always a failure.

Which Slurm, which backend:
- ``MALLEO_SLURM_PREFIX=DIR`` (``make test-slurm-25.11``): the Slurm installed under DIR
  (slurm-docker/build-slurm.sh) instead of the one on PATH. DIR/bin and DIR/sbin go first on
  this process's PATH when this module is imported, so the tests' own ``srun``/``sbatch`` calls,
  the CLI backend and ``local-slurm.sh up`` (which gets ``--prefix DIR``) all use it.
- ``MALLEO_SLURM_BACKEND=cli|libslurm|pyslurm`` (default cli): the backend ``SlurmCluster.backend``
  returns, through :func:`malleo.plugin.backends.select_backend` (which the ``malleo slurm``
  commands also read): the same slurm-marked tests run once per backend.
"""
import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "slurm-docker" / "local-slurm.sh"
NODES = 16
SLURM_PREFIX = os.environ.get("MALLEO_SLURM_PREFIX") or None
if SLURM_PREFIX:
    os.environ["PATH"] = os.pathsep.join(
        [str(Path(SLURM_PREFIX) / "bin"), str(Path(SLURM_PREFIX) / "sbin"), os.environ.get("PATH", "")])
BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "scontrol", "sinfo", "squeue",
            "sbatch", "scancel")


@dataclasses.dataclass
class SlurmCluster:
    """A live cluster: its slurm.conf, a CLI backend on it, and its node names."""

    conf: str
    started_here: bool
    directory: str | None = None

    @property
    def backend(self):
        """The backend MALLEO_SLURM_BACKEND names (default cli); a pyslurm that cannot run fails."""
        from malleo.plugin.backends import select_backend

        return select_backend(conf=self.conf,
                              kind=os.environ.get("MALLEO_SLURM_BACKEND") or "cli")

    @property
    def node_names(self) -> list[str]:
        return sorted((n.name for n in self.backend.nodes()),
                      key=lambda s: (len(s), s))


def _answers(conf: str) -> bool:
    try:
        proc = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20,
                              env=dict(os.environ, SLURM_CONF=conf))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and " is UP" in proc.stdout


OWNER_FILE = "malleo-owner"
"""In a cluster's directory: "PID START PREFIX" of the pytest session that started it (START:
the process's start time in clock ticks, /proc/PID/stat field 22, so a reused PID is told
apart; PREFIX: its MALLEO_SLURM_PREFIX or "-")."""


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


CLUSTER_PREFIXES = ("malleo-slurm-", "malleo-twin-")
"""Names of the temporary directories test clusters live in (the session's, the twin's)."""


def cluster_tempdir(prefix: str = "malleo-slurm-") -> str:
    """A new private temporary directory for a test cluster, its owner recorded (the
    calling process; :data:`OWNER_FILE`) so a later session can stop the cluster if this one
    dies without its teardown."""
    assert prefix in CLUSTER_PREFIXES, prefix
    directory = tempfile.mkdtemp(prefix=prefix)
    with open(os.path.join(directory, OWNER_FILE), "x", encoding="utf-8") as owner:
        owner.write(f"{os.getpid()} {_start_ticks(os.getpid())} {SLURM_PREFIX or '-'}\n")
    return directory


def cluster_down(directory: str, prefix: list[str] | tuple = ()) -> None:
    """Stop the test cluster in ``directory`` (``local-slurm.sh down``, with ``prefix``: its
    ``--prefix PATH`` arguments, if any) and remove the directory with its owner record."""
    subprocess.run(["bash", str(SCRIPT), "down", "--dir", directory, *prefix],
                   capture_output=True, text=True, timeout=180)
    shutil.rmtree(directory, ignore_errors=True)


def sweep_stale_clusters(tmp: str | None = None) -> list[str]:
    """Stop and remove the clusters this user's dead pytest sessions left in ``tmp`` (default
    the temporary directory); returns their directories.  Only directories named for
    :data:`CLUSTER_PREFIXES`, owned by this user, not links, holding an owner record whose
    process is gone (or is another process with that PID) are touched."""
    tmp = tmp or tempfile.gettempdir()
    swept = []
    entries = sorted(e for prefix in CLUSTER_PREFIXES for e in Path(tmp).glob(prefix + "*"))
    for entry in entries:
        try:
            info = entry.lstat()
            if not entry.is_dir() or entry.is_symlink() or info.st_uid != os.geteuid():
                continue
            fd = os.open(entry / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, encoding="utf-8") as owner:
                pid_text, start, prefix = owner.read(4096).split()[:3]
            pid = int(pid_text)
        except (OSError, ValueError):
            continue
        if _start_ticks(pid) == start:
            continue                                          # its session still runs
        extra = [] if prefix == "-" else ["--prefix", prefix]
        cluster_down(str(entry), extra)
        swept.append(str(entry))
    return swept


def _why_not_startable() -> str | None:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return ("Slurm is not installed here (missing " + ", ".join(missing)
                + "): run 'sudo bash slurm-docker/install-deps.sh'")
    if os.geteuid() != 0:
        return "starting the local Slurm needs root (munged and slurmd run as root)"
    return None


@pytest.fixture(scope="session")
def slurm_cluster():
    """The session's live Slurm (see the module docstring for where it comes from)."""
    conf = os.environ.get("SLURM_CONF")
    if conf and _answers(conf):
        yield SlurmCluster(conf=conf, started_here=False)
        return
    reason = _why_not_startable()
    if reason is not None:
        if os.environ.get("MALLEO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MALLEO_REQUIRE_SLURM=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    for stale in sweep_stale_clusters():
        print(f"slurm_fixture: stopped the cluster a dead pytest session left in {stale}")
    directory = cluster_tempdir()
    prefix = ["--prefix", SLURM_PREFIX] if SLURM_PREFIX else []
    proc = subprocess.run(["bash", str(SCRIPT), "up", "--nodes", str(NODES), "--dir", directory,
                           *prefix], capture_output=True, text=True, timeout=180)
    exports = [line for line in proc.stdout.splitlines() if line.startswith("export SLURM_CONF=")]
    if proc.returncode != 0 or not exports:
        cluster_down(directory, prefix)
        pytest.fail(f"local-slurm.sh up failed (exit {proc.returncode}):\n{proc.stderr}",
                    pytrace=False)
    cluster = SlurmCluster(conf=exports[-1].split("=", 1)[1], started_here=True,
                           directory=directory)
    try:
        yield cluster
    finally:
        cluster_down(directory, prefix)


@pytest.fixture
def slurm_jobs(slurm_cluster):
    """A list the test appends its job ids to; every one still known is cancelled afterwards."""
    from malleo.plugin.backends.errors import SlurmError

    ids: list[int] = []
    yield ids
    backend = slurm_cluster.backend
    cancelled = []
    for job_id in ids:
        try:
            if not backend.job(job_id).is_finished:
                backend.cancel(job_id)
                cancelled.append(job_id)
        except SlurmError:
            pass
    if cancelled:
        wait_released(backend, cancelled, timeout=60.0)


def wait_released(backend, ids: list[int], timeout: float) -> bool:
    """Wait (at most ``timeout`` seconds) until the cancelled jobs ended and no node is still
    COMPLETING: scancel returns before Slurm released the nodes, and under load the next test
    would find them busy.  True when released, False on the timeout."""
    from malleo.plugin.backends.errors import SlurmError

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if (all(backend.job(job_id).is_finished for job_id in ids)
                    and not any(n.state == "COMPLETING" or "COMPLETING" in n.flags
                                for n in backend.nodes())):
                return True
        except SlurmError:
            return True
        time.sleep(0.3)
    return False
