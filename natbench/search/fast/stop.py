"""Which full trials of the fast search the tester may end once they have failed, and when (:class:`StopRule`;
docs/engine.md, "Stopping a failed full trial")."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from natbench.plugins import LossStop
from natbench.search.fast.rule import ShortFailRule
from natbench.search.fast.trial import FastStep
from natbench.search.shorttrials import ShortTrialSettings
from natbench.search.task import SearchTask

STOP_WINDOW = 0.25
"""Seconds the frames missing in a direction must stay above the threshold before the tester ends a full trial of the
fast search (:attr:`~natbench.plugins.tester.LossStop.window`)."""
STOP_MIN_MARGIN = 64.0
"""The least margin (frames) of a stop: frames a tester may have counted as sent before it counts them received (a
send batch of the software tester), however small the error."""
STOP_IN_FLIGHT = 0.0001
"""Seconds of frames at the trial's rate the margin of a stop covers at least: a rise of the DUT's latency by that much
(100 us: frames held back, not lost) that lasts a whole window does not stop the trial. A larger rise stops it on
frames the receive wait then delivers; the stop proves nothing and the full trial follows (time lost, no verdict
changed). More would keep the stop from DUTs that lose a few frames a second near their ceiling."""


@dataclass(frozen=True)
class StopRule:
    """The stop the fast search's full trials ask of a tester that declares it can stop a failed trial, with the
    short-fail rule on and ``stop_failed`` set (the search builds none otherwise)."""

    rule: ShortFailRule
    """The short-fail rule: what a full trial may lose (its allowance)."""
    error: float
    """The search's error: the margin covers what a DUT short of capacity by half of it loses in a window."""

    def stop(self, step: FastStep, undecided: Set[float]) -> LossStop | None:
        """The stop ``step`` asks for (None: it runs its whole duration): only a full trial that is no probe, and
        never again at a rate in ``undecided`` (a stop there proved nothing: the receive wait brought its loss back
        within the allowance, so the trial is measured again in full). The tester stops once a direction's gap
        (frames sent less frames received) stayed more than the full trial's allowance plus a margin above the frames
        in flight for :data:`STOP_WINDOW`. The margin is what a DUT short of capacity by half an ``error`` loses in
        that window, at least :data:`STOP_MIN_MARGIN` and :data:`STOP_IN_FLIGHT` of the rate's frames: frames in
        flight vary by less, and a DUT closer to the rate still stops, only later, as its loss grows."""
        if not step.full or step.probe or step.rate in undecided:
            return None
        margin = max(float(self.error) / 2 * STOP_WINDOW, STOP_MIN_MARGIN, step.rate * STOP_IN_FLIGHT)
        return LossStop(allowance=self.rule.allowance(step.rate), margin=margin, window=STOP_WINDOW)


def stop_rule(task: SearchTask, rule: ShortFailRule | None) -> StopRule | None:
    """The stops of a fast search's full trials (None: none stops): only with the short-fail ``rule``, the metric's
    ``stop_failed`` on and a tester that declares it can stop a failed trial and give its second half's forwarding
    rate (:attr:`~natbench.plugins.TrialEvidence.stops_failed_trials`, ``tail_rates``: a stop the receive wait undoes
    is decided from the shortfall that rate shows, :func:`~natbench.judging.forecast`)."""
    shorts = task.settings if isinstance(task.settings, ShortTrialSettings) else None
    evidence = task.evidence
    if rule is None or shorts is None or not shorts.stop_failed:
        return None
    if not evidence.stops_failed_trials or not evidence.tail_rates:
        return None  # without the second half's rate a stop that the receive wait undoes cannot be decided
    return StopRule(rule, task.error)
