"""Frame loss rate (RFC 2544 26.3, RFC 8219) at fixed rates, highest first, each a phase-2 trial on a filled table.

The curve stops after ``stop_after_zero`` consecutive loss-free rates (RFC 2544: two); the result is the
loss ratio at the first (highest) rate, the curve is stored beside it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, repeated
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Rate
from natbench.metrics.trial import direction_extra, retry
from natbench.results import RepetitionResult, TrialRecord
from natbench.values import MAX_REPETITIONS

__all__ = ["FRAME_LOSS", "FrameLossSettings", "frame_loss"]


class FrameLossSettings(FilledTableSettings):
    """Frame loss rate at fixed rates (RFC 8219), each in phase 2 after phase 1."""

    rates: list[Rate] = Field(min_length=1)
    """Per-direction rates to measure, e.g. from the line rate downwards in 10 % steps."""
    stop_after_zero: int = Field(default=2, ge=0, le=MAX_REPETITIONS)
    """Stop after this many consecutive rates without loss (RFC 2544 26.3: two); 0 measures every rate."""


def frame_loss(ctx: ProcedureContext[FrameLossSettings]) -> RepetitionResult:
    """Frame loss rate (RFC 2544 26.3) at the listed rates, highest first."""
    s = ctx.settings
    filler = Filler(ctx)
    curve: list[list[float]] = []
    zero_run = 0
    for rate in s.rates:

        def trial(rate: float = rate) -> TrialRecord:
            return phase2_step(ctx, filler, rate)

        rec = retry(ctx, f"frame loss at {rate:g}", trial)
        flr = float(rec.value or 0.0)
        curve.append([rate, flr])
        zero_run = zero_run + 1 if flr == 0 else 0
        if s.stop_after_zero and zero_run >= s.stop_after_zero:
            break
    return ctx.result(curve[0][1], rate=curve[0][0], curve=curve, **direction_extra(ctx.directions))


def estimate(s: FrameLossSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """One fill and one phase-2 trial per listed rate: ``N / fill_rate + timeout + gap + duration + timeout``."""
    k = len(s.rates)
    return repeated(s, k, k * (connections / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + STEP_OVERHEAD))


FRAME_LOSS = Metric(
    name="frame_loss",
    description="Frame loss rate at fixed rates.",
    settings=FrameLossSettings,
    run=frame_loss,
    unit="ratio",
    order=30,
    label="frame loss",
    scale_label="frame loss rel. scale up",
    title="frame loss rate",
    axis="ratio",
    estimate=estimate,
    lower_is_better=True,
)
"""The frame loss rate."""
