"""Observers of a run: the :class:`Observer` hooks, a rich progress display and a logging observer.

The runner and the orchestrator never print: they tell :class:`Observer` objects what
happens. The CLI attaches :class:`RichProgress` and :class:`LoggingObserver`; both are plain
:class:`Observer` subclasses and can be combined (:class:`Fanout`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.eta import Countdown, format_eta
from natbench.run.format import reported_factor, reported_unit
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.run.spec import RunSpec


log = logging.getLogger("natbench.run")


class Observer:
    """Receives the runner's events; override what you need (every hook is a no-op here).

    Observers must not raise: an exception from an observer aborts the run like any other error.
    """

    def on_run_start(self, run_dir: Path, spec: RunSpec, done: int) -> None:
        """The run starts (or resumes with ``done`` repetitions already stored)."""

    def on_point_start(self, point: WorkingPoint, index: int, total: int, repetitions: int) -> None:
        """A working point starts; ``repetitions`` are pending at it."""

    def on_repetition_start(self, point: WorkingPoint, metric: str, repetition: int) -> None:
        """One repetition of one metric starts."""

    def on_activity(self, what: str, seconds: float | None) -> None:
        """A long activity starts within a repetition (a fill of N connections, a flush): ``what`` says what,
        ``seconds`` how long it should take (None: unknown)."""

    def on_step(self, record: TrialRecord) -> None:
        """A trial was stored."""

    def on_result(self, result: RepetitionResult) -> None:
        """A repetition finished and its result was stored."""

    def on_point_end(self, point: WorkingPoint, error: BaseException | None) -> None:
        """A working point ended (the DUT was torn down); ``error`` when it ended by an exception."""

    def on_warning(self, message: str) -> None:
        """Something worth telling the user that did not stop the run (e.g. a teardown error after a failure)."""

    def on_run_end(self, status: str, error: BaseException | None) -> None:
        """The run ended with ``status`` (complete or failed)."""


class Fanout(Observer):
    """Passes every event to several observers, in order."""

    def __init__(self, observers: Iterable[Observer]) -> None:
        self.observers = list(observers)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):
            obs = object.__getattribute__(self, "observers")

            def call(*args: Any, **kwargs: Any) -> None:
                for o in obs:
                    getattr(o, name)(*args, **kwargs)

            return call
        return object.__getattribute__(self, name)


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def format_record(r: TrialRecord) -> str:
    """One line describing a stored trial."""
    parts = [f"{r.metric}#{r.repetition} step {r.step} {r.kind}"]
    if r.intended_rate:
        parts.append(f"@ {_rate(r.intended_rate)}/s")
    if r.lower is not None and r.upper is not None:
        parts.append(f"[{_rate(r.lower)}, {_rate(r.upper)}]")
    if r.value is not None:
        parts.append(f"value {r.value:.6g}")
    parts.append(str(r.verdict).upper())
    if r.reason:
        parts.append(f"({r.reason})")
    return " ".join(parts)


def format_result(r: RepetitionResult) -> str:
    """One line describing a finished repetition."""
    if r.value is None and r.extra.get("no_passing_rate"):
        return (
            f"{r.metric}#{r.repetition}: no passing rate within [{_rate(r.extra['lower'])}, {_rate(r.extra['upper'])}]"
        )
    if r.value is None:
        return f"{r.metric}#{r.repetition}: FAILED ({r.extra.get('failed', 'no value')})"
    factor = reported_factor(r.unit, r.value, r.extra)  # as the tables: all frames of bidirectional traffic
    # the search error as the search ran (per direction), like the tables' error row: not scaled
    err = f" (error {r.error:,.0f})" if r.error is not None else ""
    return f"{r.metric}#{r.repetition}: {r.value * factor:,.6g} {reported_unit(r.unit, factor)}{err}"


class LoggingObserver(Observer):
    """Writes run events to the ``natbench.run`` logger (steps at DEBUG, results at INFO)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or log

    def on_run_start(self, run_dir: Path, spec: RunSpec, done: int) -> None:
        """Log the start."""
        self.log.info(
            "run %s into %s: %d points, %d repetitions (%d already stored)",
            spec.name,
            run_dir,
            len(spec.points),
            spec.total_repetitions(),
            done,
        )

    def on_point_start(self, point: WorkingPoint, index: int, total: int, repetitions: int) -> None:
        """Log the point."""
        self.log.info("point %d/%d %s (%s): %d repetitions", index + 1, total, point.label, point.id, repetitions)

    def on_activity(self, what: str, seconds: float | None) -> None:
        """Log a long activity with its expected duration."""
        self.log.info("%s%s", what, f" ({format_eta(seconds)})" if seconds is not None else "")

    def on_step(self, record: TrialRecord) -> None:
        """Log a trial."""
        level = logging.WARNING if record.verdict is Verdict.INVALID else logging.DEBUG
        self.log.log(level, "%s", format_record(record))

    def on_result(self, result: RepetitionResult) -> None:
        """Log a result."""
        self.log.log(logging.WARNING if result.value is None else logging.INFO, "%s", format_result(result))

    def on_point_end(self, point: WorkingPoint, error: BaseException | None) -> None:
        """Log the end of a point."""
        if error is not None:
            self.log.error("point %s ended by %s: %s", point.label, type(error).__name__, error)

    def on_warning(self, message: str) -> None:
        """Log a warning."""
        self.log.warning("%s", message)

    def on_run_end(self, status: str, error: BaseException | None) -> None:
        """Log the end."""
        self.log.info("run %s%s", status, f" ({error})" if error else "")


class RichProgress(Observer):
    """A live progress display: overall repetitions, the working point, the current search step with bounds."""

    def __init__(self, console: Any | None = None, *, transient: bool = False) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
            console=self.console,
            transient=transient,
        )
        self._overall: Any = None
        self._point: Any = None
        self._step: Any = None
        self._countdown: Countdown | None = None
        self._run_dir = ""

    def _left(self) -> str:
        return f"{self._run_dir}  {format_eta(self._countdown.left)} left (plan)" if self._countdown else self._run_dir

    def on_run_start(self, run_dir: Path, spec: RunSpec, done: int) -> None:
        """Start the display."""
        self.progress.start()
        self._countdown = Countdown(spec, done)
        self._run_dir = str(run_dir)
        self._overall = self.progress.add_task(
            f"run {spec.name}", total=spec.total_repetitions(), completed=done, detail=self._left()
        )

    def on_point_start(self, point: WorkingPoint, index: int, total: int, repetitions: int) -> None:
        """Show the point."""
        if self._point is not None:
            self.progress.remove_task(self._point)
        self._point = self.progress.add_task(
            f"point {index + 1}/{total} {point.label}", total=repetitions, detail=f"{point.connections:,} conn"
        )
        if self._step is None:
            self._step = self.progress.add_task("step", total=None, detail="")

    def on_repetition_start(self, point: WorkingPoint, metric: str, repetition: int) -> None:
        """Show the repetition."""
        if self._step is not None:
            self.progress.update(self._step, description=f"{metric} #{repetition}", detail="starting")

    def on_activity(self, what: str, seconds: float | None) -> None:
        """Show what is happening and how long it should take."""
        if self._step is not None:
            eta = f" ({format_eta(seconds)})" if seconds is not None else ""
            self.progress.update(self._step, detail=f"{what}{eta}")

    def on_step(self, record: TrialRecord) -> None:
        """Show the last step with its bounds."""
        if self._step is not None:
            self.progress.update(self._step, detail=format_record(record))

    def on_result(self, result: RepetitionResult) -> None:
        """Advance the bars and the plan's countdown."""
        if self._countdown is not None:
            self._countdown.finished(result.point_id, result.metric)
        if self._overall is not None:
            self.progress.advance(self._overall)
            self.progress.update(self._overall, detail=self._left())
        if self._point is not None:
            self.progress.advance(self._point)
        self.progress.console.print(format_result(result), highlight=False)

    def on_warning(self, message: str) -> None:
        """Print a warning above the bars."""
        self.progress.console.print(f"[yellow]warning:[/] {message}")

    def on_run_end(self, status: str, error: BaseException | None) -> None:
        """Stop the display."""
        self.progress.stop()


class PlainProgress(Observer):
    """Progress as plain lines (for logs and pipes, where a live display cannot work): each working point with
    the plan's estimate of its time and of the run's time left, long activities (a fill, a flush) with theirs,
    each finished repetition, warnings."""

    MIN_SECONDS = 5.0
    """Activities expected to take less than this are not printed (unknown durations are)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self._countdown: Countdown | None = None

    def on_run_start(self, run_dir: Path, spec: RunSpec, done: int) -> None:
        """The run's size and the plan's estimate."""
        self._countdown = Countdown(spec, done)
        todo = spec.total_repetitions() - done
        self.write(
            f"natbench: {len(spec.points)} working points, {todo} repetitions to measure, "
            f"{format_eta(self._countdown.left)} by the plan"
        )

    def on_point_start(self, point: WorkingPoint, index: int, total: int, repetitions: int) -> None:
        """The point, its estimate and the run's time left."""
        left = f"; the run {format_eta(self._countdown.left)} left" if self._countdown else ""
        here = f", {format_eta(self._countdown.point_seconds(point, repetitions))}" if self._countdown else ""
        self.write(
            f"natbench: point {index + 1}/{total} {point.label} ({point.connections:,} connections): "
            f"{repetitions} repetitions{here}{left}"
        )

    def on_activity(self, what: str, seconds: float | None) -> None:
        """A long activity with its estimate."""
        if seconds is None or seconds >= self.MIN_SECONDS:
            self.write(f"natbench:   {what}{f' ({format_eta(seconds)})' if seconds is not None else ''}")

    def on_result(self, result: RepetitionResult) -> None:
        """A finished repetition."""
        if self._countdown is not None:
            self._countdown.finished(result.point_id, result.metric)
        self.write(f"natbench:   {format_result(result)}")

    def on_warning(self, message: str) -> None:
        """A warning."""
        self.write(f"natbench: warning: {message}")
