"""Throughput by MLRsearch 1.2.1 (the ``mlr`` extra): natbench's trials behind MLRsearch's one seam.

MLRsearch asks for ``measure(duration, load)``; the caller hands :func:`mlr_search` a function that runs (and
stores) one trial of that duration at a per-direction load and returns the frames offered and forwarded. One search
goal (:class:`MlrGoal`) is searched: the loss ratio a trial may show (the metric's acceptance) and the goal's
durations, exceed ratio, width and the rest, from a preset (:data:`PRESETS`) and the campaign's overrides
(:func:`resolve_goal`).

Where the presets come from:

* ``rfc2544`` (natbench's default): the goal draft-ietf-bmwg-mlrsearch (version 15, "MLRsearch Compliant with RFC
  2544") gives for a result unconditionally compliant with RFC 2544 section 24: final trial duration = duration sum =
  60 s, loss ratio 0 %, exceed ratio 0 %; natbench takes the metric's ``duration`` for the 60 s and its
  ``acceptance`` for the loss ratio. The draft leaves the shorter trials to the implementation; natbench keeps FD.io
  CSIT's: initial trials of 1 s (the metric's ``short_duration``), 2 preceding targets, expansion coefficient 2. Its
  relative width is ``error / upper``, so the final width is at most ``error`` anywhere in the range.
* ``csit``: the goal FD.io CSIT's NDR/PDR tests search (CSIT repository: docs/content/methodology/measurements/
  data_plane_throughput/mlr_search.md, "Search Goals"; resources/libraries/robot/performance/performance_utils.robot,
  keyword "Find NDR and PDR intervals using optimized search"; resources/libraries/python/TrafficGenerator.py,
  ``OptimizedSearch.perform_mlr_search``): initial and final trial duration 1 s, duration sum 21 s, exceed ratio
  50 %, relative width 0.5 %, 2 preceding targets, expansion coefficient 2. CSIT searches two goals at once (loss
  ratio 0 for NDR and 0.5 % for PDR); natbench searches one, with the metric's acceptance.

With exceed ratio 0 a load is an upper bound as soon as one trial of any duration showed a loss ratio above the
goal's, and a lower bound once its passing trials of the final duration add up to the duration sum: for
acceptance 0 the first half is natbench's short-fail rule (:mod:`natbench.search.fast`); for an acceptance above 0
MLRsearch compares the short trial's own loss ratio, which is looser than that rule.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from natbench.config.model import SchemaModel
from natbench.errors import SearchError
from natbench.judging import recorded_net_lost
from natbench.plugins.columns import Column
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.search.binary import search_steps
from natbench.search.declare import BlockFacts, PlanQuery, SearchAlgorithm, TrialGroups
from natbench.search.outcome import SearchOutcome
from natbench.search.shorttrials import ShortTrialSettings
from natbench.search.task import SearchTask, TrialRequest, settings_of
from natbench.values import MAX_DURATION_SECONDS

MLR_MIN_LOAD = 1.0
"""MLRsearch's smallest load when the search's lower bound is 0 (MLRsearch needs a positive one)."""

PRESETS: dict[str, dict[str, float | int | None]] = {
    "rfc2544": {
        "initial_trial_duration": None,  # the metric's short_duration (at most its duration)
        "final_trial_duration": None,  # the metric's duration
        "duration_sum": None,  # the final trial duration: one passing full trial makes a lower bound
        "exceed_ratio": 0.0,
        "relative_width": None,  # error / upper
        "expansion_coefficient": 2,
        "preceding_targets": 2,
    },
    "csit": {
        "initial_trial_duration": 1.0,
        "final_trial_duration": 1.0,
        "duration_sum": 21.0,
        "exceed_ratio": 0.5,
        "relative_width": 0.005,
        "expansion_coefficient": 2,
        "preceding_targets": 2,
    },
}
"""The goal values of each preset (None: derived from the metric's settings, see :func:`resolve_goal`)."""


@dataclass(frozen=True)
class MlrGoal:
    """One MLRsearch search goal, resolved (MLRsearch 1.2.1's ``SearchGoal`` fields, ``fail_fast`` off)."""

    loss_ratio: float
    """Loss ratio a trial may show and still be a good trial (the metric's acceptance)."""
    exceed_ratio: float
    """Share of the duration sum that may be bad trials at a lower bound."""
    relative_width: float
    """The search ends when the relevant lower bound is within this share of the relevant upper bound below it."""
    initial_trial_duration: float
    """Seconds of the first (shortest) trials."""
    final_trial_duration: float
    """Seconds of the trials that decide the result."""
    duration_sum: float
    """Seconds of final trials at a load that classify it."""
    expansion_coefficient: int
    """MLRsearch's external search multiplies its width by this."""
    preceding_targets: int
    """Coarser targets (shorter trials, wider width) searched before the final one."""

    def problems(self) -> list[str]:
        """What MLRsearch 1.2.1 would refuse (its ``SearchGoal.validate``), in natbench's words; empty when fine."""
        out = []
        if not 0.0 <= self.loss_ratio < 1.0:
            out.append(f"loss ratio {self.loss_ratio:g} must be at least 0 and below 1")
        if not 0.0 <= self.exceed_ratio < 1.0:
            out.append(f"exceed_ratio {self.exceed_ratio:g} must be at least 0 and below 1")
        if not 0.0 < self.relative_width < 1.0:
            out.append(f"relative_width {self.relative_width:g} must be above 0 and below 1")
        if self.initial_trial_duration <= 0:
            out.append(f"initial_trial_duration {self.initial_trial_duration:g} must be positive")
        if self.final_trial_duration < self.initial_trial_duration:
            out.append(
                f"final_trial_duration {self.final_trial_duration:g} s is shorter than initial_trial_duration "
                f"{self.initial_trial_duration:g} s"
            )
        if self.duration_sum < self.final_trial_duration:
            out.append(
                f"duration_sum {self.duration_sum:g} s is shorter than final_trial_duration "
                f"{self.final_trial_duration:g} s"
            )
        if self.expansion_coefficient <= 1:
            out.append(f"expansion_coefficient {self.expansion_coefficient} must be at least 2")
        if self.preceding_targets < 0 or (
            self.preceding_targets < 1 and self.initial_trial_duration < self.duration_sum
        ):
            out.append(
                f"preceding_targets {self.preceding_targets} must be at least 1 when initial_trial_duration "
                f"({self.initial_trial_duration:g} s) is shorter than duration_sum ({self.duration_sum:g} s)"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """The goal as a result stores it."""
        return dataclasses.asdict(self)


def resolve_goal(
    preset: str,
    overrides: Mapping[str, float | int | None],
    *,
    loss_ratio: float,
    duration: float,
    short_duration: float,
    error: float,
    upper: float,
) -> MlrGoal:
    """The goal of ``preset`` with the values ``overrides`` sets (None: the preset's). The ``rfc2544`` preset's
    derived values: initial trial duration ``min(short_duration, duration)``, final trial duration ``duration``,
    duration sum the (resolved) final trial duration, relative width ``error / upper``."""
    if preset not in PRESETS:
        raise SearchError(f"unknown MLRsearch preset {preset!r} (known: {', '.join(PRESETS)})")
    values = dict(PRESETS[preset])
    values.update({k: v for k, v in overrides.items() if v is not None})
    final = float(values["final_trial_duration"] if values["final_trial_duration"] is not None else duration)
    initial = values["initial_trial_duration"]
    width = values["relative_width"]
    total = values["duration_sum"]
    return MlrGoal(
        loss_ratio=float(loss_ratio),
        exceed_ratio=float(values["exceed_ratio"] or 0.0),
        relative_width=float(width if width is not None else error / upper),
        initial_trial_duration=float(initial if initial is not None else min(short_duration, final)),
        final_trial_duration=final,
        duration_sum=float(total if total is not None else final),
        expansion_coefficient=int(values["expansion_coefficient"] or 0),
        preceding_targets=int(values["preceding_targets"] or 0),
    )


@dataclass(frozen=True)
class MlrOutcome(SearchOutcome):
    """A finished MLRsearch: the binary search's outcome fields (value = the relevant lower bound, upper = the
    relevant upper bound) plus MLRsearch's own figures."""

    conditional_throughput: float | None = None
    """MLRsearch's conditional throughput (the relevant lower bound times one minus the loss ratio of its trials'
    exceed-ratio quantile; equal to the value with acceptance 0); None when no load was a lower bound."""
    short_steps: int = 0
    """Trials shorter than the goal's final trial duration."""
    full_steps: int = 0
    """Trials of the final trial duration."""
    goal: MlrGoal | None = None
    """The goal searched."""


def problems() -> list[str]:
    """Why this machine cannot search with ``algorithm: mlr`` (empty when it can): MLRsearch must be importable."""
    try:
        import MLRsearch  # noqa: F401
    except ImportError as exc:
        return [f'MLRsearch is not installed: pip install -e ".[mlr]" ({type(exc).__name__})']
    return []


def mlr_search(
    measure: Callable[[float, float], tuple[int, int]],
    *,
    lower: float,
    upper: float,
    goal: MlrGoal,
) -> MlrOutcome:
    """MLRsearch of ``[max(lower, MLR_MIN_LOAD), upper]`` for ``goal``.

    ``measure(duration, load)`` runs one trial of ``duration`` seconds at ``load`` frames per second per direction
    and returns ``(offered, forwarded)`` frame counts (natbench passes the worst direction's, so that MLRsearch's loss
    ratio is natbench's verdict). SearchError when MLRsearch is not installed or the goal is one it refuses.
    """
    try:
        from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise SearchError("algorithm 'mlr' needs MLRsearch: pip install 'natbench[mlr]'") from exc
    problems = goal.problems()
    if problems:
        raise SearchError(f"MLRsearch goal: {problems[0]}")
    counts = {"short": 0, "full": 0}

    class _Measurer(AbstractMeasurer):
        def measure(self, intended_duration: float, intended_load: float) -> Any:
            offered, forwarded = measure(float(intended_duration), float(intended_load))
            counts["full" if intended_duration >= goal.final_trial_duration else "short"] += 1
            return MeasurementResult(
                intended_duration=intended_duration,
                intended_load=intended_load,
                offered_count=offered,
                forwarding_count=forwarded,
            )

    search_goal = SearchGoal(
        loss_ratio=goal.loss_ratio,
        exceed_ratio=goal.exceed_ratio,
        relative_width=goal.relative_width,
        initial_trial_duration=goal.initial_trial_duration,
        final_trial_duration=goal.final_trial_duration,
        duration_sum=goal.duration_sum,
        preceding_targets=goal.preceding_targets,
        expansion_coefficient=goal.expansion_coefficient,
        fail_fast=False,
    )
    config = Config()
    config.goals = [search_goal]
    min_load = max(lower, MLR_MIN_LOAD)
    config.min_load = min_load
    config.max_load = upper
    config.warmup_duration = None
    config.search_duration_max = 10**9
    results = MultipleLossRatioSearch(config=config).search(_Measurer(), debug=lambda _m: None)
    res = results[search_goal]
    low = res.relevant_lower_bound if res is not None else None
    high = res.relevant_upper_bound if res is not None else None
    value = float(low) if low is not None else min_load
    top = float(high) if high is not None else upper
    ct = res.conditional_throughput if res is not None else None
    return MlrOutcome(
        value=value,
        lower=value,
        upper=top,
        steps=counts["short"] + counts["full"],
        invalid=0,
        at_upper_limit=high is None,
        passed=low is not None,
        conditional_throughput=float(ct) if ct is not None else None,
        short_steps=counts["short"],
        full_steps=counts["full"],
        goal=goal,
    )


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


class MlrSection(SchemaModel):
    """The ``mlr`` section of a phase-2 search metric: MLRsearch's goal, read by ``algorithm: mlr``."""

    mlr: MlrSettings = Field(default_factory=MlrSettings)
    """``algorithm: mlr``: MLRsearch's goal (preset and overrides)."""

    _mlr = field_validator("mlr")(_check_mlr)


class _MlrMetric(MlrSection, ShortTrialSettings):
    """What MLRsearch reads of a metric's settings (for typing only: a metric that offers ``mlr`` has all of it)."""

    duration: float
    error: float
    lower: float
    upper: float


def mlr_goal(settings: Any, loss_ratio: float) -> MlrGoal:
    """The MLRsearch goal of a metric's ``settings`` (its ``mlr`` section, durations, error and upper) with
    ``loss_ratio`` (the metric's acceptance)."""
    s: _MlrMetric = settings
    return resolve_goal(
        s.mlr.preset,
        s.mlr.overrides(),
        loss_ratio=loss_ratio,
        duration=s.duration,
        short_duration=s.short_duration,
        error=s.error,
        upper=s.upper,
    )


def mlr_trials(settings: Any) -> list[tuple[int, float]]:
    """(trials, seconds each) of one MLRsearch repetition by trial duration, a rough planning figure (its order of
    magnitude checked against bench/campaign_time.py): half a binary search's steps plus 2 trials of the initial
    duration, 2 trials for each preceding target but the last (whose trials last the initial duration), and at the
    final duration the good trials a lower bound needs (``duration_sum x (1 - exceed_ratio)``) plus the bad ones an
    upper bound needs (one with exceed ratio 0)."""
    s: _MlrMetric = settings
    goal = mlr_goal(s, 0.0)
    groups = [(math.ceil(search_steps(s.lower, s.upper, s.error) / 2) + 2, goal.initial_trial_duration)]
    if goal.preceding_targets:
        m = (goal.initial_trial_duration / goal.duration_sum) ** (1 / goal.preceding_targets)
        for k in range(1, goal.preceding_targets):
            groups.append((2, min(goal.final_trial_duration, goal.duration_sum * m**k)))
    good = math.ceil(goal.duration_sum * (1 - goal.exceed_ratio) / goal.final_trial_duration)
    bad = math.ceil(goal.duration_sum * goal.exceed_ratio / goal.final_trial_duration) + 1  # exceed ratio 0: one
    groups.append((good + bad, goal.final_trial_duration))
    return groups


def _plan(query: PlanQuery) -> TrialGroups:
    """MLRsearch's trials at a point: :func:`mlr_trials` of every repetition."""
    return tuple((query.repetitions * n, d) for n, d in mlr_trials(query.settings))


def _run(task: SearchTask) -> MlrOutcome:
    """MLRsearch of the task's range for the goal of the metric's ``mlr`` settings: every measurement a stored trial of
    the duration MLRsearch asks for (tagged ``short`` or ``full`` by the goal's final duration), invalid ones retried
    (``max_invalid``; they never reach MLRsearch), the worst direction's counts handed to it."""
    goal = mlr_goal(settings_of(task, MlrSection), task.acceptance)
    invalid = 0

    def measure(duration: float, load: float) -> tuple[int, int]:
        nonlocal invalid
        kind = "full" if duration >= goal.final_trial_duration else "short"
        request = TrialRequest(load, duration=duration, tags={"search_trial": kind})
        for _ in range(task.max_invalid + 1):
            rec = task.run(request)
            if rec.verdict is not Verdict.INVALID:
                return measured(rec, task.directions, goal, duration, load)
            invalid += 1
        raise SearchError(
            f"MLRsearch trial at {load:g}: {task.max_invalid + 1} invalid trials in a row; last: {rec.reason}"
        )

    found = mlr_search(measure, lower=task.lower, upper=task.upper, goal=goal)
    return dataclasses.replace(found, invalid=invalid)


def measured(
    rec: TrialRecord, directions: Sequence[str], goal: MlrGoal, duration: float, load: float
) -> tuple[int, int]:
    """What MLRsearch is told of the trial ``rec``: (offered, forwarded) of its worst direction, the loss counted as the
    verdicts count it (net of the tester's own deviation, :func:`~natbench.judging.recorded_net_lost`).

    With exceed ratio 0 (the ``rfc2544`` preset: an RFC 2544 result) a trial shorter than the goal's final trials
    whose loss a final trial at its load would be allowed (``loss_ratio x load x final_trial_duration``: the full
    trial runs its traffic and more) is told as lossless: MLRsearch takes a load as an upper bound on any trial whose
    own loss ratio exceeds the goal's, and a short trial's few lost frames (a start-up transient) would otherwise
    make every load an upper bound. A larger loss is told as it is: it proves the load an upper bound, as natbench's
    short-fail rule says. The stored trial keeps its real counts."""
    worst = max(
        (
            (int(rec.counts[d]["sent"]), lost)
            for d in directions or rec.counts
            if (lost := recorded_net_lost(rec, d)) is not None
        ),
        key=lambda sl: sl[1] / sl[0] if sl[0] else 0.0,
        default=(0, 0),
    )
    sent, lost = worst
    short = goal.exceed_ratio == 0 and duration < goal.final_trial_duration
    if short and lost <= goal.loss_ratio * load * goal.final_trial_duration:
        return sent, sent
    return sent, sent - lost


def _stored(task: SearchTask, out: SearchOutcome) -> dict[str, Any]:
    """The fields an MLRsearch result stores beside the ones every search stores."""
    assert isinstance(out, MlrOutcome)
    return {
        "algorithm": MLR_NAME,
        "mlr_preset": settings_of(task, MlrSection).mlr.preset,
        "mlr_goal": out.goal.as_dict() if out.goal is not None else None,
        "conditional_throughput": out.conditional_throughput,
        "short_steps": out.short_steps,
        "full_steps": out.full_steps,
    }


MLR_NAME = "mlr"
"""MLRsearch's name in campaigns and results."""
_GOAL_KEYS = ("loss_ratio", "exceed_ratio", "final_trial_duration", "duration_sum")


def goal_words(r: RepetitionResult) -> str | None:
    """MLRsearch's goal in words (``preset rfc2544: loss ratio 0, exceed ratio 0, final trials 60 s, ...``); None for a
    result of another search."""
    if r.extra.get("algorithm") != MLR_NAME:
        return None
    goal = r.extra.get("mlr_goal")
    words = [f"preset {r.extra.get('mlr_preset', '?')}"]
    if isinstance(goal, Mapping):
        words.append(
            f"loss ratio {goal['loss_ratio']:g}, exceed ratio {goal['exceed_ratio']:g}, final trials "
            f"{goal['final_trial_duration']:g} s, duration sum {goal['duration_sum']:g} s"
            if all(isinstance(goal.get(k), int | float) for k in _GOAL_KEYS)
            else "goal as stored"
        )
    return ": ".join(words)


def _words(facts: BlockFacts) -> str:
    goal = facts.firsts.get("search_goal")
    return f"MLRsearch ({goal})" if goal else "MLRsearch"


MLR = SearchAlgorithm(
    name=MLR_NAME,
    description=(
        "MLRsearch 1.2.1 with the goal ``mlr`` sets; needs ``pip install 'natbench[mlr]'``; phase-2 metrics only"
    ),
    words="MLRsearch",
    run=_run,
    stored=_stored,
    plan=_plan,
    meaning=lambda facts: (
        f"{_words(facts)}: each value is MLRsearch's relevant lower bound; its error is the distance to the relevant "
        "upper bound (an RFC 2544 result only with exceed ratio 0 and final trials of the metric's duration)"
    ),
    summary=lambda facts: (
        f"{_words(facts)}; value: its relevant lower bound, error: the distance to its relevant upper bound"
    ),
    requires=(ShortTrialSettings, MlrSection),
    columns=(Column("search_goal", "object", goal_words, "first"),),
    problems=problems,
)
"""MLRsearch (FD.io CSIT's multiple loss ratio search) behind natbench's trials."""
