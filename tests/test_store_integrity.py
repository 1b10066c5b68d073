"""Damaged run directories: `natbench report` and `--resume` name every gap, duplicate, torn or altered record.

Each case starts from a copy of one complete fake run (tests/engine_fakes.py: 385 records, numbered 1..385),
damages it the way the reliability review did (issue 18), and checks both readers:

* ``natbench report RUN --out -`` (a child process, as a user runs it): exit 2 and the ``file:line`` on stderr,
  or exit 0 with the intact records after ``--allow-damaged``;
* ``--resume``: the CLI stops with exit 2 and the list of damage before anything is built or measured (files
  byte for byte unchanged), and so does the library resume with the fakes (the fake DUT is never set up);
  ``--repair`` keeps a copy, measures the touched repetitions again and ends with every planned result.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine_fakes
import pytest

from natbench.errors import StoreError
from natbench.results import RepetitionResult
from natbench.run.format import RecordCounts, RunMeta
from natbench.run.reader import RunDirectory, read_run
from natbench.run.repair import resume_store
from natbench.run.runner import default_run_dir, resume_run, start_run
from natbench.run.writer import RunStore

RECORDS = 385  # records of the complete engine_fakes run: 361 trials (each cps step validated) and 24 results


@pytest.fixture(scope="module")
def complete(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One complete fake run; tests damage copies of it."""
    tester, dut = engine_fakes.make_testbed()
    path = tmp_path_factory.mktemp("complete") / "run"
    run = start_run(engine_fakes.make_spec(), path, tester, dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None)
    assert run.status == "complete"
    assert len(lines_of(path)) == RECORDS, "the fake run's record count changed: every expected line below moves"
    return path


@pytest.fixture
def run(complete: Path, tmp_path: Path) -> Path:
    """A fresh copy of the complete run."""
    return Path(shutil.copytree(complete, tmp_path / "run"))


def lines_of(run: Path) -> list[bytes]:
    return (run / "trials.jsonl").read_bytes().splitlines(keepends=True)


def write_lines(run: Path, lines: list[bytes]) -> None:
    (run / "trials.jsonl").write_bytes(b"".join(lines))


def natbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "natbench", *args], capture_output=True, text=True, check=False, timeout=120
    )


def report(run: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return natbench("report", str(run), "--format", "text", "--out", "-", *extra)


def snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def result_lines(run: Path) -> list[int]:
    """1-based numbers of the result lines."""
    return [i for i, ln in enumerate(lines_of(run), 1) if b'"type":"result"' in ln]


def assert_resume_refused(run: Path, expected: str) -> None:
    """`natbench run --resume` and the library resume both stop on the damage and change nothing."""
    before = snapshot(run)
    cli = natbench("run", "--resume", str(run))
    assert cli.returncode == 2, cli.stderr
    assert expected in cli.stderr
    assert "--repair" in cli.stderr  # says how to accept the damage
    assert "Traceback" not in cli.stderr
    tester, dut = engine_fakes.make_testbed()
    with pytest.raises(StoreError) as err:
        resume_run(engine_fakes.make_spec(), run, tester, dut, sleep=lambda s: None)
    assert expected in str(err.value)
    assert dut.events == []  # the DUT was never set up: nothing measured again
    assert snapshot(run) == before  # nothing moved, rewritten or appended


def assert_report_refused(run: Path, expected: str) -> None:
    """`natbench report --out -` exits 2 with the damage on stderr and prints no table."""
    got = report(run)
    assert got.returncode == 2, got.stderr
    assert f"natbench: damaged: {expected}" in got.stderr.splitlines()
    assert got.stdout == ""
    assert "Traceback" not in got.stderr


# ----------------------------------------------------------------------------- the damage cases of issue 18
def test_lines_missing_in_the_middle_are_named_as_a_gap_by_report_and_resume(run: Path) -> None:
    lines = lines_of(run)
    write_lines(run, lines[:99] + lines[102:])  # records 100, 101, 102 removed: line 100 now holds record 103
    expected = f"{run / 'trials.jsonl'}:100: seq 100-102 missing (run.json counts {RECORDS} records written)"
    assert_report_refused(run, expected)
    assert_resume_refused(run, expected)


def test_a_duplicated_result_line_is_named_by_report_and_resume(run: Path) -> None:
    lines = lines_of(run)
    first = result_lines(run)[0]
    seq = json.loads(lines[first - 1])["seq"]
    assert seq == first  # records are numbered from 1 in file order
    write_lines(run, [*lines[:first], lines[first - 1], *lines[first:]])  # the copy becomes line first + 1
    expected = f"{run / 'trials.jsonl'}:{first + 1}: duplicate of line {first} (seq {seq})"
    assert_report_refused(run, expected)
    assert_resume_refused(run, expected)


def test_a_deleted_trials_file_is_named_by_report_and_resume(run: Path) -> None:
    (run / "trials.jsonl").unlink()
    expected = f"{run / 'trials.jsonl'}: missing, but run.json counts {RECORDS} records written (deleted?)"
    assert_report_refused(run, expected)
    assert_resume_refused(run, expected)


def test_invalid_utf8_is_one_line_naming_file_line_and_byte(run: Path) -> None:
    lines = lines_of(run)
    line = lines[49]
    col = line.index(b'"metric":"') + len(b'"metric":"')  # 0-based offset of the metric name's first letter
    lines[49] = line[:col] + b"\xff" + line[col + 1 :]
    write_lines(run, lines)
    expected = f"{run / 'trials.jsonl'}:50: not UTF-8 text (byte 0xff at column {col + 1})"
    assert_report_refused(run, expected)
    assert_resume_refused(run, expected)


def test_a_changed_value_is_a_checksum_mismatch_named_by_report_and_resume(run: Path) -> None:
    lines = lines_of(run)
    n = result_lines(run)[1]
    rec = json.loads(lines[n - 1])
    stored = rec["crc32"]
    rec["value"] = rec["value"] * 2  # valid JSON, plausible number: only the checksum can tell
    lines[n - 1] = (json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n").encode()
    write_lines(run, lines)
    prefix = f"{run / 'trials.jsonl'}:{n}: crc32: checksum mismatch (stored '{stored}', computed '"
    got = report(run)
    assert got.returncode == 2
    assert any(ln.startswith(f"natbench: damaged: {prefix}") for ln in got.stderr.splitlines()), got.stderr
    before = snapshot(run)
    cli = natbench("run", "--resume", str(run))
    assert cli.returncode == 2 and prefix in cli.stderr
    assert snapshot(run) == before


def test_a_cut_off_last_record_is_damage_not_a_kill(run: Path) -> None:
    lines = lines_of(run)
    lines[-1] = lines[-1][:40]  # the last counted record cut short: a torn last line, but a record is gone
    write_lines(run, lines)
    where = run / "trials.jsonl"
    got = report(run)
    assert got.returncode == 2
    # the run ended complete, so nothing was being written: the torn line and the lost record are both named
    assert f"natbench: damaged: {where}:{RECORDS}: torn last line in a run whose status is 'complete'" in got.stderr
    assert f"natbench: damaged: {where}:{RECORDS}: seq {RECORDS} missing at the end" in got.stderr
    assert_resume_refused(run, f"{where}:{RECORDS}: seq {RECORDS} missing at the end")


def test_the_damage_warning_goes_to_stderr_even_with_out_dash_and_allow_damaged_reports_the_rest(
    run: Path,
) -> None:
    lines = lines_of(run)
    first = result_lines(run)[0]
    write_lines(run, [*lines[:first], lines[first - 1], *lines[first:]])
    clean = report(run.parent / "run", "--allow-damaged")
    assert clean.returncode == 0, clean.stderr
    assert f"natbench: damaged: {run / 'trials.jsonl'}:{first + 1}: duplicate of line {first}" in clean.stderr
    shutil.copy(run / "trials.jsonl", run.parent / "dup.jsonl")
    write_lines(run, lines)  # the intact file: the same tables (the duplicate was counted once)
    intact = report(run)
    assert intact.returncode == 0 and intact.stderr == ""
    assert clean.stdout == intact.stdout


# ----------------------------------------------------------------------------- the normal case: a kill -9
def kill_like(run: Path, keep: int) -> None:
    """The run directory as a kill -9 leaves it after ``keep`` counted records: status running, counts at ``keep``."""
    lines = lines_of(run)[:keep]
    write_lines(run, lines)
    meta = json.loads((run / "run.json").read_text())
    kinds = [json.loads(ln)["type"] for ln in lines]
    meta["records"] |= {"written": keep, "trial": kinds.count("trial"), "result": kinds.count("result")}
    meta["status"] = "running"
    (run / "run.json").write_text(json.dumps(meta))


def test_a_torn_last_line_after_a_kill_is_a_note_and_resume_finishes_every_repetition(
    run: Path, complete: Path
) -> None:
    kill_like(run, 200)
    with open(run / "trials.jsonl", "ab") as f:
        f.write(lines_of(complete)[200][:60])  # record 201 half written when the process died
    where = run / "trials.jsonl"
    got = report(run)
    assert got.returncode == 0, got.stderr
    assert f"natbench: warning: {where}:201: torn last line skipped (run interrupted while writing)" in got.stderr
    assert "damaged" not in got.stderr
    tester, dut = engine_fakes.make_testbed()
    done = resume_run(engine_fakes.make_spec(), run, tester, dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None)
    assert done.status == "complete"
    assert len(done.results()) == len(RunDirectory.open(complete).results())
    assert done.scan().damage == [] and done.scan().notes == []


def test_one_record_beyond_the_counts_is_a_kill_between_line_and_counts_not_damage(run: Path, complete: Path) -> None:
    kill_like(run, 120)
    with open(run / "trials.jsonl", "ab") as f:
        f.write(lines_of(complete)[120])  # record 121 on disk, the process died before run.json counted it
    plain = read_run(run)
    assert plain.damage == []
    assert plain.warnings == [
        f"{run / 'trials.jsonl'}:121: seq 121 not counted in run.json yet"
        " (written just before the run stopped, or the run is still being written)"
    ]
    with resume_store(run) as store:
        assert store.counts.written == 121  # counted now
    # two records beyond the counts cannot come from one kill: run.json is written after every record
    shutil.rmtree(run)
    shutil.copytree(complete, run)
    kill_like(run, 120)
    with open(run / "trials.jsonl", "ab") as f:
        f.write(b"".join(lines_of(complete)[120:122]))
    assert read_run(run).damage == [f"{run / 'trials.jsonl'}:122: seq 122 beyond the 120 records run.json counts"]


def test_a_record_beyond_the_counts_of_a_complete_run_is_damage_named_by_report_and_resume(run: Path) -> None:
    """The writer marks a run complete only after run.json counted its last record (and a resume sets it running
    before appending), so a well-formed record 387 after the 386 a complete run counts was added by something
    else: damage, not the note a kill leaves."""
    from natbench.run.format import encode

    lines = lines_of(run)
    intact = report(run)
    assert intact.returncode == 0, intact.stderr
    last_trial = next(json.loads(ln) for ln in reversed(lines) if b'"type":"trial"' in ln)
    data = {k: v for k, v in last_trial.items() if k not in ("type", "seq", "crc32")}
    extra = encode("trial", data, RECORDS + 1).encode()  # checksum and numbering as the store writes them
    write_lines(run, [*lines, extra])
    where = run / "trials.jsonl"
    expected = (
        f"{where}:{RECORDS + 1}: seq {RECORDS + 1} beyond the {RECORDS} records run.json counts in a run whose status"
        " is 'complete' (appended after the run ended: no writer leaves an uncounted record after that mark)"
    )
    assert read_run(run).damage == [expected]
    assert_report_refused(run, expected)
    allowed = report(run, "--allow-damaged")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout == intact.stdout  # the added record is left out
    assert_resume_refused(run, expected)


def test_a_reader_that_saw_complete_before_a_resume_appended_finds_no_damage(run: Path) -> None:
    """run.json read while it said complete, then a resume set it running and appended one record before the
    file was read: the reader reads run.json again and finds a writer at work (a note, not damage)."""
    from natbench.run.format import encode
    from natbench.run.reader import scan_run

    before = json.loads((run / "run.json").read_text())
    assert before["status"] == "complete"
    lines = lines_of(run)
    last_trial = next(json.loads(ln) for ln in reversed(lines) if b'"type":"trial"' in ln)
    data = {k: v for k, v in last_trial.items() if k not in ("type", "seq", "crc32")}
    write_lines(run, [*lines, encode("trial", data, RECORDS + 1).encode()])
    (run / "run.json").write_text(json.dumps(before | {"status": "running"}))  # the resume's mark, before its append
    found = scan_run(run, RunMeta.from_dict(before))
    assert found.damage == []
    assert found.notes == [
        f"{run / 'trials.jsonl'}:{RECORDS + 1}: seq {RECORDS + 1} not counted in run.json yet"
        " (written just before the run stopped, or the run is still being written)"
    ]


# ----------------------------------------------------------------------------- accepting the damage: --repair
def test_repair_keeps_a_copy_and_measures_the_touched_repetitions_again(run: Path, complete: Path) -> None:
    lines = lines_of(run)
    n = result_lines(run)[2]  # the third result: its repetition's result line is lost
    damaged = lines[: n - 1] + lines[n:]
    write_lines(run, damaged)
    lost = json.loads(lines[n - 1])
    key = (lost["point_id"], lost["metric"], lost["repetition"])
    found = RunDirectory.open(run).check_resume(repair=True)
    assert key in found.tainted
    tester, dut = engine_fakes.make_testbed()
    done = resume_run(
        engine_fakes.make_spec(), run, tester, dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None, repair=True
    )
    assert done.status == "complete"
    [backup] = run.glob("trials.damaged-*.jsonl")
    assert backup.read_bytes() == b"".join(damaged)  # the damaged file, byte for byte
    planned = {(r.point_id, r.metric, r.repetition) for r in RunDirectory.open(complete).results()}
    stored = [(r.point_id, r.metric, r.repetition) for r in done.results()]
    assert sorted(stored) == sorted(planned)  # every planned repetition once, none twice
    assert done.scan().damage == []
    assert list(done.meta.repairs[0].remeasured) == sorted(found.tainted)
    # only what the damage touched was measured again: the DUT was set up at that point only
    assert {e for e in dut.events if e.startswith("setup")} and len(done.meta.resumed_at) == 1


def test_resume_never_ends_complete_with_fewer_results_than_planned(run: Path) -> None:
    kill_like(run, 200)
    tester, dut = engine_fakes.make_testbed()
    real = RunStore.is_complete
    # a store that wrongly believes a repetition finished: the runner skips it, the final check must not
    RunStore.is_complete = lambda self, pid, metric, rep: metric == "pdv" or real(self, pid, metric, rep)  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreError, match=r"planned repetition\(s\) have no stored result .*pdv repetition 0"):
            resume_run(engine_fakes.make_spec(), run, tester, dut, sleep=lambda s: None)
    finally:
        RunStore.is_complete = real  # type: ignore[method-assign]
    assert RunDirectory.open(run).status == "failed"


# ----------------------------------------------------------------------------- a half-created directory
def test_a_half_created_directory_is_named_and_a_new_run_takes_it_over(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "campaign.yaml").write_text("name: engine-fakes\n")  # killed after campaign.yaml, before run.json
    (run / "points.json").write_text("[]\n")
    got = report(run)
    assert got.returncode == 2
    assert "half-created run directory" in got.stderr and f"natbench run CAMPAIGN -o {run}" in got.stderr
    cli = natbench("run", "--resume", str(run))
    assert cli.returncode == 2
    assert f"natbench: error: {run}: half-created run directory" in cli.stderr
    assert f"start the campaign again with `natbench run CAMPAIGN -o {run}`" in cli.stderr
    tester, dut = engine_fakes.make_testbed()
    done = start_run(engine_fakes.make_spec(), run, tester, dut, sleep=lambda s: None)
    assert done.status == "complete" and done.campaign_text == "name: engine-fakes\n"


def test_a_directory_with_records_but_no_run_json_is_not_taken_over(run: Path) -> None:
    (run / "run.json").unlink()  # records in it: not half-created, measurements must not be lost
    tester, dut = engine_fakes.make_testbed()
    with pytest.raises(StoreError, match="already holds a run"):
        start_run(engine_fakes.make_spec(), run, tester, dut, sleep=lambda s: None)


def test_the_default_run_directory_reuses_a_half_created_one(tmp_path: Path) -> None:
    class Campaign:
        output = tmp_path / "results" / "q"

    Campaign.output.mkdir(parents=True)
    (Campaign.output / "campaign.yaml").write_text("name: q\n")
    (Campaign.output / ".points.json.tmp").write_text("[")
    assert default_run_dir(Campaign()) == Campaign.output  # type: ignore[arg-type]
    (Campaign.output / "trials.jsonl").write_text('{"type":"trial"}\n')  # a record: not half-created
    assert default_run_dir(Campaign()) != Campaign.output  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- run directories from before counts
def legacy(run: Path) -> None:
    """The run as natbench wrote it before sequence numbers: no "seq"/"crc32" in lines, no counts in run.json."""
    out = []
    for ln in lines_of(run):
        rec = json.loads(ln)
        del rec["seq"], rec["crc32"]
        out.append((json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n").encode())
    write_lines(run, out)
    meta = json.loads((run / "run.json").read_text())
    del meta["records"]
    (run / "run.json").write_text(json.dumps(meta))


def test_an_old_run_directory_reads_and_its_duplicated_result_is_still_found(run: Path) -> None:
    legacy(run)
    got = report(run)
    assert got.returncode == 0 and got.stderr == ""
    lines = lines_of(run)
    first = result_lines(run)[0]
    write_lines(run, [*lines[:first], lines[first - 1], *lines[first:]])
    assert_report_refused(run, f"{run / 'trials.jsonl'}:{first + 1}: duplicate of line {first}")


def test_resuming_an_old_run_directory_counts_its_lines_as_legacy(run: Path) -> None:
    kill_like(run, 150)
    legacy(run)
    tester, dut = engine_fakes.make_testbed()
    done = resume_run(engine_fakes.make_spec(), run, tester, dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None)
    assert done.status == "complete"
    counts = done.meta.records
    assert isinstance(counts, RecordCounts)
    kept = [ln for ln in lines_of(run) if b'"seq"' not in ln]
    assert counts.legacy == len(kept) > 0  # the old lines of finished repetitions, before the numbered ones
    numbered = [json.loads(ln)["seq"] for ln in lines_of(run) if b'"seq"' in ln]
    assert numbered == list(range(1, counts.written + 1))
    assert all(isinstance(r, RepetitionResult) or r.metric for r in done.records())


# ----------------------------------------------------------------------------- bounds, leftovers, a live writer
def small_run(tmp_path: Path, records: int) -> Path:
    """A run directory of ``records`` trials of one repetition, written by the store (numbered 1..records)."""
    from natbench.results import TrialRecord, Verdict

    point = engine_fakes.make_points()[0]
    with RunStore.create(tmp_path / "small", campaign_text="name: s\n", points=[point]) as store:
        for step in range(records):
            store.append_trial(
                TrialRecord(point.id, "cps", 0, step, "phase1", 1.0, 1.0, {}, Verdict.PASS, "", 1.0, 2.0)
            )
    return tmp_path / "small"


def test_absurd_counts_in_run_json_are_one_damage_line_not_a_hang(tmp_path: Path) -> None:
    run = small_run(tmp_path, 3)
    meta = json.loads((run / "run.json").read_text())
    meta["records"]["written"] = 10**15  # beyond 2**40: enumerating the "missing" records would never end
    (run / "run.json").write_text(json.dumps(meta))
    damage = read_run(run).damage
    assert damage[0] == f"{run / 'run.json'}: records: written: expected a whole number from 0 to {2**40}, got {10**15}"
    meta["records"] |= {"written": 2**40, "moved": []}  # in range: one gap line for 2**40 - 3 records
    (run / "run.json").write_text(json.dumps(meta))
    assert read_run(run).damage == [
        f"{run / 'trials.jsonl'}:4: seq 4-{2**40} missing at the end (run.json counts {2**40} records written)"
    ]


def test_a_file_of_garbage_lists_200_problems_and_counts_the_rest(tmp_path: Path) -> None:
    run = small_run(tmp_path, 0)
    (run / "trials.jsonl").write_bytes(b"\x00garbage\n" * 1000)
    damage = read_run(run).damage
    assert len(damage) == 201  # 200 listed one by one (MAX_LISTED), then one line for the other 800
    assert damage[0] == f"{run / 'trials.jsonl'}:1: not a natbench record: Expecting value: line 1 column 1 (char 0)"
    assert damage[-1] == f"{run / 'trials.jsonl'}: ... and 800 more problem(s) of the kinds above"


def test_trials_a_resume_moved_aside_before_it_stopped_read_as_leftovers(tmp_path: Path) -> None:
    run = small_run(tmp_path, 4)
    meta = json.loads((run / "run.json").read_text())
    meta["records"]["moved"] = [[1, 4]]  # a resume wrote run.json, then died before rewriting trials.jsonl
    (run / "run.json").write_text(json.dumps(meta))
    plain = read_run(run)
    assert plain.damage == [] and plain.trials == []
    assert plain.warnings[0] == (
        f"{run / 'trials.jsonl'}:1: trial moved aside by a resume that stopped before rewriting the file"
    )
    resume_store(run).close()  # the next resume finishes the job: the file is rewritten without them
    assert (run / "trials.jsonl").read_text() == "" and read_run(run).warnings == []


def test_records_a_running_writer_added_after_run_json_was_read_are_no_damage(tmp_path: Path) -> None:
    from natbench.run.records import scan

    run = small_run(tmp_path, 5)
    counts = json.loads((run / "run.json").read_text())["records"] | {"written": 2, "trial": 2}
    # run.json read when it counted 2; the file read later holds 5; run.json read again counts 5
    assert scan(run / "trials.jsonl", counts, counted_after=5).damage == []
    assert scan(run / "trials.jsonl", counts).damage == [
        f"{run / 'trials.jsonl'}:4: seq 4 beyond the 2 records run.json counts",
        f"{run / 'trials.jsonl'}:5: seq 5 beyond the 2 records run.json counts",
    ]


def test_resume_repair_on_the_command_line_lists_the_damage_and_what_it_measures_again(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import natbench.cli.run as cli_run
    from natbench.cli import cli

    lines = lines_of(run)
    n = result_lines(run)[2]
    lost = json.loads(lines[n - 1])
    write_lines(run, lines[: n - 1] + lines[n:])  # the third result line deleted
    calls: list[dict[str, Any]] = []

    def fake_resume(path: Path, **kw: Any) -> None:  # the testbed of this campaign is fakes; stop before it
        calls.append({"path": path, **kw})
        raise StoreError("stopped by the test")

    monkeypatch.setattr(cli_run, "resume_campaign", fake_resume)
    got = CliRunner().invoke(cli, ["run", "--resume", str(run), "--repair", "--no-progress"])
    assert isinstance(got.exception, StoreError)  # the fake resume's error: the repair was handed on
    assert calls[0]["repair"] is True and calls[0]["path"] == run
    label = {p.id: p.label for p in RunDirectory.open(run).points}[lost["point_id"]]
    err = got.stderr.splitlines()
    assert (
        f"natbench: damaged: {run / 'trials.jsonl'}:{n}: seq {n} missing (run.json counts {RECORDS} records written)"
        in err
    )
    assert f"natbench: repair: re-measure {label} {lost['metric']} repetition {lost['repetition']}" in err


# ----------------------------------------------------------------------------- review of issue 18: compare, load
def drop_two_results(run: Path) -> tuple[list[str], set[tuple[str, str, int]]]:
    """Remove the first and the sixth result line; the damage lines report names and the repetitions touched.

    A lost record belongs to the repetition of the next intact record, and to the previous one when that is a trial
    (docs/engine.md): for a lost result, its own repetition (the trial before it) and the one after it."""
    lines = lines_of(run)
    results = result_lines(run)
    gone = [results[0], results[5]]  # 1-based line numbers (= seq: records are numbered in file order)
    touched = set()
    for n in gone:
        for rec in (json.loads(lines[n - 2]), json.loads(lines[n])):  # the trial before, the record after
            touched.add((rec["point_id"], rec["metric"], rec["repetition"]))
    write_lines(run, [ln for i, ln in enumerate(lines, 1) if i not in gone])
    where = run / "trials.jsonl"
    # the first gap is found on the line that held it (now the next record); the second one line earlier
    expected = [
        f"{where}:{gone[0]}: seq {gone[0]} missing (run.json counts {RECORDS} records written)",
        f"{where}:{gone[1] - 1}: seq {gone[1]} missing (run.json counts {RECORDS} records written)",
    ]
    return expected, touched


def test_compare_refuses_a_damaged_run_directory_as_report_does(run: Path, complete: Path) -> None:
    expected, touched = drop_two_results(run)
    assert report(run).returncode == 2
    got = natbench("compare", str(complete), str(run))
    assert got.returncode == 2, got.stderr
    err = got.stderr.splitlines()
    for line in expected:
        assert f"natbench: damaged: {line}" in err
    assert "nothing was compared" in got.stderr and "--allow-damaged" in got.stderr
    assert got.stdout == "" and "Traceback" not in got.stderr
    # either side: run A damaged too
    assert natbench("compare", str(run), str(complete)).returncode == 2
    allowed = natbench("compare", str(complete), str(run), "--allow-damaged")
    assert allowed.returncode == 0, allowed.stderr
    assert f"natbench: damaged: {expected[0]}" in allowed.stderr.splitlines()
    assert (
        f"natbench: damaged: run B {run}: {len(touched)} repetition(s) had damaged records;"
        " only their intact records are used" in allowed.stderr.splitlines()
    )
    assert "metric" in allowed.stdout  # the table of changes
    intact = natbench("compare", str(complete), str(complete))
    assert intact.returncode == 0 and intact.stderr == ""


def test_compare_notes_a_run_that_is_not_complete(run: Path, complete: Path) -> None:
    kill_like(run, 200)  # killed: status running
    got = natbench("compare", str(complete), str(run))
    assert got.returncode == 0, got.stderr
    assert "natbench: note: run B status is 'running': the tables show what is stored so far" in got.stderr


def test_report_with_allow_damaged_says_how_many_repetitions_had_damaged_records(run: Path, tmp_path: Path) -> None:
    expected, touched = drop_two_results(run)
    got = natbench("report", str(run), "--format", "html", "--out", str(tmp_path / "rep"), "--allow-damaged")
    assert got.returncode == 0, got.stderr
    assert (
        f"natbench: damaged: run {run}: {len(touched)} repetition(s) had damaged records;"
        " only their intact records are used" in got.stderr.splitlines()
    )
    html = (tmp_path / "rep" / "report.html").read_text()
    assert f"{len(touched)} repetition(s) had damaged records" in html
    assert f"({len(expected)} problem(s) in its stored records" in html


def test_the_notebook_loader_warns_about_a_damaged_run_directory(run: Path, complete: Path) -> None:
    import warnings

    import natbench
    from natbench.report.load import DamagedRunWarning

    expected, touched = drop_two_results(run)
    with pytest.warns(DamagedRunWarning) as caught:
        loaded = natbench.load(run)
    [w] = caught
    assert f"{run}: damaged run directory: {len(expected)} problem(s)" in str(w.message)
    assert f"{len(touched)} repetition(s) touched" in str(w.message)
    assert sorted(loaded.damaged_repetitions) == sorted(touched)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an intact run directory loads without a warning
        natbench.load(complete)


# ----------------------------------------------------------------------------- review of issue 18: non-finite numbers
@pytest.mark.parametrize("token", ["1e999", "NaN", "-Infinity"])
def test_a_non_finite_number_in_a_record_is_one_damage_line_for_report_and_resume(run: Path, token: str) -> None:
    lines = lines_of(run)
    n = result_lines(run)[1]
    text = lines[n - 1].decode()
    assert '"value":' in text
    head, tail = text.split('"value":', 1)
    rest = tail[next(i for i, c in enumerate(tail) if c in ",}") :]
    lines[n - 1] = f'{head}"value":{token}{rest}'.encode()  # JSON has no such number: json.loads takes it
    write_lines(run, lines)
    expected = f"{run / 'trials.jsonl'}:{n}: not a natbench record: non-finite number"
    assert_report_refused(run, expected)
    assert_resume_refused(run, expected)


def test_a_checksum_over_a_non_finite_number_is_damage_not_a_crash(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from natbench.run import records

    lines = lines_of(run)
    n = result_lines(run)[0]
    rec = json.loads(lines[n - 1])
    rec["value"] = float("inf")
    lines[n - 1] = (json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n").encode()  # "value":Infinity
    write_lines(run, lines)
    monkeypatch.setattr(records, "parse_line", json.loads)  # a parser that lets it through: the checksum's guard
    damage = records.scan(run / "trials.jsonl", json.loads((run / "run.json").read_text())["records"]).damage
    assert f"{run / 'trials.jsonl'}:{n}: not a natbench record: non-finite number" in damage


# ----------------------------------------------------------------------------- review of issue 18: legacy --repair
def test_repairing_an_old_run_directory_completes_and_reads_clean(run: Path, complete: Path) -> None:
    legacy(run)
    lines = lines_of(run)
    lines[99] = b"garbage\n"  # a line in the middle that is no record
    write_lines(run, lines)
    assert f"{run / 'trials.jsonl'}:100: not a natbench record" in report(run).stderr
    tester, dut = engine_fakes.make_testbed()
    done = resume_run(
        engine_fakes.make_spec(), run, tester, dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None, repair=True
    )
    assert done.status == "complete"
    got = report(run)
    assert got.returncode == 0 and got.stderr == ""
    planned = sorted((r.point_id, r.metric, r.repetition) for r in RunDirectory.open(complete).results())
    assert sorted((r.point_id, r.metric, r.repetition) for r in done.results()) == planned
    numbered = [json.loads(ln)["seq"] for ln in lines_of(run)]
    assert numbered == list(range(1, len(numbered) + 1))  # every line numbered, the old ones too
    counts = done.meta.records
    assert isinstance(counts, RecordCounts)
    kinds = [json.loads(ln)["type"] for ln in lines_of(run)]
    assert (counts.trial, counts.result, counts.legacy) == (kinds.count("trial"), kinds.count("result"), 0)


def test_a_repair_stopped_before_its_rename_reads_clean_and_the_next_resume_finishes_it(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import natbench.run.format as store
    import natbench.run.repair as repair

    legacy(run)
    lines = lines_of(run)
    lines[99] = b"garbage\n"
    write_lines(run, lines)
    damaged = (run / "trials.jsonl").read_bytes()

    def killed(p: Path, meta: RunMeta) -> RunMeta:  # the process dies after run.json named the repaired file
        raise KeyboardInterrupt

    monkeypatch.setattr(repair, "finish_repair", killed)
    with pytest.raises(KeyboardInterrupt):
        resume_store(run, repair=True)
    monkeypatch.undo()
    assert (run / "trials.jsonl").read_bytes() == damaged  # not renamed yet
    repaired = (run / store.REPAIRED).read_bytes()
    plain = read_run(run)
    assert plain.damage == []  # run.json's counts match the repaired file, which the readers take
    assert plain.warnings[-1] == (
        f"{run / 'trials.jsonl'}: a repair stopped before renaming .trials.repaired.jsonl over it; read from"
        " .trials.repaired.jsonl (the next `natbench run --resume` finishes the repair)"
    )
    resume_store(run).close()  # no --repair needed: the repair is finished, not repeated
    assert (run / "trials.jsonl").read_bytes() == repaired
    assert not (run / store.REPAIRED).exists()
    meta = json.loads((run / "run.json").read_text())
    assert store.PENDING not in meta and len(meta["repairs"]) == 1
    assert read_run(run).damage == [] and read_run(run).warnings == []


# ------------------------------------------------------------------------------ issue 43: points, keys, symlinks
def _points(run: Path) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = json.loads((run / "points.json").read_text())
    return points


def _set_points(run: Path, points: list[dict[str, Any]]) -> None:
    (run / "points.json").write_text(json.dumps(points, indent=2) + "\n")


def test_points_json_must_be_what_its_parameters_give_each_condition_alone(run: Path) -> None:
    """The id hashes the parameters, connections and label follow from them: each changed alone is refused, naming
    the entry and the field; the stored points read as they are."""
    assert [p.id for p in RunDirectory.open(run).points] == [p["id"] for p in _points(run)]
    stored = _points(run)
    for field, value, message in [
        ("src_ports", [stored[1]["src_ports"][0], stored[1]["src_ports"][1] + 1], "is not the hash of this point"),
        ("cores", (stored[1]["cores"] or 0) + 1, "is not the hash of this point"),
        ("frame_size", stored[1]["frame_size"] + 64, "is not the hash of this point"),
        ("connections", stored[1]["connections"] * 1000, "but its port ranges hold"),
        ("label", stored[1]["label"] + "-x", "but its parameters give"),
    ]:
        changed = [dict(p) for p in stored]
        changed[1][field] = value
        _set_points(run, changed)
        with pytest.raises(StoreError, match=rf"points\.json: \[1\]\.(id|{field}): .*{message}"):
            read_run(run)
    _set_points(run, [*stored, stored[0]])
    with pytest.raises(StoreError, match=rf"\[{len(stored)}\]\.id: \w+ again \(entry \[0\]\)"):
        RunDirectory.open(run)
    _set_points(run, stored)
    assert read_run(run).damage == []


def test_run_json_keys_of_points_must_be_points_of_points_json(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    for field, value in (("point_facts", {"dut": {}}), ("point_testbeds", ["tb1"])):
        changed = {**meta, field: {**meta.get(field, {}), "0123456789ab": value}}
        (run / "run.json").write_text(json.dumps(changed))
        with pytest.raises(
            StoreError, match=rf"run\.json: {field}: '0123456789ab' is no working point of points\.json"
        ):
            read_run(run)
    (run / "run.json").write_text(json.dumps(meta))
    assert read_run(run).damage == []


def test_a_point_without_records_is_damage_in_a_complete_run_only(run: Path, tmp_path: Path) -> None:
    """An extra point with a real id: not one record in a complete run is damage; while a run is running or after it
    failed, that is a point not measured yet."""
    import dataclasses as dc

    from natbench.run.format import PointRecord

    extra = dc.replace(RunDirectory.open(run).points[-1].to_working_point(), frame_size=1500)
    points = _points(run)
    _set_points(run, [*points, PointRecord.of(dc.replace(extra, index=len(points))).to_dict()])
    damage = read_run(run).damage
    assert damage == [
        f"{run}/points.json: point {extra.id}: not one record in a run whose status is 'complete' (every planned"
        " repetition has its result): a working point added after the run, or its records removed"
    ]
    for status in ("running", "failed"):
        meta = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**meta, "status": status}))
        assert read_run(run).damage == []
    # a complete run without a single record (the store's API marks any run complete) is left alone
    empty = tmp_path / "empty"
    with RunStore.create(empty, campaign_text="name: t\n", points=[extra]) as store:
        store.set_status("complete")
    assert read_run(empty).damage == []


def test_a_key_named_twice_is_refused_in_every_file(run: Path) -> None:
    text = (run / "run.json").read_text()
    (run / "run.json").write_text(text.replace('"status": ', '"status": "running", "status": ', 1))
    with pytest.raises(StoreError, match=r"run\.json: duplicate key 'status' in one object"):
        read_run(run)
    (run / "run.json").write_text(text)
    lines = lines_of(run)
    lines[9] = b'{"verdict":"pass",' + lines[9][1:]  # the checksummed value is the one a reader keeps
    write_lines(run, lines)
    assert f"{run}/trials.jsonl:10: not a natbench record: duplicate key 'verdict' in one object" in "\n".join(
        read_run(run).damage
    )


def test_a_resume_never_appends_through_a_symlink(run: Path, tmp_path: Path) -> None:
    """trials.jsonl (or a writer's temporary file) as a link elsewhere: the writer refuses to write through it."""
    from natbench.run.writer import append_fd, atomic_write

    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes((run / "trials.jsonl").read_bytes())
    (run / "trials.jsonl").unlink()
    (run / "trials.jsonl").symlink_to(elsewhere)
    with pytest.raises(StoreError, match=r"trials\.jsonl: a symbolic link: natbench writes .* never through a link"):
        append_fd(run / "trials.jsonl")
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    (run / ".run.json.tmp").symlink_to(victim)
    atomic_write(run / "run.json", (run / "run.json").read_text())
    assert victim.read_text() == "kept\n" and not (run / "run.json").is_symlink()


def test_a_write_that_fails_stops_the_run_with_one_error_naming_the_file(tmp_path: Path) -> None:
    """A full disk (here: the file-size limit RLIMIT_FSIZE of a child process, a real limit of the kernel) while a
    record or run.json is written: RunWriteError naming the file and how to continue, not an OSError; what was
    stored before reads intact (a torn last line at most)."""
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from natbench.results import TrialRecord, Verdict\n"
        "from natbench.run.writer import RunStore, RunWriteError\n"
        "from natbench.traffic import PortRange\n"
        "from natbench.workingpoint import WorkingPoint\n"
        "P = WorkingPoint(0, PortRange(1, 100), PortRange(1, 10), 64, cores=1, name='x')\n"
        "store = RunStore.create(Path(sys.argv[1]), campaign_text='name: x\\n', points=[P])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
        "try:\n"
        "    for i in range(1000):\n"
        "        store.append_trial(TrialRecord(P.id, 'cps', 0, i, 'phase1', 1e3, 1e3, {}, Verdict.PASS, 'ok',"
        " 1.0 + i, 2.0 + i))\n"
        "except RunWriteError as exc:\n"
        "    print(exc)\n"
    )
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", script, str(run)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"{run}/trials.jsonl: cannot be written: File too large; what was stored before")
    assert f"`natbench run --resume {run}` continues the run" in proc.stdout
    found = read_run(run)
    assert found.damage == [] and len(found.trials) > 0
