"""How natbench reaches a DUT: one testbed backend per access kind (``testbed.duts[].access.kind``).

``ssh``    :class:`~natbench.duts.ssh.SshExecutor` (host, user, port, key, known_hosts,
           allow_unknown_host_key, sudo, connect_timeout, command_timeout, keepalive_interval,
           keepalive_count); with ``namespace``
           the recipe runs inside that namespace on the remote host.
``local``  :class:`~natbench.duts.executors.LocalExecutor` (this machine's current namespace).
``netns``  :class:`~natbench.duts.executors.NetnsExecutor` (``namespace``).
``lab``    the DUT namespace of the local lab the testbed hands over (``access.namespace``
           overrides the namespace); with ``access.vm`` a QEMU VM of the VM lab, over SSH with the
           image's pinned host key. The lab's namespace shares this machine's kernel, so the
           recipe's ``host_settings`` defaults to true there (global conntrack table/hash sizes
           are applied, and restored at teardown).

They are registered under their kinds in :data:`natbench.testbed.registry.ACCESS`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from natbench.campaign.schema import LabAccess, LocalAccess, NetnsAccess, SshAccess
from natbench.duts.executors import LocalExecutor, NetnsExecutor
from natbench.duts.factory import DutPlacement
from natbench.errors import ConfigError

if TYPE_CHECKING:
    from natbench.campaign.schema import DutAccess
    from natbench.testbed.backends import AccessBackend, Endpoint
    from natbench.testbed.lab.resource import LabResource

__all__ = ["BUILTIN_ACCESS", "LabBackend", "LocalBackend", "NetnsBackend", "SshBackend"]

A = TypeVar("A", SshAccess, LocalAccess, NetnsAccess, LabAccess)


def _expect(access: DutAccess, kind: type[A]) -> A:
    if not isinstance(access, kind):
        raise TypeError(f"the {kind.__name__} backend was given {access!r}")
    return access


class SshBackend:
    """``access: {kind: ssh, ...}``: the DUT over SSH (paramiko), optionally inside a remote namespace."""

    uses_lab = False
    """An SSH DUT is not in the local lab."""
    needs_root = False
    """SSH needs no root on this machine."""

    def place(self, access: DutAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """An SSH executor (wrapped in ``ip netns exec`` when ``namespace`` is set); it connects on first use."""
        a = _expect(access, SshAccess)
        from natbench.duts.ssh import SshExecutor  # paramiko only when SSH is used

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

    def problems(self, access: DutAccess) -> list[str]:
        """None beyond the network."""
        return []

    def endpoints(self, access: DutAccess, dut: str) -> list[Endpoint]:
        """The DUT's SSH server."""
        a = _expect(access, SshAccess)
        return [(f"DUT {dut} not reachable over SSH", a.host, a.port)]


class _OnThisMachine:
    """A DUT on this machine: nothing to check beyond root (the lab's tools are the lab's preflight), nothing
    reached over the network."""

    def problems(self, access: DutAccess) -> list[str]:
        """None of its own."""
        return []

    def endpoints(self, access: DutAccess, dut: str) -> list[Endpoint]:
        """None: nothing is reached over the network."""
        return []


class LocalBackend(_OnThisMachine):
    """``access: {kind: local}``: this machine, in natbench's own network namespace."""

    uses_lab = False
    """This machine, not the lab."""
    needs_root = True
    """Recipes change this machine's network configuration."""

    def place(self, access: DutAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """A local executor."""
        _expect(access, LocalAccess)
        return DutPlacement(LocalExecutor())


class NetnsBackend(_OnThisMachine):
    """``access: {kind: netns, namespace: NAME}``: an existing network namespace on this machine."""

    uses_lab = False
    """A namespace natbench did not build."""
    needs_root = True
    """Entering a namespace needs root."""

    def place(self, access: DutAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """An executor inside the namespace."""
        return DutPlacement(NetnsExecutor(_expect(access, NetnsAccess).namespace))


class LabBackend(_OnThisMachine):
    """``access: {kind: lab}``: the DUT namespace of the local lab the testbed built or found."""

    uses_lab = True
    """The testbed brings the local lab up for these DUTs."""
    needs_root = True
    """Namespaces and veth pairs need root."""

    def problems(self, access: DutAccess) -> list[str]:
        """A VM DUT (``access.vm``) needs QEMU on this machine: one line naming each missing Debian package."""
        if isinstance(access, LabAccess) and access.vm:
            from natbench.testbed.lab.vm_image import missing_tools

            return missing_tools(("qemu-system-x86_64", "qemu-img"))
        return []

    def place(self, access: DutAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """Where the lab placed the DUT; ``access.namespace`` names another namespace to run the recipe in."""
        a = _expect(access, LabAccess)
        if lab is None:
            if not a.namespace:
                raise ConfigError(
                    "cannot find the lab's DUT namespace: start the lab (natbench lab) or set access.namespace",
                    field=f"testbed.duts.{dut}.access",
                )
            return DutPlacement(NetnsExecutor(a.namespace), host_settings=True)
        placement = lab.place_dut(dut)
        return replace(placement, executor=NetnsExecutor(a.namespace)) if a.namespace else placement


BUILTIN_ACCESS: dict[str, AccessBackend] = {
    "ssh": SshBackend(),
    "local": LocalBackend(),
    "netns": NetnsBackend(),
    "lab": LabBackend(),
}
"""natbench's own access kinds, registered in :data:`natbench.testbed.registry.ACCESS`."""
