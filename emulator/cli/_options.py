"""Options shared by the replay-like commands: the policy options and the workload options.

Policy options override the keys of a ``--config`` policy file, which override the
defaults of :class:`malleo.policy.Policy`.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

import click

from malleo.errors import MalleoError
from malleo.policy import BACKFILLS, ESTIMATES, ORDERS, Policy

POLICY_KEYS = ("order", "backfill", "estimate", "bf_max_job_test", "bf_window", "bf_resolution")
"""Policy attributes settable by an option of the same name (``--bf-window`` etc.)."""


def policy_options(func: Callable) -> Callable:
    """Add ``--config``, ``--order``, ``--backfill``, ``--estimate``, ``--bf-*`` to a command.

    The command receives them under their names; build the policy with
    :func:`policy_from_options`.
    """
    options = [
        click.option("--config", "config", type=click.Path(dir_okay=False),
                     envvar="MALLEO_POLICY", show_envvar=True,
                     help="Policy file (TOML, see docs/policy-file.md); the options below "
                          "override its keys."),
        click.option("--order", type=click.Choice(ORDERS), default=None,
                     help="Queue order. [default: fcfs]"),
        click.option("--backfill", type=click.Choice(BACKFILLS), default=None,
                     help="Backfill mode. [default: easy]"),
        click.option("--estimate", type=click.Choice(ESTIMATES), default=None,
                     help="Runtime estimate used for planning. [default: request]"),
        click.option("--bf-max-job-test", type=click.IntRange(min=1), default=None,
                     metavar="K", help="slurm backfill: jobs given a reservation per pass. "
                                       "[default: 500]"),
        click.option("--bf-window", type=click.IntRange(min=1), default=None, metavar="SECONDS",
                     help="slurm backfill: how far ahead reservations go. [default: 86400]"),
        click.option("--bf-resolution", type=click.IntRange(min=1), default=None,
                     metavar="SECONDS", help="slurm backfill: time resolution of planned "
                                             "starts. [default: 60]"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def policy_from_options(config: str | None, **overrides: Any) -> Policy:
    """The policy of ``config`` (or the defaults) with the non-None ``overrides`` applied.

    Raises:
        PolicyError: the file is unreadable or invalid (``FILE:LINE: key: ...``).
    """
    from malleo.policy_file import load_policy

    policy = load_policy(config) if config else Policy()
    changes = {k: v for k, v in overrides.items() if k in POLICY_KEYS and v is not None}
    return policy.replace(**changes) if changes else policy


def _check_slice(_ctx: click.Context, param: click.Parameter, value: str | None):
    if value is None:
        return None
    from malleo.emulator.driver import parse_slice

    try:
        return parse_slice(value)
    except MalleoError as exc:
        raise click.BadParameter(str(exc).removeprefix("jobs: "), param=param) from None


def workload_options(func: Callable) -> Callable:
    """Add the machine, slice, trace-reading and metric options to a command.

    The command receives ``procs``, ``node_procs``, ``jobs`` (a (start, count) tuple or
    None), ``lenient``, ``procs_from``, ``overrun``, ``bsld_threshold``.
    """
    options = [
        click.option("--procs", type=click.IntRange(min=1), default=None,
                     help="Processors of the machine. [default: the trace header's]"),
        click.option("--node-procs", type=click.IntRange(min=0), default=0, metavar="C",
                     help="Allocate whole nodes of C processors (node-exclusive machine); "
                          "0: processor by processor. [default: 0]"),
        click.option("--jobs", "jobs", default=None, metavar="START:COUNT",
                     callback=_check_slice,
                     help="Replay only COUNT jobs from position START (0-based, in submit "
                          "order) on an empty machine."),
        click.option("--lenient", is_flag=True,
                     help="Skip malformed trace lines (counted) instead of failing."),
        click.option("--procs-from", type=click.Choice(("allocated", "requested")),
                     default="allocated", show_default=True,
                     help="Which SWF processor field gives a job's size (the other is the "
                          "fallback when it is missing)."),
        click.option("--overrun", type=click.Choice(("extend", "cut")), default="extend",
                     show_default=True,
                     help="A job that ran longer than requested: extend its estimate to "
                          "its runtime, or cut its runtime at the request."),
        click.option("--bsld-threshold", type=click.FloatRange(min=0, min_open=True),
                     default=10.0, show_default=True, metavar="SECONDS",
                     help="Threshold tau of the bounded slowdown."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def read_options(lenient: bool, procs_from: str, overrun: str) -> dict[str, Any]:
    """The ``read_swf`` keyword options from the CLI's trace-reading flags."""
    return {"lenient": lenient, "procs_from": procs_from, "overrun": overrun}


_SPEC = re.compile(r"(?P<order>[a-z0-9]+)\+(?P<backfill>[a-z]+)(?:\(k=(?P<k>\d+)\))?"
                   r"(?:/(?P<estimate>[a-z]+))?")


def parse_policy_spec(spec: str, base: Policy | None = None) -> Policy:
    """``ORDER+BACKFILL[(K=N)][/ESTIMATE]`` (what :meth:`Policy.describe` prints) -> Policy.

    Examples: ``fcfs+easy``, ``sjf+conservative``, ``fcfs+slurm(K=50)``, ``wfp3+easy/predict``.

    Raises:
        PolicyError / MalleoError: not of that form or an unknown name.
    """
    match = _SPEC.fullmatch(spec.strip().lower())
    if not match:
        raise MalleoError(f"expected ORDER+BACKFILL[(K=N)][/ESTIMATE], e.g. fcfs+easy, "
                          f"got {spec!r}")
    changes: dict[str, Any] = {"order": match["order"], "backfill": match["backfill"]}
    if match["k"]:
        if match["backfill"] != "slurm":
            raise MalleoError(f"(K=N) applies to slurm backfill only, got {spec!r}")
        changes["bf_max_job_test"] = int(match["k"])
    if match["estimate"]:
        changes["estimate"] = match["estimate"]
    return (base or Policy()).replace(**changes)


def quiet_option(func: Callable) -> Callable:
    """``--quiet``: no progress line on stderr."""
    return click.option("--quiet", "-q", is_flag=True,
                        help="No progress indication on stderr.")(func)



MALLEABILITY_OPTION_KEYS = ("malleable", "flex_kind", "flex_seed", "flex_min_procs",
                            "flex_queue", "flex_user", "min_factor", "max_factor",
                            "power_of_two", "speedup", "reconfig_cost", "min_interval",
                            "reconfig_points", "estimate_scaling", "reconfig_policy",
                            "moldable_start", "expand_mode")
"""Parameter names :func:`malleability_options` adds to a command."""


def malleability_options(func: Callable) -> Callable:
    """Add the malleability options (docs/malleability.md) to a command; apply them with
    :func:`apply_malleability_options`.  Each overrides the ``[malleability]`` key of the
    policy; none given leaves the policy's table as it is."""
    from malleo.policy import (EXPAND_MODES, ESTIMATE_SCALINGS, RECONFIG_POLICIES)

    options = [
        click.option("--malleable", type=click.FloatRange(0, 1), default=None,
                     metavar="FRACTION",
                     help="Share of the eligible jobs made flexible (chosen by --flex-seed). "
                          "[default: 0, all rigid]"),
        click.option("--flex-kind", type=click.Choice(("malleable", "moldable")), default=None,
                     help="What the chosen jobs become. [default: malleable]"),
        click.option("--flex-seed", type=int, default=None, metavar="SEED",
                     help="Seed of the choice and of per-job speedup draws. [default: 0]"),
        click.option("--flex-min-procs", type=click.IntRange(min=1), default=None, metavar="K",
                     help="Only jobs of at least K processors are eligible. [default: 1]"),
        click.option("--flex-queue", type=int, multiple=True, metavar="QUEUE",
                     help="Only jobs of this SWF queue are eligible (repeatable)."),
        click.option("--flex-user", type=int, multiple=True, metavar="USER",
                     help="Only jobs of this SWF user are eligible (repeatable)."),
        click.option("--min-factor", type=click.FloatRange(0, 1, min_open=True), default=None,
                     metavar="X", help="Min size = max(1, floor(p0 x X)). [default: 0.5]"),
        click.option("--max-factor", type=click.FloatRange(min=1), default=None, metavar="X",
                     help="Max size = min(P, ceil(p0 x X)). [default: 2]"),
        click.option("--power-of-two/--any-size", "power_of_two", default=None,
                     help="Sizes chosen by the core are powers of two. [default: any size]"),
        click.option("--speedup", default=None, metavar="MODEL",
                     help="linear | amdahl:F | downey:A,SIGMA; a parameter LO~HI is drawn per "
                          "job. [default: amdahl:0.05]"),
        click.option("--reconfig-cost", default=None, metavar="FIXED+PER_PROC",
                     help="Seconds without progress per reconfiguration: FIXED plus PER_PROC "
                          "per processor moved, e.g. 10+0.5. [default: 0+0]"),
        click.option("--min-interval", type=click.IntRange(min=0), default=None,
                     metavar="SECONDS",
                     help="Minimum time between two reconfigurations of a job. [default: 0]"),
        click.option("--reconfig-points", default=None, metavar="any|checkin:SECONDS",
                     help="Resize at any pass, or at check-in points every SECONDS. "
                          "[default: any]"),
        click.option("--estimate-scaling", type=click.Choice(ESTIMATE_SCALINGS), default=None,
                     help="A resized job's request scales with its speedup, or stays a fixed "
                          "wall-clock limit. [default: speedup]"),
        click.option("--reconfig-policy", type=click.Choice(RECONFIG_POLICIES), default=None,
                     help="What resizes running malleable jobs. [default: dmr]"),
        click.option("--moldable-start/--no-moldable-start", "moldable_start", default=None,
                     help="Moldable jobs start at the size with the earliest expected end. "
                          "[default: off]"),
        click.option("--expand-mode", type=click.Choice(EXPAND_MODES), default=None,
                     help="How an expansion gets its processors. [default: in-place]"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def apply_malleability_options(policy: Policy, **values: Any) -> Policy:
    """``policy`` with the given malleability options (None / empty: unchanged) applied.

    Raises:
        MalleoError / PolicyError: a malformed ``--reconfig-cost``, ``--reconfig-points``
            or ``--speedup``, or an out-of-range value.
    """
    m = policy.malleability
    changes: dict[str, Any] = {}
    direct = {"malleable": "fraction", "flex_kind": "kind", "flex_seed": "seed",
              "flex_min_procs": "min_procs", "min_factor": "min_factor",
              "max_factor": "max_factor", "power_of_two": "power_of_two",
              "speedup": "speedup", "min_interval": "min_interval",
              "estimate_scaling": "estimate_scaling", "reconfig_policy": "policy",
              "moldable_start": "moldable_start", "expand_mode": "expand_mode"}
    for option, key in direct.items():
        if values.get(option) is not None:
            changes[key] = values[option]
    if values.get("flex_queue"):
        changes["queues"] = tuple(values["flex_queue"])
    if values.get("flex_user"):
        changes["users"] = tuple(values["flex_user"])
    cost = values.get("reconfig_cost")
    if cost is not None:
        match = re.fullmatch(r"\s*([0-9.]+)\s*(?:\+\s*([0-9.]+)\s*)?", cost)
        try:
            changes["reconfig_fixed"] = float(match.group(1))
            changes["reconfig_per_proc"] = float(match.group(2) or 0.0)
        except (AttributeError, ValueError):
            raise MalleoError(f"--reconfig-cost: expected FIXED+PER_PROC seconds "
                              f"(e.g. 10+0.5), got {cost!r}") from None
    points = values.get("reconfig_points")
    if points is not None:
        match = re.fullmatch(r"\s*(any|checkin)(?::(\d+))?\s*", points)
        if not match or (match.group(1) == "any" and match.group(2)):
            raise MalleoError(f"--reconfig-points: expected any or checkin:SECONDS, "
                              f"got {points!r}")
        changes["points"] = match.group(1)
        if match.group(2):
            changes["checkin_period"] = int(match.group(2))
    if not changes:
        return policy
    return policy.replace(malleability=dataclasses.replace(m, **changes))
