"""Connection establishment that the DUT did not keep: failed steps, validation modes, the timeout guard and the
tear-down N, against fakes that forward more than they keep or hold a small table (RFC 9693)."""

from __future__ import annotations

from typing import Any

import pytest
from metric_settings import build

from natbench.errors import DutError
from natbench.metrics import ProcedureContext
from natbench.metrics.cps import establishment_search
from natbench.metrics.lifetime import connection_timeout
from natbench.metrics.registry import run_repetition
from natbench.plugins import Directions, Phase2Options
from natbench.results import Direction, PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.search.declare import algorithm
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 200 x 20 = 4,000
FORWARDS_MORE = {"cps": 200_000.0, "keep_rate": 150_000.0}
"""Fake (a): forwards phase-1 frames up to 200,000/s, keeps state for 150,000 new connections/s only."""


class Clock:
    """Time that passes only while traffic runs: a fill (phase 1) takes ``fill`` seconds, a phase-2 trial its
    duration. Traffic starts at the reading before it and ends at the reading after it."""

    def __init__(self, tester: FakeTester, fill: float = 10.0) -> None:
        self.now = 0.0
        phase1, phase2 = tester.phase1, tester.phase2

        def timed_phase1(rate: float, learn: bool) -> PhaseResult:
            res = phase1(rate, learn)  # the connections are created from the start of the fill on
            self.now += fill
            return res

        def timed_phase2(rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
            res = phase2(rate, duration, directions, measure)
            self.now += duration
            return res

        tester.phase1 = timed_phase1  # type: ignore[method-assign]
        tester.phase2 = timed_phase2  # type: ignore[method-assign]

    def __call__(self) -> float:
        return self.now


class Bench:
    """One repetition on a fake testbed at :data:`POINT`; the emitted trials in :attr:`records`."""

    def __init__(self, **model: Any) -> None:
        self.dut = FakeDut(FakeModel(**model))
        self.tester = FakeTester(self.dut)
        self.plan = TrafficPlan(
            Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3
        )
        self.tester.prepare(self.plan)
        self.records: list[TrialRecord] = []
        self.warnings: list[str] = []

    def run(self, metric: str, *, clock: Any = None, **settings: Any) -> RepetitionResult:
        return run_repetition(self.context(metric, clock=clock, **settings))

    def context(self, metric: str, *, clock: Any = None, **settings: Any) -> ProcedureContext[Any]:
        """A repetition's context with ``settings``; :attr:`records` emptied."""
        resolved, options = build(metric, **settings)
        self.records.clear()
        return ProcedureContext(
            self.tester,
            self.dut,
            POINT,
            self.plan,
            metric,
            0,
            resolved,
            emit=self.records.append,
            clock=clock or (lambda: 0.0),
            sleep=lambda _s: None,
            options=options,
            warn=self.warnings.append,
        )

    def steps(self) -> list[tuple[str, float, Verdict]]:
        return [(r.kind, r.intended_rate, r.verdict) for r in self.records]


P, F = Verdict.PASS, Verdict.FAIL
# [0, 400,000], error 1,000: midpoints on the grid 0 + k x 1,000 (natbench.search.RateGrid). 200,000 fails (a DUT
# keeping 150,000/s), 100,000 and 150,000 pass, then 175,000, 162,000 (cell 162.5 rounded down), 156,000, 153,000 and
# 151,000 fail: [150,000, 151,000] is one cell, the error wide. Eight steps, result 150,000, error 1,000.
RATES = [200_000, 100_000, 150_000, 175_000, 162_000, 156_000, 153_000, 151_000]
KEPT = {100_000, 150_000}


# ---------------------------------------------------------------------------- a DUT that forwards more than it keeps
def test_cps_with_default_settings_finds_the_rate_the_dut_keeps_connections_at() -> None:
    """Default: table check on, validation every_step. Above 150,000 the table is short (200,000: 4,000 frames
    arrive, 4,000 x 150,000 / 200,000 = 3,000 kept): the phase 1 fails, no validation follows. 100,000 and 150,000
    keep all 4,000 and are validated: 8 steps, 2 x 2 + 6 = 10 trials."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000)
    assert (res.value, res.error) == (150_000, 1000)
    assert (res.extra["steps"], res.extra["invalid"], res.extra["validated"]) == (8, 0, True)
    expected: list[tuple[str, float, Verdict]] = []
    for rate in RATES:
        expected += [("phase1", rate, P), ("validation", rate, P)] if rate in KEPT else [("phase1", rate, F)]
    assert b.steps() == expected
    first = b.records[0]
    assert first.extra["fail_cause"] == "table_shortfall" and first.extra["dut_connections"] == 3000
    assert first.reason == "DUT table holds 3000 connections but 4000 phase-1 frames arrived"
    assert not [r for r in b.records if r.verdict is Verdict.INVALID]


def test_validation_alone_finds_it_when_the_dut_cannot_count() -> None:
    """check_table off: every phase 1 up to 200,000 passes; the validation of the tuples above 150,000 fails (at
    200,000: 3,000 of 4,000 reverse frames arrive). Same 8 steps, each now phase 1 + validation: 16 trials."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, check_table=False)
    assert res.value == 150_000
    assert b.steps() == [
        t for rate in RATES for t in (("phase1", rate, P), ("validation", rate, P if rate in KEPT else F))
    ]
    failed = [r for r in b.records if r.verdict is Verdict.FAIL]
    assert all(r.extra["fail_cause"] == "validation" for r in failed)
    assert b.records[1].counts == {"reverse": {"sent": 4000, "received": 3000, "valid": 3000}}


def test_the_table_check_alone_finds_it_without_validation() -> None:
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, validation="off")
    assert res.value == 150_000
    assert b.steps() == [("phase1", rate, P if rate in KEPT else F) for rate in RATES]
    assert res.extra["validated"] is False


def test_with_validation_and_the_table_check_off_cps_reports_the_forwarding_ceiling() -> None:
    """Nothing checks that connections were kept: cps is then the rate the DUT forwards phase-1 frames at.
    200,000 passes; 300,000, 250,000, 225,000, 212,000, 206,000, 203,000 and 201,000 lose frames."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, validation="off", check_table=False)
    assert res.value == 200_000
    assert len(b.records) == 8 and all(r.kind == "phase1" for r in b.records)


def test_final_validation_rejects_an_unkept_rate_and_the_search_goes_on_validated_below_it() -> None:
    """validation final, no table check. The phase-1 search ends at 200,000 (8 trials: 200,000 passes, the seven
    rates above it fail). Its validation (phase 1 + reverse frames, 2 trials) fails: 200,000 is rejected and the
    search goes on in [0, 200,000] validating every step: 100,000 and 150,000 pass, 175,000 ... 151,000 fail
    their validation (7 steps, 14 trials). 8 + 2 + 14 = 24 trials; 8 + 1 + 7 = 16 steps; result 150,000."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, validation="final", check_table=False)
    assert res.value == 150_000
    assert (res.extra["rejected"], res.extra["validated"], res.extra["steps"]) == ([200_000], True, 16)
    assert len(b.records) == 24
    assert [r.intended_rate for r in b.records[:8] if r.verdict is P] == [200_000]
    check = b.records[8:10]
    assert [(r.kind, r.intended_rate, r.verdict) for r in check] == [("phase1", 200_000, P), ("validation", 200_000, F)]
    assert all(r.extra["final"] is True for r in check)
    assert b.steps()[10:] == [
        t for rate in RATES[1:] for t in (("phase1", rate, P), ("validation", rate, P if rate in KEPT else F))
    ]


def test_final_validation_of_a_kept_rate_is_one_more_phase1_and_its_reverse_frames() -> None:
    """Table check on: the phase-1 search finds 150,000 as the default does (8 trials), then one validation."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, validation="final")
    assert (res.value, res.extra["rejected"], res.extra["validated"]) == (150_000, [], True)
    assert b.steps() == [("phase1", rate, P if rate in KEPT else F) for rate in RATES] + [
        ("phase1", 150_000, P),
        ("validation", 150_000, P),
    ]
    # both trials of the final validation carry the bracket the search ended in: [150,000, 151,000]
    assert [(r.lower, r.upper) for r in b.records[-2:]] == [(150_000, 151_000)] * 2


def test_a_step_whose_validation_is_invalid_is_retried_as_a_whole() -> None:
    """An invalid validation proves nothing: the search runs the step again, phase 1 first (its tuples are fresh)."""
    b = Bench()
    calls = [0]

    def once_short(rate: float, _orig: Any = b.tester.validate) -> PhaseResult:
        calls[0] += 1
        res: PhaseResult = _orig(rate)
        return res if calls[0] > 1 else PhaseResult(**{**res.__dict__, "tester_ok": False, "tester_note": "x"})

    b.tester.validate = once_short  # type: ignore[method-assign]
    res = b.run("cps", upper=400_000, error=100_000)
    # 200,000: phase 1 passes, validation invalid; again: phase 1, validation passes; 300,000 fails
    assert b.steps() == [
        ("phase1", 200_000, P),
        ("validation", 200_000, Verdict.INVALID),
        ("phase1", 200_000, P),
        ("validation", 200_000, P),
        ("phase1", 300_000, F),
    ]
    assert (res.value, res.extra["invalid"], res.extra["steps"]) == (200_000, 1, 2)


# ---------------------------------------------------------------------------- a table smaller than N
CAPACITY = {"upper": 400_000, "error": 1000, "min_connections": 4000, "max_connections": 40_000, "connection_error": 20}
# 20 destination ports: C = 20 x source ports. Start 200 ports (4,000), double to 400 (8,000) and 800 (16,000):
# 16,000 does not fit, no rate passes, 0 < 0.2 x the last rate. Then bisect [400, 800] ports down to one port:
# 600 fails, 500 (10,000: fits exactly) passes, 550, 525, 512, 506, 503, 501 fail: [500, 501].
PROBES = [4000, 8000, 16000, 12000, 10000, 11000, 10500, 10240, 10120, 10060, 10020]


@pytest.mark.parametrize(
    ("table_full", "can_count"),
    [("evict", True), ("evict", False), ("drop", True)],
    ids=["evicts-counted", "evicts-hidden", "drops"],
)
def test_capacity_converges_to_a_10000_entry_table(table_full: str, can_count: bool) -> None:
    """A table of 10,000 entries. ``evict``: the DUT forwards every frame and evicts older unreplied entries (Linux
    conntrack's early drop): the count falls short (counted) or only the reverse frames to evicted tuples show it
    (hidden: no count). ``drop``: the frames that find the table full are lost."""
    b = Bench(table_limit=10_000, table_full=table_full, can_count=can_count)
    res = b.run("capacity", **CAPACITY)
    assert (res.value, res.error) == (10_000, 20)
    assert [p[0] for p in res.extra["probes"]] == PROBES
    assert [p[0] for p in res.extra["probes"] if p[1] > 0] == [4000, 8000, 10000]
    assert not [r for r in b.records if r.verdict is Verdict.INVALID]
    # the probes beyond the table (their rates stay below the 200,000 cps ceiling) fail for the table alone
    beyond = [r for r in b.records if r.extra["connections"] > 10_000]
    assert beyond and not [r for r in beyond if r.verdict is Verdict.PASS and r.kind == "validation"]
    causes = {r.extra.get("fail_cause") for r in beyond if r.verdict is Verdict.FAIL}
    expected = {"evict": {"table_shortfall"} if can_count else {"validation"}, "drop": {"loss"}}[table_full]
    assert causes == expected


# ---------------------------------------------------------------------------- tear-down N
def test_teardown_n_is_what_the_tester_created_and_the_dut_count_is_kept_beside_it() -> None:
    """The DUT holds 25 management connections beside the fill's 4,000 (within table_slack 64): N = 4,000.
    T_N = 0.5 + 4,025 x 10 us = 0.54025 s, T_0 = 0.5 s: 4,000 / 0.04025 s = 99,378.9/s."""
    b = Bench(flush_empty=0.5, flush_per_connection=1e-5)
    b.dut.connections = 25
    b.dut.reset_connections = lambda: setattr(b.dut, "connections", 25)  # type: ignore[method-assign]
    res = b.run("teardown", fill_rate=50_000, gap=0)
    assert (res.extra["connections"], res.extra["dut_connections"]) == (4000, 4025)
    assert res.value == pytest.approx(4000 / 0.04025)
    assert b.records[1].extra == {"connections": 4000, "dut_connections": 4025}


def test_a_fill_the_dut_did_not_keep_ends_the_teardown_naming_the_shortfall() -> None:
    b = Bench(keep_rate=40_000)  # a fill at 50,000 keeps 4,000 x 40,000 / 50,000 = 3,200 connections
    res = b.run("teardown", fill_rate=50_000)
    assert res.value is None
    assert [r.kind for r in b.records] == ["fill"] * 4  # repeated max_invalid (3) times, never divided by
    assert res.extra["failed"] == (
        "filling the table at fill_rate 50000: 4 fills in a row did not leave the 4,000 connections"
        " (last: the DUT holds 3200 of the 4000 connections); lower fill_rate"
    )


# ---------------------------------------------------------------------------- the timeout guard
THROUGHPUT = {"upper": 1_000_000, "error": 62_500, "fill_rate": 50_000, "gap": 0, "duration": 30}
# forwarding 400,000: 500,000 fails, 250,000 and 375,000 pass, 437,500 fails; [375,000, 437,500] is 62,500 wide.


def test_the_dut_timeout_makes_a_search_on_one_fill_refill_before_a_step_could_outlive_it() -> None:
    """The DUT's UDP timeout is 100 s (its facts); no refill_after. A step relies on the connections for its 30 s
    duration plus the 2 s receive wait (timeout). Fill 0-10 s; steps starting 10 and 40 s after the fill began end
    by 42 and 72 s: allowed. The third would end at 70 + 32 = 102 > 100: refill first (70-80 s), then it starts
    10 s after its fill, and the fourth at 40 s (ends 72 <= 100). No step runs on expired connections."""
    b = Bench(forwarding=400_000, udp_timeout=100)
    clock = Clock(b.tester)
    b.dut.clock = clock
    res = b.run("throughput", clock=clock, **THROUGHPUT)
    assert res.value == 375_000
    assert [r.kind for r in b.records] == ["fill", "phase2", "phase2", "fill", "phase2", "phase2"]
    phase2 = [r for r in b.records if r.kind == "phase2"]
    assert [r.extra["since_fill"] for r in phase2] == [10.0, 40.0, 10.0, 40.0]
    assert [r.verdict for r in phase2] == [F, P, P, F]
    assert all(r.extra["dut_connections"] == 4000 for r in phase2)
    assert not [r for r in phase2 if "timeout_guard" in r.extra] and b.warnings == []


def test_the_guard_keeps_room_for_the_receive_wait_after_a_step() -> None:
    """Timeout 41 s: the fill ends 10 s after it began, a 30 s step ends at 40 s, but its frames still in flight are
    awaited 2 s more (timeout): 42 > 41, so no step fits (the duration alone, 40 <= 41, would have let it run)."""
    b = Bench(udp_timeout=41)
    clock = Clock(b.tester)
    b.dut.clock = clock
    res = b.run("throughput", clock=clock, **THROUGHPUT)
    assert res.value is None
    assert res.extra["failed"].startswith(
        "a phase-2 step of 30 s + 2 s receive wait would end 42 s after the fill began, past the dut_timeout limit "
        "of 41 s"
    )
    assert [r.kind for r in b.records] == ["fill"]


def test_refill_always_records_the_time_since_each_steps_own_fill() -> None:
    b = Bench(forwarding=400_000)
    clock = Clock(b.tester, fill=7.0)
    res = b.run("throughput", clock=clock, refill="always", **THROUGHPUT)
    assert res.value == 375_000
    assert [r.extra["since_fill"] for r in b.records if r.kind == "phase2"] == [7.0] * 4


def test_a_fill_that_leaves_no_room_for_one_step_before_the_dut_timeout_fails_the_repetition() -> None:
    """Timeout 35 s: the fill ends 10 s after it began, a 30 s step and its 2 s receive wait would end at 42 s."""
    b = Bench(udp_timeout=35)
    clock = Clock(b.tester)
    b.dut.clock = clock
    res = b.run("throughput", clock=clock, **THROUGHPUT)
    assert res.value is None
    assert res.extra["failed"].startswith(
        "a phase-2 step of 30 s + 2 s receive wait would end 42 s after the fill began, past the dut_timeout limit "
        "of 35 s"
    )
    assert [r.kind for r in b.records] == ["fill"]


@pytest.mark.parametrize(("refill_after", "udp_timeout"), [(75, 1000), (1000, 75)], ids=["refill-after", "dut"])
def test_the_smaller_of_refill_after_and_the_dut_timeout_is_the_limit(refill_after: float, udp_timeout: float) -> None:
    """Limit 75 s either way: steps starting 10 and 40 s after the fill end by 42 and 72 s; the third (70 + 32 = 102
    s) would pass 75: refill before it. A refill_after above the DUT's timeout must not let connections expire."""
    b = Bench(forwarding=400_000, udp_timeout=udp_timeout)
    clock = Clock(b.tester)
    b.dut.clock = clock
    b.run("throughput", clock=clock, refill_after=refill_after, **THROUGHPUT)
    assert [r.kind for r in b.records] == ["fill", "phase2", "phase2", "fill", "phase2", "phase2"]


def test_without_a_known_timeout_every_phase2_trial_records_the_guard_off_and_the_run_is_warned() -> None:
    """The fake names no udp_timeout and no refill_after is set: nothing can tell when connections expire."""
    b = Bench(forwarding=400_000)
    b.run("throughput", **THROUGHPUT)
    phase2 = [r for r in b.records if r.kind == "phase2"]
    assert len(phase2) == 4 and all(r.extra["timeout_guard"] == "off" for r in phase2)
    assert len(b.warnings) == 1 and "DUT-timeout guard off" in b.warnings[0]


def test_the_guard_off_warning_names_the_metric_the_risk_and_the_setting_that_turns_it_on() -> None:
    b = Bench(forwarding=400_000)
    b.run("throughput", **THROUGHPUT)
    assert b.warnings == [
        "throughput: DUT-timeout guard off: neither refill_after nor the DUT's facts name a connection timeout, so "
        "connections may expire during a search on one fill unnoticed (set refill_after)"
    ]


def test_the_runner_passes_each_procedure_warning_on_once() -> None:
    from natbench.run.observers import Observer
    from natbench.run.orchestrator import Orchestrator

    seen: list[str] = []

    class Recorder(Observer):
        def on_warning(self, message: str) -> None:
            seen.append(message)

    orch = Orchestrator(store=None, observer=Recorder())  # type: ignore[arg-type]  # warnings never touch the store
    for message in ("guard off", "guard off", "other", "guard off"):
        orch._warn_once(message)
    assert seen == ["guard off", "other"]


# ---------------------------------------------------------------------------- establishment steps and the timeout
class RateClock:
    """Time that passes as a real tester's would: phase 1 and the reverse frames take N / rate seconds to send,
    then the receive wait (``wait``, the metric's timeout)."""

    def __init__(self, tester: FakeTester, wait: float = 2.0) -> None:
        self.now = 0.0
        phase1, validate = tester.phase1, tester.validate

        def timed_phase1(rate: float, learn: bool) -> PhaseResult:
            res = phase1(rate, learn)
            self.now += res.duration + wait
            return res

        def timed_validate(rate: float) -> PhaseResult:
            res = validate(rate)
            self.now += res.duration + wait
            return res

        tester.phase1 = timed_phase1  # type: ignore[method-assign]
        tester.validate = timed_validate  # type: ignore[method-assign]

    def __call__(self) -> float:
        return self.now


def test_a_cps_step_whose_connections_would_outlive_the_dut_timeout_is_refused_not_failed() -> None:
    """A DUT keeping 100 new connections/s with a 30 s UDP timeout, 4,000 connections, search [0, 400] error 10.
    The first step, 200/s, needs its connections for 4,000 / 200 + 2 (phase 1) + 4,000 / 200 + 2 (validation,
    alpha 1) = 44 s > 30 s: refused before any traffic. Without the guard every step fails (at 100/s phase 1 alone
    ends 42 s after it began: all connections expired) and cps comes out as 0, a DUT limit that is the timeout's."""
    b = Bench(cps=100, keep_rate=100, udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=400, error=10)
    assert res.value is None
    assert res.extra["failed"].startswith(
        "phase 1 and its validation of 4,000 connections at 200/s needs them for 44.0 s, longer than the dut_timeout"
        " of 30 s: "
    )
    assert not [r for r in b.records if r.verdict is F]
    [rec] = b.records
    assert (rec.kind, rec.intended_rate, rec.verdict, rec.counts) == ("phase1", 200, Verdict.INVALID, {})
    assert (rec.extra["invalid_cause"], rec.extra["lifetime"], rec.extra["limit"]) == ("dut_timeout", 44.0, 30.0)
    assert (rec.lower, rec.upper) == (0, 400)  # the bracket of the refused first step
    # nothing sent: no rate achieved, no traffic time, started when the clock read 0; the reason is the error's text
    assert (rec.achieved_rate, rec.extra["duration"], rec.started_at) == (0.0, 0.0, 0.0)
    assert rec.extra["limit_source"] == "dut_timeout" and rec.reason == res.extra["failed"]
    assert clock.now == 0.0  # nothing was sent


def test_the_guard_counts_the_reverse_frames_at_alpha_times_the_rate() -> None:
    """alpha 0.5: the first step, 200/s, sends its 4,000 reverse frames at 100/s. 4,000 / 200 + 2 + 4,000 / 100 + 2
    = 64 s > 30 s: refused, naming 64 s (alpha 1 would need 44 s, reverse frames at 400/s 34 s)."""
    b = Bench(cps=100, keep_rate=100, udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=400, error=10, alpha=0.5)
    assert res.value is None and "at 200/s needs them for 64.0 s" in res.extra["failed"]
    assert b.records[-1].extra["lifetime"] == 64.0


def test_a_step_without_validation_is_guarded_for_its_phase1_alone() -> None:
    """Keeps 1,000/s, timeout 10 s, validation off, search [0, 4,000] error 100: a phase 1 alone needs at most
    4,000 / 1,000 + 2 = 6 s <= 10 s, so no step is refused (with reverse frames 1,000/s would need 12 s). 2,000
    fails (table shortfall), 1,000 passes, 1,500 ... 1,100 fail: 1,000."""
    b = Bench(keep_rate=1000, udp_timeout=10)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=4000, error=100, validation="off")
    assert res.value == 1000
    assert not [r for r in b.records if r.verdict is Verdict.INVALID]


def test_cps_steps_within_the_dut_timeout_run_as_before() -> None:
    """Keeps 1,000/s, timeout 30 s, search [0, 4,000] error 100: the slowest step, 1,000/s, needs 4 + 2 + 4 + 2 =
    12 s <= 30 s. 2,000 fails (2,000 kept of 4,000), 1,000 passes, 1,500, 1,200 (cell 12.5 rounded down) and 1,100
    fail: [1,000, 1,100] is one cell of the grid, the error wide."""
    b = Bench(keep_rate=1000, udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=4000, error=100)
    assert res.value == 1000
    assert not [r for r in b.records if r.verdict is Verdict.INVALID]


def test_a_final_validation_that_would_outlive_the_dut_timeout_is_refused_with_the_searchs_bracket() -> None:
    """Keeps 1,000/s, timeout 10 s, search [0, 4,000] error 100, validation final: the phase-1 steps need at most
    4,000 / 1,000 + 2 = 6 s (2,000 and 1,500 ... 1,100 fail on the table, 1,000 passes; bracket [1,000, 1,100]).
    The final validation of 1,000 (alpha 1, no gap) needs 4 + 2 + 4 + 2 = 12 s > 10 s: refused, stored with the
    bracket the search ended in and the final mark like the validation it replaces."""
    b = Bench(keep_rate=1000, udp_timeout=10)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=4000, error=100, validation="final")
    assert res.value is None and "needs them for 12.0 s, longer than the dut_timeout of 10 s" in res.extra["failed"]
    rec = b.records[-1]
    assert (rec.kind, rec.intended_rate, rec.verdict, rec.lower, rec.upper) == (
        "phase1",
        1000,
        Verdict.INVALID,
        1000,
        1100,
    )
    assert (rec.extra["final"], rec.extra["invalid_cause"], rec.extra["lifetime"]) == (True, "dut_timeout", 12.0)


def test_validation_refuses_a_phase1_and_reverse_frames_that_would_outlive_the_dut_timeout() -> None:
    """validation at 100/s with gap 2: 4,000 / 100 + 2 + 2 + 4,000 / 100 + 2 = 86 s > 30 s."""
    b = Bench(udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("validation", clock=clock, rate=100, gap=2)
    assert res.value is None and "needs them for 86.0 s" in res.extra["failed"]
    assert [(r.kind, r.verdict) for r in b.records] == [("phase1", Verdict.INVALID)]


def test_a_capacity_probe_is_guarded_too() -> None:
    """capacity's first probe (4,000 connections) searches [0, 400]: 200/s needs 44 s > 30 s, as for cps."""
    b = Bench(cps=100, keep_rate=100, udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("capacity", clock=clock, **{**CAPACITY, "upper": 400, "error": 10})
    assert res.value is None and "longer than the dut_timeout of 30 s" in res.extra["failed"]
    assert b.records[-1].extra["invalid_cause"] == "dut_timeout"
    assert b.records[-1].extra["connections"] == 4000  # the probe's own count is kept on the refused trial


def test_a_capacity_probe_is_guarded_for_its_own_connection_count() -> None:
    """The first probe holds 2,000 connections (min_connections 2,000 = 100 sources x 20 destinations), not the
    point's 4,000: at 200/s it needs 2,000 / 200 + 2 + 2,000 / 200 + 2 = 24 s > 20 s (the point's count would
    need 44 s)."""
    b = Bench(cps=100, keep_rate=100, udp_timeout=20)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("capacity", clock=clock, **{**CAPACITY, "upper": 400, "error": 10, "min_connections": 2000})
    assert res.value is None and "of 2,000 connections at 200/s needs them for 24.0 s" in res.extra["failed"]
    assert b.records[-1].extra["lifetime"] == 24.0


def test_a_refused_step_without_validation_names_phase_1_alone() -> None:
    """validation off, timeout 10 s: the first step, 200/s, needs 4,000 / 200 + 2 = 22 s for phase 1 alone."""
    b = Bench(cps=100, keep_rate=100, udp_timeout=10)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=400, error=10, validation="off")
    assert res.value is None
    assert res.extra["failed"] == (
        "phase 1 of 4,000 connections at 200/s needs them for 22.0 s, longer than the dut_timeout of 10 s: connections"
        " would expire before they are counted or validated (no traffic sent); use fewer connections or raise the"
        " DUT's timeout"
    )


def test_a_step_needing_its_connections_exactly_as_long_as_the_timeout_runs() -> None:
    """validation at 100/s with gap 2 needs 4,000 / 100 + 2 + 2 + 4,000 / 100 + 2 = 86 s: with a timeout of 86 s
    the connections last just long enough, so the step runs (phase 1 and its reverse frames, no refusal)."""
    b = Bench(udp_timeout=86)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    b.run("validation", clock=clock, rate=100, gap=2)
    assert [(r.kind, r.verdict) for r in b.records] == [("phase1", Verdict.PASS), ("validation", Verdict.PASS)]


class FactsDut(FakeDut):
    """A fake whose facts are given."""

    def __init__(self, facts: dict[str, Any]) -> None:
        super().__init__()
        self.given = facts

    def facts(self) -> dict[str, Any]:
        return self.given


@pytest.mark.parametrize(
    ("facts", "timeout"),
    [
        ({"udp_timeout": 300, "udp_timeout_stream": 120}, 120.0),  # iptables/nftables: the kernel's two timeouts
        ({"params": {"udp_timeout": 600}}, 600.0),  # Jool, PF: the recipe parameter
        ({"ce": {"udp_timeout": 90}, "pe": {"params": {"udp_timeout": 60}}}, 60.0),  # a dual DUT: the shortest
        ({"kind": "fake", "udp_timeout": True}, None),  # not a number of seconds
        ({"conntrack_max": 1000}, None),
        ({"udp_timeout": 0, "udp_timeout_stream": 120}, 120.0),  # 0 s is no timeout (unset), not the shortest
        ({"udp_timeout": 0.5}, 0.5),  # half a second is a timeout all the same
    ],
)
def test_the_dut_connection_timeout_is_the_shortest_its_facts_name(
    facts: dict[str, Any], timeout: float | None
) -> None:
    assert connection_timeout(FactsDut(facts)) == timeout


def test_the_fakes_forward_phase1_frames_they_keep_no_state_for() -> None:
    """The fake (a) model itself: at 200,000/s all 4,000 frames arrive, 3,000 connections are kept."""
    b = Bench(**FORWARDS_MORE)
    res = b.tester.phase1(200_000, True)
    assert res.counts[Direction.FORWARD].valid == 4000 and b.dut.connections == 3000
    assert b.tester.validate(200_000).counts[Direction.REVERSE].valid == 3000


def test_a_dut_whose_facts_cannot_be_read_names_no_timeout() -> None:
    class Unreadable(FakeDut):
        def facts(self) -> dict[str, Any]:
            raise DutError("facts step failed", step="facts", dut="fake")

    assert connection_timeout(Unreadable()) is None


def test_a_refused_step_is_stored_and_read_back_as_an_invalid_trial_without_counts(tmp_path: Any) -> None:
    """The refused step and the failed repetition go through the run store and its reader like any other."""
    from natbench.report.aggregate import trial_summary
    from natbench.run.reader import RunDirectory
    from natbench.run.writer import RunStore

    b = Bench(cps=100, keep_rate=100, udp_timeout=30)
    clock = RateClock(b.tester)
    b.dut.clock = clock
    res = b.run("cps", clock=clock, upper=400, error=10)
    store = RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=[POINT])
    for rec in b.records:
        store.append_trial(rec)
    store.append_result(res)
    store.close()
    run = RunDirectory.open(tmp_path / "run")
    [back] = run.trials()
    assert (back.verdict, back.counts, back.extra["invalid_cause"]) == (Verdict.INVALID, {}, "dut_timeout")
    assert [r.value for r in run.results()] == [None]
    summary = trial_summary(run.trials_frame())
    assert (int(summary["trials"].iloc[0]), int(summary["invalid"].iloc[0])) == (1, 1)


def test_final_validation_with_a_search_that_cannot_validate_once_validates_every_step() -> None:
    """The fast search's steps depend on the earlier ones, so a rate it kept on phase 1 alone would steer it: under
    validation final it validates every step (each phase 1 followed by its reverse frames), and its rate is a
    validated one."""
    b = Bench(**FORWARDS_MORE)
    res = b.run("cps", upper=400_000, error=1000, validation="final", algorithm="fast", check_table=False)
    assert res.extra["validated"] is True
    kinds = [r.kind for r in b.records]
    assert kinds and kinds == ["phase1", "validation"] * (len(kinds) // 2)
    assert not any(r.extra.get("final") for r in b.records)


def test_a_final_validation_that_rejects_the_top_rate_leaves_no_upper_limit_reached() -> None:
    """Forwards phase 1 at every rate up to the search's upper bound (400,000) but keeps state for 150,000/s only:
    the phase-1 search ends at the top of its grid (399,000), its final validation (reverse frames at alpha x rate =
    2 x 399,000) fails,
    and the search goes on below it. The result is no DUT at the upper limit: the top rate was rejected."""
    b = Bench(cps=1_000_000.0, keep_rate=150_000.0)
    res = b.run("cps", upper=400_000, error=1000, validation="final", check_table=False, alpha=2.0)
    final = [(r.kind, r.intended_rate) for r in b.records if r.extra.get("final")]
    assert final == [("phase1", 399_000), ("validation", 798_000)]
    assert res.extra["rejected"] == [399_000] and res.extra["validated"] is True
    assert res.extra["at_upper_limit"] is False
    assert res.value is not None and res.value <= 150_000


# ------------------------------------------------------- the search of establishment_search itself (capacity's probes)
def _final(b: Bench) -> tuple[list[TrialRecord], list[TrialRecord], list[TrialRecord]]:
    """The trials of the phase-1 search, of its final validation and of the search that went on below it."""
    final = [i for i, r in enumerate(b.records) if r.extra.get("final")]
    return b.records[: final[0]], b.records[final[0] : final[-1] + 1], b.records[final[-1] + 1 :]


def test_the_algorithm_given_runs_both_searches_and_its_fields_are_stored() -> None:
    """``using`` overrides the settings' algorithm (fast, which could not validate once): the binary search runs
    phase 1 alone up to 200,000, its final validation rejects it, and the binary search goes on below it validating
    every step, as with binary settings; the result stores what the binary search stores."""
    b = Bench(**FORWARDS_MORE)
    ctx = b.context("cps", upper=400_000, error=1000, validation="final", check_table=False, algorithm="fast")
    found = establishment_search(ctx, 0.0, 400_000.0, using=algorithm("binary"))
    assert (found.outcome.value, found.rejected, found.validated) == (150_000, (200_000,), True)
    assert found.stored == {"algorithm": "binary"}
    search, final, below = _final(b)
    assert [r.intended_rate for r in search] == [200_000, 300_000, 250_000, 225_000, 212_000, 206_000, 203_000, 201_000]
    assert {r.kind for r in search} == {"phase1"}
    assert [(r.kind, r.verdict) for r in final] == [("phase1", P), ("validation", F)]
    assert [(r.kind, r.intended_rate) for r in below] == [
        (k, rate) for rate in RATES[1:] for k in ("phase1", "validation")
    ]


def test_a_final_validation_that_keeps_the_rate_returns_the_algorithms_fields() -> None:
    b = Bench(**FORWARDS_MORE)
    ctx = b.context("cps", upper=400_000, error=1000, validation="final", algorithm="fast")
    found = establishment_search(ctx, 0.0, 400_000.0, using=algorithm("binary"))
    assert (found.outcome.value, found.rejected, found.validated) == (150_000, (), True)
    assert found.stored == {"algorithm": "binary"}
    assert [r.kind for r in b.records[:-2]] == ["phase1"] * len(RATES)  # binary validates once: phase 1 alone


def test_the_search_below_a_rejected_rate_keeps_the_lower_bound_it_was_given() -> None:
    """Searched in [50,000, 400,000] (the settings say [0, 400,000]): the phase-1 search ends at 200,000, which its
    validation rejects; the search below it bisects [50,000, 200,000], first at 125,000, and never goes below
    50,000."""
    b = Bench(**FORWARDS_MORE)
    ctx = b.context("cps", lower=0, upper=400_000, error=1000, validation="final", check_table=False)
    found = establishment_search(ctx, 50_000.0, 400_000.0)
    assert found.rejected == (200_000,)
    _search, _final_trials, below = _final(b)
    assert below[0].intended_rate == 125_000 and below[0].lower == 50_000
    assert min(r.intended_rate for r in b.records) > 50_000
    assert found.outcome.value == 150_000


def test_the_search_below_a_rejected_rate_gives_up_below_stop_below_too() -> None:
    """stop_below 180,000: the phase-1 search fails only above 200,000 and goes on; below the rejected 200,000,
    175,000 fails its validation and the search gives up there (siitperf's stoprate)."""
    b = Bench(**FORWARDS_MORE)
    ctx = b.context("cps", upper=400_000, error=1000, validation="final", check_table=False)
    found = establishment_search(ctx, 0.0, 400_000.0, stop_below=180_000.0)
    out = found.outcome
    assert (found.rejected, out.value, out.upper, out.stopped_early) == ((200_000,), 150_000, 175_000, True)
    _search, _final_trials, below = _final(b)
    assert [r.intended_rate for r in below if r.kind == "phase1"] == [100_000, 150_000, 175_000]
    assert out.steps == 8 + 1 + 3


def test_the_invalid_trials_of_both_searches_add_up_and_the_final_validations_retries_do_not() -> None:
    """Every 5th tester call falls behind: one invalid trial in the phase-1 search, one in the final validation
    (retried there), three in the search below the rejected rate."""
    b = Bench(**FORWARDS_MORE, invalid_every=5)
    ctx = b.context("cps", upper=400_000, error=1000, validation="final", check_table=False)
    found = establishment_search(ctx, 0.0, 400_000.0)
    invalid = [sum(r.verdict is Verdict.INVALID for r in part) for part in _final(b)]
    assert invalid == [1, 1, 3]
    assert found.outcome.invalid == 1 + 3
    assert found.rejected == (200_000,) and found.outcome.value == 150_000


def test_a_search_that_passes_every_rate_below_the_rejected_one_is_not_at_the_upper_limit() -> None:
    """Keeps 199,500 connections/s: phase 1 passes up to 200,000, whose validation loses 10 of 4,000; below it every
    validated step passes up to 199,000. No step of that search failed, yet 200,000 was rejected: not at the upper
    limit of the search range."""
    b = Bench(cps=200_000.0, keep_rate=199_500.0)
    ctx = b.context("cps", upper=400_000, error=1000, validation="final", check_table=False)
    found = establishment_search(ctx, 0.0, 400_000.0)
    _search, _final_trials, below = _final(b)
    assert below and all(r.verdict is P for r in below)
    assert (found.outcome.value, found.rejected, found.outcome.at_upper_limit) == (199_000, (200_000,), False)
