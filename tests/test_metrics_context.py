"""Tests of :meth:`ProcedureContext.record` itself: what a trial record stores of its phase (the responder mode, a
stop) and which rates the repetition remembers as the tester's limits."""

from __future__ import annotations

from typing import Any

from metric_settings import TOLERANCE, build

from natbench.judging import CLUMPS, RATE, judge_phase
from natbench.metrics import ProcedureContext
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1099), PortRange(80, 89), 64, cores=1, name="fake")


def context(records: list[TrialRecord], mode: ResponderMode = ResponderMode.LEARN) -> ProcedureContext[Any]:
    """A forwarding repetition's context over the fakes whose plan obtains the Responder's tuples by ``mode``."""
    dut = FakeDut(FakeModel(forwarding=300_000))
    plan = TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3,
        responder_mode=mode,
    )  # fmt: skip
    resolved, options = build("forwarding", directions="forward", upper=1_000_000, error=100_000, duration=1.0)
    return ProcedureContext(
        FakeTester(dut), dut, POINT, plan, "forwarding", 0, resolved, emit=records.append, sleep=lambda _s: None,
        options=options,
    )  # fmt: skip


def phase(rate: float, sent: int = 1000, valid: int = 1000, **fields: Any) -> PhaseResult:
    """A forward-only phase-2 result at ``rate`` that sent ``sent`` frames and got ``valid`` of them back."""
    counts = {Direction.FORWARD: DirectionCounts(sent, valid, valid)}
    return PhaseResult(rate, fields.pop("achieved_rate", rate), 1.0, counts, **fields)


def judged(ctx: ProcedureContext[Any], result: PhaseResult) -> TrialRecord:
    """Record ``result`` as a phase-2 trial with the verdict and reason the engine's judging gives it."""
    verdict, reason = judge_phase(result, ctx.acceptance, TOLERANCE)
    return ctx.record("phase2", result, verdict, reason, 0.0)


def test_a_trial_records_the_testers_own_responder_mode_else_the_plans() -> None:
    """The mode is stored with every traffic trial: what the tester says it used wins over what the plan asked."""
    records: list[TrialRecord] = []
    ctx = context(records, ResponderMode.COMPUTE)
    said = ctx.record("phase2", phase(1000.0, responder_mode="read"), Verdict.PASS, "", 0.0)
    assert said.extra["responder_mode"] == "read"
    silent = ctx.record("phase2", phase(1000.0, responder_mode=None), Verdict.PASS, "", 0.0)
    assert silent.extra["responder_mode"] == "compute"
    empty = ctx.record("phase2", phase(1000.0, responder_mode=""), Verdict.PASS, "", 0.0)
    assert empty.extra["responder_mode"] == "compute"
    no_traffic = ctx.record("flush", None, Verdict.PASS, "", 0.0)
    assert "responder_mode" not in no_traffic.extra
    assert records == [said, silent, empty, no_traffic]  # each emitted as it was recorded, numbered in turn
    assert [r.step for r in records] == [0, 1, 2, 3] and ctx.step == 4


def test_a_stopped_trial_is_marked_and_a_full_one_is_not() -> None:
    records: list[TrialRecord] = []
    ctx = context(records)
    stopped = ctx.record("phase2", phase(1000.0, sent=300, valid=200, stopped=True), Verdict.FAIL, "loss", 0.0)
    assert stopped.extra["stopped"] is True
    full = ctx.record("phase2", phase(1000.0), Verdict.PASS, "", 0.0)
    assert "stopped" not in full.extra


def test_only_trials_invalid_because_of_the_tester_at_a_rate_are_remembered_as_its_limits() -> None:
    """``tester_limits`` maps every rate > 0 whose trial the tester spoiled to why (its rate or its clumps); a trial
    that passed, failed, or was invalid for another reason adds nothing, and neither does one that asked no rate."""
    ctx = context([])
    passed = judged(ctx, phase(5000.0))
    assert passed.verdict is Verdict.PASS and ctx.tester_limits == {}
    failed = judged(ctx, phase(4000.0, valid=500))
    assert failed.verdict is Verdict.FAIL and ctx.tester_limits == {}
    no_counts = ctx.record("phase2", PhaseResult(2000.0, 2000.0, 1.0, {}), Verdict.INVALID, "no counts reported", 0.0)
    assert no_counts.verdict is Verdict.INVALID and ctx.tester_limits == {}
    idle = judged(ctx, phase(0.0, sent=0, valid=0, tester_ok=False, tester_note="send queue full"))
    assert idle.verdict is Verdict.INVALID and ctx.tester_limits == {}  # the tester's, but at no rate
    judged(ctx, phase(1.0, tester_ok=False, tester_note="send queue full"))
    assert ctx.tester_limits == {1.0: RATE}
    judged(ctx, phase(0.25, achieved_rate=0.2))  # fell behind by 20 %
    clumps = judged(ctx, phase(3000.0, valid=990, deviations={Direction.FORWARD: Deviation(clump=20)}))
    assert clumps.verdict is Verdict.INVALID
    assert ctx.tester_limits == {1.0: RATE, 0.25: RATE, 3000.0: CLUMPS}
