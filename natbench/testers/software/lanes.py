"""The software tester's lanes: a trial split by port, one data-path thread per tester CPU, pinned and real-time.

With two or more tester CPUs a trial runs as two lanes, one thread each: all that is sent and received on the
Initiator port on the first CPU, all on the Responder port on the second. With one CPU (or none given) the trial is
one lane on the calling thread. The lanes' counts are merged back into the trial's order.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from natbench.testers.software.specs import RxPort, TxStream, _engine, engine_args

RT_PRIORITY = 10
"""SCHED_FIFO priority of the data path during a trial (RT throttling still leaves the kernel 5 %)."""


@dataclass(frozen=True)
class Lane:
    """The part of one trial a single data-path thread runs: indices into the trial's tx and rx lists."""

    cpu: int | None
    """The CPU its thread is pinned to (None: all tester CPUs)."""
    tx: list[int]
    """The trial's streams it sends."""
    rx: list[int]
    """The trial's ports it receives on."""


def split_lanes(cpus: Sequence[int] | None, tx: list[TxStream], rx: list[RxPort], ports: tuple[int, int]) -> list[Lane]:
    """Split a trial by socket: everything on the Initiator port (``ports[0]``) on the first tester CPU, everything on
    the Responder port on the second. With one CPU (or none given) the trial is one lane."""
    cpus = cpus or ()
    if len(cpus) < 2:
        return [Lane(cpus[0] if cpus else None, list(range(len(tx))), list(range(len(rx))))]
    lanes = []
    for k, fd in enumerate(ports):
        lane = Lane(
            cpus[k % len(cpus)],
            [i for i, t in enumerate(tx) if t.fd == fd],
            [i for i, r in enumerate(rx) if r.fd == fd],
        )
        if lane.tx or lane.rx:
            lanes.append(lane)
    return lanes


@dataclass(frozen=True)
class LaneRunner:
    """Runs the lanes of one trial on the C data path."""

    cpus: tuple[int, ...] | None
    """The tester's CPUs (a lane without a CPU of its own is pinned to all of them; None: not pinned)."""
    realtime: bool
    """Run the data path as SCHED_FIFO (when permitted)."""
    timeout: float
    """Seconds to keep receiving after the last frame was sent."""
    tag: int
    """The trial's tag: frames of other trials are not counted."""

    def run(
        self, lanes: list[Lane], tx: list[TxStream], rx: list[RxPort], watch: np.ndarray | None = None
    ) -> dict[str, Any]:
        """The trial's raw counts (``_engine.run``'s result, its lanes merged in order, ``lanes`` and ``realtime``
        added)."""
        if len(lanes) == 1:
            raw = self.run_lane(lanes[0].cpu, tx, rx, None, watch)
            raw["lanes"] = [{"cpu": lanes[0].cpu, "tx": len(tx), "rx": len(rx)}]
            return raw
        return self._run_lanes(lanes, tx, rx, watch)

    def run_lane(
        self,
        cpu: int | None,
        tx: list[TxStream],
        rx: list[RxPort],
        sync: np.ndarray | None,
        watch: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """One data-path call on the calling thread, pinned to ``cpu`` (all tester CPUs if None) and SCHED_FIFO."""
        txs, rxs = [engine_args(t) for t in tx], [engine_args(r) for r in rx]
        old = os.sched_getaffinity(0)
        old_policy = os.sched_getscheduler(0)
        old_param = os.sched_getparam(0)
        realtime = False
        pin = (cpu,) if cpu is not None else self.cpus
        if pin:
            os.sched_setaffinity(0, pin)  # the calling thread only
        if self.realtime:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
                realtime = True
            except OSError:
                realtime = False
        try:
            raw: dict[str, Any] = _engine.run(txs, rxs, self.timeout, self.tag, sync=sync, watch=watch)
        finally:
            if realtime:
                os.sched_setscheduler(0, old_policy, old_param)
            if pin:
                os.sched_setaffinity(0, old)
        raw["realtime"] = realtime
        return raw

    def _run_lanes(
        self, lanes: list[Lane], tx: list[TxStream], rx: list[RxPort], watch: np.ndarray | None
    ) -> dict[str, Any]:
        """Run the lanes of one trial at once, one thread per tester CPU, and merge their counts in order."""
        sync = np.zeros(2, dtype=np.uint64)
        sync[0] = sum(1 for lane in lanes if lane.tx)  # lanes still sending
        results: list[dict[str, Any] | None] = [None] * len(lanes)
        errors: list[BaseException] = []

        def work(k: int, lane: Lane) -> None:
            try:
                results[k] = self.run_lane(lane.cpu, [tx[i] for i in lane.tx], [rx[i] for i in lane.rx], sync, watch)
            except BaseException as exc:  # re-raised on the caller's thread below
                errors.append(exc)
                sync[0] = 0  # release the other lanes

        # receive-only lanes first, so that nothing is sent before its receiver runs
        order = sorted(range(len(lanes)), key=lambda k: bool(lanes[k].tx))
        threads = [threading.Thread(target=work, args=(k, lanes[k]), name=f"natbench-lane-{k}") for k in order]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        return _merged(lanes, [r for r in results if r is not None], len(tx), len(rx))


def _merged(lanes: list[Lane], results: list[dict[str, Any]], n_tx: int, n_rx: int) -> dict[str, Any]:
    """The lanes' results as one trial's: each stream's and port's counts at its place in the trial."""
    merged: dict[str, Any] = {"tx": [None] * n_tx, "rx": [None] * n_rx}
    for lane, res in zip(lanes, results, strict=True):
        for i, t in zip(lane.tx, res["tx"], strict=True):
            merged["tx"][i] = t
        for i, r in zip(lane.rx, res["rx"], strict=True):
            merged["rx"][i] = r
    merged["elapsed"] = max(float(r["elapsed"]) for r in results)
    merged["send_end"] = max(float(r["send_end"]) for r in results)
    merged["realtime"] = all(bool(r["realtime"]) for r in results)
    merged["lanes"] = [{"cpu": lane.cpu, "tx": len(lane.tx), "rx": len(lane.rx)} for lane in lanes]
    return merged
