"""The software tester's counts read while a trial runs: the watch block the C data path publishes its counts in,
and the thread that samples it to stop a failed trial early and to measure the forwarding rate of its second half."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from natbench.plugins.tester import LossStop
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.testers.software.specs import RxPort, TxStream
from natbench.testers.tailrate import TailRate

TIMED_COPY = 0.0005
"""Seconds a sample of the watch block may take (clock read, copy, clock read) for the forwarding rate's fit to use
it: a sampling thread preempted between its clock and its copy would put the counts at the wrong time, and such
errors in time flatten a fitted slope."""


def watch_block(tx: list[TxStream], rx: list[RxPort]) -> tuple[list[TxStream], list[RxPort], np.ndarray]:
    """The watch block of a trial (``_engine.run``'s ``watch``): slot 0 the stop flag, then per direction the frames
    its stream sent and the valid frames its port received so far (``tx[i]`` pairs with ``rx[i]``); with the streams
    and ports given their slots."""
    if len(tx) != len(rx):
        raise ValueError(f"a watched trial pairs each stream with a port: {len(tx)} streams, {len(rx)} ports")
    slotted_tx = [replace(t, watch_slot=1 + 2 * i) for i, t in enumerate(tx)]
    slotted_rx = [replace(r, watch_slot=2 + 2 * i) for i, r in enumerate(rx)]
    return slotted_tx, slotted_rx, np.zeros(1 + 2 * len(tx), dtype=np.uint64)


@contextlib.contextmanager
def watching(
    watch: np.ndarray | None, stop: LossStop | None, directions: int, tails: bool = False
) -> Iterator[dict[str, Any]]:
    """While the block runs a trial with the ``watch`` block, a thread samples its counts every :data:`SAMPLE_PERIOD`
    seconds: with ``tails``, for the forwarding rate of the trial's second half
    (:class:`~natbench.testers.tailrate.TailRate`), and with ``stop``, to set the stop flag when
    :class:`~natbench.testers.losswatch.LossWatch` says the trial has failed. Yields a dict that then holds, with
    ``tails``, ``tail_rates`` (a rate per direction; None when the trial was too short to tell) and, if it stopped the
    trial, ``stop_decided_s`` (seconds into the trial), ``stop_missing`` (the frames missing per direction at that
    sample) and, with ``tails``, ``shortfalls`` (:meth:`~natbench.testers.tailrate.TailRate.shortfalls` over the
    stop's window; None when too few samples)."""
    outcome: dict[str, Any] = {}
    if watch is None or (stop is None and not tails):
        yield outcome
        return
    judge = LossWatch(stop, directions) if stop is not None else None
    tail = TailRate(directions) if tails else None
    done = threading.Event()

    def sample() -> None:
        start = time.monotonic()
        while not done.wait(SAMPLE_PERIOD):
            before = time.monotonic()
            counts = watch.copy()  # aligned 64-bit words: each read whole
            after = time.monotonic()
            t = (before + after) / 2 - start
            sent, valid = [int(x) for x in counts[1::2]], [int(x) for x in counts[2::2]]
            if tail is not None and after - before <= TIMED_COPY:  # else preempted mid-sample: a wrong time
                tail.observe(t, sent, valid)
            if judge is not None and "stop_decided_s" not in outcome and judge.observe(t, sent, valid):
                watch[0] = 1
                outcome["stop_decided_s"] = round(t, 6)
                outcome["stop_missing"] = list(judge.missing)

    th = threading.Thread(target=sample, name="natbench-count-watch", daemon=True)
    th.start()
    try:
        yield outcome
    finally:
        done.set()
        th.join()
        if tail is not None:
            outcome["tail_rates"] = tail.rates()
            if stop is not None and "stop_decided_s" in outcome:
                outcome["shortfalls"] = tail.shortfalls(stop.window)
