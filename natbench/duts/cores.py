"""Active CPU cores of a Linux DUT: CPU hotplug, or confining the data path to a CPU set.

Two methods, chosen by the recipe's ``set_cores`` step (``method: auto|hotplug|rps``):

``hotplug``
    Bring CPUs on/offline through ``/sys/devices/system/cpu/cpuN/online`` (the seeds'
    method: the DUT runs with exactly n cores). Only right for a whole machine.
``rps``
    Leave all CPUs online but steer packet processing of the data-path interfaces to
    CPUs 0..n-1: RPS masks (``/sys/class/net/IF/queues/rx-*/rps_cpus``) and the IRQ
    affinity of the interfaces' interrupts (``/proc/irq/N/smp_affinity_list``). Right for
    a DUT in a network namespace (offlining CPUs there would change the whole host,
    tester included) or where hotplug is impossible.
``auto``
    ``rps`` for a namespaced executor, ``hotplug`` where ``cpu1/online`` is writable,
    ``rps`` otherwise.

Every change is recorded and :meth:`LinuxCores.restore` puts the original state back.
All file access goes through the DUT's executor, so it works locally, in a namespace
and over SSH alike. :class:`DutCores` is how a recipe DUT sets its cores: by this
built-in (``builtin: linux-cores``), by the step's own commands, or not at all where the
recipe says it cannot.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from natbench.duts.executors import CommandFailed
from natbench.duts.parsers import parse_cpu_list
from natbench.duts.recipes import Recipe
from natbench.duts.recipes.template import cpu_hexmask
from natbench.errors import DutError
from natbench.plugins import Executor


@dataclass
class CoreState:
    """What :class:`LinuxCores` changed, so it can be undone, and what is active now."""

    method: str
    """``hotplug`` or ``rps``."""
    requested: int
    """Cores asked for."""
    active_cpus: list[int] = field(default_factory=list)
    """CPUs that process the data path now (as read back from the DUT)."""
    originally_online: list[int] = field(default_factory=list)
    """CPUs online before any change (hotplug)."""
    files: dict[str, str] = field(default_factory=dict)
    """File -> original content, for every file written (restored in reverse order)."""

    def facts(self) -> dict[str, Any]:
        """The state as DUT facts."""
        return {
            "cores_method": self.method,
            "cores_requested": self.requested,
            "cores_active": len(self.active_cpus),
            "cpus_active": list(self.active_cpus),
        }


class LinuxCores:
    """Sets the number of active cores of a Linux DUT through its executor."""

    def __init__(
        self,
        executor: Executor,
        *,
        interfaces: list[str] | None = None,
        method: str = "auto",
        sysfs: str = "/sys",
        procfs: str = "/proc",
        cpu_order: list[int] | None = None,
    ) -> None:
        if method not in ("auto", "hotplug", "rps"):
            raise ValueError(f"unknown cores method {method!r}")
        self.executor = executor
        self.interfaces = [i for i in (interfaces or []) if i]
        self.method = method
        self.cpu_order = list(cpu_order) if cpu_order else None
        """The order in which CPUs are given to the data path (None: 0, 1, 2, ...). The local lab puts
        the DUT's own CPUs first and the tester's last, so n cores land on the DUT's CPUs first."""
        self.sysfs = sysfs.rstrip("/")
        self.procfs = procfs.rstrip("/")
        self.state: CoreState | None = None

    # -- helpers ----------------------------------------------------------

    def _sh(self, command: str, what: str) -> str:
        try:
            return self.executor.run(command, check=True).stdout
        except CommandFailed as exc:
            raise DutError(f"{what}: {exc}", step="set_cores") from None

    def _read(self, path: str) -> str:
        return self._sh(f"cat {shlex.quote(path)}", f"cannot read {path}").strip()

    def _write(self, path: str, value: str) -> None:
        assert self.state is not None
        if path not in self.state.files:
            self.state.files[path] = self._read(path)
        self._sh(f"echo {shlex.quote(value)} > {shlex.quote(path)}", f"cannot write {value} to {path}")

    def cpu_dir(self) -> str:
        """The sysfs directory of CPUs."""
        return f"{self.sysfs}/devices/system/cpu"

    def present(self) -> list[int]:
        """CPUs present in the machine."""
        return parse_cpu_list(self._read(f"{self.cpu_dir()}/present"))

    def online(self) -> list[int]:
        """CPUs online now."""
        return parse_cpu_list(self._read(f"{self.cpu_dir()}/online"))

    def hotplug_possible(self) -> bool:
        """Whether CPUs can be taken offline (a writable ``cpuN/online`` for some N > 0)."""
        cmd = f'for f in {shlex.quote(self.cpu_dir())}/cpu[1-9]*/online; do [ -w "$f" ] && exit 0; done; exit 1'
        return self.executor.run(cmd).returncode == 0

    def choose_method(self) -> str:
        """The method ``auto`` resolves to on this DUT."""
        if self.method != "auto":
            return self.method
        if self.executor.namespaced:
            return "rps"
        return "hotplug" if self.hotplug_possible() else "rps"

    # -- apply / restore --------------------------------------------------

    def apply(self, cores: int) -> CoreState:
        """Make ``cores`` CPUs (the first of ``cpu_order``, else 0..cores-1) carry the data path; return
        what is active now."""
        if self.state is not None:
            self.restore()
        present = self.present()
        if cores < 1 or cores > len(present):
            raise DutError(f"cannot use {cores} cores: the DUT has {len(present)} CPUs ({present})", step="set_cores")
        method = self.choose_method()
        self.state = CoreState(method=method, requested=cores, originally_online=self.online())
        order = present
        if self.cpu_order and method == "rps":  # hotplug keeps CPU 0..n-1: CPU 0 cannot go offline
            order = [c for c in self.cpu_order if c in present] + [c for c in present if c not in self.cpu_order]
        target = sorted(order[:cores])
        try:
            if method == "hotplug":
                self._hotplug(present, target)
                self.state.active_cpus = self.online()
            else:
                self._rps(target)
                self.state.active_cpus = self._rps_active()
        except Exception:
            self.restore()
            raise
        if len(self.state.active_cpus) != cores:
            active = self.state.active_cpus
            self.restore()
            raise DutError(f"asked for {cores} cores but {len(active)} are active ({active})", step="set_cores")
        return self.state

    def _hotplug(self, present: list[int], target: list[int]) -> None:
        online = set(self.online())
        for cpu in target:  # online the wanted ones first
            if cpu not in online:
                self._write(f"{self.cpu_dir()}/cpu{cpu}/online", "1")
        for cpu in reversed(present):
            if cpu not in target and cpu in online:
                path = f"{self.cpu_dir()}/cpu{cpu}/online"
                self._write(path, "0")

    def _rps(self, target: list[int]) -> None:
        if not self.interfaces:
            raise DutError("method rps needs the data-path interfaces (set_cores: interfaces: [...])", step="set_cores")
        mask = cpu_hexmask(target).replace(",", "")
        cpu_list = ",".join(str(c) for c in target)
        for iface in self.interfaces:
            base = f"{self.sysfs}/class/net/{iface}"
            out = self._sh(
                f"[ -d {shlex.quote(base)} ] || {{ echo no such interface >&2; exit 1; }}; "
                f"ls -d {shlex.quote(base)}/queues/rx-* 2>/dev/null; true",
                f"interface {iface}",
            )
            queues = [q for q in out.split() if q]
            for q in queues:
                self._write(f"{q}/rps_cpus", mask)
            for irq in self._irqs(iface):
                self._write(f"{self.procfs}/irq/{irq}/smp_affinity_list", cpu_list)

    def _rps_active(self) -> list[int]:
        """CPUs the RPS masks written allow, read back from the DUT (the union over all queues)."""
        assert self.state is not None
        cpus: set[int] = set()
        for path in self.state.files:
            if path.endswith("/rps_cpus"):
                mask = int(self._read(path).replace(",", ""), 16)
                cpus.update(i for i in range(mask.bit_length()) if mask >> i & 1)
        return sorted(cpus)

    def _irqs(self, iface: str) -> list[int]:
        """IRQ numbers of an interface's device (MSI vectors or /proc/interrupts lines); [] for veth."""
        base = f"{self.sysfs}/class/net/{iface}/device/msi_irqs"
        pattern = shlex.quote(f" {iface}(-|$)")
        cmd = f"ls {shlex.quote(base)} 2>/dev/null; grep -E {pattern} {self.procfs}/interrupts 2>/dev/null; true"
        out = self.executor.run(cmd).stdout
        irqs: set[int] = set()
        for line in out.splitlines():
            m = re.match(r"^\s*(\d+):?", line)
            if m:
                irqs.add(int(m.group(1)))
        return sorted(irqs)

    def restore(self) -> None:
        """Write back every original value (in reverse order); errors are collected and raised at the end."""
        state, self.state = self.state, None
        if state is None:
            return
        errors = []
        for path, value in reversed(list(state.files.items())):
            res = self.executor.run(f"echo {shlex.quote(value)} > {shlex.quote(path)}")
            if not res.ok:
                errors.append(f"{path}: {res.stderr.strip()}")
        if errors:
            raise DutError("could not restore: " + "; ".join(errors), step="set_cores")


class DutCores:
    """The cores of one recipe DUT: the working point's count applied through the recipe's ``set_cores`` step (the
    built-in :class:`LinuxCores`, the step's own commands, or both), what that leaves as facts, and the CPU state put
    back at teardown."""

    def __init__(self, dut: str, recipe: Recipe) -> None:
        self.dut = dut
        """The DUT's name, for messages."""
        self.recipe = recipe
        """The recipe whose ``set_cores`` step sets them."""
        self.facts: dict[str, Any] = {}
        """What the cores step did (method, requested, active CPUs), as DUT facts; empty when not set."""
        self._linux: LinuxCores | None = None

    def apply(
        self,
        cores: int,
        *,
        swept: bool,
        executor: Executor,
        cpu_order: list[int] | None,
        options: Callable[[], dict[str, Any]],
        run_commands: Callable[[], object],
    ) -> str | None:
        """Set ``cores`` cores; the warning to keep, if any. ``swept``: the working point sweeps this DUT's cores (a
        recipe that cannot set them is then an error; else the fixed count is recorded as not applied). The built-in
        writes the DUT's files through ``executor`` and takes CPUs in ``cpu_order`` (None: 0, 1, 2, ...) with the
        step's ``options()``; ``run_commands()`` runs the step's own commands."""
        step = self.recipe.steps.get("set_cores")
        if step is None:
            raise DutError(
                f"the working point asks for {cores} cores but recipe {self.recipe.name} has no set_cores step",
                step="set_cores",
                dut=self.dut,
            )
        if step.unsupported is not None:
            if not swept:
                # a fixed core count (the DUT's size in the campaign), not a swept one: record it honestly
                self.facts = {"cores_requested": cores, "cores_method": "none (unsupported)"}
                return f"step set_cores: {cores} cores requested but not applied: {step.unsupported}"
            raise DutError(f"cannot set cores on this DUT: {step.unsupported}", step="set_cores", dut=self.dut)
        if step.builtin == "linux-cores":
            opts = options()
            method = opts.get("method", "auto")
            self._linux = LinuxCores(executor, interfaces=opts.get("interfaces"), method=method, cpu_order=cpu_order)
            try:
                self.facts = self._linux.apply(cores).facts()
            except DutError as exc:
                raise DutError(str(exc), step="set_cores", dut=self.dut) from None
        if step.commands:
            run_commands()
        if not self.facts:
            self.facts = {"cores_method": "recipe commands", "cores_requested": cores}
        return None

    def restore(self) -> None:
        """Put the CPU state the built-in changed back (nothing when it changed none); the facts are forgotten."""
        linux, self._linux = self._linux, None
        self.facts = {}
        if linux is not None:
            linux.restore()
