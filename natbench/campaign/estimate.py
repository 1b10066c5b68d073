"""Duration model behind ``natbench plan``: how many trials a campaign runs and roughly how long.

Each metric brings its own model (:attr:`natbench.metrics.Metric.estimate`, in the metric's module): a
binary search takes ``steps = max(1, ceil(log2((upper - lower) / error)))`` trials, each assumed to run
at the middle of the search range; a phase 1 of N connections at rate r takes ``N / r + timeout``; a
phase-2 trial ``duration + timeout``; every trial adds
:data:`~natbench.metrics.duration.STEP_OVERHEAD` seconds for DUT commands (emptying and counting the
connection table). This module adds them up per working point.

Retries of invalid steps, DUT setup per working point and tester start-up
are not counted: the figure is a lower-bound estimate for planning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from natbench.metrics import MetricSettings, SearchSettings, metric
from natbench.search.declare import offered
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign


@dataclass(frozen=True)
class MetricEstimate:
    """One metric at one working point."""

    metric: str
    """Metric name."""
    repetitions: int
    """Repetitions at this point."""
    trials: int
    """Trials over all repetitions."""
    seconds: float
    """Estimated seconds over all repetitions."""


@dataclass(frozen=True)
class PointEstimate:
    """All metrics at one working point."""

    point: WorkingPoint
    """The working point."""
    metrics: tuple[MetricEstimate, ...]
    """Per metric."""

    @property
    def trials(self) -> int:
        """Trials at this point."""
        return sum(m.trials for m in self.metrics)

    @property
    def seconds(self) -> float:
        """Estimated seconds at this point."""
        return sum(m.seconds for m in self.metrics)


@dataclass(frozen=True)
class Estimate:
    """A campaign's trial count and duration estimate (see the module docstring for the model)."""

    points: tuple[PointEstimate, ...]
    """Per working point."""
    notes: tuple[str, ...] = field(default=())
    """What the estimate leaves out."""

    @property
    def trials(self) -> int:
        """Trials in the whole campaign."""
        return sum(p.trials for p in self.points)

    @property
    def seconds(self) -> float:
        """Estimated seconds for the whole campaign."""
        return sum(p.seconds for p in self.points)


def has_algorithm(s: MetricSettings, algorithm: str) -> bool:
    """Whether the metric of settings ``s`` is a search that offers the search ``algorithm``
    (:func:`natbench.search.declare.offered`)."""
    return isinstance(s, SearchSettings) and offered(type(s), algorithm)


def with_algorithm(s: MetricSettings, algorithm: str | None) -> MetricSettings:
    """``s`` with its search ``algorithm`` set, when given and offered by the metric; else ``s`` unchanged."""
    if algorithm is None or not has_algorithm(s, algorithm):
        return s
    return s.model_copy(update={"algorithm": algorithm})


def estimate(campaign: Campaign, algorithm: str | None = None) -> Estimate:
    """Count trials and estimate the duration of every working point of ``campaign`` (with every search metric that
    offers it set to ``algorithm`` when given: what ``natbench plan`` compares)."""
    notes: list[str] = []
    out: list[PointEstimate] = []
    for p in campaign.points():
        selected = {name: with_algorithm(campaign.settings_for(p, name), algorithm) for name in campaign.metrics}
        per_metric = tuple(
            MetricEstimate(name, s.repetitions, *metric(name).estimate(s, p.connections, selected))
            for name, s in selected.items()
        )
        out.append(PointEstimate(p, per_metric))
    for name in campaign.metrics:
        note = metric(name).estimate_note
        if note:
            notes.append(f"{name}: {note}")
    notes.append("not included: retries of invalid steps, DUT setup per working point, tester start-up")
    return Estimate(tuple(out), tuple(notes))


def format_duration(seconds: float) -> str:
    """Render seconds as ``45 s``, ``12 min``, ``3.4 h`` or ``2.1 days``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
