"""What a run measures: :class:`RunSpec`, the resolved content of a campaign, and how a campaign becomes one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from natbench.errors import NatbenchError
from natbench.metrics import MetricSettings, find_metric, metric_names
from natbench.metrics.context import RunOptions
from natbench.traffic.plan import TrafficPlan
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign import Campaign


@dataclass(frozen=True)
class RunSpec:
    """What to measure: the resolved content of a campaign, independent of its file format."""

    name: str
    """Campaign name (recorded in run.json)."""
    points: Sequence[WorkingPoint]
    """Working points in measurement order."""
    plan_for: Callable[[WorkingPoint], TrafficPlan]
    """Traffic plan of a working point."""
    metrics: dict[str, MetricSettings]
    """Metric name -> its settings model, resolved (:meth:`~natbench.metrics.MetricSettings.resolved`);
    measured at each point in the registry's order (:func:`~natbench.metrics.all_metrics`)."""
    campaign_text: str = ""
    """The resolved campaign (YAML) stored as campaign.yaml."""
    campaign_file: str | None = None
    """Where the campaign came from."""
    settings_for: Callable[[WorkingPoint, str], MetricSettings] | None = None
    """Per-point settings (a campaign's sweep may override e.g. the search error per point); default: ``metrics``."""
    options: RunOptions = field(default_factory=RunOptions)
    """Engine options of the whole run (rate tolerance, Responder entry selection, DUT CPU monitor)."""

    def settings(self, point: WorkingPoint, metric: str) -> MetricSettings:
        """Settings of ``metric`` at ``point``."""
        return self.settings_for(point, metric) if self.settings_for is not None else self.metrics[metric]

    def ordered_metrics(self) -> list[str]:
        """Metric names in measurement order (cps before validation, throughput before latency/PDV)."""
        known = metric_names()
        unknown = [m for m in self.metrics if find_metric(m) is None]
        if unknown:
            raise NatbenchError(f"unknown metric(s): {', '.join(unknown)}; known: {', '.join(known)}")
        return [m for m in known if m in self.metrics]

    def total_repetitions(self) -> int:
        """Repetitions in the whole run."""
        return sum(self.settings(p, m).repetitions for p in self.points for m in self.metrics)


def spec_from_campaign(campaign: Campaign, campaign_text: str, campaign_file: str | None = None) -> RunSpec:
    """Build a :class:`RunSpec` from a :class:`natbench.campaign.Campaign`.

    Per-point settings come from ``campaign.settings_for(point, metric)``, resolved once here: a metric
    without its own acceptance or directions takes the traffic section's. The run's options: the
    Responder's entry selection is the traffic section's ``selection``, the achieved-rate tolerance the
    tester's ``rate_tolerance`` setting (its kind's default unless the campaign sets it), and
    ``testbed.monitor_interval`` turns the DUT CPU monitor on.
    """
    traffic = campaign.traffic

    def resolve(settings: MetricSettings) -> MetricSettings:
        return settings.resolved(traffic.acceptance, traffic.directions)

    def settings_for(point: WorkingPoint, metric: str) -> MetricSettings:
        return resolve(campaign.settings_for(point, metric))

    monitor = campaign.testbed.monitor_interval
    options = RunOptions(
        # the engine's "kept the rate" check uses the tolerance the tester itself was given (its settings' default
        # when the campaign sets none): one tolerance for the whole run
        rate_tolerance=campaign.testbed.tester.settings.rate_tolerance,
        selection=traffic.selection,
        monitor_interval=float(monitor) if monitor else None,
    )
    return RunSpec(
        name=campaign.name,
        points=list(campaign.points()),
        plan_for=campaign.traffic_plan,
        metrics={name: resolve(s) for name, s in campaign.metrics.items()},
        campaign_text=campaign_text,
        campaign_file=campaign_file,
        settings_for=settings_for,
        options=options,
    )
