"""Capacity on a DUT whose connection table has no limit but a connection timeout (natbench.testing.dutmodels'
TableModel): where the DUT names no timeout the collapse the search finds is the timeout's, and the result is marked
a lower bound ([t]) with what the collapsed probe needed; where it names one, the steps that would need longer are
refused; a search that never collapsed, or whose probes nothing checked, is not marked."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from metric_settings import build

import natbench
from natbench.metrics import ProcedureContext
from natbench.metrics.capacity import CAPACITY
from natbench.metrics.lifetime import establishment_lifetime
from natbench.metrics.registry import run_repetition
from natbench.report.summary import summarize_run
from natbench.results import RepetitionResult, TrialRecord
from natbench.testing import with_model
from natbench.testing.dutmodels import Behaviour, TableModel
from natbench.testing.modelled import SimClock, modelled_pair
from natbench.testing.rundir import write_run_dir
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1039), PortRange(80, 179), 64, cores=1, name="timeout")
"""4,000 connections to start: 40 source ports x 100 destination ports."""
CPS = 212_000.0
"""The DUT's connection establishment rate: with a 2 s timeout and a 0.1 s receive wait it keeps (2 - 0.1) x 212,000
= 402,800 connections through a validated step at its top rate."""


def run(table: TableModel, *, can_count: bool = True, **settings: Any) -> tuple[RepetitionResult, list[TrialRecord]]:
    clock = SimClock()
    tester, dut = modelled_pair(Behaviour(), table=table, sim=clock, command_seconds=0.0)
    with_model(dut, cps=CPS, can_count=can_count)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    dut.setup(POINT)
    given = {
        "upper": 400_000, "error": 2000, "timeout": 0.1, "min_connections": 4000, "max_connections": 2_000_000,
        "connection_error": 1000, **settings,
    }  # fmt: skip
    resolved, options = build("capacity", **given)
    records: list[TrialRecord] = []
    ctx: ProcedureContext[Any] = ProcedureContext(
        tester, dut, POINT, plan, "capacity", 0, resolved, emit=records.append, clock=clock, sleep=clock.advance,
        options=options,
    )  # fmt: skip
    return run_repetition(ctx), records


def test_an_unknown_timeout_collapses_the_rate_and_the_result_is_marked_a_lower_bound() -> None:
    res, _records = run(TableModel(timeout=2.0, reports_timeout=False))
    assert res.value is not None and res.extra["not_reached"] is False
    # the table has no limit, yet the search collapses: a step at a lower rate needs its connections longer (the
    # binary search goes down from a failure, where the steps fail sooner still), so it ends below the count the
    # timeout allows at the DUT's top rate
    assert 50_000 < res.value < 402_800
    assert res.extra["timeout_unknown"] is True
    n, rate = res.extra["collapse_connections"], res.extra["collapse_rate"]
    assert n > res.value
    assert res.extra["collapse_lifetime"] == pytest.approx(establishment_lifetime(n, rate, 0.1, rate))
    assert res.extra["collapse_lifetime"] > 2.0  # a timeout of 2 s is shorter than the collapsed probe needed
    column = next(c for c in CAPACITY.columns if c.name == "timeout_unknown")
    assert column.value(res) is True
    assert any(m.column == "timeout_unknown" and m.symbol == "[t]" for m in CAPACITY.marks)


@pytest.mark.parametrize(
    ("settings", "reverse_share"),
    [
        ({"alpha": 2.0}, 0.5),  # reverse frames at 2 x the rate: half the phase-1 time again
        ({"validation": "off", "check_table": True}, None),  # checked by the DUT's count: phase 1 alone
    ],
)
def test_the_collapsed_probes_need_follows_its_validation(
    settings: dict[str, Any], reverse_share: float | None
) -> None:
    res, _records = run(TableModel(timeout=2.0, reports_timeout=False), **settings)
    assert res.extra["validated"] is True and res.extra["timeout_unknown"] is True
    n, rate = res.extra["collapse_connections"], res.extra["collapse_rate"]
    need = n / rate + 0.1  # phase 1 and its receive wait
    if reverse_share is not None:
        need += reverse_share * n / rate + 0.1  # the reverse frames and their receive wait
    assert res.extra["collapse_lifetime"] == pytest.approx(need)


def test_a_named_timeout_refuses_the_steps_that_need_longer_instead() -> None:
    res, records = run(TableModel(timeout=2.0, reports_timeout=True))
    assert res.value is None and "longer than the dut_timeout of 2 s" in res.extra["failed"]
    assert records[-1].extra["invalid_cause"] == "dut_timeout"


def test_a_search_that_never_collapsed_is_not_marked() -> None:
    res, _records = run(TableModel(timeout=60.0, reports_timeout=False), max_connections=200_000)
    assert res.extra["not_reached"] is True and res.value == 200_000
    assert not res.extra.get("timeout_unknown")
    column = next(c for c in CAPACITY.columns if c.name == "timeout_unknown")
    assert column.value(res) is False


def test_a_table_without_timeout_collapses_at_its_limit_and_is_marked_all_the_same() -> None:
    """The DUT names no timeout: natbench cannot tell a full table from expired connections, so a collapse at the
    table's limit is marked too (the value is right, but nothing shows that it is the table's)."""
    res, _records = run(TableModel(limit=100_000, timeout=None), max_connections=400_000)
    assert res.value is not None and 99_000 <= res.value <= 100_000
    assert res.extra["timeout_unknown"] is True


def test_unchecked_probes_cannot_see_expired_connections_and_are_marked_unvalidated_instead() -> None:
    res, _records = run(
        TableModel(limit=100_000, timeout=None), max_connections=400_000, validation="off", check_table=False
    )
    assert res.extra["validated"] is False
    assert res.extra["timeout_unknown"] is False


@pytest.mark.parametrize("can_count", [True, False])
def test_a_table_check_marks_the_probes_checked_only_on_a_dut_that_can_count(can_count: bool) -> None:
    """validation: off with the table check on: the DUT's count is what checks the probes. A DUT that says it cannot
    count (its ``supports`` hook) checks nothing: the result is unvalidated and not marked [t], as with the check
    off."""
    res, records = run(
        TableModel(limit=100_000, timeout=None), can_count=can_count, max_connections=400_000, validation="off",
        check_table=True,
    )  # fmt: skip
    assert res.value is not None and 99_000 <= res.value <= 100_000
    assert (res.extra["validated"], res.extra["timeout_unknown"]) == (can_count, can_count)
    assert any("dut_connections" in r.extra for r in records) is can_count


@pytest.mark.parametrize("reports", [False, True])
def test_the_report_marks_the_values_and_warns_where_the_timeout_is_unknown(tmp_path: Path, reports: bool) -> None:
    """The same DUT (a 100,000-connection table, a 60 s timeout that no probe reaches): unnamed, the tables mark the
    capacity [t] with its caption note and the summary warns; named, neither."""
    records: list[TrialRecord | RepetitionResult] = []
    for rep in range(2):
        res, trials = run(TableModel(limit=100_000, timeout=60.0, reports_timeout=reports), max_connections=400_000)
        records += [*(dataclasses.replace(t, repetition=rep) for t in trials), dataclasses.replace(res, repetition=rep)]
    run_ = natbench.load(write_run_dir(tmp_path / "run", [POINT], records))
    table = run_.tables()[0]
    median = [str(c) for c in table.cells.loc["capacity median"]]
    warned = [w for w in summarize_run(run_).warnings if "named no connection timeout" in w]
    if reports:
        assert not median[0].endswith("[t]") and "[t]:" not in table.caption and not warned
    else:
        assert median[0].endswith("[t]"), median
        assert "[t]: the DUT names no connection timeout" in table.caption
        assert warned == [warned[0]] and "in 2 of 2 repetitions" in warned[0]
