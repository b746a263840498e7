"""Options shared by the replay-like commands: the policy options and the workload options.

Policy options override the keys of a ``--config`` policy file, which override the
defaults of :class:`malleo.policy.Policy`.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

import click

from malleo.errors import MalleoError, PolicyError
from malleo.emulator.swf_clean import OVERRUN, PROCS_FROM
from malleo.flexible import FlexibleJobs
from malleo.limits import MAX_PROCS
from malleo.knobs import Knob, knob, option_dest, table_knobs
from malleo.policy import PRESETS, Policy, preset

POLICY_KEYS = tuple(name for name, k in table_knobs("").items() if k.option)
"""Policy attributes settable by an option of the same name (``--bf-window`` etc.)."""

TOP_SPEC_KEYS = tuple(name for name, k in table_knobs("").items() if k.type in ("choice", "int"))
"""Top-level knobs a ``compare --policy`` column may set with ``;KEY=VALUE``."""


class KnobParam(click.ParamType):
    """A knob's value from the command line, checked by the knob's own rule (exit 2 with
    ``Invalid value for '--OPTION': what is wrong``)."""

    def __init__(self, k: Knob):
        self.knob = k
        self.name = "integer" if k.type in ("int", "int list") else "number" \
            if k.type == "float" else "text"

    def convert(self, value, param, ctx):
        k = self.knob
        if k.type in ("int", "int list") and not isinstance(value, int):
            try:
                value = int(str(value).strip(), 10)
            except ValueError:
                self.fail(f"{value!r} is not an integer", param, ctx)
        elif k.type == "float" and not isinstance(value, (int, float)):
            try:
                value = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        what = k.problem([value] if k.type == "int list" else value)
        if what:
            self.fail(what, param, ctx)
        return value


def knob_option(k: Knob) -> Callable:
    """The click option of a knob (its ``option`` name, type, check and help)."""
    default = list(k.default) if isinstance(k.default, tuple) else k.default
    shown = {True: "on", False: "off"}.get(default, default) if k.type == "bool" else default
    help_text = f"{k.help[:1].upper()}{k.help[1:]}"
    if k.unit and k.type in ("int", "float") and k.unit != "jobs":
        help_text += f" ({k.unit})"
    if k.type == "int list":
        return click.option(k.option, option_dest(k), type=KnobParam(k), multiple=True,
                            metavar=k.metavar, help=f"{help_text} (repeatable).")
    if k.type == "bool":
        return click.option(k.option, option_dest(k), default=None,
                            help=f"{help_text}. [default: {shown}]")
    kind = click.Choice(k.choices) if k.type == "choice" else KnobParam(k)
    return click.option(k.option, option_dest(k), type=kind, default=None, metavar=k.metavar,
                        help=f"{help_text}. [default: {shown}]")


def policy_options(func: Callable) -> Callable:
    """Add ``--config`` and the options of the top-level knobs (``--order``,
    ``--backfill``, ``--estimate``, ``--bf-*``; malleo.knobs) to a command.

    The command receives them under their names; build the policy with
    :func:`policy_from_options`.
    """
    options = [
        click.option("--config", "config", type=click.Path(dir_okay=False),
                     envvar="MALLEO_POLICY", show_envvar=True,
                     help="Policy file (TOML, see docs/policy-file.md); the options below "
                          "override its keys."),
        click.option("--preset", "preset", type=click.Choice(sorted(PRESETS)), default=None,
                     help="A named policy shortcut applied over --config (easy++: EASY, "
                          "SJF backfill-candidate order, predictions made at submission, "
                          "Tsafrir's increments); the options below override it."),
        *(knob_option(k) for k in table_knobs("").values() if k.option),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def policy_from_options(config: str | None, **overrides: Any) -> tuple[Policy, FlexibleJobs]:
    """The policy of ``config`` (or the defaults) with the non-None ``overrides`` applied,
    and the file's ``[flexible]`` table (workload synthesis; default: all rigid).

    Raises:
        PolicyError: the file is unreadable or invalid (``FILE:LINE: key: ...``).
    """
    if config:
        from malleo.policy_file import load_config      # TOML reading: only with a file
        policy, flexible = load_config(config)
    else:
        policy, flexible = Policy(), FlexibleJobs()
    if overrides.get("preset"):
        policy = preset(overrides["preset"], policy)
    changes = {k: v for k, v in overrides.items() if k in POLICY_KEYS and v is not None}
    return (policy.replace(**changes) if changes else policy), flexible


def _check_slice(_ctx: click.Context, param: click.Parameter, value: str | None):
    if value is None:
        return None
    from malleo.emulator.driver import parse_slice

    try:
        return parse_slice(value)
    except MalleoError as exc:
        raise click.BadParameter(str(exc).removeprefix("jobs: "), param=param) from None



TRACE_READING_OPTIONS = (
    click.option("--lenient", is_flag=True,
                 help="Skip malformed trace lines (counted) instead of failing."),
    click.option("--procs-from", type=click.Choice(PROCS_FROM),
                 default="allocated", show_default=True,
                 help="Which SWF processor field gives a job's size (the other is the "
                      "fallback when it is missing)."),
    click.option("--overrun", type=click.Choice(OVERRUN), default="extend",
                 show_default=True,
                 help="A job that ran longer than requested: extend its estimate to "
                      "its runtime, or cut its runtime at the request."),
)
"""How a command reads a trace (``lenient``, ``procs_from``, ``overrun``; read_options)."""


def trace_reading_options(func: Callable) -> Callable:
    """Add :data:`TRACE_READING_OPTIONS` to a command (``malleo trace info``, ``rescale``)."""
    for option in reversed(TRACE_READING_OPTIONS):
        func = option(func)
    return func


def workload_options(func: Callable) -> Callable:
    """Add the machine, slice, trace-reading and metric options to a command.

    The command receives ``procs``, ``node_procs``, ``jobs`` (a (start, count) tuple or
    None), ``lenient``, ``procs_from``, ``overrun``, ``bsld_threshold``.
    """
    options = [
        click.option("--procs", type=click.IntRange(min=1, max=MAX_PROCS), default=None,
                     help="Processors of the machine. [default: the trace header's]"),
        click.option("--node-procs", type=click.IntRange(min=0, max=MAX_PROCS), default=0,
                     metavar="C",
                     help="Allocate whole nodes of C processors (node-exclusive machine); "
                          "0: processor by processor. [default: 0]"),
        click.option("--jobs", "jobs", default=None, metavar="START:COUNT",
                     callback=_check_slice,
                     help="Replay only COUNT jobs from position START (0-based, in submit "
                          "order) on an empty machine."),
        *TRACE_READING_OPTIONS,
        click.option("--bsld-threshold", type=click.FloatRange(min=0, min_open=True),
                     default=10.0, show_default=True, metavar="SECONDS",
                     help="Threshold tau of the bounded slowdown."),
        click.option("--load", "load", type=click.FloatRange(min=0, min_open=True, max=1000),
                     default=None, metavar="RHO",
                     help="Scale the replayed jobs' arrival times to reach offered load RHO "
                          "(sum procs x runtime / (P x submit span); docs/traces.md). "
                          "[default: as in the trace]"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def read_options(lenient: bool, procs_from: str, overrun: str) -> dict[str, Any]:
    """The ``read_swf`` keyword options from the CLI's trace-reading flags."""
    return {"lenient": lenient, "procs_from": procs_from, "overrun": overrun}


_SPEC = re.compile(r"(?P<order>[a-z0-9]+)\+(?P<backfill>[a-z]+)(?:\(k=(?P<k>\d+)\))?"
                   r"(?P<sjbf>\+sjbf)?"
                   r"(?:/(?P<estimate>[a-z]+)(?:\[(?P<variant>[^\]]*)\])?)?"
                   r"(?:/(?P<correction>[a-z]+))?")

_VARIANT_KEYS = {"runs": "predict_runs", "cold": "predict_cold", "at": "predict_at"}
"""The keys of the ``[...]`` after ``/predict`` in a policy name -> their knob."""


def _spec_value(spec: str, name: str, text: str) -> Any:
    """A top-level knob's value written in a policy name or a ;KEY=VALUE pair, checked."""
    k = knob(name)
    try:
        value: Any = int(text, 10) if k.type == "int" else text
    except ValueError:
        raise MalleoError(f"{spec!r}: {name}={text!r} is not a {k.toml_type}") from None
    try:
        return k.check(value, f"{spec!r}: {name}")
    except PolicyError as exc:
        raise MalleoError(str(exc)) from None


def parse_policy_spec(spec: str, base: Policy | None = None) -> Policy:
    """``ORDER+BACKFILL[(K=N)][+sjbf][/ESTIMATE[[runs=N,cold=C,at=A]]][/CORRECTION]`` or
    a preset name (``easy++``): what :meth:`Policy.describe` prints for a rigid policy.

    Examples: ``fcfs+easy``, ``sjf+conservative``, ``fcfs+slurm(K=50)``, ``wfp3+easy/predict``,
    ``fcfs+easy+sjbf/predict[runs=3,cold=request,at=submit]/incremental``, ``easy++``.

    Raises:
        PolicyError / MalleoError: not of that form or an unknown name.
    """
    if spec.strip().lower() in PRESETS:
        return preset(spec.strip().lower(), base)
    match = _SPEC.fullmatch(spec.strip().lower())
    if not match:
        raise MalleoError(f"expected ORDER+BACKFILL[(K=N)][+sjbf][/ESTIMATE][/CORRECTION] or "
                          f"{' | '.join(PRESETS)}, e.g. fcfs+easy, got {spec!r}")
    changes: dict[str, Any] = {"order": match["order"], "backfill": match["backfill"]}
    if match["k"]:
        if match["backfill"] != "slurm":
            raise MalleoError(f"(K=N) applies to slurm backfill only, got {spec!r}")
        try:
            changes["bf_max_job_test"] = knob("bf_max_job_test").check(
                int(match["k"]), f"{spec}: K (bf_max_job_test)")
        except PolicyError as exc:
            raise MalleoError(str(exc)) from None
    if match["sjbf"]:
        changes["backfill_order"] = "sjf"
    estimate, correction = match["estimate"], match["correction"]
    if (estimate and not correction and match["variant"] is None
            and estimate in knob("correction").choices
            and estimate not in knob("estimate").choices):
        estimate, correction = None, estimate      # fcfs+easy/incremental: request estimate
    if estimate:
        changes["estimate"] = estimate
    if match["variant"] is not None:
        if estimate != "predict":
            raise MalleoError(f"{spec!r}: [runs=N,cold=C,at=A] applies to /predict only")
        for pair in filter(None, (p.strip() for p in match["variant"].split(","))):
            key, sep, text = (p.strip() for p in pair.partition("="))
            if not sep or key not in _VARIANT_KEYS:
                raise MalleoError(f"{spec!r}: expected {', '.join(_VARIANT_KEYS)}=VALUE in "
                                  f"[...], got {pair!r}")
            changes[_VARIANT_KEYS[key]] = _spec_value(spec, _VARIANT_KEYS[key], text)
    if correction:
        changes["correction"] = _spec_value(spec, "correction", correction)
    return (base or Policy()).replace(**changes)


def quiet_option(func: Callable) -> Callable:
    """``--quiet``: no progress line on stderr."""
    return click.option("--quiet", "-q", is_flag=True,
                        help="No progress indication on stderr.")(func)



_WORKLOAD_KNOBS = tuple(k for k in table_knobs("flexible").values() if k.option)
"""The workload-synthesis knobs (``[flexible]``) with an option of their own."""

_MALL_KNOBS = tuple(k for k in table_knobs("malleability").values() if k.option)
"""The scheduler's resizing knobs (``[malleability]``) with an option of their own."""

_FLEX_KNOBS = (*_WORKLOAD_KNOBS, *_MALL_KNOBS)
"""Every knob :func:`malleability_options` adds an option for, in --help order."""

MALLEABILITY_OPTION_KEYS = (*(option_dest(k) for k in _FLEX_KNOBS), "reconfig_cost",
                            "reconfig_points")
"""Parameter names :func:`malleability_options` adds to a command."""


def malleability_options(func: Callable) -> Callable:
    """Add the flexible-job options (docs/malleability.md) to a command; apply them with
    :func:`apply_malleability_options`.  The workload-synthesis options (``--malleable``,
    ``--flex-*``, ``--min-factor``, ``--max-factor``) override the ``[flexible]`` keys, the
    others the policy's ``[malleability]`` keys; none given leaves both as they are.  One
    option per knob with an ``option`` (malleo.knobs), plus ``--reconfig-cost`` (two
    knobs) and ``--reconfig-points`` (two knobs)."""
    options = [knob_option(k) for k in _FLEX_KNOBS]
    options.insert(
        [option_dest(k) for k in _FLEX_KNOBS].index("min_interval"),
        click.option("--reconfig-cost", default=None, metavar="FIXED+PER_PROC",
                     help="Seconds without progress per reconfiguration: FIXED plus PER_PROC "
                          "per processor moved, e.g. 10+0.5. [default: 0+0]"))
    options.insert(
        [option_dest(k) for k in _FLEX_KNOBS].index("min_interval") + 2,
        click.option("--reconfig-points", default=None, metavar="any|checkin:SECONDS",
                     help="Resize at any pass, or at check-in points every SECONDS. "
                          "[default: any]"))
    for option in reversed(options):
        func = option(func)
    return func


def _given(knobs: tuple[Knob, ...], values: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for k in knobs:
        value = values.get(option_dest(k))
        if value is not None and value != ():
            changes[k.name] = k.check(tuple(value) if k.type == "int list" else value,
                                      k.option.split("/")[0])
    return changes


def apply_malleability_options(policy: Policy, flexible: FlexibleJobs | None = None,
                               **values: Any) -> tuple[Policy, FlexibleJobs]:
    """``policy`` and ``flexible`` (None: all rigid) with the given flexible-job options
    (None / empty: unchanged) applied.

    Raises:
        MalleoError / PolicyError: a malformed ``--reconfig-cost``, ``--reconfig-points``
            or ``--speedup``, or an out-of-range value (named by its option).
    """
    flexible = FlexibleJobs() if flexible is None else flexible
    synth = _given(_WORKLOAD_KNOBS, values)
    if synth:
        flexible = flexible.replace(**synth)
    changes = _given(_MALL_KNOBS, values)
    cost = values.get("reconfig_cost")
    if cost is not None:
        match = re.fullmatch(r"\s*([0-9.]+)\s*(?:\+\s*([0-9.]+)\s*)?", cost)
        try:
            fixed = float(match.group(1))
            per_proc = float(match.group(2) or 0.0)
        except (AttributeError, ValueError):
            raise MalleoError(f"--reconfig-cost: expected FIXED+PER_PROC seconds "
                              f"(e.g. 10+0.5), got {cost!r}") from None
        changes["reconfig_fixed"] = knob("malleability.reconfig_fixed").check(
            fixed, "--reconfig-cost FIXED")
        changes["reconfig_per_proc"] = knob("malleability.reconfig_per_proc").check(
            per_proc, "--reconfig-cost PER_PROC")
    points = values.get("reconfig_points")
    if points is not None:
        match = re.fullmatch(r"\s*(any|checkin)(?::(\d+))?\s*", points)
        if not match or (match.group(1) == "any" and match.group(2)):
            raise MalleoError(f"--reconfig-points: expected any or checkin:SECONDS, "
                              f"got {points!r}")
        changes["points"] = match.group(1)
        if match.group(2):
            changes["checkin_period"] = knob("malleability.checkin_period").check(
                int(match.group(2)), "--reconfig-points checkin:SECONDS")
    if changes:
        policy = policy.replace(malleability=dataclasses.replace(policy.malleability, **changes))
    return policy, flexible


_POWER_KNOBS = tuple(table_knobs("power").values())
"""The power model's knobs (``--idle-watts``, ``--busy-watts``)."""

POWER_OPTION_KEYS = tuple(option_dest(k) for k in _POWER_KNOBS)
"""Parameter names :func:`power_options` adds to a command."""


def power_options(func: Callable) -> Callable:
    """Add the power model options of the energy metrics (docs/metrics.md) to a command;
    build the model with :func:`power_from_options`."""
    for k in reversed(_POWER_KNOBS):
        func = knob_option(k)(func)
    return func


def power_from_options(**values: Any):
    """The :class:`malleo.emulator.power.PowerModel` of the given options (None: default)."""
    from malleo.emulator.power import PowerModel

    return PowerModel(**_given(_POWER_KNOBS, values))


def parse_column_spec(spec: str) -> tuple[Policy, dict[str, Any], dict[str, Any]]:
    """A ``malleo compare --policy`` column: a policy name (:func:`parse_policy_spec`)
    followed by ``;KEY=VALUE`` pairs, each KEY a top-level policy knob with a choice or
    integer value (``predict_runs``, ``predict_at``, ``correction``, ``backfill_order``,
    ``bf_window``, ...) or a knob of ``[malleability]`` or ``[flexible]`` (``fraction``,
    ``policy``, ``speedup``, ``reconfig_fixed``, ...; dotted ``malleability.policy``
    also), e.g. ``fcfs+easy/predict;predict_at=submit`` or
    ``fcfs+easy;fraction=0.5;policy=head-unblock``.  An ``int list`` value is
    comma-separated (``users=3,7``), a boolean true/false.

    Returns:
        (policy with the top-level pairs applied, [malleability] changes, [flexible]
        changes).

    Raises:
        MalleoError: a malformed pair, an unknown key or a bad value (naming it).
    """
    head, *pairs = [part.strip() for part in spec.split(";")]
    policy = parse_policy_spec(head)
    tables: dict[str, dict[str, Any]] = {"malleability": {}, "flexible": {}}
    top: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = (p.strip() for p in pair.partition("="))
        if not sep or not key:
            raise MalleoError(f"{spec!r}: expected KEY=VALUE after ';', got {pair!r}")
        if key in TOP_SPEC_KEYS:
            top[key] = _spec_value(spec, key, text)
            continue
        table, _, name = key.rpartition(".")
        found = [t for t in ((table,) if table else ("malleability", "flexible"))
                 if name in table_knobs(t) and t in tables]
        if not found:
            allowed = [*TOP_SPEC_KEYS, *table_knobs("malleability"), *table_knobs("flexible")]
            raise MalleoError(f"{spec!r}: unknown key {key!r} (a top-level, [malleability] "
                              f"or [flexible] knob: {', '.join(allowed)})")
        k = table_knobs(found[0])[name]
        try:
            if k.type == "int":
                value: Any = int(text, 10)
            elif k.type == "float":
                value = float(text)
            elif k.type == "bool":
                if text.lower() not in ("true", "false"):
                    raise ValueError
                value = text.lower() == "true"
            elif k.type == "int list":
                value = tuple(int(v, 10) for v in text.split(",") if v.strip())
            else:
                value = text
        except ValueError:
            raise MalleoError(f"{spec!r}: {key}={text!r} is not a {k.toml_type}") from None
        try:
            tables[found[0]][name] = k.check(value, f"{spec!r}: {k.key}")
        except PolicyError as exc:
            raise MalleoError(str(exc)) from None
    if top:
        try:
            policy = policy.replace(**top)
        except PolicyError as exc:
            raise MalleoError(f"{spec!r}: {exc}") from None
    return policy, tables["malleability"], tables["flexible"]


def gantt_colour_option(func: Callable) -> Callable:
    """``--gantt-colour user|kind|application``: what colours the Gantt chart's jobs."""
    return click.option("--gantt-colour", type=click.Choice(("user", "kind", "application")),
                        default="user", show_default=True,
                        help="What colours the jobs of the Gantt chart (--plot): the SWF "
                             "user, the job kind (rigid, moldable, malleable) or the "
                             "application (SWF field 14).")(func)
