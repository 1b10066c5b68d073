"""A metric's search, by the algorithm its settings name (:func:`run_search`): the metric gives the runner of its
trials, the algorithm's declaration (:mod:`natbench.search`) decides which trials to run and what the result stores.
No metric names an algorithm."""

from __future__ import annotations

from typing import Any

from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD
from natbench.metrics.settings import SearchSettings
from natbench.plugins import evidence_of
from natbench.search import SearchAlgorithm, SearchOutcome, SearchTask, TrialRunner
from natbench.search.declare import algorithm


def search_task(
    ctx: ProcedureContext[SearchSettings],
    run: TrialRunner,
    *,
    lower: float | None = None,
    upper: float | None = None,
    short_seconds: float | None = None,
    full_seconds: float | None = None,
    stop_below: float | None = None,
) -> SearchTask:
    """The task of a search of ``ctx``'s metric: its range (the settings', unless ``lower`` / ``upper`` are given),
    error and ``max_invalid``, acceptance and directions, the trial ``run``-ner, its trials' durations (``None``: a
    phase 1's own; no short trials), what a trial costs beyond its traffic (the receive wait and
    :data:`~natbench.metrics.duration.STEP_OVERHEAD`), the earlier repetitions at the point and what the tester
    declares it can tell."""
    s = ctx.settings
    return SearchTask(
        lower=float(s.lower if lower is None else lower),
        upper=float(s.upper if upper is None else upper),
        error=float(s.error),
        run=run,
        settings=s,
        acceptance=ctx.acceptance,
        directions=tuple(str(d) for d in ctx.directions.active),
        max_invalid=s.max_invalid,
        full_seconds=full_seconds,
        short_seconds=short_seconds,
        overhead=float(s.timeout) + STEP_OVERHEAD,
        earlier=tuple(ctx.earlier),
        evidence=evidence_of(ctx.tester),
        stop_below=stop_below,
    )


def run_search(
    ctx: ProcedureContext[SearchSettings],
    run: TrialRunner,
    *,
    using: SearchAlgorithm | None = None,
    **task: Any,
) -> tuple[SearchOutcome, dict[str, Any]]:
    """Search with the algorithm ``ctx``'s settings name (or ``using``): its outcome, and the fields its result
    stores beside the ones every search stores (:func:`~natbench.metrics.trial.search_extra`). ``task``: the keyword
    arguments of :func:`search_task`."""
    algo = using if using is not None else algorithm(ctx.settings.algorithm)
    t = search_task(ctx, run, **task)
    out = algo.run(t)
    return out, algo.stored(t, out)
