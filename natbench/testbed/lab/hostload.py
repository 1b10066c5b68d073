"""Other processes' CPU time on the lab's host during each trial: what the CPUs the tester and the DUT run on spent on
anything that is neither.

The local lab puts the tester and the DUT on this machine's CPUs (a 2-CPU machine: the tester on one, the DUT on
the other), so every CPU-second another process takes on them is one the tester or the DUT may have needed: their
results here are bound by CPU (docs/lab.md). A :class:`HostLoad` reads, at the start and the end of a window:

* **the CPUs' busy time** from ``/proc/stat``, for the lab's CPUs only (the tester's and the DUT's): user, nice and
  system time (interrupts and softirqs, where the DUT's data path and the tester's receive path run, are the lab's
  and left out), and the time the hypervisor stole for other guests (``steal``);
* **the lab's own processes**: this process (the tester's threads, and every child it waited for: the DUT's
  commands run through ``ip netns exec``) by ``getrusage`` (microseconds); the processes in the DUT's namespaces
  (a recipe's daemons, a VM's QEMU) by ``/proc/PID/stat``; the kernel's softirq threads of the lab's CPUs
  (``ksoftirqd/N``: packet processing deferred to a thread) by ``/proc/PID/schedstat`` (nanoseconds).

What the CPUs were busy with beyond the lab's processes is the others' (a process that ran and ended within the
window counts too: ``/proc/stat`` keeps its time; so do the kernel's other threads, disk writeback and conntrack's
garbage collector among them); with the stolen time it is their **share** of the lab CPUs'
capacity over the window (:func:`host_figures`). The figure is only as good as the kernel's counters: ``/proc/stat``
counts in ticks of 1 / ``CLK_TCK`` seconds and samples which task a CPU runs at every scheduler tick (at least 100
per second), so its busy time is off by a rounding of up to one tick per counter and by sampling noise of
``sqrt(ticks) / 2`` ticks (a share of 1/2 sampled ``ticks`` times); the figures carry that **bound** (the rounding
plus two standard deviations of the sampling), and a share within it says nothing.
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TICK = 1.0 / os.sysconf("SC_CLK_TCK")
"""Seconds of one tick of ``/proc/stat`` and ``/proc/PID/stat``."""
SAMPLES_PER_SECOND = 100
"""Fewest scheduler ticks per second at which a kernel samples what a CPU runs (CONFIG_HZ is 100 at least): the
sampling noise of the busy time is largest there, so the bound uses it."""
_BUSY = (0, 1, 2)
"""``/proc/stat`` cpu fields summed as busy: user, nice, system (guest time is part of user)."""
_STEAL = 7
"""The ``/proc/stat`` cpu field of stolen time."""


@dataclass(frozen=True)
class HostReading:
    """The counters at one moment (seconds; :class:`HostLoad` reads them)."""

    at: float
    """Monotonic clock reading."""
    busy: float
    """User, nice and system time of the lab's CPUs since boot."""
    steal: float
    """Time stolen from the lab's CPUs since boot."""
    own: float
    """CPU time of this process and the children it waited for."""
    lab: dict[int, float] = field(default_factory=dict)
    """CPU time of each other lab process (the DUT's namespaces' processes, the lab CPUs' ksoftirqd), by pid."""
    ticked: int = 0
    """How many of :attr:`lab` are counted in ticks (the DUT's processes: four counters each)."""


def parse_cpu_stat(text: str, cpus: Sequence[int]) -> tuple[float, float]:
    """(busy, stolen) seconds of ``cpus`` from ``/proc/stat``'s text."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = steal = 0
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in wanted:
            values = [int(v) for v in parts[1:]]
            busy += sum(values[i] for i in _BUSY if i < len(values))
            steal += values[_STEAL] if len(values) > _STEAL else 0
    return busy * TICK, steal * TICK


def host_figures(a: HostReading, b: HostReading, cpus: int) -> dict[str, Any]:
    """What happened on the lab's ``cpus`` CPUs between readings ``a`` and ``b``, as a trial stores it
    (``extra.host_load``): ``seconds`` (the window), ``cpus``, ``others`` (the share of the CPUs' capacity other
    processes used, stolen time included), ``steal`` (its stolen part), ``bound`` (the share the counters' rounding
    and sampling may be off by: module docstring). A lab process that ended within the window is left out of the
    lab's time (its time then counts as the others'); one that started counts whole."""
    seconds = max(b.at - a.at, 0.0)
    capacity = seconds * cpus
    lab = b.own - a.own + sum(t - a.lab.get(pid, 0.0) for pid, t in b.lab.items())
    steal = max(b.steal - a.steal, 0.0)
    others = max(b.busy - a.busy - lab, 0.0) + steal
    ticks = capacity / TICK
    rounding = (4 * cpus + 4 * max(a.ticked, b.ticked)) * TICK
    sampling = 2 * 0.5 * math.sqrt(capacity * SAMPLES_PER_SECOND) / SAMPLES_PER_SECOND
    bound = rounding + sampling
    return {
        "seconds": round(seconds, 6),
        "cpus": cpus,
        "others": round(others / capacity, 6) if ticks else 0.0,
        "steal": round(steal / capacity, 6) if ticks else 0.0,
        "bound": round(bound / capacity, 6) if ticks else 1.0,
    }


def netns_inode(name: str, run_dir: Path = Path("/run/netns")) -> int | None:
    """The inode of the network namespace ``name`` (None when it does not exist)."""
    try:
        return os.stat(run_dir / name).st_ino
    except OSError:
        return None


def own_seconds() -> float:
    """CPU time of this process (all its threads, ended ones too) and of the children it waited for
    (``getrusage``, microseconds)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class HostLoad:
    """The host-load probe of a local lab (:class:`~natbench.plugins.tester.HostLoadProbe`): the others' share of the
    lab's CPUs over each window, from :meth:`mark` to :meth:`since_mark`."""

    def __init__(
        self,
        cpus: Sequence[int],
        dut_netns: Sequence[str],
        *,
        proc: Path = Path("/proc"),
        netns_dir: Path = Path("/run/netns"),
        clock: Callable[[], float] = time.monotonic,
        own: Callable[[], float] = own_seconds,
        me: int | None = None,
    ) -> None:
        self.cpus = tuple(sorted(set(cpus)))
        """The lab's CPUs (the tester's and the DUT's)."""
        self.dut_netns = tuple(dut_netns)
        """The DUT's network namespaces: their processes are the DUT's."""
        self.proc = proc
        self.netns_dir = netns_dir
        self.clock = clock
        self.own = own
        self.me = os.getpid() if me is None else me
        """This process (the tester's): its children count in its own time."""
        self._softirq = self._softirq_threads()
        self._mark: HostReading | None = None

    def _softirq_threads(self) -> list[int]:
        """The pids of ``ksoftirqd/N`` for the lab's CPUs N."""
        names = {f"ksoftirqd/{c}" for c in self.cpus}
        found = []
        for pid in self._pids():
            try:
                if (self.proc / str(pid) / "comm").read_text().strip() in names:
                    found.append(pid)
            except OSError:
                continue
        return found

    def _pids(self) -> list[int]:
        try:
            return [int(p) for p in os.listdir(self.proc) if p.isdigit()]
        except OSError:
            return []

    def _dut_pids(self) -> list[int]:
        """Processes in the DUT's namespaces that are not this process's own children (those count in its
        children's time once it has waited for them)."""
        inodes = {i for i in (netns_inode(n, self.netns_dir) for n in self.dut_netns) if i is not None}
        if not inodes:
            return []
        me = self.me
        out = []
        for pid in self._pids():
            if pid == me:
                continue
            try:
                if os.stat(self.proc / str(pid) / "ns" / "net").st_ino not in inodes:
                    continue
                stat = (self.proc / str(pid) / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) != me:  # field 4: the parent
                out.append(pid)
        return out

    def _stat_seconds(self, pid: int) -> float | None:
        """utime + stime + cutime + cstime of ``pid`` (``/proc/PID/stat``, ticks)."""
        try:
            stat = (self.proc / str(pid) / "stat").read_text()
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2 :].split()
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) * TICK

    def _schedstat_seconds(self, pid: int) -> float | None:
        """Time ``pid`` ran (``/proc/PID/schedstat``, nanoseconds)."""
        try:
            return int((self.proc / str(pid) / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def reading(self) -> HostReading:
        """The counters now."""
        at = self.clock()
        busy, steal = parse_cpu_stat((self.proc / "stat").read_text(), self.cpus)
        own = self.own()
        lab: dict[int, float] = {}
        ticked = 0
        for pid in self._dut_pids():
            t = self._stat_seconds(pid)
            if t is not None:
                lab[pid] = t
                ticked += 1
        for pid in self._softirq:
            t = self._schedstat_seconds(pid)
            if t is not None:
                lab[pid] = t
        return HostReading(at, busy, steal, own, lab, ticked)

    def mark(self) -> None:
        """Start a window now (the next trial's traffic starts)."""
        self._mark = self.reading()

    def since_mark(self) -> dict[str, Any]:
        """The figures of the window from the last mark to now (:func:`host_figures`); a new window starts now."""
        now = self.reading()
        start = self._mark if self._mark is not None else now
        self._mark = now
        return host_figures(start, now, len(self.cpus))

    def since(self, start: Any) -> dict[str, Any]:
        """The figures of the window from the reading ``start`` to now (the marks stay as they are)."""
        if not isinstance(start, HostReading):
            raise TypeError("since() takes a reading() of this probe")
        return host_figures(start, self.reading(), len(self.cpus))
