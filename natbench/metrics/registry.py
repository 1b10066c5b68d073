"""The registry of metrics: name -> :class:`Metric` (settings model, procedure, unit, labels, order, ...).

The built-in metrics are registered by :mod:`natbench.metrics` (its ``__init__`` lists them), a plugin's through
the entry-point group ``natbench.metrics``; the registry is a :class:`natbench.plugins.Registry` like every
other plugin kind's. The campaign schema, the runner, ``natbench plan``'s estimate and the reports all read
it instead of listing metrics themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from natbench.errors import ConfigError, SearchError
from natbench.metrics.declare import Column, CountRow, Lifetime, Mark, OwnTable, StatRows
from natbench.metrics.settings import MetricSettings
from natbench.plugins import METRIC_GROUP, Registry
from natbench.results import RepetitionResult

if TYPE_CHECKING:  # the context reads the registry (a result's unit); the registry only names the context
    from natbench.metrics.context import ProcedureContext


M = TypeVar("M", bound=MetricSettings)

Estimator = Callable[[M, int, Mapping[str, MetricSettings]], tuple[int, float]]
"""Duration model: (settings at a point, its connections, every selected metric's settings there) ->
(trials, seconds) of all the metric's repetitions at that point."""

LifetimeModel = Callable[[M, int, Mapping[str, MetricSettings]], tuple[Lifetime, ...]]
"""Connection-lifetime model: (settings at a point, its connections, every selected metric's settings there) -> how
long the metric's steps need their connections there (the DUT's connection timeout must be longer)."""


@dataclass(frozen=True)
class Metric(Generic[M]):
    """One metric: its settings, its procedure, and how its results are named, ordered and reported."""

    name: str
    """Name in campaigns (``metrics.<name>``), run directories and reports."""
    description: str
    """What the metric measures, in one line (the campaign's ``metrics.<name>`` field description)."""
    settings: type[M]
    """Its settings model: the campaign's ``metrics.<name>`` section and what :attr:`run` reads."""
    run: Callable[[ProcedureContext[M]], RepetitionResult]
    """Runs one repetition at one working point (a :class:`~natbench.errors.SearchError` fails the repetition)."""
    unit: str
    """Unit of the stored value (frame rates per direction): cps, fps, ratio, s, conn/s, conn or pass."""
    order: int
    """Measurement order at a working point, lowest first (cps before validation, throughput before latency and
    PDV, each result an input of the later ones); also the order of the blocks in report tables."""
    label: str
    """Short name in report tables (the prefix of its rows, e.g. ``fwd. throughput median``)."""
    scale_label: str
    """Name of its relative scale-up row in report tables (``tp. rel. scale up``)."""
    title: str
    """Long name: the title of its plots."""
    axis: str
    """The y-axis label of its plots (the reported unit in words)."""
    estimate: Estimator[M]
    """Its duration model for ``natbench plan`` (a lower bound: retries and setup are left out)."""
    lower_is_better: bool = False
    """A higher value is worse (frame loss, latency, PDV); for every other metric a higher value is better."""
    stateful: bool = True
    """Needs connection state on the DUT (phase 1); False only for the plain forwarding baseline, the one
    metric a family without translation (``ipv4``, ``ipv6``) can measure."""
    rate_from: str | None = None
    """The metric whose median result at the point is this metric's rate when its settings give none
    (latency, PDV: throughput; validation: cps); a campaign then has to measure that one too."""
    baseline_for: str | None = None
    """This metric is the plain-forwarding baseline of that one (forwarding of throughput): tables show the
    ratio of their medians."""
    in_milliseconds: bool = False
    """Tables show its seconds as milliseconds (latency, PDV)."""
    estimate_note: str | None = None
    """What its duration model cannot know in advance (``natbench plan`` prints it)."""
    scaled: bool = False
    """Its values follow a report's display scale (``--scale k``: 1,000s): rates and connection counts."""
    unit_words: str = ""
    """Its unit in a table caption's words, as tables show the value (``connections per second``, ``milliseconds``;
    "": the stored unit). Frame rates of several directions, reported as all frames, say so after it."""
    columns: tuple[Column, ...] = ()
    """What its results store beyond the value, as columns of the results frame (every search result's columns,
    :data:`~natbench.metrics.declare.SEARCH_COLUMNS`, come with every metric)."""
    marks: tuple[Mark, ...] = ()
    """Marks after its median / min / max cells (``[u]``), each with its caption note and summary warning."""
    count_rows: tuple[CountRow, ...] = ()
    """Rows counting flagged repetitions under its block (after the search rows), with notes and warnings."""
    stat_rows: tuple[StatRows, ...] = ()
    """Median / min / max rows of further statistics under its block (latency's worst case)."""
    table: OwnTable | None = None
    """Reported in a table and plot of its own (tear-down: delete times), not in the performance table."""
    memory_trials: tuple[str, ...] = ()
    """Kinds of its trials that store the DUT's memory (``fill``: :mod:`natbench.metrics.memory`): the memory rows of
    the tables that show it."""
    lifetime: LifetimeModel[M] | None = None
    """How long its steps need their connections (None: it keeps no connection, e.g. the forwarding baseline)."""

    @property
    def own_table(self) -> bool:
        """Reported in a table of its own (:attr:`table`), not in the performance table."""
        return self.table is not None

    @property
    def sort_key(self) -> tuple[int, str]:
        """Its place in reports: measurement order, then name."""
        return (self.order, self.name)


METRICS: Registry[Metric[Any]] = Registry("metric", METRIC_GROUP, lambda o: isinstance(o, Metric))
"""Every metric by name: natbench's own, registered by :mod:`natbench.metrics`, and those of installed plugins
(entry-point group ``natbench.metrics``, each naming a :class:`Metric`)."""


def register(*metrics: Metric[Any]) -> None:
    """Add metrics to the registry (a ConfigError naming both sources for a name another metric has taken)."""
    for m in metrics:
        METRICS.register(m.name, m)


def all_metrics() -> tuple[Metric[Any], ...]:
    """Every registered metric in measurement order."""
    return tuple(sorted((m for _, m in METRICS.entries()), key=lambda m: m.order))


def metric_names() -> tuple[str, ...]:
    """Every registered metric's name in measurement order."""
    return tuple(m.name for m in all_metrics())


def find_metric(name: str) -> Metric[Any] | None:
    """The metric registered as ``name``, or None (e.g. a metric stored by another natbench version)."""
    return METRICS.find(name)


def metric(name: str) -> Metric[Any]:
    """The metric registered as ``name``; ConfigError naming the known ones otherwise."""
    m = METRICS.find(name)
    if m is None:
        raise ConfigError(f"unknown metric {name!r}; known: {', '.join(metric_names())}", field="metric")
    return m


def baseline_metric() -> Metric[Any] | None:
    """The registered plain-forwarding baseline (forwarding: its ``baseline_for`` is throughput)."""
    return next((m for m in all_metrics() if m.baseline_for is not None), None)


UNKNOWN_ORDER = 1 << 30
"""The order of a metric this natbench does not know: after every registered one."""


def reported_metric(name: str) -> Metric[Any]:
    """The metric registered as ``name``, or, for one a run directory holds but this natbench does not know (stored
    by another version), a stand-in: named by itself, ordered after the known ones, reported as stored, declaring
    nothing. What reports resolve a stored metric name to, once."""
    found = METRICS.find(name)
    return found if found is not None else _stand_in(name)


def _stand_in(name: str) -> Metric[Any]:
    def run(ctx: ProcedureContext[Any]) -> RepetitionResult:
        raise SearchError(f"metric {name!r} is not registered in this natbench")

    return Metric(
        name=name,
        description="A metric this natbench does not know (stored by another version).",
        settings=MetricSettings,
        run=run,
        unit="",
        order=UNKNOWN_ORDER,
        label=name,
        scale_label=f"{name} rel. scale up",
        title=name,
        axis="",
        estimate=lambda _s, _n, _selected: (0, 0.0),
    )


def run_repetition(ctx: ProcedureContext[MetricSettings]) -> RepetitionResult:
    """Run one repetition of ``ctx.metric``; a SearchError becomes a failed result unless the run's
    ``on_search_error`` is ``raise``."""
    m = find_metric(ctx.metric)
    if m is None:
        raise SearchError(f"unknown metric {ctx.metric!r}; known: {', '.join(metric_names())}")
    if not isinstance(ctx.settings, m.settings):
        raise ConfigError(
            f"{ctx.metric} needs {m.settings.__name__}, got {type(ctx.settings).__name__}", field="settings"
        )
    try:
        return m.run(ctx)
    except SearchError as exc:
        if ctx.options.on_search_error == "raise":
            raise
        return ctx.result(None, error=None, failed=str(exc))
