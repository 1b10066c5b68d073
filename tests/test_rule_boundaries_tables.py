"""The performance table's blocks at their rules' boundaries (natbench.report.performance; docs/report.md):

* the forwarding baseline gets its block after the others, with the ratio row and its caption sentence, only when
  the table shows both the baseline and what it is compared with (throughput); else it is an ordinary block, or
  not shown;
* the baseline's experiments share the ``num. experiments`` row only when there is one and they match it;
* a table's columns are the points with a result of a metric it shows;
* one ``num. experiments`` row only for blocks that exist;
* the caption says how the relative scale-up is computed exactly when the cores vary.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import natbench
from natbench.report.performance import performance_table
from natbench.report.seedtable import SeedTable
from natbench.testing.rundir import make_point, result_record, write_run_dir

P = make_point(0, (1, 100), (1, 10), cores=1)
Q = make_point(1, (1, 100), (1, 10), cores=2)

BASELINE_WORDS = "plain packet forwarding baseline with the same port number ranges"
SCALE_WORDS = "rel. scale up = P(n) / (n * P(1)), n: number of CPU cores."


def results(pid: str, metric: str, reps: int, value: float = 1000.0) -> list[Any]:
    unit = {"cps": "cps"}.get(metric, "fps")
    error = None if metric == "forwarding" else 100.0
    return [result_record(pid, metric, r, value, unit, error=error) for r in range(reps)]


def load(tmp_path: Path, points: list[Any], records: list[Any]) -> natbench.Run:
    return natbench.load(write_run_dir(tmp_path / f"run{len(list(tmp_path.iterdir()))}", points, records))


def rows(table: SeedTable) -> dict[str, list[str]]:
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


# --- the forwarding baseline ----------------------------------------------------------------------------------------


def test_the_baseline_block_and_ratio_only_with_throughput_in_the_table(tmp_path: Path) -> None:
    run = load(tmp_path, [P], [*results(P.id, "throughput", 3), *results(P.id, "forwarding", 3, 2000.0)])
    both = run.seed_table()
    assert rows(both)["throughput ratio (%)"] == ["50.0"]
    assert "fwd. throughput median" in rows(both) and BASELINE_WORDS in both.caption
    alone = run.seed_table("throughput")  # the baseline not shown: neither its block nor the ratio
    assert "throughput ratio (%)" not in rows(alone)
    assert not any(name.startswith("fwd.") for name in rows(alone)) and BASELINE_WORDS not in alone.caption
    fwd = run.seed_table("forwarding")  # nothing to compare it with: an ordinary block
    assert rows(fwd)["fwd. throughput median"] == ["2,000"] and "throughput ratio (%)" not in rows(fwd)


def test_a_baseline_without_throughput_is_one_ordinary_block_without_the_baseline_caption(tmp_path: Path) -> None:
    run = load(tmp_path, [P], [*results(P.id, "cps", 3), *results(P.id, "forwarding", 3, 2000.0)])
    table = run.seed_table()
    assert [name for name in rows(table) if name.endswith(" median")] == ["cps median", "fwd. throughput median"]
    assert not any("ratio" in name for name in rows(table))
    assert BASELINE_WORDS not in table.caption


def test_the_baseline_counts_its_own_experiments_where_the_blocks_share_no_row(tmp_path: Path) -> None:
    recs = [*results(P.id, "throughput", 3), *results(P.id, "cps", 2), *results(P.id, "forwarding", 3, 2000.0)]
    table = rows(load(tmp_path, [P], recs).seed_table())
    assert "num. experiments" not in table
    assert table["throughput num. exp."] == ["3"] and table["cps num. exp."] == ["2"]
    assert table["fwd. throughput num. exp."] == ["3"]


# --- columns and the experiments row ------------------------------------------------------------------------------


def test_the_columns_are_the_points_with_a_result_of_a_metric_shown(tmp_path: Path) -> None:
    run = load(tmp_path, [P, Q], [*results(P.id, "cps", 3), *results(Q.id, "cps", 3), *results(Q.id, "throughput", 3)])
    assert run.seed_table().point_ids == [P.id, Q.id]
    throughput = run.seed_table("throughput")
    assert throughput.point_ids == [Q.id] and rows(throughput)["throughput median"] == ["1,000"]


def test_a_table_of_no_metric_block_has_no_experiments_row(tmp_path: Path) -> None:
    run = load(tmp_path, [P], results(P.id, "cps", 3))
    table = performance_table(run.summary, run.points, ["throughput"])  # a metric this run did not measure
    assert table.point_ids == [] and "num. experiments" not in rows(table)
    assert rows(performance_table(run.summary, run.points, ["cps"]))["num. experiments"] == ["3"]


# --- the caption on the relative scale-up ----------------------------------------------------------------------------


def test_the_caption_explains_the_scale_up_exactly_when_the_cores_vary(tmp_path: Path) -> None:
    cores = load(tmp_path, [P, Q], [*results(P.id, "cps", 3), *results(Q.id, "cps", 3, 1800.0)]).seed_table()
    assert rows(cores)["cps rel. scale up"] == ["1", "0.900"]
    assert SCALE_WORDS in cores.caption
    more = make_point(1, (1, 200), (1, 10), cores=1)  # the connections vary, the cores do not
    conns = load(tmp_path, [P, more], [*results(P.id, "cps", 3), *results(more.id, "cps", 3)]).seed_table()
    assert "cps rel. scale up" not in rows(conns) and SCALE_WORDS not in conns.caption
