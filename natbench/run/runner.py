"""Campaign orchestration: working points x metrics x repetitions, with durable storage and observers.

The runner hands every pending repetition of every metric at each working
point to the :class:`~natbench.run.orchestrator.Orchestrator`, which sets the DUT
up, prepares the tester, runs each repetition through
:func:`natbench.metrics.run_repetition`, stores each trial (fsync) before the
next one starts, and tears the DUT down afterwards - also when a procedure
raises, on Ctrl-C (SIGINT) and on SIGTERM. It never prints: progress and logs go
to :class:`~natbench.run.observers.Observer` objects.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from natbench.duts.base import Dut
from natbench.errors import NatbenchError, StoreError
from natbench.metrics import MetricSettings, RunOptions, find_metric, metric_names
from natbench.run.observers import Fanout, Observer
from natbench.run.orchestrator import Orchestrator
from natbench.run.store import CAMPAIGN, RunDirectory, RunStore, plain_json, point_to_dict
from natbench.testbed import Testbed
from natbench.testers.base import Tester
from natbench.traffic.plan import TrafficPlan
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign import Campaign

__all__ = [
    "RunInterrupted",
    "RunSpec",
    "Runner",
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


@dataclass
class Runner:
    """Runs a :class:`RunSpec` into a :class:`~natbench.run.store.RunStore` with one tester and one DUT.

    Each working point with pending repetitions is measured by one
    :meth:`Orchestrator.measure <natbench.run.orchestrator.Orchestrator.measure>` call, which
    tears the DUT down after it.
    """

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
    _orchestrator: Orchestrator = field(init=False)

    def __post_init__(self) -> None:
        self._obs = Fanout(self.observers)
        self._orchestrator = Orchestrator(self.store, self._obs, self.clock, self.sleep)

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
            plan = self.spec.plan_for(point)
            self._orchestrator.measure(
                self.tester,
                self.dut,
                point,
                plan,
                todo,
                lambda metric: self.spec.settings(point, metric),
                options=self.spec.options,
            )
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._obs.on_point_end(point, error)


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


def default_run_dir(campaign: Campaign) -> Path:
    """``campaign.output`` (default results/<name>); when that already holds something, a UTC-stamped sibling."""
    base = campaign.output
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
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(path))
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
    campaign = load_campaign(existing.path / CAMPAIGN)
    spec = spec_from_campaign(campaign, existing.campaign_text, existing.meta.get("campaign_file"))
    if monitor_interval:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, monitor_interval=monitor_interval))
    with testbed if testbed is not None else build_testbed(campaign) as bed:
        return resume_run(spec, run_dir, bed.tester, bed.dut, observers=observers, sleep=sleep)
