"""Processes a lab leaves running when it is taken down (natbench.testbed.lab.outliving): recorded, named by ``natbench
lab down --stale`` until they have ended. The lab test takes a lab down while a real ``conntrack -F`` of millions of
connections runs in its DUT namespace: no signal ends it before the kernel has deleted them."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from natbench.testbed.lab.outliving import SUFFIX, left_processes, outliving_labs, record_left

ROOT = Path(__file__).resolve().parent.parent


def _until_asleep(pid: int, seconds: float = 10.0) -> None:
    """Wait until ``pid`` is in state S (its sleep), so that the state the record shows is known."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S":
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} did not go to sleep within {seconds} s")


def test_a_recorded_process_is_named_while_it_runs_and_dropped_once_it_has_ended(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    done = subprocess.Popen(["true"])
    done.wait()
    _until_asleep(proc.pid)  # on a busy machine a new process may still be running (R) its exec for a while
    try:
        left = record_left(tmp_path, "x", "nb-x-dut", [proc.pid, done.pid])
        assert [(p.pid, p.args, p.namespace, p.lab) for p in left] == [(proc.pid, "sleep 30", "nb-x-dut", "x")]
        assert outliving_labs([tmp_path, tmp_path / "missing"]) == {"x": tmp_path}
        (found,) = left_processes(tmp_path, "x")
        words = found.words()
        assert words.startswith(f"pid {proc.pid} (sleep 30, state S), started in nb-x-dut, still running ")
        assert "after lab x was taken down" in words
    finally:
        proc.kill()
        proc.wait()
    assert left_processes(tmp_path, "x") == []  # ended: dropped, and the record with it
    assert not (tmp_path / f"x{SUFFIX}").exists() and outliving_labs([tmp_path]) == {}


def test_a_pid_used_again_by_another_process_is_not_the_recorded_one(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        record_left(tmp_path, "x", "nb-x-dut", [proc.pid])
        path = tmp_path / f"x{SUFFIX}"
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "start": record["start"] + 1}) + "\n")  # another process's start
        assert left_processes(tmp_path, "x") == []
    finally:
        proc.kill()
        proc.wait()


def test_a_lab_known_only_by_its_record_is_found_while_its_process_runs_and_not_after(tmp_path: Path) -> None:
    from natbench.testbed.lab.inventory import find_labs

    name = f"i44r{secrets.token_hex(3)}"
    proc = subprocess.Popen(["sleep", "30"])
    try:
        record_left(tmp_path, name, f"nb-{name}-dut", [proc.pid])
        (found,) = [f for f in find_labs([tmp_path], kernel=False) if f.name == name]
        assert [p.pid for p in found.left] == [proc.pid]
        assert found.stale and found.reason == "taken down already" and found.namespaces == ()
    finally:
        proc.kill()
        proc.wait()
    assert [f for f in find_labs([tmp_path], kernel=False) if f.name == name] == []  # nothing of it is left
    assert not (tmp_path / f"{name}{SUFFIX}").exists()


def test_a_damaged_record_line_names_nothing(tmp_path: Path) -> None:
    (tmp_path / f"x{SUFFIX}").write_text('not json\n{"pid": "a"}\n')
    assert left_processes(tmp_path, "x") == []


@pytest.mark.lab
@pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root")
@pytest.mark.skipif(shutil.which("conntrack") is None, reason="conntrack (conntrack-tools) is not installed")
def test_a_flush_running_when_its_lab_is_taken_down_is_named_by_lab_down_stale(tmp_path: Path) -> None:
    from test_outliving import big_conntrack, fill_local_conntrack

    from natbench.testbed.lab import NetnsLab

    name = f"i44o{os.getpid() % 10000}{secrets.token_hex(2)}"
    state = tmp_path / "state"
    env = {**os.environ, "NATBENCH_LAB_STATE": str(state)}
    lab = NetnsLab(name, state_dir=state)
    n = 6_000_000
    with big_conntrack(n):
        flush: subprocess.Popen[bytes] | None = None
        try:
            lab.up()
            fill_local_conntrack(lab.dut_netns, n)
            flush = subprocess.Popen(
                ["ip", "netns", "exec", lab.dut_netns, "conntrack", "-F"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            time.sleep(0.5)
            assert lab.down()  # SIGTERM, SIGKILL: the flush is inside its system call
            assert [(p.pid, p.args, p.namespace) for p in lab.left] == [(flush.pid, "conntrack -F", lab.dut_netns)]
            r = natbench_lab_down(name, env)
            assert f"lab {name}: still running: pid {flush.pid} (conntrack -F, state " in r.stdout
            assert "no signal ends it before the call returns" in r.stdout
            flush.wait(timeout=600)  # it ends when the kernel has deleted the table
            assert natbench_lab_down(name, env).stdout.strip() == f"no natbench lab {name} on this host"
        finally:
            if flush is not None and flush.poll() is None:
                flush.kill()
                flush.wait(timeout=600)
            lab.down()


def natbench_lab_down(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``natbench lab down --stale --name NAME``."""
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "lab", "down", "--stale", "--name", name],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r
