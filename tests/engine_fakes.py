"""A small fake-based run used by the engine tests, also runnable as a child process.

``python tests/engine_fakes.py run RUN_DIR [--kill-after N] [--slow S]`` starts a run,
``... resume RUN_DIR`` resumes one. ``--kill-after N`` makes the process SIGKILL itself
right after the N-th stored record (trial or result); ``--slow S`` sleeps S seconds per
stored trial so a parent can kill it at a random moment.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from natbench.metrics import MetricSettings
from natbench.metrics.capacity import CapacitySettings
from natbench.metrics.cps import CpsSettings
from natbench.metrics.frame_loss import FrameLossSettings
from natbench.metrics.latency import LatencySettings, PdvSettings
from natbench.metrics.teardown import TeardownSettings
from natbench.metrics.throughput import ForwardingSettings, ThroughputSettings
from natbench.metrics.validation import ValidationSettings
from natbench.plugins import Directions
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.observers import Observer
from natbench.run.runner import RunSpec, resume_run, start_run
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

MODEL = FakeModel(cps=200_000, forwarding=400_000, table_limit=40_000, noise=0.02, seed=7)


def plan_for(point: WorkingPoint) -> TrafficPlan:
    """NAT44 plan of a point."""
    return TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, point.frame_size, seed=11
    )


def make_points() -> list[WorkingPoint]:
    """Two working points (1,000 and 4,000 connections)."""
    return [
        WorkingPoint(0, PortRange(1000, 1099), PortRange(80, 89), 64, cores=1, name="fake"),
        WorkingPoint(1, PortRange(1000, 1399), PortRange(80, 89), 64, cores=2, name="fake"),
    ]


def make_spec() -> RunSpec:
    """A campaign exercising every metric (0 loss accepted, bidirectional unless a metric says otherwise)."""
    quick = {"gap": 0.0, "duration": 1.0}
    search = {"upper": 1_000_000, "error": 1000}
    metrics: dict[str, MetricSettings] = {
        "cps": CpsSettings(repetitions=2, **search),
        "throughput": ThroughputSettings(repetitions=2, fill_rate=50_000, **search, **quick),
        "frame_loss": FrameLossSettings(repetitions=1, max_rate=1_000_000, fill_rate=50_000, **quick),
        "latency": LatencySettings(repetitions=1, fill_rate=50_000, tag_delay=0.5, **quick),
        "pdv": PdvSettings(repetitions=1, fill_rate=50_000, **quick),
        "teardown": TeardownSettings(repetitions=2, fill_rate=50_000, gap=0.0),
        "capacity": capacity_at(make_points()[0]),
        "validation": ValidationSettings(repetitions=1, gap=0.0),
        # the fake is a NAT: without phase 1 only private -> public frames can pass
        "forwarding": ForwardingSettings(repetitions=1, directions=Directions.FORWARD, duration=1.0, **search),
    }
    resolved = {name: s.resolved(0.0, Directions.BIDIRECTIONAL) for name, s in metrics.items()}

    def settings_for(point: WorkingPoint, metric: str) -> MetricSettings:
        if metric == "capacity":  # starts at the point's own connections
            return capacity_at(point).resolved(0.0, Directions.BIDIRECTIONAL)
        return resolved[metric]

    return RunSpec("engine-fakes", make_points(), plan_for, resolved, "name: engine-fakes\n", settings_for=settings_for)


def capacity_at(point: WorkingPoint) -> CapacitySettings:
    """Capacity at ``point``: from its own connections up to its whole source port space, one source port wide."""
    n_dst = len(point.dst_ports)
    return CapacitySettings(
        repetitions=1,
        upper=1_000_000,
        error=5000,
        min_connections=point.connections,
        max_connections=(65535 - point.src_ports.first + 1) * n_dst,
        connection_error=n_dst,
    )


def make_testbed() -> tuple[FakeTester, FakeDut]:
    """A fresh fake tester and DUT."""
    dut = FakeDut(MODEL)
    return FakeTester(dut), dut


class FakeClock:
    """A clock that advances one second per reading (deterministic timestamps)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class _Killer(Observer):
    def __init__(self, after: int | None, slow: float) -> None:
        self.after = after
        self.slow = slow
        self.seen = 0

    def _tick(self) -> None:
        self.seen += 1
        if self.after is not None and self.seen >= self.after:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_step(self, record: TrialRecord) -> None:
        if self.slow:
            time.sleep(self.slow)
        self._tick()

    def on_result(self, result: RepetitionResult) -> None:
        self._tick()


def main(argv: list[str]) -> int:
    """Child-process entry point."""
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "resume"])
    ap.add_argument("run_dir")
    ap.add_argument("--kill-after", type=int)
    ap.add_argument("--slow", type=float, default=0.0)
    args = ap.parse_args(argv)
    tester, dut = make_testbed()
    observers = [_Killer(args.kill_after, args.slow)]
    fn = start_run if args.mode == "run" else resume_run
    fn(make_spec(), args.run_dir, tester, dut, observers=observers, clock=FakeClock(), sleep=lambda s: None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
