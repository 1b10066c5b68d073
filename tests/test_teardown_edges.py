"""Tear-down at its edges, called directly (a repetition's errors are caught by run_repetition): a reused T_0
keeps its spread as the noise a deletion time must exceed, the failed timed deletes are named, and the emptied
table's memory is read with its gap (RFC 9693, Section 4.7)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_engine_options import POINT, context, fakes, make_plan

from natbench.errors import DutStepFailed, SearchError
from natbench.metrics import ProcedureContext
from natbench.metrics.memory import EMPTY_READINGS, READING_GAP
from natbench.metrics.registry import run_repetition
from natbench.metrics.teardown import teardown
from natbench.results import RepetitionResult, TrialRecord
from natbench.testing import FakeDut, FakeModel, FakeTester, MemoryFakeDut


def reusing(t_0: float, spread: float | None, **model: Any) -> tuple[ProcedureContext, list[TrialRecord], FakeDut]:
    """A third teardown repetition reusing two earlier ones' T_0 (and T_0_spread, when given)."""
    tester, dut = fakes(**model)
    plan = make_plan()
    tester.prepare(plan)
    noise = {} if spread is None else {"T_0_spread": spread}
    earlier = tuple(
        RepetitionResult(POINT.id, "teardown", i, 1.0, "conn/s", extra={"T_0": t_0, "T_0_measured": True, **noise})
        for i in range(2)
    )
    records: list[TrialRecord] = []
    ctx = context(
        tester, dut, plan, "teardown", settings={"fill_rate": 10_000, "empty_repetitions": 2},
        repetition=2, earlier=earlier, records=records,
    )  # fmt: skip
    return ctx, records, dut


def test_a_reused_t0_keeps_the_earlier_spread_as_the_noise() -> None:
    # T_N = 0.5 + 1,000 x 5e-4 = 1.0 s; T_0 = 0.5 s reused with its stored spread 0.2 s
    ctx, _records, _dut = reusing(0.5, 0.2, flush_empty=0.5, flush_per_connection=5e-4)
    res = run_repetition(ctx)
    assert res.extra["T_0_spread"] == pytest.approx(0.2)
    assert res.extra["deletion_time"] == pytest.approx(0.5) and res.value == pytest.approx(1000 / 0.5)
    # no spread stored: no noise known
    ctx, _records, _dut = reusing(0.5, None, flush_empty=0.5, flush_per_connection=5e-4)
    assert run_repetition(ctx).extra["T_0_spread"] == 0.0


def test_a_deletion_time_equal_to_the_reused_spread_is_too_few_to_time() -> None:
    # T_N - T_0 = 1.0 - 0.5 = 0.5 s, exactly the reused spread: within the noise, refused
    ctx, _records, _dut = reusing(0.5, 0.5, flush_empty=0.5, flush_per_connection=5e-4)
    with pytest.raises(SearchError) as err:
        teardown(ctx)
    # the rate seen from the low edge of T_0 (0.5 - 0.5 / 2 = 0.25 s): 1,000 / 0.75 s; RESOLUTION (4) x the
    # spread 0.5 s at that rate is 2,666.7 -> 2,667 connections
    assert "use at least 2,667 connections" in str(err.value)
    assert "+- 0.25 s" in str(err.value)
    # just above the spread: a measurement
    ctx, _records, _dut = reusing(0.5, 0.49, flush_empty=0.5, flush_per_connection=5e-4)
    assert run_repetition(ctx).value == pytest.approx(1000 / 0.5)


def test_a_filled_delete_no_slower_than_t0_fails_whatever_spread_is_stored() -> None:
    # T_N = T_0 = 1.0 s with a (damaged) negative stored spread: still no deletion time to divide by
    ctx, _records, _dut = reusing(1.0, -0.1, flush_empty=0.5, flush_per_connection=5e-4)
    with pytest.raises(SearchError, match="too few connections to time"):
        teardown(ctx)


class FailingFlush(FakeDut):
    """A DUT whose timed delete-all fails from its ``fail_from``-th call on (0: the first)."""

    fail_from = 0

    def timed_flush(self) -> float:
        if self.events.count("flush") >= self.fail_from:
            raise DutStepFailed("flush timed out")
        return super().timed_flush()


@pytest.mark.parametrize(("fail_from", "what"), [(0, "the 1,000 connections"), (1, "the empty table")])
def test_a_failed_timed_delete_names_what_it_was_deleting(fail_from: int, what: str) -> None:
    dut = FailingFlush(FakeModel())
    dut.fail_from = fail_from
    dut.setup(POINT)
    tester = FakeTester(dut)
    plan = make_plan()
    tester.prepare(plan)
    with pytest.raises(SearchError) as err:
        teardown(context(tester, dut, plan, "teardown", settings={"fill_rate": 10_000}))
    assert str(err.value) == f"the timed delete of {what} failed: flush timed out"
    assert isinstance(err.value.__cause__, DutStepFailed)


def test_teardown_waits_between_the_empty_tables_memory_readings() -> None:
    dut = MemoryFakeDut(FakeModel())  # a DUT whose memory is read around each fill
    dut.setup(POINT)
    tester = FakeTester(dut)
    plan = make_plan()
    tester.prepare(plan)
    waits: list[float] = []
    ctx = dataclasses.replace(
        context(tester, dut, plan, "teardown", settings={"fill_rate": 10_000}), sleep=waits.append
    )
    teardown(ctx)
    # three readings of the emptied table before the fill, READING_GAP apart (gap 0: no other wait)
    assert waits == [READING_GAP] * (EMPTY_READINGS - 1)
