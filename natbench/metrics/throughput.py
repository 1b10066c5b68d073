"""Throughput (RFC 8219 on a filled table) and the plain forwarding baseline (no phase 1).

Throughput fills the table (phase 1 at ``fill_rate``), waits ``gap``, then searches the rate with phase-2
trials: RFC 2544's binary search (``algorithm: binary``), MLRsearch 1.2.1 (``algorithm: mlr``, its goal from
``mlr``: :mod:`natbench.search.mlr`) or short trials that narrow and full trials that confirm (``algorithm: fast``,
:mod:`natbench.metrics.fast`). The forwarding baseline runs the same searches without phase 1, against a stateless
DUT (seed 000 Figure 2). Results are per direction; ``extra.all_frames_per_second`` is the seed tables' figure
(x active directions).

Every MLRsearch measurement is a stored phase-2 trial of the duration MLRsearch asked for (``extra.duration``;
``extra.search_trial``: ``full`` at the goal's final trial duration, else ``short``); invalid trials are retried
(``max_invalid``) and never reach MLRsearch. The result stores ``algorithm: mlr``, ``mlr_preset``, the resolved
``mlr_goal``, MLRsearch's ``conditional_throughput`` and the search fields every search stores (the value is the
relevant lower bound, ``upper`` the relevant upper bound, ``error`` their distance).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from natbench.errors import DutError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.duration import STEP_OVERHEAD, fast_trials, repeated, search_steps
from natbench.metrics.fast import ShortTrialSettings, fast_extra, phase2_fast, short_trials, tagged
from natbench.metrics.lifetime import filled_table_lifetime
from natbench.metrics.phase2 import Filler, phase2_step
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FilledTableSettings, MetricSettings, Phase2Settings, SchemaModel, SearchSettings
from natbench.metrics.trial import direction_extra, dut_supports, retry, search_extra, search_rates, search_value
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.search import SearchOutcome
from natbench.search.fast import FastStep
from natbench.search.mlr import MlrGoal, MlrOutcome, mlr_search, resolve_goal
from natbench.values import MAX_DURATION_SECONDS

__all__ = [
    "FORWARDING",
    "THROUGHPUT",
    "ForwardingSettings",
    "MlrSettings",
    "ThroughputSettings",
    "forwarding",
    "mlr_goal",
    "throughput",
]


class MlrSettings(SchemaModel):
    """``algorithm: mlr``: MLRsearch's search goal, a preset and the values that override it (docs/engine.md)."""

    preset: Literal["rfc2544", "csit"] = "rfc2544"
    """``rfc2544``: an RFC 2544 section 24 result (draft-ietf-bmwg-mlrsearch): every lower bound a passing trial of
    ``duration``, exceed ratio 0, initial trials of ``short_duration``, relative width ``error / upper``; ``csit``:
    the goal FD.io CSIT's NDR/PDR tests search (trials of 1 s, duration sum 21 s, exceed ratio 0.5, relative width
    0.005). Both: 2 preceding targets, expansion coefficient 2; loss ratio: the metric's ``acceptance``."""
    initial_trial_duration: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of MLRsearch's first, shortest trials (None: the preset's)."""
    final_trial_duration: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of the trials that decide the result (None: the preset's; ``rfc2544``: ``duration``)."""
    duration_sum: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds of final trials at a load that classify it (None: the preset's; ``rfc2544``: the final trial
    duration)."""
    exceed_ratio: float | None = Field(default=None, ge=0, lt=1)
    """Share of the duration sum that may be bad trials at a lower bound (None: the preset's)."""
    relative_width: float | None = Field(default=None, gt=0, lt=1)
    """The search ends when the lower bound is within this share of the upper bound (None: the preset's;
    ``rfc2544``: ``error / upper``, so the final width is at most ``error``)."""
    expansion_coefficient: int | None = Field(default=None, ge=2, le=1000)
    """MLRsearch's external search multiplies its width by this (None: the preset's)."""
    preceding_targets: int | None = Field(default=None, ge=0, le=100)
    """Coarser targets (shorter trials, wider width) searched before the final one (None: the preset's)."""

    def overrides(self) -> dict[str, float | int | None]:
        """The goal values this section sets (None: the preset's)."""
        return self.model_dump(exclude={"preset"})


def mlr_goal(s: ThroughputSettings | ForwardingSettings, loss_ratio: float) -> MlrGoal:
    """The MLRsearch goal of settings ``s`` with ``loss_ratio`` (the metric's acceptance)."""
    return resolve_goal(
        s.mlr.preset,
        s.mlr.overrides(),
        loss_ratio=loss_ratio,
        duration=s.duration,
        short_duration=s.short_duration,
        error=s.error,
        upper=s.upper,
    )


def _check_mlr(mlr: MlrSettings, info: ValidationInfo) -> MlrSettings:
    """The ``mlr`` section resolved against the metric's duration, short_duration, error and upper must be a goal
    MLRsearch 1.2.1 accepts (checked when the campaign is read, also when another algorithm is chosen)."""
    d = info.data
    if not all(k in d for k in ("duration", "short_duration", "error", "upper")):
        return mlr  # a problem with one of them is reported on its own
    goal = resolve_goal(
        mlr.preset,
        mlr.overrides(),
        loss_ratio=0.0,
        duration=d["duration"],
        short_duration=d["short_duration"],
        error=d["error"],
        upper=d["upper"],
    )
    problems = goal.problems()
    if problems:
        raise ValueError(f"{problems[0]} (preset {mlr.preset} with the metric's duration {d['duration']:g} s)")
    return mlr


class ThroughputSettings(SearchSettings, FilledTableSettings, ShortTrialSettings):
    """Throughput: phase 1 fills the tables at fill_rate, then a binary search with phase-2 trials."""

    algorithm: Literal["binary", "mlr", "fast"] = "binary"
    """Search algorithm: ``binary`` (RFC 2544 binary search with ``error``, the seeds' procedure), ``mlr``
    (MLRsearch 1.2.1 with the goal ``mlr`` sets; needs ``pip install 'natbench[mlr]'``) or ``fast`` (short trials
    of ``short_duration`` narrow and prove upper bounds by the short-fail rule, full trials confirm: the result
    passed a full trial and a rate at most ``error`` above it is an upper bound; see docs/engine.md)."""
    mlr: MlrSettings = Field(default_factory=MlrSettings)
    """``algorithm: mlr``: MLRsearch's goal (preset and overrides)."""

    _mlr = field_validator("mlr")(_check_mlr)


class ForwardingSettings(SearchSettings, Phase2Settings, ShortTrialSettings):
    """Plain forwarding baseline: RFC 8219 throughput search without phase 1 (stateless DUT)."""

    algorithm: Literal["binary", "mlr", "fast"] = "binary"
    """Search algorithm: ``binary`` (RFC 2544 binary search, the seeds' procedure), ``mlr`` or ``fast`` (see
    throughput's ``algorithm``)."""
    mlr: MlrSettings = Field(default_factory=MlrSettings)
    """``algorithm: mlr``: MLRsearch's goal (preset and overrides)."""

    _mlr = field_validator("mlr")(_check_mlr)


def throughput(ctx: ProcedureContext[ThroughputSettings]) -> RepetitionResult:
    """Throughput: fill (phase 1), gap, then a binary search of phase-2 trials (per-direction fps)."""
    s = ctx.settings
    filler = Filler(ctx)
    if s.algorithm == "mlr":
        found = phase2_mlr(ctx, filler)
        return _throughput_result(ctx, found, **mlr_extra(s, found))
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


def phase2_mlr(ctx: ProcedureContext[Any], filler: Filler | None) -> MlrOutcome:
    """MLRsearch of a phase-2 metric (throughput with its ``filler``, forwarding without) for the goal of its ``mlr``
    settings: every measurement a stored phase-2 trial of the duration MLRsearch asks for, invalid ones retried."""
    s = ctx.settings
    goal = mlr_goal(s, ctx.acceptance)
    invalid = 0

    def counted(rec: TrialRecord) -> TrialRecord:
        nonlocal invalid
        invalid += rec.verdict is Verdict.INVALID
        return rec

    def measure(duration: float, load: float) -> tuple[int, int]:
        step = FastStep(load, s.lower, s.upper, 0, duration >= goal.final_trial_duration)

        def one() -> TrialRecord:
            with tagged(ctx, step), short_trials(ctx, duration):
                return counted(phase2_step(ctx, filler, load))

        rec = retry(ctx, f"MLRsearch trial at {load:g}", one)
        worst = max(rec.counts.values(), key=lambda c: (c["sent"] - c["valid"]) / c["sent"] if c["sent"] else 0.0)
        return int(worst["sent"]), int(worst["valid"])

    found = mlr_search(measure, lower=s.lower, upper=s.upper, goal=goal)
    return dataclasses.replace(found, invalid=invalid)


def mlr_extra(s: ThroughputSettings | ForwardingSettings, out: MlrOutcome) -> dict[str, Any]:
    """The fields an MLRsearch result stores beside :func:`~natbench.metrics.trial.search_extra`'s."""
    return {
        "algorithm": "mlr",
        "mlr_preset": s.mlr.preset,
        "mlr_goal": out.goal.as_dict() if out.goal is not None else None,
        "conditional_throughput": out.conditional_throughput,
        "short_steps": out.short_steps,
        "full_steps": out.full_steps,
    }


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
    if s.algorithm == "mlr":
        found = phase2_mlr(ctx, None)
        return _throughput_result(ctx, found, table_reset=table_reset, **mlr_extra(s, found))
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
    short and full trials of :func:`~natbench.metrics.duration.fast_trials`; ``algorithm: mlr``: those of
    :func:`mlr_trials`."""
    fill = connections / s.fill_rate + s.timeout + s.gap
    trials, seconds = _phase2_search(s)
    fills = trials if s.refill == "always" else s.repetitions
    return trials, seconds + fills * fill


def estimate_forwarding(
    s: ForwardingSettings, _connections: int, _selected: Mapping[str, MetricSettings]
) -> tuple[int, float]:
    """Every step is one phase-2 trial without phase 1: ``duration + timeout`` (``algorithm: fast`` and ``mlr``: as
    throughput's, without the fill)."""
    return _phase2_search(s)


def mlr_trials(s: ThroughputSettings | ForwardingSettings) -> list[tuple[int, float]]:
    """(trials, seconds each) of one MLRsearch repetition by trial duration, a rough planning figure (its order of
    magnitude checked against bench/campaign_time.py): half a binary search's steps plus 2 trials of the initial
    duration, 2 trials for each preceding target but the last (whose trials last the initial duration), and at the
    final duration the good trials a lower bound needs (``duration_sum x (1 - exceed_ratio)``) plus the bad ones an
    upper bound needs (one with exceed ratio 0)."""
    goal = mlr_goal(s, 0.0)
    groups = [(math.ceil(search_steps(s.lower, s.upper, s.error) / 2) + 2, goal.initial_trial_duration)]
    if goal.preceding_targets:
        m = (goal.initial_trial_duration / goal.duration_sum) ** (1 / goal.preceding_targets)
        for k in range(1, goal.preceding_targets):
            groups.append((2, min(goal.final_trial_duration, goal.duration_sum * m**k)))
    good = math.ceil(goal.duration_sum * (1 - goal.exceed_ratio) / goal.final_trial_duration)
    bad = math.ceil(goal.duration_sum * goal.exceed_ratio / goal.final_trial_duration) + 1 if goal.exceed_ratio else 1
    groups.append((good + bad, goal.final_trial_duration))
    return groups


def _phase2_search(s: ThroughputSettings | ForwardingSettings) -> tuple[int, float]:
    """(trials, seconds) of a phase-2 search's trials over all repetitions, fills not included."""
    full = s.duration + s.timeout + STEP_OVERHEAD
    if s.algorithm == "mlr":
        groups = mlr_trials(s)
        trials = sum(n for n, _ in groups)
        return repeated(s, trials, sum(n * (d + s.timeout + STEP_OVERHEAD) for n, d in groups))
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
