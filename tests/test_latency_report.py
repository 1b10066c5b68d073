"""Both RFC 8219 7.2 latency figures reach the tables: typical (median) and worst-case (99.9th percentile)."""

from __future__ import annotations

import pytest

from natbench.metrics.latency import fewer_tags, tagged_only
from natbench.report import aggregate as ag
from natbench.report.tables import performance_table
from natbench.results import RepetitionResult
from natbench.run import frames as fr
from natbench.testing.rundir import make_point, result_record


def test_worst_case_latency_is_a_row_of_the_performance_table() -> None:
    p = make_point(0, (1024, 1123), (80, 89))
    pid = str(p.id)
    # three repetitions: typical latency 20, 30, 25 us; worst case 100, 300, 200 us (as the latency metric stores it)
    recs = [
        result_record(pid, "latency", r, tl * 1e-6, "s", extra={"worst_case": wc * 1e-6})
        for r, (tl, wc) in enumerate([(20, 100), (30, 300), (25, 200)])
    ]
    s = ag.summarize(fr.results_frame(recs))
    row = s.loc[(pid, "latency")]
    got = (row["worst_case_median"], row["worst_case_min"], row["worst_case_max"])
    assert got == pytest.approx((200e-6, 100e-6, 300e-6))
    t = performance_table(s, fr.points_frame([p]))
    names = list(t.cells.index)
    i = names.index("latency median")
    # tables show latency in milliseconds: worst case median 200 us = 0.2 ms, min 0.1, max 0.3
    assert names[i : i + 6] == [
        "latency median",
        "latency min",
        "latency max",
        "latency worst case median",
        "latency worst case min",
        "latency worst case max",
    ]
    assert t.values.loc["latency worst case median"].iloc[0] == pytest.approx(200e-6)
    assert t.values.loc["latency median"].iloc[0] == pytest.approx(25e-6)
    assert t.cells.loc["latency worst case median"].iloc[0] != t.cells.loc["latency median"].iloc[0]
    assert "99.9th percentile" in t.caption


def test_metrics_without_a_worst_case_get_no_such_row() -> None:
    p = make_point(0, (1024, 1123), (80, 89))
    recs = [result_record(str(p.id), "pdv", r, v, "s") for r, v in enumerate([1e-5, 2e-5])]
    t = performance_table(ag.summarize(fr.results_frame(recs)), fr.points_frame([p]))
    assert not any("worst case" in n for n in t.cells.index)


def _latency(value: float | None, **extra: object) -> RepetitionResult:
    return RepetitionResult("p", "latency", 0, value, "s", extra=dict(extra))


def test_fewer_tags_marks_a_direction_one_frame_short_of_what_was_asked() -> None:
    assert fewer_tags(_latency(1e-5, tags_asked=500, samples={"forward": 500, "reverse": 499})) is True
    assert fewer_tags(_latency(1e-5, tags_asked=500, samples={"forward": 500, "reverse": 500})) is False
    assert fewer_tags(_latency(1e-5, tags_asked=500, samples={"forward": 501})) is False


def test_fewer_tags_needs_a_value_a_count_asked_for_and_counts_per_direction() -> None:
    short = {"forward": 10}
    assert fewer_tags(_latency(None, tags_asked=500, samples=short)) is False  # a failed repetition: no value
    assert fewer_tags(_latency(1e-5, tags_asked=None, samples=short)) is False  # tagged_rate: no count asked
    assert fewer_tags(_latency(1e-5, tags_asked=500, samples=[10])) is False  # no counts per direction
    assert fewer_tags(_latency(1e-5, tags_asked=500, samples={"forward": None, "reverse": "10"})) is False


def test_tagged_only_marks_a_pdv_whose_tester_timed_only_tagged_frames_in_some_direction() -> None:
    assert tagged_only(_latency(1e-5, frames={"forward": "all", "reverse": "tagged"})) is True
    assert tagged_only(_latency(1e-5, frames={"forward": "all", "reverse": "all"})) is False
    assert tagged_only(_latency(1e-5, frames="tagged")) is False  # not per direction: a record of another kind
    assert tagged_only(_latency(1e-5)) is False
