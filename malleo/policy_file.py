"""The TOML policy file: read (validated, with ``FILE:LINE`` errors) and write a :class:`Policy`.

One schema, shared by ``malleo replay --config``, ``malleo compare``, ``malleo tune`` and the
Slurm agent (the reference is docs/policy-file.md)::

    order = "fcfs"            # queue order
    backfill = "easy"         # none | easy | conservative | slurm
    estimate = "request"      # request | actual | predict
    bf_max_job_test = 500     # slurm backfill: jobs planned per pass
    bf_window = 86400         # slurm backfill: seconds ahead
    bf_resolution = 60        # slurm backfill: seconds

    [multifactor]
    weight_age = 1000.0
    ...
    [multifactor.queue_factors]
    1 = 0.5                   # SWF queue number -> factor in [0, 1]

Every key is optional (a missing key takes the :class:`Policy` default); an unknown key,
a value of the wrong type or out of range raises :class:`PolicyError` with the message
``FILE:LINE: key: what is wrong``.  Times are integer seconds.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

from malleo.errors import PolicyError
from malleo.input_files import read_text
from malleo.toml_input import parse_toml
from malleo.policy import (BACKFILLS, BF_ROUNDINGS, ESTIMATES, ORDERS, SIZE_FAVOR, Malleability,
                           Multifactor,
                           Policy)

__all__ = ["load_policy", "loads_policy", "dump_policy", "policy_to_dict", "TOP_KEYS",
           "MULTIFACTOR_KEYS", "MALLEABILITY_KEYS"]

# key -> (kind, check) where kind names the TOML type and check returns an error or None.
_Check = Callable[[Any], "str | None"]


def _one_of(allowed: tuple[str, ...]) -> _Check:
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}, got {v!r}"


def _at_least(low: int, unit: str = "") -> _Check:
    return lambda v: None if v >= low else f"must be >= {low}{unit}, got {v}"


def _non_negative(v: float) -> str | None:
    if math.isnan(v):
        return "must be a number >= 0, got nan"
    return None if v >= 0 else f"must be >= 0, got {v}"


TOP_KEYS: dict[str, tuple[str, _Check]] = {
    "order": ("string", _one_of(ORDERS)),
    "backfill": ("string", _one_of(BACKFILLS)),
    "estimate": ("string", _one_of(ESTIMATES)),
    "bf_max_job_test": ("integer", _at_least(1)),
    "bf_window": ("integer", _at_least(1, " (seconds)")),
    "bf_resolution": ("integer", _at_least(1, " (seconds)")),
    "bf_rounding": ("string", _one_of(BF_ROUNDINGS)),
}
"""Top-level scalar keys of a policy file: key -> (TOML type, validity check)."""

MULTIFACTOR_KEYS: dict[str, tuple[str, _Check]] = {
    "weight_age": ("number", _non_negative),
    "weight_size": ("number", _non_negative),
    "weight_fairshare": ("number", _non_negative),
    "weight_queue": ("number", _non_negative),
    "weight_partition": ("number", _non_negative),
    "max_age": ("integer", _at_least(1, " (seconds)")),
    "size_favor": ("string", _one_of(SIZE_FAVOR)),
    "half_life": ("integer", _at_least(1, " (seconds)")),
    "calc_period": ("integer", _at_least(1, " (seconds)")),
}
"""Scalar keys of the ``[multifactor]`` table; its sub-tables are ``queue_factors`` and
``partition_factors`` (SWF queue/partition number -> factor in [0, 1])."""

_FACTOR_TABLES = ("queue_factors", "partition_factors")

_ANY: _Check = lambda v: None   # noqa: E731  (range checked by Malleability itself)

MALLEABILITY_KEYS: dict[str, tuple[str, _Check]] = {
    "fraction": ("number", _ANY),
    "kind": ("string", _ANY),
    "seed": ("integer", _ANY),
    "min_procs": ("integer", _ANY),
    "queues": ("integer array", _ANY),
    "users": ("integer array", _ANY),
    "min_factor": ("number", _ANY),
    "max_factor": ("number", _ANY),
    "power_of_two": ("boolean", _ANY),
    "speedup": ("string", _ANY),
    "reconfig_fixed": ("number", _ANY),
    "reconfig_per_proc": ("number", _ANY),
    "min_interval": ("integer", _ANY),
    "points": ("string", _ANY),
    "checkin_period": ("integer", _ANY),
    "estimate_scaling": ("string", _ANY),
    "policy": ("string", _ANY),
    "moldable_start": ("boolean", _ANY),
    "expand_mode": ("string", _ANY),
}
"""Keys of the ``[malleability]`` table (see :class:`malleo.policy.Malleability`); the
values are range-checked by that class, errors point at the key's line."""

_COMMENTS = {
    "order": "queue order: " + " | ".join(ORDERS),
    "backfill": "backfill mode: " + " | ".join(BACKFILLS),
    "estimate": "runtime estimate used for planning: " + " | ".join(ESTIMATES),
    "bf_max_job_test": "slurm backfill: jobs given a reservation per pass (1 = EASY)",
    "bf_window": "slurm backfill: how far ahead reservations are made, seconds",
    "bf_resolution": "slurm backfill: planned starts rounded up to this many seconds",
    "bf_rounding": "slurm backfill: up | down (Slurm's own: exact ends, reserve from the "
                   "grid instant before)",
    "weight_age": "weight of the age factor min(wait, max_age) / max_age",
    "weight_size": "weight of the job size factor",
    "weight_fairshare": "weight of the fair-share factor 2^(-usage / shares)",
    "weight_queue": "weight of the queue factor (queue_factors below)",
    "weight_partition": "weight of the partition factor (partition_factors below)",
    "max_age": "seconds of waiting at which the age factor reaches 1",
    "size_favor": "small | large: which jobs the size factor favours",
    "half_life": "seconds: half-life of the decay of past usage (fair share)",
    "calc_period": "seconds between priority recomputations",
}


# --------------------------------------------------------------------------- reading

def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file.

    Args:
        path: the policy file.

    Returns:
        The :class:`Policy` it describes, defaults filled in for missing keys.

    Raises:
        PolicyError: ``FILE:LINE: key: what is wrong`` for an unreadable file, bad TOML, an
            unknown key, a wrong type or an out-of-range value.
    """
    path = Path(path)
    text = read_text(path, "policy file", PolicyError, max_bytes=1 << 20)
    return loads_policy(text, source=str(path))


def loads_policy(text: str, source: str = "<policy>") -> Policy:
    """Parse policy TOML ``text``; ``source`` names it in error messages (``source:LINE``)."""
    data = parse_toml(text, source)
    lines = _key_lines(text)

    def fail(key_path: tuple[str, ...], what: str) -> PolicyError:
        return PolicyError(f"{source}:{_line_of(lines, key_path)}: {'.'.join(key_path)}: {what}")

    top: dict[str, Any] = {}
    for key, value in data.items():
        if key == "multifactor":
            if not isinstance(value, dict):
                raise fail((key,), f"must be a table, got {_type_name(value)}")
            top["multifactor"] = _read_multifactor(value, fail)
            continue
        if key == "malleability":
            if not isinstance(value, dict):
                raise fail((key,), f"must be a table, got {_type_name(value)}")
            top["malleability"] = _read_malleability(value, fail)
            continue
        if key not in TOP_KEYS:
            raise fail((key,), "unknown key (allowed: "
                       + ", ".join([*TOP_KEYS, "[multifactor]", "[malleability]"]) + ")")
        top[key] = _checked((key,), value, TOP_KEYS[key], fail)
    return Policy(**top)


def _read_multifactor(table: dict[str, Any], fail) -> Multifactor:
    fields: dict[str, Any] = {}
    for key, value in table.items():
        path = ("multifactor", key)
        if key in _FACTOR_TABLES:
            if not isinstance(value, dict):
                raise fail(path, f"must be a table, got {_type_name(value)}")
            factors: dict[int, float] = {}
            for number, factor in value.items():
                sub = (*path, number)
                try:
                    swf_number = int(number, 10)
                except ValueError:
                    raise fail(sub, "key must be an integer SWF "
                               f"{key.split('_')[0]} number") from None
                factors[swf_number] = float(_checked(sub, factor, ("number", _factor), fail))
            fields[key] = factors
        elif key in MULTIFACTOR_KEYS:
            kind = MULTIFACTOR_KEYS[key]
            checked = _checked(path, value, kind, fail)
            fields[key] = float(checked) if kind[0] == "number" else checked
        else:
            raise fail(path, "unknown key (allowed: "
                       + ", ".join([*MULTIFACTOR_KEYS, *_FACTOR_TABLES]) + ")")
    return Multifactor(**fields)


def _read_malleability(table: dict[str, Any], fail) -> Malleability:
    fields: dict[str, Any] = {}
    for key, value in table.items():
        path = ("malleability", key)
        if key not in MALLEABILITY_KEYS:
            raise fail(path, "unknown key (allowed: " + ", ".join(MALLEABILITY_KEYS) + ")")
        checked = _checked(path, value, MALLEABILITY_KEYS[key], fail)
        if MALLEABILITY_KEYS[key][0] == "number":
            checked = float(checked)
        elif MALLEABILITY_KEYS[key][0] == "integer array":
            checked = tuple(checked)
        try:
            Malleability(**{key: checked})
        except PolicyError as exc:
            raise fail(path, str(exc).split(": ", 1)[-1]) from None
        fields[key] = checked
    return Malleability(**fields)


def _factor(v: float) -> str | None:
    return None if 0.0 <= v <= 1.0 else f"must be in [0, 1], got {v}"


def _checked(path: tuple[str, ...], value: Any, kind: tuple[str, _Check], fail) -> Any:
    type_name, check = kind
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "integer array": isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value),
    }[type_name]
    if not ok:
        raise fail(path, f"must be {'an' if type_name.startswith('integer') else 'a'} {type_name}, "
                         f"got {_type_name(value)} {value!r}")
    problem = check(value)
    if problem:
        raise fail(path, problem)
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "float", dict: "table",
            list: "array"}.get(type(value), type(value).__name__)


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")
_PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")


def _split_key(dotted: str) -> tuple[str, ...]:
    parts = re.findall(_PART, dotted)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of every key and table header, by its full dotted path.

    A line scanner, not a TOML parser: enough to point an error at the right line of a
    file that tomllib already accepted (multi-line strings could fool it; policy files
    have none).
    """
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _split_key(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault(table + _split_key(key.group(1)), number)
    return lines


def _line_of(lines: dict[tuple[str, ...], int], path: tuple[str, ...]) -> int:
    """The line of ``path``, else of its closest enclosing table, else 1."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


# --------------------------------------------------------------------------- writing

def policy_to_dict(policy: Policy) -> dict[str, Any]:
    """The policy as plain data (the policy file's schema; factor keys are ints).  The
    ``malleability`` table is present only when it differs from the default (all rigid)."""
    mf = policy.multifactor
    extra: dict[str, Any] = {}
    if policy.malleability != Malleability():
        extra["malleability"] = {key: (list(v) if isinstance(v, tuple) else v) for key, v in
                                 ((k, getattr(policy.malleability, k))
                                  for k in MALLEABILITY_KEYS)}
    return {
        **{key: getattr(policy, key) for key in TOP_KEYS},
        "multifactor": {
            **{key: getattr(mf, key) for key in MULTIFACTOR_KEYS},
            **{name: dict(sorted(dict(getattr(mf, name)).items())) for name in _FACTOR_TABLES},
        },
        **extra,
    }


def dump_policy(policy: Policy, *, comments: bool = False) -> str:
    """The policy as TOML text in the policy-file schema; ``loads_policy`` reads it back equal.

    Args:
        policy: the policy to write; every key is written, defaults included.
        comments: add a comment line above each key saying what it means (``policy init``).
    """
    data = policy_to_dict(policy)
    out: list[str] = []
    if comments:
        out += ["# malleo policy file (reference: docs/policy-file.md).",
                "# Every key is optional; a missing key takes the default shown here.",
                "# Times are integer seconds.", ""]

    def emit(key: str, value: Any) -> None:
        if comments and key in _COMMENTS:
            out.append(f"# {_COMMENTS[key]}")
        out.append(f"{key} = {_toml_value(value)}")

    for key in TOP_KEYS:
        emit(key, data[key])
    out += ["", "[multifactor]"]
    if comments:
        out.insert(len(out) - 1, "# Slurm-style priority, used when order = \"multifactor\".")
    for key in MULTIFACTOR_KEYS:
        emit(key, data["multifactor"][key])
    for name in _FACTOR_TABLES:
        out += ["", f"[multifactor.{name}]"]
        if comments:
            kind = name.split("_")[0]
            out.append(f"# SWF {kind} number = factor in [0, 1], e.g. 1 = 0.5")
        for number, factor in data["multifactor"][name].items():
            out.append(f"{int(number)} = {_toml_value(float(factor))}")
    if "malleability" in data:
        out += ["", "[malleability]"]
        for key, value in data["malleability"].items():
            out.append(f"{key} = {_toml_value(value)}")
    return "\n".join(out) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")
