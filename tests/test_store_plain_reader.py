"""The lenient plain reader of run directories, a session's rewritten points.json, and the latest link."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from natbench.run.reader import read_run
from natbench.run.repair import resume_store
from natbench.run.writer import RunStore, link_latest
from natbench.testing.rundir import legacy_line, result_record, trial_record
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

POINTS = [WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")]
A_TRIAL = trial_record(POINTS[0].id, "cps", 0, 0, rate=1000.0)
A_RESULT = result_record(POINTS[0].id, "cps", 0, 1000.0, "cps")
TRIAL = legacy_line(A_TRIAL)
RESULT = legacy_line(A_RESULT)


def new_run(tmp_path: Path) -> Path:
    """A run directory as written before record counts (its lines carry no "seq"), to hold hand-made lines."""
    RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=POINTS, campaign_file="t.yaml").close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    del meta["records"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return tmp_path / "run"


def write_records(run: Path, *lines: str) -> Path:
    (run / "trials.jsonl").write_text("".join(lines), encoding="utf-8")
    return run / "trials.jsonl"


def test_a_blank_line_between_records_is_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    run = new_run(tmp_path)
    write_records(run, json.dumps(TRIAL) + "\n", "\n", "  \n", json.dumps(RESULT) + "\n")
    plain = read_run(run)
    assert (plain.trials, plain.results, plain.warnings, plain.damage) == ([A_TRIAL], [A_RESULT], [], [])


def test_a_torn_last_line_is_skipped_with_a_warning_naming_its_line(tmp_path: Path) -> None:
    run = new_run(tmp_path)
    path = write_records(run, json.dumps(TRIAL) + "\n", json.dumps(RESULT) + "\n", '{"type": "tr')
    plain = read_run(run)
    assert (plain.trials, plain.results) == ([A_TRIAL], [A_RESULT])
    # the torn record is the third line of the file (lines count from 1)
    assert plain.warnings == [f"{path}:3: torn last line skipped (run interrupted while writing)"]


def test_a_line_that_is_json_but_no_object_is_refused_with_its_position(tmp_path: Path) -> None:
    run = new_run(tmp_path)
    write_records(run, json.dumps(TRIAL) + "\n", "[1, 2]\n", json.dumps(RESULT) + "\n")
    plain = read_run(run)
    assert plain.damage == [f"{run / 'trials.jsonl'}:2: type: expected 'trial' or 'result', got None"]
    assert (plain.trials, plain.results) == ([A_TRIAL], [A_RESULT])  # the intact records, for --allow-damaged


def test_the_plain_reader_reads_utf_8_whatever_the_platforms_default_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = new_run(tmp_path)
    (run / "campaign.yaml").write_bytes("name: café\n".encode())
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (run / "run.json").write_bytes(json.dumps({**meta, "campaign_name": "café"}, ensure_ascii=False).encode())
    # a platform whose default text encoding is Latin-1 (as on a non-UTF-8 locale): "é" in UTF-8 would read as "Ã©"
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "latin-1")
    plain = read_run(run)
    monkeypatch.setattr(io, "text_encoding", real)
    assert plain.campaign_text == "name: café\n"
    assert plain.meta.campaign_name == "café"


def test_a_rewritten_session_lays_out_points_json_as_a_new_run_does(tmp_path: Path) -> None:
    run = new_run(tmp_path)
    created = (run / "points.json").read_text(encoding="utf-8")
    assert created.startswith('[\n  {\n    "id": ')  # two-space indent at creation
    with resume_store(run) as store:
        store.rewrite_session("kind: natbench-experiment\n", POINTS)
    assert (run / "points.json").read_text(encoding="utf-8") == created


def test_latest_is_left_alone_when_the_temporary_link_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / f".latest.{os.getpid()}").write_text("")  # a file in the way of the temporary link: best effort
    link_latest(tmp_path / "first")
    assert not (tmp_path / "latest").exists()
