"""DUT memory per connection, measured in every fill of N connections (seed 002: memory against hash size at 40M
connections; seed 000 2.3: 400M connections took below 150 GB, 1,600M would not fit).

A fill (phase 1 that loads the table for throughput, frame loss, latency, PDV and tear-down) empties the table, then
creates N connections. A DUT with the optional :class:`~natbench.plugins.MeasuresMemory` hook is read twice per
fill: once after the table was emptied, once after the fill's traffic (two DUT round trips). The fill trial stores
``extra["memory"]``::

    {"before": {key: bytes}, "after": {key: bytes}, "connections": N,
     "used": {key: bytes}, "per_connection": {key: bytes / N}}

N is the number of connections the tester created: the valid phase-1 frames (not the DUT's own count, which may
include management connections). ``used`` is what the N connections took: the fall of ``mem_available`` and the
growth of each slab key (``conntrack_slab``, ``jool_session_slab``, ``jool_bib_slab``); ``mem_total`` is a capacity
and has none. A DUT without the hook stores nothing; a snapshot that fails stores ``extra["memory_error"]`` and the
fill goes on as if nothing had been measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from natbench.errors import NatbenchError
from natbench.plugins import Dut, MeasuresMemory
from natbench.results import PhaseResult

__all__ = ["CAPACITY_KEYS", "FALLING_KEYS", "FillMemory", "memory_used"]

FALLING_KEYS = frozenset({"mem_available"})
"""Keys that fall as connections take memory (used = before - after); every other key grows (used = after -
before)."""
CAPACITY_KEYS = frozenset({"mem_total"})
"""Keys that are capacities, stored in the snapshots but with no use per connection."""

_SNAPSHOT_ERRORS = (NatbenchError, OSError, ValueError, NotImplementedError)
"""What a failing snapshot may raise (DutError, executor and parse errors); the fill goes on without memory."""


def memory_used(before: Mapping[str, int], after: Mapping[str, int], connections: int) -> dict[str, Any]:
    """The stored memory record of one fill: snapshots, N, bytes the N connections took per key and per connection.

    Keys missing from either snapshot, and capacity keys, get no use. ``connections`` must be positive."""
    if connections <= 0:
        raise ValueError("connections must be positive")
    used: dict[str, int] = {}
    for key in before:
        if key in CAPACITY_KEYS or key not in after:
            continue
        used[key] = int(before[key]) - int(after[key]) if key in FALLING_KEYS else int(after[key]) - int(before[key])
    return {
        "before": dict(before),
        "after": dict(after),
        "connections": connections,
        "used": used,
        "per_connection": {key: value / connections for key, value in used.items()},
    }


class FillMemory:
    """Reads the DUT's memory around one fill; :func:`~natbench.metrics.trial.phase1_step` calls :meth:`emptied`
    after emptying the table and :meth:`filled` after the traffic, before the trial is stored."""

    def __init__(self, dut: Dut) -> None:
        self.dut: MeasuresMemory | None = dut if isinstance(dut, MeasuresMemory) else None
        """The DUT when it has the hook (None: nothing is measured or stored)."""
        self.before: dict[str, int] | None = None
        """The snapshot after the table was emptied (None: not taken or failed)."""
        self.error: str | None = None
        """Why a snapshot failed."""
        self.after: dict[str, int] | None = None
        """The snapshot after the fill's traffic (None: not taken or failed)."""

    def emptied(self) -> None:
        """Snapshot of the empty table (first round trip)."""
        self.before, self.error = None, None
        if self.dut is None:
            return
        try:
            self.before = {str(k): int(v) for k, v in self.dut.memory_snapshot().items()}
        except _SNAPSHOT_ERRORS as exc:
            self.error = f"before the fill: {exc}"

    def filled(self, phase: PhaseResult, extra: dict[str, Any]) -> None:
        """Snapshot of the filled table (second round trip) and the record in ``extra`` with N the fill's valid
        phase-1 frames (a fill judged by the tester's counts); a fill judged by what the DUT holds calls
        :meth:`snapshot_filled` and :meth:`record` instead."""
        self.snapshot_filled(extra)
        self.record(extra, sum(int(c.valid) for c in phase.counts.values()))

    def snapshot_filled(self, extra: dict[str, Any]) -> None:
        """Snapshot of the filled table (second round trip), right after the fill's traffic; a failure is noted in
        ``extra["memory_error"]``."""
        self.after = None
        if self.dut is None:
            return
        if self.before is None:
            extra["memory_error"] = self.error or "no snapshot of the emptied table"
            return
        try:
            self.after = {str(k): int(v) for k, v in self.dut.memory_snapshot().items()}
        except _SNAPSHOT_ERRORS as exc:
            extra["memory_error"] = f"after the fill: {exc}"

    def record(self, extra: dict[str, Any], connections: int) -> None:
        """Store ``extra["memory"]`` for the ``connections`` the fill left (the connections it created: N when the
        DUT's count or a sample verified them), or ``memory_error`` when there is nothing to divide."""
        if self.dut is None or self.before is None or self.after is None:
            return
        if connections <= 0:
            extra["memory_error"] = "no connection was created: no connection to divide by"
            return
        extra["memory"] = memory_used(self.before, self.after, connections)
