"""Procedure building blocks seen from outside: phase-2 options, trial records, optional DUT hooks, verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from metric_settings import TOLERANCE, build
from pydantic import ValidationError

from natbench.duts.executors import LocalExecutor
from natbench.duts.group import DutGroup
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import parse_recipe
from natbench.errors import ConfigError, DutError
from natbench.judging import judge_phase
from natbench.metrics import MetricSettings, ProcedureContext
from natbench.metrics.context import RunOptions
from natbench.metrics.registry import run_repetition
from natbench.metrics.throughput import ThroughputSettings
from natbench.plugins import Directions, MonitorsCpu, Phase2Options, ReportsSupport
from natbench.results import Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.traffic.plan import ResponderMode
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections


def ticks() -> Callable[[], float]:
    """A clock that says 0, 1, 2, ... on its successive calls."""
    it = iter(range(10_000))
    return lambda: float(next(it))


class Bench:
    """A fake testbed; ``dut`` is what the procedure sees (it may differ from the DUT the tester's frames pass)."""

    def __init__(self, mode: ResponderMode = ResponderMode.LEARN, **model: Any) -> None:
        self.fake = FakeDut(FakeModel(**model))
        self.fake.setup(POINT)
        self.dut: Any = self.fake
        self.tester = FakeTester(self.fake)
        self.plan = TrafficPlan(
            Family.NAT44,
            AddressPlan.default(Family.NAT44),
            POINT.src_ports,
            POINT.dst_ports,
            64,
            3,
            responder_mode=mode,
        )
        self.tester.prepare(self.plan)
        self.records: list[TrialRecord] = []
        self.slept: list[float] = []
        self.options: list[Phase2Options] = []
        orig = self.tester.phase2

        def phase2(rate: float, duration: float, directions: Directions, options: Phase2Options) -> PhaseResult:
            self.options.append(options)
            return orig(rate, duration, directions, options)

        self.tester.phase2 = phase2  # type: ignore[method-assign]

    def run(self, metric: str, *, clock: Callable[[], float] = lambda: 0.0, repetition: int = 0, **settings: Any):
        resolved, options = build(metric, {"duration": 1.0}, **settings)
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
            options=options,
        )
        return run_repetition(ctx)


# ---------------------------------------------------------------------------- phase-2 options
def test_forwarding_steps_ask_for_the_runs_selection_without_latency() -> None:
    b = Bench(nat=False, stateless_forwarding=250_000)
    b.run("forwarding", upper=400_000, error=100_000, selection="linear")
    assert b.options == [Phase2Options(latency=False, selection="linear")] * 2


def test_throughput_steps_ask_for_the_runs_selection_without_latency_or_mappings_in_learn_mode() -> None:
    b = Bench(forwarding=250_000)
    b.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, selection="fixed", gap=0)
    assert b.options == [Phase2Options(latency=False, selection="fixed", mappings=None)] * 2
    assert b.slept == []  # gap 0: no sleep after the fill
    phase2 = [r for r in b.records if r.kind == "phase2"]
    assert [r.extra["dut_connections"] for r in phase2] == [4000, 4000]  # counted after every step


def test_read_mode_hands_the_duts_tuples_to_the_tester_and_to_every_phase2_step() -> None:
    b = Bench(ResponderMode.READ, forwarding=250_000)
    b.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    listed = tuple(b.fake.mappings())
    assert len(listed) == 4000
    assert b.tester.loaded == listed
    assert [o.mappings for o in b.options] == [listed, listed]


@pytest.mark.parametrize("mode", [ResponderMode.READ, ResponderMode.LEARN])
def test_the_time_the_duts_table_read_took_goes_with_the_first_phase2_step_after_its_fill(mode: ResponderMode) -> None:
    # read mode on a DUT that counts: the fill is judged by the count, then the DUT's table is read for the Responder
    # (2.5 s on the clock here); the first phase-2 step records how long the read took, the next one nothing. Learn
    # mode reads no table, and no step records a read.
    b = Bench(mode, forwarding=250_000)
    now = [0.0]

    def mappings(_orig: Any = b.fake.mappings) -> Any:
        now[0] += 2.5
        return _orig()

    b.fake.mappings = mappings  # type: ignore[method-assign]
    b.run("throughput", clock=lambda: now[0], upper=400_000, error=100_000, fill_rate=50_000)
    phase2 = [r for r in b.records if r.kind == "phase2"]
    assert [r.kind for r in b.records] == ["fill", "phase2", "phase2"]
    if mode is ResponderMode.READ:
        assert phase2[0].extra["dut_mappings_read_s"] == 2.5
        assert "dut_mappings_read_s" not in phase2[1].extra
    else:
        assert all("dut_mappings_read_s" not in r.extra for r in phase2)


def test_read_mode_with_an_empty_listing_fails_the_repetition() -> None:
    b = Bench(ResponderMode.READ)
    b.fake.mappings = lambda: []  # type: ignore[method-assign]
    res = b.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    assert res.extra["failed"] == "responder mode read: the DUT listed no mappings after phase 1"


def test_compute_mode_checks_the_mappings_once_per_repetition() -> None:
    # refill="always" fills before each of the two steps; only the first fill is followed by the check
    b = Bench(ResponderMode.COMPUTE, forwarding=250_000)
    b.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, refill="always")
    assert b.fake.events.count("mappings") == 1
    assert [(r.kind, r.extra.get("port_preservation")) for r in b.records] == [
        ("fill", None),
        ("phase2", "verified"),
        ("fill", "verified"),
        ("phase2", "verified"),
    ]


# ---------------------------------------------------------------------------- trial records
def test_phase2_records_carry_their_times_and_the_tester_and_dut_facts() -> None:
    """The clock ticks once per call: each forwarding step starts at one tick and ends at the next."""
    b = Bench(nat=False, stateless_forwarding=250_000)
    res = b.run("forwarding", clock=ticks(), repetition=4, upper=400_000, error=100_000, timeout=3.5)
    assert (res.point_id, res.metric, res.repetition) == (POINT.id, "forwarding", 4)
    assert [(r.started_at, r.ended_at) for r in b.records] == [(0.0, 1.0), (2.0, 3.0)]
    first = b.records[0]
    assert (first.point_id, first.metric, first.repetition, first.step) == (POINT.id, "forwarding", 4, 0)
    assert (first.intended_rate, first.achieved_rate) == (200_000, 200_000)  # the fake keeps every rate it can
    assert first.extra["tester"] == {"receive_timeout": 3.5}
    assert first.extra["responder_mode"] == "learn"
    assert first.extra["duration"] == 1.0
    assert "learned" not in first.extra and "port_preservation" not in first.extra


def test_a_fill_record_carries_what_was_learned_and_how_long_it_took() -> None:
    # 4,000 frames at 50,000 per second take 0.08 s
    b = Bench(forwarding=250_000)
    b.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    fill = b.records[0]
    assert (fill.kind, fill.extra["learned"], fill.extra["duration"]) == ("fill", 4000, 0.08)


def test_a_tester_without_its_own_word_on_the_mode_is_recorded_with_the_plans() -> None:
    b = Bench()
    orig = b.tester.phase1
    b.tester.phase1 = lambda rate, learn: dataclasses.replace(orig(rate, learn), responder_mode="")  # type: ignore[method-assign]
    b.run("cps", upper=400_000, error=100_000)
    # 200,000: phase 1 (the patched one) and its validation (the tester's own word); 300,000: phase 1 fails
    assert [(r.kind, r.extra["responder_mode"]) for r in b.records] == [
        ("phase1", "learn"),
        ("validation", "learn"),
        ("phase1", "learn"),
    ]


def test_an_invalid_trial_records_the_testers_note() -> None:
    b = Bench(tester_max_rate=100_000)
    b.run("cps", upper=400_000, error=100_000, max_invalid=0)
    assert b.records[0].extra["tester_note"] == "fake: cannot exceed 100000 fps"


def test_timed_deletes_have_no_rates() -> None:
    b = Bench()
    b.run("teardown", fill_rate=50_000)
    assert [(r.kind, r.intended_rate, r.achieved_rate) for r in b.records[1:]] == [
        ("flush_filled", 0.0, 0.0),
    ] + [("flush_empty", 0.0, 0.0)] * 3  # the empty table timed three times (empty_samples)


# ---------------------------------------------------------------------------- optional DUT hooks
class BareDut:
    """A DUT with the protocol's operations only: no ``supports`` hook, no monitor (``start`` adds a start hook)."""

    def __init__(self, inner: FakeDut) -> None:
        self.inner = inner

    def reset_connections(self) -> None:
        self.inner.reset_connections()

    def count_connections(self) -> int:
        return self.inner.count_connections()

    def timed_flush(self) -> float:
        return self.inner.timed_flush()


class HalfMonitorDut(BareDut):
    """Has ``start_monitor`` but no ``stop_monitor``: the monitor cannot be used."""

    def start_monitor(self, interval: float = 1.0) -> None:
        self.inner.events.append("monitor")


@pytest.mark.parametrize("dut", [BareDut, HalfMonitorDut])
def test_a_dut_without_a_capability_hook_or_a_full_monitor_is_counted_and_not_monitored(dut: type[BareDut]) -> None:
    b = Bench()
    b.dut = dut(b.fake)
    res = b.run("cps", upper=400_000, error=100_000, monitor_interval=0.5)
    assert res.value == 200_000
    # counted without a hook to ask first after the 200,000 phase 1 (its validation counts nothing); 300,000 fails,
    # and a failed phase 1 is counted too (every trial records the DUT's count): 4,000 x 200,000 / 300,000 = 2,666
    assert [(r.kind, r.extra.get("dut_connections")) for r in b.records] == [
        ("phase1", 4000),
        ("validation", None),
        ("phase1", 2666),
    ]
    assert all("monitor" not in r.extra for r in b.records)
    assert "monitor" not in b.fake.events


def test_a_dut_that_says_it_cannot_count_is_not_asked_to() -> None:
    b = Bench()
    b.fake.supports = lambda op: op != "count_connections"  # type: ignore[method-assign]
    res = b.run("cps", upper=400_000, error=100_000)
    assert res.value == 200_000
    assert all("dut_connections" not in r.extra for r in b.records)


NO_COUNT_RECIPE = """
recipe: no-count
stateful: true
steps:
  setup: ["true"]
  teardown: ["true"]
  reset_connections: ["true"]
"""


@pytest.mark.parametrize("count_step", ["", "  count_connections:\n    unsupported: this DUT cannot count\n"])
def test_a_recipe_dut_that_cannot_count_fails_the_table_check_instead_of_skipping_it(count_step: str) -> None:
    """Recipe DUTs have no ``supports`` hook: a table check asks the recipe, whose missing (or unsupported)
    count step ends the repetition with its DutError; the check is not skipped as for a DUT that says it
    cannot count."""
    dut = RecipeDut("nat", parse_recipe(NO_COUNT_RECIPE + count_step, "no-count.yaml"), LocalExecutor())
    assert isinstance(dut, MonitorsCpu) and not isinstance(dut, ReportsSupport)
    assert isinstance(DutGroup([dut]), MonitorsCpu) and not isinstance(DutGroup([dut]), ReportsSupport)
    b = Bench()
    dut.setup(dataclasses.replace(POINT, cores=None))
    b.dut = dut
    try:
        with pytest.raises(DutError, match=r"step count_connections: (recipe no-count has no|unsupported on this)"):
            b.run("cps", upper=400_000, error=100_000)
    finally:
        dut.teardown()


# ---------------------------------------------------------------------------- failures and settings
def test_a_failed_repetition_keeps_its_metrics_unit() -> None:
    res = Bench(flush_per_connection=0.0).run("teardown", fill_rate=50_000)
    assert (res.value, res.unit, res.error) == (None, "conn/s", None)


def test_an_unknown_metric_lists_the_known_ones() -> None:
    from natbench.errors import SearchError

    with pytest.raises(SearchError) as err:
        Bench().run("jitter")
    assert str(err.value) == (
        "unknown metric 'jitter'; known: cps, throughput, frame_loss, latency, pdv, teardown, capacity, validation, "
        "forwarding"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"refill": "sometimes"}, "refill: Input should be 'auto' or 'always'"),
        ({"repetitions": 0}, "repetitions: Input should be greater than or equal to 1"),
        (
            {"acceptance": 1.0},
            "acceptance: Value error, acceptance is a loss ratio below 1 (0.0001 = 0.01 % loss, the seeds' 99.99 % "
            "criterion), got 1.0",
        ),
        ({"max_invalid": -1}, "max_invalid: Input should be greater than or equal to 0"),
    ],
)
def test_bad_settings_say_what_is_allowed(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        ThroughputSettings(upper=400_000, error=100_000, fill_rate=50_000, **settings)
    (first,) = err.value.errors()
    assert f"{first['loc'][0]}: {first['msg']}" == message


def test_a_bad_run_option_says_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        RunOptions(on_search_error="ignore")
    assert str(err.value) == "on_search_error: must be one of record, raise, got 'ignore'"


# ---------------------------------------------------------------------------- verdicts
def phase(*counts: tuple[Direction, int, int, int], intended: float = 1000.0, achieved: float = 1000.0, **kw: Any):
    return PhaseResult(intended, achieved, 1.0, {d: DirectionCounts(s, r, v) for d, s, r, v in counts}, **kw)


def test_a_tester_that_gives_no_reason_is_said_to_give_none() -> None:
    p = phase((Direction.FORWARD, 10, 10, 10), tester_ok=False, tester_note="")
    assert judge_phase(p, 0.0, TOLERANCE) == (Verdict.INVALID, "tester could not keep the rate: no reason given")


def test_a_negative_valid_count_is_inconsistent() -> None:
    p = phase((Direction.FORWARD, 10, 10, -1))
    assert judge_phase(p, 0.0, TOLERANCE) == (
        Verdict.INVALID,
        "inconsistent forward counts: sent 10, received 10, valid -1",
    )


def test_a_rate_of_one_frame_per_second_sent_at_half_is_short() -> None:
    p = phase((Direction.FORWARD, 1, 1, 1), intended=1.0, achieved=0.5)
    assert judge_phase(p, 0.0, TOLERANCE) == (Verdict.INVALID, "tester fell behind: achieved 0.5 of 1 (50.00% short)")


def test_the_direction_with_the_larger_loss_ratio_is_judged_not_the_last_named() -> None:
    # forward loses 100 of 1,000 (10 %), reverse 10 of 1,000 (1 %); acceptance 5 %: forward fails the trial
    p = phase((Direction.FORWARD, 1000, 900, 900), (Direction.REVERSE, 1000, 990, 990))
    assert judge_phase(p, 0.05, TOLERANCE) == (
        Verdict.FAIL,
        "forward loss 100/1000 = 10.000000% > 5.000000%",
    )


def test_a_step_without_any_counts_names_every_missing_direction() -> None:
    b = Bench(nat=False)
    orig = b.tester.phase2
    b.tester.phase2 = lambda *a: dataclasses.replace(orig(*a), counts={})  # type: ignore[method-assign]
    res = b.run("forwarding", upper=400_000, error=100_000, max_invalid=0)
    assert res.value is None
    assert b.records[0].reason == "the tester reported no counts for forward, reverse"
    assert b.records[0].value is None


def test_the_rate_check_applies_only_to_a_trial_with_an_intended_rate() -> None:
    # nothing was meant to be sent, so whatever rate the tester reports is no shortfall (and no division by zero)
    p = phase((Direction.FORWARD, 0, 0, 0), intended=0.0, achieved=-1.0)
    assert judge_phase(p, 0.0, TOLERANCE) == (Verdict.PASS, "")


def test_a_failed_repetition_of_a_registered_procedure_without_a_unit_has_an_empty_unit() -> None:
    from natbench.errors import SearchError
    from natbench.metrics import Metric, registry

    def custom(ctx: ProcedureContext[MetricSettings]) -> Any:
        raise SearchError("custom gave up")

    entry = Metric(
        name="custom",
        description="A metric registered by the test.",
        settings=MetricSettings,
        run=custom,
        unit="",
        order=1000,
        label="custom",
        scale_label="custom rel. scale up",
        title="custom",
        axis="",
        estimate=lambda s, n, selected: (0, 0.0),
    )
    registry.register(entry)
    try:
        res = Bench().run("custom")
    finally:
        registry.METRICS.unregister("custom")
    assert (res.value, res.unit, res.extra) == (None, "", {"failed": "custom gave up"})
