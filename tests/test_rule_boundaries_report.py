"""What the report says at its rules' boundaries (natbench.metrics.declare, natbench.report.summary,
natbench.report.tables; docs/report.md):

* "raise upper" only for a search whose upper bound, not the tester, limited the value;
* the seeds' binary-only error caption only when every search of a table is a binary one;
* the memory note on unknown figures when some point's figure is unknown, not only when all are;
* the summary's warnings count a metric's flagged repetitions against that metric's repetitions, not the run's.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them, or the caption function itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import natbench
from natbench.metrics.declare import error_caption
from natbench.metrics.memory import memory_used
from natbench.report.summary import summarize_run
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
