"""Result tables shaped like the seeds' figures, rendered as text, Markdown, LaTeX, CSV and HTML.

Columns are working points (campaign order); rows are the parameters (num. CPU cores, src ports,
dst ports, num. conn., conntrack table and hash sizes and their ratios to num. conn., num.
experiments, error), then each metric's median / min / max and its scale-up row: the relative
scale-up S(n) = P(n) / (n * P(1)) where the cores vary, "median / previous median" where the
connections vary. A forwarding baseline adds its own block and the throughput ratio (%) row,
as in seed 000 Figure 2. Tear-down has its own table (seed 000 Figure 5, seed 001 PF table).
"""

from __future__ import annotations

import html
import io
import math
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from natbench.metrics.teardown import TEARDOWN
from natbench.report.aggregate import baseline_ratio, memory_summary, scale_connections, scale_up_cores
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
from natbench.report.labels import (
    baseline_metric,
    in_milliseconds,
    in_performance_table,
    order_key,
    table_labels,
)

__all__ = [
    "INVALID_NOTE",
    "MEMORY_NOTE",
    "MEMORY_ROWS",
    "SCALES",
    "SeedTable",
    "performance_table",
    "report_tables",
    "teardown_invalid",
    "teardown_table",
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

MEMORY_ROWS = (
    ("mem_available", "memory / conn. (B)"),
    ("conntrack_slab", "conntrack slab / conn. (B)"),
    ("jool_session_slab", "Jool session slab / conn. (B)"),
    ("jool_bib_slab", "Jool BIB slab / conn. (B)"),
)
"""Rows of the DUT's memory per connection: the key in :func:`~natbench.report.aggregate.memory_summary`, the row."""

MEMORY_NOTE = (
    "'memory / conn. (B)': how far the DUT's MemAvailable fell from the emptied to the filled table, divided by the "
    "connections the tester created in the fill (its valid phase-1 frames); 'memory used (MB)': that fall in all "
    "(1 MB = 10^6 bytes); the slab rows: growth of the connection tracking table's own slab cache (objects x object "
    "size) per connection; each the median over the point's fills of the metrics in this table"
)
"""Caption note of the memory rows."""

TAGGED_MARK = "[t]"
"""Marks a PDV cell timed from the tagged latency frames only (TRex), not from every frame."""
TAGGED_NOTE = (
    "[t]: PDV of the tagged latency frames only (the TRex tester times no other frames), not of every frame as "
    "RFC 8219 7.3.1 and the software tester measure it: not comparable with unmarked PDV"
)
UNVALIDATED_MARK = "[u]"
"""Marks a cps cell with repetitions whose rate no validation with reverse frames confirmed."""
UNVALIDATED_NOTE = (
    "[u]: some repetitions' rate was not validated with reverse frames (validation: off, or a DUT that could not be "
    "validated; RFC 9693 4.6): the DUT may have forwarded frames without keeping their connections"
)
NO_PASS_CELL = "no pass"
"""The median / min / max cell of a point where no repetition found a passing rate."""
NO_PASS_NOTE = (
    "'no passing rate' counts repetitions in which every rate tried failed down to the search's lower bound (no "
    "passing rate within [lower, upper], both stored with the result): they have no value and are left out of "
    "median / min / max ('no pass' where no repetition found one)"
)

#: Metrics whose values are rates and follow the chosen display scale.
_RATE_UNITS = {"cps", "fps", "conn"}


def _unit_words(metric: str, unit: str, directions: int) -> str:
    if unit == "cps":
        return "connections per second"
    if unit == "fps":
        if directions >= 2:
            return "frames per second, all frames of bidirectional traffic (per-direction rate x2)"
        return "frames per second"
    if unit == "s" and in_milliseconds(metric):
        return "milliseconds"
    if unit == "s":
        return "seconds"
    if unit == "conn":
        return "connections"
    return unit or "as stored"


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
    has_table = pts["table_size"].notna().any()
    has_hash = pts["hash_size"].notna().any()
    if has_table:
        b.add("conntrack t. s.", pts["table_size"], fmt_size)
    if has_hash:
        b.add("hash table size", pts["hash_size"], fmt_size)
    if has_table:
        b.add("c.t.s/num.conn.", pts["table_size"] / pts["connections"], lambda v: fmt_ratio(v, 3))
    if has_hash:
        b.add("n.c./h.t.s.", pts["connections"] / pts["hash_size"], lambda v: fmt_ratio(v, 3))


def _memory_rows(b: _Builder, fills: pd.DataFrame | None, ids: list[str], metrics: Iterable[str]) -> bool:
    """The DUT memory rows (median over the points' fills of ``metrics`` that stored memory, see
    :func:`~natbench.report.aggregate.fill_memory_frame`); False when no such fill exists."""
    if fills is None:
        return False
    mem = memory_summary(fills, metrics).reindex(ids)
    if not mem["mem_available"].notna().any():
        return False
    for key, name in MEMORY_ROWS:
        if mem[key].notna().any():
            b.add(name, mem[key], fmt_value)
        if key == "mem_available":
            used = mem["used"].astype("float64")
            b.add_cells("memory used (MB)", used, [fmt_value(v / 1e6) for v in used])
    return True


def _series_vary(pts: pd.DataFrame, group: str, col: str) -> bool:
    """True when some series (points equal but for ``col``) has more than one value of ``col``."""
    return bool((pts.groupby(group)[col].nunique() > 1).any())


def _display(metric: str, unit: str, scale: str) -> tuple[float, str]:
    """(multiplier from base unit to display, unit words prefix)."""
    if unit in _RATE_UNITS:
        div, word = SCALES[scale]
        return 1.0 / div, word
    if unit == "s" and in_milliseconds(metric):
        return 1e3, ""
    return 1.0, ""


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
) -> SeedTable:
    """A seed 000 Figure 2 / Figure 4 / seed 004 Table 4-9 / seed 001 PF style table.

    ``summary`` comes from :func:`~natbench.report.aggregate.summarize`, ``points`` from
    :func:`~natbench.report.aggregate.points_frame`. ``metrics``: the metric blocks to show
    (default: every metric in the summary that has no table of its own (tear-down), in measurement order).
    ``scale``: '1', 'k' or 'M' for rates (errors stay in plain units, as in the seeds).
    ``baseline``: the plain-forwarding baseline metric (default: the registered one, forwarding), shown
    after the others with the ratio of the metric it is the baseline for (throughput).
    ``family``: the campaign's traffic family; ``ipv6`` states the IPv6 frame sizes (64 -> 84 bytes).
    ``baseline_source``: where the baseline was measured when another run holds it (stated in the caption).
    With an ``invalid_trials`` column in ``summary``
    (:func:`~natbench.report.aggregate.with_invalid_trials`) each metric block gets an "invalid trials" row.
    ``memory``: the run's fills that stored the DUT's memory (:func:`~natbench.report.aggregate.fill_memory_frame`);
    the memory rows (:data:`MEMORY_ROWS`) follow the parameters where a fill of a metric in the table stored one.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    metrics_arg = None if metrics is None else list(metrics)
    s = summary.reset_index()
    s["point_id"] = s["point_id"].astype(str)
    s["metric"] = s["metric"].astype(str)
    present = [m for m in s["metric"].unique() if in_performance_table(m)]
    metrics = sorted(present, key=order_key) if metrics is None else [m for m in metrics if m in present]
    default = baseline_metric()
    compared = default.baseline_for if default is not None else None  # what the baseline is compared with
    if baseline is None:
        baseline = default.name if default is not None else ""
    show_baseline = compared is not None and baseline in metrics and compared in metrics
    main = [m for m in metrics if not (show_baseline and m == baseline)]
    ids = [pid for pid in points.index if pid in set(s.loc[s["metric"].isin(metrics), "point_id"])]
    pts = points.loc[ids]
    b = _Builder(ids)
    _param_rows(b, pts, family)

    by = {m: s[s["metric"] == m].set_index("point_id").reindex(ids) for m in metrics}
    exps = pd.DataFrame({m: by[m]["experiments"] for m in main})
    if not exps.empty and bool((exps.nunique(axis=1, dropna=True) <= 1).all()):
        b.add("num. experiments", exps.max(axis=1), fmt_count)
        per_metric_exp = False
    else:
        per_metric_exp = True
    units: list[str] = []
    notes: list[str] = []
    if _memory_rows(b, memory, ids, metrics):
        notes.append(MEMORY_NOTE)
    cores_vary = _series_vary(pts, "cores_group", "cores")
    conn_vary = _series_vary(pts, "conn_group", "connections")
    sc = scale_up_cores(summary, points) if cores_vary else None
    sn = scale_connections(summary, points) if conn_vary else None

    def block(m: str, prefix: str, scale_name: str, exp_row: bool) -> None:
        d = by[m]
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
        marks = [""] * len(ids)
        for col, mark, note in (
            ("tagged_only", TAGGED_MARK, TAGGED_NOTE),
            ("unvalidated", UNVALIDATED_MARK, UNVALIDATED_NOTE),
        ):
            flagged = _count(d, col) > 0
            if flagged.any():
                marks = [m + (f" {mark}" if f else "") for m, f in zip(marks, flagged.tolist(), strict=True)]
                notes.append(note)
        if (d["tester_bound"].fillna(0) > 0).any():  # the DUT passed all the tester could send
            b.add(f"{prefix} tester-bound reps.", d["tester_bound"], fmt_count)
            notes.append(
                "'tester-bound reps.' counts repetitions whose search ended at the tester's ceiling: "
                "their value is a lower bound of the DUT's performance"
            )
        if "invalid_trials" in d and d["invalid_trials"].notna().any():  # trials stored: how many proved nothing
            b.add(f"{prefix} invalid trials", d["invalid_trials"], fmt_count)
            notes.append(INVALID_NOTE)
        if "dut_cpu_busy" in d and d["dut_cpu_busy"].notna().any():  # monitored: the DUT's load at the result
            b.add(f"{prefix} DUT CPU busy (%)", d["dut_cpu_busy"] / 100.0, fmt_percent)
            notes.append(
                "'DUT CPU busy (%)': load of the DUT's data-path CPUs in the last passing trial at the reported "
                "rate (monitor samples; median over samples, then over repetitions; the busiest DUT of a group; "
                "none for trials shorter than 3 monitor intervals)"
            )
        if "seeded" in d and (d["seeded"].fillna(0) > 0).any():  # algorithm: fast
            notes.append(
                f"{prefix}: fast search; repetitions after the first started from the earlier ones' results"
                " (each value still passed a full trial, with an upper bound one error above), so min / max are"
                " narrower than independent binary searches'; on a DUT whose ceiling varies from trial to trial by"
                " +-J the median sits below a binary search's: by about J / 3 with the short-fail rule, at most J / 10"
                " without (cps) (bench/search_bias.py, docs/engine.md)"
            )
        if d["error"].notna().any():
            b.add(f"{prefix} error", d["error"], fmt_number)
        nothing = ((d["experiments"].fillna(0) == 0) & (no_pass > 0)).tolist()
        for stat in ("median", "min", "max"):
            vals = d[stat].astype("float64")
            cells = [
                NO_PASS_CELL if none else fmt_value(v * mult) + (mk if math.isfinite(v) else "")
                for v, none, mk in zip(vals, nothing, marks, strict=True)
            ]
            b.add_cells(f"{prefix} {stat}", vals, cells)
        if _worst_case_rows(b, d, prefix, mult):
            notes.append(
                f"{prefix}: typical latency (median of the tagged frames), '{prefix} worst case': worst-case latency "
                "(their 99.9th percentile), both per RFC 8219 7.2, the worse direction, over the repetitions"
            )
        if sc is not None:
            su = sc[sc["metric"] == m].set_index("point_id")["scale_up"].reindex(ids)
            b.add(scale_name, su, fmt_scale_up)
        if sn is not None:
            rp = sn[sn["metric"] == m].set_index("point_id")["ratio_prev"].reindex(ids)
            b.add(f"{prefix} median / previous median", rp, fmt_ratio)

    for m in main:
        prefix, scale_name = table_labels(m)
        block(m, prefix, scale_name, per_metric_exp)
    if show_baseline and compared is not None:
        prefix, scale_name = table_labels(baseline)
        base_exp = by[baseline]["experiments"]
        same_exp = not per_metric_exp and bool((base_exp.fillna(-1) == exps.max(axis=1).fillna(-1)).all())
        block(baseline, prefix, scale_name, not same_exp)
        r = baseline_ratio(summary, points, baseline, [compared]).set_index("point_id")["ratio"].reindex(ids)
        b.add(f"{compared} ratio (%)", r, fmt_percent)

    cells, values = b.frames(_labels(pts))
    if title is None:
        what = ", ".join(table_labels(m)[0] for m in main)
        if cores_vary and not conn_vary:
            title = f"Performance ({what}) against the number of CPU cores"
        elif conn_vary and not cores_vary:
            title = f"Performance ({what}) against the number of connections"
        else:
            title = f"Performance ({what})"
    caption = (
        "Units: "
        + "; ".join(units)
        + ". Error: final width (upper - lower) of the binary search in plain units, as the search ran:"
        " per direction for frame rates (not multiplied by the number of directions)."
    )
    if show_baseline:
        caption += (
            f" {table_labels(baseline)[0]}: plain packet forwarding baseline with the"
            f" same port number ranges; {compared} ratio (%) = {compared} median / baseline median"
            " (both in all frames per second)."
        )
        if baseline_source:
            caption += (
                f" The {table_labels(baseline)[0]} rows come from {baseline_source}, matched to these columns by"
                " cores, port ranges and frame size."
            )
    if sc is not None:
        caption += " rel. scale up = P(n) / (n * P(1)), n: number of CPU cores."
    caption += _frame_caption(pts, family)
    if notes:
        caption += " " + "; ".join(dict.fromkeys(notes)) + "."
    key = "performance" if metrics_arg is None else "-".join(metrics_arg)
    return SeedTable(title, caption, cells, values, ids, key)


def _worst_case_rows(b: _Builder, d: pd.DataFrame, prefix: str, mult: float) -> bool:
    """Rows of the worst-case latency (median, min, max over the repetitions) under a latency block; False when
    the metric stores none."""
    if "worst_case_median" not in d or not d["worst_case_median"].notna().any():
        return False
    for stat in ("median", "min", "max"):
        vals = d[f"worst_case_{stat}"].astype("float64")
        b.add_cells(f"{prefix} worst case {stat}", vals, [fmt_value(v * mult) for v in vals])
    return True


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


def teardown_table(
    teardown: pd.DataFrame,
    points: pd.DataFrame,
    *,
    scale: str = "1",
    title: str | None = None,
    invalid: pd.Series | None = None,
    memory: pd.DataFrame | None = None,
) -> SeedTable:
    """A seed 000 Figure 5 / Figure 9 / seed 001 PF tear-down table.

    ``teardown`` comes from :func:`~natbench.report.aggregate.teardown_summary`. Delete times are
    printed with 2 decimals, 1 in a column whose largest time reaches 1,000 s (as Figure 5 does).
    ``invalid``: invalid trials per point id (:func:`teardown_invalid`), shown as a row when any is known.
    ``memory``: the run's fills that stored the DUT's memory (:func:`~natbench.report.aggregate.fill_memory_frame`);
    the tear-down fills' memory rows follow the experiments.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    ids = [pid for pid in points.index if pid in set(teardown.index)]
    pts = points.loc[ids]
    td = teardown.reindex(ids)
    b = _Builder(ids)
    _param_rows(b, pts)
    b.add("num. experiments", td["experiments"], fmt_count)
    notes = ""
    if invalid is not None and invalid.reindex(ids).notna().any():
        b.add("invalid trials", invalid.reindex(ids).astype("float64"), fmt_count)
        notes = f" {INVALID_NOTE[0].upper()}{INVALID_NOTE[1:]}."
    if _memory_rows(b, memory, ids, [TEARDOWN.name]):
        notes += f" {MEMORY_NOTE[0].upper()}{MEMORY_NOTE[1:]}."
    time_rows = [
        ("full contr. del med", "filled_median"),
        ("full contr. del min", "filled_min"),
        ("full contr. del max", "filled_max"),
        ("empty contr. del med", "empty_median"),
        ("empty contr. del min", "empty_min"),
        ("empty contr. del max", "empty_max"),
        ("conn. deletion time", "deletion_time"),
    ]
    times = td[[c for _, c in time_rows]]
    decimals = [_time_decimals(times.iloc[i]) for i in range(len(ids))]
    for name, col in time_rows:
        vals = td[col].astype("float64").tolist()
        b.add_cells(name, vals, [fmt_seconds(v, d) for v, d in zip(vals, decimals, strict=True)])
    div, word = SCALES[scale]
    rates = td["rate"].astype("float64")
    b.add_cells("conn. tear d. rate", rates, [fmt_value(v / div) for v in rates])
    cells, values = b.frames(_labels(pts))
    caption = (
        "Delete times in seconds (the DUT's own delete-all command on the filled and on the empty connection "
        "tracking table); conn. deletion time = median filled - median empty; "
        f"conn. tear d. rate = num. conn. / conn. deletion time, in {word}connections per second."
    ) + notes
    title = title or "Connection tear-down rate against the number of connections"
    return SeedTable(title, caption, cells, values, ids, TEARDOWN.name)


def report_tables(
    summary: pd.DataFrame,
    teardown: pd.DataFrame,
    points: pd.DataFrame,
    *,
    scale: str = "1",
    family: str | None = None,
    baseline_source: str | None = None,
    memory: pd.DataFrame | None = None,
) -> list[SeedTable]:
    """Every table of a run: the performance table (if any metric other than tear-down) and the
    tear-down table (if tear-down was measured). ``family``: the campaign's traffic family;
    ``baseline_source``: where a baseline from another run was measured; ``memory``: the fills that stored the DUT's
    memory (their rows in each table)."""
    tables = []
    metrics = {str(m) for m in summary.index.get_level_values("metric")} if not summary.empty else set()
    if any(in_performance_table(m) for m in metrics):
        tables.append(
            performance_table(
                summary, points, scale=scale, family=family, baseline_source=baseline_source, memory=memory
            )
        )
    if not teardown.empty:
        tables.append(teardown_table(teardown, points, scale=scale, invalid=teardown_invalid(summary), memory=memory))
    return tables


def teardown_invalid(summary: pd.DataFrame) -> pd.Series | None:
    """Invalid tear-down trials per point id from a summary with an ``invalid_trials`` column (else None)."""
    if summary.empty or "invalid_trials" not in summary.columns:
        return None
    s = summary.reset_index()
    s = s[s["metric"].astype(str) == TEARDOWN.name]
    return pd.Series(s["invalid_trials"].to_numpy("float64"), index=s["point_id"].astype(str).to_numpy())
