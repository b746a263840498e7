"""Slurm host lists: ``n[1-3,7],gpu[01-02],login`` <-> ``["n1", "n2", "n3", "n7", ...]``.

Pure Python, no ``scontrol show hostnames`` round trip: the backends expand every node list
they read.  Zero-padded ranges keep their width (``gpu[08-10]`` -> gpu08, gpu09, gpu10).
"""
import re

from malleo.plugin.backends.errors import SlurmParseError

_EMPTY = ("", "(null)", "None", "N/A")
_NAME_NUM = re.compile(r"^(.*?)(\d+)$")


_TOP_COMMA = re.compile(r",(?![^\[]*\])")
"""A comma outside brackets: not followed by a ``]`` before the next ``[`` (Slurm's host
lists do not nest brackets)."""


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    if "," not in text:
        return [text] if text else []
    return [p for p in (s.strip() for s in _TOP_COMMA.split(text)) if p]


def _expand_one(item: str) -> list[str]:
    open_at = item.find("[")
    if open_at < 0:
        return [item]
    close_at = item.find("]", open_at)
    if close_at < 0:
        raise SlurmParseError(f"host list {item!r}: unbalanced '['")
    prefix, body, rest = item[:open_at], item[open_at + 1:close_at], item[close_at + 1:]
    suffixes = _expand_one(rest) if rest else [""]
    names = []
    for rng in body.split(","):
        lo, _, hi = rng.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise SlurmParseError(f"host list {item!r}: bad range {rng!r}")
        width = len(lo) if lo.startswith("0") else 0
        numbers = range(int(lo), int(hi or lo) + 1)
        if suffixes == [""]:            # the common ``n[1-400]``: one string per number
            names.extend([f"{prefix}{n:0{width}d}" for n in numbers] if width
                         else [prefix + str(n) for n in numbers])
            continue
        for n in numbers:
            names.extend(f"{prefix}{n:0{width}d}{s}" for s in suffixes)
    return names


def expand(hostlist: str | None) -> list[str]:
    """Node names of a Slurm host list, in order; ``""``/``(null)``/None give ``[]``.

    Raises:
        SlurmParseError: unbalanced brackets or a non-numeric range.
    """
    if hostlist is None or hostlist.strip() in _EMPTY:
        return []
    out: list[str] = []
    for item in _split_top(hostlist.strip()):
        out.extend(_expand_one(item))
    return out


def compress(names) -> str:
    """A compact host list for node names (duplicates dropped, numbers sorted per prefix).

    ``compress(["n1", "n2", "n3", "n7"]) == "n[1-3,7]"``; zero padding is kept
    (``gpu[09-10]``); names without a trailing number are listed as they are.
    """
    numbered: dict[str, list[str]] = {}
    order: list[tuple[bool, str]] = []  # (is_numbered, name or prefix)
    for name in dict.fromkeys(names):
        m = _NAME_NUM.match(name)
        if not m:
            order.append((False, name))
            continue
        if m.group(1) not in numbered:
            numbered[m.group(1)] = []
            order.append((True, m.group(1)))
        numbered[m.group(1)].append(m.group(2))
    parts = []
    for is_numbered, key in order:
        if not is_numbered:
            parts.append(key)
            continue
        digits = numbered[key]
        padded = [d for d in digits if d.startswith("0") and len(d) > 1]
        width = max((len(d) for d in padded), default=0)
        fits = sorted({int(d) for d in digits if f"{int(d):0{width}d}" == d})
        parts.extend(f"{key}{d}" for d in digits if f"{int(d):0{width}d}" != d)
        if len(fits) == 1:
            parts.append(f"{key}{fits[0]:0{width}d}")
            continue
        ranges, lo, prev = [], fits[0], fits[0]
        for n in fits[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            if n is not None:
                lo = prev = n
        parts.append(f"{key}[{','.join(ranges)}]")
    return ",".join(parts)


def _count_one(item: str) -> int:
    open_at = item.find("[")
    if open_at < 0:
        return 1
    close_at = item.find("]", open_at)
    if close_at < 0:
        raise SlurmParseError(f"host list {item!r}: unbalanced '['")
    body, rest = item[open_at + 1:close_at], item[close_at + 1:]
    total = 0
    for rng in body.split(","):
        lo, _, hi = rng.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise SlurmParseError(f"host list {item!r}: bad range {rng!r}")
        total += max(int(hi or lo) - int(lo) + 1, 0)
    return total * (_count_one(rest) if rest else 1)


def count(hostlist: str | None) -> int:
    """``len(expand(hostlist))`` without building the names (the agent counts the nodes of
    thousands of running jobs a cycle).

    Raises:
        SlurmParseError: as :func:`expand`.
    """
    if hostlist is None or hostlist.strip() in _EMPTY:
        return 0
    return sum(_count_one(item) for item in _split_top(hostlist.strip()))
