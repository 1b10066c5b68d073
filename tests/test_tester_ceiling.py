"""The tester's ceiling learnt once per working point (natbench.search.ceiling.known_ceiling, RetryRule; docs/engine.md,
"The tester's ceiling, learnt once per working point"): at or above the ceiling an earlier repetition found, the first
trial the tester cannot keep settles the rate, without retries; every repetition still tries the rates it asks for."""

from __future__ import annotations

from typing import Any

import pytest
from test_procedures import POINT, Harness

from natbench.results import RepetitionResult, Verdict
from natbench.search.ceiling import known_ceiling
from natbench.search.retry import RetryRule


def result(rep: int, **extra: Any) -> RepetitionResult:
    return RepetitionResult(POINT.id, "cps", rep, 100.0, "cps", 10.0, extra)


def test_the_lowest_ceiling_of_the_testers_rate_is_learnt_and_not_one_of_its_clumps() -> None:
    assert known_ceiling([]) is None
    assert known_ceiling([result(0, tester_ceiling=None), result(1)]) is None
    assert known_ceiling([result(0, tester_ceiling=True, tester_bound_cause="rate")]) is None  # not a rate
    rate = [
        result(0, tester_ceiling=500.0, tester_bound_cause="rate"),
        result(1, tester_ceiling=450, tester_bound_cause="rate"),
    ]
    assert known_ceiling(rate) == 450.0
    clumps = result(2, tester_ceiling=400, tester_bound_cause="clumps")  # its sending pattern, not its rate
    assert known_ceiling([*rate, clumps]) == 450.0
    assert known_ceiling([clumps]) is None
    assert known_ceiling([result(3, tester_ceiling=300.0)]) is None  # no cause stored: not tester-bound


@pytest.mark.parametrize(
    ("rate", "attempts", "streak", "beyond"),
    [
        (450.0, 1, 1, True),  # at the known ceiling: the first invalid trial the tester could not keep settles it
        (500.0, 1, 1, True),  # above it too
        (449.0, 1, 1, False),  # below it: retried as ever
        (449.0, 3, 3, True),  # ... until more than min(max_invalid, tester_retries) = 2 tries were the tester's
        (449.0, 2, 2, False),
        (450.0, 2, 1, False),  # the first try at the ceiling was invalid for another reason: not the tester alone
        (450.0, 0, 0, False),  # nothing tried yet
    ],
)
def test_a_rate_is_beyond_the_tester_at_once_only_at_or_above_the_known_ceiling(
    rate: float, attempts: int, streak: int, beyond: bool
) -> None:
    assert RetryRule(3, 2, 450.0).beyond_tester(rate, attempts, streak) is beyond
    assert RetryRule(3, 2, None).beyond_tester(rate, attempts, streak) is (attempts == streak == 3)


@pytest.mark.parametrize("algorithm", ["binary", "fast"])
def test_a_later_repetition_spends_one_trial_on_the_ceiling_an_earlier_one_found(algorithm: str) -> None:
    # the DUT sets up 900,000 connections per second; the tester sends at most 370,000: the first repetition meets
    # the ceiling with three invalid trials at each rate above it; the second tries such a rate once
    h = Harness(cps=900_000, tester_max_rate=370_000)
    settings = {"upper": 1_000_000, "error": 10_000, "algorithm": algorithm}
    first = h.run("cps", **settings)
    assert (first.extra["tester_bound"], first.extra["tester_bound_cause"]) == (True, "rate")
    invalid_first = [r.intended_rate for r in h.records if r.verdict is Verdict.INVALID]
    assert len(invalid_first) == 3 * len(set(invalid_first))  # each rate beyond the tester: three tries
    second = h.run("cps", repetition=1, earlier=[first], **settings)
    invalid_second = [r.intended_rate for r in h.records if r.verdict is Verdict.INVALID]
    assert invalid_second and len(invalid_second) == len(set(invalid_second))  # each such rate: one try
    assert second.value == first.value  # the same lower bound of the DUT
    assert (second.extra["tester_bound"], second.extra["tester_bound_cause"]) == (True, "rate")


def test_a_tester_that_was_slow_once_caps_no_later_repetition() -> None:
    # an earlier repetition met a ceiling of 370,000 (a busy host); now the tester keeps every rate: the search tries
    # the rates above it as ever and finds the DUT's 900,000
    h = Harness(cps=900_000)
    earlier = [result(0, tester_ceiling=370_000.0, tester_bound_cause="rate", tester_bound=True)]
    res = h.run("cps", repetition=1, earlier=earlier, upper=1_000_000, error=10_000)
    assert max(r.intended_rate for r in h.records) > 370_000
    assert res.value is not None and 890_000 <= res.value <= 900_000 and res.extra["tester_bound"] is False
