"""What every metric's settings share: the field types, the common fields and the shared parts.

A metric's own settings model lives in its module (``natbench.metrics.cps.CpsSettings``, ...) and is
built from these bases. It is at once the campaign's ``metrics.<name>`` section (the campaign schema
is built from the registered models, docs/campaign-schema.md from their field docstrings) and what the
metric's procedure reads: one model per metric, one default per setting, documented once.

Engine options that are the same for every metric of a run (the achieved-rate tolerance, the Responder's
entry selection, the DUT CPU monitor) are not settings of a metric: see
:class:`~natbench.metrics.context.RunOptions`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator

from natbench.config.model import SchemaModel
from natbench.plugins import Directions
from natbench.search.declare import DEFAULT_ALGORITHM, offered_names
from natbench.values import (
    MAX_COUNT,
    MAX_DURATION_SECONDS,
    MAX_RATE,
    MAX_REPETITIONS,
    MAX_RETRIES,
    MAX_WAIT_SECONDS,
    parse_count,
    parse_number,
)

Count = Annotated[int, BeforeValidator(parse_count), Field(le=MAX_COUNT)]
"""A whole number written as ``8388608``, ``2^23`` or ``4M``; at most 2^32."""
Rate = Annotated[float, BeforeValidator(parse_number), Field(le=MAX_RATE)]
"""A rate or count written as ``200000``, ``200k`` or ``2^17``; finite, at most 1e12 per second."""


def _loss_ratio(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 1:
        raise ValueError(
            f"acceptance is a loss ratio below 1 (0.0001 = 0.01 % loss, the seeds' 99.99 % criterion), got {value!r}"
        )
    return value


LossRatio = Annotated[float, BeforeValidator(_loss_ratio), Field(ge=0.0, lt=1.0)]
"""A frame loss ratio: 0 (RFC 2544) .. below 1."""


class _CommonSettings(SchemaModel):
    """The settings every metric has, but for ``max_invalid`` (:class:`MetricSettings` adds it)."""

    repetitions: int = Field(default=10, ge=1, le=MAX_REPETITIONS)
    """Number of repetitions (the seeds use 10 or 20; at most 10,000); median, min and max are reported."""
    acceptance: LossRatio | None = None
    """Loss ratio a step may have and still pass (None: traffic.acceptance)."""
    directions: Directions | None = None
    """Active directions (None: traffic.directions)."""
    timeout: float = Field(default=2.0, ge=0, le=MAX_WAIT_SECONDS)
    """Seconds the tester waits for frames still in flight after sending stops (passed to the tester; at most
    one day)."""
    check_table: bool = True
    """Count the DUT's connections to check trials (a phase 1 must leave the connections its valid frames
    created, fewer fails the step; phase 2 must not change the table); only where the DUT's recipe can count."""
    table_slack: int = Field(default=64, ge=0, le=MAX_COUNT)
    """Connections the DUT table may hold beyond the test's own after phase 1 (e.g. its management session)."""


class _SearchRange(_CommonSettings):
    """The rate range of :class:`SearchSettings`, declared apart from it so that a search metric's settings are
    listed (in campaign references and messages) as the common ones, the range, then ``max_invalid``."""

    lower: Rate = Field(default=0.0, ge=0)
    """Lower bound of the search, frames (or connections) per second per direction."""
    upper: Rate = Field(gt=0)
    """Upper bound of the search (e.g. the line rate), per direction."""
    error: Rate = Field(gt=0)
    """The search stops when upper - lower < error (seed 000: 100 or 1000, under 0.1 % of the result)."""


class MetricSettings(_CommonSettings):
    """Settings every metric (procedure) has."""

    max_invalid: int = Field(default=3, ge=0, le=MAX_RETRIES)
    """Retries of a trial that was invalid (the tester could not keep the rate, ...) before the repetition fails
    (at most 1,000)."""

    def resolved(self, acceptance: float, directions: Directions) -> Self:
        """These settings with the campaign-wide ``acceptance`` and ``directions`` (the traffic section's)
        where the metric sets none: what a procedure reads. Done once, when a run is built."""
        update: dict[str, Any] = {}
        if self.acceptance is None:
            update["acceptance"] = acceptance
        if self.directions is None:
            update["directions"] = directions
        return self.model_copy(update=update) if update else self


class SearchSettings(MetricSettings, _SearchRange):
    """A search on the rate (frames or connections per second per direction) by one of the registered search
    algorithms (:mod:`natbench.search`)."""

    algorithm: str = DEFAULT_ALGORITHM
    """Search algorithm: one of the registered search algorithms (:mod:`natbench.search`) this metric offers, each
    listed below with what it does; the default is the seeds' RFC 2544 binary search."""

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.lower >= self.upper:
            raise ValueError(f"lower ({self.lower:g}) must be below upper ({self.upper:g})")
        if self.error >= self.upper - self.lower:
            raise ValueError(f"error ({self.error:g}) must be smaller than upper - lower ({self.upper - self.lower:g})")
        return self

    @field_validator("algorithm")
    @classmethod
    def _offered(cls, name: str) -> str:
        """The algorithm must be registered and offered by this metric (its settings include what it reads)."""
        known = offered_names(cls)
        if name not in known:
            raise ValueError(f"search algorithm {name!r} is not offered here; choose one of: {', '.join(known)}")
        return name


class GapSettings(MetricSettings):
    """Settings of metrics that pause after phase 1."""

    gap: float = Field(default=2.0, ge=0, le=MAX_WAIT_SECONDS)
    """Seconds between phase 1 and what follows it (phase 2, the timed delete-all, the reverse frames; at most
    one day)."""


class FillSettings(GapSettings):
    """Settings of metrics that first load the DUT's connection table with phase 1."""

    fill_rate: Rate = Field(gt=0)
    """Safe phase-1 rate (connections per second) that fills the tables."""


class Phase2Settings(MetricSettings):
    """Settings of metrics that run timed phase-2 trials."""

    duration: float = Field(default=60.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of each phase-2 trial (RFC 2544: 60; at most seven days)."""


class FilledTableSettings(FillSettings, Phase2Settings):
    """Settings of metrics whose phase-2 trials run on a table filled by phase 1."""

    refill: Literal["auto", "always"] = "auto"
    """``auto``: refill only when a phase-2 step changed the table (that step is invalid) or, on a DUT that
    cannot count, after a failed step; ``always``: empty and refill before every step (siitperf's scripts)."""
    refill_after: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Refill before a phase-2 step that would end (with its receive wait, ``timeout``) more than this many seconds
    after the fill began (real time since the fill, so a whole search on one fill stays within it). The limit is the
    smaller of this and the DUT's own connection timeout, the shortest ``udp_timeout`` / ``udp_timeout_stream`` its
    facts name; None: that timeout alone (no limit when the facts name none: trials record ``timeout_guard: off``)."""
    table_drift: int = Field(default=0, ge=0, le=MAX_COUNT)
    """Change of the DUT's connection count during a phase-2 step still tolerated (DUT background traffic)."""
