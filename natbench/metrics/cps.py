"""Maximum connection establishment rate (RFC 9693): a binary search of phase-1 trials.

The DUT table is emptied (``reset_connections``) before every step; a passing step must leave between
``valid`` and ``sent + table_slack`` connections in the table when the DUT can count them.
"""

from __future__ import annotations

from collections.abc import Mapping

from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, repeated, search_midpoint, search_steps
from natbench.metrics.registry import Metric
from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.metrics.trial import phase1_step, search_extra, search_rates
from natbench.results import RepetitionResult

__all__ = ["CPS", "CpsSettings", "cps"]


class CpsSettings(SearchSettings):
    """Maximum connection establishment rate: binary search with phase 1 only, table emptied before each step."""


def cps(ctx: ProcedureContext[CpsSettings]) -> RepetitionResult:
    """Maximum connection establishment rate: binary search with phase 1 only, table emptied every step."""
    s = ctx.settings
    out = search_rates(
        ctx,
        s.lower,
        s.upper,
        lambda st: phase1_step(ctx, st.rate, learn=False, kind="phase1", lower=st.lower, upper=st.upper),
    )
    return ctx.result(out.value, error=out.error, **search_extra(out))


def estimate(s: CpsSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Every step is a phase 1 of N connections at the middle of the search range: ``N / r + timeout``."""
    steps = search_steps(s.lower, s.upper, s.error)
    return repeated(s, steps, steps * (connections / search_midpoint(s) + s.timeout + STEP_OVERHEAD))


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
)
"""The maximum connection establishment rate."""
