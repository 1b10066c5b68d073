"""The backend API of the testbed: what a tester kind and a DUT access kind provide.

A backend is a small object registered under its kind in :mod:`natbench.testbed.registry`.
natbench's own backends are registered in code: tester kinds ``software``
(:mod:`natbench.testers.software.backend`) and ``trex`` (:mod:`natbench.testers.trex.backend`),
access kinds ``ssh``, ``local``, ``netns`` and ``lab`` (:mod:`natbench.duts.access`). Another
package adds its own through an entry point in the group :data:`natbench.plugins.TESTER_GROUP` or
:data:`natbench.plugins.ACCESS_GROUP` naming a backend object (or a class whose instances are backends)::

    [project.entry-points."natbench.testers"]
    mytester = "mypackage.natbench_backend:BACKEND"

Every method gets the campaign's typed sections (:class:`~natbench.campaign.schema.TesterSpec`,
the DUT's access model) and, where a lab is involved, what the lab hands over; nothing is
looked up behind the caller's back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from natbench.errors import ConfigError
from natbench.testers.base import LabPorts, Tester

if TYPE_CHECKING:
    from natbench.campaign.schema import DutAccess, TesterSpec
    from natbench.duts.factory import DutPlacement
    from natbench.testbed.lab.resource import LabResource

__all__ = [
    "AccessBackend",
    "Endpoint",
    "LabRequest",
    "Locate",
    "TesterBackend",
    "TesterContext",
]


Locate = Callable[[Sequence[str | int], str], ConfigError]
"""Turns a field path (e.g. ``("testbed", "tester", "settings", "server")``) and a message into a
:class:`~natbench.errors.ConfigError` naming the campaign's file and, when read from YAML, the line."""

Endpoint = tuple[str, str, int]
"""A TCP service the testbed needs, probed before a pytest session: ``(what, host, port)``; ``what``
starts the problem text when it does not answer (e.g. ``"no TRex server reachable"``)."""


@dataclass(frozen=True)
class LabRequest:
    """How a tester wants the local lab that DUTs reached through it (``access: {kind: lab}``) need."""

    name: str | None = None
    """The lab's name (None: one of its own for this run, ``<campaign name>-<pid>``)."""
    keep: bool = False
    """Leave a lab this testbed brought up in place when it closes."""
    tester_cpus: tuple[int, ...] | None = None
    """The CPUs the lab sets aside for the tester (None: the lab's default)."""


@dataclass(frozen=True)
class TesterContext:
    """What the testbed hands a tester backend besides its ``testbed.tester`` section."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    lab: LabPorts | None = None
    """The tester's side of the local lab, when the testbed built one (ports, CPUs, fix-up after DUT setup)."""
    receive_timeout: float | None = None
    """The longest ``timeout`` of the campaign's metrics (a default for the tester's receive wait)."""
    locate: Locate | None = None
    """Names the campaign's file and line in a settings error (None: the error names the field only)."""


@runtime_checkable
class TesterBackend(Protocol):
    """One kind of traffic generator (``testbed.tester.kind``)."""

    needs_root: bool
    """This machine must run natbench as root to drive the tester (raw sockets, namespaces)."""

    def check(self, spec: TesterSpec, locate: Locate | None) -> None:
        """Check ``spec.settings`` without building or contacting anything; a problem is a ConfigError
        (through ``locate`` when given). The testbed calls it before it builds anything."""
        ...

    def lab_request(self, spec: TesterSpec) -> LabRequest | None:
        """How this tester wants the local lab when a DUT is reached through it; None: it cannot use one."""
        ...

    def create(self, spec: TesterSpec, context: TesterContext) -> Tester:
        """Build the tester (it may connect lazily, on its first ``prepare``)."""
        ...

    def problems(self, spec: TesterSpec) -> list[str]:
        """Why this machine cannot drive the tester, apart from root and the network (empty when it can)."""
        ...

    def endpoints(self, spec: TesterSpec) -> list[Endpoint]:
        """TCP services the tester needs (a server), probed when the network is checked."""
        ...


@runtime_checkable
class AccessBackend(Protocol):
    """One way to reach a DUT (``testbed.duts[].access.kind``)."""

    uses_lab: bool
    """DUTs reached this way live in the local lab: the testbed brings one up (or uses the one found)."""
    needs_root: bool
    """This machine must run natbench as root to reach such a DUT (namespaces, host commands)."""

    def place(self, access: DutAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """Where DUT ``dut`` runs and how natbench reaches it; ``lab`` is the testbed's lab when
        :attr:`uses_lab` (None when there is none)."""
        ...

    def problems(self, access: DutAccess) -> list[str]:
        """Why this machine cannot reach such a DUT, apart from root and the network (empty when it can)."""
        ...

    def endpoints(self, access: DutAccess, dut: str) -> list[Endpoint]:
        """TCP services needed to reach DUT ``dut`` (an SSH server), probed when the network is checked."""
        ...
