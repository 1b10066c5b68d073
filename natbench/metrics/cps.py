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
from typing import Any

from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Column, Lifetime, Mark
from natbench.metrics.duration import STEP_OVERHEAD, plan_query, search_midpoint
from natbench.metrics.lifetime import establishment_lifetime
from natbench.metrics.registry import Metric
from natbench.metrics.searching import run_search
from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.metrics.trial import search_extra, search_value
from natbench.metrics.validation import EstablishmentSettings, establishment_step, validated_step
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.search import SearchAlgorithm, SearchOutcome, TrialRequest
from natbench.search.declare import algorithm


class CpsSettings(SearchSettings, EstablishmentSettings):
    """Maximum connection establishment rate: a search of phase-1 trials, table emptied before each step.

    Each step is validated with reverse frames as ``validation`` says (RFC 9693, Sections 4.5 and 4.6); a search
    algorithm whose steps depend on earlier ones (``fast``) validates every step under ``final`` too.
    """


@dataclasses.dataclass(frozen=True)
class EstablishmentOutcome:
    """A finished connection-establishment search: the search's outcome, what its algorithm's result stores, and the
    rates the final validation rejected (``validation: final``; empty otherwise)."""

    outcome: SearchOutcome
    """Where the (last) search stopped; ``value`` is the reported rate; steps (a final validation counts as one) and
    invalid trials summed over both searches."""
    rejected: tuple[float, ...] = ()
    """``validation: final``: the phase-1 result whose validation failed (it became the upper bound); else empty."""
    validated: bool = False
    """True when the reported rate passed a validation (every step's, or the final one)."""
    stored: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The fields the algorithm's result stores (:attr:`~natbench.search.SearchAlgorithm.stored`)."""


def establishment_search(
    ctx: ProcedureContext[CpsSettings],
    lower: float,
    upper: float,
    *,
    using: SearchAlgorithm | None = None,
    stop_below: float | None = None,
    extra: dict[str, Any] | None = None,
) -> EstablishmentOutcome:
    """Search of the connection establishment rate in ``[lower, upper]`` by the settings' algorithm (or ``using``)
    with the settings' ``validation``.

    ``every_step``: each step is phase 1 + validation; ``off``: phase 1 only. ``final`` with an algorithm that may
    validate its result once (:attr:`~natbench.search.SearchAlgorithm.validates_once`): phase 1 only, then the
    result r is validated once (phase 1 at r with learning + reverse frames, stored with ``extra.final``). When
    that fails, r counts as a failed step and the search goes on in ``[lower, r]`` with every step validated:
    the DUT has shown that it forwards phase-1 frames it keeps no state for, so the phase-1 passes below r prove
    nothing. ``final`` with any other algorithm validates every step. The reported rate is always a validated one
    (or ``lower`` when no rate passed).
    """
    s = ctx.settings
    algo = using if using is not None else algorithm(s.algorithm)
    once = s.validation == "final" and algo.validates_once
    passes: list[float] = []
    every = [s.validation == "every_step" or (s.validation == "final" and not once)]

    def run(req: TrialRequest) -> TrialRecord:
        tags = {**(extra or {}), **req.tags} if req.tags else extra
        rec = establishment_step(ctx, req.rate, validate=every[0], lower=req.lower, upper=req.upper, extra=tags)
        if rec.verdict is Verdict.PASS and every[0]:
            passes.append(req.rate)
        return rec

    out, stored = run_search(ctx, run, using=algo, lower=lower, upper=upper, stop_below=stop_below)
    if not once or out.value <= lower:  # "final" with no passing rate: nothing to validate
        return EstablishmentOutcome(out, validated=out.value in passes, stored=stored)
    ok, _rec = validated_step(
        ctx, out.value, out.value * s.alpha, lower=out.lower, upper=out.upper, extra={**(extra or {}), "final": True}
    )
    if ok:
        return EstablishmentOutcome(out, validated=True, stored=stored)
    # the DUT forwarded phase 1 at this rate without keeping its connections: phase 1 alone cannot tell, so the
    # search goes on below the rejected rate with every step validated
    every[0] = True
    more, stored = run_search(ctx, run, using=algo, lower=lower, upper=out.value, stop_below=stop_below)
    merged = dataclasses.replace(
        more, steps=out.steps + 1 + more.steps, invalid=out.invalid + more.invalid, at_upper_limit=False
    )
    return EstablishmentOutcome(merged, (out.value,), validated=more.value in passes, stored=stored)


def cps(ctx: ProcedureContext[CpsSettings]) -> RepetitionResult:
    """Maximum connection establishment rate: a search (the settings' algorithm) with phase 1 (and validation),
    table emptied every step."""
    s = ctx.settings
    found = establishment_search(ctx, s.lower, s.upper)
    out = found.outcome
    fields: dict[str, Any] = {
        **search_extra(out, ctx.tester_limits),
        "validation": s.validation,
        "validated": found.validated,
        **found.stored,
    }
    fields["rejected"] = list(found.rejected) if found.rejected else list(fields.get("rejected", ()))
    return ctx.result(search_value(out), error=out.error, **fields)


def estimate(s: CpsSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Every step is a phase 1 of N connections at the middle of the search range: ``N / r + timeout``; validated
    steps add the reverse frames, ``N / (alpha r) + timeout`` (``every_step``: every step, counted as a second
    trial; ``final``: one more phase 1 and validation at the end, with an algorithm that validates its result once,
    else every step). The steps are the algorithm's planning figures (:attr:`~natbench.search.SearchAlgorithm.plan`)."""
    algo = algorithm(s.algorithm)
    steps = sum(n for n, _ in algo.plan(plan_query(s)))
    mid = search_midpoint(s)
    phase1 = connections / mid + s.timeout + STEP_OVERHEAD
    check = connections / (mid * s.alpha) + s.timeout
    if s.validation == "off":
        return steps, steps * phase1
    if s.validation == "final" and algo.validates_once:
        return steps + 2 * s.repetitions, steps * phase1 + s.repetitions * (phase1 + check)
    return 2 * steps, steps * (phase1 + check)


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
