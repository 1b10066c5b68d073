"""No run lost to a DUT step that did not do its work (issue 44 item 3): a reset, or a timed delete, that failed,
outlived its time limit or could not start beside an earlier one still running (:class:`DutStepFailed`) ends that
repetition with its reason; the run goes on with the next one and its summary lists the failed repetition with the
reason. A DUT that is gone (a plain :class:`DutError`) still stops the run (it can be resumed)."""

from __future__ import annotations

from pathlib import Path

import engine_fakes
import pytest

import natbench
from natbench.duts.outstanding import CommandStillRunning
from natbench.errors import DutError, DutStepFailed
from natbench.metrics.teardown import TeardownSettings
from natbench.metrics.throughput import ThroughputSettings
from natbench.plugins import Directions
from natbench.report.summary import summarize_run
from natbench.run.runner import RunSpec, start_run
from natbench.testing import FakeDut, FakeTester

POINT = engine_fakes.make_points()[0]
REASON = "command did not finish within 120 s; asked to stop (SIGTERM), it is still running: pid 4242"


class FailingDut(FakeDut):
    """A fake DUT whose ``reset_connections`` / ``timed_flush`` calls numbered in ``fail`` (from 0) raise ``error``."""

    def __init__(self, fail: dict[str, set[int]], error: type[DutError]) -> None:
        super().__init__(engine_fakes.MODEL)
        self.fail = fail
        self.error = error
        self.calls = {"reset_connections": 0, "timed_flush": 0}

    def _maybe_fail(self, step: str) -> None:
        n = self.calls[step]
        self.calls[step] += 1
        if n in self.fail.get(step, set()):
            raise self.error(REASON, step=step, dut="fake")

    def reset_connections(self) -> None:
        self._maybe_fail("reset_connections")
        super().reset_connections()

    def timed_flush(self) -> float:
        self._maybe_fail("timed_flush")
        return super().timed_flush()


def spec(metric: str) -> RunSpec:
    settings = {
        "throughput": ThroughputSettings(repetitions=2, fill_rate=50_000, upper=1_000_000, error=1000, gap=0.0),
        "teardown": TeardownSettings(repetitions=2, fill_rate=50_000, gap=0.0, empty_samples=1),
    }[metric]
    resolved = {metric: settings.resolved(0.0, Directions.BIDIRECTIONAL)}
    return RunSpec("step-failed", [POINT], engine_fakes.plan_for, resolved, "name: step-failed\n")


def run(tmp_path: Path, metric: str, dut: FailingDut) -> natbench.Run:
    clock = engine_fakes.FakeClock()
    start_run(spec(metric), tmp_path / "run", FakeTester(dut), dut, clock=clock, sleep=lambda s: None)
    return natbench.load(tmp_path / "run")


@pytest.mark.parametrize("error", [DutStepFailed, CommandStillRunning], ids=["outlived-or-failed", "still-running"])
def test_a_reset_that_did_not_do_its_work_ends_its_repetition_and_the_run_goes_on(
    tmp_path: Path, error: type[DutError]
) -> None:
    dut = FailingDut({"reset_connections": {0}}, error)
    r = run(tmp_path, "throughput", dut)
    assert r.meta.status == "complete"
    results = r.results.sort_values("repetition")
    assert results["value"].isna().tolist() == [True, False]  # the first failed, the second measured
    failed = results.iloc[0]["extra"]["failed"]
    assert failed == f"emptying the DUT's connection table failed: DUT fake: step reset_connections: {REASON}"
    (line,) = [w for w in summarize_run(r).warnings if "repetitions failed" in w]
    assert line == (
        "1 of 2 repetitions failed and have no value; the tables leave them out (the run went on after each): "
        f"{POINT.label} throughput #0: {failed}."
    )


def test_a_reset_that_always_succeeds_fails_no_repetition(tmp_path: Path) -> None:
    r = run(tmp_path, "throughput", FailingDut({}, DutStepFailed))
    assert r.results["value"].notna().all()
    assert not [w for w in summarize_run(r).warnings if "repetitions failed" in w]


def test_a_dut_that_is_gone_still_stops_the_run(tmp_path: Path) -> None:
    dut = FailingDut({"reset_connections": {0}}, DutError)  # not a step that did not do its work: no DUT to ask
    with pytest.raises(DutError, match="still running: pid 4242"):
        run(tmp_path, "throughput", dut)
    assert dut.calls["reset_connections"] == 1  # nothing more was tried


@pytest.mark.parametrize(
    ("call", "what"),
    [(0, "the 1,000 connections"), (1, "the empty table")],
    ids=["filled-table", "empty-table"],
)
def test_a_timed_delete_that_did_not_do_its_work_ends_its_repetition(tmp_path: Path, call: int, what: str) -> None:
    dut = FailingDut({"timed_flush": {call}}, DutStepFailed)
    r = run(tmp_path, "teardown", dut)
    assert r.meta.status == "complete"
    results = r.results.sort_values("repetition")
    assert results["value"].isna().tolist() == [True, False]
    assert results.iloc[0]["extra"]["failed"] == (
        f"the timed delete of {what} failed: DUT fake: step timed_flush: {REASON}"
    )
