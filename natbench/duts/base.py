"""The seam between procedures and Devices Under Test."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from natbench.testers.base import Mapping
from natbench.workingpoint import WorkingPoint

__all__ = ["Dut", "MeasuresMemory", "MonitorsCpu", "ReportsSupport"]


@runtime_checkable
class Dut(Protocol):
    """One DUT, or several acting as one (dual-DUT IPv4aaS: CE + PE)."""

    def setup(self, point: WorkingPoint) -> None:
        """Apply the recipe with this working point's parameters (cores, table sizes, ...)."""
        ...

    def reset_connections(self) -> None:
        """Empty the connection tracking table (untimed)."""
        ...

    def count_connections(self) -> int:
        """Number of connections in the connection tracking table now."""
        ...

    def timed_flush(self) -> float:
        """Run the DUT's own delete-all command; return the seconds it took, timed on the DUT."""
        ...

    def mappings(self) -> list[Mapping]:
        """The translated tuples the DUT holds (for ``ResponderMode.READ``)."""
        ...

    def facts(self) -> dict[str, Any]:
        """Kernel, versions, CPU model, active cores, table/hash sizes."""
        ...

    def teardown(self) -> None:
        """Undo ``setup`` and restore the original state (also after errors)."""
        ...


# Optional hooks. A DUT offers them by having the methods; the engine calls them when present,
# so a DUT without them still satisfies :class:`Dut`.


@runtime_checkable
class ReportsSupport(Protocol):
    """Optional Dut hook: which operations the DUT can do, asked before one a procedure can do without.

    Asked for ``count_connections`` (the table checks), ``mappings`` (responder mode compute's port-preservation
    check) and ``reset_connections`` (the forwarding baseline's emptying of the table). A DUT without the hook is
    asked to do each of them (and may raise NotImplementedError, or DutError where the procedure catches it).
    Recipe DUTs do not offer it: a recipe without a usable ``count_connections`` step fails the table check
    with a DutError instead of having it skipped.
    """

    def supports(self, operation: str) -> bool:
        """Whether the DUT can do ``operation`` (the name of a :class:`Dut` method); False: the procedure
        skips what it would have done with it."""
        ...


@runtime_checkable
class MonitorsCpu(Protocol):
    """Optional Dut hook: per-core CPU idle sampling around each traffic trial (the run's ``monitor_interval``)."""

    def start_monitor(self, interval: float = 1.0) -> None:
        """Start sampling every ``interval`` seconds (the engine calls it just before a trial's traffic)."""
        ...

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Stop sampling; ``{dut name: samples}``, each sample ``{"t", "idle": {core: %}, ...}`` ({} when not
        started). The engine stores them with the trial."""
        ...


@runtime_checkable
class MeasuresMemory(Protocol):
    """Optional Dut hook: the DUT's memory now, read after the table is emptied and after each fill of N
    connections, so that every fill stores the memory the N connections took (:mod:`natbench.metrics.memory`)."""

    def memory_snapshot(self) -> dict[str, int]:
        """Memory figures in bytes, one DUT round trip: ``mem_available`` and ``mem_total`` (/proc/meminfo),
        ``conntrack_slab`` (the nf_conntrack slab cache) and ``jool_session_slab`` / ``jool_bib_slab`` (Jool's
        session and BIB caches) where the DUT shows them. Raise (DutError, OSError, ...) when they cannot be
        read; the fill then goes on without them."""
        ...
