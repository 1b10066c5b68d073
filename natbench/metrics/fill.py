"""Table fills judged by their outcome: what the DUT holds, not what the tester saw.

A fill loads the DUT's table with the working point's N connections for a later measurement (the phase-2
metrics' :class:`~natbench.metrics.phase2.Filler`, tear-down). At the seeds' scale a fill takes hours, so it is
kept when it did its job, whatever happened on the way:

* the tester sent all N frames (one that stopped short created fewer connections);
* **the DUT holds them**: its count is between N and N + ``table_slack``; where it cannot count, the DUT's own list
  of mappings (responder mode read) has N entries, or a **validation sample** (reverse frames to 10,000 of the
  learned or computed tuples, spread evenly over the table, stored as its own ``fill_check`` trial after the
  fill's, whose verdict PASS then means "forwarded, kept if the check passes") arrives complete;
* the Responder knows them (responder mode learn: it learned all N tuples).

The loss the tester counted, its pacing (a stall it caught up with, at most ``catchup`` x the rate) and its own
receive misses do not decide; they are recorded with the fill (``extra["tester_view"]``, ``extra["deviations"]``).
A fill whose DUT holds fewer connections is INVALID and repeated, up to ``max_invalid`` times; then the repetition
fails and names the fill rate. A fill nothing can verify (no count, no mapping list, no tuples to validate) is
judged by the tester's counts (a fill that lost frames is repeated too) and records ``fill_verified: false``; what
divides by N then says so. A fill whose emptying of the table did not do its work (the reset failed, or outlived its
time limit) ends the repetition with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from natbench.errors import SearchError
from natbench.judging import judge_phase
from natbench.metrics.context import ProcedureContext
from natbench.metrics.memory import FillMemory
from natbench.metrics.settings import MetricSettings
from natbench.metrics.trial import count_connections, dut_supports, empty_table, run_traffic
from natbench.plugins import LoadsMappings, MappingTable, SamplesValidation
from natbench.results import PhaseResult, TrialRecord, Verdict
from natbench.traffic.plan import ResponderMode

DEFAULT_FILL_SAMPLE = 10_000
"""Reverse frames that verify a fill on a DUT that cannot count (all N when N is smaller). All of them arriving
bounds the share of connections the DUT lost below 3 / 10,000 = 0.03 % with 95 % confidence (the rule of three)."""


@dataclass(frozen=True)
class Fill:
    """A kept fill: its trial and the connections it left in the DUT's table."""

    record: TrialRecord
    """The fill's trial (its verdict PASS)."""
    connections: int
    """The connections the table holds: N when :attr:`verified`, else the tester's valid phase-1 frames."""
    verified: bool
    """True when the DUT's count, its mapping list or a validation sample showed all N connections."""
    mappings: MappingTable | None = None
    """The DUT's tuples when the fill read them to verify itself (responder mode read): the Responder's state."""


def fill_table(
    ctx: ProcedureContext[MetricSettings],
    rate: float,
    *,
    learn: bool,
    memory: FillMemory | None = None,
    sample: int = DEFAULT_FILL_SAMPLE,
) -> Fill:
    """Empty the table and fill it with the point's N connections at ``rate``, repeating a fill that did not leave
    them (up to ``max_invalid`` times); SearchError naming the fill rate when no fill kept them (see the module
    docstring)."""
    tries = ctx.settings.max_invalid + 1
    reason = ""
    for _ in range(tries):
        fill = _fill_once(ctx, rate, learn=learn, memory=memory, sample=sample)
        if isinstance(fill, Fill):
            return fill
        reason = fill.reason
    raise SearchError(
        f"filling the table at fill_rate {rate:g}: {tries} fills in a row did not leave the"
        f" {ctx.point.connections:,} connections (last: {reason}); lower fill_rate"
    )


def _fill_once(
    ctx: ProcedureContext[MetricSettings], rate: float, *, learn: bool, memory: FillMemory | None, sample: int
) -> Fill | TrialRecord:
    """One fill: the kept :class:`Fill`, or the stored trial of a fill that was not kept (to be repeated). A reset
    that did not do its work ends the repetition (:func:`~natbench.metrics.trial.empty_table`)."""
    n = ctx.point.connections
    empty_table(ctx)
    if memory is not None:
        memory.emptied()
    ctx.announce(f"fill: {n:,} connections at {rate:,.0f}/s", n / rate + ctx.settings.timeout if rate > 0 else None)
    started = ctx.clock()
    phase, mon = run_traffic(ctx, lambda: ctx.tester.phase1(rate, learn))
    ext: dict[str, Any] = {**mon}
    sent = sum(c.sent for c in phase.counts.values())
    valid = sum(c.valid for c in phase.counts.values())
    if valid < sent or not phase.tester_ok or phase.deviations:
        ext["tester_view"] = {"sent": sent, "valid": valid, "tester_ok": phase.tester_ok}
    if memory is not None:
        memory.snapshot_filled(ext)
    count = count_connections(ctx)
    if count is not None:
        ext["dut_connections"] = count
    judged = _judge(ctx, phase, sent, count, ext, learn=learn, sample=sample)
    connections = n if judged.verified else valid
    if memory is not None:
        memory.record(ext, connections)
    ext["fill_verified"] = "sample" if judged.sampled and judged.verdict is Verdict.PASS else judged.verified
    rec = ctx.record("fill", phase, judged.verdict, judged.reason, started, extra=ext)
    if judged.verdict is not Verdict.PASS:
        return rec
    if judged.sampled:
        check = _validation_sample(ctx, rate, min(sample, n))
        if check.verdict is not Verdict.PASS:
            return check
    return Fill(rec, connections, judged.verified, judged.mappings)


@dataclass(frozen=True)
class _Judged:
    """What a fill's outcome says before it is stored."""

    verdict: Verdict
    """PASS: kept (when :attr:`sampled`, if the validation sample passes too); INVALID: repeated."""
    reason: str
    """Why it is not kept ("" when it is)."""
    verified: bool = True
    """Whether the DUT's count, its listing or a sample can show the N connections (False: the tester's counts)."""
    sampled: bool = False
    """Decided by a validation sample that follows."""
    mappings: MappingTable | None = None
    """The DUT's listing, when it kept the fill (the Responder's state; a short one is not kept)."""


def _judge(
    ctx: ProcedureContext[MetricSettings],
    phase: PhaseResult,
    sent: int,
    count: int | None,
    ext: dict[str, Any],
    *,
    learn: bool,
    sample: int,
) -> _Judged:
    """Whether the fill left the N connections (see the module docstring), by the best evidence the DUT and the
    tester give: the DUT's count, its listing, a validation sample, else the tester's counts."""
    n = ctx.point.connections
    if sent < n:
        judged = _Judged(Verdict.INVALID, f"the tester sent {sent} of the {n} phase-1 frames")
    elif count is not None:
        judged = _judge_count(ctx, count, ext)
    elif ctx.plan.responder_mode is ResponderMode.READ and dut_supports(ctx.dut, "mappings"):
        judged = _judge_listing(ctx, ext)
    elif sample > 0 and _can_validate(ctx, phase, learn, n):
        judged = _Judged(Verdict.PASS, "", sampled=True)  # decided by the sample, its own trial stored after this one
    else:  # nothing can tell what the DUT holds: the tester's counts decide, and what divides by N says so
        verdict, reason = judge_phase(phase, ctx.acceptance, ctx.options.rate_tolerance, ctx.pacing_slack)
        judged = _Judged(Verdict.INVALID if verdict is Verdict.FAIL else verdict, reason, verified=False)
    learned = phase.learned or 0
    if (
        judged.verdict is Verdict.PASS
        and learn
        and ctx.plan.responder_mode is ResponderMode.LEARN
        and judged.verified
        and learned < n
    ):
        return _Judged(Verdict.INVALID, f"the Responder learned {learned} of the {n} tuples", judged.verified)
    return judged


def _judge_count(ctx: ProcedureContext[MetricSettings], count: int, ext: dict[str, Any]) -> _Judged:
    """The DUT's count between N and N + ``table_slack`` keeps the fill."""
    n = ctx.point.connections
    if count < n:
        ext["fail_cause"] = "table_shortfall"
        return _Judged(Verdict.INVALID, f"the DUT holds {count} of the {n} connections")
    if count > n + ctx.settings.table_slack:
        return _Judged(Verdict.INVALID, f"DUT table holds {count} connections, more than the {n} frames sent")
    return _Judged(Verdict.PASS, "")


def _judge_listing(ctx: ProcedureContext[MetricSettings], ext: dict[str, Any]) -> _Judged:
    """The DUT's listing of N mappings keeps the fill (and gives the Responder its state)."""
    n = ctx.point.connections
    read = ctx.clock()
    mappings = MappingTable.of(ctx.dut.mappings())
    ext["dut_mappings"] = len(mappings)
    ext["dut_mappings_read_s"] = ctx.clock() - read
    if len(mappings) < n:
        ext["fail_cause"] = "table_shortfall"
        return _Judged(Verdict.INVALID, f"the DUT lists {len(mappings)} of the {n} connections")
    if isinstance(ctx.tester, LoadsMappings):
        ctx.tester.load_mappings(mappings)
    return _Judged(Verdict.PASS, "", mappings=mappings)


def _can_validate(ctx: ProcedureContext[MetricSettings], phase: PhaseResult, learn: bool, n: int) -> bool:
    """Whether the tester knows the tuples to send reverse frames to: all N learned, or computed."""
    mode = ctx.plan.responder_mode
    if mode is ResponderMode.COMPUTE:
        return True
    return mode is ResponderMode.LEARN and learn and (phase.learned or 0) >= n


def _validation_sample(ctx: ProcedureContext[MetricSettings], rate: float, k: int) -> TrialRecord:
    """Reverse frames to ``k`` tuples spread over the table (all of them on a tester without the sampling hook),
    stored as a ``fill_check`` trial right after the fill's: every one must arrive. A fill whose check is not a
    PASS is not kept (as a validated cps step whose validation fails)."""
    started = ctx.clock()
    tester = ctx.tester
    if isinstance(tester, SamplesValidation):
        phase, mon = run_traffic(ctx, lambda: tester.validate_sample(rate, k))
    else:
        phase, mon = run_traffic(ctx, lambda: tester.validate(rate))
    lost = sum(c.lost for c in phase.counts.values())
    sent = sum(c.sent for c in phase.counts.values())
    explained = sum(d.explains for d in phase.deviations.values())
    verdict, reason = Verdict.PASS, ""
    if not phase.tester_ok:
        verdict, reason = Verdict.INVALID, f"the validation sample could not be sent: {phase.tester_note}"
    elif lost > explained:
        verdict, reason = Verdict.INVALID, f"the DUT answered {sent - lost} of {sent} sampled connections"
    elif lost:
        verdict, reason = Verdict.INVALID, f"the sample lost {lost} frames the tester's own deviation could explain"
    return ctx.record("fill_check", phase, verdict, reason, started, extra={**mon, "sample": k})
