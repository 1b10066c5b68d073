"""Frame loss (RFC 2544 26.3): a walk whose rates run out before stop_after_zero loss-free rates is flagged,
stored, marked [w] in the tables and warned about; one that reaches them, or measures every rate on purpose, is not;
a rate listed twice is measured once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from metric_settings import build

import natbench
from natbench.metrics import ProcedureContext
from natbench.metrics.frame_loss import FRAME_LOSS, FrameLossSettings
from natbench.metrics.registry import run_repetition
from natbench.report.summary import summarize_run
from natbench.results import RepetitionResult, TrialRecord
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.testing.rundir import write_run_dir
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")


def walk(records: list[TrialRecord], repetition: int = 0, **settings: Any) -> RepetitionResult:
    """One frame loss repetition on a fake DUT that forwards 500,000 frames/s per direction."""
    dut = FakeDut(FakeModel(forwarding=500_000))
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    resolved, options = build("frame_loss", {"gap": 0.0, "duration": 1.0, "fill_rate": 50_000}, **settings)
    ctx: ProcedureContext[Any] = ProcedureContext(
        tester, dut, POINT, plan, "frame_loss", repetition, resolved, emit=records.append, sleep=lambda _s: None,
        options=options,
    )  # fmt: skip
    return run_repetition(ctx)


def _flag(res: RepetitionResult) -> bool:
    return bool(next(c for c in FRAME_LOSS.columns if c.name == "walk_incomplete").value(res))


@pytest.mark.parametrize(
    ("rates", "stop_after_zero", "incomplete"),
    [
        ((600_000, 550_000, 500_000, 450_000), 2, False),  # two loss-free rates at the end: complete
        ((600_000, 550_000, 500_000), 2, True),  # one: the rates ran out
        ((600_000, 550_000), 2, True),  # none
        ((600_000, 550_000, 500_000), 1, False),  # one asked for, one found
        ((600_000, 550_000), 0, False),  # every rate measured on purpose
    ],
)
def test_a_walk_that_ends_before_its_loss_free_rates_is_flagged(
    rates: tuple[float, ...], stop_after_zero: int, incomplete: bool
) -> None:
    records: list[TrialRecord] = []
    res = walk(records, rates=list(rates), stop_after_zero=stop_after_zero)
    assert [r for r, _ in res.extra["curve"]] == list(rates)
    assert res.extra["walk_incomplete"] is incomplete
    assert _flag(res) is incomplete


def test_a_rate_listed_twice_is_measured_once() -> None:
    records: list[TrialRecord] = []
    res = walk(records, rates=[550_000, 600_000, 550_000, 500_000, 600_000], stop_after_zero=0)
    assert [r for r, _ in res.extra["curve"]] == [600_000, 550_000, 500_000]
    assert [r.intended_rate for r in records if r.kind == "phase2"] == [600_000, 550_000, 500_000]
    s = FrameLossSettings(fill_rate=1000, rates=[500_000, 500_000])
    assert s.walk() == [500_000]


@pytest.mark.parametrize("incomplete", [True, False])
def test_the_tables_mark_an_incomplete_walk_and_the_summary_warns(tmp_path: Path, incomplete: bool) -> None:
    rates = [600_000, 550_000, 500_000] if incomplete else [600_000, 550_000, 500_000, 450_000]
    stored: list[TrialRecord | RepetitionResult] = []
    for rep in range(2):
        records: list[TrialRecord] = []
        res = walk(records, repetition=rep, rates=rates)
        stored += [*records, res]
    run = natbench.load(write_run_dir(tmp_path / "run", [POINT], stored))
    table = run.tables()[0]
    median = str(table.cells.loc["frame loss median"].iloc[0])
    warned = [w for w in summarize_run(run).warnings if "the walk ran out of rates" in w]
    assert median.endswith("[w]") is incomplete
    assert ("[w]: some repetitions' walk ran out of rates" in table.caption) is incomplete
    assert (warned == [warned[0]] and "in 2 of 2 repetitions" in warned[0]) if incomplete else not warned


def test_a_walk_from_max_rate_goes_down_by_step_without_float_noise() -> None:
    # ten rates from 100 % down to 10 %: 1 - 7 x 0.1 is 0.29999999999999993 in floats, the walk's rate 0.3 x max
    s = FrameLossSettings(fill_rate=1000, max_rate=1.0)
    assert s.walk() == [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]


def test_a_walks_fractions_are_rounded_to_twelve_decimals() -> None:
    # a step written with 13 decimals: 1 - 0.0123456789012 = 0.9876543210988, rounded to 0.987654321099; the walk
    # has floor(1 / step) = 81 rates
    s = FrameLossSettings(fill_rate=1000, max_rate=1.0, step=0.0123456789012)
    rates = s.walk()
    assert (len(rates), rates[1]) == (81, 0.987654321099)


def test_a_step_whose_inverse_is_a_whole_number_in_decimals_walks_that_many_rates() -> None:
    # 1 / (1 / 93) is 92.99999999999999 in floats: still 93 rates, the last one 1/93 of max_rate (rounded)
    s = FrameLossSettings(fill_rate=1000, max_rate=93.0, step=1 / 93)
    rates = s.walk()
    assert len(rates) == 93
    assert rates[-1] == pytest.approx(1.0)
