"""The backend seam: what a tester kind, a DUT access kind and a local lab provide to the testbed.

A backend is a small object registered under its kind in :data:`~natbench.plugins.registry.TESTERS` or
:data:`~natbench.plugins.registry.ACCESS`. It owns a settings model (:attr:`TesterBackend.settings`,
:attr:`AccessBackend.settings`) that the campaign schema validates the campaign's section with, and every
method gets that validated model; where a lab is involved, it also gets what the lab hands over. Nothing is
looked up behind the caller's back.

A backend's module must stay light: the campaign schema loads the backend to validate a campaign, so what
talks to a tester or a DUT (the TRex client, paramiko) is imported only by :meth:`TesterBackend.create` or
:meth:`AccessBackend.place`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from natbench.errors import ConfigError
from natbench.plugins.dut import DutPlacement
from natbench.plugins.settings import AccessSettings, TesterSettings
from natbench.plugins.tester import LabPorts, Tester
from natbench.traffic.plan import AddressPlan

S = TypeVar("S", bound=TesterSettings)
A = TypeVar("A", bound=AccessSettings)

Locate = Callable[[Sequence[str | int], str], ConfigError]
"""Turns a field path (e.g. ``("testbed", "tester", "settings", "cpus")``) and a message into a
:class:`~natbench.errors.ConfigError` naming the campaign's file and, when read from YAML, the line."""

Endpoint = tuple[str, str, int]
"""A TCP service the testbed needs, probed before a pytest session: ``(what, host, port)``; ``what``
starts the problem text when it does not answer (e.g. ``"no TRex server reachable"``)."""


@dataclass(frozen=True)
class LabRequest:
    """How a tester wants the local lab that DUTs reached through it (``access: {kind: lab}``) need."""

    name: str | None = None
    """The lab's name (None: the testbed names it)."""
    keep: bool = False
    """Leave a lab this testbed brought up in place when it closes."""
    tester_cpus: tuple[int, ...] | None = None
    """The CPUs the lab sets aside for the tester (None: the lab's default)."""


@dataclass(frozen=True)
class TesterContext:
    """What the testbed hands a tester backend besides its validated settings."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    lab: LabPorts | None = None
    """The tester's side of the local lab, when the testbed built one (ports, CPUs, fix-up after DUT setup)."""
    receive_timeout: float | None = None
    """The longest ``timeout`` of the campaign's metrics (a default for the tester's receive wait)."""
    locate: Locate | None = None
    """Names the campaign's file and line in a settings error (None: the error names the field only)."""


@runtime_checkable
class LabResource(Protocol):
    """A lab natbench built (or found) on this machine for a testbed.

    :func:`~natbench.testbed.build_testbed` hands :meth:`tester_ports` to the tester backend and, for
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


@runtime_checkable
class TesterBackend(Protocol[S]):
    """One kind of traffic generator (``testbed.tester.kind``)."""

    settings: type[S]
    """Its settings model: the campaign's ``testbed.tester.settings`` of this kind, with every default (the
    achieved-rate tolerance, the default responder mode)."""
    needs_root: bool
    """This machine must run natbench as root to drive the tester (raw sockets, namespaces)."""

    def check(self, settings: S, locate: Locate | None) -> None:
        """Check what the model cannot (this machine's CPUs, interfaces) without building or contacting
        anything; a problem is a ConfigError (through ``locate`` when given). Called before anything is built."""
        ...

    def lab_request(self, settings: S) -> LabRequest | None:
        """How this tester wants the local lab when a DUT is reached through it; None: it cannot use one."""
        ...

    def create(self, settings: S, context: TesterContext) -> Tester:
        """Build the tester (it may connect lazily, on its first ``prepare``)."""
        ...

    def problems(self, settings: S | None) -> list[str]:
        """Why this machine cannot drive the tester, apart from root and the network (empty when it can);
        ``settings`` None: asked without a campaign (``natbench doctor``). Each line names what to install."""
        ...

    def endpoints(self, settings: S) -> list[Endpoint]:
        """TCP services the tester needs (a server), probed when the network is checked."""
        ...


@runtime_checkable
class AccessBackend(Protocol[A]):
    """One way to reach a DUT (``testbed.duts[].access.kind``)."""

    settings: type[A]
    """Its model: the campaign's ``access`` mapping of this kind (``kind`` a ``Literal`` of its name), with
    every default."""
    uses_lab: bool
    """DUTs reached this way live in the local lab: the testbed brings one up (or uses the one found)."""
    needs_root: bool
    """This machine must run natbench as root to reach such a DUT (namespaces, host commands)."""

    def place(self, access: A, dut: str, lab: LabResource | None) -> DutPlacement:
        """Where DUT ``dut`` runs and how natbench reaches it; ``lab`` is the testbed's lab when
        :attr:`uses_lab` (None when there is none)."""
        ...

    def recipe_params(self, access: A, addresses: AddressPlan, position: int, count: int) -> dict[str, Any]:
        """The recipe parameters the place supplies where the campaign leaves them unset (a lab's interface names
        and DUT addresses; empty for a DUT the campaign describes itself), so that ``natbench validate``
        resolves a recipe as the run will. ``position`` of ``count``: where the DUT is among the testbed's DUTs
        of this access kind, in path order."""
        ...

    def problems(self, access: A | None) -> list[str]:
        """Why this machine cannot reach such a DUT, apart from root and the network (empty when it can);
        ``access`` None: asked without a campaign (``natbench doctor``). Each line names what to install."""
        ...

    def endpoints(self, access: A, dut: str) -> list[Endpoint]:
        """TCP services needed to reach DUT ``dut`` (an SSH server), probed when the network is checked."""
        ...
