"""Result tables shaped like the seeds' figures, rendered as text, Markdown, LaTeX, CSV and HTML.

Columns are working points (campaign order); rows are the parameters (num. CPU cores, src ports,
dst ports, num. conn., the DUT's table and hash sizes as its recipe declares them and their ratios to
num. conn., num. experiments, memory, error), then each metric's median / min / max, the rows and marks
it declares (:mod:`natbench.metrics.declare`) and its scale-up row: the relative scale-up
S(n) = P(n) / (n * P(1)) where the cores vary, "median / previous median" where the connections vary.
A forwarding baseline adds its own block and the throughput ratio (%) row, as in seed 000 Figure 2. A
metric with a table of its own (tear-down: seed 000 Figure 5, seed 001 PF table) gets that table.
"""

from __future__ import annotations

import html
import io
import math
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from natbench.metrics import Metric, baseline_metric, reported_metric
from natbench.metrics.declare import SEARCH_ROWS, CountRow, Mark, SearchBlock, error_caption
from natbench.metrics.hostload import HOST_MARKS
from natbench.report.aggregate import MEMORY_FIGURES, baseline_ratio, memory_summary, scale_connections, scale_up_cores
from natbench.report.formatting import (
    fmt_count,
    fmt_number,
    fmt_percent,
    fmt_ratio,
    fmt_scale_up,
    fmt_seconds,
    fmt_size,
    fmt_value,
)
from natbench.run.format import LEGACY, UNIT_ALIASES, reported_unit, slab_label

__all__ = [
    "INVALID_NOTE",
    "MEMORY_NOTE",
    "MEMORY_UNKNOWN_NOTE",
    "SCALES",
    "SeedTable",
    "own_table",
    "performance_table",
    "report_tables",
]

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


def _unit_words(m: Metric[Any], unit: str, directions: int) -> str:
    """The unit in a caption's words, as the table shows the value (frame rates of several directions: all
    frames)."""
    words = m.unit_words or unit or "as stored"
    if directions >= 2 and reported_unit(unit, float(directions)) != UNIT_ALIASES.get(unit, unit):
        return f"{words}, all frames of bidirectional traffic (per-direction rate x{directions})"
    return words


@dataclass
class SeedTable:
    """One seed-style result table: formatted cells plus the numbers behind them."""

    title: str
    """Short title (e.g. 'Performance against the number of CPU cores')."""
    caption: str
    """Units and conventions, as the seeds state them under a figure."""
    cells: pd.DataFrame
    """Formatted strings; index = row names, columns = working point labels."""
    values: pd.DataFrame
    """The numbers behind ``cells`` in base units (cps, all fps, s, counts); NaN where none."""
    point_ids: list[str] = field(default_factory=list)
    """Point id of each column."""
    key: str = "table"
    """Short name used for file names (``performance``, ``teardown``, or the metric)."""

    # ---- renderers -------------------------------------------------------------------------
    def to_text(self) -> str:
        """Aligned plain text: row names left, values right-aligned (like the seed figures)."""
        header = ["", *map(str, self.cells.columns)]
        rows = [[str(i), *map(str, r)] for i, r in zip(self.cells.index, self.cells.to_numpy().tolist(), strict=True)]
        widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]

        def line(r: Sequence[str]) -> str:
            return "  ".join([r[0].ljust(widths[0]), *(v.rjust(w) for v, w in zip(r[1:], widths[1:], strict=True))])

        out = [self.title, "", line(header), "  ".join("-" * w for w in widths)]
        out += [line(r).rstrip() for r in rows]
        out += ["", *textwrap.wrap(self.caption, 100, break_on_hyphens=False)]  # names and paths stay whole
        return "\n".join(out) + "\n"

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table with the title above and the caption below."""

        def esc(s: object) -> str:
            return str(s).replace("|", "\\|")

        cols = [esc(c) for c in self.cells.columns]
        out = [f"**{esc(self.title)}**", "", "| | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for name, row in zip(self.cells.index, self.cells.to_numpy().tolist(), strict=True):
            out.append(f"| {esc(name)} | " + " | ".join(esc(v) for v in row) + " |")
        out += ["", f"*{esc(self.caption)}*"]
        return "\n".join(out) + "\n"

    def to_latex(self, standalone: bool = False) -> str:
        """A LaTeX ``table`` (``standalone=True``: a complete article that compiles on its own)."""
        ncol = len(self.cells.columns)
        lines = [
            "\\begin{table}[htbp]",
            "\\centering",
            "\\scriptsize",
            f"\\caption{{{_tex(self.title)}. {_tex(self.caption)}}}",
            "\\begin{tabular}{l" + "r" * ncol + "}",
            "\\hline",
            " & ".join(["", *(_tex(str(c)) for c in self.cells.columns)]) + " \\\\",
            "\\hline",
        ]
        for name, row in zip(self.cells.index, self.cells.to_numpy().tolist(), strict=True):
            lines.append(" & ".join([_tex(str(name)), *(_tex(str(v)) for v in row)]) + " \\\\")
        lines += ["\\hline", "\\end{tabular}", "\\end{table}"]
        body = "\n".join(lines) + "\n"
        if standalone:
            return "\\documentclass{article}\n\\begin{document}\n" + (body + "\\end{document}\n")
        return body

    def to_csv(self) -> str:
        """CSV of the numbers (base units) with the title and caption as leading ``#`` comments.

        Read back with ``pandas.read_csv(path, comment="#", index_col=0)``.
        """
        buf = io.StringIO()
        buf.write(f"# {self.title}\n# {self.caption}\n")
        frame = self.values.copy()
        frame.index.name = "row"
        frame.to_csv(buf, float_format="%.10g")
        return buf.getvalue()

    def to_html(self) -> str:
        """An HTML ``<table>`` with a caption (used by the HTML report)."""
        cols = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.cells.columns)
        body = []
        for name, row in zip(self.cells.index, self.cells.to_numpy().tolist(), strict=True):
            tds = "".join(f"<td>{html.escape(str(v))}</td>" for v in row)
            body.append(f"<tr><th>{html.escape(str(name))}</th>{tds}</tr>")
        return (
            '<table class="seed">'
            f"<caption><strong>{html.escape(self.title)}</strong><br>{html.escape(self.caption)}</caption>"
            f"<thead><tr><th></th>{cols}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )

    def render(self, fmt: str) -> str:
        """Render in ``text``, ``md``, ``tex`` or ``csv``."""
        renderers: dict[str, Callable[[], str]] = {
            "text": self.to_text,
            "md": self.to_markdown,
            "tex": self.to_latex,
            "csv": self.to_csv,
            "html": self.to_html,
        }
        if fmt not in renderers:
            raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(renderers)}")
        return renderers[fmt]()


_TEX_SPECIAL = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
}


def _tex(s: str) -> str:
    if s.startswith("2^") and s[2:].isdigit():
        return f"$2^{{{s[2:]}}}$"
    out = "".join(_TEX_SPECIAL.get(ch, ch) for ch in s)
    return out.replace("^", "\\textasciicircum{}")


class _Builder:
    """Accumulates rows of formatted cells and numbers for a list of points."""

    def __init__(self, point_ids: list[str]) -> None:
        self.point_ids = point_ids
        self.names: list[str] = []
        self.cells: list[list[str]] = []
        self.values: list[list[float]] = []

    def add(self, name: str, values: Iterable[float], fmt: Callable[[float], str]) -> None:
        vals = [float("nan") if v is None else float(v) for v in values]
        self.names.append(name)
        self.values.append(vals)
        self.cells.append([fmt(v) for v in vals])

    def add_cells(self, name: str, values: Iterable[float], cells: Iterable[str]) -> None:
        self.names.append(name)
        self.values.append([float(v) for v in values])
        self.cells.append(list(cells))

    def frames(self, labels: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        cells = pd.DataFrame(self.cells, index=self.names, columns=labels, dtype=object)
        values = pd.DataFrame(self.values, index=self.names, columns=labels, dtype="float64")
        return cells, values


def _count(d: pd.DataFrame, column: str) -> pd.Series:
    """A count column of a metric's summary rows (0 where absent: a summary from before the column)."""
    if column not in d:
        return pd.Series(0, index=d.index, dtype="int64")
    return d[column].fillna(0).astype("int64")


def _labels(points: pd.DataFrame) -> list[str]:
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


def _frame_caption(pts: pd.DataFrame, family: str | None) -> str:
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


def _param_rows(b: _Builder, pts: pd.DataFrame, family: str | None = None) -> None:
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


def _memory_rows(
    b: _Builder,
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


def _series_vary(pts: pd.DataFrame, group: str, col: str) -> bool:
    """True when some series (points equal but for ``col``) has more than one value of ``col``."""
    return bool((pts.groupby(group)[col].nunique() > 1).any())


def _display(m: Metric[Any], unit: str, scale: str) -> tuple[float, str]:
    """(multiplier from base unit to display, unit words prefix)."""
    if m.scaled:
        div, word = SCALES[scale]
        return 1.0 / div, word
    if unit == "s" and m.in_milliseconds:
        return 1e3, ""
    return 1.0, ""


def _cell_marks(frame: pd.DataFrame, declared: Sequence[Mark], n: int) -> tuple[list[str], list[str]]:
    """The symbols after each of ``n`` points' cells (every declared mark whose flag is set at the point) and the
    caption notes of the marks shown."""
    marks, notes = [""] * n, []
    for mark in declared:
        flagged = _count(frame, mark.column) > 0
        if flagged.any():
            marks = _marked(marks, flagged.tolist(), mark.symbol)
            notes.append(mark.note)
    return marks, notes


def _marked(cells: list[str], flagged: Sequence[bool], symbol: str) -> list[str]:
    return [c + (f" {symbol}" if f else "") for c, f in zip(cells, flagged, strict=True)]


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
    labels_of = slab_labels or (lambda key: slab_label({}, key))
    metrics_arg = None if metrics is None else list(metrics)
    s = summary.reset_index()
    s["point_id"] = s["point_id"].astype(str)
    s["metric"] = s["metric"].astype(str)
    known = {name: reported_metric(name) for name in s["metric"].unique()}
    present = [name for name, m in known.items() if not m.own_table]
    if metrics is None:
        metrics = sorted(present, key=lambda name: known[name].sort_key)
    else:
        metrics = [name for name in metrics if name in present]
    default = baseline_metric()
    compared = default.baseline_for if default is not None else None  # what the baseline is compared with
    if baseline is None:
        baseline = default.name if default is not None else ""
    show_baseline = compared is not None and baseline in metrics and compared in metrics
    main = [name for name in metrics if not (show_baseline and name == baseline)]
    ids = [pid for pid in points.index if pid in set(s.loc[s["metric"].isin(metrics), "point_id"])]
    pts = points.loc[ids]
    b = _Builder(ids)
    _param_rows(b, pts, family)

    by = {name: s[s["metric"] == name].set_index("point_id").reindex(ids) for name in metrics}
    exps = pd.DataFrame({name: by[name]["experiments"] for name in main})
    if not exps.empty and bool((exps.nunique(axis=1, dropna=True) <= 1).all()):
        b.add("num. experiments", exps.max(axis=1), fmt_count)
        per_metric_exp = False
    else:
        per_metric_exp = True
    units: list[str] = []
    notes: list[str] = []
    notes += _memory_rows(b, memory, ids, metrics, labels_of)
    cores_vary = _series_vary(pts, "cores_group", "cores")
    conn_vary = _series_vary(pts, "conn_group", "connections")
    sc = scale_up_cores(summary, points) if cores_vary else None
    sn = scale_connections(summary, points) if conn_vary else None
    searches: list[SearchBlock] = []

    def count_rows(d: pd.DataFrame, prefix: str, rows: Iterable[CountRow]) -> None:
        for row in rows:
            counted = _count(d, row.column)
            if row.label is not None and (counted > 0).any():
                b.add(f"{prefix} {row.label}", counted, fmt_count)
                notes.append(row.note)

    def block(m: Metric[Any], exp_row: bool) -> None:
        prefix = m.label
        d = by[m.name]
        unit = str(d["unit"].dropna().iloc[0]) if d["unit"].notna().any() else ""
        directions = int(d["directions"].max()) if d["directions"].notna().any() else 1
        mult, word = _display(m, unit, scale)
        units.append(f"{prefix}: {word}{_unit_words(m, unit, directions)}")
        if exp_row:
            b.add(f"{prefix} num. exp.", d["experiments"], fmt_count)
        if (d["failed"].fillna(0) > 0).any():  # repetitions that ended without a value
            b.add(f"{prefix} failed reps.", d["failed"], fmt_count)
        no_pass = _count(d, "no_pass")
        if (no_pass > 0).any():  # repetitions whose search found no passing rate: no value, not a failure
            b.add(f"{prefix} no passing rate", no_pass, fmt_count)
            notes.append(NO_PASS_NOTE)
        marks, mark_notes = _cell_marks(d, (*m.marks, *HOST_MARKS), len(ids))
        notes.extend(mark_notes)
        count_rows(d, prefix, (*SEARCH_ROWS, *m.count_rows))
        if "invalid_trials" in d and d["invalid_trials"].notna().any():  # trials stored: how many proved nothing
            b.add(f"{prefix} invalid trials", d["invalid_trials"], fmt_count)
            notes.append(INVALID_NOTE)
        if "dut_cpu_busy" in d and d["dut_cpu_busy"].notna().any():  # monitored: the DUT's load at the result
            b.add(f"{prefix} DUT CPU busy (%)", d["dut_cpu_busy"] / 100.0, fmt_percent)
            notes.append(CPU_NOTE)
        if "seeded" in d and (d["seeded"].fillna(0) > 0).any():  # algorithm: fast
            notes.append(
                f"{prefix}: fast search; repetitions after the first started from the earlier ones' results"
                " (each value still passed a full trial, with an upper bound one error above), so min / max are"
                " narrower than independent binary searches'; on a DUT whose ceiling varies from trial to trial the"
                " median may sit above a binary search's (a DUT with queues) or below it: bench/search_bias.py measures"
                " it on modelled DUTs (docs/engine.md)"
            )
        if d["error"].notna().any():
            b.add(f"{prefix} error", d["error"], fmt_number)
            searches.append(
                SearchBlock(
                    prefix,
                    next((str(a) for a in d.get("algorithm", pd.Series(dtype=object)) if a), None),
                    next((str(g) for g in d.get("search_goal", pd.Series(dtype=object)) if g), None),
                    int(_count(d, "short_bound").sum()),
                    int(d["experiments"].fillna(0).sum()),
                )
            )
        nothing = ((d["experiments"].fillna(0) == 0) & (no_pass > 0)).tolist()
        for stat in ("median", "min", "max"):
            vals = d[stat].astype("float64")
            cells = [
                NO_PASS_CELL if none else fmt_value(v * mult) + (mk if math.isfinite(v) else "")
                for v, none, mk in zip(vals, nothing, marks, strict=True)
            ]
            b.add_cells(f"{prefix} {stat}", vals, cells)
        for rows in m.stat_rows:
            if f"{rows.column}_median" in d and d[f"{rows.column}_median"].notna().any():
                factor = mult if rows.in_metric_unit else 1.0
                for stat in ("median", "min", "max"):
                    vals = d[f"{rows.column}_{stat}"].astype("float64")
                    b.add_cells(f"{prefix} {rows.label} {stat}", vals, [fmt_value(v * factor) for v in vals])
                notes.append(rows.note.format(prefix=prefix))
        if sc is not None:
            su = sc[sc["metric"] == m.name].set_index("point_id")["scale_up"].reindex(ids)
            b.add(m.scale_label, su, fmt_scale_up)
        if sn is not None:
            rp = sn[sn["metric"] == m.name].set_index("point_id")["ratio_prev"].reindex(ids)
            b.add(f"{prefix} median / previous median", rp, fmt_ratio)

    for name in main:
        block(known[name], per_metric_exp)
    base = known.get(baseline)
    if show_baseline and compared is not None and base is not None:
        base_exp = by[baseline]["experiments"]
        same_exp = not per_metric_exp and bool((base_exp.fillna(-1) == exps.max(axis=1).fillna(-1)).all())
        block(base, not same_exp)
        r = baseline_ratio(summary, points, baseline, [compared]).set_index("point_id")["ratio"].reindex(ids)
        b.add(f"{compared} ratio (%)", r, fmt_percent)

    cells, values = b.frames(_labels(pts))
    if title is None:
        what = ", ".join(known[name].label for name in main)
        if cores_vary and not conn_vary:
            title = f"Performance ({what}) against the number of CPU cores"
        elif conn_vary and not cores_vary:
            title = f"Performance ({what}) against the number of connections"
        else:
            title = f"Performance ({what})"
    caption = "Units: " + "; ".join(units) + "."
    error = error_caption(searches)
    if error:
        caption += f" {error}"
    if show_baseline and base is not None:
        caption += (
            f" {base.label}: plain packet forwarding baseline with the"
            f" same port number ranges; {compared} ratio (%) = {compared} median / baseline median"
            " (both in all frames per second)."
        )
        if baseline_source:
            caption += (
                f" The {base.label} rows come from {baseline_source}, matched to these columns by"
                " cores, port ranges and frame size."
            )
    if sc is not None:
        caption += " rel. scale up = P(n) / (n * P(1)), n: number of CPU cores."
    caption += _frame_caption(pts, family)
    if notes:
        caption += " " + "; ".join(dict.fromkeys(notes)) + "."
    key = "performance" if metrics_arg is None else "-".join(metrics_arg)
    return SeedTable(title, caption, cells, values, ids, key)


def _time_decimals(col: pd.Series) -> int:
    """2 decimals (seed 000 Figure 5), 1 when a time reaches 1,000 s, more for times below 0.1 s
    (so that a fast software DUT's milliseconds keep three significant digits)."""
    m = col.max(skipna=True)
    if not math.isnan(m) and m >= 999.95:
        return 1
    positive = col[col > 0]
    smallest = positive.min() if len(positive) else float("nan")
    if not math.isnan(smallest) and smallest < 0.1:
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
    b = _Builder(ids)
    _param_rows(b, pts)
    b.add("num. experiments", fig["experiments"], fmt_count)
    notes: list[str] = []
    if "invalid_trials" in flags and flags["invalid_trials"].notna().any():
        b.add("invalid trials", flags["invalid_trials"].astype("float64"), fmt_count)
        notes.append(INVALID_NOTE)
    notes += _memory_rows(b, memory, ids, [metric.name], slab_labels or (lambda key: slab_label({}, key)))
    marks, mark_notes = _cell_marks(flags, (*metric.marks, *HOST_MARKS), len(ids))
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
    cells_frame, values = b.frames(_labels(pts))
    caption = table.caption.format(scale=word)
    if notes:
        caption += " " + " ".join(f"{n[0].upper()}{n[1:]}." for n in dict.fromkeys(notes))
    return SeedTable(title or table.title, caption, cells_frame, values, ids, metric.name)


def report_tables(
    summary: pd.DataFrame,
    points: pd.DataFrame,
    *,
    own: Mapping[str, pd.DataFrame] | None = None,
    scale: str = "1",
    family: str | None = None,
    baseline_source: str | None = None,
    memory: pd.DataFrame | None = None,
    slab_labels: Callable[[str], str] | None = None,
) -> list[SeedTable]:
    """Every table of a run: the performance table (if any metric without a table of its own was measured), then the
    table of each metric with its own (``own``: metric name -> its figures,
    :func:`~natbench.report.aggregate.own_summary`), in measurement order. ``family``: the campaign's traffic family;
    ``baseline_source``: where a baseline from another run was measured; ``memory``: the kept fills that stored the
    DUT's memory (their rows in each table); ``slab_labels``: the slab caches' rows."""
    tables = []
    names = {str(m) for m in summary.index.get_level_values("metric")} if not summary.empty else set()
    metrics = sorted((reported_metric(name) for name in names), key=lambda m: m.sort_key)
    if any(not m.own_table for m in metrics):
        tables.append(
            performance_table(
                summary,
                points,
                scale=scale,
                family=family,
                baseline_source=baseline_source,
                memory=memory,
                slab_labels=slab_labels,
            )
        )
    for m in metrics:
        figures = (own or {}).get(m.name)
        if m.own_table and figures is not None and not figures.empty:
            tables.append(
                own_table(m, figures, points, scale=scale, summary=summary, memory=memory, slab_labels=slab_labels)
            )
    return tables
