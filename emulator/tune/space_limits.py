"""The largest search a tuning run accepts, checked before any trial runs.

A space file can describe a search that never ends (a grid of 10**9 points, a step of
1e-300) or values the core cannot hold (``high = inf``, an integer above int64).
:func:`check_space_size` refuses those with the parameter's name, before the trace is
read:

* every range bound is finite and at most :data:`MAX_VALUE` in magnitude;
* one parameter has at most :data:`MAX_PARAM_VALUES` values (its choices, its ``num``
  grid points, or the points of its ``step`` lattice between ``low`` and ``high``);
* a run has at most :data:`MAX_TRIALS` trials: ``--trials`` itself, and for a grid search
  without ``--trials`` the whole grid (the product of every parameter's values).

A grid search with ``--trials N`` takes the first N grid points without listing the rest,
so a large grid cut by ``--trials`` is accepted.
"""
from __future__ import annotations

import math

from malleo.emulator.tune.space import Param, Space
from malleo.errors import PolicyError
from malleo.limits import MAX_TIME

__all__ = ["MAX_TRIALS", "MAX_PARAM_VALUES", "MAX_VALUE", "check_space_size",
           "check_space_params", "param_size"]

MAX_TRIALS = 100_000
"""The most trials one tuning run may ask for (a grid's size included)."""

MAX_PARAM_VALUES = 1_000_000
"""The most values one parameter may take (choices, grid points or step lattice)."""

MAX_VALUE = MAX_TIME
"""The largest magnitude of a range bound (the core's largest time, 2**36)."""


def param_size(param: Param) -> int:
    """The number of values of ``param`` (an upper bound for an integer range, whose
    rounding can merge grid points), computed without listing them."""
    if param.kind == "choice":
        return len(param.choices)
    if param.step is not None:
        return int(math.floor((param.high - param.low) / param.step + 1e-9)) + 1
    return param.num


def check_space_size(space: Space, search: str, trials: int | None) -> None:
    """Refuse a space or a run beyond the limits of this module.

    Args:
        space: the parsed space file.
        search: ``grid``, ``random`` or ``tpe``.
        trials: ``--trials`` (None: the default for the search).

    Raises:
        PolicyError: ``FILE: key: what is wrong`` (exit status 2 on the command line).
    """
    if trials is not None and trials > MAX_TRIALS:
        raise PolicyError(f"--trials: {trials:,} is more than the {MAX_TRIALS:,} trials a "
                          "tuning run may have")
    check_space_params(space)
    if search == "grid" and trials is None:
        total = math.prod(param_size(p) for p in space.params)
        if total > MAX_TRIALS:
            raise PolicyError(f"{space.source}: the grid has {total:,} points, more than the "
                              f"{MAX_TRIALS:,} trials a run may have: narrow the space, or "
                              "give --trials N to run its first N points")


def check_space_params(space: Space) -> None:
    """Refuse a parameter with a bound beyond :data:`MAX_VALUE` (or not finite) or more
    than :data:`MAX_PARAM_VALUES` values (called by the space reader itself, before it
    lists any grid).

    Raises:
        PolicyError: ``FILE: key: what is wrong``.
    """
    def fail(name: str, what: str) -> PolicyError:
        return PolicyError(f"{space.source}: {name}: {what}")

    for param in space.params:
        if param.kind != "choice":
            for bound in ("low", "high"):
                value = getattr(param, bound)
                if abs(value) > MAX_VALUE or not math.isfinite(value):
                    raise fail(param.name, f"{bound} = {value!r} is not a finite number of "
                                           f"magnitude at most 2**36 = {MAX_VALUE:,}")
            if param.step is not None and not param.step > 0:
                raise fail(param.name, f"step must be > 0, got {param.step!r}")
            span = param.high - param.low
            if param.step is not None and span / param.step + 1 > MAX_PARAM_VALUES:
                raise fail(param.name, f"step {param.step!r} is too small: "
                                       f"{span / param.step + 1:.3g} points between low and "
                                       f"high, at most {MAX_PARAM_VALUES:,}")
        size = param_size(param)
        if size > MAX_PARAM_VALUES:
            raise fail(param.name, f"{size:,} values, at most {MAX_PARAM_VALUES:,}")
