"""The VM lab: the DUT is a QEMU virtual machine booted from a natbench image, the tester a namespace.

::

    tester netns nb-<name>-tester       DUT netns nb-<name>-dut
    +-----------------------+           +---------------------------------------------------+
    |  nb-init  --- veth ---+-----------+-- nb-priv <=nft fwd==> nbv-priv (tap) -- eth1  VM  |
    |  nb-resp  --- veth ---+-----------+-- nb-pub  <=nft fwd==> nbv-pub  (tap) -- eth2     |
    +-----------------------+           |   qemu user net: 127.0.0.1:2222 -> guest sshd      |
                                        +---------------------------------------------------+

It is a :class:`~natbench.testbed.lab.netns.NetnsLab` whose DUT namespace holds the QEMU process and
its taps instead of the DUT's addresses: the tester's ports are veth pairs exactly as in the namespace
lab, and in the DUT namespace each veth end is joined to its tap both ways by an nftables ``fwd`` at netdev ingress.
A frame the tester sends is accepted by the veth at once; when the VM falls behind it is dropped at the
tap's queue, as on a wire (a tap written directly would push back on the sender instead). Management is
QEMU's user network with a port forward to the guest's sshd on the DUT namespace's loopback; natbench
opens that TCP connection inside the namespace and verifies the image's pinned host key. So the VM is
owned exactly like the namespaces: deleting the lab kills every process of its namespaces (QEMU) and
the namespaces (veths, taps); the VM's files (the copy-on-write overlay on the cached image, serial
log, known_hosts) live in ``<state dir>/<name>.vm/``, which the namespace lab removes too. ``lab
down``, ``lab down --stale`` and a kill -9 followed by ``--stale`` leave no qemu process, tap or
overlay behind.

The accelerator is KVM where the host has hardware virtualisation (vmx/svm in /proc/cpuinfo) and the
guest comes up with it, else TCG; one log line says which and the DUT facts record it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import logging
import os
import shlex
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from natbench.plugins import SHARES_HOST, DutPlacement, LabPorts
from natbench.testbed.lab.host import LabError, netns_list, require_root, run
from natbench.testbed.lab.netns import (
    DUT_PRIVATE_IF,
    DUT_PUBLIC_IF,
    TESTER_INITIATOR_IF,
    TESTER_RESPONDER_IF,
    NetnsLab,
    _mask,
    drop_tester_ingress,
)
from natbench.testbed.lab.vm_image import Image, build_image, find_image, missing_tools
from natbench.traffic.plan import AddressPlan, Family

log = logging.getLogger(__name__)

VM_PRIVATE_IF = "eth1"
"""The VM's private-side NIC (towards the Initiator)."""
VM_PUBLIC_IF = "eth2"
"""The VM's public-side NIC (towards the Responder)."""
DEFAULT_VCPUS = 1
"""vCPUs of a VM DUT unless its ``access.vcpus`` (or ``natbench lab up --vcpus``) says otherwise."""
DEFAULT_MEMORY = 1536
"""Memory of a VM DUT in MiB unless its ``access.memory`` says otherwise."""
DEFAULT_ACCEL: Literal["auto", "kvm", "tcg"] = "auto"
"""QEMU accelerator choice of a VM DUT unless its ``access.accel`` says otherwise."""
DEFAULT_BOOT_TIMEOUT = 600.0
"""Seconds a VM DUT may take from start to SSH unless its ``access.boot_timeout`` says otherwise."""
SSH_PORT = 2222
"""The port on the DUT namespace's loopback QEMU forwards to the guest's sshd."""
VM_MGMT_IF = "eth0"
"""The VM's management NIC (QEMU user network, SSH)."""
_NOTRACK = (("PREROUTING", "-i"), ("OUTPUT", "-o"))
"""Raw-table chains (and their interface option) where the management NIC's packets skip conntrack."""
TAP_PRIVATE_IF = "nbv-priv"
"""The tap of the VM's private NIC (in the DUT namespace)."""
TAP_PUBLIC_IF = "nbv-pub"
"""The tap of the VM's public NIC (in the DUT namespace)."""
TAP_QUEUE = 256
"""Frames a tap queues towards the VM (its qdisc and its ring): about a NIC ring, so a burst is not hidden
in a deep queue."""

_CLONE_NEWNET = 0x40000000


def netns_connect(netns: str, host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to ``host:port`` opened inside network namespace ``netns`` (needs root).

    A short-lived thread enters the namespace (``setns`` acts on the calling thread only) and connects;
    the socket stays in that namespace, the rest of this process does not move.
    """
    result: dict[str, Any] = {}

    def connect() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            try:
                if libc.setns(fd, _CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns {netns}: {os.strerror(err)}")
            finally:
                os.close(fd)
            result["sock"] = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            result["error"] = exc

    thread = threading.Thread(target=connect, name=f"netns-connect-{netns}", daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    sock: socket.socket = result["sock"]
    return sock


def _neigh_command(addr: str, mac: str, vif: str) -> str:
    """Shell command installing a permanent neighbour entry on the VM's NIC ``vif`` wherever it is: the VM's own
    network namespace, else the namespace inside the VM a recipe moved it into (the MAP-T CE's ``napt``)."""
    entry = f"neigh replace {shlex.quote(addr)} lladdr {shlex.quote(mac)} nud permanent dev {shlex.quote(vif)}"
    dev = shlex.quote(vif)
    return (
        f"if ip link show dev {dev} >/dev/null 2>&1; then ip {entry}; else"
        f' for ns in $(ip netns list | cut -d" " -f1); do'
        f' if ip -n "$ns" link show dev {dev} >/dev/null 2>&1; then ip -n "$ns" {entry}; fi; done; fi'
    )


def choose_accel(requested: str = "auto") -> tuple[list[str], str]:
    """The accelerators to try in order and why: KVM only where the host has hardware virtualisation."""
    if requested == "tcg":
        return ["tcg"], "tcg requested"
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    hw = " vmx" in flags or " svm" in flags
    kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    if requested == "kvm":
        if not kvm:
            raise LabError("accel kvm: /dev/kvm is missing or not accessible")
        return ["kvm"], "kvm requested"
    if kvm and hw:
        return ["kvm", "tcg"], "hardware virtualisation found: KVM first, TCG if the guest does not come up"
    why = "no /dev/kvm" if not kvm else "no vmx/svm in /proc/cpuinfo (KVM here is paravirtual, guests do not boot)"
    return ["tcg"], f"software emulation (TCG): {why}"


def vm_recipe_params(addresses: AddressPlan, position: int, count: int) -> dict[str, Any]:
    """The recipe parameters the VM lab decides for VM ``position`` of ``count`` (path order): its NICs and, on the
    path's ends, the campaign's DUT addresses (the first VM's private side, the last VM's public side; the links
    between VMs are the campaign's to address)."""
    a = addresses
    params: dict[str, Any] = {"private_if": VM_PRIVATE_IF, "public_if": VM_PUBLIC_IF}
    if position == 0:
        params["private_address"] = f"{a.dut_private}/{a.private_prefixlen}"
    if position == count - 1:
        params["public_address"] = f"{a.dut_public}/{a.public_prefixlen}"
    return params


class VmSettings:
    """What the VM lab boots: the image name, vCPUs, memory (MiB), accelerator choice and boot timeout."""

    def __init__(
        self,
        image: str = "jool",
        *,
        vcpus: int = DEFAULT_VCPUS,
        memory: int = DEFAULT_MEMORY,
        accel: str = DEFAULT_ACCEL,
        boot_timeout: float = DEFAULT_BOOT_TIMEOUT,
        image_cache: Path | str | None = None,
    ) -> None:
        self.image = image
        self.vcpus = int(vcpus)
        self.memory = int(memory)
        self.accel = accel
        self.boot_timeout = float(boot_timeout)
        self.image_cache = image_cache

    def as_dict(self) -> dict[str, Any]:
        """The settings as recorded in the lab state."""
        return {"image": self.image, "vcpus": self.vcpus, "memory": self.memory, "accel": self.accel}


@dataclass(frozen=True)
class _Vm:
    """One VM of the lab's path: its place, DUT name, settings, taps, SSH port and files."""

    index: int
    dut: str | None
    settings: VmSettings
    root: Path

    @property
    def taps(self) -> tuple[str, str]:
        """(private-side tap, public-side tap) in the DUT namespace."""
        if self.index == 0:
            return TAP_PRIVATE_IF, TAP_PUBLIC_IF
        return f"nbv{self.index}-priv", f"nbv{self.index}-pub"

    @property
    def port(self) -> int:
        """The SSH port QEMU forwards on the DUT namespace's loopback."""
        return SSH_PORT + self.index

    @property
    def dir(self) -> Path:
        """This VM's overlay disk and logs."""
        return self.root if self.index == 0 else self.root / f"vm{self.index}"

    @property
    def serial_log(self) -> Path:
        """This VM's serial console."""
        return self.dir / "serial.log"

    @property
    def label(self) -> str:
        """How messages name it."""
        return self.dut or f"vm{self.index}"


class VmLab(NetnsLab):
    """The VM lab (see the module docstring); a lab resource for a testbed. Needs root, qemu and the image
    (built on first use when missing).

    ``vm`` boots one VM; ``vms`` several in path order (``(DUT name, settings)``, Initiator side first:
    464XLAT's CLAT then PLAT), each VM's public NIC wired to the next one's private NIC.
    """

    def __init__(
        self,
        name: str = "natbench",
        *,
        vm: VmSettings | None = None,
        vms: Sequence[tuple[str, VmSettings]] | None = None,
        family: Family | str = Family.NAT44,
        addresses: AddressPlan | None = None,
        state_dir: Path | str | None = None,
        tester_cpus: Any = None,
        dut_cpus: Any = None,
    ) -> None:
        super().__init__(
            name, family=family, addresses=addresses, state_dir=state_dir, tester_cpus=tester_cpus, dut_cpus=dut_cpus
        )
        path: list[tuple[str | None, VmSettings]] = list(vms) if vms else [(None, vm or VmSettings())]
        if len(path) > 8:
            raise LabError("a VM lab runs at most 8 VMs")
        self.vms = [_Vm(i, dut, settings, self.vm_dir) for i, (dut, settings) in enumerate(path)]
        self.vm = self.vms[0].settings
        """The first VM's settings."""
        self._ssh: dict[int, Any] = {}
        self._images: dict[str, Image] = {}

    # ------------------------------------------------------------------ files and reach

    @property
    def vm_dir(self) -> Path:
        """The VMs' files: overlay disks, serial console logs, known_hosts."""
        return self.state_dir / f"{self.name}.vm"

    @property
    def serial_log(self) -> Path:
        """The (first) VM's serial console."""
        return self.vm_dir / "serial.log"

    @property
    def known_hosts(self) -> Path:
        """known_hosts pinning each VM's image host key for its SSH address."""
        return self.vm_dir / "known_hosts"

    def image(self, vm: int = 0) -> Image:
        """The image of VM ``vm`` from the cache, built now when the cache lacks it."""
        settings = self.vms[vm].settings
        if settings.image not in self._images:
            self._images[settings.image] = find_image(settings.image, cache=settings.image_cache) or build_image(
                settings.image, cache=settings.image_cache, progress=log.warning
            )
        return self._images[settings.image]

    def _vm_of(self, dut: str) -> _Vm:
        for v in self.vms:
            if v.dut == dut:
                return v
        if len(self.vms) == 1:
            return self.vms[0]
        raise LabError(f"VM lab {self.name} has no VM for DUT {dut!r}")

    def executor(self, vm: int = 0) -> Any:
        """A new SSH executor reaching VM ``vm`` as root (pinned host key, the image's client key)."""
        from natbench.duts.ssh import SshExecutor  # paramiko only when a VM is used

        image = self.image(vm)
        ns, port = self.dut_netns, self.vms[vm].port
        return SshExecutor(
            "127.0.0.1",
            user="root",
            port=port,
            key=str(image.client_key),
            known_hosts=str(self.known_hosts),
            connect_timeout=20.0,
            command_timeout=120.0,
            retries=3,
            sock_factory=lambda timeout: netns_connect(ns, "127.0.0.1", port, timeout),
        )

    def vm_exec(self, command: str, *, check: bool = True, vm: int = 0) -> str:
        """Run a shell command in VM ``vm`` over the lab's own SSH connection; returns stdout."""
        from natbench.duts.executors import ExecutorError

        if vm not in self._ssh:
            self._ssh[vm] = self.executor(vm)
        try:
            return str(self._ssh[vm].run(command, check=check).stdout)
        except ExecutorError as exc:
            raise LabError(f"VM {self.name}/{self.vms[vm].label}: {exc}") from None

    # ------------------------------------------------------------------ lab resource

    def tester_ports(self) -> LabPorts:
        """The tester's side: its two veth ports, the tester CPUs, the fix-up after DUT setup, the host-load probe
        (the VMs' QEMU processes, in the DUT namespace, are the DUT's)."""
        return LabPorts(self.initiator, self.responder, self.tester_cpus, self.after_dut_setup, self.host_load())

    def dut_params(self, dut: str) -> dict[str, Any]:
        """The VM's NICs and, on the path's ends, the campaign's DUT addresses (the first VM's private side,
        the last VM's public side; the links between VMs are the campaign's to address)."""
        return vm_recipe_params(self.addresses, self._vm_of(dut).index, len(self.vms))

    def place_dut(self, dut: str) -> DutPlacement:
        """The DUT's VM over SSH; it has its own kernel (no host settings) and its own vCPUs; the VM's facts
        (accelerator and why, vCPUs, memory, image, boot time) become the DUT's ``vm`` fact."""
        v = self._vm_of(dut)
        state = self._read_state() if self.state_file.exists() else {}
        recorded = state.get("vms") or [state.get("vm", {})]
        facts = recorded[v.index] if v.index < len(recorded) else {}
        vm = {k: val for k, val in facts.items() if k not in ("pid", "settings")}
        return DutPlacement(self.executor(v.index), host_settings=False, facts={"vm": vm, SHARES_HOST: True})

    def ensure_neighbours(self) -> None:
        """(Re)install the permanent neighbour entries for the Initiator (first VM) and the Responder (last VM)."""
        a = self.addresses
        last = len(self.vms) - 1
        ends = (
            (0, a.initiator, TESTER_INITIATOR_IF, VM_PRIVATE_IF),
            (last, a.responder, TESTER_RESPONDER_IF, VM_PUBLIC_IF),
        )
        cmds: dict[int, list[str]] = {}
        for vm, addr, tif, vif in ends:
            cmds.setdefault(vm, []).append(_neigh_command(str(addr), self.macs[tif], vif))
        for vm, lines in cmds.items():
            self.vm_exec(" && ".join(lines), vm=vm)

    def after_dut_setup(self) -> None:
        """What the lab redoes after a recipe configured the VMs: static neighbours, QEMU on the DUT's CPUs."""
        self.ensure_neighbours()
        self.pin_qemu()

    def pin_qemu(self) -> list[int]:
        """Pin every thread of the lab's QEMUs (vCPUs, I/O) to the DUT's CPUs, off the tester's; returns them."""
        cpus = list(self.dut_cpus_available)
        for pid in self._pids(self.dut_netns):
            with contextlib.suppress(OSError):
                for task in Path(f"/proc/{pid}/task").iterdir():
                    with contextlib.suppress(OSError, ValueError):
                        os.sched_setaffinity(int(task.name), cpus)
        return cpus

    def set_dut_cores_unlocked(self, cores: int | None) -> list[int]:
        """The VM's vCPUs are its cores: records them (a ``cores`` sweep is the recipe's business in the VM)."""
        used = list(range(self.vm.vcpus))
        self._write_state({"dut_cpus": used, "dut_cores_requested": cores})
        return used

    def facts(self) -> dict[str, Any]:
        """Lab facts: the tester side and each VM's (image, accelerator, vCPUs, memory, boot time)."""
        state = self._read_state() if self.state_file.exists() else {}
        return {
            "lab": self.name,
            "tester_netns": self.tester_netns,
            "dut_netns": self.dut_netns,
            "tester_cpus": list(self.tester_cpus),
            "qemu_cpus": list(self.dut_cpus_available),
            "links": "veth + nft fwd + tap",
            "vm": state.get("vm", {}),
            "vms": state.get("vms", []),
        }

    def release(self) -> None:
        """Close the lab's SSH connections and take the lab (VMs, taps, namespaces) down."""
        self._close_ssh()
        self.down()

    def is_up(self) -> bool:
        """True when the state file, both namespaces, the tester's ports and every QEMU process are there."""
        if not self.state_file.exists() or not {self.tester_netns, self.dut_netns} <= netns_list():
            return False
        state = self._read_state()
        recorded = state.get("vms") or []
        if len(recorded) != len(self.vms):
            return False
        for v in recorded:
            pid = int(v.get("pid") or 0)
            if pid <= 0 or not Path(f"/proc/{pid}").exists():
                return False
        links = run(["ip", "-n", self.tester_netns, "-o", "link", "show"], check=False).stdout
        return TESTER_INITIATOR_IF in links and TESTER_RESPONDER_IF in links

    def _settings(self) -> list[dict[str, Any]]:
        return [{"dut": v.dut, **v.settings.as_dict()} for v in self.vms]

    def up(self, *, by_hand: bool = False) -> dict[str, Any]:
        """Boot the VM lab (idempotent, as the namespace lab's ``up``); builds the images first if needed."""
        problems = missing_tools(("qemu-system-x86_64", "qemu-img"))
        if problems:
            raise LabError(problems[0])
        require_root()
        for i in range(len(self.vms)):
            self.image(i)  # before the lab lock: a first build takes minutes
        if self.is_up() and self._read_state().get("vm_settings") != self._settings():
            self.down()
        return super().up(by_hand=by_hand)

    def down(self) -> bool:
        """Remove the VMs, the taps, the namespaces and the VMs' files (idempotent)."""
        self._close_ssh()
        return super().down()

    # ------------------------------------------------------------------ internals

    def _close_ssh(self) -> None:
        for ssh in self._ssh.values():
            with contextlib.suppress(Exception):
                ssh.close()
        self._ssh = {}

    def _build(self) -> None:
        t, d = self.names.tester_ns, self.names.dut_ns
        for ns in (t, d):
            run(["ip", "netns", "add", ns])
            self._mark_owner([ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            # neither side is a host: no IPv6 autoconf, ND or MLD frames of their own on the wire
            run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
            run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        self._wire_tester_side()
        for v in self.vms:
            for tap in v.taps:
                run(["ip", "-n", d, "tuntap", "add", "dev", tap, "mode", "tap"])
                run(["ip", "-n", d, "link", "set", "dev", tap, "txqueuelen", str(TAP_QUEUE)])
        shutil.rmtree(self.vm_dir, ignore_errors=True)
        self.vm_dir.mkdir(parents=True)
        lines = []
        for v in self.vms:
            v.dir.mkdir(parents=True, exist_ok=True)
            image = self.image(v.index)
            lines.append(image.known_hosts_line("127.0.0.1", v.port))
            overlay = v.dir / "disk.qcow2"
            run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(image.disk), str(overlay)])
        self.known_hosts.write_text("".join(lines))
        accels, why = choose_accel(self.vm.accel)
        started = time.monotonic()
        last: LabError | None = None
        for accel in accels:
            try:
                pids = self._boot(accel, why)
                break
            except LabError as exc:
                last = exc
                if accel == accels[-1]:
                    raise
                log.warning("VM %s: the guest did not come up with %s (%s); falling back to TCG", self.name, accel, exc)
                self._kill_qemu()
                started = time.monotonic()
        else:  # pragma: no cover - the loop raises or breaks
            raise last or LabError("no accelerator to try")
        boot_seconds = time.monotonic() - started
        log.warning("VM lab %s: up in %.0f s", self.name, boot_seconds)
        vms = [
            {
                "dut": v.dut,
                "pid": pid,
                "image": self.image(v.index).path.name,
                "image_kernel": self.image(v.index).manifest.get("kernel"),
                "accel": accel,
                "accel_reason": why if accel == accels[0] else f"KVM failed ({last}); TCG",
                "vcpus": v.settings.vcpus,
                "memory_mib": v.settings.memory,
                "boot_seconds": round(boot_seconds, 1),
                "path_position": v.index,
            }
            for v, pid in zip(self.vms, pids, strict=True)
        ]
        state = self._wiring_state([VM_PRIVATE_IF, VM_PUBLIC_IF])
        state["interfaces"]["taps"] = [tap for v in self.vms for tap in v.taps]
        self._write_state({**state, "vm": vms[0], "vms": vms, "vm_settings": self._settings()})
        for v in self.vms:
            self._configure_guest(v)
        self.ensure_neighbours()
        self.pin_qemu()
        self.set_dut_cores_unlocked(None)

    def _wire_tester_side(self) -> None:
        """The tester's veth ports as in the namespace lab (fixed MACs, no IP, ingress drop after AF_PACKET,
        receive work on the tester CPUs); their peers in the DUT namespace carry no address."""
        t, d = self.tester_netns, self.dut_netns
        for tif, dif in ((TESTER_INITIATOR_IF, DUT_PRIVATE_IF), (TESTER_RESPONDER_IF, DUT_PUBLIC_IF)):
            run(["ip", "link", "add", "name", tif, "netns", t, "type", "veth", "peer", "name", dif, "netns", d])
            run(["ip", "-n", t, "link", "set", "dev", tif, "address", self.macs[tif]])
            run(["ip", "-n", t, "link", "set", "dev", tif, "up"])
        drop_tester_ingress(t)
        for k, tif in enumerate((TESTER_INITIATOR_IF, TESTER_RESPONDER_IF)):
            lane_cpu = self.tester_cpus[k % len(self.tester_cpus)]
            self._write_sys(t, f"/sys/class/net/{tif}/queues/rx-0/rps_cpus", _mask([lane_cpu]))

    def _wires(self) -> list[tuple[str, str]]:
        """The links of the path: tester veth end -> first VM, VM -> next VM, last VM -> tester veth end."""
        out = [(DUT_PRIVATE_IF, self.vms[0].taps[0])]
        out += [(a.taps[1], b.taps[0]) for a, b in zip(self.vms, self.vms[1:], strict=False)]
        out.append((self.vms[-1].taps[1], DUT_PUBLIC_IF))
        return out

    def _patch_taps(self) -> None:
        """Join the path's links both ways (nftables fwd at netdev ingress in the DUT namespace): a frame the
        tester sends is accepted by its veth at once and dropped, when a VM falls behind, at its tap's full
        queue - loss, as on a wire, not back-pressure on the tester. The forwarding work runs on the DUT's
        CPUs (RPS)."""
        d = self.dut_netns
        dut_cpus = _mask(list(self.dut_cpus_available))
        rules = ["table netdev natbench_wire {"]
        for a, b in self._wires():
            for dev in (a, b):
                run(["ip", "-n", d, "link", "set", "dev", dev, "up"])
            for src, dst in ((a, b), (b, a)):
                chain = src.replace("-", "_")
                rules.append(
                    f'  chain {chain} {{ type filter hook ingress device "{src}" priority 0; fwd to "{dst}"; }}'
                )
        for veth in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            self._write_sys(d, f"/sys/class/net/{veth}/queues/rx-0/rps_cpus", dut_cpus)
        rules.append("}")
        run(["ip", "netns", "exec", d, "nft", "-f", "-"], input="\n".join(rules) + "\n")

    def _mac(self, v: _Vm, side: int) -> str:
        """The MAC of VM ``v``'s NIC ``side`` (0 private, 1 public): the lab's DUT MACs at the path's ends."""
        if v.index == 0 and side == 0:
            return self.macs[DUT_PRIVATE_IF]
        if v.index == len(self.vms) - 1 and side == 1:
            return self.macs[DUT_PUBLIC_IF]
        base = self.macs[DUT_PRIVATE_IF][:-2]
        return f"{base}{0x20 + 2 * v.index + side:02x}"

    def _qemu_cmd(self, v: _Vm, accel: str) -> list[str]:
        image = self.image(v.index)
        s = v.settings
        return [
            "ip", "netns", "exec", self.dut_netns,
            "qemu-system-x86_64",
            "-name", f"natbench-{self.name}" + (f"-{v.index}" if v.index else ""),
            "-nodefaults", "-no-user-config", "-display", "none",
            "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
            "-smp", str(s.vcpus), "-m", str(s.memory),
            "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 panic=-1",
            "-no-reboot",
            "-drive", f"file={v.dir / 'disk.qcow2'},if=virtio,format=qcow2,cache=unsafe",
            "-serial", f"file:{v.serial_log}",
            "-netdev", f"user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:{v.port}-:22",
            "-device", "virtio-net-pci,netdev=mgmt",
            "-netdev", f"tap,id=priv,ifname={v.taps[0]},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=priv,mac={self._mac(v, 0)}",
            "-netdev", f"tap,id=pub,ifname={v.taps[1]},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=pub,mac={self._mac(v, 1)}",
        ]  # fmt: skip

    def _boot(self, accel: str, why: str) -> list[int]:
        """Start every QEMU, patch the path's links, wait for each VM's SSH; returns the QEMU pids."""
        procs = []
        for v in self.vms:
            log.warning(
                "VM %s/%s: booting image %s with %s (%s); waiting up to %.0f s (boot_timeout) for its SSH",
                self.name,
                v.label,
                v.settings.image,
                accel.upper(),
                why,
                v.settings.boot_timeout,
            )
            v.serial_log.write_text("")
            with open(v.dir / "qemu.log", "w") as out:
                proc = subprocess.Popen(
                    self._qemu_cmd(v, accel),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C of natbench does not kill it half-way: the lab's down does
                )
            procs.append(proc)
        self._write_state({"vms": [{"pid": p.pid} for p in procs], "vm": {"pid": procs[0].pid, "accel": accel}})
        for v, proc in zip(self.vms, procs, strict=True):
            self._await_taps(v, proc)
        self._patch_taps()
        for v, proc in zip(self.vms, procs, strict=True):
            self._await_ssh(v, proc)
        return [p.pid for p in procs]

    def _await_taps(self, v: _Vm, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LabError(f"qemu exited ({proc.returncode}): {self._tail(v.dir / 'qemu.log')}")
            with contextlib.suppress(OSError):
                fds = [os.readlink(f) for f in Path(f"/proc/{proc.pid}/fd").iterdir()]
                if fds.count("/dev/net/tun") >= 2:
                    return
            time.sleep(0.1)
        raise LabError(f"qemu of {v.label} did not open its taps within 60 s")

    def _await_ssh(self, v: _Vm, proc: subprocess.Popen[bytes]) -> None:
        """Wait for the guest's sshd banner through the port forward, then log in once (pinned host key)."""
        deadline = time.monotonic() + v.settings.boot_timeout
        while True:
            if proc.poll() is not None:
                raise LabError(
                    f"VM {self.name}/{v.label}: qemu exited ({proc.returncode}) before SSH came up; serial console:\n"
                    + self._tail(v.serial_log)
                )
            if self._banner(v.port):
                break
            if time.monotonic() > deadline:
                raise LabError(
                    f"VM {self.name}/{v.label}: no SSH within {v.settings.boot_timeout:.0f} s; last lines of its"
                    f" serial console ({v.serial_log}):\n" + self._tail(v.serial_log)
                )
            time.sleep(1.0)
        self.vm_exec("true", vm=v.index)

    def _banner(self, port: int) -> bool:
        try:
            with netns_connect(self.dut_netns, "127.0.0.1", port, 3.0) as sock:
                return sock.recv(64).startswith(b"SSH-")
        except OSError:
            return False

    def _configure_guest(self, v: _Vm) -> None:
        """The lab's part inside VM ``v``: forwarding, no DAD, links up, the management NIC left out of connection
        tracking (a DUT's conntrack table holds the test's connections only, not natbench's SSH session); the
        path's ends get the campaign's DUT addresses (the first VM's private side, the last VM's public side)."""
        a = self.addresses
        cmds = [
            *(f"iptables -t raw -I {chain} {way} {shlex.quote(VM_MGMT_IF)} -j CT --notrack" for chain, way in _NOTRACK),
            "sysctl -q -w net.ipv4.ip_forward=1",
            "sysctl -q -w net.ipv6.conf.all.forwarding=1",
            *(f"sysctl -q -w net.ipv6.conf.{vif}.accept_dad=0" for vif in (VM_PRIVATE_IF, VM_PUBLIC_IF)),
        ]
        if v.index == 0:
            v6 = isinstance(a.dut_private, ipaddress.IPv6Address)
            cmds.append(
                f"ip addr replace {a.dut_private}/{a.private_prefixlen} dev {VM_PRIVATE_IF}" + (" nodad" if v6 else "")
            )
        if v.index == len(self.vms) - 1:
            v6 = isinstance(a.dut_public, ipaddress.IPv6Address)
            cmds.append(
                f"ip addr replace {a.dut_public}/{a.public_prefixlen} dev {VM_PUBLIC_IF}" + (" nodad" if v6 else "")
            )
        cmds += [f"ip link set dev {vif} up" for vif in (VM_PRIVATE_IF, VM_PUBLIC_IF)]
        self.vm_exec(" && ".join(cmds), vm=v.index)

    def _kill_qemu(self) -> None:
        for pid in self._pids(self.dut_netns):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        time.sleep(0.5)

    @staticmethod
    def _tail(path: Path, lines: int = 15) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no output)"
