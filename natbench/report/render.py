"""A seed-style table rendered: aligned text, GitHub Markdown, LaTeX, CSV and HTML.

Each renderer reads a table's title, caption, formatted cells and the numbers behind them
(:class:`~natbench.report.seedtable.SeedTable`) and builds nothing of its own.
"""

from __future__ import annotations

import html
import io
import textwrap
from collections.abc import Callable, Sequence
from typing import Protocol

import pandas as pd


class Renderable(Protocol):
    """What a renderer reads of a table."""

    title: str
    """Short title."""
    caption: str
    """Units and conventions, under the table."""
    cells: pd.DataFrame
    """Formatted strings; index = row names, columns = working point labels."""
    values: pd.DataFrame
    """The numbers behind the cells (CSV)."""


def _rows(table: Renderable) -> list[tuple[str, list[str]]]:
    """(row name, its cells as text), in order."""
    return [
        (str(name), [str(v) for v in row])
        for name, row in zip(table.cells.index, table.cells.to_numpy().tolist(), strict=True)
    ]


def to_text(table: Renderable) -> str:
    """Aligned plain text: row names left, values right-aligned (like the seed figures)."""
    header = ["", *map(str, table.cells.columns)]
    rows = [[name, *cells] for name, cells in _rows(table)]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join([r[0].ljust(widths[0]), *(v.rjust(w) for v, w in zip(r[1:], widths[1:], strict=True))])

    out = [table.title, "", line(header), "  ".join("-" * w for w in widths)]
    out += [line(r).rstrip() for r in rows]
    out += ["", *textwrap.wrap(table.caption, 100, break_on_hyphens=False)]  # names and paths stay whole
    return "\n".join(out) + "\n"


def to_markdown(table: Renderable) -> str:
    """A GitHub-flavoured Markdown table with the title above and the caption below."""

    def esc(s: object) -> str:
        return str(s).replace("|", "\\|")

    cols = [esc(c) for c in table.cells.columns]
    out = [f"**{esc(table.title)}**", "", "| | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, cells in _rows(table):
        out.append(f"| {esc(name)} | " + " | ".join(esc(v) for v in cells) + " |")
    out += ["", f"*{esc(table.caption)}*"]
    return "\n".join(out) + "\n"


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


def to_latex(table: Renderable, standalone: bool = False) -> str:
    """A LaTeX ``table`` (``standalone=True``: a complete article that compiles on its own)."""
    ncol = len(table.cells.columns)
    lines = [
        "\\begin{table}[htbp]",
        "\\centering",
        "\\scriptsize",
        f"\\caption{{{_tex(table.title)}. {_tex(table.caption)}}}",
        "\\begin{tabular}{l" + "r" * ncol + "}",
        "\\hline",
        " & ".join(["", *(_tex(str(c)) for c in table.cells.columns)]) + " \\\\",
        "\\hline",
    ]
    for name, cells in _rows(table):
        lines.append(" & ".join([_tex(name), *(_tex(v) for v in cells)]) + " \\\\")
    lines += ["\\hline", "\\end{tabular}", "\\end{table}"]
    body = "\n".join(lines) + "\n"
    if standalone:
        return "\\documentclass{article}\n\\begin{document}\n" + (body + "\\end{document}\n")
    return body


def to_csv(table: Renderable) -> str:
    """CSV of the numbers (base units) with the title and caption as leading ``#`` comments.

    Read back with ``pandas.read_csv(path, comment="#", index_col=0)``.
    """
    buf = io.StringIO()
    buf.write(f"# {table.title}\n# {table.caption}\n")
    frame = table.values.copy()
    frame.index.name = "row"
    frame.to_csv(buf, float_format="%.10g")
    return buf.getvalue()


def to_html(table: Renderable) -> str:
    """An HTML ``<table>`` with a caption (used by the HTML report)."""
    cols = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.cells.columns)
    body = []
    for name, cells in _rows(table):
        tds = "".join(f"<td>{html.escape(v)}</td>" for v in cells)
        body.append(f"<tr><th>{html.escape(name)}</th>{tds}</tr>")
    return (
        '<table class="seed">'
        f"<caption><strong>{html.escape(table.title)}</strong><br>{html.escape(table.caption)}</caption>"
        f"<thead><tr><th></th>{cols}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


FORMATS: dict[str, Callable[[Renderable], str]] = {
    "text": to_text,
    "md": to_markdown,
    "tex": to_latex,
    "csv": to_csv,
    "html": to_html,
}
"""Every format by name (``natbench report --format``)."""


def render(table: Renderable, fmt: str) -> str:
    """``table`` in format ``fmt`` (:data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt](table)
