"""Building blocks of the metrics' duration models (``natbench plan``): search steps and per-trial overhead.

Each metric's module holds its own model (:attr:`~natbench.metrics.registry.Metric.estimate`); the
campaign's estimate adds them up per working point. The figures are lower bounds for planning: retries of
invalid steps, DUT setup per working point and tester start-up are not counted.
"""

from __future__ import annotations

import math

from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.search.fast import SEEDED_FULL, SEEDED_PROBES, SEEDED_TRIALS

__all__ = ["CONFIRMATIONS", "STEP_OVERHEAD", "fast_trials", "repeated", "search_midpoint", "search_steps"]

CONFIRMATIONS = 2
"""Full-duration trials the unseeded (first) repetition of a fast search with short trials is assumed to need after
its short ones: the pass at the result and the fail one error above it or a guard's trial there (more when a full
trial disagrees with the short ones; none above the result when its short failure proves the bound:
bench/campaign_time.py)."""

STEP_OVERHEAD = 1.0
"""Seconds added to every trial for DUT commands (empty / count the connection table)."""


def search_steps(lower: float, upper: float, error: float) -> int:
    """Trials of one binary search: ``max(1, ceil(log2((upper - lower) / error)))``."""
    width = upper - lower
    if width <= error:
        return 1
    return max(1, math.ceil(math.log2(width / error)))


def search_midpoint(s: SearchSettings) -> float:
    """The rate a search step is assumed to run at: the middle of the search range."""
    return (s.lower + s.upper) / 2


def repeated(s: MetricSettings, trials: int, seconds: float) -> tuple[int, float]:
    """(trials, seconds) of all of a metric's repetitions at a point from those of one repetition."""
    return s.repetitions * trials, s.repetitions * seconds


def fast_trials(s: SearchSettings, short: bool) -> tuple[int, int]:
    """(short, full) trials of a fast search over all repetitions. The first repetition searches the whole range
    (:func:`search_steps` trials, short ones followed by :data:`CONFIRMATIONS` full ones when ``short``); each
    later one walks from its seed: with short trials (the short-fail rule's probes)
    :data:`~natbench.search.fast.SEEDED_FULL` full trials and :data:`~natbench.search.fast.SEEDED_PROBES` probes,
    without them :data:`~natbench.search.fast.SEEDED_TRIALS` full trials (never more than the whole range's)."""
    whole = search_steps(s.lower, s.upper, s.error)
    later = s.repetitions - 1
    if short:
        return whole + later * SEEDED_PROBES, CONFIRMATIONS + later * min(whole, SEEDED_FULL)
    return 0, whole + later * min(whole, SEEDED_TRIALS)
