"""The one-line-per-point summary `natbench run` prints after the tables: same numbers, same unit."""

from __future__ import annotations

from pathlib import Path

from natbench.cli.run import summary_lines
from natbench.report.load import load
from natbench.run.reader import RunDirectory
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


def test_summary_shows_bidirectional_throughput_as_the_tables_do(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    lines = {ln.split()[1]: ln for ln in summary_lines(RunDirectory.open(run_dir))}
    tp = lines["throughput"]
    assert "median        168,750  min        168,750  max        180,000 fps, all directions (n=3)" in tp, tp
    assert "84,375" not in tp
    assert "[tester-bound: the DUT passed all the tester could send; a lower bound]" in tp
    # the table printed just above the summary shows the very same number
    text = "\n".join(t.to_text() for t in load(run_dir).tables())
    assert "168,750" in text and "84,375" not in text
    # one direction only: all frames are that direction's frames, shown as stored
    assert "median        100,000" in lines["forwarding"] and lines["forwarding"].endswith(" fps (n=3)")
    assert "median         61,035" in lines["cps"] and lines["cps"].endswith(" cps (n=3)")


def test_summary_lists_the_metrics_in_the_registrys_order(tmp_path: Path) -> None:
    lines = summary_lines(RunDirectory.open(_run(tmp_path)))
    assert [ln.split()[1] for ln in lines] == ["cps", "throughput", "forwarding"]


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
    """No rate passed within [0, 976]: the log line says so with the bounds, the summary counts it apart and its
    median is that of the repetitions with a value (61,035), not pulled toward 0."""
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
    (line,) = summary_lines(RunDirectory.open(write_run_dir(tmp_path / "run", [point], records)))
    assert "median         61,035  min         61,035" in line and "(n=2)" in line
    assert line.endswith("  1 repetition(s) found no passing rate (no value, not 0)") and "failed" not in line
