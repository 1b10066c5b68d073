"""Invalid-trial counts in the text, Markdown and CSV tables (not only in the HTML trial summary).

An invalid trial proved nothing about the DUT (the tester fell behind, the table did not hold the expected
connections, counts were inconsistent); the engine stores it and repeats the step. A network test engineer
wants the count beside median / min / max: many invalid trials mean the result rests on a shaky testbed.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import engine_fakes
import pandas as pd
from report_cli import report_text

import natbench
from natbench.metrics.cps import CpsSettings
from natbench.plugins import Directions
from natbench.report import aggregate
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.runner import RunSpec, start_run
from natbench.run.writer import RunStore
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

A = WorkingPoint(0, PortRange(1, 100), PortRange(1, 10), 64, cores=1, name="nat")
B = WorkingPoint(1, PortRange(1, 100), PortRange(1, 10), 64, cores=2, name="nat")


def _trial(point: WorkingPoint, metric: str, rep: int, step: int, verdict: str, kind: str = "phase1") -> TrialRecord:
    counts = {"forward": {"sent": 1000, "received": 1000, "valid": 1000 if verdict == "pass" else 990}}
    return TrialRecord(
        point_id=point.id,
        metric=metric,
        repetition=rep,
        step=step,
        kind=kind,
        intended_rate=1000.0,
        achieved_rate=1000.0,
        counts=counts,
        verdict=Verdict(verdict),
        reason="" if verdict == "pass" else "by hand",
        started_at=10.0 * step,
        ended_at=10.0 * step + 1.0,
    )


def _run(root: Path) -> Path:
    """cps at A: repetition 0 = pass, invalid, fail, invalid, pass; repetition 1 = invalid, pass -> 3 invalid.
    cps at B: pass, fail; pass -> 0 invalid. throughput at A: two results, no trial stored -> unknown ("-").
    throughput at B: 4 invalid trials, then the repetition failed (no value) -> 4 invalid, 1 failed rep.
    teardown at A: phase-1 fill invalid, fill pass, filled delete, empty delete -> 1 invalid."""
    with RunStore.create(root, campaign_text="name: invalid\n", points=[A, B], campaign_name="invalid") as store:
        for rep, verdicts in enumerate([["pass", "invalid", "fail", "invalid", "pass"], ["invalid", "pass"]]):
            for step, v in enumerate(verdicts):
                store.append_trial(_trial(A, "cps", rep, step, v))
            store.append_result(RepetitionResult(A.id, "cps", rep, 1000.0 + 100 * rep, "cps", 100.0))
        for rep, verdicts in enumerate([["pass", "fail"], ["pass"]]):
            for step, v in enumerate(verdicts):
                store.append_trial(_trial(B, "cps", rep, step, v))
            store.append_result(RepetitionResult(B.id, "cps", rep, 2000.0, "cps", 100.0))
        for rep in range(2):
            store.append_result(RepetitionResult(A.id, "throughput", rep, 500.0, "fps", 100.0, {"directions": 2}))
        for step in range(4):
            store.append_trial(_trial(B, "throughput", 0, step, "invalid", "phase2"))
        store.append_result(RepetitionResult(B.id, "throughput", 0, None, "fps", None, {"failed": "4 invalid"}))
        for step, (v, kind) in enumerate(
            [("invalid", "phase1"), ("pass", "phase1"), ("pass", "flush_filled"), ("pass", "flush_empty")]
        ):
            store.append_trial(_trial(A, "teardown", 0, step, v, kind))
        extra = {"T_N": 0.5, "T_0": 0.1, "connections": 1000}
        store.append_result(RepetitionResult(A.id, "teardown", 0, 2500.0, "conn/s", None, extra))
        store.set_status("complete")
    return root


def test_text_tables_count_invalid_trials_per_metric_block(tmp_path: Path) -> None:
    text = report_text(_run(tmp_path / "run"))
    table = [re.split(r"\s{2,}", ln.strip()) for ln in text.splitlines()]
    rows = {r[0]: r[1:] for r in table if r[0].endswith("invalid trials")}
    assert rows == {"cps invalid trials": ["3", "0"], "throughput invalid trials": ["-", "4"], "invalid trials": ["1"]}
    # the row sits in its metric's block, before the error and median rows
    lines = [ln.split("  ")[0].strip() for ln in text.splitlines()]
    assert lines.index("cps invalid trials") < lines.index("cps error") < lines.index("cps median")
    assert "'invalid trials': trials of all repetitions at the point that proved nothing" in " ".join(text.split())


def test_markdown_and_csv_carry_the_counts(tmp_path: Path) -> None:
    run = natbench.load(_run(tmp_path / "run"))
    perf, td = run.tables()
    md = perf.to_markdown()
    assert "| cps invalid trials | 3 | 0 |" in md and "| throughput invalid trials | - | 4 |" in md
    csv = pd.read_csv(io.StringIO(perf.to_csv()), comment="#", index_col=0)
    assert csv.loc["cps invalid trials"].tolist() == [3, 0]
    assert pd.isna(csv.loc["throughput invalid trials"].iloc[0]) and csv.loc["throughput invalid trials"].iloc[1] == 4
    assert td.cells.loc["invalid trials"].tolist() == ["1"]
    assert "| invalid trials | 1 |" in td.to_markdown()
    # the summary gives the numbers to a notebook too
    s = run.summary.reset_index().astype({"point_id": str, "metric": str}).set_index(["point_id", "metric"])
    assert s.loc[(A.id, "cps"), "invalid_trials"] == 3 and s.loc[(B.id, "throughput"), "invalid_trials"] == 4


def test_no_row_when_the_run_stored_no_trials(tmp_path: Path) -> None:
    with RunStore.create(tmp_path / "r", campaign_text="", points=[A], campaign_name="r") as store:
        store.append_result(RepetitionResult(A.id, "cps", 0, 1000.0, "cps", 100.0))
        store.set_status("complete")
    rows = natbench.load(tmp_path / "r").seed_table().cells.index
    assert "cps invalid trials" not in rows and "cps median" in rows


def test_an_engine_run_shows_the_invalid_trials_it_stored(tmp_path: Path) -> None:
    """A fake tester that falls behind every 4th call: the cps row shows, per point, the number of trials the
    run stored with verdict "invalid" (counted here from trials.jsonl)."""
    dut = FakeDut(FakeModel(invalid_every=4, seed=2))
    settings = {"cps": CpsSettings(repetitions=2, upper=1_000_000, error=1000).resolved(0.0, Directions.BIDIRECTIONAL)}
    spec = RunSpec("inv", engine_fakes.make_points(), engine_fakes.plan_for, settings, "name: inv\n")
    run = start_run(spec, tmp_path / "run", FakeTester(dut), dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None)
    assert run.status == "complete"
    records = [json.loads(ln) for ln in (tmp_path / "run" / "trials.jsonl").read_text().splitlines()]
    ids = [p.id for p in engine_fakes.make_points()]
    counted = [
        sum(r["type"] == "trial" and r["point_id"] == p and r["verdict"] == "invalid" for r in records) for p in ids
    ]
    assert sum(counted) > 0
    cells = natbench.load(tmp_path / "run").seed_table().cells.loc["cps invalid trials"].tolist()
    assert cells == [str(n) for n in counted]


def test_the_summary_gains_exactly_one_float_column_of_counts(tmp_path: Path) -> None:
    """with_invalid_trials adds the one column ``invalid_trials`` (float64: a count, or NaN where no trial of the
    metric was stored at the point) to a copy of the summary, keeping its other columns and leaving it untouched."""
    run = natbench.load(_run(tmp_path / "run"))
    summary = aggregate.summarize(run.results)
    before = summary.copy()
    out = aggregate.with_invalid_trials(summary, run.trials)
    assert list(out.columns) == [*summary.columns, "invalid_trials"]
    assert out["invalid_trials"].dtype == "float64"
    counts = {(str(p), str(m)): n for (p, m), n in out["invalid_trials"].items()}
    assert {k: n for k, n in counts.items() if not pd.isna(n)} == {
        (str(A.id), "cps"): 3.0,
        (str(B.id), "cps"): 0.0,
        (str(B.id), "throughput"): 4.0,
        (str(A.id), "teardown"): 1.0,
    }
    assert pd.isna(counts[(str(A.id), "throughput")])
    pd.testing.assert_frame_equal(summary, before)
    # no trials stored at all: every count unknown, still one float64 column
    none = aggregate.with_invalid_trials(summary, run.trials.iloc[0:0])
    assert list(none.columns) == [*summary.columns, "invalid_trials"] and none["invalid_trials"].dtype == "float64"
    assert none["invalid_trials"].isna().all()
    # an empty summary: the column is there, empty and float64
    empty = aggregate.with_invalid_trials(summary.iloc[0:0], run.trials)
    assert list(empty.columns) == [*summary.columns, "invalid_trials"] and empty["invalid_trials"].dtype == "float64"
    assert len(empty) == 0
