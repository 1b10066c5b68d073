"""The seam between procedures and Devices Under Test."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from natbench.testers.base import Mapping
from natbench.workingpoint import WorkingPoint

__all__ = ["Dut"]


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
