"""Which rows a performance table has: experiments, failed repetitions and errors per metric."""

from __future__ import annotations

from pathlib import Path

import natbench
from natbench.testing.rundir import make_point, result_record, write_run_dir


def _cells(tmp_path: Path, points: list[dict], records: list[dict]) -> dict[str, list[str]]:
    table = natbench.load(write_run_dir(tmp_path / "run", points, records)).seed_table()
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def test_one_failed_repetition_gets_a_failed_reps_row(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)
    recs = [result_record(p["id"], "cps", r, 1000.0 + r, "cps", error=100.0) for r in range(3)]
    recs.append(result_record(p["id"], "cps", 3, None, "cps", extra={"failed": "search error"}))
    rows = _cells(tmp_path, [p], recs)
    assert rows["cps failed reps."] == ["1"]
    assert rows["num. experiments"] == ["3"]  # the three with a value


def test_the_error_row_stays_when_one_point_has_no_search_error(tmp_path: Path) -> None:
    """A point whose repetitions all failed has no error; the other point's error is still shown."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    recs = [result_record(a["id"], "cps", r, 1000.0, "cps", error=100.0) for r in range(3)]
    recs += [result_record(b["id"], "cps", r, None, "cps", extra={"failed": "search error"}) for r in range(3)]
    rows = _cells(tmp_path, [a, b], recs)
    assert rows["cps error"] == ["100", "-"]
    assert rows["cps median"] == ["1,000", "-"]


def test_each_metric_gets_its_own_experiments_row_when_counts_differ(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)
    recs = [result_record(p["id"], "cps", r, 1000.0, "cps", error=100.0) for r in range(3)]
    recs += [result_record(p["id"], "throughput", r, 500.0, "fps", error=100.0) for r in range(2)]
    rows = _cells(tmp_path, [p], recs)
    assert "num. experiments" not in rows  # one count for both would hide that throughput ran twice
    assert rows["cps num. exp."] == ["3"] and rows["throughput num. exp."] == ["2"]


def test_the_baseline_block_counts_its_own_experiments_when_they_differ(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)

    def recs(forwarding_reps: int) -> list[dict]:
        out = [result_record(p["id"], "throughput", r, 1000.0, "fps", error=100.0) for r in range(3)]
        out += [result_record(p["id"], "cps", r, 800.0, "cps", error=100.0) for r in range(3)]
        return out + [result_record(p["id"], "forwarding", r, 2000.0, "fps") for r in range(forwarding_reps)]

    rows = _cells(tmp_path / "differ", [p], recs(2))
    assert rows["num. experiments"] == ["3"] and rows["fwd. throughput num. exp."] == ["2"]
    same = _cells(tmp_path / "same", [p], recs(3))
    assert same["num. experiments"] == ["3"] and "fwd. throughput num. exp." not in same


def test_a_fast_search_with_seeded_repetitions_is_named_in_the_caption(tmp_path: Path) -> None:
    """Seeded (fast) repetitions are not independent searches: the caption says so for that metric only."""
    p = make_point(0, (1, 100), (1, 10), cores=1)
    binary = {"algorithm": "binary"}
    recs = [result_record(p["id"], "cps", r, 1000.0, "cps", error=100.0, extra=binary) for r in range(3)]
    fast = [{"algorithm": "fast", "seeded": r > 0} for r in range(3)]
    recs += [result_record(p["id"], "throughput", r, 2000.0, "fps", error=100.0, extra=fast[r]) for r in range(3)]
    caption = natbench.load(write_run_dir(tmp_path / "run", [p], recs)).seed_table().caption
    assert "throughput: fast search; repetitions after the first started from the earlier ones' results" in caption
    assert "cps: fast search" not in caption
    # a binary-only run has no such note
    only_binary = natbench.load(write_run_dir(tmp_path / "run2", [p], recs[:3])).seed_table().caption
    assert "fast search" not in only_binary
