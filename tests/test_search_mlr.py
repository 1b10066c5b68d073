"""``algorithm: mlr``: the presets and overrides of the MLRsearch goal, the checks natbench makes before MLRsearch
sees a goal, and MLRsearch runs against the fake tester whose every measurement is a stored trial."""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

import pytest
from test_procedures import Harness

from natbench.errors import SearchError
from natbench.metrics.throughput import ThroughputSettings
from natbench.plugins import Directions, Phase2Options
from natbench.results import DirectionCounts, PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.search import BlockFacts, SearchTask, TrialRequest
from natbench.search.binary import search_steps
from natbench.search.mlr import (
    MLR,
    PRESETS,
    MlrGoal,
    MlrOutcome,
    MlrSettings,
    goal_words,
    measured,
    mlr_goal,
    mlr_search,
    mlr_trials,
    problems,
    resolve_goal,
)
from natbench.testing import FakeTester

METRIC = {"duration": 60.0, "short_duration": 1.0, "error": 1000.0, "upper": 4_000_000.0}


def test_the_rfc2544_preset_decides_on_full_trials_of_the_metrics_duration() -> None:
    # draft-ietf-bmwg-mlrsearch's RFC 2544 goal with the metric's 60 s: final trial = duration sum = 60 s, exceed
    # ratio 0; CSIT's 1 s initial trials (the metric's short_duration), 2 preceding targets, expansion 2; relative
    # width error / upper = 1,000 / 4,000,000
    goal = resolve_goal("rfc2544", {}, loss_ratio=0.0, **METRIC)
    assert goal == MlrGoal(0.0, 0.0, 0.00025, 1.0, 60.0, 60.0, 2, 2)
    assert goal.problems() == []
    # short trials as long as the full ones: every trial is a final one
    same = resolve_goal("rfc2544", {}, loss_ratio=0.0, **{**METRIC, "short_duration": 90.0})
    assert (same.initial_trial_duration, same.final_trial_duration) == (60.0, 60.0)


def test_the_csit_preset_is_the_goal_of_csits_ndr_pdr_tests() -> None:
    goal = resolve_goal("csit", {}, loss_ratio=0.005, **METRIC)
    assert goal == MlrGoal(0.005, 0.5, 0.005, 1.0, 1.0, 21.0, 2, 2)
    assert set(PRESETS) == {"rfc2544", "csit"}


def test_overrides_replace_the_presets_values_and_derived_ones_follow() -> None:
    # rfc2544 with final trials of 10 s: the duration sum follows the final trial duration
    goal = resolve_goal("rfc2544", {"final_trial_duration": 10.0, "exceed_ratio": None}, loss_ratio=0.0, **METRIC)
    assert (goal.final_trial_duration, goal.duration_sum, goal.exceed_ratio) == (10.0, 10.0, 0.0)
    goal = resolve_goal("csit", {"relative_width": 0.001, "duration_sum": 11.0}, loss_ratio=0.0, **METRIC)
    assert (goal.relative_width, goal.duration_sum, goal.final_trial_duration) == (0.001, 11.0, 1.0)
    # an initial trial duration set is kept, not the metric's short_duration (1 s) nor the preset's (csit: 1 s)
    goal = resolve_goal("rfc2544", {"initial_trial_duration": 2.0}, loss_ratio=0.0, **METRIC)
    assert (goal.initial_trial_duration, goal.final_trial_duration) == (2.0, 60.0)
    goal = resolve_goal("csit", {"initial_trial_duration": 0.5}, loss_ratio=0.0, **METRIC)
    assert (goal.initial_trial_duration, goal.final_trial_duration) == (0.5, 1.0)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"final_trial_duration": 0.5}, "final_trial_duration 0.5 s is shorter than initial_trial_duration 1 s"),
        ({"duration_sum": 30.0}, "duration_sum 30 s is shorter than final_trial_duration 60 s"),
        ({"preceding_targets": 0}, "preceding_targets 0 must be at least 1 when initial_trial_duration (1 s)"),
        ({"expansion_coefficient": 1}, "expansion_coefficient 1 must be at least 2"),
        ({"relative_width": 1.0}, "relative_width 1 must be above 0 and below 1"),
        ({"exceed_ratio": 1.0}, "exceed_ratio 1 must be at least 0 and below 1"),
    ],
)
def test_a_goal_mlrsearch_would_refuse_is_named(change: dict[str, float], problem: str) -> None:
    goal = dataclasses.replace(resolve_goal("rfc2544", {}, loss_ratio=0.0, **METRIC), **change)
    assert goal.problems()[0].startswith(problem)
    mlrsearch = pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    with pytest.raises(ValueError):  # MLRsearch 1.2.1 itself refuses the same goal
        mlrsearch.SearchGoal(**{k: v for k, v in goal.as_dict().items()})


BASE = MlrGoal(0.0, 0.0, 0.001, 1.0, 10.0, 10.0, 2, 2)
"""A goal MLRsearch accepts: loss and exceed ratio 0, width 0.1 %, trials of 1 s then 10 s, duration sum 10 s."""


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"loss_ratio": 1.0}, "loss ratio 1 must be at least 0 and below 1"),
        ({"loss_ratio": -0.1}, "loss ratio -0.1 must be at least 0 and below 1"),
        ({"exceed_ratio": 1.0}, "exceed_ratio 1 must be at least 0 and below 1"),
        ({"exceed_ratio": -0.1}, "exceed_ratio -0.1 must be at least 0 and below 1"),
        ({"relative_width": 0.0}, "relative_width 0 must be above 0 and below 1"),
        ({"relative_width": 1.0}, "relative_width 1 must be above 0 and below 1"),
        ({"initial_trial_duration": 0.0}, "initial_trial_duration 0 must be positive"),
        ({"final_trial_duration": 0.5}, "final_trial_duration 0.5 s is shorter than initial_trial_duration 1 s"),
        ({"duration_sum": 9.5}, "duration_sum 9.5 s is shorter than final_trial_duration 10 s"),
        ({"expansion_coefficient": 1}, "expansion_coefficient 1 must be at least 2"),
        (
            {"preceding_targets": 0},
            "preceding_targets 0 must be at least 1 when initial_trial_duration (1 s) is shorter than duration_sum "
            "(10 s)",
        ),
        (
            {"preceding_targets": -1, "initial_trial_duration": 10.0},
            "preceding_targets -1 must be at least 1 when initial_trial_duration (10 s) is shorter than duration_sum "
            "(10 s)",
        ),
    ],
)
def test_each_value_of_a_goal_beyond_what_mlrsearch_accepts_is_named_alone(
    change: dict[str, float], problem: str
) -> None:
    assert dataclasses.replace(BASE, **change).problems() == [problem]


@pytest.mark.parametrize(
    "change",
    [
        {"loss_ratio": 0.999},
        {"exceed_ratio": 0.999},
        {"relative_width": 0.999},
        {"relative_width": 1e-9},
        {"initial_trial_duration": 1e-9},
        {"initial_trial_duration": 10.0, "preceding_targets": 0},  # every trial a final one: no preceding target
        {"preceding_targets": 1},
    ],
)
def test_a_goal_at_the_edge_of_what_mlrsearch_accepts_has_no_problem(change: dict[str, float]) -> None:
    # BASE itself sits at the other edges: loss and exceed ratio 0, final trials as long as the duration sum,
    # expansion coefficient 2
    assert BASE.problems() == []
    assert dataclasses.replace(BASE, **change).problems() == []


def test_a_preset_natbench_does_not_know_is_named_with_the_known_ones() -> None:
    with pytest.raises(SearchError, match=r"^unknown MLRsearch preset 'ndr' \(known: rfc2544, csit\)$"):
        resolve_goal("ndr", {}, loss_ratio=0.0, **METRIC)


def test_an_override_of_zero_is_kept_not_taken_for_the_presets_value() -> None:
    goal = resolve_goal("csit", {"preceding_targets": 0, "expansion_coefficient": 0}, loss_ratio=0.0, **METRIC)
    assert (goal.preceding_targets, goal.expansion_coefficient) == (0, 0)
    assert goal.problems()[0] == "expansion_coefficient 0 must be at least 2"


def test_the_overrides_of_an_mlr_section_are_its_goal_values_without_the_preset() -> None:
    overrides = MlrSettings(preset="csit", duration_sum=30).overrides()
    assert overrides == {
        "initial_trial_duration": None, "final_trial_duration": None, "duration_sum": 30.0, "exceed_ratio": None,
        "relative_width": None, "expansion_coefficient": None, "preceding_targets": None,
    }  # fmt: skip


def test_settings_resolve_the_goal_with_the_metrics_acceptance() -> None:
    s = ThroughputSettings(upper=400_000, error=1000, fill_rate=1000, duration=10, mlr={"preset": "csit"})
    assert mlr_goal(s, 0.001) == MlrGoal(0.001, 0.5, 0.005, 1.0, 1.0, 21.0, 2, 2)
    refused = (
        r"duration_sum 5 s is shorter than final_trial_duration 10 s \(preset rfc2544 with the metric's duration 10 s\)"
    )
    with pytest.raises(ValueError, match=refused):
        ThroughputSettings(upper=400_000, error=1000, fill_rate=1000, duration=10, mlr={"duration_sum": 5})
    with pytest.raises(ValueError, match="Extra inputs"):
        ThroughputSettings(upper=400_000, error=1000, fill_rate=1000, mlr={"exceed": 0.5})


def test_rfc2544_preset_stores_every_measurement_with_its_duration_and_reports_a_full_pass() -> None:
    """Forwarding ceiling 300,000, trials of 10 s, initial 1 s: MLRsearch's trials last 1, 10^0.5 and 10 s; each is a
    stored phase-2 trial (``search_trial`` short below 10 s); the value passed a 10 s trial and the upper bound is
    at most the error above it, where a trial (of any duration) lost frames."""
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000)
    res = h.run(
        "throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr", duration=10.0
    )
    trials = [r for r in h.records if r.kind == "phase2"]
    durations = sorted({round(float(r.extra["duration"]), 3) for r in trials})
    assert durations == [1.0, 3.162, 10.0]
    assert all(r.extra["search_trial"] == ("full" if r.extra["duration"] == 10.0 else "short") for r in trials)
    assert res.extra["steps"] == len(trials) == res.extra["short_steps"] + res.extra["full_steps"]
    assert 299_000 <= res.value <= 300_000 and res.error <= 1000
    full_passes = [r.intended_rate for r in trials if r.extra["duration"] == 10.0 and r.verdict is Verdict.PASS]
    assert res.value in full_passes
    assert any(r.intended_rate == res.extra["upper"] and r.verdict is Verdict.FAIL for r in trials)


def test_csit_preset_runs_one_second_trials_and_stores_its_width() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000)
    res = h.run(
        "throughput",
        upper=1_000_000,
        lower=10_000,
        error=1000,
        fill_rate=50_000,
        algorithm="mlr",
        duration=10.0,
        mlr={"preset": "csit"},
    )
    trials = [r for r in h.records if r.kind == "phase2"]
    assert {r.extra["duration"] for r in trials} == {1.0} and res.extra["mlr_preset"] == "csit"
    assert res.extra["mlr_goal"]["duration_sum"] == 21.0
    assert 0 < res.error <= 0.005 * res.extra["upper"] + 1e-6  # the relative width, not the metric's error
    assert 298_000 <= res.value <= 300_000


def test_forwarding_runs_mlrsearch_too() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(nat=False, stateless_forwarding=250_000)
    res = h.run("forwarding", upper=400_000, lower=1000, error=1000, algorithm="mlr", duration=5.0)
    assert res.extra["algorithm"] == "mlr" and 249_000 <= res.value <= 250_000
    assert all(r.kind == "phase2" for r in h.records)


class StartupLossTester(FakeTester):
    """The fake tester in front of a DUT that, besides its forwarding ceiling, loses 0.1 % of the frames of the first
    0.5 s of every trial in each direction (a start-up transient)."""

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        res = super().phase2(rate, duration, directions, measure)
        lost = math.ceil(0.001 * rate * min(duration, 0.5))
        counts = {
            d: DirectionCounts(c.sent, max(c.received - lost, 0), max(c.valid - lost, 0)) for d, c in res.counts.items()
        }
        return dataclasses.replace(res, counts=counts)


@pytest.mark.parametrize("acceptance", [0.0001, 0.00001])
def test_a_short_trials_start_up_loss_a_full_trial_may_show_makes_no_upper_bound(acceptance: float) -> None:
    # acceptance 0.01 % (0.001 %): a 10 s trial at 300,000/s may lose 300 (30) frames; the start-up transient loses
    # 150 frames in any trial there: every 1 s trial's loss ratio (0.015 %) is above the goal's, and MLRsearch took
    # each load as an upper bound (the result was its minimum load). Told as natbench's short-fail rule counts it,
    # a short loss a full trial may show proves nothing: the search finds the DUT's ceiling within its width.
    # With 0.001 % full trials fail at every load too (150 > 30): the transient is more than any trial may lose.
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000)
    h.tester = StartupLossTester(h.dut)
    h.tester.prepare(h.plan)
    res = h.run(
        "throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr", duration=10.0,
        acceptance=acceptance,
    )  # fmt: skip
    if acceptance == 0.0001:
        assert 299_000 <= res.value <= 300_000 and res.error <= 1000
    else:  # every full trial loses 0.005 % of its frames to the transient: no load passes
        assert res.value is None and res.extra["no_passing_rate"] is True


def test_a_short_trial_losing_more_than_a_full_trial_may_is_told_as_it_is() -> None:
    goal = MlrGoal(0.0001, 0.0, 0.001, 1.0, 10.0, 10.0, 2, 2)
    rec = TrialRecord(
        "p", "throughput", 0, 0, "phase2", 300_000, 300_000,
        {"forward": {"sent": 300_000, "received": 299_699, "valid": 299_699}}, Verdict.FAIL, "", 0.0, 1.0,
    )  # fmt: skip
    assert measured(rec, ("forward",), goal, 1.0, 300_000) == (300_000, 299_699)  # 301 lost > 300 allowed in 10 s
    at = dataclasses.replace(rec, counts={"forward": {"sent": 300_000, "received": 299_700, "valid": 299_700}})
    assert measured(at, ("forward",), goal, 1.0, 300_000) == (300_000, 300_000)  # 300: exactly what a full may lose
    assert measured(at, ("forward",), goal, 10.0, 300_000) == (300_000, 299_700)  # a final trial: as it is
    csit = dataclasses.replace(goal, exceed_ratio=0.5)
    assert measured(at, ("forward",), csit, 1.0, 300_000) == (300_000, 299_700)  # exceed ratio > 0: MLRsearch's own


# --- what MLRsearch is told of a trial: the worst active direction by loss ratio ------------------------------------
def _record(**counts: tuple[int, int]) -> TrialRecord:
    """A phase-2 record with (sent, valid) per direction."""
    by_direction = {d: {"sent": sent, "received": valid, "valid": valid} for d, (sent, valid) in counts.items()}
    return TrialRecord("p", "throughput", 0, 0, "phase2", 1000, 1000, by_direction, Verdict.FAIL, "", 0.0, 10.0)


FULL = MlrGoal(0.0, 0.0, 0.001, 1.0, 10.0, 10.0, 2, 2)
"""Loss ratio 0, final trials of 10 s: a 10 s trial is told as it is."""


def test_the_direction_with_the_larger_loss_ratio_is_told_not_the_one_that_lost_more_frames() -> None:
    # forward lost 2,000 of 100,000 (2 %), reverse 100 of 1,000 (10 %): reverse is the worse direction, listed last
    rec = _record(forward=(100_000, 98_000), reverse=(1000, 900))
    assert measured(rec, ("forward", "reverse"), FULL, 10.0, 1000) == (1000, 900)
    assert measured(rec, (), FULL, 10.0, 1000) == (1000, 900)  # no directions named: every direction counted
    assert measured(rec, ("forward",), FULL, 10.0, 1000) == (100_000, 98_000)  # only the metric's directions


def test_a_direction_that_sent_nothing_lost_nothing() -> None:
    # a direction with no frames has loss ratio 0: the other direction's 1 % loss is the worst
    rec = _record(forward=(0, 0), reverse=(1000, 990))
    assert measured(rec, ("forward", "reverse"), FULL, 10.0, 1000) == (1000, 990)


def test_a_record_without_counts_for_the_directions_tells_nothing_offered() -> None:
    assert measured(_record(), ("forward",), FULL, 10.0, 1000) == (0, 0)
    assert measured(_record(reverse=(1000, 500)), ("forward",), FULL, 10.0, 1000) == (0, 0)


# --- mlr_search: the goal checked first, every measurement counted by its duration ---------------------------------
def _unreachable(_duration: float, _load: float) -> tuple[int, int]:
    raise AssertionError("no trial may run for a goal MLRsearch refuses")


def test_a_goal_mlrsearch_refuses_fails_the_search_before_any_trial_naming_its_first_problem() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    one = dataclasses.replace(FULL, expansion_coefficient=1)
    with pytest.raises(SearchError, match=r"^MLRsearch goal: expansion_coefficient 1 must be at least 2$"):
        mlr_search(_unreachable, lower=10_000, upper=1_000_000, goal=one)
    two = dataclasses.replace(one, relative_width=1.0)  # the first of two problems is named
    with pytest.raises(SearchError, match=r"^MLRsearch goal: relative_width 1 must be above 0 and below 1$"):
        mlr_search(_unreachable, lower=10_000, upper=1_000_000, goal=two)


def test_mlr_search_counts_trials_of_the_final_duration_as_full_and_shorter_ones_as_short() -> None:
    """A DUT forwarding 300,000 fps; final trials of 10 s, initial ones of 1 s: the outcome's counts are those of the
    durations measure() was asked for, and measure() itself retries nothing (no invalid trial)."""
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    asked: list[float] = []

    def measure(duration: float, load: float) -> tuple[int, int]:
        asked.append(duration)
        offered = round(load * duration)
        return offered, min(offered, round(300_000 * duration))

    goal = resolve_goal("rfc2544", {}, loss_ratio=0.0, duration=10.0, short_duration=1.0, error=1000, upper=1_000_000)
    out = mlr_search(measure, lower=10_000, upper=1_000_000, goal=goal)
    full = sum(d >= 10.0 for d in asked)
    assert full > 0 and len(asked) - full > 0
    assert (out.full_steps, out.short_steps, out.steps) == (full, len(asked) - full, len(asked))
    assert out.invalid == 0 and out.passed and not out.at_upper_limit and out.goal == goal
    assert 299_000 <= out.value <= 300_000 < out.upper <= out.value + 1000


def test_mlrsearch_is_told_only_of_the_directions_the_task_names() -> None:
    """The task names the metric's active directions (forward); a record's counts for any other direction (here a
    reverse entry that lost every frame) tell MLRsearch nothing: it finds the forward ceiling of 300,000 fps."""
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    s = ThroughputSettings(upper=1_000_000, lower=10_000, error=1000, fill_rate=1000, duration=1.0, algorithm="mlr")

    def run(request: TrialRequest) -> TrialRecord:
        sent = round(request.rate)  # 1 s trials
        valid = min(sent, 300_000)
        counts = {"forward": {"sent": sent, "received": valid, "valid": valid}, "reverse": {"sent": 1000, "valid": 0}}
        verdict = Verdict.PASS if valid == sent else Verdict.FAIL
        return TrialRecord("p", "throughput", 0, 0, "phase2", request.rate, request.rate, counts, verdict, "", 0.0, 1.0)

    out = MLR.run(SearchTask(10_000.0, 1_000_000.0, 1000.0, run=run, settings=s, directions=("forward",)))
    assert out.passed and 299_000 <= out.value <= 300_000 < out.upper


# --- a search's invalid trials: retried, counted, and at most max_invalid + 1 at one load --------------------------
def test_invalid_trials_are_retried_at_the_same_load_and_counted() -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(forwarding=300_000, invalid_every=3)  # every 3rd tester call (the fill is the 1st) falls behind
    res = h.run("throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr")
    trials = [r for r in h.records if r.kind == "phase2"]
    invalid = [i for i, r in enumerate(trials) if r.verdict is Verdict.INVALID]
    assert len(invalid) >= 2
    assert all(trials[i + 1].intended_rate == trials[i].intended_rate for i in invalid)
    assert res.extra["invalid"] == len(invalid)
    assert res.extra["steps"] == len(trials) - len(invalid)  # MLRsearch never sees an invalid trial
    assert 299_000 <= res.value <= 300_000


@pytest.mark.parametrize("max_invalid", [0, 2])
def test_a_load_that_stays_invalid_fails_the_search_after_max_invalid_retries(max_invalid: int) -> None:
    pytest.importorskip("MLRsearch", reason="MLRsearch (extra 'mlr') is not installed")
    h = Harness(tester_max_rate=60_000)  # the fill at 50,000 works; loads above 60,000 never
    res = h.run(
        "throughput", upper=1_000_000, lower=10_000, error=1000, fill_rate=50_000, algorithm="mlr",
        max_invalid=max_invalid,
    )  # fmt: skip
    trials = [r for r in h.records if r.kind == "phase2"]
    assert [r.verdict for r in trials] == [Verdict.INVALID] * (max_invalid + 1)
    assert len({r.intended_rate for r in trials}) == 1
    assert f": {max_invalid + 1} invalid trials in a row; last: " in res.extra["failed"]


# --- what a result stores and what reports say of it ----------------------------------------------------------------
def test_a_result_stores_the_goal_it_searched_and_none_when_it_has_none() -> None:
    s = ThroughputSettings(upper=400_000, error=1000, fill_rate=1000, duration=10, algorithm="mlr")

    def no_trial(_request: Any) -> TrialRecord:
        raise AssertionError("storing runs no trial")

    task = SearchTask(0.0, 400_000.0, 1000.0, run=no_trial, settings=s)
    goal = mlr_goal(s, 0.0)
    out = MlrOutcome(200_000.0, 200_000.0, 201_000.0, 9, 0, False, goal=goal, short_steps=4, full_steps=5)
    stored = MLR.stored(task, out)
    assert stored["algorithm"] == "mlr" and stored["mlr_preset"] == "rfc2544"
    assert stored["mlr_goal"] == goal.as_dict() and (stored["short_steps"], stored["full_steps"]) == (4, 5)
    assert MLR.stored(task, dataclasses.replace(out, goal=None))["mlr_goal"] is None


def test_a_summary_names_mlrsearch_with_its_goal_when_the_block_has_one() -> None:
    tail = "; value: its relevant lower bound, error: the distance to its relevant upper bound"
    assert MLR.summary(BlockFacts("throughput", 3)) == "MLRsearch" + tail
    goal = BlockFacts("throughput", 3, firsts={"search_goal": "preset csit"})
    assert MLR.summary(goal) == "MLRsearch (preset csit)" + tail
    assert MLR.summary(BlockFacts("throughput", 3, firsts={"search_goal": ""})) == "MLRsearch" + tail


def test_problems_name_a_missing_mlrsearch_and_the_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "MLRsearch", None)  # import MLRsearch now raises ModuleNotFoundError
    assert problems() == ['MLRsearch is not installed: pip install -e ".[mlr]" (ModuleNotFoundError)']


# --- planning figures -----------------------------------------------------------------------------------------------
def test_the_plan_counts_half_a_binary_search_of_initial_trials_and_each_preceding_targets_duration() -> None:
    # [0, 1,000,000], error 1,000: a binary search takes ceil(log2(1000)) = 10 steps; half of them plus 2 = 7 trials of
    # the initial 1 s. Three preceding targets between 1 s and the duration sum of 10 s: durations 10 x (1/10)^(k/3),
    # 2 trials each for k = 1, 2 (the last target's trials last the initial duration); 1 full trial passes, 1 fails
    s = ThroughputSettings(upper=1_000_000, error=1000, fill_rate=1000, duration=10, mlr={"preceding_targets": 3})
    assert search_steps(0, 1_000_000, 1000) == 10
    assert mlr_trials(s) == [(7, 1.0), (2, pytest.approx(10 ** (2 / 3))), (2, pytest.approx(10 ** (1 / 3))), (2, 10.0)]


def test_the_plan_counts_the_bad_final_trials_an_exceed_ratio_allows_in_final_trials() -> None:
    # csit with final trials of 3 s and a duration sum of 21 s, exceed ratio 0.5: a lower bound needs
    # ceil(21 x 0.5 / 3) = 4 good final trials, an upper bound ceil(21 x 0.5 / 3) + 1 = 5 bad ones
    s = ThroughputSettings(
        upper=1_000_000, error=1000, fill_rate=1000, duration=10, mlr={"preset": "csit", "final_trial_duration": 3.0}
    )
    assert mlr_trials(s)[-1] == (4 + 5, 3.0)


# --- the goal in a caption's words ------------------------------------------------------------------------------------
def _result(**extra: Any) -> RepetitionResult:
    return RepetitionResult("p", "throughput", 0, 1000.0, "fps", error=10.0, extra=extra)


def test_goal_words_name_the_preset_and_the_goals_ratios_and_durations() -> None:
    goal = mlr_goal(ThroughputSettings(upper=400_000, error=1000, fill_rate=1000, mlr={"preset": "csit"}), 0.005)
    words = goal_words(_result(algorithm="mlr", mlr_preset="csit", mlr_goal=goal.as_dict()))
    assert words == "preset csit: loss ratio 0.005, exceed ratio 0.5, final trials 1 s, duration sum 21 s"


def test_goal_words_of_a_goal_stored_in_part_or_not_at_all() -> None:
    goal = {"loss_ratio": 0.0, "exceed_ratio": 0.0, "final_trial_duration": 60.0}  # no duration sum
    assert goal_words(_result(algorithm="mlr", mlr_preset="rfc2544", mlr_goal=goal)) == "preset rfc2544: goal as stored"
    text = {**goal, "duration_sum": "60"}
    assert goal_words(_result(algorithm="mlr", mlr_preset="rfc2544", mlr_goal=text)) == "preset rfc2544: goal as stored"
    assert goal_words(_result(algorithm="mlr", mlr_preset="rfc2544", mlr_goal=None)) == "preset rfc2544"
    assert goal_words(_result(algorithm="mlr")) == "preset ?"  # nothing stored but the algorithm


def test_goal_words_are_none_for_a_result_of_another_search() -> None:
    assert goal_words(_result(algorithm="binary", mlr_preset="rfc2544")) is None
    assert goal_words(_result()) is None
