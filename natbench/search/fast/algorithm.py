"""The fast search as a declared algorithm (:data:`FAST`): what it asks of a metric's trials, what its results store,
how ``natbench plan`` counts it and what reports say of its values.

* **Throughput and forwarding** (metrics with short trials, :class:`~natbench.search.ShortTrialSettings`): a short
  trial is a phase-2 trial of ``short_duration`` seconds (default 1, as MLRsearch's initial trials) on the same
  filled table; a full trial lasts ``duration``. The short-fail rule (:class:`~natbench.search.fast.ShortFailRule`)
  compares a short trial's loss in its worst active direction (sent - valid) with acceptance x the full trial's
  frames per direction (rate x ``duration``); a probe costs ``short_duration`` plus the trial overhead, a full trial
  ``duration`` plus the same.
* **cps** (no short trials: a phase 1 always offers all N connections, and fewer would measure a smaller, faster
  table): every step is a full (validated) one; it gains from the seeded walk and, in its first repetition, from the
  jumps to a failed phase 1's rate (valid connections / its length).
* **Where to look next** (trials ask the tester for ``tail_rates`` where it declares it can give them): a failed
  trial's forwarding rate, a short trial's delivered and burst rates go to the search in its
  :class:`~natbench.search.fast.TrialVerdict` (:mod:`natbench.search.fast.evidence`); they choose the next rate,
  never a bound.
* **Seed**: the middle of the final interval of this metric's previous repetition at this working point
  (:func:`~natbench.search.fast.history.prior_seed`; none for the first repetition, which narrows the whole range).
* **Probes learnt at the point**: the probes and proofs of the earlier repetitions (their results' ``probes`` and
  ``probe_proofs``) tell the search whether probes pay here.
* **A failed full trial stops** (``stop_failed``, with the short-fail rule, when the tester declares it can stop a
  failed trial): :class:`~natbench.search.fast.stop.StopRule`; a stop that proved nothing is measured again in full.

Every trial of a fast search stores ``extra["search_trial"]`` (``short`` or ``full``; a probe also
``extra["probe"]: true``); its result stores ``algorithm: fast``, the counts of short and full trials, whether it was
seeded, the rates whose full-duration confirmation disagreed with the short trials (``rejected``), the short-fail
rule's counts (``probes``, ``probe_proofs``, ``guard_trials``, ``disproved``), whether the final upper bound rests on
a short trial (``short_bound``), the failed full trials that stopped early (``stopped``), the jumps to a forwarded
rate (``jumps``) and the most a failed short trial delivered per second (``short_delivered``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from natbench.judging import stop_proved_nothing
from natbench.plugins.columns import Column
from natbench.results import TrialRecord
from natbench.search.ceiling import known_ceiling
from natbench.search.declare import BlockFacts, SearchAlgorithm
from natbench.search.fast.evidence import trial_verdict
from natbench.search.fast.history import prior_seed, probe_history, short_delivered
from natbench.search.fast.outcome import FastOutcome
from natbench.search.fast.planning import PLAN_NOTE, plan
from natbench.search.fast.rule import ShortFailRule
from natbench.search.fast.search import run_fast_search
from natbench.search.fast.stop import stop_rule
from natbench.search.fast.trial import FastStep, TrialVerdict
from natbench.search.outcome import SearchOutcome
from natbench.search.shorttrials import ShortTrialSettings
from natbench.search.task import SearchTask, TrialRequest

FAST_NAME = "fast"
"""The fast search's name in campaigns and results."""


def trial_kind(step: FastStep) -> dict[str, Any]:
    """The ``extra`` a trial of a fast search stores: whether it was short or full, and a probe."""
    kind: dict[str, Any] = {"search_trial": "full" if step.full else "short"}
    if step.probe:
        kind["probe"] = True
    return kind


def short_fail_rule(task: SearchTask, short_seconds: float, full_seconds: float) -> ShortFailRule:
    """The short-fail rule of a search with short trials: acceptance, durations and what a trial costs (its traffic
    and the task's overhead), with the earlier repetitions' probes and deliveries at the point."""
    probes, proofs = probe_history(task.earlier)
    return ShortFailRule(
        acceptance=task.acceptance,
        full_seconds=full_seconds,
        short_seconds=short_seconds,
        full_cost=full_seconds + task.overhead,
        short_cost=short_seconds + task.overhead,
        probes=probes,
        proofs=proofs,
        delivered=short_delivered(task.earlier),
    )


def _run(task: SearchTask) -> FastOutcome:
    """The fast search of the task's range: short trials narrow and probe (the short-fail rule) where the metric has
    short trials shorter than its full ones, full trials confirm; seeded from the earlier repetitions."""
    shorts = task.settings if isinstance(task.settings, ShortTrialSettings) else None
    short_s, full_s = task.short_seconds, task.full_seconds
    narrow_full = short_s is None or full_s is None or short_s >= full_s
    rule = None
    if shorts is not None and shorts.short_fail and not narrow_full and short_s is not None and full_s is not None:
        rule = short_fail_rule(task, short_s, full_s)
    stops = stop_rule(task, rule)
    undecided: set[float] = set()

    def request(st: FastStep, **ask: Any) -> TrialRequest:
        duration = None if st.full else short_s
        return TrialRequest(
            st.rate, st.lower, st.upper, duration, tail_rates=task.evidence.tail_rates, tags=trial_kind(st), **ask
        )

    def step(st: FastStep) -> TrialVerdict:
        stop = stops.stop(st, undecided) if stops is not None else None
        rec: TrialRecord = task.run(request(st, stop=stop))
        if stop is not None and stop_proved_nothing(rec):
            # the stop proved nothing (stored as such): the full trial decides, at once and never stopped; the search
            # sees only its verdict (no invalid trial of the search, no max_invalid spent)
            undecided.add(st.rate)
            rec = task.run(request(st))
        return trial_verdict(rec, st, task.directions, full_s)

    out = run_fast_search(
        step,
        lower=task.lower,
        upper=task.upper,
        error=task.error,
        seed=prior_seed(task.earlier, task.lower),
        narrow_full=narrow_full,
        max_invalid=task.max_invalid,
        rule=rule,
        known_ceiling=known_ceiling(task.earlier),
    )
    return dataclasses.replace(out, remeasured=len(undecided))


def _stored(_task: SearchTask, out: SearchOutcome) -> dict[str, Any]:
    """The fields a fast search's result stores beside the ones every search stores."""
    assert isinstance(out, FastOutcome)
    return {
        "algorithm": FAST_NAME,
        "short_steps": out.short_steps,
        "full_steps": out.full_steps,
        "seeded": out.seeded,
        "rejected": list(out.rejected),
        "probes": out.probes,
        "probe_proofs": out.probe_proofs,
        "short_bound": out.short_bound,
        "guard_trials": out.guard_trials,
        "disproved": list(out.disproved),
        "stopped": out.stopped,
        "jumps": out.jumps,
        "short_delivered": out.short_delivered,
        "remeasured": out.remeasured,
    }


def _meaning(facts: BlockFacts) -> str:
    shorts = facts.counts.get("short_bound", 0)
    proof = f", {shorts} of {facts.repetitions} repetitions' upper bound from a short trial" if shorts else ""
    return (
        "fast search: each value passed a full trial; its error is the distance to the lowest rate shown to fail, "
        "by a full trial or by a short trial that lost more frames than a full trial may lose in all "
        f"(the short-fail rule{proof})"
    )


def _notes(facts: BlockFacts) -> tuple[str, ...]:
    if not facts.counts.get("seeded"):
        return ()
    return (
        f"{facts.prefix}: fast search; repetitions after the first started from the earlier ones' results"
        " (each value still passed a full trial, with an upper bound one error above), so min / max are"
        " narrower than independent binary searches'; on the modelled DUTs of bench/search_bias.py (queues,"
        " ceilings that vary from trial to trial, drift, warm-up) its campaign medians are not above a binary"
        " search's (docs/engine.md)",
    )


FAST = SearchAlgorithm(
    name=FAST_NAME,
    description=(
        "short trials of ``short_duration`` narrow and prove upper bounds by the short-fail rule, full trials "
        "confirm: the result passed a full trial and a rate at most ``error`` above it is an upper bound; later "
        "repetitions walk from the previous one's result (docs/engine.md)"
    ),
    words="fast search",
    run=_run,
    stored=_stored,
    plan=plan,
    meaning=_meaning,
    summary=lambda _facts: "fast search; error: the distance to a rate shown to fail",
    columns=(
        Column("seeded", "bool", lambda r: bool(r.extra.get("seeded", False))),
        Column("short_bound", "bool", lambda r: bool(r.extra.get("short_bound", False))),
    ),
    notes=_notes,
    plan_note=PLAN_NOTE,
)
"""The fast search (:mod:`natbench.search.fast.search`) as natbench runs it for a metric."""
