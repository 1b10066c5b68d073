"""Will a point's connections fit in the DUT's memory? The memory check of ``natbench plan`` and ``validate``.

Seed 000 (2.3) measured below 150 GB for 400M iptables connections and could not double to 1,600M because they
would not fit in the memory. The plan is offline, so it checks with what it is told: per DUT, its memory
(``duts[].memory``, else a lab VM's ``access.memory``) and the bytes one connection takes
(``duts[].bytes_per_connection``, else the ``memory / conn. (B)`` figure of an earlier run given with
``natbench plan --from RUN``). A point fits when

    N x bytes per connection <= (1 - MEMORY_MARGIN) x memory

with N the point's connections. Beyond that the plan warns (one line per point and DUT); it is never an error, since
the figures are estimates. What it could not check (a DUT without a memory or without bytes per connection) is said
in a note. A measured figure of a DUT group is what all its devices spent together (their memory summed), so it is
applied to each member as an upper bound: a member may be warned about although only the group's sum is too big.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from natbench.values import format_bytes

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign


MEMORY_MARGIN = 0.10
"""Share of the DUT's memory kept for everything but the connections' entries: the kernel and its other caches,
the connection tracking hash table (allocated before the fill and so not in the measured figure), user space."""

_MIB = 2**20


@dataclass(frozen=True)
class MemoryCheck:
    """The outcome of :func:`memory_check`."""

    warnings: tuple[str, ...] = field(default=())
    """One line per point and DUT whose connections would not fit."""
    notes: tuple[str, ...] = field(default=())
    """What could not be checked, and the figures used."""


def memory_check(
    campaign: Campaign, measured: float | None = None, source: str | None = None, margin: float = MEMORY_MARGIN
) -> MemoryCheck:
    """Check every working point's connections against every DUT's memory (see the module docstring).

    ``measured``: bytes per connection measured in an earlier run (``source`` names it), used for the DUTs that
    give no ``bytes_per_connection`` of their own."""
    warnings: list[str] = []
    notes: list[str] = []
    points = campaign.points()
    for dut in campaign.testbed.duts:
        memory = dut.memory
        access_mib = getattr(dut.access, "memory", None)
        if memory is None and isinstance(access_mib, int):
            memory = access_mib * _MIB
        per_conn, per_source = dut.bytes_per_connection, "duts[].bytes_per_connection"
        if per_conn is None and measured is not None:
            per_conn, per_source = measured, source or "an earlier run"
        if memory is None or per_conn is None:
            missing = [
                *(["its memory is not known (duts[].memory)"] if memory is None else []),
                *(["the bytes one connection takes are not known (duts[].bytes_per_connection or plan --from RUN)"]
                  if per_conn is None else []),
            ]  # fmt: skip
            notes.append(f"memory of DUT {dut.name} not checked: {' and '.join(missing)}")
            continue
        usable = (1.0 - margin) * memory
        notes.append(
            f"memory of DUT {dut.name}: {format_bytes(memory)}, {100 * (1 - margin):g} % of it for connections; "
            f"{per_conn:,.0f} B per connection ({per_source})"
        )
        for p in points:
            need = p.connections * per_conn
            if need > usable:
                warnings.append(
                    f"point {p.index} ({p.label}): {p.connections:,} connections x {per_conn:,.0f} B = "
                    f"{format_bytes(need)} exceed {100 * (1 - margin):g} % of DUT {dut.name}'s memory "
                    f"({format_bytes(memory)}): the table may not fit"
                )
    return MemoryCheck(tuple(warnings), tuple(notes))
