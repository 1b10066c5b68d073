"""Tests of the RFC 9693 procedures against the fake tester and DUT (no sleeping, no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from natbench.errors import ConfigError, DutError, SearchError
from natbench.procedures import MetricSettings, ProcedureContext, judge_phase, run_repetition
from natbench.results import Direction, DirectionCounts, PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.testers.base import Directions
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections


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

    def run(self, metric: str, prior: dict[str, list[float]] | None = None, **settings: Any) -> RepetitionResult:
        settings.setdefault("gap", 0.5)
        settings.setdefault("duration", 1.0)
        self.records.clear()
        ctx = ProcedureContext(
            tester=self.tester,
            dut=self.dut,
            point=POINT,
            plan=self.plan,
            metric=metric,
            repetition=0,
            settings=MetricSettings(**settings),
            emit=self.records.append,
            clock=lambda: 0.0,
            sleep=self.slept.append,
            prior=prior or {},
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
    assert all(r.kind == "phase1" for r in h.records)
    # the table is emptied before every step, and every stored step carries its bounds
    assert h.dut.events.count("reset") == len(h.records)
    assert all(r.lower is not None and r.upper is not None for r in h.records)
    assert [r.step for r in h.records] == list(range(len(h.records)))
    passing = [r for r in h.records if r.verdict is Verdict.PASS]
    assert passing and all(r.extra["dut_connections"] == POINT.connections for r in passing)


def test_cps_uses_the_acceptance_criterion() -> None:
    # at 0.3 % above the ceiling 0.3 % of the frames are lost: fails strictly, passes with 99 % acceptance
    strict = Harness(cps=100_000).run("cps", upper=200_000, error=100)
    lax = Harness(cps=100_000).run("cps", upper=200_000, error=100, acceptance=0.01)
    assert strict.value <= 100_000 < lax.value <= 101_100


def test_invalid_steps_are_retried_and_not_counted() -> None:
    h = Harness(cps=200_000, invalid_every=3)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=2)
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
    # a DUT-side invalid cause (no state kept) still fails after max_invalid retries at one rate
    h = Harness(keeps_state=False)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=2)
    assert "3 invalid trials in a row" in res.extra["failed"]
    assert [r.verdict for r in h.records[-3:]] == [Verdict.INVALID] * 3
    assert all("DUT table holds 0 connections" in r.reason for r in h.records[-3:])
    with pytest.raises(SearchError):
        h.run("cps", lower=2000, upper=1_000_000, error=1000, max_invalid=2, on_search_error="raise")


def test_cps_step_is_invalid_when_the_dut_keeps_no_state() -> None:
    h = Harness(keeps_state=False)
    res = h.run("cps", upper=1_000_000, error=1000, max_invalid=1)
    assert res.value is None
    invalid = [r for r in h.records if r.verdict is Verdict.INVALID]
    assert len(invalid) == 2
    assert "DUT table holds 0 connections" in invalid[0].reason


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
    # the fill itself is invalid now (table holds fewer than the frames that arrived)
    assert res.value is None
    assert "DUT table holds 3990 connections" in h.records[0].reason


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
    h = Harness()
    res = h.run("throughput", upper=1_000_000, error=1000)
    assert res.value is None and "fill_rate" in res.extra["failed"]
    res = h.run("throughput", prior={"cps": [100_000.0]}, upper=1_000_000, error=1000)
    assert h.records[0].intended_rate == 50_000  # half the measured cps


def test_frame_loss_rate_curve_stops_after_two_loss_free_rates() -> None:
    h = Harness(forwarding=500_000)
    res = h.run("frame_loss", upper=1_000_000, fill_rate=50_000)
    curve = res.extra["curve"]
    assert [r for r, _ in curve] == [1_000_000, 900_000, 800_000, 700_000, 600_000, 500_000, 400_000]
    assert curve[0][1] == pytest.approx(0.5)
    assert curve[1][1] == pytest.approx(1 - 5 / 9, abs=1e-6)
    assert [flr for _, flr in curve[-2:]] == [0.0, 0.0]
    assert res.value == pytest.approx(0.5)


def test_frame_loss_at_explicit_rates() -> None:
    h = Harness(forwarding=500_000)
    res = h.run("frame_loss", rates=(800_000, 400_000), fill_rate=50_000, flr_stop_after_zero=0)
    assert [r for r, _ in res.extra["curve"]] == [800_000, 400_000]


def test_latency_and_pdv_run_at_the_throughput_rate() -> None:
    h = Harness(forwarding=300_000)
    lat = h.run("latency", prior={"throughput": [290_000.0, 300_000.0, 310_000.0]}, fill_rate=50_000)
    assert lat.extra["rate"] == 300_000.0
    assert lat.unit == "s" and lat.value > 0
    assert set(lat.extra["per_direction"]) == {"forward", "reverse"}
    assert lat.extra["worst_case"] >= lat.value
    assert "latency" in h.records[-1].extra
    pdv = h.run("pdv", rate=100_000, fill_rate=50_000)
    assert pdv.extra["rate"] == 100_000
    per = pdv.extra["per_direction"]
    assert pdv.value == max(per.values()) > 0
    missing = h.run("latency", fill_rate=50_000)
    assert missing.value is None and "needs a rate" in missing.extra["failed"]


def test_teardown_rate_arithmetic() -> None:
    h = Harness(flush_empty=0.75, flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000)
    assert h.kinds() == ["fill", "flush_filled", "flush_empty"]
    t_n = 0.75 + 4000 * 1e-5
    assert res.extra["filled_delete_s"] == res.extra["T_N"] == pytest.approx(t_n)
    assert res.extra["empty_delete_s"] == res.extra["T_0"] == pytest.approx(0.75)
    assert res.extra["connections"] == 4000
    assert res.extra["deletion_time"] == pytest.approx(4000 * 1e-5)
    assert res.value == pytest.approx(4000 / (t_n - 0.75))  # 100,000 connections per second
    assert res.value == pytest.approx(100_000)
    assert [r.value for r in h.records[1:]] == [pytest.approx(t_n), pytest.approx(0.75)]
    assert h.slept == [0.5]


def test_teardown_rejects_a_non_positive_deletion_time() -> None:
    h = Harness(flush_per_connection=0.0)
    res = h.run("teardown", fill_rate=50_000)
    assert res.value is None and "not above the empty-table time" in res.extra["failed"]


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
    s = MetricSettings(acceptance=0.001)

    def phase(sent: int, valid: int, *, ok: bool = True, achieved: float = 1000.0, received: int | None = None):
        return PhaseResult(
            1000.0,
            achieved,
            1.0,
            {Direction.FORWARD: DirectionCounts(sent, valid if received is None else received, valid)},
            tester_ok=ok,
            tester_note="queue full",
        )

    assert judge_phase(phase(1000, 1000), s) == (Verdict.PASS, "")
    assert judge_phase(phase(1000, 999), s)[0] is Verdict.PASS
    assert judge_phase(phase(1000, 998), s)[0] is Verdict.FAIL
    assert judge_phase(phase(1000, 1000, ok=False), s) == (
        Verdict.INVALID,
        "tester could not keep the rate: queue full",
    )
    assert judge_phase(phase(1000, 1000, achieved=990.0), s)[0] is Verdict.INVALID
    assert judge_phase(phase(1000, 1000, received=10), s)[0] is Verdict.INVALID


def test_settings_from_campaign_shapes() -> None:
    s = MetricSettings.from_any(
        {"repetitions": 20, "directions": "forward", "tagged_rate": 500, "connection_error": 100, "bogus": 1},
        acceptance=0.0001,
    )
    assert (s.repetitions, s.directions, s.latency_rate, s.capacity_error, s.acceptance) == (
        20,
        Directions.FORWARD,
        500,
        100,
        0.0001,
    )


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
    with pytest.raises(ConfigError, match=f"^{field}: "):
        MetricSettings(**{field: value})


def test_refill_after_keeps_every_step_within_the_connection_timeout() -> None:
    h = Harness()
    now = [0.0]

    def phase2(rate: float, duration: float, *a: Any, _orig: Any = h.tester.phase2) -> PhaseResult:
        now[0] += duration  # time passes while traffic runs
        return _orig(rate, duration, *a)

    h.tester.phase2 = phase2  # type: ignore[method-assign]

    def clock() -> float:
        return now[0]

    ctx = ProcedureContext(
        tester=h.tester,
        dut=h.dut,
        point=POINT,
        plan=h.plan,
        metric="throughput",
        repetition=0,
        settings=MetricSettings(upper=1_000_000, error=50_000, fill_rate=50_000, gap=0, duration=30, refill_after=100),
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
