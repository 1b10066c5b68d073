"""Campaign orchestration: working points x metrics x repetitions, with durable storage and observers.

The runner sets the DUT up for each working point, prepares the tester,
runs every pending repetition of every metric through
:func:`natbench.metrics.run_repetition`, stores each trial (fsync) before
the next one starts, and tears the DUT down afterwards - also when a
procedure raises, on Ctrl-C (SIGINT) and on SIGTERM. It never prints:
progress and logs go to :class:`Observer` objects.

Two levels of API:

* :func:`start_run` / :func:`resume_run` take a :class:`RunSpec` (points,
  traffic plans, metric settings) and an explicit tester and DUT - what tests
  and notebooks use (with :mod:`natbench.testing` fakes, for instance);
* :func:`run_campaign` / :func:`resume_campaign` take a campaign file, build
  the testbed through :mod:`natbench.testbed` and call the former.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from natbench.duts.base import Dut
from natbench.errors import NatbenchError, StoreError
from natbench.metrics import MetricSettings, ProcedureContext, RunOptions, find_metric, metric_names, run_repetition
from natbench.results import RepetitionResult, TrialRecord
from natbench.store import RunDirectory, RunStore, plain_json, point_to_dict
from natbench.testbed import Testbed
from natbench.testers.base import Tester
from natbench.traffic.plan import TrafficPlan
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign import Campaign

__all__ = [
    "Observer",
    "RunInterrupted",
    "RunSpec",
    "Runner",
    "call_begin_repetition",
    "default_run_dir",
    "resume_campaign",
    "resume_run",
    "run_campaign",
    "spec_from_campaign",
    "start_run",
]


class RunInterrupted(NatbenchError):
    """The run was stopped by a signal (SIGTERM); the DUT was torn down and the run can be resumed."""

    exit_code = 130


@dataclass(frozen=True)
class RunSpec:
    """What to measure: the resolved content of a campaign, independent of its file format."""

    name: str
    """Campaign name (recorded in run.json)."""
    points: Sequence[WorkingPoint]
    """Working points in measurement order."""
    plan_for: Callable[[WorkingPoint], TrafficPlan]
    """Traffic plan of a working point."""
    metrics: dict[str, MetricSettings]
    """Metric name -> its settings model, resolved (:meth:`~natbench.metrics.MetricSettings.resolved`);
    measured at each point in the registry's order (:func:`~natbench.metrics.all_metrics`)."""
    campaign_text: str = ""
    """The resolved campaign (YAML) stored as campaign.yaml."""
    campaign_file: str | None = None
    """Where the campaign came from."""
    settings_for: Callable[[WorkingPoint, str], MetricSettings] | None = None
    """Per-point settings (a campaign's sweep may override e.g. the search error per point); default: ``metrics``."""
    options: RunOptions = field(default_factory=RunOptions)
    """Engine options of the whole run (rate tolerance, Responder entry selection, DUT CPU monitor)."""

    def settings(self, point: WorkingPoint, metric: str) -> MetricSettings:
        """Settings of ``metric`` at ``point``."""
        return self.settings_for(point, metric) if self.settings_for is not None else self.metrics[metric]

    def ordered_metrics(self) -> list[str]:
        """Metric names in measurement order (cps before validation, throughput before latency/PDV)."""
        known = metric_names()
        unknown = [m for m in self.metrics if find_metric(m) is None]
        if unknown:
            raise NatbenchError(f"unknown metric(s): {', '.join(unknown)}; known: {', '.join(known)}")
        return [m for m in known if m in self.metrics]

    def total_repetitions(self) -> int:
        """Repetitions in the whole run."""
        return sum(self.settings(p, m).repetitions for p in self.points for m in self.metrics)


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


class _Fanout(Observer):
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


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While active, SIGTERM raises RunInterrupted in the main thread (so ``finally`` blocks run)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    fired = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal fired
        if fired:  # a second SIGTERM must not break the DUT teardown the first one started
            return
        fired = True
        raise RunInterrupted("interrupted by SIGTERM")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def call_begin_repetition(obj: object, point: WorkingPoint, metric: str, repetition: int) -> None:
    """Call ``obj.begin_repetition(point_id, metric, repetition)`` when the tester or DUT has that optional hook."""
    hook = getattr(obj, "begin_repetition", None)
    if callable(hook):
        hook(point.id, metric, repetition)


@dataclass
class Runner:
    """Runs a :class:`RunSpec` into a :class:`~natbench.store.RunStore` with one tester and one DUT."""

    spec: RunSpec
    """What to measure."""
    store: RunStore
    """Where to store it (new or resumed)."""
    tester: Tester
    """The traffic generator."""
    dut: Dut
    """The device(s) under test."""
    observers: Sequence[Observer] = ()
    """Progress display, logging, ..."""
    clock: Callable[[], float] = time.time
    """Trial timestamps."""
    sleep: Callable[[float], None] = time.sleep
    """Gap between the phases."""
    _obs: Observer = field(init=False)

    def __post_init__(self) -> None:
        self._obs = _Fanout(self.observers)

    def run(self) -> str:
        """Measure every pending repetition; return the final status (``complete``)."""
        metrics = self.spec.ordered_metrics()
        done = len(self.store.reader().completed())
        error: BaseException | None = None
        status = "failed"
        try:
            with _sigterm_raises():
                self.store.update_meta(tester=plain_json(self.tester.facts()))
                self._obs.on_run_start(self.store.path, self.spec, done)
                total = len(self.spec.points)
                for index, point in enumerate(self.spec.points):
                    todo = [
                        (m, r)
                        for m in metrics
                        for r in range(self.spec.settings(point, m).repetitions)
                        if not self.store.is_complete(point.id, m, r)
                    ]
                    if todo:
                        self._run_point(point, index, total, todo)
            status = "complete"
            self.store.set_status("complete")
        except BaseException as exc:
            error = exc
            why = "interrupted by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                self.store.set_status("failed", failure=why)
            raise
        finally:
            self._obs.on_run_end(status, error)
        return status

    def _run_point(self, point: WorkingPoint, index: int, total: int, todo: list[tuple[str, int]]) -> None:
        self._obs.on_point_start(point, index, total, len(todo))
        error: BaseException | None = None
        try:
            self.dut.setup(point)
            self.store.record_dut_facts(point.id, self.dut.facts())
            plan = self.spec.plan_for(point)
            self.tester.prepare(plan)
            # what the tester learns on connecting (a TRex server's version, cores and MACs)
            self.store.update_meta(tester=plain_json(self.tester.facts()))
            prior = self._prior(point)
            earlier = self._earlier(point)
            for metric, rep in todo:
                self._obs.on_repetition_start(point, metric, rep)
                call_begin_repetition(self.tester, point, metric, rep)
                call_begin_repetition(self.dut, point, metric, rep)
                ctx = ProcedureContext(
                    tester=self.tester,
                    dut=self.dut,
                    point=point,
                    plan=plan,
                    metric=metric,
                    repetition=rep,
                    settings=self.spec.settings(point, metric),
                    emit=self._emit,
                    clock=self.clock,
                    sleep=self.sleep,
                    prior=prior,
                    earlier=tuple(earlier.get(metric, ())),
                    options=self.spec.options,
                )
                result = run_repetition(ctx)
                self.store.append_result(result)
                earlier.setdefault(metric, []).append(result)
                if result.value is not None:
                    prior.setdefault(metric, []).append(result.value)
                self._obs.on_result(result)
        except BaseException as exc:
            error = exc
            raise
        finally:
            try:
                self.dut.teardown()
            except Exception as exc:
                if error is None:
                    error = exc
                    raise
                self._obs.on_warning(f"DUT teardown after an error failed too: {exc}")
            finally:
                self._obs.on_point_end(point, error)

    def _emit(self, record: TrialRecord) -> None:
        self.store.append_trial(record)
        self._obs.on_step(record)

    def _earlier(self, point: WorkingPoint) -> dict[str, list[RepetitionResult]]:
        """Stored results at ``point`` per metric (a resumed run sees the repetitions done before)."""
        out: dict[str, list[RepetitionResult]] = {}
        for r in self.store.reader().results():
            if r.point_id == point.id:
                out.setdefault(r.metric, []).append(r)
        return out

    def _prior(self, point: WorkingPoint) -> dict[str, list[float]]:
        return {m: [r.value for r in rs if r.value is not None] for m, rs in self._earlier(point).items()}


# ---------------------------------------------------------------------------- library API
def start_run(
    spec: RunSpec,
    run_dir: str | Path,
    tester: Tester,
    dut: Dut,
    *,
    observers: Sequence[Observer] = (),
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> RunDirectory:
    """Create ``run_dir`` and measure ``spec`` into it; return the finished run directory."""
    store = RunStore.create(
        run_dir,
        campaign_text=spec.campaign_text,
        points=spec.points,
        campaign_file=spec.campaign_file,
        campaign_name=spec.name,
        tester_facts=plain_json(tester.facts()),
    )
    return _run_into(store, spec, tester, dut, observers, clock, sleep)


def resume_run(
    spec: RunSpec,
    run_dir: str | Path,
    tester: Tester,
    dut: Dut,
    *,
    observers: Sequence[Observer] = (),
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> RunDirectory:
    """Continue the run in ``run_dir``: cut-off repetitions restart, finished ones are skipped."""
    existing = RunDirectory.open(run_dir)
    stored = [p["id"] for p in existing.points]
    wanted = [point_to_dict(p)["id"] for p in spec.points]
    if stored != wanted:
        raise StoreError(f"{run_dir}: its working points do not match the campaign being resumed")
    return _run_into(RunStore.resume(run_dir), spec, tester, dut, observers, clock, sleep)


def _run_into(
    store: RunStore,
    spec: RunSpec,
    tester: Tester,
    dut: Dut,
    observers: Sequence[Observer],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> RunDirectory:
    """Measure ``spec`` into the open ``store``, close it and return the run directory as stored."""
    try:
        Runner(spec, store, tester, dut, observers, clock, sleep).run()
    finally:
        store.close()
    return RunDirectory.open(store.path)


def spec_from_campaign(campaign: Campaign, campaign_text: str, campaign_file: str | None = None) -> RunSpec:
    """Build a :class:`RunSpec` from a :class:`natbench.campaign.Campaign`.

    Per-point settings come from ``campaign.settings_for(point, metric)``, resolved once here: a metric
    without its own acceptance or directions takes the traffic section's. The run's options: the
    Responder's entry selection is the traffic section's ``selection``, the achieved-rate tolerance the
    tester's ``rate_tolerance`` setting when it has one, and ``testbed.monitor_interval`` turns the DUT CPU
    monitor on.
    """
    traffic = campaign.traffic

    def resolve(settings: MetricSettings) -> MetricSettings:
        return settings.resolved(traffic.acceptance, traffic.directions)

    def settings_for(point: WorkingPoint, metric: str) -> MetricSettings:
        return resolve(campaign.settings_for(point, metric))

    tolerance = campaign.testbed.tester.settings.get("rate_tolerance")
    monitor = campaign.testbed.monitor_interval
    options = RunOptions(
        # the engine's "kept the rate" check uses the tolerance the tester itself was given
        rate_tolerance=float(tolerance) if tolerance is not None else RunOptions.rate_tolerance,
        selection=traffic.selection,
        monitor_interval=float(monitor) if monitor else None,
    )
    return RunSpec(
        name=campaign.name,
        points=list(campaign.points()),
        plan_for=campaign.traffic_plan,
        metrics={name: resolve(s) for name, s in campaign.metrics.items()},
        campaign_text=campaign_text,
        campaign_file=campaign_file,
        settings_for=settings_for,
        options=options,
    )


def _campaign_text(campaign: Any, path: Path) -> str:
    """The resolved campaign as YAML (env substituted, defaults filled) when the schema can render it."""
    for name in ("resolved_yaml", "to_yaml"):
        fn = getattr(campaign, name, None)
        if callable(fn):
            return str(fn())
    if hasattr(campaign, "model_dump"):
        import yaml

        return str(yaml.safe_dump(campaign.model_dump(mode="json"), sort_keys=False))
    return path.read_text(encoding="utf-8")


def default_run_dir(campaign: Any) -> Path:
    """``campaign.output`` (default results/<name>); when that already holds something, a UTC-stamped sibling."""
    output = getattr(campaign, "output", None)
    base = Path(str(output)) if output else Path("results") / (str(getattr(campaign, "name", "")) or "run")
    if not base.exists() or (base.is_dir() and not any(base.iterdir())):
        return base
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return base.with_name(f"{base.name}-{stamp}")


def run_campaign(
    path: str | Path,
    run_dir: str | Path | None = None,
    *,
    observers: Sequence[Observer] = (),
    testbed: Testbed | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monitor_interval: float | None = None,
) -> RunDirectory:
    """Load the campaign file, build its testbed (unless one is given), run it; return the run directory.

    ``testbed`` lets tests and notebooks drive a campaign with their own tester and DUT
    (e.g. :mod:`natbench.testing` fakes); the CLI never passes one.
    """
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    path = Path(path)
    campaign = load_campaign(path)
    spec = spec_from_campaign(campaign, _campaign_text(campaign, path), str(path))
    if monitor_interval:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, monitor_interval=monitor_interval))
    target = Path(run_dir) if run_dir else default_run_dir(campaign)
    with testbed if testbed is not None else build_testbed(campaign) as bed:
        return start_run(spec, target, bed.tester, bed.dut, observers=observers, sleep=sleep)


def resume_campaign(
    run_dir: str | Path,
    *,
    observers: Sequence[Observer] = (),
    testbed: Testbed | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monitor_interval: float | None = None,
) -> RunDirectory:
    """Resume the run in ``run_dir`` from its stored, resolved campaign.yaml."""
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    existing = RunDirectory.open(run_dir)
    existing.check_resumable()
    campaign = load_campaign(existing.path / "campaign.yaml")
    spec = spec_from_campaign(campaign, existing.campaign_text, existing.meta.get("campaign_file"))
    if monitor_interval:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, monitor_interval=monitor_interval))
    with testbed if testbed is not None else build_testbed(campaign) as bed:
        return resume_run(spec, run_dir, bed.tester, bed.dut, observers=observers, sleep=sleep)
