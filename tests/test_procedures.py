"""Tests of the RFC 9693 procedures against the fake tester and DUT (no sleeping, no sockets)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from metric_settings import TOLERANCE, build
from pydantic import ValidationError

from natbench.errors import DutError, SearchError
from natbench.judging import judge_phase
from natbench.metrics import ProcedureContext
from natbench.metrics.capacity import CapacitySettings
from natbench.metrics.cps import CpsSettings
from natbench.metrics.frame_loss import FrameLossSettings
from natbench.metrics.latency import LatencySettings, PdvSettings, latency_options
from natbench.metrics.registry import run_repetition
from natbench.metrics.teardown import TeardownSettings
from natbench.metrics.throughput import ThroughputSettings
from natbench.metrics.trial import phase1_step
from natbench.metrics.validation import validated_step
from natbench.plugins import Directions, Phase2Options, TrialEvidence
from natbench.results import (
    Deviation,
    Direction,
    DirectionCounts,
    LatencyStats,
    PhaseResult,
    RepetitionResult,
    TrialRecord,
    Verdict,
)
from natbench.testing import FakeDut, FakeModel, FakeTester, with_model
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections
# capacity settings at POINT the engine used to default: start at the point's connections, no limit but the source
# port space (1000-65535: 64,536 ports x 20), stop one source port (20 connections) wide
CAPACITY = {"min_connections": 4000, "max_connections": 1_290_720, "connection_error": 20}


class Harness:
    """One procedure repetition with a fake testbed; records what was emitted."""

    def __init__(self, **model: Any) -> None:
        self.dut = FakeDut(FakeModel(**model))
        self.tester = FakeTester(self.dut)
        self.plan = TrafficPlan(
            Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3
        )
        self.tester.prepare(self.plan)
        self.records: list[TrialRecord] = []
        self.slept: list[float] = []

    def run(
        self,
        metric: str,
        prior: dict[str, list[float]] | None = None,
        *,
        clock: Callable[[], float] = lambda: 0.0,
        repetition: int = 0,
        earlier: Sequence[RepetitionResult] = (),
        unchecked: bool = False,
        **settings: Any,
    ) -> RepetitionResult:
        defaults = {"gap": 0.5, "duration": 1.0, "tag_delay": 0.5, **(CAPACITY if metric == "capacity" else {})}
        resolved, options = build(metric, defaults, unchecked=unchecked, **settings)
        self.records.clear()
        ctx = ProcedureContext(
            tester=self.tester,
            dut=self.dut,
            point=POINT,
            plan=self.plan,
            metric=metric,
            repetition=repetition,
            settings=resolved,
            emit=self.records.append,
            clock=clock,
            sleep=self.slept.append,
            prior=prior or {},
            earlier=earlier,
            options=options,
        )
        return run_repetition(ctx)

    def kinds(self) -> list[str]:
        return [r.kind for r in self.records]


@pytest.mark.parametrize("ceiling", [12_345.0, 200_000.0, 987_654.0])
def test_cps_converges_to_the_fake_ceiling_within_the_error(ceiling: float) -> None:
    h = Harness(cps=ceiling)
    res = h.run("cps", upper=1_000_000, error=1000)
    assert res.unit == "cps"
    assert ceiling - 1000 <= res.value <= ceiling
    assert res.error is not None and res.error <= 1000
    # validation every_step (default): each passing phase 1 is followed by its validation at the same rate
    kinds = [r.kind for r in h.records]
    assert set(kinds) == {"phase1", "validation"}
    for i, r in enumerate(h.records):
        if r.kind == "validation":
            p1 = h.records[i - 1]
            assert (p1.kind, p1.verdict, p1.intended_rate) == ("phase1", Verdict.PASS, r.intended_rate)
    assert kinds.count("validation") == len([r for r in h.records if r.kind == "phase1" and r.verdict is Verdict.PASS])
    assert res.extra["validation"] == "every_step" and res.extra["validated"] is True
    # the table is emptied before every phase 1, and every stored trial carries its bounds
    assert h.dut.events.count("reset") == kinds.count("phase1")
    assert all(r.lower is not None and r.upper is not None for r in h.records)
    assert [r.step for r in h.records] == list(range(len(h.records)))
    passing = [r for r in h.records if r.verdict is Verdict.PASS and r.kind == "phase1"]
    assert passing and all(r.extra["dut_connections"] == POINT.connections for r in passing)


def test_cps_uses_the_acceptance_criterion() -> None:
    # at 0.3 % above the ceiling 0.3 % of the frames are lost: fails strictly, passes with 99 % acceptance
    strict = Harness(cps=100_000).run("cps", upper=200_000, error=100)
    lax = Harness(cps=100_000).run("cps", upper=200_000, error=100, acceptance=0.01)
    assert strict.value <= 100_000 < lax.value <= 101_100


def test_invalid_steps_are_retried_and_not_counted() -> None:
    h = Harness(cps=200_000, invalid_every=3)
    # phase 1 only: every record is then one step's verdict (validation has its own test of retried steps)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=2, validation="off")
    invalid = [r for r in h.records if r.verdict is Verdict.INVALID]
    assert invalid, "the fake should have produced invalid trials"
    assert all("fell behind" in r.reason for r in invalid)
    assert res.extra["invalid"] == len(invalid)
    assert res.extra["steps"] == len(h.records) - len(invalid)
    assert 199_000 <= res.value <= 200_000
    # an invalid trial is retried at the same rate
    for i, r in enumerate(h.records[:-1]):
        if r.verdict is Verdict.INVALID:
            assert h.records[i + 1].intended_rate == r.intended_rate


def test_repetition_with_only_invalid_trials_is_recorded_as_failed() -> None:
    h = Harness(tester_max_rate=1000)  # every step asks more than the tester can send
    res = h.run("cps", lower=2000, upper=1_000_000, error=1000, max_invalid=2)
    assert res.value is None
    assert "the tester could not send at any rate" in res.extra["failed"]
    assert h.records and all(r.verdict is Verdict.INVALID for r in h.records)
    # a DUT-side invalid cause (a table count no test frame explains) still fails after max_invalid retries
    h = Harness()
    surplus_connections(h, 100)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=2)
    assert "3 invalid trials in a row" in res.extra["failed"]
    assert [r.verdict for r in h.records[-3:]] == [Verdict.INVALID] * 3
    assert all("DUT table holds 4100 connections, more than" in r.reason for r in h.records[-3:])
    with pytest.raises(SearchError):
        h.run("cps", lower=2000, upper=1_000_000, error=1000, max_invalid=2, on_search_error="raise")


def surplus_connections(h: Harness, surplus: int) -> None:
    """Let every phase 1 leave ``surplus`` connections more (fewer, when negative) than it created."""

    def and_more(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res: PhaseResult = _orig(rate, learn)
        h.dut.connections += surplus
        return res

    h.tester.phase1 = and_more  # type: ignore[method-assign]


def test_cps_step_fails_when_the_dut_keeps_no_state() -> None:
    """Every frame up to 200,000 cps is forwarded, none is kept: every step fails, none is invalid.

    [0, 1,000,000], error 1,000 (the grid 0, 1,000, ...): 500,000 and 250,000 lose frames (ceiling 200,000);
    125,000, 62,000, 31,000, 15,000, 7,000, 3,000 and 1,000 arrive but leave an empty table; [0, 1,000] is one cell:
    the search ends at its lower bound, 0, with no invalid trial: no rate passed, so no value.
    """
    h = Harness(keeps_state=False)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=1)
    assert res.value is None and res.extra["no_passing_rate"] is True
    assert res.extra["invalid"] == 0 and res.extra["steps"] == 9 == len(h.records)
    assert all(r.verdict is Verdict.FAIL for r in h.records)
    assert [r.extra["fail_cause"] for r in h.records] == ["loss"] * 2 + ["table_shortfall"] * 7
    assert h.records[2].reason == "DUT table holds 0 connections but 4000 phase-1 frames arrived"


def test_cps_without_a_count_command_still_searches() -> None:
    h = Harness(cps=50_000, can_count=False)
    res = h.run("cps", upper=100_000, error=100)
    assert 49_900 <= res.value <= 50_000
    assert all("dut_connections" not in r.extra for r in h.records)
    # the same without the capability hook: NotImplementedError from count_connections is honoured too
    h.dut.supports = lambda op: True  # type: ignore[method-assign]
    res = h.run("cps", upper=100_000, error=100)
    assert 49_900 <= res.value <= 50_000


@pytest.mark.parametrize("directions", list(Directions))
def test_throughput_converges_to_the_forwarding_ceiling(directions: Directions) -> None:
    h = Harness(forwarding=300_000)
    res = h.run("throughput", upper=1_000_000, error=500, fill_rate=50_000, directions=directions)
    assert 299_500 <= res.value <= 300_000
    assert res.extra["all_frames_per_second"] == res.value * len(directions.active)
    assert (res.extra["directions"], res.extra["direction_mode"]) == (len(directions.active), str(directions))
    assert h.kinds()[0] == "fill"
    assert set(h.kinds()[1:]) == {"phase2"}
    # one fill, one gap; the table never changed during phase 2, so no refill
    assert h.kinds().count("fill") == 1
    assert h.slept == [0.5]
    assert {tuple(sorted(r.counts)) for r in h.records if r.kind == "phase2"} == {
        tuple(sorted(str(d) for d in directions.active))
    }


def test_throughput_refill_always_fills_before_every_step() -> None:
    h = Harness()
    h.run("throughput", upper=1_000_000, error=10_000, fill_rate=50_000, refill="always")
    kinds = h.kinds()
    assert kinds[0::2] == ["fill"] * (len(kinds) // 2)
    assert kinds[1::2] == ["phase2"] * (len(kinds) // 2)


def test_throughput_step_that_changes_the_table_is_invalid_and_triggers_a_refill() -> None:
    h = Harness()

    def lose_state(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        h.dut.connections -= 10  # the DUT dropped ten connections right after phase 1
        return res

    h.tester.phase1 = lose_state  # type: ignore[method-assign]
    res = h.run("throughput", upper=1_000_000, error=10_000, fill_rate=50_000, max_invalid=1)
    # the fill itself is not kept (the table holds fewer than N): repeated once (max_invalid 1), then the end
    assert res.value is None
    assert h.kinds() == ["fill", "fill"]
    assert [(r.verdict, r.reason) for r in h.records] == [
        (Verdict.INVALID, "the DUT holds 3990 of the 4000 connections")
    ] * 2
    assert res.extra["failed"] == (
        "filling the table at fill_rate 50000: 2 fills in a row did not leave the 4,000 connections"
        " (last: the DUT holds 3990 of the 4000 connections); lower fill_rate"
    )


def test_throughput_detects_phase2_frames_creating_connections() -> None:
    h = Harness()
    h.run("throughput", upper=1_000_000, error=100_000, fill_rate=50_000, max_invalid=3)
    first_phase2 = h.records[1]
    assert first_phase2.verdict is not Verdict.INVALID
    # now let every phase-2 trial create ten connections (as frames outside the phase-1 tuples would)
    ctx_records = h.records

    def creating_phase2(*args: Any, _orig: Any = h.tester.phase2, **kw: Any) -> PhaseResult:
        res = _orig(*args, **kw)
        h.dut.connections += 10
        return res

    h.tester.phase2 = creating_phase2  # type: ignore[method-assign]
    res = h.run("throughput", upper=1_000_000, error=100_000, fill_rate=50_000, max_invalid=1)
    assert res.value is None
    invalid = [r for r in ctx_records if r.verdict is Verdict.INVALID and r.kind == "phase2"]
    assert invalid and "DUT table changed from 4000 to 4010 connections" in invalid[0].reason
    assert ctx_records[2].kind == "fill"  # refilled before the retry


def test_throughput_needs_a_fill_rate() -> None:
    with pytest.raises(ValidationError) as err:
        Harness().run("throughput", upper=1_000_000, error=1000)
    assert [e["loc"] for e in err.value.errors()] == [("fill_rate",)]


def test_frame_loss_rate_curve_stops_after_two_loss_free_rates() -> None:
    h = Harness(forwarding=500_000)
    rates = (1_000_000, 900_000, 800_000, 700_000, 600_000, 500_000, 400_000, 300_000, 200_000, 100_000)
    res = h.run("frame_loss", rates=rates, fill_rate=50_000)
    curve = res.extra["curve"]
    assert [r for r, _ in curve] == [1_000_000, 900_000, 800_000, 700_000, 600_000, 500_000, 400_000]
    assert curve[0][1] == pytest.approx(0.5)
    assert curve[1][1] == pytest.approx(1 - 5 / 9, abs=1e-6)
    assert [flr for _, flr in curve[-2:]] == [0.0, 0.0]
    assert res.value == pytest.approx(0.5)


def test_frame_loss_at_explicit_rates() -> None:
    h = Harness(forwarding=500_000)
    res = h.run("frame_loss", rates=(800_000, 720_000), fill_rate=50_000, stop_after_zero=0)
    assert [r for r, _ in res.extra["curve"]] == [800_000, 720_000]


def test_frame_loss_walks_from_max_rate_down_in_steps_of_step() -> None:
    """RFC 2544 26.3: 100 % of the maximum, then 10 % less each time until two successive rates lose nothing. The
    forwarding ceiling is 500,000: 1,000,000 ... 600,000 lose, 500,000 and 400,000 do not: the walk ends there."""
    h = Harness(forwarding=500_000)
    res = h.run("frame_loss", max_rate=1_000_000, fill_rate=50_000)
    assert [r for r, _ in res.extra["curve"]] == [1_000_000, 900_000, 800_000, 700_000, 600_000, 500_000, 400_000]
    fine = Harness(forwarding=500_000).run("frame_loss", max_rate=1_000_000, step=0.05, fill_rate=50_000)
    assert [r for r, _ in fine.extra["curve"]][-3:] == [pytest.approx(550_000), 500_000, 450_000]


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"rates": [500_000, 400_000]}, "rates: 500000 to 400000 is a step of 20.0% of the highest rate 500000"),
        ({"max_rate": 500_000, "step": 0.2}, "less than or equal to 0.1"),
        ({}, "give max_rate (and step) or rates"),
        ({"max_rate": 500_000, "rates": [500_000]}, "give max_rate (and step) or rates"),
    ],
)
def test_a_frame_loss_walk_coarser_than_ten_percent_is_refused(settings: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        FrameLossSettings(fill_rate=1000, **settings)


def test_latency_and_pdv_run_at_the_throughput_rate() -> None:
    h = Harness(forwarding=300_000)
    # the median of the throughput repetitions is 300,000 (their mean would be 250,000)
    lat = h.run("latency", prior={"throughput": [350_000.0, 100_000.0, 300_000.0]}, fill_rate=50_000)
    assert lat.extra["rate"] == 300_000.0
    assert h.records[-1].kind == "phase2" and h.records[-1].intended_rate == 300_000
    # the fake's latency at load L = rate / forwarding ceiling is base = 20 us x (1 + 4 L^4), median = base,
    # minimum = base / 2 and 99.9th percentile = 3 x base without loss; at 300,000 of 300,000: L = 1, base = 100 us
    assert lat.unit == "s"
    assert lat.value == pytest.approx(100e-6)
    assert lat.extra["worst_case"] == pytest.approx(300e-6)
    assert lat.extra["per_direction"] == {
        d: {"median": pytest.approx(100e-6), "p99_9": pytest.approx(300e-6)} for d in ("forward", "reverse")
    }
    assert set(h.records[-1].extra["latency"]) == {"forward", "reverse"}
    # what the result stores beside the value: the trial's verdict, the warm-up (the harness's 0.5 s), the tagged
    # frames asked for (RFC 8219's default 500) and the frames timed per direction, as the trial counted them
    assert (lat.extra["verdict"], lat.extra["reason"], lat.extra["tag_delay"], lat.extra["tags_asked"]) == (
        "pass",
        "",
        0.5,
        500,
    )
    assert lat.extra["samples"] == {d: v["samples"] for d, v in h.records[-1].extra["latency"].items()}
    # at 100,000: L = 1/3, base = 20 us x (1 + 4/81) = 20.988 us; PDV = 3 base - base/2 = 2.5 base = 52.469 us
    pdv = h.run("pdv", rate=100_000, fill_rate=50_000)
    assert pdv.extra["rate"] == 100_000
    assert pdv.value == pytest.approx(2.5 * 20e-6 * 85 / 81)
    assert pdv.extra["per_direction"] == {d: pytest.approx(2.5 * 20e-6 * 85 / 81) for d in ("forward", "reverse")}
    # every frame timed (not only the tagged ones), exactly (no histogram error), as many as the trial counted
    assert (pdv.extra["frames"], pdv.extra["error_bound"]) == ({"forward": "all", "reverse": "all"}, 0.0)
    assert pdv.extra["samples"] == {d: v["samples"] for d, v in h.records[-1].extra["latency"].items()}
    missing = h.run("latency", fill_rate=50_000)
    assert missing.value is None and "needs a rate" in missing.extra["failed"]


def test_teardown_rate_arithmetic() -> None:
    h = Harness(flush_empty=0.75, flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000)
    assert h.kinds() == ["fill", "flush_filled", "flush_empty", "flush_empty", "flush_empty"]
    t_n = 0.75 + 4000 * 1e-5
    assert res.extra["filled_delete_s"] == res.extra["T_N"] == pytest.approx(t_n)
    assert res.extra["empty_delete_s"] == res.extra["T_0"] == pytest.approx(0.75)
    assert res.extra["connections"] == 4000
    assert res.extra["deletion_time"] == pytest.approx(4000 * 1e-5)
    assert res.value == pytest.approx(4000 / (t_n - 0.75))  # 100,000 connections per second
    assert res.value == pytest.approx(100_000)
    assert [r.value for r in h.records[1:]] == [pytest.approx(t_n)] + [pytest.approx(0.75)] * 3
    assert res.extra["T_0_spread"] == 0.0  # the fake's empty-table delete takes the same time every time
    assert h.slept == [0.5]


def test_teardown_rejects_a_non_positive_deletion_time() -> None:
    h = Harness(flush_per_connection=0.0)
    res = h.run("teardown", fill_rate=50_000)
    assert res.value is None
    assert res.extra["failed"] == (
        "too few connections to time: deleting 4,000 took 0.5 s, the empty table 0.5 s +- 0 s; use many more"
        " connections (at least 40,000)"
    )


def noisy_empty(h: Harness, empties: list[float]) -> None:
    """The fake DUT's delete-all of an empty table takes these seconds, in turn (a busy machine's noise)."""
    seq = iter(empties)

    def timed_flush(_orig: Any = h.dut.timed_flush) -> float:
        filled = h.dut.connections
        seconds = float(_orig())
        return seconds if filled else next(seq)

    h.dut.timed_flush = timed_flush  # type: ignore[method-assign]


def test_a_deletion_time_within_the_empty_tables_noise_is_too_few_connections_to_time() -> None:
    """The issue's flake: 4,000 connections deleted in 5.56 ms, the empty table 7.72, 5.50 and 6.10 ms (median
    6.10, spread 2.22 ms). T_N - T_0 < 0: no rate; the message says how many connections would stand out: the
    deletion rate seen over the fastest empty-table time, 4,000 / (5.56 - 5.50 ms) = 66.7M/s, is no estimate to
    trust, but even so 4 x 2.22 ms x it = 592,000."""
    h = Harness(flush_empty=0.00556 - 4000 * 1e-9, flush_per_connection=1e-9)
    noisy_empty(h, [0.00772, 0.00550, 0.00610])
    res = h.run("teardown", fill_rate=50_000)
    assert res.value is None
    assert res.extra["failed"].startswith(
        "too few connections to time: deleting 4,000 took 0.00556 s, the empty table 0.0061 s +- 0.0011 s; use at"
        " least "
    )
    assert [r.kind for r in h.records].count("flush_empty") == 3


def test_a_deletion_time_just_inside_the_spread_fails_and_just_outside_passes() -> None:
    """Empty table 10, 12, 14 ms (T_0 12 ms, spread 4 ms). 4,000 connections at 10 us each add 40 ms: T_N - T_0 =
    38 ms > 4 ms: a rate, 4,000 / 0.038 s. At 1 us each (4 ms, T_N = 14 ms): T_N - T_0 = 2 ms <= 4 ms: too few,
    and at the rate seen over the fastest empty time (4,000 / 4 ms = 1M/s) 4 x 4 ms needs 16,000 connections."""
    ok = Harness(flush_empty=0.010, flush_per_connection=1e-5)
    noisy_empty(ok, [0.010, 0.012, 0.014])
    res = ok.run("teardown", fill_rate=50_000)
    assert res.value == pytest.approx(4000 / (0.050 - 0.012))
    assert res.extra["T_0_spread"] == pytest.approx(0.004)
    few = Harness(flush_empty=0.010, flush_per_connection=1e-6)
    noisy_empty(few, [0.010, 0.012, 0.014])
    res = few.run("teardown", fill_rate=50_000)
    assert res.value is None
    assert res.extra["failed"] == (
        "too few connections to time: deleting 4,000 took 0.014 s, the empty table 0.012 s +- 0.002 s; use at least"
        " 16,000 connections"
    )


def test_validation_passes_for_a_stateful_dut_and_fails_for_a_stateless_one() -> None:
    good = Harness()
    res = good.run("validation", rate=100_000)
    assert res.value == 1.0
    assert good.kinds() == ["phase1", "validation"]
    assert good.records[1].counts["reverse"]["sent"] == 4000
    bad = Harness(keeps_state=False)
    res = bad.run("validation", rate=100_000, check_table=False)
    assert res.value == 0.0
    assert bad.records[-1].verdict is Verdict.FAIL


def test_capacity_finds_the_table_limit() -> None:
    h = Harness(cps=200_000, table_limit=37_000)
    res = h.run("capacity", upper=1_000_000, error=5000)
    # C moves in whole source ports of the point's 20 destination ports: 1,850 x 20 = 37,000
    assert res.unit == "conn"
    assert res.value == 37_000
    assert res.error == 20
    stages = [r.extra.get("stage") for r in h.records]
    assert stages[0] == "initial" and "exponential" in stages and "final" in stages
    # every probe step is validated
    assert "validation" in h.kinds()
    # the tester is prepared with the point's own plan again afterwards
    assert h.tester.plan == h.plan


def test_forwarding_baseline_with_a_stateless_dut() -> None:
    h = Harness(nat=False, stateless_forwarding=800_000)
    res = h.run("forwarding", upper=1_000_000, error=1000)
    assert 799_000 <= res.value <= 800_000
    assert "fill" not in h.kinds()
    assert res.extra["table_reset"] is True


def test_forwarding_baseline_on_a_dut_without_a_table() -> None:
    h = Harness(nat=False, stateless_forwarding=800_000)

    def no_reset() -> None:
        raise DutError("recipe linux-forwarding has no reset_connections step", step="reset_connections")

    h.dut.reset_connections = no_reset  # type: ignore[method-assign]
    res = h.run("forwarding", upper=1_000_000, error=1000)
    assert 799_000 <= res.value <= 800_000
    assert res.extra["table_reset"] is False


def test_mlrsearch_adapter_finds_the_throughput() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000)
    res = h.run("throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr")
    assert res.extra["algorithm"] == "mlr"
    assert 295_000 <= res.value <= 300_000


def test_judge_phase() -> None:
    s = (0.001, TOLERANCE)

    def phase(sent: int, valid: int, *, ok: bool = True, achieved: float = 1000.0, received: int | None = None):
        return PhaseResult(
            1000.0,
            achieved,
            1.0,
            {Direction.FORWARD: DirectionCounts(sent, valid if received is None else received, valid)},
            tester_ok=ok,
            tester_note="queue full",
        )

    assert judge_phase(phase(1000, 1000), *s) == (Verdict.PASS, "")
    assert judge_phase(phase(1000, 999), *s)[0] is Verdict.PASS
    assert judge_phase(phase(1000, 998), *s)[0] is Verdict.FAIL
    assert judge_phase(phase(1000, 1000, ok=False), *s) == (
        Verdict.INVALID,
        "tester could not keep the rate: queue full",
    )
    assert judge_phase(phase(1000, 1000, achieved=990.0), *s)[0] is Verdict.INVALID
    assert judge_phase(phase(1000, 1000, received=10), *s)[0] is Verdict.INVALID


def test_settings_from_campaign_shapes() -> None:
    # the campaign's own names reach the procedure; the traffic's acceptance fills in where the metric sets none
    section = {"repetitions": 20, "directions": "forward", "tagged_rate": 500, "fill_rate": "10k"}
    s = LatencySettings.model_validate(section).resolved(0.0001, Directions.BIDIRECTIONAL)
    assert (s.repetitions, s.directions, s.tagged_rate, s.fill_rate, s.acceptance) == (
        20,
        Directions.FORWARD,
        500,
        10_000,
        0.0001,
    )
    with pytest.raises(ValidationError):  # a key that is no setting of the metric is an error, not ignored
        LatencySettings.model_validate({**section, "bogus": 1})


def test_dut_cpu_monitor_is_stored_per_trial_in_columns() -> None:
    h = Harness()
    h.run("throughput", upper=1_000_000, error=100_000, fill_rate=50_000)
    assert "monitor" not in h.dut.events  # off unless asked
    h.run("throughput", upper=1_000_000, error=100_000, fill_rate=50_000, monitor_interval=0.5)
    assert all("monitor" in r.extra for r in h.records)
    mon = h.records[-1].extra["monitor"]["fake"]
    assert mon["interval"] == 0.5
    assert mon["t"] == [0.0, 0.5]
    assert mon["idle"] == {"cpu0": [100.0, 100.0 - 50 * 4000 / 10_000_000], "cpu1": [100.0, 90.0]}
    assert mon["conntrack_objs"] == [0, 4000]


def test_phase2_without_counts_for_an_active_direction_is_invalid() -> None:
    h = Harness()

    def one_sided(rate: float, duration: float, directions: Directions, measure: Any, _orig: Any = h.tester.phase2):
        return _orig(rate, duration, Directions.FORWARD, measure)

    h.tester.phase2 = one_sided  # type: ignore[method-assign]
    res = h.run("throughput", upper=1_000_000, error=100_000, fill_rate=50_000, max_invalid=1)
    assert res.value is None
    phase2 = [r for r in h.records if r.kind == "phase2"]
    assert phase2 and all(r.reason == "the tester reported no counts for reverse" for r in phase2)


@pytest.mark.parametrize(
    ("field", "value"), [("refill", "sometimes"), ("algorithm", "golden"), ("repetitions", 0), ("acceptance", 1.5)]
)
def test_bad_settings_name_their_field(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as err:
        ThroughputSettings(upper=1_000_000, error=1000, fill_rate=50_000, **{field: value})
    assert [e["loc"][0] for e in err.value.errors()] == [field]


def test_refill_after_keeps_every_step_within_the_connection_timeout() -> None:
    h = Harness()
    now = [0.0]

    def phase2(rate: float, duration: float, *a: Any, _orig: Any = h.tester.phase2) -> PhaseResult:
        now[0] += duration  # time passes while traffic runs
        return _orig(rate, duration, *a)

    h.tester.phase2 = phase2  # type: ignore[method-assign]

    def clock() -> float:
        return now[0]

    settings, _options = build(
        "throughput", upper=1_000_000, error=50_000, fill_rate=50_000, gap=0, duration=30, refill_after=100
    )
    ctx = ProcedureContext(
        tester=h.tester,
        dut=h.dut,
        point=POINT,
        plan=h.plan,
        metric="throughput",
        repetition=0,
        settings=settings,
        emit=h.records.append,
        clock=clock,
        sleep=lambda s: None,
    )
    run_repetition(ctx)
    fills = [i for i, r in enumerate(h.records) if r.kind == "fill"]
    assert len(fills) > 1  # refilled on time, though the table never changed
    for i, r in enumerate(h.records):
        if r.kind == "phase2":
            last_fill = h.records[max(f for f in fills if f < i)]
            assert r.ended_at - last_fill.started_at <= 100


# ---------------------------------------------------------------------------- verdicts: loss, direction, rate, table
def counts_phase(
    *counts: tuple[Direction, int, int], intended: float = 1000.0, achieved: float | None = None
) -> PhaseResult:
    """A phase result from (direction, sent, valid) counts; every received frame is valid."""
    return PhaseResult(
        intended,
        intended if achieved is None else achieved,
        1.0,
        {d: DirectionCounts(sent, valid, valid) for d, sent, valid in counts},
    )


def reduced(counts: DirectionCounts, lost: int) -> DirectionCounts:
    """``counts`` with ``lost`` more frames missing."""
    return DirectionCounts(counts.sent, counts.received - lost, counts.valid - lost)


@pytest.mark.parametrize("reverse_first", [False, True])
def test_the_worst_direction_decides_the_verdict(reverse_first: bool) -> None:
    # forward loses nothing, reverse 100 of 1,000 frames (10 %): the trial fails and the reason names reverse
    fwd, rev = (Direction.FORWARD, 1000, 1000), (Direction.REVERSE, 1000, 900)
    phase = counts_phase(rev, fwd) if reverse_first else counts_phase(fwd, rev)
    assert judge_phase(phase, 0.0, TOLERANCE) == (Verdict.FAIL, "reverse loss 100/1000 = 10.000000% > 0.000000%")
    # both lose: forward 2 %, reverse 5 %; the reason reports the worse one
    both = counts_phase((Direction.FORWARD, 1000, 980), (Direction.REVERSE, 1000, 950))
    assert judge_phase(both, 0.0, TOLERANCE) == (Verdict.FAIL, "reverse loss 50/1000 = 5.000000% > 0.000000%")


def test_throughput_is_limited_by_the_direction_that_loses_first() -> None:
    """Both directions forward 400,000 fps, but above 200,000 the reverse direction loses 1 % of its frames."""
    h = Harness(forwarding=400_000)

    def reverse_lossy(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, measure)
        if rate <= 200_000:
            return res
        rev = res.counts[Direction.REVERSE]
        return dataclasses.replace(res, counts={**res.counts, Direction.REVERSE: reduced(rev, rev.sent // 100)})

    h.tester.phase2 = reverse_lossy  # type: ignore[method-assign]
    res = h.run("throughput", upper=1_000_000, error=1000, fill_rate=50_000)
    assert res.value is not None and 199_000 <= res.value <= 200_000
    failed = [r for r in h.records if r.verdict is Verdict.FAIL]
    assert failed and all(r.reason.startswith("reverse loss") for r in failed)


@pytest.mark.parametrize(
    ("valid", "verdict"),
    [(9950, Verdict.FAIL), (9989, Verdict.FAIL), (9990, Verdict.PASS), (9995, Verdict.PASS), (10_000, Verdict.PASS)],
)
def test_a_metrics_acceptance_is_its_loss_limit(valid: int, verdict: Verdict) -> None:
    # acceptance 0.001: of 10,000 frames 10 may be lost (0.1 %), 11 may not; 50 lost (0.5 %) fails, 5 (0.05 %) passes
    assert judge_phase(counts_phase((Direction.FORWARD, 10_000, valid)), 0.001, TOLERANCE)[0] is verdict


def test_an_explicit_acceptance_replaces_the_metrics() -> None:
    # 5 of 10,000 lost (0.05 %) is within the metric's 0.1 % but not within an explicit 0 (validation's limit)
    phase = counts_phase((Direction.FORWARD, 10_000, 9995))
    assert judge_phase(phase, 0.001, TOLERANCE) == (Verdict.PASS, "")
    assert judge_phase(phase, 0.0, TOLERANCE) == (Verdict.FAIL, "forward loss 5/10000 = 0.050000% > 0.000000%")
    # and an explicit 1 % lets 0.5 % pass where the metric's 0 would not
    lossy = counts_phase((Direction.FORWARD, 10_000, 9950))
    assert judge_phase(lossy, 0.01, TOLERANCE) == (Verdict.PASS, "")


def test_validation_needs_every_reverse_frame_whatever_the_metrics_acceptance() -> None:
    h = Harness()

    def one_lost(rate: float, _orig: Any = h.tester.validate) -> PhaseResult:
        res: PhaseResult = _orig(rate)
        return dataclasses.replace(res, counts={Direction.REVERSE: reduced(res.counts[Direction.REVERSE], 1)})

    h.tester.validate = one_lost  # type: ignore[method-assign]
    # 1 of the 4,000 reverse frames lost = 0.025 %: far within the metric's 1 %, yet validation fails
    res = h.run("validation", rate=100_000, acceptance=0.01)
    assert res.value == 0.0
    assert [(r.kind, r.verdict) for r in h.records] == [("phase1", Verdict.PASS), ("validation", Verdict.FAIL)]
    assert h.records[-1].reason == "reverse loss 1/4000 = 0.025000% > 0.000000%"


@pytest.mark.parametrize(
    ("achieved", "verdict"),
    [(99_850.0, Verdict.INVALID), (99_899.0, Verdict.INVALID), (99_900.0, Verdict.PASS), (99_950.0, Verdict.PASS)],
)
def test_the_default_rate_tolerance_is_a_tenth_of_a_percent(achieved: float, verdict: Verdict) -> None:
    # 100,000 fps intended: 99,900 (0.1 % short) still keeps the rate, 99,899 and 99,850 (0.15 % short) do not
    phase = counts_phase((Direction.FORWARD, 1000, 1000), intended=100_000.0, achieved=achieved)
    assert judge_phase(phase, 0.0, TOLERANCE)[0] is verdict
    if achieved == 99_850.0:
        assert judge_phase(phase, 0.0, TOLERANCE)[1] == "tester fell behind: achieved 99850 of 100000 (0.15% short)"


def test_a_rate_the_tester_sends_short_becomes_its_ceiling_after_three_trials() -> None:
    """The DUT passes all; above 100,000 cps the tester sends 0.15 % short (an invalid, tester-limited trial).

    [0, 200,000], error 1,000: 100,000 passes -> [100,000, 200,000]; then 150,000, 125,000, 112,000, 106,000,
    103,000 and 101,000 (grid rates: the middle index, rounded down) are each tried 1 + min(max_invalid 8, tester
    retries 2) = 3 times and become the tester's ceiling; [100,000, 101,000] is one cell: done.
    """
    h = Harness(cps=300_000)

    def short_above_100k(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res: PhaseResult = _orig(rate, learn)
        return res if rate <= 100_000 else dataclasses.replace(res, achieved_rate=rate * 0.9985)

    h.tester.phase1 = short_above_100k  # type: ignore[method-assign]
    res = h.run("cps", upper=200_000, error=1000, max_invalid=8, validation="off")  # phase-1 records only
    too_fast = [150_000, 125_000, 112_000, 106_000, 103_000, 101_000]
    assert [r.intended_rate for r in h.records] == [100_000] + [r for r in too_fast for _ in range(3)]
    assert all(r.reason.startswith("tester fell behind") for r in h.records[1:])
    assert res.value == 100_000
    assert res.extra["tester_bound"] is True and res.extra["at_upper_limit"] is False
    assert res.extra["tester_ceiling"] == 101_000
    assert res.extra["tester_bound_cause"] == "rate"  # the tester could not send faster (not its clumps)
    assert (res.extra["steps"], res.extra["invalid"]) == (1, 18)


@pytest.mark.parametrize("metric", ["throughput", "forwarding"])
def test_a_phase2_search_at_the_testers_ceiling_stores_that_the_tester_could_not_send_faster(metric: str) -> None:
    """As for cps: above 100,000 fps the tester sends 0.15 % short, so those steps are invalid and the third at one
    rate makes it the tester's ceiling; a throughput or forwarding search that ends there stores the cause (its
    rate, not its clumps) beside its value."""
    h = Harness(forwarding=300_000) if metric == "throughput" else Harness(nat=False, stateless_forwarding=300_000)

    def short_above_100k(
        rate: float, duration: float, directions: Directions, options: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, options)
        return res if rate <= 100_000 else dataclasses.replace(res, achieved_rate=rate * 0.9985)

    h.tester.phase2 = short_above_100k  # type: ignore[method-assign]
    extra = {"fill_rate": 50_000} if metric == "throughput" else {}
    res = h.run(metric, upper=200_000, error=1000, max_invalid=8, **extra)
    assert res.value == 100_000
    assert (res.extra["tester_bound"], res.extra["tester_ceiling"]) == (True, 101_000)
    assert res.extra["tester_bound_cause"] == "rate"


@pytest.mark.parametrize("metric", ["cps", "throughput"])
def test_a_search_in_which_no_rate_passed_stores_no_value_but_no_passing_rate(metric: str) -> None:
    """A DUT slower than the search's resolution: every rate tried fails. Bisecting [0, 1,000,000] with error 1,000
    tests 500,000, 250,000, 125,000, 62,000, 31,000, 15,000, 7,000, 3,000 and 1,000 (grid rates), all above the
    DUT's 500, and stops at [0, 1,000]: no rate passed within it. Stored as no value (not 0)."""
    h = Harness(cps=500) if metric == "cps" else Harness(forwarding=500)  # throughput: the fill at 50,000 cps passes
    extra = {"fill_rate": 50_000} if metric == "throughput" else {}
    res = h.run(metric, upper=1_000_000, error=1000, **extra)
    assert res.value is None
    assert res.extra["no_passing_rate"] is True
    assert (res.extra["lower"], res.extra["upper"], res.extra["steps"]) == (0, 1000, 9)
    if metric == "throughput":
        assert res.extra["all_frames_per_second"] is None
    assert "failed" not in res.extra
    # a search that found a rate says so too
    ok = Harness(cps=200_000).run("cps", upper=1_000_000, error=1000)
    assert ok.value is not None and ok.extra["no_passing_rate"] is False


def test_a_dut_faster_than_the_search_range_is_flagged_at_the_upper_limit() -> None:
    h = Harness(cps=1_000_000)
    # the grid 0, 60,000, 100,000; one step: 60,000 passes -> [60,000, 100,000], done. The upper bound never failed:
    # the top cell, 40,000 wide, is the only one narrower than the error
    res = h.run("cps", upper=100_000, error=60_000)
    assert (res.value, res.error) == (60_000, 40_000)
    assert (res.extra["at_upper_limit"], res.extra["tester_bound"], res.extra["tester_ceiling"]) == (True, False, None)
    assert (res.extra["steps"], res.extra["invalid"], res.extra["lower"], res.extra["upper"]) == (1, 0, 60_000, 100_000)


@pytest.mark.parametrize(
    ("slack", "surplus", "verdict"),
    [
        (None, 64, Verdict.PASS),
        (None, 65, Verdict.INVALID),
        (0, 0, Verdict.PASS),
        (0, 1, Verdict.INVALID),
        (None, -1, Verdict.FAIL),
    ],
)
def test_a_table_short_of_the_frames_fails_and_one_beyond_sent_plus_slack_is_invalid(
    slack: int | None, surplus: int, verdict: Verdict
) -> None:
    """4,000 frames sent and arrived; the table must hold from 4,000 up to 4,000 + table_slack (64 by default).

    Fewer: the DUT did not keep connections it forwarded frames for, a FAIL (``fail_cause: table_shortfall``);
    more than sent + slack: a count no test frame explains, INVALID.
    """
    h = Harness(cps=200_000)
    surplus_connections(h, surplus)
    settings: dict[str, Any] = {} if slack is None else {"table_slack": slack}
    # one step: 60,000 (the grid 0, 60,000, 100,000; below the DUT's 200,000) -> [60,000, 100,000]: done
    res = h.run("cps", upper=100_000, error=60_000, max_invalid=0, validation="off", **settings)
    (rec,) = h.records
    assert rec.extra["dut_connections"] == 4000 + surplus
    assert rec.verdict is verdict
    if verdict is Verdict.PASS:
        assert res.value == 60_000
        assert "fail_cause" not in rec.extra
    elif surplus > 0:
        assert res.value is None
        assert rec.reason == f"DUT table holds {4000 + surplus} connections, more than the 4000 frames sent"
        assert "fail_cause" not in rec.extra
    else:
        # the failed step lowers the upper bound: [0, 60,000] is one cell, no rate passed
        assert (res.value, res.extra["upper"], res.extra["invalid"]) == (None, 60_000, 0)
        assert res.extra["no_passing_rate"] is True
        assert rec.reason == "DUT table holds 3999 connections but 4000 phase-1 frames arrived"
        assert rec.extra["fail_cause"] == "table_shortfall"


@pytest.mark.parametrize(
    ("slack", "surplus", "verdict", "reason"),
    [
        (None, 64, Verdict.PASS, ""),
        (None, 65, Verdict.INVALID, "DUT table holds 4065 connections, more than the 4000 frames sent"),
        (0, 0, Verdict.PASS, ""),
        (0, 1, Verdict.INVALID, "DUT table holds 4001 connections, more than the 4000 frames sent"),
        (None, -1, Verdict.FAIL, "DUT table holds 3999 connections but 4000 phase-1 frames arrived"),
    ],
)
def test_a_phase_1_step_records_the_table_count_and_judges_it_against_the_frames(
    slack: int | None, surplus: int, verdict: Verdict, reason: str
) -> None:
    """The same boundaries as one phase-1 step alone (natbench.metrics.trial.phase1_step): the count recorded with
    the step, ``fail_cause: table_shortfall`` only with a table short of the frames that arrived."""
    h = Harness(cps=200_000)
    surplus_connections(h, surplus)
    settings, options = build("cps", upper=100_000, error=60_000, **({} if slack is None else {"table_slack": slack}))
    ctx: ProcedureContext[Any] = ProcedureContext(
        h.tester, h.dut, POINT, h.plan, "cps", 0, settings, emit=h.records.append, options=options
    )
    rec = phase1_step(ctx, 60_000, learn=False, kind="phase1")
    assert (rec.verdict, rec.reason, rec.extra["dut_connections"]) == (verdict, reason, 4000 + surplus)
    assert rec.extra.get("fail_cause") == ("table_shortfall" if verdict is Verdict.FAIL else None)


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        (DirectionCounts(1000, 1001, 1001), "inconsistent forward counts: sent 1000, received 1001, valid 1001"),
        (DirectionCounts(1000, -1, -1), "inconsistent forward counts: sent 1000, received -1, valid -1"),
    ],
)
def test_counts_that_cannot_be_are_invalid(counts: DirectionCounts, reason: str) -> None:
    # more valid frames than sent (duplicates, foreign frames) or negative counts: the trial proves nothing
    phase = PhaseResult(1000.0, 1000.0, 1.0, {Direction.FORWARD: counts})
    assert judge_phase(phase, 0.0, TOLERANCE) == (Verdict.INVALID, reason)
    assert judge_phase(PhaseResult(1000.0, 1000.0, 1.0, {}), 0.0, TOLERANCE) == (
        Verdict.INVALID,
        "no counts reported",
    )


# ---------------------------------------------------------------------------- retries of non-search trials
@pytest.mark.parametrize("max_invalid", [0, 2, 5])
def test_a_fill_that_never_leaves_n_connections_is_tried_max_invalid_plus_one_times(max_invalid: int) -> None:
    """The DUT keeps state for 20,000 new connections per second: a fill at 50,000 leaves 4,000 x 20,000 / 50,000 =
    1,600 of the 4,000 connections, every time."""
    h = Harness(keep_rate=20_000)
    res = h.run("throughput", upper=1_000_000, error=1000, fill_rate=50_000, max_invalid=max_invalid)
    assert h.kinds() == ["fill"] * (max_invalid + 1)
    assert res.value is None
    assert res.extra["failed"] == (
        f"filling the table at fill_rate 50000: {max_invalid + 1} fills in a row did not leave the 4,000"
        " connections (last: the DUT holds 1600 of the 4000 connections); lower fill_rate"
    )


@pytest.mark.parametrize("metric", ["throughput", "teardown"])
def test_a_fill_is_kept_when_the_dut_holds_all_n_whatever_the_tester_did(metric: str) -> None:
    """A tester that could send only 10,000 fps of the fill's 50,000 (an invalid trial for a measurement) still
    created all 4,000 connections: the fill did its job and is kept, with what the tester saw recorded."""
    h = Harness(tester_max_rate=10_000)
    search = {"upper": 8_000, "error": 4_000} if metric == "throughput" else {}
    res = h.run(metric, fill_rate=50_000, **search)
    [fill] = [r for r in h.records if r.kind == "fill"]
    assert (fill.verdict, fill.reason) == (Verdict.PASS, "")
    assert fill.extra["dut_connections"] == 4000 and fill.extra["fill_verified"] is True
    assert fill.extra["tester_view"] == {"sent": 4000, "valid": 4000, "tester_ok": False}
    assert fill.extra["tester_note"] == "fake: cannot exceed 10000 fps"
    assert res.value is not None


def test_a_latency_trial_that_is_always_invalid_is_tried_three_times_with_max_invalid_two() -> None:
    h = Harness(tester_max_rate=200_000)  # the fill at 50,000 works, the latency trial at 300,000 never
    res = h.run("latency", rate=300_000, fill_rate=50_000, max_invalid=2)
    assert h.kinds() == ["fill", "phase2", "phase2", "phase2"]
    assert res.value is None
    assert res.extra["failed"].startswith("latency at 300000: 3 invalid trials in a row; last: tester could not keep")


@pytest.mark.parametrize("metric", ["throughput", "teardown"])
@pytest.mark.parametrize("can_count", [True, False])
def test_a_fill_that_loses_connections_is_repeated_then_ends_the_repetition(metric: str, can_count: bool) -> None:
    """The DUT sets up 40,000 cps: a fill at 50,000 delivers 4,000 x 40,000 / 50,000 = 3,200 of 4,000 frames. A DUT
    that counts holds 3,200; one that cannot: the Responder learned 3,200 tuples, too few to sample all N, so the
    tester's counts decide (800 lost). Either way the fill is repeated (max_invalid 3: four fills), then the end."""
    h = Harness(cps=40_000, can_count=can_count)
    search = {"upper": 1_000_000, "error": 1000} if metric == "throughput" else {}
    res = h.run(metric, fill_rate=50_000, **search)
    assert h.kinds() == ["fill"] * 4
    assert res.value is None
    last = (
        "the DUT holds 3200 of the 4000 connections" if can_count else "forward loss 800/4000 = 20.000000% > 0.000000%"
    )
    assert res.extra["failed"] == (
        f"filling the table at fill_rate 50000: 4 fills in a row did not leave the 4,000 connections (last: {last});"
        " lower fill_rate"
    )
    assert all(r.extra["fill_verified"] is can_count for r in h.records)


# ---------------------------------------------------------------------------- frame loss rate, latency, PDV
def loss_at(h: Harness, lossy_rate: float, direction: Direction, lost: int) -> None:
    """Let the fake lose ``lost`` frames of ``direction`` in phase-2 trials at ``lossy_rate`` (and nowhere else)."""

    def phase2(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, measure)
        if rate != lossy_rate:
            return res
        return dataclasses.replace(res, counts={**res.counts, direction: reduced(res.counts[direction], lost)})

    h.tester.phase2 = phase2  # type: ignore[method-assign]


WALK = [500_000 - 50_000 * i for i in range(10)]  # max_rate 500,000, step 0.1: 500,000 ... 50,000


@pytest.mark.parametrize(("stop_after", "tested"), [(2, WALK[:4]), (1, WALK[:1]), (0, WALK)])
def test_frame_loss_stops_only_after_consecutive_loss_free_rates(stop_after: int, tested: list[int]) -> None:
    """Only at 450,000 fps does the reverse direction lose: 45,000 of the 450,000 frames of a 1 s trial = 10 %.

    The loss ratios 0, 0.1, 0, 0: the zeros at 500,000 and 400,000 are not consecutive, those at 400,000 and
    350,000 are, so with the default of two the walk ends there and 300,000 is not tested.
    """
    h = Harness(forwarding=1_000_000)
    loss_at(h, 450_000, Direction.REVERSE, 45_000)
    res = h.run("frame_loss", max_rate=500_000, fill_rate=50_000, stop_after_zero=stop_after)
    assert res.extra["curve"] == [[r, pytest.approx(0.1 if r == 450_000 else 0.0)] for r in tested]
    assert h.kinds() == ["fill"] + ["phase2"] * len(tested)
    assert res.value == 0.0  # the loss ratio at the first (highest) rate


def test_frame_loss_measures_the_listed_rates_from_the_highest_down_whatever_the_order_written() -> None:
    """An ascending list used to be walked as written: the lowest rate first, 0.0 loss reported and the rates
    above the DUT's ceiling never measured. The walk starts at the highest rate."""
    h = Harness(forwarding=460_000)
    res = h.run("frame_loss", rates=(400_000, 450_000, 500_000), fill_rate=50_000)
    assert [r for r, _ in res.extra["curve"]] == [500_000, 450_000, 400_000]
    assert res.value == pytest.approx(0.08)  # 40,000 of 500,000 lost at the highest rate


FORWARD_LATENCY = LatencyStats(samples=1000, minimum=10e-6, median=30e-6, p99_9=100e-6, maximum=120e-6)
REVERSE_LATENCY = LatencyStats(samples=1000, minimum=40e-6, median=50e-6, p99_9=80e-6, maximum=90e-6)


def with_latency(h: Harness) -> None:
    """Let the fake report FORWARD_LATENCY and REVERSE_LATENCY in every latency trial."""

    def phase2(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, measure)
        lat = {Direction.FORWARD: FORWARD_LATENCY, Direction.REVERSE: REVERSE_LATENCY}
        return dataclasses.replace(res, latency=lat) if measure.latency or measure.all_delays else res

    h.tester.phase2 = phase2  # type: ignore[method-assign]


def test_latency_is_the_worst_directions_median_and_the_worst_99_9th_percentile() -> None:
    # typical latency: the larger median, reverse's 50 us; worst case: the larger 99.9th percentile, forward's 100 us
    h = Harness()
    with_latency(h)
    res = h.run("latency", rate=100_000, fill_rate=50_000)
    assert res.value == pytest.approx(50e-6)
    assert res.extra["worst_case"] == pytest.approx(100e-6)
    assert res.extra["per_direction"] == {
        "forward": {"median": 30e-6, "p99_9": 100e-6},
        "reverse": {"median": 50e-6, "p99_9": 80e-6},
    }


def test_pdv_is_the_99_9th_percentile_minus_the_minimum_in_the_worst_direction() -> None:
    # RFC 8219: PDV = D99.9 - Dmin. forward 100 - 10 = 90 us, reverse 80 - 40 = 40 us: the result is 90 us
    # (taken against the median it would be 70 us and 30 us)
    h = Harness()
    with_latency(h)
    res = h.run("pdv", rate=100_000, fill_rate=50_000)
    assert res.value == pytest.approx(90e-6)
    assert res.extra["per_direction"] == {"forward": pytest.approx(90e-6), "reverse": pytest.approx(40e-6)}


def test_latency_and_pdv_trials_ask_the_tester_for_rfc_8219s_frames() -> None:
    # latency: tagged frames from tag_delay on, tagged_frames of them (RFC 8219 7.2); PDV: every frame timed (7.3.1)
    h = Harness()
    with_latency(h)
    seen: list[Phase2Options] = []
    orig = h.tester.phase2

    def phase2(rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        seen.append(measure)
        return orig(rate, duration, directions, measure)

    h.tester.phase2 = phase2  # type: ignore[method-assign]
    h.run("latency", rate=100_000, fill_rate=50_000, tagged_frames=400)
    lat = seen[-1]
    assert (lat.latency, lat.latency_delay, lat.latency_frames, lat.all_delays) == (True, 0.5, 400, False)
    h.run("pdv", rate=100_000, fill_rate=50_000)
    assert (seen[-1].latency, seen[-1].all_delays) == (False, True)


# ---------------------------------------------------------------------------- filling and refilling the table
@pytest.mark.parametrize("fill", [50_000.0, 1234.5, 1.0])
def test_the_fill_runs_at_the_fill_rate_whatever_cps_measured(fill: float) -> None:
    # fill_rate is a setting every filling metric has (a campaign must give it): a cps result does not replace it
    h = Harness()
    h.run("teardown", prior={"cps": [300_000.0, 50_000.0, 100_001.0]}, fill_rate=fill)
    assert (h.records[0].kind, h.records[0].intended_rate) == ("fill", fill)


class TrafficClock:
    """Time that passes only while traffic runs: fills take 10 s, phase-2 trials their duration."""

    def __init__(self, h: Harness) -> None:
        self.now = 0.0
        phase1, phase2 = h.tester.phase1, h.tester.phase2

        def timed_phase1(rate: float, learn: bool) -> PhaseResult:
            self.now += 10.0
            return phase1(rate, learn)

        def timed_phase2(rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
            self.now += duration
            return phase2(rate, duration, directions, measure)

        h.tester.phase1 = timed_phase1  # type: ignore[method-assign]
        h.tester.phase2 = timed_phase2  # type: ignore[method-assign]

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("refill_after", "kinds"),
    [
        (102, ["fill", "phase2", "phase2", "phase2", "fill", "phase2"]),
        (100, ["fill", "phase2", "phase2", "fill", "phase2", "phase2"]),
    ],
)
def test_refill_after_counts_from_the_start_of_the_fill(refill_after: float, kinds: list[str]) -> None:
    """Four 30 s steps (500k fails, 250k and 375k pass, 437.5k fails: [375k, 437.5k] is 62.5k wide); fills take 10 s.

    The fill runs 0-10 s, the steps 10-40, 40-70, 70-100, each followed by the 2 s receive wait (timeout). refill_after
    102: the third step's wait ends at 102 s after the fill started, which is allowed; the fourth would end at 132:
    refill first. refill_after 100: the third step would end at 102 > 100 s after the fill's start (only 92 after its
    end): refill before it.
    """
    h = Harness(forwarding=400_000)
    clock = TrafficClock(h)
    h.run(
        "throughput", clock=clock, upper=1_000_000, error=62_500, fill_rate=50_000, gap=0, duration=30,
        refill_after=refill_after,
    )  # fmt: skip
    assert h.kinds() == kinds
    assert [r.intended_rate for r in h.records if r.kind == "phase2"] == [500_000, 250_000, 375_000, 437_500]


def test_a_dut_that_cannot_count_is_refilled_after_every_failed_step_only() -> None:
    # 500k fails -> refill; 250k and 375k pass -> no refill; 437.5k fails, but it is the last step
    h = Harness(forwarding=400_000, can_count=False)
    h.run("throughput", upper=1_000_000, error=62_500, fill_rate=50_000)
    # each fill is verified by a validation sample of the learned tuples (the DUT cannot count)
    assert [(r.kind, r.intended_rate) for r in h.records] == [
        ("fill", 50_000),
        ("fill_check", 50_000),
        ("phase2", 500_000),
        ("fill", 50_000),
        ("fill_check", 50_000),
        ("phase2", 250_000),
        ("phase2", 375_000),
        ("phase2", 437_500),
    ]
    checks = [r for r in h.records if r.kind == "fill_check"]
    assert all(r.verdict is Verdict.PASS and r.extra["sample"] == 4000 for r in checks)


@pytest.mark.parametrize(
    ("drift", "after", "invalid"),
    [(10, 4010, False), (10, 3990, False), (10, 4011, True), (10, 3989, True), (0, 3999, True)],
)
def test_table_drift_bounds_the_change_of_the_table_during_phase2(drift: int, after: int, invalid: bool) -> None:
    h = Harness(forwarding=600_000)

    def drifting(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, measure)
        h.dut.connections = after  # the table held 4,000 after the fill
        return res

    h.tester.phase2 = drifting  # type: ignore[method-assign]
    # one step: 500,000 passes -> [500,000, 1,000,000], 500,000 wide <= error: done
    res = h.run("throughput", upper=1_000_000, error=500_000, fill_rate=50_000, table_drift=drift, max_invalid=0)
    (step,) = (r for r in h.records if r.kind == "phase2")
    if invalid:
        assert step.verdict is Verdict.INVALID and res.value is None
        assert step.reason == f"DUT table changed from 4000 to {after} connections during phase 2"
    else:
        assert step.verdict is Verdict.PASS and res.value == 500_000


# ---------------------------------------------------------------------------- validation's reverse rate
@pytest.mark.parametrize(
    ("settings", "reverse"),
    [({}, 100_000), ({"alpha": 0.5}, 50_000), ({"alpha": 0.5, "reverse_rate": 1234}, 1234)],
)
def test_validation_sends_at_alpha_times_the_rate_unless_a_reverse_rate_is_set(
    settings: dict[str, Any], reverse: float
) -> None:
    h = Harness()
    res = h.run("validation", rate=100_000, **settings)
    assert res.value == 1.0
    assert [(r.kind, r.intended_rate) for r in h.records] == [("phase1", 100_000), ("validation", reverse)]
    assert h.slept == [0.5]  # the gap between phase 1 and the reverse frames


# ---------------------------------------------------------------------------- tear-down: reusing the median T_0
def teardowns(*t0s: float | None, measured: int | None = None) -> tuple[RepetitionResult, ...]:
    """Earlier tear-down results with these T_0 (None: a failed repetition); from index ``measured`` on, reused."""
    out = []
    for i, t0 in enumerate(t0s):
        if t0 is None:
            out.append(RepetitionResult(POINT.id, "teardown", i, None, "conn/s", extra={"failed": "boom"}))
        else:
            timed = measured is None or i < measured
            extra = {"T_0": t0, "T_0_measured": timed}
            out.append(RepetitionResult(POINT.id, "teardown", i, 1.0, "conn/s", extra=extra))
    return tuple(out)


@pytest.mark.parametrize(
    ("k", "earlier", "t_0"),
    [
        # median of 0.9, 0.4, 0.6 is 0.6 (the mean would be 0.633)
        (3, teardowns(0.9, 0.4, 0.6), 0.6),
        # the 0.1 of the fourth repetition was itself reused, not timed: left out (with it the median is 0.5)
        (3, teardowns(0.9, 0.4, 0.6, 0.1, measured=3), 0.6),
        # the second repetition failed: only one T_0 timed, so this one times T_0 again (flush_empty = 0.75)
        (2, teardowns(0.4, None), None),
    ],
)
def test_teardown_reuses_the_median_of_the_timed_t0_values(
    k: int, earlier: tuple[RepetitionResult, ...], t_0: float | None
) -> None:
    h = Harness(flush_empty=0.75, flush_per_connection=1e-4)  # T_N = 0.75 + 4,000 x 0.1 ms = 1.15 s
    res = h.run("teardown", repetition=len(earlier), earlier=earlier, fill_rate=50_000, empty_repetitions=k)
    if t_0 is None:
        assert h.kinds() == ["fill", "flush_filled", "flush_empty", "flush_empty", "flush_empty"]
        assert res.extra["T_0"] == pytest.approx(0.75) and res.extra["T_0_measured"] is True
        assert res.value == pytest.approx(4000 / 0.4)  # 10,000 connections per second
    else:
        assert h.kinds() == ["fill", "flush_filled"]
        assert res.extra["T_0"] == pytest.approx(t_0) and res.extra["T_0_measured"] is False
        assert res.value == pytest.approx(4000 / 0.55)  # 1.15 - 0.6 = 0.55 s: 7,272.7 connections per second


# ---------------------------------------------------------------------------- capacity search
class CeilingByPorts(FakeTester):
    """A fake tester whose DUT's connection-establishment ceiling depends on the number of source ports."""

    def __init__(self, dut: FakeDut, ceiling: Callable[[int], float]) -> None:
        super().__init__(dut)
        self.ceiling = ceiling

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        with_model(self.dut, cps=self.ceiling(len(self._plan().src_ports)))
        return super().phase1(rate, learn)


def capacity_harness(ceiling: Callable[[int], float]) -> Harness:
    h = Harness()
    h.tester = CeilingByPorts(h.dut, ceiling)
    h.tester.prepare(h.plan)
    return h


def test_capacity_exponential_search_goes_on_at_exactly_beta_times_the_rate() -> None:
    """20 destination ports; 200 source ports (4,000 connections) to start; beta 0.25; error 1 cps.

    Probes are cps searches of [0, previous rate] with integer rates that end on the integer ceiling:
    200 ports: 800 cps. 400 ports: 200 cps = 0.25 x 800, not below: go on. 800 ports: 10 cps, the search stops
    at its first failure below 0.25 x 200 = 50 (100 and 50 fail, 25 ends it) with 0 < 50: the table collapsed.
    connection_error 8,000 = 400 ports: [400, 800] is no wider, so no final search.
    """
    h = capacity_harness(lambda n: 800.0 if n <= 200 else 200.0 if n <= 400 else 10.0)
    res = h.run("capacity", upper=1600, error=1, beta=0.25, connection_error=8000)
    assert res.extra["probes"] == [[4000, 800], [8000, 200], [16000, 0]]
    assert (res.value, res.error, res.extra["rate_at_capacity"]) == (8000, 8000, 200)
    assert res.extra["port_space_exhausted"] is False
    assert h.tester.plan == h.plan


def test_capacity_final_search_ends_one_connection_error_wide() -> None:
    """Ceiling 1,000 cps up to 250 source ports, 0 beyond; 20 destination ports; connection_error 60 = 3 ports.

    Exponential: 200 ports pass, 400 collapse: [200, 400]. The final search bisects cells of 3 ports from 200 (200,
    203, ..., 398, and 400 at the top): it ends at [248, 251], 3 ports wide, so the error is exactly 60 connections,
    not the 1, 2 or 3 ports a halving of [200, 400] would stop at."""
    h = capacity_harness(lambda n: 1000.0 if n <= 250 else 0.0)
    res = h.run("capacity", upper=2000, error=1, connection_error=60)
    assert (res.value, res.error) == (248 * 20, 60)
    final = [c // 20 for c, _ in res.extra["probes"][2:]]
    assert all((c - 200) % 3 == 0 for c in final), final


def test_capacity_final_search_keeps_a_count_at_exactly_gamma_times_the_rate_and_stops_at_the_width() -> None:
    """Ceiling 1,000 cps up to 250 source ports, 400 up to 302, 0 beyond; gamma 0.4; connection_error 30 -> 1 port
    (whole ports within the error: 2 ports would be 40 connections, more than asked).

    Exponential: 200 ports 1,000 cps; 400 ports 0 (< 0.2 x 1,000): [200, 400]. Final (probes stop at a failure
    below gamma x the safe rate): 300 ports: 400 = 0.4 x 1,000, kept -> [300, 400] at 400 cps; 350, 325, 312, 306
    and 303 collapse -> [300, 303]; 301 ports: 399 (the search of [0, 400] ends on 399) kept -> [301, 303]; 302
    ports: 398 kept -> [302, 303], 1 port wide: done. Capacity 302 x 20 = 6,040 connections, error 20 (<= 30).
    """
    h = capacity_harness(lambda n: 1000.0 if n <= 250 else 400.0 if n <= 302 else 0.0)
    res = h.run("capacity", upper=2000, error=1, connection_error=30)
    assert res.extra["probes"] == [
        [4000, 1000],
        [8000, 0],
        [6000, 400],
        [7000, 0],
        [6500, 0],
        [6240, 0],
        [6120, 0],
        [6060, 0],
        [6020, 399],
        [6040, 398],
    ]
    assert (res.value, res.error, res.extra["rate_at_capacity"]) == (6040, 20, 398)
    stages = [r.extra["stage"] for r in h.records]
    assert stages[0] == "initial" and stages[-1] == "final"


def test_capacity_stops_at_max_connections_and_starts_at_whole_source_ports() -> None:
    """min_connections 4,010 = 200.5 source ports -> 201 (4,020 connections); max_connections 6,000 = 300 ports.

    201 ports: 1,000 cps; doubling is capped at 300 ports: 999 cps (the search of [0, 1,000] ends one below its
    upper bound); 300 is the maximum and the table never filled: not reached, capacity >= 6,000, no error.
    """
    h = capacity_harness(lambda n: 1000.0)
    res = h.run("capacity", upper=2000, error=1, min_connections=4010, max_connections=6000)
    assert res.extra["probes"] == [[4020, 1000], [6000, 999]]
    assert (res.value, res.error, res.extra["rate_at_capacity"]) == (6000, None, 999)
    assert (res.extra["not_reached"], res.extra["port_space_exhausted"]) == (True, False)


@pytest.mark.parametrize("checks", ["validation", "count", "none"])
def test_capacity_of_a_small_evicting_table_is_found_or_visibly_unchecked_never_silently_high(checks: str) -> None:
    """A 10,000-entry table that evicts older entries to make room (Linux conntrack's early drop): every phase-1
    frame is forwarded, so only a count or the validation's reverse frames (to evicted tuples) see that 20,000
    connections did not fit. With either the capacity comes out within its error of 10,000; with neither the
    search runs up to max_connections and the result says both that it was not reached and that it was not
    validated (the audit's case: 100,000 = max_connections, stored with error 0 before)."""
    settings = {"validation": "every_step" if checks == "validation" else "off", "check_table": checks == "count"}
    h = Harness(table_limit=10_000, table_full="evict")
    res = h.run("capacity", upper=400_000, error=10_000, connection_error=1000, max_connections=100_000, **settings)
    if checks == "none":
        assert (res.value, res.error) == (100_000, None)
        assert res.extra["not_reached"] is True and res.extra["validated"] is False
    else:
        assert res.value is not None and res.error is not None
        assert res.value <= 10_000 < res.value + res.error + 1, (res.value, res.error)
        assert res.error <= 1000
        assert res.extra["not_reached"] is False and res.extra["validated"] is True


def test_capacity_refuses_a_connection_error_finer_than_one_source_port() -> None:
    """C moves in whole source ports of |D| = 20 connections: a connection_error of 10 cannot be met."""
    h = Harness()
    res = h.run("capacity", upper=400_000, error=10_000, connection_error=10)
    assert res.value is None and h.records == []
    assert res.extra["failed"] == (
        "connection_error 10 is finer than one source port of this point (20 destination ports: capacity moves in"
        " steps of 20 connections); set connection_error to at least 20 or use fewer destination ports"
    )


def test_capacity_fails_clearly_when_no_rate_passes_with_the_starting_connections() -> None:
    h = capacity_harness(lambda n: 0.0)
    res = h.run("capacity", upper=2000, error=1)
    assert res.value is None
    assert res.extra["failed"] == "no rate passed with the starting 4000 connections; lower capacity_start"


def test_teardown_refuses_an_empty_table_time_when_the_delete_all_left_connections() -> None:
    h = Harness()

    def leaves_five(_orig: Any = h.dut.timed_flush) -> float:
        seconds: float = _orig()
        h.dut.connections = 5
        return seconds

    h.dut.timed_flush = leaves_five  # type: ignore[method-assign]
    res = h.run("teardown", fill_rate=50_000)
    assert h.kinds() == ["fill", "flush_filled"]
    assert res.value is None
    assert res.extra["failed"] == (
        "the DUT still held 5 connections after its delete-all; T_0 is not an empty-table time"
    )


# ---------------------------------------------------------------------------- tear-down: records and counts
def counting_clock() -> Callable[[], float]:
    """A clock that says 0, 1, 2, ... on its successive calls."""
    ticks = iter(range(1000))
    return lambda: float(next(ticks))


def test_teardown_counts_the_dut_table_and_stores_each_timed_delete() -> None:
    """The DUT holds 10 connections of its own beside the 4,000 of the fill (within table_slack 64).

    N is what the tester created, the fill's 4,000 valid frames; the DUT's count, 4,010, is recorded beside it.
    T_N = 0.5 + 4,010 x 10 us = 0.5401 s (the DUT deletes all it holds), T_0 = 0.5 s: 4,000 / 0.0401 s = 99,750.6/s.
    The clock ticks once per call: fill 0-1, delete of the filled table 2-3, delete of the empty table 4-5.
    """
    h = Harness(flush_empty=0.5, flush_per_connection=1e-5)
    learn_args: list[object] = []

    def with_own_sessions(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        learn_args.append(learn)
        res = _orig(rate, learn)
        h.dut.connections += 10
        return res

    h.tester.phase1 = with_own_sessions  # type: ignore[method-assign]
    res = h.run("teardown", clock=counting_clock(), fill_rate=50_000, gap=0, empty_samples=1)
    assert learn_args == [False]  # the fill needs no learned tuples: no reverse frames follow
    assert res.unit == "conn/s"
    assert res.value == pytest.approx(4000 / 0.0401)
    assert (res.extra["connections"], res.extra["dut_connections"]) == (4000, 4010)
    assert res.extra["T_N"] == pytest.approx(0.5401)
    assert res.extra["empty_delete_s"] == res.extra["T_0"] == 0.5
    assert res.extra["T_0_measured"] is True
    assert h.slept == []  # no gap asked: no sleep at all
    fill, filled, empty = h.records
    assert "learned" not in fill.extra
    assert [(r.kind, r.verdict, r.reason) for r in (filled, empty)] == [
        ("flush_filled", Verdict.PASS, ""),
        ("flush_empty", Verdict.PASS, ""),
    ]
    assert [(r.started_at, r.ended_at) for r in h.records] == [(0.0, 1.0), (2.0, 3.0), (4.0, 5.0)]
    assert filled.extra == {"connections": 4000, "dut_connections": 4010}
    assert empty.extra == {"dut_connections_before": 0}  # the table was counted empty before T_0 was timed


def test_teardown_on_a_dut_that_cannot_count_verifies_n_with_a_validation_sample() -> None:
    """No count: the fill learns its tuples and a validation sample (all 4,000 here: fewer than the sample size)
    shows the DUT holds them: N = 4,000 verified; T_N = 0.5 + 4,000 x 10 us = 0.54 s: 4,000 / 0.04 s = 100,000/s."""
    h = Harness(flush_empty=0.5, flush_per_connection=1e-5, can_count=False)
    res = h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert h.kinds() == ["fill", "fill_check", "flush_filled", "flush_empty"]
    assert (res.extra["connections"], res.extra["connections_verified"]) == (4000, True)
    assert res.value == pytest.approx(100_000)
    assert h.records[1].counts == {"reverse": {"sent": 4000, "received": 4000, "valid": 4000}}
    assert h.records[2].extra == {"connections": 4000}
    assert h.records[3].extra == {}  # nothing counted before the empty-table delete


def test_teardown_on_a_dut_that_cannot_count_repeats_a_fill_the_sample_finds_short() -> None:
    """No count, and the DUT keeps state for 40,000 new connections per second only: the fill at 50,000 forwards
    all 4,000 frames (the tester sees no loss) but keeps 3,200; the validation sample gets 3,200 of 4,000 answers,
    so the fill is repeated, never divided by (the audit's 480,019/s for 400,000/s came from such a fill)."""
    h = Harness(can_count=False, keep_rate=40_000, flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000, max_invalid=1)
    assert h.kinds() == ["fill", "fill_check"] * 2
    assert res.value is None
    assert h.records[1].reason == "the DUT answered 3200 of 4000 sampled connections"
    assert "2 fills in a row did not leave the 4,000 connections" in res.extra["failed"]


def test_teardown_on_a_small_evicting_table_that_cannot_count_is_never_divided_by() -> None:
    """A 3,000-entry table that evicts older entries (every fill frame is forwarded, the tester sees no loss) and
    no count: the audit's 4x case (1,600,000/s for 400,000/s). The validation sample's reverse frames to the
    evicted tuples do not arrive (3,000 of 4,000 answer), so each fill is repeated and the repetition fails."""
    h = Harness(can_count=False, table_limit=3000, table_full="evict", flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000, max_invalid=1)
    assert res.value is None
    assert [r.reason for r in h.records if r.kind == "fill_check"] == [
        "the DUT answered 3000 of 4000 sampled connections"
    ] * 2


def test_teardown_with_nothing_to_verify_its_fill_says_so() -> None:
    """No count, and the Responder reports no learned tuple to sample (a tester that cannot learn): nothing can
    verify the fill. N is then the tester's valid frames and the result says it is unverified, for every table to
    mark."""
    h = Harness(flush_empty=0.5, flush_per_connection=1e-5, can_count=False)

    def learn_nothing(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        return dataclasses.replace(_orig(rate, learn), learned=0)

    h.tester.phase1 = learn_nothing  # type: ignore[method-assign]
    res = h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert h.kinds() == ["fill", "flush_filled", "flush_empty"]
    assert h.records[0].extra["fill_verified"] is False
    assert (res.extra["connections"], res.extra["connections_verified"]) == (4000, False)


@pytest.mark.parametrize("missed", [400, 1])
def test_teardown_n_is_the_connections_the_dut_holds_not_the_frames_the_tester_counted(missed: int) -> None:
    """The tester's own receive side missed ``missed`` of the fill's 4,000 frames (it counted 3,600 valid), but the
    DUT holds all 4,000 connections: the fill is kept and N is 4,000. T_N = 0.5 + 4,000 x 10 us, so the rate is
    4,000 / 0.04 s = 100,000/s; dividing the 3,600 frames the tester counted would say 90,000/s."""
    h = Harness(flush_empty=0.5, flush_per_connection=1e-5)

    def misses(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res: PhaseResult = _orig(rate, learn)
        c = res.counts[Direction.FORWARD]
        counts = {Direction.FORWARD: DirectionCounts(c.sent, c.received - missed, c.valid - missed)}
        return dataclasses.replace(res, counts=counts, deviations={Direction.FORWARD: Deviation(missed=missed)})

    h.tester.phase1 = misses  # type: ignore[method-assign]
    res = h.run("teardown", fill_rate=50_000)
    [fill] = [r for r in h.records if r.kind == "fill"]
    assert fill.verdict is Verdict.PASS
    assert sum(int(c["valid"]) for c in fill.counts.values()) == 4000 - missed
    assert fill.extra["tester_view"] == {"sent": 4000, "valid": 4000 - missed, "tester_ok": True}
    assert fill.extra["deviations"] == {"forward": {"clump": 0, "missed": missed, "notes": []}}
    assert (res.extra["connections"], res.extra["connections_verified"]) == (4000, True)
    assert res.value == pytest.approx(100_000)
    assert h.records[1].extra["connections"] == 4000


def test_teardown_names_the_fill_when_it_never_leaves_n_connections() -> None:
    h = Harness(keep_rate=10_000)  # a fill at 50,000 leaves 800 of 4,000
    res = h.run("teardown", fill_rate=50_000, max_invalid=1)
    assert h.kinds() == ["fill", "fill"]
    assert res.extra["failed"] == (
        "filling the table at fill_rate 50000: 2 fills in a row did not leave the 4,000 connections"
        " (last: the DUT holds 800 of the 4000 connections); lower fill_rate"
    )


def test_a_teardown_reusing_t0_reports_no_empty_table_time_of_its_own() -> None:
    # T_0 = median(0.9, 0.4, 0.6) = 0.6 is reused; T_N = 0.75 + 4,000 x 0.1 ms = 1.15 s
    h = Harness(flush_empty=0.75, flush_per_connection=1e-4)
    res = h.run("teardown", repetition=3, earlier=teardowns(0.9, 0.4, 0.6), fill_rate=50_000, empty_repetitions=3)
    assert res.extra["T_0"] == pytest.approx(0.6)
    assert res.extra["empty_delete_s"] is None
    assert res.extra["deletion_time"] == pytest.approx(0.55)


# ---------------------------------------------------------------------------- settings from campaign shapes
def test_resolving_keeps_a_metrics_own_acceptance_and_directions() -> None:
    own = CpsSettings(repetitions=5, acceptance=0.001, directions="forward", upper=1000, error=10)
    s = own.resolved(0.01, Directions.BIDIRECTIONAL)
    assert (s.repetitions, s.acceptance, s.directions) == (5, 0.001, Directions.FORWARD)


def test_resolving_settings_that_set_both_returns_them_unchanged() -> None:
    own = CpsSettings(acceptance=0.0, directions="reverse", upper=1000, error=10)
    assert own.resolved(0.01, Directions.BIDIRECTIONAL) is own


def test_resolving_fills_only_what_the_metric_leaves_unset() -> None:
    s = TeardownSettings(repetitions=7, gap=3.0, fill_rate=1000).resolved(0.01, Directions.REVERSE)
    assert (s.repetitions, s.gap, s.acceptance, s.directions) == (7, 3.0, 0.01, Directions.REVERSE)


def test_settings_have_the_campaigns_defaults() -> None:
    s = CapacitySettings(upper=1000, error=10, min_connections=4, max_connections="8k", connection_error=2)
    assert (s.repetitions, s.max_connections, s.beta, s.gamma, s.alpha, s.max_invalid) == (10, 8000, 0.2, 0.4, 1.0, 3)


def test_the_campaigns_names_are_the_settings_the_procedures_read() -> None:
    s = LatencySettings(tagged_rate=500, fill_rate=1000)
    assert (s.tagged_rate, s.duration) == (500, 120.0)  # RFC 8219: 120 s latency trials
    assert PdvSettings(fill_rate=1000).duration == 60.0


def test_directions_are_read_from_their_names() -> None:
    for given in ("reverse", Directions.REVERSE):
        s = LatencySettings(directions=given, fill_rate=1000)
        assert s.directions is Directions.REVERSE
        assert len(s.directions.active) == 1


def test_rates_become_floats_in_the_order_written() -> None:
    s = FrameLossSettings(rates=["800k", 760_000], fill_rate=1000)
    assert s.rates == [800_000.0, 760_000.0]
    assert all(type(r) is float for r in s.rates)


# ---------------------------------------------------------------------------- capacity: bounds, tags, stop rules
def test_capacity_stops_below_beta_and_a_final_probe_stops_below_gamma_with_what_passed_so_far() -> None:
    """Ceiling 1,000 cps up to 200 source ports, 100 up to 250, 300 beyond 250 up to 300, 100 beyond; width 100 ports.

    200 ports: [0, 2,000] passes 1,000 and fails 1,500 ... 1,001: 1,000. 400 ports ([0, 1,000], stop below 200):
    500, 250 and 125 fail, 125 < 200 ends it at 0 < 200: [200, 400]. 300 ports ([0, 1,000], stop below 400):
    500 fails, 250 passes, 375 fails below 400: ends at 250, below 400 -> [200, 300], 100 ports wide: done.
    """
    h = capacity_harness(lambda n: 1000.0 if n <= 200 else 300.0 if 250 < n <= 300 else 100.0)
    prepared: list[tuple[PortRange, PortRange]] = []

    def prepare(plan: Any, _orig: Any = h.tester.prepare) -> None:
        prepared.append((plan.src_ports, plan.dst_ports))
        _orig(plan)

    h.tester.prepare = prepare  # type: ignore[method-assign]
    res = h.run("capacity", upper=2000, error=1, connection_error=2000)
    assert res.extra["probes"] == [[4000, 1000], [8000, 0], [6000, 250]]
    assert h.slept == []  # no gap between a probe's phase 1 and its reverse frames
    assert (res.value, res.error, res.extra["rate_at_capacity"]) == (4000, 2000, 1000)
    # each probe prepares the point's destination ports and as many source ports from 1000 on; then the point's plan
    assert prepared == [
        (PortRange(1000, 1199), POINT.dst_ports),
        (PortRange(1000, 1399), POINT.dst_ports),
        (PortRange(1000, 1299), POINT.dst_ports),
        (POINT.src_ports, POINT.dst_ports),
    ]
    # every stored trial names its stage, its number of connections and its search interval
    first, second = h.records[:2]
    assert [(r.kind, r.lower, r.upper) for r in (first, second)] == [("phase1", 0.0, 2000), ("validation", 0.0, 2000)]
    by_stage = {(r.extra["stage"], r.extra["connections"]) for r in h.records}
    assert by_stage == {("initial", 4000), ("exponential", 8000), ("final", 6000)}
    final = [r for r in h.records if r.extra["stage"] == "final"]
    assert [(r.kind, r.intended_rate, r.verdict) for r in final] == [
        ("phase1", 500, Verdict.FAIL),
        ("phase1", 250, Verdict.PASS),
        ("validation", 250, Verdict.PASS),
        ("phase1", 375, Verdict.FAIL),
    ]
    assert [(r.lower, r.upper) for r in final] == [(0.0, 1000), (0.0, 500), (0.0, 500), (250, 500)]


def test_capacity_final_search_narrows_to_one_source_port_by_default() -> None:
    """Ceiling 1,000 cps up to 202 source ports, 100 beyond; connection_error 20: one port (20 connections).

    200 ports: 1,000; 400 ports: 0 -> [200, 400]. Final probes 300, 250, 225, 212, 206, 203 collapse (stop below
    400) -> [200, 203]; 201 ports: 999 (the search of [0, 1,000] ends one below) -> [201, 203]; 202 ports: 998
    -> [202, 203], one port wide: capacity 202 x 20 = 4,040 connections, error 20.
    """
    h = capacity_harness(lambda n: 1000.0 if n <= 202 else 100.0)
    res = h.run("capacity", upper=2000, error=1)
    assert [c for c, _ in res.extra["probes"]] == [4000, 8000, 6000, 5000, 4500, 4240, 4120, 4060, 4020, 4040]
    assert (res.value, res.error, res.extra["rate_at_capacity"]) == (4040, 20, 998)


def test_capacity_without_a_limit_probes_up_to_the_last_source_port() -> None:
    """Source ports from 1000 to 65535: 64,536 ports x 20 = 1,290,720 connections at most.

    min_connections 800,000 = 40,000 ports: 1,000 cps; doubling is capped at 64,536 ports: 999 cps; exhausted.
    """
    h = capacity_harness(lambda n: 1000.0)
    res = h.run("capacity", upper=2000, error=1, min_connections=800_000)
    assert res.extra["probes"] == [[800_000, 1000], [1_290_720, 999]]
    # the table never filled: a lower bound ("not reached, >= 1,290,720"), never an exact value with error 0
    assert (res.value, res.error, res.extra["not_reached"], res.extra["port_space_exhausted"]) == (
        1_290_720,
        None,
        True,
        True,
    )


@pytest.mark.parametrize(
    ("start", "most", "probes"),
    [
        (20, 40, [[20, 1000], [40, 999]]),  # one source port to start, two at most
        (4000, 20, [[20, 1000]]),  # at most one source port: the start is cut down to it
    ],
)
def test_capacity_can_probe_a_single_source_port(start: int, most: int, probes: list[list[float]]) -> None:
    h = capacity_harness(lambda n: 1000.0)
    res = h.run("capacity", upper=2000, error=1, min_connections=start, max_connections=most, unchecked=True)
    assert res.extra["probes"] == probes
    # max_connections reached, not the port space: not reached, no error
    assert (res.value, res.error, res.extra["not_reached"], res.extra["port_space_exhausted"]) == (
        most,
        None,
        True,
        False,
    )


def test_capacity_goes_on_with_a_starting_rate_of_one() -> None:
    """Ceiling 1 cps: the search of [0, 4] fails 2, passes 1 ([1, 2] is within error 1): r_s = 1 is a rate."""
    h = capacity_harness(lambda n: 1.0)
    res = h.run("capacity", upper=4, error=1, max_connections=4000, unchecked=True)
    assert res.extra["probes"] == [[4000, 1]]
    assert (res.value, res.extra["rate_at_capacity"]) == (4000, 1)


def test_capacity_with_no_rate_range_fails_with_its_own_message() -> None:
    # upper 0 leaves nothing to search (even with error 0): the starting probe has no rate
    h = capacity_harness(lambda n: 1000.0)
    for error in (0, 1):
        res = h.run("capacity", upper=0, error=error, unchecked=True)
        assert res.extra["failed"] == "no rate passed with the starting 4000 connections; lower capacity_start"
        assert h.records == []


def test_capacity_with_beta_zero_doubles_on_through_probes_without_a_rate() -> None:
    """beta 0: a probe at rate 0 is not below 0 x the rate, so the doubling goes on; probes in [0, 0] run no trial.

    min_connections 640,000 = 32,000 ports: 1,000 cps; 64,000 ports: ceiling 0, [0, 1,000] fails down to 0;
    64,536 ports: nothing to search (rate 0), stored as 0; exhausted at 1,290,720 connections with rate 0.
    """
    h = capacity_harness(lambda n: 1000.0 if n <= 32_000 else 0.0)
    res = h.run("capacity", upper=2000, error=1, beta=0, min_connections=640_000, unchecked=True)
    assert res.extra["probes"] == [[640_000, 1000], [1_280_000, 0], [1_290_720, 0]]
    assert (res.value, res.extra["rate_at_capacity"], res.extra["not_reached"]) == (1_290_720, 0, True)


# ---------------------------------------------------------------------------- validation: result and records
def test_validation_at_the_median_cps_stores_both_trials_with_their_times() -> None:
    # the median of 30,000, 50,000 and 40,000 cps is 40,000 (the clock ticks once per call)
    h = Harness()
    res = h.run("validation", prior={"cps": [30_000.0, 50_000.0, 40_000.0]}, clock=counting_clock())
    assert (res.value, res.unit, res.extra) == (1.0, "pass", {"rate": 40_000.0, "reason": ""})
    assert [(r.kind, r.intended_rate, r.started_at, r.ended_at) for r in h.records] == [
        ("phase1", 40_000, 0.0, 1.0),
        ("validation", 40_000, 2.0, 3.0),
    ]
    assert h.records[0].extra["learned"] == 4000  # phase 1 learns the tuples the reverse frames use


def test_validation_fails_without_reverse_frames_when_phase1_loses_frames() -> None:
    # the DUT sets up 40,000 cps: phase 1 at 50,000 delivers 4,000 x 40,000 / 50,000 = 3,200 of 4,000 frames
    h = Harness(cps=40_000)
    res = h.run("validation", rate=50_000)
    assert h.kinds() == ["phase1"]
    assert (res.value, res.extra) == (
        0.0,
        {"rate": 50_000.0, "reason": "forward loss 800/4000 = 20.000000% > 0.000000%"},
    )


@pytest.mark.parametrize(
    ("model", "settings", "kinds", "failed"),
    [
        ({"tester_max_rate": 10_000}, {}, ["phase1", "phase1"], "phase 1 at 50000"),
        (
            {"tester_max_rate": 60_000},
            {"reverse_rate": 100_000},
            ["phase1", "validation", "validation"],
            "validation at 50000",
        ),
    ],
)
def test_validation_names_the_trial_that_stayed_invalid(
    model: dict[str, float], settings: dict[str, float], kinds: list[str], failed: str
) -> None:
    h = Harness(**model)
    res = h.run("validation", rate=50_000, max_invalid=1, **settings)
    assert h.kinds() == kinds
    limit = model["tester_max_rate"]
    assert res.extra["failed"] == (
        f"{failed}: 2 invalid trials in a row; last: tester could not keep the rate: fake: cannot exceed {limit:g} fps"
    )


# ---------------------------------------------------------------------------- results of the other procedures
def test_throughput_result_carries_the_search_bounds_and_counts() -> None:
    """Forwarding ceiling 250,000 fps; search [0, 400,000] with error 100,000: 200,000 passes, 300,000 fails."""
    h = Harness(forwarding=250_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    assert (res.value, res.unit, res.error) == (200_000, "fps", 100_000)
    assert res.extra == {
        "directions": 2,
        "direction_mode": "bidirectional",
        "all_frames_per_second": 400_000,
        "algorithm": "binary",
        "steps": 2,
        "invalid": 0,
        "at_upper_limit": False,
        "tester_bound": False,
        "tester_ceiling": None,
        "lower": 200_000,
        "upper": 300_000,
        "no_passing_rate": False,
    }


def test_forwarding_result_and_steps_carry_the_search_interval() -> None:
    """Stateless ceiling 250,000 fps; search [0, 400,000], error 100,000: 200,000 passes in [0, 400,000],
    300,000 fails in [200,000, 400,000]."""
    h = Harness(nat=False, stateless_forwarding=250_000)
    res = h.run("forwarding", upper=400_000, error=100_000)
    assert (res.value, res.unit, res.error, res.extra["table_reset"]) == (200_000, "fps", 100_000, True)
    assert [(r.intended_rate, r.lower, r.upper) for r in h.records] == [
        (200_000, 0, 400_000),
        (300_000, 200_000, 400_000),
    ]


def test_forwarding_does_not_empty_a_table_the_dut_says_it_cannot_empty() -> None:
    h = Harness(nat=False, stateless_forwarding=250_000)
    h.dut.supports = lambda op: op != "reset_connections"  # type: ignore[method-assign]
    res = h.run("forwarding", upper=400_000, error=100_000)
    assert res.extra["table_reset"] is False
    assert "reset" not in h.dut.events


def test_frame_loss_result_is_the_loss_at_the_first_rate() -> None:
    # forwarding ceiling 500,000: at 800,000 fps 300,000 of 800,000 frames per direction are lost (0.375)
    h = Harness(forwarding=500_000)
    res = h.run("frame_loss", rates=(800_000, 720_000), fill_rate=50_000, stop_after_zero=0)
    assert (res.value, res.unit) == (0.375, "ratio")
    assert res.extra == {
        "rate": 800_000,
        "curve": [[800_000, 0.375], [720_000, pytest.approx(1 - 500_000 / 720_000)]],
        "walk_incomplete": False,  # every rate measured on purpose (stop_after_zero 0)
        "directions": 2,
        "direction_mode": "bidirectional",
    }


def test_frame_loss_names_the_rate_that_stayed_invalid() -> None:
    h = Harness(tester_max_rate=600_000)
    res = h.run("frame_loss", rates=(800_000,), fill_rate=50_000, max_invalid=0)
    assert res.extra["failed"] == (
        "frame loss at 800000: 1 invalid trials in a row; last: tester could not keep the rate: fake: cannot exceed "
        "600000 fps"
    )


def test_latency_reports_the_verdict_and_reason_of_its_trial() -> None:
    # forwarding ceiling 300,000: at 400,000 fps a quarter of each direction is lost; forward is judged first
    h = Harness(forwarding=300_000)
    res = h.run("latency", rate=400_000, fill_rate=50_000)
    assert res.extra["rate"] == 400_000
    assert res.extra["verdict"] == "fail"
    assert res.extra["reason"] == "forward loss 100000/400000 = 25.000000% > 0.000000%"
    res = h.run("pdv", rate=100_000, fill_rate=50_000)
    assert (res.unit, res.extra["verdict"], res.extra["reason"]) == ("s", "pass", "")


def test_latency_without_samples_fails_the_repetition() -> None:
    h = Harness()

    def no_samples(*args: Any, _orig: Any = h.tester.phase2) -> PhaseResult:
        return dataclasses.replace(_orig(*args), latency={})

    h.tester.phase2 = no_samples  # type: ignore[method-assign]
    res = h.run("latency", rate=100_000, fill_rate=50_000)
    assert res.extra["failed"] == "the tester returned no latency samples"


@pytest.mark.parametrize(("validation", "learns"), [("off", [False, False]), ("every_step", [True, True])])
def test_cps_steps_learn_tuples_only_when_they_are_validated(validation: str, learns: list[bool]) -> None:
    h = Harness()
    learn_args: list[object] = []

    def spy(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        learn_args.append(learn)
        return _orig(rate, learn)

    h.tester.phase1 = spy  # type: ignore[method-assign]
    h.run("cps", upper=400_000, error=100_000, validation=validation)
    assert learn_args == learns  # 200,000 passes, 300,000 fails


def test_a_search_that_stays_invalid_names_the_rate_and_the_last_reason() -> None:
    # 500,000 and 250,000 lose frames (ceiling 200,000); 125,000 passes the loss check but the table holds 100
    # connections more than the frames could create, three times in a row
    h = Harness()
    surplus_connections(h, 100)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=2)
    assert res.extra["failed"] == (
        "3 invalid trials in a row at rate 125000 (max_invalid=2); "
        "last: DUT table holds 4100 connections, more than the 4000 frames sent"
    )


def test_teardown_counts_a_t0_stored_without_the_measured_flag_as_timed() -> None:
    # results stored without the T_0_measured key timed their T_0: median(0.9, 0.4, 0.6) = 0.6 is reused
    earlier = tuple(
        RepetitionResult(POINT.id, "teardown", i, 1.0, "conn/s", extra={"T_0": t0})
        for i, t0 in enumerate((0.9, 0.4, 0.6))
    )
    h = Harness(flush_empty=0.75, flush_per_connection=1e-4)
    res = h.run("teardown", repetition=3, earlier=earlier, fill_rate=50_000, empty_repetitions=3)
    assert h.kinds() == ["fill", "flush_filled"]
    assert res.extra["T_0"] == pytest.approx(0.6)


def test_a_monitor_that_took_no_samples_adds_nothing_to_the_trial() -> None:
    h = Harness()
    h.dut.stop_monitor = lambda: {}  # type: ignore[method-assign]
    h.run("cps", upper=400_000, error=100_000, monitor_interval=0.5)
    assert h.dut.events.count("monitor") == 3  # started around both phase 1s and the validation of 200,000
    assert all("monitor" not in r.extra for r in h.records)


def test_capacity_probes_keep_the_points_destination_ports_whatever_the_plan_holds() -> None:
    """A plan narrower than the point (10 destination ports, not 20): each probe is prepared with the point's 20.

    max_connections 4,000 = 200 ports = the start: one probe, then the point's own plan again.
    """
    h = capacity_harness(lambda n: 1000.0)
    h.plan = dataclasses.replace(h.plan, dst_ports=PortRange(80, 89))
    prepared: list[PortRange] = []

    def prepare(plan: Any, _orig: Any = h.tester.prepare) -> None:
        prepared.append(plan.dst_ports)
        _orig(plan)

    h.tester.prepare = prepare  # type: ignore[method-assign]
    res = h.run("capacity", upper=2000, error=1, max_connections=4000, unchecked=True)
    assert res.value == 4000
    assert prepared == [PortRange(80, 99), PortRange(80, 89)]


def test_mlrsearch_result_names_its_unit_algorithm_and_directions() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000)
    res = h.run("throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr")
    assert res.unit == "fps"
    trials = [r for r in h.records if r.kind == "phase2"]
    assert res.extra == {
        "all_frames_per_second": res.value * 2,  # both directions carry the per-direction rate
        "algorithm": "mlr",
        "directions": 2,
        "direction_mode": "bidirectional",
        "mlr_preset": "rfc2544",
        "mlr_goal": {  # the harness's trials last 1 s, short_duration too: every trial is a final one
            "loss_ratio": 0.0,
            "exceed_ratio": 0.0,
            "relative_width": 0.001,  # error 1,000 / upper 1,000,000
            "initial_trial_duration": 1.0,
            "final_trial_duration": 1.0,
            "duration_sum": 1.0,
            "expansion_coefficient": 2,
            "preceding_targets": 2,
        },
        "conditional_throughput": res.value,  # acceptance 0: the relevant lower bound itself
        "short_steps": 0,
        "full_steps": len(trials),
        "no_passing_rate": False,
        "steps": len(trials),
        "invalid": 0,
        "at_upper_limit": False,
        "tester_bound": False,
        "tester_ceiling": None,
        "lower": res.value,
        "upper": res.value + res.error,
    }
    assert res.error <= 1000 and all(r.extra["search_trial"] == "full" for r in trials)


def test_mlrsearch_trial_that_stays_invalid_names_itself() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(tester_max_rate=60_000)  # the fill at 50,000 works; loads above 60,000 never
    res = h.run(
        "throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr", max_invalid=0
    )
    assert res.extra["failed"].startswith("MLRsearch trial at ")
    assert res.extra["failed"].endswith(
        ": 1 invalid trials in a row; last: tester could not keep the rate: fake: cannot exceed 60000 fps"
    )


def test_mlrsearch_that_finds_no_passing_load_stores_no_passing_rate_and_never_goes_below_one_fps() -> None:
    """Forwarding ceiling 0.5 fps: at 1 fps the one frame of the 1 s trial is lost, at 1,000 fps nearly all are.

    lower 0 is raised to MLRsearch's smallest load of 1 fps; no load passes, so there is no relevant lower bound:
    the result stores no value and ``no_passing_rate`` as the other searches do (it stored 0.0 before).
    """
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=0.5)
    res = h.run("throughput", upper=1000, error=1, fill_rate=50_000, algorithm="mlr")
    assert res.value is None and res.extra["no_passing_rate"] is True
    assert res.extra["conditional_throughput"] is None
    rates = [r.intended_rate for r in h.records if r.kind == "phase2"]
    assert (min(rates), max(rates)) == (1.0, 1000.0)


def test_mlr_without_mlrsearch_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "MLRsearch", None)  # import MLRsearch now raises ImportError
    res = Harness().run("throughput", upper=1000, error=1, fill_rate=50_000, algorithm="mlr")
    assert res.extra["failed"] == "algorithm 'mlr' needs MLRsearch: pip install 'natbench[mlr]'"


def test_throughput_steps_carry_their_search_interval() -> None:
    # forwarding ceiling 250,000: 200,000 passes in [0, 400,000], 300,000 fails in [200,000, 400,000]
    h = Harness(forwarding=250_000)
    h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    steps = [(r.intended_rate, r.lower, r.upper) for r in h.records if r.kind == "phase2"]
    assert steps == [(200_000, 0, 400_000), (300_000, 200_000, 400_000)]


def test_mlrsearch_runs_without_a_practical_time_limit_and_without_logging(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Real searches of long trials take many minutes: the wall clock MLRsearch checks moves 1,000 s per trial here.

    With MLRsearch's own limit (1,200 s) the search would stop after two trials; natbench lifts the limit, so the
    search ends on the forwarding ceiling of 300,000 fps as without a clock. MLRsearch's debug output is dropped.
    """
    mlr = pytest.importorskip("MLRsearch.multiple_loss_ratio_search", reason="MLRsearch (extra 'mlr') is not installed")
    now = [0.0]

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return now[0]

    monkeypatch.setattr(mlr, "time", Clock)
    h = Harness(forwarding=300_000)
    orig = h.tester.phase2

    def slow(rate: float, duration: float, *a: Any) -> PhaseResult:
        now[0] += 1000.0
        return orig(rate, duration, *a)

    h.tester.phase2 = slow  # type: ignore[method-assign]
    with caplog.at_level("DEBUG"):
        res = h.run("throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr")
    assert 295_000 <= res.value <= 300_000
    assert now[0] >= 2000.0  # beyond MLRsearch's default limit of 1,200 s
    assert [r for r in caplog.records if r.name == "root"] == []


def test_mlrsearch_gets_one_goal_with_the_metrics_settings_and_a_config_without_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the adapter hands MLRsearch decides what its result means, so every field is pinned.

    The default preset (rfc2544): acceptance 0.001 -> loss ratio 0.001; exceed ratio 0: no trial at the reported
    load may exceed it; error 1,000 of upper 400,000 -> relative width 0.0025; final trials of the metric's 5 s and
    a duration sum of 5 s (one passing full trial makes a lower bound); initial trials of short_duration (1 s), two
    preceding targets and expansion coefficient 2 (CSIT's); no fail-fast; loads from max(lower, 1) = 1 to 400,000
    fps; no warm-up trial; a time limit of 1e9 s (none in practice). (Before the presets every trial lasted the
    whole 5 s with no preceding target.)
    """
    mlrsearch = pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    seen: dict[str, Any] = {}
    real_goal = mlrsearch.SearchGoal

    def goal(**kwargs: Any) -> Any:
        seen["goal"] = kwargs
        return real_goal(**kwargs)

    class Search:
        def __init__(self, config: Any) -> None:
            seen["config"] = config

        def search(self, measurer: Any, debug: Any) -> dict[Any, Any]:
            return {g: None for g in seen["config"].goals}  # no bounds: no passing rate

    monkeypatch.setattr(mlrsearch, "SearchGoal", goal)
    monkeypatch.setattr(mlrsearch, "MultipleLossRatioSearch", Search)
    res = Harness().run(
        "throughput", lower=0, upper=400_000, error=1000, acceptance=0.001, duration=5.0, fill_rate=1, algorithm="mlr"
    )
    assert res.value is None and res.extra["no_passing_rate"] is True
    assert seen["goal"] == {
        "loss_ratio": 0.001,
        "exceed_ratio": 0.0,
        "relative_width": 0.0025,
        "initial_trial_duration": 1.0,
        "final_trial_duration": 5.0,
        "duration_sum": 5.0,
        "preceding_targets": 2,
        "expansion_coefficient": 2,
        "fail_fast": False,
    }
    config = seen["config"]
    assert len(list(config.goals)) == 1
    assert (config.min_load, config.max_load, config.warmup_duration, config.search_duration_max) == (
        1.0,
        400_000,
        0.0,  # MLRsearch keeps "no warm-up" as 0.0
        10**9,
    )


class ShortValidation(FakeTester):
    """The fake tester; it declares 10 ms of timer slack, and its validation sends for 0.1 s, 5 % short of the rate."""

    def evidence(self) -> TrialEvidence:
        return TrialEvidence(pacing_slack=0.01)

    def validate(self, rate: float) -> PhaseResult:
        return dataclasses.replace(super().validate(rate), achieved_rate=rate * 0.95, duration=0.1)


@pytest.mark.parametrize(("gap", "slept"), [(0.0, []), (2.0, [2.0])])
def test_a_validation_is_judged_with_the_testers_slack_and_waits_only_a_gap_it_has(
    gap: float, slept: list[float]
) -> None:
    # 5 % short over 0.1 s is within 10 ms of the tester's timer (10 % of the phase), beyond the 0.1 % tolerance:
    # the validation passes; a gap of 0 sleeps not at all
    h = Harness()
    h.tester = ShortValidation(h.dut)
    h.tester.prepare(h.plan)
    settings, options = build("validation", rate=50_000)
    ctx: ProcedureContext[Any] = ProcedureContext(
        h.tester, h.dut, POINT, h.plan, "validation", 0, settings, emit=h.records.append, sleep=h.slept.append,
        options=options,
    )  # fmt: skip
    ok, rec = validated_step(ctx, 50_000, 100_000, gap=gap)
    assert (ok, rec.kind, rec.verdict, rec.reason) == (True, "validation", Verdict.PASS, "")
    assert h.slept == slept


# ---------------------------------------------------------------------------- latency: tagged frames and PDV bounds
def test_latency_options_tag_a_count_or_a_rate_of_frames() -> None:
    counted = latency_options(LatencySettings(fill_rate=1000, duration=4.0, tag_delay=1.0, tagged_frames=600), 500.0)
    # a count: that many frames spread over the trial after the warm-up, at the tester's default tag rate
    assert (counted.latency, counted.latency_frames, counted.latency_delay, counted.latency_rate) == (
        True,
        600,
        1.0,
        1000.0,
    )
    rated = latency_options(
        LatencySettings(fill_rate=1000, duration=4.0, tag_delay=1.0, tagged_frames=600, tagged_rate=250.0), 500.0
    )
    # a rate: 250 tags per second from the warm-up on, however many that makes
    assert (rated.latency_frames, rated.latency_rate) == (None, 250.0)


def test_latency_options_refuse_more_tagged_frames_than_the_trial_after_the_warm_up_holds() -> None:
    s = LatencySettings(fill_rate=1000, duration=4.0, tag_delay=1.0, tagged_frames=1501)
    # 3 s after the warm-up at 500 frames/s: 1,500 frames
    with pytest.raises(SearchError) as err:
        latency_options(s, 500.0)
    assert str(err.value) == (
        "1501 tagged frames do not fit into 3 s at 500 frames/s; lower tagged_frames or tag_delay, or lengthen duration"
    )
    assert latency_options(s.model_copy(update={"tagged_frames": 1500}), 500.0).latency_frames == 1500


def test_latency_at_a_tag_rate_asks_no_tag_count() -> None:
    h = Harness()
    with_latency(h)
    assert h.run("latency", rate=100_000, fill_rate=50_000, tagged_frames=400).extra["tags_asked"] == 400
    res = h.run("latency", rate=100_000, fill_rate=50_000, tagged_frames=400, tagged_rate=100.0)
    assert res.extra["tags_asked"] is None


def test_a_delay_result_keeps_the_testers_tag_schedule_when_it_reports_one() -> None:
    h = Harness()
    schedule = {"forward": {"start": 50_000, "every": 100, "count": 400}}

    def phase2(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        res: PhaseResult = _orig(rate, duration, directions, measure)
        return dataclasses.replace(res, extra={"tag_schedule": schedule})

    assert "tag_schedule" not in h.run("latency", rate=100_000, fill_rate=50_000).extra
    h.tester.phase2 = phase2  # type: ignore[method-assign]
    assert h.run("latency", rate=100_000, fill_rate=50_000).extra["tag_schedule"] == schedule
    assert h.run("pdv", rate=100_000, fill_rate=50_000).extra["tag_schedule"] == schedule


def test_pdvs_error_bound_is_the_largest_absolute_error_of_a_directions_99_9th_percentile() -> None:
    h = Harness()
    # a histogram's relative errors: forward 1 % of 100 us = 1 us, reverse 2 % of 80 us = 1.6 us
    lat = {
        Direction.FORWARD: dataclasses.replace(FORWARD_LATENCY, frames="all", error_bound=0.01),
        Direction.REVERSE: dataclasses.replace(REVERSE_LATENCY, frames="all", error_bound=0.02),
    }

    def phase2(
        rate: float, duration: float, directions: Directions, measure: Phase2Options, _orig: Any = h.tester.phase2
    ) -> PhaseResult:
        return dataclasses.replace(_orig(rate, duration, directions, measure), latency=lat)

    h.tester.phase2 = phase2  # type: ignore[method-assign]
    res = h.run("pdv", rate=100_000, fill_rate=50_000)
    assert res.extra["error_bound"] == pytest.approx(1.6e-6)
    assert res.value == pytest.approx(90e-6)
