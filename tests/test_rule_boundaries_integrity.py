"""The run directory's integrity checks at their boundaries (natbench.run.records, natbench.run.reader,
natbench.run.repair; docs/engine.md "Run-directory integrity"), each condition of a rule false alone:

* a line from before sequence numbers carries neither ``seq`` nor ``crc32``: a line with a number but no checksum
  is damage, also in a run directory from before sequence numbers;
* a complete campaign run holds a record of every point of points.json: a point without one is damage only when
  the run is complete, only when the file is otherwise intact, only for a campaign's run (not an experiment
  session), and only for the points that have none;
* run.json's point keys name points of points.json: a key renamed (as many keys as points) is refused too;
* campaign.yaml as a link to nowhere is named as unreadable, not read as no campaign.

Run directories written through the run-directory writer (natbench.testing.rundir) and read by
:func:`natbench.run.reader.read_run`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from natbench.errors import StoreError
from natbench.run.format import CAMPAIGN, RUN, TRIALS, PointRecord, RunStatus
from natbench.run.reader import half_created, read_run
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

CAMPAIGN_TEXT = "name: synthetic\nmetrics:\n  cps:\n    repetitions: 1\n"
"""A campaign planning one cps repetition per point."""

P = make_point(0, (1, 100), (1, 10))
Q = make_point(1, (1, 200), (1, 10))


def repetition(pid: str, rep: int = 0) -> list[Any]:
    """One cps repetition: a trial and its result."""
    return [
        trial_record(pid, "cps", rep, 0, rate=1000.0),
        result_record(pid, "cps", rep, 1000.0, "cps", error=10.0),
    ]


def lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / TRIALS).read_text("utf-8").splitlines()]


def set_lines(run: Path, objs: list[dict[str, Any]]) -> None:
    (run / TRIALS).write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objs), "utf-8")


# --- a line from before sequence numbers has neither seq nor crc32 ------------------------------------------------


def test_a_numbered_line_without_its_checksum_is_damage_in_a_run_from_before_sequence_numbers(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run", [P], repetition(P.id), campaign_text=CAMPAIGN_TEXT, legacy=True)
    assert read_run(run).damage == []  # neither seq nor crc32: lines from before sequence numbers
    objs = lines(run)
    set_lines(run, [{**objs[0], "seq": 1}, objs[1]])  # a number, but no checksum: not such a line
    data = read_run(run)
    assert len(data.damage) == 1
    assert data.damage[0].startswith(f"{run / TRIALS}:1: crc32: checksum mismatch (stored None")
    assert len(data.trials) == 0 and len(data.results) == 1


# --- a complete campaign run holds a record of every point ----------------------------------------------------------


def unmeasured(run: Path, point: PointRecord) -> str:
    """The damage line of a point of points.json without a single record in a complete run."""
    return (
        f"{run}/points.json: point {point.id}: not one record in a run whose status is 'complete' (every planned"
        " repetition has its result): a working point added after the run, or its records removed"
    )


def half_measured(tmp_path: Path, campaign_text: str = CAMPAIGN_TEXT, status: RunStatus = "complete") -> Path:
    """A run whose points.json holds P and Q, with records of P's repetition only."""
    return write_run_dir(tmp_path / "run", [P, Q], repetition(P.id), campaign_text=campaign_text, status=status)


def test_only_the_points_without_a_record_are_named(tmp_path: Path) -> None:
    run = half_measured(tmp_path)
    assert read_run(run).damage == [unmeasured(run, Q)]
    both = write_run_dir(tmp_path / "both", [P, Q], [*repetition(P.id), *repetition(Q.id)], campaign_text=CAMPAIGN_TEXT)
    assert read_run(both).damage == []


def test_a_point_without_a_record_is_no_damage_while_the_run_is_not_complete(tmp_path: Path) -> None:
    statuses: tuple[RunStatus, ...] = ("running", "failed")
    for status in statuses:
        run = half_measured(tmp_path / status, status=status)
        assert read_run(run).damage == []


def test_a_damaged_complete_file_names_its_damage_not_the_points_without_a_record(tmp_path: Path) -> None:
    """The every-point rule holds an otherwise intact file to it: where the counts already disagree with the file,
    that disagreement is the damage named (a point's records removed with their lines shows as it)."""
    run = half_measured(tmp_path)
    meta = json.loads((run / RUN).read_text("utf-8"))
    meta["records"]["trial"] += 1
    (run / RUN).write_text(json.dumps(meta), "utf-8")
    assert read_run(run).damage == [
        f"{run / TRIALS}: run.json counts 2 trial and 1 result records; the file (with 0 moved aside) holds 1 and 1"
    ]


def test_an_experiment_session_is_not_held_to_every_point(tmp_path: Path) -> None:
    """A session registers a point as it measures it: one whose measurement stopped before its first record is no
    damage in a complete session."""
    run = half_measured(tmp_path, campaign_text="kind: natbench-experiment\nname: session\n")
    data = read_run(run)
    assert data.campaign.experiment_session
    assert data.damage == []


def test_a_scan_without_a_plan_checks_no_points(tmp_path: Path) -> None:
    from natbench.run.records import scan

    run = half_measured(tmp_path)
    counts = json.loads((run / RUN).read_text("utf-8"))["records"]
    found = scan(run / TRIALS, counts, status="complete")
    assert found.damage == [] and len(found.records) == 2


# --- run.json's point keys are points of points.json ------------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [("point_facts", {"dut": {}}), ("point_testbeds", ["tb1"])])
def test_a_renamed_point_key_is_refused_though_no_key_is_extra(tmp_path: Path, field: str, value: Any) -> None:
    """One key per point, as a run sets them up: each naming a point reads; one renamed (as many keys as before,
    no more keys than points) is refused as an extra one is."""
    run = write_run_dir(tmp_path / "run", [P, Q], [*repetition(P.id), *repetition(Q.id)], campaign_text=CAMPAIGN_TEXT)
    meta = json.loads((run / RUN).read_text("utf-8"))
    (run / RUN).write_text(json.dumps({**meta, field: {P.id: value, Q.id: value}}), "utf-8")
    assert read_run(run).damage == []
    (run / RUN).write_text(json.dumps({**meta, field: {P.id: value, "0123456789ab": value}}), "utf-8")
    with pytest.raises(StoreError, match=rf"run\.json: {field}: '0123456789ab' is no working point of points\.json"):
        read_run(run)


def test_one_extra_point_key_is_named_alone_and_more_are_counted(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run", [P], repetition(P.id), campaign_text=CAMPAIGN_TEXT)
    meta = json.loads((run / RUN).read_text("utf-8"))
    tail = ": one of the two files was changed after the run"
    (run / RUN).write_text(json.dumps({**meta, "point_facts": {P.id: {}, "aaaaaaaaaaaa": {}}}), "utf-8")
    with pytest.raises(StoreError) as err:
        read_run(run)
    assert str(err.value) == f"{run / RUN}: point_facts: 'aaaaaaaaaaaa' is no working point of points.json{tail}"
    extra = {"aaaaaaaaaaaa": {}, "bbbbbbbbbbbb": {}}
    (run / RUN).write_text(json.dumps({**meta, "point_facts": {P.id: {}, **extra}}), "utf-8")
    with pytest.raises(StoreError) as err:
        read_run(run)
    assert str(err.value) == (
        f"{run / RUN}: point_facts: 'aaaaaaaaaaaa' is no working point of points.json (and 1 more){tail}"
    )


# --- a directory whose creation stopped before run.json ------------------------------------------------------------


def test_a_directory_holding_every_file_creation_writes_before_run_json_is_half_created(tmp_path: Path) -> None:
    every = [CAMPAIGN, "points.json", TRIALS, *(f".{n}.tmp" for n in (CAMPAIGN, "points.json", TRIALS, RUN))]
    for name in every:
        (tmp_path / name).write_text("")
    assert half_created(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")  # a file creation does not write: not natbench's to take over
    assert not half_created(tmp_path)


# --- campaign.yaml ------------------------------------------------------------------------------------------------


def test_a_campaign_file_linked_to_nowhere_is_named_not_read_as_no_campaign(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run", [P], repetition(P.id), campaign_text=CAMPAIGN_TEXT)
    (run / CAMPAIGN).unlink()
    assert read_run(run).damage == []  # no campaign.yaml at all: a run that states no plan
    (run / CAMPAIGN).symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(StoreError, match=rf"^{re.escape(str(run / CAMPAIGN))}: missing"):
        read_run(run)


# --- a repair of a complete run ---------------------------------------------------------------------------------


def test_a_repair_stopped_before_its_rename_leaves_a_complete_run_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repair drops the results of the repetitions it measures again: from its commit point on the run is no
    longer complete, so a reader before the resume's own status does not take the point whose only repetition was
    dropped for damage."""
    import natbench.run.repair as repair

    run = write_run_dir(tmp_path / "run", [P, Q], [*repetition(P.id), *repetition(Q.id)], campaign_text=CAMPAIGN_TEXT)
    objs = lines(run)
    objs[2]["intended_rate"] = 999.0  # Q's trial changed after writing: Q's repetition is measured again
    set_lines(run, objs)
    assert len(read_run(run).damage) == 1

    def killed(p: Path, meta: Any) -> Any:  # the process dies after run.json named the repaired file
        raise KeyboardInterrupt

    monkeypatch.setattr(repair, "finish_repair", killed)
    with pytest.raises(KeyboardInterrupt):
        repair.resume_store(run, repair=True)
    assert json.loads((run / RUN).read_text("utf-8"))["status"] == "running"
    data = read_run(run)
    assert data.damage == []
    assert [r.point_id for r in data.results] == [P.id]


# --- records a resume moved aside -------------------------------------------------------------------------------


def test_among_the_records_a_resume_moved_aside_a_trial_is_a_leftover_a_result_is_damage(tmp_path: Path) -> None:
    """run.json counts seq ranges a resume moved to trials.abandoned.jsonl (as trials: a resume moves only trials);
    a trial still in the file there is a leftover of a resume that stopped before rewriting it (a note), a result
    there is no such leftover (damage)."""
    run = write_run_dir(tmp_path / "run", [P], repetition(P.id), campaign_text=CAMPAIGN_TEXT, status="running")
    meta = json.loads((run / RUN).read_text("utf-8"))
    (run / RUN).write_text(json.dumps({**meta, "records": {**meta["records"], "moved": [[1, 1]]}}), "utf-8")
    data = read_run(run)
    assert data.damage == []
    assert data.warnings == [f"{run / TRIALS}:1: trial moved aside by a resume that stopped before rewriting the file"]
    assert len(data.trials) == 0 and len(data.results) == 1
    counts = {**meta["records"], "moved": [[2, 2]], "trial": 2, "result": 0}  # counts that hold seq 2 as moved
    (run / RUN).write_text(json.dumps({**meta, "records": counts}), "utf-8")
    assert read_run(run).damage == [f"{run / TRIALS}:2: seq 2: a result among the records a resume moved aside"]
