"""What one repetition of a procedure works with: :class:`ProcedureContext` and the run's :class:`RunOptions`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args

from natbench.errors import ConfigError
from natbench.judging import limit_cause
from natbench.metrics import registry
from natbench.metrics.settings import MetricSettings
from natbench.plugins import Directions, Dut, HostLoadProbe, Tester, evidence_of
from natbench.plugins.settings import DEFAULT_RATE_TOLERANCE
from natbench.results import PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.traffic.plan import TrafficPlan
from natbench.workingpoint import WorkingPoint

FILL_KINDS = ("fill", "fill_check")
"""Trials that load the table for a later measurement: judged by the connections they left, which other processes'
load cannot change unnoticed, so their host load flags no result."""

S = TypeVar("S", bound=MetricSettings, covariant=True)

Selection = Literal["random", "linear", "fixed"]
"""Phase-2 Responder state-table entry selection (the campaign's ``traffic.selection``)."""
OnSearchError = Literal["record", "raise"]
"""What a repetition that cannot finish does: stored as failed (``record``) or aborting the run (``raise``)."""

_CHOICES: dict[str, tuple[str, ...]] = {"on_search_error": get_args(OnSearchError), "selection": get_args(Selection)}


@dataclass(frozen=True)
class RunOptions:
    """Engine options of a whole run: the same for every metric, so not part of any metric's settings.

    They come from other parts of a campaign than its ``metrics`` section (the tester's settings, the
    traffic section, the testbed) or from the command line; a run built by hand may leave the defaults.
    """

    rate_tolerance: float = DEFAULT_RATE_TOLERANCE
    """Relative shortfall of the achieved rate that still counts as keeping the rate (a campaign's run: the
    tester's ``rate_tolerance`` setting, so the engine judges with the tolerance the tester was given)."""
    selection: Selection = "random"
    """Phase-2 Responder state-table entry selection: ``random``, ``linear`` or ``fixed`` (``traffic.selection``)."""
    monitor_interval: float | None = None
    """Sample the DUTs' per-core CPU idle time every this many seconds during each traffic trial of every metric
    (``testbed.monitor_interval``, ``natbench run --monitor``); None: off."""
    on_search_error: OnSearchError = "record"
    """``record``: a repetition that cannot finish is stored as failed and the run goes on; ``raise``: abort."""

    def __post_init__(self) -> None:
        """Check the choices at run time too: options built by hand from untyped data (a script's or a test's
        keyword arguments) are not checked by their Literal types."""
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"must be one of {', '.join(allowed)}, got {getattr(self, name)!r}", field=name)


@dataclass
class ProcedureContext(Generic[S]):
    """Everything one repetition of a procedure may use."""

    tester: Tester
    """The traffic generator (already prepared with :attr:`plan`)."""
    dut: Dut
    """The device(s) under test (already set up for :attr:`point`)."""
    point: WorkingPoint
    """The working point."""
    plan: TrafficPlan
    """The working point's traffic plan."""
    metric: str
    """Metric (procedure) name."""
    repetition: int
    """Repetition number, 0-based."""
    settings: S
    """This metric's settings model, resolved (:meth:`~natbench.metrics.settings.MetricSettings.resolved`)."""
    emit: Callable[[TrialRecord], None]
    """Stores a trial record (and informs observers); returns after it is on disk."""
    clock: Callable[[], float] = time.time
    """Wall clock for trial timestamps."""
    sleep: Callable[[float], None] = time.sleep
    """Sleeps (the gap); tests pass a no-op."""
    prior: Mapping[str, Sequence[float]] = field(default_factory=dict)
    """Values of earlier metrics' finished repetitions at this point (e.g. throughput for latency)."""
    step: int = 0
    """Number of the next trial record within this repetition."""
    earlier: Sequence[RepetitionResult] = ()
    """Stored results of this metric's earlier repetitions at this point (e.g. teardown reuses their T_0)."""
    preservation: str | None = None
    """ResponderMode.COMPUTE: ``verified`` / ``unverified`` once the DUT's port preservation was checked."""
    options: RunOptions = field(default_factory=RunOptions)
    """Engine options of the whole run."""
    announce: Callable[[str, float | None], None] = field(default=lambda _what, _seconds: None)
    """Tells the run's observers that a long activity starts (what, expected seconds or None): a fill of N
    connections, a flush; progress displays show it with its ETA."""
    warn: Callable[[str], None] = field(default=lambda _message: None)
    """Tells the run's observers something that spoils no trial but the user should know (e.g. the DUT-timeout guard
    is off); the runner passes each distinct message on once per run."""
    tester_limits: dict[float, str] = field(default_factory=dict)
    """Rates of this repetition whose trials were invalid because of the tester, with why
    (:func:`~natbench.judging.limit_cause`: its rate, or its clumps): a search that ends at the tester's
    ceiling says which (:func:`~natbench.metrics.trial.search_extra`)."""
    host_load: HostLoadProbe | None = None
    """The probe of what other processes took of a shared host's CPUs (a local lab's; None: not measured): every
    trial stores its figures (``extra.host_load``) and the result the largest share beyond their bound
    (:mod:`natbench.metrics.hostload`)."""
    host_others: float | None = None
    """The largest share of the host's CPUs other processes took, beyond the figure's bound, in a trial of this
    repetition that is no table fill (None: none measured); its result adds the whole repetition's."""
    host_start: Any = None
    """The probe's reading when the repetition began (its whole span is a window too: trials shorter than the
    counters can tell add up there)."""

    def __post_init__(self) -> None:
        if self.host_load is not None and self.host_start is None:
            self.host_start = self.host_load.reading()

    @property
    def acceptance(self) -> float:
        """The loss ratio a trial of this metric may show in every active direction."""
        value = self.settings.acceptance
        if value is None:
            raise ConfigError(f"{self.metric}: acceptance unresolved (build the settings with .resolved())")
        return value

    @property
    def pacing_slack(self) -> float:
        """Seconds the tester's timer may put a phase's last frame behind schedule
        (:attr:`~natbench.plugins.TrialEvidence.pacing_slack`, 0 where it declares none)."""
        return evidence_of(self.tester).pacing_slack

    @property
    def directions(self) -> Directions:
        """This metric's active phase-2 directions."""
        value = self.settings.directions
        if value is None:
            raise ConfigError(f"{self.metric}: directions unresolved (build the settings with .resolved())")
        return value

    def record(
        self,
        kind: str,
        phase: PhaseResult | None,
        verdict: Verdict,
        reason: str,
        started: float,
        *,
        lower: float | None = None,
        upper: float | None = None,
        value: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> TrialRecord:
        """Build the next trial record, emit it (stored before returning) and return it."""
        ext: dict[str, Any] = dict(extra or {})
        if phase is not None:
            if phase.latency:
                ext["latency"] = {str(d): dataclasses.asdict(s) for d, s in phase.latency.items()}
            if phase.tester_note:
                ext["tester_note"] = phase.tester_note
            if phase.learned is not None:
                ext["learned"] = phase.learned
            # the mode is recorded with every traffic trial: the tester's own word, else the plan's
            ext["responder_mode"] = phase.responder_mode or str(self.plan.responder_mode)
            if self.preservation is not None:
                ext["port_preservation"] = self.preservation
            if phase.extra:
                ext["tester"] = dict(phase.extra)
            if phase.deviations:  # the tester's own departures from the plan, weighed by the verdict
                ext["deviations"] = {
                    str(d): {"clump": v.clump, "missed": v.missed, "notes": list(v.notes)}
                    for d, v in phase.deviations.items()
                }
            ext.setdefault("duration", phase.duration)
            if phase.stopped:  # ended before its duration because it had failed (judged as such)
                ext["stopped"] = True
            if phase.tail_rates:  # the forwarding rate of the trial's second half: where a fast search looks next
                ext["tail_rates"] = {str(d): v for d, v in phase.tail_rates.items()}
        if self.host_load is not None:  # other processes' share of the host's CPUs since the trial began
            load = self.host_load.since_mark()
            ext["host_load"] = load
            if kind not in FILL_KINDS:
                beyond = max(float(load["others"]) - float(load["bound"]), 0.0)
                self.host_others = beyond if self.host_others is None else max(self.host_others, beyond)
        rec = TrialRecord(
            point_id=self.point.id,
            metric=self.metric,
            repetition=self.repetition,
            step=self.step,
            kind=kind,
            intended_rate=phase.intended_rate if phase else 0.0,
            achieved_rate=phase.achieved_rate if phase else 0.0,
            counts={str(d): dataclasses.asdict(c) for d, c in phase.counts.items()} if phase else {},
            verdict=verdict,
            reason=reason,
            started_at=started,
            ended_at=self.clock(),
            lower=lower,
            upper=upper,
            value=value,
            extra=ext,
        )
        self.step += 1
        cause = limit_cause(rec)
        if cause is not None and rec.intended_rate > 0:
            self.tester_limits[rec.intended_rate] = cause
        self.emit(rec)
        return rec

    def result(self, value: float | None, *, error: float | None = None, **extra: Any) -> RepetitionResult:
        """Build this repetition's result, in the unit the registry gives :attr:`metric`
        (:attr:`~natbench.metrics.registry.Metric.unit`)."""
        unit = registry.metric(self.metric).unit
        if self.host_load is not None and self.host_start is not None:
            # the whole repetition's window: what its short trials cannot tell one by one
            whole = self.host_load.since(self.host_start)
            extra.setdefault("host_load", whole)
            beyond = max(float(whole["others"]) - float(whole["bound"]), 0.0)
            self.host_others = beyond if self.host_others is None else max(self.host_others, beyond)
        if self.host_others is not None:
            extra.setdefault("host_others", round(self.host_others, 6))
        return RepetitionResult(self.point.id, self.metric, self.repetition, value, unit, error, extra)
