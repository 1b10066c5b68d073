"""What a metric declares for reports and checks, beside its procedure: the columns its results add, the rows and
cell marks tables show for it, a table of its own, and the connection lifetimes its steps need.

A report never names a metric: it iterates these declarations (:attr:`~natbench.metrics.registry.Metric.columns`,
``marks``, ``count_rows``, ``stat_rows``, ``table``), so a metric that stores a new statistic declares its column
and row in its own module and nothing in ``natbench.report`` changes. What every search result stores (the
tester's ceiling and its cause, no passing rate, the algorithm) is declared once here
(:data:`SEARCH_COLUMNS`, :data:`SEARCH_ROWS`) and applies to every result; the words a caption uses for each search's
values and error come from the search algorithm's declaration (:func:`error_caption`, :mod:`natbench.search`).

Pure data and small functions (no pandas): the campaign schema imports the metrics.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from natbench.plugins.columns import Column
from natbench.results import RepetitionResult
from natbench.search import BlockFacts
from natbench.search.declare import reported_algorithm, stored_algorithm


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def finite(values: Iterable[float]) -> list[float]:
    """The finite numbers of ``values`` (NaN and None left out)."""
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


@dataclass(frozen=True)
class Mark:
    """A symbol after the median / min / max cells of a point where some repetition is flagged, explained in the
    caption and warned about in the summary (``[t]`` PDV of tagged frames only, ``[u]`` an unvalidated rate)."""

    column: str
    """The flag: a ``count`` column."""
    symbol: str
    """What the cells show (``[u]``)."""
    note: str
    """The caption's explanation."""
    warning: str
    """The summary's warning; ``{n}`` (flagged repetitions), ``{total}`` (the metric's repetitions) and
    ``{title}`` (the metric's title) are filled in."""


@dataclass(frozen=True)
class CountRow:
    """A row ``<label prefix> <label>`` counting a point's flagged repetitions (shown where any is flagged), its
    caption note and its summary warning."""

    column: str
    """The flag: a ``count`` column."""
    label: str | None
    """The row after the metric's label prefix (``tester-bound reps.``); None: no row, only the warning."""
    note: str
    """The caption's explanation of the row."""
    warning: str
    """The summary's warning (placeholders as :attr:`Mark.warning`)."""


@dataclass(frozen=True)
class StatRows:
    """Median / min / max rows of a further statistic under a metric's block (latency's worst case)."""

    column: str
    """A ``stats`` column."""
    label: str
    """The rows after the metric's label prefix: ``<prefix> <label> median`` ..."""
    note: str
    """The caption's explanation; ``{prefix}`` is the metric's label prefix."""
    in_metric_unit: bool = True
    """The statistic is in the metric's own unit and shown as its value is (scaled, seconds as milliseconds);
    False: shown as stored (a count)."""


@dataclass(frozen=True)
class TableRow:
    """A row of a metric's own table: one figure per working point."""

    label: str
    """The row's name."""
    figure: str
    """The figure it shows (a key of :attr:`OwnTable.figures`' result)."""
    kind: Literal["seconds", "rate", "count"]
    """How it is printed: ``seconds`` (the time decimals of seed 000 Figure 5, alike for every seconds row of a
    column), ``rate`` (at the report's scale), ``count``."""
    marked: bool = False
    """The metric's marks follow its cells."""


@dataclass(frozen=True)
class OwnTable:
    """A metric reported in a table and plot of its own, not in the performance table (tear-down: delete times
    and the rate computed from their medians, seed 000 Figure 5)."""

    title: str
    """The table's title."""
    caption: str
    """The table's caption; ``{scale}`` is the rate scale's words with a space after them (``"1,000 "``)."""
    figures: Callable[[Mapping[str, Sequence[float]], float], Mapping[str, float]]
    """Per working point: the figures (by name) from the metric's columns over the point's repetitions (each
    column's cells, and ``reported``: the reported values) and the point's connections."""
    names: tuple[str, ...]
    """The names :attr:`figures` returns, in order (the columns of the per-point summary)."""
    rows: tuple[TableRow, ...]
    """The table's rows after the working point's and the memory rows."""
    value: str
    """The figure that is the metric's result (its plot's left panel)."""
    value_legend: str
    """The legend of that line."""
    series: tuple[tuple[str, str], ...]
    """The plot's right panel: (figure stem with ``_median``/``_min``/``_max``, legend)."""
    series_axis: str
    """The right panel's y-axis label."""
    series_title: str
    """The right panel's title."""
    plot_caption: str
    """What the plot shows, in words."""


@dataclass(frozen=True)
class Lifetime:
    """How long one kind of step of a metric needs its connections (RFC 9693: none may expire while a test relies
    on it), for the check of the DUT's connection timeout before a run."""

    seconds: float
    """The longest such need at the working point."""
    step: str
    """What needs them that long (``phase 1 + gap + phase 2``)."""
    refused: bool
    """True: a step that needs longer is refused as invalid and ends the repetition (the timeout guard of a
    connection-establishment step); False: connections would expire during the trial."""


# --------------------------------------------------------------------------------------------- search results
def _tester_bound(r: RepetitionResult) -> bool:
    return bool(r.extra.get("tester_bound", False))


def _bound_by_rate(r: RepetitionResult) -> bool:
    """Tester-bound for want of rate (or a result stored before the cause was)."""
    return _tester_bound(r) and r.extra.get("tester_bound_cause") != "clumps"


def _bound_by_clumps(r: RepetitionResult) -> bool:
    return _tester_bound(r) and r.extra.get("tester_bound_cause") == "clumps"


def _at_upper_limit(r: RepetitionResult) -> bool:
    """No rate failed (and the tester did not stop the search): the search's upper bound limits the value."""
    return bool(r.extra.get("at_upper_limit", False)) and not _tester_bound(r)


SEARCH_COLUMNS: tuple[Column, ...] = (
    Column("tester_bound", "bool", _tester_bound),
    Column("bound_by_rate", "bool", _bound_by_rate),
    Column("bound_by_clumps", "bool", _bound_by_clumps),
    Column("at_upper_limit", "bool", lambda r: r.value is not None and _at_upper_limit(r)),
    Column("no_pass", "bool", lambda r: r.value is None and bool(r.extra.get("no_passing_rate"))),
    Column("algorithm", "object", stored_algorithm, "first"),
)
"""What every search result stores, as columns of every result (False / None for a result that is no search's):
``tester_bound`` (the search ended at the tester's ceiling: a lower bound of the DUT), by cause ``bound_by_rate``
(the tester could not send faster) and ``bound_by_clumps`` (it sent the rate, but its clumps after stalls could
explain the DUT's loss), ``at_upper_limit`` (no rate failed: the search's upper bound limits the value),
``no_pass`` (no rate passed: no value) and ``algorithm`` (the search that produced it). What an algorithm's results
store beyond these, it declares itself (:attr:`natbench.search.SearchAlgorithm.columns`)."""

SEARCH_ROWS: tuple[CountRow, ...] = (
    CountRow(
        "bound_by_rate",
        "tester-bound reps.",
        "'tester-bound reps.' counts repetitions whose search ended at the tester's ceiling (it could not send "
        "faster): their value is a lower bound of the DUT's performance",
        "",  # what bounds them is said by the three rows below (natbench.report.bound)
    ),
    CountRow(
        "bound_headroom",
        None,
        "",
        "{title}: {n} of {total} repetitions were limited by the tester's ceiling while the DUT's data-path CPUs had "
        "room for more at that rate; the DUT can do more than these results say (a faster tester would measure it).",
    ),
    CountRow(
        "bound_host",
        None,
        "",
        "{title}: {n} of {total} repetitions ended at the tester's ceiling with the DUT's data-path CPUs saturated, on "
        "a host whose CPUs the tester and the DUT share: the host is the bound, and neither the tester's limit nor the "
        "DUT's can be told apart from it; these values are the host's.",
    ),
    CountRow(
        "bound_lower",
        None,
        "",
        "{title}: {n} of {total} repetitions were limited by the tester's ceiling: their values are lower bounds of "
        "the DUT's performance, and nothing shows that the DUT could do more (no DUT CPU figure at that rate, or "
        "its data-path CPUs were saturated too).",
    ),
    CountRow(
        "bound_by_clumps",
        "tester-clumps reps.",
        "'tester-clumps reps.' counts repetitions whose search ended where the tester's sending pattern (clumps of "
        "frames after its stalls) caused the DUT's loss: their value is a lower bound of what the DUT passes from "
        "an evenly paced sender",
        "{title}: {n} of {total} repetitions ended where the tester's sending pattern (clumps after its stalls) "
        "caused the DUT's loss, not the DUT's rate; the DUT may pass more from an evenly paced tester.",
    ),
    CountRow(
        "at_upper_limit",
        None,
        "",
        "{title}: in {n} of {total} repetitions no rate failed: the search's upper bound limits the value (raise "
        "upper).",
    ),
)
"""The rows and warnings of every search metric, in this order before the metric's own."""


def error_caption(blocks: Sequence[BlockFacts], algorithms: Sequence[str | None]) -> str:
    """A table caption's error sentence: what each search's values and errors mean, by the algorithm of each block
    (``algorithms[i]`` of ``blocks[i]``; None: stored without one, the default's); "" without a block. When every
    block's algorithm is one that declares a table's whole sentence (the seeds' binary search), that sentence."""
    by: dict[str, list[BlockFacts]] = {}
    for facts, name in zip(blocks, algorithms, strict=True):
        by.setdefault(reported_algorithm(name).name, []).append(facts)
    if not by:
        return ""
    if len(by) == 1:
        alone = reported_algorithm(next(iter(by))).table_error
        if alone is not None:
            return alone
    parts = []
    for name, group in by.items():
        merged = merge_facts(group)
        parts.append(f"{merged.prefix}: {reported_algorithm(name).meaning(merged)}")
    return (
        "Error, in plain units as the search ran (per direction for frame rates, not multiplied by the number of "
        f"directions): {'; '.join(parts)}."
    )


def merge_facts(group: Sequence[BlockFacts]) -> BlockFacts:
    """The facts of several table blocks searched by one algorithm, as one: their prefixes listed, repetitions and
    counts summed, each first value the first block's that has one."""
    counts: dict[str, int] = {}
    firsts: dict[str, str] = {}
    for f in group:
        for name, n in f.counts.items():
            counts[name] = counts.get(name, 0) + n
        for name, value in f.firsts.items():
            if value and name not in firsts:
                firsts[name] = value
    return BlockFacts(", ".join(f.prefix for f in group), sum(f.repetitions for f in group), counts, firsts)


def search_summary(name: str | None, facts: BlockFacts) -> str:
    """Which search produced a value and what its error is, in the few words of a run summary (the algorithm ``name``
    a result stored; None: the default's)."""
    return reported_algorithm(name).summary(facts)


# ---------------------------------------------------------------------------------------------- small helpers
def median_or_nan(values: Sequence[float]) -> float:
    """The median of the finite ``values``; NaN when there is none."""
    known = finite(values)
    return float(statistics.median(known)) if known else float("nan")


def stats(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) of the finite ``values``; NaN each when there is none."""
    known = finite(values)
    if not known:
        return float("nan"), float("nan"), float("nan")
    return float(statistics.median(known)), min(known), max(known)


def number(x: Any) -> float:
    """A stored number as a float (None: NaN)."""
    return _num(x)
