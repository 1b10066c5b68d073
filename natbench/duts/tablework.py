"""Time limits that grow with the connection table: what a DUT has measured of its table work, and the limits of the
commands whose time grows with the table.

A recipe command that declares a ``cost`` (:class:`~natbench.duts.recipes.cost.TableWork`: ``delete``, ``list``)
takes time in proportion to N, the connections in the DUT's table. Its time limit is::

    limit = max(floor, MARGIN x N / rate)

* N: the connections the table may hold now, the larger of the working point's N and the DUT's last count;
* rate: the rate this DUT did that work at, measured on its own earlier commands of that work (at this point or an
  earlier one): the slowest at the largest table measured (the rate falls as the table grows);
* floor: the command's own ``timeout``, else the executor's command timeout (:data:`DEFAULT_COMMAND_TIMEOUT
  <natbench.duts.executors.DEFAULT_COMMAND_TIMEOUT>` unless the DUT's access sets another).

Before the DUT's rate is measured the limit is ``max(floor, N / stated)``, ``stated`` the slowest rate the recipe
allows for (its ``rates:``, :class:`~natbench.duts.recipes.cost.WorkRates`: already a worst case, so no margin on
it); the floor alone when the recipe states none.

A delete is measured when the DUT knows how many connections it deleted: its count read since the table was last
emptied (the fills, the tear-down's timed delete and the resets after them are counted); a listing by the entries it
listed. :class:`StepLimit` says, in a step's error, which limit applied and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from natbench.duts.recipes.cost import TableWork

MARGIN = 4.0
"""How many times its expected time a command that grows with the table may take: room for a rate that falls as the
table grows past the largest one measured (seed 000 Figure 5: about 1.5x slower per 4x connections) and for a
machine busier than when it was measured (a CPU taken by another job halves a 2-CPU host's rate)."""

MIN_MEASURED = 1000
"""Fewest connections a measured rate is taken from (below, the command's own start-up time is all it shows)."""


@dataclass(frozen=True)
class RateSample:
    """One measurement of a DUT's table work: ``connections`` done in ``seconds``."""

    work: TableWork
    """What was done."""
    connections: int
    """On how many connections."""
    seconds: float
    """How long it took (on the DUT's clock for a timed command, else as natbench saw it)."""

    @property
    def rate(self) -> float:
        """Connections per second."""
        return self.connections / self.seconds if self.seconds > 0 else float("inf")

    def words(self) -> str:
        """``the delete rate measured on this DUT: 6,250,000 connections in 34.7 s``."""
        return f"{self.connections:,} connections in {self.seconds:.3g} s"


@dataclass(frozen=True)
class StepLimit:
    """The time limit of one command whose time grows with the table, and what it was set from."""

    seconds: float
    """The limit."""
    work: TableWork
    """The table work the command declares."""
    connections: int
    """N: the connections the table may hold."""
    floor: float
    """The smallest limit (the command's ``timeout``, else the executor's command timeout)."""
    basis: RateSample | None
    """The measurement the rate comes from (None: none yet: the recipe's stated rate, else the floor)."""
    margin: float = MARGIN
    """Times the expected time allowed."""
    stated: float | None = None
    """The slowest rate the recipe allows for before one is measured (None: none stated)."""

    def words(self) -> str:
        """The limit in a step's error: N, the rate and where it comes from, the floor."""
        head = f"its limit {self.seconds:.4g} s for {self.work.doing} {self.connections:,} connections"
        if self.basis is None and self.stated is not None:
            return (
                f"{head}: N / {self.stated:,.0f} connections/s = {self.connections / self.stated:.4g} s, floor "
                f"{self.floor:g} s; the slowest {self.work.rate_name} the recipe allows for (none measured on this "
                "DUT yet)"
            )
        if self.basis is None:
            return f"{head}: the floor (no {self.work.rate_name} measured on this DUT yet)"
        b = self.basis
        scaled = self.margin * self.connections / b.rate
        return (
            f"{head}: {self.margin:g} x N / {b.rate:,.0f} connections/s = {scaled:.4g} s, floor {self.floor:g} s; "
            f"the {self.work.rate_name} measured on this DUT: {b.words()}"
        )


@dataclass
class TableScale:
    """What one DUT knows of its connection table: the working point's N, its last count, and the rates of its table
    work measured so far (kept across working points)."""

    connections: int = 0
    """The working point's N (0 before a point is set up)."""
    counted: int | None = None
    """The connections the DUT counted since the table was last emptied (None: not counted since)."""
    margin: float = MARGIN
    """Times the expected time a command may take."""
    stated: dict[TableWork, float] = field(default_factory=dict)
    """The slowest rates the recipe allows for, by work, until one is measured (its ``rates:``)."""
    samples: dict[TableWork, list[RateSample]] = field(default_factory=dict)
    """What was measured, by work."""

    @property
    def size(self) -> int:
        """N of a limit: the connections the table may hold now."""
        return max(self.connections, self.counted or 0)

    def observe(self, work: TableWork, connections: int, seconds: float) -> None:
        """Keep a measurement (too few connections, or no time, says nothing of the rate: left out)."""
        if connections >= MIN_MEASURED and seconds > 0:
            self.samples.setdefault(work, []).append(RateSample(work, connections, seconds))

    def rate(self, work: TableWork) -> RateSample | None:
        """The measurement a limit of ``work`` is set from: the slowest at the largest table measured."""
        done = self.samples.get(work)
        if not done:
            return None
        largest = max(s.connections for s in done)
        return min((s for s in done if s.connections == largest), key=lambda s: s.rate)

    def limit(self, work: TableWork, floor: float) -> StepLimit:
        """The time limit of a command doing ``work`` on the table now (see the module docstring)."""
        basis = self.rate(work)
        n = self.size
        stated = self.stated.get(work)
        if basis is not None:
            return StepLimit(max(floor, self.margin * n / basis.rate), work, n, floor, basis, self.margin, stated)
        scaled = n / stated if stated is not None else 0.0
        return StepLimit(max(floor, scaled), work, n, floor, basis, self.margin, stated)

    def done(self, work: TableWork, seconds: float, listed: int | None = None) -> None:
        """A command doing ``work`` ended well after ``seconds``: a delete emptied the table (measured on the
        connections counted before it), a listing showed ``listed`` connections."""
        if work is TableWork.DELETE:
            if self.counted:
                self.observe(work, self.counted, seconds)
            self.counted = 0
        elif listed is not None:
            self.observe(work, listed, seconds)
