"""Duration model behind ``natbench plan``: how many trials a campaign runs and roughly how long.

The model, per working point with N connections and per repetition:

* a binary search takes ``steps = max(1, ceil(log2((upper - lower) / error)))``
  trials (it stops when the bounds are closer than ``error``); each step is
  assumed to run at the middle of the search range, ``r = (lower + upper) / 2``;
* ``cps`` step: phase 1 only: ``N / r + timeout``;
* ``throughput`` step: phase 1 at ``fill_rate`` then phase 2:
  ``N / fill_rate + timeout + gap + duration + timeout``;
* ``forwarding`` step: ``duration + timeout`` (no phase 1);
* ``frame_loss``: one such phase-1 + phase-2 trial per listed rate;
  ``latency`` / ``pdv``: one trial per repetition;
* ``teardown``: loading ``N / fill_rate + timeout + gap``; the delete time
  itself is unknown beforehand and *not* included (seed 000 Figure 5: up to
  ~40 minutes for 800M connections); plus ``empty_repetitions`` empty-table
  deletes;
* ``validation``: phase 1 at ``rate`` plus the reverse send ``N / reverse_rate``,
  with timeouts and gap (an unset rate counts as upper/2 of the cps search);
* ``capacity``: ``ceil(log2(max/min)) + ceil(log2((max - min) / connection_error))``
  probes, each a cps search at ``max_connections / 2`` connections;
* every trial adds :data:`STEP_OVERHEAD` seconds for DUT commands (emptying
  and counting the connection table).

Retries of invalid steps, DUT setup per working point and tester start-up
are not counted: the figure is a lower-bound estimate for planning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from natbench.campaign.schema import (
    CapacitySettings,
    CpsSettings,
    ForwardingSettings,
    FrameLossSettings,
    LatencySettings,
    MetricSettings,
    PdvSettings,
    SearchSettings,
    TeardownSettings,
    ThroughputSettings,
    ValidationSettings,
)
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign

__all__ = ["STEP_OVERHEAD", "Estimate", "MetricEstimate", "PointEstimate", "estimate", "search_steps"]

STEP_OVERHEAD = 1.0
"""Seconds added to every trial for DUT commands (empty / count the connection table)."""


def search_steps(lower: float, upper: float, error: float) -> int:
    """Trials of one binary search: ``max(1, ceil(log2((upper - lower) / error)))``."""
    width = upper - lower
    if width <= error:
        return 1
    return max(1, math.ceil(math.log2(width / error)))


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


def _mid(s: SearchSettings) -> float:
    return (s.lower + s.upper) / 2


def _per_repetition(name: str, s: MetricSettings, n: int, cps_mid: float | None) -> tuple[int, float]:
    """(trials, seconds) of one repetition of metric ``name`` with N = ``n`` connections."""
    o = STEP_OVERHEAD
    if isinstance(s, CapacitySettings):
        probes = math.ceil(math.log2(s.max_connections / s.min_connections)) + search_steps(
            s.min_connections, s.max_connections, s.connection_error
        )
        steps = search_steps(s.lower, s.upper, s.error)
        per = (s.max_connections / 2) / _mid(s) + s.timeout + o
        return probes * steps, probes * steps * per
    if isinstance(s, CpsSettings):
        steps = search_steps(s.lower, s.upper, s.error)
        return steps, steps * (n / _mid(s) + s.timeout + o)
    if isinstance(s, ThroughputSettings):
        steps = search_steps(s.lower, s.upper, s.error)
        return steps, steps * (n / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + o)
    if isinstance(s, ForwardingSettings):
        steps = search_steps(s.lower, s.upper, s.error)
        return steps, steps * (s.duration + s.timeout + o)
    if isinstance(s, FrameLossSettings):
        k = len(s.rates)
        return k, k * (n / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + o)
    if isinstance(s, LatencySettings | PdvSettings):
        return 1, n / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + o
    if isinstance(s, TeardownSettings):
        return 1, n / s.fill_rate + s.timeout + s.gap + o
    if isinstance(s, ValidationSettings):
        rate = s.rate or cps_mid or 1.0
        reverse = s.reverse_rate or rate
        return 1, n / rate + s.timeout + s.gap + n / reverse + s.timeout + o
    raise TypeError(f"no duration model for metric {name!r}")  # pragma: no cover - every schema class is handled


def estimate(campaign: Campaign) -> Estimate:
    """Count trials and estimate the duration of every working point of ``campaign``."""
    notes: list[str] = []
    out: list[PointEstimate] = []
    for p in campaign.points():
        per_metric: list[MetricEstimate] = []
        cps = campaign.settings_for(p, "cps") if "cps" in campaign.metrics else None
        cps_mid = _mid(cps) if isinstance(cps, SearchSettings) else None
        for name in campaign.metrics:
            s = campaign.settings_for(p, name)
            trials, seconds = _per_repetition(name, s, p.connections, cps_mid)
            reps = s.repetitions
            extra_trials, extra_seconds = 0, 0.0
            if isinstance(s, TeardownSettings):
                empty = min(s.empty_repetitions or s.repetitions, s.repetitions)  # T_0 timed in the first k only
                extra_trials, extra_seconds = empty, empty * STEP_OVERHEAD
            per_metric.append(MetricEstimate(name, reps, reps * trials + extra_trials, reps * seconds + extra_seconds))
        out.append(PointEstimate(p, tuple(per_metric)))
    if "teardown" in campaign.metrics:
        notes.append("teardown: the connection delete time is not known in advance and is not included")
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
