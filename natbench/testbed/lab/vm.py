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
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from natbench.duts.factory import DutPlacement
from natbench.testbed.lab.host import LabError, netns_list, require_root, run
from natbench.testbed.lab.netns import (
    DUT_PRIVATE_IF,
    DUT_PUBLIC_IF,
    TESTER_INITIATOR_IF,
    TESTER_RESPONDER_IF,
    NetnsLab,
    _mask,
)
from natbench.testbed.lab.vm_image import Image, build_image, find_image, missing_tools
from natbench.testers.base import LabPorts
from natbench.traffic.plan import AddressPlan, Family

__all__ = ["SSH_PORT", "VM_PRIVATE_IF", "VM_PUBLIC_IF", "VmLab", "VmSettings", "choose_accel", "netns_connect"]

log = logging.getLogger(__name__)

VM_PRIVATE_IF = "eth1"
"""The VM's private-side NIC (towards the Initiator)."""
VM_PUBLIC_IF = "eth2"
"""The VM's public-side NIC (towards the Responder)."""
SSH_PORT = 2222
"""The port on the DUT namespace's loopback QEMU forwards to the guest's sshd."""
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


class VmSettings:
    """What the VM lab boots: the image name, vCPUs, memory (MiB), accelerator choice and boot timeout."""

    def __init__(
        self,
        image: str = "jool",
        *,
        vcpus: int = 1,
        memory: int = 1536,
        accel: str = "auto",
        boot_timeout: float = 600.0,
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


class VmLab(NetnsLab):
    """The VM lab (see the module docstring); a lab resource for a testbed. Needs root, qemu and the image
    (built on first use when missing)."""

    def __init__(
        self,
        name: str = "natbench",
        *,
        vm: VmSettings | None = None,
        family: Family | str = Family.NAT44,
        addresses: AddressPlan | None = None,
        state_dir: Path | str | None = None,
        tester_cpus: Any = None,
        dut_cpus: Any = None,
    ) -> None:
        super().__init__(
            name, family=family, addresses=addresses, state_dir=state_dir, tester_cpus=tester_cpus, dut_cpus=dut_cpus
        )
        self.vm = vm or VmSettings()
        self._ssh: Any = None
        self._image: Image | None = None

    # ------------------------------------------------------------------ files and reach

    @property
    def vm_dir(self) -> Path:
        """The VM's files: overlay disk, serial console log, known_hosts."""
        return self.state_dir / f"{self.name}.vm"

    @property
    def serial_log(self) -> Path:
        """The VM's serial console."""
        return self.vm_dir / "serial.log"

    @property
    def known_hosts(self) -> Path:
        """known_hosts pinning the image's host key for the VM's SSH address."""
        return self.vm_dir / "known_hosts"

    def image(self) -> Image:
        """The VM's image from the cache, built now when the cache lacks it."""
        if self._image is None:
            self._image = find_image(self.vm.image, cache=self.vm.image_cache) or build_image(
                self.vm.image, cache=self.vm.image_cache, progress=log.warning
            )
        return self._image

    def executor(self) -> Any:
        """A new SSH executor reaching the VM as root (pinned host key, the image's client key)."""
        from natbench.duts.ssh import SshExecutor  # paramiko only when a VM is used

        image = self.image()
        ns = self.dut_netns
        return SshExecutor(
            "127.0.0.1",
            user="root",
            port=SSH_PORT,
            key=str(image.client_key),
            known_hosts=str(self.known_hosts),
            connect_timeout=20.0,
            command_timeout=120.0,
            retries=3,
            sock_factory=lambda timeout: netns_connect(ns, "127.0.0.1", SSH_PORT, timeout),
        )

    def vm_exec(self, command: str, *, check: bool = True) -> str:
        """Run a shell command in the VM over the lab's own SSH connection; returns stdout."""
        from natbench.duts.executors import ExecutorError

        if self._ssh is None:
            self._ssh = self.executor()
        try:
            return str(self._ssh.run(command, check=check).stdout)
        except ExecutorError as exc:
            raise LabError(f"VM {self.name}: {exc}") from None

    # ------------------------------------------------------------------ lab resource

    def tester_ports(self) -> LabPorts:
        """The tester's side: the two taps in the tester namespace, the tester CPUs, the fix-up after DUT setup."""
        return LabPorts(self.initiator, self.responder, self.tester_cpus, self.after_dut_setup)

    def dut_params(self, dut: str) -> dict[str, Any]:
        """The VM's NICs and the campaign's DUT addresses."""
        a = self.addresses
        return {
            "private_if": VM_PRIVATE_IF,
            "public_if": VM_PUBLIC_IF,
            "private_address": f"{a.dut_private}/{a.private_prefixlen}",
            "public_address": f"{a.dut_public}/{a.public_prefixlen}",
        }

    def place_dut(self, dut: str) -> DutPlacement:
        """The VM over SSH; it has its own kernel (no host settings) and its own vCPUs; the VM's facts
        (accelerator and why, vCPUs, memory, image, boot time) become the DUT's ``vm`` fact."""
        state = self._read_state() if self.state_file.exists() else {}
        vm = {k: v for k, v in state.get("vm", {}).items() if k not in ("pid", "settings")}
        return DutPlacement(self.executor(), host_settings=False, facts={"vm": vm})

    def ensure_neighbours(self) -> None:
        """(Re)install the VM's permanent neighbour entries for the Initiator and the Responder."""
        a = self.addresses
        cmds = [
            f"ip neigh replace {addr} lladdr {self.macs[tif]} nud permanent dev {vif}"
            for addr, tif, vif in (
                (a.initiator, TESTER_INITIATOR_IF, VM_PRIVATE_IF),
                (a.responder, TESTER_RESPONDER_IF, VM_PUBLIC_IF),
            )
        ]
        self.vm_exec(" && ".join(cmds))

    def after_dut_setup(self) -> None:
        """What the lab redoes after a recipe configured the VM: its static neighbours, QEMU on the DUT's CPUs."""
        self.ensure_neighbours()
        self.pin_qemu()

    def pin_qemu(self) -> list[int]:
        """Pin every thread of the lab's QEMU (vCPUs, I/O) to the DUT's CPUs, off the tester's; returns them."""
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
        """Lab facts: the namespace lab's plus the VM's (image, accelerator, vCPUs, memory, boot time)."""
        state = self._read_state() if self.state_file.exists() else {}
        return {
            "lab": self.name,
            "tester_netns": self.tester_netns,
            "dut_netns": self.dut_netns,
            "tester_cpus": list(self.tester_cpus),
            "qemu_cpus": list(self.dut_cpus_available),
            "links": "tap",
            "vm": state.get("vm", {}),
        }

    def release(self) -> None:
        """Close the lab's SSH connection and take the lab (VM, taps, namespaces) down."""
        self._close_ssh()
        self.down()

    def is_up(self) -> bool:
        """True when the state file, both namespaces, both taps and the QEMU process are there."""
        if not self.state_file.exists() or not {self.tester_netns, self.dut_netns} <= netns_list():
            return False
        state = self._read_state()
        pid = int(state.get("vm", {}).get("pid") or 0)
        if pid <= 0 or not Path(f"/proc/{pid}").exists():
            return False
        links = run(["ip", "-n", self.tester_netns, "-o", "link", "show"], check=False).stdout
        return TESTER_INITIATOR_IF in links and TESTER_RESPONDER_IF in links

    def up(self, *, by_hand: bool = False) -> dict[str, Any]:
        """Boot the VM lab (idempotent, as the namespace lab's ``up``); builds the image first if needed."""
        problems = missing_tools(("qemu-system-x86_64", "qemu-img"))
        if problems:
            raise LabError(problems[0])
        require_root()
        self.image()  # before the lab lock: a first build takes minutes
        if self.is_up():
            state = self._read_state()
            if state.get("vm", {}).get("settings") != self.vm.as_dict():
                self.down()
        return super().up(by_hand=by_hand)

    def down(self) -> bool:
        """Remove the VM, the taps, the namespaces and the VM's files (idempotent)."""
        self._close_ssh()
        return super().down()

    # ------------------------------------------------------------------ internals

    def _close_ssh(self) -> None:
        if self._ssh is not None:
            with contextlib.suppress(Exception):
                self._ssh.close()
            self._ssh = None

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
        for tap in (TAP_PRIVATE_IF, TAP_PUBLIC_IF):
            run(["ip", "-n", d, "tuntap", "add", "dev", tap, "mode", "tap"])
            run(["ip", "-n", d, "link", "set", "dev", tap, "txqueuelen", str(TAP_QUEUE)])
        image = self.image()
        shutil.rmtree(self.vm_dir, ignore_errors=True)
        self.vm_dir.mkdir(parents=True)
        self.known_hosts.write_text(image.known_hosts_line("127.0.0.1", SSH_PORT))
        overlay = self.vm_dir / "disk.qcow2"
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(image.disk), str(overlay)])
        accels, why = choose_accel(self.vm.accel)
        started = time.monotonic()
        last: LabError | None = None
        for accel in accels:
            try:
                pid = self._boot(image, overlay, accel, why)
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
        self._write_state(
            {
                "family": str(self.family),
                "addresses": self._addresses_json(),
                "tester_cpus": list(self.tester_cpus),
                "macs": self.macs,
                "interfaces": {
                    "tester": [TESTER_INITIATOR_IF, TESTER_RESPONDER_IF],
                    "dut": [VM_PRIVATE_IF, VM_PUBLIC_IF],
                    "taps": [TAP_PRIVATE_IF, TAP_PUBLIC_IF],
                },
                "vm": {
                    "pid": pid,
                    "settings": self.vm.as_dict(),
                    "image": image.path.name,
                    "image_kernel": image.manifest.get("kernel"),
                    "accel": accel,
                    "accel_reason": why if accel == accels[0] else f"KVM failed ({last}); TCG",
                    "vcpus": self.vm.vcpus,
                    "memory_mib": self.vm.memory,
                    "boot_seconds": round(boot_seconds, 1),
                },
            }
        )
        self._configure_guest()
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
        rules = ["table netdev natbench_tester {"]
        for tif in (TESTER_INITIATOR_IF, TESTER_RESPONDER_IF):
            chain = tif.replace("-", "_")
            rules.append(f'  chain {chain} {{ type filter hook ingress device "{tif}" priority 0; policy drop; }}')
        rules.append("}")
        run(["ip", "netns", "exec", t, "nft", "-f", "-"], input="\n".join(rules) + "\n")
        for k, tif in enumerate((TESTER_INITIATOR_IF, TESTER_RESPONDER_IF)):
            lane_cpu = self.tester_cpus[k % len(self.tester_cpus)]
            self._write_sys(t, f"/sys/class/net/{tif}/queues/rx-0/rps_cpus", _mask([lane_cpu]))

    def _patch_taps(self) -> None:
        """Join each veth end in the DUT namespace to its tap both ways (nftables fwd): a frame the tester sends
        is accepted by its veth at once and dropped, when the VM falls behind, at the tap's full queue - loss,
        as on a wire, not back-pressure on the tester. The forwarding work runs on the DUT's CPUs (RPS)."""
        d = self.dut_netns
        dut_cpus = _mask(list(self.dut_cpus_available))
        rules = ["table netdev natbench_wire {"]
        for veth, tap in ((DUT_PRIVATE_IF, TAP_PRIVATE_IF), (DUT_PUBLIC_IF, TAP_PUBLIC_IF)):
            for dev in (veth, tap):
                run(["ip", "-n", d, "link", "set", "dev", dev, "up"])
            for src, dst in ((veth, tap), (tap, veth)):
                chain = src.replace("-", "_")
                rules.append(
                    f'  chain {chain} {{ type filter hook ingress device "{src}" priority 0; fwd to "{dst}"; }}'
                )
            self._write_sys(d, f"/sys/class/net/{veth}/queues/rx-0/rps_cpus", dut_cpus)
        rules.append("}")
        run(["ip", "netns", "exec", d, "nft", "-f", "-"], input="\n".join(rules) + "\n")

    def _qemu_cmd(self, image: Image, overlay: Path, accel: str) -> list[str]:
        m = self.macs
        return [
            "ip", "netns", "exec", self.dut_netns,
            "qemu-system-x86_64",
            "-name", f"natbench-{self.name}",
            "-nodefaults", "-no-user-config", "-display", "none",
            "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
            "-smp", str(self.vm.vcpus), "-m", str(self.vm.memory),
            "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 panic=-1",
            "-no-reboot",
            "-drive", f"file={overlay},if=virtio,format=qcow2,cache=unsafe",
            "-serial", f"file:{self.serial_log}",
            "-netdev", f"user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:{SSH_PORT}-:22",
            "-device", "virtio-net-pci,netdev=mgmt",
            "-netdev", f"tap,id=priv,ifname={TAP_PRIVATE_IF},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=priv,mac={m[DUT_PRIVATE_IF]}",
            "-netdev", f"tap,id=pub,ifname={TAP_PUBLIC_IF},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=pub,mac={m[DUT_PUBLIC_IF]}",
        ]  # fmt: skip

    def _boot(self, image: Image, overlay: Path, accel: str, why: str) -> int:
        """Start QEMU, patch its taps to the tester's wires, wait for SSH; returns QEMU's pid."""
        log.warning("VM %s: booting image %s with %s (%s)", self.name, image.name, accel.upper(), why)
        self.serial_log.write_text("")
        with open(self.vm_dir / "qemu.log", "w") as out:
            proc = subprocess.Popen(
                self._qemu_cmd(image, overlay, accel),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C of natbench does not kill it half-way: the lab's down does
            )
        self._write_state({"vm": {"pid": proc.pid, "settings": self.vm.as_dict(), "accel": accel}})
        self._await_taps(proc)
        self._patch_taps()
        self._await_ssh(proc)
        return proc.pid

    def _await_taps(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LabError(f"qemu exited ({proc.returncode}): {self._tail(self.vm_dir / 'qemu.log')}")
            with contextlib.suppress(OSError):
                fds = [os.readlink(f) for f in Path(f"/proc/{proc.pid}/fd").iterdir()]
                if fds.count("/dev/net/tun") >= 2:
                    return
            time.sleep(0.1)
        raise LabError("qemu did not open its taps within 60 s")

    def _await_ssh(self, proc: subprocess.Popen[bytes]) -> None:
        """Wait for the guest's sshd banner through the port forward, then log in once (pinned host key)."""
        deadline = time.monotonic() + self.vm.boot_timeout
        while True:
            if proc.poll() is not None:
                raise LabError(
                    f"VM {self.name}: qemu exited ({proc.returncode}) before SSH came up; serial console:\n"
                    + self._tail(self.serial_log)
                )
            if self._banner():
                break
            if time.monotonic() > deadline:
                raise LabError(
                    f"VM {self.name}: no SSH within {self.vm.boot_timeout:.0f} s; last lines of its serial console"
                    f" ({self.serial_log}):\n" + self._tail(self.serial_log)
                )
            time.sleep(1.0)
        self._close_ssh()
        self.vm_exec("true")

    def _banner(self) -> bool:
        try:
            with netns_connect(self.dut_netns, "127.0.0.1", SSH_PORT, 3.0) as sock:
                return sock.recv(64).startswith(b"SSH-")
        except OSError:
            return False

    def _configure_guest(self) -> None:
        """The DUT side of the lab inside the VM: forwarding, addresses, links, static neighbours."""
        a = self.addresses
        v6_priv = isinstance(a.dut_private, ipaddress.IPv6Address)
        v6_pub = isinstance(a.dut_public, ipaddress.IPv6Address)
        cmds = ["sysctl -q -w net.ipv4.ip_forward=1"]
        if v6_priv or v6_pub:
            cmds.append("sysctl -q -w net.ipv6.conf.all.forwarding=1")
        for vif in (VM_PRIVATE_IF, VM_PUBLIC_IF):
            cmds.append(f"sysctl -q -w net.ipv6.conf.{vif}.accept_dad=0")
        cmds.append(
            f"ip addr replace {a.dut_private}/{a.private_prefixlen} dev {VM_PRIVATE_IF}" + (" nodad" if v6_priv else "")
        )
        cmds.append(
            f"ip addr replace {a.dut_public}/{a.public_prefixlen} dev {VM_PUBLIC_IF}" + (" nodad" if v6_pub else "")
        )
        cmds += [f"ip link set dev {vif} up" for vif in (VM_PRIVATE_IF, VM_PUBLIC_IF)]
        self.vm_exec(" && ".join(cmds))
        self.ensure_neighbours()

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
