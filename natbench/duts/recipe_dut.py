"""A DUT driven by a recipe through an executor: the :class:`~natbench.plugins.Dut` face of a recipe.

:class:`RecipeDut` implements the :class:`~natbench.plugins.Dut` protocol: ``setup``
renders the recipe's steps with the working point's parameters and runs them in order
(stopping at the first failing command with an error naming the step and command);
``timed_flush`` times the DUT's own delete-all command on the DUT itself (a shell
wrapper reads the DUT's clock before and after); ``teardown`` runs the teardown step
and restores the CPU state. A dropped SSH connection is re-established and the step is
retried (``setup`` after tearing down what it had done). A command whose time grows with the
connection table gets a limit from the table's size and the rates this DUT was measured at
(:mod:`natbench.duts.tablework`); one that outlived its limit and still runs is waited for before
the next step starts (:mod:`natbench.duts.outstanding`). How a step's commands run is
:mod:`natbench.duts.steps`; the cores :class:`~natbench.duts.cores.DutCores`; the facts
:mod:`natbench.duts.facts`; several DUTs as one :class:`~natbench.duts.group.DutGroup`.
"""

from __future__ import annotations

import logging
from typing import Any

from natbench.duts.cores import DutCores
from natbench.duts.executors import command_timeout
from natbench.duts.facts import recipe_dut_facts
from natbench.duts.outstanding import Outstanding
from natbench.duts.recipes import Recipe
from natbench.duts.recipes.cost import TableWork
from natbench.duts.steps import StepResult, StepRun, TimeLimits, run_retrying
from natbench.duts.tablework import TableScale
from natbench.errors import DutError
from natbench.plugins import DutDeclarations, Executor, Mapping, MappingTable
from natbench.workingpoint import WorkingPoint

log = logging.getLogger(__name__)


class RecipeDut:
    """One DUT: a recipe applied through an executor (implements :class:`~natbench.plugins.Dut`).

    It has the optional :class:`~natbench.plugins.MonitorsCpu`, :class:`~natbench.plugins.MeasuresMemory` and
    :class:`~natbench.plugins.DeclaresRows` hooks, not :class:`~natbench.plugins.ReportsSupport`: a step the recipe
    lacks or marks ``unsupported`` raises DutError when asked for, so a table check on a recipe that cannot count
    fails rather than being skipped.
    """

    def __init__(
        self,
        name: str,
        recipe: Recipe,
        executor: Executor,
        params: dict[str, Any] | None = None,
        *,
        step_retries: int = 2,
        retry_backoff: float = 1.0,
        fixed_cores: int | None = None,
        batch: bool = True,
        cpu_order: list[int] | None = None,
        own_cpus: list[int] | None = None,
        place_facts: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.place_facts = dict(place_facts or {})
        """Facts of where the DUT runs (a lab VM's accelerator, vCPUs, memory), part of :meth:`facts`."""
        self.cpu_order = cpu_order
        """Order in which a cores sweep takes CPUs (the lab: the DUT's own first); None: 0, 1, 2, ..."""
        self.own_cpus = own_cpus
        """CPUs that carry the data path when no cores are set (the lab: the DUT's CPUs of a machine
        shared with the tester); None: all of the DUT's CPUs."""
        self.batch = batch
        """Send the commands of a step as one script (one round trip) when no command needs a value
        saved earlier in the same step; results are still per command."""
        self.fixed_cores = fixed_cores
        """Cores used when the working point does not sweep this DUT's cores (None: leave as is)."""
        self.monitor_mode = "thread"
        """How :meth:`start_monitor` samples: ``thread`` (a command per sample) or ``remote``
        (one sampler loop on the DUT; for sub-second intervals over SSH)."""
        self.recipe = recipe
        self.executor = executor
        self.base_params = dict(params or {})
        self.step_retries = step_retries
        self.retry_backoff = retry_backoff
        if not self._needs_point():  # fail early on bad static parameters
            recipe.resolve(self.base_params, field_prefix=f"duts.{name}.params.")
        self.params: dict[str, Any] | None = None
        """Parameters resolved for the current working point (None before setup)."""
        self.saved: dict[str, str] = {}
        """Values kept by commands with ``save:`` (available to later steps)."""
        self.cores: int | None = None
        self.warnings: list[str] = []
        stated = {w: r for w in TableWork if recipe.rates is not None and (r := recipe.rates.of(w)) is not None}
        self.table = TableScale(stated=stated)
        """What the DUT knows of its connection table: the point's N, its last count, the rates of its table work."""
        self.outstanding = Outstanding(name, self.table)
        """Its commands that outlived their time limit and still run (no step starts before they have ended)."""
        self.time_limits = TimeLimits(table=self.table, floor=command_timeout(executor))
        """How long each command of a step may take on the DUT."""
        self._cores = DutCores(name, recipe)
        self._cores_swept = False
        self._facts: dict[str, Any] = {}
        self._is_setup = False
        self._monitor: Any = None

    def __repr__(self) -> str:
        return f"RecipeDut({self.name!r}, recipe={self.recipe.name!r}, {self.executor.description})"

    def _needs_point(self) -> bool:
        # required parameters may come from the working point; validate fully at setup
        return any(p.required and p.name not in self.base_params for p in self.recipe.params.values())

    # -- running steps ----------------------------------------------------

    def _context(self) -> dict[str, Any]:
        ctx: dict[str, Any] = {"dut": self.name, "cores": self.cores}
        ctx["cpus"] = self._cores.facts.get("cpus_active", [])
        ctx.update(self.saved)
        return ctx

    def _params(self) -> dict[str, Any]:
        return self.params if self.params is not None else self.recipe.resolve(self.base_params)

    def run_step(self, step: str, *, check: bool = True, stream: bool = False) -> StepResult:
        """Run the commands of ``step``; raise on the first failure.

        When the connection drops, the executor reconnects (with backoff) and the step is
        retried: ``setup`` after tearing down what it had done. ``timed_flush`` is not
        retried: a flush interrupted half-way cannot be timed again on the same table, so
        the error goes to the procedure (the trial is invalid and repeated there). With ``stream``, a command
        whose parser streams (:class:`~natbench.plugins.StreamingParser`) has its output parsed as it arrives
        when the executor can stream (:func:`~natbench.duts.steps.can_stream`): its record keeps the value, not the
        text.
        """

        def undo() -> StepResult:
            return self._run_step_once("teardown", check=False)

        return run_retrying(
            step,
            lambda: self._run_step_once(step, check=check, stream=stream),
            retries=self.step_retries,
            backoff=self.retry_backoff,
            dut=self.name,
            undo=undo if step == "setup" and self.recipe.has_step("teardown") else None,
        )

    def _run_step_once(self, step: str, *, check: bool, stream: bool = False) -> StepResult:
        if not self.recipe.has_step(step):
            return StepResult(step)
        self.outstanding.settle(step)
        variables = self.recipe.variables(self._params(), self._context())
        run = StepRun(
            step,
            self.name,
            self.recipe,
            self.executor,
            variables,
            check,
            self.saved,
            self.warnings,
            self.time_limits,
            self.outstanding,
        )
        return run.run(stream=stream, batch=self.batch)

    # -- the Dut protocol ---------------------------------------------------

    def swept_by(self, point: WorkingPoint) -> bool:
        """Whether ``point.cores`` applies to this DUT."""
        return point.swept_dut in (None, self.name)

    def setup(self, point: WorkingPoint) -> None:
        """Apply the recipe with this working point's parameters; on failure undo what was done."""
        if self._is_setup:
            self.teardown()
        merged = {**self.base_params, **point.dut_params.get(self.name, {})}
        self.params = self.recipe.resolve(merged, field_prefix=f"duts.{self.name}.params.")
        self.saved = {}
        self.warnings = []
        self._cores_swept = self.swept_by(point) and point.cores is not None
        self.cores = point.cores if self._cores_swept else self.fixed_cores
        self.table.connections = point.connections
        self._is_setup = True
        try:
            if self.recipe.has_step("prepare"):
                self.run_step("prepare")
            if self.cores is not None:
                self._set_cores(self.cores)
            self.run_step("setup")
            if self.recipe.has_step("rss"):
                self.run_step("rss")
            self._facts = self._collect_facts()
        except BaseException:
            try:
                self.teardown()
            except Exception as exc:  # the original error matters more
                log.warning("DUT %s: teardown after failed setup: %s", self.name, exc)
            raise

    def _set_cores(self, cores: int) -> None:
        warning = self._cores.apply(
            cores,
            swept=self._cores_swept,
            executor=self.executor,
            cpu_order=self.cpu_order,
            options=lambda: self.recipe.step_options("set_cores", self._params(), self._context()),
            run_commands=lambda: self.run_step("set_cores"),
        )
        if warning is not None:
            self.warnings.append(warning)

    def reset_connections(self) -> None:
        """Empty the connection table (the recipe's ``reset_connections`` step)."""
        self._need("reset_connections")
        self.run_step("reset_connections")

    def count_connections(self) -> int:
        """Connections in the table now (the first parsed value of ``count_connections``)."""
        self._need("count_connections")
        values = self.run_step("count_connections").values()
        if not values or isinstance(values[0], bool) or not isinstance(values[0], int):
            raise DutError(
                f"count_connections gave {values[:1]!r}, not a number", step="count_connections", dut=self.name
            )
        self.table.counted = values[0]
        return values[0]

    def timed_flush(self) -> float:
        """Seconds the DUT's own delete-all took, measured on the DUT."""
        self._need("timed_flush")
        return self.run_step("timed_flush").dut_seconds

    def mappings(self) -> MappingTable:
        """Translated tuples from ``show_mappings``, as one table: a streaming parser reads the listing as it
        arrives (natbench holds a few bytes per connection, never the text); any other parser's list of
        mappings is put into the table."""
        self._need("show_mappings")
        tables: list[MappingTable] = []
        for value in self.run_step("show_mappings", stream=True).values():
            if isinstance(value, MappingTable):
                tables.append(value)
            elif isinstance(value, list) and all(isinstance(m, Mapping) for m in value):
                tables.append(MappingTable.of(value))
            else:
                raise DutError("show_mappings parser did not give mappings", step="show_mappings", dut=self.name)
        return MappingTable.concat(tables)

    def facts(self) -> dict[str, Any]:
        """Recipe, access, versions, CPU, table/hash sizes (as read from the DUT), cores, warnings."""
        if not self._facts:
            self._facts = self._collect_facts()
        return dict(self._facts)

    def _collect_facts(self) -> dict[str, Any]:
        access, params = self.executor.description, self._params()
        measured = self.run_step("facts", check=False) if self.recipe.has_step("facts") else None
        return recipe_dut_facts(
            self.recipe,
            access,
            params,
            measured,
            cores=self._cores.facts,
            place=self.place_facts,
            warnings=self.warnings,
        )

    def teardown(self) -> None:
        """Run the teardown step and restore the CPU state; every part is tried, the first error is raised. A command
        still running past its limit is waited for first (:meth:`Outstanding.settle
        <natbench.duts.outstanding.Outstanding.settle>`): the teardown does not start beside it."""
        errors: list[BaseException] = []
        if self._is_setup and self.recipe.has_step("teardown"):
            try:
                self.run_step("teardown", check=False)
            except Exception as exc:
                errors.append(exc)
        elif self.outstanding.commands:
            try:
                self.outstanding.settle("teardown")
            except Exception as exc:
                errors.append(exc)
        try:
            self._cores.restore()
        except Exception as exc:
            errors.append(exc)
        self._is_setup = False
        if errors:
            raise errors[0]

    def _need(self, step: str) -> None:
        if not self.recipe.has_step(step):
            raise DutError(f"recipe {self.recipe.name} has no {step} step", step=step, dut=self.name)
        if self.recipe.steps[step].unsupported:
            raise DutError(f"unsupported on this DUT: {self.recipe.steps[step].unsupported}", step=step, dut=self.name)

    # -- memory -------------------------------------------------------------

    def memory_snapshot(self) -> dict[str, int]:
        """The :class:`~natbench.plugins.MeasuresMemory` hook: MemAvailable, MemTotal and the slab caches the
        recipe declares (``memory: slabs:``) where shown (bytes, one command;
        :func:`natbench.duts.monitor.read_memory`)."""
        from natbench.duts.monitor import read_memory

        return read_memory(self.executor, self.recipe.declarations().slabs)

    def declarations(self) -> dict[str, DutDeclarations]:
        """The :class:`~natbench.plugins.DeclaresRows` hook: what the recipe declares for reports (table and hash
        size parameters, slab caches)."""
        return {self.name: self.recipe.declarations()}

    def monitor(self, interval: float = 1.0, mode: str = "thread") -> Any:
        """A :class:`~natbench.duts.monitor.Monitor` sampling this DUT (use as a context manager)."""
        from natbench.duts.monitor import Monitor

        slabs = self.recipe.declarations().slabs
        return Monitor(self.executor, interval=interval, name=self.name, mode=mode, slabs=slabs)

    def start_monitor(self, interval: float = 1.0, mode: str | None = None) -> None:
        """Start sampling per-core idle time and memory (e.g. when a trial starts); ``mode``
        defaults to :attr:`monitor_mode`."""
        self.stop_monitor()
        self._monitor = self.monitor(interval, mode or self.monitor_mode).start()

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Stop sampling; ``{dut name: samples}`` to store with the trial ({} when not started)."""
        mon, self._monitor = self._monitor, None
        if mon is None:
            return {}
        samples = mon.stop()
        if mon.errors:
            self.warnings.extend(f"monitor: {e}" for e in mon.errors[:5])
        cpus = self.data_path_cpus()
        if cpus is not None:  # which of the sampled cores are this DUT's data path (the lab samples them all)
            samples = [{**smp, "data_path_cpus": cpus} for smp in samples]
        return {self.name: samples}

    def data_path_cpus(self) -> list[int] | None:
        """CPUs carrying the data path now: those the cores step made active, else :attr:`own_cpus`,
        else None (all CPUs of the DUT)."""
        active = self._cores.facts.get("cpus_active")
        if isinstance(active, list) and active:
            return [int(c) for c in active]
        return list(self.own_cpus) if self.own_cpus else None
