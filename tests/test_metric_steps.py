"""The trial steps of the procedures called directly (natbench.metrics.phase2.phase2_step,
natbench.metrics.trial.phase1_step, natbench.metrics.fill): what each hands the tester, how it judges what the tester
reports (a trial the tester stopped early, a short phase within the tester's pacing slack) and what it records.

Against a fake testbed whose tester returns the phase result a test builds."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from metric_settings import build

from natbench.errors import DutError, DutStepFailed, SearchError
from natbench.metrics import ProcedureContext
from natbench.metrics.fill import fill_table
from natbench.metrics.memory import EMPTY_READINGS, READING_GAP
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.trial import count_connections, dut_supports, empty_table, phase1_step, run_traffic
from natbench.plugins import Directions, LossStop, Phase2Options, TrialEvidence
from natbench.results import Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.testing import FakeDut, FakeModel, FakeTester, MemoryFakeDut
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.traffic.plan import ResponderMode
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections


class Rig:
    """A fake DUT set up for the point and a fake tester prepared for it; :meth:`context` builds a step's context
    over them, its records in :attr:`records`."""

    def __init__(
        self,
        dut: FakeDut,
        *,
        mode: ResponderMode = ResponderMode.LEARN,
        src_ports: PortRange = POINT.src_ports,
    ) -> None:
        self.dut = dut
        self.dut.setup(POINT)
        self.tester = FakeTester(self.dut)
        self.plan = TrafficPlan(
            Family.NAT44, AddressPlan.default(Family.NAT44), src_ports, POINT.dst_ports, 64, 3, mode
        )
        self.tester.prepare(self.plan)
        self.records: list[TrialRecord] = []

    def context(
        self, metric: str, defaults: dict[str, Any], settings: dict[str, Any], **hooks: Any
    ) -> ProcedureContext[Any]:
        """The context of a step of ``metric`` (settings: ``defaults`` overridden by ``settings``); a still clock
        and no sleep unless ``hooks`` give them."""
        resolved, options = build(metric, defaults, **settings)
        given: dict[str, Any] = {"emit": self.records.append, "clock": lambda: 0.0, "sleep": lambda _s: None}
        return ProcedureContext(
            tester=self.tester,
            dut=self.dut,
            point=POINT,
            plan=self.plan,
            metric=metric,
            repetition=0,
            settings=resolved,
            options=options,
            **{**given, **hooks},
        )


class Bench(Rig):
    """A fake testbed whose tester's phase 2 returns ``result(rate, duration)`` and remembers what it was asked."""

    def __init__(self, result: Callable[[float, float], PhaseResult], *, slack: float = 0.0) -> None:
        super().__init__(FakeDut(FakeModel(nat=False)))
        self.asked: list[tuple[float, float, Phase2Options]] = []

        def phase2(rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
            self.asked.append((rate, duration, measure))
            return result(rate, duration)

        self.tester.phase2 = phase2  # type: ignore[method-assign]
        self.tester.evidence = lambda: TrialEvidence(stops_failed_trials=True, pacing_slack=slack)  # type: ignore[method-assign]

    def ctx(self, metric: str = "forwarding", **settings: Any) -> ProcedureContext[Any]:
        return self.context(metric, {"duration": 10.0, "upper": 400_000, "error": 1000}, settings)


def both(sent: int, valid: int) -> dict[Direction, DirectionCounts]:
    return {d: DirectionCounts(sent, valid, valid) for d in (Direction.FORWARD, Direction.REVERSE)}


def stopped(sent: int = 1000, valid: int = 1000, short: float = 0.0, seconds: float = 1.0) -> PhaseResult:
    """A trial the tester stopped after ``seconds`` at 1,000 frames/s, ``short`` frames/s forwarded below that."""
    return PhaseResult(
        1000.0,
        1000.0,
        seconds,
        both(sent, valid),
        stopped=True,
        shortfalls={Direction.FORWARD: short} if short else {},
    )


# --- phase 2: a trial the tester stopped early -----------------------------------------------------------------


def test_a_stopped_trial_that_lost_more_than_the_full_trial_may_fails() -> None:
    b = Bench(lambda r, s: stopped(valid=900))  # 100 lost in the first second, the full trial may lose 50
    rec = phase2_step(b.ctx(), None, 1000.0, stop=LossStop(allowance=50.0, margin=10.0))
    assert rec.verdict is Verdict.FAIL
    assert "more than the full trial may lose (50), stopped early" in rec.reason
    assert b.asked[0][2].stop == LossStop(allowance=50.0, margin=10.0)


def test_a_stopped_trial_that_lost_within_the_allowance_is_measured_again() -> None:
    b = Bench(lambda r, s: stopped(valid=960))  # 40 lost, 50 allowed: the stop proved nothing
    rec = phase2_step(b.ctx(), None, 1000.0, stop=LossStop(allowance=50.0, margin=10.0))
    assert rec.verdict is Verdict.INVALID
    assert "(40 frames) is within the full trial's allowance (50)" in rec.reason


def test_a_trial_the_tester_stopped_though_no_stop_was_asked_for_is_invalid() -> None:
    b = Bench(lambda r, s: stopped(valid=900))
    rec = phase2_step(b.ctx(), None, 1000.0)
    assert (rec.verdict, rec.reason) == (
        Verdict.INVALID,
        "the tester ended the trial early, though no stop was asked for",
    )
    assert b.asked[0][2].stop is None


def test_a_stop_forecast_over_the_steps_own_duration_fails_when_the_shortfall_made_the_stop() -> None:
    # no loss after the receive wait, but the DUT forwarded 100/s short for the first second: over the 4 s left of a
    # 5 s step that is 400 frames, more than the 50 allowed; 100 frames short reach the stop's threshold 50 + 50
    b = Bench(lambda r, s: stopped(short=100.0))
    rec = phase2_step(b.ctx(), None, 1000.0, stop=LossStop(allowance=50.0, margin=50.0), duration=5.0)
    assert rec.verdict is Verdict.FAIL
    assert "the full trial would lose 400 frames" in rec.reason
    assert b.asked[0][1] == 5.0


def test_a_shortfall_below_the_stops_threshold_forecasts_nothing() -> None:
    # the threshold is allowance + margin = 50 + 51 > 100 frames short: the shortfall did not make the stop
    b = Bench(lambda r, s: stopped(short=100.0))
    rec = phase2_step(b.ctx(), None, 1000.0, stop=LossStop(allowance=50.0, margin=51.0), duration=5.0)
    assert rec.verdict is Verdict.INVALID
    assert "(0 frames) is within the full trial's allowance (50)" in rec.reason


def test_the_stop_and_tail_rates_reach_the_tester_only_when_asked() -> None:
    b = Bench(lambda r, s: PhaseResult(r, r, s, both(int(r * s), int(r * s))))
    ctx = b.ctx()
    phase2_step(ctx, None, 1000.0)
    phase2_step(ctx, None, 1000.0, tail_rates=True)
    stop = LossStop(allowance=5.0, margin=1.0)
    phase2_step(ctx, None, 1000.0, stop=stop)
    assert [(o.stop, o.tail_rates) for _r, _s, o in b.asked] == [(None, False), (None, True), (stop, False)]


# --- phase 2: the duration and the pacing slack ------------------------------------------------------------------


def test_a_step_runs_for_its_own_duration_or_else_the_metrics() -> None:
    b = Bench(lambda r, s: PhaseResult(r, r, s, both(int(r * s), int(r * s))))
    ctx = b.ctx()
    phase2_step(ctx, None, 1000.0, duration=2.5)
    phase2_step(ctx, None, 1000.0)
    assert [s for _r, s, _o in b.asked] == [2.5, 10.0]


def short_by(behind: float) -> Callable[[float, float], PhaseResult]:
    """A phase whose average rate fell ``behind`` seconds of frames short over its duration."""
    return lambda r, s: PhaseResult(r, r * (s - behind) / s, s, both(int(r * s), int(r * s)))


def test_a_short_phase_within_the_testers_pacing_slack_keeps_its_rate() -> None:
    # 0.05 s behind over 0.5 s is 10 % short: far beyond the rate tolerance, within a 0.1 s pacing slack
    b = Bench(short_by(0.05), slack=0.1)
    rec = phase2_step(b.ctx(), None, 1000.0, duration=0.5)
    assert rec.verdict is Verdict.PASS


def test_a_phase_short_beyond_the_pacing_slack_is_invalid() -> None:
    b = Bench(short_by(0.06), slack=0.05)  # 12 % short over 0.5 s, the slack allows 10 %
    rec = phase2_step(b.ctx(), None, 1000.0, duration=0.5)
    assert rec.verdict is Verdict.INVALID
    assert rec.reason.startswith("tester fell behind")


def test_a_phase_short_beyond_the_rate_tolerance_without_slack_is_invalid() -> None:
    b = Bench(short_by(0.05))  # 10 % short, no slack: the run's rate tolerance alone judges it
    rec = phase2_step(b.ctx(), None, 1000.0, duration=0.5)
    assert rec.verdict is Verdict.INVALID
    assert rec.reason.startswith("tester fell behind")


def test_a_phase_short_within_the_rate_tolerance_keeps_its_rate() -> None:
    b = Bench(short_by(0.005))  # 0.05 % short over 10 s, within the run's 0.1 % tolerance, no slack
    rec = phase2_step(b.ctx(), None, 1000.0)
    assert (rec.verdict, rec.reason) == (Verdict.PASS, "")


def test_a_stopped_trial_the_tester_failed_keeps_the_testers_verdict_and_reason() -> None:
    def failed(r: float, s: float) -> PhaseResult:
        return PhaseResult(1000.0, 1000.0, 1.0, both(1000, 900), stopped=True, tester_ok=False, tester_note="link down")

    b = Bench(failed)
    rec = phase2_step(b.ctx(), None, 1000.0, stop=LossStop(allowance=50.0, margin=10.0))
    assert (rec.verdict, rec.reason) == (Verdict.INVALID, "tester could not keep the rate: link down")


# --- fills: what the DUT's count keeps ---------------------------------------------------------------------------


def fill_ctx(count: int, **settings: Any) -> ProcedureContext[Any]:
    """A throughput context whose DUT counts ``count`` connections after the fill (the point's N is 4,000)."""
    bed = Rig(FakeDut(FakeModel()))
    bed.dut.count_connections = lambda: count  # type: ignore[method-assign]
    defaults = {"duration": 1.0, "upper": 400_000, "error": 1000, "fill_rate": 50_000}
    return bed.context("throughput", defaults, settings, emit=lambda _r: None)


def test_a_fill_the_dut_holds_up_to_the_table_slack_above_n_is_kept() -> None:
    fill = fill_table(fill_ctx(4000 + 64, table_slack=64), 50_000.0, learn=True)
    assert fill.verified and fill.connections == 4000
    assert (fill.record.verdict, fill.record.reason) == (Verdict.PASS, "")


def test_a_fill_the_dut_holds_beyond_the_table_slack_is_repeated_and_named() -> None:
    records: list[TrialRecord] = []
    ctx = dataclasses.replace(fill_ctx(4000 + 65, table_slack=64, max_invalid=0), emit=records.append)
    with pytest.raises(SearchError) as err:
        fill_table(ctx, 50_000.0, learn=True)
    assert "DUT table holds 4065 connections, more than the 4000 frames sent" in str(err.value)
    assert [r.verdict for r in records] == [Verdict.INVALID]


def test_a_fill_the_dut_holds_short_of_n_is_a_table_shortfall() -> None:
    records: list[TrialRecord] = []
    ctx = dataclasses.replace(fill_ctx(3999, max_invalid=0), emit=records.append)
    with pytest.raises(SearchError) as err:
        fill_table(ctx, 50_000.0, learn=True)
    assert "the DUT holds 3999 of the 4000 connections" in str(err.value)
    assert [(r.verdict, r.extra.get("fail_cause")) for r in records] == [(Verdict.INVALID, "table_shortfall")]


# --- phase-1 steps: the emptying, the announcement, the pacing ------------------------------------


class Phase1Bench(Rig):
    """A fake testbed for :func:`~natbench.metrics.trial.phase1_step`: the fake tester's phase 1 (or ``result(rate)``
    when given, leaving the DUT with the frames that arrived), the records and the announcements it makes."""

    def __init__(
        self,
        dut: FakeDut | None = None,
        result: Callable[[float], PhaseResult] | None = None,
        *,
        slack: float = 0.0,
        src_ports: PortRange = POINT.src_ports,
    ) -> None:
        super().__init__(dut or FakeDut(FakeModel()), src_ports=src_ports)
        self.announced: list[tuple[str, float | None]] = []
        if result is not None:

            def phase1(rate: float, learn: bool) -> PhaseResult:
                phase = result(rate)
                self.dut.connections = sum(c.valid for c in phase.counts.values())
                return phase

            self.tester.phase1 = phase1  # type: ignore[method-assign]
        self.tester.evidence = lambda: TrialEvidence(stops_failed_trials=True, pacing_slack=slack)  # type: ignore[method-assign]

    def ctx(self, **settings: Any) -> ProcedureContext[Any]:
        return self.context("cps", {"upper": 400_000, "error": 1000}, settings, announce=self.announce)

    def announce(self, what: str, seconds: float | None) -> None:
        self.announced.append((what, seconds))


class ResetFails(FakeDut):
    """A fake DUT whose ``reset_connections`` raises ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(FakeModel())
        self.error = error

    def reset_connections(self) -> None:
        raise self.error


def test_a_reset_that_did_not_do_its_work_ends_the_repetition_with_its_reason() -> None:
    failed = DutStepFailed("exit status 1: conntrack: operation failed", step="reset_connections", dut="d")
    b = Phase1Bench(ResetFails(failed))
    with pytest.raises(SearchError) as err:
        empty_table(b.ctx())
    assert str(err.value) == (
        "emptying the DUT's connection table failed: DUT d: step reset_connections: exit status 1: conntrack:"
        " operation failed"
    )
    assert err.value.__cause__ is failed


def test_a_phase_1_step_whose_reset_failed_sends_no_traffic_and_stores_nothing() -> None:
    b = Phase1Bench(ResetFails(DutStepFailed("timed out", step="reset_connections", dut="d")))
    with pytest.raises(SearchError) as err:
        phase1_step(b.ctx(), 1000.0, learn=False, kind="phase1")
    assert str(err.value) == "emptying the DUT's connection table failed: DUT d: step reset_connections: timed out"
    assert (b.tester.calls, b.records, b.announced) == (0, [], [])


def test_a_dut_that_is_gone_while_emptying_is_no_failed_step_but_a_dut_error() -> None:
    gone = DutError("connection closed", step="reset_connections", dut="d")
    b = Phase1Bench(ResetFails(gone))
    with pytest.raises(DutError) as err:
        empty_table(b.ctx())
    assert err.value is gone  # not wrapped: the run stops (and can be resumed)


@pytest.mark.parametrize(
    ("rate", "what", "seconds"),
    [
        (1000.0, "phase1: 4,000 connections at 1,000/s", 4000 / 1000 + 3.0),
        (1.0, "phase1: 4,000 connections at 1/s", 4000 / 1 + 3.0),  # the slowest whole rate still has a forecast
        (0.0, "phase1: 4,000 connections at 0/s", None),  # no rate: no forecast, no division by zero
    ],
)
def test_a_phase_1_step_announces_its_connections_and_the_seconds_it_will_take(
    rate: float, what: str, seconds: float | None
) -> None:
    b = Phase1Bench()
    rec = phase1_step(b.ctx(timeout=3.0), rate, learn=False, kind="phase1")
    assert b.announced == [(what, seconds)]  # N / rate of traffic, then the receive wait (timeout)
    assert rec.verdict is Verdict.PASS


def test_a_capacity_probe_announces_the_connections_it_names() -> None:
    # the probe prepared the tester with 50 of the point's 200 source ports: 50 x 20 = 1,000 connections
    b = Phase1Bench(src_ports=PortRange(1000, 1049))
    rec = phase1_step(b.ctx(timeout=1.5), 2000.0, learn=False, kind="capacity", extra={"connections": 1000})
    assert b.announced == [("capacity: 1,000 connections at 2,000/s", 1000 / 2000 + 1.5)]
    assert (rec.verdict, rec.extra["connections"], rec.extra["dut_connections"]) == (Verdict.PASS, 1000, 1000)


def phase1_short_by(behind: float) -> Callable[[float], PhaseResult]:
    """A phase 1 of the point's 4,000 connections at ``rate`` whose average rate fell ``behind`` seconds of frames
    short over its duration; every frame arrived."""

    def result(rate: float) -> PhaseResult:
        seconds = 4000 / rate
        return PhaseResult(
            rate, rate * (seconds - behind) / seconds, seconds, {Direction.FORWARD: DirectionCounts(4000, 4000, 4000)}
        )

    return result


@pytest.mark.parametrize(
    ("behind", "slack", "verdict"),
    [
        (0.05, 0.1, Verdict.PASS),  # 10 % short over 0.5 s: far beyond the rate tolerance, within the pacing slack
        (0.06, 0.05, Verdict.INVALID),  # 12 % short, the slack allows 10 %
        (0.0004, 0.0, Verdict.PASS),  # 0.08 % short, no slack: within the run's 0.1 % rate tolerance
        (0.0006, 0.0, Verdict.INVALID),  # 0.12 % short, no slack: beyond it
    ],
)
def test_a_phase_1_step_keeps_its_rate_within_the_rate_tolerance_or_the_testers_pacing_slack(
    behind: float, slack: float, verdict: Verdict
) -> None:
    b = Phase1Bench(result=phase1_short_by(behind), slack=slack)
    rec = phase1_step(b.ctx(), 8000.0, learn=False, kind="phase1")  # 4,000 connections in 0.5 s
    assert rec.verdict is verdict
    assert rec.reason.startswith("tester fell behind") if verdict is Verdict.INVALID else rec.reason == ""


# --- phase 2 on a filled table: the Filler -----------------------------------------------------------------------


class Table(Rig):
    """A fake NAT of the point's 4,000 connections whose table phase-2 steps run on, with a clock the fake moves on:
    a fill's phase 1 takes ``fill_seconds``, a listing of the DUT's mappings ``list_seconds``, a sleep its length.
    The options each phase-2 step gave the tester are in :attr:`asked`, the sleeps in :attr:`slept`."""

    def __init__(
        self,
        mode: ResponderMode = ResponderMode.LEARN,
        *,
        dut: FakeDut | None = None,
        fill_seconds: float = 10.0,
        list_seconds: float = 0.0,
        **model: Any,
    ) -> None:
        super().__init__(dut if dut is not None else FakeDut(FakeModel(**model)), mode=mode)
        self.now = 100.0
        self.slept: list[float] = []
        self.asked: list[Phase2Options] = []
        listing, phase1, phase2 = self.dut.mappings, self.tester.phase1, self.tester.phase2

        def timed_listing() -> list[Any]:
            self.now += list_seconds
            return listing()

        def timed_phase1(rate: float, learn: bool) -> PhaseResult:
            res = phase1(rate, learn)
            self.now += fill_seconds
            return res

        def measured(rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
            self.asked.append(measure)
            res = phase2(rate, duration, directions, measure)
            self.now += duration
            return res

        self.dut.mappings = timed_listing  # type: ignore[method-assign]
        self.tester.phase1 = timed_phase1  # type: ignore[method-assign]
        self.tester.phase2 = measured  # type: ignore[method-assign]

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def ctx(self, **settings: Any) -> ProcedureContext[Any]:
        defaults = {"duration": 30.0, "upper": 400_000, "error": 1000, "fill_rate": 50_000, "gap": 0}
        return self.context("throughput", defaults, settings, clock=lambda: self.now, sleep=self.sleep)


def test_a_fill_reads_the_emptied_tables_memory_its_reading_gap_apart_before_the_gap() -> None:
    b = Table(dut=MemoryFakeDut(FakeModel()))
    Filler(b.ctx(gap=5.0)).ensure(30.0)
    assert b.slept == [READING_GAP] * (EMPTY_READINGS - 1) + [5.0]
    fill = [r for r in b.records if r.kind == "fill"]
    assert len(fill) == 1 and fill[0].extra["memory"]["readings"] == EMPTY_READINGS


def test_read_mode_on_a_counting_dut_lists_the_table_after_the_fill_and_the_next_step_says_how_long_it_took() -> None:
    # the count keeps the fill; the Responder's tuples are then listed, 2.5 s by the clock, 110 s after it started
    b = Table(ResponderMode.READ, list_seconds=2.5)
    ctx = b.ctx()
    filler = Filler(ctx)
    first, second = phase2_step(ctx, filler, 1000.0), phase2_step(ctx, filler, 1000.0)
    assert b.dut.events.count("mappings") == 1
    assert filler.mappings is not None and len(filler.mappings) == 4000
    assert [o.mappings for o in b.asked] == [filler.mappings] * 2
    assert first.extra["dut_mappings_read_s"] == 2.5
    assert "dut_mappings_read_s" not in second.extra  # the read is recorded once, by the step after it
    assert [r.kind for r in b.records] == ["fill", "phase2", "phase2"]


def test_read_mode_on_a_dut_that_cannot_count_keeps_the_listing_the_fill_was_judged_by() -> None:
    # the fill lists the table to verify itself and records how long that took; nothing is listed twice
    b = Table(ResponderMode.READ, list_seconds=2.5, can_count=False)
    ctx = b.ctx()
    filler = Filler(ctx)
    rec = phase2_step(ctx, filler, 1000.0)
    assert b.dut.events.count("mappings") == 1
    assert b.records[0].extra["dut_mappings_read_s"] == 2.5
    assert "dut_mappings_read_s" not in rec.extra
    assert filler.mappings is not None and len(filler.mappings) == 4000
    assert b.asked[0].mappings == filler.mappings


def test_learn_mode_reads_no_mappings_and_its_steps_record_no_read() -> None:
    b = Table(ResponderMode.LEARN, list_seconds=2.5)
    ctx = b.ctx()
    filler = Filler(ctx)
    rec = phase2_step(ctx, filler, 1000.0)
    assert "mappings" not in b.dut.events
    assert filler.mappings is None and b.asked[0].mappings is None
    assert "dut_mappings_read_s" not in rec.extra
    assert rec.extra["since_fill"] == 10.0  # the fill began 10 s before the step


def test_a_fill_leaves_room_for_a_step_that_ends_exactly_at_the_limit_and_not_for_one_past_it() -> None:
    # fill 10 s + gap 5 s, then a 30 s step and its 2 s receive wait end 47 s after the fill began
    b = Table()
    filler = Filler(b.ctx(gap=5.0, refill_after=47.0))
    filler.ensure(30.0)
    assert filler.since_fill() == 15.0
    b = Table()
    filler = Filler(b.ctx(gap=5.0, refill_after=46.5))
    with pytest.raises(SearchError) as err:
        filler.ensure(30.0)
    assert str(err.value) == (
        "a phase-2 step of 30 s + 2 s receive wait would end 47 s after the fill began, past the refill_after limit "
        "of 46.5 s: connections would expire during the step; fill faster, shorten gap or duration, or raise the "
        "DUT's timeout"
    )


def test_a_step_that_ends_exactly_at_the_limit_runs_on_the_same_fill_and_one_past_it_refills() -> None:
    b = Table()
    filler = Filler(b.ctx(refill_after=100.0))
    filler.ensure(30.0)  # the fill began at 100 and ended at 110
    b.now = 168.0  # 68 s after the fill began: the step would end at 68 + 30 + 2 = 100 s, the limit
    filler.ensure(30.0)
    assert [r.kind for r in b.records] == ["fill"]
    b.now = 168.5  # it would end 0.5 s past the limit: fill again first
    filler.ensure(30.0)
    assert [r.kind for r in b.records] == ["fill", "fill"]
    assert filler.since_fill() == 10.0


def test_a_latency_step_asks_for_tagged_frames_at_its_rate_with_the_runs_selection_and_the_duts_tuples() -> None:
    b = Table(ResponderMode.READ)
    ctx = b.ctx(selection="fixed")
    filler = Filler(ctx)
    phase2_step(ctx, filler, 1000.0, tagged_rate=250.0)
    listed = tuple(b.dut.mappings())
    assert b.asked == [Phase2Options(latency=True, latency_rate=250.0, selection="fixed", mappings=listed)]


def test_a_steps_own_measurement_gets_the_runs_selection_and_the_duts_tuples() -> None:
    b = Table(ResponderMode.READ)
    ctx = b.ctx(selection="fixed")
    filler = Filler(ctx)
    phase2_step(ctx, filler, 1000.0, measure=Phase2Options(all_delays=True, selection="linear"))
    listed = tuple(b.dut.mappings())
    assert b.asked == [Phase2Options(all_delays=True, selection="fixed", mappings=listed)]


def test_the_table_may_change_by_the_table_drift_during_a_step_and_one_connection_more_makes_it_invalid() -> None:
    b = Table()
    filler = Filler(b.ctx(table_drift=2))
    filler.ensure(30.0)
    assert filler.filled == 4000
    for count, verdict, reason in [
        (4002, Verdict.PASS, ""),
        (3998, Verdict.PASS, ""),
        (4003, Verdict.INVALID, "DUT table changed from 4000 to 4003 connections during phase 2"),
        (3997, Verdict.INVALID, "DUT table changed from 4000 to 3997 connections during phase 2"),
    ]:
        filler.needed = False
        b.dut.count_connections = lambda c=count: c  # type: ignore[method-assign]
        extra: dict[str, Any] = {}
        assert filler.after(Verdict.PASS, "", extra) == (verdict, reason)
        assert extra["dut_connections"] == count
        assert filler.needed is (verdict is Verdict.INVALID)  # a changed table is refilled before the next step


def test_an_invalid_step_that_changed_the_table_keeps_its_own_reason_and_is_refilled() -> None:
    b = Table()
    filler = Filler(b.ctx())
    filler.ensure(30.0)
    b.dut.count_connections = lambda: 4100  # type: ignore[method-assign]
    assert filler.after(Verdict.INVALID, "tester fell behind", {}) == (Verdict.INVALID, "tester fell behind")
    assert filler.needed


@pytest.mark.parametrize(("verdict", "refill"), [(Verdict.FAIL, True), (Verdict.PASS, False), (Verdict.INVALID, False)])
def test_a_dut_that_cannot_count_is_refilled_after_a_failed_step_only(verdict: Verdict, refill: bool) -> None:
    b = Table(can_count=False)
    filler = Filler(b.ctx())
    filler.ensure(30.0)
    extra: dict[str, Any] = {}
    assert filler.after(verdict, "why", extra) == (verdict, "why")
    assert filler.needed is refill and "dut_connections" not in extra


def test_refill_always_fills_before_every_step_and_auto_only_when_needed() -> None:
    for refill, fills in [("always", 2), ("auto", 1)]:
        b = Table()
        ctx = b.ctx(refill=refill)
        filler = Filler(ctx)
        phase2_step(ctx, filler, 1000.0)
        phase2_step(ctx, filler, 1000.0)
        assert [r.kind for r in b.records].count("fill") == fills, refill


def test_without_a_known_timeout_the_guard_is_off_warned_once_and_recorded_by_every_step() -> None:
    b = Table()
    warnings: list[str] = []
    ctx = dataclasses.replace(b.ctx(), warn=warnings.append)
    filler = Filler(ctx)
    assert filler.limit is None
    records = [phase2_step(ctx, filler, 1000.0), phase2_step(ctx, filler, 1000.0)]
    assert [r.extra["timeout_guard"] for r in records] == ["off", "off"]
    assert warnings == [
        "throughput: DUT-timeout guard off: neither refill_after nor the DUT's facts name a connection timeout, so "
        "connections may expire during a search on one fill unnoticed (set refill_after)"
    ]
    b = Table(udp_timeout=300.0)
    ctx = dataclasses.replace(b.ctx(), warn=warnings.append)
    filler = Filler(ctx)
    assert (filler.limit, filler.limit_source) == (300.0, "dut_timeout")
    assert "timeout_guard" not in phase2_step(ctx, filler, 1000.0).extra and len(warnings) == 1


def test_a_step_announces_its_rate_and_duration_and_expects_its_receive_wait_too() -> None:
    b = Bench(lambda r, s: PhaseResult(r, r, s, both(int(r * s), int(r * s))))
    announced: list[tuple[str, float | None]] = []
    ctx = dataclasses.replace(b.ctx(timeout=1.5), announce=lambda what, seconds: announced.append((what, seconds)))
    phase2_step(ctx, None, 12_345.0, duration=2.5, kind="latency")
    assert announced == [("latency: 12,345 frames/s per direction for 2.5 s", 4.0)]


def test_a_direction_the_tester_reported_no_counts_for_makes_the_step_invalid() -> None:
    b = Bench(lambda r, s: PhaseResult(r, r, s, {Direction.FORWARD: DirectionCounts(1000, 1000, 1000)}))
    rec = phase2_step(b.ctx(), None, 1000.0)
    assert (rec.verdict, rec.reason) == (Verdict.INVALID, "the tester reported no counts for reverse")


def test_a_steps_value_is_its_worst_directions_loss_ratio() -> None:
    counts = {Direction.FORWARD: DirectionCounts(1000, 990, 990), Direction.REVERSE: DirectionCounts(1000, 970, 970)}
    b = Bench(lambda r, s: PhaseResult(r, r, s, counts))
    rec = phase2_step(b.ctx(), None, 1000.0, lower=500.0, upper=2000.0)
    assert rec.value == pytest.approx(0.03)
    assert (rec.lower, rec.upper, rec.verdict) == (500.0, 2000.0, Verdict.FAIL)


# --- what a step asks of the DUT: its monitor, what it says it supports, its count ----------------------------------
class Unmonitored(FakeDut):
    """A DUT whose monitor took no samples (it started too late, or the trial was shorter than one interval)."""

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        self.events.append("stopped")
        return {}


class Silent:
    """A DUT without the optional ReportsSupport hook (nothing to ask): every operation is assumed available."""


class Asked(FakeDut):
    """A fake DUT that remembers every count it was asked for."""

    def __init__(self, model: FakeModel) -> None:
        super().__init__(model)
        self.counted = 0

    def count_connections(self) -> int:
        self.counted += 1
        return super().count_connections()


def test_a_monitor_that_took_samples_gives_its_columns_and_one_that_took_none_gives_nothing() -> None:
    sampled = Phase1Bench()
    phase, mon = run_traffic(sampled.ctx(monitor_interval=0.5), lambda: sampled.tester.phase1(1000.0, False))
    assert phase.counts and set(mon) == {"monitor"}
    quiet = Phase1Bench(Unmonitored(FakeModel()))
    phase, mon = run_traffic(quiet.ctx(monitor_interval=0.5), lambda: quiet.tester.phase1(1000.0, False))
    assert phase.counts and mon == {}
    assert quiet.dut.events[-2:] == ["monitor", "stopped"]  # it was started and stopped, and said nothing


def test_a_dut_is_asked_what_it_supports_and_one_without_the_hook_is_assumed_able() -> None:
    assert dut_supports(Silent(), "count_connections") is True  # type: ignore[arg-type]
    assert dut_supports(FakeDut(FakeModel(can_count=False)), "count_connections") is False
    assert dut_supports(FakeDut(FakeModel(can_count=False)), "mappings") is True
    assert dut_supports(FakeDut(FakeModel(can_count=True)), "count_connections") is True


@pytest.mark.parametrize("can_count", [True, False])
def test_the_table_is_counted_only_when_checks_are_on_and_the_dut_says_it_can_count(can_count: bool) -> None:
    dut = Asked(FakeModel(can_count=can_count))
    b = Phase1Bench(dut)
    dut.connections = 1234
    assert count_connections(b.ctx()) == (1234 if can_count else None)
    assert dut.counted == (1 if can_count else 0)  # a DUT that says it cannot count is not asked
    assert count_connections(b.ctx(check_table=False)) is None
    assert dut.counted == (1 if can_count else 0)  # checks off: not asked either
