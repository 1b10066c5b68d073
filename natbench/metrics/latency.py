"""Latency and packet delay variation (RFC 8219) of tagged frames in one phase-2 trial on a filled table.

Both run at ``rate``, or at the median throughput measured earlier at the same working point (RFC 8219
measures them at the throughput rate); loss above the acceptance is reported beside the value. Latency is
the typical (median) latency of the worse direction, ``extra.worst_case`` its 99.9th percentile; PDV is
D99.9 - Dmin of the worse direction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from natbench.errors import SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, repeated
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Rate
from natbench.metrics.trial import rate_from_prior, retry
from natbench.results import RepetitionResult
from natbench.values import MAX_DURATION_SECONDS, MAX_RATE

__all__ = ["LATENCY", "PDV", "DelaySettings", "LatencySettings", "PdvSettings", "latency", "pdv"]

RATE_FROM = "throughput"
"""The metric whose median result is the trial's rate when the settings give none."""


class DelaySettings(FilledTableSettings):
    """Settings of the metrics measured from the delays of tagged frames."""

    rate: Rate | None = Field(default=None, gt=0)
    """Per-direction frame rate (None: the throughput result of the same working point)."""
    tagged_rate: float = Field(default=1000.0, gt=0, le=MAX_RATE)
    """Timestamped (tagged) frames per second per direction."""


class LatencySettings(DelaySettings):
    """Latency (typical = median, worst case = 99.9th percentile of tagged frames) in phase 2."""

    duration: float = Field(default=120.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of each trial (RFC 8219: 120)."""


class PdvSettings(DelaySettings):
    """Packet delay variation (D99.9 - Dmin) in phase 2."""


def _delay_trial(ctx: ProcedureContext[DelaySettings]) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Fill, then one phase-2 trial with tagged frames at the rate; its latency samples per direction."""
    rate = rate_from_prior(ctx, ctx.settings.rate, RATE_FROM)
    filler = Filler(ctx)
    tagged = ctx.settings.tagged_rate
    rec = retry(ctx, f"latency at {rate:g}", lambda: phase2_step(ctx, filler, rate, tagged_rate=tagged))
    lat = rec.extra.get("latency") or {}
    if not lat:
        raise SearchError("the tester returned no latency samples")
    # RFC 8219 measures latency at the throughput rate; loss above the acceptance is reported beside the value
    return lat, {"rate": rate, "verdict": str(rec.verdict), "reason": rec.reason}


def latency(ctx: ProcedureContext[LatencySettings]) -> RepetitionResult:
    """Latency at the throughput rate: typical (median) and worst case (99.9th percentile) per direction."""
    lat, info = _delay_trial(ctx)
    worst = max(lat.values(), key=lambda v: v["median"])
    return ctx.result(
        worst["median"],
        **info,
        worst_case=max(v["p99_9"] for v in lat.values()),
        per_direction={d: {"median": v["median"], "p99_9": v["p99_9"]} for d, v in lat.items()},
    )


def pdv(ctx: ProcedureContext[PdvSettings]) -> RepetitionResult:
    """Packet delay variation D99.9 - Dmin (RFC 8219 7.3.1) at the throughput rate, worst direction."""
    lat, info = _delay_trial(ctx)
    per = {d: v["p99_9"] - v["minimum"] for d, v in lat.items()}
    return ctx.result(max(per.values()), per_direction=per, **info)


def estimate(s: DelaySettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """One fill and one trial per repetition: ``N / fill_rate + timeout + gap + duration + timeout``."""
    return repeated(s, 1, connections / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + STEP_OVERHEAD)


LATENCY = Metric(
    name="latency",
    description="Latency of tagged frames.",
    settings=LatencySettings,
    run=latency,
    unit="s",
    order=40,
    label="latency",
    scale_label="latency rel. scale up",
    title="latency",
    axis="s",
    estimate=estimate,
    lower_is_better=True,
    rate_from=RATE_FROM,
    in_milliseconds=True,
)
"""Latency."""

PDV = Metric(
    name="pdv",
    description="Packet delay variation.",
    settings=PdvSettings,
    run=pdv,
    unit="s",
    order=50,
    label="PDV",
    scale_label="PDV rel. scale up",
    title="packet delay variation",
    axis="s",
    estimate=estimate,
    lower_is_better=True,
    rate_from=RATE_FROM,
    in_milliseconds=True,
)
"""Packet delay variation."""
