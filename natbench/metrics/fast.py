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
  Every cps step of the fast search is a full (validated) one; it gains from the seeded walk and, in its first
  repetition, from the jumps to a failed phase 1's rate (valid connections / its length).
* **Where to look next** (phase-2 trials ask the tester for ``tail_rates``): a failed trial's
  :func:`forwarded_rate`, a short trial's :func:`delivered_rate` and :func:`burst_rate` go to the search in its
  :class:`~natbench.search.fast.TrialVerdict`; they choose the next rate, never a bound.
* **Seed**: the middle of the final interval of this metric's previous repetition at this working point
  (``value + error / 2``; none for the first repetition, which narrows the whole range). The walk starts at the grid
  rate at or below it, the previous value, and is made of full-trial verdicts: it is verified, never trusted.
* **Probes learnt at the point**: the probes and proofs of this metric's earlier repetitions at the working point
  (their results' ``probes`` and ``probe_proofs``) tell the search whether probes pay here.
* **A failed full trial stops** (``stop_failed``, with the short-fail rule): its tester, if it has the
  :class:`~natbench.plugins.tester.StopsFailedTrials` hook, ends it once more frames than the full trial may lose
  stay missing (:func:`loss_stop`); it is judged against the full trial's allowance
  (:func:`~natbench.metrics.judging.judge_stopped`), and a stop that proved nothing is measured again in full.

Every trial of a fast search stores ``extra["search_trial"]`` (``short`` or ``full``; a probe also
``extra["probe"]: true``; a stopped trial ``extra["stopped"]: true``); its result stores ``algorithm: fast``, the
counts of short and full trials, whether it was seeded, the rates whose full-duration confirmation disagreed with the
short trials (``rejected``), the short-fail rule's counts (``probes``, ``probe_proofs``, ``guard_trials``,
``disproved``), whether the final upper bound rests on a short trial (``short_bound``), the failed full trials
that stopped early (``stopped``), the jumps to a forwarded rate (``jumps``) and the most a failed short trial
delivered per second (``short_delivered``: no probe at or below it in the later repetitions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import Field

from natbench.config.model import SchemaModel
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD
from natbench.metrics.judging import STOP_UNDECIDED, is_tester_limited
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.settings import Phase2Settings, SearchSettings
from natbench.plugins.tester import LossStop, StopsFailedTrials
from natbench.results import TrialRecord, Verdict
from natbench.search.fast import FastOutcome, FastStep, ShortFailRule, TrialVerdict, run_fast_search

__all__ = [
    "FULL_SPAN",
    "STOP_IN_FLIGHT",
    "STOP_MIN_MARGIN",
    "STOP_WINDOW",
    "ShortTrialSettings",
    "burst_rate",
    "delivered_rate",
    "fast_extra",
    "fast_rates",
    "forwarded_rate",
    "loss_stop",
    "phase2_fast",
    "prior_seed",
    "probe_history",
    "short_delivered",
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
    stop_failed: bool = True
    """``algorithm: fast`` with ``short_fail``: a full trial ends as soon as it has failed, when the tester can tell
    (a direction steadily losing more frames than the full trial may lose; docs/engine.md, "Stopping a failed full
    trial"); false: every full trial runs its whole duration."""


FULL_SPAN = 0.99
"""Share of a full trial's duration a trial must have sent over for its count alone to tell what a full trial forwards
(the span from the first to the last frame is one frame interval short of the duration)."""

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


def loss_stop(
    ctx: ProcedureContext[Any], step: FastStep, rule: ShortFailRule | None, undecided: set[float]
) -> LossStop | None:
    """The stop a full trial of the fast search asks of its tester (None: it runs its whole duration): only with the
    short-fail rule and ``stop_failed`` on, a tester with the :class:`~natbench.plugins.tester.StopsFailedTrials`
    hook, and never again at a rate in ``undecided`` (a stop there proved nothing: the receive wait brought its loss
    back within the allowance, so the trial is measured again in full). The tester stops once a direction's gap
    (frames sent less frames received) stayed more than the full trial's allowance (the rule's) plus a margin above
    the frames in flight for :data:`STOP_WINDOW`. The margin is what a DUT short of capacity by half an ``error``
    loses in that window, at least :data:`STOP_MIN_MARGIN` and :data:`STOP_IN_FLIGHT` of the rate's frames: frames
    in flight vary by less, and a DUT closer to the rate still stops, only later, as its loss grows."""
    s = ctx.settings
    tester = ctx.tester
    if (
        rule is None
        or not step.full
        or step.probe
        or step.rate in undecided
        or not s.stop_failed
        or not isinstance(tester, StopsFailedTrials)
        or not tester.stops_failed_trials()
    ):
        return None
    margin = max(float(s.error) / 2 * STOP_WINDOW, STOP_MIN_MARGIN, step.rate * STOP_IN_FLIGHT)
    return LossStop(allowance=rule.allowance(step.rate), margin=margin, window=STOP_WINDOW)


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


def forwarded_rate(rec: TrialRecord, directions: Iterable[str], full_seconds: float | None) -> float | None:
    """What the DUT would forward per second, in its worst direction among ``directions`` that ``rec`` sent, over a
    full trial at the rate of the failed trial ``rec``: where the search looks next (docs/engine.md, "Where to look
    next"), never a verdict. None when ``rec`` did not fail for the DUT's sake, or says too little.

    ``full_seconds``: a full trial's duration (None: ``rec``'s own, a cps phase 1 of N frames). A trial that ran the
    full duration tells it by its count: valid frames / seconds. A shorter one (a short or a stopped trial) only with
    the tester's forwarding rate of its second half (``tail_rates``, the DUT's capacity once its queues and buckets
    have filled), which the rest of the full trial would add: ``valid / full + tail x (1 - seconds / full)``. A queue
    or bucket of B frames then counts B / full, as it does in the full trial. Never below the tail rate, where the
    tester gave one: a loss confined to the first half (an outage, a start-up transient) says nothing of capacity."""
    if rec.verdict is not Verdict.FAIL or is_tester_limited(rec) or rec.kind not in ("phase1", "phase2"):
        return None
    seconds = float(rec.extra.get("duration") or 0.0)
    if seconds <= 0:
        return None
    full = seconds if full_seconds is None else float(full_seconds)
    tails = rec.extra.get("tail_rates") or {}
    rates = []
    for d in directions:
        c = rec.counts.get(d)
        if c is None:
            continue  # a direction the trial did not send (a phase 1 sends forward only)
        valid = int(c["valid"])
        tail = float(tails[d]) if d in tails else None
        if seconds >= full * FULL_SPAN:
            rate = valid / seconds
        elif tail is not None:
            rate = valid / full + tail * (1 - seconds / full)
        else:
            return None
        # a loss confined to the trial's first half (an outage, a start-up transient) is no capacity: never below
        # what the second half forwarded
        rates.append(rate if tail is None else max(rate, tail))
    return min(rates) if rates else None


def burst_rate(rec: TrialRecord, directions: Iterable[str]) -> float | None:
    """Frames per second the trial ``rec`` delivered above its steady forwarding rate (the tester's ``tail_rates``)
    in its worst direction among ``directions``: what the DUT's queues and token buckets let through before they
    filled, spread over the trial (``valid / seconds - tail``, at least 0). None without the tester's tail rates."""
    seconds = float(rec.extra.get("duration") or 0.0)
    tails = rec.extra.get("tail_rates") or {}
    if seconds <= 0 or not all(d in tails and d in rec.counts for d in directions):
        return None
    bursts = [max(int(rec.counts[d]["valid"]) / seconds - float(tails[d]), 0.0) for d in directions]
    return max(bursts) if bursts else None


def short_delivered(ctx: ProcedureContext[SearchSettings]) -> float | None:
    """The most a failed short trial of this metric's earlier repetitions at this point delivered per second in its
    worst direction (their results' ``short_delivered``; None: none)."""
    seen = [float(r.extra["short_delivered"]) for r in ctx.earlier if r.extra.get("short_delivered") is not None]
    return max(seen) if seen else None


def delivered_rate(rec: TrialRecord, directions: Iterable[str]) -> float | None:
    """Valid frames per second the trial ``rec`` delivered in its worst direction among ``directions`` (None: no
    counts or no duration)."""
    seconds = float(rec.extra.get("duration") or 0.0)
    rates = [int(rec.counts[d]["valid"]) / seconds for d in directions if d in rec.counts] if seconds > 0 else []
    return min(rates) if rates else None


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
        delivered=short_delivered(ctx),
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
    full_seconds: float | None = None,
) -> FastOutcome:
    """A fast search of ``[lower, upper]`` with the metric's ``error`` and ``max_invalid``, seeded from the earlier
    repetitions; ``trial`` runs and stores the (short or full) trial of one step; ``rule``: the short-fail rule
    (None: short trials prove nothing, no probes); ``full_seconds``: a full trial's duration (None: each trial's
    own, a cps phase 1), for the forwarding rate a failed trial tells the search (:func:`forwarded_rate`)."""
    s = ctx.settings
    active = [str(d) for d in ctx.directions.active]

    def verdict(step: FastStep) -> TrialVerdict:
        rec = trial(step)
        stopped = bool(rec.extra.get("stopped"))
        forwarded = forwarded_rate(rec, active, full_seconds)
        short = not step.full and rec.kind == "phase2"
        return TrialVerdict(
            rec.verdict,
            rec.reason,
            is_tester_limited(rec),
            worst_lost(rec, active),
            stopped,
            forwarded,
            delivered_rate(rec, active) if short else None,
            burst_rate(rec, active) if short else None,
        )

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
        "stopped": out.stopped,
        "jumps": out.jumps,
        "short_delivered": out.short_delivered,
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

    narrow_full = s.short_duration >= s.duration
    rule = short_fail_rule(ctx) if s.short_fail and not narrow_full else None

    undecided: set[float] = set()

    def step(st: FastStep) -> TrialRecord:
        with tagged(ctx, st):
            if st.full:
                stop = loss_stop(ctx, st, rule, undecided)
                rec = phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper, stop=stop, tail_rates=True)
                if stop is not None and rec.verdict is Verdict.INVALID and rec.reason.startswith(STOP_UNDECIDED):
                    # the stop proved nothing (stored as such): the full trial decides, at once and never stopped;
                    # the search sees only its verdict (no invalid trial of the search, no max_invalid spent)
                    undecided.add(st.rate)
                    rec = phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper, tail_rates=True)
                return rec
            with short_trials(ctx, s.short_duration):
                return phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper, tail_rates=True)

    return fast_rates(ctx, s.lower, s.upper, step, narrow_full=narrow_full, rule=rule, full_seconds=float(s.duration))
