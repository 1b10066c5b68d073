"""How natbench reaches a DUT it does not build: the access kinds ``ssh``, ``local`` and ``netns``.

Each is a model (the campaign's ``testbed.duts[].access`` of that kind, with every default) and a
backend registered under its kind in :data:`natbench.plugins.ACCESS`:

``ssh``    :class:`~natbench.duts.ssh.SshExecutor` (paramiko, imported only when a DUT is placed); with
           ``namespace`` the recipe runs inside that namespace on the remote host.
``local``  :class:`~natbench.duts.executors.LocalExecutor` (this machine's current namespace).
``netns``  :class:`~natbench.duts.executors.NetnsExecutor` (``namespace``).

The local lab's access kind ``lab`` is the lab's own: :mod:`natbench.testbed.lab.access`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from natbench.duts.executors import LocalExecutor, NetnsExecutor
from natbench.plugins import AccessSettings, DutPlacement, Endpoint, LabResource
from natbench.traffic.plan import AddressPlan
from natbench.values import MAX_DURATION_SECONDS, MAX_WAIT_SECONDS

NETNS_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$"
"""An ``ip netns`` name: no slash or blank, not ``.`` or ``..``."""


class SshAccess(AccessSettings):
    """Reach a DUT over SSH (paramiko); the host key is verified unless explicitly allowed."""

    kind: Literal["ssh"]
    """Access kind: ``ssh``."""
    host: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x20\x7f]+$")
    """Host name or address of the DUT's management interface (no blank or control character)."""
    user: str = Field(default="root", min_length=1, max_length=255, pattern=r"^[^\x00-\x20\x7f]+$")
    """Login user (no blank or control character)."""
    port: int = Field(default=22, ge=1, le=65535)
    """SSH port."""
    key: Path | None = None
    """Private key file (None: the SSH agent or the default keys)."""
    known_hosts: Path | None = None
    """known_hosts file used to verify the host key (None: ~/.ssh/known_hosts)."""
    allow_unknown_host_key: bool = False
    """Accept a host key that is not in known_hosts (off by default; never for production DUTs)."""
    sudo: bool = False
    """Run recipe commands through ``sudo -n``."""
    connect_timeout: float = Field(default=10.0, gt=0, le=MAX_WAIT_SECONDS)
    """Seconds to wait for the SSH connection (at most one day)."""
    command_timeout: float = Field(default=3600.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds one recipe command may take (deleting 800M connections took ~40 minutes in seed 000; at most
    seven days)."""
    namespace: str | None = Field(default=None, pattern=NETNS_NAME)
    """Run the recipe inside this network namespace on the remote host (``ip netns exec NAME``; None: the host's)."""
    keepalive_interval: float = Field(default=5.0, gt=0, le=600)
    """Seconds of silence from the DUT after which natbench sends an SSH keepalive (a request the server must
    answer), and between keepalives."""
    keepalive_count: int = Field(default=3, ge=1, le=100)
    """Unanswered keepalives after which the connection is declared lost (a silent drop is noticed at most
    keepalive_interval x (keepalive_count + 1) seconds after the last packet from the DUT: 20 s by default)."""

    @field_validator("key", "known_hosts")
    @classmethod
    def _home(cls, v: Path | None) -> Path | None:
        return v.expanduser() if v is not None else None


class LocalAccess(AccessSettings):
    """Run the recipe on this machine, in the current network namespace."""

    kind: Literal["local"]
    """Access kind: ``local``."""


class NetnsAccess(AccessSettings):
    """Run the recipe on this machine inside an existing network namespace."""

    kind: Literal["netns"]
    """Access kind: ``netns``."""
    namespace: str = Field(pattern=NETNS_NAME)
    """Name of the network namespace (``ip netns exec NAME``)."""


class _Described:
    """An access kind whose DUT the campaign describes itself: no recipe parameters of the place, nothing to
    check on this machine."""

    settings: type[AccessSettings]

    def _own(self, access: Any) -> Any:
        """``access`` when it is this kind's model; a TypeError otherwise (a testbed hands each kind its own)."""
        if not isinstance(access, self.settings):
            raise TypeError(f"the {self.settings.__name__} backend was given {access!r}")
        return access

    def recipe_params(self, access: Any, addresses: AddressPlan, position: int, count: int) -> dict[str, Any]:
        """None: the campaign gives the DUT's interfaces and addresses."""
        return {}

    def problems(self, access: Any) -> list[str]:
        """None beyond root and the network."""
        return []


class SshBackend(_Described):
    """``access: {kind: ssh, ...}``: the DUT over SSH (paramiko), optionally inside a remote namespace."""

    settings = SshAccess
    """The ``ssh`` access model."""
    uses_lab = False
    """An SSH DUT is not in the local lab."""
    needs_root = False
    """SSH needs no root on this machine."""

    def place(self, access: SshAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """An SSH executor (wrapped in ``ip netns exec`` when ``namespace`` is set); it connects on first use."""
        from natbench.duts.ssh import SshExecutor  # paramiko only when SSH is used

        a: SshAccess = self._own(access)
        ssh = SshExecutor(
            a.host,
            user=a.user or None,
            port=a.port,
            key=str(a.key) if a.key else None,
            known_hosts=str(a.known_hosts) if a.known_hosts else None,
            allow_unknown_host_key=a.allow_unknown_host_key,
            sudo=a.sudo,
            connect_timeout=a.connect_timeout,
            command_timeout=a.command_timeout,
            keepalive_interval=a.keepalive_interval,
            keepalive_count=a.keepalive_count,
        )
        return DutPlacement(NetnsExecutor(a.namespace, ssh) if a.namespace else ssh)

    def endpoints(self, access: SshAccess, dut: str) -> list[Endpoint]:
        """The DUT's SSH server."""
        a: SshAccess = self._own(access)
        return [(f"DUT {dut} not reachable over SSH", a.host, a.port)]


class _OnThisMachine(_Described):
    """A DUT on this machine: nothing reached over the network."""

    def endpoints(self, access: Any, dut: str) -> list[Endpoint]:
        """None: nothing is reached over the network."""
        return []


class LocalBackend(_OnThisMachine):
    """``access: {kind: local}``: this machine, in natbench's own network namespace."""

    settings = LocalAccess
    """The ``local`` access model."""
    uses_lab = False
    """This machine, not the lab."""
    needs_root = True
    """Recipes change this machine's network configuration."""

    def place(self, access: LocalAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """A local executor."""
        self._own(access)
        return DutPlacement(LocalExecutor())


class NetnsBackend(_OnThisMachine):
    """``access: {kind: netns, namespace: NAME}``: an existing network namespace on this machine."""

    settings = NetnsAccess
    """The ``netns`` access model."""
    uses_lab = False
    """A namespace natbench did not build."""
    needs_root = True
    """Entering a namespace needs root."""

    def place(self, access: NetnsAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """An executor inside the namespace."""
        return DutPlacement(NetnsExecutor(self._own(access).namespace))


SSH = SshBackend()
"""The backend registered as access kind ``ssh``."""
LOCAL = LocalBackend()
"""The backend registered as access kind ``local``."""
NETNS = NetnsBackend()
"""The backend registered as access kind ``netns``."""
