"""Throughput (RFC 8219 on a filled table) and the plain forwarding baseline (no phase 1).

Throughput fills the table (phase 1 at ``fill_rate``), waits ``gap``, then searches the rate with phase-2
trials: RFC 2544's binary search (``algorithm: binary``), MLRsearch 1.2.1 (``algorithm: mlr``) or short trials
that narrow and full trials that confirm (``algorithm: fast``, :mod:`natbench.metrics.fast`). The
forwarding baseline runs the same search without phase 1, against a stateless DUT (seed 000 Figure 2).
Results are per direction; ``extra.all_frames_per_second`` is the seed tables' figure (x active directions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from natbench.errors import DutError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, fast_trials, repeated, search_steps
from natbench.metrics.fast import ShortTrialSettings, fast_extra, phase2_fast
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Phase2Settings, SearchSettings
from natbench.metrics.trial import direction_extra, dut_supports, retry, search_extra, search_rates, search_value
from natbench.results import RepetitionResult
from natbench.search import SearchOutcome, mlr_search

__all__ = ["FORWARDING", "THROUGHPUT", "ForwardingSettings", "ThroughputSettings", "forwarding", "throughput"]


class ThroughputSettings(SearchSettings, FilledTableSettings, ShortTrialSettings):
    """Throughput: phase 1 fills the tables at fill_rate, then a binary search with phase-2 trials."""

    algorithm: Literal["binary", "mlr", "fast"] = "binary"
    """Search algorithm: ``binary`` (RFC 2544 binary search with ``error``, the seeds' procedure), ``mlr``
    (MLRsearch 1.2.1 with relative width error / upper; needs ``pip install 'natbench[mlr]'``) or ``fast`` (short
    trials of ``short_duration`` narrow, full trials confirm: the result passed a full trial and a rate at most
    ``error`` above it failed one; see docs/engine.md)."""


class ForwardingSettings(SearchSettings, Phase2Settings, ShortTrialSettings):
    """Plain forwarding baseline: RFC 8219 throughput search without phase 1 (stateless DUT)."""

    algorithm: Literal["binary", "fast"] = "binary"
    """Search algorithm: ``binary`` (RFC 2544 binary search, the seeds' procedure) or ``fast`` (short trials
    narrow, full trials confirm; see throughput's ``algorithm``)."""


def throughput(ctx: ProcedureContext[ThroughputSettings]) -> RepetitionResult:
    """Throughput: fill (phase 1), gap, then a binary search of phase-2 trials (per-direction fps)."""
    s = ctx.settings
    filler = Filler(ctx)
    if s.algorithm == "mlr":
        return _throughput_mlr(ctx, filler)
    if s.algorithm == "fast":
        fast = phase2_fast(ctx, filler)
        return _throughput_result(ctx, fast, **fast_extra(fast))
    out = search_rates(
        ctx, s.lower, s.upper, lambda st: phase2_step(ctx, filler, st.rate, lower=st.lower, upper=st.upper)
    )
    return _throughput_result(ctx, out, algorithm="binary")


def _throughput_result(ctx: ProcedureContext[SearchSettings], out: SearchOutcome, **extra: Any) -> RepetitionResult:
    """A throughput search's result: per-direction fps plus all frames per second (x active directions)."""
    n = len(ctx.directions.active)
    value = search_value(out)
    return ctx.result(
        value,
        error=out.error,
        **direction_extra(ctx.directions),
        all_frames_per_second=None if value is None else value * n,
        **extra,
        **search_extra(out, ctx.tester_limits),
    )


def _throughput_mlr(ctx: ProcedureContext[ThroughputSettings], filler: Filler) -> RepetitionResult:
    """Throughput by MLRsearch 1.2.1 (one goal: acceptance loss ratio, exceed ratio 0, relative width from error)."""
    s = ctx.settings

    def measure(load: float) -> tuple[int, int]:
        rec = retry(ctx, f"MLRsearch trial at {load:g}", lambda: phase2_step(ctx, filler, load))
        return sum(c["sent"] for c in rec.counts.values()), sum(c["valid"] for c in rec.counts.values())

    value = mlr_search(
        measure, lower=s.lower, upper=s.upper, error=s.error, loss_ratio=ctx.acceptance, duration=s.duration
    )
    n = len(ctx.directions.active)
    return ctx.result(value, all_frames_per_second=value * n, algorithm="mlr", **direction_extra(ctx.directions))


def forwarding(ctx: ProcedureContext[ForwardingSettings]) -> RepetitionResult:
    """Plain forwarding baseline: throughput binary search of phase-2 trials without state (no phase 1).

    The DUT's table is emptied first (when it has one) so that no state left by an earlier metric
    helps or hinders the baseline, and a restarted repetition sees the same DUT state.
    """
    s = ctx.settings
    table_reset = _optional_reset(ctx)
    if s.algorithm == "fast":
        fast = phase2_fast(ctx, None)
        return _throughput_result(ctx, fast, table_reset=table_reset, **fast_extra(fast))
    out = search_rates(
        ctx, s.lower, s.upper, lambda st: phase2_step(ctx, None, st.rate, lower=st.lower, upper=st.upper)
    )
    return _throughput_result(ctx, out, table_reset=table_reset, algorithm="binary")


def _optional_reset(ctx: ProcedureContext[MetricSettings]) -> bool:
    """Empty the DUT table when the DUT has one (a stateless forwarding recipe has no reset step)."""
    if not dut_supports(ctx.dut, "reset_connections"):
        return False
    try:
        ctx.dut.reset_connections()
    except (NotImplementedError, DutError):
        return False  # no table to empty; a broken DUT shows up in the next trial
    return True


def estimate_throughput(
    s: ThroughputSettings, connections: int, _selected: Mapping[str, MetricSettings]
) -> tuple[int, float]:
    """A fill of N connections at ``fill_rate`` (``N / fill_rate + timeout + gap``) per repetition, before every
    step with ``refill: always``; every step one phase-2 trial (``duration + timeout``). ``algorithm: fast``: the
    narrowing trials (:func:`~natbench.metrics.duration.fast_trials`) last ``short_duration``, plus
    :data:`~natbench.metrics.duration.CONFIRMATIONS` full ones per repetition."""
    fill = connections / s.fill_rate + s.timeout + s.gap
    trials, seconds = _phase2_search(s)
    fills = trials if s.refill == "always" else s.repetitions
    return trials, seconds + fills * fill


def estimate_forwarding(
    s: ForwardingSettings, _connections: int, _selected: Mapping[str, MetricSettings]
) -> tuple[int, float]:
    """Every step is one phase-2 trial without phase 1: ``duration + timeout`` (``algorithm: fast``: as
    throughput's, without the fill)."""
    return _phase2_search(s)


def _phase2_search(s: ThroughputSettings | ForwardingSettings) -> tuple[int, float]:
    """(trials, seconds) of a phase-2 search's trials over all repetitions, fills not included."""
    full = s.duration + s.timeout + STEP_OVERHEAD
    if s.algorithm != "fast":
        steps = search_steps(s.lower, s.upper, s.error)
        return repeated(s, steps, steps * full)
    short, full_trials = fast_trials(s, s.short_duration < s.duration)
    return short + full_trials, short * (s.short_duration + s.timeout + STEP_OVERHEAD) + full_trials * full


THROUGHPUT = Metric(
    name="throughput",
    description="Throughput (frames per second per direction inside natbench; reports show all frames).",
    settings=ThroughputSettings,
    run=throughput,
    unit="fps",
    order=20,
    label="throughput",
    scale_label="tp. rel. scale up",
    title="throughput",
    axis="frames per second (all directions)",
    estimate=estimate_throughput,
)
"""Throughput on a filled connection table."""

FORWARDING = Metric(
    name="forwarding",
    description="Plain forwarding baseline throughput.",
    settings=ForwardingSettings,
    run=forwarding,
    unit="fps",
    order=90,
    label="fwd. throughput",
    scale_label="fwd. rel. scale up",
    title="forwarding baseline throughput",
    axis="frames per second (all directions)",
    estimate=estimate_forwarding,
    stateful=False,
    baseline_for="throughput",
)
"""The plain forwarding baseline."""
