"""Table fills and tear-down at their boundaries (natbench.metrics.fill, natbench.metrics.teardown,
natbench.metrics.teardown_resolution; docs/engine.md "Table fills"):

* what every fill records as ``fill_verified`` (``true``, ``"sample"`` or ``false``), and that the memory rows leave
  out a sampled fill whose sample failed;
* a fill the tester sent short of N is repeated, also on a DUT that cannot count (N - 1 frames against N);
* tear-down divides by the connections a fill nothing verified created, in the repetition and in the table;
* a failed tear-down repetition advises more connections than it used, and a noise of 0 never advises 0;
* what verifies a fill on a DUT that cannot count (natbench.metrics.fill.fill_table): the DUT's listing of exactly N
  mappings (responder mode read), a validation sample (responder mode compute, or all N tuples learned), and each
  verdict of that sample;
* the expected duration a fill announces (none at a rate of 0), a DUT that can neither count nor list its mappings,
  validation samples of 1 and 0 frames, the tester's counts, rate tolerance and pacing slack deciding a fill nothing
  verifies (each on both sides), and a fill the DUT counted whole whose Responder learned fewer than N tuples.

Against the fakes (natbench.testing), through the procedures as a run calls them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from metric_settings import build
from test_procedures import POINT, Harness, noisy_empty

import natbench
from natbench.errors import SearchError
from natbench.metrics import ProcedureContext
from natbench.metrics.fill import fill_table
from natbench.metrics.teardown import teardown_figures
from natbench.metrics.teardown_resolution import MIN_NOISE, DeletionProfile, advised_connections, resolution
from natbench.plugins import Mapping, TrialEvidence
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, RepetitionResult, Verdict
from natbench.testing import FakeDut, FakeTester, MemoryFakeDut
from natbench.testing.rundir import make_point, write_run_dir
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.traffic.plan import ResponderMode
from natbench.workingpoint import WorkingPoint

N = 4000  # the harness's point: 200 source x 20 destination ports


def memory_harness(**model: Any) -> Harness:
    """A harness whose DUT has the memory hook (a slab of 256 B per connection)."""
    h = Harness(**model)
    h.dut = MemoryFakeDut(h.dut.model)
    h.tester.dut = h.dut
    return h


def fill_records(h: Harness) -> list[Any]:
    return [r for r in h.records if r.kind == "fill"]


# --- what a fill records as verified ------------------------------------------------------------------------------


def test_a_fill_the_dut_counted_is_verified() -> None:
    h = Harness(flush_per_connection=1e-5)
    h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert [r.extra["fill_verified"] for r in fill_records(h)] == [True]


def test_a_fill_a_validation_sample_checked_records_sample() -> None:
    h = Harness(flush_per_connection=1e-5, can_count=False)
    res = h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert [r.extra["fill_verified"] for r in fill_records(h)] == ["sample"]
    assert res.extra["connections_verified"] is True


def test_a_fill_nothing_could_verify_records_false() -> None:
    h = Harness(flush_per_connection=1e-5, can_count=False)

    def learn_nothing(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        return dataclasses.replace(_orig(rate, learn), learned=0)

    h.tester.phase1 = learn_nothing  # type: ignore[method-assign]
    h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert [r.extra["fill_verified"] for r in fill_records(h)] == [False]


def test_the_memory_of_a_sampled_fill_whose_sample_failed_never_counts(tmp_path: Path) -> None:
    """A DUT that cannot count keeps state for 40,000 new connections per second: the fills at 50,000 forward all
    N frames but keep 3,200 connections; each validation sample finds them short, so no fill is kept and no memory
    figure may come of them (the DUT's slab grew by 256 B x 3,200)."""
    h = memory_harness(can_count=False, keep_rate=40_000, flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000, max_invalid=1)
    assert res.value is None
    fills = fill_records(h)
    assert [r.extra["fill_verified"] for r in fills] == ["sample", "sample"]
    assert all("memory" in r.extra for r in fills)  # measured: the report must leave them out
    assert [r.verdict for r in h.records if r.kind == "fill_check"] == [Verdict.INVALID] * 2
    p = make_point(0, (1000, 1199), (80, 99), name="fake")
    records = [dataclasses.replace(r, point_id=p.id) for r in h.records]
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [*records, dataclasses.replace(res, point_id=p.id)]))
    assert run.memory.empty


def test_the_memory_of_a_sampled_fill_whose_sample_passed_counts(tmp_path: Path) -> None:
    h = memory_harness(can_count=False, flush_per_connection=1e-5)
    res = h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert res.value is not None
    p = make_point(0, (1000, 1199), (80, 99), name="fake")
    records = [dataclasses.replace(r, point_id=p.id) for r in h.records]
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [*records, dataclasses.replace(res, point_id=p.id)]))
    assert run.memory["per_connection"].tolist() == [256.0]


# --- a fill the tester sent short of N ----------------------------------------------------------------------------


def sending(h: Harness, frames: int) -> None:
    """The tester's phase 1 sends (and the DUT forwards and keeps, and the Responder learns) ``frames`` of the N."""

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        h.dut.connections = frames
        counts = {Direction.FORWARD: DirectionCounts(frames, frames, frames)}
        return dataclasses.replace(res, counts=counts, learned=frames if learn else None)

    h.tester.phase1 = phase1  # type: ignore[method-assign]


@pytest.mark.parametrize("can_count", [True, False])
def test_a_fill_the_tester_sent_one_frame_short_is_repeated(can_count: bool) -> None:
    h = Harness(flush_per_connection=1e-5, can_count=can_count)
    sending(h, N - 1)
    res = h.run("teardown", fill_rate=50_000, max_invalid=1)
    fills = fill_records(h)
    short = (Verdict.INVALID, f"the tester sent {N - 1} of the {N} phase-1 frames")
    assert [(r.verdict, r.reason) for r in fills] == [short, short]
    assert res.value is None and "2 fills in a row did not leave the 4,000 connections" in res.extra["failed"]


@pytest.mark.parametrize("can_count", [True, False])
def test_a_fill_the_tester_sent_whole_is_kept(can_count: bool) -> None:
    h = Harness(flush_per_connection=1e-5, can_count=can_count)
    sending(h, N)
    res = h.run("teardown", fill_rate=50_000, empty_samples=1)
    assert fill_records(h)[0].verdict is Verdict.PASS
    assert (res.extra["connections"], res.extra["connections_verified"]) == (N, True)


# --- tear-down's N: the connections a fill created ------------------------------------------------------------------


def test_an_unverified_fill_divides_by_the_frames_the_tester_saw_arrive_not_the_points_n() -> None:
    """Nothing verifies the fill (no count, no learned tuples); it lost 20 of its 4,000 frames, within the 1 %
    acceptance, so it is kept: N is the 3,980 valid frames. T_N = 0.5 + 3,980 x 10 us, T_0 = 0.5 s: 100,000/s."""
    h = Harness(flush_empty=0.5, flush_per_connection=1e-5, can_count=False)

    def lose_twenty(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        h.dut.connections = N - 20
        counts = {Direction.FORWARD: DirectionCounts(N, N - 20, N - 20)}
        return dataclasses.replace(res, counts=counts, learned=0)

    h.tester.phase1 = lose_twenty  # type: ignore[method-assign]
    res = h.run("teardown", fill_rate=50_000, empty_samples=1, acceptance=0.01)
    assert fill_records(h)[0].extra["fill_verified"] is False
    assert (res.extra["connections"], res.extra["connections_verified"]) == (N - 20, False)
    assert res.value == pytest.approx((N - 20) / ((N - 20) * 1e-5))
    assert h.records[1].extra == {"connections": N - 20}  # the timed delete names the N it deleted


def figures(created: list[float]) -> dict[str, float]:
    cols = {
        "filled_delete_s": [0.54, 0.54, 0.54],
        "empty_delete_s": [0.5, 0.5, 0.5],
        "created_connections": created,
        "reported": [1.0, 1.0, 1.0],
    }
    return teardown_figures(cols, 4000.0)


def test_the_tables_tear_down_rate_divides_by_the_connections_the_fills_created() -> None:
    out = figures([3980.0, 3990.0, float("nan")])
    assert out["connections"] == 3990.0
    assert out["rate"] == pytest.approx(3990 / 0.04)
    # repetitions stored before the fills' N was: the point's connections
    out = figures([float("nan")] * 3)
    assert out["connections"] == 4000.0 and out["rate"] == pytest.approx(4000 / 0.04)


# --- the advice of a failed tear-down repetition -----------------------------------------------------------------


def too_few(earlier_rate: float) -> str:
    """A repetition whose filled-table delete (9.504 ms) was faster than the fastest empty-table delete (10, 10.5,
    11 ms): no rate of its own to go by, so the advice rests on an earlier repetition's rate."""
    h = Harness(flush_empty=0.0095, flush_per_connection=1e-9)
    noisy_empty(h, [0.010, 0.0105, 0.011])
    earlier = (RepetitionResult("x", "teardown", 0, earlier_rate, "conn/s"),)
    res = h.run("teardown", fill_rate=50_000, repetition=1, earlier=earlier)
    assert res.value is None
    return str(res.extra["failed"])


def test_the_advice_after_a_failed_repetition_is_more_connections_than_it_used() -> None:
    # at the earlier 100,000/s, 4 x the 1 ms spread is 400 connections' worth: fewer than the 4,000 that failed,
    # so the advice is one more than those
    assert too_few(100_000.0).endswith("; use at least 4,001 connections")


def test_the_advice_after_a_failed_repetition_is_the_connections_that_stand_out_of_the_noise() -> None:
    # at 10,000,000/s the same spread is 40,000 connections' worth: above the 4,000 used, the advice is that
    advice = advised_connections(0.011 - 0.010, 10_000_000.0)
    assert advice > N
    assert too_few(10_000_000.0).endswith(f"; use at least {advice:,} connections")


def test_a_noise_of_zero_never_advises_zero_connections() -> None:
    # one empty-table timing (or equal ones) has a spread of 0: the clock's resolution, MIN_NOISE, is the least
    # noise reckoned with
    assert advised_connections(0.0, 1e6) == advised_connections(MIN_NOISE, 1e6) == 4
    assert advised_connections(2 * MIN_NOISE, 1e6) == 8  # a larger noise counts as it is
    r = resolution(3, DeletionProfile(rate=1e6, noise=0.0, source="test"))
    assert r.advised == 4 and r.coarse and r.warning() is not None
    assert resolution(4, DeletionProfile(rate=1e6, noise=0.0, source="test")).warning() is None


# --- what verifies a fill on a DUT that cannot count ----------------------------------------------------------------


def fill_context(
    h: Harness,
    mode: ResponderMode = ResponderMode.LEARN,
    *,
    point: WorkingPoint = POINT,
    clock: Any = lambda: 0.0,
    **settings: Any,
) -> ProcedureContext[Any]:
    """A tear-down repetition's context on ``h``'s fakes (the DUT set up for ``point``), in responder ``mode``."""
    h.plan = TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, 64, seed=3,
        responder_mode=mode,
    )  # fmt: skip
    h.tester.prepare(h.plan)
    h.dut.setup(point)
    resolved, options = build("teardown", fill_rate=50_000, **settings)
    return ProcedureContext(
        tester=h.tester,
        dut=h.dut,
        point=point,
        plan=h.plan,
        metric="teardown",
        repetition=0,
        settings=resolved,
        emit=h.records.append,
        clock=clock,
        sleep=h.slept.append,
        options=options,
    )


def listing(h: Harness, *, drop: int = 0, seconds: float = 0.0, now: list[float] | None = None) -> None:
    """The DUT lists its mappings ``drop`` short, taking ``seconds`` on the clock ``now``."""

    def mappings(_orig: Any = h.dut.mappings) -> list[Mapping]:
        if now is not None:
            now[0] += seconds
        got: list[Mapping] = _orig()
        return got[: len(got) - drop]

    h.dut.mappings = mappings  # type: ignore[method-assign]


def test_a_fill_the_duts_listing_shows_whole_is_kept_and_gives_the_responder_its_tuples() -> None:
    h = Harness(can_count=False)
    now = [100.0]
    listing(h, seconds=2.5, now=now)
    fill = fill_table(fill_context(h, ResponderMode.READ, clock=lambda: now[0]), 50_000, learn=False)
    assert (fill.connections, fill.verified) == (N, True)
    assert fill.mappings is not None and len(fill.mappings) == N
    assert h.tester.loaded == tuple(fill.mappings)  # the Responder answers the DUT's tuples
    rec = fill.record
    assert (rec.kind, rec.verdict, rec.reason) == ("fill", Verdict.PASS, "")
    assert (rec.extra["dut_mappings"], rec.extra["dut_mappings_read_s"], rec.extra["fill_verified"]) == (N, 2.5, True)
    assert "fail_cause" not in rec.extra
    assert [r.kind for r in h.records] == ["fill"]  # the listing decided: no validation sample


def test_a_fill_whose_dut_lists_one_connection_short_is_repeated_then_fails() -> None:
    h = Harness(can_count=False)
    listing(h, drop=1)
    with pytest.raises(SearchError) as err:
        fill_table(fill_context(h, ResponderMode.READ, max_invalid=1), 50_000, learn=False)
    short = f"the DUT lists {N - 1} of the {N} connections"
    assert str(err.value) == (
        f"filling the table at fill_rate 50000: 2 fills in a row did not leave the 4,000 connections (last: {short});"
        " lower fill_rate"
    )
    assert [(r.kind, r.verdict, r.reason) for r in h.records] == [("fill", Verdict.INVALID, short)] * 2
    assert all(r.extra["fail_cause"] == "table_shortfall" and r.extra["dut_mappings"] == N - 1 for r in h.records)
    assert h.tester.loaded is None  # a short listing is no Responder state


def test_a_fill_in_responder_mode_compute_is_verified_by_a_validation_sample() -> None:
    h = Harness(can_count=False)
    fill = fill_table(fill_context(h, ResponderMode.COMPUTE), 50_000, learn=True)
    assert (fill.verified, fill.record.extra["fill_verified"]) == (True, "sample")
    assert [(r.kind, r.verdict) for r in h.records] == [("fill", Verdict.PASS), ("fill_check", Verdict.PASS)]


ONE = WorkingPoint(0, PortRange(1000, 1000), PortRange(80, 80), 64, cores=1, name="one")  # a single connection


@pytest.mark.parametrize(("learned", "verified"), [(1, "sample"), (0, False)])
def test_a_fill_is_sampled_only_when_the_responder_learned_every_tuple(learned: int, verified: object) -> None:
    # one connection: learned all (1) -> a validation sample verifies it; learned none -> nothing can, the tester's
    # counts decide and the fill says so
    h = Harness(can_count=False)

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        return dataclasses.replace(_orig(rate, learn), learned=learned)

    h.tester.phase1 = phase1  # type: ignore[method-assign]
    fill = fill_table(fill_context(h, point=ONE), 50_000, learn=True)
    assert fill.record.extra["fill_verified"] == verified
    assert [r.kind for r in h.records] == (["fill", "fill_check"] if verified else ["fill"])


class WithoutSampling:
    """A tester without the optional ``validate_sample`` hook (delegates the protocol to a FakeTester)."""

    def __init__(self, inner: FakeTester) -> None:
        self.inner = inner

    def prepare(self, traffic: TrafficPlan) -> None:
        self.inner.prepare(traffic)

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        return self.inner.phase1(rate, learn)

    def phase2(self, *args: Any) -> PhaseResult:
        return self.inner.phase2(*args)

    def validate(self, rate: float) -> PhaseResult:
        return self.inner.validate(rate)

    def facts(self) -> dict[str, Any]:
        return self.inner.facts()

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize(("hooked", "sent"), [(True, 100), (False, N)])
def test_a_tester_without_the_sampling_hook_validates_every_tuple(hooked: bool, sent: int) -> None:
    h = Harness(can_count=False)
    ctx = fill_context(h)
    if not hooked:
        ctx.tester = WithoutSampling(h.tester)  # type: ignore[assignment]
    fill = fill_table(ctx, 40_000, learn=True, sample=100)
    check = h.records[-1]
    assert (check.kind, check.verdict, check.reason, check.intended_rate) == ("fill_check", Verdict.PASS, "", 40_000)
    assert check.counts["reverse"]["sent"] == check.counts["reverse"]["valid"] == sent
    assert fill.record.extra["fill_verified"] == "sample"


class SampleTester(FakeTester):
    """The fake tester; its validation samples lose ``lost`` frames, of which its own deviation explains
    ``explains``, or cannot be sent (``ok`` False)."""

    def __init__(self, h: Harness, lost: int, explains: int, ok: bool) -> None:
        super().__init__(h.dut)
        self.lost, self.explains, self.ok = lost, explains, ok

    def validate_sample(self, rate: float, count: int) -> PhaseResult:
        res = super().validate_sample(rate, count)
        c = res.counts[Direction.REVERSE]
        counts = {Direction.REVERSE: DirectionCounts(c.sent, c.received - self.lost, c.valid - self.lost)}
        deviations = {Direction.REVERSE: Deviation(clump=self.explains)} if self.explains else {}
        note = "" if self.ok else "fake: lost its pace"
        return dataclasses.replace(res, counts=counts, deviations=deviations, tester_ok=self.ok, tester_note=note)


@pytest.mark.parametrize(
    ("lost", "explains", "ok", "verdict", "reason"),
    [
        (0, 0, True, Verdict.PASS, ""),
        (5, 5, True, Verdict.INVALID, "the sample lost 5 frames the tester's own deviation could explain"),
        (5, 4, True, Verdict.INVALID, f"the DUT answered {N - 5} of {N} sampled connections"),
        (0, 0, False, Verdict.INVALID, "the validation sample could not be sent: fake: lost its pace"),
    ],
)
def test_a_fill_is_kept_only_when_its_validation_sample_arrives_whole(
    lost: int, explains: int, ok: bool, verdict: Verdict, reason: str
) -> None:
    h = Harness(can_count=False)
    h.tester = SampleTester(h, lost, explains, ok)
    ctx = fill_context(h, max_invalid=0)
    if verdict is Verdict.PASS:
        assert fill_table(ctx, 50_000, learn=True).verified
    else:
        with pytest.raises(SearchError, match=re.escape(f"last: {reason}")):
            fill_table(ctx, 50_000, learn=True)
    check = h.records[-1]
    assert (check.kind, check.verdict, check.reason, check.extra["sample"]) == ("fill_check", verdict, reason, N)


# --- what a fill announces --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "shown", "expected"), [(0.0, "0", None), (0.5, "0", 2.25), (1.0, "1", 1.25), (4.0, "4", 0.5)]
)
def test_a_fill_announces_its_expected_duration_only_at_a_positive_rate(
    rate: float, shown: str, expected: float | None
) -> None:
    # one connection at ``rate``: 1 / rate seconds of sending plus the 0.25 s receive wait; a rate of 0 (a campaign's
    # fill_rate is positive, fill_table takes any) gives no duration to expect, so the fill is announced without one
    h = Harness()
    said: list[tuple[str, float | None]] = []
    ctx = fill_context(h, point=ONE, timeout=0.25)
    ctx.announce = lambda what, seconds: said.append((what, seconds))
    fill = fill_table(ctx, rate, learn=True)
    assert said == [(f"fill: 1 connections at {shown}/s", None if expected is None else pytest.approx(expected))]
    assert fill.verified and fill.connections == 1


# --- a DUT that can neither count nor list its mappings ---------------------------------------------------------------


class Unlisted(FakeDut):
    """A fake DUT that declares (the optional ``supports`` hook) that it can neither count its connections nor list
    its mappings; asked for either anyway, it raises NotImplementedError."""

    def supports(self, operation: str) -> bool:
        return operation not in ("count_connections", "mappings")

    def mappings(self) -> list[Mapping]:
        raise NotImplementedError("this fake DUT cannot list its mappings")


def test_a_read_mode_fill_on_a_dut_that_cannot_list_its_mappings_is_judged_by_the_testers_counts() -> None:
    # responder mode read, no count and no listing: nothing can verify the fill (no tuples to sample either), so
    # the tester's counts keep it, unverified, and the DUT is never asked for the list it declared it cannot give
    h = Harness(can_count=False)
    h.dut = Unlisted(h.dut.model)
    h.tester.dut = h.dut
    fill = fill_table(fill_context(h, ResponderMode.READ), 50_000, learn=False)
    assert (fill.verified, fill.connections, fill.mappings) == (False, N, None)
    rec = fill.record
    assert (rec.verdict, rec.reason, rec.extra["fill_verified"]) == (Verdict.PASS, "", False)
    assert "dut_mappings" not in rec.extra and "mappings" not in h.dut.events
    assert [r.kind for r in h.records] == ["fill"]


# --- the size of the validation sample --------------------------------------------------------------------------------


def test_a_validation_sample_of_one_frame_verifies_a_fill() -> None:
    h = Harness(can_count=False)
    fill = fill_table(fill_context(h, ResponderMode.COMPUTE), 50_000, learn=True, sample=1)
    assert [(r.kind, r.verdict, r.reason) for r in h.records] == [
        ("fill", Verdict.PASS, ""),
        ("fill_check", Verdict.PASS, ""),
    ]
    check = h.records[1]
    assert check.extra["sample"] == 1 and check.counts["reverse"]["sent"] == check.counts["reverse"]["valid"] == 1
    assert (fill.verified, fill.connections, fill.record.extra["fill_verified"]) == (True, N, "sample")


def test_a_validation_sample_of_no_frames_leaves_the_fill_to_the_testers_counts() -> None:
    h = Harness(can_count=False)
    fill = fill_table(fill_context(h, ResponderMode.COMPUTE), 50_000, learn=True, sample=0)
    assert [(r.kind, r.verdict, r.reason) for r in h.records] == [("fill", Verdict.PASS, "")]
    assert (fill.verified, fill.connections, fill.record.extra["fill_verified"]) == (False, N, False)


# --- a fill nothing can verify: the tester's counts and pacing decide -------------------------------------------------


def unverifiable(h: Harness, *, valid: int = N, achieved: float = 1.0, duration: float = 0.08) -> None:
    """The tester's phase 1 learns no tuple (nothing can verify the fill on a DUT that cannot count), forwards
    ``valid`` of the N frames and achieves ``achieved`` x the rate over ``duration`` seconds."""

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        counts = {Direction.FORWARD: DirectionCounts(N, valid, valid)}
        return dataclasses.replace(res, counts=counts, learned=0, achieved_rate=rate * achieved, duration=duration)

    h.tester.phase1 = phase1  # type: ignore[method-assign]


@pytest.mark.parametrize(("valid", "kept"), [(N - 40, True), (N - 41, False)])
def test_an_unverified_fill_that_lost_more_than_the_acceptance_is_invalid_not_failed(valid: int, kept: bool) -> None:
    # acceptance 1 %: 40 of the 4,000 frames may be lost, 41 may not; such a fill is repeated (INVALID), it is no
    # measurement that failed
    h = Harness(can_count=False)
    unverifiable(h, valid=valid)
    ctx = fill_context(h, acceptance=0.01, max_invalid=0)
    if kept:
        fill = fill_table(ctx, 50_000, learn=True)
        assert (fill.verified, fill.connections, fill.record.verdict) == (False, valid, Verdict.PASS)
    else:
        with pytest.raises(SearchError):
            fill_table(ctx, 50_000, learn=True)
        rec = h.records[-1]
        assert (rec.kind, rec.verdict, rec.extra["fill_verified"]) == ("fill", Verdict.INVALID, False)
        assert rec.reason.startswith(f"forward loss {N - valid}/{N} = ")


@pytest.mark.parametrize(("achieved", "kept"), [(0.9951, True), (0.9949, False)])
def test_an_unverified_fill_keeps_its_rate_within_the_runs_rate_tolerance(achieved: float, kept: bool) -> None:
    # the run's rate tolerance 0.5 % (the tester declares no pacing slack): 0.49 % short keeps the rate, 0.51 %
    # does not
    h = Harness(can_count=False)
    unverifiable(h, achieved=achieved)
    ctx = fill_context(h, rate_tolerance=0.005, max_invalid=0)
    if kept:
        assert fill_table(ctx, 50_000, learn=True).record.verdict is Verdict.PASS
    else:
        with pytest.raises(SearchError, match="tester fell behind"):
            fill_table(ctx, 50_000, learn=True)


@pytest.mark.parametrize(("achieved", "kept"), [(0.9901, True), (0.9899, False)])
def test_an_unverified_fill_keeps_its_rate_within_the_testers_pacing_slack(achieved: float, kept: bool) -> None:
    # a 0.08 s fill and a tester whose timer may put the last frame 0.8 ms behind: 1 % short keeps the rate, though
    # the run's rate tolerance (0.1 %) alone would not
    h = Harness(can_count=False)
    unverifiable(h, achieved=achieved, duration=0.08)
    h.tester.evidence = lambda: TrialEvidence(pacing_slack=0.0008)  # type: ignore[method-assign]
    ctx = fill_context(h, max_invalid=0)
    if kept:
        assert fill_table(ctx, 50_000, learn=True).record.verdict is Verdict.PASS
    else:
        with pytest.raises(SearchError, match="tester fell behind"):
            fill_table(ctx, 50_000, learn=True)


# --- a fill the DUT counted whole but the Responder did not learn -----------------------------------------------------


@pytest.mark.parametrize("learned", [None, 0, N - 1])
def test_a_counted_fill_whose_responder_learned_fewer_than_n_tuples_is_repeated(learned: int | None) -> None:
    # the DUT holds the N connections (its count says so), but the Responder, in responder mode learn, knows fewer
    # of their tuples (none when the tester reports no learning): the fill is repeated
    h = Harness()

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        return dataclasses.replace(_orig(rate, learn), learned=learned)

    h.tester.phase1 = phase1  # type: ignore[method-assign]
    with pytest.raises(SearchError):
        fill_table(fill_context(h, max_invalid=0), 50_000, learn=True)
    rec = h.records[-1]
    short = f"the Responder learned {learned or 0} of the {N} tuples"
    assert (rec.kind, rec.verdict, rec.reason) == ("fill", Verdict.INVALID, short)
    assert (rec.extra["dut_connections"], rec.extra["fill_verified"]) == (N, True)


@pytest.mark.parametrize(
    ("mode", "learn"), [(ResponderMode.LEARN, True), (ResponderMode.LEARN, False), (ResponderMode.COMPUTE, True)]
)
def test_a_counted_fill_is_kept_when_the_responder_needs_no_learned_tuples_or_learned_all(
    mode: ResponderMode, learn: bool
) -> None:
    # learned all N (learn mode, learning): kept; not learning, or computing the tuples: what it learned is no
    # matter (here none)
    h = Harness()

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        return dataclasses.replace(res, learned=N if mode is ResponderMode.LEARN and learn else 0)

    h.tester.phase1 = phase1  # type: ignore[method-assign]
    fill = fill_table(fill_context(h, mode), 50_000, learn=learn)
    assert (fill.record.verdict, fill.verified, fill.connections) == (Verdict.PASS, True, N)


# --- what the tester saw of a fill the DUT counted whole --------------------------------------------------------------


@pytest.mark.parametrize(
    ("valid", "tester_ok", "deviation", "seen"),
    [
        (N, True, False, False),  # every frame arrived, the rate kept, no deviation: nothing to add
        (N - 1, True, False, True),  # one frame the tester counted lost
        (N, False, False, True),  # the tester could not keep the rate
        (N, True, True, True),  # the tester's own deviation (a stall it caught up with)
    ],
)
def test_a_kept_fill_records_the_testers_view_only_when_the_tester_saw_something_amiss(
    valid: int, tester_ok: bool, deviation: bool, seen: bool
) -> None:
    # the DUT counts all N connections, so the fill is kept whatever the tester saw; what it saw is recorded beside
    # the fill when it differs from a clean phase 1, each of the three signs alone
    h = Harness()

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res = _orig(rate, learn)
        deviations = {Direction.FORWARD: Deviation(clump=5)} if deviation else {}
        counts = {Direction.FORWARD: DirectionCounts(N, valid, valid)}
        return dataclasses.replace(res, counts=counts, tester_ok=tester_ok, deviations=deviations)

    h.tester.phase1 = phase1  # type: ignore[method-assign]
    fill = fill_table(fill_context(h), 50_000, learn=True)
    rec = fill.record
    assert (rec.verdict, fill.verified, fill.connections, rec.extra["dut_connections"]) == (Verdict.PASS, True, N, N)
    if seen:
        assert rec.extra["tester_view"] == {"sent": N, "valid": valid, "tester_ok": tester_ok}
    else:
        assert "tester_view" not in rec.extra
