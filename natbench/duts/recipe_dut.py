"""A DUT driven by a recipe through an executor, and a group of DUTs acting as one.

:class:`RecipeDut` implements the :class:`~natbench.plugins.Dut` protocol: ``setup``
renders the recipe's steps with the working point's parameters and runs them in order
(stopping at the first failing command with an error naming the step and command);
``timed_flush`` times the DUT's own delete-all command on the DUT itself (a shell
wrapper reads the DUT's clock before and after); ``teardown`` runs the teardown step
and restores the CPU state. A dropped SSH connection is re-established and the step is
retried (``setup`` after tearing down what it had done).
"""

from __future__ import annotations

import logging
import re
import secrets
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from natbench.duts.cores import LinuxCores
from natbench.duts.executors import CommandFailed, ConnectionLost
from natbench.duts.parsers import get_parser
from natbench.duts.recipes import Command, Recipe, RenderedCommand
from natbench.errors import DutError, RecipeError
from natbench.plugins import (
    CommandResult,
    DutDeclarations,
    Executor,
    Mapping,
    MappingTable,
    ParseError,
    ParseSink,
    StreamingParser,
    StreamsOutput,
)
from natbench.workingpoint import WorkingPoint

__all__ = ["CommandRecord", "DutGroup", "RecipeDut", "StepResult", "can_stream", "timed_wrapper"]

log = logging.getLogger(__name__)

TIMING_MARK = "__natbench_timing__"
NOT_RETRIED = ("timed_flush",)
"""Steps not repeated after a dropped connection (their result is a measurement)."""
_TIMING_LINE = re.compile(rf"^{TIMING_MARK} (\S*) (\S*) (\S*)\s*$", re.M)


def timed_wrapper(command: str, clock: str) -> str:
    """Shell text running ``command`` between two readings of the DUT's ``clock``.

    The last output line is ``__natbench_timing__ T0 T1 RC``; the exit status is the command's.
    """
    return (
        f"__nb_t0=$({clock}); {{ {command}\n}}; __nb_rc=$?; __nb_t1=$({clock}); "
        f'printf \'\\n{TIMING_MARK} %s %s %s\\n\' "$__nb_t0" "$__nb_t1" "$__nb_rc"; exit $__nb_rc'
    )


def can_stream(executor: Executor) -> bool:
    """Whether ``executor`` hands a command's output over as it arrives (:class:`~natbench.plugins.StreamsOutput`;
    a namespace executor only when the executor it wraps does)."""
    return isinstance(executor, StreamsOutput) and bool(getattr(executor, "streams", True))


def _scope_groups(commands: list[RenderedCommand]) -> list[list[RenderedCommand]]:
    """Consecutive runs of commands with the same scope."""
    groups: list[list[RenderedCommand]] = []
    for rc in commands:
        if groups and groups[-1][-1].command.scope == rc.command.scope:
            groups[-1].append(rc)
        else:
            groups.append([rc])
    return groups


def _split_timing(stdout: str, clock: str) -> tuple[str, float]:
    matches = list(_TIMING_LINE.finditer(stdout))
    if not matches:
        raise DutError(f"timed command printed no timing line (clock command {clock!r})", step="timed_flush")
    m = matches[-1]
    try:
        t0, t1 = float(m.group(1)), float(m.group(2))
    except ValueError:
        raise DutError(
            f"the DUT's clock command {clock!r} did not print seconds ({m.group(1)!r}, {m.group(2)!r}); "
            "set 'clock:' in the recipe to a command that does",
            step="timed_flush",
        ) from None
    rest = stdout[: m.start()].rstrip("\n")
    return rest, t1 - t0


@dataclass
class CommandRecord:
    """One executed command of a step."""

    command: str
    """The rendered command line."""
    returncode: int
    """Exit status."""
    duration: float
    """Seconds as seen by natbench (transport included)."""
    dut_seconds: float | None = None
    """Seconds measured on the DUT (``timed`` commands)."""
    value: Any = None
    """Parsed (and selected) value, when the command declares a parser."""
    stdout: str = ""
    """Standard output (timing line removed)."""
    stderr: str = ""
    """Standard error."""
    source: Command | None = None
    """The recipe command it was rendered from."""


@dataclass
class StepResult:
    """What a step did."""

    step: str
    """Step name."""
    records: list[CommandRecord] = field(default_factory=list)
    """Every command run, in order."""

    def values(self) -> list[Any]:
        """Parsed values of the commands that declare a parser, in order."""
        return [r.value for r in self.records if r.value is not None]

    @property
    def dut_seconds(self) -> float:
        """Sum of the DUT-side durations of the timed commands."""
        return sum(r.dut_seconds for r in self.records if r.dut_seconds is not None)


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
        self._cores: LinuxCores | None = None
        self._core_facts: dict[str, Any] = {}
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
        ctx["cpus"] = self._core_facts.get("cpus_active", [])
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
        when the executor can stream (:func:`can_stream`): its record keeps the value, not the text.
        """
        attempt = 0
        pending_teardown = False
        while True:
            try:
                if pending_teardown:
                    self._run_step_once("teardown", check=False)
                    pending_teardown = False
                return self._run_step_once(step, check=check, stream=stream)
            except ConnectionLost as exc:
                if step in NOT_RETRIED or attempt >= self.step_retries:
                    why = (
                        "not retried: the step is a measurement"
                        if step in NOT_RETRIED
                        else f"gave up after {attempt + 1} attempts"
                    )
                    raise DutError(f"{exc} ({why})", step=step, dut=self.name) from None
                attempt += 1
                log.warning("DUT %s: %s; retrying step %s (attempt %d)", self.name, exc, step, attempt + 1)
                time.sleep(self.retry_backoff * attempt)
                if step == "setup" and self.recipe.has_step("teardown"):
                    pending_teardown = True

    def _run_step_once(self, step: str, *, check: bool, stream: bool = False) -> StepResult:
        result = StepResult(step)
        if not self.recipe.has_step(step):
            return result
        params = self._params()
        variables = self.recipe.variables(params, self._context())
        commands = list(self.recipe.steps[step].commands)
        errors: list[DutError] = []
        if stream:
            for cmd in commands:
                rc = self._render(step, cmd, variables, check)
                if rc is None:
                    continue
                parser = self._streaming_parser(rc)
                if parser is None:
                    self._record(rc, self._execute(rc), result, variables, errors, check)
                    continue
                try:
                    result.records.append(self._execute_streaming(rc, parser))
                except DutError as exc:
                    if check or isinstance(exc, ConnectionLost):
                        raise
                    errors.append(exc)
        elif self.batch and self._batchable(commands):
            rendered: list[RenderedCommand] = []
            for cmd in commands:
                rc = self._render(step, cmd, variables, check)
                if rc is not None:
                    rendered.append(rc)
            for group in _scope_groups(rendered):
                outcomes = self._execute_batch(group, check)
                stopped = False
                for rc, res in zip(group, outcomes, strict=True):
                    if res is None:  # not reached: an earlier command failed
                        stopped = True
                        break
                    self._record(rc, res, result, variables, errors, check)
                if stopped:
                    break
        else:
            for cmd in commands:
                rc = self._render(step, cmd, variables, check)
                if rc is None:
                    continue
                self._record(rc, self._execute(rc), result, variables, errors, check)
        if errors:
            self.warnings.extend(str(e) for e in errors)
        return result

    def _render(self, step: str, cmd: Command, variables: dict[str, Any], check: bool) -> RenderedCommand | None:
        try:
            return self.recipe.render_command(step, cmd, variables)
        except RecipeError as exc:  # e.g. a teardown value that setup never saved
            if check:
                raise
            self.warnings.append(f"step {step}: not run: {exc}")
            return None

    def _record(
        self,
        rc: RenderedCommand,
        res: CommandResult,
        result: StepResult,
        variables: dict[str, Any],
        errors: list[DutError],
        check: bool,
    ) -> None:
        try:
            record = self._finish(rc, res)
        except DutError as exc:
            if check:
                raise
            errors.append(exc)
            return
        result.records.append(record)
        if rc.command.save is not None and record.returncode == 0:
            self.saved[rc.command.save] = record.stdout.strip()
            variables[rc.command.save] = self.saved[rc.command.save]

    def _batchable(self, commands: list[Command]) -> bool:
        """A step can go as one script unless a command needs a value saved earlier in the same step."""
        saved: set[str] = set()
        for cmd in commands:
            if saved:
                texts = [cmd.run, cmd.netns or "", cmd.when or ""]
                if any(re.search(rf"\b{re.escape(name)}\b", t) for name in saved for t in texts):
                    return False
            if cmd.save:
                saved.add(cmd.save)
        return True

    def _streaming_parser(self, rc: RenderedCommand) -> StreamingParser | None:
        """The command's parser when its output can be parsed as it arrives: a streaming parser, no ``select``,
        not timed, an executor that streams."""
        cmd = rc.command
        if cmd.parse is None or cmd.select is not None or cmd.timed or cmd.save is not None:
            return None
        executor = self.executor.host() if cmd.scope == "host" else self.executor
        if not can_stream(executor):
            return None
        try:
            parser = get_parser(cmd.parse)
        except KeyError:
            return None
        return parser if isinstance(parser, StreamingParser) else None

    def _execute_streaming(self, rc: RenderedCommand, parser: StreamingParser) -> CommandRecord:
        """Run ``rc`` with its output streamed into ``parser``: the record holds the parsed value, no text."""
        cmd = rc.command
        executor = self.executor.host() if cmd.scope == "host" else self.executor
        assert isinstance(executor, StreamsOutput)
        sink: ParseSink = parser.stream()
        log.debug("DUT %s step %s (streamed): %s", self.name, rc.step, rc.text)
        try:
            res = executor.run_streaming(rc.text, sink.feed, timeout=cmd.timeout)
        except ConnectionLost:
            raise
        except ParseError as exc:
            raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.name) from None
        except DutError as exc:
            raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.name) from None
        value = None
        if res.returncode != 0:
            if not cmd.ignore_errors:
                raise CommandFailed(res, hint=cmd.error, step=rc.step, dut=self.name)
            self.warnings.append(f"step {rc.step}: ignored exit status {res.returncode} of: {rc.text}")
        else:
            try:
                value = sink.finish()
            except (ParseError, ValueError) as exc:
                raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.name) from None
        return CommandRecord(rc.text, res.returncode, res.duration, None, value, "", res.stderr, cmd)

    def _shell_text(self, rc: RenderedCommand) -> str:
        return timed_wrapper(rc.text, self.recipe.clock) if rc.command.timed else rc.text

    def _execute(self, rc: RenderedCommand) -> CommandResult:
        executor = self.executor.host() if rc.command.scope == "host" else self.executor
        log.debug("DUT %s step %s: %s", self.name, rc.step, rc.text)
        try:
            return executor.run(self._shell_text(rc), timeout=rc.command.timeout)
        except ConnectionLost:
            raise
        except DutError as exc:
            raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.name) from None

    def _execute_batch(self, group: list[RenderedCommand], check: bool) -> list[CommandResult | None]:
        """Run consecutive commands of one scope as one script (one round trip); per-command
        stdout, stderr and exit status come back between random markers."""
        if len(group) == 1:
            return [self._execute(group[0])]
        token = "@@natbench-" + secrets.token_hex(6)
        parts = []
        for i, rc in enumerate(group):
            log.debug("DUT %s step %s: %s", self.name, rc.step, rc.text)
            parts.append(
                f"printf '%s\\n' '{token} o {i}'; printf '%s\\n' '{token} e {i}' >&2; "
                f"sh -c {shlex.quote(self._shell_text(rc))} </dev/null; __nb=$?; "
                f"printf '\\n%s %s\\n' '{token} x {i}' \"$__nb\"; printf '\\n' >&2"
            )
            if check and not rc.command.ignore_errors:
                parts.append('[ "$__nb" -eq 0 ] || exit 0')
        timeouts = [rc.command.timeout for rc in group if rc.command.timeout is not None]
        limit = None if not timeouts else sum(timeouts) + 60.0 * (len(group) - len(timeouts))
        executor = self.executor.host() if group[0].command.scope == "host" else self.executor
        step = group[0].step
        try:
            res = executor.run("\n".join(parts), timeout=limit)
        except ConnectionLost:
            raise
        except DutError as exc:
            raise DutError(
                f"{exc} (batch of {len(group)} commands from: {group[0].text})", step=step, dut=self.name
            ) from None
        outs = {
            int(m.group(1)): (m.group(2), int(m.group(3)))
            for m in re.finditer(rf"^{token} o (\d+)\n(.*?)\n{token} x \1 (-?\d+)$", res.stdout, re.S | re.M)
        }
        errs: dict[int, str] = {}
        pieces = re.split(rf"^{token} e (\d+)\n", res.stderr, flags=re.M)
        for j in range(1, len(pieces) - 1, 2):
            text = pieces[j + 1]
            errs[int(pieces[j])] = text[:-1] if text.endswith("\n") else text
        out: list[CommandResult | None] = []
        per = res.duration / max(1, len(outs))
        for i, rc in enumerate(group):
            if i not in outs:
                if out and out[-1] is not None and out[-1].returncode != 0:
                    out.append(None)  # the script stopped at the failure before
                    continue
                if out and out[-1] is None:
                    out.append(None)
                    continue
                raise DutError(
                    f"batch output is incomplete at command {i + 1} of {len(group)} (exit status {res.returncode}; "
                    f"stderr: {res.stderr.strip()[-300:]!r}): {rc.text}",
                    step=step,
                    dut=self.name,
                )
            stdout, code = outs[i]
            out.append(CommandResult(self._shell_text(rc), code, stdout, errs.get(i, ""), per))
        return out

    def _finish(self, rc: RenderedCommand, res: CommandResult) -> CommandRecord:
        cmd = rc.command
        stdout = res.stdout
        dut_seconds = None
        if cmd.timed:
            try:
                stdout, dut_seconds = _split_timing(stdout, self.recipe.clock)
            except DutError as exc:
                if res.returncode == 0:
                    raise DutError(str(exc), step=rc.step, dut=self.name) from None
        if res.returncode != 0:
            if cmd.ignore_errors:
                self.warnings.append(f"step {rc.step}: ignored exit status {res.returncode} of: {rc.text}")
            else:
                failed = CommandResult(rc.text, res.returncode, stdout, res.stderr, res.duration)
                raise CommandFailed(failed, hint=cmd.error, step=rc.step, dut=self.name)
        value = None
        if cmd.parse is not None and res.returncode == 0:
            try:
                value = get_parser(cmd.parse)(stdout)
            except (ParseError, DutError, ValueError, KeyError, IndexError) as exc:
                raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.name) from None
            if cmd.select is not None:
                if not isinstance(value, dict) or cmd.select not in value:
                    raise DutError(
                        f"parser {cmd.parse} gave no {cmd.select!r} (command: {rc.text})", step=rc.step, dut=self.name
                    )
                value = value[cmd.select]
        return CommandRecord(rc.text, res.returncode, res.duration, dut_seconds, value, stdout, res.stderr, cmd)

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
        step = self.recipe.steps.get("set_cores")
        if step is None:
            raise DutError(
                f"the working point asks for {cores} cores but recipe {self.recipe.name} has no set_cores step",
                step="set_cores",
                dut=self.name,
            )
        if step.unsupported is not None:
            if not self._cores_swept:
                # a fixed core count (the DUT's size in the campaign), not a swept one: record it honestly
                self.warnings.append(f"step set_cores: {cores} cores requested but not applied: {step.unsupported}")
                self._core_facts = {"cores_requested": cores, "cores_method": "none (unsupported)"}
                return
            raise DutError(f"cannot set cores on this DUT: {step.unsupported}", step="set_cores", dut=self.name)
        if step.builtin == "linux-cores":
            opts = self.recipe.step_options("set_cores", self._params(), self._context())
            self._cores = LinuxCores(
                self.executor,
                interfaces=opts.get("interfaces"),
                method=opts.get("method", "auto"),
                cpu_order=self.cpu_order,
            )
            try:
                state = self._cores.apply(cores)
            except DutError as exc:
                raise DutError(str(exc), step="set_cores", dut=self.name) from None
            self._core_facts = state.facts()
        if step.commands:
            self.run_step("set_cores")
        if not self._core_facts:
            self._core_facts = {"cores_method": "recipe commands", "cores_requested": cores}

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
        facts: dict[str, Any] = {
            "recipe": self.recipe.name,
            "implementation": self.recipe.implementation,
            "access": self.executor.description,
            "params": {
                k: (str(v) if not isinstance(v, int | float | bool | str | list | type(None)) else v)
                for k, v in self._params().items()
            },
        }
        if self.recipe.has_step("facts"):
            res = self.run_step("facts", check=False)
            for rec in res.records:
                if rec.value is None:
                    continue
                key = rec.source.as_ if rec.source is not None else None
                if key:
                    facts[key] = rec.value
                elif isinstance(rec.value, dict):
                    facts.update(rec.value)
        facts.update(self._core_facts)
        facts.update(self.place_facts)
        step = self.recipe.steps.get("set_cores")
        if step is not None and step.unsupported:
            facts["cores_unsupported"] = step.unsupported
        if self.warnings:
            facts["warnings"] = list(self.warnings)
        return facts

    def teardown(self) -> None:
        """Run the teardown step and restore the CPU state; every part is tried, the first error is raised."""
        errors: list[BaseException] = []
        if self._is_setup and self.recipe.has_step("teardown"):
            try:
                self.run_step("teardown", check=False)
            except Exception as exc:
                errors.append(exc)
        if self._cores is not None:
            try:
                self._cores.restore()
            except Exception as exc:
                errors.append(exc)
            self._cores = None
        self._core_facts = {}
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
        active = self._core_facts.get("cpus_active")
        if isinstance(active, list) and active:
            return [int(c) for c in active]
        return list(self.own_cpus) if self.own_cpus else None


class DutGroup:
    """Several DUTs acting as one (dual-DUT IPv4aaS: CE + PE).

    Set up in order, torn down in reverse; counts, flushes and mappings come from the
    stateful member(s) (by default those whose recipe is ``stateful``). Like :class:`RecipeDut` it has the
    optional :class:`~natbench.plugins.MonitorsCpu` hook (every member is sampled), not
    :class:`~natbench.plugins.ReportsSupport`.
    """

    def __init__(self, duts: list[RecipeDut], *, stateful: list[str] | None = None) -> None:
        if not duts:
            raise ValueError("a DUT group needs at least one DUT")
        names = [d.name for d in duts]
        if len(set(names)) != len(names):
            raise ValueError(f"DUT names must be unique: {names}")
        self.duts = list(duts)
        chosen = stateful if stateful is not None else [d.name for d in duts if d.recipe.stateful]
        unknown = set(chosen) - set(names)
        if unknown:
            raise ValueError(f"unknown stateful DUT(s): {sorted(unknown)}")
        self.stateful = [d for d in duts if d.name in chosen]

    def members(self) -> list[RecipeDut]:
        """All member DUTs in setup order."""
        return list(self.duts)

    def setup(self, point: WorkingPoint) -> None:
        """Set up every DUT in order; if one fails, tear down those already set up (reverse order)."""
        done: list[RecipeDut] = []
        try:
            for dut in self.duts:
                dut.setup(point)
                done.append(dut)
        except BaseException:
            for dut in reversed(done):
                try:
                    dut.teardown()
                except Exception as exc:
                    log.warning("DUT %s: teardown after failed group setup: %s", dut.name, exc)
            raise

    def _need_stateful(self, what: str) -> list[RecipeDut]:
        if not self.stateful:
            raise DutError(f"no stateful DUT in the group to {what}")
        return self.stateful

    def reset_connections(self) -> None:
        """Empty the tables of the stateful DUTs."""
        for dut in self._need_stateful("reset"):
            dut.reset_connections()

    def count_connections(self) -> int:
        """Sum of the stateful DUTs' connection counts."""
        return sum(d.count_connections() for d in self._need_stateful("count connections of"))

    def timed_flush(self) -> float:
        """Sum of the stateful DUTs' DUT-timed flushes (run one after another)."""
        return sum(d.timed_flush() for d in self._need_stateful("flush"))

    def mappings(self) -> MappingTable:
        """Mappings of the stateful DUTs, concatenated."""
        return MappingTable.concat([d.mappings() for d in self._need_stateful("read mappings of")])

    def facts(self) -> dict[str, Any]:
        """``{dut name: facts}``."""
        return {d.name: d.facts() for d in self.duts}

    def swept(self, point: WorkingPoint) -> list[str]:
        """Names of the members whose cores ``point.cores`` sets (the others keep their fixed cores)."""
        return [d.name for d in self.duts if d.swept_by(point)]

    def declarations(self) -> dict[str, DutDeclarations]:
        """The :class:`~natbench.plugins.DeclaresRows` hook of the group: each member's recipe's declarations."""
        out: dict[str, DutDeclarations] = {}
        for d in self.duts:
            out.update(d.declarations())
        return out

    def memory_snapshot(self) -> dict[str, int]:
        """The :class:`~natbench.plugins.MeasuresMemory` hook of the group: each key summed over the members that
        show it (the group is measured as one stateful box, seed 004 section 2.2, so its memory per connection is
        what all its devices together spend; ``mem_total`` is the members' memory together). One round trip per
        member; a member that cannot be read fails the whole snapshot (a partial sum would understate it)."""
        out: dict[str, int] = {}
        for d in self.duts:
            for key, value in d.memory_snapshot().items():
                out[key] = out.get(key, 0) + int(value)
        return out

    def start_monitor(self, interval: float = 1.0) -> None:
        """Start sampling every member DUT (each is monitored: seed 004 finds the bottleneck this way)."""
        for d in self.duts:
            d.start_monitor(interval)

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Stop sampling; ``{dut name: samples}`` for every member."""
        out: dict[str, list[dict[str, Any]]] = {}
        for d in self.duts:
            out.update(d.stop_monitor())
        return out

    def teardown(self) -> None:
        """Tear down in reverse order; every DUT is tried, the first error is raised."""
        errors: list[BaseException] = []
        for dut in reversed(self.duts):
            try:
                dut.teardown()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
