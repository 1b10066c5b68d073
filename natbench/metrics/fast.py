"""The metrics' side of ``algorithm: fast`` (:mod:`natbench.search.fast`): what a short trial is for each metric,
where the seed comes from, the short-fail rule's figures, and the fields a fast result and its trials store.

* **Throughput and forwarding**: a short trial is a phase-2 trial of ``short_duration`` seconds (default 1, as
  MLRsearch's initial trials) on the same filled table (``refill: auto`` keeps one fill across the steps, the
  timeout guard still applies to every trial); a full trial lasts ``duration``. The short-fail rule
  (:class:`~natbench.search.fast.ShortFailRule`) compares a short trial's loss in its worst active direction
  (sent - valid) with acceptance x the full trial's frames per direction (rate x ``duration``); a probe costs
  ``short_duration + timeout`` plus :data:`~natbench.metrics.duration.STEP_OVERHEAD`, a full trial ``duration +
  timeout`` plus the same.
* **cps**: no short trial. A phase 1 always offers all N connections (its length is N / rate; fewer connections
  would measure a smaller, faster table), and a phase 1 without the reverse frames of its validation still costs
  more than half a validated step, too little to pay for the confirmations.
  Every cps step of the fast search is a full (validated) one; it gains from the seeded walk alone.
* **Seed**: the middle of the final interval of this metric's previous repetition at this working point
  (``value + error / 2``; none for the first repetition, which narrows the whole range). The walk starts at the grid
  rate at or below it, the previous value, and is made of full-trial verdicts: it is verified, never trusted.
* **Probes learnt at the point**: the probes and proofs of this metric's earlier repetitions at the working point
  (their results' ``probes`` and ``probe_proofs``) tell the search whether probes pay here.

Every trial of a fast search stores ``extra["search_trial"]`` (``short`` or ``full``; a probe also
``extra["probe"]: true``); its result stores ``algorithm: fast``, the counts of short and full trials, whether it was
seeded, the rates whose full-duration confirmation disagreed with the short trials (``rejected``), and the
short-fail rule's counts (``probes``, ``probe_proofs``, ``guard_trials``, ``disproved``) and whether the final upper
bound rests on a short trial (``short_bound``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import Field

from natbench.config.model import SchemaModel
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD
from natbench.metrics.judging import is_tester_limited
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.settings import Phase2Settings, SearchSettings
from natbench.results import TrialRecord
from natbench.search.fast import FastOutcome, FastStep, ShortFailRule, TrialVerdict, run_fast_search

__all__ = [
    "ShortTrialSettings",
    "fast_extra",
    "fast_rates",
    "phase2_fast",
    "prior_seed",
    "probe_history",
    "short_fail_rule",
    "short_trials",
    "tagged",
    "trial_kind",
    "worst_lost",
]


class ShortTrialSettings(SchemaModel):
    """The short trials of ``algorithm: fast``."""

    short_duration: float = Field(default=1.0, gt=0)
    """``algorithm: fast``: seconds of the short phase-2 trials that narrow the search (full trials, which alone
    decide the result, last ``duration``); at or above ``duration`` every trial is a full one. ``algorithm: mlr``:
    the ``rfc2544`` preset's initial trial duration."""
    short_fail: bool = True
    """``algorithm: fast``: a short trial that lost more frames in a direction than a full trial at its rate may lose
    proves that rate an upper bound, and short trials are tried before full ones while that pays (docs/engine.md,
    "The short-fail rule"); false: short trials only narrow, every upper bound is a failed full trial."""


def trial_kind(step: FastStep) -> dict[str, Any]:
    """The ``extra`` a trial of a fast search stores: whether it was short or full, and a probe."""
    kind: dict[str, Any] = {"search_trial": "full" if step.full else "short"}
    if step.probe:
        kind["probe"] = True
    return kind


def worst_lost(rec: TrialRecord, directions: Iterable[str]) -> int | None:
    """Frames ``rec`` lost (sent - valid) in its worst direction among ``directions``; None when it has no counts
    for one of them (it then proves nothing by the short-fail rule)."""
    lost = []
    for d in directions:
        c = rec.counts.get(d)
        if c is None:
            return None
        lost.append(max(int(c["sent"]) - int(c["valid"]), 0))
    return max(lost) if lost else None


def probe_history(ctx: ProcedureContext[SearchSettings]) -> tuple[int, int]:
    """(probes, proofs) of this metric's earlier repetitions at this point: what they learnt about probes."""
    probes = sum(int(r.extra.get("probes") or 0) for r in ctx.earlier)
    proofs = sum(int(r.extra.get("probe_proofs") or 0) for r in ctx.earlier)
    return probes, proofs


def short_fail_rule(ctx: ProcedureContext[Any]) -> ShortFailRule:
    """The short-fail rule of a phase-2 metric's fast search: acceptance, durations and what a trial costs (its
    duration, the receive wait and :data:`~natbench.metrics.duration.STEP_OVERHEAD`), with the earlier repetitions'
    probes."""
    s = ctx.settings
    probes, proofs = probe_history(ctx)
    return ShortFailRule(
        acceptance=ctx.acceptance,
        full_seconds=float(s.duration),
        short_seconds=float(s.short_duration),
        full_cost=float(s.duration) + float(s.timeout) + STEP_OVERHEAD,
        short_cost=float(s.short_duration) + float(s.timeout) + STEP_OVERHEAD,
        probes=probes,
        proofs=proofs,
    )


def prior_seed(ctx: ProcedureContext[SearchSettings]) -> float | None:
    """The middle of the final interval of this metric's latest earlier repetition at this point that found a rate,
    ``value + error / 2`` (None when there is none).

    The latest, not the median of all: a walk from the seed ends near it when the DUT's trials pass and fail at
    random over a band many errors wide, so a median would hold every later repetition near an unlucky first one,
    while the latest result moves on (an up-and-down staircase). The search starts at the grid rate at or below the
    seed (:class:`~natbench.search.binary.RateGrid`): the previous value. A start off the grid (``floor(value + error
    / 2)``) would put every later repetition on a grid half an error above the one the binary search tests, and the
    medians that much above binary's (bench/search_bias.py measures the difference)."""
    found = [r for r in ctx.earlier if r.value is not None and r.value > ctx.settings.lower]
    if not found:
        return None
    latest = max(found, key=lambda r: r.repetition)
    return float(latest.value or 0.0) + float(latest.error or 0.0) / 2


def fast_rates(
    ctx: ProcedureContext[SearchSettings],
    lower: float,
    upper: float,
    trial: Callable[[FastStep], TrialRecord],
    *,
    narrow_full: bool = False,
    rule: ShortFailRule | None = None,
) -> FastOutcome:
    """A fast search of ``[lower, upper]`` with the metric's ``error`` and ``max_invalid``, seeded from the earlier
    repetitions; ``trial`` runs and stores the (short or full) trial of one step; ``rule``: the short-fail rule
    (None: short trials prove nothing, no probes)."""
    s = ctx.settings
    active = [str(d) for d in ctx.directions.active]

    def verdict(step: FastStep) -> TrialVerdict:
        rec = trial(step)
        return TrialVerdict(rec.verdict, rec.reason, is_tester_limited(rec), worst_lost(rec, active))

    return run_fast_search(
        verdict,
        lower=lower,
        upper=upper,
        error=s.error,
        seed=prior_seed(ctx),
        narrow_full=narrow_full,
        max_invalid=s.max_invalid,
        rule=rule,
    )


def fast_extra(out: FastOutcome) -> dict[str, Any]:
    """The fields a fast search's result stores beside :func:`~natbench.metrics.trial.search_extra`'s."""
    return {
        "algorithm": "fast",
        "short_steps": out.short_steps,
        "full_steps": out.full_steps,
        "seeded": out.seeded,
        "rejected": list(out.rejected),
        "probes": out.probes,
        "probe_proofs": out.probe_proofs,
        "short_bound": out.short_bound,
        "guard_trials": out.guard_trials,
        "disproved": list(out.disproved),
    }


@contextmanager
def tagged(ctx: ProcedureContext[SearchSettings], step: FastStep) -> Iterator[None]:
    """Within the block, every trial record ``ctx`` stores carries ``extra["search_trial"]`` (short or full), but a
    table fill the step needed first (it is no trial of the search)."""
    emit = ctx.emit
    tag = trial_kind(step)

    def tagging(rec: TrialRecord) -> None:
        if rec.kind not in ("fill", "fill_check"):
            rec.extra.update(tag)
        emit(rec)

    ctx.emit = tagging
    try:
        yield
    finally:
        ctx.emit = emit


@contextmanager
def short_trials(ctx: ProcedureContext[Phase2Settings], seconds: float) -> Iterator[None]:
    """Within the block, the phase-2 trials of ``ctx`` last ``seconds`` (the settings' ``duration`` is swapped and
    restored: the filler's timeout guard then checks the short trial's own end)."""
    saved = ctx.settings
    ctx.settings = saved.model_copy(update={"duration": seconds})
    try:
        yield
    finally:
        ctx.settings = saved


def phase2_fast(ctx: ProcedureContext[Any], filler: Filler | None) -> FastOutcome:
    """The fast search of a phase-2 metric (throughput with its ``filler``, forwarding without): short trials of
    ``short_duration`` narrow and probe (the short-fail rule), full trials of ``duration`` confirm."""
    s = ctx.settings

    def step(st: FastStep) -> TrialRecord:
        with tagged(ctx, st):
            if st.full:
                return phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper)
            with short_trials(ctx, s.short_duration):
                return phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper)

    narrow_full = s.short_duration >= s.duration
    rule = short_fail_rule(ctx) if s.short_fail and not narrow_full else None
    return fast_rates(ctx, s.lower, s.upper, step, narrow_full=narrow_full, rule=rule)
