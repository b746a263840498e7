"""The compact read of Slurm's state: ``squeue``/``sinfo`` text with only the fields the
agent's cycle needs, parsed straight into numpy columns (issue 16).

``squeue --json`` writes 2.4-6 KB a job (100-130 fields; 27 MB at 10,000 jobs in 22.05) and
decoding it alone takes longer than the cycle's 100 ms budget.  The cycle reads instead::

    SLURM_TIME_FORMAT=%s squeue --noheader --all --states=all \\
        --Format=JobID:|,UserId:|,UserName:|,Partition:|,State:|,...,NodeList:|

about 75 bytes a job: every field is written whole (width 0 means "no width", so nothing is
cut) and followed by ``|``; times are epoch seconds (``SLURM_TIME_FORMAT=%s`` is a
strftime format Slurm passes through).  The field names (:data:`SQUEUE_FIELDS`,
:data:`SINFO_FIELDS`) exist in the ``--Format``/``-O`` tables of every Slurm malleo supports
(22.05, 24.11, 25.11, 26.05: their man pages and 25.11's ``src/squeue/opts.c`` and
``src/sinfo/opts.c`` list them all).

Free text is never read: no job name, comment, working directory or path, which a user can
fill with ``|`` or newlines.  Every field read is a number or a name Slurm or the site
administrator chose (state, reason, partition, user and node names), none of which can hold
``|``; a line whose field count is not exactly right is a :class:`SlurmParseError` naming
the line and field, never a silent shift.  Identity (job id, uid) comes from numeric fields.
Decisions that need trust (who owns a job, a malleable job's declared bounds in its
``--comment``) still read the JSON record (``SlurmBackend.job_json``, docs/security.md).

Columns, not objects: :func:`parse_squeue` splits the text once and converts each field to a
numpy array (ints with one vectorised cast; states, reasons, partitions and time limits as
byte-string arrays whose few distinct values are decoded once).  No Python object is made per
job; :class:`JobTable` gives :class:`~malleo.plugin.backends.model.Job` records on demand
(iteration, indexing) for the code outside the cycle's hot path.
"""
from __future__ import annotations

import hashlib

import numpy as np

from malleo import slurm_values as values
from malleo.plugin.backends import hostlist
from malleo.plugin.backends.errors import SlurmParseError
from malleo.plugin.backends.model import (ACTIVE_STATES, FINISHED_STATES,
                                          UNAVAILABLE_NODE_FLAGS, Job, Node)

SQUEUE_FIELDS: tuple[str, ...] = (
    "JobID", "UserId", "UserName", "Partition", "State", "PriorityLong", "SubmitTime",
    "StartTime", "EndTime", "TimeLimit", "NumNodes", "MaxNodes", "NumCPUs", "NodeList",
    "Reason")
"""``squeue --Format`` fields of the compact read, in output order (module docstring).
``Reason`` is last: squeue prints the job's ``state_desc`` there when slurmctld (or a site's
job_submit plugin) set one (``ReqNodeNotAvail, UnavailableNodes:n3``), so it is the one field
whose text is not an enumeration; a ``|`` in it folds back into the field, and only its
first word (before ``,``) is kept: the reason name ``squeue --json`` gives as
``state_reason``."""

SINFO_FIELDS: tuple[str, ...] = ("NodeList", "PartitionName", "StateComplete", "CPUs",
                                 "CPUsState")
"""``sinfo --Format`` fields of the compact node read, in output order (NodeList: a host list
of the group's nodes)."""

SEP = b"|"
"""Field terminator: after every field, so a line of k fields holds exactly k of them."""

TIME_ENV = {"SLURM_TIME_FORMAT": "%s"}
"""Environment that makes squeue print times as epoch seconds."""

#: Texts squeue prints for a time it does not have (start of a job never estimated...).
_UNSET_TIMES = frozenset({b"N/A", b"NONE", b"Unknown", b"", b"(null)"})
#: Those and the words for no bound, as squeue writes them (a field read with ``unset``).
_NO_NUMBER = tuple(sorted(_UNSET_TIMES | {w.upper().encode() for w in values.UNLIMITED_WORDS}
                          | {w.encode() for w in values.UNLIMITED_WORDS}
                          | {b"Unlimited", b"Infinite"}))
_ACTIVE = tuple(s.encode() for s in sorted(ACTIVE_STATES))
_FINISHED = tuple(s.encode() for s in sorted(FINISHED_STATES))
FINGERPRINT_FIELDS: tuple[str, ...] = ("JobID", "State")
"""``squeue --Format`` fields of :func:`fingerprint_argv` (the agent's change poll)."""
_AVAILABLE_BASE = frozenset({"IDLE", "MIXED", "ALLOCATED", "COMPLETING"})
#: squeue's State prints a job's first state flag instead of its base state (Slurm's
#: job_state_string: COMPLETING, CONFIGURING, RESIZING ... REQUEUE_HOLD, SIGNALING); JSON
#: from 24.11 lists both.  These flags are only set on a job of one base state, which the
#: agent needs (held pending jobs, running jobs holding nodes); COMPLETING, CONFIGURING and
#: RESIZING are in model.ACTIVE_STATES already, the others (STAGE_OUT, REQUEUED,
#: SPECIAL_EXIT...) mark jobs that are ending, which the plan leaves out either way.
_FLAG_BASE = {b"REQUEUE_HOLD": b"PENDING", b"RESV_DEL_HOLD": b"PENDING",
              b"STOPPED": b"RUNNING", b"SIGNALING": b"RUNNING"}


def _format(fields: tuple[str, ...]) -> str:
    return ",".join(f"{f}:{SEP.decode()}" for f in fields)


def squeue_argv() -> list[str]:
    """The compact squeue command (run with :data:`TIME_ENV` in the environment)."""
    return ["squeue", "--noheader", "--all", "--states=all", "--Format=" + _format(SQUEUE_FIELDS)]


def fingerprint_argv() -> list[str]:
    """The cheap squeue of the agent's change poll: ids and states only."""
    return ["squeue", "--noheader", "--all", "--states=all",
            "--Format=" + _format(FINGERPRINT_FIELDS)]


def fingerprint(job_id: np.ndarray, state: np.ndarray) -> tuple[str, str]:
    """A digest of the (job id, state) pairs of the jobs not finished, whatever their row
    order: it changes whenever a job arrives, starts or ends.  The same from a
    :class:`JobTable` and from :func:`parse_fingerprint`, so the cycle can take its first
    fingerprint from the read itself (one squeue fewer a cycle)."""
    keep = ~np.isin(state, _FINISHED)
    ids, states = job_id[keep], state[keep]
    order = np.lexsort((states, ids))
    digest = hashlib.blake2b(ids[order].astype("<i8").tobytes(), digest_size=16)
    digest.update(b"\n".join(states[order].tolist()))
    return ("jobs-states", digest.hexdigest())


def parse_fingerprint(data: bytes, command: str = "squeue --Format") -> tuple[str, str]:
    """:func:`fingerprint` of :func:`fingerprint_argv`'s output.

    Raises:
        SlurmParseError: a bad line (its number and field named)."""
    cells = _Cells(data, FINGERPRINT_FIELDS, command)
    return fingerprint(cells.ints("JobID"), cells.text("State"))


def sinfo_argv() -> list[str]:
    """The compact sinfo command: one line per group of alike nodes (:func:`parse_sinfo`)."""
    return ["sinfo", "--noheader", "--all", "--Format=" + _format(SINFO_FIELDS)]


class _Cells:
    """The fields of text of lines of terminated fields, located without splitting it:
    ``start[i, j]``/``end[i, j]`` are the byte offsets of field j of line i in ``buf``.

    Checked vectorised: every line holds exactly ``len(fields)`` separators and ends with
    one (``free_tail``: at least that many, the extra ones belonging to the last field).
    Raises SlurmParseError naming the first bad line (1-based), its missing field and the
    line's text.  Fields are then read as whole columns (:meth:`ints`, :meth:`text`), with
    no Python object per cell."""

    def __init__(self, data: bytes, fields: tuple[str, ...], command: str,
                 free_tail: bool = False):
        self.fields, self.command = fields, command
        k = len(fields)
        if data and not data.endswith(b"\n"):
            data += b"\n"
        self.data = data
        buf = self.buf = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(buf == 10)
        bars = np.flatnonzero(buf == SEP[0])
        first = np.searchsorted(bars, np.concatenate(([0], nl[:-1] + 1)))
        per_line = np.searchsorted(bars, nl) - first
        last_is_sep = buf[np.maximum(nl - 1, 0)] == SEP[0]
        bad = np.flatnonzero((per_line < k if free_tail else per_line != k) | ~last_is_sep)
        if len(bad):
            row = int(bad[0])
            line = data.split(b"\n")[row]
            n = line.count(SEP)
            if n < k:
                what = f"field {n + 1} ({fields[n]}) missing"
            elif not line.endswith(SEP):
                what = f"text after the last field ({fields[-1]})"
            else:
                what = f"{n} fields where {k} ({', '.join(fields)}) were asked for"
            raise SlurmParseError(f"{command}: line {row + 1}: {what}: "
                                  f"{line.decode('utf-8', 'replace')[:200]!r}")
        n = len(nl)
        end = np.empty((n, k), dtype=np.int64)
        if n:
            end[:, :k - 1] = bars[first[:, None] + np.arange(k - 1)]
            end[:, k - 1] = nl - 1                      # the line's last separator
        start = np.empty_like(end)
        start[:, 0] = np.concatenate(([0], nl[:-1] + 1))
        start[:, 1:] = end[:, :-1] + 1
        self.start, self.end = start, end
        self.n = n
        self._digit = None

    def _span(self, field: str):
        j = self.fields.index(field)
        return j, self.start[:, j], self.end[:, j]

    def text(self, field: str) -> np.ndarray:
        """Field ``field`` of every line as a fixed-width byte-string array (``S<w>``, w
        the longest value), built from the buffer by one gather."""
        _, s, e = self._span(field)
        return self._gather(s, e)

    def _gather(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        width = max(int((e - s).max(initial=0)), 1)
        idx = s[:, None] + np.arange(width)
        inside = idx < e[:, None]
        mat = np.where(inside, self.buf[np.minimum(idx, max(len(self.buf) - 1, 0))], 0)
        return np.ascontiguousarray(mat.astype(np.uint8)).view(f"S{width}").reshape(-1)

    def raw(self, field: str, rows) -> list[bytes]:
        """Field ``field`` of ``rows`` as bytes (for the few rows that need them)."""
        _, s, e = self._span(field)
        data = self.data
        return [data[a:b] for a, b in zip(s[rows].tolist(), e[rows].tolist())]

    def ints(self, field: str, *, unset: int | None = None) -> np.ndarray:
        """Field ``field`` (decimal digits) as int64, computed from the digits in place;
        with ``unset``, the texts squeue prints for no value (N/A, Unknown...) and for no
        bound (UNLIMITED) read as ``unset``.

        Raises:
            SlurmParseError: anything else (a sign, a space, a word, more than 18
                digits), naming the first such line and the field.
        """
        j, s, e = self._span(field)
        length = e - s
        good = (length > 0) & (length <= 18)            # 18 digits: below 2**63
        width = min(int(length.max(initial=0)), 18)
        out = np.zeros(self.n, dtype=np.int64)
        if self._digit is None:             # the whole text's digit values, once
            digit = self.buf - np.uint8(48)             # wraps: non-digits become > 9
            self._digit = np.where(digit <= 9, digit, 255).view(np.int8)   # -1: not a digit
        if width:
            # the digits right-aligned in an n x width matrix (0 left of the field), one gather
            idx = e[:, None] + np.arange(-width, 0)
            mat = self._digit[np.maximum(idx, 0)]
            mat[idx < s[:, None]] = 0
            good &= (mat >= 0).all(axis=1)
            if width <= 15:                 # exact in float64 (< 2**53): one BLAS product
                out = (mat.astype(np.float64) @ 10.0 ** np.arange(width - 1, -1, -1)).astype(
                    np.int64)
            else:
                out = mat.astype(np.int64) @ 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        wrong = np.flatnonzero(~good)
        if len(wrong) and unset is not None:            # N/A, UNLIMITED...: vectorised
            words = self._gather(s[wrong], e[wrong])
            known = np.isin(words, _NO_NUMBER)
            out[wrong[known]] = unset
            wrong = wrong[~known]
        if len(wrong):
            row = int(wrong[0])
            text = self.raw(field, [row])[0].decode("utf-8", "replace")
            raise SlurmParseError(f"{self.command}: line {row + 1}: field {j + 1} ({field}): "
                                  f"not a number: {text!r}")
        return out


def _limit_seconds(col: np.ndarray, fields, command: str) -> np.ndarray:
    """TimeLimit texts (``D-HH:MM:SS``, ``MM:SS``, ``UNLIMITED``, ``NOT_SET``) as seconds,
    -1 for none; the few distinct values are parsed once each."""
    uniq, inverse = np.unique(col, return_inverse=True)
    secs = np.empty(len(uniq), dtype=np.int64)
    for i, text in enumerate(uniq.tolist()):
        word = text.decode("utf-8", "replace")
        try:
            d = None if word.upper() == "NOT_SET" else values.duration(word)
        except ValueError:
            row = int(np.flatnonzero(inverse == i)[0])
            raise SlurmParseError(f"{command}: line {row + 1}: field "
                                  f"{fields.index('TimeLimit') + 1} (TimeLimit): {word!r} is "
                                  f"not a Slurm duration") from None
        secs[i] = -1 if d is None else d
    return secs[inverse.reshape(-1)]


def _names(col: np.ndarray) -> list[str]:
    """Distinct byte strings decoded once (partition, state... have few values)."""
    uniq, inverse = np.unique(col, return_inverse=True)
    text = [u.decode("utf-8", "replace") for u in uniq.tolist()]
    return [text[i] for i in inverse.reshape(-1).tolist()]


class JobTable:
    """The queue as columns (one row per job squeue lists: a pending array's unstarted
    tasks are one row, as in ``squeue --json``).

    Attributes (numpy arrays of one length, row order as squeue printed):
        job_id: int64 job ids (a job array's tasks each have their own).
        user_id: int64 owner uid.
        user: bytes owner name.
        partition: bytes partition (pending: the one(s) requested, comma-separated).
        state: bytes base state (PENDING, RUNNING, COMPLETING...).
        reason: bytes state reason (b"" for Slurm's "None").
        priority: int64 Slurm priority (0 while held).
        submit_time, start_time, end_time: int64 epoch seconds, 0 when Slurm has none
            (a pending job's start_time is Slurm's estimate).
        time_limit: int64 seconds, -1 when unlimited or not set.
        num_nodes, max_nodes, num_cpus: int64 (pending: minimum nodes requested).
        node_list: list of bytes host lists (b"" while pending).
        is_held: bool, held pending jobs: priority 0 (Slurm's meaning of held, as its
            JSON ``hold``) or a JobHeld* reason.
        is_active: bool, rows holding nodes (``model.ACTIVE_STATES``).
    """

    __slots__ = ("job_id", "user_id", "user", "partition", "state", "reason", "priority",
                 "submit_time", "start_time", "end_time", "time_limit", "num_nodes",
                 "max_nodes", "num_cpus", "node_list", "is_held", "is_active", "_jobs")

    def __len__(self) -> int:
        return len(self.job_id)

    def _flags(self) -> None:
        """Compute :attr:`is_held` and :attr:`is_active` (once, at parse time)."""
        pending = self.state == b"PENDING"
        self.is_held = pending & ((self.priority == 0)
                                  | np.strings.startswith(self.reason, b"JobHeld"))
        self.is_active = np.isin(self.state, _ACTIVE)

    def fingerprint(self) -> tuple[str, str]:
        """The queue's :func:`fingerprint` as of this read."""
        return fingerprint(self.job_id, self.state)

    def job(self, row: int) -> Job:
        """Row ``row`` as a :class:`Job` (name and comment are not read: "")."""
        state = self.state[row].decode()
        started = state != "PENDING"
        start = int(self.start_time[row]) or None
        nodes = self.node_list[row].decode()
        limit = int(self.time_limit[row])
        max_nodes = int(self.max_nodes[row])
        num_nodes = int(self.num_nodes[row])
        return Job(int(self.job_id[row]), "", self.user[row].decode(), int(self.user_id[row]),
                   self.partition[row].decode(), state, self.reason[row].decode(),
                   int(self.submit_time[row]), start if started else None,
                   None if started else start,
                   (int(self.end_time[row]) or None) if started else None,
                   None if limit < 0 else limit, num_nodes,
                   None if started or max_nodes <= num_nodes else max_nodes,
                   int(self.num_cpus[row]), int(self.priority[row]),
                   tuple(hostlist.expand(nodes)) if nodes else (), (),
                   bool(self.is_held[row]))

    def jobs(self) -> tuple[Job, ...]:
        """Every row as a Job (built once, then cached)."""
        if self._jobs is None:
            self._jobs = tuple(self.job(i) for i in range(len(self)))
        return self._jobs

    def __iter__(self):
        return iter(self.jobs())

    def __getitem__(self, row):
        return self.jobs()[row]


def parse_squeue(data: bytes | str, command: str = "squeue --Format") -> JobTable:
    """The compact squeue output (:func:`squeue_argv`) as a :class:`JobTable`.

    Raises:
        SlurmParseError: a line with a field too many or too few, or a number, time or
            time limit squeue never prints; the message names the line (1-based) and field.
    """
    if isinstance(data, str):
        data = data.encode()
    f = SQUEUE_FIELDS
    cells = _Cells(data, f, command, free_tail=True)
    t = JobTable.__new__(JobTable)
    t._jobs = None
    t.job_id = cells.ints("JobID")
    t.user_id = cells.ints("UserId")
    t.user = cells.text("UserName")
    t.partition = cells.text("Partition")
    state = cells.text("State")
    for flag, base in _FLAG_BASE.items():
        state = np.where(state == flag, base, state)
    t.state = state
    reason = cells.text("Reason")
    if len(reason) and (np.strings.find(reason, b",") >= 0).any():
        reason = np.strings.strip(np.strings.partition(reason, b",")[0])
    t.reason = np.where(reason == b"None", b"", reason)
    t.priority = cells.ints("PriorityLong")
    t.submit_time = cells.ints("SubmitTime", unset=0)
    t.start_time = cells.ints("StartTime", unset=0)
    t.end_time = cells.ints("EndTime", unset=0)
    t.time_limit = _limit_seconds(cells.text("TimeLimit"), f, command)
    t.num_nodes = cells.ints("NumNodes")
    t.max_nodes = cells.ints("MaxNodes", unset=0)
    t.num_cpus = cells.ints("NumCPUs")
    node_list = [b""] * cells.n
    _, s0, e0 = cells._span("NodeList")
    rows = np.flatnonzero(e0 > s0)
    for row, text in zip(rows.tolist(), cells.raw("NodeList", rows)):
        node_list[row] = text
    t.node_list = node_list
    t._flags()
    return t


class NodeTable:
    """Nodes as columns, one row per (node, partition): the groups of :func:`parse_sinfo`
    expanded.

    Attributes (numpy arrays of one length):
        name: bytes node names.
        partition: bytes partition name.
        is_available: bool, Slurm may schedule on the node (``Node.is_available``).
        cpus: int64 configured CPUs.
        alloc_cpus: int64 allocated CPUs.
        state: list of str, ``StateComplete`` (``idle+drain``) as sinfo printed it.
    """

    __slots__ = ("name", "partition", "is_available", "cpus", "alloc_cpus", "state", "_nodes")

    def usable(self, partition: str) -> tuple[list[str], np.ndarray]:
        """Names and CPUs of the available nodes of ``partition``."""
        rows = np.flatnonzero(self.is_available & (self.partition == partition.encode()))
        return [n.decode() for n in self.name[rows].tolist()], self.cpus[rows]

    def distinct_names(self) -> int:
        """How many nodes (distinct names) sinfo listed."""
        return len(set(self.name.tolist()))

    def nodes(self) -> tuple[Node, ...]:
        """One Node per node name, its partitions merged (first-seen order); cached."""
        if self._nodes is None:
            from malleo.plugin.backends.parse_json import _split_node_states

            merged: dict[str, Node] = {}
            for name, part, state, cpus, alloc in zip(
                    self.name.tolist(), self.partition.tolist(), self.state,
                    self.cpus.tolist(), self.alloc_cpus.tolist()):
                name, part = name.decode(), part.decode()
                old = merged.get(name)
                if old is not None:
                    if part and part not in old.partitions:
                        merged[name] = Node(old.name, old.state, old.flags, old.cpus,
                                            old.alloc_cpus, old.partitions + (part,))
                    continue
                base, flags = _split_node_states(state.upper().split("+"))
                merged[name] = Node(name, base, flags, cpus, alloc, (part,) if part else ())
            self._nodes = tuple(merged.values())
        return self._nodes

    def __len__(self) -> int:
        return len(self.nodes())

    def __iter__(self):
        return iter(self.nodes())

    def __getitem__(self, i):
        return self.nodes()[i]


def parse_sinfo(data: bytes | str, command: str = "sinfo --Format") -> NodeTable:
    """The compact sinfo output (:func:`sinfo_argv`) as a :class:`NodeTable`, one row per
    (node, partition).

    A line is a group of nodes sinfo found alike in the fields asked (partition, state with
    its flags, CPUs): its NodeList is a host list, expanded here (``n[1-4]``: four rows).
    ``CPUsState`` is the group's sum (sinfo adds it up, it does not split groups on it), so
    a node's ``alloc_cpus`` is exact when the group's nodes are all idle (0) or all fully
    allocated (their CPUs), or the group is one node; a group of several partly allocated
    nodes gives each the group's mean, rounded down (the cycle reads usability and CPUs,
    never the allocation; views that show it read JSON).  ``sinfo --Node`` gives one line a
    node but costs 1.2-1.3 s at 10,000 nodes (sinfo matches every node against every line
    it has printed), the grouped read 0.05-0.09 s (bench/live_cycle.py).

    Raises:
        SlurmParseError: a bad line or number (line and field named).
    """
    if isinstance(data, str):
        data = data.encode()
    f = SINFO_FIELDS
    cells = _Cells(data, f, command)
    group_state = cells.text("StateComplete")
    group_cpus = cells.ints("CPUs")
    # CPUsState is alloc/idle/other/total: the text up to the first "/" is the allocated count
    _, s0, e0 = cells._span("CPUsState")
    buf = cells.buf
    slash = np.flatnonzero(buf == ord("/"))
    at = np.searchsorted(slash, s0)
    count = np.searchsorted(slash, e0) - at
    bad = np.flatnonzero(count != 3)
    if len(bad):
        row = int(bad[0])
        text = cells.raw("CPUsState", [row])[0].decode("utf-8", "replace")
        raise SlurmParseError(f"{command}: line {row + 1}: field 5 (CPUsState): "
                              f"{text!r} is not A/I/O/T")
    cells.end[:, f.index("CPUsState")] = slash[at] if len(slash) else e0
    group_alloc = cells.ints("CPUsState")
    names: list[bytes] = []
    sizes = np.zeros(cells.n, dtype=np.int64)
    for row, text in enumerate(cells.raw("NodeList", np.arange(cells.n))):
        try:
            group = hostlist.expand(text.decode("utf-8", "replace"))
        except SlurmParseError as exc:
            raise SlurmParseError(f"{command}: line {row + 1}: field 1 (NodeList): "
                                  f"{exc}") from None
        sizes[row] = len(group)
        names.extend(n.encode() for n in group)
    t = NodeTable.__new__(NodeTable)
    t._nodes = None
    width = max((len(n) for n in names), default=1)
    t.name = np.array(names, dtype=f"S{width}")
    t.partition = np.repeat(cells.text("PartitionName"), sizes)
    t.cpus = np.repeat(group_cpus, sizes)
    per_node = np.where(group_alloc == 0, 0, np.where(
        sizes == 1, group_alloc, np.where(group_alloc == group_cpus * sizes, group_cpus,
                                          group_alloc // np.maximum(sizes, 1))))
    t.alloc_cpus = np.repeat(per_node, sizes)
    state_text = _names(group_state)
    t.state = [s for s, k in zip(state_text, sizes.tolist()) for _ in range(k)]
    t.is_available = np.repeat(available(group_state), sizes)
    return t


def available(states: np.ndarray) -> np.ndarray:
    """:attr:`Node.is_available` of each ``StateComplete`` text (``idle+drain``, any case,
    bytes), decided once per distinct text."""
    from malleo.plugin.backends.parse_json import _split_node_states

    uniq, inverse = np.unique(states, return_inverse=True)
    avail = []
    for s in uniq.tolist():
        base, flags = _split_node_states(s.decode("utf-8", "replace").upper().split("+"))
        avail.append(base in _AVAILABLE_BASE and not UNAVAILABLE_NODE_FLAGS.intersection(flags))
    return np.array(avail, dtype=bool)[inverse.reshape(-1)] if len(states) else \
        np.zeros(0, dtype=bool)
