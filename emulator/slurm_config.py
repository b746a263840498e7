"""A Slurm site's scheduling configuration -> the malleo :class:`~malleo.policy.Policy` that
mirrors it (``malleo policy from-slurm``; the rules are in docs/scheduling-semantics.md,
"Slurm's own scheduler").

Inputs, each read with the file and line of every value so errors say ``FILE:LINE: Key: ...``:

* the configuration: a ``slurm.conf`` (``Key=Value`` lines, ``#`` comments, ``NodeName`` and
  ``PartitionName`` lines) or the output of ``scontrol show config`` (``Key = Value`` lines);
* optionally the partitions, as ``scontrol show partition -o`` output (one partition a line);
* optionally the QOS priorities, as ``sacctmgr -nP show qos format=Name,Priority`` output;
* optionally ``sprio -w`` output (the weights the controller really uses; they win over the
  configuration's and a difference is reported).

What the emulator models (the rest is listed, never dropped: :attr:`Imported.unmodelled` for
scheduling settings, :attr:`Imported.ignored` for the settings that are not about scheduling):

* ``SchedulerType``: sched/backfill -> ``backfill = "slurm"``, sched/builtin -> ``"none"``;
* ``SchedulerParameters``: bf_window (minutes) -> ``bf_window`` (seconds), bf_resolution
  (seconds), bf_max_job_test; ``bf_rounding = "down"`` (Slurm's own use of bf_resolution);
* ``PriorityType``: priority/multifactor -> ``order = "multifactor"``, priority/basic -> FCFS;
* ``PriorityWeightAge``, ``PriorityMaxAge``, ``PriorityWeightJobSize`` (rescaled, see
  :func:`size_weight`), ``PriorityFavorSmall``, ``PriorityWeightFairshare``,
  ``PriorityDecayHalfLife``, ``PriorityCalcPeriod``, ``PriorityWeightPartition`` with the
  partitions' ``PriorityJobFactor`` (normalised by the largest, as Slurm does) and
  ``PriorityWeightQOS`` with the QOS priorities (normalised likewise).  SWF partition and queue
  numbers are 1..k by sorted name: the numbering ``malleo trace from-sacct`` writes.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from malleo.errors import PolicyError

__all__ = ["Setting", "SlurmConfig", "Imported", "read_config", "read_partitions",
           "read_qos", "read_sprio_weights", "import_policy", "parse_slurm_time",
           "size_weight", "live_inputs"]


@dataclass(frozen=True)
class Setting:
    """One configuration value and where it was read (``line`` 1-based)."""

    key: str
    value: str
    source: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass
class SlurmConfig:
    """A parsed configuration: settings by lower-case key, partitions and node counts.

    Attributes:
        settings: lower-case key -> the last :class:`Setting` of that key.
        partitions: partition name -> its fields (lower-case key -> Setting), file order.
        nodes: nodes declared by ``NodeName`` lines (0: unknown).
        cpus: CPUs of those nodes in all (0: unknown).
        source: the file read.
    """

    settings: dict[str, Setting] = field(default_factory=dict)
    partitions: dict[str, dict[str, Setting]] = field(default_factory=dict)
    nodes: int = 0
    cpus: int = 0
    source: str = ""

    def get(self, key: str) -> Setting | None:
        return self.settings.get(key.lower())


@dataclass
class Imported:
    """What :func:`import_policy` made of a configuration.

    Attributes:
        policy: the mirroring policy.
        used: (setting, what it became) for every setting mapped onto the policy.
        unmodelled: (setting, why) for every scheduling setting malleo does not model.
        ignored: keys of the settings that are not scheduling settings (paths, logging...).
        notes: other facts the user should know (defaults assumed, rescaled weights...).
    """

    policy: object
    used: list[tuple[Setting, str]] = field(default_factory=list)
    unmodelled: list[tuple[Setting, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- parsing

_PAIR = re.compile(r"([A-Za-z][A-Za-z0-9_]*)=((?:\"[^\"]*\"|\S)*)")
_SHOW = re.compile(r"^([A-Za-z][A-Za-z0-9_]*(?:\([^)]*\)|\[[^\]]*\])?)\s+=\s?(.*)$")


def _read_text(path: str | Path, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PolicyError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise PolicyError(f"{path}: {what} is a directory") from None
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PolicyError(f"{path}: {what} is not UTF-8 text ({exc.reason})") from None


def read_config(path: str | Path, text: str | None = None) -> SlurmConfig:
    """Read a ``slurm.conf`` or ``scontrol show config`` output (told apart by their lines).

    Args:
        path: the file (also the name in messages when ``text`` is given).
        text: its contents, if already read (``-`` or a command's output).

    Raises:
        PolicyError: unreadable, or ``FILE:LINE: what is wrong`` for a line that is neither
            form, a ``Include`` line, or a bad ``NodeName`` CPU count.
    """
    source = str(path)
    if text is None:
        text = _read_text(path, "Slurm configuration")
    lines = text.splitlines()
    is_show = any(line.startswith("Configuration data as of") for line in lines[:3]) or (
        sum(1 for line in lines if _SHOW.match(line)) > sum(
            1 for line in lines if re.match(r"^\s*[A-Za-z]\w*=", line)))
    config = SlurmConfig(source=source)
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip() if not is_show else raw.rstrip()
        if not line.strip():
            continue
        if is_show:
            if line.startswith("Configuration data as of") or line.endswith(":") \
                    or " is UP" in line or " is DOWN" in line:
                continue        # headers of scontrol's sections and its ping line
            match = _SHOW.match(line)
            if not match:
                raise PolicyError(f"{source}:{number}: not a 'Key = Value' line of "
                                  f"'scontrol show config': {raw.strip()[:60]!r}")
            key = match.group(1)
            config.settings[key.lower()] = Setting(key, match.group(2).strip(), source, number)
            continue
        pairs = _PAIR.findall(line)
        if not pairs or not re.match(r"^[A-Za-z]\w*=", line):
            if re.match(r"(?i)^include\s", line):
                raise PolicyError(f"{source}:{number}: Include: included files are not "
                                  f"followed; concatenate them or give "
                                  f"'scontrol show config' output")
            raise PolicyError(f"{source}:{number}: not a 'Key=Value' line of slurm.conf: "
                              f"{raw.strip()[:60]!r}")
        head, value = pairs[0]
        rest = _PAIR.sub("", line).strip()
        if rest:
            raise PolicyError(f"{source}:{number}: {head}: unexpected text {rest[:40]!r} "
                              f"(values with spaces must be quoted)")
        if head.lower() == "nodename":
            _count_nodes(config, value, dict((k.lower(), v) for k, v in pairs[1:]), source,
                         number)
            continue
        if head.lower() == "partitionname":
            fields = {k.lower(): Setting(k, v.strip('"'), source, number) for k, v in pairs}
            if value.upper() == "DEFAULT":
                config.partitions.setdefault("DEFAULT", {}).update(fields)
            else:
                base = dict(config.partitions.get("DEFAULT", {}))
                base.update(fields)
                config.partitions[value] = base
            continue
        if head.lower() in ("downnodes", "frontendname", "nodeset", "switchname"):
            continue
        if len(pairs) > 1:
            raise PolicyError(f"{source}:{number}: {head}: one Key=Value a line expected "
                              f"(found {len(pairs)})")
        config.settings[head.lower()] = Setting(head, value.strip('"'), source, number)
    config.partitions.pop("DEFAULT", None)
    return config


def _count_nodes(config: SlurmConfig, names: str, fields: dict[str, str], source: str,
                 number: int) -> None:
    if names.upper() == "DEFAULT":
        return
    from malleo.plugin.backends.hostlist import expand

    try:
        count = len(expand(names))
    except ValueError as exc:
        raise PolicyError(f"{source}:{number}: NodeName: {exc}") from None
    cpus = fields.get("cpus", "1")
    if not cpus.isdigit() or int(cpus) < 1:
        raise PolicyError(f"{source}:{number}: CPUs: must be a positive integer, got {cpus!r}")
    config.nodes += count
    config.cpus += count * int(cpus)


def read_partitions(path: str | Path, text: str | None = None) -> dict[str, dict[str, Setting]]:
    """Read ``scontrol show partition -o`` output: name -> fields (lower-case keys)."""
    source = str(path)
    if text is None:
        text = _read_text(path, "partition list")
    out: dict[str, dict[str, Setting]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        pairs = _PAIR.findall(line)
        if not pairs or pairs[0][0] != "PartitionName":
            raise PolicyError(f"{source}:{number}: not a line of 'scontrol show partition -o' "
                              f"(PartitionName=... expected): {line[:60]!r}")
        out[pairs[0][1]] = {k.lower(): Setting(k, v, source, number) for k, v in pairs}
    return out


def read_qos(path: str | Path, text: str | None = None) -> dict[str, Setting]:
    """Read ``sacctmgr -nP show qos format=Name,Priority`` output: QOS name -> priority."""
    source = str(path)
    if text is None:
        text = _read_text(path, "QOS list")
    out: dict[str, Setting] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.lower().startswith("name|"):
            continue
        parts = line.split("|")
        if len(parts) < 2 or not parts[1].strip().isdigit():
            raise PolicyError(f"{source}:{number}: Priority: expected 'NAME|PRIORITY' with "
                              f"an integer priority, got {line[:60]!r}")
        out[parts[0]] = Setting("Priority", parts[1].strip(), source, number)
    return out


# The limit columns asked of a live cluster's accounting (sacctmgr -P, with its header).
QOS_LIMIT_FORMAT = "Name,MaxJobsPU,MaxSubmitPU,MaxTRESPU,GrpJobs,GrpSubmit,GrpTRES,MaxTRES,MaxWall"
ASSOC_LIMIT_FORMAT = "Account,User,MaxJobs,MaxSubmit,GrpJobs,GrpSubmit,GrpTRES,MaxTRES,MaxWall"
_LIMIT_KEYS = {"name": "QOS", "account": "Account", "user": "User", "cluster": "Cluster",
               "partition": "Partition"}


def read_limits(path: str | Path, text: str | None = None) -> list[Setting]:
    """Read per-user and group limits from ``sacctmgr -P show qos|assoc format=...`` output
    (its header line first, ``|``-separated).

    The identifying columns (Name, Cluster, Account, User, Partition) name each row; every
    other non-empty cell is one limit, returned as a Setting keyed
    ``QOS=normal.MaxJobsPU`` or ``Account=a,User=u.MaxJobs``.  malleo models none of them:
    :func:`import_policy` lists them as not modelled.

    Raises:
        PolicyError: ``FILE:LINE: ...`` for a file without a header or a row of another width.
    """
    source = str(path)
    if text is None:
        text = _read_text(path, "limits list")
    header: list[str] | None = None
    out: list[Setting] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split("|")]
        if header is None:
            if not any(c.lower() in _LIMIT_KEYS for c in cells):
                raise PolicyError(f"{source}:{number}: header: expected sacctmgr -P output "
                                  f"with its header (Name|MaxJobsPU|... or Account|User|"
                                  f"MaxJobs|...), got {line[:60]!r}")
            header = cells
            continue
        if len(cells) != len(header):
            raise PolicyError(f"{source}:{number}: expected {len(header)} '|'-separated "
                              f"fields like the header, got {len(cells)}")
        ident = ",".join(f"{_LIMIT_KEYS[h.lower()]}={c}" for h, c in zip(header, cells)
                         if h.lower() in _LIMIT_KEYS and c)
        for column, cell in zip(header, cells):
            if column.lower() not in _LIMIT_KEYS and cell:
                out.append(Setting(f"{ident or 'row'}.{column}", cell, source, number))
    return out


_SPRIO_COLUMNS = {"age": "PriorityWeightAge", "jobsize": "PriorityWeightJobSize",
                  "fairshare": "PriorityWeightFairShare", "partition": "PriorityWeightPartition",
                  "qos": "PriorityWeightQOS", "assoc": "PriorityWeightAssoc",
                  "site": "PrioritySite", "tres": "PriorityWeightTRES"}


def read_sprio_weights(path: str | Path, text: str | None = None) -> dict[str, Setting]:
    """Read ``sprio -w`` output: configuration key -> the weight the controller uses."""
    source = str(path)
    if text is None:
        text = _read_text(path, "sprio -w output")
    lines = text.splitlines()
    header = next((k for k, line in enumerate(lines) if "JOBID" in line.split()), None)
    weights = next((k for k, line in enumerate(lines) if line.split()[:1] == ["Weights"]), None)
    if header is None or weights is None:
        raise PolicyError(f"{source}:1: not 'sprio -w' output (a JOBID header and a "
                          f"Weights line expected)")
    names = [c.lower() for c in lines[header].split() if c not in ("JOBID", "PARTITION",
                                                                    "PRIORITY", "USER")]
    values = lines[weights].split()[1:]
    if len(values) != len(names):
        raise PolicyError(f"{source}:{weights + 1}: Weights: {len(values)} values for "
                          f"{len(names)} columns ({', '.join(names)})")
    out = {}
    for name, value in zip(names, values):
        key = _SPRIO_COLUMNS.get(name)
        if key is None:
            continue
        if key == "PriorityWeightTRES":
            out[key.lower()] = Setting(key, value, source, weights + 1)
            continue
        if not value.isdigit():
            raise PolicyError(f"{source}:{weights + 1}: {key}: weight must be an integer, "
                              f"got {value!r}")
        out[key.lower()] = Setting(key, value, source, weights + 1)
    return out


def parse_slurm_time(text: str, *, bare_unit: int = 60) -> int | None:
    """Seconds of a Slurm time string: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
    ``D-H:M:S``; a bare number counts ``bare_unit`` seconds (minutes by default).

    Returns:
        seconds, or None for ``UNLIMITED``/``INFINITE``/``NONE``.

    Raises:
        ValueError: not of those forms.
    """
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    value = re.sub(r"\s*(sec|secs|seconds)$", "", value)
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value)
    if not match:
        raise ValueError(f"not a Slurm time (D-HH:MM:SS or minutes): {text!r}")
    days, a, b, c = match.groups()
    if days is not None:                       # D-H, D-H:M, D-H:M:S
        h, m, s = int(a), int(b or 0), int(c or 0)
        return ((int(days) * 24 + h) * 60 + m) * 60 + s
    if c is not None:                          # H:M:S
        return (int(a) * 60 + int(b)) * 60 + int(c)
    if b is not None:                          # M:S
        return int(a) * 60 + int(b)
    return int(a) * bare_unit


# --------------------------------------------------------------------------- mapping

SCHED_PARAMS_MODELLED = {"bf_window", "bf_resolution", "bf_max_job_test"}
"""SchedulerParameters malleo's ``slurm`` backfill mode models."""

PRIORITY_KEYS_MODELLED = {
    "prioritytype", "priorityweightage", "prioritymaxage", "priorityweightjobsize",
    "priorityfavorsmall", "priorityweightfairshare", "prioritydecayhalflife",
    "prioritycalcperiod", "priorityweightpartition", "priorityweightqos"}

SCHEDULING_KEYS = {
    "schedulertype", "schedulerparameters", "schedulertimeslice", "selecttype",
    "selecttypeparameters", "preempttype", "preemptmode", "preemptexempttime",
    "preemptparameters", "priorityparameters", "prioritysitefactorparameters",
    "prioritysitefactorplugin", "priorityflags", "priorityusageresetperiod",
    "priorityweightassoc", "priorityweighttres", "fairsharedampeningfactor",
    "defmempercpu", "defmempernode", "maxmempercpu", "maxmempernode", "overtimelimit",
    "maxjobcount", "maxarraysize", "enforcepartlimits", "accountingstorageenforce",
    "topologyplugin", "gresttypes", "grestypes", "licenses", "jobsubmitplugins",
    "defcpuperGPU".lower(), "defmempergpu", "schedulerrootfilter", "waittime",
    "killwait", "minjobage", "batchstarttimeout", "healthcheckinterval", "suspendtime",
    "resumetimeout", "priorityweightqos", *PRIORITY_KEYS_MODELLED}
"""Keys that change which job starts when (the rest are paths, logging, timeouts...)."""

_WHY = {
    "bf_continue": "malleo plans the whole queue in one pass; Slurm's pass may yield its "
                   "locks and go on (bf_continue) or restart from the top",
    "bf_interval": "malleo plans at every event (submit, end); Slurm backfills every "
                   "bf_interval seconds",
    "sched_interval": "Slurm's main scheduler also runs on every submit and end, which is "
                      "when malleo plans",
    "bf_max_job_user": "per-user limits on the backfill depth are not modelled",
    "limits": "per-user and group limits are not modelled: Slurm keeps a job over a limit "
              "pending (Reason QOSMax*/AssocMax*/AssocGrp*), malleo starts every job that "
              "fits",
    "bf_max_job_part": "per-partition limits on the backfill depth are not modelled",
    "bf_min_age_reserve": "reservations for recent jobs are not modelled",
    "bf_min_prio_reserve": "priority thresholds for reservations are not modelled",
    "default_queue_depth": "the main scheduler's depth limit is not modelled",
    "priorityflags": "multifactor flags are not modelled",
    "priorityweightassoc": "association priority is not modelled",
    "priorityweighttres": "TRES weights are not modelled",
    "selecttype": "malleo allocates interchangeable units (nodes or CPUs), no topology",
    "preempttype": "preemption is not modelled",
    "preemptmode": "preemption is not modelled",
}


def size_weight(weight: float, nodes: int, cpus: int) -> float:
    """The malleo ``weight_size`` that gives Slurm's job-size term for node-count jobs.

    Slurm (priority/multifactor) averages a node share and a CPU share.  A job of n nodes
    that asks for no CPU count (one CPU a node while pending) on N nodes of C CPUs in all
    gets ((N - n) / N + (C - n) / C) / 2 with PriorityFavorSmall=YES and (n / N + n / C) / 2
    without: linear in n with slope (1/N + 1/C) / 2.  malleo's factors, (N - n + 1) / N and
    n / N, have slope 1/N; a weight of ``weight * N * (1/N + 1/C) / 2`` gives the same
    differences between jobs (a constant offset changes no order).
    """
    if nodes < 1 or cpus < 1:
        return float(weight)
    return float(weight) * nodes * (1.0 / nodes + 1.0 / cpus) / 2.0


def import_policy(config: SlurmConfig, *, partitions: dict[str, dict[str, Setting]] | None = None,
                  qos: dict[str, Setting] | None = None, sprio: dict[str, Setting] | None = None,
                  limits: list[Setting] | None = None, nodes: int = 0,
                  cpus: int = 0) -> Imported:
    """The policy that mirrors ``config`` (module docstring for the mapping).

    Args:
        config: from :func:`read_config`.
        partitions: ``scontrol show partition -o`` fields (else the config's PartitionName).
        qos: QOS name -> priority (``sacctmgr``); None: no QOS factors.
        sprio: weights from ``sprio -w``; they replace the configuration's.
        limits: per-user and group limits (:func:`read_limits`); each is listed as not
            modelled.
        nodes, cpus: the cluster's nodes and CPUs (0: from the config's NodeName lines).

    Raises:
        PolicyError: ``FILE:LINE: Key: what is wrong`` for a value that cannot be read or
            that the policy refuses.
    """
    from malleo.policy import Multifactor, Policy

    settings = dict(config.settings)
    notes: list[str] = []
    if sprio:
        for key, weight in sprio.items():
            old = settings.get(key)
            if old is not None and old.value != weight.value and key != "priorityweighttres":
                notes.append(f"{weight.key}: sprio -w says {weight.value}, the configuration "
                             f"{old.value} ({old.where}); sprio's value is used")
            settings[key] = weight
    used: list[tuple[Setting, str]] = []
    unmodelled: list[tuple[Setting, str]] = []

    def fail(setting: Setting, what: str) -> PolicyError:
        return PolicyError(f"{setting.where}: {setting.key}: {what}")

    def integer(key: str, default: int) -> int:
        setting = settings.get(key)
        if setting is None:
            return default
        if not re.fullmatch(r"\d+", setting.value.strip()):
            raise fail(setting, f"must be a non-negative integer, got {setting.value!r}")
        return int(setting.value)

    def seconds(key: str, default: int, bare_unit: int = 60) -> int:
        setting = settings.get(key)
        if setting is None:
            return default
        try:
            value = parse_slurm_time(setting.value, bare_unit=bare_unit)
        except ValueError as exc:
            raise fail(setting, str(exc)) from None
        if value is None:
            raise fail(setting, "must be a finite time")
        return value

    top: dict[str, object] = {"estimate": "request"}
    sched = settings.get("schedulertype")
    sched_type = (sched.value if sched else "sched/backfill").strip()
    if sched_type == "sched/backfill":
        top["backfill"] = "slurm"
        top["bf_rounding"] = "down"         # Slurm's own rounding (docs/scheduling-semantics.md)
    elif sched_type == "sched/builtin":
        top["backfill"] = "none"
    else:
        raise fail(sched, "malleo mirrors sched/backfill and sched/builtin, "
                          f"got {sched_type!r}")
    if sched:
        used.append((sched, f"backfill = {top['backfill']!r}"))
    else:
        notes.append("SchedulerType not set: Slurm's default sched/backfill assumed")
    params = settings.get("schedulerparameters")
    bf = {"bf_window": 1440 * 60, "bf_resolution": 60, "bf_max_job_test": 500}
    if params is not None and params.value.strip() not in ("", "(null)"):
        for item in params.value.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, value = item.partition("=")
            name = name.strip().lower()
            sub = Setting(f"SchedulerParameters.{name}", value.strip(), params.source, params.line)
            if name in SCHED_PARAMS_MODELLED:
                if not re.fullmatch(r"\d+", value.strip()) or int(value) < 1:
                    raise fail(sub, f"must be a positive integer, got {value.strip()!r}")
                bf[name] = int(value) * (60 if name == "bf_window" else 1)
                used.append((sub, f"{name} = {bf[name]}"))
            else:
                unmodelled.append((sub, _WHY.get(name, "not modelled by malleo")))
    top.update(bf)
    if top["backfill"] != "slurm":
        notes.append("bf_* parameters are written but unused: sched/builtin does not backfill")

    ptype = settings.get("prioritytype")
    prio_type = (ptype.value if ptype else "priority/basic").strip()
    mf_fields: dict[str, object] = {}
    if prio_type == "priority/basic":
        top["order"] = "fcfs"
        if ptype:
            used.append((ptype, "order = 'fcfs' (priority/basic: submit order)"))
    elif prio_type == "priority/multifactor":
        top["order"] = "multifactor"
        used.append((ptype, "order = 'multifactor'"))
        for key, name in (("priorityweightage", "weight_age"),
                          ("priorityweightfairshare", "weight_fairshare"),
                          ("priorityweightqos", "weight_queue"),
                          ("priorityweightpartition", "weight_partition")):
            mf_fields[name] = float(integer(key, 0))
            if key in settings:
                used.append((settings[key], f"multifactor.{name} = {mf_fields[name]:g}"))
        raw_size = float(integer("priorityweightjobsize", 0))
        nodes = nodes or config.nodes
        cpus = cpus or config.cpus
        favor = settings.get("priorityfavorsmall")
        is_small = favor is not None and favor.value.strip().lower() in ("yes", "1", "true")
        if favor is not None and favor.value.strip().lower() not in (
                "yes", "no", "1", "0", "true", "false"):
            raise fail(favor, f"must be YES or NO, got {favor.value!r}")
        mf_fields["size_favor"] = "small" if is_small else "large"
        if favor is not None:
            used.append((favor, f"multifactor.size_favor = {mf_fields['size_favor']!r}"))
        mf_fields["weight_size"] = size_weight(raw_size, nodes, cpus)
        if "priorityweightjobsize" in settings:
            used.append((settings["priorityweightjobsize"],
                         f"multifactor.weight_size = {mf_fields['weight_size']:g}"))
        if raw_size:
            if nodes and cpus:
                notes.append(f"weight_size = PriorityWeightJobSize x N x (1/N + 1/C) / 2 with "
                             f"N = {nodes} nodes, C = {cpus} CPUs: Slurm's size factor "
                             f"for jobs asking for nodes only (docs/scheduling-semantics.md)")
            else:
                notes.append("weight_size not rescaled: node and CPU counts unknown (give "
                             "--cluster NODES:CPUS or a slurm.conf with NodeName lines)")
        for key, name, default in (("prioritymaxage", "max_age", 7 * 86400),
                                   ("prioritydecayhalflife", "half_life", 7 * 86400),
                                   ("prioritycalcperiod", "calc_period", 300)):
            value = seconds(key, default)
            if value < 1:
                if key == "prioritydecayhalflife":
                    notes.append("PriorityDecayHalfLife 0 (no decay) approximated by "
                                 "100 years")
                    value = 100 * 365 * 86400
                else:
                    raise fail(settings[key], "must be a positive time")
            mf_fields[name] = value
            if key in settings:
                used.append((settings[key], f"multifactor.{name} = {value}"))
        mf_fields["partition_factors"] = _partition_factors(
            partitions if partitions is not None else config.partitions, used, unmodelled,
            fail)
        mf_fields["queue_factors"] = _qos_factors(qos, used, fail)
        if qos is None and mf_fields.get("weight_queue"):
            notes.append("PriorityWeightQOS set but no QOS priorities given (--qos): every "
                         "QOS factor is 0")
    else:
        raise fail(ptype, "malleo mirrors priority/multifactor and priority/basic, "
                          f"got {prio_type!r}")
    for key, setting in sorted(settings.items()):
        if key in ("schedulertype", "schedulerparameters") or key in PRIORITY_KEYS_MODELLED:
            if key.startswith("priority") and prio_type == "priority/basic" \
                    and key != "prioritytype":
                unmodelled.append((setting, "unused: PriorityType is priority/basic"))
            continue
        if key in SCHEDULING_KEYS or key.startswith(("priority", "sched", "bf_", "preempt")):
            if setting.value.strip() in ("(null)", "", "0") and key not in ("selecttype",):
                continue            # unset: nothing to model
            unmodelled.append((setting, _WHY.get(key, "not modelled by malleo")))
    enforce = settings.get("accountingstorageenforce")
    enforced = enforce is not None and any(word in enforce.value.lower()
                                           for word in ("limits", "safe"))
    for limit in limits or ():
        unmodelled.append((limit, _WHY["limits"] if enforced else
                           _WHY["limits"] + " (AccountingStorageEnforce has no 'limits' here: "
                                            "Slurm does not enforce it either)"))
    ignored = sorted(s.key for k, s in settings.items()
                     if k not in SCHEDULING_KEYS and not k.startswith(
                         ("priority", "sched", "bf_", "preempt")))
    try:
        multifactor = Multifactor(**mf_fields) if mf_fields else Multifactor()
        policy = Policy(multifactor=multifactor, **top)
    except PolicyError as exc:
        raise PolicyError(f"{config.source}: the imported policy is invalid: {exc}") from None
    return Imported(policy=policy, used=used, unmodelled=unmodelled, ignored=ignored,
                    notes=notes)


def _partition_factors(partitions, used, unmodelled, fail) -> dict[int, float]:
    """Partition -> PriorityJobFactor / max PriorityJobFactor, by SWF number (sorted names)."""
    factors: dict[str, int] = {}
    for name, fields in partitions.items():
        setting = fields.get("priorityjobfactor")
        value = setting.value if setting else "1"
        if not value.isdigit():
            raise fail(setting, f"must be a non-negative integer, got {value!r}")
        factors[name] = int(value)
        for key in ("prioritytier", "preemptmode", "oversubscribe", "qos"):
            other = fields.get(key)
            if other is not None and other.value not in ("1", "OFF", "N/A", "NO",
                                                          "EXCLUSIVE"):
                unmodelled.append((Setting(f"PartitionName={name}.{other.key}", other.value,
                                           other.source, other.line),
                                   "not modelled by malleo"))
    top = max(factors.values(), default=0)
    out = {}
    for number, name in enumerate(sorted(factors), start=1):
        out[number] = factors[name] / top if top else 0.0
        setting = partitions[name].get("priorityjobfactor")
        if setting is not None:
            used.append((Setting(f"PartitionName={name}.PriorityJobFactor", setting.value,
                                 setting.source, setting.line),
                         f"multifactor.partition_factors.{number} = {out[number]:g}"))
    return out


def _qos_factors(qos, used, fail) -> dict[int, float]:
    """QOS -> Priority / max Priority, by SWF queue number (sorted names)."""
    if not qos:
        return {}
    top = max(int(s.value) for s in qos.values())
    out = {}
    for number, name in enumerate(sorted(qos), start=1):
        out[number] = int(qos[name].value) / top if top else 0.0
        used.append((Setting(f"QOS={name}.Priority", qos[name].value, qos[name].source,
                             qos[name].line), f"multifactor.queue_factors.{number} = "
                                              f"{out[number]:g}"))
    return out


# --------------------------------------------------------------------------- live cluster

def _run(args: list[str], env: dict[str, str]) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
    except FileNotFoundError:
        raise PolicyError(f"{args[0]}: not found (is Slurm's client installed?)") from None
    except subprocess.TimeoutExpired:
        raise PolicyError(f"{' '.join(args)}: no answer within 60 s") from None
    if proc.returncode != 0:
        raise PolicyError(f"{' '.join(args)} failed (exit {proc.returncode}): "
                          f"{proc.stderr.strip()[:300]}")
    return proc.stdout


def live_inputs(slurm_conf: str | None) -> dict:
    """Ask the running cluster: ``scontrol show config``, ``scontrol show partition -o``,
    ``sinfo`` (nodes, CPUs) and, with accounting, the QOS priorities and the QOS and
    association limits (listed as not modelled).

    Returns:
        keyword arguments for :func:`import_policy` plus ``config`` (a SlurmConfig).
    """
    import os

    env = dict(os.environ)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    config = read_config("scontrol show config",
                         _run(["scontrol", "show", "config"], env))
    partitions = read_partitions("scontrol show partition -o",
                                 _run(["scontrol", "show", "partition", "-o"], env))
    seen: dict[str, int] = {}
    for row in _run(["sinfo", "-h", "-N", "-o", "%N %c"], env).splitlines():
        parts = row.split()
        if len(parts) == 2 and parts[1].isdigit():
            seen[parts[0]] = int(parts[1])
    nodes, cpus = len(seen), sum(seen.values())
    qos = None
    storage = config.get("AccountingStorageType")
    if storage is not None and "slurmdbd" in storage.value:
        qos = read_qos("sacctmgr show qos",
                       _run(["sacctmgr", "-nP", "show", "qos", "format=Name,Priority"], env))
        limits = read_limits("sacctmgr show qos", _run(
            ["sacctmgr", "-P", "show", "qos", "format=" + QOS_LIMIT_FORMAT], env))
        limits += read_limits("sacctmgr show assoc", _run(
            ["sacctmgr", "-P", "show", "assoc", "format=" + ASSOC_LIMIT_FORMAT], env))
        return {"config": config, "partitions": partitions, "qos": qos, "limits": limits,
                "nodes": nodes, "cpus": cpus}
    return {"config": config, "partitions": partitions, "qos": qos, "nodes": nodes,
            "cpus": cpus}
