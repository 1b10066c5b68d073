"""Validation of connection establishment (RFC 9693): phase 1 at ``rate`` with learning, then one reverse
(Responder -> Initiator) frame per learned tuple; it passes only when every reverse frame arrives.

:func:`establishment_step` is one step of a connection-establishment search (cps, and every probe of
capacity): phase 1, then, when the metric's ``validation`` asks for it, the reverse frames over the learned
state. A step whose connections were not kept (a table shortfall, or reverse frames that did not arrive)
FAILS, with its cause in ``extra["fail_cause"]``; the search goes lower.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from natbench.errors import SearchError
from natbench.judging import judge_phase
from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Lifetime
from natbench.metrics.duration import STEP_OVERHEAD, repeated, search_midpoint
from natbench.metrics.lifetime import establishment_lifetime, guard_establishment
from natbench.metrics.registry import Metric
from natbench.metrics.responder import responder_tuples
from natbench.metrics.settings import GapSettings, MetricSettings, Rate, SearchSettings
from natbench.metrics.trial import phase1_step, rate_from_prior, retry, run_traffic
from natbench.plugins import LoadsMappings
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.traffic.plan import ResponderMode

RATE_FROM = "cps"
"""The metric whose median result is the phase-1 rate when the settings give none."""


class ValidatedSettings(MetricSettings):
    """Settings of metrics whose phase-1 steps are validated with reverse frames."""

    alpha: float = Field(default=1.0, gt=0, le=1000)
    """A phase 1 is validated with reverse frames at alpha x its rate (siitperf's alpha): the validated steps of cps
    and of every capacity probe; validation's phase 1 unless reverse_rate is set. At most 1,000."""


ValidationMode = Literal["every_step", "final", "off"]
"""When a connection-establishment search validates its phase 1 with reverse frames."""


class EstablishmentSettings(ValidatedSettings):
    """Settings of the metrics that search the connection establishment rate (cps, the capacity probes)."""

    validation: ValidationMode = "every_step"
    """Validation of connection establishment (RFC 9693, Section 4.6, which recommends it because a phase 1 that
    passes shows only that frames were forwarded, not that connections were kept): ``every_step`` (default)
    validates each passing phase-1 step with reverse frames over the learned state at alpha x its rate, as
    siitperf's table-capacity script does (Section 4.8), and a step whose reverse frames do not all arrive fails;
    ``final`` searches with phase 1 alone and validates the result once: when that fails, the rate counts as failed
    and the search goes on below it with every step validated, so the reported rate is always a validated one;
    ``off`` never validates (with ``check_table: false`` too, nothing checks that connections were kept, and cps
    then reports the rate at which the DUT forwards phase-1 frames)."""


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
    """Phase 1 at ``rate`` with learning, [gap], then ``tester.validate(reverse)``; both stored, invalid trials
    of either retried up to ``max_invalid`` times.

    Validation passes only when every reverse frame arrived (acceptance 0), whatever the metric's acceptance. A
    step whose connections would have to outlive the DUT's timeout is refused before any traffic
    (:func:`~natbench.metrics.lifetime.guard_establishment`: an INVALID trial, then SearchError).
    """

    guard_establishment(ctx, rate, reverse, gap=gap, lower=lower, upper=upper, extra=extra)

    def attempt() -> TrialRecord:
        return phase1_step(ctx, rate, learn=True, kind="phase1", lower=lower, upper=upper, extra=extra)

    p1 = retry(ctx, f"phase 1 at {rate:g}", attempt)
    if p1.verdict is not Verdict.PASS:
        return False, p1
    v = retry(ctx, f"validation at {rate:g}", lambda: _reverse_check(ctx, reverse, lower, upper, extra, gap))
    return v.verdict is Verdict.PASS, v


def establishment_step(
    ctx: ProcedureContext[EstablishmentSettings],
    rate: float,
    *,
    validate: bool,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
) -> TrialRecord:
    """One step of a connection-establishment search: phase 1 at ``rate`` (learning when ``validate``), then, when
    it passed and ``validate``, the reverse frames at alpha x ``rate``.

    Returns the record that carries the step's verdict: the phase 1 when it did not pass (a table shortfall is a
    FAIL, see :func:`~natbench.metrics.trial.check_filled`), else the validation. Invalid trials are returned, not
    retried: the search retries the whole step (a validation needs a fresh phase 1 before it). A step whose
    connections would have to outlive the DUT's timeout (``N / r + timeout``, plus ``N / (alpha r) + timeout`` when it
    validates) is refused before any traffic: :func:`~natbench.metrics.lifetime.guard_establishment`.
    """
    reverse = rate * ctx.settings.alpha if validate else None
    guard_establishment(ctx, rate, reverse, lower=lower, upper=upper, extra=extra)
    p1 = phase1_step(ctx, rate, learn=validate, kind="phase1", lower=lower, upper=upper, extra=extra)
    if p1.verdict is not Verdict.PASS or not validate:
        return p1
    return _reverse_check(ctx, rate * ctx.settings.alpha, lower, upper, extra, 0.0)


def _reverse_check(
    ctx: ProcedureContext[MetricSettings],
    reverse: float,
    lower: float | None,
    upper: float | None,
    extra: dict[str, Any] | None,
    gap: float,
) -> TrialRecord:
    """After a passing phase 1 with learning: [gap], one reverse frame per learned (READ: read) tuple at
    ``reverse``; FAIL (``fail_cause: validation``) unless every frame arrived."""
    if ctx.plan.responder_mode is ResponderMode.READ and not isinstance(ctx.tester, LoadsMappings):
        raise SearchError(
            "responder mode read: this tester has no load_mappings hook, so validation cannot use the DUT's tuples"
        )
    responder_tuples(ctx)  # READ: the tester answers the DUT's tuples; COMPUTE: checked to be port-preserving
    if gap > 0:
        ctx.sleep(gap)
    started = ctx.clock()
    phase, mon = run_traffic(ctx, lambda: ctx.tester.validate(reverse))
    verdict, reason = judge_phase(phase, 0.0, ctx.options.rate_tolerance, ctx.pacing_slack)
    ext = {**(extra or {}), **mon}
    if verdict is Verdict.FAIL:
        ext["fail_cause"] = "validation"
    return ctx.record("validation", phase, verdict, reason, started, lower=lower, upper=upper, extra=ext)


def estimate(s: ValidationSettings, connections: int, selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Phase 1 at ``rate`` plus the reverse send ``N / reverse_rate``, with timeouts and gap; an unset rate
    counts as the middle of the cps search range (1 without cps)."""
    cps = selected.get(RATE_FROM)
    rate = s.rate or (search_midpoint(cps) if isinstance(cps, SearchSettings) else None) or 1.0
    reverse = s.reverse_rate or rate * s.alpha
    return repeated(s, 1, connections / rate + s.timeout + s.gap + connections / reverse + s.timeout + STEP_OVERHEAD)


def lifetime(s: ValidationSettings, connections: int, selected: Mapping[str, MetricSettings]) -> tuple[Lifetime, ...]:
    """Phase 1 at ``rate`` (else at the lowest rate the search of :data:`RATE_FROM` could report, when the campaign
    measures it), gap and the reverse frames (:func:`~natbench.metrics.lifetime.establishment_lifetime`); nothing
    when no rate is known beforehand."""
    prior = selected.get(RATE_FROM)
    given = s.rate or (prior.lower + prior.error if isinstance(prior, SearchSettings) else None)
    if not given:
        return ()
    reverse = s.reverse_rate or given * s.alpha
    need = establishment_lifetime(connections, given, s.timeout, reverse, s.gap)
    return (Lifetime(need, f"phase 1, gap and reverse frames at {given:g}/s", refused=True),)


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
    unit_words="pass",
    lifetime=lifetime,
)
"""Validation of connection establishment."""
