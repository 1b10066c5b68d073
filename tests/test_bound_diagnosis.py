"""What bounds a result at the tester's ceiling (natbench.report.bound): the DUT's headroom where its data-path CPUs
had room for one more search error, the host where they were saturated and the tester and the DUT share its CPUs,
a lower bound only otherwise; the summary says which and never that the DUT can do more where it showed no room."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import natbench
from natbench.plugins import SHARES_HOST
from natbench.report.bound import has_headroom, shares_host, with_bound_diagnosis
from natbench.report.summary import summarize_run
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.testing.rundir import write_run_dir
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="lab")


@pytest.mark.parametrize(
    ("busy", "room"),
    [(95.0, True), (100 * 100 / 105 - 0.01, True), (100 * 100 / 105 + 0.01, False), (100.0, False)],
)
def test_headroom_is_room_for_one_more_search_error(busy: float, room: bool) -> None:
    """At 100,000 with an error of 5,000 the DUT has room for one more error while busy below 100 / 105 = 95.24 %."""
    assert has_headroom(busy, 100_000.0, 5000.0) is room


def test_no_headroom_without_a_figure() -> None:
    assert not has_headroom(float("nan"), 100_000.0, 5000.0)
    assert not has_headroom(10.0, 100_000.0, float("nan"))


@pytest.mark.parametrize(
    ("duts", "shared"),
    [
        ({"dut": {SHARES_HOST: True}}, True),
        ({"group": {"ce": {"kernel": "x"}, "pe": {SHARES_HOST: True}}}, True),
        ({"dut": {SHARES_HOST: False}}, False),
        ({"dut": {"kernel": "x"}}, False),
        ({}, False),
    ],
)
def test_the_run_shares_the_host_where_a_dut_says_so(duts: dict[str, Any], shared: bool) -> None:
    assert shares_host(duts) is shared


def _frame(rows: list[tuple[bool, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "bound_by_rate": [b for b, _ in rows],
            "dut_cpu_busy": [c for _, c in rows],
            "value": [100_000.0] * len(rows),
            "error": [5000.0] * len(rows),
        }
    )


@pytest.mark.parametrize("host_shared", [True, False])
def test_every_tester_bound_repetition_is_exactly_one_case(host_shared: bool) -> None:
    rows = [(True, 50.0), (True, 99.0), (True, float("nan")), (False, 99.0), (False, 50.0)]
    out = with_bound_diagnosis(_frame(rows), host_shared)
    cases = out[["bound_headroom", "bound_host", "bound_lower"]].astype(int)
    assert cases.sum(axis=1).tolist() == [1, 1, 1, 0, 0]
    assert out["bound_headroom"].tolist() == [True, False, False, False, False]
    assert out["bound_host"].tolist() == [False, host_shared, False, False, False]
    assert out["bound_lower"].tolist() == [False, not host_shared, True, False, False]


def _monitored(busy: float) -> dict[str, Any]:
    idle = 100.0 - busy
    return {"monitor": {"dut": {"interval": 0.5, "t": [0.0, 0.5, 1.0, 1.5], "idle": {"cpu0": [idle] * 4}}}}


def _run(tmp_path: Path, busy: float, host_shared: bool) -> natbench.Run:
    """Three throughput repetitions ended at the tester's ceiling (185,000), the DUT ``busy`` % there."""
    records: list[TrialRecord | RepetitionResult] = []
    counts = {"forward": {"sent": 1, "received": 1, "valid": 1}}
    stored = {"tester_bound": True, "tester_bound_cause": "rate", "tester_ceiling": 190_000.0, "directions": 2}
    stored["algorithm"] = "binary"
    for rep in range(3):
        trial = TrialRecord(POINT.id, "throughput", rep, 0, "phase2", 185_000.0, 185_000.0, counts, Verdict.PASS, "",
                            0.0, 1.0, extra=_monitored(busy))  # fmt: skip
        result = RepetitionResult(
            POINT.id, "throughput", rep, 185_000.0, "fps", 5000.0, {**stored, "algorithm": "binary"}
        )
        records += [trial, result]
    duts = {"dut": {"kernel": "x", **({SHARES_HOST: True} if host_shared else {})}}
    return natbench.load(write_run_dir(tmp_path / f"run-{busy}-{host_shared}", [POINT], records, duts=duts))


@pytest.mark.parametrize(
    ("busy", "host_shared", "says"),
    [
        (100.0, True, "the host is the bound"),
        (100.0, False, "their values are lower bounds"),
        (50.0, True, "the DUT can do more"),
        (50.0, False, "the DUT can do more"),
    ],
)
def test_the_summary_says_what_bounds_the_results_and_nothing_else(
    tmp_path: Path, busy: float, host_shared: bool, says: str
) -> None:
    run = _run(tmp_path, busy, host_shared)
    warned = [w for w in summarize_run(run).warnings if w.startswith("throughput:")]
    assert len(warned) == 1 and says in warned[0] and "3 of 3" in warned[0]
    if busy == 100.0:
        assert "can do more" not in " ".join(summarize_run(run).warnings)
    table = run.seed_table()
    assert str(table.cells.loc["throughput tester-bound reps."].iloc[0]) == "3"
    assert str(table.cells.loc["throughput DUT CPU busy (%)"].iloc[0]) == f"{busy:.1f}"
