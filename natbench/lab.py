"""The local lab: a DUT and a tester in network namespaces joined by veth pairs.

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
``up`` and ``down`` are idempotent and serialised by a lock file.

The kernel carries the owner too: the alias of ``lo`` in both namespaces names
the owning process (pid and start time) and the state file. So
``lab down --stale`` (:func:`remove_stale_labs`) finds every natbench lab on the
host, whatever state directory it was recorded in, and removes those whose
owner is gone; a host-wide lock keeps it from judging a lab while it is built.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from natbench.errors import ConfigError, NatbenchError
from natbench.testers.software.tester import Port
from natbench.traffic.plan import AddressPlan, Family

__all__ = [
    "DEFAULT_STATE_DIR",
    "HOST_LOCK",
    "UNOWNED_GRACE",
    "FoundLab",
    "Lab",
    "LabError",
    "active_lab",
    "dut_namespace",
    "find_labs",
    "lab_for_campaign",
    "list_labs",
    "remove_stale_labs",
    "stale_labs",
]

DEFAULT_STATE_DIR = Path(os.environ.get("NATBENCH_LAB_STATE", "/run/natbench/labs"))
_SYSTEM_STATE_DIR = Path("/run/natbench/labs")

HOST_LOCK = Path("/run/lock/natbench-labs.lock")
"""One lock for the whole host, whatever the state directory: ``up`` holds it shared while it
builds, the stale sweep exclusively while it judges and removes."""

UNOWNED_GRACE = 3600.0
"""Seconds a lab whose owner nobody recorded (no kernel mark, no state file found: made by an
older natbench, or killed between creating a namespace and marking it) is left alone."""

_MARK = "natbench-lab "
_LAB_NS_RE = re.compile(r"^nb-(?P<name>.+)-(?P<role>tester|dut)$")

TESTER_INITIATOR_IF = "nb-init"
TESTER_RESPONDER_IF = "nb-resp"
DUT_PRIVATE_IF = "nb-priv"
DUT_PUBLIC_IF = "nb-pub"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")


class LabError(NatbenchError):
    """The local lab could not be built, inspected or removed."""


def _run(cmd: Sequence[str], *, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, input=input, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{' '.join(cmd)}: {exc}") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _netns_list() -> set[str]:
    out = _run(["ip", "-j", "netns", "list"], check=False).stdout.strip()
    if not out:
        return set()
    try:
        return {str(e["name"]) for e in json.loads(out)}
    except ValueError:
        return set()


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


class Lab:
    """One local lab (see the module docstring). Needs root.

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
        if not _NAME_RE.match(name):
            raise ConfigError(f"invalid lab name {name!r}: use letters, digits, '-', '_' or '.' (max 31)", field="name")
        self.name = name
        self.family = Family(family)
        self.addresses = addresses or AddressPlan.default(self.family)
        self.state_dir = Path(state_dir) if state_dir else DEFAULT_STATE_DIR
        cpus = sorted(os.sched_getaffinity(0))
        # the tester takes the last CPU(s) and the DUT the first ones, so that a recipe's own
        # "cores n -> CPUs 0..n-1" convention (RPS) lands on the DUT's CPUs; from 4 CPUs on the
        # tester gets two (one lane per port: send and receive on different CPUs)
        self.tester_cpus = tuple(tester_cpus) if tester_cpus else tuple(cpus[-2:] if len(cpus) >= 4 else cpus[-1:])
        rest = [c for c in cpus if c not in self.tester_cpus]
        self.dut_cpus_available = tuple(dut_cpus) if dut_cpus else (tuple(rest) or tuple(cpus))
        self.names = _Names(f"nb-{name}-tester", f"nb-{name}-dut")
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
    def dut_access(self) -> dict[str, Any]:
        """How natbench reaches the DUT: the campaign's ``access`` form for a namespace."""
        return {"kind": "netns", "namespace": self.names.dut_ns}

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
        if not {self.names.tester_ns, self.names.dut_ns} <= _netns_list():
            return False
        proc = _run(["ip", "-n", self.names.dut_ns, "-j", "link", "show"], check=False)
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
        _need_root()
        hand = {"by_hand": True} if by_hand else {}
        with _host_lock(exclusive=False), self._lock():
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
        _need_root()
        with self._lock():
            removed = self._destroy()
            with contextlib.suppress(OSError):
                (self.state_dir / f"{self.name}.lock").unlink()
            return removed

    def status(self) -> dict[str, Any]:
        """The recorded state plus what exists now."""
        state = self._read_state() if self.state_file.exists() else {}
        present = _netns_list()
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
            _run(
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
        return _run(["ip", "netns", "exec", self.names.dut_ns, *command], check=check, input=input).stdout

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

    def _build(self) -> None:
        t, d = self.names.tester_ns, self.names.dut_ns
        a = self.addresses
        for ns in (t, d):
            _run(["ip", "netns", "add", ns])
            self._mark_owner([ns])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        pairs = ((TESTER_INITIATOR_IF, DUT_PRIVATE_IF), (TESTER_RESPONDER_IF, DUT_PUBLIC_IF))
        for tif, dif in pairs:
            _run(["ip", "link", "add", "name", tif, "netns", t, "type", "veth", "peer", "name", dif, "netns", d])
        # tester side: not a host; no IPv6 autoconf noise; AF_PACKET sees frames before the ingress drop
        _run(["ip", "netns", "exec", t, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
        _run(["ip", "netns", "exec", t, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        for ifname in (TESTER_INITIATOR_IF, TESTER_RESPONDER_IF):
            _run(["ip", "-n", t, "link", "set", "dev", ifname, "address", self.macs[ifname]])
            _run(["ip", "-n", t, "link", "set", "dev", ifname, "up"])
        rules = ["table netdev natbench_tester {"]
        for ifname in (TESTER_INITIATOR_IF, TESTER_RESPONDER_IF):
            chain = ifname.replace("-", "_")
            rules.append(f'  chain {chain} {{ type filter hook ingress device "{ifname}" priority 0; policy drop; }}')
        rules.append("}")
        _run(["ip", "netns", "exec", t, "nft", "-f", "-"], input="\n".join(rules) + "\n")
        # DUT side
        ipv6_private = isinstance(a.dut_private, ipaddress.IPv6Address)
        ipv6_public = isinstance(a.dut_public, ipaddress.IPv6Address)
        _run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        if ipv6_private or ipv6_public:
            _run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1"])
        for ifname in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            _run(["ip", "-n", d, "link", "set", "dev", ifname, "address", self.macs[ifname]])
            if ipv6_public:  # IPv6 forwarding: a recipe re-adding an address must not leave it tentative (DAD)
                _run(["ip", "netns", "exec", d, "sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.accept_dad=0"])
        _run(
            ["ip", "-n", d, "addr", "add", f"{a.dut_private}/{a.private_prefixlen}", "dev", DUT_PRIVATE_IF]
            + (["nodad"] if ipv6_private else [])
        )
        _run(
            ["ip", "-n", d, "addr", "add", f"{a.dut_public}/{a.public_prefixlen}", "dev", DUT_PUBLIC_IF]
            + (["nodad"] if ipv6_public else [])
        )
        for ifname in (DUT_PRIVATE_IF, DUT_PUBLIC_IF):
            _run(["ip", "-n", d, "link", "set", "dev", ifname, "up"])
        self.ensure_neighbours()
        # each tester port's receive work on the CPU of the tester lane that reads it (see SoftwareTester)
        for k, ifname in enumerate((TESTER_INITIATOR_IF, TESTER_RESPONDER_IF)):
            lane_cpu = self.tester_cpus[k % len(self.tester_cpus)]
            self._write_sys(t, f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus", _mask([lane_cpu]))
        self._write_state(
            {
                "family": str(self.family),
                "addresses": self._addresses_json(),
                "tester_cpus": list(self.tester_cpus),
                "macs": self.macs,
                "interfaces": {
                    "tester": [TESTER_INITIATOR_IF, TESTER_RESPONDER_IF],
                    "dut": [DUT_PRIVATE_IF, DUT_PUBLIC_IF],
                },
            }
        )
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
        targets = {ns for ns in _netns_list() if ns in recorded or ns in (self.names.tester_ns, self.names.dut_ns)}
        targets |= {ns for ns in _netns_list() if ns.startswith(prefix) and ns[len(prefix) :] in ("tester", "dut")}
        for ns in sorted(targets):
            pids = self._pids(ns)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
                deadline = time.monotonic() + 2.0
                while pids and time.monotonic() < deadline:
                    pids = [p for p in pids if _alive(p)]
                    time.sleep(0.02)
                if not pids:
                    break
            _run(["ip", "netns", "del", ns], check=False)
            removed = True
        # an interrupted create may leave a mount point file behind
        for ns in (self.names.tester_ns, self.names.dut_ns):
            p = Path("/run/netns") / ns
            if p.exists() and ns not in _netns_list():
                with contextlib.suppress(OSError):
                    p.unlink()
        if self.state_file.exists():
            self.state_file.unlink()
            removed = True
        return removed

    def _mark_owner(self, namespaces: Sequence[str] | None = None) -> None:
        """Record this process as the owner in the kernel: the alias of ``lo`` in the lab's namespaces."""
        mark: dict[str, Any] = {"pid": os.getpid(), "start": _proc_start(os.getpid())}
        with contextlib.suppress(LabError):
            if self.state_file.exists() and self._read_state().get("by_hand"):
                mark["by_hand"] = True
        mark["state"] = str(self.state_file.resolve())
        text = _MARK + json.dumps(mark, separators=(",", ":"))
        if len(text) > 255:  # IFALIASZ - 1: a very long state path is left out, the owner is what counts
            mark.pop("state")
            text = _MARK + json.dumps(mark, separators=(",", ":"))
        present = _netns_list()
        for ns in namespaces or (self.names.tester_ns, self.names.dut_ns):
            if ns in present:
                _run(["ip", "-n", ns, "link", "set", "dev", "lo", "alias", text])

    def _pids(self, ns: str) -> list[int]:
        out = _run(["ip", "netns", "pids", ns], check=False).stdout
        return [int(x) for x in out.split() if x.isdigit() and int(x) != os.getpid()]

    def _write_sys(self, ns: str, path: str, value: str) -> None:
        _run(["ip", "netns", "exec", ns, "sh", "-c", 'printf %s "$1" > "$2"', "sh", value, path])

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
                "owner_start": _proc_start(os.getpid()),
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


def list_labs(state_dir: Path | str | None = None) -> list[str]:
    """Names of the labs recorded in ``state_dir``."""
    d = Path(state_dir) if state_dir else DEFAULT_STATE_DIR
    return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []


@dataclass(frozen=True)
class FoundLab:
    """A natbench lab found on this host, from the kernel (namespaces ``nb-NAME-tester|dut``) or a state file."""

    name: str
    """The lab name (``nb-NAME-dut`` / ``nb-NAME-tester``)."""
    namespaces: tuple[str, ...]
    """Its namespaces that exist now."""
    state_files: tuple[Path, ...]
    """State files recording it (any state directory natbench knows of or the kernel mark names)."""
    owner_pid: int | None
    """The owning process as recorded (kernel mark first, else a state file); None when nobody recorded one."""
    owner_alive: bool
    """True while the recorded owner runs (a reused pid does not count)."""
    by_hand: bool
    """Made with ``natbench lab up``: kept until removed by name."""
    age: float | None
    """Seconds since its oldest namespace was created (None without namespaces)."""
    stale: bool
    """To be removed by ``lab down --stale``: its owner is gone, or unrecorded for longer than the grace time."""
    reason: str
    """Why it is (not) stale, in words."""


def _read_mark(ns: str) -> dict[str, Any] | None:
    proc = _run(["ip", "-n", ns, "-j", "link", "show", "dev", "lo"], check=False)
    try:
        alias = str(json.loads(proc.stdout or "[]")[0].get("ifalias", ""))
        mark = json.loads(alias[len(_MARK) :]) if alias.startswith(_MARK) else None
    except (ValueError, IndexError, AttributeError):
        return None
    return mark if isinstance(mark, dict) and isinstance(mark.get("pid"), int) else None


def _ns_age(ns: str) -> float | None:
    # the namespace file's times are those of its nsfs inode: when the namespace was created
    try:
        return max(0.0, time.time() - (Path("/run/netns") / ns).stat().st_mtime)
    except OSError:
        return None


def _lab_states(dirs: Sequence[Path]) -> dict[str, dict[Path, dict[str, Any]]]:
    """name -> {state file: contents} for every lab state file in ``dirs``."""
    out: dict[str, dict[Path, dict[str, Any]]] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.glob("*.json"):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict) and _NAME_RE.match(f.stem):
                out.setdefault(f.stem, {})[f.resolve()] = data
    return out


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def find_labs(
    state_dirs: Sequence[Path | str] = (), *, unowned_grace: float = UNOWNED_GRACE, kernel: bool = True
) -> list[FoundLab]:
    """Every natbench lab on this host and whether it is stale.

    Labs are found from the kernel (``kernel``: namespaces named ``nb-NAME-tester`` /
    ``nb-NAME-dut``) and from the state files in ``state_dirs``, the default state
    directory, ``/run/natbench/labs`` and any directory a lab's kernel mark names. The
    owner is the one in the kernel mark, else the one in a state file. A lab is stale
    when its owner is gone (a reused pid does not count), or, when no owner is recorded
    anywhere, once its namespaces are ``unowned_grace`` seconds old; a lab with a live
    owner never is.
    """
    groups: dict[str, list[str]] = {}
    if kernel:
        for ns in sorted(_netns_list()):
            m = _LAB_NS_RE.match(ns)
            if m and _NAME_RE.match(m.group("name")):
                groups.setdefault(m.group("name"), []).append(ns)
    marks = {name: [mk for ns in nss if (mk := _read_mark(ns)) is not None] for name, nss in groups.items()}
    dirs = [Path(d) for d in state_dirs] + [DEFAULT_STATE_DIR, _SYSTEM_STATE_DIR]
    dirs += [Path(str(mk["state"])).parent for mks in marks.values() for mk in mks if mk.get("state")]
    states = _lab_states(list(dict.fromkeys(d.resolve() for d in dirs)))
    out = []
    for name in sorted(set(groups) | set(states)):
        nss = tuple(groups.get(name, ()))
        files = states.get(name, {})
        owners = [(int(mk["pid"]), _as_int(mk.get("start"))) for mk in marks.get(name, [])]
        if not owners:
            owners = [
                (pid, _as_int(st.get("owner_start"))) for st in files.values() if (pid := _as_int(st.get("owner_pid")))
            ]
        live = [pid for pid, start in owners if _owner_alive(pid, start)]
        by_hand = any(mk.get("by_hand") for mk in marks.get(name, [])) or any(
            st.get("by_hand") for st in files.values()
        )
        ages = [a for ns in nss if (a := _ns_age(ns)) is not None]
        age = max(ages) if ages else None
        if live:
            stale, reason = False, f"owner process {live[0]} is running"
        elif by_hand:
            stale, reason = False, f"made by hand with `natbench lab up`; `natbench lab down --name {name}` removes it"
        elif owners:
            stale, reason = True, f"owner process {owners[0][0]} is gone"
        elif not nss:
            stale, reason = True, "a state file without an owner and without namespaces"
        elif age is not None and age >= unowned_grace:
            stale, reason = True, f"no owner recorded anywhere and {age:.0f} s old"
        else:
            stale = False
            reason = (
                f"no owner recorded anywhere, {age or 0:.0f} s old: left for {unowned_grace:.0f} s;"
                f" `natbench lab down --name {name}` removes it now"
            )
        owner = owners[0][0] if owners else None
        out.append(FoundLab(name, nss, tuple(sorted(files)), owner, bool(live), by_hand, age, stale, reason))
    return out


def stale_labs(state_dir: Path | str | None = None, *, unowned_grace: float = UNOWNED_GRACE) -> list[str]:
    """Names of the labs on this host whose owning process is gone (left behind by a crash or a kill).

    Looks in the kernel and in ``state_dir`` besides the known state directories (see :func:`find_labs`).
    """
    return [f.name for f in find_labs([state_dir] if state_dir else (), unowned_grace=unowned_grace) if f.stale]


def remove_stale_labs(
    state_dirs: Sequence[Path | str] = (),
    *,
    unowned_grace: float = UNOWNED_GRACE,
    names: Collection[str] | None = None,
) -> list[tuple[FoundLab, bool]]:
    """Remove every stale lab on this host (:func:`find_labs`), or those of ``names`` only.

    Returns each lab found and whether it was removed. Holds the host-wide lab lock
    exclusively, so no lab is judged while a process builds one.
    """
    _need_root()
    out = []
    with _host_lock(exclusive=True):
        for found in find_labs(state_dirs, unowned_grace=unowned_grace):
            if names is not None and found.name not in names:
                continue
            if not found.stale:
                out.append((found, False))
                continue
            removed = False
            for f in found.state_files or (DEFAULT_STATE_DIR / f"{found.name}.json",):
                removed = Lab(found.name, state_dir=f.parent).down() or removed
            out.append((found, removed))
    return out


@contextlib.contextmanager
def _host_lock(*, exclusive: bool) -> Iterator[None]:
    """The host-wide lab lock (:data:`HOST_LOCK`); taken before any lab's own lock."""
    HOST_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(HOST_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_start(pid: int) -> int | None:
    """Start time of process ``pid`` (clock ticks after boot, /proc/PID/stat field 22); None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_alive(pid: int, start: int | None) -> bool:
    """True while the process ``pid`` that started at ``start`` (when known) runs: a reused pid is not the owner."""
    if pid <= 0 or not _alive(pid):
        return False
    if start is None:
        return True
    now = _proc_start(pid)
    return now is None or now == start


def _need_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the local lab needs root (network namespaces, veth, nftables)")
    for tool in ("ip", "nft", "sysctl"):
        if shutil.which(tool) is None:
            raise LabError(f"the local lab needs {tool!r} on PATH")


# ---------------------------------------------------------------------- campaigns with access kind "lab"

_ACTIVE: dict[str, Lab] = {}


def active_lab() -> Lab | None:
    """The lab this process brought up for a campaign (None when there is none)."""
    return next(iter(_ACTIVE.values()), None)


def release_lab(lab: Lab) -> None:
    """Take down a lab this process brought up for a campaign and forget it."""
    _ACTIVE.pop(lab.name, None)
    lab.down()


def dut_namespace(dut: str) -> str | None:
    """DUT namespace of the lab in use (called by natbench.duts.factory for ``access: {kind: lab}``).

    Every DUT of a lab campaign shares the lab's DUT namespace (one box). When
    this process has not brought a lab up, a single lab recorded in the state
    directory is used (e.g. one started with ``natbench lab up``).
    """
    lab = _lab_in_use()
    return lab.dut_netns if lab is not None else None


def _lab_in_use() -> Lab | None:
    """The lab this process brought up, else the only lab recorded in the state directory."""
    lab = active_lab()
    if lab is not None:
        return lab
    names = list_labs()
    return Lab(names[0]) if len(names) == 1 else None


def dut_cpu_order(dut: str) -> list[int] | None:
    """The order in which a lab DUT's ``cores`` sweep takes CPUs (called by natbench.duts.factory).

    The DUT's own CPUs first, the tester's last: n cores land on the DUT's CPUs
    as long as it has n, and only beyond that on the tester's (the DUT's facts
    then list the CPUs actually used).
    """
    lab = _lab_in_use()
    if lab is None:
        return None
    own = list(lab.dut_cpus_available)
    return own + [c for c in lab.tester_cpus if c not in own]


def dut_own_cpus(dut: str) -> list[int] | None:
    """The lab DUT's own CPUs (its data path when no cores are set; called by natbench.duts.factory)."""
    lab = _lab_in_use()
    return list(lab.dut_cpus_available) if lab is not None else None


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def lab_for_campaign(campaign: Any, settings: dict[str, Any] | None = None) -> tuple[Lab | None, bool]:
    """Bring up the lab of a campaign whose DUTs have ``access: {kind: lab}``; (lab, created by this call).

    Returns (None, False) when no DUT of the campaign is in the lab.

    The lab is named ``settings['lab']`` or ``<campaign name>-<pid>``, takes the
    campaign's family and address plan, and fills the recipe parameters the
    lab determines (interfaces, addresses) where the campaign left them unset.
    """
    settings = settings or {}
    testbed = _get(campaign, "testbed")
    duts = list(_get(testbed, "duts", None) or [])
    lab_duts = [d for d in duts if _get(_get(d, "access"), "kind") == "lab"]
    if not lab_duts:
        return None, False
    traffic = _get(campaign, "traffic")
    family = Family(_get(traffic, "family", Family.NAT44) or Family.NAT44)
    plan_fn = _get(traffic, "address_plan")
    addresses = plan_fn() if callable(plan_fn) else AddressPlan.default(family)
    if settings.get("lab"):
        name = str(settings["lab"])
    else:  # one lab per run: other people may run the same campaign on this machine
        base = re.sub(r"[^A-Za-z0-9_.-]", "-", str(_get(campaign, "name", None) or "natbench"))
        name = f"{base[:20]}-{os.getpid()}"
    cpus = settings.get("cpus")
    lab = Lab(name, family=family, addresses=addresses, tester_cpus=[int(c) for c in cpus] if cpus else None)
    created = not lab.is_up()
    lab.up()
    _ACTIVE[lab.name] = lab
    params = lab.recipe_params
    a = lab.addresses
    params["private_address"] = f"{a.dut_private}/{a.private_prefixlen}"
    params["public_address"] = f"{a.dut_public}/{a.public_prefixlen}"
    for d in lab_duts:
        p = _get(d, "params")
        if isinstance(p, dict):
            for key, value in params.items():
                if key in _recipe_param_names(str(_get(d, "recipe", ""))):
                    p.setdefault(key, value)
    return lab, created


def _recipe_param_names(recipe: str) -> set[str]:
    """Parameter names a recipe declares (empty when the recipe engine is not available)."""
    try:
        from natbench.duts.recipes import load_recipe
    except ImportError:
        return set()
    try:
        return set(load_recipe(recipe).params)
    except NatbenchError:
        return set()
