"""The namespace lab: a DUT and a tester in network namespaces joined by veth pairs.

::

    tester netns nb-<name>-tester            DUT netns nb-<name>-dut
    +-------------------------+              +----------------------------+
    |  nb-init (Initiator) ---+--- veth -----+--- nb-priv  dut_private    |
    |  nb-resp (Responder) ---+--- veth -----+--- nb-pub   dut_public     |
    +-------------------------+              +----------------------------+

The tester interfaces carry no IP address and drop everything at netdev
ingress after AF_PACKET has seen it (the tester namespace is not a host, so
its kernel does no IP work and sends no ICMP); the DUT gets the campaign's
addresses, forwarding on, and permanent neighbour entries for the Initiator
and the Responder, so no ARP/ND is ever counted. MAC addresses are fixed per
lab. The DUT's receive processing is steered by RPS to the DUT's CPU set and
the tester's to the tester's, so the tester is not charged the DUT's work.

Every resource lives inside the two namespaces (veths are created directly in
them), so deleting the namespaces removes veths, rules and addresses. The
lab's state file (``/run/natbench/labs/<name>.json``) is written *before*
anything is created, so ``lab down`` finds everything also after a crash;
``up`` and ``down`` are idempotent and serialised by a lock file. A process of a namespace that
does not die when the lab is taken down (one inside a system call: a kernel-bound ``conntrack -F``)
is recorded as outliving it (:mod:`natbench.testbed.lab.outliving`) and named by ``lab down``.

The kernel carries the owner too: the alias of ``lo`` in both namespaces names
the owning process (pid and start time) and the state file, which is how
``lab down --stale`` (:mod:`natbench.testbed.lab.inventory`) finds every lab.

A :class:`NetnsLab` is a lab resource (:class:`~natbench.plugins.LabResource`):
the testbed hands its :meth:`~NetnsLab.tester_ports` to the tester factory and its
:meth:`~NetnsLab.place_dut` / :meth:`~NetnsLab.dut_params` to the DUT factory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from natbench.duts.executors import NetnsExecutor
from natbench.errors import ConfigError
from natbench.host import install_command, package_for
from natbench.plugins import SHARES_HOST, DutPlacement, LabPorts, Port
from natbench.testbed.lab.host import (
    LAB_NAME_RE,
    OWNER_MARK,
    LabError,
    alive,
    host_lock,
    netns_list,
    proc_start,
    require_root,
    run,
)
from natbench.testbed.lab.host import state_dir as state_dir_or_default
from natbench.testbed.lab.hostload import HostLoad
from natbench.testbed.lab.outliving import LeftProcess, record_left
from natbench.traffic.plan import AddressPlan, Family

TESTER_INITIATOR_IF = "nb-init"
"""The tester's private-side interface (in the tester namespace)."""
TESTER_RESPONDER_IF = "nb-resp"
"""The tester's public-side interface (in the tester namespace)."""
DUT_PRIVATE_IF = "nb-priv"
"""The DUT's private-side interface (in the DUT namespace)."""
DUT_PUBLIC_IF = "nb-pub"
"""The DUT's public-side interface (in the DUT namespace)."""

_TOOLS = ("ip", "nft", "sysctl", "iptables", "conntrack")
"""Commands a lab campaign needs on PATH (the lab itself, and the iptables recipe in its DUT namespace)."""


def dut_recipe_params(addresses: AddressPlan) -> dict[str, str]:
    """The recipe parameters a namespace lab decides for its DUT: the interfaces and the DUT's addresses
    (with prefix length) of ``addresses``."""
    a = addresses
    return {
        "private_if": DUT_PRIVATE_IF,
        "public_if": DUT_PUBLIC_IF,
        "private_address": f"{a.dut_private}/{a.private_prefixlen}",
        "public_address": f"{a.dut_public}/{a.public_prefixlen}",
    }


def lab_problems() -> list[str]:
    """Why this machine cannot build a namespace lab for a campaign, apart from root (empty when it can)."""
    missing = [t for t in _TOOLS if shutil.which(t) is None]
    if not missing:
        return []
    packages = " ".join(sorted({package_for(t) or t for t in missing}))
    return [
        f"the local lab needs {', '.join(missing)} on PATH: {install_command(packages.split())} "
        "(natbench doctor lists what each part needs)"
    ]


def _mask(cpus: Sequence[int]) -> str:
    """RPS mask (hex, comma-separated 32-bit words) for ``cpus``."""
    value = 0
    for c in cpus:
        value |= 1 << c
    words = []
    while True:
        words.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
        if not value:
            break
    return ",".join(reversed(words))


@dataclass(frozen=True)
class _Names:
    tester_ns: str
    dut_ns: str


class NetnsLab:
    """The namespace lab (see the module docstring): a lab resource for a testbed. Needs root.

    ``dut_cpus`` / ``tester_cpus`` default to: the tester gets the last CPU
    this process may use (the last two from 4 CPUs on), the DUT the others (on
    a 1-CPU machine both share it and the facts say so).
    """

    def __init__(
        self,
        name: str = "natbench",
        *,
        family: Family | str = Family.NAT44,
        addresses: AddressPlan | None = None,
        state_dir: Path | str | None = None,
        tester_cpus: Sequence[int] | None = None,
        dut_cpus: Sequence[int] | None = None,
    ) -> None:
        if not LAB_NAME_RE.match(name):
            raise ConfigError(f"invalid lab name {name!r}: use letters, digits, '-', '_' or '.' (max 31)", field="name")
        self.name = name
        self.family = Family(family)
        self.addresses = addresses or AddressPlan.default(self.family)
        self.state_dir = state_dir_or_default(state_dir)
        cpus = sorted(os.sched_getaffinity(0))
        # the tester takes the last CPU(s) and the DUT the first ones, so that a recipe's own
        # "cores n -> CPUs 0..n-1" convention (RPS) lands on the DUT's CPUs; from 4 CPUs on the
        # tester gets two (one lane per port: send and receive on different CPUs)
        self.tester_cpus = tuple(tester_cpus) if tester_cpus else tuple(cpus[-2:] if len(cpus) >= 4 else cpus[-1:])
        rest = [c for c in cpus if c not in self.tester_cpus]
        self.dut_cpus_available = tuple(dut_cpus) if dut_cpus else (tuple(rest) or tuple(cpus))
        self.names = _Names(f"nb-{name}-tester", f"nb-{name}-dut")
        self.left: list[LeftProcess] = []
        """Processes of its namespaces that the last take-down could not end (they outlived the lab)."""
        digest = hashlib.sha256(name.encode()).digest()
        base = f"02:4e:{digest[0]:02x}:{digest[1]:02x}:{digest[2]:02x}"
        self.macs = {
            TESTER_INITIATOR_IF: base + ":01",
            TESTER_RESPONDER_IF: base + ":02",
            DUT_PRIVATE_IF: base + ":11",
            DUT_PUBLIC_IF: base + ":12",
        }

    # ------------------------------------------------------------------ public API

    @property
    def state_file(self) -> Path:
        """Where this lab's state is recorded."""
        return self.state_dir / f"{self.name}.json"

    @property
    def tester_netns(self) -> str:
        """Name of the tester namespace."""
        return self.names.tester_ns

    @property
    def dut_netns(self) -> str:
        """Name of the DUT namespace."""
        return self.names.dut_ns

    @property
    def initiator(self) -> Port:
        """The tester's private-side port."""
        return Port(
            TESTER_INITIATOR_IF, self.macs[TESTER_INITIATOR_IF], self.macs[DUT_PRIVATE_IF], self.names.tester_ns
        )

    @property
    def responder(self) -> Port:
        """The tester's public-side port."""
        return Port(TESTER_RESPONDER_IF, self.macs[TESTER_RESPONDER_IF], self.macs[DUT_PUBLIC_IF], self.names.tester_ns)

    @property
    def recipe_params(self) -> dict[str, Any]:
        """The recipe parameters the lab determines (interfaces and addresses)."""
        a = self.addresses
        return {
            "private_if": DUT_PRIVATE_IF,
            "public_if": DUT_PUBLIC_IF,
            "private_address": str(a.dut_private),
            "public_address": str(a.dut_public),
        }

    def is_up(self) -> bool:
        """True when the state file and both namespaces exist and the DUT interfaces are there."""
        if not self.state_file.exists():
            return False
        if not {self.names.tester_ns, self.names.dut_ns} <= netns_list():
            return False
        proc = run(["ip", "-n", self.names.dut_ns, "-j", "link", "show"], check=False)
        try:
            links = {str(e["ifname"]) for e in json.loads(proc.stdout or "[]")}
        except ValueError:
            return False
        return {DUT_PRIVATE_IF, DUT_PUBLIC_IF} <= links

    def up(self, *, by_hand: bool = False) -> dict[str, Any]:
        """Build the lab (idempotent: an intact lab is kept, a broken one rebuilt). Returns the status.

        ``by_hand`` (``natbench lab up``): the lab is kept until removed by name, also when
        its owner has exited; ``lab down --stale`` leaves it alone. A lab made by hand stays
        one when a run reuses it.
        """
        require_root()
        hand = {"by_hand": True} if by_hand else {}
        with host_lock(exclusive=False), self._lock():
            if self.is_up():
                state = self._read_state()
                if state.get("family") == str(self.family) and state.get("addresses") == self._addresses_json():
                    self._write_state(hand)  # this process owns it now
                    self._mark_owner()
                    return self.status()
            self._destroy()
            self._write_state({"phase": "building", **hand})
            try:
                self._build()
            except BaseException:
                self._destroy()
                raise
            self._write_state({"phase": "up"})
            return self.status()

    def down(self) -> bool:
        """Remove everything the lab created (idempotent); True when something was removed."""
        require_root()
        with self._lock():
            removed = self._destroy()
            with contextlib.suppress(OSError):
                (self.state_dir / f"{self.name}.lock").unlink()
            return removed

    def status(self) -> dict[str, Any]:
        """The recorded state plus what exists now."""
        state = self._read_state() if self.state_file.exists() else {}
        present = netns_list()
        return {
            "name": self.name,
            "up": self.is_up(),
            "namespaces": {ns: ns in present for ns in (self.names.tester_ns, self.names.dut_ns)},
            "family": str(self.family),
            "state_file": str(self.state_file),
            **{k: v for k, v in state.items() if k not in ("name", "namespaces")},
        }

    def set_dut_cores(self, cores: int | None) -> list[int]:
        """Give the DUT ``cores`` CPUs (as far as the machine allows); returns the CPUs actually used.

        Steers the DUT interfaces' receive processing (RPS) to those CPUs and
        pins every process of the DUT namespace (e.g. tayga) to them; records
        the result in the lab state.
        """
        with self._lock():
            used = self.set_dut_cores_unlocked(cores)
        for pid in self._pids(self.names.dut_ns):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pid, used)
        return used

    def ensure_neighbours(self) -> None:
        """(Re)install the DUT's permanent neighbour entries for the Initiator and the Responder.

        The kernel flushes them when a recipe removes and re-adds the DUT's
        addresses, so the tester calls this after every DUT setup (``prepare``).
        """
        a, d = self.addresses, self.names.dut_ns
        for addr, tif, dif in (
            (a.initiator, TESTER_INITIATOR_IF, DUT_PRIVATE_IF),
            (a.responder, TESTER_RESPONDER_IF, DUT_PUBLIC_IF),
        ):
            run(
                ["ip", "-n", d, "neigh", "replace", str(addr), "lladdr", self.macs[tif], "nud", "permanent", "dev", dif]
            )

    def after_dut_setup(self) -> None:
        """What the lab redoes after a recipe configured the DUT: static neighbours, DUT processes on DUT CPUs."""
        self.ensure_neighbours()
        state = self._read_state() if self.state_file.exists() else {}
        cpus = state.get("dut_cpus") or list(self.dut_cpus_available)
        for pid in self._pids(self.names.dut_ns):  # e.g. tayga, started by the recipe
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pid, cpus)

    def dut_exec(self, command: Sequence[str], *, check: bool = True, input: str | None = None) -> str:
        """Run a command inside the DUT namespace (for tests and diagnostics); returns stdout."""
        return run(["ip", "netns", "exec", self.names.dut_ns, *command], check=check, input=input).stdout

    def facts(self) -> dict[str, Any]:
        """Lab facts for the run record."""
        state = self._read_state() if self.state_file.exists() else {}
        return {
            "lab": self.name,
            "tester_netns": self.names.tester_ns,
            "dut_netns": self.names.dut_ns,
            "tester_cpus": list(self.tester_cpus),
            "dut_cpus": state.get("dut_cpus", list(self.dut_cpus_available)),
            "dut_cpus_available": list(self.dut_cpus_available),
            "links": "veth",
        }

    # ------------------------------------------------------------------ as a testbed's lab resource

    def tester_ports(self) -> LabPorts:
        """The tester's side: both ports, the tester CPUs, what to redo after every DUT setup, and the probe of what
        other processes take of the tester's and the DUT's CPUs (:mod:`~natbench.testbed.lab.hostload`)."""
        return LabPorts(self.initiator, self.responder, self.tester_cpus, self.after_dut_setup, self.host_load())

    def host_load(self) -> HostLoad:
        """The probe of other processes' share of the lab's CPUs (the tester's and every one the DUT may use) during
        each trial; the DUT's processes are those of its namespace."""
        return HostLoad((*self.tester_cpus, *self.dut_cpus_available), [self.names.dut_ns])

    def dut_params(self, dut: str) -> dict[str, Any]:
        """The recipe parameters the lab decides for DUT ``dut``: interfaces and addresses (every DUT of
        the lab shares its one DUT namespace)."""
        return dut_recipe_params(self.addresses)

    def place_dut(self, dut: str) -> DutPlacement:
        """Where DUT ``dut`` runs: the lab's DUT namespace, on this machine's kernel (so the recipe's
        ``host_settings`` default to true); a ``cores`` sweep takes the DUT's own CPUs first and the
        tester's only beyond them (the DUT's facts then list the CPUs actually used)."""
        own = tuple(self.dut_cpus_available)
        return DutPlacement(
            NetnsExecutor(self.dut_netns),
            host_settings=True,
            cpu_order=own + tuple(c for c in self.tester_cpus if c not in own),
            own_cpus=own,
            facts={SHARES_HOST: True},
        )

    def release(self) -> None:
        """Take the lab down: what a testbed that brought it up does when it closes."""
        self.down()

    # ------------------------------------------------------------------ internals

    def _addresses_json(self) -> dict[str, str]:
        a = self.addresses
        return {
            "initiator": str(a.initiator),
            "dut_private": str(a.dut_private),
            "dut_public": str(a.dut_public),
            "responder": str(a.responder),
            "nat64_prefix": str(a.nat64_prefix),
        }

    def _wiring_state(self, dut_interfaces: list[str]) -> dict[str, Any]:
        """The state every lab records once it is wired: family, addresses, tester CPUs, MACs, interfaces."""
        return {
            "family": str(self.family),
            "addresses": self._addresses_json(),
            "tester_cpus": list(self.tester_cpus),
            "macs": self.macs,
            "interfaces": {"tester": [TESTER_INITIATOR_IF, TESTER_RESPONDER_IF], "dut": dut_interfaces},
        }

    def _build(self) -> None:
        t, d = self.names.tester_ns, self.names.dut_ns
        a = self.addresses
        for ns in (t, d):
            run(["ip", "netns", "add", ns])
            self._mark_owner([ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        pairs = ((TESTER_INITIATOR_IF, DUT_PRIVATE_IF), (TESTER_RESPONDER_IF, DUT_PUBLIC_IF))
        for tif, dif in pairs:
            run(["ip", "link", "add", "name", tif, "netns", t, "type", "veth", "peer", "name", dif, "netns", d])
        # tester side: not a host; no IPv6 autoconf noise; AF_PACKET sees frames before the ingress drop
        run(["ip", "netns", "exec", t, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
        run(["ip", "netns", "exec", t, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        for ifname in (TESTER_INITIATOR_IF, TESTER_RESPONDER_IF):
            run(["ip", "-n", t, "link", "set", "dev", ifname, "address", self.macs[ifname]])
            run(["ip", "-n", t, "link", "set", "dev", ifname, "up"])
        drop_tester_ingress(t)
        # DUT side
        ipv6_private = isinstance(a.dut_private, ipaddress.IPv6Address)
        ipv6_public = isinstance(a.dut_public, ipaddress.IPv6Address)
        run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        if ipv6_private or ipv6_public:
            run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1"])
        for ifname in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            run(["ip", "-n", d, "link", "set", "dev", ifname, "address", self.macs[ifname]])
            if ipv6_public:  # IPv6 forwarding: a recipe re-adding an address must not leave it tentative (DAD)
                run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.accept_dad=0"])
        run(
            ["ip", "-n", d, "addr", "add", f"{a.dut_private}/{a.private_prefixlen}", "dev", DUT_PRIVATE_IF]
            + (["nodad"] if ipv6_private else [])
        )
        run(
            ["ip", "-n", d, "addr", "add", f"{a.dut_public}/{a.public_prefixlen}", "dev", DUT_PUBLIC_IF]
            + (["nodad"] if ipv6_public else [])
        )
        for ifname in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            run(["ip", "-n", d, "link", "set", "dev", ifname, "up"])
        self.ensure_neighbours()
        # each tester port's receive work on the CPU of the tester lane that reads it (see SoftwareTester)
        for k, ifname in enumerate((TESTER_INITIATOR_IF, TESTER_RESPONDER_IF)):
            lane_cpu = self.tester_cpus[k % len(self.tester_cpus)]
            self._write_sys(t, f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus", _mask([lane_cpu]))
        self._write_state(self._wiring_state([DUT_PRIVATE_IF, DUT_PUBLIC_IF]))
        self.set_dut_cores_unlocked(None)

    def set_dut_cores_unlocked(self, cores: int | None) -> list[int]:
        """As :meth:`set_dut_cores`, for callers that already hold the lab lock."""
        avail = list(self.dut_cpus_available)
        n = len(avail) if cores is None else max(1, min(int(cores), len(avail)))
        used = avail[:n]
        for ifname in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            self._write_sys(self.names.dut_ns, f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus", _mask(used))
        self._write_state({"dut_cpus": used, "dut_cores_requested": cores})
        return used

    def _destroy(self) -> bool:
        """Kill the namespaces' processes, delete the namespaces (and with them veths and rules), drop the state."""
        removed = False
        recorded: list[str] = []
        if self.state_file.exists():
            with contextlib.suppress(LabError, ValueError, OSError):
                recorded = list(self._read_state().get("namespaces", []))
        prefix = f"nb-{self.name}-"
        targets = {ns for ns in netns_list() if ns in recorded or ns in (self.names.tester_ns, self.names.dut_ns)}
        targets |= {ns for ns in netns_list() if ns.startswith(prefix) and ns[len(prefix) :] in ("tester", "dut")}
        self.left = []
        for ns in sorted(targets):
            pids = self._pids(ns)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
                deadline = time.monotonic() + 2.0
                while pids and time.monotonic() < deadline:
                    pids = [p for p in pids if _running(p)]
                    time.sleep(0.02)
                if not pids:
                    break
            if pids:  # inside a system call (a kernel-bound flush): it outlives the namespace's name
                self.left += record_left(self.state_dir, self.name, ns, pids)
            run(["ip", "netns", "del", ns], check=False)
            removed = True
        # an interrupted create may leave a mount point file behind
        for ns in (self.names.tester_ns, self.names.dut_ns):
            p = Path("/run/netns") / ns
            if p.exists() and ns not in netns_list():
                with contextlib.suppress(OSError):
                    p.unlink()
        vm_files = self.state_dir / f"{self.name}.vm"  # a VM lab's overlay disk, serial log, known_hosts
        if vm_files.exists():
            shutil.rmtree(vm_files, ignore_errors=True)
            removed = True
        if self.state_file.exists():
            self.state_file.unlink()
            removed = True
        return removed

    def _mark_owner(self, namespaces: Sequence[str] | None = None) -> None:
        """Record this process as the owner in the kernel: the alias of ``lo`` in the lab's namespaces."""
        mark: dict[str, Any] = {"pid": os.getpid(), "start": proc_start(os.getpid())}
        with contextlib.suppress(LabError):
            if self.state_file.exists() and self._read_state().get("by_hand"):
                mark["by_hand"] = True
        mark["state"] = str(self.state_file.resolve())
        text = OWNER_MARK + json.dumps(mark, separators=(",", ":"))
        if len(text) > 255:  # IFALIASZ - 1: a very long state path is left out, the owner is what counts
            mark.pop("state")
            text = OWNER_MARK + json.dumps(mark, separators=(",", ":"))
        present = netns_list()
        for ns in namespaces or (self.names.tester_ns, self.names.dut_ns):
            if ns in present:
                run(["ip", "-n", ns, "link", "set", "dev", "lo", "alias", text])

    def _pids(self, ns: str) -> list[int]:
        out = run(["ip", "netns", "pids", ns], check=False).stdout
        return [int(x) for x in out.split() if x.isdigit() and int(x) != os.getpid()]

    def _write_sys(self, ns: str, path: str, value: str) -> None:
        run(["ip", "netns", "exec", ns, "sh", "-c", 'printf %s "$1" > "$2"', "sh", value, path])

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError) as exc:
            raise LabError(f"{self.state_file}: unreadable lab state: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def _write_state(self, update: dict[str, Any]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        state: dict[str, Any] = {}
        if self.state_file.exists():
            with contextlib.suppress(LabError):
                state = self._read_state()
        state.update(
            {
                "name": self.name,
                "namespaces": [self.names.tester_ns, self.names.dut_ns],
                "owner_pid": os.getpid(),
                "owner_start": proc_start(os.getpid()),
                "updated_at": time.time(),
            }
        )
        state.update(update)
        tmp = self.state_file.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(state, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.state_file)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state_dir / f"{self.name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped does not)."""
    if not alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()[0] != "Z"
    except (OSError, ValueError, IndexError):
        return False


def drop_tester_ingress(netns: str) -> None:
    """Drop every frame arriving at the tester ports of ``netns`` after AF_PACKET has seen it (the tester
    namespace must not answer the test traffic itself)."""
    rules = ["table netdev natbench_tester {"]
    for ifname in (TESTER_INITIATOR_IF, TESTER_RESPONDER_IF):
        chain = ifname.replace("-", "_")
        rules.append(f'  chain {chain} {{ type filter hook ingress device "{ifname}" priority 0; policy drop; }}')
    rules.append("}")
    run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input="\n".join(rules) + "\n")
