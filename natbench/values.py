"""Readable numbers and port ranges as campaigns, metric settings, experiments and recipe parameters write them.

The one grammar of natbench; it sits below the campaign schema, the metrics and the DUT recipes,
so that each can use it without importing another.

Counts, sizes and rates may be written as

* a plain integer (``8388608``, ``8_388_608``),
* a power ``B^E`` (``2^23``, as the seed tables write table sizes),
* a decimal SI suffix ``k``, ``M``, ``G`` (``200k`` = 200,000, ``1.5M`` = 1,500,000).

Port ranges may be written as

* ``"1-4000"`` (first-last, inclusive),
* ``{first: 1, last: 4000}`` or ``{first: 1024, count: 4000}``,
* a count ``4000``, meaning ports ``1..4000`` (the seeds' convention:
  seed 004 uses 1-4000 and 1-250 ... 1-64000).

A recipe's ``port_range`` parameter names ports of the DUT, not a count: it reads a bare
number as that one port and ``[first, last]`` as a range, and hands both to this grammar
as ``{first, last}`` (:mod:`natbench.duts.recipes.params`).
"""

from __future__ import annotations

import re
from typing import Any

from natbench.traffic.ports import PortRange

__all__ = ["format_count", "parse_count", "parse_number", "parse_port_range", "parse_power"]

_POWER = re.compile(r"^\s*(\d+)\s*(?:\^|\*\*)\s*(\d+)\s*$")
_SI = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKMG])\s*$")
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_SI_FACTOR = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}


def parse_power(value: Any) -> int | None:
    """The integer a power ``B^E`` (or ``B**E``) written as text stands for; None for anything else."""
    return _power(_clean(value)) if isinstance(value, str) else None


def _clean(text: str) -> str:
    return text.strip().replace("_", "")


def _power(text: str) -> int | None:
    m = _POWER.match(text)
    return int(m.group(1)) ** int(m.group(2)) if m else None


def parse_number(value: Any) -> float:
    """Parse a rate or duration: a number, ``B^E`` or an SI-suffixed number; raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = _clean(value)
        power = _power(text)
        if power is not None:
            return float(power)
        m = _SI.match(text)
        if m:
            return float(m.group(1)) * _SI_FACTOR[m.group(2)]
        try:
            return float(text)
        except ValueError:
            pass
    raise ValueError(f"expected a number such as 200000, 200k or 2^17, got {value!r}")


def parse_count(value: Any) -> int:
    """Parse a whole count or size (``8388608``, ``2^23``, ``4M``); raise ValueError if not whole."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"expected a whole number, got {value!r}")
    number = parse_number(value)
    if not number.is_integer():
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(number)


def format_count(n: int) -> str:
    """Render a count the way the seeds do: powers of two >= 2^10 as ``2^E``, else with separators."""
    if n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return f"{n:,}"


def parse_port_range(value: Any, *, one_port: bool = False) -> PortRange:
    """Parse a port range written as ``"first-last"``, ``{first, last}``, ``{first, count}`` or a count.

    A bare count ``N`` means ports ``1..N``. With ``one_port`` (a recipe parameter naming DUT
    ports) a bare number ``N`` is the single port ``N`` and a pair ``[first, last]`` is a range.
    """
    if isinstance(value, PortRange):
        return value
    if one_port and isinstance(value, list | tuple) and len(value) == 2:
        value = {"first": value[0], "last": value[1]}
    if isinstance(value, dict):
        keys = set(value)
        if keys == {"first", "last"}:
            first, last = parse_count(value["first"]), parse_count(value["last"])
        elif keys == {"first", "count"}:
            first = parse_count(value["first"])
            count = parse_count(value["count"])
            if count < 1:
                raise ValueError(f"port count must be at least 1, got {count}")
            last = first + count - 1
        else:
            raise ValueError(f"a port range mapping needs keys first and last (or first and count), got {sorted(keys)}")
    elif isinstance(value, str) and _RANGE.match(value):
        m = _RANGE.match(value)
        assert m is not None
        first, last = int(m.group(1)), int(m.group(2))
    else:
        try:
            number = parse_count(value)
        except ValueError:
            forms = "[1024, 65535] or a port 1024" if one_port else "{first: 1, last: 4000} or a count 4000"
            raise ValueError(f"expected a port range such as '1-4000', {forms}, got {value!r}") from None
        if one_port:
            first = last = number
        elif number < 1:
            raise ValueError(f"port count must be at least 1, got {number}")
        else:
            first, last = 1, number
    try:
        return PortRange(first, last)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
