"""The local lab's access kind (``access: {kind: lab}``): its model and its backend, owned by the lab.

A DUT reached this way runs in the DUT namespace of the local lab the testbed brings up (or finds), or,
with ``access.vm``, in a QEMU VM of the VM lab, over SSH with the image's pinned host key. The namespace
shares this machine's kernel, so the recipe's ``host_settings`` defaults to true there (global conntrack
table/hash sizes are applied, and restored at teardown). The lab decides the DUT's interface names and its
addresses on the path's ends (:meth:`LabBackend.recipe_params`): the namespace lab's ``nb-priv``/``nb-pub``,
a VM's ``eth1``/``eth2``.

Registered as access kind ``lab`` in :data:`natbench.plugins.ACCESS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from natbench.duts.access import NETNS_NAME
from natbench.duts.executors import NetnsExecutor
from natbench.errors import ConfigError
from natbench.plugins import AccessSettings, DutMachine, DutPlacement, Endpoint, LabResource
from natbench.testbed.lab.netns import dut_recipe_params, lab_problems
from natbench.testbed.lab.vm import (
    DEFAULT_ACCEL,
    DEFAULT_BOOT_TIMEOUT,
    DEFAULT_MEMORY,
    DEFAULT_VCPUS,
    VmSettings,
    vm_recipe_params,
)
from natbench.testbed.lab.vm_image import IMAGES, find_image, missing_tools
from natbench.traffic.plan import AddressPlan
from natbench.values import MAX_DURATION_SECONDS

_QEMU = ("qemu-system-x86_64", "qemu-img")
"""What booting a VM DUT needs on this machine."""


class LabAccess(AccessSettings):
    """Run the recipe in a namespace of the local lab that natbench builds (``natbench lab``), or in a VM of it."""

    kind: Literal["lab"]
    """Access kind: ``lab``."""
    namespace: str | None = Field(default=None, pattern=NETNS_NAME)
    """Run the recipe in this namespace instead of the lab's DUT namespace (None: the DUT namespace of the lab
    the testbed brings up, or, for a tester that brings none, of the one lab made with ``natbench lab up``)."""
    vm: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,30}$")
    """Run the DUT in a QEMU virtual machine booted from natbench's image of this name (``jool``: Debian 12
    with Jool 4.1.9 from Debian's packages, built and cached by ``natbench lab image build jool``) instead of
    the lab's DUT namespace. The VM's data NICs (``eth1`` towards the Initiator, ``eth2`` towards the
    Responder) are taps wired to the tester's two ports; natbench reaches it over SSH with the image's pinned
    host key. Several VM DUTs (464XLAT: CLAT, then PLAT) boot one VM each, wired in path order, each VM's
    ``eth2`` to the next one's ``eth1``; then every lab DUT must be a VM. None: the DUT namespace."""
    vcpus: int | None = Field(default=None, ge=1, le=64)
    """Virtual CPUs of the VM (``vm`` only; with ``vm`` the default is 1)."""
    memory: int | None = Field(default=None, ge=256, le=262144)
    """Memory of the VM in MiB (``vm`` only; with ``vm`` the default is 1536)."""
    accel: Literal["auto", "kvm", "tcg"] | None = None
    """QEMU accelerator (``vm`` only; with ``vm`` the default is ``auto``): ``auto`` tries KVM where this machine
    has hardware virtualisation (vmx/svm) and falls back to software emulation (TCG) when the guest does not come
    up with it; ``kvm`` or ``tcg`` force one. The one used is in the DUT's facts (``vm.accel``)."""
    boot_timeout: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds the VM may take from start to SSH (``vm`` only; with ``vm`` the default is 600; at most seven
    days); beyond it the boot fails with the last lines of its serial console."""

    @model_validator(mode="after")
    def _vm_settings(self) -> Self:
        vm_only = (self.vcpus, self.memory, self.accel, self.boot_timeout)
        if self.vm is None:
            if any(v is not None for v in vm_only):
                raise ValueError("vcpus, memory, accel and boot_timeout are settings of a VM DUT: set access.vm too")
            return self
        if self.namespace is not None:
            raise ValueError("a VM DUT runs in its VM: access.namespace does not apply with access.vm")
        # a VM DUT's defaults are filled in, so the resolved campaign (and a run's campaign.yaml) holds them
        self.vcpus = DEFAULT_VCPUS if self.vcpus is None else self.vcpus
        self.memory = DEFAULT_MEMORY if self.memory is None else self.memory
        self.accel = DEFAULT_ACCEL if self.accel is None else self.accel
        self.boot_timeout = DEFAULT_BOOT_TIMEOUT if self.boot_timeout is None else self.boot_timeout
        return self

    def machine(self) -> DutMachine:
        """A VM DUT's memory (``memory`` MiB); a namespace DUT shares this machine's kernel and memory."""
        if self.vm is not None:
            return DutMachine(memory=(self.memory or DEFAULT_MEMORY) * 2**20)
        return DutMachine(shares_host=True)

    def vm_settings(self) -> VmSettings | None:
        """What the VM lab boots for this DUT (None: not a VM DUT)."""
        if self.vm is None:
            return None
        return VmSettings(
            self.vm,
            vcpus=self.vcpus or DEFAULT_VCPUS,
            memory=self.memory or DEFAULT_MEMORY,
            accel=self.accel or DEFAULT_ACCEL,
            boot_timeout=self.boot_timeout or DEFAULT_BOOT_TIMEOUT,
        )


def vm_settings(duts: Sequence[tuple[str, AccessSettings]]) -> list[tuple[str, VmSettings]] | None:
    """The VMs of the VM DUTs among ``duts`` (name, access; path order); None: no VM DUT, a namespace lab.

    Every lab DUT is then a VM (a namespace DUT and VMs cannot share the lab's one path): a ConfigError
    names the first one that is not."""
    in_lab = [(name, a) for name, a in duts if isinstance(a, LabAccess)]
    vms = [(name, settings) for name, a in in_lab if (settings := a.vm_settings()) is not None]
    if not vms:
        return None
    if len(vms) != len(in_lab):
        plain = next(name for name, a in in_lab if a.vm is None)
        raise ConfigError(
            "a lab with VM DUTs runs every lab DUT in a VM: set access.vm here too",
            field=f"testbed.duts.{plain}.access",
        )
    return vms


class LabBackend:
    """``access: {kind: lab}``: the DUT namespace (or a VM) of the local lab the testbed built or found."""

    settings = LabAccess
    """The ``lab`` access model."""
    uses_lab = True
    """The testbed brings the local lab up for these DUTs."""
    needs_root = True
    """Namespaces and veth pairs need root."""

    def place(self, access: LabAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        """Where the lab placed the DUT; ``access.namespace`` names another namespace to run the recipe in."""
        if not isinstance(access, LabAccess):
            raise TypeError(f"the LabAccess backend was given {access!r}")
        if lab is None:
            if not access.namespace:
                raise ConfigError(
                    "cannot find the lab's DUT namespace: start the lab (natbench lab) or set access.namespace",
                    field=f"testbed.duts.{dut}.access",
                )
            return DutPlacement(NetnsExecutor(access.namespace), host_settings=True)
        placement = lab.place_dut(dut)
        return replace(placement, executor=NetnsExecutor(access.namespace)) if access.namespace else placement

    def recipe_params(self, access: LabAccess, addresses: AddressPlan, position: int, count: int) -> dict[str, Any]:
        """The lab's interface names and the campaign's DUT addresses: the namespace lab's ``nb-priv``/``nb-pub``;
        a VM's ``eth1``/``eth2``, with the private address on the first VM and the public one on the last
        (``position`` of ``count`` lab DUTs, path order). The running lab supplies the same
        (:meth:`~natbench.plugins.LabResource.dut_params`)."""
        if access.vm is not None:
            return vm_recipe_params(addresses, position, count)
        return dict(dut_recipe_params(addresses))

    def problems(self, access: LabAccess | None) -> list[str]:
        """A VM DUT needs QEMU on this machine, and, while its image is not built yet (it is built on first use),
        what the image build needs. Without a campaign (``natbench doctor``): the namespace lab's tools, QEMU and
        every image natbench can build."""
        if access is None:
            out = lab_problems() + missing_tools(_QEMU)
            for name in sorted(IMAGES):
                if find_image(name) is None:
                    out.append(f"the VM image {name} is not built: natbench lab image build {name} (about 5 minutes)")
            return out
        if access.vm is None:
            return []
        problems = missing_tools(_QEMU)
        if access.vm in IMAGES and find_image(access.vm) is None:  # built on first use: what the build needs too
            problems += [p for p in missing_tools() if p not in problems]
        return problems

    def endpoints(self, access: LabAccess, dut: str) -> list[Endpoint]:
        """None: nothing is reached over the network (the VM's SSH goes through the lab's namespace)."""
        return []


LAB = LabBackend()
"""The backend registered as access kind ``lab``."""
