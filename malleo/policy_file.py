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

A ``[flexible]`` table (workload synthesis: which trace jobs a replay makes flexible,
:class:`malleo.flexible.FlexibleJobs`) is the emulator's, not the scheduler's:
:func:`load_config` (replay, compare, tune) reads it beside the policy; :func:`load_policy`
(the live agent, ``policy`` commands) refuses it with a clear error.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

from malleo.errors import PolicyError
from malleo.flexible import FlexibleJobs
from malleo.knobs import table_knobs
from malleo.policy import Malleability, Multifactor, Policy
from malleo.input_files import read_text

__all__ = ["load_policy", "loads_policy", "load_config", "loads_config", "dump_policy",
           "policy_to_dict", "TOP_KEYS", "MULTIFACTOR_KEYS", "MALLEABILITY_KEYS",
           "FLEXIBLE_KEYS"]

# key -> (TOML type, check) where check returns an error or None: derived from the one
# schema of every knob (malleo.knobs), which also gives the CLI options and the docs.
_Check = Callable[[Any], "str | None"]


def _keys(table: str) -> dict[str, tuple[str, _Check]]:
    return {name: (k.toml_type, k.problem) for name, k in table_knobs(table).items()}


TOP_KEYS: dict[str, tuple[str, _Check]] = _keys("")
"""Top-level scalar keys of a policy file: key -> (TOML type, validity check)."""

MULTIFACTOR_KEYS: dict[str, tuple[str, _Check]] = _keys("multifactor")
"""Scalar keys of the ``[multifactor]`` table; its sub-tables are ``queue_factors`` and
``partition_factors`` (SWF queue/partition number -> factor in [0, 1])."""

_FACTOR_TABLES = ("queue_factors", "partition_factors")

MALLEABILITY_KEYS: dict[str, tuple[str, _Check]] = _keys("malleability")
"""Keys of the ``[malleability]`` table (see :class:`malleo.policy.Malleability`)."""

FLEXIBLE_KEYS: dict[str, tuple[str, _Check]] = _keys("flexible")
"""Keys of the ``[flexible]`` table (see :class:`malleo.flexible.FlexibleJobs`); before
the split they were keys of ``[malleability]``, which now names the move."""


def _comment(key: str, table: str) -> str:
    k = table_knobs(table)[key]
    unit = f" ({k.unit})" if k.unit and k.type in ("int", "float") else ""
    values = " | ".join(k.choices) if k.type == "choice" else k.range_text() + unit
    return f"{k.help}: {values}"


# --------------------------------------------------------------------------- reading

def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file (the scheduler's: no ``[flexible]`` table).

    Args:
        path: the policy file.

    Returns:
        The :class:`Policy` it describes, defaults filled in for missing keys.

    Raises:
        PolicyError: ``FILE:LINE: key: what is wrong`` for an unreadable file, bad TOML, an
            unknown key, a wrong type or an out-of-range value, or a ``[flexible]`` table.
    """
    path = Path(path)
    text = read_text(path, "policy file", PolicyError, max_bytes=1 << 20)
    return loads_policy(text, source=str(path))


def load_config(path: str | Path) -> tuple[Policy, FlexibleJobs]:
    """Read an emulator configuration: a policy file that may also hold a ``[flexible]``
    table (workload synthesis).  Errors as :func:`load_policy`."""
    path = Path(path)
    text = read_text(path, "policy file", PolicyError, max_bytes=1 << 20)
    return loads_config(text, source=str(path))


def loads_policy(text: str, source: str = "<policy>") -> Policy:
    """Parse policy TOML ``text``; ``source`` names it in error messages (``source:LINE``).
    A ``[flexible]`` table is refused (the scheduler's policy has no workload knobs)."""
    return _loads(text, source, allow_flexible=False)[0]


def loads_config(text: str, source: str = "<policy>") -> tuple[Policy, FlexibleJobs]:
    """Parse an emulator configuration: the policy and its optional ``[flexible]`` table."""
    return _loads(text, source, allow_flexible=True)


def _loads(text: str, source: str, allow_flexible: bool) -> tuple[Policy, FlexibleJobs]:
    from malleo.toml_input import parse_toml    # tomllib: only to read a file (start-up)
    data = parse_toml(text, source)
    lines = _key_lines(text)

    def fail(key_path: tuple[str, ...], what: str) -> PolicyError:
        return PolicyError(f"{source}:{_line_of(lines, key_path)}: {'.'.join(key_path)}: {what}")

    top: dict[str, Any] = {}
    flexible = FlexibleJobs()
    for key, value in data.items():
        if key in ("multifactor", "malleability", "flexible") and not isinstance(value, dict):
            raise fail((key,), f"must be a table, got {_type_name(value)}")
        if key == "multifactor":
            top["multifactor"] = _read_multifactor(value, fail)
            continue
        if key == "malleability":
            top["malleability"] = _read_malleability(value, fail)
            continue
        if key == "flexible":
            if not allow_flexible:
                raise fail((key,), "workload synthesis (which trace jobs a replay makes "
                           "flexible) is not part of a scheduler policy: use this file with "
                           "malleo replay, compare or tune, or drop the table")
            flexible = _read_flexible(value, fail)
            continue
        if key not in TOP_KEYS:
            tables = ["[multifactor]", "[malleability]"] + (["[flexible]"] if allow_flexible
                                                            else [])
            raise fail((key,), "unknown key (allowed: " + ", ".join([*TOP_KEYS, *tables]) + ")")
        top[key] = _checked((key,), value, TOP_KEYS[key], fail)
    return Policy(**top), flexible


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


def _read_table(name: str, keys: dict[str, tuple[str, _Check]], table: dict[str, Any],
                fail, moved: dict[str, str] | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in table.items():
        path = (name, key)
        if moved and key in moved:
            raise fail(path, f"moved to [{moved[key]}] {key} (workload synthesis, read by "
                             f"the emulator only; docs/policy-file.md)")
        if key not in keys:
            raise fail(path, "unknown key (allowed: " + ", ".join(keys) + ")")
        checked = _checked(path, value, keys[key], fail)
        if keys[key][0] == "number":
            checked = float(checked)
        elif keys[key][0] == "integer array":
            checked = tuple(checked)
        fields[key] = checked
    return fields


def _read_malleability(table: dict[str, Any], fail) -> Malleability:
    moved = {key: "flexible" for key in FLEXIBLE_KEYS}
    return Malleability(**_read_table("malleability", MALLEABILITY_KEYS, table, fail, moved))


def _read_flexible(table: dict[str, Any], fail) -> FlexibleJobs:
    return FlexibleJobs(**_read_table("flexible", FLEXIBLE_KEYS, table, fail))


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

def policy_to_dict(policy: Policy, flexible: FlexibleJobs | None = None) -> dict[str, Any]:
    """The policy as plain data (the policy file's schema; factor keys are ints).  The
    ``malleability`` table is present only when it differs from the default, the
    ``flexible`` table only when ``flexible`` is given and differs from the default (all
    rigid)."""
    mf = policy.multifactor
    extra: dict[str, Any] = {}
    if flexible is not None and flexible != FlexibleJobs():
        extra["flexible"] = flexible.to_dict()
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
        **{k: extra[k] for k in ("malleability", "flexible") if k in extra},
    }


def dump_policy(policy: Policy, *, comments: bool = False,
                flexible: FlexibleJobs | None = None) -> str:
    """The policy as TOML text in the policy-file schema; ``loads_policy`` reads it back
    equal (``loads_config`` with a ``flexible`` table).

    Args:
        policy: the policy to write; every key is written, defaults included.
        comments: add a comment line above each key saying what it means (``policy init``).
        flexible: workload synthesis to write as a ``[flexible]`` table (when not default).
    """
    data = policy_to_dict(policy, flexible)
    out: list[str] = []
    if comments:
        out += ["# malleo policy file (reference: docs/policy-file.md).",
                "# Every key is optional; a missing key takes the default shown here.",
                "# Times are integer seconds.", ""]

    table = ""

    def emit(key: str, value: Any) -> None:
        if comments:
            out.append(f"# {_comment(key, table)}")
        out.append(f"{key} = {_toml_value(value)}")

    for key in TOP_KEYS:
        emit(key, data[key])
    out += ["", "[multifactor]"]
    if comments:
        out.insert(len(out) - 1, "# Slurm-style priority, used when order = \"multifactor\".")
    table = "multifactor"
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
    if "flexible" in data:
        out += ["", "[flexible]"]
        for key, value in data["flexible"].items():
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
