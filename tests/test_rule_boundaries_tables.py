"""The performance table's blocks at their rules' boundaries (natbench.report.performance; docs/report.md):

* the forwarding baseline gets its block after the others, with the ratio row and its caption sentence, only when
  the table shows both the baseline and what it is compared with (throughput); else it is an ordinary block, or
  not shown;
* the baseline's experiments share the ``num. experiments`` row only when there is one and they match it;
* a table's columns are the points with a result of a metric it shows;
* one ``num. experiments`` row only for blocks that exist;
* the caption says how the relative scale-up is computed exactly when the cores vary;
* a block's count rows (no passing rate, tester-bound) appear from one flagged repetition, a count declared without
  a row gets none, a further statistic's rows (latency's worst case) only where a result stored it;
* the title names what varies only when it varies alone; an unknown scale is refused; a given title and the chosen
  metrics' key stand;
* only a rate the directions multiply is said to count all frames of bidirectional traffic; the memory rows are the
  figures and the slab caches, not the count of fills whose figure is unknown;
* the chosen metrics only; without a registered baseline metric, ordinary blocks; an "invalid trials" row only with
  the trials' counts in the summary; the slab cache rows named as the caller names them, else as a run without
  declarations does;
* the run's tables: a table of its own only for a metric that has one, with figures for at least one point;
* a caption's unit: the metric's words, else the unit its results name, else "as stored"; seconds shown as
  milliseconds only for a metric that asks for it.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import natbench
from natbench.report.performance import performance_table
from natbench.report.seedtable import SeedTable
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

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


# --- rows that appear from one flagged repetition -------------------------------------------------------------------


def test_one_repetition_without_a_passing_rate_gets_the_row(tmp_path: Path) -> None:
    none = {"no_passing_rate": True, "lower": 0.0, "upper": 976.0, "validated": False}
    recs = [*results(P.id, "cps", 3), result_record(P.id, "cps", 3, None, "cps", error=976.0, extra=none)]
    table = load(tmp_path, [P], recs).seed_table()
    assert rows(table)["cps no passing rate"] == ["1"]
    assert "no passing rate" not in " ".join(rows(load(tmp_path, [P], recs[:3]).seed_table()))


def test_one_tester_bound_repetition_gets_the_row_and_a_count_without_a_row_gets_none(tmp_path: Path) -> None:
    bound = {"tester_bound": True, "tester_bound_cause": "rate"}
    recs = [*results(P.id, "cps", 2), result_record(P.id, "cps", 2, 1000.0, "cps", error=100.0, extra=bound)]
    assert rows(load(tmp_path, [P], recs).seed_table())["cps tester-bound reps."] == ["1"]
    # ended at upper: a warning of the run's summary, no row of the table
    upper = [
        result_record(P.id, "cps", r, 1000.0, "cps", error=100.0, extra={"at_upper_limit": True}) for r in range(3)
    ]
    run = load(tmp_path, [P], upper)
    assert run.results["at_upper_limit"].tolist() == [True] * 3
    table = rows(run.seed_table())
    assert [name for name in table if name.startswith("cps ")] == ["cps error", "cps median", "cps min", "cps max"]


def test_latency_worst_case_rows_only_where_a_result_stored_it(tmp_path: Path) -> None:
    stored = [result_record(P.id, "latency", r, 40e-6, "s", extra={"worst_case": 90e-6}) for r in range(3)]
    table = rows(load(tmp_path, [P], stored).seed_table())
    assert table["latency worst case median"] == ["0.09000"]
    plain = [result_record(P.id, "latency", r, 40e-6, "s") for r in range(3)]
    assert not any("worst case" in name for name in rows(load(tmp_path, [P], plain).seed_table()))


# --- the title, the scale, the key ---------------------------------------------------------------------------------


def test_the_title_names_what_varies_only_when_it_varies_alone(tmp_path: Path) -> None:
    """Cores alone: against the cores; connections alone: against the connections; both or neither: neither."""
    fewer = make_point(0, (1, 100), (1, 10), cores=1)
    more = make_point(1, (1, 200), (1, 10), cores=2)
    both_vary = make_point(2, (1, 200), (1, 10), cores=1)  # series: fewer/more cores, fewer/more connections

    def title(points: list[Any]) -> str:
        recs = [r for p in points for r in results(p.id, "cps", 3)]
        return load(tmp_path, points, recs).seed_table().title

    assert title([P, Q]) == "Performance (cps) against the number of CPU cores"
    assert title([fewer, both_vary]) == "Performance (cps) against the number of connections"
    assert title([P]) == "Performance (cps)"
    assert title([fewer, more, both_vary, Q]) == "Performance (cps)"


def test_an_unknown_scale_is_refused_naming_the_scales(tmp_path: Path) -> None:
    run = load(tmp_path, [P], results(P.id, "cps", 3))
    with pytest.raises(ValueError, match=r"unknown scale 'G'; choose one of 1, k, M"):
        performance_table(run.summary, run.points, scale="G")
    assert rows(performance_table(run.summary, run.points, scale="k"))["cps median"] == ["1.000"]


def test_a_given_title_stands_and_a_table_of_chosen_metrics_has_their_key(tmp_path: Path) -> None:
    run = load(tmp_path, [P], [*results(P.id, "cps", 3), *results(P.id, "throughput", 3)])
    assert performance_table(run.summary, run.points, title="Mine").title == "Mine"
    assert performance_table(run.summary, run.points).key == "performance"
    assert performance_table(run.summary, run.points, ["throughput", "cps"]).key == "throughput-cps"
    assert run.seed_table("cps").key == "cps"


# --- the unit's words and the memory rows ----------------------------------------------------------------------------


def test_only_a_rate_the_directions_multiply_is_said_to_count_all_frames(tmp_path: Path) -> None:
    both = {"directions": 2}
    recs = [result_record(P.id, "throughput", r, 1000.0, "fps", error=10.0, extra=both) for r in range(3)]
    recs += [result_record(P.id, "cps", r, 1000.0, "cps", error=10.0, extra=both) for r in range(3)]
    caption = load(tmp_path, [P], recs).seed_table().caption
    assert caption.count("all frames of bidirectional traffic (per-direction rate x2)") == 1
    assert "throughput: frames per second, all frames of bidirectional traffic (per-direction rate x2)" in caption
    assert "cps: connections per second;" in caption  # a connection is counted once, whatever its directions


def test_the_memory_rows_are_the_figures_and_the_slab_caches_not_the_count_of_unknown_figures(tmp_path: Path) -> None:
    from natbench.metrics.memory import memory_used

    def fill(pid: str, n: int) -> Any:
        before = {"mem_available": 10**10, "conntrack_slab": 4096}
        after = {"mem_available": 10**10 - 5 * n, "conntrack_slab": 4096 + 256 * n}
        memory = memory_used(before, after, n, {"mem_available": 10**6})
        return trial_record(pid, "throughput", 0, 0, rate=n, kind="fill", extra={"memory": memory})

    run = load(tmp_path, [P], [*results(P.id, "throughput", 3), fill(P.id, 4000)])
    table = rows(run.seed_table())
    memory = [name for name in table if name.startswith("memory") or "slab" in name or "unknown" in name]
    assert memory[:2] == ["memory / conn. (B)", "memory used (MB)"]
    assert table["memory / conn. (B)"] == ["256.0"]
    assert not any("unknown" in name for name in table), list(table)


# --- the chosen metrics, the registered baseline, the summary's columns, the slab rows' names -------------------


def test_only_the_chosen_metrics_blocks(tmp_path: Path) -> None:
    run = load(tmp_path, [P], [*results(P.id, "cps", 3), *results(P.id, "throughput", 3)])
    assert [name for name in rows(performance_table(run.summary, run.points, ["cps"])) if "median" in name] == [
        "cps median"
    ]
    every = rows(performance_table(run.summary, run.points))
    assert "cps median" in every and "throughput median" in every


def test_without_a_registered_baseline_the_forwarding_block_is_an_ordinary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import natbench.report.performance as performance

    run = load(tmp_path, [P], [*results(P.id, "throughput", 3), *results(P.id, "forwarding", 3, 2000.0)])
    monkeypatch.setattr(performance, "baseline_metric", lambda: None)
    table = performance_table(run.summary, run.points)
    assert "throughput ratio (%)" not in rows(table) and BASELINE_WORDS not in table.caption
    assert "throughput median" in rows(table) and "fwd. throughput median" in rows(table)


def test_an_invalid_trials_row_only_with_the_trials_counts_in_the_summary(tmp_path: Path) -> None:
    from natbench.report.aggregate import summarize

    trial = trial_record(P.id, "cps", 0, 0, rate=1000, verdict="invalid")
    run = load(tmp_path, [P], [*results(P.id, "cps", 3), trial])
    assert rows(performance_table(run.summary, run.points))["cps invalid trials"] == ["1"]
    assert "cps invalid trials" not in rows(performance_table(summarize(run.results), run.points))


def test_the_slab_rows_are_named_as_the_caller_names_them_else_by_default(tmp_path: Path) -> None:
    from natbench.metrics.memory import memory_used
    from natbench.run.format.declarations import slab_label

    before = {"mem_available": 10**10, "conntrack_slab": 4096}
    after = {"mem_available": 10**10 - 5 * 4000, "conntrack_slab": 4096 + 256 * 4000}
    fill = trial_record(
        P.id, "throughput", 0, 0, rate=4000, kind="fill", extra={"memory": memory_used(before, after, 4000, {})}
    )
    run = load(tmp_path, [P], [*results(P.id, "throughput", 3), fill])
    named = rows(performance_table(run.summary, run.points, memory=run.memory, slab_labels=lambda key: f"<{key}>"))
    default = rows(performance_table(run.summary, run.points, memory=run.memory))
    mine = [name for name in named if name.startswith("<")]
    assert mine == ["<conntrack_slab>"]
    assert slab_label({}, "conntrack_slab") in default and "<conntrack_slab>" not in default


# --- the run's tables, a caption's unit ------------------------------------------------------------------------------


def teardown(reps: int = 3) -> list[Any]:
    extra = {"T_N": 5.0, "T_0": 0.5, "connections": 1000}
    return [result_record(P.id, "teardown", r, 1000 / 4.5, "conn/s", extra=extra) for r in range(reps)]


def test_a_table_of_its_own_only_for_its_metric_with_figures(tmp_path: Path) -> None:
    from natbench.report.tables import report_tables

    run = load(tmp_path, [P], [*results(P.id, "cps", 3), *teardown()])
    figures = run.figures("teardown")
    titles = [t.key for t in report_tables(run.summary, run.points, own={"teardown": figures})]
    assert titles == ["performance", "teardown"]
    # without the figures (none given, or none for the metric, or for no point): no tear-down table
    assert [t.key for t in report_tables(run.summary, run.points)] == ["performance"]
    assert [t.key for t in report_tables(run.summary, run.points, own={})] == ["performance"]
    empty = {"teardown": figures.iloc[0:0]}
    assert [t.key for t in report_tables(run.summary, run.points, own=empty)] == ["performance"]
    # figures given for a metric that has no table of its own: it stays a block of the performance table
    cps = {"teardown": figures, "cps": figures}
    assert [t.key for t in report_tables(run.summary, run.points, own=cps)] == ["performance", "teardown"]


def test_a_captions_unit_is_the_metrics_words_else_the_stored_unit_else_as_stored() -> None:
    from natbench.metrics import reported_metric
    from natbench.report.rows import display, unit_words

    assert unit_words(reported_metric("cps"), "cps", 1) == "connections per second"
    unknown = reported_metric("mystery")  # a metric this natbench does not know: no words of its own
    assert unit_words(unknown, "widgets", 1) == "widgets"
    assert unit_words(unknown, "", 1) == "as stored"
    # seconds as milliseconds only for a metric that asks for it
    assert display(reported_metric("latency"), "s", "1") == (1e3, "")
    assert display(reported_metric("latency"), "ms", "1") == (1.0, "")
    assert display(unknown, "s", "1") == (1.0, "")


def test_a_table_without_the_runs_fills_has_no_memory_rows(tmp_path: Path) -> None:
    run = load(tmp_path, [P], results(P.id, "throughput", 3))
    table = rows(performance_table(run.summary, run.points, memory=None))
    assert not any(name.startswith("memory") for name in table) and "throughput median" in table


def test_a_rows_zero_is_a_value_and_none_is_none() -> None:
    import math

    from natbench.report.seedtable import TableRows

    b = TableRows(["p", "q", "r"])
    b.add("invalid trials", [0, None, 2], lambda v: "-" if math.isnan(v) else f"{v:g}")
    assert b.cells == [["0", "-", "2"]]
    assert b.values[0][0] == 0.0 and math.isnan(b.values[0][1]) and b.values[0][2] == 2.0


def test_a_points_frame_without_the_size_rows_names_reads_as_an_old_run(tmp_path: Path) -> None:
    point = make_point(0, (1, 100), (1, 10), cores=1, dut_params={"dut": {"conntrack_max": 262144}})
    run = load(tmp_path, [point], results(point.id, "cps", 3))
    named = rows(performance_table(run.summary, run.points))
    labels = ["table_label", "table_ratio_label", "hash_label", "hash_ratio_label"]
    old = rows(performance_table(run.summary, run.points.drop(columns=labels)))
    assert named["conntrack t. s."] == old["conntrack t. s."] == ["2^18"]
