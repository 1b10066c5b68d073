"""How ``natbench plan`` counts the fast search's trials (:func:`plan`): the first repetition narrows the whole range,
the later ones walk from their seed. The figures per seeded repetition come from bench/campaign_time.py's simulation
of the seed campaigns."""

from __future__ import annotations

from natbench.search.binary import search_steps
from natbench.search.declare import PlanQuery, TrialGroups

CONFIRMATIONS = 2
"""Full-duration trials the unseeded (first) repetition of a fast search with short trials is assumed to need after
its short ones: the pass at the result and the fail one error above it or a guard's trial there (more when a full
trial disagrees with the short ones; none above the result when its short failure proves the bound:
bench/campaign_time.py)."""

SEEDED_TRIALS = 3
"""Full trials a seeded search without probes is expected to need near a good seed (a pass and a fail one error
apart, plus one when the first step lands on the wrong side): the planning figure of ``natbench plan`` for cps."""

SEEDED_FULL = 3
"""Full trials a seeded search with the short-fail rule is counted with by ``natbench plan``: the mean per seeded
repetition of throughput and forwarding in bench/campaign_time.py's simulation of the seed campaigns, rounded (3.4
and 3.1 for seed 000 Figure 2, 2.5 for seed 004 Table 4; the median is 2 or 3: a far walk now and then costs more)."""

SEEDED_PROBES = 0
"""Probes (short trials) a seeded search with the short-fail rule is counted with by ``natbench plan``: the same
simulation's mean, 0.0, 0.1 and 0.2, rounded. A failed short trial of the first repetition delivered more per second
than the rates a seeded walk tries near the ceiling, so no probe runs there (:attr:`ShortFailRule.delivered`); it
was 2 before that rule."""


def fast_trials(query: PlanQuery, short: bool) -> tuple[int, int]:
    """(short, full) trials of a fast search over all repetitions. The first repetition searches the whole range
    (:func:`~natbench.search.binary.search_steps` trials, short ones followed by :data:`CONFIRMATIONS` full ones when
    ``short``); each later one walks from its seed: with short trials (the short-fail rule's probes)
    :data:`SEEDED_FULL` full trials and :data:`SEEDED_PROBES` probes, without them :data:`SEEDED_TRIALS` full trials
    (never more than the whole range's)."""
    whole = search_steps(query.lower, query.upper, query.error)
    later = query.repetitions - 1
    if short:
        return whole + later * SEEDED_PROBES, CONFIRMATIONS + later * min(whole, SEEDED_FULL)
    return 0, whole + later * min(whole, SEEDED_TRIALS)


def plan(query: PlanQuery) -> TrialGroups:
    """The fast search's trials at a point: short ones of the metric's ``short_duration`` (when it has short trials
    shorter than its full ones) and full ones (:func:`fast_trials`)."""
    short = (
        query.short_seconds is not None and query.full_seconds is not None and query.short_seconds < query.full_seconds
    )
    n_short, n_full = fast_trials(query, short)
    if not short:
        return ((n_full, None),)
    return ((n_short, query.short_seconds), (n_full, None))


PLAN_NOTE = (
    f"fast counted with {SEEDED_FULL} full trials and {SEEDED_PROBES} short ones per seeded repetition, "
    f"{SEEDED_TRIALS} full ones for cps, typical of bench/campaign_time.py's simulation; a DUT whose ceiling "
    "moves from trial to trial needs more"
)
"""How ``natbench plan`` says the fast search is counted."""
