"""Building blocks of the metrics' duration models (``natbench plan``): the per-trial overhead, what a search
algorithm is asked for its planning figures (:func:`plan_query`) and what its trials cost (:func:`search_seconds`).

Each metric's module holds its own model (:attr:`~natbench.metrics.registry.Metric.estimate`); the
campaign's estimate adds them up per working point. The figures are lower bounds for planning: retries of
invalid steps, DUT setup per working point and tester start-up are not counted.
"""

from __future__ import annotations

from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.search import PlanQuery
from natbench.search.declare import algorithm
from natbench.search.shorttrials import ShortTrialSettings

STEP_OVERHEAD = 1.0
"""Seconds added to every trial for DUT commands (empty / count the connection table)."""


def search_midpoint(s: SearchSettings) -> float:
    """The rate a search step is assumed to run at: the middle of the search range."""
    return (s.lower + s.upper) / 2


def repeated(s: MetricSettings, trials: int, seconds: float) -> tuple[int, float]:
    """(trials, seconds) of all of a metric's repetitions at a point from those of one repetition."""
    return s.repetitions * trials, s.repetitions * seconds


def plan_query(s: SearchSettings, full_seconds: float | None = None) -> PlanQuery:
    """What a search algorithm's planning figures read of the settings ``s``: the range, the repetitions and the
    trials' durations (``full_seconds``: a full trial's, None for a phase 1; short trials where the metric has them)."""
    short = float(s.short_duration) if isinstance(s, ShortTrialSettings) and full_seconds is not None else None
    return PlanQuery(s.lower, s.upper, s.error, s.repetitions, s, short, full_seconds)


def search_seconds(s: SearchSettings, full_seconds: float) -> tuple[int, float]:
    """(trials, seconds) of a phase-2 search's trials over all repetitions at a point, fills not included: the
    algorithm's planned trials (:attr:`~natbench.search.SearchAlgorithm.plan`), each its traffic plus the receive
    wait (``timeout``) and :data:`STEP_OVERHEAD`."""
    groups = algorithm(s.algorithm).plan(plan_query(s, full_seconds))
    trials = sum(n for n, _ in groups)
    seconds = sum(n * ((full_seconds if d is None else d) + s.timeout + STEP_OVERHEAD) for n, d in groups)
    return trials, seconds
