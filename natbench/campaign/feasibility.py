"""Will a point's connections fit in the DUT's memory, and how long do its fills and deletes take? The memory and time
at scale of ``natbench plan`` (and the memory check of ``validate``).

Seed 000 (2.3) measured below 150 GB for 400M iptables connections and could not double to 1,600M because they
would not fit in the memory. The plan is offline, so it checks with what it is told and what this machine shows. Per
DUT it takes

* its memory: ``duts[].memory``, else what its access knows of its machine (:meth:`AccessSettings.machine
  <natbench.plugins.AccessSettings.machine>`): a lab VM's ``access.memory``; a namespace of the local lab runs on
  this machine's kernel, so this host's memory (MemTotal);
* the bytes one connection takes: ``duts[].bytes_per_connection``, else the ``memory / conn. (B)`` figure of an
  earlier run given with ``natbench plan --from RUN``, else, for a DUT on this machine's kernel, the object size of
  the slab caches its recipe declares (``memory: slabs:``, read from ``/sys/kernel/slab/<cache>/slab_size`` or
  ``/proc/slabinfo``): the table's entries alone (an entry's extensions come on top; the measured figure has them).

A point fits when

    N x bytes per connection <= (1 - MEMORY_MARGIN) x memory

with N the point's connections. Beyond that the plan warns (one line per point and DUT); it is never an error, since
the figures are estimates. What it could not check (a DUT without a memory or without bytes per connection) is said
in a note. A measured figure of a DUT group is what all its devices spent together (their memory summed), so it is
applied to each member as an upper bound: a member may be warned about although only the group's sum is too big.

Each point's :class:`PointScale` gives its DUTs' table memory, how long one fill takes (N / the slowest
``fill_rate`` among the campaign's metrics that fill the table) and one delete-all (N / the deletion rate: an
earlier run's, else the seeds' for the DUTs' recipes, :func:`~natbench.campaign.teardown_check.deletion_profile`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from natbench.campaign.teardown_check import deletion_profile
from natbench.duts.recipes import load_recipe, recipe_reference
from natbench.errors import ConfigError
from natbench.metrics.settings import FillSettings
from natbench.values import format_bytes

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign
    from natbench.campaign.schema import DutSpec
    from natbench.metrics.teardown_resolution import DeletionProfile
    from natbench.workingpoint import WorkingPoint


MEMORY_MARGIN = 0.10
"""Share of the DUT's memory kept for everything but the connections' entries: the kernel and its other caches,
the connection tracking hash table (allocated before the fill and so not in the measured figure), user space."""


class HostMemory(Protocol):
    """What this machine shows of its memory (a DUT in the local lab runs on it)."""

    def memory(self) -> int | None:
        """Its memory in bytes (None: not readable)."""
        ...

    def slab_bytes(self, cache: str) -> int | None:
        """Bytes one object of slab cache ``cache`` takes (None: no such cache, or not readable)."""
        ...


@dataclass(frozen=True)
class ThisHost:
    """This machine, read from ``/proc`` and ``/sys`` (other roots: another machine's copies, for tests)."""

    proc: Path = Path("/proc")
    """Where ``meminfo`` and ``slabinfo`` are."""
    sys: Path = Path("/sys")
    """Where ``kernel/slab/<cache>/slab_size`` is (SLUB)."""

    def memory(self) -> int | None:
        """MemTotal of ``/proc/meminfo``."""
        try:
            for line in (self.proc / "meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None

    def slab_bytes(self, cache: str) -> int | None:
        """``/sys/kernel/slab/<cache>/slab_size`` (readable by anyone), else the object size column of
        ``/proc/slabinfo`` (root only)."""
        try:
            return int((self.sys / "kernel" / "slab" / cache / "slab_size").read_text())
        except (OSError, ValueError):
            pass
        try:
            for line in (self.proc / "slabinfo").read_text().splitlines():
                parts = line.split()
                if parts and parts[0] == cache:
                    return int(parts[3])
        except (OSError, ValueError, IndexError):
            return None
        return None


THIS_HOST = ThisHost()
"""This machine."""


@dataclass(frozen=True)
class DutMemory:
    """What the check knows of one DUT's memory and of the bytes one of its connections takes."""

    name: str
    """The DUT."""
    memory: int | None
    """Its memory in bytes (None: not known)."""
    where: str
    """Whose memory it is, in words (``DUT iptables's``, ``this host's (DUT iptables runs in the local lab)``)."""
    per_connection: float | None
    """Bytes one connection takes (None: not known)."""
    per_source: str
    """Where that figure comes from."""


@dataclass(frozen=True)
class PointScale:
    """One working point at scale: the DUTs' connection tables in memory, a fill's and a delete-all's time."""

    index: int
    """The point's index."""
    label: str
    """Its label."""
    connections: int
    """N."""
    tables: tuple[tuple[str, float], ...] = ()
    """(DUT, bytes its N connections take) for each DUT whose bytes per connection are known."""
    fill_seconds: float | None = None
    """Seconds one fill of N takes at the slowest ``fill_rate`` of the campaign's metrics (None: none fills)."""
    flush_seconds: float | None = None
    """Seconds one delete-all of N takes at the known deletion rate (None: none known)."""


@dataclass(frozen=True)
class MemoryCheck:
    """The outcome of :func:`memory_check`."""

    warnings: tuple[str, ...] = field(default=())
    """One line per point and DUT whose connections would not fit."""
    notes: tuple[str, ...] = field(default=())
    """What could not be checked, and the figures used."""
    points: tuple[PointScale, ...] = field(default=())
    """Each working point's table memory, fill and delete-all times."""
    time_notes: tuple[str, ...] = field(default=())
    """The figures the fill and delete-all times are reckoned with."""


def memory_check(
    campaign: Campaign,
    measured: float | None = None,
    source: str | None = None,
    margin: float = MEMORY_MARGIN,
    *,
    deletion: DeletionProfile | None = None,
    host: HostMemory = THIS_HOST,
) -> MemoryCheck:
    """Check every working point's connections against every DUT's memory, and work out each point's table memory,
    fill and delete-all times (see the module docstring).

    ``measured``: bytes per connection measured in an earlier run (``source`` names it), used for the DUTs that
    give no ``bytes_per_connection`` of their own; ``deletion``: the delete-all figures an earlier run measured
    (else the seeds'); ``host``: this machine, for DUTs in its local lab."""
    warnings: list[str] = []
    notes: list[str] = []
    points = campaign.points()
    duts = [_dut_memory(campaign, d, measured, source, host) for d in campaign.testbed.duts]
    for dut in duts:
        if dut.memory is None or dut.per_connection is None:
            missing = [
                *(["its memory is not known (duts[].memory)"] if dut.memory is None else []),
                *(["the bytes one connection takes are not known (duts[].bytes_per_connection or plan --from RUN)"]
                  if dut.per_connection is None else []),
            ]  # fmt: skip
            notes.append(f"memory of DUT {dut.name} not checked: {' and '.join(missing)}")
            continue
        usable = (1.0 - margin) * dut.memory
        notes.append(
            f"memory of DUT {dut.name}: {dut.where} {format_bytes(dut.memory)}, {100 * (1 - margin):g} % of it for "
            f"connections; {dut.per_connection:,.0f} B per connection ({dut.per_source})"
        )
        for p in points:
            need = p.connections * dut.per_connection
            if need > usable:
                warnings.append(
                    f"point {p.index} ({p.label}): {p.connections:,} connections x {dut.per_connection:,.0f} B = "
                    f"{format_bytes(need)} exceed {100 * (1 - margin):g} % of {dut.where} memory "
                    f"({format_bytes(dut.memory)}): the table may not fit"
                )
    profile = deletion_profile(campaign, deletion)
    scale = tuple(
        PointScale(
            p.index,
            p.label,
            p.connections,
            tuple((d.name, p.connections * d.per_connection) for d in duts if d.per_connection is not None),
            _fill_seconds(campaign, p),
            p.connections / profile.rate if profile is not None else None,
        )
        for p in points
    )
    times = []
    if any(s.fill_seconds is not None for s in scale):
        times.append("fill times at the slowest fill_rate of the campaign's metrics that fill the table")
    if profile is not None:
        times.append(f"delete-all times at {profile.rate:,.0f} connections/s ({profile.source})")
    return MemoryCheck(tuple(warnings), tuple(notes), scale, tuple(times))


def _dut_memory(
    campaign: Campaign, dut: DutSpec, measured: float | None, source: str | None, host: HostMemory
) -> DutMemory:
    """What is known of ``dut``'s memory and of the bytes one of its connections takes (see the module docstring)."""
    machine = dut.access.machine()
    memory, where = dut.memory, f"DUT {dut.name}'s"
    if memory is None and machine.memory is not None:
        memory = machine.memory
    elif memory is None and machine.shares_host:
        memory, where = host.memory(), f"this host's (DUT {dut.name} runs in its local lab)"
    per, per_source = dut.bytes_per_connection, "duts[].bytes_per_connection"
    if per is None and measured is not None:
        per, per_source = measured, source or "an earlier run"
    if per is None and machine.shares_host:
        per, per_source = _slab_bytes(campaign, dut, host)
    return DutMemory(dut.name, memory, where, per, per_source)


def _slab_bytes(campaign: Campaign, dut: DutSpec, host: HostMemory) -> tuple[float | None, str]:
    """The object sizes, on this host, of the slab caches ``dut``'s recipe declares, summed (None: none known)."""
    try:
        base = campaign.file.parent if campaign.file is not None else None
        slabs = load_recipe(recipe_reference(dut.recipe, base)).declarations().slabs
    except ConfigError:
        return None, ""
    sizes = [(s.cache, host.slab_bytes(s.cache)) for s in slabs]
    known = [(cache, size) for cache, size in sizes if size is not None]
    if not known:
        return None, ""
    words = ", ".join(f"{cache} {size} B" for cache, size in known)
    return float(sum(size for _, size in known)), (
        f"the slab objects of {words} on this host: the entries alone, their extensions come on top"
    )


def _fill_seconds(campaign: Campaign, point: WorkingPoint) -> float | None:
    """Seconds one fill of the point's N takes at the slowest ``fill_rate`` among the campaign's metrics."""
    times = [
        point.connections / float(s.fill_rate)
        for m in campaign.metrics
        if isinstance(s := campaign.settings_for(point, m), FillSettings)
    ]
    return max(times) if times else None
