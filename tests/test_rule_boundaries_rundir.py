"""The run directory's plan of repetitions at its boundaries (natbench.run.reader.record_plan,
natbench.run.format.lines.RecordPlan, natbench.run.records; docs/engine.md "Run-directory integrity"):

* a record of the repetition one beyond the plan is damage, the plan's last repetition is not;
* a damaged line of a repetition the run never planned marks nothing for measuring again (a repair could not
  measure it), a damaged line of a planned one does;
* a point that sets its own repetitions plans that many (more or fewer than the campaign's).

Run directories written through the run-directory writer (natbench.testing.rundir) and read by
:func:`natbench.run.reader.read_run`."""

from __future__ import annotations

import json
from pathlib import Path

from natbench.run.format import TRIALS, PointRecord
from natbench.run.reader import read_run
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

CAMPAIGN = "name: synthetic\nmetrics:\n  cps:\n    repetitions: 2\n"
"""A campaign planning two cps repetitions per point."""


def repetition(pid: str, rep: int) -> list:
    """One cps repetition: a trial and its result."""
    return [
        trial_record(pid, "cps", rep, 0, rate=1000.0),
        result_record(pid, "cps", rep, 1000.0, "cps", error=10.0),
    ]


def written(tmp_path: Path, points: list[PointRecord], reps: dict[str, list[int]]) -> Path:
    records = [r for p in points for rep in reps.get(p.id, []) for r in repetition(p.id, rep)]
    return write_run_dir(tmp_path / "run", points, records, campaign_text=CAMPAIGN)


def tamper(run: Path, line: int) -> None:
    """Change line ``line`` (from 1) of trials.jsonl after it was written: its checksum no longer matches."""
    path = run / TRIALS
    lines = path.read_text("utf-8").splitlines()
    obj = json.loads(lines[line - 1])
    obj["intended_rate"] = 999.0
    lines[line - 1] = json.dumps(obj, separators=(",", ":"), sort_keys=True)
    path.write_text("\n".join(lines) + "\n", "utf-8")


def test_the_plans_last_repetition_is_no_damage(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    data = read_run(written(tmp_path, [p], {p.id: [0, 1]}))
    assert data.damage == [] and len(data.results) == 2


def test_a_record_one_repetition_beyond_the_plan_is_damage(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    data = read_run(written(tmp_path, [p], {p.id: [0, 1, 2]}))
    trials = tmp_path / "run" / TRIALS
    beyond = "repetition: 2 beyond the 2 repetitions the campaign plans for cps (repetitions count from 0)"
    assert data.damage == [f"{trials}:5: {beyond}", f"{trials}:6: {beyond}"]
    assert [r.repetition for r in data.results] == [0, 1]


def test_a_damaged_line_of_an_unplanned_repetition_marks_nothing_for_measuring_again(tmp_path: Path) -> None:
    # repetition 2 is beyond the plan: its lines are damage, but no repair could measure it again; the repetitions
    # before it end with their results (a result ends its repetition), so nothing else is in doubt
    p = make_point(0, (1, 100), (1, 10))
    run = written(tmp_path, [p], {p.id: [0, 1, 2]})
    data = read_run(run)
    assert len(data.damage) == 2
    assert data.damaged_repetitions == []
    tamper(run, 5)  # a checksum mismatch on repetition 2's trial: still nothing a repair could measure
    data = read_run(run)
    assert "checksum mismatch" in data.damage[0] and len(data.damage) == 2
    assert data.damaged_repetitions == []


def test_a_damaged_line_of_a_planned_repetition_marks_it_for_measuring_again(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    run = written(tmp_path, [p], {p.id: [0, 1]})
    tamper(run, 3)  # repetition 1's trial
    data = read_run(run)
    assert len(data.damage) == 1 and "checksum mismatch" in data.damage[0]
    assert data.damaged_repetitions == [(p.id, "cps", 1)]


def test_a_point_that_plans_more_repetitions_than_the_campaign_reads_intact(tmp_path: Path) -> None:
    more = make_point(0, (1, 100), (1, 10), metric_settings={"cps": {"repetitions": 3}})
    data = read_run(written(tmp_path, [more], {more.id: [0, 1, 2]}))
    assert data.damage == [] and [r.repetition for r in data.results] == [0, 1, 2]


def test_a_point_that_plans_fewer_repetitions_than_the_campaign_has_the_rest_as_damage(tmp_path: Path) -> None:
    fewer = make_point(0, (1, 100), (1, 10), metric_settings={"cps": {"repetitions": 1}})
    plain = make_point(1, (1, 200), (1, 10))
    data = read_run(written(tmp_path, [fewer, plain], {fewer.id: [0, 1], plain.id: [0, 1]}))
    trials = tmp_path / "run" / TRIALS
    beyond = "repetition: 1 beyond the 1 repetitions the campaign plans for cps (repetitions count from 0)"
    assert data.damage == [f"{trials}:3: {beyond}", f"{trials}:4: {beyond}"]
    assert sorted((r.point_id, r.repetition) for r in data.results) == sorted(
        [(fewer.id, 0), (plain.id, 0), (plain.id, 1)]
    )
