"""The tester's ceiling learnt once per working point (natbench.search.ceiling.KnownCeiling; docs/engine.md, "The
tester's ceiling"): a later repetition tests no rate at or above the ceiling an earlier one found, and reports the
same tester-bound lower bound of the DUT in fewer trials."""

from __future__ import annotations

from typing import Any

import pytest
from test_procedures import POINT, Harness

from natbench.results import RepetitionResult, Verdict
from natbench.search import SearchOutcome
from natbench.search.ceiling import KnownCeiling


def result(rep: int, **extra: Any) -> RepetitionResult:
    return RepetitionResult(POINT.id, "cps", rep, 100.0, "cps", 10.0, extra)


def test_the_lowest_ceiling_of_the_testers_rate_is_learnt_and_not_one_of_its_clumps() -> None:
    assert KnownCeiling.learnt([]) is None
    assert KnownCeiling.learnt([result(0, tester_ceiling=None), result(1)]) is None
    assert KnownCeiling.learnt([result(0, tester_ceiling=True, tester_bound_cause="rate")]) is None  # not a rate
    rate = [
        result(0, tester_ceiling=500.0, tester_bound_cause="rate"),
        result(1, tester_ceiling=450, tester_bound_cause="rate"),
    ]
    assert KnownCeiling.learnt(rate) == KnownCeiling(450.0, "rate")
    clumps = result(2, tester_ceiling=400, tester_bound_cause="clumps")  # its sending pattern, not its rate
    assert KnownCeiling.learnt([*rate, clumps]) == KnownCeiling(450.0, "rate")
    assert KnownCeiling.learnt([clumps]) is None
    assert KnownCeiling.learnt([result(3, tester_ceiling=300.0)]) is None  # no cause stored: not tester-bound
    assert KnownCeiling(450.0, "rate").causes() == {450.0: "rate"}
    assert KnownCeiling(400.0).causes() == {}


@pytest.mark.parametrize(
    ("rate", "caps"),
    [
        (1000.0, False),  # the search's upper bound itself: nothing to narrow
        (999.0, True),  # just below it
        (20.0, True),  # grid index 2: a rate (index 1) left to test below it
        (19.0, False),  # grid index 1: none left; the search meets the ceiling itself
        (10.0, False),
    ],
)
def test_a_ceiling_caps_a_range_only_below_its_top_and_above_its_first_rate(rate: float, caps: bool) -> None:
    assert KnownCeiling(rate).caps(0.0, 1000.0, 10.0) is caps


def test_a_search_that_ends_at_the_ceiling_is_tester_bound_and_one_below_it_is_not() -> None:
    ceiling = KnownCeiling(300.0)
    at = ceiling.outcome(SearchOutcome(290.0, 290.0, 300.0, 5, 0, at_upper_limit=True))
    assert (at.tester_ceiling, at.at_upper_limit, at.tester_bound) == (300.0, False, True)
    below = SearchOutcome(280.0, 280.0, 290.0, 5, 0, at_upper_limit=False)
    assert ceiling.outcome(below) == below  # the DUT failed below it: nothing of the tester to say
    lower_own = SearchOutcome(250.0, 250.0, 260.0, 5, 0, at_upper_limit=False, tester_ceiling=260.0)
    assert ceiling.outcome(lower_own) == lower_own
    both = ceiling.outcome(SearchOutcome(290.0, 290.0, 300.0, 5, 0, at_upper_limit=True, tester_ceiling=295.0))
    assert both.tester_ceiling == 295.0  # the lower of the two


@pytest.mark.parametrize("algorithm", ["binary", "fast"])
def test_a_later_repetition_tests_nothing_at_or_above_the_ceiling_an_earlier_one_found(algorithm: str) -> None:
    # the DUT sets up 900,000 connections per second; the tester sends at most 370,000: the first repetition meets
    # the ceiling (invalid trials, retried, then beyond the tester), the second never tests at or above it
    h = Harness(cps=900_000, tester_max_rate=370_000)
    settings = {"upper": 1_000_000, "error": 10_000, "algorithm": algorithm}
    first = h.run("cps", **settings)
    assert first.extra["tester_bound"] is True and first.extra["tester_ceiling"] is not None
    ceiling = float(first.extra["tester_ceiling"])
    assert any(r.verdict is Verdict.INVALID for r in h.records)
    second = h.run("cps", repetition=1, earlier=[first], **settings)
    assert all(r.intended_rate < ceiling for r in h.records)
    assert not any(r.verdict is Verdict.INVALID for r in h.records)
    assert second.value == first.value  # the same lower bound of the DUT
    assert (second.extra["tester_bound"], second.extra["tester_ceiling"]) == (True, ceiling)
    assert second.extra["at_upper_limit"] is False
    assert second.extra["tester_bound_cause"] == first.extra["tester_bound_cause"] == "rate"


def test_a_ceiling_learnt_at_a_point_leaves_a_dut_below_it_measured_as_before() -> None:
    # the DUT fails at 300,000, below the tester's 370,000: the cap changes nothing of the result
    h = Harness(cps=300_000, tester_max_rate=370_000)
    settings = {"upper": 1_000_000, "error": 10_000}
    plain = h.run("cps", repetition=1, **settings)
    capped = h.run("cps", repetition=1, earlier=[result(0, tester_ceiling=370_000.0)], **settings)
    assert capped.value == plain.value and capped.extra["tester_bound"] is False
