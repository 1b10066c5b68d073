"""Number formatting as the seed documents print it."""

from __future__ import annotations

import math

MISSING = "-"


def is_missing(v: object) -> bool:
    """True for None and NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_count(v: float | None) -> str:
    """An integer with thousands separators: 4000000 -> '4,000,000'."""
    if is_missing(v):
        return MISSING
    assert v is not None
    return f"{round(v):,}"


def fmt_size(v: float | None) -> str:
    """A table size: powers of two from 2^10 as '2^23' (seed 000), anything else as a count."""
    if is_missing(v):
        return MISSING
    assert v is not None
    n = round(v)
    if n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return fmt_count(n)


def fmt_value(v: float | None) -> str:
    """A measured value: at least 4 significant digits, whole numbers from 1,000 up.

    223.5, 1,341, 2,383, 11,561 (seed 000 Figure 2 in 1,000s); 2.406 (Figure 4 in millions);
    120,214 (seed 001 in cps).
    """
    if is_missing(v):
        return MISSING
    assert v is not None
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 999.95:
        return f"{v:,.0f}"
    decimals = max(0, 3 - math.floor(math.log10(a)))
    text = f"{v:,.{decimals}f}"
    # rounding may have produced a 5th significant digit (e.g. 99.996 -> 100.00)
    if float(text.replace(",", "")) >= 10 ** (math.floor(math.log10(a)) + 1) and decimals > 0:
        text = f"{v:,.{decimals - 1}f}"
    return text


def fmt_number(v: float | None) -> str:
    """A parameter such as the search error: whole numbers as '1,000', others as :func:`fmt_value`."""
    if is_missing(v):
        return MISSING
    assert v is not None
    if float(v).is_integer():
        return fmt_count(v)
    return fmt_value(v)


def fmt_scale_up(v: float | None) -> str:
    """A relative scale-up: 3 decimals, the reference point as '1' (seed 000 Figure 2)."""
    if is_missing(v):
        return MISSING
    assert v is not None
    if v == 1.0:
        return "1"
    return f"{v:.3f}"


def fmt_ratio(v: float | None, decimals: int = 2) -> str:
    """A ratio such as median / previous median (seed 001: '0.71'); '-' where there is none."""
    if is_missing(v):
        return MISSING
    assert v is not None
    return f"{v:.{decimals}f}"


def fmt_percent(v: float | None) -> str:
    """A fraction as a percentage with one decimal: 0.4554 -> '45.5'."""
    if is_missing(v):
        return MISSING
    assert v is not None
    return f"{100 * v:.1f}"


def fmt_seconds(v: float | None, decimals: int = 2) -> str:
    """A delete time in seconds with thousands separators: 1178.34 -> '1,178.3' (1 decimal)."""
    if is_missing(v):
        return MISSING
    assert v is not None
    return f"{v:,.{decimals}f}"
