"""`natbench compare`: changes per metric and point, thresholds and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from natbench.cli import cli
from natbench.report.compare import compare_summaries, exceeded, parse_threshold
from natbench.testing.rundir import make_point, result_record, spread, write_run_dir


def run_with(root: Path, cps_medians: dict[int, float], latency_ms: float | None = None) -> Path:
    """A run with cps at the given core counts (median, +-1 %), optionally latency at 1 core."""
    points, records = [], []
    for i, (cores, med) in enumerate(sorted(cps_medians.items())):
        p = make_point(i, (1, 100), (1, 10), cores=cores)
        points.append(p)
        for rep, v in enumerate(spread(med, med * 0.99, med * 1.01, 5)):
            records.append(result_record(p.id, "cps", rep, v, "cps", error=100))
        if latency_ms is not None and cores == 1:
            for rep in range(3):
                records.append(result_record(p.id, "latency", rep, latency_ms / 1e3, "s"))
    return write_run_dir(root, points, records)


def invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["compare", *args])
    return res.exit_code, res.output


def test_identical_runs_pass(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000, 2: 180_000})
    code, out = invoke(str(a), str(a), "--fail", "median:1%")
    assert code == 0, out
    assert out.count("+0.00 %") == 2


def test_regression_beyond_threshold_exits_1(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000, 2: 180_000})
    b = run_with(tmp_path / "b", {1: 90_000, 2: 178_000})  # -10 % and -1.1 %
    code, out = invoke(str(a), str(b), "--fail", "median:5%")
    assert code == 1
    lines = [ln for ln in out.splitlines() if "EXCEEDS" in ln]
    assert len(lines) == 1 and "-10.00 %" in lines[0] and "1c" in lines[0]
    assert invoke(str(a), str(b), "--fail", "median:15%")[0] == 0
    assert invoke(str(a), str(b))[0] == 0  # no threshold: report only


def test_improvement_never_fails(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000})
    b = run_with(tmp_path / "b", {1: 150_000})
    code, out = invoke(str(a), str(b), "--fail", "median:5%", "--fail", "min:5%")
    assert code == 0 and "+50.00 %" in out


def test_latency_worse_means_higher(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000}, latency_ms=1.0)
    b = run_with(tmp_path / "b", {1: 100_000}, latency_ms=1.2)
    assert invoke(str(a), str(b), "--fail", "median:10%")[0] == 1
    assert invoke(str(b), str(a), "--fail", "median:10%")[0] == 0  # lower latency is better


def test_absolute_threshold(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000})
    b = run_with(tmp_path / "b", {1: 99_000})
    assert invoke(str(a), str(b), "--fail", "median:500")[0] == 1
    assert invoke(str(a), str(b), "--fail", "median:2000")[0] == 0


def test_points_in_one_run_only_are_reported_not_failed(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000, 2: 180_000})
    b = run_with(tmp_path / "b", {1: 100_000, 4: 300_000})
    res = CliRunner().invoke(cli, ["compare", str(a), str(b), "--fail", "median:5%"])
    assert res.exit_code == 0
    assert "only A" in res.output and "only B" in res.output
    assert "1 (metric, point) only in A, 1 only in B" in res.stderr


def test_bad_threshold_is_exit_2_one_line(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000})
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "compare", str(a), str(a), "--fail", "mean:5"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "--fail" in r.stderr and "median:5%" in r.stderr and "Traceback" not in r.stderr


def test_regression_exit_code_through_main(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000})
    b = run_with(tmp_path / "b", {1: 80_000})
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "compare", str(a), str(b), "--fail", "median:5%"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    assert "exceed" in r.stderr


def test_missing_run_is_exit_2(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", {1: 100_000})
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "compare", str(a), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_parse_threshold() -> None:
    t = parse_threshold("median:5%")
    assert (t.stat, t.amount, t.percent) == ("median", 5.0, True)
    assert parse_threshold("max:1000").percent is False
    for bad in ("median", "avg:5%", "median:-5%", "median:five"):
        with pytest.raises(Exception, match="bad threshold"):
            parse_threshold(bad)


def test_compare_summaries_pure() -> None:
    idx = pd.MultiIndex.from_tuples([("p1", "cps")], names=["point_id", "metric"])
    a = pd.DataFrame({"median": [100.0], "min": [90.0], "max": [110.0], "experiments": [3]}, index=idx)
    b = pd.DataFrame({"median": [94.0], "min": [93.0], "max": [95.0], "experiments": [3]}, index=idx)
    c = compare_summaries(a, b, {"p1": "x"}, {})
    assert c.loc[0, "median_pct"] == pytest.approx(-6.0)
    assert c.loc[0, "min_pct"] == pytest.approx(100 * 3 / 90)
    assert exceeded(c, parse_threshold("median:5%")).tolist() == [True]
    assert exceeded(c, parse_threshold("min:5%")).tolist() == [False]
