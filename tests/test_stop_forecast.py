"""A stopped trial whose loss the receive wait brought back is decided from its own draw (natbench.judging.forecast,
judge_stopped; docs/engine.md, "Stopping a failed full trial"): the rest of the full trial would lose what the DUT's
shortfall to the end of the stopped trial adds, with no room counted in its queue; how a tester measures that
shortfall from its counts (natbench.testers.tailrate.TailRate.shortfalls). Every comparison on both sides."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from natbench.judging import (
    STOP_UNDECIDED,
    forecast,
    judge_phase,
    judge_stopped,
    recorded_net_lost,
    stop_proved_nothing,
)
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.testers.losswatch import SAMPLE_PERIOD
from natbench.testers.tailrate import MIN_TAIL_SAMPLES, TailRate

F, R = Direction.FORWARD, Direction.REVERSE


def stopped(short: dict[Direction, float], lost: int = 0, seconds: float = 10.0, **kw: object) -> PhaseResult:
    """A trial at 300,000/s per direction stopped after ``seconds``; ``lost`` frames missing after the receive wait in
    each direction; ``short``: the shortfalls the tester measured."""
    sent = int(300_000 * seconds)
    counts = {d: DirectionCounts(sent, sent - lost, sent - lost) for d in (F, R)}
    return PhaseResult(300_000.0, 300_000.0, seconds, counts, stopped=True, shortfalls=short, **kw)  # type: ignore[arg-type]


def test_the_forecast_adds_the_shortfall_over_the_rest_of_the_full_trial() -> None:
    # forward short by 5/s: over the 50 s left of a 60 s trial, 250 frames; reverse short by 2/s: 100
    frames, where, forwarded = forecast(stopped({F: 5.0, R: 2.0}, lost=3), 60.0, 20.0) or (0, "", 0)
    assert (frames, where, forwarded) == (3 + 250, "forward", 299_995.0)


@pytest.mark.parametrize(
    ("short", "expected"),
    [
        (0.0, None),  # no shortfall: the DUT kept up (a latency rise, a stall it caught up with)
        (5.0, 250.0),  # 5/s short over 10 s: 50 frames, the stop's threshold exactly: counts
        (4.99, None),  # just under the threshold over the seconds sent: this shortfall did not make the stop
    ],
)
def test_only_a_shortfall_that_explains_the_stop_is_forecast(short: float, expected: float | None) -> None:
    got = forecast(stopped({F: short}), 60.0, 50.0)
    assert (got[0] if got is not None else None) == (pytest.approx(expected) if expected is not None else None)


def test_no_forecast_without_a_measured_shortfall_or_after_the_full_duration() -> None:
    assert forecast(stopped({}), 60.0, 1.0) is None
    assert forecast(stopped({F: 1000.0}, seconds=60.0), 60.0, 1.0) == (0.0, "forward", 299_000.0)  # nothing left


def test_the_forecast_counts_the_loss_net_of_the_testers_own_deviation() -> None:
    phase = stopped({F: 10.0}, lost=500, deviations={F: Deviation(missed=400)})
    assert forecast(phase, 60.0, 1.0) == (100 + 10 * 50, "forward", 299_990.0)


@pytest.mark.parametrize(("allowance", "verdict"), [(249.0, Verdict.FAIL), (250.0, Verdict.INVALID)])
def test_a_stop_the_wait_undid_fails_only_when_its_forecast_exceeds_the_allowance(
    allowance: float, verdict: Verdict
) -> None:
    # stopped after 40 s of a 60 s trial; lost 50 after the wait (within the allowance); short 10/s: 400 frames by
    # the stop (it explains it), 200 more over the 20 s left: 250 frames forecast
    phase = stopped({F: 10.0, R: 0.0}, lost=50, seconds=40.0)
    v, reason = judge_stopped(phase, Verdict.FAIL, "", allowance, margin=0.0, full_seconds=60.0)
    assert v is verdict
    if verdict is Verdict.FAIL:
        assert "forward forwarded 299990/s of 300000/s" in reason and "lose 250 frames" in reason
    else:
        assert reason.startswith(STOP_UNDECIDED)


def test_the_stops_margin_is_part_of_the_threshold_a_shortfall_must_explain() -> None:
    # short 10/s over 10 s: 100 frames; the stop's threshold is allowance + margin
    phase = stopped({F: 10.0}, lost=0)
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, margin=100.0, full_seconds=60.0)[0] is Verdict.FAIL
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, margin=101.0, full_seconds=60.0)[0] is Verdict.INVALID


def test_without_the_full_duration_nothing_is_forecast() -> None:
    phase = stopped({F: 1000.0}, lost=0)
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0)[0] is Verdict.INVALID
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, full_seconds=60.0)[0] is Verdict.FAIL


def two_way(lost: dict[Direction, int], seconds: float = 0.5, **kw: object) -> PhaseResult:
    """A trial at 300,000/s per direction stopped after ``seconds``, ``lost[d]`` frames missing after the receive wait
    in direction d."""
    sent = int(300_000 * seconds)
    counts = {d: DirectionCounts(sent, sent - k, sent - k) for d, k in lost.items()}
    return PhaseResult(300_000.0, 300_000.0, seconds, counts, stopped=True, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("verdict", [Verdict.PASS, Verdict.FAIL, Verdict.INVALID])
def test_a_trial_that_ran_its_whole_duration_keeps_its_verdict(verdict: Verdict) -> None:
    # not stopped: judge_phase's verdict stands, whatever the allowance (even none) and the shortfalls
    phase = dataclasses.replace(stopped({F: 1000.0}, lost=500), stopped=False)
    for allowance in (None, 0.0, 1e9):
        assert judge_stopped(phase, verdict, "why", allowance, full_seconds=60.0) == (verdict, "why")


def record(verdict: Verdict, reason: str) -> TrialRecord:
    """A stored full trial at 300,000/s with this verdict and reason."""
    counts = {"forward": {"sent": 150_000, "received": 150_000, "valid": 150_000}}
    return TrialRecord("p", "throughput", 0, 0, "phase2", 300_000, 300_000, counts, verdict, reason, 0.0, 0.5)


def test_only_a_stop_that_proved_nothing_is_measured_again_in_full() -> None:
    undecided = judge_stopped(two_way({F: 0, R: 0}), Verdict.PASS, "", 100.0)
    assert stop_proved_nothing(record(*undecided))
    failed = judge_stopped(two_way({F: 500, R: 0}), Verdict.FAIL, "", 100.0)
    assert not stop_proved_nothing(record(*failed))
    unasked = judge_stopped(two_way({F: 500, R: 0}), Verdict.FAIL, "", None)  # invalid, but the tester's fault
    assert unasked[0] is Verdict.INVALID and not stop_proved_nothing(record(*unasked))
    assert not stop_proved_nothing(record(Verdict.FAIL, undecided[1]))  # the reason alone does not make it one


def test_a_stop_nobody_asked_for_is_the_testers_fault() -> None:
    v, reason = judge_stopped(two_way({F: 500, R: 0}), Verdict.FAIL, "", None)
    assert (v, reason) == (Verdict.INVALID, "the tester ended the trial early, though no stop was asked for")


@pytest.mark.parametrize(("lost", "named"), [({F: 500, R: 300}, "forward"), ({F: 300, R: 500}, "reverse")])
def test_a_stopped_trial_fails_naming_its_worst_direction(lost: dict[Direction, int], named: str) -> None:
    v, reason = judge_stopped(two_way(lost), Verdict.FAIL, "", 100.0)
    assert (v, reason) == (
        Verdict.FAIL,
        f"{named} loss 500/150000 in the first 0.5 s: more than the full trial may lose (100), stopped early",
    )


def test_a_stopped_trials_worst_direction_is_the_worst_net_of_the_testers_deviation() -> None:
    # forward lost more, but the tester's own misses explain 400 of them: reverse is the worse, net; the forward
    # loss, named when it is the worst, says what is net of the deviation
    phase = two_way({F: 600, R: 300}, deviations={F: Deviation(missed=400)})
    assert judge_stopped(phase, Verdict.FAIL, "", 100.0)[1].startswith("reverse loss 300/150000 in the first 0.5 s:")
    phase = two_way({F: 600, R: 300}, deviations={F: Deviation(missed=100)})
    assert judge_stopped(phase, Verdict.FAIL, "", 100.0)[1] == (
        "forward loss 600/150000 in the first 0.5 s (500 net of the tester's own deviation): more than the full trial"
        " may lose (100), stopped early"
    )


def test_of_two_directions_that_lost_as_much_the_first_is_named_as_judge_phase_does() -> None:
    phase = two_way({F: 500, R: 500})
    assert judge_stopped(phase, Verdict.FAIL, "", 100.0)[1].startswith("forward loss 500/150000")
    assert judge_phase(dataclasses.replace(phase, stopped=False), 0.0, 0.001)[1].startswith("forward loss 500/")


@pytest.mark.parametrize(("allowance", "verdict"), [(499.0, Verdict.FAIL), (500.0, Verdict.INVALID)])
def test_a_stopped_trial_fails_on_its_loss_only_beyond_what_the_full_trial_may_lose(
    allowance: float, verdict: Verdict
) -> None:
    assert judge_stopped(two_way({F: 500, R: 0}), Verdict.FAIL, "", allowance)[0] is verdict


def test_a_stopped_trial_never_passes_even_without_counts() -> None:
    # nothing lost (or nothing counted): the stop proved nothing, and the reason says how little it lost
    for phase in (two_way({F: 0, R: 0}), two_way({})):
        assert judge_stopped(phase, Verdict.PASS, "", 100.0) == (
            Verdict.INVALID,
            f"{STOP_UNDECIDED} its loss after the receive wait (0 frames) is within the full trial's allowance (100):"
            " no verdict, measured again in full",
        )
    phase = two_way({F: 40, R: 70})
    assert "(70 frames)" in judge_stopped(phase, Verdict.FAIL, "", 100.0)[1]


@pytest.mark.parametrize(("allowance", "verdict"), [(100.0, Verdict.FAIL), (100.5, Verdict.INVALID)])
def test_without_a_margin_the_threshold_a_shortfall_must_explain_is_the_allowance(
    allowance: float, verdict: Verdict
) -> None:
    # short 10/s over the 10 s sent: 100 frames, the allowance exactly: it explains the stop (the 50 s left would add
    # 500); just above the allowance it does not
    phase = stopped({F: 10.0}, lost=0)
    assert judge_stopped(phase, Verdict.FAIL, "", allowance, full_seconds=60.0)[0] is verdict


def test_a_direction_without_a_shortfall_does_not_hide_the_next_ones() -> None:
    assert forecast(stopped({R: 5.0}), 60.0, 1.0) == (250.0, "reverse", 299_995.0)
    assert forecast(stopped({F: 0.0, R: 5.0}), 60.0, 1.0) == (250.0, "reverse", 299_995.0)


def test_the_forecast_of_a_stop_within_the_first_second_counts_the_time_it_ran() -> None:
    # stopped after 0.5 s, 10/s short: 5 frames by the stop (its threshold exactly), 95 more over the 9.5 s left of
    # a 10 s trial
    assert forecast(stopped({F: 10.0}, seconds=0.5), 10.0, 5.0) == (95.0, "forward", 299_990.0)
    assert forecast(stopped({F: 10.0}, seconds=0.5), 10.0, 5.5) is None


def test_of_two_directions_forecast_to_lose_as_much_the_first_is_named() -> None:
    assert forecast(stopped({F: 5.0, R: 5.0}), 60.0, 1.0) == (250.0, "forward", 299_995.0)


# --- the shortfall a tester measures from its counts -------------------------------------------------------------


def sampled(forwarding: Callable[[float], float], *, seconds: float, rate: float = 300_000.0) -> TailRate:
    """A :class:`TailRate` fed one direction's counts every 20 ms of a trial at ``rate`` whose DUT forwarded
    ``forwarding(t)`` frames per second at t (a received count integrated on the samples), then one sample after the
    sending ended."""
    tail = TailRate(1)
    valid, t = 0.0, 0.0
    while t < seconds - 1e-9:
        t = round(t + SAMPLE_PERIOD, 6)
        valid += forwarding(t) * SAMPLE_PERIOD
        tail.observe(t, [round(rate * t)], [round(valid)])
    tail.observe(t + SAMPLE_PERIOD, [round(rate * seconds)], [round(valid)])
    return tail


def test_a_dut_short_of_the_rate_to_the_end_shows_its_shortfall() -> None:
    # a queue filling at 1,000/s from the start: the same deficit over the second half and the last window
    short = sampled(lambda t: 299_000.0, seconds=4.0).shortfalls(0.25)
    assert short is not None and short[0] == pytest.approx(1000.0, abs=1.0)


def test_a_dut_catching_up_by_the_stop_shows_no_shortfall() -> None:
    # 1,000/s short for 3 s (a slow spell, frames queued), then forwarding 1,000/s above the rate over the stop's
    # last window (draining its queue): short over the second half, not to the end: no shortfall to forecast with
    tail = sampled(lambda t: 299_000.0 if t <= 3.0 else 301_000.0, seconds=3.25)
    rates = tail.rates()
    assert rates is not None and rates[0] < 300_000 - 100  # the second half alone says short
    assert tail.shortfalls(0.25) == (0.0,)


def test_a_shortfall_is_the_smaller_of_the_second_halfs_and_the_last_windows() -> None:
    # short by 1,000/s throughout, by 2,000/s over the last 0.3 s: the second half's deficit is between the two,
    # the last window's 2,000: the smaller is taken
    tail = sampled(lambda t: 299_000.0 if t <= 2.7 else 298_000.0, seconds=3.0)
    short = tail.shortfalls(0.25)
    assert short is not None and 1000.0 < short[0] < 2000.0 - 100


def test_a_latency_rise_shows_no_shortfall_once_the_frames_flow_again() -> None:
    # the DUT holds 1 ms of frames more from 2 s on (300 frames, delivered later): forwarding dips once, then is
    # the rate again: nothing held over the last window
    tail = sampled(lambda t: 0.0 if 2.0 < t <= 2.001 else 300_000.0, seconds=3.0)
    assert tail.shortfalls(0.25) == (0.0,)


@pytest.mark.parametrize(("seconds", "told"), [(0.1 + 2 * MIN_TAIL_SAMPLES * SAMPLE_PERIOD, True), (0.15, False)])
def test_a_shortfall_needs_samples_enough_in_the_second_half(seconds: float, told: bool) -> None:
    tail = sampled(lambda t: 299_000.0, seconds=seconds)
    assert (tail.shortfalls(MIN_TAIL_SAMPLES * SAMPLE_PERIOD) is not None) is told


@pytest.mark.parametrize(("samples", "told"), [(MIN_TAIL_SAMPLES, True), (MIN_TAIL_SAMPLES - 1, False)])
def test_a_shortfall_needs_samples_enough_in_the_last_window(samples: int, told: bool) -> None:
    # a 3 s trial: its second half holds plenty; a window of fewer than MIN_TAIL_SAMPLES samples tells nothing
    tail = sampled(lambda t: 299_000.0, seconds=3.0)
    assert (tail.shortfalls((samples - 0.5) * SAMPLE_PERIOD) is not None) is told


@pytest.mark.parametrize(("window", "told"), [(4 * 0.125, True), (4 * 0.125 - 1e-9, False)])
def test_the_last_window_holds_the_sample_exactly_one_window_before_the_end(window: float, told: bool) -> None:
    # samples every 0.125 s (times exact in binary) of a 4 s sending, 1,000/s short: the last sample within the
    # sending is at 4 s, so a window of 0.5 s holds those at 3.5, 3.625, ..., 4 s: MIN_TAIL_SAMPLES, both ends in
    tail = TailRate(1)
    for k in range(1, 33):
        tail.observe(k * 0.125, [300_000 * k // 8], [299_000 * k // 8])
    tail.observe(33 * 0.125, [300_000 * 33 // 8], [299_000 * 33 // 8])  # the sending ended between these two
    tail.observe(34 * 0.125, [300_000 * 33 // 8], [299_000 * 33 // 8])
    assert MIN_TAIL_SAMPLES == 5
    short = tail.shortfalls(window)
    assert (short is not None) is told
    if short is not None:
        assert short[0] == pytest.approx(1000.0, abs=1.0)


def test_a_records_loss_is_net_of_the_clumps_and_the_misses_stored_with_it() -> None:
    rec = TrialRecord(
        "p", "throughput", 0, 0, "phase2", 300_000, 300_000,
        {"forward": {"sent": 1000, "received": 900, "valid": 890}}, Verdict.FAIL, "", 0.0, 1.0,
        extra={"deviations": {"forward": {"clump": 30, "missed": 50, "notes": []}}},
    )  # fmt: skip
    assert recorded_net_lost(rec, "forward") == 110 - 80
    assert recorded_net_lost(dataclasses.replace(rec, extra={}), "forward") == 110  # none stored: all the DUT's
    assert recorded_net_lost(rec, "reverse") is None  # no counts in that direction
    over = dataclasses.replace(rec, extra={"deviations": {"forward": {"clump": 100, "missed": 50}}})
    assert recorded_net_lost(over, "forward") == 0  # never below none
    whole = dataclasses.replace(rec, counts={"forward": {"sent": 1000, "received": 1000, "valid": 1000}}, extra={})
    assert recorded_net_lost(whole, "forward") == 0  # a record that lost nothing lost nothing net
