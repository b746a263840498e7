"""Every policy knob, defined once: name, type, range, default, unit, help, CLI option.

The policy file reader (``malleo.policy_file``), the dataclasses' own checks
(``malleo.policy``), the CLI options (``emulator/cli/_options.py``), the tuning space
(``emulator/tune/space.py``) and the option tables of docs/policy-file.md all derive from
:data:`KNOBS`; a value is checked by :meth:`Knob.problem` wherever it enters (TOML, an
option, ``Policy(...)``), against the core's limits (``malleo.limits``: times up to
MAX_TIME seconds, sizes up to MAX_PROCS processors; floats finite).

Roles: ``scheduler`` knobs describe what the scheduler does (a live policy file's
business: the top level, ``[multifactor]``, ``[malleability]``); ``workload`` knobs
synthesise flexible jobs from a rigid trace (the ``[flexible]`` table, emulator only:
which jobs become moldable or malleable and their size range; ``malleo.flexible``).

Adding a knob: one :class:`Knob` entry here and its field in the dataclass of
``malleo.policy`` (and, if the core reads it, one field in ``policy_codes.CorePolicy``).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from malleo.limits import MAX_PREDICT_RUNS, MAX_PROCS, MAX_TIME

__all__ = ["Knob", "KNOBS", "knob", "table_knobs", "markdown_table", "MAX_JOBS", "MAX_SEED"]

MAX_JOBS = 2**31 - 1
"""The largest job count a knob takes (``bf_max_job_test``)."""

MAX_SEED = 2**63 - 1
"""The largest random seed (seeds are 0..MAX_SEED)."""

MAX_SWF_NUMBER = 2**31 - 1
"""SWF user / queue / partition numbers are -1..MAX_SWF_NUMBER."""


@dataclass(frozen=True)
class Knob:
    """One policy knob.

    Attributes:
        table: its policy-file table: ``""`` (top level), ``multifactor``, ``malleability``
            (scheduler), ``flexible`` (workload synthesis, emulator only).
        name: its key in that table and its field in the dataclass.
        type: ``choice`` | ``int`` | ``float`` | ``bool`` | ``int list`` | ``speedup``.
        default: the value when absent.
        help: one line: what it means.
        unit: ``seconds``, ``processors``, ``jobs``, ``watts`` or ``""``.
        low, high: inclusive range of a number (None: unbounded on that side).
        low_open: ``low`` itself is excluded.
        choices: the values of a choice.
        option: the CLI option setting it (``--bf-window``), None if none.
        metavar: the CLI option's metavar.
        role: ``scheduler``, ``workload`` (``[flexible]``) or ``metric`` (``[power]``: how
            a replay is measured, emulator only).
    """

    table: str
    name: str
    type: str
    default: Any
    help: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    option: str | None = None
    metavar: str | None = None
    role: str = "scheduler"

    @property
    def key(self) -> str:
        """The dotted policy-file key, e.g. ``multifactor.weight_age``."""
        return f"{self.table}.{self.name}" if self.table else self.name

    @property
    def toml_type(self) -> str:
        """The TOML type the file must use: string, integer, number, boolean, integer array."""
        return {"choice": "string", "speedup": "string", "int": "integer", "float": "number",
                "bool": "boolean", "int list": "integer array"}[self.type]

    def range_text(self) -> str:
        """The valid values in words, e.g. ``in 1..68719476736`` or ``one of a, b``."""
        if self.type == "choice":
            return "one of " + ", ".join(self.choices)
        if self.type == "bool":
            return "true or false"
        if self.type == "speedup":
            return "linear | amdahl:F | downey:A,SIGMA (LO~HI: per job)"
        lo = "" if self.low is None else _num(self.low)
        hi = "" if self.high is None else _num(self.high)
        if self.type in ("int", "int list"):
            return f"in {lo}..{hi}"
        return f"in {'(' if self.low_open else '['}{lo}, {hi}]"

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (already of the right Python type), or None."""
        if self.type == "choice":
            return None if value in self.choices else \
                f"must be one of {', '.join(self.choices)}, got {value!r}"
        if self.type == "bool":
            return None if isinstance(value, bool) else f"must be a boolean, got {value!r}"
        if self.type == "speedup":
            from malleo.errors import PolicyError
            from malleo.policy import parse_speedup
            try:
                parse_speedup(value)
            except PolicyError as exc:
                return str(exc).split(": ", 1)[-1]
            return None
        values = list(value) if self.type == "int list" else [value]
        for v in values:
            what = self._number_problem(v)
            if what:
                return what
        return None

    def _number_problem(self, v: Any) -> str | None:
        unit = f" {self.unit}" if self.unit else ""
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return f"must be a number, got {v!r}"
        if self.type in ("int", "int list") and not isinstance(v, numbers.Integral):
            return f"must be an integer, got {v!r}"
        if not isinstance(v, numbers.Integral) and not math.isfinite(v):
            return f"must be a finite number {self.range_text()}{unit}, got {v}"
        low_bad = self.low is not None and (v <= self.low if self.low_open else v < self.low)
        high_bad = self.high is not None and v > self.high
        if low_bad or high_bad:
            return f"must be {self.range_text()}{unit}, got {v}"
        return None

    def check(self, value: Any, where: str | None = None) -> Any:
        """``value`` normalised to the knob's type (ints, floats, tuples), or
        :class:`malleo.errors.PolicyError` ``WHERE: what is wrong`` (``where`` defaults to
        the dotted key)."""
        from malleo.errors import PolicyError

        what = self.problem(value)
        if what:
            raise PolicyError(f"{where or self.key}: {what}")
        if self.type == "int":
            return int(value)
        if self.type == "float":
            return float(value)
        if self.type == "int list":
            return tuple(int(v) for v in value)
        return value


def _num(x: float) -> str:
    """An integral bound without a decimal point (1e15 is written as is)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


_S = "seconds"

# The names of every choice, in the order of the core's codes (the one definition: the
# enums of _core/_types.pxd and _core/malleable.pxd follow it, tests/test_core_codes.py).
ORDERS = ("fcfs", "sjf", "ljf", "saf", "wfp3", "unicep", "f1", "multifactor")
BACKFILLS = ("none", "easy", "conservative", "slurm")
ESTIMATES = ("request", "actual", "predict", "learned")
PREDICT_COLD = ("fewer", "request")
CORRECTIONS = ("request", "incremental")
SIZE_FAVOR = ("small", "large")
BF_ROUNDINGS = ("up", "down")
BACKFILL_ORDERS = ("queue", "sjf")
PREDICT_ATS = ("pass", "submit")
JOB_KINDS = ("rigid", "moldable", "malleable")
SPEEDUP_MODELS = ("linear", "amdahl", "downey")
RECONFIG_POLICIES = ("none", "dmr", "head-unblock", "efficiency")
START_SIZES = ("full", "min", "preferred", "fit")
RECONFIG_POINTS = ("any", "checkin")
ESTIMATE_SCALINGS = ("speedup", "fixed")
EXPAND_MODES = ("in-place", "slurm")

KNOBS: tuple[Knob, ...] = (
    # ----------------------------------------------------------------- top level
    Knob("", "order", "choice", "fcfs", "queue order", choices=ORDERS, option="--order"),
    Knob("", "backfill", "choice", "easy", "backfill mode", choices=BACKFILLS,
         option="--backfill"),
    Knob("", "estimate", "choice", "request", "runtime estimate used for planning",
         choices=ESTIMATES, option="--estimate"),
    Knob("", "bf_max_job_test", "int", 500,
         "slurm backfill: jobs given a reservation per pass (1 = EASY)", "jobs", 1, MAX_JOBS,
         option="--bf-max-job-test", metavar="K"),
    Knob("", "bf_window", "int", 86400,
         "slurm backfill: how far ahead reservations are made", _S, 1, MAX_TIME,
         option="--bf-window", metavar="SECONDS"),
    Knob("", "bf_resolution", "int", 60,
         "slurm backfill: planned starts rounded up to this many seconds", _S, 1, MAX_TIME,
         option="--bf-resolution", metavar="SECONDS"),
    Knob("", "bf_rounding", "choice", "up",
         "slurm backfill: how bf_resolution rounds (down: Slurm's own, exact ends, "
         "reservations held from the grid instant before)", choices=BF_ROUNDINGS,
         option="--bf-rounding"),
    Knob("", "predict_runs", "int", 2,
         "predict: how many of the user's last completed runs are averaged", "jobs", 1,
         MAX_PREDICT_RUNS, option="--predict-runs", metavar="N"),
    Knob("", "predict_cold", "choice", "fewer",
         "predict: a user with fewer completed runs than predict_runs gets the mean of "
         "those (the request when none), or the request", choices=PREDICT_COLD,
         option="--predict-cold"),
    Knob("", "predict_at", "choice", "pass",
         "predict: when a waiting job's prediction is made: at every pass from the runs "
         "completed so far, or once, from the runs completed by its submission",
         choices=PREDICT_ATS, option="--predict-at"),
    Knob("", "correction", "choice", "request",
         "a running job that outlives its estimate: expected end moved to its request, or "
         "Tsafrir's increments (1 min, 5 min, 15 min, ... 100 h) capped at the request",
         choices=CORRECTIONS, option="--correction"),
    Knob("", "backfill_order", "choice", "queue",
         "order in which backfill tries the jobs behind the head (sjf: shortest estimate "
         "first, SJBF; the head keeps its place)", choices=BACKFILL_ORDERS,
         option="--backfill-order"),
    # ----------------------------------------------------------------- [multifactor]
    Knob("multifactor", "weight_age", "float", 1000.0,
         "weight of the age factor min(wait, max_age) / max_age", "", 0.0, 1e15),
    Knob("multifactor", "weight_size", "float", 0.0, "weight of the job size factor", "",
         0.0, 1e15),
    Knob("multifactor", "weight_fairshare", "float", 1000.0,
         "weight of the fair-share factor 2^(-usage / shares)", "", 0.0, 1e15),
    Knob("multifactor", "weight_queue", "float", 0.0,
         "weight of the queue factor (queue_factors)", "", 0.0, 1e15),
    Knob("multifactor", "weight_partition", "float", 0.0,
         "weight of the partition factor (partition_factors)", "", 0.0, 1e15),
    Knob("multifactor", "max_age", "int", 7 * 86400,
         "seconds of waiting at which the age factor reaches 1", _S, 1, MAX_TIME),
    Knob("multifactor", "size_favor", "choice", "small",
         "which jobs the size factor favours", choices=SIZE_FAVOR),
    Knob("multifactor", "half_life", "int", 7 * 86400,
         "half-life of the decay of past usage (fair share; only divides, so a huge value "
         "means no decay)", _S, 1, 2**62),
    Knob("multifactor", "calc_period", "int", 300, "seconds between priority recomputations",
         _S, 1, MAX_TIME),
    # ----------------------------------------------------------------- [malleability]
    Knob("malleability", "power_of_two", "bool", False,
         "sizes chosen by the core are powers of two", option="--power-of-two/--any-size"),
    Knob("malleability", "speedup", "speedup", "amdahl:0.05",
         "speedup model of a flexible job (replay: a parameter LO~HI is drawn per job from "
         "the flexible seed; live: its midpoint)", option="--speedup", metavar="MODEL"),
    Knob("malleability", "reconfig_fixed", "float", 0.0,
         "fixed cost of a reconfiguration (no progress)", _S, 0.0, float(MAX_TIME)),
    Knob("malleability", "reconfig_per_proc", "float", 0.0,
         "cost per processor added or removed", _S, 0.0, float(MAX_TIME)),
    Knob("malleability", "min_interval", "int", 0,
         "minimum time between two reconfigurations of a job", _S, 0, MAX_TIME,
         option="--min-interval", metavar="SECONDS"),
    Knob("malleability", "points", "choice", "any",
         "resize at any pass, or at check-in points", choices=RECONFIG_POINTS),
    Knob("malleability", "checkin_period", "int", 300,
         "seconds between a job's check-in points (points = checkin)", _S, 1, MAX_TIME),
    Knob("malleability", "estimate_scaling", "choice", "speedup",
         "a resized job's request scales with its speedup, or stays a wall-clock limit",
         choices=ESTIMATE_SCALINGS, option="--estimate-scaling"),
    Knob("malleability", "policy", "choice", "dmr", "what resizes running malleable jobs",
         choices=RECONFIG_POLICIES, option="--reconfig-policy"),
    Knob("malleability", "moldable_start", "bool", False,
         "a blocked moldable queue head starts at the size with the earliest expected end",
         option="--moldable-start/--no-moldable-start"),
    Knob("malleability", "expand_mode", "choice", "in-place",
         "how an expansion gets its processors (at once, or a queued expander request)",
         choices=EXPAND_MODES, option="--expand-mode"),
    Knob("malleability", "start_size", "choice", "full",
         "the size a flexible job asks for in the queue: its trace size, its min, its "
         "preferred size (efficiency above efficiency_threshold), or the largest >= min "
         "that fits now without delaying a reservation", choices=START_SIZES,
         option="--start-size"),
    Knob("malleability", "efficiency_threshold", "float", 0.8,
         "preferred size: the largest whose parallel efficiency S(p)/p under the job's "
         "speedup model is at least this", "", 0.0, 1.0, low_open=True,
         option="--efficiency-threshold", metavar="E"),
    Knob("malleability", "min_gain", "int", 0,
         "a resize is taken only if the resized (expand) or started (shrink-to-start) job's "
         "expected completion gets earlier by more than this", _S, 0, MAX_TIME,
         option="--min-gain", metavar="SECONDS"),
    # ----------------------------------------------------------------- [flexible]
    # workload synthesis: which rigid trace jobs the emulator turns into flexible ones
    Knob("flexible", "fraction", "float", 0.0,
         "share of the eligible jobs made flexible (0: all rigid)", "", 0.0, 1.0,
         option="--malleable", metavar="FRACTION", role="workload"),
    Knob("flexible", "kind", "choice", "malleable", "what the chosen jobs become",
         choices=("malleable", "moldable"), option="--flex-kind", role="workload"),
    Knob("flexible", "seed", "int", 0,
         "seed of the choice and of per-job speedup draws", "", 0, MAX_SEED,
         option="--flex-seed", metavar="SEED", role="workload"),
    Knob("flexible", "min_procs", "int", 1,
         "only jobs of at least this many processors are eligible", "processors", 1,
         MAX_PROCS, option="--flex-min-procs", metavar="K", role="workload"),
    Knob("flexible", "queues", "int list", (),
         "only jobs of these SWF queues are eligible (empty: any)", "", -1, MAX_SWF_NUMBER,
         option="--flex-queue", metavar="QUEUE", role="workload"),
    Knob("flexible", "users", "int list", (),
         "only jobs of these SWF users are eligible (empty: any)", "", -1, MAX_SWF_NUMBER,
         option="--flex-user", metavar="USER", role="workload"),
    Knob("flexible", "min_factor", "float", 0.5,
         "min size = max(1, floor(p0 x min_factor))", "", 0.0, 1.0, low_open=True,
         option="--min-factor", metavar="X", role="workload"),
    Knob("flexible", "max_factor", "float", 2.0,
         "max size = min(P, ceil(p0 x max_factor))", "", 1.0, float(MAX_PROCS),
         option="--max-factor", metavar="X", role="workload"),
    # ----------------------------------------------------------------- [power]
    # measurement: the power model of the energy metrics (emulator/power.py), not a policy
    Knob("power", "idle_watts", "float", 5.0,
         "power drawn by an idle processor", "watts", 0.0, 1e6, option="--idle-watts",
         metavar="WATTS", role="metric"),
    Knob("power", "busy_watts", "float", 20.0,
         "power drawn by a processor held by a job (reconfiguring included)", "watts",
         0.0, 1e6, option="--busy-watts", metavar="WATTS", role="metric"),
)
"""Every knob, in policy-file order."""

_BY_KEY = {k.key: k for k in KNOBS}


def knob(key: str) -> Knob:
    """The knob of a dotted key (``bf_window``, ``multifactor.half_life``)."""
    return _BY_KEY[key]


def table_knobs(table: str) -> dict[str, Knob]:
    """name -> knob of one policy-file table (``""`` for the top level), in file order."""
    return {k.name: k for k in KNOBS if k.table == table}


def option_dest(k: Knob) -> str:
    """The Python parameter name of a knob's CLI option (``--flex-seed`` -> flex_seed)."""
    first = k.option.split("/")[0]
    return first.lstrip("-").replace("-", "_")


def markdown_table(table: str) -> str:
    """The docs' table of one policy-file table: key, TOML type, valid values, default,
    CLI option, meaning (docs/policy-file.md embeds it; tests/test_knobs.py checks)."""
    rows = ["| key | type | valid values | default | option | meaning |",
            "|---|---|---|---|---|---|"]
    for k in table_knobs(table).values():
        unit = f" {k.unit}" if k.unit and k.type in ("int", "float") else ""
        default = list(k.default) if isinstance(k.default, tuple) else k.default
        default = str(default).lower() if isinstance(default, bool) else default
        option = f"`{k.option}`" if k.option else ""
        role = ""
        rows.append(f"| `{k.name}` | {k.toml_type} | {k.range_text().replace('|', '&#124;')}"
                    f"{unit} | `{default}` | {option} | {role}{k.help} |")
    return "\n".join(rows)


def option_table(table: str) -> str:
    """The docs' table of the CLI options of one policy-file table's knobs: option,
    valid values, default, meaning (docs/cli.md embeds it)."""
    rows = ["| option | values | default | meaning |", "|---|---|---|---|"]
    for k in table_knobs(table).values():
        if not k.option:
            continue
        unit = f" {k.unit}" if k.unit and k.type in ("int", "float") else ""
        default = list(k.default) if isinstance(k.default, tuple) else k.default
        default = {True: "on", False: "off"}.get(default, default) \
            if isinstance(default, bool) else default
        name = " / ".join(f"`{o}`" for o in k.option.split("/"))
        if k.metavar:
            name = f"`{k.option} {k.metavar}`"
        repeat = " (repeatable)" if k.type == "int list" else ""
        rows.append(f"| {name} | {k.range_text().replace('|', '&#124;')}{unit}{repeat} | "
                    f"`{default}` | {k.help} |")
    return "\n".join(rows)


def _table_of(marker: str) -> str:
    """The generated table of a docs marker: ``top``, ``multifactor``, ``malleability``,
    ``flexible`` (policy-file tables) or ``options:top``, ``options:malleability``,
    ``options:flexible`` (CLI options)."""
    if marker.startswith("options:"):
        name = marker.split(":", 1)[1]
        return option_table("" if name == "top" else name)
    return markdown_table("" if marker == "top" else marker)


def write_docs(path: str) -> None:
    """Rewrite the generated tables (``<!-- knobs:NAME -->`` ... ``<!-- /knobs -->``) of a
    docs page from the schema."""
    import re
    from pathlib import Path

    page = Path(path)
    text = page.read_text()
    text = re.sub(r"(<!-- knobs:([\w:]+) -->\n).*?(<!-- /knobs -->)",
                  lambda m: m.group(1) + _table_of(m.group(2)) + "\n" + m.group(3),
                  text, flags=re.S)
    page.write_text(text)


if __name__ == "__main__":
    # python -m malleo.knobs: print the docs' tables; --write-docs: rewrite them in place
    import sys

    if sys.argv[1:] == ["--write-docs"]:
        docs = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs"
        for page in ("policy-file.md", "cli.md"):
            write_docs(str(docs / page))
    else:
        for name in ("", "multifactor", "malleability", "flexible", "power"):
            print(f"<!-- knobs:{name or 'top'} -->\n{markdown_table(name)}\n<!-- /knobs -->\n")
