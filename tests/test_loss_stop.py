"""Stopping a failed full trial (``stop_failed``): when the watch says a running trial has failed
(:class:`~natbench.testers.losswatch.LossWatch`), how a stopped trial is judged
(:func:`~natbench.judging.judge_stopped`), and what the fast search does with it against the fake tester.
The real tester's side runs in tests/test_fast_search_lab.py."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_procedures import Harness

from natbench.judging import STOP_UNDECIDED, judge_phase, judge_stopped
from natbench.plugins import LossStop, evidence_of
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, RepetitionResult, Verdict
from natbench.search.fast import FastStep, ShortFailRule, TrialVerdict, run_fast_search
from natbench.testers.losswatch import LossWatch
from natbench.testing import FakeTester

POLL = 0.02
RATE = 20_000.0


def _feed(watch: LossWatch, seconds: float, lost_by: object, in_flight: int = 30) -> float | None:
    """Samples every POLL s of a trial at RATE per direction (one direction) whose DUT lost ``lost_by(t)`` frames by
    t, with ``in_flight`` frames always on their way; the time of the stop (None: ran to the end)."""
    for k in range(1, round(seconds / POLL) + 1):
        t = k * POLL
        sent = math.floor(RATE * t)
        valid = max(sent - in_flight - int(lost_by(t)), 0)  # type: ignore[operator]
        if watch.observe(t, [sent], [valid]):
            return t
    return None


def _watch(allowance: float = 0, margin: float = 64, window: float = 0.25, directions: int = 1) -> LossWatch:
    return LossWatch(LossStop(allowance=allowance, margin=margin, window=window), directions)


def test_a_dut_that_keeps_up_is_never_stopped() -> None:
    watch = _watch()
    assert _feed(watch, 10.0, lambda t: 0) is None
    assert watch.stopped_at is None


def test_frames_in_flight_that_come_and_go_are_never_taken_for_a_loss() -> None:
    # a send batch of 64 frames counted sent before it is counted received, in every other sample
    watch = _watch()
    for k in range(1, 1000):
        sent = math.floor(RATE * k * POLL)
        assert not watch.observe(k * POLL, [sent], [sent - (64 if k % 2 else 3)])


def test_a_steady_loss_stops_the_trial_once_it_stayed_above_the_margin_for_a_window() -> None:
    # a token bucket of 1,000 frames drained by 200 frames/s of excess: loss from 5 s on, 200 frames/s; 64 frames
    # are missing 0.32 s later, and stay missing
    watch = _watch()
    stopped = _feed(watch, 10.0, lambda t: max(0.0, 200 * (t - 5.0)))
    assert stopped is not None and 5.32 + 0.25 <= stopped <= 5.32 + 0.25 + 2 * POLL
    assert watch.missing[0] > 64
    assert watch.observe(stopped + POLL, [0], [0]) is True  # stopped stays stopped


def test_an_early_loss_that_stays_missing_stops_the_trial_too() -> None:
    # 500 frames lost in the first 0.1 s, none after: the full trial would begin with the same 500 lost frames
    watch = _watch()
    stopped = _feed(watch, 10.0, lambda t: min(t, 0.1) * 5000)
    assert stopped is not None and stopped <= 0.1 + 0.25 + 2 * POLL
    assert watch.missing[0] >= 500 - 5000 * POLL  # less what the first sample already missed (its baseline)


def test_a_gap_that_closes_again_does_not_stop_the_trial() -> None:
    # a queue of 500 frames that fills for 0.2 s and drains again, every second: never 0.25 s above the threshold
    watch = _watch()
    assert _feed(watch, 10.0, lambda t: 500 if (t % 1.0) < 0.2 else 0) is None


def test_the_allowance_must_be_exceeded_by_the_margin_before_the_trial_stops() -> None:
    # acceptance 0.1 % of a 10 s trial at 20,000 frames/s: 200 frames may go; 300 frames/s lost from the start
    watch = _watch(allowance=200)
    stopped = _feed(watch, 10.0, lambda t: 300 * t)
    assert stopped is not None and (200 + 64) / 300 + 0.25 <= stopped <= (200 + 64) / 300 + 0.25 + 3 * POLL
    # a loss that ends within the allowance plus the margin never stops it
    assert _feed(_watch(allowance=200), 10.0, lambda t: min(300 * t, 260)) is None


def test_each_direction_is_watched_on_its_own() -> None:
    watch = _watch(directions=2)
    stopped = None
    for k in range(1, 500):
        t = k * POLL
        sent = math.floor(RATE * t)
        if watch.observe(t, [sent, sent], [sent - 10, sent - 10 - math.floor(400 * t)]):
            stopped = t
            break
    assert stopped is not None and stopped <= 64 / 400 + 0.25 + 3 * POLL
    assert watch.missing[0] == 0 and watch.missing[1] > 64


def test_without_a_margin_one_frame_beyond_the_allowance_stays_missing_long_enough_to_stop() -> None:
    # margin 0 (or below: never less than none): the gap must stay above the allowance alone, by a single frame
    for margin in (0.0, -50.0):
        watch = _watch(allowance=10, margin=margin, window=0.1)
        assert not watch.observe(0.02, [1000], [1000])  # the smallest gap: 0
        times = [0.02 * k for k in range(2, 12)]
        stops = [watch.observe(t, [1000 * k], [1000 * k - 11]) for k, t in enumerate(times, start=2)]
        assert watch.missing == (11,) and any(stops), margin
        assert watch.stopped_at is not None and watch.stopped_at - 0.04 >= 0.1
        # exactly the allowance missing, for as long: never stopped
        within = _watch(allowance=10, margin=margin, window=0.1)
        within.observe(0.02, [1000], [1000])
        assert not any(within.observe(t, [1000 * k], [1000 * k - 10]) for k, t in enumerate(times, start=2))
        assert within.missing == (10,) and within.stopped_at is None


@given(
    loss_rate=st.floats(min_value=0, max_value=5000),
    start=st.floats(min_value=0, max_value=9),
    window=st.sampled_from([0.1, 0.25, 1.0]),
    margin=st.sampled_from([1.0, 64.0, 500.0]),
)
def test_the_watch_stops_only_after_more_than_the_margin_stayed_missing_for_a_window(
    loss_rate: float, start: float, window: float, margin: float
) -> None:
    watch = _watch(margin=margin, window=window)
    stopped = _feed(watch, 10.0, lambda t: loss_rate * max(t - start, 0.0))
    if stopped is not None:  # more than the margin was missing a whole window before the stop
        assert loss_rate * (stopped - window - start) > margin - loss_rate * POLL - 1
    elif loss_rate > 0:  # no stop: the loss never stayed above the margin for a window before the end
        assert loss_rate * (10.0 - window - start) <= margin + loss_rate * 2 * POLL + 1


def test_samples_before_every_direction_began_set_no_baseline() -> None:
    # the watch starts before the data path: a first sample with nothing sent would make every frame in flight
    # (here a standing 500, a DUT with 25 ms of latency at 20,000 frames/s) look missing
    watch = _watch(directions=2)
    assert not watch.observe(0.01, [0, 0], [0, 0]) and not watch.observe(0.02, [400, 0], [0, 0])
    for k in range(2, 500):
        sent = math.floor(RATE * k * POLL)
        assert not watch.observe(k * POLL + 0.02, [sent, sent], [sent - 500, sent - 500])
    assert watch.missing == (0, 0)


def test_nothing_is_missing_before_every_direction_has_sent() -> None:
    watch = _watch(directions=2)
    assert watch.missing == (0, 0)  # no sample yet
    assert not watch.observe(0.02, [0, 500], [0, 0])  # the first direction has not begun: no baseline, no gap
    assert watch.missing == (0, 0)


def test_a_direction_that_sent_its_first_frame_sets_the_baseline() -> None:
    # one frame sent and received: the smallest gap is 0 from then on, so 10 frames short later are 10 missing
    watch = _watch()
    watch.observe(0.02, [1], [1])
    watch.observe(0.04, [100], [90])
    assert watch.missing == (10,)


def test_a_sample_with_the_wrong_number_of_directions_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^a sample needs counts for 2 direction\(s\)$"):
        _watch(directions=2).observe(0.1, [1], [1])
    with pytest.raises(ValueError, match=r"^a sample needs counts for 2 direction\(s\)$"):
        _watch(directions=2).observe(0.1, [1, 1], [1])
    with pytest.raises(ValueError, match=r"^a loss watch needs at least one direction$"):
        _watch(directions=0)


def _stopped(lost: int, *, sent: int = 100_000, explains: int = 0, stopped: bool = True) -> PhaseResult:
    counts = {d: DirectionCounts(sent, sent - lost, sent - lost) for d in (Direction.FORWARD, Direction.REVERSE)}
    dev = {Direction.FORWARD: Deviation(clump=explains)} if explains else {}
    return PhaseResult(20_000, 20_000, sent / 20_000, counts, deviations=dev, stopped=stopped)


def _judge(phase: PhaseResult, acceptance: float, allowance: float | None) -> tuple[Verdict, str]:
    verdict, reason = judge_phase(phase, acceptance, 0.001)
    return judge_stopped(phase, verdict, reason, allowance)


def test_a_stopped_trial_fails_when_it_lost_more_than_the_full_trial_may() -> None:
    verdict, reason = _judge(_stopped(53), 0.0, 0.0)
    assert verdict is Verdict.FAIL
    assert "loss 53/100000 in the first 5 s" in reason and "stopped early" in reason


def test_a_stopped_trial_whose_loss_the_receive_wait_brought_within_the_allowance_proves_nothing() -> None:
    # acceptance 0.1 % of a 10 s trial at 20,000/s: the full trial may lose 200; the first 5 s lost 150 (0.15 %: more
    # than its own share, but a full trial could still pass)
    verdict, reason = _judge(_stopped(150), 0.001, 200.0)
    assert verdict is Verdict.INVALID and reason.startswith(STOP_UNDECIDED)
    assert "(150 frames)" in reason and "(200)" in reason
    # a stop with no loss left at all (a queue the wait drained)
    verdict, reason = _judge(_stopped(0), 0.0, 0.0)
    assert verdict is Verdict.INVALID and reason.startswith(STOP_UNDECIDED)


def test_a_stopped_trial_is_judged_net_of_the_testers_own_deviation() -> None:
    # forward lost 53, a clump explains 53 of them; reverse lost 53 too, unexplained: the reverse loss fails it
    verdict, reason = _judge(_stopped(53, explains=53), 0.0, 0.0)
    assert verdict is Verdict.FAIL and reason.startswith("reverse")
    # a loss the deviations alone explain stays invalid, as for any trial
    phase = PhaseResult(
        20_000,
        20_000,
        5.0,
        {Direction.FORWARD: DirectionCounts(100_000, 99_947, 99_947)},
        deviations={Direction.FORWARD: Deviation(clump=60)},
        stopped=True,
    )
    verdict, reason = _judge(phase, 0.0, 0.0)
    assert verdict is Verdict.INVALID and reason.startswith("tester's own deviation")


def test_a_trial_stopped_though_no_stop_was_asked_for_is_invalid() -> None:
    verdict, reason = _judge(_stopped(53), 0.0, None)
    assert verdict is Verdict.INVALID and "no stop was asked for" in reason


def test_a_trial_that_was_not_stopped_is_judged_as_ever() -> None:
    phase = _stopped(53, stopped=False)
    assert _judge(phase, 0.0, 0.0) == judge_phase(phase, 0.0, 0.001)


def test_the_search_counts_a_stopped_failure_as_a_failed_full_trial_without_a_guard_trial() -> None:
    # full 200k passes, full 300k fails stopped early: the bound rests on that full trial; no guard, no short proof
    seen: list[FastStep] = []

    def trial(s: FastStep) -> TrialVerdict:
        seen.append(s)
        if s.rate <= 200_000:
            return TrialVerdict(Verdict.PASS, lost=0)
        return TrialVerdict(Verdict.FAIL, lost=5, stopped=s.full)

    rule = ShortFailRule(0.0, 10.0, 1.0, full_cost=11.5, short_cost=2.5, probes=10, proofs=0)  # probes don't pay
    out = run_fast_search(trial, lower=0, upper=400_000, error=100_000, seed=250_000, rule=rule)
    assert (out.value, out.upper, out.stopped, out.guard_trials, out.short_bound) == (200_000, 300_000, 1, 0, False)
    assert [(s.rate, s.full) for s in seen] == [(200_000, True), (300_000, True)]


RESULTS: list[RepetitionResult] = []


def _fast_throughput(h: Harness, **settings: object) -> list[tuple[str, float, str, float, bool]]:
    """(short/full, rate, verdict, duration, stopped) of the phase-2 trials of one fast throughput repetition (its
    result is the last in RESULTS)."""
    res = h.run(
        "throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0, **settings
    )
    RESULTS.append(res)
    return [
        (
            str(r.extra.get("search_trial", "-")),
            r.intended_rate,
            str(r.verdict),
            round(float(r.extra["duration"]), 2),
            bool(r.extra.get("stopped")),
        )
        for r in h.records
        if r.kind == "phase2"
    ]


def test_the_fast_search_stops_its_failed_full_trials_and_reports_the_same_rate() -> None:
    # ceiling 290,000: short 300k loses 10,000 frames/s per direction, a small loss, so the guard runs a full trial
    # at 300k; stopped, it ends once more than the margin (100,000 / 2 x 0.25 s = 12,500 frames) stayed missing for
    # 0.25 s: after about 1.5 s. The trials, their verdicts and the result are those without stopping.
    results = {}
    for stops in (False, True):
        h = Harness(forwarding=290_000)
        h.tester.stops = stops
        rows = _fast_throughput(h)
        results[stops] = (rows, h.records[-1])
    plain, stopped = results[False][0], results[True][0]
    assert [r[:3] for r in plain] == [r[:3] for r in stopped]
    assert ("full", 300_000, "fail", 10.0, False) in plain
    full_fails = [r for r in stopped if r[0] == "full" and r[2] == "fail"]
    assert len(full_fails) == 1 and full_fails[0][4] and 1.45 <= full_fails[0][3] <= 1.6
    assert all(not r[4] and r[3] == 10.0 for r in stopped if r[0] == "full" and r[2] == "pass")


def test_no_stop_without_the_testers_hook_or_with_stop_failed_off() -> None:
    h = Harness(forwarding=290_000)
    h.tester.stops = True
    assert evidence_of(h.tester).stops_failed_trials
    assert not any(r[4] for r in _fast_throughput(h, stop_failed=False))
    h = Harness(forwarding=290_000)  # the fake's hook answers False unless told otherwise
    assert not any(r[4] for r in _fast_throughput(h))


def test_a_stop_that_proved_nothing_is_measured_again_in_full() -> None:
    # ceiling 320,000: short 200k and 300k pass, the full trial at 300k confirms. This tester stops it at 0.5 s with
    # nothing lost after the wait (a queue, not a loss): no verdict, so the trial runs again in full, asking no stop
    class QueueingTester(FakeTester):
        asked: list[tuple[float, float, LossStop | None]]

        def phase2(self, rate, duration, directions, measure):  # type: ignore[no-untyped-def]
            self.asked.append((rate, duration, measure.stop))
            result = super().phase2(rate, duration, directions, measure)
            if measure.stop is not None and rate == 300_000:
                part = {d: DirectionCounts(c.sent // 20, c.sent // 20, c.sent // 20) for d, c in result.counts.items()}
                return PhaseResult(rate, rate, 0.5, part, stopped=True)
            return result

    for max_invalid in (3, 0):  # the full trial follows at once: no invalid trial of the search, none spent
        h = Harness(forwarding=320_000)
        h.tester = QueueingTester(h.dut, stops=True)
        h.tester.asked = []
        h.tester.prepare(h.plan)
        rows = _fast_throughput(h, max_invalid=max_invalid)
        assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
            ("short", 200_000, "pass", False),
            ("short", 300_000, "pass", False),
            ("full", 300_000, "invalid", True),
            ("full", 300_000, "pass", False),
        ]
        full_300k = [stop for rate, seconds, stop in h.tester.asked if rate == 300_000 and seconds == 10.0]
        assert full_300k[0] is not None and full_300k[1] is None
        assert next(r.reason for r in h.records if r.verdict is Verdict.INVALID).startswith(STOP_UNDECIDED)
        assert (RESULTS[-1].value, RESULTS[-1].extra["stopped"], RESULTS[-1].extra["invalid"]) == (300_000, 0, 0)


def test_the_software_testers_watch_thread_sets_the_stop_flag_and_says_what_it_saw() -> None:
    """natbench.testers.software.watch's sampling thread, on a watch block this test fills as the C data path
    would: a direction whose gap grows by 2,000 frames a second is stopped about a window after 10 frames went
    missing; the thread then says when it decided and what it saw."""
    import time

    import numpy as np

    from natbench.testers.software.watch import watching

    watch = np.zeros(3, dtype=np.uint64)
    with watching(watch, LossStop(allowance=0, margin=10, window=0.1), 1) as outcome:
        start = time.monotonic()
        while not watch[0] and time.monotonic() - start < 5.0:
            t = time.monotonic() - start
            sent = int(20_000 * t) + 1
            watch[1], watch[2] = sent, max(sent - 3 - int(2_000 * t), 0)
            time.sleep(0.002)
    assert watch[0] == 1
    assert 0.1 <= outcome["stop_decided_s"] < 2.0 and outcome["stop_missing"][0] > 10
    with watching(np.zeros(3, dtype=np.uint64), None, 1) as outcome:
        pass
    assert outcome == {}  # neither a stop nor tail rates asked: nothing sampled
    with watching(np.zeros(3, dtype=np.uint64), None, 1, tails=True) as outcome:
        pass
    assert outcome == {"tail_rates": None}  # nothing sent: no rate


def test_a_stopped_streams_pacing_is_held_to_the_full_trials_allowances() -> None:
    """Stopped after 0.3 s of a 10 s trial at 20,000 frames/s, a stream whose last frame left 8 ms late and that fell
    150 frames behind once is on time for the full trial (1 ms per second of it: 10 ms; stalls up to 200 frames) and
    would not be for a 0.3 s trial of its own."""
    from natbench.testers.software.outcome import Pacing, deviations, rate_check

    pacing = Pacing(rate_tolerance=0.001, lateness_slack=0.0005, max_stall=0.002, catchup=2.0)
    stream = {"sent": 6000, "count": 6000, "first": 0.0, "last": 5999 / 20_000 + 0.008, "max_lag": 150}
    port = {"socket_drops": 0}
    for planned, on_time in ((200_000, True), (6000, False)):
        t = {**stream, "planned": planned}
        ok, notes, _ = rate_check([t], 20_000.0, pacing)
        devs = deviations([Direction.FORWARD], [t], [port], 20_000.0, 0, pacing)
        assert ok is on_time, notes
        assert (Direction.FORWARD not in devs) is on_time, devs
