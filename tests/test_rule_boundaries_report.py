"""What the report says at its rules' boundaries (natbench.metrics.declare, natbench.report.summary,
natbench.report.tables; docs/report.md):

* "raise upper" only for a search whose upper bound, not the tester, limited the value;
* the seeds' binary-only error caption only when every search of a table is a binary one;
* the memory note on unknown figures when some point's figure is unknown, not only when all are;
* the summary's warnings count a metric's flagged repetitions against that metric's repetitions, not the run's;
* what every search result's columns say of a repetition (tester-bound by rate or by clumps, at the upper limit,
  no passing rate), each condition false alone; the per-point figures leave out what is not a finite number; merged
  blocks keep the first block's non-empty first value.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them, or the caption function itself."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import natbench
from natbench.metrics.declare import SEARCH_COLUMNS, error_caption, finite, merge_facts, number, stats
from natbench.metrics.memory import memory_used
from natbench.report.summary import summarize_run
from natbench.results import RepetitionResult
from natbench.search import BlockFacts
from natbench.search.binary import SEEDS_ERROR
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

P = make_point(0, (1, 400), (1, 10))  # 4,000 connections
Q = make_point(1, (1, 800), (1, 10))  # 8,000 connections


def load(tmp_path: Path, records: list[Any], points: list[Any] | None = None) -> natbench.Run:
    return natbench.load(write_run_dir(tmp_path / f"run{len(list(tmp_path.iterdir()))}", points or [P], records))


def cps(rep: int, **extra: Any) -> Any:
    return result_record(P.id, "cps", rep, 100_000.0, "cps", error=1000.0, extra={"algorithm": "binary", **extra})


# --- "raise upper": only when the search's upper bound, not the tester, limited the value ----------------------------


def test_a_search_that_ended_at_upper_is_told_to_raise_it(tmp_path: Path) -> None:
    run = load(tmp_path, [cps(r, at_upper_limit=True) for r in range(3)])
    assert run.results["at_upper_limit"].tolist() == [True] * 3
    warnings = summarize_run(run).warnings
    assert any("in 3 of 3 repetitions no rate failed" in w and "(raise upper)" in w for w in warnings)


def test_a_tester_bound_search_that_ended_at_upper_is_not_told_to_raise_it(tmp_path: Path) -> None:
    # the tester's ceiling ended it: a faster tester, not a higher upper, would measure more
    run = load(tmp_path, [cps(r, at_upper_limit=True, tester_bound=True, tester_bound_cause="rate") for r in range(3)])
    assert run.results["at_upper_limit"].tolist() == [False] * 3
    warnings = summarize_run(run).warnings
    assert not any("raise upper" in w for w in warnings)
    assert any("3 of 3 repetitions were limited by the tester's ceiling" in w for w in warnings)


# --- the error caption --------------------------------------------------------------------------------------------


def test_the_seeds_error_caption_only_when_every_search_is_a_binary_one() -> None:
    binary, legacy = BlockFacts("cps"), BlockFacts("throughput")  # legacy: stored before results named algorithms
    assert error_caption([binary, legacy], ["binary", None]) == SEEDS_ERROR
    fast = BlockFacts("throughput", 3, {"short_bound": 1})
    mixed = error_caption([binary, fast], ["binary", "fast"])
    assert mixed != SEEDS_ERROR
    assert "cps: final width (upper - lower) of the binary search" in mixed
    assert "throughput: fast search: each value passed a full trial" in mixed
    assert "1 of 3 repetitions' upper bound from a short trial" in mixed
    assert error_caption([fast], ["fast"]).startswith("Error, in plain units as the search ran")
    assert error_caption([], []) == ""


# --- the memory note on unknown figures -----------------------------------------------------------------------------


def fill(pid: str, n: int, slab_per_connection: int | None) -> Any:
    """A kept fill trial whose slab grew ``slab_per_connection`` B per connection (None: no slab, and MemAvailable
    fell within its noise: no figure)."""
    before = {"mem_available": 10**10}
    after = {"mem_available": 10**10 - 5 * n}
    if slab_per_connection is not None:
        before["conntrack_slab"], after["conntrack_slab"] = 4096, 4096 + slab_per_connection * n
    memory = memory_used(before, after, n, {"mem_available": 10**6})
    return trial_record(pid, "throughput", 0, 0, rate=n, kind="fill", extra={"memory": memory})


def throughput(pid: str) -> list[Any]:
    return [result_record(pid, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]


UNKNOWN = "cannot be told from the noise"


def test_the_memory_note_when_one_points_figure_is_unknown_and_anothers_known(tmp_path: Path) -> None:
    run = load(tmp_path, [*throughput(P.id), *throughput(Q.id), fill(P.id, 4000, 256), fill(Q.id, 8000, None)], [P, Q])
    table = run.seed_table()
    assert [str(c) for c in table.cells.loc["memory / conn. (B)"]] == ["256.0", "-"]
    assert UNKNOWN in table.caption


def test_no_memory_note_when_the_only_point_without_a_figure_stored_no_memory(tmp_path: Path) -> None:
    # Q's fills stored no memory at all (a DUT without the hook): '-' there says "not measured", not "in the noise"
    run = load(tmp_path, [*throughput(P.id), *throughput(Q.id), fill(P.id, 4000, 256)], [P, Q])
    table = run.seed_table()
    assert [str(c) for c in table.cells.loc["memory / conn. (B)"]] == ["256.0", "-"]
    assert UNKNOWN not in table.caption


# --- warnings count a metric's repetitions ------------------------------------------------------------------------


def latency(rep: int, timed: int) -> Any:
    extra = {"tags_asked": 1000, "samples": {"forward": timed, "reverse": 1000}}
    return result_record(P.id, "latency", rep, 0.001, "s", extra=extra)


def test_a_marks_warning_counts_against_its_metrics_repetitions(tmp_path: Path) -> None:
    # 1 of 3 latency repetitions timed fewer tagged frames; the run holds 3 throughput repetitions besides
    records = [*throughput(P.id), latency(0, 1000), latency(1, 990), latency(2, 1000)]
    warnings = summarize_run(load(tmp_path, records)).warnings
    assert "1 of 3 latency repetitions timed fewer tagged frames than asked: marked [f] in the tables." in warnings


def test_a_marks_warning_counts_only_its_metrics_flagged_repetitions(tmp_path: Path) -> None:
    # cps and capacity share the 'unvalidated' mark column: 3 unvalidated cps repetitions, 2 validated capacity ones
    records = [cps(r, validated=False) for r in range(3)]
    records += [
        result_record(P.id, "capacity", r, 20_000.0, "conn", error=1000.0, extra={"validated": True, "probes": []})
        for r in range(2)
    ]
    warnings = summarize_run(load(tmp_path, records)).warnings
    assert any(w.startswith("3 cps repetitions have a rate no validation") for w in warnings)
    assert not any("capacity repetitions were neither validated" in w for w in warnings)


def test_a_rows_warning_counts_against_its_metrics_repetitions(tmp_path: Path) -> None:
    records = [cps(r, at_upper_limit=True) for r in range(3)] + throughput(P.id)[:2]
    warnings = summarize_run(load(tmp_path, records)).warnings
    assert any("in 3 of 3 repetitions no rate failed" in w for w in warnings)


# --- what every search result's columns say of a repetition ----------------------------------------------------------


def flags(value: float | None = 100_000.0, **extra: Any) -> dict[str, bool]:
    """The search columns (less the algorithm) of one cps result storing ``value`` and ``extra``."""
    r = RepetitionResult("p", "cps", 0, value, "cps", 1000.0, dict(extra))
    return {c.name: bool(c.value(r)) for c in SEARCH_COLUMNS if c.name != "algorithm"}


def true_of(value: float | None = 100_000.0, **extra: Any) -> list[str]:
    return [name for name, flagged in flags(value, **extra).items() if flagged]


def test_tester_bound_by_rate_or_by_clumps_only_when_tester_bound() -> None:
    assert true_of() == []
    assert true_of(tester_bound=True, tester_bound_cause="rate") == ["tester_bound", "bound_by_rate"]
    assert true_of(tester_bound=True, tester_bound_cause="clumps") == ["tester_bound", "bound_by_clumps"]
    # stored before the cause was: by rate
    assert true_of(tester_bound=True) == ["tester_bound", "bound_by_rate"]
    # a cause without the search ending at the tester's ceiling bounds nothing
    assert true_of(tester_bound=False, tester_bound_cause="clumps") == []
    assert true_of(tester_bound=False, tester_bound_cause="rate") == []


def test_at_the_upper_limit_only_with_a_value_the_flag_and_no_tester_bound() -> None:
    assert true_of(at_upper_limit=True) == ["at_upper_limit"]
    assert true_of(at_upper_limit=False) == []
    assert "at_upper_limit" not in true_of(None, at_upper_limit=True)
    assert "at_upper_limit" not in true_of(at_upper_limit=True, tester_bound=True)


def test_no_passing_rate_only_without_a_value_and_with_the_flag() -> None:
    assert true_of(None, no_passing_rate=True) == ["no_pass"]
    assert true_of(None, failed="the DUT did not answer") == []  # a failed repetition, not one without a pass
    assert true_of(100_000.0, no_passing_rate=True) == []


def test_per_point_figures_leave_out_what_is_not_a_finite_number() -> None:
    assert finite([None, float("nan"), float("inf"), 0, 2.5]) == [0.0, 2.5]
    assert stats([1.0, None, float("nan"), 3.0]) == (2.0, 1.0, 3.0)
    assert number(0) == 0.0 and number(7) == 7.0 and math.isnan(number(None))


def test_merged_blocks_keep_the_first_non_empty_first_value() -> None:
    blocks = [
        BlockFacts("a", 1, {"seeded": 1}, {"search_goal": ""}),
        BlockFacts("b", 2, {"seeded": 2}, {"search_goal": "preset csit"}),
        BlockFacts("c", 3, {}, {"search_goal": "preset other"}),
    ]
    merged = merge_facts(blocks)
    assert merged == BlockFacts("a, b, c", 6, {"seeded": 3}, {"search_goal": "preset csit"})
