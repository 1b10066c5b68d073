"""RFC 9693 / RFC 8219 measurement procedures, written only against the Tester and Dut protocols.

Each procedure runs **one repetition** of one metric at one working point and
returns a :class:`~natbench.results.RepetitionResult`. Every trial it runs
(each search step, each fill, each timed delete) becomes a
:class:`~natbench.results.TrialRecord` handed to ``ctx.emit`` *before* the
next trial starts; the runner stores it (fsync) and tells the observers.

Decisions a network test engineer should know (docs/engine.md has the long form):

* **Verdicts.** A trial is INVALID when the tester reports it could not keep
  the rate, the achieved rate is below the intended one by more than
  ``rate_tolerance``, the counts are inconsistent, or the DUT table does not
  hold the expected connections; FAIL when the loss ratio of any active
  direction exceeds ``acceptance``; PASS otherwise. Invalid trials are retried
  at the same rate, never counted; after ``max_invalid`` retries the
  repetition ends with :class:`~natbench.errors.SearchError`, which the runner
  records as a failed repetition (``value=None``, ``extra.error``) and goes on.
* **cps**: the DUT table is emptied (``reset_connections``) before every step;
  a passing step must leave between ``valid`` and ``sent + table_slack``
  connections in the table when the DUT can count them.
* **throughput / frame_loss / latency / pdv** fill the table once per
  repetition (phase 1 at ``fill_rate`` with learning), wait ``gap``, then run
  phase-2 steps. ``refill="auto"`` (default): after every phase-2 step the
  table is counted; if it changed, the step is INVALID (frames created or
  deleted connections, which RFC 9693 forbids) and the table is emptied and
  refilled before the next step; a DUT that cannot count is refilled after
  every failed step (overload may have disturbed it). ``refill="always"``
  empties and refills before every phase-2 step, as siitperf's scripts do.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from natbench.duts.base import Dut
from natbench.errors import ConfigError, DutError, SearchError
from natbench.results import PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.search import BinarySearch, SearchOutcome, SearchStep, mlr_search
from natbench.testers.base import (
    Directions,
    LoadsMappings,
    Phase2Options,
    SetsReceiveTimeout,
    Tester,
)
from natbench.testers.base import (
    Mapping as DutMapping,
)
from natbench.traffic.plan import ResponderMode, TrafficPlan
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

__all__ = [
    "METRICS",
    "PROCEDURES",
    "STATELESS_METRICS",
    "MetricSettings",
    "ProcedureContext",
    "dut_supports",
    "judge_phase",
    "monitor_columns",
    "run_repetition",
]

METRICS = ("cps", "throughput", "frame_loss", "latency", "pdv", "teardown", "capacity", "validation", "forwarding")
"""Every metric (procedure) name natbench knows, in the order the runner measures them at a point."""

STATELESS_METRICS = ("forwarding",)
"""Metrics that need no connection state on the DUT (no phase 1): the only ones a family without
translation (``ipv4``, ``ipv6``: plain forwarding) can measure."""


@dataclass(frozen=True)
class MetricSettings:
    """Settings of one metric (the campaign's ``metrics.<name>`` section); rates are per direction."""

    repetitions: int = 1
    """Number of repetitions (the seeds use 10-20)."""
    lower: float = 0.0
    """Lower bound of the rate search (frames or connections per second, per direction)."""
    upper: float = 1_000_000.0
    """Upper bound of the rate search."""
    error: float = 1000.0
    """Stop the search when upper - lower <= error (seed 000: 100 or 1000)."""
    acceptance: float = 0.0
    """Loss ratio a passing trial may show in every direction (0 by RFC 2544; seed 004: 0.0001)."""
    duration: float = 60.0
    """Seconds of each phase-2 trial."""
    timeout: float = 2.0
    """Seconds the tester waits for frames after sending (passed to the tester by its own settings)."""
    gap: float = 10.0
    """Seconds between phase 1 and phase 2."""
    max_invalid: int = 3
    """Invalid retries of one step before the repetition fails."""
    fill_rate: float | None = None
    """Safe phase-1 rate for filling the table (throughput, FLR, latency, PDV, tear-down)."""
    directions: Directions = Directions.BIDIRECTIONAL
    """Active phase-2 directions."""
    rate_tolerance: float = 0.001
    """Relative shortfall of the achieved rate that still counts as keeping the rate."""
    table_slack: int = 64
    """Extra connections the DUT table may hold beyond the test's (e.g. its own management session)."""
    table_drift: int = 0
    """Change of the DUT table count between phase-2 steps still tolerated (background traffic of the DUT)."""
    check_table: bool = True
    """Count the DUT's connections to check steps (where the DUT can count)."""
    refill: str = "auto"
    """When to refill the table between phase-2 steps: ``auto`` or ``always`` (see module docstring)."""
    refill_after: float | None = None
    """Refill before a phase-2 step that would end more than this many seconds after the fill (e.g. the
    DUT's UDP timeout minus a margin), so no connection expires during a step; None: no time limit."""
    rate: float | None = None
    """Fixed rate of latency / PDV / validation / FLR base (default: from an earlier metric at the point)."""
    rates: tuple[float, ...] | None = None
    """Frame loss rate: the per-direction rates to test, highest first (overrides ``fractions``)."""
    fractions: tuple[float, ...] = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
    """Frame loss rate: fractions of the base rate (``rate`` or ``upper``) to test, highest first (RFC 2544 26.3)."""
    flr_stop_after_zero: int = 2
    """Frame loss rate: stop after this many consecutive loss-free rates (RFC 2544: 2; 0 = test all)."""
    latency_rate: float = 1000.0
    """Tagged (timestamped) frames per second per direction for latency / PDV."""
    selection: str = "random"
    """Responder state-table entry selection in phase 2: random, linear or fixed."""
    algorithm: str = "binary"
    """Throughput search: ``binary`` (RFC 2544) or ``mlr`` (MLRsearch 1.2.1, extra ``mlr``)."""
    alpha: float = 1.0
    """Capacity / validation: validation rate = alpha * tested rate (siitperf's alpha)."""
    reverse_rate: float | None = None
    """Validation: rate of the reverse frames (default: alpha * the phase-1 rate)."""
    beta: float = 0.2
    """Capacity: the exponential search stops when the rate falls below beta * previous rate."""
    gamma: float = 0.4
    """Capacity: a final-search probe fails when its rate is below gamma * the safe rate."""
    capacity_error: int | None = None
    """Capacity: stop width in connections (default: one source port's worth, |D|)."""
    capacity_start: int | None = None
    """Capacity: first (safe) number of connections C0 (default: the point's connections)."""
    capacity_max: int | None = None
    """Capacity: largest number of connections probed (default: the whole source port space)."""
    empty_repetitions: int | None = None
    """Tear-down: time the empty-table delete (T_0) in the first this many repetitions of a point only and
    reuse the median of those T_0 in later ones (seed 000, 3.4); None: every repetition times it."""
    monitor_interval: float | None = None
    """Sample the DUTs' per-core CPU idle time every this many seconds during each traffic trial (None: off)."""
    on_search_error: str = "record"
    """``record``: a repetition that cannot finish is stored as failed and the run goes on; ``raise``: abort."""

    def __post_init__(self) -> None:
        choices = {"refill": ("auto", "always"), "algorithm": ("binary", "mlr"), "on_search_error": ("record", "raise")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"must be one of {', '.join(allowed)}, got {getattr(self, name)!r}", field=name)
        if self.repetitions < 1:
            raise ConfigError(f"must be at least 1, got {self.repetitions}", field="repetitions")
        if not 0 <= self.acceptance < 1:
            raise ConfigError(f"must be in [0, 1), got {self.acceptance}", field="acceptance")
        if self.max_invalid < 0:
            raise ConfigError(f"must be >= 0, got {self.max_invalid}", field="max_invalid")

    @classmethod
    def from_any(cls, obj: Any, **overrides: Any) -> MetricSettings:
        """Build from a mapping, a pydantic model or a dataclass; unknown fields are ignored.

        ``overrides`` that are not None replace fields (e.g. the campaign-wide acceptance).
        The campaign schema's names ``tagged_rate``, ``min_connections``, ``max_connections`` and
        ``connection_error`` are accepted for ``latency_rate`` and the ``capacity_*`` fields.
        """
        if isinstance(obj, MetricSettings):
            return dataclasses.replace(obj, **{k: v for k, v in overrides.items() if v is not None})
        if obj is None:
            obj = {}
        if hasattr(obj, "model_dump"):
            data = obj.model_dump()
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            data = dataclasses.asdict(obj)
        else:
            data = dict(obj)
        data = dict(data)
        data.update({k: v for k, v in overrides.items() if v is not None})
        for alias, name in _ALIASES.items():
            if data.get(alias) is not None and data.get(name) is None:
                data[name] = data[alias]
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names and v is not None}
        if "directions" in kwargs:
            kwargs["directions"] = Directions(str(getattr(kwargs["directions"], "value", kwargs["directions"])))
        for name in ("fractions", "rates"):
            if name in kwargs:
                kwargs[name] = tuple(float(f) for f in kwargs[name])
        return cls(**kwargs)


_ALIASES = {
    "tagged_rate": "latency_rate",
    "min_connections": "capacity_start",
    "max_connections": "capacity_max",
    "connection_error": "capacity_error",
}


@dataclass
class ProcedureContext:
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
    """Procedure name."""
    repetition: int
    """Repetition number, 0-based."""
    settings: MetricSettings
    """This metric's settings."""
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
            ext.setdefault("duration", phase.duration)
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
        self.emit(rec)
        return rec

    def result(self, value: float | None, unit: str, *, error: float | None = None, **extra: Any) -> RepetitionResult:
        """Build this repetition's result."""
        return RepetitionResult(self.point.id, self.metric, self.repetition, value, unit, error, extra)


# ---------------------------------------------------------------------------- verdicts
_TESTER_REASONS = ("tester could not keep the rate", "tester fell behind")


def is_tester_limited(record: TrialRecord) -> bool:
    """True when ``record`` is invalid because the tester could not send at the intended rate."""
    return record.verdict is Verdict.INVALID and record.reason.startswith(_TESTER_REASONS)


def judge_phase(
    phase: PhaseResult, settings: MetricSettings, *, acceptance: float | None = None
) -> tuple[Verdict, str]:
    """Verdict of a phase result from its counts: invalid (tester / counts), fail (loss) or pass."""
    if not phase.tester_ok:
        return Verdict.INVALID, f"tester could not keep the rate: {phase.tester_note or 'no reason given'}"
    if phase.intended_rate > 0 and phase.achieved_rate < phase.intended_rate * (1 - settings.rate_tolerance):
        short = 1 - phase.achieved_rate / phase.intended_rate
        return (
            Verdict.INVALID,
            f"tester fell behind: achieved {phase.achieved_rate:.6g} of {phase.intended_rate:.6g} ({short:.2%} short)",
        )
    if not phase.counts:
        return Verdict.INVALID, "no counts reported"
    for d, c in phase.counts.items():
        if min(c.sent, c.received, c.valid) < 0 or c.valid > c.received or c.valid > c.sent:
            return Verdict.INVALID, f"inconsistent {d} counts: sent {c.sent}, received {c.received}, valid {c.valid}"
    limit = settings.acceptance if acceptance is None else acceptance
    worst = max(phase.counts.items(), key=lambda kv: kv[1].loss_ratio)
    if worst[1].loss_ratio > limit:
        d, c = worst
        return Verdict.FAIL, f"{d} loss {c.lost}/{c.sent} = {c.loss_ratio:.6%} > {limit:.6%}"
    return Verdict.PASS, ""


def monitor_columns(samples: Mapping[str, Sequence[Mapping[str, Any]]], interval: float) -> dict[str, Any]:
    """DUT monitor samples (``{dut: [{"t", "idle": {core: %}, ...}, ...]}``) in the stored, columnar form.

    ``{dut: {"interval", "t": [...], "idle": {core: [...]}, <other sample keys>: [...]}}``: one list
    entry per sample, each core its own series (seed 004 plots every core, never an average).
    """
    out: dict[str, Any] = {}
    for dut, rows in samples.items():
        cores: list[str] = []
        for r in rows:
            for c in r.get("idle") or {}:
                if c not in cores:
                    cores.append(c)
        col: dict[str, Any] = {"interval": interval, "t": [r.get("t") for r in rows]}
        col["idle"] = {c: [(r.get("idle") or {}).get(c) for r in rows] for c in cores}
        for key in sorted({k for r in rows for k in r} - {"t", "idle"}):
            col[key] = [r.get(key) for r in rows]
        out[str(dut)] = col
    return out


def _traffic(ctx: ProcedureContext, call: Callable[[], PhaseResult]) -> tuple[PhaseResult, dict[str, Any]]:
    """Run one tester call, sampling the DUT monitor around it when asked and available.

    A tester with the optional ``set_receive_timeout`` hook first gets the metric's ``timeout``.
    """
    if isinstance(ctx.tester, SetsReceiveTimeout):
        ctx.tester.set_receive_timeout(ctx.settings.timeout)
    interval = ctx.settings.monitor_interval
    start = getattr(ctx.dut, "start_monitor", None)
    stop = getattr(ctx.dut, "stop_monitor", None)
    if not interval or not callable(start) or not callable(stop):
        return call(), {}
    start(interval)
    try:
        phase = call()
    finally:
        samples = stop()
    return phase, ({"monitor": monitor_columns(samples, interval)} if samples else {})


def _direction_extra(settings: MetricSettings) -> dict[str, Any]:
    """How results and trials name their directions: ``directions`` = number of active directions
    (2 for bidirectional: reports multiply per-direction fps by it), ``direction_mode`` = the mode."""
    return {"directions": len(settings.directions.active), "direction_mode": str(settings.directions)}


def dut_supports(dut: Any, operation: str) -> bool:
    """Whether ``dut`` can do ``operation`` (e.g. ``count_connections``).

    A DUT may offer the optional capability hook ``supports(operation) -> bool``; without it every
    protocol operation is assumed available (a DUT may still raise NotImplementedError).
    """
    hook = getattr(dut, "supports", None)
    return bool(hook(operation)) if callable(hook) else True


def _count(ctx: ProcedureContext) -> int | None:
    """The DUT's connection count, or None when the DUT cannot count (or checks are off)."""
    if not ctx.settings.check_table or not dut_supports(ctx.dut, "count_connections"):
        return None
    try:
        return int(ctx.dut.count_connections())
    except NotImplementedError:
        return None


def _check_filled(ctx: ProcedureContext, phase: PhaseResult, extra: dict[str, Any]) -> tuple[Verdict, str] | None:
    """After a passing phase 1: INVALID unless the table holds the connections the valid frames created."""
    count = _count(ctx)
    if count is None:
        return None
    extra["dut_connections"] = count
    sent = sum(c.sent for c in phase.counts.values())
    valid = sum(c.valid for c in phase.counts.values())
    if count < valid:
        return Verdict.INVALID, f"DUT table holds {count} connections but {valid} phase-1 frames arrived"
    if count > sent + ctx.settings.table_slack:
        return Verdict.INVALID, f"DUT table holds {count} connections, more than the {sent} frames sent"
    return None


# ---------------------------------------------------------------------------- building blocks
def _phase1_step(
    ctx: ProcedureContext,
    rate: float,
    *,
    learn: bool,
    kind: str,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
) -> TrialRecord:
    """Empty the table, run phase 1 at ``rate``, judge it (incl. the table check) and store it."""
    ctx.dut.reset_connections()
    started = ctx.clock()
    phase, mon = _traffic(ctx, lambda: ctx.tester.phase1(rate, learn))
    verdict, reason = judge_phase(phase, ctx.settings)
    ext: dict[str, Any] = {**(extra or {}), **mon}
    if verdict is Verdict.PASS:
        bad = _check_filled(ctx, phase, ext)
        if bad:
            verdict, reason = bad
    return ctx.record(kind, phase, verdict, reason, started, lower=lower, upper=upper, extra=ext)


#: Mappings compared with the phase-1 enumeration before computed (ResponderMode.COMPUTE) tuples are trusted.
PRESERVATION_SAMPLE = 256


def _responder_tuples(ctx: ProcedureContext) -> tuple[DutMapping, ...] | None:
    """After a phase 1: what the Responder needs to answer the DUT's tuples in the campaign's responder mode.

    * READ: the DUT's mappings, handed to a tester with the ``load_mappings`` hook (for ``validate``)
      and returned for :attr:`Phase2Options.mappings`;
    * COMPUTE: the tester computes public tuples as if the DUT kept every source port, so the first
      time in a repetition a sample of the DUT's mappings is checked against the phase-1 enumeration
      (SearchError when a port moved, the wrong public address was used or the pair was never sent);
      a DUT that cannot list its mappings is trusted as configured (the trial records ``unverified``);
    * LEARN: nothing (the tester learned the tuples itself).
    """
    mode = ctx.plan.responder_mode
    if mode is ResponderMode.READ:
        mappings = tuple(ctx.dut.mappings())
        if not mappings:
            raise SearchError("responder mode read: the DUT listed no mappings after phase 1")
        if isinstance(ctx.tester, LoadsMappings):
            ctx.tester.load_mappings(mappings)
        return mappings
    if mode is ResponderMode.COMPUTE and ctx.preservation is None:
        ctx.preservation = _check_preservation(ctx)
    return None


def _check_preservation(ctx: ProcedureContext) -> str:
    """``verified`` or ``unverified`` (the DUT cannot list mappings); SearchError when ports were not preserved."""
    if not dut_supports(ctx.dut, "mappings"):
        return "unverified"
    try:
        mappings = list(ctx.dut.mappings())
    except (NotImplementedError, DutError):
        return "unverified"
    plan = ctx.plan
    if not mappings:
        raise SearchError("responder mode compute: the DUT listed no mappings after phase 1, cannot check ports")
    step = max(1, len(mappings) // PRESERVATION_SAMPLE)
    public = str(plan.addresses.dut_public)
    for m in mappings[::step][:PRESERVATION_SAMPLE]:
        moved = m.private_port is not None and m.private_port != m.public_port
        if moved or m.public_port not in plan.src_ports or m.remote_port not in plan.dst_ports:
            raise SearchError(
                f"responder mode compute, but the DUT does not preserve source ports: mapping "
                f"{m.private_port}->{m.public_address}:{m.public_port} (remote port {m.remote_port}) is not a "
                f"phase-1 pair of {plan.src_ports} x {plan.dst_ports}; use responder: read"
            )
        if m.public_address != public:
            raise SearchError(
                f"responder mode compute, but the DUT used public address {m.public_address}, not {public}; "
                "set traffic.addresses.dut_public or use responder: read"
            )
    return "verified"


def _retry(ctx: ProcedureContext, what: str, run: Callable[[], TrialRecord]) -> TrialRecord:
    """Run a non-search trial, retrying invalid ones up to ``max_invalid`` times."""
    for _ in range(ctx.settings.max_invalid + 1):
        rec = run()
        if rec.verdict is not Verdict.INVALID:
            return rec
    raise SearchError(f"{what}: {ctx.settings.max_invalid + 1} invalid trials in a row; last: {rec.reason}")


def _fill_rate(ctx: ProcedureContext) -> float:
    s = ctx.settings
    if s.fill_rate:
        return float(s.fill_rate)
    cps = ctx.prior.get("cps")
    if cps:
        return float(math.floor(statistics.median(cps) / 2)) or 1.0
    raise SearchError(f"{ctx.metric} needs fill_rate (or a cps result measured earlier at this point)")


class _Filler:
    """Fills the table for phase-2 metrics and decides when it must be refilled."""

    def __init__(self, ctx: ProcedureContext) -> None:
        self.ctx = ctx
        self.rate = _fill_rate(ctx)
        self.filled: int | None = None
        self.needed = True
        self.mappings: tuple[DutMapping, ...] | None = None
        self.filled_at = 0.0

    def ensure(self) -> None:
        """Fill (empty + phase 1 with learning + gap) if needed."""
        ctx = self.ctx
        s = ctx.settings
        if s.refill_after and ctx.clock() - self.filled_at + s.duration > s.refill_after:
            self.needed = True
        if not (self.needed or s.refill == "always"):
            return
        rec = _retry(ctx, "filling the table", lambda: _phase1_step(ctx, self.rate, learn=True, kind="fill"))
        if rec.verdict is Verdict.FAIL:
            raise SearchError(
                f"filling the table at fill_rate {self.rate:g} lost frames ({rec.reason}); lower fill_rate"
            )
        self.filled = rec.extra.get("dut_connections")
        self.mappings = _responder_tuples(ctx)
        self.needed = False
        self.filled_at = rec.started_at  # connections exist from the start of phase 1 on
        if ctx.settings.gap > 0:
            ctx.sleep(ctx.settings.gap)

    def options(self, latency: bool = False) -> Phase2Options:
        """Phase-2 options for the next step."""
        s = self.ctx.settings
        return Phase2Options(
            latency=latency, latency_rate=s.latency_rate, selection=s.selection, mappings=self.mappings
        )

    def after(self, verdict: Verdict, reason: str, extra: dict[str, Any]) -> tuple[Verdict, str]:
        """Check the table after a phase-2 step; INVALID (and refill) when it changed."""
        count = _count(self.ctx)
        if count is None:
            if verdict is Verdict.FAIL:
                self.needed = True
            return verdict, reason
        extra["dut_connections"] = count
        if self.filled is not None and abs(count - self.filled) > self.ctx.settings.table_drift:
            self.needed = True
            if verdict is not Verdict.INVALID:
                return Verdict.INVALID, f"DUT table changed from {self.filled} to {count} connections during phase 2"
        return verdict, reason


def _phase2_step(
    ctx: ProcedureContext,
    filler: _Filler | None,
    rate: float,
    *,
    latency: bool = False,
    lower: float | None = None,
    upper: float | None = None,
    kind: str = "phase2",
    acceptance: float | None = None,
) -> TrialRecord:
    """(Re)fill if needed, run phase 2 at ``rate``, judge and store it."""
    if filler is not None:
        filler.ensure()
        options = filler.options(latency)
    else:
        s = ctx.settings
        options = Phase2Options(latency=latency, latency_rate=s.latency_rate, selection=s.selection)
    started = ctx.clock()
    s = ctx.settings
    phase, mon = _traffic(ctx, lambda: ctx.tester.phase2(rate, s.duration, s.directions, options))
    verdict, reason = judge_phase(phase, ctx.settings, acceptance=acceptance)
    missing = [str(d) for d in s.directions.active if d not in phase.counts]
    if missing:
        verdict, reason = Verdict.INVALID, f"the tester reported no counts for {', '.join(missing)}"
    extra: dict[str, Any] = {**_direction_extra(ctx.settings), **mon}
    if filler is not None:
        verdict, reason = filler.after(verdict, reason, extra)
    value = max((c.loss_ratio for c in phase.counts.values()), default=None) if phase.counts else None
    return ctx.record(kind, phase, verdict, reason, started, lower=lower, upper=upper, value=value, extra=extra)


def _search(
    ctx: ProcedureContext,
    lower: float,
    upper: float,
    trial: Callable[[SearchStep], TrialRecord],
    stop_below: float | None = None,
) -> SearchOutcome:
    s = ctx.settings
    search = BinarySearch(lower, upper, s.error, max_invalid=s.max_invalid, stop_below=stop_below)

    while not search.done:
        step = search.next_step()
        rec = trial(step)
        search.report(rec.verdict, reason=rec.reason, tester_limited=is_tester_limited(rec))
    return search.outcome()


def _search_extra(out: SearchOutcome) -> dict[str, Any]:
    return {
        "steps": out.steps,
        "invalid": out.invalid,
        "at_upper_limit": out.at_upper_limit,
        "tester_bound": out.tester_bound,
        "tester_ceiling": out.tester_ceiling,
        "lower": out.lower,
        "upper": out.upper,
    }


def _from_prior(ctx: ProcedureContext, metric: str) -> float:
    if ctx.settings.rate:
        return float(ctx.settings.rate)
    values = [v for v in ctx.prior.get(metric, ()) if v is not None]
    if not values:
        raise SearchError(f"{ctx.metric} needs a rate: set metrics.{ctx.metric}.rate or measure {metric} first")
    return float(statistics.median(values))


# ---------------------------------------------------------------------------- procedures
def cps(ctx: ProcedureContext) -> RepetitionResult:
    """Maximum connection establishment rate: binary search with phase 1 only, table emptied every step."""
    s = ctx.settings
    out = _search(
        ctx,
        s.lower,
        s.upper,
        lambda st: _phase1_step(ctx, st.rate, learn=False, kind="phase1", lower=st.lower, upper=st.upper),
    )
    return ctx.result(out.value, "cps", error=out.error, **_search_extra(out))


def throughput(ctx: ProcedureContext) -> RepetitionResult:
    """Throughput: fill (phase 1), gap, then a binary search of phase-2 trials (per-direction fps)."""
    s = ctx.settings
    filler = _Filler(ctx)
    if s.algorithm == "mlr":
        return _throughput_mlr(ctx, filler)
    out = _search(ctx, s.lower, s.upper, lambda st: _phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper))
    return _throughput_result(ctx, out)


def _throughput_result(ctx: ProcedureContext, out: SearchOutcome, **extra: Any) -> RepetitionResult:
    """A throughput search's result: per-direction fps plus all frames per second (x active directions)."""
    n = len(ctx.settings.directions.active)
    return ctx.result(
        out.value,
        "fps",
        error=out.error,
        **_direction_extra(ctx.settings),
        all_frames_per_second=out.value * n,
        **extra,
        **_search_extra(out),
    )


def forwarding(ctx: ProcedureContext) -> RepetitionResult:
    """Plain forwarding baseline: throughput binary search of phase-2 trials without state (no phase 1).

    The DUT's table is emptied first (when it has one) so that no state left by an earlier metric
    helps or hinders the baseline, and a restarted repetition sees the same DUT state.
    """
    s = ctx.settings
    table_reset = _optional_reset(ctx)
    out = _search(ctx, s.lower, s.upper, lambda st: _phase2_step(ctx, None, st.rate, lower=st.lower, upper=st.upper))
    return _throughput_result(ctx, out, table_reset=table_reset)


def _optional_reset(ctx: ProcedureContext) -> bool:
    """Empty the DUT table when the DUT has one (a stateless forwarding recipe has no reset step)."""
    if not dut_supports(ctx.dut, "reset_connections"):
        return False
    try:
        ctx.dut.reset_connections()
    except (NotImplementedError, DutError):
        return False  # no table to empty; a broken DUT shows up in the next trial
    return True


def frame_loss(ctx: ProcedureContext) -> RepetitionResult:
    """Frame loss rate (RFC 2544 26.3) at fractions of a base rate, highest first."""
    s = ctx.settings
    base = float(s.rate) if s.rate else float(s.upper)
    rates = list(s.rates) if s.rates else [base * f for f in s.fractions]
    filler = _Filler(ctx)
    curve: list[list[float]] = []
    zero_run = 0
    for rate in rates:

        def trial(rate: float = rate) -> TrialRecord:
            return _phase2_step(ctx, filler, rate)

        rec = _retry(ctx, f"frame loss at {rate:g}", trial)
        flr = float(rec.value or 0.0)
        curve.append([rate, flr])
        zero_run = zero_run + 1 if flr == 0 else 0
        if s.flr_stop_after_zero and zero_run >= s.flr_stop_after_zero:
            break
    return ctx.result(curve[0][1], "ratio", rate=curve[0][0], curve=curve, **_direction_extra(s))


def _latency_trial(ctx: ProcedureContext) -> tuple[float, dict[str, dict[str, float]], dict[str, Any]]:
    rate = _from_prior(ctx, "throughput")
    filler = _Filler(ctx)
    rec = _retry(ctx, f"latency at {rate:g}", lambda: _phase2_step(ctx, filler, rate, latency=True))
    lat = rec.extra.get("latency") or {}
    if not lat:
        raise SearchError("the tester returned no latency samples")
    # RFC 8219 measures latency at the throughput rate; loss above the acceptance is reported beside the value
    return rate, lat, {"rate": rate, "verdict": str(rec.verdict), "reason": rec.reason}


def latency(ctx: ProcedureContext) -> RepetitionResult:
    """Latency at the throughput rate: typical (median) and worst case (99.9th percentile) per direction."""
    _rate, lat, info = _latency_trial(ctx)
    worst = max(lat.values(), key=lambda v: v["median"])
    return ctx.result(
        worst["median"],
        "s",
        **info,
        worst_case=max(v["p99_9"] for v in lat.values()),
        per_direction={d: {"median": v["median"], "p99_9": v["p99_9"]} for d, v in lat.items()},
    )


def pdv(ctx: ProcedureContext) -> RepetitionResult:
    """Packet delay variation D99.9 - Dmin (RFC 8219 7.3.1) at the throughput rate, worst direction."""
    _rate, lat, info = _latency_trial(ctx)
    per = {d: v["p99_9"] - v["minimum"] for d, v in lat.items()}
    return ctx.result(max(per.values()), "s", per_direction=per, **info)


def teardown(ctx: ProcedureContext) -> RepetitionResult:
    """Connection tear-down rate N / (T_N - T_0): timed delete of a filled, then of an empty table."""
    rate = _fill_rate(ctx)
    fill = _retry(ctx, "filling the table", lambda: _phase1_step(ctx, rate, learn=False, kind="fill"))
    if fill.verdict is Verdict.FAIL:
        raise SearchError(f"filling the table at fill_rate {rate:g} lost frames ({fill.reason}); lower fill_rate")
    n = fill.extra.get("dut_connections")
    if n is None:
        n = sum(c["valid"] for c in fill.counts.values())
    if ctx.settings.gap > 0:
        ctx.sleep(ctx.settings.gap)
    started = ctx.clock()
    t_n = float(ctx.dut.timed_flush())
    ctx.record("flush_filled", None, Verdict.PASS, "", started, value=t_n, extra={"connections": n})
    left = _count(ctx)
    if left:
        raise SearchError(f"the DUT still held {left} connections after its delete-all; T_0 is not an empty-table time")
    reused = _reused_t0(ctx)
    if reused is None:
        started = ctx.clock()
        t_0 = float(ctx.dut.timed_flush())
        ctx.record(
            "flush_empty",
            None,
            Verdict.PASS,
            "",
            started,
            value=t_0,
            extra={} if left is None else {"dut_connections_before": left},
        )
    else:
        t_0 = reused
    deletion = t_n - t_0
    if deletion <= 0:
        raise SearchError(f"filled-table delete time {t_n:g} s is not above the empty-table time {t_0:g} s")
    # T_N / T_0 are the methodology's names (T_0 = the value used); filled_delete_s / empty_delete_s the
    # report columns' (empty_delete_s only when this repetition timed the empty table)
    return ctx.result(
        n / deletion,
        "conn/s",
        T_N=t_n,
        T_0=t_0,
        filled_delete_s=t_n,
        empty_delete_s=t_0 if reused is None else None,  # reports take min/max over measured T_0 only
        deletion_time=deletion,
        connections=n,
        T_0_measured=reused is None,
    )


def _reused_t0(ctx: ProcedureContext) -> float | None:
    """The median T_0 of this point's earlier repetitions once ``empty_repetitions`` of them timed it, else None."""
    k = ctx.settings.empty_repetitions
    if not k or ctx.repetition < k:
        return None
    measured = [
        float(r.extra["T_0"])
        for r in ctx.earlier
        if r.value is not None and r.extra.get("T_0_measured", True) and r.extra.get("T_0") is not None
    ]
    if len(measured) < k:  # some of the first k failed: keep timing until k T_0 values exist
        return None
    return float(statistics.median(measured))


def validation(ctx: ProcedureContext) -> RepetitionResult:
    """Validation of connection establishment: phase 1 at r, then one reverse frame per learned tuple."""
    rate = _from_prior(ctx, "cps")
    ok, rec = _validated_step(ctx, rate, gap=ctx.settings.gap)
    return ctx.result(1.0 if ok else 0.0, "pass", rate=rate, reason=rec.reason)


def _validated_step(
    ctx: ProcedureContext,
    rate: float,
    *,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
    gap: float = 0.0,
) -> tuple[bool, TrialRecord]:
    """Phase 1 at ``rate`` with learning, [gap], then ``tester.validate(reverse rate)``; both stored.

    The reverse rate is ``reverse_rate`` when set, else ``alpha * rate``. Validation passes only when
    every reverse frame arrived (acceptance 0), whatever the metric's acceptance.
    """
    reverse = float(ctx.settings.reverse_rate) if ctx.settings.reverse_rate else rate * ctx.settings.alpha

    def attempt() -> TrialRecord:
        return _phase1_step(ctx, rate, learn=True, kind="phase1", lower=lower, upper=upper, extra=extra)

    p1 = _retry(ctx, f"phase 1 at {rate:g}", attempt)
    if p1.verdict is not Verdict.PASS:
        return False, p1
    if ctx.plan.responder_mode is ResponderMode.READ and not isinstance(ctx.tester, LoadsMappings):
        raise SearchError(
            "responder mode read: this tester has no load_mappings hook, so validation cannot use the DUT's tuples"
        )
    _responder_tuples(ctx)  # READ: the tester answers the DUT's tuples; COMPUTE: checked to be port-preserving
    if gap > 0:
        ctx.sleep(gap)

    def check() -> TrialRecord:
        started = ctx.clock()
        phase, mon = _traffic(ctx, lambda: ctx.tester.validate(reverse))
        verdict, reason = judge_phase(phase, ctx.settings, acceptance=0.0)
        ext = {**(extra or {}), **mon}
        return ctx.record("validation", phase, verdict, reason, started, lower=lower, upper=upper, extra=ext)

    v = _retry(ctx, f"validation at {rate:g}", check)
    return v.verdict is Verdict.PASS, v


def capacity(ctx: ProcedureContext) -> RepetitionResult:
    """Connection tracking table capacity (siitperf's cttc.sh method): exponential, then binary search on C.

    Each probe of C connections is a cps binary search in [0, RS] whose steps are validated
    (phase 1 with learning + reverse validation at alpha * rate). The exponential search doubles C
    until the rate drops below beta * RS; the final binary search keeps C when its rate stays at
    or above gamma * RS, until the interval is within ``capacity_error`` connections.
    C moves in whole source ports: the point's destination range stays fixed and the source range
    (starting at the point's first source port) grows or shrinks, so C = n_src * |D|.
    """
    s = ctx.settings
    n_dst = len(ctx.point.dst_ports)
    first = ctx.point.src_ports.first
    max_src = 65535 - first + 1
    if s.capacity_max:
        max_src = max(1, min(max_src, s.capacity_max // n_dst))
    width = max(1, math.ceil((s.capacity_error or n_dst) / n_dst))
    start = min(max(1, math.ceil(int(s.capacity_start or ctx.point.connections) / n_dst)), max_src)
    probes: list[list[float]] = []

    def probe(n_src: int, upper: float, stop_below: float | None, stage: str) -> float:
        src = PortRange(first, first + n_src - 1)
        ctx.tester.prepare(dataclasses.replace(ctx.plan, src_ports=src, dst_ports=ctx.point.dst_ports))
        tag = {"stage": stage, "connections": n_src * n_dst}
        if upper <= s.error:
            probes.append([n_src * n_dst, 0.0])
            return 0.0

        def step(st: SearchStep) -> TrialRecord:
            # the last record of a validated step (a failed phase 1, or the validation) carries its verdict
            return _validated_step(ctx, st.rate, lower=st.lower, upper=st.upper, extra=tag)[1]

        out = _search(ctx, 0.0, upper, step, stop_below=stop_below)
        probes.append([n_src * n_dst, out.value])
        return out.value

    exhausted = False
    try:
        s_s = start
        r_s = probe(s_s, s.upper, None, "initial")
        if r_s <= 0:
            raise SearchError(f"no rate passed with the starting {s_s * n_dst} connections; lower capacity_start")
        while True:
            if s_s >= max_src:
                exhausted = True
                s_t = s_s
                break
            s_t = min(2 * s_s, max_src)
            r_t = probe(s_t, r_s, s.beta * r_s, "exponential")
            if r_t < s.beta * r_s:
                break
            s_s, r_s = s_t, r_t
        while s_t - s_s > width:
            mid = (s_s + s_t) // 2
            r = probe(mid, r_s, s.gamma * r_s, "final")
            if r < s.gamma * r_s:
                s_t = mid
            else:
                s_s, r_s = mid, r
    finally:
        ctx.tester.prepare(ctx.plan)
    return ctx.result(
        float(s_s * n_dst),
        "conn",
        error=float((s_t - s_s) * n_dst),
        rate_at_capacity=r_s,
        probes=probes,
        port_space_exhausted=exhausted,
    )


def _throughput_mlr(ctx: ProcedureContext, filler: _Filler) -> RepetitionResult:
    """Throughput by MLRsearch 1.2.1 (one goal: acceptance loss ratio, exceed ratio 0, relative width from error)."""
    s = ctx.settings

    def measure(load: float) -> tuple[int, int]:
        rec = _retry(ctx, f"MLRsearch trial at {load:g}", lambda: _phase2_step(ctx, filler, load))
        return sum(c["sent"] for c in rec.counts.values()), sum(c["valid"] for c in rec.counts.values())

    value = mlr_search(
        measure, lower=s.lower, upper=s.upper, error=s.error, loss_ratio=s.acceptance, duration=s.duration
    )
    n = len(s.directions.active)
    return ctx.result(value, "fps", all_frames_per_second=value * n, algorithm="mlr", **_direction_extra(s))


PROCEDURES: dict[str, Callable[[ProcedureContext], RepetitionResult]] = {
    "cps": cps,
    "throughput": throughput,
    "frame_loss": frame_loss,
    "latency": latency,
    "pdv": pdv,
    "teardown": teardown,
    "capacity": capacity,
    "validation": validation,
    "forwarding": forwarding,
}
"""Metric name -> procedure running one repetition."""


def run_repetition(ctx: ProcedureContext) -> RepetitionResult:
    """Run one repetition of ``ctx.metric``; a SearchError becomes a failed result when ``on_search_error='record'``."""
    try:
        proc = PROCEDURES[ctx.metric]
    except KeyError:
        raise SearchError(f"unknown metric {ctx.metric!r}; known: {', '.join(METRICS)}") from None
    try:
        return proc(ctx)
    except SearchError as exc:
        if ctx.settings.on_search_error == "raise":
            raise
        return ctx.result(None, _UNITS.get(ctx.metric, ""), error=None, failed=str(exc))


_UNITS = {
    "cps": "cps",
    "throughput": "fps",
    "forwarding": "fps",
    "frame_loss": "ratio",
    "latency": "s",
    "pdv": "s",
    "teardown": "conn/s",
    "capacity": "conn",
    "validation": "pass",
}
