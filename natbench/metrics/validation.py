"""Validation of connection establishment (RFC 9693): phase 1 at ``rate`` with learning, then one reverse
(Responder -> Initiator) frame per learned tuple; it passes only when every reverse frame arrives.

The validated step here is also what each step of the capacity search runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from natbench.errors import SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, repeated, search_midpoint
from natbench.metrics.judging import judge_phase
from natbench.metrics.registry import Metric
from natbench.metrics.responder import responder_tuples
from natbench.metrics.settings import GapSettings, MetricSettings, Rate, SearchSettings
from natbench.metrics.trial import phase1_step, rate_from_prior, retry, run_traffic
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.testers.base import LoadsMappings
from natbench.traffic.plan import ResponderMode

__all__ = ["VALIDATION", "ValidatedSettings", "ValidationSettings", "validated_step", "validation"]

RATE_FROM = "cps"
"""The metric whose median result is the phase-1 rate when the settings give none."""


class ValidatedSettings(MetricSettings):
    """Settings of metrics whose phase-1 steps are validated with reverse frames."""

    alpha: float = Field(default=1.0, gt=0, le=1000)
    """A phase 1 is validated with reverse frames at alpha x its rate (siitperf's alpha): every probe step of
    capacity; validation's phase 1 unless reverse_rate is set. At most 1,000."""


class ValidationSettings(ValidatedSettings, GapSettings):
    """Validation of connection establishment: phase 1 at rate, then Responder -> Initiator frames only."""

    rate: Rate | None = Field(default=None, gt=0)
    """Phase-1 rate (None: the cps result of the same working point)."""
    reverse_rate: Rate | None = Field(default=None, gt=0)
    """Rate of the public -> private frames that read the state table linearly (None: alpha x rate)."""


def validation(ctx: ProcedureContext[ValidationSettings]) -> RepetitionResult:
    """Validation of connection establishment: phase 1 at r, then one reverse frame per learned tuple."""
    s = ctx.settings
    rate = rate_from_prior(ctx, s.rate, RATE_FROM)
    reverse = float(s.reverse_rate) if s.reverse_rate else rate * s.alpha
    ok, rec = validated_step(ctx, rate, reverse, gap=s.gap)
    return ctx.result(1.0 if ok else 0.0, rate=rate, reason=rec.reason)


def validated_step(
    ctx: ProcedureContext[MetricSettings],
    rate: float,
    reverse: float,
    *,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
    gap: float = 0.0,
) -> tuple[bool, TrialRecord]:
    """Phase 1 at ``rate`` with learning, [gap], then ``tester.validate(reverse)``; both stored.

    Validation passes only when every reverse frame arrived (acceptance 0), whatever the metric's acceptance.
    """

    def attempt() -> TrialRecord:
        return phase1_step(ctx, rate, learn=True, kind="phase1", lower=lower, upper=upper, extra=extra)

    p1 = retry(ctx, f"phase 1 at {rate:g}", attempt)
    if p1.verdict is not Verdict.PASS:
        return False, p1
    if ctx.plan.responder_mode is ResponderMode.READ and not isinstance(ctx.tester, LoadsMappings):
        raise SearchError(
            "responder mode read: this tester has no load_mappings hook, so validation cannot use the DUT's tuples"
        )
    responder_tuples(ctx)  # READ: the tester answers the DUT's tuples; COMPUTE: checked to be port-preserving
    if gap > 0:
        ctx.sleep(gap)

    def check() -> TrialRecord:
        started = ctx.clock()
        phase, mon = run_traffic(ctx, lambda: ctx.tester.validate(reverse))
        verdict, reason = judge_phase(phase, 0.0, ctx.options.rate_tolerance)
        ext = {**(extra or {}), **mon}
        return ctx.record("validation", phase, verdict, reason, started, lower=lower, upper=upper, extra=ext)

    v = retry(ctx, f"validation at {rate:g}", check)
    return v.verdict is Verdict.PASS, v


def estimate(s: ValidationSettings, connections: int, selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Phase 1 at ``rate`` plus the reverse send ``N / reverse_rate``, with timeouts and gap; an unset rate
    counts as the middle of the cps search range (1 without cps)."""
    cps = selected.get(RATE_FROM)
    rate = s.rate or (search_midpoint(cps) if isinstance(cps, SearchSettings) else None) or 1.0
    reverse = s.reverse_rate or rate * s.alpha
    return repeated(s, 1, connections / rate + s.timeout + s.gap + connections / reverse + s.timeout + STEP_OVERHEAD)


VALIDATION = Metric(
    name="validation",
    description="Validation of connection establishment.",
    settings=ValidationSettings,
    run=validation,
    unit="pass",
    order=80,
    label="validation",
    scale_label="validation rel. scale up",
    title="validated connection establishment rate",
    axis="connections per second",
    estimate=estimate,
    rate_from=RATE_FROM,
)
"""Validation of connection establishment."""
