"""What a lab offers the testbed: the seam between a lab (namespaces now, VMs next) and the factories."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from natbench.duts.factory import DutPlacement
from natbench.testers.base import LabPorts

__all__ = ["LabResource"]


@runtime_checkable
class LabResource(Protocol):
    """A lab natbench built (or found) on this machine for a testbed.

    :func:`~natbench.testbed.build_testbed` hands :meth:`tester_ports` to the tester factory and, for
    every DUT reached through the lab, :meth:`place_dut` and :meth:`dut_params` to the DUT factory.
    """

    name: str
    """The lab's name."""

    def tester_ports(self) -> LabPorts:
        """The tester's side of the lab: its two ports, its CPUs, what to redo after every DUT setup."""
        ...

    def dut_params(self, dut: str) -> dict[str, Any]:
        """The recipe parameters the lab decides for DUT ``dut`` (interfaces, addresses)."""
        ...

    def place_dut(self, dut: str) -> DutPlacement:
        """Where DUT ``dut`` runs in the lab and how natbench reaches it."""
        ...

    def facts(self) -> dict[str, Any]:
        """Lab facts for the run record."""
        ...

    def release(self) -> None:
        """Take the lab down (called by a testbed that brought it up, when it closes)."""
        ...
