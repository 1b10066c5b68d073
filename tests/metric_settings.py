"""Metric settings for engine tests: the metric's own settings model, resolved as a run resolves it.

``build(metric, **given)`` splits the run's engine options (:class:`~natbench.metrics.context.RunOptions` fields such
as ``monitor_interval``) off ``given``, builds the metric's model from the rest (an unregistered metric
gets the common settings only) and fills ``acceptance`` / ``directions`` the way a run built from a campaign
with the traffic section's defaults does (0 loss, bidirectional).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from natbench.metrics import MetricSettings, find_metric
from natbench.metrics.context import RunOptions
from natbench.plugins import Directions

TRAFFIC_ACCEPTANCE = 0.0
"""The traffic section's default acceptance: what a metric without its own gets."""
TRAFFIC_DIRECTIONS = Directions.BIDIRECTIONAL
"""The traffic section's default directions."""
TOLERANCE = RunOptions().rate_tolerance
"""The run's default achieved-rate tolerance (0.1 %)."""

_OPTIONS = {f.name for f in dataclasses.fields(RunOptions)}


def model_of(metric: str) -> type[MetricSettings]:
    """The settings model of ``metric`` (the common settings for an unregistered one)."""
    m = find_metric(metric)
    return m.settings if m is not None else MetricSettings


def build(
    metric: str, defaults: dict[str, Any] | None = None, *, unchecked: bool = False, **given: Any
) -> tuple[MetricSettings, RunOptions]:
    """(the metric's resolved settings, the run's options) from ``given``; ``defaults`` fill settings the model
    has and ``given`` leaves out (e.g. a short trial duration for every metric that has one).

    ``unchecked`` builds the model without validation: how the engine copes with settings no campaign can give
    (an empty search range, beta 0, a start beyond the limit)."""
    options = RunOptions(**{k: given.pop(k) for k in list(given) if k in _OPTIONS})
    model = model_of(metric)
    fields = {**{k: v for k, v in (defaults or {}).items() if k in model.model_fields}, **given}
    settings = model.model_construct(**fields) if unchecked else model(**fields)
    return settings.resolved(TRAFFIC_ACCEPTANCE, TRAFFIC_DIRECTIONS), options
