"""The search space file (TOML): which policy parameters ``malleo tune`` varies, and how.

Every key is a policy-file key (docs/policy-file.md), at the top level or under
``[multifactor]``.  Its value says what to try::

    order = ["fcfs", "sjf", "wfp3"]               # an array: the choices
    backfill = ["easy", "slurm"]
    estimate = "request"                           # a plain value: fixed in every trial
    bf_max_job_test = { low = 1, high = 200, log = true }    # a range
    bf_window = { low = 3600, high = 86400, step = 3600 }     # seconds

    [multifactor]
    weight_age = { low = 0.0, high = 10000.0, num = 5 }

A range table has ``low`` and ``high`` (inclusive, the key's own type: integer keys take
integers, number keys integers or floats) and optionally ``step`` (grid spacing, and the
sampling lattice of random and TPE search), ``num`` (grid points, default 5; not with
``step``) and ``log`` (true: sample log-uniformly and space grid points geometrically;
needs ``low`` > 0, not with ``step``).  String keys take choices or a fixed value only.
Every value is validated by the policy file's own rules; an error is
``FILE:LINE: key: what is wrong`` (:class:`malleo.errors.PolicyError`, exit 2).
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from malleo.errors import PolicyError
from malleo.input_files import read_text
from malleo.toml_input import parse_toml
from malleo.policy import Multifactor, Policy
from malleo.policy_file import MULTIFACTOR_KEYS, TOP_KEYS

__all__ = ["Param", "Space", "load_space", "loads_space", "DEFAULT_GRID_POINTS"]

DEFAULT_GRID_POINTS = 5
"""Grid points of a range without ``step`` or ``num``."""

_RANGE_KEYS = ("low", "high", "step", "num", "log")


@dataclass(frozen=True)
class Param:
    """One varied parameter.

    Attributes:
        name: dotted policy key, e.g. ``order`` or ``multifactor.weight_age``.
        kind: ``"choice"``, ``"int"`` or ``"float"``.
        choices: the values of a choice parameter (in file order).
        low, high: inclusive bounds of a range.
        step: lattice spacing of a range, or None.
        num: grid points of a range without ``step``.
        log: log-uniform sampling and geometric grid.
    """

    name: str
    kind: str
    choices: tuple[Any, ...] = ()
    low: float = 0
    high: float = 0
    step: float | None = None
    num: int = DEFAULT_GRID_POINTS
    log: bool = False

    def grid(self) -> list[Any]:
        """The grid values: the choices, or ``low..high`` by ``step``, or ``num`` points."""
        if self.kind == "choice":
            return list(self.choices)
        if self.step is not None:
            count = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
            values = [self.low + i * self.step for i in range(count)]
        elif self.num == 1:
            values = [self.low]
        elif self.log:
            values = list(np.geomspace(self.low, self.high, self.num))
        else:
            values = list(np.linspace(self.low, self.high, self.num))
        if self.kind == "int":
            values = [int(round(v)) for v in values]
        else:
            values = [float(v) for v in values]
        return list(dict.fromkeys(values))     # integer rounding can repeat points

    def sample(self, rng: np.random.Generator) -> Any:
        """One value drawn uniformly (log-uniformly with ``log``), on the step lattice."""
        if self.kind == "choice":
            return self.choices[int(rng.integers(len(self.choices)))]
        if self.step is not None:
            count = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
            value = self.low + int(rng.integers(count)) * self.step
        elif self.log:
            value = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            value = rng.uniform(self.low, self.high)
        if self.kind == "int":
            return int(min(max(round(value), self.low), self.high))
        return float(value)


@dataclass(frozen=True)
class Space:
    """A parsed space file: the varied parameters and the fixed values.

    Attributes:
        params: varied parameters, in file order.
        fixed: dotted key -> value set in every trial.
        source: the file name (for messages).
    """

    params: tuple[Param, ...]
    fixed: dict[str, Any] = field(default_factory=dict)
    source: str = "<space>"

    def grid(self) -> list[dict[str, Any]]:
        """Every combination of the parameters' grid values (the first parameter slowest)."""
        names = [p.name for p in self.params]
        return [dict(zip(names, values))
                for values in itertools.product(*(p.grid() for p in self.params))]

    def grid_size(self) -> int:
        """Number of grid points (product of each parameter's grid size)."""
        return math.prod(len(p.grid()) for p in self.params)

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """One random point: each parameter drawn independently."""
        return {p.name: p.sample(rng) for p in self.params}

    def policy(self, params: dict[str, Any]) -> Policy:
        """The policy of a trial: the defaults, then the fixed values, then ``params``.

        Raises:
            PolicyError: a combination the Policy rejects.
        """
        return build_policy({**self.fixed, **params})


def build_policy(values: dict[str, Any]) -> Policy:
    """A Policy from dotted policy-file keys (``order``, ``multifactor.weight_age``...)."""
    top: dict[str, Any] = {}
    mf: dict[str, Any] = {}
    for name, value in values.items():
        if name.startswith("multifactor."):
            key = name.split(".", 1)[1]
            mf[key] = float(value) if MULTIFACTOR_KEYS[key][0] == "number" else value
        else:
            top[name] = value
    if mf:
        top["multifactor"] = Multifactor(**mf)
    return Policy(**top)


def load_space(path: str | Path) -> Space:
    """Read and validate a space file (see the module docstring for the schema).

    Raises:
        PolicyError: ``FILE:LINE: key: what is wrong``.
    """
    path = Path(path)
    text = read_text(path, "space file", PolicyError, max_bytes=1 << 20)
    return loads_space(text, source=str(path))


def loads_space(text: str, source: str = "<space>") -> Space:
    """Parse space-file TOML ``text``; ``source`` names it in error messages."""
    data = parse_toml(text, source)
    lines = _key_lines(text)

    def fail(name: str, what: str) -> PolicyError:
        path = tuple(name.split("."))
        line = next((lines[path[:end]] for end in range(len(path), 0, -1)
                     if path[:end] in lines), 1)
        return PolicyError(f"{source}:{line}: {name}: {what}")

    entries: list[tuple[str, Any, tuple[str, Any]]] = []
    for key, value in data.items():
        if key == "multifactor":
            if not isinstance(value, dict):
                raise fail(key, "must be a table")
            for sub, sub_value in value.items():
                if sub not in MULTIFACTOR_KEYS:
                    raise fail(f"multifactor.{sub}", "unknown or untunable key (allowed: "
                               + ", ".join(MULTIFACTOR_KEYS) + ")")
                entries.append((f"multifactor.{sub}", sub_value, MULTIFACTOR_KEYS[sub]))
        elif key in TOP_KEYS:
            entries.append((key, value, TOP_KEYS[key]))
        else:
            raise fail(key, "unknown key (allowed: " + ", ".join([*TOP_KEYS, "[multifactor]"])
                       + ")")

    params: list[Param] = []
    fixed: dict[str, Any] = {}
    for name, value, kind in entries:
        if isinstance(value, list):
            if not value:
                raise fail(name, "an empty array of choices")
            choices = tuple(_valid(name, v, kind, fail) for v in value)
            if len(set(choices)) != len(choices):
                raise fail(name, "repeated choice")
            params.append(Param(name, "choice", choices=choices))
        elif isinstance(value, dict):
            params.append(_range(name, value, kind, fail))
        else:
            fixed[name] = _valid(name, value, kind, fail)
    if not params:
        raise PolicyError(f"{source}:1: nothing to tune: give at least one key an array of "
                          "choices or a {{ low, high }} range")
    space = Space(tuple(params), fixed, source)
    from malleo.emulator.tune.space_limits import check_space_params

    check_space_params(space)
    try:
        space.policy({p.name: p.grid()[0] for p in params})
    except PolicyError as exc:
        raise PolicyError(f"{source}:1: {exc}") from None
    return space


def _range(name: str, table: dict[str, Any], kind: tuple[str, Any], fail) -> Param:
    type_name = kind[0]
    if type_name == "string":
        raise fail(name, "a string key takes an array of choices, not a range")
    unknown = [k for k in table if k not in _RANGE_KEYS]
    if unknown:
        raise fail(name, f"unknown range key {unknown[0]!r} (allowed: {', '.join(_RANGE_KEYS)})")
    if "low" not in table or "high" not in table:
        raise fail(name, "a range needs both low and high")
    low = _valid(f"{name}", table["low"], kind, fail)
    high = _valid(f"{name}", table["high"], kind, fail)
    if low > high:
        raise fail(name, f"low ({low}) must be <= high ({high})")
    is_log = table.get("log", False)
    if not isinstance(is_log, bool):
        raise fail(name, f"log must be true or false, got {is_log!r}")
    step = table.get("step")
    if step is not None:
        integer = type_name == "integer"
        if isinstance(step, bool) or not isinstance(step, (int, float)) or \
                (integer and not isinstance(step, int)) or not step > 0:
            raise fail(name, f"step must be a {'positive integer' if integer else 'number > 0'}"
                             f", got {step!r}")
        if is_log:
            raise fail(name, "step and log cannot be combined")
        if "num" in table:
            raise fail(name, "give step or num, not both")
    num = table.get("num", DEFAULT_GRID_POINTS)
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise fail(name, f"num must be an integer >= 1, got {num!r}")
    if is_log and not low > 0:
        raise fail(name, f"log needs low > 0, got {low}")
    return Param(name, "int" if type_name == "integer" else "float", low=low, high=high,
                 step=step, num=num, log=is_log)


def _valid(name: str, value: Any, kind: tuple[str, Any], fail) -> Any:
    type_name, check = kind
    ok = {"string": isinstance(value, str),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[type_name]
    if not ok:
        raise fail(name, f"must be {'an' if type_name == 'integer' else 'a'} {type_name}, "
                         f"got {value!r}")
    problem = check(value)
    if problem:
        raise fail(name, problem)
    return float(value) if type_name == "number" else value


_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*")(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"))*)\s*=""")


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """1-based line of each key and table header by dotted path (a line scanner, enough
    to point at a key in a file tomllib accepted)."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = tuple(p.strip().strip('"') for p in header.group(1).split("."))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            path = table + tuple(p.strip().strip('"') for p in key.group(1).split("."))
            lines.setdefault(path, number)
    return lines
