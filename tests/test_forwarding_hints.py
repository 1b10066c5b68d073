"""What a trial tells the fast search about where to look next: the tester's forwarding rate of a trial's second half
(natbench.testers.tailrate) and the metric's estimates built on it (natbench.search.fast.evidence: forwarded_rate,
burst_rate, delivered_rate). The lab half (a real token bucket) is in tests/test_fast_search_lab.py."""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import pytest

from natbench.results import Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.search.fast import FastStep
from natbench.search.fast.evidence import burst_rate, delivered_rate, forwarded_rate, trial_verdict, worst_lost
from natbench.testers.losswatch import SAMPLE_PERIOD
from natbench.testers.tailrate import MAX_SAMPLES, MIN_TAIL_SAMPLES, TailRate


def bucket_trial(rate: float, seconds: float, capacity: float, bucket: float, *, after: int = 10) -> TailRate:
    """A :class:`TailRate` fed the samples of a trial at ``rate`` through a DUT forwarding ``capacity`` behind a
    token bucket of ``bucket`` frames that drops the excess (by t, min(rate t, capacity t + bucket) frames passed),
    ``after`` samples into the receive wait, 1 ms in flight."""
    tr = TailRate(2)
    k = 1
    while True:
        t = k * SAMPLE_PERIOD
        if t > seconds + after * SAMPLE_PERIOD:
            return tr
        sent = math.floor(rate * min(t, seconds))
        passed = max(min(t, seconds) - 0.001, 0.0)  # the frames sent by then have arrived
        valid = min(math.floor(rate * passed), math.floor(capacity * passed + bucket))
        tr.observe(t, [sent, sent], [valid, valid])
        k += 1


def test_the_second_halfs_rate_is_the_capacity_behind_a_bucket() -> None:
    # 25,600/s into 20,000/s behind 1,000 frames: the bucket is spent after 0.18 s; over the second half the DUT
    # forwards its capacity, although the whole second delivered 21,000
    rates = bucket_trial(25_600, 1.0, 20_000, 1_000).rates()
    assert rates is not None and all(abs(r - 20_000) < 50 for r in rates)
    # below the capacity the second half's rate is the offered one
    rates = bucket_trial(15_000, 1.0, 20_000, 1_000).rates()
    assert rates is not None and all(abs(r - 15_000) < 50 for r in rates)


def test_samples_after_the_sending_are_left_out() -> None:
    # the receive wait (counts that no longer grow) and the last sample, taken when the sending ended somewhere
    # before it, would flatten the slope: a long receive wait changes nothing
    short_wait = bucket_trial(25_600, 1.0, 20_000, 1_000, after=1).rates()
    long_wait = bucket_trial(25_600, 1.0, 20_000, 1_000, after=200).rates()
    assert short_wait is not None and long_wait is not None
    assert all(abs(a - b) < 1 for a, b in zip(short_wait, long_wait, strict=True))


def test_a_sending_that_ends_between_two_samples_is_read_up_to_the_last_sample_within_it() -> None:
    # sent and received counts stop 10 ms into a sampling period: the sample after it saw only half a period's
    # frames arrive, and taken into the fit it would read the capacity about 100/s low
    rates = bucket_trial(25_600, 1.01, 20_000, 1_000).rates()
    assert rates is not None and all(abs(r - 20_000) < 30 for r in rates)


def test_a_trial_too_short_to_tell_gives_no_rate() -> None:
    tr = bucket_trial(10_000, SAMPLE_PERIOD * (MIN_TAIL_SAMPLES + 1), 20_000, 0)
    assert tr.rates() is None
    assert TailRate(1).rates() is None  # nothing sampled
    tr = TailRate(1)
    for k in range(1, 50):  # nothing sent yet: no sample counts
        tr.observe(k * SAMPLE_PERIOD, [0], [0])
    assert tr.rates() is None


def test_memory_stays_bounded_on_a_long_trial() -> None:
    # an hour of samples: at most MAX_SAMPLES kept, and the rate still right
    tr = bucket_trial(5_000, 3600.0, 4_000, 1_000, after=2)
    assert len(tr._samples) <= MAX_SAMPLES
    rates = tr.rates()
    assert rates is not None and all(abs(r - 4_000) < 1 for r in rates)


def test_a_sample_needs_every_direction() -> None:
    with pytest.raises(ValueError, match=r"^a sample needs counts for 2 direction\(s\)$"):
        TailRate(2).observe(0.1, [1], [1])
    with pytest.raises(ValueError, match=r"^a sample needs counts for 2 direction\(s\)$"):
        TailRate(2).observe(0.1, [1, 1], [1])
    with pytest.raises(ValueError, match=r"^a tail rate needs at least one direction$"):
        TailRate(0)


def test_the_second_half_runs_from_the_first_sample_that_had_sent_in_every_direction() -> None:
    # samples at 1 .. 9 s, the first with one frame sent in each direction: the sending runs 1 .. 9 s, its second
    # half 5 .. 9 s holds exactly MIN_TAIL_SAMPLES samples (5, 6, 7, 8, 9) and gives the rate
    tr = TailRate(2)
    for k in range(1, 10):
        tr.observe(float(k), [k, 3 * k], [k, 3 * k])  # one frame sent in forward by the first sample
    tr.observe(10.0, [10, 30], [10, 30])
    assert MIN_TAIL_SAMPLES == 5
    assert tr.rates() == pytest.approx((1.0, 3.0))
    # begun one second later (nothing sent by the first sample), the second half 5.5 .. 9 s holds 4: no rate
    late = TailRate(2)
    late.observe(1.0, [0, 3], [0, 3])
    for k in range(2, 10):
        late.observe(float(k), [k, 3 * k], [k, 3 * k])
    late.observe(10.0, [10, 30], [10, 30])
    assert late.rates() is None


def test_counts_that_never_grew_or_a_direction_that_never_sent_give_no_rate() -> None:
    # the sent counts never changed: the end of the sending is not known
    frozen = TailRate(1)
    for k in range(1, 20):
        frozen.observe(k * 0.125, [500], [500])
    assert frozen.rates() is None and frozen.shortfalls(1.0) is None
    # forward's count grew, reverse never sent: no sample of the sending in every direction
    one_sided = TailRate(2)
    for k in range(1, 20):
        one_sided.observe(k * 0.125, [100 * k, 0], [100 * k, 0])
    assert one_sided.rates() is None and one_sided.shortfalls(1.0) is None


def test_samples_whose_times_do_not_vary_give_no_rate() -> None:
    # a clock that did not tick while the counts grew: no slope can be fitted
    tr = TailRate(1)
    for k in range(1, 10):
        tr.observe(2.0, [100 * k], [100 * k])
    assert tr.rates() is None and tr.shortfalls(1.0) is None


def test_a_direction_that_forwarded_nothing_in_the_second_half_has_a_rate_of_exactly_zero() -> None:
    # reverse's valid count stalls at 5,000 from the start while both directions keep sending
    tr = TailRate(2)
    for k in range(1, 12):
        tr.observe(k * SAMPLE_PERIOD, [1000 * k, 1000 * k], [1000 * k, 5000])
    tr.observe(12 * SAMPLE_PERIOD, [12_000, 12_000], [12_000, 5000])
    rates = tr.rates()
    assert rates is not None and rates[0] == pytest.approx(1000 / SAMPLE_PERIOD) and rates[1] == 0.0


def test_up_to_max_samples_every_sample_is_kept() -> None:
    tr = TailRate(1)
    for k in range(1, MAX_SAMPLES + 1):
        tr.observe(float(k), [k], [k])
    assert [x[0] for x in tr._samples] == [float(k) for k in range(1, MAX_SAMPLES + 1)]
    tr.observe(MAX_SAMPLES + 1.0, [MAX_SAMPLES + 1], [MAX_SAMPLES + 1])  # one more: every other one dropped
    assert [x[0] for x in tr._samples] == [float(k) for k in range(1, MAX_SAMPLES + 2, 2)]


def test_the_samples_kept_stay_evenly_spaced_as_a_long_trial_is_thinned() -> None:
    # past MAX_SAMPLES every other sample is dropped and every other later one kept; past it again every fourth:
    # the kept samples always lie on one even grid from the first, so the fit weighs every part of the trial alike
    tr = TailRate(1)
    n = 3 * MAX_SAMPLES
    for k in range(1, n + 1):
        tr.observe(float(k), [k], [k])
        kept = [x[0] for x in tr._samples]
        steps = {b - a for a, b in itertools.pairwise(kept)}
        assert len(kept) <= MAX_SAMPLES and len(steps) <= 1, (k, sorted(steps))
    assert kept[0] == 1.0 and steps == {4.0}  # thinned twice: every fourth sample
    assert kept[-1] == max(t for t in range(1, n + 1) if (t - 1) % 4 == 0)


def record(
    verdict: Verdict, counts: dict[str, tuple[int, int]], seconds: float, kind: str = "phase2", **extra: Any
) -> TrialRecord:
    c = {d: {"sent": s, "received": v, "valid": v} for d, (s, v) in counts.items()}
    return TrialRecord(
        "p", "throughput", 0, 0, kind, 0.0, 0.0, c, verdict, "", 0.0, 1.0, extra={"duration": seconds, **extra}
    )


BOTH = ["forward", "reverse"]


def test_a_full_trial_tells_what_it_forwarded_by_its_count() -> None:
    # 10 s at 20,500 through 20,000 + 1,000 frames: 201,000 valid, 20,100 per second in the worse direction
    rec = record(Verdict.FAIL, {"forward": (205_000, 201_000), "reverse": (205_000, 203_000)}, 10.0)
    assert forwarded_rate(rec, BOTH, 10.0) == pytest.approx(20_100)
    assert burst_rate(rec, BOTH) is None and delivered_rate(rec, BOTH) == pytest.approx(20_100)


def test_a_short_trial_tells_it_with_the_second_halfs_rate_only() -> None:
    # 1 s at 25,600: 20,995 valid, second half 20,000/s. Over 10 s: 20,995 + 9 x 20,000 = 200,995 -> 20,099.5/s
    counts = {"forward": (25_600, 20_995), "reverse": (25_600, 20_995)}
    tails = {"forward": 20_000.0, "reverse": 20_000.0}
    rec = record(Verdict.FAIL, counts, 1.0, tail_rates=tails)
    assert forwarded_rate(rec, BOTH, 10.0) == pytest.approx(20_099.5)
    assert burst_rate(rec, BOTH) == pytest.approx(995) and delivered_rate(rec, BOTH) == pytest.approx(20_995)
    # without the tester's rate a short trial's count over-states a full trial's forwarding: no estimate
    assert forwarded_rate(record(Verdict.FAIL, counts, 1.0), BOTH, 10.0) is None
    assert burst_rate(record(Verdict.FAIL, counts, 1.0), BOTH) is None
    # a stopped full trial (5.5 s of 10) is a shorter one too
    # (20,200/s into 20,000 + 1,000 frames: 111,000 of 111,100 valid, then 4.5 s at 20,000: 201,000 in 10 s)
    stopped = record(Verdict.FAIL, {"forward": (111_100, 111_000)}, 5.5, stopped=True, tail_rates={"forward": 20_000})
    assert forwarded_rate(stopped, ["forward"], 10.0) == pytest.approx(20_100)


def test_a_loss_confined_to_the_first_half_tells_no_capacity() -> None:
    # 10 s at 20,000 with a 1 s outage early on: 180,000 valid, but the second half forwarded all 20,000/s: the
    # estimate is the tail's, not 18,000 (which would send the search ten errors down)
    counts = {"forward": (200_000, 180_000)}
    rec = record(Verdict.FAIL, counts, 10.0, tail_rates={"forward": 20_000.0})
    assert forwarded_rate(rec, ["forward"], 10.0) == pytest.approx(20_000)
    assert forwarded_rate(record(Verdict.FAIL, counts, 10.0), ["forward"], 10.0) == pytest.approx(18_000)  # no tail


def test_only_a_failure_for_the_dut_sake_tells_anything() -> None:
    counts = {"forward": (100_000, 90_000)}
    assert forwarded_rate(record(Verdict.PASS, counts, 10.0), ["forward"], 10.0) is None
    assert forwarded_rate(record(Verdict.INVALID, counts, 10.0), ["forward"], 10.0) is None
    assert forwarded_rate(record(Verdict.FAIL, counts, 10.0, kind="validation"), ["forward"], 10.0) is None
    assert forwarded_rate(record(Verdict.FAIL, counts, 0.0), ["forward"], 10.0) is None
    # no duration stored tells nothing, with the tester's tail rate or for a phase 1 over its own length
    assert forwarded_rate(record(Verdict.FAIL, counts, 0.0, tail_rates={"forward": 9.0}), ["forward"], 10.0) is None
    assert forwarded_rate(record(Verdict.FAIL, counts, 0.0, kind="phase1"), ["forward"], None) is None


def test_a_phase_1_tells_its_own_rate_over_its_own_length() -> None:
    # cps: 10,000 connections at 12,800/s (0.78 s), 7,247 set up: 9,277 per second; the reverse direction of the
    # metric's directions was not sent in a phase 1
    rec = record(Verdict.FAIL, {"forward": (10_000, 7_247)}, 10_000 / 12_800, kind="phase1")
    assert forwarded_rate(rec, BOTH, None) == pytest.approx(7_247 * 12_800 / 10_000)


def test_a_trial_over_99_percent_of_the_full_duration_tells_by_its_count_a_shorter_one_by_the_tail() -> None:
    tails = {"forward": 15_000.0}
    # 9.9 s of 10 (the span of a full trial's frames): its count, 178,200 / 9.9 = 18,000 per second
    at = record(Verdict.FAIL, {"forward": (198_000, 178_200)}, 9.9, tail_rates=tails)
    assert forwarded_rate(at, ["forward"], 10.0) == pytest.approx(18_000)
    # 9.8 s: a shorter trial, the rest of the full one at the tail's rate: 176,400 / 10 + 15,000 x 0.02 = 17,940
    below = record(Verdict.FAIL, {"forward": (196_000, 176_400)}, 9.8, tail_rates=tails)
    assert forwarded_rate(below, ["forward"], 10.0) == pytest.approx(17_940)
    assert forwarded_rate(record(Verdict.FAIL, {"forward": (196_000, 176_400)}, 9.8), ["forward"], 10.0) is None


def test_the_worse_direction_forwarded_less() -> None:
    # a full trial: forward forwarded 18,000 per second, reverse 19,000: a full trial there forwards 18,000
    rec = record(Verdict.FAIL, {"forward": (200_000, 180_000), "reverse": (200_000, 190_000)}, 10.0)
    assert forwarded_rate(rec, BOTH, 10.0) == pytest.approx(18_000)
    assert forwarded_rate(rec, ["reverse"], 10.0) == pytest.approx(19_000)
    assert delivered_rate(rec, BOTH) == pytest.approx(18_000) and delivered_rate(rec, ["reverse"]) == pytest.approx(
        19_000
    )
    assert forwarded_rate(record(Verdict.FAIL, {}, 10.0), BOTH, 10.0) is None  # no counts: nothing to tell
    # a direction the trial did not send, listed first, leaves the other to tell
    only_reverse = record(Verdict.FAIL, {"reverse": (200_000, 190_000)}, 10.0)
    assert forwarded_rate(only_reverse, BOTH, 10.0) == pytest.approx(19_000)
    assert delivered_rate(record(Verdict.FAIL, {}, 10.0), BOTH) is None
    assert delivered_rate(record(Verdict.FAIL, {"forward": (1, 1)}, 0.0), BOTH) is None  # no duration


def test_a_burst_is_what_a_direction_delivered_above_its_tail_never_below_zero_and_needs_every_direction() -> None:
    # 1 s: forward delivered 21,000 over a tail of 20,000 (1,000 above), reverse 19,500 under a tail of 20,000 (0)
    counts = {"forward": (25_000, 21_000), "reverse": (25_000, 19_500)}
    tails = {"forward": 20_000.0, "reverse": 20_000.0}
    assert burst_rate(record(Verdict.FAIL, counts, 1.0, tail_rates=tails), BOTH) == pytest.approx(1000)
    assert burst_rate(record(Verdict.FAIL, counts, 1.0, tail_rates=tails), ["reverse"]) == 0.0
    one_tail = record(Verdict.FAIL, counts, 1.0, tail_rates={"forward": 20_000.0})
    assert burst_rate(one_tail, BOTH) is None and burst_rate(one_tail, ["forward"]) == pytest.approx(1000)
    no_counts = record(Verdict.FAIL, {"forward": (25_000, 21_000)}, 1.0, tail_rates=tails)
    assert burst_rate(no_counts, BOTH) is None  # reverse has a tail but no counts
    assert burst_rate(record(Verdict.FAIL, counts, 0.0, tail_rates=tails), BOTH) is None  # no duration
    assert burst_rate(record(Verdict.FAIL, counts, 1.0, tail_rates=tails), []) is None  # no direction
    # over 2 s: forward delivered 21,000 / 2 = 10,500 per second over a tail of 10,000: 500 above
    slow = record(Verdict.FAIL, counts, 2.0, tail_rates={"forward": 10_000.0, "reverse": 10_000.0})
    assert burst_rate(slow, ["forward"]) == pytest.approx(500)


def test_the_frames_a_trial_lost_are_its_worst_directions_net_of_the_testers_deviation() -> None:
    rec = record(
        Verdict.FAIL, {"forward": (1000, 990), "reverse": (1000, 970)}, 1.0, deviations={"reverse": {"missed": 25}}
    )
    assert worst_lost(rec, BOTH) == 10  # reverse lost 30, 25 of them the tester's own: 5; forward 10
    assert worst_lost(rec, ["reverse"]) == 5
    assert worst_lost(rec, ["forward", "sideways"]) is None  # no counts for one of them: it proves nothing
    assert worst_lost(rec, []) is None


def test_a_short_trial_tells_what_it_delivered_and_its_burst_a_full_one_neither() -> None:
    counts = {"forward": (25_600, 20_995), "reverse": (25_600, 20_995)}
    rec = record(Verdict.FAIL, counts, 1.0, tail_rates={"forward": 20_000.0, "reverse": 20_000.0}, stopped=True)
    short = trial_verdict(rec, FastStep(25_600, 0, 40_000, 0, False), BOTH, 10.0)
    assert (short.verdict, short.lost, short.stopped, short.tester_limited) == (Verdict.FAIL, 4605, True, False)
    assert short.delivered == pytest.approx(20_995) and short.burst == pytest.approx(995)
    assert short.forwarded == pytest.approx(20_099.5)
    full = trial_verdict(rec, FastStep(25_600, 0, 40_000, 0, True), BOTH, 10.0)
    assert (full.delivered, full.burst) == (None, None) and full.forwarded == pytest.approx(20_099.5)
    phase1 = dataclasses.replace(rec, kind="phase1")  # a cps step is never a short trial
    assert trial_verdict(phase1, FastStep(25_600, 0, 40_000, 0, False), BOTH, 10.0).delivered is None
    limited = dataclasses.replace(rec, verdict=Verdict.INVALID, reason="tester could not keep the rate: slow")
    said = trial_verdict(limited, FastStep(25_600, 0, 40_000, 0, False), BOTH, 10.0)
    assert said.tester_limited is True and said.reason == "tester could not keep the rate: slow"  # the record's words


def test_tail_rates_survive_the_json_round_trip() -> None:
    res = PhaseResult(
        intended_rate=1.0,
        achieved_rate=1.0,
        duration=1.0,
        counts={Direction.FORWARD: DirectionCounts(1, 1, 1)},
        tail_rates={Direction.FORWARD: 19_998.5},
    )
    back = PhaseResult.from_dict(res.to_dict())
    assert back == res and back.to_dict()["tail_rates"] == {"forward": 19_998.5}
    legacy = res.to_dict()
    del legacy["tail_rates"]  # a result stored before the field existed
    assert PhaseResult.from_dict(legacy).tail_rates == {}
