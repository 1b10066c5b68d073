"""DUT memory per connection, measured in every fill of N connections (seed 002: memory against hash size at 40M
connections; seed 000 2.3: 400M connections took below 150 GB, 1,600M would not fit).

A fill (phase 1 that loads the table for throughput, frame loss, latency, PDV and tear-down) empties the table, then
creates N connections. A DUT with the optional :class:`~natbench.plugins.MeasuresMemory` hook is read
:data:`EMPTY_READINGS` times after the table was emptied (:data:`READING_GAP` seconds apart) and once after the
fill's traffic. The fill trial stores ``extra["memory"]``::

    {"before": {key: bytes}, "after": {key: bytes}, "connections": N,
     "used": {key: bytes}, "per_connection": {key: bytes / N},
     "noise": {"mem_available": bytes}, "readings": 3}

``before`` is the last reading of the emptied table, ``noise`` the spread (largest minus smallest) of MemAvailable
over the readings. N is the number of connections the fill left (verified in the DUT's table, else the tester's
valid phase-1 frames; never the DUT's own count, which may include management connections). ``used`` is what the N
connections took: the fall of ``mem_available`` and the growth of every other key (the slab caches of the DUT's
connection table its recipe declares, e.g. ``conntrack_slab``); ``mem_total`` is a capacity and has none. A DUT
without the hook stores nothing; a snapshot that fails stores ``extra["memory_error"]`` and the fill goes on as if
nothing had been measured.

What a report makes of one record is :func:`fill_figures`: memory per connection is the slab caches' growth where
the DUT shows one, else MemAvailable's fall when it stands out of the noise (at least :data:`SIGNIFICANCE` times the
spread of the readings of the emptied table, and of the meminfo resolution), else unknown: never negative, never a
0 that means "not read".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from natbench.errors import NatbenchError
from natbench.plugins import Dut, MeasuresMemory
from natbench.results import PhaseResult

FALLING_KEYS = frozenset({"mem_available"})
"""Keys that fall as connections take memory (used = before - after); every other key grows (used = after -
before)."""
CAPACITY_KEYS = frozenset({"mem_total"})
"""Keys that are capacities, stored in the snapshots but with no use per connection."""

EMPTY_READINGS = 3
"""Readings of the emptied table before a fill: the spread of their MemAvailable is the noise its fall must stand
out of."""
READING_GAP = 0.2
"""Seconds between those readings (so that the spread sees the DUT's background, not one instant)."""
SIGNIFICANCE = 10.0
"""MemAvailable's fall counts as the connections' memory only when it is at least this many times its noise."""
RESOLUTION = 1024
"""Bytes: /proc/meminfo counts in kB, so the noise is never taken below one of them."""

_SNAPSHOT_ERRORS = (NatbenchError, OSError, ValueError, NotImplementedError)
"""What a failing snapshot may raise (DutError, executor and parse errors); the fill goes on without memory."""


def memory_used(
    before: Mapping[str, int], after: Mapping[str, int], connections: int, noise: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The stored memory record of one fill: snapshots, N, bytes the N connections took per key and per connection,
    and (``noise``) the spread of the readings of the emptied table.

    Keys missing from either snapshot, and capacity keys, get no use. ``connections`` must be positive."""
    if connections <= 0:
        raise ValueError("connections must be positive")
    used: dict[str, int] = {}
    for key in before:
        if key in CAPACITY_KEYS or key not in after:
            continue
        used[key] = int(before[key]) - int(after[key]) if key in FALLING_KEYS else int(after[key]) - int(before[key])
    record: dict[str, Any] = {
        "before": dict(before),
        "after": dict(after),
        "connections": connections,
        "used": used,
        "per_connection": {key: value / connections for key, value in used.items()},
    }
    if noise is not None:
        record["noise"] = dict(noise)
    return record


@dataclass(frozen=True)
class FillFigures:
    """What one fill's memory record says about the memory a connection takes (:func:`fill_figures`)."""

    connections: int
    """N: the connections the fill left."""
    per_connection: float | None
    """Bytes per connection: the slab caches' growth where the DUT shows one, else MemAvailable's fall where it
    stands out of its noise; None when neither tells."""
    source: str | None
    """Where :attr:`per_connection` comes from: ``slab``, ``mem_available`` or None."""
    mem_available: float | None
    """MemAvailable's fall per connection where it stands out of its noise (:data:`SIGNIFICANCE`), else None."""
    slabs: dict[str, float] = field(default_factory=dict)
    """Each slab cache's growth per connection (key -> bytes), where it grew."""

    @property
    def used(self) -> float | None:
        """Bytes the N connections took, by :attr:`per_connection`."""
        return None if self.per_connection is None else self.per_connection * self.connections


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def fill_figures(memory: Mapping[str, Any]) -> FillFigures | None:
    """The figures of one fill's stored memory record (``extra["memory"]``); None when it names no connections.

    A record without ``noise`` (stored before natbench measured it) never counts MemAvailable: its fall cannot be
    told from the noise. A slab that did not grow, and a MemAvailable that rose, say nothing (never a negative
    figure, never a 0)."""
    n = _number(memory.get("connections"))
    if n is None or n <= 0:
        return None
    used = memory.get("used")
    used = used if isinstance(used, Mapping) else {}
    slabs: dict[str, float] = {}
    for key, value in used.items():
        grew = _number(value)
        if key in FALLING_KEYS or key in CAPACITY_KEYS or grew is None or grew <= 0:
            continue
        slabs[str(key)] = grew / n
    fall = _number(used.get("mem_available"))
    noises = memory.get("noise")
    noise = _number(noises.get("mem_available")) if isinstance(noises, Mapping) else None
    # the threshold is positive (SIGNIFICANCE x at least RESOLUTION): a fall of 0 or a rise never counts
    significant = fall is not None and noise is not None and fall >= SIGNIFICANCE * max(noise, RESOLUTION)
    mem_available = fall / n if significant and fall is not None else None
    if slabs:
        per, source = sum(slabs.values()), "slab"
    elif mem_available is not None:
        per, source = mem_available, "mem_available"
    else:
        per, source = None, None
    return FillFigures(int(n), per, source, mem_available, slabs)


class FillMemory:
    """Reads the DUT's memory around one fill; :func:`~natbench.metrics.fill.fill_table` calls :meth:`emptied` after
    emptying the table, :meth:`snapshot_filled` after the traffic and :meth:`record` before the trial is stored."""

    def __init__(self, dut: Dut, sleep: Callable[[float], None] | None = None, readings: int = EMPTY_READINGS) -> None:
        self.dut: MeasuresMemory | None = dut if isinstance(dut, MeasuresMemory) else None
        """The DUT when it has the hook (None: nothing is measured or stored)."""
        self.sleep = sleep
        """How to wait :data:`READING_GAP` between the readings of the emptied table (None: no wait)."""
        self.readings = max(1, readings)
        """Readings of the emptied table."""
        self.before: dict[str, int] | None = None
        """The last snapshot of the emptied table (None: not taken or failed)."""
        self.noise: dict[str, int] | None = None
        """The spread of MemAvailable over the readings of the emptied table (None: fewer than two readings)."""
        self.error: str | None = None
        """Why a snapshot failed."""
        self.after: dict[str, int] | None = None
        """The snapshot after the fill's traffic (None: not taken or failed)."""

    def _read(self) -> dict[str, int]:
        assert self.dut is not None
        return {str(k): int(v) for k, v in self.dut.memory_snapshot().items()}

    def emptied(self) -> None:
        """:attr:`readings` snapshots of the empty table, :data:`READING_GAP` apart: the last is the one the fill is
        measured from, their spread of MemAvailable the noise."""
        self.before, self.noise, self.error, self.after = None, None, None, None  # a new fill: nothing read yet
        if self.dut is None:
            return
        seen: list[int] = []
        try:
            for i in range(self.readings):
                if i and self.sleep is not None:
                    self.sleep(READING_GAP)
                self.before = self._read()
                if "mem_available" in self.before:
                    seen.append(self.before["mem_available"])
        except _SNAPSHOT_ERRORS as exc:
            self.before, self.error = None, f"before the fill: {exc}"
            return
        if len(seen) >= 2:
            self.noise = {"mem_available": max(seen) - min(seen)}

    def filled(self, phase: PhaseResult, extra: dict[str, Any]) -> None:
        """Snapshot of the filled table (second round trip) and the record in ``extra`` with N the fill's valid
        phase-1 frames (a fill judged by the tester's counts); a fill judged by what the DUT holds calls
        :meth:`snapshot_filled` and :meth:`record` instead."""
        self.snapshot_filled(extra)
        self.record(extra, sum(int(c.valid) for c in phase.counts.values()))

    def snapshot_filled(self, extra: dict[str, Any]) -> None:
        """Snapshot of the filled table, right after the fill's traffic; a failure is noted in
        ``extra["memory_error"]``."""
        self.after = None
        if self.dut is None:
            return
        if self.before is None:
            extra["memory_error"] = self.error or "no snapshot of the emptied table"
            return
        try:
            self.after = self._read()
        except _SNAPSHOT_ERRORS as exc:
            extra["memory_error"] = f"after the fill: {exc}"

    def record(self, extra: dict[str, Any], connections: int) -> None:
        """Store ``extra["memory"]`` for the ``connections`` the fill left (the connections it created: N when the
        DUT's count or a sample verified them), or ``memory_error`` when there is nothing to divide."""
        if self.before is None or self.after is None:  # after is only read (with a DUT) from a reading before
            return
        if connections <= 0:
            extra["memory_error"] = "no connection was created: no connection to divide by"
            return
        extra["memory"] = memory_used(self.before, self.after, connections, self.noise)
        extra["memory"]["readings"] = self.readings
