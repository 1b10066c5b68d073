"""Aggregation functions (pure: DataFrame in, DataFrame out) and reading run directories."""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import natbench
from natbench.errors import StoreError
from natbench.metrics import reported_metric
from natbench.metrics.cps import CPS
from natbench.metrics.registry import METRICS
from natbench.metrics.teardown import TEARDOWN
from natbench.plugins import DutDeclarations, TableParam
from natbench.plugins.columns import Column
from natbench.report import aggregate as ag
from natbench.report.formatting import fmt_size, fmt_value
from natbench.report.load import DamagedRunWarning
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run import frames as fr
from natbench.run.format import PointRecord
from natbench.testing.rundir import make_point, result_record, spread, trial_record, write_run_dir
from natbench.traffic import PortRange


def _points(*specs: dict) -> pd.DataFrame:
    return fr.points_frame([make_point(i, **s) for i, s in enumerate(specs)])


def test_summary_counts_failed_repetitions_and_worst_error() -> None:
    recs = [result_record("p", "cps", r, v, "cps", error=e) for r, (v, e) in enumerate([(10, 4), (30, 6), (20, 2)])]
    recs.append(result_record("p", "cps", 3, None, "cps"))
    recs.append(trial_record("p", "cps", 0, 0))  # a trial: ignored
    s = ag.summarize(fr.results_frame(recs)).loc[("p", "cps")]
    assert (s["median"], s["min"], s["max"]) == (20, 10, 30)
    assert (s["experiments"], s["failed"], s["error"]) == (3, 1, 6)


def test_directions_forms() -> None:
    recs = [
        result_record("p", "throughput", 0, 1000.0, "fps", extra={"directions": "forward"}),
        result_record("q", "throughput", 0, 1000.0, "fps", extra={"directions": "bidirectional"}),
        result_record("r", "throughput", 0, 1000.0, "fps", extra={"all_frames_per_second": 2000.0}),
    ]
    assert fr.results_frame(recs)["reported"].tolist() == [1000.0, 2000.0, 2000.0]


def test_throughput_reported_as_all_frames() -> None:
    recs = [
        result_record("p", "throughput", 0, 1000.0, "fps", error=10, extra={"directions": 2}),
        result_record("p", "frame_loss", 0, 0.5, "ratio", extra={"directions": 2}),
    ]
    df = fr.results_frame(recs)
    assert df["reported"].tolist() == [2000.0, 0.5]  # only frame rates are doubled


def test_the_error_is_the_search_width_as_stored_not_doubled() -> None:
    """The seeds' error row is the binary search's stop error (seed 000 Figure 2: 100 for cps and for
    throughput alike); the engine stores the per-direction width, and the report prints it as stored."""
    recs = [
        result_record("p", "throughput", r, 1000.0 + r, "fps", error=e, extra={"directions": 2})
        for r, e in enumerate((100.0, 60.0, 80.0))
    ]
    recs.append(result_record("p", "cps", 0, 500.0, "cps", error=100.0))
    s = ag.summarize(fr.results_frame(recs))
    assert s.loc[("p", "throughput"), "error"] == 100.0  # the largest width, not 2 x 100
    assert s.loc[("p", "cps"), "error"] == 100.0


def test_scale_up_uses_smallest_core_count_as_reference() -> None:
    pts = _points(*({"src": (1, 10), "dst": (1, 10), "cores": c} for c in (2, 4, 8)))
    ids = list(pts.index)
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(ids, (100.0, 180.0, 300.0), strict=True)]
    su = ag.scale_up_cores(ag.summarize(fr.results_frame(recs)), pts).set_index("point_id")["scale_up"]
    assert su[ids[0]] == 1.0
    assert su[ids[1]] == pytest.approx(180 * 2 / (4 * 100))
    assert su[ids[2]] == pytest.approx(300 * 2 / (8 * 100))


def test_the_scale_up_reference_is_the_fewest_cores_not_the_first_point_listed() -> None:
    # campaign order 4, 1, 2 cores with medians 300, 100, 180: S(n) = P(n) / (n * P(1)) with P(1) = 100
    pts = _points(*({"src": (1, 10), "dst": (1, 10), "cores": c} for c in (4, 1, 2)))
    ids = list(pts.index)
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(ids, (300.0, 100.0, 180.0), strict=True)]
    sc = ag.scale_up_cores(ag.summarize(fr.results_frame(recs)), pts).set_index("point_id")
    assert sc["scale_up"].to_dict() == {ids[0]: 300 / (4 * 100), ids[1]: 1.0, ids[2]: 180 / (2 * 100)}
    assert set(sc["reference"]) == {ids[1]}


def test_scale_up_series_are_separate() -> None:
    """Two implementations in one run (ids differ by DUT parameters): each scales against its own 1-core point."""
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "a", "dut_params": {"d": {"r": "a"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 2, "name": "a", "dut_params": {"d": {"r": "a"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "b", "dut_params": {"d": {"r": "b"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 2, "name": "b", "dut_params": {"d": {"r": "b"}}},
    )
    ids = list(pts.index)
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(ids, (100.0, 150.0, 10.0, 20.0), strict=True)]
    su = ag.scale_up_cores(ag.summarize(fr.results_frame(recs)), pts).set_index("point_id")["scale_up"]
    assert su[ids[1]] == pytest.approx(0.75) and su[ids[3]] == pytest.approx(1.0)


def test_each_metric_scales_against_its_own_reference() -> None:
    """cps and forwarding measured at the same points: each metric's scale is against its own medians."""
    pts = _points(*({"src": (1, s), "dst": (1, 10), "cores": c} for s, c in ((10, 1), (10, 2), (20, 2))))
    one, two, more = pts.index
    recs = []
    for pid, cps, fwd in ((one, 100.0, 1000.0), (two, 150.0, 3000.0), (more, 120.0, 1500.0)):
        recs += [result_record(pid, "cps", 0, cps, "cps"), result_record(pid, "forwarding", 0, fwd, "fps")]
    s = ag.summarize(fr.results_frame(recs))
    su = ag.scale_up_cores(s, pts).set_index(["point_id", "metric"])
    # 150 / (2 x 100) and 3000 / (2 x 1000)
    assert su.loc[(two, "cps"), "scale_up"] == 0.75 and su.loc[(two, "forwarding"), "scale_up"] == 1.5
    sc = ag.scale_connections(s, pts).set_index(["point_id", "metric"])
    # 2 cores: 100 -> 200 connections; cps 120 / 150, forwarding 1500 / 3000
    assert sc.loc[(more, "cps"), "scale"] == 0.8 and sc.loc[(more, "forwarding"), "scale"] == 0.5
    assert sc.loc[(more, "cps"), "ratio_prev"] == 0.8 and sc.loc[(more, "forwarding"), "ratio_prev"] == 0.5


def test_scale_connections_and_previous_median() -> None:
    pts = _points(*({"src": (1, s), "dst": (1, 10), "cores": 4} for s in (40, 10, 20)))  # out of order
    ids = list(pts.index)
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(ids, (50.0, 100.0, 80.0), strict=True)]
    sc = ag.scale_connections(ag.summarize(fr.results_frame(recs)), pts).set_index("point_id")
    assert sc.loc[ids[1], "scale"] == 1.0 and math.isnan(sc.loc[ids[1], "ratio_prev"])
    assert sc.loc[ids[2], "ratio_prev"] == pytest.approx(0.8)
    assert sc.loc[ids[0], "ratio_prev"] == pytest.approx(50 / 80)
    assert sc.loc[ids[0], "scale"] == pytest.approx(0.5)


def test_baseline_at_a_separate_forwarding_point() -> None:
    # a separate forwarding DUT: same cores and port ranges, other DUT parameters (so another id)
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "nat", "dut_params": {"d": {"r": "nat"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "fwd", "dut_params": {"d": {"r": "fwd"}}},
    )
    nat, fwd = pts.index
    recs = [result_record(nat, "throughput", 0, 40.0, "fps"), result_record(fwd, "forwarding", 0, 100.0, "fps")]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts)
    assert r.to_dict("records") == [{"point_id": nat, "metric": "throughput", "baseline_point": fwd, "ratio": 0.4}]


def test_the_baseline_at_the_same_point_wins_over_another_point_with_the_same_ports() -> None:
    """Two implementations at the same cores and port ranges, each measured with its own forwarding
    baseline: each throughput is divided by its own point's baseline, not by the first one found."""
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "a", "dut_params": {"d": {"r": "a"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "b", "dut_params": {"d": {"r": "b"}}},
    )
    a, b = pts.index
    recs = [
        result_record(a, "throughput", 0, 40.0, "fps"),
        result_record(a, "forwarding", 0, 100.0, "fps"),
        result_record(b, "throughput", 0, 30.0, "fps"),
        result_record(b, "forwarding", 0, 50.0, "fps"),
    ]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts).set_index("point_id")
    assert r.loc[a, "baseline_point"] == a and r.loc[a, "ratio"] == 0.4  # 40 / 100
    assert r.loc[b, "baseline_point"] == b and r.loc[b, "ratio"] == 0.6  # 30 / 50, not 30 / 100


def _nat_and_baseline(nat_fps: float, nat_directions: int, fwd_fps: float, fwd_directions: int) -> float:
    """Ratio of a NAT throughput to a separate forwarding baseline, each stored as the engine stores a
    throughput result: the per-direction rate, ``directions`` and ``all_frames_per_second``."""
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "nat", "dut_params": {"d": {"r": "nat"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "fwd", "dut_params": {"d": {"r": "fwd"}}},
    )
    nat, fwd = pts.index

    def rec(pid: str, metric: str, per_direction: float, directions: int) -> RepetitionResult:
        extra = {"directions": directions, "all_frames_per_second": per_direction * directions}
        return result_record(pid, metric, 0, per_direction, "fps", error=100.0, extra=extra)

    recs = [rec(nat, "throughput", nat_fps, nat_directions), rec(fwd, "forwarding", fwd_fps, fwd_directions)]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts)
    assert r["baseline_point"].tolist() == [fwd]
    return float(r["ratio"].iloc[0])


def test_equal_all_frames_rates_give_a_throughput_ratio_of_exactly_100_percent(tmp_path: Path) -> None:
    # both bidirectional, 50,000 fps per direction: 100,000 all frames per second on both sides
    assert _nat_and_baseline(50_000.0, 2, 50_000.0, 2) == 1.0
    # the same working point measured with and without NAT state, through the table
    p = make_point(0, (1, 10), (1, 10), cores=1)
    extra = {"directions": 2, "all_frames_per_second": 100_000.0}
    recs = [
        result_record(p.id, metric, 0, 50_000.0, "fps", error=100.0, extra=extra)
        for metric in ("throughput", "forwarding")
    ]
    run = natbench.load(write_run_dir(tmp_path / "r", [p], recs))
    assert run.seed_table().cells.loc["throughput ratio (%)"].tolist() == ["100.0"]


def test_a_one_way_side_is_compared_in_all_frames_per_second() -> None:
    """Both sides in the unit the table prints, all frames per second: a bidirectional 50,000 fps per
    direction forwards 100,000 frames per second, as many as a one-way 100,000 fps."""
    assert _nat_and_baseline(50_000.0, 2, 100_000.0, 1) == 1.0  # per direction it would be 0.5
    assert _nat_and_baseline(100_000.0, 1, 50_000.0, 2) == 1.0  # per direction it would be 2.0
    # 2 x 40,000 = 80,000 against 100,000 one-way: 80 %
    assert _nat_and_baseline(40_000.0, 2, 100_000.0, 1) == pytest.approx(0.8)


def test_the_median_of_an_even_count_is_the_mean_of_the_two_middle_values() -> None:
    # 10 repetitions, stored out of order; sorted: 100 150 200 300 [500 800] 900 950 990 1000, so the median
    # is (500 + 800) / 2 = 650 (a lower median would say 500, an upper one 800)
    values = [900.0, 100.0, 500.0, 990.0, 150.0, 800.0, 1000.0, 200.0, 300.0, 950.0]
    recs = [result_record("p", "cps", r, v, "cps", error=10.0) for r, v in enumerate(values)]
    # the same values as per-direction rates of a bidirectional throughput: all frames are twice them
    extra = {"directions": 2}
    recs += [result_record("p", "throughput", r, v, "fps", error=10.0, extra=extra) for r, v in enumerate(values)]
    s = ag.summarize(fr.results_frame(recs))
    assert s.loc[("p", "cps"), ["median", "min", "max"]].tolist() == [650.0, 100.0, 1000.0]
    assert s.loc[("p", "throughput"), ["median", "min", "max"]].tolist() == [1300.0, 200.0, 2000.0]
    assert s.loc[("p", "cps"), "experiments"] == 10


def test_teardown_rate_is_n_over_the_difference_of_even_count_medians() -> None:
    pts = _points({"src": (1, 100), "dst": (1, 10)})
    pid = pts.index[0]
    # T_N sorted 2.0 [3.0 5.0] 6.0 -> median 4.0; T_0 sorted 0.25 [0.5 1.0] 1.25 -> median 0.75;
    # rate = 1,000 / (4.0 - 0.75) = 307.69 (upper medians: 1,000 / (5.0 - 1.0) = 250; lower medians:
    # 1,000 / (3.0 - 0.5) = 400; the median of the per-repetition rates, below: 391.0)
    pairs = [(6.0, 0.5), (2.0, 1.0), (5.0, 0.25), (3.0, 1.25)]
    recs = [
        result_record(pid, "teardown", r, 1000 / (tn - t0), "conn/s", extra={"T_N": tn, "T_0": t0, "connections": 1000})
        for r, (tn, t0) in enumerate(pairs)
    ]
    td = ag.own_summary(fr.results_frame(recs), TEARDOWN, pts).loc[pid]
    assert (td["filled_median"], td["filled_min"], td["filled_max"]) == (4.0, 2.0, 6.0)
    assert (td["empty_median"], td["empty_min"], td["empty_max"]) == (0.75, 0.25, 1.25)
    assert td["deletion_time"] == 3.25
    assert td["rate"] == pytest.approx(1000 / 3.25)
    # rates per repetition: 1000/5.5, 1000/1.0, 1000/4.75, 1000/1.75 -> sorted 181.8 [210.5 571.4] 1000
    assert td["rep_rate_median"] == pytest.approx((1000 / 4.75 + 1000 / 1.75) / 2)
    assert (td["rep_rate_min"], td["rep_rate_max"]) == (pytest.approx(1000 / 5.5), 1000.0)
    assert td["experiments"] == 4


def test_spread_has_distinct_middle_values_for_an_even_count() -> None:
    # median 10, min 7, max 14: d = min(10 - 7, 14 - 10) / 2 = 1.5, middle values 8.5 and 11.5
    v = spread(10.0, 7.0, 14.0, 6)
    assert sorted(v) == [7.0, 8.5, 8.5, 11.5, 11.5, 14.0]
    assert spread(10.0, 7.0, 14.0, 5) == [7.0, 10.0, 10.0, 10.0, 14.0]
    # a median equal to the min forces both middle values to it
    assert sorted(spread(0.55, 0.55, 0.57, 4)) == [0.55, 0.55, 0.55, 0.57]


def test_teardown_falls_back_to_point_connections() -> None:
    pts = _points({"src": (1, 100), "dst": (1, 10)})
    pid = pts.index[0]
    recs = [
        result_record(pid, "teardown", r, 1.0, "cps", extra={"filled_delete_s": tn, "empty_delete_s": 0.5})
        for r, tn in enumerate((2.5, 3.0, 2.0))
    ]
    td = ag.own_summary(fr.results_frame(recs), TEARDOWN, pts).loc[pid]
    assert td["connections"] == 1000 and td["deletion_time"] == 2.0 and td["rate"] == 500.0


def test_a_failed_teardown_repetition_is_not_an_experiment() -> None:
    """A repetition that failed (no value, no delete times) is not counted in num. experiments, and the
    medians are those of the three that ran: T_N 2.0 / 2.5 / 3.0 -> 2.5, T_0 0.5 -> rate 1,000 / 2.0."""
    pts = _points({"src": (1, 100), "dst": (1, 10)})
    pid = pts.index[0]
    recs = [
        result_record(
            pid, "teardown", r, 1000 / (tn - 0.5), "conn/s", extra={"T_N": tn, "T_0": 0.5, "connections": 1000}
        )
        for r, tn in enumerate((2.5, 3.0, 2.0))
    ]
    recs.append(result_record(pid, "teardown", 3, None, "conn/s", extra={"failed": "the DUT kept 12 connections"}))
    td = ag.own_summary(fr.results_frame(recs), TEARDOWN, pts).loc[pid]
    assert td["experiments"] == 3
    assert (td["filled_median"], td["deletion_time"], td["rate"]) == (2.5, 2.0, 500.0)


def test_a_teardown_point_missing_from_the_points_has_an_unknown_n() -> None:
    """N comes from the results, else from the point's connections; a point the points do not list (or no points)
    has no N and so no rate, but its deletion times are still summed up."""
    pts = _points({"src": (1, 100), "dst": (1, 10)})  # 1,000 connections, another point id
    recs = [
        result_record("elsewhere", "teardown", r, 1.0, "conn/s", extra={"filled_delete_s": tn, "empty_delete_s": 0.5})
        for r, tn in enumerate((2.5, 3.0))
    ]
    for points in (pts, pts.iloc[:0], None):
        td = ag.own_summary(fr.results_frame(recs), TEARDOWN, points).loc["elsewhere"]
        assert td["deletion_time"] == 2.25 and td["experiments"] == 2
        assert math.isnan(td["connections"]) and math.isnan(td["rate"])


def test_only_a_metric_with_a_table_of_its_own_has_an_own_summary() -> None:
    cps = reported_metric("cps")
    with pytest.raises(ValueError, match="metric 'cps' has no table of its own"):
        ag.own_summary(fr.results_frame([result_record("p", "cps", 0, 5.0, "cps")]), cps)


def test_no_results_at_all_give_empty_summaries_with_their_columns() -> None:
    """An empty results frame, even one without any column (no records read), is summed up as no rows."""
    for empty in (fr.results_frame([]), pd.DataFrame()):
        td = ag.own_summary(empty, TEARDOWN)
        assert td.empty and td.index.name == "point_id" and list(td.columns) == TEARDOWN_COLUMNS
        s = ag.summarize(empty)
        assert s.empty and list(s.columns) == ag.summary_columns()


def test_trial_summary() -> None:
    recs = [
        trial_record("p", "cps", 0, i, rate=1e5, verdict=v, started_at=10.0 * i, duration=2.0)
        for i, v in enumerate(["pass", "fail", "invalid", "pass"])
    ]
    s = ag.trial_summary(fr.trials_frame(recs)).loc[("p", "cps")]
    assert s.tolist() == [4, 2, 1, 1, 8.0]


def test_formatting_like_the_seeds() -> None:
    assert [fmt_value(v) for v in (223.5, 1341.0, 2.406, 11561.0, 0.0, 99.996)] == [
        "223.5",
        "1,341",
        "2.406",
        "11,561",
        "0",
        "100.0",
    ]
    assert fmt_size(2**23) == "2^23" and fmt_size(1000) == "1,000" and fmt_size(float("nan")) == "-"


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    p = make_point(0, (1, 10), (1, 10))
    # killed while writing: the run's status stayed "running" (a torn line in a complete run is damage)
    d = write_run_dir(tmp_path / "r", [p], [result_record(p.id, "cps", 0, 5.0, "cps")], status="running")
    with open(d / "trials.jsonl", "a") as f:
        f.write('{"type": "result", "point_id": "')
    run = natbench.load(d)
    assert len(run.results) == 1 and "torn last line" in run.warnings[0] and run.damage == []


def test_corrupt_middle_line_names_file_and_line(tmp_path: Path) -> None:
    p = make_point(0, (1, 10), (1, 10))
    # lines from before sequence numbers: the garbage line is the only damage (a numbered file would also miss seq 2)
    recs = [result_record(p.id, "cps", r, 5.0, "cps") for r in range(3)]
    d = write_run_dir(tmp_path / "r", [p], recs, legacy=True)
    lines = (d / "trials.jsonl").read_text().splitlines()
    lines[1] = "garbage"
    (d / "trials.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(DamagedRunWarning, match=r"1 problem\(s\)"):
        run = natbench.load(d)  # damage is named (and `natbench report` refuses it); the intact records still load
    assert run.damage == [f"{d / 'trials.jsonl'}:2: not a natbench record: Expecting value: line 1 column 1 (char 0)"]
    assert list(run.results["repetition"]) == [0, 2]


def test_missing_trials_file_is_an_empty_run(tmp_path: Path) -> None:
    d = write_run_dir(tmp_path / "r", [make_point(0, (1, 10), (1, 10))], [], status="running", legacy=True)
    (d / "trials.jsonl").unlink()
    with pytest.warns(DamagedRunWarning, match=r"1 problem\(s\)"):
        run = natbench.load(d)  # no record counts in run.json (old layout): `natbench run` always made the file
    assert run.results.empty and run.tables() == [] and "so it was deleted" in run.damage[0]


def test_bad_points_json(tmp_path: Path) -> None:
    d = write_run_dir(tmp_path / "r", [], [])
    (d / "points.json").write_text('{"not": "a list"}')
    with pytest.raises(StoreError, match=r"points\.json"):
        natbench.load(d)


def test_import_natbench_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, natbench; assert 'pandas' not in sys.modules; natbench.load; assert 'pandas' in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_tester_bound_repetitions_are_counted_and_shown_as_lower_bounds(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    recs = [
        result_record(p.id, "cps", r, 190_000.0, "cps", error=6_000.0, extra={"tester_bound": r < 2}) for r in range(3)
    ]
    s = ag.summarize(fr.results_frame(recs)).loc[(p.id, "cps")]
    assert s["tester_bound"] == 2 and s["experiments"] == 3
    run = natbench.load(write_run_dir(tmp_path / "r", [p], recs))
    legend = [t.get_text() for t in run.plot("cps").axes[0].get_legend().get_texts()]
    assert "tester-bound: a lower bound of the DUT" in legend
    table = run.tables()[0]
    text = table.to_text()
    row = next(line for line in text.splitlines() if "tester-bound reps." in line)
    assert row.split()[-1] == "2"
    assert "lower bound of the DUT" in table.caption


def _mon(idle: dict[str, list[float]], cpus: list[int] | None = None) -> dict:
    n = len(next(iter(idle.values())))
    col: dict = {"interval": 0.5, "t": [0.5 * (i + 1) for i in range(n)], "idle": idle}
    if cpus is not None:
        col["data_path_cpus"] = [cpus] * n
    return col


def test_cpu_busy_of_a_trial_counts_the_data_path_cpus_only() -> None:
    idle = {"cpu0": [70.0, 60.0, 68.0, 100.0], "cpu1": [20.0, 15.0, 18.0, 50.0]}  # cpu1: the lab's tester
    assert ag.trial_cpu_busy({"monitor": {"dut": _mon(idle, [0])}}) == pytest.approx(100 - 69.0)
    # samples that do not name their data-path CPUs: every sampled core (a whole DUT machine)
    # per sample the mean over both cores (busy 55, 62.5, 57, 25), then the median over the samples
    assert ag.trial_cpu_busy({"monitor": {"dut": _mon(idle)}}) == pytest.approx(56.0)
    # a DUT group: the busiest member (the bottleneck candidate)
    both = {"ce": _mon({"cpu0": [90.0, 90.0, 90.0]}), "br": _mon({"cpu0": [10.0, 30.0, 20.0]})}
    assert ag.trial_cpu_busy({"monitor": both}) == pytest.approx(80.0)
    assert math.isnan(ag.trial_cpu_busy({}))
    # a trial shorter than a few monitor intervals (a cps step) gives no figure: its samples are mostly idle time
    assert math.isnan(ag.trial_cpu_busy({"monitor": {"dut": _mon({"cpu0": [100.0, 0.0]})}}))


def test_dut_cpu_busy_is_taken_at_the_reported_rate(tmp_path: Path) -> None:
    """The last passing trial at the repetition's value decides, not a failed one or one at another rate."""
    p = make_point(0, (1, 100), (1, 10))
    pid = p.id
    busy_at = {80_000.0: 40.0, 90_000.0: 10.0, 85_000.0: 50.0}
    trials = [
        trial_record(pid, "throughput", 0, 0, rate=80_000.0, started_at=1.0, kind="phase2"),
        trial_record(pid, "throughput", 0, 1, rate=90_000.0, verdict="fail", started_at=2.0, kind="phase2"),
        trial_record(pid, "throughput", 0, 2, rate=85_000.0, started_at=3.0, kind="phase2"),
    ]
    trials = [
        dataclasses.replace(t, extra={"monitor": {"dut": _mon({"cpu0": [100.0 - busy_at[t.intended_rate]] * 3})}})
        for t in trials
    ]
    result = result_record(pid, "throughput", 0, 85_000.0, "fps", error=5_000.0, extra={"directions": 2})
    unmonitored = result_record(pid, "throughput", 1, 85_000.0, "fps", error=5_000.0, extra={"directions": 2})
    r = ag.with_dut_cpu_busy(fr.results_frame([result, unmonitored]), fr.trials_frame(trials))
    assert r["dut_cpu_busy"].iloc[0] == pytest.approx(50.0) and math.isnan(r["dut_cpu_busy"].iloc[1])
    assert ag.summarize(r).loc[(pid, "throughput"), "dut_cpu_busy"] == pytest.approx(50.0)
    run = natbench.load(write_run_dir(tmp_path / "r", [p], [*trials, result]))
    text = run.tables()[0].to_text()
    row = next(line for line in text.splitlines() if "DUT CPU busy (%)" in line)
    assert row.split()[-1] == "50.0"
    # without monitor samples there is no such row
    plain = natbench.load(write_run_dir(tmp_path / "q", [p], [unmonitored]))
    assert "DUT CPU busy" not in plain.tables()[0].to_text()


def test_the_busiest_dut_of_a_group_decides_whichever_is_listed_first() -> None:
    # busy per sample = 100 - idle: "br" 90 / 70 / 80 -> median 80; "ce" 10 / 10 / 10 -> median 10
    busiest_first = {"br": _mon({"cpu0": [10.0, 30.0, 20.0]}), "ce": _mon({"cpu0": [90.0, 90.0, 90.0]})}
    assert ag.trial_cpu_busy({"monitor": busiest_first}) == pytest.approx(80.0)  # not the last one listed (10)


def test_cpu_busy_skips_cores_without_a_sample() -> None:
    """A data-path core the monitor did not sample, a series shorter than the sample times and a missing
    (None) idle value are left out of a sample's mean; the other cores still count."""
    # data path cpu0 and cpu2, only cpu0 sampled: busy 100 - 40, 100 - 30, 100 - 20 -> median 70
    unsampled = {"t": [0.5, 1.0, 1.5], "idle": {"cpu0": [40.0, 30.0, 20.0]}, "data_path_cpus": [[0, 2]] * 3}
    assert ag.trial_cpu_busy({"monitor": {"dut": unsampled}}) == pytest.approx(70.0)
    # four sample times, no data path named (all sampled cores); cpu1 misses sample 1 (None) and sample 3:
    # sample 0: 100 - (40 + 60) / 2 = 50; 1: 100 - 30 = 70; 2: 100 - (20 + 60) / 2 = 60; 3: 100 - 10 = 90
    # sorted 50 [60 70] 90 -> median 65
    ragged = {"t": [0.5, 1.0, 1.5, 2.0], "idle": {"cpu0": [40.0, 30.0, 20.0, 10.0], "cpu1": [60.0, None, 60.0]}}
    assert ag.trial_cpu_busy({"monitor": {"dut": ragged}}) == pytest.approx(65.0)


def test_each_samples_cpu_busy_is_over_the_cores_that_sample_names() -> None:
    """A sample's busy figure is the mean over its own data-path cores, not over every core any sample named;
    a sample that names none counts all sampled cores, and only itself."""
    idle = {"cpu0": [20.0, 20.0, 20.0], "cpu1": [80.0, 80.0, 80.0]}  # cpu0 80 % busy, cpu1 20 % busy
    moved = {"t": [0.5, 1.0, 1.5], "idle": idle, "data_path_cpus": [[0], [0], [1]]}
    # per sample: 80, 80, 20 -> median 80 (over both cores every time: 50)
    assert ag.trial_cpu_busy({"monitor": {"dut": moved}}) == pytest.approx(80.0)
    unnamed = {"t": [0.5, 1.0, 1.5], "idle": idle, "data_path_cpus": [[0], [], [0]]}
    # per sample: 80, (80 + 20) / 2 = 50, 80 -> median 80
    assert ag.trial_cpu_busy({"monitor": {"dut": unnamed}}) == pytest.approx(80.0)


def test_data_path_cores_of_one_sample_and_of_all_samples() -> None:
    idle = {"cpu0": [1.0, 1.0], "cpu1": [1.0, 1.0], "cpu2": [1.0, 1.0]}
    col = {"t": [0.5, 1.0], "idle": idle, "data_path_cpus": [[1], [0]]}
    assert ag.data_path_cores(col, 0) == ["cpu1"] and ag.data_path_cores(col, 1) == ["cpu0"]
    assert ag.data_path_cores(col) == ["cpu0", "cpu1"]  # the union over the samples, in the samples' core order
    # a core named twice is listed once
    assert ag.data_path_cores({**col, "data_path_cpus": [[1], [1, 2]]}) == ["cpu1", "cpu2"]
    # a sample that names none: every sampled core, for that sample and for the union
    gap = {**col, "data_path_cpus": [[1], []]}
    assert ag.data_path_cores(gap, 0) == ["cpu1"] and ag.data_path_cores(gap, 1) == ["cpu0", "cpu1", "cpu2"]
    assert ag.data_path_cores(gap) == ["cpu0", "cpu1", "cpu2"]


def test_a_named_data_path_core_without_samples_is_still_a_data_path_core() -> None:
    """Named cores the monitor did not sample come after the sampled ones, each once."""
    col = {"t": [0.5], "idle": {"cpu0": [1.0], "cpu1": [1.0]}, "data_path_cpus": [[3, 1, 2]]}
    assert ag.data_path_cores(col, 0) == ["cpu1", "cpu3", "cpu2"]
    assert ag.data_path_cores(col) == ["cpu1", "cpu3", "cpu2"]


def test_only_samples_with_a_data_path_value_count_towards_the_minimum() -> None:
    """MIN_CPU_SAMPLES counts the samples that gave a data-path idle value, not the sample times."""
    assert ag.MIN_CPU_SAMPLES == 3
    gappy = {"t": [0.5, 1.0, 1.5, 2.0], "idle": {"cpu0": [40.0, None, 20.0, 30.0], "cpu1": [0.0, 0.0, 0.0, 0.0]}}
    three = {**gappy, "data_path_cpus": [[0]] * 4}  # busy 60, -, 80, 70 -> median 70
    assert ag.trial_cpu_busy({"monitor": {"dut": three}}) == pytest.approx(70.0)
    two = {**three, "idle": {**gappy["idle"], "cpu0": [40.0, None, None, 30.0]}}  # busy 60 and 70 only
    assert math.isnan(ag.trial_cpu_busy({"monitor": {"dut": two}}))


def test_samples_beyond_the_stored_data_path_cpus_name_none() -> None:
    col = {"t": [0.5, 1.0], "idle": {"cpu0": [1.0, 1.0], "cpu1": [1.0, 1.0]}, "data_path_cpus": [[1]]}
    assert ag.data_path_cores(col, 0) == ["cpu1"] and ag.data_path_cores(col, 1) == ["cpu0", "cpu1"]


def test_monitor_samples_without_sample_times_name_every_sampled_core() -> None:
    assert ag.data_path_cores({"t": [], "idle": {"cpu0": [], "cpu1": []}}) == ["cpu0", "cpu1"]
    assert ag.data_path_cores({}) == []
    assert math.isnan(ag.trial_cpu_busy({"monitor": {"dut": {"t": [], "idle": {"cpu0": []}}}}))


TEARDOWN_COLUMNS = [
    "experiments",
    "connections",
    "filled_median",
    "filled_min",
    "filled_max",
    "empty_median",
    "empty_min",
    "empty_max",
    "deletion_time",
    "rate",
    "rep_rate_median",
    "rep_rate_min",
    "rep_rate_max",
]


def _teardown(pid: str, rep: int, t_n: float, t_0: float, n: int, value: float | None) -> RepetitionResult:
    return result_record(pid, "teardown", rep, value, "conn/s", extra={"T_N": t_n, "T_0": t_0, "connections": n})


def test_teardown_rows_follow_the_run_order_without_points() -> None:
    """Without the points, N comes from the results; the rows keep the order the points ran in
    ("tb" before "ta"), not the alphabetical one."""
    recs = [
        # tb: T_N 3.0 / 5.0 -> median 4.0, T_0 1.0 -> 3.0 s for 400 connections; per repetition 400/2, 400/4
        _teardown("tb", 0, 3.0, 1.0, 400, 200.0),
        _teardown("tb", 1, 5.0, 1.0, 400, 100.0),
        # ta: 300 connections in 2.0 - 0.5 = 1.5 s -> 200 /s
        _teardown("ta", 0, 2.0, 0.5, 300, 200.0),
        result_record("ta", "cps", 0, 5.0, "cps"),  # another metric: not a tear-down row
    ]
    td = ag.own_summary(fr.results_frame(recs), TEARDOWN)
    assert td.index.name == "point_id" and list(td.columns) == TEARDOWN_COLUMNS
    assert td.index.tolist() == ["tb", "ta"]
    assert td.loc["tb"].tolist() == [
        2,
        400.0,
        4.0,
        3.0,
        5.0,
        1.0,
        1.0,
        1.0,
        3.0,
        pytest.approx(400 / 3),
        150.0,
        100.0,
        200.0,
    ]
    assert td.loc["ta"].tolist() == [1, 300.0, 2.0, 2.0, 2.0, 0.5, 0.5, 0.5, 1.5, 200.0, 200.0, 200.0, 200.0]


def test_a_teardown_without_a_positive_deletion_time_has_no_rate() -> None:
    # T_N 2.0 / 1.0 -> median 1.5; T_0 1.0 / 2.0 -> median 1.5: deletion time 0, so no rate (not infinity)
    recs = [_teardown("p", 0, 2.0, 1.0, 1000, 1000.0), _teardown("p", 1, 1.0, 2.0, 1000, None)]
    td = ag.own_summary(fr.results_frame(recs), TEARDOWN).loc["p"]
    assert td["deletion_time"] == 0.0 and math.isnan(td["rate"])


def test_a_run_without_teardown_gives_an_empty_teardown_table() -> None:
    recs = [result_record("p", "cps", 0, 5.0, "cps")]
    for pts in (None, _points({"src": (1, 10), "dst": (1, 10)})):
        td = ag.own_summary(fr.results_frame(recs), TEARDOWN, pts)
        assert td.empty and td.index.name == "point_id" and list(td.columns) == TEARDOWN_COLUMNS


def test_trial_summary_counts_each_verdict_per_point_and_metric_in_run_order() -> None:
    # q ran before p; p ran only cps and q only throughput, so there are exactly two rows
    recs = [
        trial_record("q", "throughput", 0, i, rate=1e5, verdict=v, started_at=10.0 * i, duration=d)
        for i, (v, d) in enumerate([("pass", 1.0), ("pass", 2.0), ("pass", 0.5), ("fail", 4.0), ("invalid", 1.5)])
    ]
    recs += [trial_record("p", "cps", 0, 0, rate=1e4, verdict="fail", started_at=100.0, duration=3.0)]
    s = ag.trial_summary(fr.trials_frame(recs))
    assert list(s.columns) == ["trials", "passed", "failed", "invalid", "seconds"]
    assert [tuple(map(str, k)) for k in s.index] == [("q", "throughput"), ("p", "cps")]
    # q: 5 trials, 3 pass, 1 fail, 1 invalid, 1.0 + 2.0 + 0.5 + 4.0 + 1.5 = 9.0 s; p: one failed 3 s trial
    assert s.iloc[0].tolist() == [5, 3, 1, 1, 9.0]
    assert s.iloc[1].tolist() == [1, 0, 1, 0, 3.0]
    assert s.dtypes.tolist() == ["int64", "int64", "int64", "int64", "float64"]  # counts stay whole numbers


def test_trial_summary_of_no_trials_has_the_columns() -> None:
    s = ag.trial_summary(fr.trials_frame([]))
    assert s.empty and list(s.columns) == ["trials", "passed", "failed", "invalid", "seconds"]


def test_dut_cpu_busy_is_that_of_the_last_passing_trial_in_time_at_the_reported_rate() -> None:
    """Trials stored out of time order: the passing trial that ran last (started at 5.0) decides, not the one
    listed last, and a later failed trial at the same rate does not count."""
    pid = "p"

    def at(step: int, started_at: float, verdict: str, busy: float) -> TrialRecord:
        mon = {"monitor": {"dut": _mon({"cpu0": [100.0 - busy] * 3})}}
        return trial_record(pid, "cps", 0, step, rate=85_000.0, verdict=verdict, started_at=started_at, extra=mon)

    trials = [at(3, 5.0, "pass", 60.0), at(1, 3.0, "pass", 50.0), at(4, 6.0, "fail", 95.0)]
    result = result_record(pid, "cps", 0, 85_000.0, "cps", error=1_000.0)
    r = ag.with_dut_cpu_busy(fr.results_frame([result]), fr.trials_frame(trials))
    assert r["dut_cpu_busy"].tolist() == [pytest.approx(60.0)]


def test_a_repetition_measured_again_takes_the_cpu_busy_of_its_later_trial() -> None:
    """Time decides before the step number (a repetition measured again after a kill counts its steps from 0);
    only trials started at the same time are ordered by their step."""
    pid = "p"

    def at(step: int, started_at: float, busy: float) -> TrialRecord:
        mon = {"monitor": {"dut": _mon({"cpu0": [100.0 - busy] * 3})}}
        return trial_record(pid, "cps", 0, step, rate=85_000.0, started_at=started_at, extra=mon)

    result = fr.results_frame([result_record(pid, "cps", 0, 85_000.0, "cps", error=1_000.0)])
    again = [at(2, 1.0, 30.0), at(0, 9.0, 70.0)]  # the cut-off measurement's step 2, then the new step 0
    assert ag.with_dut_cpu_busy(result, fr.trials_frame(again))["dut_cpu_busy"].tolist() == [pytest.approx(70.0)]
    same_time = [at(5, 4.0, 40.0), at(4, 4.0, 20.0)]
    assert ag.with_dut_cpu_busy(result, fr.trials_frame(same_time))["dut_cpu_busy"].tolist() == [pytest.approx(40.0)]


def test_summary_rows_keep_the_run_order_and_take_the_median_cpu_busy() -> None:
    # q ran before p; p's repetitions had the DUT 10 %, 60 %, 20 % busy and one without samples:
    # median of 10, 20, 60 = 20 (the mean would be 30)
    recs = [result_record("q", "cps", 0, 7.0, "cps")]
    recs += [result_record("p", "cps", r, 100.0 + r, "cps") for r in range(4)]
    results = fr.results_frame(recs)
    results["dut_cpu_busy"] = [float("nan"), 10.0, 60.0, 20.0, float("nan")]
    s = ag.summarize(results)
    assert [tuple(map(str, k)) for k in s.index] == [("q", "cps"), ("p", "cps")]
    assert math.isnan(s.loc[("q", "cps"), "dut_cpu_busy"])
    assert s.loc[("p", "cps"), "dut_cpu_busy"] == 20.0


SUMMARY_COLUMNS = ["unit", "directions", "experiments", "failed", "median", "min", "max", "error"]


def test_an_empty_summary_keeps_its_columns_and_index_names() -> None:
    s = ag.summarize(fr.results_frame([]))
    assert s.empty and list(s.columns) == ag.summary_columns()
    # the base columns, then what the metrics declare: every search's flags, latency's worst case, the marks
    assert ag.summary_columns()[: len(SUMMARY_COLUMNS) + 1] == [*SUMMARY_COLUMNS, "dut_cpu_busy"]
    declared = ["tester_bound", "seeded", "no_pass", "algorithm", "worst_case_median", "worst_case_max"]
    assert set([*declared, "tagged_only", "unvalidated", "unverified", "not_reached"]) <= set(ag.summary_columns())
    assert list(s.index.names) == ["point_id", "metric"]


def test_a_summary_has_a_row_only_for_each_point_and_metric_that_ran() -> None:
    # p ran cps only, q throughput only: two rows, not the four combinations of the categories
    recs = [result_record("p", "cps", 0, 5.0, "cps"), result_record("q", "throughput", 0, 7.0, "fps")]
    s = ag.summarize(fr.results_frame(recs))
    assert [tuple(map(str, k)) for k in s.index] == [("p", "cps"), ("q", "throughput")]
    assert s["median"].tolist() == [5.0, 7.0]


def test_a_results_frame_without_cpu_busy_gives_no_cpu_figure() -> None:
    """A frame without the dut_cpu_busy column (e.g. built by hand) still summarises; the figure is NaN."""
    recs = [result_record("p", "cps", r, v, "cps") for r, v in enumerate((4.0, 6.0))]
    s = ag.summarize(fr.results_frame(recs).drop(columns="dut_cpu_busy"))
    assert s["dut_cpu_busy"].dtype == "float64" and math.isnan(s.loc[("p", "cps"), "dut_cpu_busy"])
    assert s.loc[("p", "cps"), "median"] == 5.0  # (4 + 6) / 2


def test_scale_tables_have_exactly_their_columns() -> None:
    pts = _points(*({"src": (1, 10), "dst": (1, 10), "cores": c} for c in (1, 2)))
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(pts.index, (100.0, 150.0), strict=True)]
    s = ag.summarize(fr.results_frame(recs))
    # 150 / (2 x 100) = 0.75
    su = ag.scale_up_cores(s, pts)
    assert list(su.columns) == ["point_id", "metric", "cores", "reference", "scale_up"]
    assert su["scale_up"].tolist() == [1.0, 0.75]
    sc = ag.scale_connections(s, pts)  # same connections, other cores: two series of one point each
    assert list(sc.columns) == ["point_id", "metric", "connections", "scale", "ratio_prev"]
    assert sc["scale"].tolist() == [1.0, 1.0] and sc["ratio_prev"].isna().all()
    # nothing to scale: no core counts / no point the results belong to
    no_cores = _points({"src": (1, 10), "dst": (1, 10)})
    one = ag.summarize(fr.results_frame([result_record(no_cores.index[0], "cps", 0, 1.0, "cps")]))
    assert list(ag.scale_up_cores(one, no_cores).columns) == ["point_id", "metric", "cores", "reference", "scale_up"]
    assert ag.scale_up_cores(one, no_cores).empty
    unknown = ag.summarize(fr.results_frame([result_record("elsewhere", "cps", 0, 1.0, "cps")]))
    sc = ag.scale_connections(unknown, pts)
    assert sc.empty and list(sc.columns) == ["point_id", "metric", "connections", "scale", "ratio_prev"]


def test_a_result_with_only_its_required_fields_takes_the_defaults() -> None:
    """A result with no error and no extra is one direction, no error, not tester-bound; unit spellings conn/s and
    pps are read as cps and fps."""
    recs = [
        RepetitionResult("p", "cps", 0, 5.0, ""),
        RepetitionResult("p", "teardown", 2, 10.0, "conn/s"),
        RepetitionResult("p", "throughput", 1, 7.0, "pps"),
    ]
    df = fr.results_frame(recs)
    assert list(df.columns) == fr.result_column_names()
    assert df["unit"].astype(str).tolist() == ["", "cps", "fps"]
    assert df["repetition"].tolist() == [0, 2, 1] and df["directions"].tolist() == [1, 1, 1]
    assert df["reported"].tolist() == [5.0, 10.0, 7.0]  # one direction: as stored
    assert df["tester_bound"].tolist() == [False, False, False]
    for c in ("error", "filled_delete_s", "empty_delete_s", "created_connections", "dut_cpu_busy"):
        assert df[c].isna().all(), c


def test_trials_frame_rows_sum_counts_over_directions_and_keep_each_direction() -> None:
    full = TrialRecord(
        point_id="p",
        metric="throughput",
        repetition=2,
        step=5,
        kind="phase2",
        intended_rate=1000.0,
        achieved_rate=990.0,
        counts={"forward": {"sent": 2000, "valid": 1990}, "reverse": {"sent": 1500, "valid": 1400}},
        verdict=Verdict.FAIL,
        reason="loss",
        started_at=10.0,
        ended_at=12.5,
        lower=900.0,
        upper=1100.0,
        extra={"note": 1},
    )
    bare = TrialRecord("q", "cps", 0, 0, "", 0.0, 0.0, {}, Verdict.PASS, "", 0.0, 0.0)
    partial = dataclasses.replace(bare, point_id="r", counts={"f": {"sent": 10}, "r": {"valid": 4}})
    df = fr.trials_frame([full, result_record("p", "throughput", 2, 990.0, "fps"), bare, partial])
    assert list(df.columns) == [*fr.TRIAL_COLUMNS, *fr.DIRECTION_COLUMNS, "extra"] and len(df) == 3
    rows = [
        [None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v for v in row]
        for row in df.astype(object).values
    ]
    # sent 2000 + 1500 = 3500, valid 1990 + 1400 = 3390; a direction without a count adds 0
    assert rows[0][:13] == ["p", "throughput", 2, 5, "phase2", 1000.0, 990.0, "fail", "loss", 10.0, 12.5, 900.0, 1100.0]
    assert rows[0][13:] == [None, 3500, 0, 3390, 2000, None, 1990, 1500, None, 1400, {"note": 1}]
    assert rows[1] == ["q", "cps", 0, 0, "", 0.0, 0.0, "pass", "", 0.0, 0.0, None, None, None, 0, 0, 0, *[None] * 6, {}]
    assert rows[2][14:17] == [10, 0, 4] and rows[2][-7:] == [*[None] * 6, {}]  # directions other than these two


def test_points_frame_reads_ports_sizes_and_the_swept_duts_parameters() -> None:
    full = PointRecord(
        id="a",
        index=5,
        label="A",
        name="nat",
        cores=2,
        src_ports=PortRange(1000, 1009),
        dst_ports=PortRange(80, 83),
        connections=40,
        frame_size=64,
        # the swept DUT "d" decides the table size although "other" is listed first; "d" has no hash size
        dut_params={"other": {"conntrack_max": 10, "hashsize": 5}, "d": {"state_limit": 2**20}},
        swept_dut="d",
    )
    # no swept DUT: the first DUT that has the key
    unswept = dataclasses.replace(
        full,
        id="c",
        index=1,
        label="",
        cores=None,
        swept_dut=None,
        dut_params={"x": {"hash_size": 7}, "y": {"table_size": 9, "hashsize": 8}},
    )
    bare = dataclasses.replace(full, id="b", index=3, dut_params={}, swept_dut=None, cores=None)
    pf = fr.points_frame([full, unswept, bare])
    assert pf.index.tolist() == ["c", "b", "a"]  # by index: 1, 3, 5
    a = pf.loc["a"]
    # 1000..1009: 10 source ports, 80..83: 4 destination ports -> 40 connections
    assert [a[c] for c in ("src_first", "src_last", "dst_first", "dst_last")] == [1000, 1009, 80, 83]
    assert (a["src_count"], a["dst_count"], a["connections"]) == (10, 4, 40)
    assert (a["index"], a["label"], a["name"], a["cores"], a["frame_size"]) == (5, "A", "nat", 2.0, 64)
    assert (a["table_size"], a["hash_size"], a["swept_dut"]) == (2**20, 5.0, "d")
    c = pf.loc["c"]
    assert (c["index"], c["table_size"], c["hash_size"], c["label"]) == (1, 9.0, 7.0, "c")  # no label: the id
    b = pf.loc["b"]
    assert math.isnan(b["cores"]) and math.isnan(b["table_size"]) and math.isnan(b["hash_size"])


def test_a_point_listed_twice_is_one_point() -> None:
    p, q = make_point(0, (1, 10), (1, 10)), make_point(1, (1, 20), (1, 10))
    pf = fr.points_frame([p, q, dataclasses.replace(p, index=2)])
    assert pf.index.tolist() == [p.id, q.id] and pf["index"].tolist() == [0, 1]


def test_an_empty_points_frame_keeps_its_columns() -> None:
    pf = fr.points_frame([])
    assert pf.empty and pf.index.name == "point_id"
    assert list(pf.columns) == ["index", "label", "cores", "connections"]


def test_dut_parameters_in_another_key_order_are_the_same_series() -> None:
    # the 2-core point lists the same DUT parameters in another order: one series, S(2) = 150 / (2 x 100)
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "dut_params": {"d": {"a": 1, "b": 2}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 2, "dut_params": {"d": {"b": 2, "a": 1}}},
    )
    recs = [result_record(pid, "cps", 0, v, "cps") for pid, v in zip(pts.index, (100.0, 150.0), strict=True)]
    su = ag.scale_up_cores(ag.summarize(fr.results_frame(recs)), pts)
    assert su["scale_up"].tolist() == [1.0, 0.75] and set(su["reference"]) == {pts.index[0]}


def test_a_throughput_without_a_matching_baseline_has_no_ratio() -> None:
    """Only a baseline with the same cores, port ranges and frame size counts; of two such separate
    baselines the first one measured is taken; a throughput with none gets no row."""
    pts = _points(
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "nat"},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "fwd-a", "dut_params": {"d": {"r": "a"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "fwd-b", "dut_params": {"d": {"r": "b"}}},
        {"src": (1, 10), "dst": (1, 10), "cores": 2, "name": "nat"},
        {"src": (1, 10), "dst": (1, 10), "cores": 1, "name": "nat", "frame_size": 1518},
        {"src": (1, 20), "dst": (1, 10), "cores": 1, "name": "nat"},
    )
    nat, fwd_a, fwd_b, two_cores, big_frames, more_ports = pts.index
    recs = [
        result_record(nat, "throughput", 0, 40.0, "fps"),
        result_record(fwd_a, "forwarding", 0, 100.0, "fps"),
        result_record(fwd_b, "forwarding", 0, 50.0, "fps"),
        result_record(two_cores, "throughput", 0, 30.0, "fps"),
        result_record(big_frames, "throughput", 0, 10.0, "fps"),
        result_record(more_ports, "throughput", 0, 20.0, "fps"),
    ]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts)
    # 40 / 100 against fwd-a; the 2-core, 1518-byte and 20-source-port throughputs have no baseline
    assert r.to_dict("records") == [{"point_id": nat, "metric": "throughput", "baseline_point": fwd_a, "ratio": 0.4}]
    none = ag.baseline_ratio(ag.summarize(fr.results_frame(recs[:1])), pts)
    assert none.empty and list(none.columns) == ["point_id", "metric", "baseline_point", "ratio"]


def test_a_baseline_with_other_port_numbers_at_either_end_is_no_baseline() -> None:
    """Each bound of both port ranges must be the baseline's: a throughput whose source or destination range
    starts or ends elsewhere gets no ratio."""
    base = {"src": (2, 10), "dst": (3, 12), "cores": 1}
    pts = _points(
        {**base, "name": "fwd", "dut_params": {"d": {"r": "fwd"}}},
        {**base, "name": "nat"},
        {**base, "src": (1, 10), "name": "nat"},
        {**base, "src": (2, 11), "name": "nat"},
        {**base, "dst": (1, 12), "name": "nat"},
        {**base, "dst": (3, 13), "name": "nat"},
    )
    fwd, same, *others = pts.index
    recs = [result_record(fwd, "forwarding", 0, 100.0, "fps")]
    recs += [result_record(p, "throughput", 0, 40.0, "fps") for p in (same, *others)]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts)
    assert r.to_dict("records") == [{"point_id": same, "metric": "throughput", "baseline_point": fwd, "ratio": 0.4}]


def test_results_are_read_from_raw_trials_jsonl_lines_in_any_order() -> None:
    # trials.jsonl interleaves trial and result lines; a trial line before a result must not end the reading
    lines = [
        trial_record("p", "cps", 0, 0, rate=100.0),
        result_record("p", "cps", 0, 100.0, "cps"),
        trial_record("p", "cps", 1, 0, rate=300.0),
        result_record("p", "cps", 1, 300.0, "cps"),
    ]
    df = fr.results_frame(lines)
    assert df["value"].tolist() == [100.0, 300.0]
    assert fr.trials_frame(lines)["intended_rate"].tolist() == [100.0, 300.0]


def test_the_frames_keep_whole_numbers_whole_for_notebooks() -> None:
    # a notebook user filters rows by repetition == 3 and sums counts: these columns stay integers (and flags
    # booleans), not floats that print as 3.0
    results = fr.results_frame(
        [
            result_record("p", "throughput", 0, 1000.0, "fps", extra={"directions": 2, "tester_bound": True}),
            result_record("p", "throughput", 1, 1200.0, "fps", extra={"directions": 2}),
        ]
    )
    assert str(results["repetition"].dtype) == "int64" and results["repetition"].tolist() == [0, 1]
    assert str(results["directions"].dtype) == "int64" and results["directions"].tolist() == [2, 2]
    assert str(results["tester_bound"].dtype) == "bool" and results["tester_bound"].tolist() == [True, False]
    summary = ag.summarize(results)
    assert str(summary["tester_bound"].dtype) == "int64" and summary.loc[("p", "throughput"), "tester_bound"] == 1
    trials = fr.trials_frame([trial_record("p", "cps", 2, 5, rate=250.0, duration=4.0)])
    for column, expected in (("repetition", 2), ("step", 5), ("sent", 1000), ("valid", 1000)):  # 250/s x 4 s
        assert str(trials[column].dtype) == "int64" and trials[column].tolist() == [expected]


def test_a_trials_stored_value_is_in_the_trials_frame() -> None:
    # a timed delete stores its seconds as the trial's value (tear-down's T_N / T_0)
    lines = [
        trial_record("p", "teardown", 0, 1, kind="flush_filled", value=0.75),
        trial_record("p", "teardown", 0, 2, kind="flush_empty", value=0.125),
        trial_record("p", "teardown", 0, 0, kind="fill", rate=1000.0),
    ]
    values = fr.trials_frame(lines)["value"].tolist()
    assert values[:2] == [0.75, 0.125] and math.isnan(values[2])


def test_without_a_registered_baseline_metric_there_is_no_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    # a registry without a plain-forwarding baseline (e.g. a build that leaves forwarding out): no ratio row,
    # not an error, even when the run stored forwarding and throughput results
    monkeypatch.setattr(ag, "baseline_metric", lambda: None)
    pts = _points({"src": (1, 10), "dst": (1, 10), "cores": 1})
    (p,) = pts.index
    recs = [result_record(p, "throughput", 0, 40.0, "fps"), result_record(p, "forwarding", 0, 100.0, "fps")]
    r = ag.baseline_ratio(ag.summarize(fr.results_frame(recs)), pts)
    assert r.empty and list(r.columns) == ["point_id", "metric", "baseline_point", "ratio"]


def _fills(*rows: tuple[str, str, float, float | None, float | None]) -> pd.DataFrame:
    """A frame as fill_memory_frame builds it: point, metric, N, bytes per connection and one slab's growth."""
    cols = ["point_id", "metric", "created_connections", "per_connection", "used", "mem_available", "conntrack_slab"]
    data = [(p, m, n, per, None if per is None else per * n, None, slab) for p, m, n, per, slab in rows]
    return pd.DataFrame(data, columns=cols).astype({c: "float64" for c in cols[2:]})


def test_memory_summary_counts_the_fills_and_those_without_a_figure_per_point() -> None:
    fills = _fills(
        ("b", "teardown", 8000.0, 256.0, 256.0),
        ("a", "throughput", 4000.0, 256.0, 256.0),
        ("a", "throughput", 4000.0, None, None),  # no slab growth, MemAvailable within its noise: unknown
        ("a", "throughput", 4000.0, 272.0, 272.0),
        ("b", "throughput", 8000.0, 320.0, None),
    )
    m = ag.memory_summary(fills)
    assert list(m.columns) == ["fills", "unknown", "per_connection", "used", "mem_available", "conntrack_slab"]
    assert m.index.name == "point_id" and m.index.tolist() == ["b", "a"]  # the order the fills ran in
    # a: three fills, one unknown; the medians are over the fills that gave a figure: (256 + 272) / 2
    assert m.loc["a", ["fills", "unknown", "per_connection", "used"]].tolist() == [3.0, 1.0, 264.0, 1_056_000.0]
    assert m.loc["b", ["fills", "unknown", "per_connection"]].tolist() == [2.0, 0.0, 288.0]
    only = ag.memory_summary(fills, ["throughput"])  # b's tear-down fill left out
    assert only.loc["b", ["fills", "per_connection", "used"]].tolist() == [1.0, 320.0, 2_560_000.0]
    assert math.isnan(only.loc["b", "conntrack_slab"]) and only.loc["a", "fills"] == 3.0
    none = ag.memory_summary(fills, ["cps"])
    assert none.empty and none.index.name == "point_id" and list(none.columns) == list(m.columns)


@pytest.fixture
def plugin_metric() -> Iterator[str]:
    """A metric as an installed plugin would add it, declaring a column summed up as its median over the
    repetitions (``rtt``) and one its own table reads, not summed up (``note``: text); unregistered afterwards."""
    rtt = Column("rtt", "float64", lambda r: r.extra.get("rtt"), summary="median")
    note = Column("note", "object", lambda r: r.extra.get("note"), summary="none")
    METRICS.register("plugin_rtt", dataclasses.replace(CPS, name="plugin_rtt", order=999, columns=(rtt, note)))
    try:
        yield "plugin_rtt"
    finally:
        METRICS.unregister("plugin_rtt")


def test_a_declared_median_column_is_summed_up_as_its_median_and_a_none_column_not_at_all(plugin_metric: str) -> None:
    # rtt 1, 5, 2: median 2 (mean 2.67, min 1, max 5); the notes are text, which has no median
    recs = [
        result_record("p", plugin_metric, r, 100.0, "cps", extra={"rtt": rtt, "note": f"run {r}"})
        for r, rtt in enumerate([1.0, 5.0, 2.0])
    ]
    s = ag.summarize(fr.results_frame(recs))
    assert list(s.columns) == ag.summary_columns()
    assert "rtt" in s.columns and not [c for c in s.columns if c.startswith(("note", "rtt_"))]
    assert s.loc[("p", plugin_metric), "rtt"] == 2.0


def test_a_results_frame_without_the_declared_columns_sums_up_as_if_each_held_its_default() -> None:
    """A frame lacking declared columns (a notebook's selection, an export of an older natbench) is summed up from
    each column's default: no flag counted, no algorithm, no statistic, in the summary's own dtypes."""
    recs = [result_record("p", "cps", r, v, "cps") for r, v in enumerate([10.0, 30.0, 20.0])]
    recs.append(result_record("q", "throughput", 0, 5.0, "fps"))
    full = fr.results_frame(recs)
    declared = [c.name for c in fr.result_columns()]
    assert all(full[c.name].isna().all() or (full[c.name] == c.default).all() for c in fr.result_columns())
    bare = ag.summarize(full.drop(columns=declared))
    pd.testing.assert_frame_equal(bare, ag.summarize(full))
    row = bare.loc[("p", "cps")]
    assert (row["tester_bound"], row["no_pass"], row["failed"], row["experiments"]) == (0, 0, 0, 3)
    assert row["algorithm"] is None and math.isnan(row["worst_case_median"])


def test_points_frame_names_the_table_and_hash_rows_the_dut_kind_declared() -> None:
    """Each size comes with the rows its declaration names (report tables print them); a point that sets no size of a
    kind gets no row for it."""
    states = TableParam("state_limit", "state table size", "states/conn.")
    buckets = TableParam("buckets", "bucket count", "conn./bucket")
    declared = {"d": DutDeclarations(table_size=states, hash_size=buckets)}
    both = make_point(0, (1, 10), (1, 4), dut_params={"d": {"state_limit": 100, "buckets": 8}})
    table_only = make_point(1, (1, 10), (1, 4), dut_params={"d": {"state_limit": 200}})
    pf = fr.points_frame([both, table_only], declared)
    table = ["table_size", "table_label", "table_ratio_label"]
    hashed = ["hash_size", "hash_label", "hash_ratio_label"]
    assert pf.loc[both.id, table].tolist() == [100.0, "state table size", "states/conn."]
    assert pf.loc[both.id, hashed].tolist() == [8.0, "bucket count", "conn./bucket"]
    assert pf.loc[table_only.id, table].tolist() == [200.0, "state table size", "states/conn."]
    assert pf.loc[table_only.id, hashed].isna().all()


def test_a_point_record_without_its_number_of_connections_gets_the_port_ranges_product() -> None:
    # 10 source x 4 destination ports: 40 connections, as every working point has |S| x |D|
    point = dataclasses.replace(make_point(0, (1000, 1009), (80, 83)), connections=0)
    assert fr.points_frame([point]).loc[point.id, "connections"] == 40


def test_a_dut_parameter_json_has_no_form_for_groups_points_by_its_text_as_their_ids_do() -> None:
    """A value such as a date (YAML reads ``2024-01-01`` as one) is keyed by its text, like the point's id: the
    points of two core counts stay one series, the same series as with the value written as text."""
    day = datetime.date(2024, 1, 1)
    dated = [make_point(i, (1, 10), (1, 4), cores=i + 1, dut_params={"d": {"since": day}}) for i in range(2)]
    texts = [make_point(i, (1, 10), (1, 4), cores=i + 1, dut_params={"d": {"since": "2024-01-01"}}) for i in range(2)]
    by_date, by_text = fr.points_frame(dated), fr.points_frame(texts)
    assert by_date["cores_group"].nunique() == 1 and by_date["conn_group"].nunique() == 2
    assert by_date["cores_group"].tolist() == by_text["cores_group"].tolist()


def test_a_directions_frame_count_stays_a_whole_number_however_large_and_na_where_unused() -> None:
    # 2^53 + 1 has no float64 form: a float column would read it as 2^53
    big = 2**53 + 1
    counts = {"forward": {"sent": big, "valid": 3}}
    trial = TrialRecord("p", "cps", 0, 0, "", 0.0, 0.0, counts, Verdict.PASS, "", 0.0, 1.0)
    df = fr.trials_frame([trial])
    assert [str(df[c].dtype) for c in fr.DIRECTION_COLUMNS] == ["Int64"] * 6
    assert df.loc[0, "forward_sent"] == big and df.loc[0, "forward_valid"] == 3
    assert df.loc[0, "forward_received"] is pd.NA and df.loc[0, "reverse_sent"] is pd.NA


def test_a_column_a_metric_declares_is_computed_for_its_results_only() -> None:
    """latency declares worst_case: a cps result whose extra holds the same key still shows the column's default."""
    recs = [
        result_record("p", "latency", 0, 0.5, "ms", extra={"worst_case": 9.0}),
        result_record("p", "cps", 0, 100.0, "cps", extra={"worst_case": 7.0}),
    ]
    worst = fr.results_frame(recs)["worst_case"].tolist()
    assert worst[0] == 9.0 and math.isnan(worst[1])


def test_results_frame_adds_each_results_point_and_leaves_a_point_it_was_not_given_unknown() -> None:
    known = make_point(0, (1000, 1009), (80, 83), cores=4)
    uncored = make_point(1, (1, 2), (1, 3))
    recs = [result_record(p, "cps", 0, 1.0, "cps") for p in (known.id, uncored.id, "elsewhere")]
    df = fr.results_frame(recs, [known, uncored])
    assert [str(df[c].dtype) for c in ("connections", "cores")] == ["Int64", "Int64"]
    assert df["label"].tolist()[:2] == [known.label, uncored.label] and pd.isna(df.loc[2, "label"])
    assert df["connections"].tolist()[:2] == [40, 6] and df.loc[2, "connections"] is pd.NA
    assert df.loc[0, "cores"] == 4 and df.loc[1, "cores"] is pd.NA and df.loc[2, "cores"] is pd.NA
