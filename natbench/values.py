"""Readable numbers and port ranges as campaigns, metric settings, experiments and recipe parameters write them.

The one grammar of natbench; it sits below the campaign schema, the metrics and the DUT recipes,
so that each can use it without importing another.

Counts, sizes and rates may be written as

* a plain integer (``8388608``, ``8_388_608``),
* a power ``B^E`` (``2^23``, as the seed tables write table sizes),
* a decimal SI suffix ``k``, ``M``, ``G`` (``200k`` = 200,000, ``1.5M`` = 1,500,000).

Digits are ASCII digits (``٥`` or ``５`` is no 5) and every value must be finite and at most
:data:`MAX_VALUE` (2^64) in magnitude (``inf``, ``nan`` and ``1e999`` are refused); a power is checked
from its logarithm before it is computed, so ``9^99999999`` or ``2^99999999999`` are refused at
once instead of being evaluated (each schema field then has its own, narrower range).

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

import math
import re
from typing import Any

from natbench.traffic.ports import PortRange

MAX_VALUE = 2**64
"""The largest magnitude any number in a campaign or recipe may have (every field's own range is narrower)."""

# The ranges of the schema fields (docs/campaign-reference.md lists them): far beyond any testbed, close
# enough that a typo (an exponent too many, a unit mixed up) is caught before a run starts.
MAX_REPETITIONS = 10_000
"""Most repetitions of a metric at a working point (the seeds use 10 or 20)."""
MAX_RATE = 1e12
"""Highest rate in frames or connections per second (400GbE carries at most 595 million 64-byte frames/s)."""
MAX_COUNT = 2**32
"""Largest count of connections, table entries or ports products (seed 000 measured 800 million connections)."""
MAX_CORES = 4096
"""Most CPU cores of a DUT (Linux's default NR_CPUS on x86-64 is 8192; 4096 on most distributions)."""
MAX_WAIT_SECONDS = 86_400.0
"""Longest wait, gap, in-flight timeout, connection timeout or sampling interval: one day."""
MIN_MONITOR_INTERVAL = 0.05
"""Shortest interval of the DUT CPU monitor in seconds (``testbed.monitor_interval`` and ``natbench run
--monitor`` alike): sampling /proc/stat over SSH more often than 20 times a second measures the sampling."""
MAX_DURATION_SECONDS = 604_800.0
"""Longest trial duration, command timeout, boot timeout or refill interval: seven days
(deleting 800 million connections took about 40 minutes in seed 000)."""
MAX_RETRIES = 1_000
"""Most retries of an invalid trial."""
_MAX_TEXT = 64
"""Longest text read as a number (2^64 has 20 digits; ``18_446_744_073_709_551_616.000`` fits)."""

# every pattern is ASCII: Python's \d takes any Unicode digit (Arabic-Indic, Devanagari, fullwidth ...), and a
# number no keyboard layout of the campaign's author meant is refused, never read as another
_POWER = re.compile(r"^\s*(\d{1,20})\s*(?:\^|\*\*)\s*(\d{1,20})\s*$", re.ASCII)
_SI = re.compile(r"^\s*(\d{1,20}(?:\.\d{1,20})?)\s*([kKMG])\s*$", re.ASCII)
_RANGE = re.compile(r"^\s*(\d{1,20})\s*-\s*(\d{1,20})\s*$", re.ASCII)
_DECIMAL = re.compile(r"^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,4})?\s*$", re.ASCII)
"""A plain decimal number (``200000``, ``0.5``, ``1e-3``): what :func:`parse_number` hands to ``float`` (which
alone would take ``inf``, ``nan`` and any Unicode digit)."""
_NON_FINITE = re.compile(r"^\s*[-+]?(?:inf|infinity|nan)\s*$", re.ASCII | re.IGNORECASE)
"""What ``float`` reads as an infinity or NaN: named as such in the error."""
_SI_FACTOR = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}


def parse_power(value: Any) -> int | None:
    """The integer a power ``B^E`` (or ``B**E``) written as text stands for; None for anything else."""
    return _power(_clean(value)) if isinstance(value, str) else None


def _clean(text: str) -> str:
    return text.strip().replace("_", "")


def _shown(value: Any) -> str:
    """``repr(value)`` cut to 40 characters (a message never repeats a huge input)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _power(text: str) -> int | None:
    """``B^E`` as an int; raise ValueError when it would exceed :data:`MAX_VALUE` (decided before computing it)."""
    m = _POWER.match(text)
    if not m:
        return None
    base, exp = int(m.group(1)), int(m.group(2))
    if base > 1 and exp * math.log2(base) > math.log2(MAX_VALUE):
        raise ValueError(f"{base}^{_shown(exp)} is too large: the limit is 2^64")
    result = int(base**exp)
    if result > MAX_VALUE:  # log2 rounding at the boundary
        raise ValueError(f"{base}^{exp} is too large: the limit is 2^64")
    return result


def _finite(number: float, value: Any) -> float:
    """``number`` when it is finite and within :data:`MAX_VALUE`; raise ValueError otherwise."""
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {_shown(value)}")
    if abs(number) > MAX_VALUE:
        raise ValueError(f"{_shown(value)} is too large: the limit is 2^64")
    return number


def parse_number(value: Any) -> float:
    """Parse a rate or duration: a number, ``B^E`` or an SI-suffixed number; raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int):
        if abs(value) > MAX_VALUE:
            raise ValueError(f"{_shown(value)} is too large: the limit is 2^64")
        return float(value)
    if isinstance(value, float):
        return _finite(value, value)
    if isinstance(value, str) and len(value) <= _MAX_TEXT:
        text = _clean(value)
        power = _power(text)
        if power is not None:
            return float(power)
        m = _SI.match(text)
        if m:
            return _finite(float(m.group(1)) * _SI_FACTOR[m.group(2)], value)
        if _DECIMAL.match(text):
            return _finite(float(text), value)
        if _NON_FINITE.match(text):
            raise ValueError(f"expected a finite number, got {_shown(value)}")
    raise ValueError(f"expected a number such as 200000, 200k or 2^17, got {_shown(value)}")


def parse_count(value: Any) -> int:
    """Parse a whole count or size (``8388608``, ``2^23``, ``4M``); raise ValueError if not whole."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, int):
        if abs(value) > MAX_VALUE:
            raise ValueError(f"{_shown(value)} is too large: the limit is 2^64")
        return value
    if isinstance(value, str):
        power = parse_power(value)  # exact: 2^60 + nothing lost to a float
        if power is not None:
            return power
    number = parse_number(value)
    if not number.is_integer():
        raise ValueError(f"expected a whole number, got {_shown(value)}")
    return int(number)


_BYTES = re.compile(r"^\s*(\d{1,20}(?:\.\d{1,20})?)\s*([kKMGT]i?)?B?\s*$", re.ASCII)
_BYTE_FACTOR = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_bytes(value: Any) -> int:
    """Parse a memory size in bytes: a whole number, ``B^E``, a decimal SI suffix (``256G`` = 256 x 10^9; ``k``,
    ``M``, ``G``, ``T``) or a binary IEC one (``64Gi`` = 64 x 2^30; ``Ki``, ``Mi``, ``Gi``, ``Ti``), each optionally
    followed by ``B``; raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"expected a memory size, got {value!r}")
    if isinstance(value, int) and 0 <= value <= MAX_VALUE:
        return value
    if isinstance(value, str) and len(value) <= _MAX_TEXT:
        text = _clean(value)
        power = _power(text)
        if power is not None:
            return power
        m = _BYTES.match(text)
        if m:
            unit = m.group(2) or ""
            factor = (
                1
                if not unit
                else (1024 ** (" KMGT".index(unit[0].upper())) if unit.endswith("i") else _BYTE_FACTOR[unit])
            )
            size = _finite(float(m.group(1)) * factor, value)
            if size.is_integer():
                return int(size)
    raise ValueError(f"expected a memory size such as 64Gi, 256G or 68719476736 (bytes), got {_shown(value)}")


def format_bytes(n: float) -> str:
    """A memory size for messages: decimal GB/MB (``280.0 GB``) and, from 1 GiB up, the binary figure beside it."""
    if n >= 2**30:
        return f"{n / 1e9:,.1f} GB ({n / 2**30:,.1f} GiB)"
    if n >= 1e6:
        return f"{n / 1e6:,.1f} MB"
    return f"{n:,.0f} B"


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
        except ValueError as exc:
            if "too large" in str(exc):
                raise
            forms = "[1024, 65535] or a port 1024" if one_port else "{first: 1, last: 4000} or a count 4000"
            raise ValueError(f"expected a port range such as '1-4000', {forms}, got {_shown(value)}") from None
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
