"""Latency and packet delay variation (RFC 8219 7.2 and 7.3.1) in phase-2 trials on a filled table.

Both run at ``rate``, or at the median throughput measured earlier at the same working point (RFC 8219
measures them at the throughput rate); loss above the acceptance is reported beside the value.

Latency (RFC 8219 7.2): a 120 s trial; ``tagged_frames`` (at least 500) timestamped frames per direction,
evenly spaced from ``tag_delay`` (60 s) to the end, so no tagged frame falls in the warm-up. Typical latency
(TL) is their median, worst-case latency (WCL) their 99.9th percentile (nearest rank: the largest of fewer
than 1000). The result is the worse direction's TL; ``extra.worst_case`` the worse direction's WCL.

PDV (RFC 8219 7.3.1, the PDV form of RFC 5481): a 60 s trial in which the one-way delay of every frame is
measured; PDV = D99.9 - Dmin of the worse direction.

Both are repeated 20 times (RFC 8219: at least 20); the report shows the median (and min, max) of the
repetitions' TL, WCL and PDV.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, model_validator

from natbench.errors import SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Column, Mark, StatRows
from natbench.metrics.duration import STEP_OVERHEAD, repeated
from natbench.metrics.lifetime import filled_table_lifetime
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Rate
from natbench.metrics.trial import rate_from_prior, retry
from natbench.plugins import Phase2Options
from natbench.results import RepetitionResult
from natbench.values import MAX_COUNT, MAX_DURATION_SECONDS, MAX_RATE, MAX_REPETITIONS

RATE_FROM = "throughput"
"""The metric whose median result is the trial's rate when the settings give none."""


class DelaySettings(FilledTableSettings):
    """Settings of the metrics measured from one-way delays (RFC 8219 7.2, 7.3)."""

    rate: Rate | None = Field(default=None, gt=0)
    """Per-direction frame rate (None: the throughput result of the same working point, as RFC 8219 7.2 and
    7.3.1 require)."""
    repetitions: int = Field(default=20, ge=1, le=MAX_REPETITIONS)
    """Number of repetitions (RFC 8219 7.2 and 7.3.1: at least 20, the median is reported; min and max too)."""


class LatencySettings(DelaySettings):
    """Latency (RFC 8219 7.2): typical = median, worst case = 99.9th percentile of the tagged frames."""

    duration: float = Field(default=120.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of each trial (RFC 8219 7.2: at least 120)."""
    tag_delay: float = Field(default=60.0, ge=0, le=MAX_DURATION_SECONDS)
    """Seconds of each trial before the first tagged frame (RFC 8219 7.2: tags only after 60 s)."""
    tagged_frames: int = Field(default=500, ge=1, le=MAX_COUNT)
    """Tagged (timestamped) frames per direction, evenly spaced from ``tag_delay`` to the end of the trial
    (RFC 8219 7.2: at least 500)."""
    tagged_rate: float | None = Field(default=None, gt=0, le=MAX_RATE)
    """Instead of ``tagged_frames``: tag this many frames per second per direction from ``tag_delay`` on
    (None: ``tagged_frames``)."""

    @model_validator(mode="after")
    def _warm_up_within_trial(self) -> Self:
        if self.tag_delay >= self.duration:
            raise ValueError(f"tag_delay ({self.tag_delay:g} s) must be shorter than duration ({self.duration:g} s)")
        return self


class PdvSettings(DelaySettings):
    """Packet delay variation (RFC 8219 7.3.1): D99.9 - Dmin of the one-way delays of all frames of a trial."""

    duration: float = Field(default=60.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of each trial (RFC 8219 7.3.1: at least 60); every frame of it is timed."""


def _delay_trial(
    ctx: ProcedureContext[DelaySettings], options: Phase2Options
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Fill, then one phase-2 trial at the rate measured as ``options`` say; its delay statistics per direction."""
    rate = rate_from_prior(ctx, ctx.settings.rate, RATE_FROM)
    filler = Filler(ctx)
    rec = retry(ctx, f"{ctx.metric} at {rate:g}", lambda: phase2_step(ctx, filler, rate, measure=options))
    lat = rec.extra.get("latency") or {}
    if not lat:
        raise SearchError("the tester returned no latency samples")
    # RFC 8219 measures latency at the throughput rate; loss above the acceptance is reported beside the value
    info: dict[str, Any] = {"rate": rate, "verdict": str(rec.verdict), "reason": rec.reason}
    schedule = (rec.extra.get("tester") or {}).get("tag_schedule")
    if schedule is not None:  # when the tester sent its tagged frames (TRex: one latency stream per direction)
        info["tag_schedule"] = schedule
    return lat, info


def latency_options(s: LatencySettings, rate: float) -> Phase2Options:
    """The tagged-frame schedule of a latency trial at ``rate`` (RFC 8219 7.2); an error when the frames after
    the warm-up cannot hold ``tagged_frames``."""
    window = rate * (s.duration - s.tag_delay)
    if s.tagged_rate is None and window < s.tagged_frames:
        raise SearchError(
            f"{s.tagged_frames} tagged frames do not fit into {s.duration - s.tag_delay:g} s at {rate:g} frames/s; "
            "lower tagged_frames or tag_delay, or lengthen duration"
        )
    return Phase2Options(
        latency=True,
        latency_rate=s.tagged_rate or 1000.0,
        latency_delay=s.tag_delay,
        latency_frames=None if s.tagged_rate is not None else s.tagged_frames,
    )


def latency(ctx: ProcedureContext[LatencySettings]) -> RepetitionResult:
    """Latency at the throughput rate: typical (median) and worst case (99.9th percentile) per direction."""
    rate = rate_from_prior(ctx, ctx.settings.rate, RATE_FROM)
    lat, info = _delay_trial(ctx, latency_options(ctx.settings, rate))
    worst = max(lat.values(), key=lambda v: v["median"])
    return ctx.result(
        worst["median"],
        **info,
        worst_case=max(v["p99_9"] for v in lat.values()),
        tag_delay=ctx.settings.tag_delay,
        tags_asked=ctx.settings.tagged_frames if ctx.settings.tagged_rate is None else None,
        per_direction={d: {"median": v["median"], "p99_9": v["p99_9"]} for d, v in lat.items()},
        samples={d: v["samples"] for d, v in lat.items()},
    )


def pdv(ctx: ProcedureContext[PdvSettings]) -> RepetitionResult:
    """Packet delay variation D99.9 - Dmin (RFC 8219 7.3.1) of all frames at the throughput rate, worst direction."""
    lat, info = _delay_trial(ctx, Phase2Options(all_delays=True))
    per = {d: v["p99_9"] - v["minimum"] for d, v in lat.items()}
    frames = {d: v.get("frames", "tagged") for d, v in lat.items()}
    bound = max(float(v.get("error_bound", 0.0)) * v["p99_9"] for v in lat.values())
    return ctx.result(
        max(per.values()),
        per_direction=per,
        frames=frames,
        samples={d: v["samples"] for d, v in lat.items()},
        error_bound=bound,
        **info,
    )


def estimate(s: DelaySettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """One fill and one trial per repetition: ``N / fill_rate + timeout + gap + duration + timeout``."""
    return repeated(s, 1, connections / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout + STEP_OVERHEAD)


def tagged_only(r: RepetitionResult) -> bool:
    """A delay result asked for every frame's delay (it stores ``frames`` per direction) whose tester timed only its
    tagged latency frames in some direction (TRex: PDV from the tagged frames, not every frame)."""
    frames = r.extra.get("frames")
    return isinstance(frames, Mapping) and any(str(v) == "tagged" for v in frames.values())


def fewer_tags(r: RepetitionResult) -> bool:
    """A latency result with fewer timed tagged frames in some direction than ``tagged_frames`` asked for (the
    tester could not send them all within the trial, as TRex's latency stream held to half the trial's rate, or
    some were lost): its percentiles rest on fewer frames than the campaign planned."""
    asked, samples = r.extra.get("tags_asked"), r.extra.get("samples")
    if r.value is None or not isinstance(asked, int) or not isinstance(samples, Mapping):
        return False
    return any(isinstance(n, int) and n < asked for n in samples.values())


WORST_CASE = Column("worst_case", "float64", lambda r: _num(r.extra.get("worst_case")), "stats")
"""Latency's worst case (the 99.9th percentile of the tagged frames, RFC 8219 7.2), stored beside the typical."""


def _num(x: object) -> float:
    return float("nan") if not isinstance(x, int | float) or isinstance(x, bool) else float(x)


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
    unit_words="milliseconds",
    columns=(WORST_CASE, Column("fewer_tags", "bool", fewer_tags)),
    marks=(
        Mark(
            "fewer_tags",
            "[f]",
            "[f]: fewer tagged frames timed than tagged_frames asked for in some direction (the tester could not "
            "send them all within the trial, or some were lost): the percentiles rest on fewer frames",
            "{n} of {total} latency repetitions timed fewer tagged frames than asked: marked [f] in the tables.",
        ),
    ),
    stat_rows=(
        StatRows(
            "worst_case",
            "worst case",
            "{prefix}: typical latency (median of the tagged frames), '{prefix} worst case': worst-case latency "
            "(their 99.9th percentile), both per RFC 8219 7.2, the worse direction, over the repetitions",
        ),
    ),
    memory_trials=("fill",),
    lifetime=filled_table_lifetime,
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
    unit_words="milliseconds",
    columns=(Column("tagged_only", "bool", tagged_only),),
    marks=(
        Mark(
            "tagged_only",
            "[t]",
            "[t]: PDV of the tagged latency frames only (the TRex tester times no other frames), not of every frame "
            "as RFC 8219 7.3.1 and the software tester measure it: not comparable with unmarked PDV",
            "{n} PDV repetitions were timed from the tagged latency frames only (TRex), not from every frame: "
            "marked [t] in the tables, not comparable with every-frame PDV.",
        ),
    ),
    memory_trials=("fill",),
    lifetime=filled_table_lifetime,
)
"""Packet delay variation."""
