"""Tests of the run directory: layout, durability, torn lines, resume bookkeeping, Parquet export."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import io
import json
import os
import platform
import re
import shlex
import socket
import stat
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq
import pytest

import natbench.run.format.safefile as safefile_module
import natbench.run.reader as reader_module
import natbench.run.repair as repair_module
import natbench.run.writer as writer_module
from natbench import __version__
from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run import frames
from natbench.run.format import ABANDONED, HostFacts, PointRecord, RecordCounts, Repair, RunMeta
from natbench.run.reader import DAMAGE_HINT, RunDirectory, half_created, read_bytes, read_run, scan_run
from natbench.run.repair import resume_store
from natbench.run.writer import RunStore, RunWriteError, append_fd, atomic_write, link_latest, lock_dir
from natbench.testing.rundir import write_run_dir
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

POINTS = [WorkingPoint(0, PortRange(1, 4000), PortRange(1, 1000), 64, cores=4, name="iptables")]
PID = POINTS[0].id


def trial(
    rep: int, step: int, verdict: Verdict = Verdict.PASS, metric: str = "cps", started: float = 1.0
) -> TrialRecord:
    return TrialRecord(
        PID,
        metric,
        rep,
        step,
        "phase1",
        1000.0 * (step + 1),
        1000.0 * (step + 1),
        {"forward": {"sent": 10, "received": 10, "valid": 10}},
        verdict,
        "" if verdict is Verdict.PASS else "why",
        started,
        started + 1.0,
        lower=0.0,
        upper=10_000.0,
    )


def result(rep: int, metric: str = "cps") -> RepetitionResult:
    return RepetitionResult(PID, metric, rep, 5000.0, "cps", 100.0, {"steps": 2})


def new_store(tmp_path: Path) -> RunStore:
    return RunStore.create(
        tmp_path / "run",
        campaign_text="name: t\n",
        points=POINTS,
        campaign_file="t.yaml",
        campaign_name="t",
        tester_facts={"kind": "fake"},
        dut_facts={"dut": {"kernel": "x"}},
    )


def _lines(run: Path) -> list[str]:
    """The lines of the run's trials.jsonl."""
    return (run / "trials.jsonl").read_text().splitlines()


def test_layout_matches_the_guide(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.set_status("complete")
    run = tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == ["campaign.yaml", "points.json", "run.json", "trials.jsonl"]
    meta = json.loads((run / "run.json").read_text())
    for key in ("natbench_version", "git_commit", "host", "started_at", "campaign_file", "campaign_name"):
        assert key in meta
    assert (meta["tester"], meta["duts"], meta["status"]) == ({"kind": "fake"}, {"dut": {"kernel": "x"}}, "complete")
    points = json.loads((run / "points.json").read_text())
    assert points == [
        {
            "id": PID,
            "index": 0,
            "label": "iptables-4c-4M",
            "name": "iptables",
            "cores": 4,
            "src_ports": [1, 4000],
            "dst_ports": [1, 1000],
            "connections": 4_000_000,
            "frame_size": 64,
            "dut_params": {},
            "swept_dut": None,
        }
    ]
    lines = [json.loads(ln) for ln in (run / "trials.jsonl").read_text().splitlines()]
    assert [(ln["type"], ln["seq"]) for ln in lines] == [("trial", 1), ("result", 2)]  # numbered from 1
    assert TrialRecord.from_dict({k: v for k, v in lines[0].items() if k not in ("type", "seq", "crc32")}) == trial(
        0, 0
    )
    # run.json counts both records, one of each kind; nothing from before counts, nothing moved aside
    assert meta["records"] == {"written": 2, "trial": 1, "result": 1, "legacy": 0, "moved": []}
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0)]
    assert reader.completed() == {(PID, "cps", 0)}
    assert reader.campaign_text == "name: t\n"


def test_dut_facts_are_recorded_per_point(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.record_dut_facts("p1", {"kernel": "6.1", "cpus": (0, 1), "path": Path("/x")})
        store.record_dut_facts("p2", {"ce": {"release": "4.2"}, "br": {"release": "4.1"}})
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["duts"] == {"ce": {"release": "4.2"}, "br": {"release": "4.1"}}  # several DUTs: by name, latest
    assert meta["point_facts"] == {
        "p1": {"dut": {"kernel": "6.1", "cpus": [0, 1], "path": "/x"}},  # one DUT's flat facts, JSON-plain
        "p2": {"ce": {"release": "4.2"}, "br": {"release": "4.1"}},
    }


def test_every_record_is_on_disk_when_append_returns(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.append_trial(trial(0, 0))
    # read through a separate file object while the store is still open
    assert RunDirectory.open(tmp_path / "run").trials() == [trial(0, 0)]
    store.close()


class FsyncSpy:
    """Stands in for os.fsync: notes what each call forced to disk (and what ``look`` saw then), then does it."""

    def __init__(self, look: Callable[[], object] = lambda: None) -> None:
        self.real = os.fsync
        self.look = look
        self.calls: list[tuple[bool, int, int | None, object]] = []
        """(is a directory, inode, file size or None for a directory, what ``look`` returned) per call."""

    def __call__(self, fd: int) -> None:
        st = os.fstat(fd)
        is_dir = stat.S_ISDIR(st.st_mode)
        self.calls.append((is_dir, st.st_ino, None if is_dir else st.st_size, self.look()))
        self.real(fd)


def test_each_append_fsyncs_the_trials_file_after_writing_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = new_store(tmp_path)
    run = tmp_path / "run"
    trials = run / "trials.jsonl"
    spy = FsyncSpy(lambda: json.loads((run / "run.json").read_text())["records"]["written"])
    monkeypatch.setattr("natbench.run.writer.os.fsync", spy)
    store.append_trial(trial(0, 0))
    after_trial, meta_1 = trials.stat(), (run / "run.json").stat()
    store.append_result(result(0))
    after_result, meta_2 = trials.stat(), (run / "run.json").stat()
    assert after_result.st_size > after_trial.st_size > 0
    # per append: trials.jsonl holding the whole new line is forced to disk while run.json still counts the
    # records before it; only then the new run.json (counting it) and the directory holding its new entry
    assert spy.calls == [
        (False, after_trial.st_ino, after_trial.st_size, 0),
        (False, meta_1.st_ino, meta_1.st_size, 0),
        (True, run.stat().st_ino, None, 1),  # (after the rename: the new run.json is in place)
        (False, after_result.st_ino, after_result.st_size, 1),
        (False, meta_2.st_ino, meta_2.st_size, 1),
        (True, run.stat().st_ino, None, 2),
    ]
    store.close()


def test_a_record_that_cannot_reach_trials_jsonl_names_that_file_and_is_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write error of trials.jsonl (a full disk reported when the line is synced) stops the run naming trials.jsonl
    and the resume; run.json never counts the record (it is counted only once on disk)."""
    run = tmp_path / "run"
    store = new_store(tmp_path)
    store.append_trial(trial(0, 0))
    counted = (run / "run.json").read_text()

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module.os, "fsync", full_disk)
    with pytest.raises(RunWriteError) as err:
        store.append_trial(trial(0, 1))
    monkeypatch.undo()
    assert str(err.value) == (
        f"{run / 'trials.jsonl'}: cannot be written: No space left on device; what was stored before stands"
        f" (`natbench run --resume {run}` continues the run once there is room)"
    )
    assert (run / "run.json").read_text() == counted
    assert store.counts == RecordCounts(written=1, trial=1)
    store.close()


def test_a_record_whose_count_did_not_reach_run_json_keeps_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    store = new_store(tmp_path)

    def full_disk(path: Path, meta: RunMeta) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module, "write_meta_file", full_disk)
    with pytest.raises(RunWriteError) as err:
        store.append_trial(trial(0, 0))  # on disk (seq 1), its count not in run.json
    assert str(err.value) == (
        f"{run / 'run.json'}: cannot be written: No space left on device; what was stored before stands"
        f" (`natbench run --resume {run}` continues the run once there is room)"
    )
    monkeypatch.undo()
    store.append_trial(trial(0, 1))  # the next number, never seq 1 again
    store.close()
    assert [json.loads(ln)["seq"] for ln in _lines(run)] == [1, 2]
    reader = RunDirectory.open(run)
    assert reader.scan().damage == [] and reader.trials() == [trial(0, 0), trial(0, 1)]
    assert reader.meta.records == RecordCounts(written=2, trial=2)


def test_atomic_write_fsyncs_the_new_file_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    target.write_text("old\n")
    spy = FsyncSpy(look=target.read_text)
    monkeypatch.setattr("natbench.run.writer.os.fsync", spy)
    atomic_write(target, "new text\n")
    assert target.read_text() == "new text\n"
    assert spy.calls == [
        (False, target.stat().st_ino, len("new text\n"), "old\n"),  # the complete new file, old one still in place
        (True, tmp_path.stat().st_ino, None, "new text\n"),  # then the directory, holding the renamed entry
    ]


def test_atomic_write_never_writes_into_a_temporary_file_planted_after_it_removed_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    target.write_text("old\n")
    tmp = tmp_path / ".run.json.tmp"
    tmp.write_text("leftover of a killed writer\n")
    real_unlink = Path.unlink

    def unlink_then_planted(self: Path, missing_ok: bool = False) -> None:
        real_unlink(self, missing_ok=missing_ok)
        if self == tmp:
            self.write_text("planted\n")  # another process creates the name in between

    monkeypatch.setattr(Path, "unlink", unlink_then_planted)
    with pytest.raises(FileExistsError):
        atomic_write(target, "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n" and tmp.read_text() == "planted\n"


def test_create_refuses_an_existing_run(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    with pytest.raises(StoreError, match="already holds a run"):
        new_store(tmp_path)


def test_open_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"missing run\.json"):
        RunDirectory.open(tmp_path)


def test_a_record_of_no_working_point_is_damage_and_reading_the_records_names_it_and_what_to_do(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(dataclasses.replace(trial(0, 1), point_id="0123456789ab"))
    stray = f"{run}/trials.jsonl:2: point_id: '0123456789ab' is no working point of points.json"
    directory = RunDirectory.open(run)
    assert directory.scan().damage == [stray]
    with pytest.raises(StoreError) as err:
        list(directory.records())
    assert str(err.value).splitlines() == [
        f"{run}: damaged run directory (1 problem(s)):",
        f"  {stray}",
        f"`natbench run --resume {run} --repair` keeps a copy of trials.jsonl and measures the damaged repetitions"
        f" again; `natbench report {run} --allow-damaged` reports the intact records",
    ]


def test_open_names_the_points_file_whose_entry_is_of_the_wrong_type(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    run = tmp_path / "run"
    (run / "points.json").write_text("[1]\n")
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run)
    assert str(err.value) == f"{run}/points.json: [0]: expected an object, got 1"


def test_open_names_the_run_json_key_that_is_no_working_point(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    run = tmp_path / "run"
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "point_facts": {"0123456789ab": {"dut": {}}}}))
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run)
    assert str(err.value) == (
        f"{run}/run.json: point_facts: '0123456789ab' is no working point of points.json: one of the two files was"
        " changed after the run"
    )


def test_open_names_the_run_directory_when_looking_at_it_fails_without_a_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_store(tmp_path).close()
    run = tmp_path / "run"

    def failing_disk(path: Path) -> bool:
        raise OSError(errno.EIO, os.strerror(errno.EIO))  # an I/O error that names no file

    monkeypatch.setattr(reader_module, "half_created", failing_disk)
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run)
    assert str(err.value) == f"{run}: cannot be read: Input/output error"


@pytest.mark.parametrize(
    ("error", "named"),
    [(OSError(errno.EIO, os.strerror(errno.EIO)), "Input/output error"), (OSError("stale handle"), "stale handle")],
)
def test_a_metadata_file_whose_closing_fails_is_named_with_the_error_s_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, named: str
) -> None:
    # the file opens and reads, then closing it reports a deferred error (as a network file system may; simulated
    # here, the file is real): the error's own text (strerror), or the error itself when it has none
    path = tmp_path / "run.json"
    path.write_text("{}", "utf-8")
    real = safefile_module.open_regular

    class CloseFails(io.BufferedReader):
        def close(self) -> None:
            was_open = not self.closed
            super().close()
            if was_open:
                raise error

    monkeypatch.setattr(safefile_module, "open_regular", lambda p: CloseFails(real(p).detach()))
    with pytest.raises(StoreError) as err:
        read_bytes(path)
    assert str(err.value) == f"{path}: cannot be read: {named}"


def test_each_metadata_file_is_read_up_to_its_own_cap_and_a_name_without_one_up_to_run_json_s(tmp_path: Path) -> None:
    # campaign.yaml may hold 16 MiB, run.json (and any other file read as metadata) 64 MiB: sparse files, read whole
    caps = safefile_module.FILE_CAPS
    mib = safefile_module.MiB
    campaign = tmp_path / "campaign.yaml"
    with campaign.open("wb") as f:
        f.truncate(caps["campaign.yaml"])
    assert len(read_bytes(campaign)) == caps["campaign.yaml"] == 16 * mib
    with campaign.open("ab") as f:
        f.write(b"\n")
    with pytest.raises(StoreError) as err:
        read_bytes(campaign)
    assert str(err.value) == (
        f"{campaign}: larger than the 16 MiB a campaign.yaml may hold (natbench writes far less): not read"
    )
    other = tmp_path / "facts.json"
    other.write_text("{}", "utf-8")
    assert read_bytes(other) == b"{}"
    with other.open("ab") as f:
        f.truncate(caps["run.json"] + 1)
    with pytest.raises(StoreError) as err:
        read_bytes(other)
    assert str(err.value) == (
        f"{other}: larger than the 64 MiB a facts.json may hold (natbench writes far less): not read"
    )


def _third_not_counted_yet(run: Path) -> str:
    """The scanner's note for the third record of a running run whose run.json counts 2."""
    return (
        f"{run / 'trials.jsonl'}:3: seq 3 not counted in run.json yet"
        " (written just before the run stopped, or the run is still being written)"
    )


def _third_appended_after_the_end(run: Path) -> str:
    """The scanner's damage line for the third record of a complete run whose run.json counts 2."""
    return (
        f"{run / 'trials.jsonl'}:3: seq 3 beyond the 2 records run.json counts in a run whose status is 'complete'"
        " (appended after the run ended: no writer leaves an uncounted record after that mark)"
    )


def _three_trials_read_again_as(tmp_path: Path, written: int, status: str) -> Path:
    """A run directory of 3 trials whose run.json (read again after trials.jsonl) counts ``written`` in a run of
    ``status``."""
    with new_store(tmp_path) as store:
        for rep in range(3):
            store.append_trial(trial(rep, 0))
    run = tmp_path / "run"
    meta = json.loads((run / "run.json").read_text("utf-8"))
    again = {**meta, "records": {"written": written, "trial": written}, "status": status}
    (run / "run.json").write_text(json.dumps(again), "utf-8")
    return run


def test_one_record_beyond_the_counts_of_a_running_run_is_held_against_the_first_reading_alone(
    tmp_path: Path,
) -> None:
    # run.json read first: 2 of the 3 records counted, running. One record beyond them is what a kill between a
    # line and its count leaves: a note, whatever run.json says when read again (here: complete, still 2 counted)
    run = _three_trials_read_again_as(tmp_path, 2, "complete")
    first = RunDirectory.open(run).meta.replace(records=RecordCounts(written=2, trial=2), status="running")
    found = scan_run(run, first)
    assert found.damage == []
    assert found.notes == [_third_not_counted_yet(run)]
    # two records beyond the first reading's count: run.json is read again, and the later reading says complete
    # with 2 counted, so the third record was appended after the run ended
    first = first.replace(records=RecordCounts(written=1, trial=1))
    found = scan_run(run, first)
    assert found.damage == [_third_appended_after_the_end(run)]


def test_one_record_beyond_the_counts_of_a_complete_run_leads_to_a_second_look_at_run_json(tmp_path: Path) -> None:
    # run.json read first: complete with 2 of the 3 records counted. A complete run leaves no uncounted record, so
    # the third sends the reader back to run.json: a resume has since set the run running (3 counted), and a record
    # of a running run beyond the first count is a note, not damage
    run = _three_trials_read_again_as(tmp_path, 3, "running")
    first = RunDirectory.open(run).meta.replace(records=RecordCounts(written=2, trial=2), status="complete")
    found = scan_run(run, first)
    assert found.damage == []
    assert found.notes == [_third_not_counted_yet(run)]
    # read again, run.json still says complete with 2: the third record was appended after the run ended
    run = _three_trials_read_again_as(tmp_path / "again", 2, "complete")
    found = scan_run(run, first)
    assert found.damage == [_third_appended_after_the_end(run)]


def test_resume_moves_cut_off_trials_aside_and_drops_a_torn_line(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(1, 0))
        store.append_trial(trial(1, 1, Verdict.INVALID))
    run = tmp_path / "run"
    with open(run / "trials.jsonl", "a") as f:
        f.write('{"type":"trial","point_id":"')  # the process died while writing
    torn = RunDirectory.open(run)
    assert torn.abandoned() == []
    assert len(torn.trials()) == 3  # the reader skips the torn line
    store = resume_store(run)
    assert store.is_complete(PID, "cps", 0)
    assert not store.is_complete(PID, "cps", 1)
    store.append_trial(trial(1, 0))
    store.close()
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0), trial(1, 0)]
    assert reader.abandoned() == [trial(1, 0), trial(1, 1, Verdict.INVALID)]
    assert (run / ABANDONED).exists()
    assert reader.meta.status == "running"
    assert len(reader.meta.resumed_at) == 1


def test_resume_drops_a_torn_last_line_when_no_repetition_was_cut_off(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    run = tmp_path / "run"
    with open(run / "trials.jsonl", "a") as f:
        f.write('{"type":"result","point_id":"')  # died while writing, right after a complete repetition
    with resume_store(run) as store:
        store.append_trial(trial(1, 0))
        store.append_result(result(1))
    lines = (run / "trials.jsonl").read_text().splitlines()
    # every line is a whole record: the new ones were not glued onto the torn fragment
    assert [json.loads(ln)["type"] for ln in lines] == ["trial", "result", "trial", "result"]
    assert list(RunDirectory.open(run).records()) == [trial(0, 0), result(0), trial(1, 0), result(1)]
    assert not (run / ABANDONED).exists()  # a torn line is no measurement to keep


def test_resume_refuses_a_damaged_line_that_is_not_the_last(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(1, 0))
    run = tmp_path / "run"
    path = run / "trials.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:25] + "\n"  # line 2 damaged but terminated: only a last line can be torn
    path.write_text("".join(lines))
    before = path.read_text()
    where = re.escape(f"{path}:2: not a natbench record")
    with pytest.raises(StoreError, match=where):
        resume_store(run)
    assert path.read_text() == before  # nothing dropped, nothing moved aside
    assert not (run / ABANDONED).exists()
    with pytest.raises(StoreError, match=where):
        list(RunDirectory.open(run).records())
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)  # the failed resume left the run unlocked
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_resume_cuts_off_by_point_metric_and_repetition(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(0, 0, metric="throughput"))  # throughput repetition 0 was cut off
    run = tmp_path / "run"
    with resume_store(run) as store:
        assert store.is_complete(PID, "cps", 0)
        assert not store.is_complete(PID, "throughput", 0)
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0)]
    assert reader.abandoned() == [trial(0, 0, metric="throughput")]


def test_abandoned_trials_of_successive_interruptions_are_all_kept_once(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 1))
    run = tmp_path / "run"
    with resume_store(run) as store:  # first attempt cut off; the second one is cut off too
        store.append_trial(trial(0, 0, started=10.0))
    with resume_store(run) as store:  # the third attempt completes
        store.append_trial(trial(0, 0, started=20.0))
        store.append_result(result(0))
    resume_store(run).close()  # a resume of the finished run moves nothing
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0, started=20.0), result(0)]
    assert reader.abandoned() == [trial(0, 0), trial(0, 1), trial(0, 0, started=10.0)]
    assert len(reader.meta.resumed_at) == 3


def test_a_resume_that_starts_trials_jsonl_anew_makes_it_durable_before_the_first_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    run = tmp_path / "run"
    (run / "trials.jsonl").unlink()  # deleted by hand to measure everything again
    with pytest.raises(StoreError, match=re.escape(f"{run / 'trials.jsonl'}: missing, but run.json counts 1 records")):
        resume_store(run)  # run.json counts one record: a deleted file is damage, accepted only by a repair
    spy = FsyncSpy()
    monkeypatch.setattr("natbench.run.writer.os.fsync", spy)
    with resume_store(run, repair=True) as store:
        trials = (run / "trials.jsonl").stat()
        # as at creation: the empty file, then the directory holding its entry, before run.json and any trial
        assert spy.calls[:2] == [(False, trials.st_ino, 0, None), (True, run.stat().st_ino, None, None)]
        store.append_trial(trial(0, 0, started=5.0))
    assert RunDirectory.open(run).trials() == [trial(0, 0, started=5.0)]
    assert not (run / ABANDONED).exists()
    assert RunDirectory.open(run).meta.repairs[-1].backup is None  # nothing to keep a copy of
    assert not [p for p in run.iterdir() if p.name.startswith("trials.damaged-")]


def test_a_resume_stopped_before_rewriting_trials_jsonl_leaves_the_cut_off_trials_read_as_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(1, 0))  # seq 3: repetition 1 cut off
    real_write = repair_module.atomic_write

    def stopped_at_the_rewrite(path: Path, text: str) -> None:
        if path.name == "trials.jsonl":
            raise OSError(errno.EIO, "Input/output error")
        real_write(path, text)

    monkeypatch.setattr(repair_module, "atomic_write", stopped_at_the_rewrite)
    with pytest.raises(OSError, match="Input/output error"):
        resume_store(run)
    monkeypatch.undo()
    # run.json counted the move before the rewrite: the trial still in the file is a leftover, not a record
    stopped = RunDirectory.open(run)
    assert stopped.meta.records == RecordCounts(written=3, trial=2, result=1, moved=((3, 3),))
    assert stopped.scan().damage == [] and [r.record for r in stopped.scan().leftovers] == [trial(1, 0)]
    assert list(stopped.records()) == [trial(0, 0), result(0)]
    assert stopped.abandoned() == [trial(1, 0)]
    resume_store(run).close()  # the next resume finishes the move
    reader = RunDirectory.open(run)
    assert len(_lines(run)) == 2 and reader.scan().leftovers == []
    assert list(reader.records()) == [trial(0, 0), result(0)] and reader.abandoned() == [trial(1, 0)]


REPAIR_CLOCK = SimpleNamespace(
    time=lambda: 1_700_000_000.5, gmtime=lambda: time.gmtime(1_700_000_000), strftime=time.strftime
)
"""The repair's clock: 2023-11-14 22:13:20 UTC."""
BACKUP = "trials.damaged-20231114T221320Z.jsonl"
"""The copy of the damaged trials.jsonl a repair at that time keeps."""


def damaged_run(tmp_path: Path) -> tuple[Path, str]:
    """A complete run of four repetitions and a cut-off fifth, repetition 2's trial altered after writing."""
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        for rep in range(4):
            store.append_trial(trial(rep, 0))
            store.append_result(result(rep))
        store.append_trial(trial(4, 0))
        store.set_status("complete")
    lines = _lines(run)
    lines[4] = lines[4].replace('"phase1"', '"phase2"')  # seq 5: its checksum no longer matches
    text = "".join(ln + "\n" for ln in lines)
    (run / "trials.jsonl").write_text(text)
    return run, text


def test_a_repair_keeps_a_copy_measures_the_touched_repetitions_again_and_numbers_the_rest_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, damaged = damaged_run(tmp_path)
    found = RunDirectory.open(run).scan()  # what the repair starts from
    touched = found.tainted
    assert (PID, "cps", 2) in touched and (PID, "cps", 0) not in touched and len(found.damage) == 1
    monkeypatch.setattr(repair_module, "time", REPAIR_CLOCK)
    store = resume_store(run, repair=True)
    store.close()
    assert (run / BACKUP).read_text() == damaged  # the damaged file as it was
    kept_reps = [rep for rep in range(4) if (PID, "cps", rep) not in touched]
    kept = [r for rep in kept_reps for r in (trial(rep, 0), result(rep))]
    reader = RunDirectory.open(run)
    assert list(reader.records()) == kept
    assert [json.loads(ln)["seq"] for ln in _lines(run)] == list(range(1, len(kept) + 1))  # numbered anew
    set_aside = [r.record for r in found.records if r.kind == "trial" and r.record.repetition not in kept_reps]
    assert reader.abandoned() == set_aside and trial(4, 0) in set_aside  # the cut-off one too
    assert reader.meta.records == RecordCounts(written=len(kept), trial=len(kept_reps), result=len(kept_reps))
    assert reader.meta.repairs == (
        Repair(
            at=1_700_000_000.5,
            backup=BACKUP,
            damage=tuple(found.damage),
            remeasured=tuple(sorted(touched)),
            dropped_results=len([k for k in touched if k[2] < 4]),  # repetitions 0-3 had their result
        ),
    )
    assert reader.meta.status == "running" and reader.meta.repair_pending is None
    assert not (run / ".trials.repaired.jsonl").exists()
    assert RunMeta.from_dict(json.loads((run / "run.json").read_text())).repairs == reader.meta.repairs


def test_a_repair_stopped_after_keeping_its_copy_leaves_trials_jsonl_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, damaged = damaged_run(tmp_path)
    monkeypatch.setattr(repair_module, "time", REPAIR_CLOCK)

    def killed(p: Path, lines: list[str]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(repair_module, "save_abandoned", killed)
    with pytest.raises(KeyboardInterrupt):
        resume_store(run, repair=True)
    assert (run / "trials.jsonl").read_text() == damaged  # copied, not moved: nothing lost before the commit
    assert (run / BACKUP).read_text() == damaged
    monkeypatch.undo()
    resume_store(run, repair=True).close()
    assert RunDirectory.open(run).scan().damage == []


def test_a_repair_stopped_before_its_rename_leaves_a_failed_run_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _ = damaged_run(tmp_path)
    meta = json.loads((run / "run.json").read_text()) | {"status": "failed", "failure": "DUT lost"}
    (run / "run.json").write_text(json.dumps(meta))

    def killed(p: Path, meta: RunMeta) -> RunMeta:
        raise KeyboardInterrupt

    monkeypatch.setattr(repair_module, "finish_repair", killed)
    with pytest.raises(KeyboardInterrupt):
        resume_store(run, repair=True)
    stopped = RunDirectory.open(run).meta
    assert stopped.repair_pending is not None and stopped.status == "failed"  # only a complete run becomes running


def test_a_repair_in_the_same_second_as_earlier_ones_keeps_their_copies_and_its_own_under_a_free_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, damaged = damaged_run(tmp_path)
    (run / BACKUP).write_text("an earlier copy\n")  # the name a repair in the same second took
    (run / BACKUP.replace("Z.", "Z-2.")).symlink_to(tmp_path / "nowhere")  # and a second one, even a dangling link
    monkeypatch.setattr(repair_module, "time", REPAIR_CLOCK)
    resume_store(run, repair=True).close()
    assert (run / BACKUP).read_text() == "an earlier copy\n"  # the earlier copy is kept whole
    assert (run / BACKUP.replace("Z.", "Z-3.")).read_text() == damaged  # this repair's copy under a name of its own
    assert RunDirectory.open(run).meta.repairs[-1].backup == BACKUP.replace("Z.", "Z-3.")
    assert RunDirectory.open(run).scan().damage == []


def test_a_trials_file_that_cannot_be_read_is_kept_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, damaged = damaged_run(tmp_path)
    monkeypatch.setattr(repair_module, "time", REPAIR_CLOCK)

    def unreadable(path: Path) -> object:
        raise StoreError(f"{path}: cannot be read: Input/output error")

    monkeypatch.setattr(repair_module, "open_regular", unreadable)
    resume_store(run, repair=True).close()
    assert (run / BACKUP).read_text() == damaged  # moved aside as it was, not read


def test_a_repair_of_a_trials_file_that_is_a_link_moves_the_link_aside_never_its_target(tmp_path: Path) -> None:
    run, damaged = damaged_run(tmp_path)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(damaged)
    (run / "trials.jsonl").unlink()
    (run / "trials.jsonl").symlink_to(elsewhere)
    resume_store(run, repair=True).close()
    backups = [p for p in run.iterdir() if p.name.startswith("trials.damaged-")]
    assert len(backups) == 1 and backups[0].is_symlink() and os.readlink(backups[0]) == str(elsewhere)
    assert elsewhere.read_text() == damaged and not (run / "trials.jsonl").is_symlink()
    assert RunDirectory.open(run).scan().damage == []


def test_a_resume_of_a_damaged_run_without_repair_names_the_run_and_changes_nothing(tmp_path: Path) -> None:
    run, damaged = damaged_run(tmp_path)
    meta = (run / "run.json").read_bytes()
    with pytest.raises(StoreError) as err:
        resume_store(run)
    message = str(err.value).splitlines()
    assert message[0] == f"{run}: damaged run directory (1 problem(s)):"
    assert message[1].startswith(f"  {run / 'trials.jsonl'}:5: crc32: checksum mismatch")
    assert message[2] == (
        f"nothing was changed or measured; to accept the damage run `natbench run --resume {run} --repair`:"
        " it keeps a copy of trials.jsonl and measures the damaged repetitions again"
    )
    assert (run / "trials.jsonl").read_text() == damaged and (run / "run.json").read_bytes() == meta
    assert sorted(p.name for p in run.iterdir() if p.name.startswith("trials.")) == ["trials.jsonl"]


def test_the_next_resume_finishes_a_repair_stopped_before_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repair that stopped after run.json named the repaired file: the next resume (repair or not) renames that
    file over trials.jsonl, drops the name from run.json and goes on from the repaired records."""
    run, damaged = damaged_run(tmp_path)
    touched = RunDirectory.open(run).scan().tainted
    monkeypatch.setattr(repair_module, "time", REPAIR_CLOCK)

    def killed(p: Path, meta: RunMeta) -> RunMeta:  # the process dies after run.json named the repaired file
        raise KeyboardInterrupt

    monkeypatch.setattr(repair_module, "finish_repair", killed)
    with pytest.raises(KeyboardInterrupt):
        resume_store(run, repair=True)
    monkeypatch.undo()
    repaired = (run / ".trials.repaired.jsonl").read_text()
    assert (run / "trials.jsonl").read_text() == damaged  # not renamed yet
    assert json.loads((run / "run.json").read_text())["repair_pending"] == ".trials.repaired.jsonl"
    store = resume_store(run)  # no --repair needed: the repair was committed
    kept_reps = [rep for rep in range(4) if (PID, "cps", rep) not in touched]
    assert kept_reps and len(kept_reps) < 4
    assert [rep for rep in range(5) if store.is_complete(PID, "cps", rep)] == kept_reps
    store.append_trial(trial(4, 0))
    store.append_result(result(4))
    store.close()
    assert not (run / ".trials.repaired.jsonl").exists()
    assert _lines(run)[: len(repaired.splitlines())] == repaired.splitlines()  # the repaired file, appended to
    on_disk = json.loads((run / "run.json").read_text())
    assert "repair_pending" not in on_disk and on_disk["status"] == "running"
    reader = RunDirectory.open(run)
    assert reader.meta.repair_pending is None and len(reader.meta.repairs) == 1
    kept = [r for rep in kept_reps for r in (trial(rep, 0), result(rep))]
    assert list(reader.records()) == [*kept, trial(4, 0), result(4)]
    assert [json.loads(ln)["seq"] for ln in _lines(run)] == list(range(1, len(kept) + 3))
    assert reader.scan().damage == []


@pytest.mark.parametrize("taken", [0, 1, 2, 3])
def test_a_backup_name_is_the_stamp_then_the_first_free_number_from_2(tmp_path: Path, taken: int) -> None:
    names = ["trials.damaged-S.jsonl", "trials.damaged-S-2.jsonl", "trials.damaged-S-3.jsonl"]
    for name in names[:taken]:
        (tmp_path / name).write_text("an earlier copy\n")
    expected = [*names, "trials.damaged-S-4.jsonl"][taken]
    assert repair_module.backup_name(tmp_path, "S") == tmp_path / expected


def test_resume_of_a_clean_run_rewrites_nothing(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    before = (tmp_path / "run" / "trials.jsonl").stat().st_ino
    resume_store(tmp_path / "run").close()
    assert (tmp_path / "run" / "trials.jsonl").stat().st_ino == before
    assert not (tmp_path / "run" / ABANDONED).exists()


def test_a_resume_counts_a_record_written_just_before_the_counts_and_numbers_on_after_it(tmp_path: Path) -> None:
    """Killed between a line and its count: run.json counts one record fewer than the file holds. The resume takes
    the highest seq on disk as written, so what it appends is numbered after the record it moved aside."""
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        counted = (run / "run.json").read_bytes()
        store.append_trial(trial(1, 0))
    (run / "run.json").write_bytes(counted)  # the count of seq 3 never reached run.json
    assert RunDirectory.open(run).meta.records == RecordCounts(written=2, trial=1, result=1)
    with resume_store(run) as store:
        assert store.meta.records == RecordCounts(written=3, trial=2, result=1, moved=((3, 3),))
        store.append_trial(trial(1, 0, started=5.0))
        store.append_result(result(1))
    assert [json.loads(ln)["seq"] for ln in _lines(run)] == [1, 2, 4, 5]
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0), trial(1, 0, started=5.0), result(1)]
    assert reader.abandoned() == [trial(1, 0)]
    assert reader.scan().damage == []


def test_a_resume_of_a_run_from_before_sequence_numbers_counts_its_kept_lines_as_legacy(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run", POINTS, [trial(0, 0), result(0), trial(1, 0)], status="running", legacy=True)
    assert RunDirectory.open(run).meta.records is None
    with resume_store(run) as store:
        assert store.meta.records == RecordCounts(legacy=2)  # trial(1, 0) of the cut-off repetition moved aside
        store.append_trial(trial(1, 0, started=5.0))
        store.append_result(result(1))
    assert [json.loads(ln).get("seq") for ln in _lines(run)] == [None, None, 1, 2]
    reader = RunDirectory.open(run)
    assert reader.meta.records == RecordCounts(written=2, trial=1, result=1, legacy=2)
    assert list(reader.records()) == [trial(0, 0), result(0), trial(1, 0, started=5.0), result(1)]
    assert reader.abandoned() == [trial(1, 0)]
    assert reader.scan().damage == []


def test_corrupt_line_is_reported_with_its_position(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    (tmp_path / "run" / "trials.jsonl").write_text('{"type":"trial"\n')
    with pytest.raises(StoreError, match=r"trials.jsonl:1: not a natbench record"):
        RunDirectory.open(tmp_path / "run").trials()


def test_parquet_export(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        for step in range(3):
            store.append_trial(trial(0, step))
        store.append_result(result(0))
    reader = RunDirectory.open(tmp_path / "run")
    path = reader.export_parquet()
    assert path.name == "trials.parquet"
    df = pd.read_parquet(path)
    assert len(df) == 3
    assert list(df["step"]) == [0, 1, 2]
    assert list(df["forward_valid"]) == [10, 10, 10]
    assert set(df["verdict"]) == {"pass"}
    res = pd.read_parquet(path.with_name("results.parquet"))
    assert list(res["value"]) == [5000.0]
    assert list(res["label"]) == ["iptables-4c-4M"]


def test_a_run_directory_has_one_writer_at_a_time(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    with pytest.raises(StoreError, match="another natbench process is writing this run"):
        resume_store(tmp_path / "run")
    store.close()
    resume_store(tmp_path / "run").close()  # released on close (and by the kernel when a process dies)


def test_a_crash_between_saving_and_rewriting_does_not_duplicate_abandoned_trials(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    run = tmp_path / "run"
    # as if a previous resume had saved the cut-off trial and died before rewriting trials.jsonl
    (run / ABANDONED).write_text((run / "trials.jsonl").read_text())
    resume_store(run).close()
    reader = RunDirectory.open(run)
    assert reader.abandoned() == [trial(0, 0)]
    assert reader.trials() == []


def test_a_repeated_save_skips_an_abandoned_trial_held_out_of_sequence_order(tmp_path: Path) -> None:
    # trials.abandoned.jsonl keeps trials in the order they were moved aside, not by seq: here seq 2 (an abandon of
    # repetition 1), then seq 1, saved by a resume that died before rewriting trials.jsonl. The next resume cuts
    # seq 1 again and must find it already held, though it comes after a higher seq
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))  # seq 1
        store.append_trial(trial(1, 0))  # seq 2
        assert store.abandon([(PID, "cps", 1)]) == 1
    with (run / ABANDONED).open("a", encoding="utf-8") as f:
        f.write((run / "trials.jsonl").read_text())
    resume_store(run).close()
    assert [json.loads(line)["seq"] for line in (run / ABANDONED).read_text().splitlines()] == [2, 1]
    reader = RunDirectory.open(run)
    assert reader.abandoned() == [trial(1, 0), trial(0, 0)]
    assert reader.trials() == []


def test_non_finite_values_are_stored_as_null(tmp_path: Path) -> None:
    odd = RepetitionResult(PID, "latency", 0, float("nan"), "s", None, {"worst_case": float("inf"), "ok": 1.5})
    with new_store(tmp_path) as store:
        store.append_result(odd)
    [back] = RunDirectory.open(tmp_path / "run").results()
    assert back.value is None
    assert back.extra == {"worst_case": None, "ok": 1.5}


# ----------------------------------------------------------------------------- moving a lost testbed's trials aside
def test_abandon_moves_the_trials_of_the_unfinished_repetitions_named_and_the_store_writes_on(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))  # seq 1  repetition 0: complete
        store.append_result(result(0))  # seq 2
        store.append_trial(trial(1, 0))  # seq 3  repetition 1: unfinished, named
        store.append_trial(trial(1, 1, Verdict.INVALID))  # seq 4
        store.append_trial(trial(2, 0))  # seq 5  repetition 2: unfinished, not named
        lines = _lines(run)
        assert store.abandon([(PID, "cps", 0), (PID, "cps", 1)]) == 2
        # trials.jsonl keeps the other records byte for byte; the two lines moved aside as they were
        assert _lines(run) == [lines[0], lines[1], lines[4]]
        assert (run / ABANDONED).read_text() == lines[2] + "\n" + lines[3] + "\n"
        assert store.counts == RecordCounts(written=5, trial=4, result=1, moved=((3, 4),))
        assert RunDirectory.open(run).meta.records == store.counts  # counted in run.json, not only in memory
        assert RunDirectory.open(run).scan().damage == []
        store.append_trial(trial(1, 0, started=9.0))  # measured again, through the reopened trials file: seq 6
        assert json.loads(_lines(run)[-1])["seq"] == 6
    reader = RunDirectory.open(run)
    assert reader.scan().damage == [] and reader.scan().notes == []
    assert list(reader.records()) == [trial(0, 0), result(0), trial(2, 0), trial(1, 0, started=9.0)]
    assert reader.abandoned() == [trial(1, 0), trial(1, 1, Verdict.INVALID)]


def test_abandon_adds_to_the_ranges_moved_before_and_merges_neighbours(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))  # seq 1
        store.append_trial(trial(1, 0))  # seq 2
        store.append_trial(trial(2, 0))  # seq 3
        assert store.abandon([(PID, "cps", 1)]) == 1
        assert store.counts.moved == ((2, 2),)
        assert store.abandon([(PID, "cps", 0), (PID, "cps", 2)]) == 2
        assert store.counts.moved == ((1, 3),)
        assert _lines(run) == []
    reader = RunDirectory.open(run)
    assert reader.meta.records == RecordCounts(written=3, trial=3, moved=((1, 3),))
    assert reader.abandoned() == [trial(1, 0), trial(0, 0), trial(2, 0)]
    assert reader.scan().damage == []


def test_abandon_moves_nothing_and_writes_nothing_for_finished_or_untried_repetitions(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(1, 0, metric="throughput"))  # another metric's repetition 1 was started
        before = {name: (run / name).read_bytes() for name in ("trials.jsonl", "run.json")}
        inode = (run / "trials.jsonl").stat().st_ino
        assert store.abandon([]) == 0
        assert store.abandon([(PID, "cps", 0)]) == 0  # finished: its trials stay with its result
        assert store.abandon([(PID, "cps", 1), ("other-point", "throughput", 1)]) == 0  # no trial stored of these
        assert {name: (run / name).read_bytes() for name in before} == before
        assert (run / "trials.jsonl").stat().st_ino == inode  # not even rewritten alike
        assert not (run / ABANDONED).exists()
        store.append_result(result(1, metric="throughput"))
    stored = [trial(0, 0), result(0), trial(1, 0, metric="throughput"), result(1, metric="throughput")]
    assert list(RunDirectory.open(run).records()) == stored


def test_abandon_refuses_damaged_records_and_changes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 1))
        lines = _lines(run)
        lines[0] = lines[0].replace('"phase1"', '"phase2"')  # the checksum no longer matches
        (run / "trials.jsonl").write_text("".join(ln + "\n" for ln in lines))
        meta = (run / "run.json").read_bytes()
        with pytest.raises(StoreError) as err:
            store.abandon([(PID, "cps", 0)])
        message = str(err.value).splitlines()
        assert message[0] == f"{run}: damaged run directory (1 problem(s)):"
        assert message[1].startswith(f"  {run / 'trials.jsonl'}:1: ")
        assert message[2:] == [DAMAGE_HINT.format(path=run)]
        assert _lines(run) == lines and (run / "run.json").read_bytes() == meta
        assert not (run / ABANDONED).exists()


def test_a_closed_store_refuses_to_abandon(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.append_trial(trial(0, 0))
    store.close()
    with pytest.raises(StoreError) as err:
        store.abandon([(PID, "cps", 0)])
    assert str(err.value) == f"{tmp_path / 'run'}: store is closed"
    assert RunDirectory.open(tmp_path / "run").trials() == [trial(0, 0)]


def test_an_abandon_whose_rewrite_fails_leaves_a_run_a_resume_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    store = new_store(tmp_path)
    store.append_trial(trial(0, 0))
    store.append_result(result(0))
    store.append_trial(trial(1, 0))
    real_write = writer_module.atomic_write

    def full_disk_for_trials(path: Path, text: str) -> None:
        if path.name == "trials.jsonl":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, text)

    monkeypatch.setattr(writer_module, "atomic_write", full_disk_for_trials)
    with pytest.raises(RunWriteError, match=r"trials\.jsonl: cannot be written: No space left") as failed:
        store.abandon([(PID, "cps", 1)])
    assert f"`natbench run --resume {run}` continues the run" in str(failed.value)  # the command to run, whole
    monkeypatch.undo()
    # run.json counted the move first: the trial still in trials.jsonl reads as a leftover, not as damage
    reader = RunDirectory.open(run)
    assert reader.meta.records == RecordCounts(written=3, trial=2, result=1, moved=((3, 3),))
    assert reader.scan().damage == [] and list(reader.records()) == [trial(0, 0), result(0)]
    assert reader.abandoned() == [trial(1, 0)]
    # the trials file it closed is not written to again
    with pytest.raises(StoreError, match="store is closed"):
        store.append_trial(trial(1, 0, started=5.0))
    store.close()
    with resume_store(run) as again:
        again.append_trial(trial(1, 0, started=5.0))
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0), trial(1, 0, started=5.0)]
    assert reader.abandoned() == [trial(1, 0)]  # once


def test_an_abandon_that_cannot_save_the_trials_aside_changes_nothing_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(1, 0))
        before = (run / "trials.jsonl").read_text(), (run / "run.json").read_text()

        def full_disk(p: Path, lines: list[str]) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(writer_module, "save_abandoned", full_disk)
        with pytest.raises(
            RunWriteError, match=r"trials\.abandoned\.jsonl: cannot be written: No space left"
        ) as failed:
            store.abandon([(PID, "cps", 1)])
        assert f"`natbench run --resume {run}` continues the run" in str(failed.value)
        monkeypatch.undo()
        assert ((run / "trials.jsonl").read_text(), (run / "run.json").read_text()) == before
        assert store.abandon([(PID, "cps", 1)]) == 1  # once there is room, the same call moves them
    assert RunDirectory.open(run).abandoned() == [trial(1, 0)]


# ----------------------------------------------------------------------------- verification before "complete"
def test_verify_accepts_intact_records_holding_every_planned_result(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(0, 0, metric="throughput"))
        store.append_result(result(0, metric="throughput"))
        store.verify([(PID, "cps", 0), (PID, "throughput", 0)])
        store.verify(iter([(PID, "cps", 0)]))  # fewer planned than stored: still complete
        store.verify([])


def test_verify_refuses_a_planned_repetition_with_trials_but_no_result(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        store.append_trial(trial(1, 0))  # cut off: trials, no result
        with pytest.raises(StoreError) as err:
            store.verify([(PID, "cps", 1), (PID, "cps", 0)])
    assert str(err.value) == (
        f"{tmp_path / 'run' / 'trials.jsonl'}: 1 planned repetition(s) have no stored result ({PID} cps repetition 1):"
        " the run is not complete"
    )


def test_verify_names_at_most_five_missing_repetitions_in_order(tmp_path: Path) -> None:
    trials = tmp_path / "run" / "trials.jsonl"
    with new_store(tmp_path) as store:
        five = [(PID, "cps", r) for r in (4, 2, 0, 3, 1)]
        with pytest.raises(StoreError) as err:
            store.verify(five)
        named = ", ".join(f"{PID} cps repetition {r}" for r in range(5))
        assert str(err.value) == (
            f"{trials}: 5 planned repetition(s) have no stored result ({named}): the run is not complete"
        )
        with pytest.raises(StoreError) as err:
            store.verify([*five, (PID, "cps", 5)])
        assert str(err.value) == (
            f"{trials}: 6 planned repetition(s) have no stored result ({named}, ...): the run is not complete"
        )


def test_verify_refuses_damaged_records_even_when_every_result_is_there(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
        with open(run / "trials.jsonl", "a", encoding="utf-8") as f:
            f.write("not a record\n")  # appended by something else
        with pytest.raises(StoreError) as err:
            store.verify([(PID, "cps", 0)])
    message = str(err.value).splitlines()
    assert message[0] == f"{run}: damaged run directory (1 problem(s)):"
    assert message[1].startswith(f"  {run / 'trials.jsonl'}:3: ")
    assert message[2:] == [DAMAGE_HINT.format(path=run)]


# ----------------------------------------------------------------------------- exact file contents

HEAD = "0123456789abcdef0123456789abcdef01234567"


class Clock:
    """Stands in for the writer's and repair's ``time`` module: ``time()`` returns ``now``, which the test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def fixed_facts(monkeypatch: pytest.MonkeyPatch, now: float) -> Clock:
    """Pin what run.json takes from the machine: the clock, the host facts and the git commit."""
    clock = Clock(now)
    monkeypatch.setattr(writer_module, "time", clock)
    monkeypatch.setattr(repair_module, "time", clock)
    monkeypatch.setattr(writer_module, "host_facts", lambda: HostFacts(hostname="bench-1", cpus=2))
    monkeypatch.setattr(writer_module, "git_commit", lambda: HEAD)
    return clock


def test_new_meta_describes_a_run_that_has_just_started_and_written_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json of a new run: running, this natbench's version, started now, and counts of zero records (not the
    unknown counts of a run.json written before natbench counted its records)."""
    fixed_facts(monkeypatch, 1_700_000_000.25)
    meta = writer_module.new_meta(campaign_file="t.yaml", campaign_name="t", dut_facts={"dut": {"kernel": "x"}})
    assert (meta.status, meta.natbench_version, meta.started_at) == ("running", __version__, 1_700_000_000.25)
    assert (meta.campaign_file, meta.campaign_name, meta.git_commit) == ("t.yaml", "t", HEAD)
    assert meta.records == RecordCounts() and meta.records.written == 0
    assert meta.ended_at is None


def test_run_json_and_points_json_at_creation_are_indented_json_with_sorted_run_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed_facts(monkeypatch, 1_700_000_000.25)
    new_store(tmp_path).close()
    run = tmp_path / "run"
    # run.json: keys sorted at every level, two-space indent, a final newline; status running, no end yet
    assert (run / "run.json").read_text() == (
        "{\n"
        '  "campaign_file": "t.yaml",\n'
        '  "campaign_name": "t",\n'
        '  "duts": {\n'
        '    "dut": {\n'
        '      "kernel": "x"\n'
        "    }\n"
        "  },\n"
        f'  "git_commit": "{HEAD}",\n'
        '  "host": {\n'
        '    "cpus": 2,\n'
        '    "hostname": "bench-1"\n'
        "  },\n"
        f'  "natbench_version": "{__version__}",\n'
        '  "records": {\n'
        '    "legacy": 0,\n'
        '    "moved": [],\n'
        '    "result": 0,\n'
        '    "trial": 0,\n'
        '    "written": 0\n'
        "  },\n"
        '  "started_at": 1700000000.25,\n'
        '  "status": "running",\n'
        '  "tester": {\n'
        '    "kind": "fake"\n'
        "  }\n"
        "}\n"
    )
    # points.json: the working points in the order of their fields, two-space indent, a final newline
    assert (run / "points.json").read_text() == (
        "[\n"
        "  {\n"
        f'    "id": "{PID}",\n'
        '    "index": 0,\n'
        '    "label": "iptables-4c-4M",\n'
        '    "name": "iptables",\n'
        '    "cores": 4,\n'
        '    "src_ports": [\n'
        "      1,\n"
        "      4000\n"
        "    ],\n"
        '    "dst_ports": [\n'
        "      1,\n"
        "      1000\n"
        "    ],\n"
        '    "connections": 4000000,\n'
        '    "frame_size": 64,\n'
        '    "dut_params": {},\n'
        '    "swept_dut": null\n'
        "  }\n"
        "]\n"
    )
    assert (run / "campaign.yaml").read_text() == "name: t\n"
    assert (run / "trials.jsonl").read_text() == ""
    assert sorted(p.name for p in run.iterdir()) == ["campaign.yaml", "points.json", "run.json", "trials.jsonl"]


def test_run_json_without_tester_or_dut_facts_holds_empty_mappings(tmp_path: Path) -> None:
    RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=POINTS).close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (meta["tester"], meta["duts"], meta["campaign_file"], meta["campaign_name"]) == ({}, {}, None, None)


def test_run_json_records_the_host_natbench_runs_on(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["host"] == {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def test_status_changes_rewrite_run_json_with_the_time_and_the_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fixed_facts(monkeypatch, 100.0)
    run = tmp_path / "run"

    def meta() -> dict[str, object]:
        return dict(json.loads((run / "run.json").read_text()))

    store = new_store(tmp_path)
    assert store.reader().meta.to_dict() == meta()  # the store's reader sees run.json as written
    started = {k: v for k, v in meta().items() if k not in ("status",)}
    clock.now = 150.0
    store.set_status("running")  # still running: no end time
    assert meta() == {**started, "status": "running"}
    clock.now = 200.0
    store.set_status("failed", "DUT unreachable")
    assert meta() == {**started, "status": "failed", "failure": "DUT unreachable", "ended_at": 200.0}
    store.close()

    clock.now = 300.0
    store = resume_store(run)  # running again: the failure is gone, the resume time recorded
    # (the last attempt's end time stays until the run ends again)
    assert meta() == {**started, "status": "running", "ended_at": 200.0, "resumed_at": [300.0]}
    clock.now = 400.0
    store.set_status("failed", "tester fell behind")
    clock.now = 500.0
    store.set_status("complete")  # a later success clears the failure
    assert meta() == {**started, "status": "complete", "ended_at": 500.0, "resumed_at": [300.0]}
    store.close()
    clock.now = 600.0
    resume_store(run).close()
    assert meta()["resumed_at"] == [300.0, 600.0]


def test_set_status_refuses_a_status_natbench_does_not_write_naming_those_it_does(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with new_store(tmp_path) as store:
        before = (run / "run.json").read_bytes()
        with pytest.raises(ValueError) as err:
            store.set_status("done")
        assert str(err.value) == "status: expected one of running, complete, failed, got 'done'"
        assert (run / "run.json").read_bytes() == before


def test_run_json_is_rewritten_as_indented_json_with_sorted_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed_facts(monkeypatch, 7.5)
    with RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=POINTS) as store:
        store.record_tester_facts({"version": "2.1", "backend": "fake"})  # the old key read as ``kind``
        store.add_other({"where": Path("/srv/runs")})
    # a key natbench does not know is kept; a value JSON has no form for (a path) is stored as its text
    assert (tmp_path / "run" / "run.json").read_text() == (
        "{\n"
        '  "campaign_file": null,\n'
        '  "campaign_name": null,\n'
        '  "duts": {},\n'
        f'  "git_commit": "{HEAD}",\n'
        '  "host": {\n'
        '    "cpus": 2,\n'
        '    "hostname": "bench-1"\n'
        "  },\n"
        f'  "natbench_version": "{__version__}",\n'
        '  "records": {\n'
        '    "legacy": 0,\n'
        '    "moved": [],\n'
        '    "result": 0,\n'
        '    "trial": 0,\n'
        '    "written": 0\n'
        "  },\n"
        '  "started_at": 7.5,\n'
        '  "status": "running",\n'
        '  "tester": {\n'
        '    "kind": "fake",\n'
        '    "version": "2.1"\n'
        "  },\n"
        '  "where": "/srv/runs"\n'
        "}\n"
    )


def test_trials_jsonl_holds_one_compact_json_object_per_record_with_sorted_keys(tmp_path: Path) -> None:
    res = RepetitionResult(PID, "cps", 0, 5000.0, "cps", 100.0, {"steps": 2, "bounds": [4000.0, 6000.0]})
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(res)
    # keys sorted at every level (counts: received < sent < valid), no spaces, "type" says which record,
    # "seq" numbers the records from 1; "crc32" (sorted first) is the CRC-32 of the record without it
    trial_body = (
        '{"achieved_rate":1000.0,"counts":{"forward":{"received":10,"sent":10,"valid":10}},"ended_at":2.0,'
        '"extra":{},"intended_rate":1000.0,"kind":"phase1","lower":0.0,"metric":"cps",'
        f'"point_id":"{PID}","reason":"","repetition":0,"seq":1,"started_at":1.0,"step":0,"type":"trial",'
        '"upper":10000.0,"value":null,"verdict":"pass"}'
    )
    result_body = (
        '{"error":100.0,"extra":{"bounds":[4000.0,6000.0],"steps":2},"metric":"cps",'
        f'"point_id":"{PID}","repetition":0,"seq":2,"type":"result","unit":"cps","value":5000.0}}'
    )

    def with_crc(body: str, before: str) -> str:  # "crc32" takes its sorted place, before the key ``before``
        crc = f"{zlib.crc32(body.encode()):08x}"
        return body.replace(f'"{before}":', f'"crc32":"{crc}","{before}":', 1) + "\n"

    assert (tmp_path / "run" / "trials.jsonl").read_text() == with_crc(trial_body, "ended_at") + with_crc(
        result_body, "error"
    )


def test_a_record_json_cannot_hold_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    nan_key = RepetitionResult(PID, "latency", 0, 1.0, "s", None, {float("nan"): 1.0})
    odd = dataclasses.replace(trial(0, 0), extra={"handle": object()})
    with new_store(tmp_path) as store:
        # a NaN dict key has no JSON form (values become null, a key cannot)
        with pytest.raises(StoreError, match=r"^cannot store a result record of latency: Out of range float"):
            store.append_result(nan_key)
        with pytest.raises(StoreError, match=r"^cannot store a trial record of cps: Object of type object is not"):
            store.append_trial(odd)
        assert not store.is_complete(PID, "latency", 0)
    assert (tmp_path / "run" / "trials.jsonl").read_text() == ""


def test_a_stored_result_marks_its_repetition_complete_at_once(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        assert not store.is_complete(PID, "cps", 0)
        store.append_result(result(0))
        assert store.is_complete(PID, "cps", 0)
        assert not store.is_complete(PID, "cps", 1)
        assert not store.is_complete(PID, "throughput", 0)


def test_non_finite_values_in_lists_are_stored_as_null(tmp_path: Path) -> None:
    odd = RepetitionResult(
        PID, "latency", 0, 2.0, "s", None, {"samples": [1.5, float("inf")], "pair": (float("nan"), 2)}
    )
    with new_store(tmp_path) as store:
        store.append_result(odd)
    [back] = RunDirectory.open(tmp_path / "run").results()
    assert back.extra == {"samples": [1.5, None], "pair": [None, 2]}


# ----------------------------------------------------------------------------- errors name file and line


def test_a_line_of_an_unknown_record_type_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    path = tmp_path / "run" / "trials.jsonl"
    with open(path, "a") as f:
        f.write('{"type":"note","text":"DUT rebooted"}\n')
    with pytest.raises(StoreError) as err:
        RunDirectory.open(tmp_path / "run").trials()
    assert f"\n  {path}:2: type: expected 'trial' or 'result', got 'note'\n" in str(err.value)


def test_a_damaged_abandoned_line_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 1))
    run = tmp_path / "run"
    resume_store(run).close()  # both trials of the cut-off repetition 0 moved aside
    path = run / ABANDONED
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + second[:30] + "\n")
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run).abandoned()
    assert str(err.value).startswith(f"{path}:2: not a natbench record: ")


def test_corrupt_run_json_is_named(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    run = tmp_path / "run"
    (run / "run.json").write_text('{"status": "running"')
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run)
    assert str(err.value).startswith(f"{run / 'run.json'}: not valid JSON: ")  # as the lenient reader says it


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("run.json", ""),
        ("trials.jsonl", '{"type":"trial"}\n'),  # a record but no run.json: not a half-created directory
        ("campaign.yaml", "name: t\n"),  # beside a file natbench does not write (below)
    ],
)
def test_create_refuses_a_directory_holding_any_run_file_and_leaves_it_unlocked(
    tmp_path: Path, name: str, text: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / name).write_text(text)
    if name == "campaign.yaml":
        (run / "notes.txt").write_text("mine\n")
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(StoreError) as err:
        new_store(tmp_path)
    assert str(err.value) == f"{run}: already holds a run; use --resume to continue it or choose another directory"
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_a_pytest_session_run_cannot_be_resumed_and_the_error_says_what_to_do(tmp_path: Path) -> None:
    RunStore.create(tmp_path / "session", campaign_text="kind: natbench-experiment\nname: s\n", points=POINTS).close()
    RunStore.create(tmp_path / "campaign", campaign_text="name: t\n", points=POINTS).close()
    session = RunDirectory.open(tmp_path / "session")
    assert session.experiment_session
    with pytest.raises(StoreError) as err:
        session.check_resumable()
    where = tmp_path / "session"
    assert str(err.value) == (
        f"{where}: written by a pytest session (natbench.run.experiment), not by `natbench run`: its campaign.yaml"
        " records the session's measurements, not a campaign, so it cannot be resumed; re-run the pytest session"
        f" (or script) instead, which writes a new run directory (`natbench report {where}` reads what this one"
        " holds)"
    )
    RunDirectory.open(tmp_path / "campaign").check_resumable()  # a campaign run: no objection


# ----------------------------------------------------------------------------- creating, closing, locking


@pytest.mark.parametrize(
    "keyword",
    [
        {"campaign_file": "t.yaml"},
        {"campaign_name": "t"},
        {"tester_facts": {"kind": "fake"}},
        {"dut_facts": {"dut": {"kernel": "x"}}},
    ],
)
def test_create_takes_a_given_meta_or_its_keywords_never_both(tmp_path: Path, keyword: dict[str, object]) -> None:
    given = RunMeta(natbench_version="0.1", campaign_name="elsewhere", records=RecordCounts(written=9, trial=9))
    with pytest.raises(ValueError, match=r"^give either meta or its keywords, not both$"):
        RunStore.create(tmp_path / "both", campaign_text="name: t\n", points=POINTS, meta=given, **keyword)  # type: ignore[arg-type]
    assert not (tmp_path / "both" / "run.json").exists()
    with RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=POINTS, meta=given) as store:
        store.append_trial(trial(0, 0))
    stored = RunDirectory.open(tmp_path / "run").meta
    # run.json is the given one, its record counts those of what this store wrote
    assert (stored.natbench_version, stored.campaign_name, stored.git_commit) == ("0.1", "elsewhere", None)
    assert stored.records == RecordCounts(written=1, trial=1)


def test_create_makes_missing_parents_and_accepts_an_existing_empty_directory(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "run"
    RunStore.create(deep, campaign_text="name: t\n", points=POINTS).close()
    assert (deep / "run.json").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    RunStore.create(empty, campaign_text="name: t\n", points=POINTS).close()
    assert (empty / "run.json").is_file()


def test_a_closed_store_refuses_to_append_and_closing_twice_is_harmless(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.close()
    store.close()
    with pytest.raises(StoreError) as err:
        store.append_trial(trial(0, 0))
    assert str(err.value) == f"{tmp_path / 'run'}: store is closed"
    assert (tmp_path / "run" / "trials.jsonl").read_text() == ""
    resume_store(tmp_path / "run").close()  # and the run was released


def test_close_releases_the_run_even_when_closing_a_descriptor_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = new_store(tmp_path)
    store.append_trial(trial(0, 0))
    assert store._fh is not None
    os.close(store._fh.fileno())  # the trials file's descriptor is gone: closing the file fails with EBADF
    real_close = os.close
    failed: list[int] = []

    def close_reporting_eio(fd: int) -> None:
        real_close(fd)  # Linux frees the descriptor even when close() reports an error
        failed.append(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writer_module.os, "close", close_reporting_eio)
    store.close()  # neither error escapes
    monkeypatch.undo()
    assert len(failed) == 1  # the lock's descriptor
    resume_store(tmp_path / "run").close()  # the run is free for the next writer
    assert RunDirectory.open(tmp_path / "run").abandoned() == [trial(0, 0)]


def test_append_fd_appends_to_a_file_creating_it_and_exclusive_refuses_one_that_exists(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text("old\n")
    with pytest.raises(FileExistsError):
        append_fd(path, exclusive=True)
    fd = append_fd(path)
    os.write(fd, b"new\n")
    os.close(fd)
    assert path.read_text() == "old\nnew\n"  # appended, never over what is there
    fresh = tmp_path / "fresh.jsonl"
    fd = append_fd(fresh, exclusive=True)
    try:
        assert not os.get_inheritable(fd)  # a DUT's or tester's child process never holds a run file open
    finally:
        os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644 & ~umask


def test_append_fd_refuses_a_symbolic_link_in_the_file_s_place_and_writes_nothing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    link = tmp_path / "trials.jsonl"
    link.symlink_to(target)  # dangling: following it would create the target
    with pytest.raises(StoreError) as err:
        append_fd(link)
    assert str(err.value) == (
        f"{link}: a symbolic link: natbench writes a run directory's files itself, never through a link"
    )
    assert not target.exists()
    target.write_text("theirs\n")  # a link to an existing file is refused alike, the file left as it was
    with pytest.raises(StoreError, match="a symbolic link"):
        append_fd(link)
    assert target.read_text() == "theirs\n"


def test_a_store_given_run_json_without_record_counts_counts_from_zero(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    run = tmp_path / "run"
    meta = RunDirectory.open(run).meta.replace(records=None)  # a run.json from before record counts
    store = RunStore(run, meta, set(), lock_dir(run))
    try:
        assert store.counts == RecordCounts()
        assert store.meta.records == RecordCounts()
        store.append_trial(trial(0, 0))
        assert store.counts == RecordCounts(written=1, trial=1)
    finally:
        store.close()
    assert json.loads((run / "run.json").read_text())["records"]["written"] == 1


def test_half_created_is_false_for_a_path_that_is_no_directory(tmp_path: Path) -> None:
    assert not half_created(tmp_path / "missing")
    plain = tmp_path / "campaign.yaml"
    plain.write_text("name: t\n")
    assert not half_created(plain)
    half = tmp_path / "half"
    half.mkdir()
    (half / "campaign.yaml").write_text("name: t\n")
    assert half_created(half)  # the directory beside them that is half-created
    (half / "run.json").write_text("{}")
    assert not half_created(half)


def test_create_takes_over_a_half_created_directory_replacing_its_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "campaign.yaml").write_text("name: old\n")  # killed after writing these, before run.json
    (run / ".points.json.tmp").write_text("[")
    (run / "trials.jsonl").write_text("")
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    assert sorted(p.name for p in run.iterdir()) == ["campaign.yaml", "points.json", "run.json", "trials.jsonl"]
    assert (run / "campaign.yaml").read_text() == "name: t\n"
    assert RunDirectory.open(run).trials() == [trial(0, 0)]


def test_the_run_lock_is_only_taken_on_a_directory(tmp_path: Path) -> None:
    plain = tmp_path / "run.json"
    plain.write_text("{}")
    with pytest.raises(NotADirectoryError):
        lock_dir(plain)


# ----------------------------------------------------------------------------- the source's git commit


def fake_git(tmp_path: Path, script: str) -> Path:
    """A directory holding an executable ``git`` shell script (put it first on PATH)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    git = bindir / "git"
    git.write_text("#!/bin/sh\n" + script)
    git.chmod(0o755)
    return bindir


def test_run_json_records_the_head_commit_of_natbench_s_source_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = shlex.quote(str(Path(writer_module.__file__).resolve().parent))
    # answers only `git -C <natbench's source directory> rev-parse HEAD`, as git in a checkout would
    script = (
        f'if [ "$#" = 4 ] && [ "$1" = -C ] && [ "$2" = {src} ] && [ "$3" = rev-parse ] && [ "$4" = HEAD ]; then\n'
        f"  echo {HEAD}\n  exit 0\nfi\n"
        'echo "fatal: unexpected call: $*" >&2\nexit 128\n'
    )
    monkeypatch.setenv("PATH", str(fake_git(tmp_path, script)))
    new_store(tmp_path).close()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["git_commit"] == HEAD


def test_no_commit_is_recorded_when_git_fails_or_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # in a repository without commits, `git rev-parse HEAD` prints "HEAD" and fails
    failing = fake_git(tmp_path, "echo HEAD\necho \"fatal: ambiguous argument 'HEAD'\" >&2\nexit 128\n")
    monkeypatch.setenv("PATH", str(failing))
    assert writer_module.git_commit() is None
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert writer_module.git_commit() is None


@pytest.mark.parametrize(("seconds", "commit"), [(4.5, HEAD), (5.5, None), (3600.0, None)])
def test_git_gets_five_seconds_to_name_the_commit(
    monkeypatch: pytest.MonkeyPatch, seconds: float, commit: str | None
) -> None:
    def git_taking(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        limit = kwargs.get("timeout")
        if isinstance(limit, int | float) and seconds > limit:
            raise subprocess.TimeoutExpired(cmd, limit)
        return subprocess.CompletedProcess(cmd, 0, stdout=HEAD + "\n", stderr="")

    fake = SimpleNamespace(run=git_taking, SubprocessError=subprocess.SubprocessError)
    monkeypatch.setattr(writer_module, "subprocess", fake)
    assert writer_module.git_commit() == commit


# ----------------------------------------------------------------------------- DUT facts


@pytest.mark.parametrize(
    "facts",
    [
        {},  # no facts: nothing to key by name
        {"ce": {"release": "4.2"}, "kernel": "6.1"},  # one value is no DUT's facts: one DUT's flat facts
        "DUT reached, no facts read",  # not even a mapping
    ],
)
def test_dut_facts_are_filed_under_dut_unless_every_value_is_a_named_dut_s_facts(tmp_path: Path, facts: object) -> None:
    with new_store(tmp_path) as store:
        store.record_dut_facts("p1", facts)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["duts"] == {"dut": facts}
    assert meta["point_facts"] == {"p1": {"dut": facts}}


def test_dut_facts_keep_null_values(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.record_dut_facts("p1", {"kernel": "6.1", "irq_affinity": None, 3: "three"})
        assert store.meta.duts == {"dut": {"kernel": "6.1", "irq_affinity": None, "3": "three"}}
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["duts"] == {"dut": {"kernel": "6.1", "irq_affinity": None, "3": "three"}}


# ----------------------------------------------------------------------------- Parquet export


def test_parquet_export_to_a_chosen_path_writes_both_files_there(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    out = tmp_path / "export"
    out.mkdir()
    path = RunDirectory.open(tmp_path / "run").export_parquet(out / "t.parquet")
    assert path == out / "t.parquet"
    assert sorted(p.name for p in out.iterdir()) == ["results.parquet", "t.parquet"]
    assert not (tmp_path / "run" / "trials.parquet").exists()
    assert list(pd.read_parquet(path)["step"]) == [0]


def test_parquet_files_hold_the_record_columns_and_no_index(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 1))
        store.append_result(result(0))
    path = RunDirectory.open(tmp_path / "run").export_parquet()
    for file, columns in (
        (
            path,
            [
                *("point_id", "metric", "repetition", "step", "kind", "intended_rate", "achieved_rate", "verdict"),
                *("reason", "started_at", "ended_at", "lower", "upper", "value", "sent", "received", "valid"),
                *("forward_sent", "forward_received", "forward_valid"),
                *("reverse_sent", "reverse_received", "reverse_valid", "extra"),
            ],
        ),
        (
            path.with_name("results.parquet"),
            [
                *("point_id", "metric", "repetition", "value", "unit", "error", "directions", "reported"),
                "dut_cpu_busy",
                # what every search result stores and every result's host load (natbench.metrics.declare, hostload),
                # what each search algorithm declares (natbench.search: fast, mlr), then what each metric declares, in
                # measurement order: cps, frame loss, latency, PDV, tear-down, capacity
                *("tester_bound", "bound_by_rate", "bound_by_clumps", "at_upper_limit", "no_pass", "algorithm"),
                *("host_busy", "seeded", "short_bound", "search_goal", "unvalidated", "walk_incomplete"),
                *("worst_case", "fewer_tags", "tagged_only", "filled_delete_s", "empty_delete_s"),
                *("created_connections", "unverified", "not_reached", "timeout_unknown", "extra"),
                *("label", "connections", "cores"),
            ],
        ),
    ):
        schema = pq.read_schema(file)
        assert schema.names == columns  # no index column
        assert schema.pandas_metadata["index_columns"] == []  # and no index kept as metadata either


def test_parquet_export_writes_extra_as_json_with_sorted_keys_and_joins_the_points(tmp_path: Path) -> None:
    # extra dicts with their keys in another order than sorted
    run = write_run_dir(
        tmp_path / "run",
        [POINTS[0]],
        [
            dataclasses.replace(trial(0, 0), extra={"tx_ring": 512, "cpu": [10.0, 12.5]}),
            dataclasses.replace(result(0), extra={"steps": 2, "bounds": [1, 2]}),
        ],
    )
    reader = RunDirectory.open(run)
    path = reader.export_parquet()
    trials = pd.read_parquet(path)
    assert list(trials["extra"]) == ['{"cpu": [10.0, 12.5], "tx_ring": 512}']
    res = pd.read_parquet(path.with_name("results.parquet"))
    assert list(res["extra"]) == ['{"bounds": [1, 2], "steps": 2}']
    assert list(res["point_id"]) == [PID]
    # the point's label, connections and cores joined in (a record of a point points.json does not hold is damage:
    # tests/data/damaged-runs/cases.yaml)
    for column, value in (("label", "iptables-4c-4M"), ("connections", 4_000_000), ("cores", 4)):
        assert res[column].tolist() == [value]


def test_a_frame_of_records_made_in_memory_is_written_with_extra_keys_sorted(tmp_path: Path) -> None:
    """Not only records read back from trials.jsonl (stored with sorted keys): any frame of natbench.run.frames."""
    records = [dataclasses.replace(trial(0, 0), extra={"tx_ring": 512, "cpu": {"b": 1, "a": 2}})]
    frames.to_parquet(frames.trials_frame(records), tmp_path / "t.parquet")
    assert list(pd.read_parquet(tmp_path / "t.parquet")["extra"]) == ['{"cpu": {"a": 2, "b": 1}, "tx_ring": 512}']


# ----------------------------------------------------------------------------- encoding

# Run in a child without UTF-8 mode (which a parent started in the C locale has on for good). The child starts in
# C.UTF-8, so its arguments and environment are read as UTF-8, then switches to the ASCII locale C: from there on
# open() without an encoding reads and writes ASCII.
IN_ASCII_LOCALE = """
import codecs, json, locale, sys
locale.setlocale(locale.LC_CTYPE, "C")
from pathlib import Path
from natbench.run.reader import RunDirectory
from natbench.run.repair import resume_store
from natbench.run.writer import RunStore

done, fresh = Path(sys.argv[1]), Path(sys.argv[2])
RunStore.create(fresh, campaign_text="name: caf\\u00e9\\n", points=[]).close()
run = RunDirectory.open(done)
out = {
    "locale": codecs.lookup(locale.getpreferredencoding(False)).name,
    "campaign_name": run.meta.campaign_name,
    "point": run.points[0].name,
    "notes": [t.extra["note"] for t in run.trials()],
}
resume_store(done).close()
out["abandoned"] = [t.extra["note"] for t in RunDirectory.open(done).abandoned()]
print(json.dumps(out))
"""


def test_run_files_are_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """JSON is UTF-8: raw non-ASCII text (as another tool or a hand edit writes it) reads the same in any locale."""
    run = tmp_path / "run"
    new_store(tmp_path).close()
    meta = json.loads((run / "run.json").read_text()) | {"campaign_name": "Zoë's NAT"}
    del meta["records"]  # a run directory from before record counts: its hand-written line needs no "seq"
    (run / "run.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    point = PointRecord.of(dataclasses.replace(POINTS[0], name="pare-feu à états")).to_dict()  # label follows name
    (run / "points.json").write_text(json.dumps([point], ensure_ascii=False), encoding="utf-8")
    cut_off = {"type": "trial", **trial(0, 0).to_dict(), "extra": {"note": "délai 5 µs"}}
    raw_line = json.dumps(cut_off, ensure_ascii=False) + "\n"
    (run / "trials.jsonl").write_text(raw_line, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_CTYPE")} | {
        "LANG": "C.UTF-8",
        "PYTHONUTF8": "0",
    }
    source_root = Path(writer_module.__file__).resolve().parents[2]  # the natbench tree this test imports
    proc = subprocess.run(
        [sys.executable, "-c", IN_ASCII_LOCALE, str(run), str(tmp_path / "fresh")],
        cwd=source_root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "locale": "ascii",  # the child really ran with an ASCII default encoding
        "campaign_name": "Zoë's NAT",
        "point": "pare-feu à états",
        "notes": ["délai 5 µs"],
        "abandoned": ["délai 5 µs"],
    }
    assert (tmp_path / "fresh" / "campaign.yaml").read_bytes() == "name: café\n".encode()
    assert (run / ABANDONED).read_bytes() == raw_line.encode()  # moved aside byte for byte
    assert (run / "trials.jsonl").read_text() == ""
    resume_store(run).close()  # (the same calls in this process: nothing left to move)
    assert [t.extra for t in RunDirectory.open(run).abandoned()] == [{"note": "délai 5 µs"}]


# ----------------------------------------------------------------------------- plain reading, session files, latest
def test_the_plain_reader_reads_what_the_store_wrote(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    plain = read_run(tmp_path / "run")
    assert plain.meta == RunDirectory.open(tmp_path / "run").meta
    assert plain.campaign_text == "name: t\n" and plain.points == [PointRecord.of(POINTS[0])]
    assert plain.trials == [trial(0, 0)]
    assert plain.results == [result(0)]
    assert plain.warnings == []


def test_the_plain_reader_names_what_it_cannot_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    new_store(tmp_path).close()
    (run / "campaign.yaml").unlink()
    (run / "trials.jsonl").unlink()
    plain = read_run(run)
    assert plain.campaign_text == "" and plain.trials == plain.results == []
    assert plain.warnings == [f"{run / 'trials.jsonl'}: missing (no trial stored yet)"]  # run.json counts 0
    (run / "trials.jsonl").write_text('{"type": "step"}\n')
    assert read_run(run).damage == [f"{run / 'trials.jsonl'}:1: type: expected 'trial' or 'result', got 'step'"]
    (run / "points.json").write_text('{"id": "x"}')
    with pytest.raises(StoreError, match=r"points.json: expected a list of working points$"):
        read_run(run)
    (run / "points.json").write_text("[")
    with pytest.raises(StoreError, match=r"points.json: not valid JSON: "):
        read_run(run)
    (run / "run.json").unlink()
    with pytest.raises(StoreError, match=r"run.json: missing; is this a natbench run directory\?$"):
        read_run(run)


def test_the_plain_reader_names_the_run_directory_and_the_file_it_cannot_decode(tmp_path: Path) -> None:
    run = tmp_path / "run"
    new_store(tmp_path).close()
    assert read_run(str(run)).path == run  # the directory it read, as a Path
    (run / "campaign.yaml").write_bytes(b"name: \xff\n")
    with pytest.raises(StoreError) as err:
        read_run(run)
    assert str(err.value) == f"{run / 'campaign.yaml'}: cannot be read as UTF-8 text (byte at offset 6)"
    (run / "run.json").write_text("[]", "utf-8")
    with pytest.raises(StoreError) as err:
        read_run(run)
    assert str(err.value) == f"{run / 'run.json'}: expected a JSON object"


def test_the_plain_reader_names_the_run_directory_for_a_disk_error_that_names_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # closing trials.jsonl reports a deferred write-back error (EIO, as a network file system may at close): an
    # OSError that carries no file name, so the StoreError names the run directory
    from natbench.run import records

    real = records.open_regular

    class CloseFails(io.BufferedReader):
        def close(self) -> None:
            was_open = not self.closed
            super().close()
            if was_open:  # once, like the kernel's report of the error
                raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(records, "open_regular", lambda path: CloseFails(real(path).detach()))
    run = tmp_path / "run"
    new_store(tmp_path).close()
    with pytest.raises(StoreError) as err:
        read_run(run)
    assert str(err.value) == f"{run}: cannot be read: Input/output error"


def test_the_plain_reader_reads_a_repaired_file_only_when_run_json_names_it_and_it_is_there(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    run = tmp_path / "run"
    (run / ".trials.repaired.jsonl").write_bytes(b"")  # left over, but run.json names no pending repair
    plain = read_run(run)
    assert plain.trials == [trial(0, 0)] and plain.warnings == [] and plain.damage == []
    (run / ".trials.repaired.jsonl").unlink()
    meta = json.loads((run / "run.json").read_text("utf-8"))
    (run / "run.json").write_text(json.dumps({**meta, "repair_pending": ".trials.repaired.jsonl"}), "utf-8")
    plain = read_run(run)  # named, but gone (the rename went through): trials.jsonl is the file
    assert plain.trials == [trial(0, 0)] and plain.warnings == [] and plain.damage == []
    (run / ".trials.repaired.jsonl").write_bytes((run / "trials.jsonl").read_bytes())
    (run / "trials.jsonl").write_bytes(b"")  # named and there: the repair stopped before its rename
    plain = read_run(run)
    assert plain.trials == [trial(0, 0)] and plain.damage == []
    assert plain.warnings == [
        f"{run / 'trials.jsonl'}: a repair stopped before renaming .trials.repaired.jsonl over it; read from"
        " .trials.repaired.jsonl (the next `natbench run --resume` finishes the repair)"
    ]


def test_the_plain_reader_holds_records_of_a_metric_natbench_does_not_know_as_damage(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 0, metric="warp_speed"))
    run = tmp_path / "run"
    plain = read_run(run)
    assert plain.damage == [f"{run / 'trials.jsonl'}:2: metric: 'warp_speed' is no metric this natbench knows"]
    assert plain.trials == [trial(0, 0)]


def _counts_change_while_reading(run: Path, monkeypatch: pytest.MonkeyPatch, after: str) -> None:
    """run.json becomes ``after`` once trials.jsonl has been read the first time (a writer going on meanwhile)."""
    real = reader_module.scan
    calls = []

    def scanning(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        if not calls:
            (run / "run.json").write_text(after, "utf-8")
        calls.append(kwargs.get("counted_after"))
        return found

    monkeypatch.setattr(reader_module, "scan", scanning)


def _three_trials_counted_complete(tmp_path: Path, counted: int, first_metric: str = "cps") -> tuple[Path, str]:
    """A run directory of 3 trials (the first of ``first_metric``) whose run.json counts ``counted`` in a run marked
    complete; and its run.json as the store wrote it (3 counted, running)."""
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0, metric=first_metric))
        store.append_trial(trial(1, 0))
        store.append_trial(trial(2, 0))
    run = tmp_path / "run"
    final = (run / "run.json").read_text("utf-8")
    meta = json.loads(final)
    marked = {**meta, "records": {"written": counted, "trial": counted}, "status": "complete"}
    (run / "run.json").write_text(json.dumps(marked), "utf-8")
    return run, final


def test_the_plain_reader_holds_records_against_run_json_read_again_after_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run.json, read first, counted 1 record of a complete run; the file held 3; run.json read again counts 3 in a
    # running run: a resume set the run running and appended meanwhile, so only what is wrong with a record itself
    # is damage (the first is of a metric natbench does not know)
    run, final = _three_trials_counted_complete(tmp_path, 1, first_metric="warp_speed")
    _counts_change_while_reading(run, monkeypatch, final)
    plain = read_run(run)
    assert plain.damage == [f"{run / 'trials.jsonl'}:1: metric: 'warp_speed' is no metric this natbench knows"]
    assert plain.trials == [trial(1, 0), trial(2, 0)]


@pytest.mark.parametrize("read_again", ["{", None], ids=["unreadable", "agreeing"])
def test_the_plain_reader_names_a_record_appended_to_a_complete_run_whatever_run_json_read_again_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_again: str | None
) -> None:
    # run.json counted 2 records of a complete run, the file holds 3; run.json read again is no JSON (being
    # replaced: the file is held against the first reading) or agrees with the first reading
    run, _ = _three_trials_counted_complete(tmp_path, 2)
    if read_again is not None:
        _counts_change_while_reading(run, monkeypatch, read_again)
    plain = read_run(run)
    assert plain.damage == [_third_appended_after_the_end(run)]
    assert plain.trials == [trial(0, 0), trial(1, 0)]


def test_the_plain_reader_holds_a_running_writers_records_against_run_json_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run.json, read first, counted 1 record of a running run; the writer then appended 2 more and counted them:
    # the docstring of natbench.run.records promises no damage ("or more while a writer is still running")
    with new_store(tmp_path) as store:
        for rep in range(3):
            store.append_trial(trial(rep, 0))
    run = tmp_path / "run"
    final = (run / "run.json").read_text("utf-8")
    meta = json.loads(final)
    (run / "run.json").write_text(json.dumps({**meta, "records": {"written": 1, "trial": 1}}), "utf-8")
    _counts_change_while_reading(run, monkeypatch, final)
    assert read_run(run).damage == []


def test_the_plain_reader_names_malformed_record_counts_and_reads_the_lines_as_far_as_they_allow(
    tmp_path: Path,
) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    run = tmp_path / "run"
    meta = json.loads((run / "run.json").read_text("utf-8"))
    (run / "run.json").write_text(json.dumps({**meta, "records": {"written": -1}}), "utf-8")
    plain = read_run(run)
    assert plain.damage == [
        f"{run / 'run.json'}: records: written: expected a whole number from 0 to {1 << 40}, got -1"
    ]
    assert plain.trials == [trial(0, 0)]


def test_an_experiment_session_rewrites_its_campaign_and_points(tmp_path: Path) -> None:
    more = [*POINTS, dataclasses.replace(POINTS[0], index=1, cores=2)]
    with new_store(tmp_path) as store:
        store.rewrite_session("kind: natbench-experiment\n", more)
    run = RunDirectory.open(tmp_path / "run")
    assert run.campaign_text == "kind: natbench-experiment\n"
    assert run.points == [PointRecord.of(p) for p in more]
    assert sorted(p.name for p in run.path.iterdir()) == ["campaign.yaml", "points.json", "run.json", "trials.jsonl"]


def test_latest_points_at_the_newest_run_directory(tmp_path: Path) -> None:
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        link_latest(tmp_path / name)
        assert os.readlink(tmp_path / "latest") == name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "latest", "second"]  # no temporary link left
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").mkdir()  # not a link: left alone
    link_latest(tmp_path / "first")
    assert (tmp_path / "latest").is_dir() and not (tmp_path / "latest").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "latest", "second"]


def test_a_failed_run_names_the_error_type_and_message_in_run_json(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.mark_failed(ValueError("tester lost link"))
    store.close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))
    assert (meta["status"], meta["failure"]) == ("failed", "ValueError: tester lost link")


def test_a_run_stopped_by_ctrl_c_is_marked_failed_as_interrupted(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.mark_failed(KeyboardInterrupt())
    store.close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))
    assert (meta["status"], meta["failure"]) == ("failed", "interrupted by Ctrl-C")


def test_marking_a_run_failed_never_raises_over_the_runs_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = new_store(tmp_path)

    def full_disk(path: Path, meta: RunMeta) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module, "write_meta_file", full_disk)
    store.mark_failed(RuntimeError("the run's own error"))  # must return: the caller re-raises the run's error
    monkeypatch.undo()
    store.close()
    assert json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))["status"] == "running"


def _damaged_run(tmp_path: Path) -> Path:
    """A run of two trials whose second line was changed after writing (its checksum no longer matches)."""
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_trial(trial(0, 1))
    path = tmp_path / "run" / "trials.jsonl"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    changed = lines[1].replace('"step":1', '"step":9')
    assert changed != lines[1]
    path.write_text(lines[0] + changed, "utf-8")
    return tmp_path / "run"


def test_a_resume_check_of_a_damaged_run_lists_the_damage_and_how_to_repair(tmp_path: Path) -> None:
    run = _damaged_run(tmp_path)
    with pytest.raises(StoreError) as err:
        RunDirectory.open(run).check_resume()  # without repair: refused
    # one problem: line 2's checksum (run.json's 2 trials against the 1 intact one left is that same damage, so
    # the per-kind count check of an otherwise intact file adds no line of its own)
    lines = str(err.value).splitlines()
    assert lines[0] == f"{run}: damaged run directory (1 problem(s)):"
    assert lines[1].startswith(f"  {run / 'trials.jsonl'}:2: crc32: checksum mismatch")
    assert lines[2] == (
        f"nothing was changed or measured; to accept the damage run `natbench run --resume {run} --repair`:"
        " it keeps a copy of trials.jsonl and measures the damaged repetitions again"
    )


def test_a_resume_check_with_repair_returns_the_damage_instead_of_refusing(tmp_path: Path) -> None:
    run = _damaged_run(tmp_path)
    found = RunDirectory.open(run).check_resume(repair=True)
    assert [d.split(": ", 2)[1] for d in found.damage] == ["crc32"]
    assert [r.seq for r in found.records] == [1]


def test_a_half_created_directory_is_refused_naming_how_to_start_again(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "campaign.yaml").write_text("name: t\n", "utf-8")  # creation stopped before run.json was written
    expected = (
        f"{run}: half-created run directory (the process stopped before run.json was written; no trial was"
        f" stored), so there is nothing to resume: start the campaign again with `natbench run CAMPAIGN -o {run}`"
        " (the new run takes this directory over)"
    )
    for open_it in (RunDirectory.open, resume_store, read_run):
        with pytest.raises(StoreError) as err:
            open_it(run)
        assert str(err.value) == expected
