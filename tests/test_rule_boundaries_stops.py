"""Stopping failed full trials, short trials and the watch behind them, at their boundaries (docs/engine.md,
"Stopping a failed full trial", "Where to look next"):

* the stop a full trial asks for (:func:`~natbench.search.fast.stop.stop_rule`): its margin (each of its three terms the
  largest alone), each condition of asking for one false alone, never again at a rate whose stop proved nothing;
* the fast search of a phase-2 metric (:data:`~natbench.search.fast.FAST` in the procedures, with the fakes): no
  short trial when short and full durations are equal; only a stop that proved nothing is measured again at once,
  any other invalid stopped trial is the search's to retry (``max_invalid``);
* a stopped trial's verdict (:func:`~natbench.judging.judge_stopped`): its average pace is not held against
  it, its loss is;
* the loss watch's baseline (the running minimum of the gap) and its threshold and window, exactly;
* the tail rate's window (from the first sample in which every direction had sent).
"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import Any

import pytest
from metric_settings import build
from test_procedures import POINT, Harness

from natbench.judging import judge_phase, judge_stopped
from natbench.metrics import ProcedureContext
from natbench.metrics.searching import search_task
from natbench.plugins import Directions, LossStop, Phase2Options, TrialEvidence
from natbench.results import Direction, DirectionCounts, PhaseResult, RepetitionResult, Verdict
from natbench.search.fast import FastStep, ShortFailRule
from natbench.search.fast.stop import STOP_IN_FLIGHT, STOP_MIN_MARGIN, STOP_WINDOW, stop_rule
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.testers.tailrate import TailRate
from natbench.testing import FakeTester

# --- the stop a full trial asks for ----------------------------------------------------------------------------


def context(h: Harness, **settings: Any) -> ProcedureContext[Any]:
    """The procedure context of a fast throughput repetition on ``h``'s fakes (as :meth:`Harness.run` builds it)."""
    resolved, options = build(
        "throughput", {"gap": 0.5, "duration": 10.0}, fill_rate=50_000, algorithm="fast", **settings
    )
    return ProcedureContext(
        tester=h.tester,
        dut=h.dut,
        point=POINT,
        plan=h.plan,
        metric="throughput",
        repetition=0,
        settings=resolved,
        emit=h.records.append,
        clock=lambda: 0.0,
        sleep=h.slept.append,
        options=options,
    )


def loss_stop(
    ctx: ProcedureContext[Any], step: FastStep, rule: ShortFailRule | None, undecided: set[float]
) -> LossStop | None:
    """The stop the fast search's trial ``step`` asks of ``ctx``'s tester, as the search builds it for that context."""
    s = ctx.settings
    task = search_task(ctx, lambda _r: NotImplemented, short_seconds=s.short_duration, full_seconds=s.duration)
    stops = stop_rule(task, rule)
    return stops.stop(step, undecided) if stops is not None else None


def stopping(**settings: Any) -> ProcedureContext[Any]:
    """A context whose tester stops failed trials."""
    h = Harness()
    h.tester.stops = True
    return context(h, **settings)


def rule(acceptance: float = 0.0) -> ShortFailRule:
    return ShortFailRule(acceptance, 10.0, 1.0, full_cost=11.5, short_cost=2.5)


def full(rate: float, *, probe: bool = False) -> FastStep:
    return FastStep(rate, 0.0, 2 * rate, 0, True, probe=probe)


@pytest.mark.parametrize(
    ("rate", "error", "margin"),
    [
        # 10 Mpps, error 1,000/s: half an error for 0.25 s is 125 frames, the frames in 100 us of the rate 1,000
        (10e6, 1000.0, 1000.0),
        # error 100,000/s: half an error for 0.25 s, 12,500 frames, beats 100 us of the rate (1,000)
        (10e6, 100_000.0, 12_500.0),
        # 100,000/s, error 100/s: 12.5 and 10 frames; the least margin, a send batch of 64 frames
        (100_000.0, 100.0, STOP_MIN_MARGIN),
    ],
)
def test_a_stops_margin_is_the_largest_of_its_three_terms(rate: float, error: float, margin: float) -> None:
    assert (error / 2 * STOP_WINDOW, STOP_MIN_MARGIN, rate * STOP_IN_FLIGHT).count(margin) == 1  # one term alone
    stop = loss_stop(stopping(error=error, upper=4 * rate), full(rate), rule(0.001), set())
    assert stop is not None
    assert stop.margin == pytest.approx(margin)
    assert stop.allowance == pytest.approx(0.001 * rate * 10.0)  # acceptance x the full trial's frames
    assert stop.window == STOP_WINDOW


def watched(stop: LossStop, rate: float, held: float) -> float | None:
    """When the watch stops a 3 s trial at ``rate`` (one direction; 10 us of frames always in flight) whose DUT holds
    ``held`` seconds of frames more from 1 s to 2 s (a rise of its latency), then lets them go: None when never."""
    watch = LossWatch(stop, 1)
    for k in range(1, round(3.0 / SAMPLE_PERIOD) + 1):
        t = k * SAMPLE_PERIOD
        sent = math.floor(rate * t)
        in_flight = rate * (10e-6 + (held if 1.0 <= t < 2.0 else 0.0))
        if watch.observe(t, [sent], [sent - math.floor(in_flight)]):
            return t
    return None


def test_a_latency_rise_within_the_in_flight_term_never_stops_a_trial_that_loses_nothing() -> None:
    # 10 Mpps, error 1,000/s, acceptance 0: the margin is 100 us of frames (1,000), not half an error for a window
    # (125). The DUT holds 90 us of frames more for a whole second and loses none: no stop. 150 us: the stop
    # proves nothing then (the receive wait delivers them), the documented cost of a larger rise.
    stop = loss_stop(stopping(error=1000.0, upper=40e6), full(10e6), rule(), set())
    assert stop is not None
    assert watched(stop, 10e6, 90e-6) is None
    assert watched(stop, 10e6, 150e-6) is not None


def test_a_stop_is_asked_for_only_when_every_condition_holds() -> None:
    ctx = stopping(error=100_000.0, upper=400_000)
    asked = loss_stop(ctx, full(300_000), rule(), set())
    assert asked is not None  # all hold
    assert loss_stop(ctx, full(300_000), None, set()) is None  # no short-fail rule
    assert loss_stop(ctx, FastStep(300_000, 0, 400_000, 0, False), rule(), set()) is None  # a short trial
    assert loss_stop(ctx, full(300_000, probe=True), rule(), set()) is None  # a probe
    assert loss_stop(ctx, full(300_000), rule(), {300_000}) is None  # a stop at this rate proved nothing
    assert loss_stop(ctx, full(300_000), rule(), {200_000}) == asked  # ... at another rate: no matter
    assert loss_stop(stopping(error=100_000.0, upper=400_000, stop_failed=False), full(300_000), rule(), set()) is None
    ctx.tester.stops = False  # type: ignore[attr-defined]
    assert loss_stop(ctx, full(300_000), rule(), set()) is None  # the tester cannot tell
    ctx.tester.stops = True  # type: ignore[attr-defined]
    s = ctx.settings
    task = search_task(ctx, lambda _r: NotImplemented, short_seconds=s.short_duration, full_seconds=s.duration)
    assert stop_rule(task, rule()) is not None  # the other side of the next line
    # settings that are not the short trials' (even ones that say stop_failed): no stop
    foreign = SimpleNamespace(stop_failed=True, short_fail=True, short_duration=1.0)
    assert stop_rule(dataclasses.replace(task, settings=foreign), rule()) is None
    ctx.tester.stops = False  # type: ignore[attr-defined]
    no_hook = context(Harness(), error=100_000.0, upper=400_000)
    no_hook.tester = object()  # type: ignore[assignment]
    assert loss_stop(no_hook, full(300_000), rule(), set()) is None  # a tester without the hook


class ScriptedTester(FakeTester):
    """The fake tester; a full (10 s) trial at 300,000/s answers from ``script`` in turn while it lasts (a stop that
    proved nothing, an invalid trial ...); every phase-2 call is recorded as (rate, seconds, stop asked)."""

    def __init__(self, h: Harness, script: list[str]) -> None:
        super().__init__(h.dut, stops=True)
        self.script = script
        self.asked: list[tuple[float, float, bool]] = []
        self.prepare(h.plan)

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        self.asked.append((rate, duration, measure.stop is not None))
        result = super().phase2(rate, duration, directions, measure)
        if rate != 300_000 or duration != 10.0 or not self.script:
            return result
        what = self.script.pop(0)
        if what == "undecided" and measure.stop is not None:  # stopped at 0.5 s, nothing missing after the wait
            part = {d: DirectionCounts(c.sent // 20, c.sent // 20, c.sent // 20) for d, c in result.counts.items()}
            return PhaseResult(rate, rate, 0.5, part, stopped=True)
        if what == "late" and measure.stop is not None:  # stopped after 8 s, 2,400/s short to the end, none missing
            part = {
                d: DirectionCounts(c.sent * 8 // 10, c.sent * 8 // 10, c.sent * 8 // 10)
                for d, c in result.counts.items()
            }
            return PhaseResult(rate, rate, 8.0, part, stopped=True, shortfalls={d: 2400.0 for d in part})
        if what == "queued" and measure.stop is not None:  # the same, the DUT 10,000/s short of the rate to the end
            part = {d: DirectionCounts(c.sent // 20, c.sent // 20, c.sent // 20) for d, c in result.counts.items()}
            return PhaseResult(rate, rate, 0.5, part, stopped=True, shortfalls={d: 10_000.0 for d in part})
        if what == "behind":  # the tester lost its pace: invalid, tester-limited
            return PhaseResult(rate, rate, duration, result.counts, tester_ok=False, tester_note="fake: lost its pace")
        if what == "inconsistent":  # more valid frames than were sent: invalid, not the tester's rate
            bad = {d: DirectionCounts(c.sent, c.sent + 5, c.sent + 5) for d, c in result.counts.items()}
            return PhaseResult(rate, rate, duration, bad, stopped=measure.stop is not None)
        return result


def fast_throughput(h: Harness, **settings: Any) -> RepetitionResult:
    """One fast throughput repetition on a DUT forwarding 320,000/s: short 200k and 300k pass, full 300k confirms."""
    given = {"upper": 400_000, "error": 100_000, "fill_rate": 50_000, "algorithm": "fast", "duration": 10.0}
    return h.run("throughput", **{**given, **settings})


def test_a_rate_whose_stop_proved_nothing_is_never_stopped_again() -> None:
    # full 300k: the stop proves nothing, so the full trial runs at once without a stop; that one the tester cannot
    # keep (invalid): the search retries the rate, and the retry asks for no stop either
    h = Harness(forwarding=320_000)
    h.tester = ScriptedTester(h, ["undecided", "behind"])
    res = fast_throughput(h)
    assert h.tester.asked[2:] == [(300_000, 10.0, True), (300_000, 10.0, False), (300_000, 10.0, False)]
    assert (res.value, res.extra["invalid"]) == (300_000, 1)


def test_any_other_invalid_stopped_trial_is_the_searchs_to_retry_within_max_invalid() -> None:
    # full 300k asked for a stop and came back invalid for another reason (inconsistent counts): no measuring again
    # behind the search's back. With max_invalid 0 the repetition fails on it; with 1 the search retries it (with
    # a stop again: it proved nothing about a stop) and counts one invalid trial
    h = Harness(forwarding=320_000)
    h.tester = ScriptedTester(h, ["inconsistent"])
    res = fast_throughput(h, max_invalid=0)
    assert res.value is None and "1 invalid trials in a row at rate 300000" in res.extra["failed"]
    assert h.tester.asked[2:] == [(300_000, 10.0, True)]
    h = Harness(forwarding=320_000)
    h.tester = ScriptedTester(h, ["inconsistent"])
    res = fast_throughput(h, max_invalid=1)
    assert h.tester.asked[2:] == [(300_000, 10.0, True), (300_000, 10.0, True)]
    assert (res.value, res.extra["invalid"]) == (300_000, 1)


@pytest.mark.parametrize(("short", "narrowed_by"), [(10.0, "full"), (9.99, "short")])
def test_no_short_trial_and_no_short_fail_rule_when_short_and_full_trials_last_as_long(
    short: float, narrowed_by: str
) -> None:
    # short_duration == duration: every trial is a full one (no rule, no probe, no stop); just below: short trials
    # narrow and the full ones confirm
    h = Harness(forwarding=320_000)
    h.tester.stops = True
    res = fast_throughput(h, short_duration=short)
    kinds = [str(r.extra.get("search_trial")) for r in h.records if r.kind == "phase2"]
    assert kinds[0] == narrowed_by and res.value == 300_000
    if narrowed_by == "full":
        assert set(kinds) == {"full"}
        assert (res.extra["short_steps"], res.extra["probes"], res.extra["stopped"]) == (0, 0, 0)
        assert not any(r.extra.get("stopped") for r in h.records)
    else:
        assert res.extra["short_steps"] > 0 and "full" in kinds


# --- a stopped trial's verdict: its loss, not its average pace -----------------------------------------------------


def paced(achieved: float, lost: int, *, stopped: bool, tester_ok: bool = True) -> PhaseResult:
    """Half a second of a 10 s trial at 20,000/s per direction (10,000 frames), sent at ``achieved`` on average."""
    counts = {Direction.FORWARD: DirectionCounts(10_000, 10_000 - lost, 10_000 - lost)}
    return PhaseResult(20_000, achieved, 0.5, counts, tester_ok=tester_ok, stopped=stopped)


def verdict(phase: PhaseResult, allowance: float | None = 0.0) -> tuple[Verdict, str]:
    v, reason = judge_phase(phase, 0.0, 0.001)
    return judge_stopped(phase, v, reason, allowance) if phase.stopped else (v, reason)


def test_a_stopped_failed_trial_with_a_low_average_pace_fails() -> None:
    # a stream stopped after 0.5 s whose average pace over that span was 10 % short: the tester judged its pacing
    # against the full trial's allowances (tester_ok); the loss fails it
    v, reason = verdict(paced(18_000, 500, stopped=True))
    assert v is Verdict.FAIL and "stopped early" in reason
    v, reason = verdict(paced(18_000, 0, stopped=True))
    assert v is Verdict.INVALID and reason.startswith("stopped early, but")  # no loss: the stop proved nothing


def test_a_trial_that_ran_its_whole_duration_with_a_low_average_pace_is_invalid() -> None:
    v, reason = verdict(paced(18_000, 500, stopped=False))
    assert v is Verdict.INVALID and reason.startswith("tester fell behind")
    v, reason = verdict(paced(20_000, 500, stopped=False))
    assert v is Verdict.FAIL


def test_a_stopped_trial_the_tester_failed_stays_invalid() -> None:
    v, reason = verdict(paced(18_000, 500, stopped=True, tester_ok=False))
    assert v is Verdict.INVALID and reason.startswith("tester could not keep the rate")


# --- the loss watch: baseline, threshold and window, exactly -------------------------------------------------------

STEP = 0.125  # seconds between samples here: a power of two, so that times and their differences are exact


def gaps(watch: LossWatch, gap_at: list[int], rate: int = 20_000) -> float | None:
    """Feed ``watch`` one direction whose gap (sent - valid) at sample k is ``gap_at[k]``; when it stopped (None:
    never)."""
    for k, gap in enumerate(gap_at, start=1):
        sent = rate * k
        if watch.observe(k * STEP, [sent], [sent - gap]):
            return k * STEP
    return None


def test_the_baseline_is_the_smallest_gap_so_far_not_the_first() -> None:
    # the first samples carry 500 frames in flight (a DUT still warming up), then 30; from sample 9 on, 200 frames
    # are lost and stay lost: 170 above the smallest gap (30), more than the margin of 64 for a whole window: stop.
    # Measured from the first sample's 500, the loss would hide below it.
    seq = [500, 500, 30, 30, 30, 30, 30, 30] + [230] * 20
    watch = LossWatch(LossStop(allowance=0, margin=64, window=0.25), 1)
    assert gaps(watch, seq) == 9 * STEP + 0.25
    assert watch.missing == (200,)


def test_a_gap_exactly_the_allowance_plus_margin_above_the_baseline_never_stops() -> None:
    # allowance 10 + margin 64: a gap 74 above the smallest stays below the threshold for ever; 75 stops the trial
    # exactly one window after it first showed (samples 0.125 s apart, window 0.25 s: at the third sample above)
    stop = LossStop(allowance=10, margin=64, window=0.25)
    assert gaps(LossWatch(stop, 1), [5, 5] + [79] * 40) is None
    assert gaps(LossWatch(stop, 1), [5, 5] + [80] * 40) == 3 * STEP + 0.25


# --- the tail rate's window: from the first sample in which every direction had sent ---------------------------


def test_the_tail_window_starts_when_every_direction_has_sent() -> None:
    """Two directions at 1,000 frames/s; the reverse one starts 5 s after the forward one, both end at 10 s. The
    forward direction forwards everything until 7.5 s, then 500/s. Both directions have sent from 5 s on: the
    second half of that is 7.5 - 10 s, where the forward direction forwarded 500/s (from the forward direction's
    own start, 0 s, the window would open at 5 s and mix in 2.5 s at 1,000/s)."""
    tr = TailRate(2)
    for k in range(1, 600):
        t = k * 0.02
        s = min(t, 10.0)
        sent = [math.floor(1000 * s), math.floor(1000 * max(s - 5.0, 0.0))]
        valid = [math.floor(1000 * min(s, 7.5) + 500 * max(s - 7.5, 0.0)), sent[1]]
        tr.observe(t, sent, valid)
    rates = tr.rates()
    assert rates is not None
    assert rates[0] == pytest.approx(500, rel=0.01) and rates[1] == pytest.approx(1000, rel=0.01)


class NoTailTester(FakeTester):
    """A fake tester that stops failed trials but gives no forwarding rate of a trial's second half."""

    def evidence(self) -> TrialEvidence:
        return TrialEvidence(stops_failed_trials=True, tail_rates=False)


def test_no_stop_is_asked_of_a_tester_that_gives_no_second_half_rate() -> None:
    # without it a stop the receive wait undoes could not be decided (natbench.judging.forecast): it would be
    # measured again, a second draw; so no stop at all
    ctx = stopping(error=100_000.0, upper=400_000)
    assert loss_stop(ctx, full(300_000), rule(), set()) is not None
    h = Harness()
    h.tester = NoTailTester(h.dut, stops=True)
    assert loss_stop(context(h, error=100_000.0, upper=400_000), full(300_000), rule(), set()) is None


def test_a_shortfall_within_the_stops_margin_forecasts_nothing_and_the_trial_is_measured_again() -> None:
    # full 300k stopped after 0.5 s, nothing missing after the wait, its second half 10,000/s short: 5,000 frames
    # by the stop, less than its margin (12,500: half an error for the window), so the shortfall did not make the
    # stop and forecasts nothing: the full trial runs again, unstopped
    h = Harness(forwarding=320_000)
    h.tester = ScriptedTester(h, ["queued"])
    res = fast_throughput(h)
    assert h.tester.asked[2:] == [(300_000, 10.0, True), (300_000, 10.0, False)]
    assert res.value == 300_000


def test_a_forecast_spans_the_rest_of_the_full_trial_only() -> None:
    # acceptance 0.2 %: a full trial (10 s) at 300,000/s may lose 6,000 frames; stopped after 8 s, none missing
    # after the wait, 2,400/s short to the end (19,200 frames by the stop: past its threshold of 6,000 + 12,500).
    # The 2 s left would add 4,800: within the allowance, so the stop proved nothing and the full trial runs again
    h = Harness(forwarding=320_000)
    h.tester = ScriptedTester(h, ["late"])
    res = fast_throughput(h, acceptance=0.002)
    assert h.tester.asked[2:] == [(300_000, 10.0, True), (300_000, 10.0, False)]
    assert res.value == 300_000
