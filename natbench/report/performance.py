"""The performance table (seed 000 Figure 2 / Figure 4, seed 004 Tables 4-9, seed 001's PF tables), built block by
block: the working point's rows, the experiments row, the DUT memory rows, then each metric's block (its
repetition rows, the rows its :class:`~natbench.metrics.Metric` declares, its error row, median / min / max, its
statistic rows and scale-up), the forwarding baseline's block and ratio, and the caption.

What a value and its error mean for each search is one sentence of the caption, made in one place
(:func:`error_sentence`); a search's own notes under a block likewise (:func:`search_notes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from natbench.metrics import Metric, reported_metric
from natbench.metrics.declare import SEARCH_ROWS, CountRow, error_caption
from natbench.metrics.hostload import HOST_MARKS
from natbench.metrics.registry import baseline_metric
from natbench.report.aggregate import baseline_ratio, scale_connections, scale_up_cores
from natbench.report.formatting import fmt_count, fmt_number, fmt_percent, fmt_ratio, fmt_scale_up, fmt_value
from natbench.report.rows import (
    CPU_NOTE,
    INVALID_NOTE,
    NO_PASS_CELL,
    NO_PASS_NOTE,
    SCALES,
    cell_marks,
    count_column,
    display,
    frame_caption,
    memory_rows,
    param_rows,
    point_labels,
    series_vary,
    unit_words,
)
from natbench.report.searchfacts import search_facts
from natbench.report.seedtable import SeedTable, TableRows
from natbench.run.format import slab_label
from natbench.search import BlockFacts
from natbench.search.declare import reported_algorithm

STATS = ("median", "min", "max")
"""The statistic rows of a block, in order."""


def error_sentence(searches: Sequence[tuple[str | None, BlockFacts]]) -> str:
    """The caption's sentence on what each search's values and errors mean, in the words of each block's search
    algorithm (its name as stored, and the block's facts; "" when no block has an error row)."""
    return error_caption([facts for _, facts in searches], [name for name, _ in searches])


def search_notes(prefix: str, d: pd.DataFrame) -> list[str]:
    """The caption notes a block's search algorithm declares for the block's results (the fast search's: its
    repetitions started from earlier ones)."""
    name, facts = search_facts(d, prefix)
    return list(reported_algorithm(name).notes(facts))


@dataclass(frozen=True)
class _Selection:
    """Which metrics the table shows, in which order, and whether the forwarding baseline has its own block."""

    known: dict[str, Metric[Any]]
    """Every metric of the summary by name (a stand-in for one this natbench does not know)."""
    metrics: list[str]
    """The blocks shown, baseline included."""
    main: list[str]
    """The blocks shown before the baseline's."""
    baseline: str
    """The baseline metric's name ("" when none is registered)."""
    compared: str | None
    """What the baseline is compared with (throughput), when it is shown."""


def _select(summary: pd.DataFrame, metrics: Sequence[str] | None, baseline: str | None) -> _Selection:
    known = {name: reported_metric(name) for name in summary["metric"].unique()}
    present = [name for name, m in known.items() if not m.own_table]
    if metrics is None:
        shown = sorted(present, key=lambda name: known[name].sort_key)
    else:
        shown = [name for name in metrics if name in present]
    default = baseline_metric()
    compared = default.baseline_for if default is not None else None  # what the baseline is compared with
    if baseline is None:
        baseline = default.name if default is not None else ""
    show_baseline = baseline in shown and compared in shown
    main = [name for name in shown if not (show_baseline and name == baseline)]
    return _Selection(known, shown, main, baseline, compared if show_baseline else None)


@dataclass
class _Blocks:
    """The table being built: its rows, and what the caption collects while the blocks are added."""

    rows: TableRows
    """The rows so far."""
    ids: list[str]
    """The points (columns)."""
    scale: str
    """Display scale of the scaled metrics."""
    cores_scale: pd.DataFrame | None
    """Relative scale-up per metric and point, where the cores vary."""
    conn_ratio: pd.DataFrame | None
    """Median / previous median per metric and point, where the connections vary."""
    units: list[str] = field(default_factory=list)
    """Each block's unit, in the caption's words."""
    notes: list[str] = field(default_factory=list)
    """Caption notes, in the order the rows asked for them (each said once)."""
    searches: list[tuple[str | None, BlockFacts]] = field(default_factory=list)
    """The blocks with an error row, for the error sentence."""

    def block(self, m: Metric[Any], d: pd.DataFrame, exp_row: bool) -> None:
        """Metric ``m``'s block from its summary rows ``d`` (one per point); ``exp_row``: its own experiments row."""
        prefix = m.label
        mult = self._unit(m, d)
        no_pass = self._repetition_rows(prefix, d, exp_row)
        marks, mark_notes = cell_marks(d, (*m.marks, *HOST_MARKS), len(self.ids))
        self.notes.extend(mark_notes)
        self._count_rows(d, prefix, (*SEARCH_ROWS, *m.count_rows))
        self._trial_rows(prefix, d)
        self.notes.extend(search_notes(prefix, d))
        self._error_row(prefix, d)
        nothing = ((d["experiments"].fillna(0) == 0) & (no_pass > 0)).tolist()
        self._value_rows(prefix, d, mult, marks, nothing)
        self._stat_rows(m, d, mult)
        self._scale_rows(m)

    def _unit(self, m: Metric[Any], d: pd.DataFrame) -> float:
        """The block's unit in the caption; the factor from its base unit to its display unit."""
        unit = str(d["unit"].dropna().iloc[0]) if d["unit"].notna().any() else ""
        directions = int(d["directions"].max()) if d["directions"].notna().any() else 1
        mult, word = display(m, unit, self.scale)
        self.units.append(f"{m.label}: {word}{unit_words(m, unit, directions)}")
        return mult

    def _repetition_rows(self, prefix: str, d: pd.DataFrame, exp_row: bool) -> pd.Series:
        """Experiments (when the block has its own), failed repetitions, repetitions without a passing rate (the
        count, returned)."""
        if exp_row:
            self.rows.add(f"{prefix} num. exp.", d["experiments"], fmt_count)
        if (d["failed"].fillna(0) > 0).any():  # repetitions that ended without a value
            self.rows.add(f"{prefix} failed reps.", d["failed"], fmt_count)
        no_pass = count_column(d, "no_pass")
        if (no_pass > 0).any():  # repetitions whose search found no passing rate: no value, not a failure
            self.rows.add(f"{prefix} no passing rate", no_pass, fmt_count)
            self.notes.append(NO_PASS_NOTE)
        return no_pass

    def _count_rows(self, d: pd.DataFrame, prefix: str, rows: Iterable[CountRow]) -> None:
        """A row per declared count where a repetition is flagged (every search's, then the metric's own)."""
        for row in rows:
            counted = count_column(d, row.column)
            if row.label is not None and (counted > 0).any():
                self.rows.add(f"{prefix} {row.label}", counted, fmt_count)
                self.notes.append(row.note)

    def _trial_rows(self, prefix: str, d: pd.DataFrame) -> None:
        """Invalid trials (where trials were stored) and the DUT's load at the result (where it was monitored)."""
        if "invalid_trials" in d and d["invalid_trials"].notna().any():  # trials stored: how many proved nothing
            self.rows.add(f"{prefix} invalid trials", d["invalid_trials"], fmt_count)
            self.notes.append(INVALID_NOTE)
        if d["dut_cpu_busy"].notna().any():  # monitored: the DUT's load at the result
            self.rows.add(f"{prefix} DUT CPU busy (%)", d["dut_cpu_busy"] / 100.0, fmt_percent)
            self.notes.append(CPU_NOTE)

    def _error_row(self, prefix: str, d: pd.DataFrame) -> None:
        """The search's error, in plain units, and the block as the error sentence needs it."""
        if not d["error"].notna().any():
            return
        self.rows.add(f"{prefix} error", d["error"], fmt_number)
        self.searches.append(search_facts(d, prefix))

    def _value_rows(self, prefix: str, d: pd.DataFrame, mult: float, marks: list[str], nothing: list[bool]) -> None:
        """Median / min / max in the display unit, marked; ``no pass`` where no repetition found a passing rate."""
        for stat in STATS:
            vals = d[stat].astype("float64")
            cells = [
                NO_PASS_CELL if none else fmt_value(v * mult) + (mk if math.isfinite(v) else "")
                for v, none, mk in zip(vals, nothing, marks, strict=True)
            ]
            self.rows.add_cells(f"{prefix} {stat}", vals, cells)

    def _stat_rows(self, m: Metric[Any], d: pd.DataFrame, mult: float) -> None:
        """Median / min / max of each further statistic the metric declares (latency's worst case)."""
        for rows in m.stat_rows:
            if d[f"{rows.column}_median"].notna().any():
                factor = mult if rows.in_metric_unit else 1.0
                for stat in STATS:
                    vals = d[f"{rows.column}_{stat}"].astype("float64")
                    self.rows.add_cells(f"{m.label} {rows.label} {stat}", vals, [fmt_value(v * factor) for v in vals])
                self.notes.append(rows.note.format(prefix=m.label))

    def _scale_rows(self, m: Metric[Any]) -> None:
        """The relative scale-up (cores vary) and median / previous median (connections vary)."""
        if self.cores_scale is not None:
            su = self.cores_scale[self.cores_scale["metric"] == m.name].set_index("point_id")["scale_up"]
            self.rows.add(m.scale_label, su.reindex(self.ids), fmt_scale_up)
        if self.conn_ratio is not None:
            rp = self.conn_ratio[self.conn_ratio["metric"] == m.name].set_index("point_id")["ratio_prev"]
            self.rows.add(f"{m.label} median / previous median", rp.reindex(self.ids), fmt_ratio)


def _experiments_row(rows: TableRows, by: dict[str, pd.DataFrame], main: list[str]) -> pd.Series | None:
    """One ``num. experiments`` row when every block has as many experiments at each point (its numbers, returned);
    None: each block gets its own row."""
    exps = pd.DataFrame({name: by[name]["experiments"] for name in main})
    if exps.empty or not bool((exps.nunique(axis=1, dropna=True) <= 1).all()):
        return None
    shared = exps.max(axis=1)
    rows.add("num. experiments", shared, fmt_count)
    return shared


def _title(what: str, cores_vary: bool, conn_vary: bool) -> str:
    if cores_vary and not conn_vary:
        return f"Performance ({what}) against the number of CPU cores"
    if conn_vary and not cores_vary:
        return f"Performance ({what}) against the number of connections"
    return f"Performance ({what})"


def _baseline_caption(base: Metric[Any], compared: str, baseline_source: str | None) -> str:
    caption = (
        f" {base.label}: plain packet forwarding baseline with the"
        f" same port number ranges; {compared} ratio (%) = {compared} median / baseline median"
        " (both in all frames per second)."
    )
    if baseline_source:
        caption += (
            f" The {base.label} rows come from {baseline_source}, matched to these columns by"
            " cores, port ranges and frame size."
        )
    return caption


def performance_table(
    summary: pd.DataFrame,
    points: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    scale: str = "1",
    baseline: str | None = None,
    title: str | None = None,
    family: str | None = None,
    baseline_source: str | None = None,
    memory: pd.DataFrame | None = None,
    slab_labels: Callable[[str], str] | None = None,
) -> SeedTable:
    """A seed 000 Figure 2 / Figure 4 / seed 004 Table 4-9 / seed 001 PF style table.

    ``summary`` comes from :func:`~natbench.report.aggregate.summarize`, ``points`` from
    :func:`~natbench.run.frames.points_frame`. ``metrics``: the metric blocks to show (default: every metric in
    the summary that has no table of its own (tear-down), in measurement order). ``scale``: '1', 'k' or 'M' for
    the metrics that follow it (errors stay in plain units, as in the seeds). ``baseline``: the plain-forwarding
    baseline metric (default: the registered one, forwarding), shown after the others with the ratio of the metric
    it is the baseline for (throughput). ``family``: the campaign's traffic family; ``ipv6`` states the IPv6 frame
    sizes (64 -> 84 bytes). ``baseline_source``: where the baseline was measured when another run holds it (stated
    in the caption). With an ``invalid_trials`` column in ``summary``
    (:func:`~natbench.report.aggregate.with_invalid_trials`) each metric block gets an "invalid trials" row.
    ``memory``: the run's kept fills that stored the DUT's memory
    (:func:`~natbench.report.aggregate.fill_memory_frame`); the memory rows follow the parameters where a fill of a
    metric in the table stored one, each slab cache's row named by ``slab_labels`` (default: as the run stored no
    declarations).

    Each metric block shows what its :class:`~natbench.metrics.Metric` declares: its marks, count rows (after
    every search's, :data:`~natbench.metrics.declare.SEARCH_ROWS`) and statistic rows.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    s = summary.reset_index()
    s["point_id"] = s["point_id"].astype(str)
    s["metric"] = s["metric"].astype(str)
    sel = _select(s, metrics, baseline)
    ids = [pid for pid in points.index if pid in set(s.loc[s["metric"].isin(sel.metrics), "point_id"])]
    pts = points.loc[ids]
    rows = TableRows(ids)
    param_rows(rows, pts, family)
    by = {name: s[s["metric"] == name].set_index("point_id").reindex(ids) for name in sel.metrics}
    shared_exps = _experiments_row(rows, by, sel.main)
    cores_vary = series_vary(pts, "cores_group", "cores")
    conn_vary = series_vary(pts, "conn_group", "connections")
    blocks = _Blocks(
        rows,
        ids,
        scale,
        scale_up_cores(summary, points) if cores_vary else None,
        scale_connections(summary, points) if conn_vary else None,
    )
    blocks.notes += memory_rows(rows, memory, ids, sel.metrics, slab_labels or (lambda key: slab_label({}, key)))
    for name in sel.main:
        blocks.block(sel.known[name], by[name], shared_exps is None)
    if sel.compared is not None:
        base = sel.known[sel.baseline]
        base_exp = by[sel.baseline]["experiments"]
        same_exp = shared_exps is not None and bool((base_exp.fillna(-1) == shared_exps.fillna(-1)).all())
        blocks.block(base, by[sel.baseline], not same_exp)
        ratio = baseline_ratio(summary, points, sel.baseline, [sel.compared]).set_index("point_id")["ratio"]
        rows.add(f"{sel.compared} ratio (%)", ratio.reindex(ids), fmt_percent)

    cells, values = rows.frames(point_labels(pts))
    if title is None:
        title = _title(", ".join(sel.known[name].label for name in sel.main), cores_vary, conn_vary)
    caption = "Units: " + "; ".join(blocks.units) + "."
    error = error_sentence(blocks.searches)
    if error:
        caption += f" {error}"
    if sel.compared is not None:
        caption += _baseline_caption(sel.known[sel.baseline], sel.compared, baseline_source)
    if blocks.cores_scale is not None:
        caption += " rel. scale up = P(n) / (n * P(1)), n: number of CPU cores."
    caption += frame_caption(pts, family)
    if blocks.notes:
        caption += " " + "; ".join(dict.fromkeys(blocks.notes)) + "."
    key = "performance" if metrics is None else "-".join(metrics)
    return SeedTable(title, caption, cells, values, ids, key)
