"""What a search algorithm is handed (:class:`SearchTask`) and the one thing it may ask of the metric that runs it:
a trial (:class:`TrialRequest`), run and stored by a :data:`TrialRunner`.

This is the seam between the searches and the metrics, after MLRsearch's ``measure(duration, load)``: a metric
knows how to run one trial at a rate (a phase 1 of all its connections, a phase-2 trial of some duration on a
filled table) and stores it; a search knows which trial to ask for next. Neither knows the other's insides: a
metric never names an algorithm, an algorithm never knows which tester or DUT the trial ran on, only what the
tester declares it can tell (:class:`~natbench.plugins.TrialEvidence`) and what the stored trial says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from natbench.errors import ConfigError
from natbench.plugins import NO_EVIDENCE, LossStop, TrialEvidence
from natbench.results import RepetitionResult, TrialRecord


@dataclass(frozen=True)
class TrialRequest:
    """One trial a search asks for: its rate and everything the metric needs to run it as the search wants it."""

    rate: float
    """The rate to test (frames or connections per second, per direction)."""
    lower: float | None = None
    """The search's lower bound before this trial, stored with the trial (None: not stored)."""
    upper: float | None = None
    """The search's upper bound before this trial, stored with the trial (None: not stored)."""
    duration: float | None = None
    """Seconds of traffic (a phase-2 trial shorter or longer than the metric's own); None: the metric's full trial
    (its ``duration``; a phase 1: all of the point's connections)."""
    stop: LossStop | None = None
    """End the trial once it has failed (only asked when the tester declares it can,
    :attr:`~natbench.plugins.TrialEvidence.stops_failed_trials`); None: it runs its whole duration."""
    tail_rates: bool = False
    """Ask the tester for the forwarding rate of the trial's second half (when it declares it can give it)."""
    tags: Mapping[str, Any] = field(default_factory=dict)
    """Fields the trial's records store in their ``extra`` (which search trial it was: ``search_trial``, ``probe``)."""


TrialRunner = Callable[[TrialRequest], TrialRecord]
"""Runs the trial a search asks for, stores it (it is on disk when this returns) and returns its record: the record
whose verdict decides the step (a phase 1 that did not pass, else its validation)."""


@dataclass(frozen=True)
class SearchTask:
    """Everything one search of one repetition reads: its range, the metric's settings, the earlier repetitions' results
    at the point, what the tester can tell, and the function that runs a trial."""

    lower: float
    """The search's lower bound (never tested)."""
    upper: float
    """The search's upper bound (never tested)."""
    error: float
    """The search's error: the step of its rate grid (:class:`~natbench.search.grid.RateGrid`)."""
    run: TrialRunner
    """Runs and stores one trial."""
    settings: Any
    """The metric's settings model; an algorithm reads the fields it declares it needs (:func:`settings_of`)."""
    acceptance: float = 0.0
    """The loss ratio a full trial may show in every active direction."""
    directions: tuple[str, ...] = ()
    """The active directions of the metric's trials (``forward``, ``reverse``)."""
    max_invalid: int = 3
    """Invalid trials in a row at one rate before the repetition fails (:class:`~natbench.errors.SearchError`)."""
    full_seconds: float | None = None
    """Seconds of a full trial; None: each trial's own (a phase 1 of all the point's connections)."""
    short_seconds: float | None = None
    """Seconds of the metric's short trials; None: it has none (a phase 1 always offers all connections)."""
    overhead: float = 0.0
    """Seconds a trial costs beyond its traffic (the receive wait and the DUT commands around it)."""
    earlier: Sequence[RepetitionResult] = ()
    """The stored results of this metric's earlier repetitions at the point (a search may start from them)."""
    evidence: TrialEvidence = NO_EVIDENCE
    """What the tester declares it can tell of a trial beyond its final counts."""
    stop_below: float | None = None
    """Give up once a rate below this fails (the capacity search's probes; only a search that can stop there
    honours it)."""


S = TypeVar("S")


def settings_of(task: SearchTask, model: type[S]) -> S:
    """The task's settings as the settings model ``model`` an algorithm needs (ConfigError when the metric's settings
    do not include it: the algorithm is not offered by that metric)."""
    if not isinstance(task.settings, model):
        raise ConfigError(
            f"this search needs the settings {model.__name__}, which {type(task.settings).__name__} does not include",
            field="algorithm",
        )
    return task.settings
