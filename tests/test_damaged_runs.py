"""The known-answer table of damaged run directories (tests/data/damaged-runs/cases.yaml).

Every case damages a copy of the base run directory (tests/damaged_runs.py) and checks what each reader of run
directories makes of it, through public behaviour only, so the table holds for any store behind it:

* the lenient reader (reports, ``natbench.load``) and the strict one (resume, Parquet) name exactly the case's
  ``damage`` lines and ``notes`` lines, and the repetitions the damage touched (``tainted``);
* ``natbench report`` exits 2 with every damage line on stderr, or 0 when there is none;
* a resume without ``--repair`` refuses a damaged run and changes nothing; the resume that goes on (with
  ``--repair`` when damaged) measures again exactly the ``remeasure`` repetitions among those that had records,
  keeps every other stored record as it was, and ends complete with one result per planned repetition;
* ``resume_error``: a resume that must refuse whatever the damage (another campaign).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import damaged_runs
import pytest

from natbench.cli import main
from natbench.errors import StoreError
from natbench.run.reader import RunDirectory, read_run
from natbench.run.runner import resume_run

CASES = damaged_runs.load_cases()

Key = tuple[str, str, int]


def _ids() -> list[str]:
    return [p["id"] for p in json.loads((damaged_runs.BASE / "points.json").read_text())]


def _keys(rows: list[list[Any]]) -> list[Key]:
    """Table rows ``[point index, metric, repetition]`` as (point id, metric, repetition), sorted."""
    ids = _ids()
    return sorted((ids[int(i)], str(m), int(r)) for i, m, r in rows)


def _records(run: Path) -> list[dict[str, Any]]:
    """The parseable records of trials.jsonl (damaged lines skipped)."""
    out = []
    path = run / "trials.jsonl"
    for raw in path.read_bytes().splitlines() if path.is_file() and not path.is_symlink() else []:  # nor /proc
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and "point_id" in obj:
            out.append(obj)
    return out


def _key(rec: dict[str, Any]) -> Key:
    return (rec["point_id"], rec["metric"], rec["repetition"])


def _snapshot(run: Path) -> dict[str, bytes]:
    """Every entry's bytes (a symlink's: where it leads, never read: it may lead into /proc)."""
    return {
        p.name: os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
        for p in sorted(run.iterdir())
        if p.is_symlink() or p.is_file()
    }


def _report(run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``natbench report RUN --format text --out -`` as the entry point runs it: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["natbench", "report", str(run), "--format", "text", "--out", "-"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main()
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


def _resume(run: Path, *, repair: bool, points: Any = None) -> RunDirectory:
    tester, dut = damaged_runs.make_testbed()
    spec = damaged_runs.make_spec(points)
    clock = damaged_runs.Clock(damaged_runs.RESUME_CLOCK)
    return resume_run(spec, run, tester, dut, clock=clock, sleep=lambda s: None, repair=repair)


def test_the_base_is_one_complete_intact_run() -> None:
    plain = read_run(damaged_runs.BASE)
    assert plain.meta.status == "complete"
    assert plain.damage == [] and plain.warnings == []
    planned = {(p.id, m, r) for p in damaged_runs.make_points() for m in ("cps", "teardown") for r in range(2)}
    assert sorted((r.point_id, r.metric, r.repetition) for r in plain.results) == sorted(planned)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_readers_name_exactly_the_damage_of_the_case(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.get("pending"):
        pytest.xfail(case["pending"])
    run = damaged_runs.damaged_copy(case, tmp_path)
    expect = case["expect"]
    if "error" in expect:  # the run directory cannot be read at all: one error naming the file
        error = damaged_runs.expand([expect["error"]], run)[0]
        for read in (read_run, lambda path: RunDirectory.open(path).scan()):  # open alone reads lazily
            with pytest.raises(StoreError) as err:
                read(run)
            assert str(err.value) == error
        rc, out, err_text = _report(run, capsys, monkeypatch)
        assert (rc, out, err_text.splitlines()) == (2, "", [f"natbench: error: {error}"])
        return
    damage = damaged_runs.expand(expect.get("damage", []), run)
    notes = damaged_runs.expand(expect.get("notes", []), run)
    plain = read_run(run)
    assert plain.damage == damage
    assert plain.warnings == notes
    assert plain.damaged_repetitions == _keys(expect.get("tainted", []))
    strict = RunDirectory.open(run).scan()
    assert strict.damage == damage and strict.notes == notes
    rc, out, err = _report(run, capsys, monkeypatch)
    if damage:
        assert rc == 2 and out == ""
        assert all(f"natbench: damaged: {line}" in err.splitlines() for line in damage), err
    else:
        assert rc == 0, err


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_resume_measures_again_exactly_what_the_case_says(case: dict[str, Any], tmp_path: Path) -> None:
    if case.get("pending"):
        pytest.xfail(case["pending"])
    run = damaged_runs.damaged_copy(case, tmp_path)
    expect = case["expect"]
    before = _snapshot(run)
    stored = _records(run)
    if "error" in expect:  # nothing to resume from: refused, with or without --repair, and nothing changed
        for repair in (False, True):
            with pytest.raises(StoreError):
                _resume(run, repair=repair)
            assert _snapshot(run) == before
        return
    if "resume_error" in expect:
        other = damaged_runs.make_points(**case.get("resume_with", {}))
        for repair in (False, True):
            with pytest.raises(StoreError, match=expect["resume_error"]):
                _resume(run, repair=repair, points=other)
            assert _snapshot(run) == before
        return
    if expect.get("damage"):
        with pytest.raises(StoreError) as refused:
            _resume(run, repair=False)
        for line in damaged_runs.expand(expect["damage"], run):
            assert line in str(refused.value)
        assert _snapshot(run) == before  # nothing moved, rewritten or appended
    done = _resume(run, repair=bool(expect.get("damage")))
    assert done.status == "complete"
    assert done.scan().damage == [] and done.scan().notes == []
    planned = {(p.id, m, r) for p in damaged_runs.make_points() for m in ("cps", "teardown") for r in range(2)}
    results = [(r.point_id, r.metric, r.repetition) for r in done.results()]
    assert sorted(results) == sorted(planned)  # every planned repetition once
    new = {(t.point_id, t.metric, t.repetition) for t in done.trials() if t.started_at > damaged_runs.RESUME_CLOCK}
    had = {_key(r) for r in stored}
    assert sorted(new & had) == _keys(expect.get("remeasure", []))
    assert new >= planned - had  # repetitions with no stored record were measured
    # a repetition measured again keeps none of its earlier trials in trials.jsonl (they went aside, kept there)
    old_trials = [r for r in _records(run) if r["type"] == "trial" and r["started_at"] < damaged_runs.RESUME_CLOCK]
    assert [_key(t) for t in old_trials if _key(t) in new] == []
    # every record of a repetition not measured again is kept as it was stored
    kept = [r for r in _records(run) if _key(r) not in new]
    originals = {json.dumps({k: v for k, v in r.items() if k not in ("seq", "crc32")}, sort_keys=True) for r in stored}
    for rec in kept:
        assert json.dumps({k: v for k, v in rec.items() if k not in ("seq", "crc32")}, sort_keys=True) in originals


def test_every_case_damages_the_base_differently_and_names_why(tmp_path: Path) -> None:
    """The table's own consistency: unique names, a reason per case, and no case that leaves the base as it was."""
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    base = _snapshot(damaged_runs.BASE)
    for case in CASES:
        assert case.get("why"), case["name"]
        if "resume_error" in case["expect"]:
            continue
        run = damaged_runs.damaged_copy(case, tmp_path / case["name"])
        assert _snapshot(run) != base, case["name"]
        shutil.rmtree(tmp_path / case["name"])
