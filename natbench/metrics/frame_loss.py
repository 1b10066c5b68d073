"""Frame loss rate (RFC 2544 26.3, RFC 8219), each rate a phase-2 trial on a filled table.

RFC 2544 26.3: the first trial at the maximum rate, then at rates reduced by at most 10 % of that maximum each
time (a finer granularity is encouraged), until two successive trials lose no frame. The walk is given either by
``max_rate`` and ``step`` (a fraction of it, at most 0.1: max, max x (1 - step), ... down to one step) or by an
explicit list of ``rates``, which is measured from the highest down whatever order it is written in and must be
spaced by at most 10 % of its highest rate; a rate listed twice is measured once. The walk stops after
``stop_after_zero`` consecutive loss-free rates (RFC 2544: two; 0 measures every rate); the result is the loss ratio
at the highest rate, and the whole walk is stored beside it (``extra.curve``: [rate, loss ratio] pairs in the order
measured). A walk whose rates ran out before ``stop_after_zero`` consecutive loss-free ones did not reach the rates
where the DUT stops losing frames, as RFC 2544 asks: it stores ``extra.walk_incomplete: true`` and reports mark it
``[w]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Self

from pydantic import Field, model_validator

from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Column, Mark
from natbench.metrics.duration import STEP_OVERHEAD, repeated
from natbench.metrics.lifetime import filled_table_lifetime
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Rate
from natbench.metrics.trial import direction_extra, retry
from natbench.results import RepetitionResult, TrialRecord
from natbench.values import MAX_REPETITIONS

MAX_STEP = 0.1
"""RFC 2544 26.3: the rates of the walk are at most 10 % of the maximum rate apart."""


class FrameLossSettings(FilledTableSettings):
    """Frame loss rate (RFC 2544 26.3, RFC 8219): from the maximum rate down, each rate in phase 2 after phase 1."""

    max_rate: Rate | None = Field(default=None, gt=0)
    """The first (highest) rate of the walk, per direction, e.g. the line rate (RFC 2544: 100 % of the maximum
    rate of the medium); the walk then goes down by ``step`` x it. Give this or ``rates``."""
    step: float = Field(default=MAX_STEP, gt=0, le=MAX_STEP)
    """With ``max_rate``: each rate of the walk is this fraction of ``max_rate`` below the one before (RFC 2544:
    at most 0.1, a finer granularity is encouraged)."""
    rates: list[Rate] | None = Field(default=None, min_length=1)
    """Instead of ``max_rate``: the per-direction rates of the walk, measured from the highest down whatever the
    order written, each once (a rate listed twice is measured once); consecutive ones at most 10 % of the highest
    apart (RFC 2544 26.3)."""
    stop_after_zero: int = Field(default=2, ge=0, le=MAX_REPETITIONS)
    """Stop after this many consecutive rates without loss (RFC 2544 26.3: two); 0 measures every rate."""

    @model_validator(mode="after")
    def _walk(self) -> Self:
        if (self.max_rate is None) == (self.rates is None):
            raise ValueError("give max_rate (and step) or rates, not both and not neither")
        if self.rates is not None:
            walk = sorted(set(self.rates), reverse=True)
            top = walk[0]
            for hi, lo in itertools.pairwise(walk):
                if hi - lo > MAX_STEP * top * (1 + 1e-9):
                    raise ValueError(
                        f"rates: {hi:g} to {lo:g} is a step of {(hi - lo) / top:.1%} of the highest rate {top:g};"
                        " RFC 2544 26.3 allows at most 10 % (add rates between, or give max_rate and step)"
                    )
        return self

    def walk(self) -> list[float]:
        """The rates of the walk, highest first, each once: with ``max_rate``, ``max_rate x (1 - i x step)`` for
        i = 0, 1, ... while the fraction stays positive (at least ten rates, ``step`` being at most 0.1), each fraction
        rounded to 12 decimals so that float noise (1 - 7 x 0.1 = 0.29999999999999993) does not reach the rates."""
        if self.rates is not None:
            return sorted(set(self.rates), reverse=True)
        assert self.max_rate is not None
        count = math.floor(1 / self.step + 1e-9)
        return [self.max_rate * round(1 - i * self.step, 12) for i in range(count)]


def frame_loss(ctx: ProcedureContext[FrameLossSettings]) -> RepetitionResult:
    """Frame loss rate (RFC 2544 26.3): from the maximum rate down until ``stop_after_zero`` loss-free rates."""
    s = ctx.settings
    filler = Filler(ctx)
    curve: list[list[float]] = []
    zero_run = 0
    for rate in s.walk():

        def trial(rate: float = rate) -> TrialRecord:
            return phase2_step(ctx, filler, rate)

        rec = retry(ctx, f"frame loss at {rate:g}", trial)
        flr = float(rec.value or 0.0)
        curve.append([rate, flr])
        zero_run = zero_run + 1 if flr == 0 else 0
        if s.stop_after_zero and zero_run >= s.stop_after_zero:
            break
    incomplete = bool(s.stop_after_zero) and zero_run < s.stop_after_zero
    return ctx.result(
        curve[0][1],
        rate=curve[0][0],
        curve=curve,
        walk_incomplete=incomplete,
        **direction_extra(ctx.directions),
    )


def estimate(s: FrameLossSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """One fill and one phase-2 trial per rate of the walk (all of them: where it stops is not known beforehand):
    ``N / fill_rate + timeout + gap + duration + timeout``."""
    k = len(s.walk())
    return repeated(s, k, k * (connections / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + STEP_OVERHEAD))


WALK_INCOMPLETE = Column(
    "walk_incomplete", "bool", lambda r: r.value is not None and bool(r.extra.get("walk_incomplete"))
)
"""A frame loss walk whose rates ran out before ``stop_after_zero`` consecutive loss-free ones."""

FRAME_LOSS = Metric(
    name="frame_loss",
    description="Frame loss rate from the maximum rate down (RFC 2544 26.3).",
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
    unit_words="ratio",
    memory_trials=("fill",),
    lifetime=filled_table_lifetime,
    columns=(WALK_INCOMPLETE,),
    marks=(
        Mark(
            "walk_incomplete",
            "[w]",
            "[w]: some repetitions' walk ran out of rates before stop_after_zero successive rates lost no frame (RFC "
            "2544 26.3: two): their curves stop above the rates where the DUT stops losing frames",
            "{title}: in {n} of {total} repetitions the walk ran out of rates before stop_after_zero successive "
            "loss-free rates (RFC 2544 26.3: two), so their curves (marked [w]) do not show where the loss ends; add "
            "lower rates (rates, or a smaller step).",
        ),
    ),
)
"""The frame loss rate."""
