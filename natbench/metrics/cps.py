"""Maximum connection establishment rate (RFC 9693, Section 4.5): a binary search of phase-1 trials, validated
(Section 4.6).

The DUT table is emptied (``reset_connections``) before every step. A step passes when every phase-1 frame
arrived (within the acceptance), the table holds the connections they created (when the DUT can count: fewer is
a FAIL, ``fail_cause: table_shortfall``) and, with ``validation: every_step`` (default), every reverse frame over
the learned state arrived (``fail_cause: validation``). :func:`establishment_search` is also each probe of the
capacity search.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Column, Lifetime, Mark
from natbench.metrics.duration import STEP_OVERHEAD, fast_trials, repeated, search_midpoint, search_steps
from natbench.metrics.fast import fast_extra, fast_rates, tagged
from natbench.metrics.lifetime import establishment_lifetime
from natbench.metrics.registry import Metric
from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.metrics.trial import search_extra, search_rates, search_value
from natbench.metrics.validation import EstablishmentSettings, establishment_step, validated_step
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.search import SearchOutcome, SearchStep
from natbench.search.fast import FastOutcome, FastStep

__all__ = [
    "CPS",
    "UNVALIDATED",
    "CpsSettings",
    "EstablishmentOutcome",
    "cps",
    "establishment_search",
    "search_lifetime",
]


class CpsSettings(SearchSettings, EstablishmentSettings):
    """Maximum connection establishment rate: binary search of phase-1 trials, table emptied before each step.

    Each step is validated with reverse frames as ``validation`` says (RFC 9693, Sections 4.5 and 4.6).
    """

    algorithm: Literal["binary", "fast"] = "binary"
    """Search algorithm: ``binary`` (RFC 2544 binary search, the seeds' procedure) or ``fast``: the same steps (phase
    1, validated as ``validation`` says: ``final`` validates every step here); later repetitions walk from the
    previous repetition's result, verified by their own steps (see docs/engine.md)."""


@dataclasses.dataclass(frozen=True)
class EstablishmentOutcome:
    """A finished connection-establishment search: the search's outcome and the rates the final validation
    rejected (``validation: final``; empty otherwise)."""

    outcome: SearchOutcome
    """Where the (last) binary search stopped; ``value`` is the reported rate; steps (a final validation counts as
    one) and invalid trials summed over both searches."""
    rejected: tuple[float, ...] = ()
    """``validation: final``: the phase-1 result whose validation failed (it became the upper bound); else empty."""
    validated: bool = False
    """True when the reported rate passed a validation (every step's, or the final one)."""


def establishment_search(
    ctx: ProcedureContext[CpsSettings],
    lower: float,
    upper: float,
    *,
    stop_below: float | None = None,
    extra: dict[str, Any] | None = None,
) -> EstablishmentOutcome:
    """Binary search of the connection establishment rate in ``[lower, upper]`` with the settings' ``validation``.

    ``every_step``: each step is phase 1 + validation; ``off``: phase 1 only. ``final``: phase 1 only, then the
    result r is validated once (phase 1 at r with learning + reverse frames, stored with ``extra.final``). When
    that fails, r counts as a failed step and the search goes on in ``[lower, r]`` with every step validated:
    the DUT has shown that it forwards phase-1 frames it keeps no state for, so the phase-1 passes below r prove
    nothing. The reported rate is always a validated one (or ``lower`` when no rate passed).
    """
    s = ctx.settings
    mode = s.validation
    passes: list[float] = []
    every = [mode == "every_step"]

    def step(st: SearchStep) -> TrialRecord:
        rec = establishment_step(ctx, st.rate, validate=every[0], lower=st.lower, upper=st.upper, extra=extra)
        if rec.verdict is Verdict.PASS and every[0]:
            passes.append(st.rate)
        return rec

    out = search_rates(ctx, lower, upper, step, stop_below=stop_below)
    if mode != "final" or out.value <= lower:  # "final" with no passing rate: nothing to validate
        return EstablishmentOutcome(out, validated=out.value in passes)
    ok, _rec = validated_step(
        ctx, out.value, out.value * s.alpha, lower=out.lower, upper=out.upper, extra={**(extra or {}), "final": True}
    )
    if ok:
        return EstablishmentOutcome(out, validated=True)
    # the DUT forwarded phase 1 at this rate without keeping its connections: phase 1 alone cannot tell, so the
    # search goes on below the rejected rate with every step validated
    every[0] = True
    more = search_rates(ctx, lower, out.value, step, stop_below=stop_below)
    merged = dataclasses.replace(
        more, steps=out.steps + 1 + more.steps, invalid=out.invalid + more.invalid, at_upper_limit=False
    )
    return EstablishmentOutcome(merged, (out.value,), validated=more.value in passes)


def establishment_fast(ctx: ProcedureContext[CpsSettings], lower: float, upper: float) -> EstablishmentOutcome:
    """The fast search of the connection establishment rate in ``[lower, upper]``: every step is a full one (phase 1
    + validation; ``validation: off``: phase 1 alone), the gain is the seeded walk of the later repetitions and the
    first repetition's jumps to the rate a failed phase 1 set connections up at (docs/engine.md, "Where to look
    next"). A phase 1
    offers all N connections (a smaller N measures a smaller, faster table), and a phase 1 without its validation
    costs more than half a validated step: short cps steps would not pay for the confirmations they need
    (bench/campaign_time.py)."""
    validate = ctx.settings.validation != "off"
    passes: list[float] = []

    def step(st: FastStep) -> TrialRecord:
        with tagged(ctx, st):
            rec = establishment_step(ctx, st.rate, validate=validate, lower=st.lower, upper=st.upper)
        if rec.verdict is Verdict.PASS and validate:
            passes.append(st.rate)
        return rec

    out = fast_rates(ctx, lower, upper, step, narrow_full=True)
    return EstablishmentOutcome(out, out.rejected, validated=out.value in passes)


def cps(ctx: ProcedureContext[CpsSettings]) -> RepetitionResult:
    """Maximum connection establishment rate: binary (or fast) search with phase 1 (and validation), table emptied
    every step."""
    s = ctx.settings
    if s.algorithm == "fast":
        found = establishment_fast(ctx, s.lower, s.upper)
        extra = fast_extra(found.outcome) if isinstance(found.outcome, FastOutcome) else {}
    else:
        found = establishment_search(ctx, s.lower, s.upper)
        extra = {"algorithm": "binary"}
    out = found.outcome
    fields: dict[str, Any] = {
        **search_extra(out, ctx.tester_limits),
        "validation": s.validation,
        "validated": found.validated,
        **extra,
        "rejected": list(found.rejected),
    }
    return ctx.result(search_value(out), error=out.error, **fields)


def estimate(s: CpsSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Every step is a phase 1 of N connections at the middle of the search range: ``N / r + timeout``; validated
    steps add the reverse frames, ``N / (alpha r) + timeout`` (``every_step``: every step, counted as a second
    trial; ``final``: one more phase 1 and validation at the end). ``algorithm: fast``: the full trials of
    :func:`~natbench.metrics.duration.fast_trials`, every step validated unless validation is off."""
    steps = search_steps(s.lower, s.upper, s.error)
    mid = search_midpoint(s)
    phase1 = connections / mid + s.timeout + STEP_OVERHEAD
    check = connections / (mid * s.alpha) + s.timeout
    if s.algorithm == "fast":
        _, n = fast_trials(s, short=False)
        if s.validation == "off":
            return n, n * phase1
        return 2 * n, n * (phase1 + check)
    if s.validation == "every_step":
        return repeated(s, 2 * steps, steps * (phase1 + check))
    if s.validation == "final":
        return repeated(s, steps + 2, (steps + 1) * phase1 + check)
    return repeated(s, steps, steps * phase1)


def search_lifetime(s: CpsSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[Lifetime, ...]:
    """The lifetime model of a connection-establishment search: its slowest step, at the lowest rate a search tries
    (``lower + error``: it only tries rates of its grid ``lower + k x error`` above ``lower``), phase 1 and (unless
    ``validation: off``) the reverse frames at alpha x rate (:func:`~natbench.metrics.lifetime.establishment_lifetime`);
    a step that needs its connections longer than the DUT keeps them is refused as invalid."""
    rate = s.lower + s.error
    validates = s.validation != "off"
    need = establishment_lifetime(connections, rate, s.timeout, rate * s.alpha if validates else None)
    what = "phase 1 and its validation" if validates else "phase 1"
    step = f"{what} of {connections:,} connections at {rate:g}/s, the lowest rate its search could try"
    return (Lifetime(need, step, refused=True),)


UNVALIDATED = Column("unvalidated", "bool", lambda r: r.value is not None and r.extra.get("validated") is False)
"""A value no validation with reverse frames confirmed (``extra.validated: false``)."""

CPS = Metric(
    name="cps",
    description="Maximum connection establishment rate (connections per second).",
    settings=CpsSettings,
    run=cps,
    unit="cps",
    order=10,
    label="cps",
    scale_label="cps rel. scale up",
    title="maximum connection establishment rate",
    axis="connections per second",
    estimate=estimate,
    scaled=True,
    unit_words="connections per second",
    columns=(UNVALIDATED,),
    marks=(
        Mark(
            "unvalidated",
            "[u]",
            "[u]: some repetitions' rate was not validated with reverse frames (validation: off, or a DUT that could "
            "not be validated; RFC 9693 4.6): the DUT may have forwarded frames without keeping their connections",
            "{n} cps repetitions have a rate no validation with reverse frames confirmed (validation: off, or a DUT "
            "that could not be validated): marked [u] in the tables.",
        ),
    ),
    lifetime=search_lifetime,
)
"""The maximum connection establishment rate."""
