"""A stopped trial whose loss the receive wait brought back is decided from its own draw (natbench.judging.forecast,
judge_stopped; docs/engine.md, "Stopping a failed full trial"): the rest of the full trial would lose what the DUT's
shortfall in the trial's second half adds, with no room counted in its queue. Every comparison on both sides."""

from __future__ import annotations

import pytest

from natbench.judging import STOP_UNDECIDED, forecast, judge_stopped
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, Verdict

F, R = Direction.FORWARD, Direction.REVERSE


def stopped(tail: dict[Direction, float], lost: int = 0, seconds: float = 10.0, **kw: object) -> PhaseResult:
    """A trial at 300,000/s per direction stopped after ``seconds``; ``lost`` frames missing after the receive wait in
    each direction; ``tail``: the second half's forwarding rates."""
    sent = int(300_000 * seconds)
    counts = {d: DirectionCounts(sent, sent - lost, sent - lost) for d in (F, R)}
    return PhaseResult(300_000.0, 300_000.0, seconds, counts, stopped=True, tail_rates=tail, **kw)  # type: ignore[arg-type]


def test_the_forecast_adds_the_shortfall_over_the_rest_of_the_full_trial() -> None:
    # forward short by 5/s: over the 50 s left of a 60 s trial, 250 frames; reverse short by 2/s: 100
    frames, where, tail = forecast(stopped({F: 299_995.0, R: 299_998.0}, lost=3), 60.0, 20.0) or (0, "", 0)
    assert (frames, where, tail) == (3 + 250, "forward", 299_995.0)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (300_000.0, None),  # no shortfall: the DUT forwarded what it was offered (a latency rise held frames back)
        (300_001.0, None),  # more than offered (the queue draining): no shortfall
        (299_995.0, 250.0),  # 5/s short over 10 s: 50 frames, the stop's threshold exactly: counts
        (299_995.01, None),  # just under the threshold over the seconds sent: this shortfall did not make the stop
    ],
)
def test_only_a_shortfall_that_explains_the_stop_is_forecast(tail: float, expected: float | None) -> None:
    got = forecast(stopped({F: tail}), 60.0, 50.0)
    assert (got[0] if got is not None else None) == (pytest.approx(expected) if expected is not None else None)


def test_no_forecast_without_tail_rates_or_after_the_full_duration() -> None:
    assert forecast(stopped({}), 60.0, 1.0) is None
    assert forecast(stopped({F: 299_000.0}, seconds=60.0), 60.0, 1.0) == (0.0, "forward", 299_000.0)  # nothing left


def test_the_forecast_counts_the_loss_net_of_the_testers_own_deviation() -> None:
    phase = stopped({F: 299_990.0}, lost=500, deviations={F: Deviation(missed=400)})
    assert forecast(phase, 60.0, 1.0) == (100 + 10 * 50, "forward", 299_990.0)


@pytest.mark.parametrize(("allowance", "verdict"), [(249.0, Verdict.FAIL), (250.0, Verdict.INVALID)])
def test_a_stop_the_wait_undid_fails_only_when_its_forecast_exceeds_the_allowance(
    allowance: float, verdict: Verdict
) -> None:
    # stopped after 40 s of a 60 s trial; lost 50 after the wait (within the allowance); short 10/s: 400 frames by
    # the stop (it explains it), 200 more over the 20 s left: 250 frames forecast
    phase = stopped({F: 299_990.0, R: 300_000.0}, lost=50, seconds=40.0)
    v, reason = judge_stopped(phase, Verdict.FAIL, "", allowance, margin=0.0, full_seconds=60.0)
    assert v is verdict
    if verdict is Verdict.FAIL:
        assert "forward forwarded 299990/s of 300000/s" in reason and "lose 250 frames" in reason
    else:
        assert reason.startswith(STOP_UNDECIDED)


def test_the_stops_margin_is_part_of_the_threshold_a_shortfall_must_explain() -> None:
    # short 10/s over 10 s: 100 frames; the stop's threshold is allowance + margin
    phase = stopped({F: 299_990.0}, lost=0)
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, margin=100.0, full_seconds=60.0)[0] is Verdict.FAIL
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, margin=101.0, full_seconds=60.0)[0] is Verdict.INVALID


def test_without_the_full_duration_nothing_is_forecast() -> None:
    phase = stopped({F: 299_000.0}, lost=0)
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0)[0] is Verdict.INVALID
    assert judge_stopped(phase, Verdict.FAIL, "", 0.0, full_seconds=60.0)[0] is Verdict.FAIL
