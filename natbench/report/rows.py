"""The rows every seed-style table shares, and the pieces its blocks are made of: the working point's rows (ports,
connections, the DUT's table sizes), the DUT memory rows, cell marks, display scales and units, caption notes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from natbench.metrics import Metric
from natbench.metrics.declare import Mark
from natbench.report.aggregate import MEMORY_FIGURES, memory_summary
from natbench.report.formatting import fmt_count, fmt_ratio, fmt_size, fmt_value
from natbench.report.seedtable import TableRows
from natbench.run.format import LEGACY, UNIT_ALIASES, reported_unit

IPV6_FAMILY = "ipv6"
"""The traffic family whose frames are IPv6 on both sides (natbench.traffic.Family.IPV6)."""
IPV6_EXTRA_BYTES = 20
"""RFC 8219: the IPv6 frame of a test is 20 bytes longer than the IPv4 frame (64 -> 84)."""

#: Display scales: name -> (divisor, word used in captions).
SCALES: dict[str, tuple[float, str]] = {"1": (1.0, ""), "k": (1e3, "1,000 "), "M": (1e6, "1,000,000 ")}

INVALID_NOTE = (
    "'invalid trials': trials of all repetitions at the point that proved nothing about the DUT (the tester did "
    "not keep the rate, the DUT table did not hold the expected connections, or the counts were inconsistent); "
    "each was repeated and counts neither as pass nor as fail"
)
"""Caption note of the "invalid trials" rows."""

MEMORY_NOTE = (
    "'memory / conn. (B)': the memory one connection took in the DUT: the growth of its connection table's slab "
    "caches (the slab rows) where it shows them, else how far its MemAvailable fell from the emptied to the filled "
    "table where that fall is at least 10 times the spread of repeated readings of the emptied table, divided by "
    "the connections the fill left; 'memory used (MB)': that for all of them (1 MB = 10^6 bytes); each the median "
    "over the point's kept fills of the metrics in this table"
)
"""Caption note of the memory rows."""
MEMORY_UNKNOWN_NOTE = (
    "'-' in 'memory / conn. (B)': the DUT shows no slab cache of its table and its MemAvailable fell by less than 10 "
    "times the spread of repeated readings of the emptied table (or rose): the connections' memory cannot be told "
    "from the noise there (use more connections)"
)
"""Caption note of a memory cell with fills but no figure."""
NO_PASS_CELL = "no pass"
"""The median / min / max cell of a point where no repetition found a passing rate."""
NO_PASS_NOTE = (
    "'no passing rate' counts repetitions in which every rate tried failed down to the search's lower bound (no "
    "passing rate within [lower, upper], both stored with the result): they have no value and are left out of "
    "median / min / max ('no pass' where no repetition found one)"
)
CPU_NOTE = (
    "'DUT CPU busy (%)': load of the DUT's data-path CPUs in the last passing trial at the reported "
    "rate (monitor samples; median over samples, then over repetitions; the busiest DUT of a group; "
    "none for trials shorter than 3 monitor intervals)"
)
"""Caption note of the "DUT CPU busy (%)" rows."""


def unit_words(m: Metric[Any], unit: str, directions: int) -> str:
    """The unit in a caption's words, as the table shows the value (frame rates of several directions: all
    frames)."""
    words = m.unit_words or unit or "as stored"
    if directions >= 2 and reported_unit(unit, float(directions)) != UNIT_ALIASES.get(unit, unit):
        return f"{words}, all frames of bidirectional traffic (per-direction rate x{directions})"
    return words


def count_column(d: pd.DataFrame, column: str) -> pd.Series:
    """A count column of a metric's summary rows (0 where absent: a summary from before the column)."""
    if column not in d:
        return pd.Series(0, index=d.index, dtype="int64")
    return d[column].fillna(0).astype("int64")


def point_labels(points: pd.DataFrame) -> list[str]:
    labels = [str(x) for x in points["label"]]
    if len(set(labels)) != len(labels):
        labels = [f"{lab} ({pid[:6]})" for lab, pid in zip(labels, points.index, strict=True)]
    return labels


def _wire_sizes(pts: pd.DataFrame, family: str | None) -> pd.Series:
    """The frame sizes the table states: the campaign's IPv4 sizes, or the IPv6 frames' (20 bytes longer,
    RFC 8219) when both sides carry IPv6 (family ``ipv6``: plain IPv6 forwarding)."""
    sizes = pts["frame_size"].astype("float64")
    if family == IPV6_FAMILY:
        return sizes + IPV6_EXTRA_BYTES
    return sizes


def frame_caption(pts: pd.DataFrame, family: str | None) -> str:
    sizes = _wire_sizes(pts, family).dropna().unique()
    if len(sizes) != 1:
        return ""
    if family == IPV6_FAMILY:
        return f" Frame size: {int(sizes[0])} bytes (IPv6 frames)."
    return f" Frame size: {int(sizes[0])} bytes."


_OLD_TABLE, _OLD_HASH = LEGACY[0].table_size, LEGACY[0].hash_size
assert _OLD_TABLE is not None and _OLD_HASH is not None
_LEGACY_LABELS = {
    "table_label": _OLD_TABLE.label,
    "table_ratio_label": _OLD_TABLE.ratio_label,
    "hash_label": _OLD_HASH.label,
    "hash_ratio_label": _OLD_HASH.ratio_label,
}
"""The table-size rows of a points frame that names none (built without the DUT kinds' declarations): as a run
stored before declarations reads."""


def _size_label(pts: pd.DataFrame, column: str) -> str:
    """The row of a table size as the DUT kind of the table's first point with one declared it."""
    if column in pts:
        named = [str(v) for v in pts[column] if isinstance(v, str)]
        if named:
            return named[0]
    return _LEGACY_LABELS[column]


def param_rows(b: TableRows, pts: pd.DataFrame, family: str | None = None) -> None:
    if pts["cores"].notna().any():
        b.add("num. CPU cores", pts["cores"], fmt_count)
    b.add("src ports", pts["src_count"], fmt_count)
    b.add("dst ports", pts["dst_count"], fmt_count)
    b.add("num. conn.", pts["connections"], fmt_count)
    if "testbed" in pts:  # a distributed run: which testbed measured each point
        b.add_cells("testbed", [math.nan] * len(pts), [str(t) if isinstance(t, str) else "-" for t in pts["testbed"]])
    if pts["frame_size"].nunique(dropna=True) > 1:
        b.add("frame size", _wire_sizes(pts, family), fmt_count)
    # the DUT kinds declare which parameter sizes their tables and what the rows are called (conntrack_max: the
    # seeds' "conntrack t. s.")
    has_table = pts["table_size"].notna().any()
    has_hash = pts["hash_size"].notna().any()
    if has_table:
        b.add(_size_label(pts, "table_label"), pts["table_size"], fmt_size)
    if has_hash:
        b.add(_size_label(pts, "hash_label"), pts["hash_size"], fmt_size)
    if has_table:
        ratio = pts["table_size"] / pts["connections"]
        b.add(_size_label(pts, "table_ratio_label"), ratio, lambda v: fmt_ratio(v, 3))
    if has_hash:
        ratio = pts["connections"] / pts["hash_size"]
        b.add(_size_label(pts, "hash_ratio_label"), ratio, lambda v: fmt_ratio(v, 3))


def memory_rows(
    b: TableRows,
    fills: pd.DataFrame | None,
    ids: list[str],
    metrics: Iterable[str],
    slab_labels: Callable[[str], str],
) -> list[str]:
    """The DUT memory rows (median over the points' kept fills of ``metrics`` that stored memory, see
    :func:`~natbench.report.aggregate.fill_memory_frame`) and their caption notes; none when no such fill exists."""
    if fills is None:
        return []
    mem = memory_summary(fills, metrics).reindex(ids)
    stored = mem["fills"].fillna(0) > 0
    if not stored.any():
        return []
    per = mem["per_connection"].astype("float64")
    b.add("memory / conn. (B)", per, fmt_value)
    used = mem["used"].astype("float64")
    b.add_cells("memory used (MB)", used, [fmt_value(v / 1e6) for v in used])
    for key in [c for c in mem.columns if c not in ("fills", "unknown", *MEMORY_FIGURES)]:
        if mem[key].notna().any():
            b.add(slab_labels(key), mem[key], fmt_value)
    notes = [MEMORY_NOTE]
    if (stored & per.isna()).any():
        notes.append(MEMORY_UNKNOWN_NOTE)
    return notes


def series_vary(pts: pd.DataFrame, group: str, col: str) -> bool:
    """True when some series (points equal but for ``col``) has more than one value of ``col``."""
    return bool((pts.groupby(group)[col].nunique() > 1).any())


def display(m: Metric[Any], unit: str, scale: str) -> tuple[float, str]:
    """(multiplier from base unit to display, unit words prefix)."""
    if m.scaled:
        div, word = SCALES[scale]
        return 1.0 / div, word
    if unit == "s" and m.in_milliseconds:
        return 1e3, ""
    return 1.0, ""


def cell_marks(frame: pd.DataFrame, declared: Sequence[Mark], n: int) -> tuple[list[str], list[str]]:
    """The symbols after each of ``n`` points' cells (every declared mark whose flag is set at the point) and the
    caption notes of the marks shown."""
    marks, notes = [""] * n, []
    for mark in declared:
        flagged = count_column(frame, mark.column) > 0
        if flagged.any():
            marks = _marked(marks, flagged.tolist(), mark.symbol)
            notes.append(mark.note)
    return marks, notes


def _marked(cells: list[str], flagged: Sequence[bool], symbol: str) -> list[str]:
    return [c + (f" {symbol}" if f else "") for c, f in zip(cells, flagged, strict=True)]
