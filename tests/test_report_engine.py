"""Reports on run directories written by the real runner and store (engine fakes as tester and DUT)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import engine_fakes
import pytest
from click.testing import CliRunner

import natbench
from natbench.cli import cli
from natbench.run.runner import start_run
from natbench.testing import FakeDut, FakeModel, FakeTester


def _run(path: Path, model: FakeModel = engine_fakes.MODEL) -> Path:
    dut = FakeDut(model)
    run = start_run(
        engine_fakes.make_spec(), path, FakeTester(dut), dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None
    )
    assert run.status == "complete"
    return path


@pytest.fixture(scope="module")
def engine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("engine") / "run")


def test_every_engine_metric_is_reported(engine_run: Path) -> None:
    run = natbench.load(engine_run)
    assert set(run.metrics) == {
        "cps",
        "throughput",
        "frame_loss",
        "latency",
        "pdv",
        "teardown",
        "capacity",
        "validation",
        "forwarding",
    }
    perf, td = run.tables()
    for m in ("cps", "throughput", "frame loss", "latency", "PDV", "capacity", "validation", "fwd. throughput"):
        assert f"{m} median" in perf.cells.index
    # throughput rows show the engine's all_frames_per_second (bidirectional: 2 x the stored value)
    stored = [json.loads(ln) for ln in (engine_run / "trials.jsonl").read_text().splitlines()]
    tp = [r for r in stored if r["type"] == "result" and r["metric"] == "throughput"]
    assert tp and all(r["extra"]["directions"] in (2, "bidirectional") for r in tp)
    afps = sorted(r["extra"]["all_frames_per_second"] for r in tp if r["point_id"] == perf.point_ids[0])
    assert (
        perf.values.loc["throughput max"].iloc[0]
        == afps[-1]
        == 2 * max(r["value"] for r in tp if r["point_id"] == perf.point_ids[0])
    )
    # tear-down from the engine's T_N / T_0
    tdr = [
        r for r in stored if r["type"] == "result" and r["metric"] == "teardown" and r["point_id"] == td.point_ids[0]
    ]
    tn = sorted(r["extra"]["filled_delete_s"] for r in tdr)
    t0 = sorted(r["extra"]["empty_delete_s"] for r in tdr)
    median = lambda v: (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2  # noqa: E731
    n = tdr[0]["extra"]["connections"]
    assert td.values.loc["conn. tear d. rate"].iloc[0] == pytest.approx(n / (median(tn) - median(t0)))
    assert td.cells.loc["conn. deletion time"].iloc[0] != "0.00"  # small times keep significant digits


def test_cli_report_on_an_engine_run(engine_run: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["report", str(engine_run), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "cps median" in res.output and "conn. tear d. rate" in res.output
    page = (tmp_path / "report.html").read_text()
    assert page.count('<table class="seed">') == 2 and page.count("data:image/png;base64,") >= 9
    assert "engine-fakes" in page and "table_limit" in page  # campaign and DUT facts


def test_compare_engine_runs(engine_run: Path, tmp_path: Path) -> None:
    assert CliRunner().invoke(cli, ["compare", str(engine_run), str(engine_run), "--fail", "median:1%"]).exit_code == 0
    slower = dataclasses.replace(engine_fakes.MODEL, cps=engine_fakes.MODEL.cps * 0.8)
    other = _run(tmp_path / "slower", slower)
    res = CliRunner().invoke(cli, ["compare", str(engine_run), str(other), "--fail", "median:5%", "--metric", "cps"])
    assert res.exit_code == 1, res.output
    assert res.output.count("EXCEEDS median:5%") == 2
