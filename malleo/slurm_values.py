"""Slurm's values, read one way everywhere: durations, JSON numbers, "unlimited", "unset".

Used by the backends' parsers (``squeue``/``sinfo --json``, ``scontrol show ... -o``) and by
the sacct trace converter, so a duration or an "infinite" number means the same in both.

Conventions (every function here):

- a *duration* is integer seconds; ``None`` means unlimited (``UNLIMITED``, ``INFINITE``,
  ``Partition_Limit``) or unset (empty, ``N/A``, ``(null)``...): Slurm's texts do not tell
  the two apart in a time limit, and neither bounds a job;
- a *number* is an int; ``None`` means unset (JSON ``null``, 24.11's ``"set": false``,
  Slurm's ``NO_VAL`` sentinels) or infinite (``"infinite": true``, ``INFINITE``); callers
  that must tell infinite from unset ask :func:`is_infinite` first.

Bounds (:mod:`malleo.limits`): the core accepts times and durations up to ``MAX_TIME``
seconds and sizes up to ``MAX_PROCS``.  A live value beyond them is never wrapped; the
rule, applied by :func:`clamp_duration` and :func:`check_time`:

- a time limit longer than ``MAX_TIME`` (Slurm allows up to about 8,000 years) plans as
  ``MAX_TIME``: both are "longer than any schedule", and the clamp changes no decision;
- a timestamp (submit, start) beyond ``MAX_TIME`` is refused (``ValueError`` naming the job
  and the field); the agent leaves such a pending job out of the plan and says why;
- a partition larger than ``MAX_PROCS`` nodes or CPUs is refused; a job asking for more than
  the partition has is left out of the plan (it could not start anyway).
"""
from __future__ import annotations

import re

from malleo.limits import MAX_PROCS, MAX_TIME

NO_VAL = 0xFFFFFFFE
"""Slurm's 32-bit "not set" (``NO_VAL``); ``INFINITE`` is one more."""
INFINITE = 0xFFFFFFFF
"""Slurm's 32-bit "infinite"."""
NO_VAL64 = 0xFFFFFFFFFFFFFFFE
"""Slurm's 64-bit "not set"; ``INFINITE64`` is one more."""
INFINITE64 = 0xFFFFFFFFFFFFFFFF
"""Slurm's 64-bit "infinite"."""

UNLIMITED_WORDS = frozenset({"unlimited", "infinite", "partition_limit", "invalid"})
"""Texts Slurm prints for a time limit without a bound (lower case)."""
UNSET_WORDS = frozenset({"", "(null)", "none", "n/a", "unknown"})
"""Texts Slurm prints for a value it does not have (lower case)."""

_DURATION = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?(?:\.\d+)?")


def duration(text: str | None) -> int | None:
    """Seconds of a Slurm duration; None when unlimited or unset.

    Slurm's forms: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``; a bare number
    is minutes (how ``sacct -c`` and ``--time`` read it); a fraction of a second
    (``00:01.500``, sacct's Elapsed) is dropped.

    Raises:
        ValueError: text of none of these forms (the message quotes it).

    Examples:
        >>> duration("1-02:03:04"), duration("90"), duration("01:30"), duration("UNLIMITED")
        (93784, 5400, 90, None)
    """
    if text is None:
        return None
    text = text.strip()
    if text.lower() in UNLIMITED_WORDS or text.lower() in UNSET_WORDS:
        return None
    match = _DURATION.fullmatch(text)
    if not match:
        raise ValueError(f"not a Slurm duration ([D-]HH:MM:SS, MM:SS or minutes): {text!r}")
    days, a, b, c = match.groups()
    if days is not None:
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if c is not None:
        return (int(a) * 60 + int(b)) * 60 + int(c)
    if b is not None:
        return int(a) * 60 + int(b)
    return int(a) * 60


def is_infinite(value) -> bool:
    """True for Slurm's "infinite" in any form: 24.11's ``{"infinite": true}``, the
    ``INFINITE``/``INFINITE64`` sentinels, or the words of :data:`UNLIMITED_WORDS`."""
    if isinstance(value, dict):
        return bool(value.get("infinite"))
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return int(value) in (INFINITE, INFINITE64)
    if isinstance(value, str):
        return value.strip().lower() in UNLIMITED_WORDS
    return False


def number(value, source: str = "value") -> int | None:
    """An integer from either JSON schema; None when unset or infinite.

    Accepts a plain int/float/digit string, None, or 24.11's ``{"set", "infinite",
    "number"}`` struct.  Slurm's sentinels (``NO_VAL``, ``INFINITE`` and their 64-bit forms)
    read as None.

    Raises:
        ValueError: anything else (the message names ``source``).
    """
    if value is None:
        return None
    if isinstance(value, dict):
        if value.get("infinite") or not value.get("set", True):
            return None
        value = value.get("number")
        if value is None:
            return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, (int, float)):
        value = int(value)
        if value in (NO_VAL, INFINITE, NO_VAL64, INFINITE64):
            return None
        return value
    raise ValueError(f"{source}: expected a number, got {value!r}")


def clamp_duration(seconds: int) -> int:
    """A live duration (seconds, >= 0) for the core: longer than ``MAX_TIME`` plans as
    ``MAX_TIME`` (module docstring); negative values (never Slurm's) read as 0."""
    return min(max(int(seconds), 0), MAX_TIME)


def check_time(value: int, what: str) -> int:
    """``value`` (epoch seconds) when within ``[0, MAX_TIME]``.

    Raises:
        ValueError: beyond the core's range, naming ``what`` (e.g. ``job 12 submit time``).
    """
    if not 0 <= int(value) <= MAX_TIME:
        raise ValueError(f"{what} {value} is outside 0..{MAX_TIME} s (malleo.limits.MAX_TIME)")
    return int(value)


def check_size(value: int, what: str) -> int:
    """``value`` (processors or nodes) when within ``[0, MAX_PROCS]``.

    Raises:
        ValueError: beyond the core's range, naming ``what``.
    """
    if not 0 <= int(value) <= MAX_PROCS:
        raise ValueError(f"{what} {value} is outside 0..{MAX_PROCS} (malleo.limits.MAX_PROCS)")
    return int(value)
