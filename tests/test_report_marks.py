"""The marks and rows metrics declare, end to end: a procedure runs against a fake DUT that shows the case (a DUT
that cannot count, a small evicting table, a tester whose ceiling or clumps end the search, a noisy MemAvailable),
its records go into a run directory, and the report's tables and summary say so, each in its own words."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metric_settings import build

import natbench
from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.report.summary import summarize_run
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, RepetitionResult, TrialRecord
from natbench.testing import FakeDut, FakeModel, FakeTester, MemoryFakeDut
from natbench.testing.rundir import write_run_dir
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections
F = Direction.FORWARD


def measure(
    tmp_path: Path,
    metric: str,
    dut: FakeDut,
    *,
    repetitions: int = 3,
    patch: Callable[[FakeTester], None] | None = None,
    **settings: Any,
) -> natbench.Run:
    """``repetitions`` repetitions of ``metric`` against ``dut`` (the fake tester patched by ``patch``), stored in a
    run directory and loaded as the report loads it."""
    tester = FakeTester(dut)
    if patch is not None:
        patch(tester)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    records: list[TrialRecord | RepetitionResult] = []
    resolved, options = build(metric, {"gap": 0.5, "duration": 1.0}, **settings)
    for rep in range(repetitions):
        trials: list[TrialRecord] = []
        ctx = ProcedureContext(
            tester=tester,
            dut=dut,
            point=POINT,
            plan=plan,
            metric=metric,
            repetition=rep,
            settings=resolved,
            emit=trials.append,
            clock=lambda: 0.0,
            sleep=lambda s: None,
            prior={},
            earlier=[r for r in records if isinstance(r, RepetitionResult)],
            options=options,
        )
        result = run_repetition(ctx)
        records += [*trials, result]
    return natbench.load(write_run_dir(tmp_path / f"{metric}-{len(list(tmp_path.iterdir()))}", [POINT], records))


def cells(table: Any) -> dict[str, list[str]]:
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def _learns_nothing(tester: FakeTester) -> None:
    def phase1(rate: float, learn: bool, _orig: Any = tester.phase1) -> PhaseResult:
        return dataclasses.replace(_orig(rate, learn), learned=0)

    tester.phase1 = phase1  # type: ignore[method-assign]


def test_a_teardown_whose_n_nothing_verified_is_marked_in_its_table_and_the_summary(tmp_path: Path) -> None:
    """A DUT that cannot count, and a tester that learned no tuple to sample: N is the tester's valid frames, and
    the tear-down rate carries [u] as an unvalidated cps does; a DUT that counts gives the same rate unmarked."""
    unsure = measure(
        tmp_path, "teardown", FakeDut(FakeModel(can_count=False, flush_per_connection=1e-5)), patch=_learns_nothing,
        fill_rate=50_000, empty_samples=1,
    )  # fmt: skip
    assert unsure.results["unverified"].tolist() == [True] * 3
    table = unsure.seed_table("teardown")
    # T_N = 0.5 + 4,000 x 10 us = 0.54 s, T_0 = 0.5 s: 4,000 / 0.04 s = 100,000/s, the N unverified
    assert cells(table)["conn. tear d. rate"] == ["100,000 [u]"]
    assert "[u]: N, the connections deleted, was not verified" in table.caption
    warnings = summarize_run(unsure).warnings
    assert any(w.startswith("3 tear-down repetitions divide by an N nothing verified") for w in warnings)

    counted = measure(tmp_path, "teardown", FakeDut(FakeModel(flush_per_connection=1e-5)), fill_rate=50_000)
    assert cells(counted.seed_table("teardown"))["conn. tear d. rate"] == ["100,000"]
    assert not any("nothing verified" in w for w in summarize_run(counted).warnings)


def test_capacity_of_an_evicting_table_nothing_checked_is_not_reached_never_an_exact_value(tmp_path: Path) -> None:
    """A 10,000-entry table that evicts old entries, with validation off and no table check: the search runs up to
    max_connections (100,000). The table says "not reached, >= 100,000" (the [>=] mark and its row), leaves the error
    out (never 0) and marks it unvalidated; the summary warns of both. Validated, on a DUT that names its connection
    timeout, the capacity is found, unmarked (tests/test_capacity_timeout.py: one that names none is marked [t])."""
    evicting = FakeModel(table_limit=10_000, table_full="evict")
    common = {"upper": 400_000, "error": 10_000, "min_connections": 4000, "connection_error": 1000}
    blind = measure(
        tmp_path, "capacity", FakeDut(evicting), max_connections=100_000, validation="off", check_table=False,
        **common,
    )  # fmt: skip
    rows = cells(blind.seed_table())
    assert rows["capacity median"] == ["100,000 [>=] [u]"]
    assert rows["capacity not reached reps."] == ["3"]
    assert "capacity error" not in rows  # no repetition has an error: none is made up
    caption = blind.seed_table().caption
    assert "[>=]: not reached: the capacity is at least this many connections" in caption
    assert "[u]: some repetitions' probes were neither validated" in caption
    warnings = summarize_run(blind).warnings
    assert any(w.startswith("connection tracking table capacity: not reached in 3 of 3 repetitions") for w in warnings)
    assert any(w.startswith("3 capacity repetitions were neither validated") for w in warnings)

    named = dataclasses.replace(evicting, udp_timeout=300.0)
    checked = measure(tmp_path, "capacity", FakeDut(named), max_connections=100_000, **common)
    rows = cells(checked.seed_table())
    assert "[" not in rows["capacity median"][0] and "capacity not reached reps." not in rows
    assert rows["capacity error"] != ["-"] and float(rows["capacity error"][0].replace(",", "")) <= 1000


def _clumps_above(rate_limit: float, lost: int) -> Callable[[FakeTester], None]:
    """Above ``rate_limit`` cps the fake tester's phase 1 stalls (a clump of 300 frames) and the DUT loses ``lost``
    frames of it: the tester's deviation explains the loss, the trial is invalid."""

    def patch(tester: FakeTester) -> None:
        def phase1(rate: float, learn: bool, _orig: Any = tester.phase1) -> PhaseResult:
            res: PhaseResult = _orig(rate, learn)
            if rate <= rate_limit:
                return res
            c = res.counts[F]
            dev = Deviation(clump=300, notes=("stalled: 300 frames behind schedule",))
            return dataclasses.replace(
                res, counts={F: DirectionCounts(c.sent, c.received - lost, c.valid - lost)}, deviations={F: dev}
            )

        tester.phase1 = phase1  # type: ignore[method-assign]

    return patch


def _slow_above(rate_limit: float) -> Callable[[FakeTester], None]:
    """Above ``rate_limit`` cps the fake tester sends 10 % too slowly: the tester's own ceiling."""

    def patch(tester: FakeTester) -> None:
        def phase1(rate: float, learn: bool, _orig: Any = tester.phase1) -> PhaseResult:
            res: PhaseResult = _orig(rate, learn)
            return res if rate <= rate_limit else dataclasses.replace(res, achieved_rate=rate * 0.9)

        tester.phase1 = phase1  # type: ignore[method-assign]

    return patch


def test_a_tester_bound_search_says_which_limit_ended_it(tmp_path: Path) -> None:
    """A cps search ended by the tester's ceiling counts in 'tester-bound reps.' and is the tester's limit in the
    summary; one ended by the tester's clumps counts in 'tester-clumps reps.' and the summary says the tester's
    sending pattern caused the DUT's loss. Both are lower bounds of the DUT (the plot's marker)."""
    settings = {"upper": 200_000, "error": 1000, "max_invalid": 8, "validation": "off"}
    rate = measure(tmp_path, "cps", FakeDut(FakeModel(cps=300_000)), patch=_slow_above(100_000), **settings)
    clumps = measure(tmp_path, "cps", FakeDut(FakeModel(cps=300_000)), patch=_clumps_above(100_000, 10), **settings)
    assert rate.results["bound_by_rate"].all() and not rate.results["bound_by_clumps"].any()
    assert clumps.results["bound_by_clumps"].all() and not clumps.results["bound_by_rate"].any()
    assert rate.results["tester_bound"].all() and clumps.results["tester_bound"].all()

    by_rate, by_clumps = cells(rate.seed_table()), cells(clumps.seed_table())
    assert by_rate["cps tester-bound reps."] == ["3"] and "cps tester-clumps reps." not in by_rate
    assert by_clumps["cps tester-clumps reps."] == ["3"] and "cps tester-bound reps." not in by_clumps
    assert "ended at the tester's ceiling (it could not send faster)" in rate.seed_table().caption
    assert "the tester's sending pattern (clumps of frames after its stalls) caused the DUT's loss" in (
        clumps.seed_table().caption
    )
    (w_rate,) = [w for w in summarize_run(rate).warnings if w.startswith("maximum connection establishment rate")]
    (w_clumps,) = [w for w in summarize_run(clumps).warnings if w.startswith("maximum connection establishment rate")]
    # no DUT CPU was monitored: a lower bound, and nothing says the DUT can do more (natbench.report.bound)
    assert "limited by the tester's ceiling: their values are lower bounds" in w_rate and "clumps" not in w_rate
    assert "can do more" not in w_rate
    assert "the tester's sending pattern (clumps after its stalls) caused the DUT's loss" in w_clumps


def test_a_noisy_memavailable_gives_no_memory_figure_and_a_quiet_one_does(tmp_path: Path) -> None:
    """A DUT without a slab cache of its table: its MemAvailable jitters by 3 MB between the readings of the emptied
    table, so 4,000 connections' 1.2 MB fall is noise ('-' with the footnote, never the -12.29 or 2,461 of the
    audit); a quiet DUT's fall gives 300 B per connection."""
    settings = {"upper": 100_000, "error": 10_000, "fill_rate": 50_000}
    noisy = MemoryFakeDut(FakeModel(), slab_per_connection=None, mem_noise=(2_000_000, -1_000_000, 0, 0))
    run = measure(tmp_path, "throughput", noisy, **settings)
    table = run.seed_table()
    assert cells(table)["memory / conn. (B)"] == ["-"]
    assert "cannot be told from the noise" in table.caption
    quiet = measure(tmp_path, "throughput", MemoryFakeDut(FakeModel(), slab_per_connection=None), **settings)
    assert cells(quiet.seed_table())["memory / conn. (B)"] == ["300.0"]
    assert cells(quiet.seed_table())["memory used (MB)"] == ["1.200"]  # 4,000 x 300 B
