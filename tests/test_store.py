"""Tests of the run directory: layout, durability, torn lines, resume bookkeeping, Parquet export."""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.store import ABANDONED, RunDirectory, RunStore, atomic_write
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
        tester_facts={"backend": "fake"},
        dut_facts={"dut": {"kernel": "x"}},
    )


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
    assert (meta["tester"], meta["duts"], meta["status"]) == ({"backend": "fake"}, {"dut": {"kernel": "x"}}, "complete")
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
    assert [ln["type"] for ln in lines] == ["trial", "result"]
    assert TrialRecord.from_dict({k: v for k, v in lines[0].items() if k != "type"}) == trial(0, 0)
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
    trials = tmp_path / "run" / "trials.jsonl"
    spy = FsyncSpy()
    monkeypatch.setattr("natbench.store.os.fsync", spy)
    store.append_trial(trial(0, 0))
    after_trial = trials.stat()
    store.append_result(result(0))
    after_result = trials.stat()
    assert after_result.st_size > after_trial.st_size > 0
    # one fsync per append, before it returned, of trials.jsonl when it already held the whole new line
    assert spy.calls == [
        (False, after_trial.st_ino, after_trial.st_size, None),
        (False, after_result.st_ino, after_result.st_size, None),
    ]
    store.close()


def test_atomic_write_fsyncs_the_new_file_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    target.write_text("old\n")
    spy = FsyncSpy(look=target.read_text)
    monkeypatch.setattr("natbench.store.os.fsync", spy)
    atomic_write(target, "new text\n")
    assert target.read_text() == "new text\n"
    assert spy.calls == [
        (False, target.stat().st_ino, len("new text\n"), "old\n"),  # the complete new file, old one still in place
        (True, tmp_path.stat().st_ino, None, "new text\n"),  # then the directory, holding the renamed entry
    ]


def test_create_refuses_an_existing_run(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    with pytest.raises(StoreError, match="already holds a run"):
        new_store(tmp_path)


def test_open_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"missing run\.json"):
        RunDirectory.open(tmp_path)


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
    store = RunStore.resume(run)
    assert store.is_complete(PID, "cps", 0)
    assert not store.is_complete(PID, "cps", 1)
    store.append_trial(trial(1, 0))
    store.close()
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0), result(0), trial(1, 0)]
    assert reader.abandoned() == [trial(1, 0), trial(1, 1, Verdict.INVALID)]
    assert (run / ABANDONED).exists()
    assert reader.meta["status"] == "running"
    assert len(reader.meta["resumed_at"]) == 1


def test_resume_drops_a_torn_last_line_when_no_repetition_was_cut_off(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    run = tmp_path / "run"
    with open(run / "trials.jsonl", "a") as f:
        f.write('{"type":"result","point_id":"')  # died while writing, right after a complete repetition
    with RunStore.resume(run) as store:
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
        RunStore.resume(run)
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
    with RunStore.resume(run) as store:
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
    with RunStore.resume(run) as store:  # first attempt cut off; the second one is cut off too
        store.append_trial(trial(0, 0, started=10.0))
    with RunStore.resume(run) as store:  # the third attempt completes
        store.append_trial(trial(0, 0, started=20.0))
        store.append_result(result(0))
    RunStore.resume(run).close()  # a resume of the finished run moves nothing
    reader = RunDirectory.open(run)
    assert list(reader.records()) == [trial(0, 0, started=20.0), result(0)]
    assert reader.abandoned() == [trial(0, 0), trial(0, 1), trial(0, 0, started=10.0)]
    assert len(reader.meta["resumed_at"]) == 3


def test_resume_of_a_clean_run_rewrites_nothing(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
        store.append_result(result(0))
    before = (tmp_path / "run" / "trials.jsonl").stat().st_ino
    RunStore.resume(tmp_path / "run").close()
    assert (tmp_path / "run" / "trials.jsonl").stat().st_ino == before
    assert not (tmp_path / "run" / ABANDONED).exists()


def test_corrupt_line_is_reported_with_its_position(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    (tmp_path / "run" / "trials.jsonl").write_text('{"type":"trial"}\n')
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
        RunStore.resume(tmp_path / "run")
    store.close()
    RunStore.resume(tmp_path / "run").close()  # released on close (and by the kernel when a process dies)


def test_a_crash_between_saving_and_rewriting_does_not_duplicate_abandoned_trials(tmp_path: Path) -> None:
    with new_store(tmp_path) as store:
        store.append_trial(trial(0, 0))
    run = tmp_path / "run"
    # as if a previous resume had saved the cut-off trial and died before rewriting trials.jsonl
    (run / ABANDONED).write_text((run / "trials.jsonl").read_text())
    RunStore.resume(run).close()
    reader = RunDirectory.open(run)
    assert reader.abandoned() == [trial(0, 0)]
    assert reader.trials() == []


def test_non_finite_values_are_stored_as_null(tmp_path: Path) -> None:
    odd = RepetitionResult(PID, "latency", 0, float("nan"), "s", None, {"worst_case": float("inf"), "ok": 1.5})
    with new_store(tmp_path) as store:
        store.append_result(odd)
    [back] = RunDirectory.open(tmp_path / "run").results()
    assert back.value is None
    assert back.extra == {"worst_case": None, "ok": 1.5}
