"""Campaign orchestration: working points x metrics x repetitions, with durable storage and observers.

The runner hands every pending repetition of every metric at each working
point to the :class:`~natbench.run.orchestrator.Orchestrator`, which sets the DUT
up, prepares the tester, runs each repetition through
:func:`natbench.metrics.registry.run_repetition`, stores each trial (fsync) before the
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

from natbench.errors import NatbenchError, StoreError
from natbench.plugins import Dut, Tester
from natbench.run.format import CAMPAIGN
from natbench.run.observers import Fanout, Observer
from natbench.run.orchestrator import Orchestrator
from natbench.run.reader import RunDirectory, half_created
from natbench.run.repair import resume_store
from natbench.run.spec import RunSpec, spec_from_campaign
from natbench.run.writer import RunStore
from natbench.testbed import Testbed
from natbench.workingpoint import WorkingPoint

if TYPE_CHECKING:
    from natbench.campaign import Campaign


class RunInterrupted(NatbenchError):
    """The run was stopped by a signal (SIGTERM); the DUT was torn down and the run can be resumed."""

    exit_code = 130


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
    """Runs a :class:`RunSpec` into a :class:`~natbench.run.writer.RunStore` with one tester and one DUT.

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
                self.store.record_tester_facts(self.tester.facts())
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
                self.store.verify(
                    (point.id, m, r)
                    for point in self.spec.points
                    for m in metrics
                    for r in range(self.spec.settings(point, m).repetitions)
                )
            status = "complete"
            self.store.set_status("complete")
        except BaseException as exc:
            error = exc
            self.store.mark_failed(exc)
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
        tester_facts=tester.facts(),
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
    repair: bool = False,
) -> RunDirectory:
    """Continue the run in ``run_dir``: cut-off repetitions restart, finished ones are skipped.

    A damaged trials.jsonl is a StoreError listing the damage, unless ``repair`` (see
    :func:`~natbench.run.repair.resume_store`).
    """
    existing = RunDirectory.open(run_dir)
    stored = [p.id for p in existing.points]
    wanted = [p.id for p in spec.points]
    if stored != wanted:
        raise StoreError(f"{run_dir}: its working points do not match the campaign being resumed")
    return _run_into(resume_store(run_dir, repair=repair), spec, tester, dut, observers, clock, sleep)


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


def default_run_dir(campaign: Campaign) -> Path:
    """``campaign.output`` (default results/<name>); when that already holds something, a UTC-stamped sibling.

    A half-created run directory there (killed before its run.json was written; no trial in it) is reused.
    """
    base = campaign.output
    if not base.exists() or (base.is_dir() and not any(base.iterdir())) or half_created(base):
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
    repair: bool = False,
) -> RunDirectory:
    """Resume the run in ``run_dir`` from its stored, resolved campaign.yaml (``repair``: see :func:`resume_run`)."""
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    existing = RunDirectory.open(run_dir)
    existing.check_resumable()
    existing.check_resume(repair)  # damage stops the resume before the testbed is built
    campaign = load_campaign(existing.path / CAMPAIGN)
    spec = spec_from_campaign(campaign, existing.campaign_text, existing.meta.campaign_file)
    if monitor_interval:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, monitor_interval=monitor_interval))
    with testbed if testbed is not None else build_testbed(campaign) as bed:
        return resume_run(spec, run_dir, bed.tester, bed.dut, observers=observers, sleep=sleep, repair=repair)
