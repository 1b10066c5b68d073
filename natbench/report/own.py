"""The table of a metric reported on its own (:attr:`~natbench.metrics.Metric.table`: tear-down, seed 000 Figure 5
/ Figure 9, seed 001's PF table): the working point's rows, its experiments, invalid trials and memory rows, then the
rows the metric declares."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from natbench.metrics import Metric
from natbench.metrics.hostload import HOST_MARKS
from natbench.report.formatting import fmt_count, fmt_seconds, fmt_value
from natbench.report.rows import INVALID_NOTE, SCALES, cell_marks, memory_rows, param_rows, point_labels
from natbench.report.seedtable import SeedTable, TableRows
from natbench.run.format import slab_label


def _time_decimals(col: pd.Series) -> int:
    """2 decimals (seed 000 Figure 5), 1 when a time reaches 1,000 s, more for times below 0.1 s
    (so that a fast software DUT's milliseconds keep three significant digits)."""
    m = col.max(skipna=True)
    if m >= 999.95:  # NaN (no time at all) compares false
        return 1
    positive = col[col > 0]
    smallest = positive.min() if len(positive) else float("nan")
    if smallest < 0.1:  # NaN (no positive time) compares false
        return min(6, 1 - math.floor(math.log10(smallest)) + 1)
    return 2


def own_table(
    metric: Metric[Any],
    figures: pd.DataFrame,
    points: pd.DataFrame,
    *,
    scale: str = "1",
    title: str | None = None,
    summary: pd.DataFrame | None = None,
    memory: pd.DataFrame | None = None,
    slab_labels: Callable[[str], str] | None = None,
) -> SeedTable:
    """The table of a metric reported on its own (:attr:`~natbench.metrics.Metric.table`: tear-down, seed 000
    Figure 5 / Figure 9, seed 001's PF table): the working point's rows, ``num. experiments``, its invalid trials
    and memory rows, then the rows it declares.

    ``figures`` comes from :func:`~natbench.report.aggregate.own_summary`. ``summary``: the run's summary
    (:func:`~natbench.report.aggregate.summarize`, with ``invalid_trials`` from
    :func:`~natbench.report.aggregate.with_invalid_trials`): the metric's invalid trials and marks. Seconds rows
    have 2 decimals, 1 in a column whose largest time reaches 1,000 s (as Figure 5 does), more below 0.1 s.
    ``memory``: the run's kept fills that stored the DUT's memory; the metric's own fills' rows follow the
    experiments.
    """
    table = metric.table
    if table is None:
        raise ValueError(f"metric {metric.name!r} has no table of its own")
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    ids = [pid for pid in points.index if pid in set(figures.index)]
    pts = points.loc[ids]
    fig = figures.reindex(ids)
    flags = pd.DataFrame(index=ids)
    if summary is not None and not summary.empty:
        s = summary.reset_index()
        s = s[s["metric"].astype(str) == metric.name]
        flags = s.set_index(s["point_id"].astype(str)).reindex(ids)
    b = TableRows(ids)
    param_rows(b, pts)
    b.add("num. experiments", fig["experiments"], fmt_count)
    notes: list[str] = []
    if "invalid_trials" in flags and flags["invalid_trials"].notna().any():
        b.add("invalid trials", flags["invalid_trials"].astype("float64"), fmt_count)
        notes.append(INVALID_NOTE)
    notes += memory_rows(b, memory, ids, [metric.name], slab_labels or (lambda key: slab_label({}, key)))
    marks, mark_notes = cell_marks(flags, (*metric.marks, *HOST_MARKS), len(ids))
    notes.extend(mark_notes)
    seconds = [row.figure for row in table.rows if row.kind == "seconds"]
    decimals = [_time_decimals(fig[seconds].iloc[i]) if seconds else 2 for i in range(len(ids))]
    div, word = SCALES[scale]
    for row in table.rows:
        vals = fig[row.figure].astype("float64").tolist()
        if row.kind == "seconds":
            cells = [fmt_seconds(v, d) for v, d in zip(vals, decimals, strict=True)]
        elif row.kind == "rate":
            cells = [fmt_value(v / div) for v in vals]
        else:
            cells = [fmt_count(v) for v in vals]
        if row.marked:
            cells = [c + (mk if math.isfinite(v) else "") for c, v, mk in zip(cells, vals, marks, strict=True)]
        b.add_cells(row.label, vals, cells)
    cells_frame, values = b.frames(point_labels(pts))
    caption = table.caption.format(scale=word)
    if notes:
        caption += " " + " ".join(f"{n[0].upper()}{n[1:]}." for n in dict.fromkeys(notes))
    return SeedTable(title or table.title, caption, cells_frame, values, ids, metric.name)
