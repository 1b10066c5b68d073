"""Throughput (RFC 8219 on a filled table) and the plain forwarding baseline (no phase 1).

Throughput fills the table (phase 1 at ``fill_rate``), waits ``gap``, then searches the rate with phase-2
trials by the algorithm its settings name (:mod:`natbench.search`: the seeds' binary search by default, the fast
search, MLRsearch): each trial the search asks for is a phase-2 trial of the duration it asks (short trials where
it wants them, :class:`~natbench.search.ShortTrialSettings`) on the filled table. The forwarding baseline runs the
same searches without phase 1, against a stateless DUT (seed 000 Figure 2). Results are per direction;
``extra.all_frames_per_second`` is the seed tables' figure (x active directions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from natbench.errors import DutError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import search_seconds
from natbench.metrics.lifetime import filled_table_lifetime
from natbench.metrics.phase2 import Filler, phase2_runner
from natbench.metrics.registry import Metric
from natbench.metrics.searching import run_search
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Phase2Settings, SearchSettings
from natbench.metrics.trial import direction_extra, dut_supports, search_extra, search_value
from natbench.results import RepetitionResult
from natbench.search import SearchOutcome, ShortTrialSettings
from natbench.search.mlr import MlrSection


class ThroughputSettings(MlrSection, SearchSettings, FilledTableSettings, ShortTrialSettings):
    """Throughput: phase 1 fills the tables at fill_rate, then a search of phase-2 trials by ``algorithm``."""


class ForwardingSettings(MlrSection, SearchSettings, Phase2Settings, ShortTrialSettings):
    """Plain forwarding baseline: RFC 8219 throughput search without phase 1 (stateless DUT)."""


def throughput(ctx: ProcedureContext[ThroughputSettings]) -> RepetitionResult:
    """Throughput: fill (phase 1), gap, then a search of phase-2 trials (per-direction fps)."""
    s = ctx.settings
    filler = Filler(ctx)
    out, stored = run_search(
        ctx, phase2_runner(ctx, filler), short_seconds=float(s.short_duration), full_seconds=float(s.duration)
    )
    return _throughput_result(ctx, out, **stored)


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


def forwarding(ctx: ProcedureContext[ForwardingSettings]) -> RepetitionResult:
    """Plain forwarding baseline: throughput binary search of phase-2 trials without state (no phase 1).

    The DUT's table is emptied first (when it has one) so that no state left by an earlier metric
    helps or hinders the baseline, and a restarted repetition sees the same DUT state.
    """
    s = ctx.settings
    table_reset = _optional_reset(ctx)
    out, stored = run_search(
        ctx, phase2_runner(ctx, None), short_seconds=float(s.short_duration), full_seconds=float(s.duration)
    )
    return _throughput_result(ctx, out, table_reset=table_reset, **stored)


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
    step with ``refill: always``; the search's trials as its algorithm plans them
    (:func:`~natbench.metrics.duration.search_seconds`)."""
    fill = connections / s.fill_rate + s.timeout + s.gap
    trials, seconds = search_seconds(s, float(s.duration))
    fills = trials if s.refill == "always" else s.repetitions
    return trials, seconds + fills * fill


def estimate_forwarding(
    s: ForwardingSettings, _connections: int, _selected: Mapping[str, MetricSettings]
) -> tuple[int, float]:
    """The search's trials as its algorithm plans them, without phase 1
    (:func:`~natbench.metrics.duration.search_seconds`)."""
    return search_seconds(s, float(s.duration))


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
    scaled=True,
    unit_words="frames per second",
    memory_trials=("fill",),
    lifetime=filled_table_lifetime,
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
    scaled=True,
    unit_words="frames per second",
)
"""The plain forwarding baseline."""
