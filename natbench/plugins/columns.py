"""A column of the results frame that a declaration adds (:class:`Column`): what metrics, search algorithms and
DUT kinds declare so that a report reads their results without naming them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from natbench.results import RepetitionResult

Summary = Literal["count", "stats", "median", "first", "none"]
"""How a column is summed up per working point and metric over the repetitions: ``count`` (how many repetitions
it is true for), ``stats`` (``<name>_median``, ``<name>_min``, ``<name>_max``), ``median``, ``first`` (the first
repetition's value: a property of the point, such as the search algorithm), ``none`` (not summed up: a column a
metric's own table reads)."""


@dataclass(frozen=True)
class Column:
    """A column of the results frame (:func:`natbench.run.frames.results_frame`), one cell per repetition result,
    derived from what the result stores (its ``extra`` mostly)."""

    name: str
    """The column (a frame column, and the stem of its summary columns)."""
    dtype: Literal["float64", "bool", "object"]
    """Its pandas dtype."""
    value: Callable[[RepetitionResult], Any]
    """The cell of one result."""
    summary: Summary = "count"
    """How :func:`natbench.report.aggregate.summarize` sums it up per point (see :data:`Summary`)."""

    @property
    def default(self) -> Any:
        """The cell of a result whose metric does not declare this column."""
        return {"float64": float("nan"), "bool": False, "object": None}[self.dtype]

    def summary_columns(self) -> tuple[str, ...]:
        """The columns its summary adds."""
        if self.summary == "stats":
            return (f"{self.name}_median", f"{self.name}_min", f"{self.name}_max")
        return () if self.summary == "none" else (self.name,)
