"""The step engine of a recipe DUT: a step's commands rendered, run on the DUT and read back.

A step runs once as a :class:`StepRun`, in one of three ways: *streamed* (a command whose parser reads its output as
it arrives has it parsed piece by piece), *batched* (the commands of one scope as one script: one round trip,
:mod:`natbench.duts.batch`) or *one by one*. Each command leaves a :class:`CommandRecord` (exit status, durations,
output, parsed value) in the step's :class:`StepResult`. How long a command may take is :class:`TimeLimits`'s answer,
and nowhere else: a command whose time grows with the connection table (its ``cost``) gets a limit scaled to the
table (:mod:`natbench.duts.tablework`), runs on its own (never inside a batch script) and, when it ends well, tells the
DUT how fast it did its work. A command that outlived its limit and still runs is handed to the DUT's
:class:`~natbench.duts.outstanding.Outstanding`. :func:`run_retrying` repeats a step after a dropped connection.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any

from natbench.duts.batch import batch_script, batch_token, read_batch
from natbench.duts.executors import DEFAULT_COMMAND_TIMEOUT, CommandFailed, CommandTimeout, ConnectionLost
from natbench.duts.outstanding import Outliving, Outstanding
from natbench.duts.parsers import get_parser
from natbench.duts.recipes import Command, Recipe, RenderedCommand
from natbench.duts.recipes.cost import TableWork
from natbench.duts.tablework import StepLimit, TableScale
from natbench.errors import DutError, DutStepFailed, RecipeError
from natbench.plugins import CommandResult, Executor, ParseError, ParseSink, StreamingParser, StreamsOutput

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


def can_stream(executor: Executor) -> bool:
    """Whether ``executor`` hands a command's output over as it arrives (:class:`~natbench.plugins.StreamsOutput`;
    a namespace executor only when the executor it wraps does)."""
    return isinstance(executor, StreamsOutput) and bool(getattr(executor, "streams", True))


@dataclass(frozen=True)
class TimeLimits:
    """How long a step's commands may take on the DUT: the one place a step's time limit is decided."""

    batch_share: float = 60.0
    """Seconds a batch script allows each of its commands that declares no ``timeout`` (when another does)."""
    table: TableScale | None = None
    """The DUT's table and the rates of its table work: the limits of the commands whose time grows with the table
    (None: their ``timeout`` too, as any command's)."""
    floor: float = DEFAULT_COMMAND_TIMEOUT
    """The executor's command timeout: the smallest limit of a command whose time grows with the table and that
    declares no ``timeout``."""

    def command(self, command: Command) -> float | None:
        """Seconds ``command`` may take: scaled to the table when its time grows with it (:meth:`scaled`), else the
        recipe's ``timeout:``; None: the executor's command timeout
        (:data:`~natbench.duts.executors.DEFAULT_COMMAND_TIMEOUT` unless the DUT's access sets another)."""
        scaled = self.scaled(command)
        return scaled.seconds if scaled is not None else command.timeout

    def scaled(self, command: Command) -> StepLimit | None:
        """The limit of a command whose time grows with the table (its ``cost``) and what it was set from; None for
        any other command."""
        if command.cost is None or self.table is None:
            return None
        return self.table.limit(command.cost, command.timeout if command.timeout is not None else self.floor)

    def batch(self, commands: Sequence[Command]) -> float | None:
        """Seconds one script of ``commands`` may take: the sum of their limits, :attr:`batch_share` for each without
        one; None (the executor's command timeout) when none has a limit of its own."""
        limits = [self.command(c) for c in commands]
        known = [t for t in limits if t is not None]
        return None if not known else sum(known) + self.batch_share * (len(limits) - len(known))


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


def batchable(commands: Sequence[Command]) -> bool:
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


def scope_groups(commands: list[RenderedCommand]) -> list[list[RenderedCommand]]:
    """Consecutive runs of commands with the same scope; a command whose time grows with the table (``cost``) is a
    group of its own (its limit, its process and its duration are its own)."""
    groups: list[list[RenderedCommand]] = []
    for rc in commands:
        last = groups[-1][-1].command if groups else None
        if last is not None and last.scope == rc.command.scope and last.cost is None and rc.command.cost is None:
            groups[-1].append(rc)
        else:
            groups.append([rc])
    return groups


@dataclass
class StepRun:
    """One run of one recipe step on one DUT: its commands rendered with ``variables``, run, checked and parsed.

    With ``check`` the first failing command raises (DutError, CommandFailed); without, a command that cannot be
    rendered is not run and a failure is a warning (in ``warnings``, after the step), and the step goes on. A
    dropped connection always raises (:class:`~natbench.duts.executors.ConnectionLost`).
    """

    step: str
    """The step's name."""
    dut: str
    """The DUT's name, for messages."""
    recipe: Recipe
    """The recipe the step is in."""
    executor: Executor
    """Runs the commands (its ``host()`` the commands of scope ``host``)."""
    variables: dict[str, Any]
    """The template variables (a command's ``save:`` adds its value, for the commands after it)."""
    check: bool
    """Raise on the first failure (else warn and go on)."""
    saved: dict[str, str]
    """The DUT's saved values, updated by each command with ``save:`` that succeeds."""
    warnings: list[str]
    """The DUT's warnings, to which this run adds its own."""
    limits: TimeLimits = field(default_factory=TimeLimits)
    """How long each command may take."""
    outstanding: Outstanding | None = None
    """The DUT's commands that outlived their limit and still run: one that does is added to it."""
    result: StepResult = field(init=False)
    """What the step did so far."""
    errors: list[DutError] = field(init=False, default_factory=list)
    """Failures tolerated without ``check`` (warnings once the step is done)."""

    def __post_init__(self) -> None:
        self.result = StepResult(self.step)

    def run(self, *, stream: bool = False, batch: bool = True) -> StepResult:
        """Run the step's commands: ``stream``: parse a streaming parser's output as it arrives; else ``batch``:
        as scripts of one round trip each, when no command needs a value saved before it in the same step."""
        commands = list(self.recipe.steps[self.step].commands)
        if stream:
            self._streamed(commands)
        elif batch and batchable(commands):
            self._batched(commands)
        else:
            self._one_by_one(commands)
        if self.errors:
            self.warnings.extend(str(e) for e in self.errors)
        return self.result

    # -- the three ways of running a step's commands

    def _one_by_one(self, commands: list[Command]) -> None:
        for cmd in commands:
            rc = self._render(cmd)
            if rc is not None:
                self._record(rc, self._execute(rc))

    def _streamed(self, commands: list[Command]) -> None:
        for cmd in commands:
            rc = self._render(cmd)
            if rc is None:
                continue
            parser = self._streaming_parser(rc)
            if parser is None:
                self._record(rc, self._execute(rc))
                continue
            try:
                record = self._execute_streaming(rc, parser)
                self.result.records.append(record)
                self._table_work_done(record)
            except DutError as exc:
                if self.check or isinstance(exc, ConnectionLost):
                    raise
                self.errors.append(exc)

    def _batched(self, commands: list[Command]) -> None:
        rendered = [rc for rc in map(self._render, commands) if rc is not None]
        for group in scope_groups(rendered):
            for rc, res in zip(group, self._execute_batch(group), strict=True):
                if res is None:  # not reached: an earlier command failed
                    return
                self._record(rc, res)

    # -- one command

    def _render(self, cmd: Command) -> RenderedCommand | None:
        try:
            return self.recipe.render_command(self.step, cmd, self.variables)
        except RecipeError as exc:  # e.g. a teardown value that setup never saved
            if self.check:
                raise
            self.warnings.append(f"step {self.step}: not run: {exc}")
            return None

    def _record(self, rc: RenderedCommand, res: CommandResult) -> None:
        try:
            record = self._finish(rc, res)
        except DutError as exc:
            if self.check:
                raise
            self.errors.append(exc)
            return
        self.result.records.append(record)
        self._table_work_done(record)
        if rc.command.save is not None and record.returncode == 0:
            self.saved[rc.command.save] = record.stdout.strip()
            self.variables[rc.command.save] = self.saved[rc.command.save]

    def _finish(self, rc: RenderedCommand, res: CommandResult) -> CommandRecord:
        """The record of a command that ran: its timing line read, its exit status checked, its output parsed."""
        cmd = rc.command
        stdout = res.stdout
        dut_seconds = None
        if cmd.timed:
            try:
                stdout, dut_seconds = _split_timing(stdout, self.recipe.clock)
            except DutError as exc:
                if res.returncode == 0:
                    raise DutError(str(exc), step=rc.step, dut=self.dut) from None
        if res.returncode != 0:
            if not cmd.ignore_errors:
                failed = CommandResult(rc.text, res.returncode, stdout, res.stderr, res.duration)
                raise CommandFailed(failed, hint=cmd.error, step=rc.step, dut=self.dut)
            self.warnings.append(f"step {rc.step}: ignored exit status {res.returncode} of: {rc.text}")
        value = self._parsed(rc, stdout) if cmd.parse is not None and res.returncode == 0 else None
        return CommandRecord(rc.text, res.returncode, res.duration, dut_seconds, value, stdout, res.stderr, cmd)

    def _table_work_done(self, record: CommandRecord) -> None:
        """A command whose time grows with the table ended well: tell the DUT's table what it did and how fast."""
        cmd, table = record.source, self.limits.table
        if cmd is None or cmd.cost is None or table is None or record.returncode != 0:
            return
        seconds = record.dut_seconds if record.dut_seconds is not None else record.duration
        listed = len(record.value) if isinstance(record.value, Sized) else None
        limit = self.limits.scaled(cmd)  # before the table learns from this command
        table.done(cmd.cost, seconds, listed)
        if limit is not None:
            log.info("DUT %s step %s: %s took %.3f s (%s)", self.dut, self.step, record.command, seconds, limit.words())

    def _parsed(self, rc: RenderedCommand, stdout: str) -> Any:
        """The value the command's parser reads from ``stdout`` (its ``select`` key, when it names one)."""
        cmd = rc.command
        assert cmd.parse is not None
        try:
            value = get_parser(cmd.parse)(stdout)
        except (ParseError, DutError, ValueError, KeyError, IndexError) as exc:
            raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.dut) from None
        if cmd.select is None:
            return value
        if not isinstance(value, dict) or cmd.select not in value:
            missing = f"parser {cmd.parse} gave no {cmd.select!r} (command: {rc.text})"
            raise DutError(missing, step=rc.step, dut=self.dut)
        return value[cmd.select]

    def _streaming_parser(self, rc: RenderedCommand) -> StreamingParser | None:
        """The command's parser when its output can be parsed as it arrives: a streaming parser, no ``select``,
        not timed, an executor that streams."""
        cmd = rc.command
        if cmd.parse is None or cmd.select is not None or cmd.timed or cmd.save is not None:
            return None
        if not can_stream(self._executor_of(cmd)):
            return None
        try:
            parser = get_parser(cmd.parse)
        except KeyError:
            return None
        return parser if isinstance(parser, StreamingParser) else None

    # -- running on the DUT

    def _executor_of(self, cmd: Command) -> Executor:
        return self.executor.host() if cmd.scope == "host" else self.executor

    def _shell_text(self, rc: RenderedCommand) -> str:
        return timed_wrapper(rc.text, self.recipe.clock) if rc.command.timed else rc.text

    def _execute(self, rc: RenderedCommand) -> CommandResult:
        executor = self._executor_of(rc.command)
        log.debug("DUT %s step %s: %s", self.dut, rc.step, rc.text)
        started = time.monotonic()
        try:
            return executor.run(self._shell_text(rc), timeout=self.limits.command(rc.command))
        except ConnectionLost:
            raise
        except CommandTimeout as exc:
            raise self._outlived(rc, exc, started, self.limits.command(rc.command), f"(command: {rc.text})") from None
        except DutError as exc:
            raise _same_kind(exc, f"{exc} (command: {rc.text})", step=rc.step, dut=self.dut) from None

    def _outlived(
        self, rc: RenderedCommand, exc: CommandTimeout, started: float, limit: float | None, what: str
    ) -> DutStepFailed:
        """The error of a command (or batch, from ``rc`` on) that did not finish within ``limit`` (None: the
        executor's), saying which limit and why; one still running is handed to the DUT's :attr:`outstanding`."""
        cmd = rc.command
        scaled = self.limits.scaled(cmd)
        why = f" ({scaled.words()})" if scaled is not None else ""
        tail = ""
        table = self.limits.table
        if exc.running is not None and self.outstanding is not None:
            allowed = limit if limit is not None else self.limits.floor
            outliving = Outliving(rc.step, rc.text, exc.running, allowed, started, time.monotonic(), cmd.cost)
            self.outstanding.add(outliving)
            tail = (
                "; no step of this DUT starts before it has ended: natbench waits for it as long again as its limit, "
                "then kills it"
            )
        elif table is not None and cmd.cost is TableWork.DELETE:
            table.counted = None  # stopped half-way: what is left is not known
        return DutStepFailed(f"{exc}{why}{tail} {what}", step=rc.step, dut=self.dut)

    def _execute_streaming(self, rc: RenderedCommand, parser: StreamingParser) -> CommandRecord:
        """Run ``rc`` with its output streamed into ``parser``: the record holds the parsed value, no text."""
        cmd = rc.command
        executor = self._executor_of(cmd)
        assert isinstance(executor, StreamsOutput)
        sink: ParseSink = parser.stream()
        log.debug("DUT %s step %s (streamed): %s", self.dut, rc.step, rc.text)
        started = time.monotonic()
        try:
            res = executor.run_streaming(rc.text, sink.feed, timeout=self.limits.command(cmd))
        except ConnectionLost:
            raise
        except CommandTimeout as exc:
            raise self._outlived(rc, exc, started, self.limits.command(rc.command), f"(command: {rc.text})") from None
        except (ParseError, DutError) as exc:
            raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.dut) from None
        value = None
        if res.returncode != 0:
            if not cmd.ignore_errors:
                raise CommandFailed(res, hint=cmd.error, step=rc.step, dut=self.dut)
            self.warnings.append(f"step {rc.step}: ignored exit status {res.returncode} of: {rc.text}")
        else:
            try:
                value = sink.finish()
            except (ParseError, ValueError) as exc:
                raise DutError(f"{exc} (command: {rc.text})", step=rc.step, dut=self.dut) from None
        return CommandRecord(rc.text, res.returncode, res.duration, None, value, "", res.stderr, cmd)

    def _execute_batch(self, group: list[RenderedCommand]) -> list[CommandResult | None]:
        """Run consecutive commands of one scope as one script (one round trip); per-command stdout, stderr and
        exit status come back between random markers (None: a command the script did not reach)."""
        if len(group) == 1:
            return [self._execute(group[0])]
        for rc in group:
            log.debug("DUT %s step %s: %s", self.dut, rc.step, rc.text)
        token = batch_token()
        commands = [(self._shell_text(rc), self.check and not rc.command.ignore_errors) for rc in group]
        script = batch_script(token, commands)
        step, limit = group[0].step, self.limits.batch([rc.command for rc in group])
        started = time.monotonic()
        what = f"(batch of {len(group)} commands from: {group[0].text})"
        try:
            res = self._executor_of(group[0].command).run(script, timeout=limit)
        except ConnectionLost:
            raise
        except CommandTimeout as exc:
            raise self._outlived(group[0], exc, started, limit, what) from None
        except DutError as exc:
            raise _same_kind(exc, f"{exc} {what}", step=step, dut=self.dut) from None
        output = read_batch(res.stdout, res.stderr, token)
        out: list[CommandResult | None] = []
        per = res.duration / max(1, len(output.stdout))
        for i, rc in enumerate(group):
            if i in output.stdout:
                stdout, code = output.stdout[i]
                out.append(CommandResult(self._shell_text(rc), code, stdout, output.stderr.get(i, ""), per))
            elif out and (out[-1] is None or out[-1].returncode != 0):
                out.append(None)  # the script stopped at the failure before
            else:
                raise DutError(
                    f"batch output is incomplete at command {i + 1} of {len(group)} (exit status {res.returncode}; "
                    f"stderr: {res.stderr.strip()[-300:]!r}): {rc.text}",
                    step=step,
                    dut=self.dut,
                )
        return out


def _same_kind(exc: DutError, message: str, *, step: str, dut: str) -> DutError:
    """``exc`` again with ``message`` (the step and the DUT named): a step that did not do its work stays one."""
    kind = DutStepFailed if isinstance(exc, DutStepFailed) else DutError
    return kind(message, step=step, dut=dut)


def run_retrying(
    step: str,
    once: Callable[[], StepResult],
    *,
    retries: int,
    backoff: float,
    dut: str,
    undo: Callable[[], object] | None = None,
) -> StepResult:
    """``once()`` (a run of ``step``); after a dropped connection (the executor reconnects, with backoff) again, up to
    ``retries`` times, calling ``undo`` first when given (``setup``: tearing down what it had done). A step of
    :data:`NOT_RETRIED` is not repeated: the error goes to the caller."""
    attempt = 0
    pending_undo = False
    while True:
        try:
            if pending_undo and undo is not None:
                undo()
                pending_undo = False
            return once()
        except ConnectionLost as exc:
            if step in NOT_RETRIED or attempt >= retries:
                why = (
                    "not retried: the step is a measurement"
                    if step in NOT_RETRIED
                    else f"gave up after {attempt + 1} attempts"
                )
                raise DutError(f"{exc} ({why})", step=step, dut=dut) from None
            attempt += 1
            log.warning("DUT %s: %s; retrying step %s (attempt %d)", dut, exc, step, attempt + 1)
            time.sleep(backoff * attempt)
            pending_undo = undo is not None
