"""The procedure seam towards Devices Under Test: the :class:`Dut` protocol and its optional hooks, and what
a DUT access kind hands over (:class:`DutPlacement`: an :class:`Executor` that runs the DUT's commands).

A procedure (:mod:`natbench.metrics`) drives every DUT through :class:`Dut` alone; an access backend
(:class:`~natbench.plugins.backends.AccessBackend`) or a lab places one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from natbench.plugins.tester import Mapping
from natbench.workingpoint import WorkingPoint

SHARES_HOST = "shares_host_cpus"
"""The DUT fact (true) of a DUT that runs on the CPUs of the machine the tester runs on (a local lab's namespace or
VM): its CPU load and the tester's cannot be told apart from what the host's CPUs do (reports say so)."""


@runtime_checkable
class Dut(Protocol):
    """One DUT, or several acting as one (dual-DUT IPv4aaS: CE + PE)."""

    def setup(self, point: WorkingPoint) -> None:
        """Apply the recipe with this working point's parameters (cores, table sizes, ...)."""
        ...

    def reset_connections(self) -> None:
        """Empty the connection tracking table (untimed)."""
        ...

    def count_connections(self) -> int:
        """Number of connections in the connection tracking table now."""
        ...

    def timed_flush(self) -> float:
        """Run the DUT's own delete-all command; return the seconds it took, timed on the DUT."""
        ...

    def mappings(self) -> Sequence[Mapping]:
        """The translated tuples the DUT holds (for ``ResponderMode.READ``); at millions of connections a
        :class:`~natbench.plugins.mappings.MappingTable` (a few bytes a tuple), read from the DUT as it lists them."""
        ...

    def facts(self) -> dict[str, Any]:
        """Kernel, versions, CPU model, active cores, table/hash sizes."""
        ...

    def teardown(self) -> None:
        """Undo ``setup`` and restore the original state (also after errors)."""
        ...


# Optional hooks. A DUT offers them by having the methods; the engine calls them when present,
# so a DUT without them still satisfies :class:`Dut`.


@runtime_checkable
class ReportsSupport(Protocol):
    """Optional Dut hook: which operations the DUT can do, asked before one a procedure can do without.

    Asked for ``count_connections`` (the table checks), ``mappings`` (responder mode compute's port-preservation
    check) and ``reset_connections`` (the forwarding baseline's emptying of the table). A DUT without the hook is
    asked to do each of them (and may raise NotImplementedError, or DutError where the procedure catches it).
    Recipe DUTs do not offer it: a recipe without a usable ``count_connections`` step fails the table check
    with a DutError instead of having it skipped.
    """

    def supports(self, operation: str) -> bool:
        """Whether the DUT can do ``operation`` (the name of a :class:`Dut` method); False: the procedure
        skips what it would have done with it."""
        ...


@runtime_checkable
class MonitorsCpu(Protocol):
    """Optional Dut hook: per-core CPU idle sampling around each traffic trial (the run's ``monitor_interval``)."""

    def start_monitor(self, interval: float = 1.0) -> None:
        """Start sampling every ``interval`` seconds (the engine calls it just before a trial's traffic)."""
        ...

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Stop sampling; ``{dut name: samples}``, each sample ``{"t", "idle": {core: %}, ...}`` ({} when not
        started). The engine stores them with the trial."""
        ...


@runtime_checkable
class MeasuresMemory(Protocol):
    """Optional Dut hook: the DUT's memory now, read after the table is emptied and after each fill of N
    connections, so that every fill stores the memory the N connections took (:mod:`natbench.metrics.memory`)."""

    def memory_snapshot(self) -> dict[str, int]:
        """Memory figures in bytes, one DUT round trip: ``mem_available`` and ``mem_total`` (/proc/meminfo) and,
        under their declared keys, the slab caches of its connection table its recipe declares
        (:class:`SlabCache`: e.g. ``conntrack_slab``, the nf_conntrack cache) where the DUT shows them; every key
        but those two is such a cache. Raise (DutError, OSError, ...) when they cannot be read; the fill then goes
        on without them."""
        ...


@dataclass(frozen=True)
class TableParam:
    """A parameter of a DUT kind (its recipe) that sets the size of its connection table or of its hash table, and
    the rows report tables show for it."""

    param: str
    """The recipe parameter (``conntrack_max``, ``hashsize``, ``state_limit``); a working point's value of it is
    the size."""
    label: str
    """The size's row (``conntrack t. s.``)."""
    ratio_label: str
    """The row of its ratio to the number of connections (``c.t.s/num.conn.``: size / connections for a table,
    ``n.c./h.t.s.``: connections / size for a hash table)."""


@dataclass(frozen=True)
class SlabCache:
    """A slab cache of a DUT kind's connection table (Linux ``/proc/slabinfo``): its growth during a fill is the
    memory the connections took."""

    key: str
    """The key of the memory snapshots and of the stored memory records (``conntrack_slab``)."""
    cache: str
    """The cache's name in /proc/slabinfo (``nf_conntrack``)."""
    label: str
    """Its row in report tables (``conntrack slab / conn. (B)``)."""


@dataclass(frozen=True)
class DutDeclarations:
    """What a DUT kind declares for reports (its recipe's ``table:`` and ``memory:``); a run stores them, so its
    reports read them without the recipe files."""

    table_size: TableParam | None = None
    """The parameter sizing its connection table (None: none)."""
    hash_size: TableParam | None = None
    """The parameter sizing its hash table (None: none)."""
    slabs: tuple[SlabCache, ...] = ()
    """The slab caches its connection table lives in."""


@runtime_checkable
class DeclaresRows(Protocol):
    """Optional Dut hook: what its DUT kinds declare for reports, stored with the run."""

    def declarations(self) -> dict[str, DutDeclarations]:
        """The declarations by DUT name (one per member of a DUT group)."""
        ...


# Where a DUT's commands run.


@dataclass(frozen=True)
class CommandResult:
    """What one command did."""

    command: str
    """The command line as given to the executor (before any sh/sudo/netns wrapping)."""
    returncode: int
    """Exit status."""
    stdout: str
    """Standard output (decoded as UTF-8, undecodable bytes replaced)."""
    stderr: str
    """Standard error."""
    duration: float
    """Seconds the call took as seen by natbench (includes transport; not a DUT-side timing)."""

    @property
    def ok(self) -> bool:
        """Exit status 0."""
        return self.returncode == 0


@runtime_checkable
class Executor(Protocol):
    """Runs shell command lines on a DUT (natbench's own: :mod:`natbench.duts.executors`, :mod:`natbench.duts.ssh`)."""

    @property
    def description(self) -> str:
        """Where commands go (``local``, ``netns nb-dut-123``, ``ssh root@host:22``); never secrets."""
        ...

    @property
    def namespaced(self) -> bool:
        """True when commands run in a network namespace of a larger host (``host()`` differs)."""
        ...

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``sh -c command``; raise :class:`~natbench.duts.executors.CommandTimeout` after ``timeout``
        seconds, :class:`~natbench.duts.executors.CommandFailed` on non-zero exit when ``check``."""
        ...

    def host(self) -> Executor:
        """The executor for commands of ``scope: host`` (itself unless namespaced)."""
        ...

    def close(self) -> None:
        """Release connections; the executor may be used again (it reconnects)."""
        ...


@runtime_checkable
class StreamsOutput(Protocol):
    """Optional Executor hook: a command's standard output handed over in pieces as it arrives, never held whole
    (a DUT's listing of millions of connections is hundreds of megabytes of text)."""

    def run_streaming(
        self, command: str, sink: Callable[[bytes], None], *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``sh -c command`` as :meth:`Executor.run` does, but give every piece of standard output to ``sink``
        as it arrives instead of keeping it: the result's ``stdout`` is empty (its ``stderr`` is kept, the last
        64 KiB). An exception from ``sink`` kills the command and propagates; a timeout or a lost connection
        raises as ``run`` does."""
        ...


@dataclass(frozen=True)
class DutPlacement:
    """Where one DUT runs and how natbench reaches it (made by the DUT's access backend or its lab)."""

    executor: Executor
    """Runs the DUT's recipe commands."""
    host_settings: bool = False
    """The DUT shares this machine's kernel (a lab namespace): the recipe's ``host_settings`` defaults to
    true, so global conntrack table/hash sizes are applied on the host (and restored at teardown)."""
    cpu_order: tuple[int, ...] | None = None
    """The order in which a ``cores`` sweep takes CPUs (a lab: the DUT's own first, the tester's last)."""
    own_cpus: tuple[int, ...] | None = None
    """The DUT's own CPUs (its data path when no cores are set); None: not known."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Facts of the place itself, added to the DUT's facts (a lab VM: ``vm`` with accelerator, vCPUs, memory,
    image and boot time)."""
