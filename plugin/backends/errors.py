"""Typed errors for everything that can go wrong talking to Slurm.

Every failure of a Slurm command or RPC becomes one of these, carrying Slurm's own message
(``str(exc)`` starts with it) so logs say what Slurm said, not what malleo guessed::

    SlurmError                      base; a MalleoError, so the CLI prints one line (exit 1)
    ├── SlurmUnavailable            controller unreachable, commands missing, bad SLURM_CONF
    ├── SlurmCommandError           Slurm refused the request (.command, .message, .returncode)
    │   ├── InvalidJobId            no such job (never existed, or purged after MinJobAge)
    │   ├── JobStateError           the job's state forbids it (held, no longer pending, done)
    │   ├── InvalidRequest          bad node name, partition, time limit, option
    │   └── PermissionDenied        the caller may not do this (not the owner, not an admin)
    ├── SlurmParseError             output malleo cannot read (unknown schema or format)
    └── BackendNotAvailable         a backend was asked for by name but cannot run here
"""
from malleo.errors import MalleoError


class SlurmError(MalleoError):
    """Base of every Slurm-side failure; the CLI prints it on one line and exits with status 1."""

    exit_code = 1


class SlurmUnavailable(SlurmError):
    """Slurm cannot be reached: controller down or unreachable, commands or config missing."""


class SlurmConfigError(SlurmUnavailable):
    """Slurm's commands cannot parse slurm.conf ("Parse error in file F line N", "Unable to
    process configuration file").  An outage like any other once the agent runs (an operator
    may be editing the file), but bad input at start: the agent and ``malleo slurm status``
    refuse to start on it (exit 2, naming the file and Slurm's first complaint)."""


def config_refusal(exc: SlurmError, conf: str | None) -> str:
    """The bad-input message for a slurm.conf Slurm cannot parse: the file (``conf``, else
    SLURM_CONF, else Slurm's default) and Slurm's first complaint (:func:`config_complaint`)."""
    import os

    conf = conf or os.environ.get("SLURM_CONF") or "(Slurm's default)"
    return f"slurm.conf {conf}: Slurm cannot read it: {config_complaint(exc)}"


def config_complaint(exc: SlurmError, limit: int = 400) -> str:
    """Slurm's first complaint about slurm.conf in ``exc`` on one line, at most ``limit``
    characters: the "Parse error in file F line N: ..." message with its program prefix
    when there is one, else the whole message."""
    import re

    flat = " ".join(str(exc).split())
    found = re.search(r"(\S+: error: )?parse error in file .*?(?= \S+: (?:error|fatal):|$)",
                      flat, re.IGNORECASE)
    return (found.group(0) if found else flat)[:limit]


class SlurmCommandError(SlurmError):
    """A Slurm command or RPC refused the request.

    Attributes:
        command: the argv that failed (for the pyslurm backend, the RPC name).
        message: Slurm's own error text, stripped.
        returncode: the command's exit status (None for RPCs and for errors Slurm reported
            on stderr with status 0, as scancel does).
    """

    def __init__(self, message: str, command: list[str] | None = None,
                 returncode: int | None = None):
        self.message = message.strip()
        self.command = list(command or [])
        self.returncode = returncode
        where = f" ({' '.join(self.command)})" if self.command else ""
        super().__init__(f"{self.message}{where}")


class InvalidJobId(SlurmCommandError):
    """Slurm does not know the job id."""


class JobStateError(SlurmCommandError):
    """The job exists but its state forbids the request (e.g. updating a running job's ReqNodeList,
    setting the priority of a held job, acting on a finished job)."""


class InvalidRequest(SlurmCommandError):
    """Slurm rejected a value: unknown node or partition, bad time limit, unknown option."""


class PermissionDenied(SlurmCommandError):
    """The caller lacks the privilege (only the owner or an operator may do this)."""


class SlurmParseError(SlurmError):
    """Slurm answered in a shape malleo cannot read; the message names the field and source."""


class BackendNotAvailable(SlurmError):
    """A backend named explicitly (e.g. MALLEO_SLURM_BACKEND=pyslurm) cannot be used here."""


# Substrings of Slurm's messages, most specific first: (substring, class).
_PATTERNS: tuple[tuple[str, type[SlurmError]], ...] = (
    ("invalid job id", InvalidJobId),
    ("unable to contact slurm controller", SlurmUnavailable),
    ("connection refused", SlurmUnavailable),
    ("socket timed out", SlurmUnavailable),
    ("communication connection failure", SlurmUnavailable),
    ("zero bytes were transmitted", SlurmUnavailable),
    ("could not open configuration file", SlurmUnavailable),   # gone (NFS, an edit): wait
    ("cannot stat file", SlurmUnavailable),
    ("parse error in file", SlurmConfigError),
    ("unable to process configuration file", SlurmConfigError),
    ("munge", SlurmUnavailable),
    ("access/permission denied", PermissionDenied),
    ("permission denied", PermissionDenied),
    ("no longer pending", JobStateError),
    ("already completing or completed", JobStateError),
    ("job has already finished", JobStateError),
    ("held state", JobStateError),
    ("job is pending execution", JobStateError),
    ("presently disabled", JobStateError),
    ("invalid node name", InvalidRequest),
    ("invalid partition", InvalidRequest),
    ("invalid timelimit", InvalidRequest),
    ("invalid time limit", InvalidRequest),
    ("requested node configuration is not available", InvalidRequest),
    ("node count specification invalid", InvalidRequest),
    ("invalid numnodes", InvalidRequest),
    ("unrecognized option", InvalidRequest),
    ("invalid option", InvalidRequest),
    ("invalid argument", InvalidRequest),
)


def classify(message: str, command: list[str] | None = None,
             returncode: int | None = None) -> SlurmError | None:
    """The typed error for a Slurm message, or None when no known pattern matches.

    Callers decide what an unknown message means (the CLI backend pings the controller:
    unreachable -> SlurmUnavailable, else SlurmCommandError).
    """
    lowered = message.lower()
    for needle, cls in _PATTERNS:
        if needle in lowered:
            if issubclass(cls, SlurmCommandError):
                return cls(message, command, returncode)
            where = f" ({' '.join(command)})" if command else ""
            return cls(f"{message.strip()}{where}")
    return None
