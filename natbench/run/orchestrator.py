"""The one orchestrator: measures the repetitions of a working point into a run directory.

Both ways of measuring use it. The campaign runner (:mod:`natbench.run.runner`, ``natbench
run``, ``--resume``) hands it every pending repetition of a working point and has the DUT torn
down afterwards; the experiment API (:mod:`natbench.run.experiment`, the pytest plugin) hands
it one metric's repetitions at a time and keeps the DUT set up between measurements at the same
point. Either way the same steps run:

1. set the DUT up for the point and store its facts (unless it is set up for that point already);
2. prepare the tester with the point's traffic plan and store the tester's facts (unless it is
   prepared with that plan already);
3. for each (metric, repetition): tell the observer, call the tester's optional
   :class:`~natbench.plugins.BeginsRepetition` hook, build the procedure context with what
   earlier repetitions at the point left (``prior`` values of every metric, ``earlier`` results
   of this metric: a resumed run or a later measurement sees the stored ones too) and the host-load
   probe of a tester with the :class:`~natbench.plugins.WatchesHostLoad` hook, run the procedure,
   store the result (every trial is stored as it is made);
4. tear the DUT down when a step raised (its state is unknown then) - and, unless the caller
   keeps it set up, after the last repetition. A teardown that fails after an error is reported
   to the observer as a warning, so the error that stopped the work is the one raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from natbench.metrics import MetricSettings, ProcedureContext
from natbench.metrics.context import RunOptions
from natbench.metrics.registry import run_repetition
from natbench.plugins import BeginsRepetition, DeclaresRows, Dut, DutDeclarations, Tester, WatchesHostLoad
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.observers import Observer
from natbench.traffic.plan import TrafficPlan
from natbench.workingpoint import WorkingPoint


class _StoredResults(Protocol):
    def results(self) -> Sequence[RepetitionResult]:
        """The stored repetition results, in the order they were stored."""
        ...


class RecordStore(Protocol):
    """Where the orchestrator puts what it measures: a :class:`RunStore`, or (a distributed run's worker) a store
    that sends every record to the client that writes the run directory."""

    def append_trial(self, record: TrialRecord) -> None:
        """Store one trial; it is durable when this returns."""
        ...

    def append_result(self, result: RepetitionResult) -> None:
        """Store one repetition result; it is durable when this returns."""
        ...

    def record_dut_facts(self, point_id: str, facts: Any) -> None:
        """Store the DUT facts read after setting up a working point."""
        ...

    def record_tester_facts(self, facts: Mapping[str, Any]) -> None:
        """Store the tester's facts (what it learnt on connecting)."""
        ...

    def record_declarations(self, declared: Mapping[str, DutDeclarations]) -> None:
        """Store what the DUT kinds declared for reports (table and hash sizes, slab caches), by DUT name."""
        ...

    def reader(self) -> _StoredResults:
        """What is stored so far (the results of earlier repetitions)."""
        ...


@dataclass
class Orchestrator:
    """Measures repetitions at working points with a tester and a DUT, into one :class:`RunStore`."""

    store: RecordStore
    """Where every trial and result goes (a :class:`RunStore` open for writing)."""
    observer: Observer = field(default_factory=Observer)
    """Told about repetitions, stored trials and results, and warnings (several: :class:`~.observers.Fanout`)."""
    clock: Callable[[], float] = time.time
    """Trial timestamps."""
    sleep: Callable[[float], None] = time.sleep
    """Gap between the phases."""
    _set_up: tuple[Dut, str] | None = field(default=None, init=False)
    _prepared: tuple[Tester, TrafficPlan] | None = field(default=None, init=False)
    _declared: dict[str, DutDeclarations] | None = field(default=None, init=False)
    _history: dict[str, dict[str, list[RepetitionResult]]] = field(default_factory=dict, init=False)
    _warned: set[str] = field(default_factory=set, init=False)

    def measure(
        self,
        tester: Tester,
        dut: Dut,
        point: WorkingPoint,
        plan: TrafficPlan,
        repetitions: Iterable[tuple[str, int]],
        settings: Callable[[str], MetricSettings],
        *,
        options: RunOptions,
        keep_set_up: bool = False,
    ) -> list[RepetitionResult]:
        """Measure ``repetitions`` ((metric, repetition number) pairs, in order) at ``point``; return their results.

        ``settings(metric)`` gives a metric's settings at this point, ``options`` the engine options of
        the run (the same for every metric). With ``keep_set_up`` the DUT stays
        set up (and the tester prepared) for the next call at the same point; otherwise it is torn down
        before this returns. After an exception the DUT is always torn down.
        """
        error: BaseException | None = None
        try:
            self._ready(tester, dut, point, plan)
            return [self._repetition(tester, dut, point, plan, m, r, settings(m), options) for m, r in repetitions]
        except BaseException as exc:
            error = exc
            raise
        finally:
            if error is not None or not keep_set_up:
                self.tear_down(error)

    def earlier(self, point: WorkingPoint, metric: str) -> tuple[RepetitionResult, ...]:
        """The stored results of ``metric`` at ``point``, in the order they were stored."""
        return tuple(self._results_at(point).get(metric, ()))

    def tear_down(self, error: BaseException | None = None) -> None:
        """Tear the DUT down if it is set up; a teardown failure is raised, or only reported after ``error``."""
        if self._set_up is None:
            return
        dut = self._set_up[0]
        self._set_up = None
        self._prepared = None
        try:
            dut.teardown()
        except Exception as exc:
            if error is None:
                raise
            self.observer.on_warning(f"DUT teardown after an error failed too: {exc}")

    # ------------------------------------------------------------------ steps
    def _ready(self, tester: Tester, dut: Dut, point: WorkingPoint, plan: TrafficPlan) -> None:
        """Set the DUT up for ``point`` and prepare the tester with ``plan``, unless that is done already."""
        if self._set_up is None or self._set_up[0] is not dut or self._set_up[1] != point.id:
            self.tear_down()
            self._set_up = (dut, point.id)  # before setup: a setup that fails half-way is torn down too
            dut.setup(point)
            self.store.record_dut_facts(point.id, dut.facts())
            if isinstance(dut, DeclaresRows):  # the rows its recipe declares; stored once while they stay the same
                declared = dut.declarations()
                if declared != self._declared:
                    self.store.record_declarations(declared)
                    self._declared = declared
        if self._prepared is None or self._prepared[0] is not tester or self._prepared[1] != plan:
            self._prepared = None
            tester.prepare(plan)
            self._prepared = (tester, plan)
            # what the tester learns on connecting (a TRex server's version, cores and MACs)
            self.store.record_tester_facts(tester.facts())

    def _repetition(
        self,
        tester: Tester,
        dut: Dut,
        point: WorkingPoint,
        plan: TrafficPlan,
        metric: str,
        rep: int,
        settings: MetricSettings,
        options: RunOptions,
    ) -> RepetitionResult:
        """Run one repetition, store its result and remember it for the later ones at this point."""
        history = self._results_at(point)
        self.observer.on_repetition_start(point, metric, rep)
        if isinstance(tester, BeginsRepetition):
            tester.begin_repetition(point.id, metric, rep)
        ctx = ProcedureContext(
            tester=tester,
            dut=dut,
            point=point,
            plan=plan,
            metric=metric,
            repetition=rep,
            settings=settings,
            emit=self._emit,
            clock=self.clock,
            sleep=self.sleep,
            prior={m: [r.value for r in rs if r.value is not None] for m, rs in history.items()},
            earlier=tuple(history.get(metric, ())),
            options=options,
            announce=self.observer.on_activity,
            warn=self._warn_once,
            host_load=tester.host_load_probe() if isinstance(tester, WatchesHostLoad) else None,
        )
        result = run_repetition(ctx)
        self.store.append_result(result)
        history.setdefault(metric, []).append(result)
        self.observer.on_result(result)
        return result

    def _warn_once(self, message: str) -> None:
        """Pass a procedure's warning to the observer, each distinct message once per run."""
        if message not in self._warned:
            self._warned.add(message)
            self.observer.on_warning(message)

    def _emit(self, record: TrialRecord) -> None:
        """Store a trial (on disk when this returns), then tell the observer."""
        self.store.append_trial(record)
        self.observer.on_step(record)

    def _results_at(self, point: WorkingPoint) -> dict[str, list[RepetitionResult]]:
        """Results at ``point`` per metric: read from the store at the first visit, then kept up to date."""
        history = self._history.get(point.id)
        if history is None:
            history = {}
            for r in self.store.reader().results():
                if r.point_id == point.id:
                    history.setdefault(r.metric, []).append(r)
            self._history[point.id] = history
        return history
