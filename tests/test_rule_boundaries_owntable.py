"""A metric's table of its own (tear-down, seed 000 Figure 5) at its rules' boundaries (natbench.report.own,
natbench.report.rows; docs/report.md):

* times keep 2 decimals; 1 in a column whose largest time reaches 1,000 s (999.95 s rounds to it, 999.94 s does
  not); more where the smallest time is below 0.1 s (0.09 s, not 0.1 s); a time of 0 s is no smallest time;
* the table's invalid trials and marks are the metric's own, and its invalid trials row appears only where trials
  of it were stored; built without the run's summary it has no flags at all, and with a summary without
  invalid trials no such row;
* a metric without a table of its own, or an unknown scale, is refused.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them; the table built by :func:`natbench.report.own.own_table` where its arguments are the point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import natbench
from natbench.metrics import reported_metric
from natbench.report.own import own_table
from natbench.report.seedtable import SeedTable
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

P = make_point(0, (1, 100), (1, 10), cores=1)


def teardown(t_n: float, t_0: float, reps: int = 3, pid: str = P.id) -> list[Any]:
    """Tear-down repetitions whose filled and empty tables took ``t_n`` and ``t_0`` seconds to empty."""
    n = 1000
    extra = {"T_N": t_n, "T_0": t_0, "connections": n}
    value = n / (t_n - t_0) if t_n > t_0 else None
    return [result_record(pid, "teardown", r, value, "conn/s", extra=extra) for r in range(reps)]


def load(tmp_path: Path, records: list[Any]) -> natbench.Run:
    return natbench.load(write_run_dir(tmp_path / f"run{len(list(tmp_path.iterdir()))}", [P], records))


def rows(table: SeedTable) -> dict[str, list[str]]:
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def cell(tmp_path: Path, t_n: float, t_0: float, row: str) -> str:
    return rows(load(tmp_path, teardown(t_n, t_0)).seed_table("teardown"))[row][0]


# --- decimals of the times -----------------------------------------------------------------------------------------


def test_one_decimal_from_a_largest_time_that_rounds_to_a_thousand_seconds(tmp_path: Path) -> None:
    assert cell(tmp_path, 999.95, 0.5, "full contr. del med") == "1,000.0"
    assert cell(tmp_path, 999.95, 0.5, "empty contr. del med") == "0.5"
    assert cell(tmp_path, 999.94, 0.5, "full contr. del med") == "999.94"
    assert cell(tmp_path, 999.94, 0.5, "empty contr. del med") == "0.50"


def test_more_decimals_only_below_a_tenth_of_a_second(tmp_path: Path) -> None:
    assert cell(tmp_path, 5.0, 0.1, "empty contr. del med") == "0.10"
    assert cell(tmp_path, 5.0, 0.09, "empty contr. del med") == "0.0900"
    assert cell(tmp_path, 5.0, 0.09, "full contr. del med") == "5.0000"


def test_a_time_of_zero_is_no_smallest_time(tmp_path: Path) -> None:
    assert cell(tmp_path, 5.0, 0.0, "empty contr. del med") == "0.00"
    assert cell(tmp_path, 5.0, 0.0, "conn. deletion time") == "5.00"


# --- the metric's own flags ----------------------------------------------------------------------------------------


def test_no_invalid_trials_row_where_no_trial_of_the_metric_was_stored(tmp_path: Path) -> None:
    """The run stored cps trials (one invalid) at the point, none of tear-down: the tear-down table's invalid trials
    are unknown, not the cps ones."""
    cps = [result_record(P.id, "cps", r, 1000.0, "cps", error=10.0) for r in range(3)]
    cps_trials = [trial_record(P.id, "cps", 0, 0, rate=1000.0, verdict="invalid")]
    run = load(tmp_path, [*teardown(5.0, 0.5), *cps_trials, *cps])
    assert run.summary.loc[(P.id, "cps"), "invalid_trials"] == 1
    table = rows(run.seed_table("teardown"))
    assert "invalid trials" not in table
    assert table["num. experiments"] == ["3"]


def test_the_invalid_trials_row_where_trials_of_the_metric_were_stored(tmp_path: Path) -> None:
    trials = [trial_record(P.id, "teardown", 0, 0, rate=1000.0, verdict="invalid")]
    table = rows(load(tmp_path, [*trials, *teardown(5.0, 0.5)]).seed_table("teardown"))
    assert table["invalid trials"] == ["1"]


def test_a_table_built_without_the_runs_summary_has_no_flags(tmp_path: Path) -> None:
    run = load(tmp_path, teardown(5.0, 0.5))
    metric = reported_metric("teardown")
    table = own_table(metric, run.figures("teardown"), run.points)
    assert rows(table)["conn. tear d. rate"] == ["222.2"]
    assert "[u]" not in table.caption
    # a summary without invalid trials (summarize alone, not with_invalid_trials): no such row
    plain = own_table(metric, run.figures("teardown"), run.points, summary=run.summary.drop(columns="invalid_trials"))
    assert "invalid trials" not in rows(plain) and rows(plain)["num. experiments"] == ["3"]


# --- refused --------------------------------------------------------------------------------------------------------


def test_a_metric_without_a_table_of_its_own_and_an_unknown_scale_are_refused(tmp_path: Path) -> None:
    run = load(tmp_path, teardown(5.0, 0.5))
    with pytest.raises(ValueError, match=r"metric 'cps' has no table of its own"):
        own_table(reported_metric("cps"), run.figures("teardown"), run.points)
    with pytest.raises(ValueError, match=r"unknown scale 'G'; choose one of 1, k, M"):
        own_table(reported_metric("teardown"), run.figures("teardown"), run.points, scale="G")
    assert rows(own_table(reported_metric("teardown"), run.figures("teardown"), run.points, scale="k"))[
        "conn. tear d. rate"
    ] == ["0.2222"]


# --- an empty summary, the slab rows' names, the title --------------------------------------------------------------


def test_an_empty_summary_gives_no_flags(tmp_path: Path) -> None:
    import pandas as pd

    run = load(tmp_path, teardown(5.0, 0.5))
    table = own_table(reported_metric("teardown"), run.figures("teardown"), run.points, summary=pd.DataFrame())
    assert rows(table)["num. experiments"] == ["3"] and "invalid trials" not in rows(table)


def test_the_slab_rows_are_named_as_the_caller_names_them_else_by_default(tmp_path: Path) -> None:
    from natbench.metrics.memory import memory_used
    from natbench.run.format.declarations import slab_label

    before = {"mem_available": 10**10, "conntrack_slab": 4096}
    after = {"mem_available": 10**10 - 5 * 1000, "conntrack_slab": 4096 + 256 * 1000}
    memory = memory_used(before, after, 1000, {})
    fill = trial_record(P.id, "teardown", 0, 0, rate=1000, kind="fill", extra={"memory": memory})
    run = load(tmp_path, [*teardown(5.0, 0.5), fill])
    metric, figures = reported_metric("teardown"), run.figures("teardown")
    named = rows(own_table(metric, figures, run.points, memory=run.memory, slab_labels=lambda key: f"<{key}>"))
    default = rows(own_table(metric, figures, run.points, memory=run.memory))
    assert [name for name in named if name.startswith("<")] == ["<conntrack_slab>"]
    assert slab_label({}, "conntrack_slab") in default and "<conntrack_slab>" not in default


def test_a_given_title_else_the_metrics_own(tmp_path: Path) -> None:
    run = load(tmp_path, teardown(5.0, 0.5))
    metric = reported_metric("teardown")
    assert metric.table is not None
    assert own_table(metric, run.figures("teardown"), run.points, title="Mine").title == "Mine"
    assert own_table(metric, run.figures("teardown"), run.points).title == metric.table.title != ""
