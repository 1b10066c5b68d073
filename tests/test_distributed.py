"""Distributed runs (natbench.run.distributed / remote): one campaign on several testbeds, one run directory.

The testbeds here are :mod:`natbench.testing` fakes (no lab); the real namespace labs are in
tests/test_distributed_lab.py. The fakes' noise is keyed by (point, metric, repetition), so a point's values
do not depend on which testbed measured it: a distributed run must store exactly what a local run stores.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'natbench[distributed]')")

from distributed import Client, LocalCluster
from distributed_helpers import fake_build, owned, small_campaign

from natbench.campaign import load_campaign
from natbench.cli.worker import serve_worker
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.distributed import DistributedRun, resume_distributed, run_distributed
from natbench.run.format import ABANDONED
from natbench.run.observers import Observer
from natbench.run.reader import RunDirectory
from natbench.run.runner import run_campaign, spec_from_campaign
from natbench.run.writer import RunStore
from natbench.testing.rundir import make_point

ROOT = Path(__file__).resolve().parent.parent
HELPERS = Path(__file__).resolve().parent / "distributed_helpers.py"


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A scheduler in this process on loopback TCP, no workers of its own."""
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp", host="127.0.0.1") as c:
        yield c


def _start_thread_workers(address: str, names: list[str], testbed_class: str = "fake-x") -> None:
    for name in names:
        threading.Thread(target=serve_worker, args=(address, owned(name, testbed_class)), daemon=True).start()


def _values(run: RunDirectory) -> dict[tuple[str, str, int], float | None]:
    return {(r.point_id, r.metric, r.repetition): r.value for r in run.results()}


# ---------------------------------------------------------------------------- the store's part
POINT = make_point(0, (1000, 1099), (80, 89))
"""The working point of the store tests (records naming no point of points.json are damage)."""


def _trial(rep: int, step: int) -> TrialRecord:
    return TrialRecord(POINT.id, "cps", rep, step, "phase1", 1000.0, 1000.0, {}, Verdict.PASS, "ok", 1.0, 2.0)


def test_abandon_moves_only_unfinished_repetitions_trials_aside_and_keeps_the_file_intact(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", campaign_text="x: 1\n", points=[POINT])
    for step in range(3):
        store.append_trial(_trial(0, step))
    store.append_result(RepetitionResult(POINT.id, "cps", 0, 1000.0, "cps"))
    store.append_trial(_trial(1, 0))
    store.append_trial(_trial(1, 1))
    # rep 0 has its result: kept; rep 1 is unfinished: its 2 trials (seq 5 and 6) go aside
    assert store.abandon([(POINT.id, "cps", 0), (POINT.id, "cps", 1)]) == 2
    store.append_trial(_trial(1, 0))  # measured again: seq 7
    store.append_result(RepetitionResult(POINT.id, "cps", 1, 900.0, "cps"))
    store.close()
    run = RunDirectory.open(tmp_path / "run")
    assert run.scan().damage == []
    assert [(t.repetition, t.step) for t in run.trials()] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [(t.repetition, t.step) for t in run.abandoned()] == [(1, 0), (1, 1)]
    assert run.meta.counts is not None and run.meta.counts["moved"] == [[5, 6]]


# ---------------------------------------------------------------------------- the client's logic, no cluster
class _Recorded(DistributedRun):
    """The client's logic with its answers recorded instead of sent."""

    replies: list[tuple[str, dict[str, Any]]]

    def _reply(self, attempt: str, body: dict[str, Any]) -> None:
        self.replies.append((attempt, body))


def _message_run(tmp_path: Path) -> tuple[_Recorded, str]:
    path = small_campaign(tmp_path, repetitions=2)
    campaign = load_campaign(path)
    spec = spec_from_campaign(campaign, campaign.to_yaml())
    store = RunStore.create(tmp_path / "run", campaign_text=spec.campaign_text, points=spec.points)
    run = _Recorded(spec, store, client=None, testbed_class="fake-x", run_key="k")  # type: ignore[arg-type]
    run.replies = []
    return run, spec.points[0].id


def _rec(pid: str, rep: int, step: int, testbed: str) -> dict[str, Any]:
    t = _trial(rep, step).to_dict()
    return {**t, "point_id": pid, "extra": {"testbed": testbed}}


def test_a_lost_attempt_is_abandoned_and_the_next_testbed_measures_only_what_is_left(tmp_path: Path) -> None:
    run, pid = _message_run(tmp_path)
    metrics = ["cps"]
    run._handle({"op": "begin", "attempt": "A", "point": pid, "testbed": {"name": "a", "class": "fake-x"}}, metrics)
    assert run.replies[-1][1]["todo"] == [["cps", 0], ["cps", 1]]  # 2 repetitions of cps, none stored
    run._handle({"op": "trial", "attempt": "A", "record": _rec(pid, 0, 0, "a")}, metrics)
    result = {**RepetitionResult(pid, "cps", 0, 1000.0, "cps").to_dict(), "extra": {"testbed": "a"}}
    run._handle({"op": "result", "attempt": "A", "record": result}, metrics)
    run._handle({"op": "trial", "attempt": "A", "record": _rec(pid, 1, 0, "a")}, metrics)
    # testbed a is lost; Dask starts the task on b
    run._handle({"op": "begin", "attempt": "B", "point": pid, "testbed": {"name": "b", "class": "fake-x"}}, metrics)
    attempt, reply = run.replies[-1]
    assert attempt == "B" and reply["ok"]
    assert reply["todo"] == [["cps", 1]]  # repetition 0 is stored: only 1 is left
    assert [r["repetition"] for r in reply["earlier"]] == [0]
    # whatever a still sends is refused, and not stored
    run._handle({"op": "trial", "attempt": "A", "record": _rec(pid, 1, 1, "a")}, metrics)
    assert run.replies[-1] == ("A", {"ok": False, "why": "another testbed measures this point now"})
    run._handle({"op": "trial", "attempt": "B", "record": _rec(pid, 1, 0, "b")}, metrics)
    assert run.replies[-1] == ("B", {"ok": True})
    run.store.close()
    stored = RunDirectory.open(run.store.path)
    assert [(t.repetition, t.extra["testbed"]) for t in stored.trials()] == [(0, "a"), (1, "b")]
    assert [(t.repetition, t.extra["testbed"]) for t in stored.abandoned()] == [(1, "a")]
    assert stored.meta.point_testbeds[pid] == ("a", "b")


def test_a_testbed_of_another_class_is_refused(tmp_path: Path) -> None:
    run, pid = _message_run(tmp_path)
    run._handle({"op": "begin", "attempt": "C", "point": pid, "testbed": {"name": "c", "class": "other"}}, ["cps"])
    attempt, reply = run.replies[-1]
    assert attempt == "C" and not reply["ok"] and "'other'" in reply["why"]
    run._handle({"op": "trial", "attempt": "C", "record": _rec(pid, 0, 0, "c")}, ["cps"])
    assert not run.replies[-1][1]["ok"]
    run.store.close()
    assert RunDirectory.open(run.store.path).trials() == []


# ---------------------------------------------------------------------------- a cluster of fake testbeds
def test_two_testbeds_measure_one_campaign_into_one_run_directory_as_a_local_run_would(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    path = small_campaign(tmp_path)
    local = run_campaign(path, tmp_path / "local", testbed=fake_build(None), sleep=lambda s: None)
    _start_thread_workers(cluster.scheduler_address, ["a", "b"])
    with Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=30)
        run = run_distributed(path, client, tmp_path / "dist")
    assert run.status == "complete"
    assert len(run.results()) == 8  # 4 points x cps x 2 repetitions
    assert _values(run) == _values(local)  # same Orchestrator, same fake DUT: the same values
    assert Counter((t.point_id, t.repetition, t.step) for t in run.trials()) == Counter(
        (t.point_id, t.repetition, t.step) for t in local.trials()
    )
    by_point = run.meta.point_testbeds
    assert sorted(by_point) == sorted(p.id for p in run.points)
    assert {name for names in by_point.values() for name in names} == {"a", "b"}
    for t in run.trials():
        assert by_point[t.point_id] == (t.extra["testbed"],)  # each trial names the testbed its point is on
    assert run.meta.testbed_class == "fake-x"
    assert {n: tb["class"] for n, tb in run.meta.testbeds.items()} == {"a": "fake-x", "b": "fake-x"}
    # what the DUT kinds declare for reports travels with the workers' messages, as a local run stores it
    assert run.meta.dut_declarations == local.meta.dut_declarations != {}
    assert not (run.path / ABANDONED).exists()
    # the report's tables name the testbed of every point, in the points' order
    from natbench.report.load import load

    text = load(run.path).tables()[0].to_text()
    row = next(line for line in text.splitlines() if line.startswith("testbed "))
    assert row.split()[1:] == [by_point[p.id][0] for p in run.points]


def test_a_run_needs_a_worker_of_its_class(tmp_path: Path, cluster: LocalCluster) -> None:
    _start_thread_workers(cluster.scheduler_address, ["c"], testbed_class="other")
    with Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(1, timeout=30)
        with pytest.raises(Exception, match="no worker of the scheduler offers testbed class 'fake-x'"):
            run_distributed(small_campaign(tmp_path), client, tmp_path / "dist")


class _StopAfter(Observer):
    """Raises KeyboardInterrupt in the client after ``n`` stored results (the client killed)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def on_result(self, result: RepetitionResult) -> None:
        self.n -= 1
        if self.n == 0:
            raise KeyboardInterrupt


class _Points(Observer):
    def __init__(self) -> None:
        self.started: list[str] = []

    def on_point_start(self, point: Any, index: int, total: int, repetitions: int) -> None:
        self.started.append(point.id)


def test_resume_after_the_client_stopped_submits_only_the_unfinished_points(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    path = small_campaign(tmp_path)
    _start_thread_workers(cluster.scheduler_address, ["a", "b"])
    with Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=30)
        with pytest.raises(KeyboardInterrupt):
            run_distributed(path, client, tmp_path / "dist", observers=[_StopAfter(3)], check=0.5)
        stopped = RunDirectory.open(tmp_path / "dist")
        assert stopped.status == "failed"
        done = Counter(r.point_id for r in stopped.results())
        unfinished = {p.id for p in stopped.points if done[p.id] < 2}  # 2 repetitions per point
        points = _Points()
        run = resume_distributed(tmp_path / "dist", client, observers=[points])
    assert run.status == "complete"
    assert set(points.started) == unfinished
    keys = Counter((r.point_id, r.metric, r.repetition) for r in run.results())
    assert len(keys) == 8 and set(keys.values()) == {1}


# ---------------------------------------------------------------------------- a worker process killed
class _KillOnFirstTrial(Observer):
    """SIGKILLs worker process ``pid`` when the first trial it measured is on disk (in the middle of a point)."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.proc = proc
        self.killed_at: str | None = None

    def on_step(self, record: TrialRecord) -> None:
        if self.killed_at is None and record.extra.get("testbed") == self.name:
            self.killed_at = record.point_id
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


def test_a_worker_killed_mid_point_leaves_every_repetition_measured_exactly_once(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    address = cluster.scheduler_address
    procs = {
        name: subprocess.Popen([sys.executable, str(HELPERS), address, name, "fake-x"], env=env) for name in ("a", "b")
    }
    try:
        killer = _KillOnFirstTrial("a", procs["a"])
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
            run = run_distributed(small_campaign(tmp_path), client, tmp_path / "dist", observers=[killer])
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
    assert killer.killed_at is not None
    assert run.status == "complete"
    results = Counter((r.point_id, r.metric, r.repetition) for r in run.results())
    assert len(results) == 8 and set(results.values()) == {1}  # 4 points x 2 repetitions, each once
    steps = Counter((t.point_id, t.repetition, t.step) for t in run.trials())
    assert set(steps.values()) == {1}  # no trial twice
    for (pid, rep), n in Counter((t.point_id, t.repetition) for t in run.trials()).items():
        assert sorted(s for (p, r, s) in steps if (p, r) == (pid, rep)) == list(range(n))  # steps 0..n-1
    abandoned = run.abandoned()
    assert abandoned and {t.extra["testbed"] for t in abandoned} == {"a"}
    assert {t.point_id for t in abandoned} == {killer.killed_at}
    assert "b" in run.meta.point_testbeds[killer.killed_at]  # measured again elsewhere
    assert run.scan().damage == []


# ---------------------------------------------------------------------------- the command line
def _natbench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "natbench", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_no_scheduler_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    path = small_campaign(tmp_path)
    out = tmp_path / "run"
    # port 9 (discard) on loopback: nothing listens there
    proc = _natbench("run", str(path), "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1", "-o", str(out))
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("natbench: error:")]
    assert errors == [errors[0]] and "no Dask scheduler reachable at tcp://127.0.0.1:9" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()  # nothing half-written


def test_a_worker_testbed_without_a_class_is_one_line_naming_file_and_field(tmp_path: Path) -> None:
    import yaml

    section = yaml.safe_load((ROOT / "campaigns" / "quickstart.yaml").read_text())["testbed"]
    section["name"] = "a"
    bad = tmp_path / "a.yaml"
    bad.write_text(yaml.safe_dump(section))
    proc = _natbench("worker", "tcp://127.0.0.1:9", "--testbed", str(bad))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "testbed.class" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@contextlib.contextmanager
def _scheduler(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``natbench scheduler --port 0 ARGS`` in a subprocess started as a script's ``natbench scheduler &`` is
    (SIGINT ignored); yields it and the address it reported. Killed when it is still running at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "natbench", "scheduler", "--port", "0", *args],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and "listening at " not in line and proc.poll() is None:
            line = proc.stderr.readline()
        assert "listening at " in line, f"the scheduler did not report its address (exit {proc.poll()})"
        yield proc, line.split("listening at ")[1].strip()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_scheduler_command_binds_loopback_by_default_and_stops_on_a_signal(stop: signal.Signals) -> None:
    with _scheduler() as (proc, address):
        assert address.startswith("tcp://127.0.0.1:")
        proc.send_signal(stop)  # Ctrl-C too, though the shell that started it in the background ignores SIGINT
        assert proc.wait(timeout=20) == 0


def test_the_workers_get_the_campaign_without_its_testbed_section(tmp_path: Path) -> None:
    from natbench.run.distributed import measurement_text

    data = load_campaign(small_campaign(tmp_path)).to_dict()
    data["testbed"]["duts"][0]["access"] = {"kind": "ssh", "host": "dut", "user": "u", "key": "/secret/key"}
    sent = measurement_text(json.dumps(data))
    assert "testbed" not in sent and "/secret/key" not in sent
    assert "cps" in sent  # the measurement part is all there


OPENSSL_SELF_SIGNED = [
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=localhost",
]


def test_a_run_over_tls_with_dask_security_and_no_plain_tcp(tmp_path: Path) -> None:
    from natbench.cli.worker import security_from
    from natbench.run.distributed import SchedulerUnreachable, connect

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [*OPENSSL_SELF_SIGNED, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    with _scheduler(*tls) as (sched, address):
        assert address.startswith("tls://127.0.0.1:")
        with pytest.raises(SchedulerUnreachable):  # plain TCP is not served
            connect(address.replace("tls://", "tcp://"), timeout=2)
        worker = security_from(cert, cert, key, "worker")
        threading.Thread(
            target=serve_worker, args=(address, owned("a", "fake-x")), kwargs={"security": worker}, daemon=True
        ).start()
        client = connect(address, timeout=10, security=security_from(cert, cert, key, "client"))
        with client:
            client.wait_for_workers(1, timeout=30)
            run = run_distributed(small_campaign(tmp_path), client, tmp_path / "run")
            client.retire_workers()
        assert run.status == "complete" and len(run.results()) == 8
        sched.send_signal(signal.SIGINT)
        assert sched.wait(timeout=20) == 0
