"""Tests of the runner: a complete fake run, DUT teardown on errors and signals, SIGKILL + resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import engine_fakes
import pytest

from natbench.errors import DutError, StoreError
from natbench.results import RepetitionResult, TrialRecord
from natbench.run import format as fmt
from natbench.run.observers import Observer
from natbench.run.reader import RunDirectory
from natbench.run.runner import RunInterrupted, resume_run, start_run
from natbench.testing import FakeDut, FakeModel, FakeTester

CHILD = [sys.executable, str(Path(engine_fakes.__file__))]


def comparable(run: RunDirectory) -> list[dict[str, Any]]:
    """Every record of a run without its timestamps (and the clock readings derived from them)."""
    out = []
    for rec in run.records():
        d = rec.to_dict()
        d["type"] = "trial" if isinstance(rec, TrialRecord) else "result"
        d.pop("started_at", None)
        d.pop("ended_at", None)
        d.get("extra", {}).pop("since_fill", None)  # a reading of the clock too
        out.append(d)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The records of an uninterrupted run."""
    tester, dut = engine_fakes.make_testbed()
    run = start_run(
        engine_fakes.make_spec(),
        tmp_path_factory.mktemp("ref") / "run",
        tester,
        dut,
        clock=engine_fakes.FakeClock(),
        sleep=lambda s: None,
    )
    assert run.status == "complete"
    return comparable(run)


class Recorder(Observer):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_run_start(self, run_dir: Path, spec: Any, done: int) -> None:
        self.events.append(f"run_start:{done}")

    def on_point_start(self, point: Any, index: int, total: int, repetitions: int) -> None:
        self.events.append(f"point_start:{index}/{total}:{repetitions}")

    def on_step(self, record: TrialRecord) -> None:
        self.events.append("step")

    def on_result(self, result: RepetitionResult) -> None:
        self.events.append(f"result:{result.metric}")

    def on_point_end(self, point: Any, error: BaseException | None) -> None:
        self.events.append(f"point_end:{type(error).__name__ if error else ''}")

    def on_run_end(self, status: str, error: BaseException | None) -> None:
        self.events.append(f"run_end:{status}")


def test_a_fake_run_produces_a_complete_run_directory(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    tester, dut = engine_fakes.make_testbed()
    rec = Recorder()
    spec = engine_fakes.make_spec()
    run = start_run(spec, tmp_path / "run", tester, dut, observers=[rec], sleep=lambda s: None)
    assert run.status == "complete"
    assert sorted(p.name for p in run.path.iterdir()) == ["campaign.yaml", "points.json", "run.json", "trials.jsonl"]
    assert [p.id for p in run.points] == [p.id for p in spec.points]
    assert run.meta.tester == fmt.TesterFacts("fake", {"max_rate": engine_fakes.MODEL.tester_max_rate})
    assert run.meta.duts["dut"]["kind"] == "fake"
    results = run.results()
    assert len(results) == spec.total_repetitions() == 24
    assert all(r.value is not None for r in results), [r.extra for r in results if r.value is None]
    by = {(r.point_id, r.metric, r.repetition): r for r in results}
    p0 = spec.points[0].id
    assert 195_000 <= by[(p0, "cps", 0)].value <= 205_000
    assert by[(p0, "capacity", 0)].value == 40_000
    assert by[(p0, "validation", 0)].value == 1.0
    # every metric ran at both points, metrics in METRICS order
    assert [r.metric for r in results[:12]] == [
        "cps", "cps", "throughput", "throughput", "frame_loss", "latency", "pdv",
        "teardown", "teardown", "capacity", "validation", "forwarding",
    ]  # fmt: skip
    assert comparable(run) == reference
    assert dut.events.count("teardown") == 2
    assert rec.events[0] == "run_start:0" and rec.events[-1] == "run_end:complete"
    assert rec.events.count("point_end:") == 2
    assert rec.events.count("step") == len(run.trials())
    run.export_parquet()
    assert (run.path / "trials.parquet").exists()


def test_dut_is_torn_down_when_a_procedure_raises(tmp_path: Path) -> None:
    dut = FakeDut(FakeModel())
    tester = FakeTester(dut)

    def broken(*a: Any, **k: Any) -> Any:
        raise DutError("conntrack -C failed", step="count_connections", dut="dut1")

    dut.count_connections = broken  # type: ignore[method-assign]
    rec = Recorder()
    with pytest.raises(DutError):
        start_run(engine_fakes.make_spec(), tmp_path / "run", tester, dut, observers=[rec], sleep=lambda s: None)
    assert dut.events[-1] == "teardown"
    assert "point_end:DutError" in rec.events and rec.events[-1] == "run_end:failed"
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed"
    assert "conntrack -C failed" in meta["failure"]


class Stopper(Observer):
    """Interrupts the run at the fourth step: Ctrl-C, or a real SIGTERM to this process."""

    def __init__(self, sigterm: bool) -> None:
        self.sigterm = sigterm

    def on_step(self, record: TrialRecord) -> None:
        if record.step == 3:
            if not self.sigterm:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)


def test_dut_is_torn_down_on_ctrl_c_and_sigterm(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    for n, exc in ((0, KeyboardInterrupt), (1, RunInterrupted)):
        dut = FakeDut(FakeModel())
        tester = FakeTester(dut)
        with pytest.raises(exc):
            start_run(engine_fakes.make_spec(), tmp_path / f"r{n}", tester, dut, observers=[Stopper(n == 1)])
        assert dut.events[-1] == "teardown"
        meta = RunDirectory.open(tmp_path / f"r{n}").meta
        assert meta.status == "failed"
        assert ("Ctrl-C" if n == 0 else "SIGTERM") in (meta.failure or "")
    assert signal.getsignal(signal.SIGTERM) == before  # the runner restored the handler


def test_resume_skips_finished_points_and_checks_the_points(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    tester, dut = engine_fakes.make_testbed()
    start_run(engine_fakes.make_spec(), tmp_path / "run", tester, dut, sleep=lambda s: None)
    tester, dut = engine_fakes.make_testbed()
    run = resume_run(engine_fakes.make_spec(), tmp_path / "run", tester, dut, sleep=lambda s: None)
    assert dut.events == []  # nothing pending: no DUT setup at all
    assert comparable(run) == reference
    spec = engine_fakes.make_spec()
    other = type(spec)(spec.name, spec.points[:1], spec.plan_for, spec.metrics)
    with pytest.raises(StoreError, match="do not match"):
        resume_run(other, tmp_path / "run", tester, dut)


def _child(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CHILD, *args], capture_output=True, timeout=120, check=check)


@pytest.mark.parametrize("kill_after", [1, 2, 40, 97, 150, 151, 230, 300, 351])
def test_sigkill_then_resume_loses_and_duplicates_nothing(
    tmp_path: Path, reference: list[dict[str, Any]], kill_after: int
) -> None:
    run_dir = tmp_path / "run"
    killed = _child("run", str(run_dir), "--kill-after", str(kill_after), check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    before = RunDirectory.open(run_dir)
    assert before.status == "running"
    stored = comparable(before)
    assert len(stored) == kill_after  # each record was on disk before the next trial started
    assert stored == reference[:kill_after]
    _child("resume", str(run_dir))
    after = RunDirectory.open(run_dir)
    assert after.status == "complete"
    assert comparable(after) == reference
    # the trials of the cut-off repetition are kept aside in trials.abandoned.jsonl, not lost
    done_keys = {(r["point_id"], r["metric"], r["repetition"]) for r in stored if r["type"] == "result"}
    expected_abandoned = [
        r for r in stored if r["type"] == "trial" and (r["point_id"], r["metric"], r["repetition"]) not in done_keys
    ]
    got = [{k: v for k, v in t.to_dict().items() if k not in ("started_at", "ended_at")} for t in after.abandoned()]
    for t in got:
        t["extra"].pop("since_fill", None)  # as comparable() drops it
    assert got == [{k: v for k, v in r.items() if k != "type"} for r in expected_abandoned]


def test_repeated_kills_during_resume(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    run_dir = tmp_path / "run"
    assert _child("run", str(run_dir), "--kill-after", "60", check=False).returncode == -signal.SIGKILL
    assert _child("resume", str(run_dir), "--kill-after", "70", check=False).returncode == -signal.SIGKILL
    assert _child("resume", str(run_dir), "--kill-after", "5", check=False).returncode == -signal.SIGKILL
    _child("resume", str(run_dir))
    run = RunDirectory.open(run_dir)
    assert comparable(run) == reference
    assert len(run.meta.resumed_at) == 3


def test_sigkill_at_a_random_moment_from_outside(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([*CHILD, "run", str(run_dir), "--slow", "0.002"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # wait until some trials are stored, then kill without warning
    while time.monotonic() < deadline:
        trials = run_dir / "trials.jsonl"
        if trials.exists() and trials.stat().st_size > 20_000:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = comparable(RunDirectory.open(run_dir))
    assert 0 < len(partial) < len(reference)
    assert partial == reference[: len(partial)]
    _child("resume", str(run_dir))
    assert comparable(RunDirectory.open(run_dir)) == reference


def test_progress_and_logging_observers_render_a_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import io
    import logging

    from rich.console import Console

    from natbench.run.observers import LoggingObserver, RichProgress

    buf = io.StringIO()
    progress = RichProgress(Console(file=buf, force_terminal=False, width=200))
    tester, dut = engine_fakes.make_testbed()
    with caplog.at_level(logging.DEBUG, logger="natbench.run"):
        start_run(
            engine_fakes.make_spec(),
            tmp_path / "run",
            tester,
            dut,
            observers=[progress, LoggingObserver()],
            sleep=lambda s: None,
        )
    text = buf.getvalue()
    assert "cps#0:" in text and " cps (error " in text
    assert text.count("\n") >= 24  # one line per finished repetition
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("run engine-fakes into") for m in messages)
    assert any("cps#0 step 0 phase1 @ 500,000/s [0, 1,000,000] FAIL" in m for m in messages)
    assert messages[-1] == "run complete"


def test_run_json_gets_the_tester_facts_learned_on_connecting(tmp_path: Path) -> None:
    """A TRex tester knows its server's version, cores and MACs only after prepare() connected."""
    tester, dut = engine_fakes.make_testbed()
    real_prepare, real_facts = tester.prepare, tester.facts
    connected: list[bool] = []

    def prepare(plan: Any) -> None:
        connected.append(True)
        real_prepare(plan)

    def facts() -> dict[str, Any]:
        return {**real_facts(), **({"server_version": "v3.08"} if connected else {})}

    tester.prepare = prepare  # type: ignore[method-assign]
    tester.facts = facts  # type: ignore[method-assign]
    run = start_run(engine_fakes.make_spec(), tmp_path / "run", tester, dut, sleep=lambda s: None)
    assert run.status == "complete"
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["tester"]["server_version"] == "v3.08"
