"""Helpers shared by the tests that use the local lab: its prerequisites, and trials on shared CPUs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from natbench.results import PhaseResult

__all__ = ["kept_rate", "need_lab", "stalled"]


def need_lab() -> None:
    """Skip the calling test, naming why, unless this is root with the local lab's tools on PATH."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, raw sockets)")
    missing = [t for t in ("ip", "nft", "iptables", "conntrack") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH")


def kept_rate(trial: Callable[[], PhaseResult], tries: int = 5) -> PhaseResult:
    """Run ``trial`` until the tester kept its rate (as the engine retries invalid trials).

    Other processes share this machine's CPUs; a preempted tester flags its trial
    (tester_ok False) instead of reporting loss, and such a trial is repeated.
    """
    for _ in range(tries):
        r = trial()
        if r.tester_ok:
            return r
    raise AssertionError(f"the tester could not keep its rate in {tries} tries: {r.tester_note}")


@contextmanager
def stalled(after: float, seconds: float) -> Iterator[None]:
    """Within the block, this whole process (and so the software tester's data path in it) is stopped once for
    ``seconds``, ``after`` seconds from now: SIGSTOP, then SIGCONT from a child process, as a preemption or a
    scheduling hiccup would stop it. The kernel (and the DUT) go on meanwhile."""
    pid = os.getpid()
    child = subprocess.Popen(["sh", "-c", f"sleep {after}; kill -STOP {pid}; sleep {seconds}; kill -CONT {pid}"])
    try:
        yield
    finally:
        child.wait(timeout=30 + after + seconds)
