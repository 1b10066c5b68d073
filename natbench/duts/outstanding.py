"""Commands of a DUT that outlived their time limit and are still running: no step of the DUT starts beside them.

At its limit a command is asked to stop (SIGTERM to its process group). Most end; a command working inside one system
call does not: a ``conntrack -F`` of millions of connections ends only when the kernel has deleted them all, whatever
the signal, and a second flush started meanwhile would only wait for the kernel's lock (in state D) and run after it.
So such a command is kept here (:class:`Outliving`), and before the DUT's next step natbench waits for it, as long
again as its limit, then sends SIGKILL and waits :data:`~natbench.duts.executors.KILL_GRACE` more. When it has ended
the step starts (a delete that ended on its own also tells the DUT its delete rate); when it has not, the step does
not start and fails naming it (:class:`CommandStillRunning`: command, DUT, step, processes with pid and state), as
every later step does, without waiting again, until it has ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from natbench.duts.executors import KILL_GRACE, RunningCommand
from natbench.duts.recipes.cost import TableWork
from natbench.duts.tablework import TableScale
from natbench.errors import DutError, DutStepFailed


class CommandStillRunning(DutStepFailed):
    """A step did not start: a command of an earlier step outlived its time limit and is still running."""


@dataclass
class Outliving:
    """A command that outlived its time limit and did not end when asked to stop."""

    step: str
    """The step it belongs to."""
    command: str
    """The command as rendered from the recipe."""
    running: RunningCommand
    """Where it still runs (its process group)."""
    limit: float
    """Seconds it was allowed."""
    started: float
    """When it started (``time.monotonic()``)."""
    outlived: float
    """When it was found still running after its limit (``time.monotonic()``)."""
    work: TableWork | None = None
    """The table work it declares (a delete that ends on its own is a measurement of the DUT's delete rate)."""
    waited: bool = False
    """Whether natbench has waited for it once already (it is then only looked at)."""

    def words(self, now: float) -> str:
        """The command, its age and its processes, for an error."""
        try:
            procs = "; ".join(map(str, self.running.processes()))
        except DutError as exc:
            procs = f"its processes could not be listed: {exc}"
        pid = self.running.pid
        where = procs or (f"pid {pid}" if pid is not None else "pid unknown")
        return (
            f"{self.command!r} of step {self.step} (started {now - self.started:.0f} s ago, its limit {self.limit:.4g} "
            f"s) is still running: {where}"
        )


@dataclass
class Outstanding:
    """The commands of one DUT that outlived their time limit and still run (see the module docstring)."""

    dut: str
    """The DUT's name, for messages."""
    table: TableScale | None = None
    """The DUT's table knowledge, told about a delete that ended on its own."""
    clock: Callable[[], float] = time.monotonic
    """The clock of :attr:`Outliving.started` and :attr:`Outliving.outlived`."""
    commands: list[Outliving] = field(default_factory=list)
    """The commands still running, oldest first."""

    def add(self, command: Outliving) -> None:
        """Keep ``command`` until it has ended."""
        self.commands.append(command)

    def settle(self, step: str) -> None:
        """Before ``step``: wait for every command still running (once as long again as its limit, then SIGKILL and
        :data:`KILL_GRACE`); :class:`CommandStillRunning` naming those that have not ended."""
        still: list[Outliving] = []
        for c in list(self.commands):
            ended, on_its_own = self._wait(c)
            if not ended:
                still.append(c)
                continue
            self.commands.remove(c)
            if self.table is not None and c.work is TableWork.DELETE:
                if on_its_own:
                    self.table.done(c.work, self.clock() - c.started)
                else:
                    self.table.counted = None  # killed half-way: what is left is not known
        if still:
            now = self.clock()
            named = "; ".join(c.words(now) for c in still)
            raise CommandStillRunning(
                f"not started: {named}. It was asked to stop (SIGTERM) at its limit and killed (SIGKILL) after as long "
                "again; a command working inside a system call (a kernel-bound flush) ends only when the call returns, "
                "and no step of this DUT starts before it has ended",
                step=step,
                dut=self.dut,
            )

    def _wait(self, c: Outliving) -> tuple[bool, bool]:
        """(whether ``c`` has ended, whether on its own, before natbench killed it)."""
        try:
            if c.waited:
                return c.running.wait(0), False
            c.waited = True
            if c.running.wait(max(0.0, c.outlived + c.limit - self.clock())):
                return True, True
            c.running.kill()
            return c.running.wait(KILL_GRACE), False
        except DutError:  # the DUT cannot be asked now: the command is taken for still running
            return False, False

    def describe(self) -> list[str]:
        """One line per command still running (for a warning when the DUT is torn down)."""
        now = self.clock()
        return [c.words(now) for c in self.commands]
