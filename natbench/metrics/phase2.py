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
since its fill began (``ctx.clock``) and refills when that time plus the step's ``duration`` would pass the
limit: ``refill_after`` when set, else the DUT's own connection timeout (:func:`connection_timeout`, the
smallest UDP timeout among its facts). Every phase-2 trial records ``extra["since_fill"]`` (seconds from the
start of its fill to the start of the trial). A fill that leaves no room for even one step is a
:class:`~natbench.errors.SearchError` (lower the connections or the fill time, or raise the DUT's timeout).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from natbench.duts.base import Dut
from natbench.errors import DutError, SearchError
from natbench.metrics.context import ProcedureContext, RunOptions
from natbench.metrics.judging import judge_phase
from natbench.metrics.memory import FillMemory
from natbench.metrics.responder import responder_tuples
from natbench.metrics.settings import FilledTableSettings, Phase2Settings
from natbench.metrics.trial import count_connections, direction_extra, fill_failed, phase1_step, retry, run_traffic
from natbench.results import TrialRecord, Verdict
from natbench.testers.base import Mapping as DutMapping
from natbench.testers.base import Phase2Options

__all__ = ["TIMEOUT_FACTS", "Filler", "connection_timeout", "phase2_options", "phase2_step"]

TIMEOUT_FACTS = ("udp_timeout", "udp_timeout_stream")
"""DUT facts (or recipe parameters under ``facts["params"]``) holding connection timeouts in seconds: iptables and
nftables read both from the kernel; Jool and PF recipes have ``udp_timeout`` as a parameter."""


def connection_timeout(dut: Dut) -> float | None:
    """The shortest connection timeout (seconds) the DUT's facts name, None when they name none.

    A DUT of several devices (``{name: facts}``) gives the shortest of its members'. The guard measures from the
    start of the fill, which over-counts each connection's idle time (a DUT refreshes the timer on every packet):
    the guard may refill early, never late.
    """
    try:
        facts = dut.facts()
    except (NotImplementedError, OSError, DutError):  # facts that cannot be read name no timeout
        return None
    return _shortest(facts, depth=0)


def _shortest(facts: Mapping[str, Any], depth: int) -> float | None:
    found: list[float] = []
    for key in TIMEOUT_FACTS:
        for source in (facts, facts.get("params")):
            value = source.get(key) if isinstance(source, Mapping) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                found.append(float(value))
    if not found and depth == 0:  # a DUT of several devices: {name: facts}
        found = [t for v in facts.values() if isinstance(v, Mapping) and (t := _shortest(v, 1)) is not None]
    return min(found) if found else None


class Filler:
    """Fills the table for phase-2 metrics and decides when it must be refilled."""

    def __init__(self, ctx: ProcedureContext[FilledTableSettings]) -> None:
        self.ctx = ctx
        self.rate = float(ctx.settings.fill_rate)
        self.filled: int | None = None
        self.needed = True
        self.mappings: tuple[DutMapping, ...] | None = None
        self.filled_at = 0.0
        self.limit: float | None = float(ctx.settings.refill_after) if ctx.settings.refill_after else None
        """Seconds after the start of a fill by which every phase-2 step must have ended (None: no limit)."""
        self.limit_source = "refill_after" if self.limit is not None else None
        if self.limit is None:
            self.limit = connection_timeout(ctx.dut)
            self.limit_source = "dut_timeout" if self.limit is not None else None

    def since_fill(self) -> float:
        """Seconds of real time (``ctx.clock``) since the current fill began."""
        return self.ctx.clock() - self.filled_at

    def ensure(self) -> None:
        """Fill (empty + phase 1 with learning + gap) if needed, or if the next step could outlive the limit."""
        ctx = self.ctx
        s = ctx.settings
        if self.limit is not None and self.since_fill() + s.duration > self.limit:
            self.needed = True
        if not (self.needed or s.refill == "always"):
            return
        rec = retry(
            ctx,
            "filling the table",
            lambda: phase1_step(ctx, self.rate, learn=True, kind="fill", memory=FillMemory(ctx.dut)),
        )
        if rec.verdict is Verdict.FAIL:
            raise SearchError(fill_failed(self.rate, rec))
        self.filled = rec.extra.get("dut_connections")
        self.mappings = responder_tuples(ctx)
        self.needed = False
        self.filled_at = rec.started_at  # connections exist from the start of phase 1 on
        if ctx.settings.gap > 0:
            ctx.sleep(ctx.settings.gap)
        if self.limit is not None and self.since_fill() + s.duration > self.limit:
            raise SearchError(
                f"a phase-2 step of {s.duration:g} s would end {self.since_fill() + s.duration:.0f} s after the fill "
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
    options: RunOptions, tagged_rate: float | None, mappings: tuple[DutMapping, ...] | None = None
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
) -> TrialRecord:
    """(Re)fill if needed, run phase 2 at ``rate`` (with latency when ``tagged_rate`` is given, or measured as
    ``measure`` says: tagged-frame schedule, every frame's delay), judge and store it."""
    if filler is not None:
        filler.ensure()
    options = phase2_options(ctx.options, tagged_rate, filler.mappings if filler is not None else None)
    if measure is not None:  # the delay measurement of ``measure`` with the run's selection and the DUT's tuples
        options = dataclasses.replace(measure, selection=options.selection, mappings=options.mappings)
    duration = ctx.settings.duration
    directions = ctx.directions
    ctx.announce(f"{kind}: {rate:,.0f} frames/s per direction for {duration:g} s", duration + ctx.settings.timeout)
    started = ctx.clock()
    phase, mon = run_traffic(ctx, lambda: ctx.tester.phase2(rate, duration, directions, options))
    verdict, reason = judge_phase(phase, ctx.acceptance, ctx.options.rate_tolerance)
    missing = [str(d) for d in directions.active if d not in phase.counts]
    if missing:
        verdict, reason = Verdict.INVALID, f"the tester reported no counts for {', '.join(missing)}"
    extra: dict[str, Any] = {**direction_extra(directions), **mon}
    if filler is not None:
        extra["since_fill"] = started - filler.filled_at  # the timeout guard's view: real time since the fill began
        verdict, reason = filler.after(verdict, reason, extra)
    value = max((c.loss_ratio for c in phase.counts.values()), default=None) if phase.counts else None
    return ctx.record(kind, phase, verdict, reason, started, lower=lower, upper=upper, value=value, extra=extra)
