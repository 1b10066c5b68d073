"""Time left in a run by the plan's estimate (the same duration models ``natbench plan`` adds up): each
repetition is expected to take its metric's estimate at its working point divided by the repetitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from natbench.metrics import find_metric
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.run.spec import RunSpec


def repetition_seconds(spec: RunSpec, point: WorkingPoint, metric: str) -> float:
    """The plan's estimate of one repetition of ``metric`` at ``point`` (0 for a metric this natbench does not
    know)."""
    m = find_metric(metric)
    if m is None:
        return 0.0
    settings = spec.settings(point, metric)
    selected = {name: spec.settings(point, name) for name in spec.metrics}
    _trials, seconds = m.estimate(settings, point.connections, selected)
    return float(seconds) / max(1, settings.repetitions)


def format_eta(seconds: float) -> str:
    """``about 45 s``, ``about 12 min``, ``about 3.4 h``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


class Countdown:
    """The plan's estimate of the time a run has left: every repetition's estimate, counted off as each one
    finishes (those already stored when a run resumes count as finished)."""

    def __init__(self, spec: RunSpec, done: int) -> None:
        self._by_point = {p.id: p for p in spec.points}
        self._spec = spec
        total = 0.0
        reps = 0
        for p in spec.points:
            for m in spec.metrics:
                n = spec.settings(p, m).repetitions
                total += n * repetition_seconds(spec, p, m)
                reps += n
        self.left = total * (1 - done / reps) if reps else 0.0
        """Seconds left by the plan."""

    def point_seconds(self, point: WorkingPoint, repetitions: int) -> float:
        """The plan's estimate of ``repetitions`` pending repetitions at ``point`` (spread evenly over its metrics)."""
        per = [repetition_seconds(self._spec, point, m) for m in self._spec.metrics]
        return repetitions * (sum(per) / len(per)) if per else 0.0

    def finished(self, point_id: str, metric: str) -> None:
        """One repetition of ``metric`` at ``point_id`` finished."""
        point = self._by_point.get(point_id)
        if point is not None:
            self.left = max(0.0, self.left - repetition_seconds(self._spec, point, metric))
