"""Phase-2 trials on a filled table: the :class:`Filler` that (re)fills it, and :func:`phase2_step`.

Throughput, frame loss, latency and PDV fill the table once per repetition (phase 1 at ``fill_rate``
with learning), wait ``gap``, then run phase-2 steps. ``refill="auto"`` (default): after every phase-2
step the table is counted; if it changed, the step is INVALID (frames created or deleted connections,
which RFC 9693 forbids) and the table is emptied and refilled before the next step; a DUT that cannot
count is refilled after every failed step (overload may have disturbed it). ``refill="always"`` empties
and refills before every phase-2 step, as siitperf's scripts do. Forwarding runs phase-2 steps without
a filler (no phase 1).

**The timeout guard.** With ``refill="auto"`` a whole search may run on one fill, so the connections must
outlive many steps, not one (RFC 9693: none may expire). Before every step the filler measures the real time
since its fill began (``ctx.clock``) and refills when that time plus the step's ``duration`` plus its receive
wait (``timeout``) would pass the limit: the smaller of ``refill_after`` and the DUT's own connection timeout
(:func:`~natbench.metrics.lifetime.connection_timeout`, the smallest UDP timeout among its facts), so
``refill_after`` can only make the guard stricter. Every phase-2 trial records ``extra["since_fill"]`` (seconds
from the start of its fill to the start of the trial); when no limit is known the guard is off, each phase-2 trial
records ``extra["timeout_guard"] = "off"`` and the run's observers get one warning. A fill that leaves no room for
even one step is a :class:`~natbench.errors.SearchError` (lower the connections or the fill time, or raise the
DUT's timeout).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from natbench.errors import SearchError
from natbench.judging import judge_phase, judge_stopped
from natbench.metrics.context import ProcedureContext, RunOptions
from natbench.metrics.fill import fill_table
from natbench.metrics.lifetime import connection_limit
from natbench.metrics.lifetime import connection_timeout as connection_timeout
from natbench.metrics.memory import FillMemory
from natbench.metrics.responder import responder_tuples
from natbench.metrics.settings import FilledTableSettings, Phase2Settings
from natbench.metrics.trial import count_connections, direction_extra, run_traffic
from natbench.plugins import MappingTable, Phase2Options
from natbench.plugins.tester import LossStop
from natbench.results import TrialRecord, Verdict
from natbench.search import TrialRequest, TrialRunner


class Filler:
    """Fills the table for phase-2 metrics and decides when it must be refilled."""

    def __init__(self, ctx: ProcedureContext[FilledTableSettings]) -> None:
        self.ctx = ctx
        self.rate = float(ctx.settings.fill_rate)
        self.filled: int | None = None
        self.needed = True
        self.mappings: MappingTable | None = None
        self.read_s: float | None = None
        """Seconds the last read of the DUT's table took (responder mode read), until the next step records it."""
        self.filled_at = 0.0
        found = connection_limit(ctx.settings, ctx.dut)
        self.limit: float | None = found[0] if found else None
        """Seconds after the start of a fill by which every phase-2 step, with its receive wait, must have ended:
        the smaller of ``refill_after`` and the DUT's timeout (None: no limit known, the guard is off)."""
        self.limit_source = found[1] if found else None
        if found is None:
            ctx.warn(
                f"{ctx.metric}: DUT-timeout guard off: neither refill_after nor the DUT's facts name a connection "
                "timeout, so connections may expire during a search on one fill unnoticed (set refill_after)"
            )

    def since_fill(self) -> float:
        """Seconds of real time (``ctx.clock``) since the current fill began."""
        return self.ctx.clock() - self.filled_at

    def step_time(self, duration: float) -> float:
        """Seconds a phase-2 step of ``duration`` seconds relies on the connections: its duration plus the receive
        wait (``timeout``) for the frames still in flight."""
        return float(duration) + float(self.ctx.settings.timeout)

    def ensure(self, duration: float) -> None:
        """Fill (empty + phase 1 with learning + gap) if needed, or if the next step, of ``duration`` seconds, could
        outlive the limit."""
        ctx = self.ctx
        s = ctx.settings
        if self.limit is not None and self.since_fill() + self.step_time(duration) > self.limit:
            self.needed = True
        if not (self.needed or s.refill == "always"):
            return
        fill = fill_table(ctx, self.rate, learn=True, memory=FillMemory(ctx.dut, ctx.sleep))
        rec = fill.record
        self.filled = rec.extra.get("dut_connections")
        read = ctx.clock()
        self.mappings = fill.mappings if fill.mappings is not None else responder_tuples(ctx)
        if self.mappings is not None and fill.mappings is None:
            # the DUT's table read after the fill (responder mode read): the next step's record says how long
            self.read_s = ctx.clock() - read
        self.needed = False
        self.filled_at = rec.started_at  # connections exist from the start of phase 1 on
        if ctx.settings.gap > 0:
            ctx.sleep(ctx.settings.gap)
        if self.limit is not None and self.since_fill() + self.step_time(duration) > self.limit:
            raise SearchError(
                f"a phase-2 step of {duration:g} s + {s.timeout:g} s receive wait would end "
                f"{self.since_fill() + self.step_time(duration):.0f} s after the fill "
                f"began, past the {self.limit_source} limit of {self.limit:g} s: connections would expire during "
                "the step; fill faster, shorten gap or duration, or raise the DUT's timeout"
            )

    def after(self, verdict: Verdict, reason: str, extra: dict[str, Any]) -> tuple[Verdict, str]:
        """Check the table after a phase-2 step; INVALID (and refill) when it changed."""
        count = count_connections(self.ctx)
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


def phase2_options(
    options: RunOptions, tagged_rate: float | None, mappings: MappingTable | None = None
) -> Phase2Options:
    """How a phase-2 step is measured: latency from tagged frames at ``tagged_rate`` per direction when one is
    given; the run's Responder entry selection; the DUT's tuples in responder mode read."""
    if tagged_rate is None:
        return Phase2Options(selection=options.selection, mappings=mappings)
    return Phase2Options(latency=True, latency_rate=tagged_rate, selection=options.selection, mappings=mappings)


def phase2_step(
    ctx: ProcedureContext[Phase2Settings],
    filler: Filler | None,
    rate: float,
    *,
    tagged_rate: float | None = None,
    measure: Phase2Options | None = None,
    lower: float | None = None,
    upper: float | None = None,
    kind: str = "phase2",
    stop: LossStop | None = None,
    tail_rates: bool = False,
    duration: float | None = None,
    tags: Mapping[str, Any] | None = None,
) -> TrialRecord:
    """(Re)fill if needed, run phase 2 at ``rate`` for ``duration`` seconds (None: the metric's ``duration``; with
    latency when ``tagged_rate`` is given, or measured as ``measure`` says: tagged-frame schedule, every frame's delay),
    judge and store it with ``tags`` in its ``extra``. ``stop``: the tester may end the trial once it has failed
    (:class:`~natbench.plugins.tester.LossStop`; it is then judged by :func:`~natbench.judging.judge_stopped`).
    ``tail_rates``: ask the tester for the forwarding rate of the trial's second half (``Phase2Options.tail_rates``)."""
    seconds = float(ctx.settings.duration if duration is None else duration)
    if filler is not None:
        filler.ensure(seconds)
    options = phase2_options(ctx.options, tagged_rate, filler.mappings if filler is not None else None)
    if measure is not None:  # the delay measurement of ``measure`` with the run's selection and the DUT's tuples
        options = dataclasses.replace(measure, selection=options.selection, mappings=options.mappings)
    if stop is not None or tail_rates:
        options = dataclasses.replace(options, stop=stop, tail_rates=tail_rates)
    directions = ctx.directions
    ctx.announce(f"{kind}: {rate:,.0f} frames/s per direction for {seconds:g} s", seconds + ctx.settings.timeout)
    started = ctx.clock()
    phase, mon = run_traffic(ctx, lambda: ctx.tester.phase2(rate, seconds, directions, options))
    verdict, reason = judge_phase(phase, ctx.acceptance, ctx.options.rate_tolerance, ctx.pacing_slack)
    if phase.stopped:
        verdict, reason = judge_stopped(
            phase,
            verdict,
            reason,
            stop.allowance if stop is not None else None,
            margin=stop.margin if stop is not None else 0.0,
            full_seconds=seconds,
        )
    missing = [str(d) for d in directions.active if d not in phase.counts]
    if missing:
        verdict, reason = Verdict.INVALID, f"the tester reported no counts for {', '.join(missing)}"
    extra: dict[str, Any] = {**direction_extra(directions), **mon, **(tags or {})}
    if filler is not None:
        extra["since_fill"] = started - filler.filled_at  # the timeout guard's view: real time since the fill began
        if filler.read_s is not None:  # the first step after a fill whose table was read: how long the read took
            extra["dut_mappings_read_s"], filler.read_s = filler.read_s, None
        if filler.limit is None:
            extra["timeout_guard"] = "off"
        verdict, reason = filler.after(verdict, reason, extra)
    value = max((c.loss_ratio for c in phase.counts.values()), default=None) if phase.counts else None
    return ctx.record(kind, phase, verdict, reason, started, lower=lower, upper=upper, value=value, extra=extra)


def phase2_runner(ctx: ProcedureContext[Phase2Settings], filler: Filler | None) -> TrialRunner:
    """The trials a search of a phase-2 metric asks for, run by :func:`phase2_step` (on the ``filler``'s table, or
    without one): its rate, bounds, duration, stop, tail rates and tags as the search's request gives them."""

    def run(request: TrialRequest) -> TrialRecord:
        return phase2_step(
            ctx,
            filler,
            request.rate,
            lower=request.lower,
            upper=request.upper,
            stop=request.stop,
            tail_rates=request.tail_rates,
            duration=request.duration,
            tags=request.tags,
        )

    return run
