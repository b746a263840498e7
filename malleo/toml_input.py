"""Parse the TOML files a user gives malleo (policy files, tuning space files) in one place.

``tomllib`` raises three kinds of error on bad input: ``TOMLDecodeError`` (with a line
and column), ``RecursionError`` for arrays or inline tables nested thousands deep, and
``ValueError`` for an integer of more digits than Python converts (4,300).
:func:`parse_toml` turns each into a :class:`malleo.errors.PolicyError`
``FILE:LINE: invalid TOML: why`` (exit status 2 on the command line), never a traceback.
"""
from __future__ import annotations

import re
import tomllib
from typing import Any

from malleo.errors import PolicyError

__all__ = ["parse_toml"]


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The TOML document ``text`` as a dict.

    Args:
        text: the file's content.
        source: the file name used in messages.

    Raises:
        PolicyError: ``SOURCE:LINE: invalid TOML: ...``.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        match = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = match.group(1) if match else "1"
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg).strip()
        reason = re.sub(r"\s*\(at end of document\)", "", reason)
        raise PolicyError(f"{source}:{line}: invalid TOML: {reason}") from None
    except RecursionError:
        raise PolicyError(f"{source}:{_deepest_line(text)}: invalid TOML: arrays or inline "
                          "tables nested too deeply") from None
    except ValueError as exc:       # e.g. an integer of more than 4,300 digits
        raise PolicyError(f"{source}:1: invalid TOML: {exc}") from None


def _deepest_line(text: str) -> int:
    """1-based line holding the most opening brackets (where the nesting runs away)."""
    lines = text.splitlines() or [""]
    counts = [line.count("[") + line.count("{") for line in lines]
    return counts.index(max(counts)) + 1
