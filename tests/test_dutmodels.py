"""The DUT models written from the RFC text (natbench.testing.dutmodels) and their tester and DUT on a simulated
clock (natbench.testing.modelled): each behaviour on both sides of its boundary, the stop decided by the real loss
watch exactly as a tester handing it every sample would, and the models driven through natbench's procedures."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from metric_settings import build

from natbench.judging import STOP_UNDECIDED, judge_phase, judge_stopped
from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.plugins import Directions, LossStop, Phase2Options
from natbench.results import Direction, RepetitionResult, TrialRecord, Verdict
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.testing.dutmodels import Behaviour, Drift, TableModel, TesterFlaws, TrialDraw, true_ceiling, watch_stop
from natbench.testing.modelled import SimClock, modelled_pair
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.traffic.plan import ResponderMode
from natbench.workingpoint import WorkingPoint

C = 300_000.0
QUIET = TrialDraw(C, 60.0, ((),))


def _draw(**kw: Any) -> TrialDraw:
    return TrialDraw(**{"ceiling": C, "duration": 60.0, "spikes": ((),), **kw})


# ------------------------------------------------------------------------------------------------ the behaviours
def test_a_queue_holds_the_first_b_frames_of_excess_and_drops_the_rest() -> None:
    b = Behaviour(C, queue=2000)
    # 1,000 frames/s above the ceiling: 2 s fill the queue; nothing is lost by then, all of it is missing
    assert b.lost_by(C + 1000, QUIET, 0, 2.0) == 0
    assert b.missing_by(C + 1000, QUIET, 0, 2.0) == 2000
    assert b.lost_by(C + 1000, QUIET, 0, 2.001) == 1
    assert b.lost_by(C + 1000, QUIET, 0, 60.0) == 58_000
    assert b.lost_by(C, QUIET, 0, 60.0) == b.missing_by(C, QUIET, 0, 60.0) == 0


def test_a_full_trial_passes_up_to_the_ceiling_plus_the_queue_over_its_duration() -> None:
    b = Behaviour(C, queue=2000)
    top = C + 2000 / 60
    assert b.passes_full(top - 0.02, 60.0, 0.0)
    assert not b.passes_full(top + 0.02, 60.0, 0.0)
    assert true_ceiling(b, 60.0, 0.0) == pytest.approx(top, abs=0.02)
    # a 1 s trial passes up to C + B: short trials are optimistic by B / T
    assert true_ceiling(b, 1.0, 0.0) == pytest.approx(C + 2000, abs=1.0)


def test_livelock_forwards_less_the_harder_the_dut_is_offered() -> None:
    b = Behaviour(C, livelock=1.0)
    assert b.forwarded(C, C) == C
    assert b.forwarded(C + 1000, C) == C - 1000
    assert b.forwarded(3 * C, C) == 0.0
    assert Behaviour(C).forwarded(C + 1000, C) == C


def test_the_loss_knee_starts_at_its_share_below_the_ceiling_and_grows_quadratically() -> None:
    b = Behaviour(C, knee=0.02, knee_loss=1e-4)
    start = C * 0.98
    assert b.knee_ratio(start, C) == 0.0
    assert b.knee_ratio(start + 0.5 * C * 0.02, C) == pytest.approx(0.25e-4)
    assert b.knee_ratio(C, C) == b.knee_ratio(2 * C, C) == 1e-4
    assert Behaviour(C, knee=0.02).knee_ratio(C, C) == 0.0  # no loss at the ceiling: no knee


def test_the_start_up_loss_strikes_only_the_first_half_second() -> None:
    b = Behaviour(C, startup_loss=0.001, startup_seconds=0.5)
    assert b.lost_by(C, QUIET, 0, 0.25) == 75
    assert b.lost_by(C, QUIET, 0, 0.5) == b.lost_by(C, QUIET, 0, 60.0) == 150
    # acceptance 0.01 %: a full trial at r may lose 0.006 r frames, the start-up takes 0.0005 r, the excess over the
    # ceiling the rest: 60 (r - C) <= 0.0055 r, r <= 300,027.5 (the truth of 300,027)
    assert true_ceiling(b, 60.0, 1e-4) == pytest.approx(60 * C / (60 - 0.0055), abs=0.1)


def test_a_spike_loses_its_seconds_of_frames_when_it_strikes() -> None:
    b = Behaviour(C, spike_seconds=0.001)
    draw = _draw(spikes=((10.0,),))
    assert b.lost_by(C, draw, 0, 9.99) == 0
    assert b.lost_by(C, draw, 0, 10.0) == 300


def test_the_testers_stall_is_missing_but_not_lost_by_the_dut() -> None:
    b = Behaviour(C)
    draw = _draw(missed_at=0.05, missed=(2000,))
    assert b.missing_by(C, draw, 0, 0.04) == 0
    assert b.missing_by(C, draw, 0, 0.05) == 2000
    assert b.lost_by(C, draw, 0, 60.0) == 0


def test_tester_flaws_stall_in_their_share_of_trials_and_never_miss_more_than_a_second() -> None:
    rng = random.Random(2)
    never, always = TesterFlaws(0.0, 2000), TesterFlaws(1.0, 2000)
    assert {never.missed_frames(rng, C) for _ in range(50)} == {0}
    assert {always.missed_frames(rng, C) for _ in range(50)} == {2000}
    assert always.missed_frames(rng, 500.0) == 500
    tenth = [TesterFlaws(0.1, 2000).missed_frames(rng, C) for _ in range(4000)]
    assert 0.08 < sum(1 for m in tenth if m) / len(tenth) < 0.12


def test_each_trial_draws_its_ceiling_within_the_jitter_band() -> None:
    rng = random.Random(3)
    b = Behaviour(C, jitter=0.01)
    draws = [b.ceiling_at(rng, 1e9, 0.0) for _ in range(2000)]
    assert C * 0.99 <= min(draws) < C * 0.991 and C * 1.009 < max(draws) <= C * 1.01
    assert {Behaviour(C).ceiling_at(rng, 0.0, 0.0) for _ in range(5)} == {C}


def test_the_warm_up_lowers_the_ceiling_at_first_and_fades() -> None:
    rng = random.Random(4)
    b = Behaviour(C, warmup=0.03, warmup_seconds=300.0)
    assert b.ceiling_at(rng, 0.0, 0.0) == pytest.approx(C * 0.97)
    assert b.ceiling_at(rng, 300.0, 0.0) == pytest.approx(C * (1 - 0.03 / math.e))
    assert b.ceiling_at(rng, 1e6, 0.0) == pytest.approx(C)


def test_the_drift_is_stationary_with_its_standard_deviation_and_slow() -> None:
    rng = random.Random(5)
    d = Drift(0.01, 600.0)
    far = [d.at_time(rng, 3600.0 * k) for k in range(3000)]  # readings hours apart: nearly independent
    assert abs(sum(far) / len(far)) < 0.001 and 0.009 < math.sqrt(sum(x * x for x in far) / len(far)) < 0.011
    d.at_time(rng, 0.0)
    first = d.at_time(rng, 1e7)
    assert d.at_time(rng, 1e7 + 1.0) == pytest.approx(first, abs=0.002)  # a second later: about the same
    assert Drift(0.0, 600.0).at_time(rng, 10.0) == 0.0


# --------------------------------------------------------------------------------------------------- the stop
def _every_sample(stop: LossStop, duration: float, sent: Any, missing: list[Any]) -> float | None:
    """What a tester handing the watch every sample decides (FakeTester's loop)."""
    watch = LossWatch(stop, len(missing))
    for k in range(1, math.ceil(duration / SAMPLE_PERIOD)):
        t = k * SAMPLE_PERIOD
        s = sent(t)
        if watch.observe(t, [s] * len(missing), [s - m(t) for m in missing]):
            return t
    return None


@pytest.mark.parametrize("seed", range(40))
def test_the_stop_is_the_one_every_sample_would_give(seed: int) -> None:
    rng = random.Random(seed)
    rate = C + rng.choice([0.0, 5.0, 100.0, 1000.0, 10_000.0])
    b = Behaviour(
        C,
        queue=rng.choice([0, 512, 2000, 10_000]),
        startup_loss=rng.choice([0.0, 0.001]),
        spike_seconds=0.001,
    )
    draw = _draw(
        spikes=(tuple(sorted(rng.random() * 60 for _ in range(rng.randint(0, 3)))), ()),
        missed_at=rng.random() * 0.1,
        missed=(rng.choice([0, 2000]), rng.choice([0, 300])),
    )
    stop = LossStop(allowance=rng.choice([0.0, 1800.0]), margin=rng.choice([64.0, 125.0]), window=0.25)
    duration = rng.choice([1.0, 60.0])
    missing = [lambda t, i=i: b.missing_by(rate, draw, i, t) for i in range(2)]

    def sent(t: float) -> int:
        return math.floor(rate * t)

    assert watch_stop(stop, duration, sent, missing) == _every_sample(stop, duration, sent, missing)


def test_a_queue_is_stopped_on_frames_the_receive_wait_then_delivers() -> None:
    """1,000 frames/s above the ceiling, a 2,000-frame queue: the gap passes the margin over the first sample's (20
    frames) after 0.145 s, at the sample of 0.16 s; the stop follows a window later, at 0.42 s, with nothing lost
    yet; the wait delivers the queue and the stop proves nothing."""
    tester, _dut = modelled_pair(Behaviour(C, queue=2000))
    tester.prepare(_plan())
    stop = LossStop(allowance=0.0, margin=125.0, window=0.25)
    res = tester.phase2(C + 1000, 60.0, Directions.FORWARD, Phase2Options(stop=stop))
    assert res.stopped and res.duration == pytest.approx(0.42)
    c = res.counts[Direction.FORWARD]
    assert c.sent == c.valid == round((C + 1000) * 0.42)
    verdict, reason = judge_phase(res, 0.0, 0.001)
    verdict, reason = judge_stopped(res, verdict, reason, stop.allowance)
    assert verdict is Verdict.INVALID and reason.startswith(STOP_UNDECIDED)


def test_a_stopped_trial_that_overflowed_its_queue_failed() -> None:
    tester, _dut = modelled_pair(Behaviour(C, queue=512))
    tester.prepare(_plan())
    stop = LossStop(allowance=0.0, margin=125.0, window=0.25)
    res = tester.phase2(C + 5000, 60.0, Directions.FORWARD, Phase2Options(stop=stop))
    assert res.stopped
    verdict, reason = judge_stopped(res, *judge_phase(res, 0.0, 0.001), stop.allowance)
    assert verdict is Verdict.FAIL, reason


# ------------------------------------------------------------------------------------------- tester and DUT
POINT = WorkingPoint(0, PortRange(1000, 1099), PortRange(80, 89), 64, cores=1, name="model")


def _plan() -> TrafficPlan:
    return TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=1,
        responder_mode=ResponderMode.COMPUTE,
    )  # fmt: skip


def test_a_phase_2_trial_takes_its_duration_and_the_wait_and_reports_the_second_halfs_rate() -> None:
    clock = SimClock()
    tester, _dut = modelled_pair(Behaviour(C, queue=10_000), sim=clock)
    tester.prepare(_plan())
    tester.set_receive_timeout(2.0)
    res = tester.phase2(C + 1000, 60.0, Directions.BIDIRECTIONAL, Phase2Options(tail_rates=True))
    assert clock.now == pytest.approx(62.0)
    assert not res.stopped
    for d in Direction:
        assert res.counts[d].sent - res.counts[d].valid == 60_000 - 10_000
        assert res.tail_rates[d] == pytest.approx(C, abs=1)  # the queue filled within 10 s: the ceiling alone


def test_the_testers_stall_is_reported_as_its_deviation() -> None:
    tester, _dut = modelled_pair(Behaviour(C), flaws=TesterFlaws(1.0, 2000))
    tester.prepare(_plan())
    res = tester.phase2(C, 1.0, Directions.FORWARD, Phase2Options())
    assert res.counts[Direction.FORWARD].sent - res.counts[Direction.FORWARD].valid == 2000
    assert res.deviations[Direction.FORWARD].missed == 2000
    assert judge_phase(res, 1e-4, 0.001)[0] is Verdict.INVALID  # the tester's stall alone explains the loss


@pytest.mark.parametrize(("reports", "fact"), [(True, 2.0), (False, None)])
def test_the_dut_names_its_timeout_only_when_the_table_reports_it(reports: bool, fact: float | None) -> None:
    _tester, dut = modelled_pair(Behaviour(C), table=TableModel(timeout=2.0, reports_timeout=reports))
    assert dut.facts().get("udp_timeout") == fact
    assert "table_limit" not in dut.facts()


def test_connections_expire_one_by_one_after_their_own_phase_1_frame() -> None:
    """1,000 connections at 1,000/s: connection i is created at i ms and lives 2 s; the count after the phase 1
    and a receive wait of 1.5 s (2.5 s after it began) has lost the first 500."""
    clock = SimClock()
    tester, dut = modelled_pair(Behaviour(C), table=TableModel(timeout=2.0), sim=clock, command_seconds=0.0)
    tester.prepare(_plan())
    tester.set_receive_timeout(1.5)
    tester.phase1(1000.0, learn=True)
    assert dut.alive(1.9) == 1000 and dut.alive(2.0) == 1000 and dut.alive(2.0 + 1e-6) == 999
    assert dut.count_connections() == 500


@pytest.mark.parametrize(("wait", "arrive"), [(0.9, 1000), (1.1, 0)])
def test_a_validation_at_the_phase_1_rate_reaches_all_connections_or_none(wait: float, arrive: int) -> None:
    """Reverse frames at the rate the connections were made in reach them at the same age each: 1 s of phase 1 and
    the wait; within the 2 s timeout all arrive, beyond it none."""
    clock = SimClock()
    tester, _dut = modelled_pair(Behaviour(C), table=TableModel(timeout=2.0), sim=clock, command_seconds=0.0)
    tester.prepare(_plan())
    tester.set_receive_timeout(wait)
    tester.phase1(1000.0, learn=True)
    assert tester.validate(1000.0).counts[Direction.REVERSE].valid == arrive


def test_a_slower_validation_misses_the_connections_it_reaches_too_late() -> None:
    """Reverse frames at half the phase-1 rate: frame i leaves at 1 s + i x 2 ms, its connection expires at i ms +
    1.5 s: frames up to i = 500 arrive."""
    clock = SimClock()
    tester, _dut = modelled_pair(Behaviour(C), table=TableModel(timeout=1.5), sim=clock, command_seconds=0.0)
    tester.prepare(_plan())
    tester.set_receive_timeout(0.0)
    tester.phase1(1000.0, learn=True)
    assert tester.validate(500.0).counts[Direction.REVERSE].valid == 501


# ---------------------------------------------------------------------------------- through natbench's procedures
def _repetitions(
    behaviour: Behaviour, algorithm: str, n: int, records: list[TrialRecord] | None = None, **settings: Any
) -> list[RepetitionResult]:
    clock = SimClock()
    tester, dut = modelled_pair(behaviour, rng=random.Random(1), sim=clock)
    plan = _plan()
    tester.prepare(plan)
    dut.setup(POINT)
    s, options = build(
        "throughput", upper=1_000_000, error=1000, duration=60, short_duration=1, timeout=2, fill_rate=100_000,
        gap=0, algorithm=algorithm, **settings,
    )  # fmt: skip
    out: list[RepetitionResult] = []
    stored: list[TrialRecord] = [] if records is None else records
    for rep in range(n):
        ctx: ProcedureContext[Any] = ProcedureContext(
            tester, dut, POINT, plan, "throughput", rep, s, emit=stored.append, clock=clock, sleep=clock.advance,
            earlier=tuple(out), options=options,
        )  # fmt: skip
        out.append(run_repetition(ctx))
    return out


@pytest.mark.parametrize("algorithm", ["binary", "fast"])
def test_without_jitter_the_searches_report_the_grid_rate_at_or_below_the_truth(algorithm: str) -> None:
    """A queue of 2,000 frames: full trials pass up to 300,033; every repetition reports 300,000."""
    values = [r.value for r in _repetitions(Behaviour(C, queue=2000), algorithm, 3)]
    assert values == [300_000.0] * 3


def test_a_stop_on_a_queue_is_decided_by_the_forecast_and_never_drawn_again() -> None:
    """A queue of 2,000 frames: a full trial one error above the ceiling is stopped while the queue still holds
    frames; the tester's measured deficit (1,000 frames/s) forecast over the full trial breaks the allowance, so the
    stopped trial fails as it stands and no full trial at that rate runs again (no second draw)."""
    records: list[TrialRecord] = []
    results = _repetitions(Behaviour(C, queue=2000), "fast", 2, records=records)
    assert [r.value for r in results] == [300_000.0] * 2
    stopped = [r for r in records if r.extra.get("stopped")]
    assert stopped and all(r.verdict is Verdict.FAIL and r.intended_rate == C + 1000 for r in stopped)
    full_rates = [r.intended_rate for r in records if r.extra.get("search_trial") == "full"]
    assert full_rates.count(C + 1000) == len(stopped)  # each stopped trial is that rate's only full trial
