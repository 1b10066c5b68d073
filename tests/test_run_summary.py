"""What `natbench run` prints after the tables: the report's own summary (key results and warnings), in the tables'
numbers and units; no aggregation of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.cli.run import _print_report
from natbench.report.load import load
from natbench.report.summary import summarize_run
from natbench.testing.rundir import make_point, result_record, write_run_dir

PER_DIRECTION = [84_375.0, 84_375.0, 90_000.0]  # what the engine stores: frames/s in each direction


def _run(tmp_path: Path) -> Path:
    point = make_point(0, (1, 400), (1, 10), cores=1)
    records = [
        result_record(
            point.id,
            "throughput",
            rep,
            v,
            "fps",
            error=500.0,
            extra={"directions": "bidirectional", "all_frames_per_second": 2 * v, "tester_bound": True},
        )
        for rep, v in enumerate(PER_DIRECTION)
    ]
    records += [
        result_record(point.id, "forwarding", rep, 100_000.0, "fps", extra={"directions": "forward"})
        for rep in range(3)
    ]
    records += [result_record(point.id, "cps", rep, 61_035.0, "cps") for rep in range(3)]
    return write_run_dir(tmp_path / "run", [point], records)


def test_the_run_prints_the_reports_summary_in_the_tables_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run(tmp_path)
    _print_report(run_dir)
    out = capsys.readouterr().out
    lines = {ln.split(":")[0]: ln for ln in out.splitlines() if ": " in ln}
    tp = lines["throughput"]
    # bidirectional: all frames per second, the per-direction rate x2 (84,375 -> 168,750), as the table shows it
    assert tp.startswith("throughput: median 168,750 fps, all directions (binary search; error: its final width)"), tp
    assert "84,375" not in out
    text = "\n".join(t.to_text() for t in load(run_dir).tables())
    assert "168,750" in text and text in out  # the tables, printed once, just above
    # one direction only: all frames are that direction's frames, shown as stored
    assert lines["forwarding baseline throughput"].startswith("forwarding baseline throughput: median 100,000 fps")
    assert lines["maximum connection establishment rate"].endswith("median 61,035 cps")
    # the tester-bound flag is the report's warning, not a line of its own
    assert "warning: throughput: 3 of 3 repetitions were limited by the tester's ceiling: their values are" in out


def test_the_run_lists_the_metrics_in_the_registrys_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _print_report(_run(tmp_path))
    out = capsys.readouterr().out
    titles = ["maximum connection establishment rate", "throughput", "forwarding baseline throughput"]
    assert [out.index(f"\n{t}: ") for t in titles] == sorted(out.index(f"\n{t}: ") for t in titles)


def test_the_run_log_shows_each_repetition_in_the_same_unit() -> None:
    """`natbench run -v` logs each repetition's result: the same all-frames number as the summary."""
    from natbench.results import RepetitionResult
    from natbench.run.observers import format_result

    bidi = RepetitionResult(
        "p", "throughput", 0, 84_375.0, "fps", 500.0, {"directions": "bidirectional", "all_frames_per_second": 168_750}
    )
    # the value in all frames per second, the error as the search stored it (its width per direction)
    assert format_result(bidi) == "throughput#0: 168,750 fps, all directions (error 500)"
    assert format_result(RepetitionResult("p", "cps", 1, 61_035.0, "cps", 100.0, {})) == "cps#1: 61,035 cps (error 100)"


def test_a_repetition_without_a_passing_rate_is_no_value_in_the_summary_and_the_log(tmp_path: Path) -> None:
    """No rate passed within [0, 976]: the log line says so with the bounds, the summary warns of it apart from
    failures and its median is that of the repetitions with a value (61,035), not pulled toward 0."""
    from natbench.results import RepetitionResult
    from natbench.run.observers import format_result

    none = {"no_passing_rate": True, "lower": 0.0, "upper": 976.0}
    assert (
        format_result(RepetitionResult("p", "cps", 2, None, "cps", 976.0, none))
        == "cps#2: no passing rate within [0, 976]"
    )
    point = make_point(0, (1, 400), (1, 10), cores=1)
    records = [result_record(point.id, "cps", rep, 61_035.0, "cps") for rep in range(2)]
    records.append(result_record(point.id, "cps", 2, None, "cps", error=976.0, extra=none))
    run = load(write_run_dir(tmp_path / "run", [point], records))
    summary = summarize_run(run)
    ((_, text),) = summary.key_results
    assert text.startswith("median 61,035 cps")  # the two values, not pulled toward 0
    assert any(w.startswith("1 of 3 repetitions found no passing rate") for w in summary.warnings)
    assert not any("repetitions failed" in w for w in summary.warnings)  # a finding, not a failure
