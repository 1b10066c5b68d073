"""A seed-style result table as data: rows of formatted cells with the numbers behind them, title and caption.

:class:`TableRows` collects the rows while a table is built (:mod:`natbench.report.performance`,
:mod:`natbench.report.own`); :class:`SeedTable` is the finished table, rendered by :mod:`natbench.report.render`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pandas as pd

from natbench.report import render as rendering


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

    def to_text(self) -> str:
        """Aligned plain text: row names left, values right-aligned (like the seed figures)."""
        return rendering.to_text(self)

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table with the title above and the caption below."""
        return rendering.to_markdown(self)

    def to_latex(self, standalone: bool = False) -> str:
        """A LaTeX ``table`` (``standalone=True``: a complete article that compiles on its own)."""
        return rendering.to_latex(self, standalone)

    def to_csv(self) -> str:
        """CSV of the numbers (base units) with the title and caption as leading ``#`` comments.

        Read back with ``pandas.read_csv(path, comment="#", index_col=0)``.
        """
        return rendering.to_csv(self)

    def to_html(self) -> str:
        """An HTML ``<table>`` with a caption (used by the HTML report)."""
        return rendering.to_html(self)

    def render(self, fmt: str) -> str:
        """Render in ``text``, ``md``, ``tex``, ``csv`` or ``html``."""
        return rendering.render(self, fmt)


class TableRows:
    """The rows of a table being built: each a name, its numbers (one per point) and their formatted cells."""

    def __init__(self, point_ids: list[str]) -> None:
        self.point_ids = point_ids
        """The points, one column each."""
        self.names: list[str] = []
        """Row names, in order."""
        self.cells: list[list[str]] = []
        """Each row's formatted cells."""
        self.values: list[list[float]] = []
        """Each row's numbers (NaN where none)."""

    def add(self, name: str, values: Iterable[float], fmt: Callable[[float], str]) -> None:
        """A row of ``values`` (None: NaN), each cell formatted by ``fmt``."""
        vals = [float("nan") if v is None else float(v) for v in values]
        self.names.append(name)
        self.values.append(vals)
        self.cells.append([fmt(v) for v in vals])

    def add_cells(self, name: str, values: Iterable[float], cells: Iterable[str]) -> None:
        """A row of ``values`` with cells formatted already (marks, words)."""
        self.names.append(name)
        self.values.append([float(v) for v in values])
        self.cells.append(list(cells))

    def frames(self, labels: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(cells, values) as frames, the columns named ``labels``."""
        cells = pd.DataFrame(self.cells, index=self.names, columns=labels, dtype=object)
        values = pd.DataFrame(self.values, index=self.names, columns=labels, dtype="float64")
        return cells, values
