"""Tests of the RFC 2544 binary search state machine."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from natbench.errors import SearchError
from natbench.results import Verdict
from natbench.search.binary import BinarySearch, SearchStep, run_binary_search, search_steps
from natbench.search.grid import RateGrid


def threshold_trial(ceiling: float):
    def trial(step: SearchStep) -> Verdict:
        return Verdict.PASS if step.rate <= ceiling else Verdict.FAIL

    return trial


@settings(max_examples=200, deadline=None)
@given(
    ceiling=st.floats(min_value=0, max_value=10_000_000, allow_nan=False),
    upper=st.integers(min_value=1000, max_value=20_000_000),
    error=st.integers(min_value=1, max_value=5000),
)
def test_converges_to_the_ceiling_within_the_error(ceiling: float, upper: int, error: int) -> None:
    out = run_binary_search(BinarySearch(0, upper, error), threshold_trial(ceiling))
    assert out.upper - out.lower <= error
    assert out.value == out.lower
    if ceiling < upper:
        # the result is the highest passing rate found, at most one error below the ceiling
        assert out.lower <= ceiling < out.upper or (ceiling >= out.upper and out.at_upper_limit)
        assert ceiling - out.value <= error
    else:
        assert out.at_upper_limit
        assert upper - out.value <= error


def test_steps_follow_rfc2544_bisection_on_the_grid_of_the_error() -> None:
    # [0, 1000], error 100: the grid 0, 100, ..., 1000 (indices 0..10); midpoints between indices, rounded down
    search = BinarySearch(0, 1000, 100)
    seen = []
    while not search.done:
        step = search.next_step()
        seen.append((step.rate, step.lower, step.upper))
        search.report(Verdict.PASS if step.rate <= 300 else Verdict.FAIL)
    assert seen == [
        (500.0, 0, 1000),
        (200.0, 0, 500.0),
        (300.0, 200.0, 500.0),
        (400.0, 300.0, 500.0),
    ]
    out = search.outcome()
    assert (out.value, out.upper, out.steps, out.invalid, out.at_upper_limit) == (300.0, 400.0, 4, 0, False)
    assert out.error == 100.0  # exactly the error: what the seed tables print


def test_invalid_steps_are_retried_at_the_same_rate_and_not_counted() -> None:
    verdicts = iter([Verdict.INVALID, Verdict.INVALID, Verdict.PASS, Verdict.INVALID, Verdict.FAIL])
    rates: list[tuple[float, int]] = []

    def trial(step: SearchStep) -> Verdict:
        rates.append((step.rate, step.attempt))
        try:
            return next(verdicts)
        except StopIteration:
            return Verdict.FAIL

    out = run_binary_search(BinarySearch(0, 1000, 300, max_invalid=2), trial)
    # the grid 0, 300, 600, 900 and 1000 (the top cell is narrower): 600 (index 2 of 0..4), then 900
    assert rates[:5] == [(600.0, 0), (600.0, 1), (600.0, 2), (900.0, 0), (900.0, 1)]
    assert out.invalid == 3
    assert out.steps == 2
    assert (out.lower, out.upper) == (600.0, 900.0)


def test_too_many_invalid_steps_raise_search_error() -> None:
    search = BinarySearch(0, 1000, 10, max_invalid=2)
    with pytest.raises(SearchError, match="3 invalid trials in a row at rate 500"):
        run_binary_search(search, lambda step: Verdict.INVALID)


def test_the_same_verdicts_lead_to_the_same_steps() -> None:
    # a restarted repetition (resume after a kill) must propose the steps the cut-off one proposed
    a = BinarySearch(0, 10_000, 10)
    verdicts = []
    for _ in range(4):
        step = a.next_step()
        v = Verdict.PASS if step.rate < 3333 else Verdict.FAIL
        verdicts.append(v)
        a.report(v)
    b = BinarySearch(0, 10_000, 10)
    for v in verdicts:
        b.next_step()
        b.report(v)
    assert (a.lower, a.upper, a.next_step()) == (b.lower, b.upper, b.next_step())


def test_stop_below_ends_a_collapsing_search_early() -> None:
    out = run_binary_search(BinarySearch(0, 1000, 1, stop_below=600), lambda s: Verdict.FAIL)
    assert out.stopped_early
    assert out.steps == 1
    assert out.value == 0


@pytest.mark.parametrize(("lower", "upper", "error"), [(10, 10, 1), (10, 5, 1), (0, 10, 0), (-1, 10, 1)])
def test_bad_bounds_are_rejected(lower: float, upper: float, error: float) -> None:
    with pytest.raises(SearchError):
        BinarySearch(lower, upper, error)


@settings(max_examples=200, deadline=None)
@given(
    ceiling=st.integers(min_value=0, max_value=2_000_000),
    error=st.integers(min_value=1, max_value=5000),
    invalid_runs=st.lists(st.integers(min_value=0, max_value=2), max_size=40),
)
def test_invalid_trials_never_change_the_result(ceiling: int, error: int, invalid_runs: list[int]) -> None:
    """Up to max_invalid invalid trials before each real one leave the search path and result unchanged."""
    clean = run_binary_search(BinarySearch(0, 2_000_000, error, max_invalid=2), threshold_trial(ceiling))
    runs = iter(invalid_runs)
    pending = [next(runs, 0)]
    rates: list[float] = []

    def flaky(step: SearchStep) -> Verdict:
        if pending[0] > 0:
            pending[0] -= 1
            return Verdict.INVALID
        rates.append(step.rate)
        pending[0] = next(runs, 0)
        return threshold_trial(ceiling)(step)

    out = run_binary_search(BinarySearch(0, 2_000_000, error, max_invalid=2), flaky)
    assert (out.value, out.upper, out.steps) == (clean.value, clean.upper, clean.steps)
    assert len(rates) == out.steps


def test_a_rate_the_tester_cannot_send_becomes_its_ceiling_and_flags_the_result() -> None:
    """The DUT passes everything; the tester cannot exceed 70k: the search ends just below 70k, tester-bound."""
    search = BinarySearch(0, 200_000, 1_000, max_invalid=8)
    tester_trials: dict[float, int] = {}
    while not search.done:
        step = search.next_step()
        if step.rate > 70_000:
            tester_trials[step.rate] = tester_trials.get(step.rate, 0) + 1
            search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
        else:
            search.report(Verdict.PASS)
    out = search.outcome()
    assert out.tester_bound and not out.at_upper_limit
    assert out.tester_ceiling is not None and 70_000 < out.tester_ceiling <= 71_000
    assert out.upper - out.lower <= 1_000 and out.value <= 70_000
    # each too-fast rate was tried 1 + tester_retries = 3 times, and none was counted as pass or fail
    assert tester_trials and set(tester_trials.values()) == {3}
    assert out.invalid == sum(tester_trials.values())


def test_a_dut_failure_below_the_tester_ceiling_is_not_tester_bound() -> None:
    search = BinarySearch(0, 200_000, 1_000, max_invalid=8)
    while not search.done:
        step = search.next_step()
        if step.rate > 150_000:
            search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
        else:
            search.report(Verdict.PASS if step.rate <= 40_000 else Verdict.FAIL)
    out = search.outcome()
    assert not out.tester_bound and 39_000 <= out.value <= 40_000


def test_other_invalid_causes_still_raise_after_max_invalid() -> None:
    search = BinarySearch(0, 100, 1, max_invalid=2)
    search.next_step()
    search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
    search.report(Verdict.INVALID, reason="DUT table holds 3 connections", tester_limited=False)
    with pytest.raises(SearchError):
        search.report(Verdict.INVALID, reason="DUT table holds 3 connections")


def recorded(rates: list[float], verdict: Callable[[float], Verdict]) -> Callable[[SearchStep], Verdict]:
    """A trial that notes each rate it is asked for and answers ``verdict(rate)``."""

    def trial(step: SearchStep) -> Verdict:
        rates.append(step.rate)
        return verdict(step.rate)

    return trial


def test_the_search_stops_when_the_interval_equals_the_error() -> None:
    # all pass in [0, 1000], error 125: 500 -> [500, 1000] (500 wide), 750 -> [750, 1000] (250),
    # 875 -> [875, 1000]: 125 wide, equal to the error, so done after 3 trials (a 4th would test 937)
    rates: list[float] = []
    out = run_binary_search(BinarySearch(0, 1000, 125), recorded(rates, lambda r: Verdict.PASS))
    assert rates == [500, 750, 875]
    assert (out.value, out.upper, out.steps, out.error, out.at_upper_limit) == (875, 1000, 3, 125, True)
    # all fail in [0, 1000], error 250: 500 -> [0, 500], 250 -> [0, 250]: 250 wide, done after 2
    rates.clear()
    out = run_binary_search(BinarySearch(0, 1000, 250), recorded(rates, lambda r: Verdict.FAIL))
    assert rates == [500, 250]
    assert (out.value, out.upper, out.steps, out.at_upper_limit) == (0, 250, 2, False)


@pytest.mark.parametrize(
    ("max_invalid", "tester_retries", "tries"),
    [(8, 2, 3), (1, 2, 2), (8, 0, 1), (2, 5, 3)],
)
def test_a_rate_beyond_the_tester_is_tried_once_plus_the_smaller_retry_limit(
    max_invalid: int, tester_retries: int, tries: int
) -> None:
    """[0, 1000], error 100; the DUT passes all, the tester cannot send above 600.

    500 passes -> [500, 1000]; 700 (index 7 of 5..10) is beyond the tester: tried 1 + min(max_invalid,
    tester_retries) times, then it is the tester's ceiling -> [500, 700]; 600 passes -> [600, 700], one cell: done.
    """
    search = BinarySearch(0, 1000, 100, max_invalid=max_invalid, tester_retries=tester_retries)
    rates: list[float] = []
    while not search.done:
        step = search.next_step()
        rates.append(step.rate)
        if step.rate > 600:
            search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
        else:
            search.report(Verdict.PASS)
    assert rates == [500, *[700] * tries, 600]
    out = search.outcome()
    assert (out.value, out.upper, out.tester_ceiling, out.tester_bound) == (600, 700, 700, True)
    assert (out.steps, out.invalid) == (2, tries)


def test_a_rate_with_any_invalid_cause_but_the_tester_never_becomes_the_tester_ceiling() -> None:
    # one DUT-side invalid trial, then only tester-limited ones: the streak is broken, so after max_invalid
    # retries (9 trials at 500) the search gives up instead of taking 500 as the tester's ceiling
    search = BinarySearch(0, 1000, 100, max_invalid=8)
    search.next_step()
    search.report(Verdict.INVALID, reason="DUT table holds 3 connections")
    for _ in range(7):
        search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
    assert search.tester_ceiling is None and search.next_step().rate == 500
    with pytest.raises(SearchError, match="9 invalid trials in a row at rate 500"):
        search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)


def test_a_failure_exactly_at_stop_below_does_not_stop_the_search() -> None:
    # 500 fails but is not below 500: go on; 250 fails below it: stop early after 2 counted steps
    rates: list[float] = []
    out = run_binary_search(BinarySearch(0, 1000, 1, stop_below=500), recorded(rates, lambda r: Verdict.FAIL))
    assert rates == [500, 250]
    assert out.stopped_early and out.steps == 2 and out.value == 0


@pytest.mark.parametrize(
    ("lower", "upper", "error", "first", "top"),
    [
        (0, 1000, 300, 600.0, 4),  # 0, 300, 600, 900, 1000: the top cell is 100 wide
        (10, 20, 3, 16.0, 4),  # 10, 13, 16, 19, 20
        (0, 0.3, 0.1, 0.1, 3),  # 0.3 / 0.1 is 2.9999999999999996 in floating point: three cells, not four
        (93.53, 94.0, 0.1, 93.73, 5),
        (0, 3, 1, 1.0, 3),
    ],
)
def test_rates_lie_on_the_grid_of_the_error_from_the_lower_bound(
    lower: float, upper: float, error: float, first: float, top: int
) -> None:
    search = BinarySearch(lower, upper, error)
    assert search.grid.top == top
    assert search.next_step().rate == pytest.approx(first)
    assert search.grid.rate(top) == upper and search.grid.rate(top + 5) == upper


@settings(max_examples=300, deadline=None)
@given(
    ceiling=st.floats(min_value=0, max_value=2_000_000, allow_nan=False),
    lower=st.sampled_from([0.0, 1000.0, 93.53]),
    width=st.floats(min_value=1.0, max_value=2_000_000, allow_nan=False),
    cells=st.floats(min_value=1.01, max_value=5000, allow_nan=False),
)
def test_the_final_interval_is_one_error_wide_whatever_the_upper_bound(
    ceiling: float, lower: float, width: float, cells: float
) -> None:
    """The error row of the tables equals the configured error by construction: any range, any ratio of range to
    error (not a power of two), any ceiling; only a search that never failed may end in the narrower top cell."""
    upper, error = lower + width, width / cells
    out = run_binary_search(BinarySearch(lower, upper, error), threshold_trial(ceiling))
    if out.at_upper_limit:
        assert 0 < out.error <= error * (1 + 1e-9)
    else:
        assert out.error == pytest.approx(error, rel=1e-9)
    k = (out.value - lower) / error
    assert abs(k - round(k)) < 1e-6


@pytest.mark.parametrize(
    ("lower", "upper", "error", "max_invalid", "message"),
    [
        (0, float("inf"), 1, 3, "search bounds must be finite and non-negative, got [0, inf]"),
        (float("nan"), 10, 1, 3, "search bounds must be finite and non-negative, got [nan, 10]"),
        (-1, 10, 1, 3, "search bounds must be finite and non-negative, got [-1, 10]"),
        (10, 10, 1, 3, "search upper bound 10 must exceed lower bound 10"),
        (0, 10, 0, 3, "search error must be positive, got 0"),
        (0, 10, 1, -1, "max_invalid must be >= 0, got -1"),
    ],
)
def test_a_bad_search_setting_is_named_with_its_value(
    lower: float, upper: float, error: float, max_invalid: int, message: str
) -> None:
    # a NaN lower bound with a finite upper one must be refused too: both bounds need to be finite
    with pytest.raises(SearchError) as info:
        BinarySearch(lower, upper, error, max_invalid=max_invalid)
    assert str(info.value) == message


def test_a_search_used_out_of_order_says_what_went_wrong() -> None:
    search = BinarySearch(0, 4, 2)
    with pytest.raises(SearchError) as info:
        search.report(Verdict.PASS)
    assert str(info.value) == "report() without a pending step"
    with pytest.raises(SearchError) as info:
        search.outcome()
    assert str(info.value) == "the search has not finished"
    assert search.next_step().rate == 2.0  # the grid 0, 2, 4: its middle
    search.report(Verdict.PASS)  # [2, 4]: one cell, done
    with pytest.raises(SearchError) as info:
        search.next_step()
    assert str(info.value) == "the search is finished; no further step"


def test_a_retried_step_keeps_its_rate_and_bounds_and_counts_its_attempts() -> None:
    search = BinarySearch(100, 300, 10, max_invalid=3)
    first = search.next_step()
    assert (first.rate, first.lower, first.upper, first.attempt) == (200.0, 100, 300, 0)
    search.report(Verdict.INVALID, reason="counts")
    again = search.next_step()
    assert (again.rate, again.lower, again.upper, again.attempt) == (200.0, 100, 300, 1)
    search.report(Verdict.FAIL)
    after = search.next_step()
    assert (after.rate, after.lower, after.upper, after.attempt) == (150.0, 100, 200.0, 0)


@pytest.mark.parametrize(
    ("reason", "tail"), [("", ""), ("DUT table holds 3 connections", "; last: DUT table holds 3 connections")]
)
def test_too_many_invalid_trials_name_the_rate_the_count_and_the_last_reason(reason: str, tail: str) -> None:
    said = {"reason": reason} if reason else {}  # no reason given at all: the message has no "last" part
    search = BinarySearch(0, 100, 1, max_invalid=1)
    search.next_step()
    search.report(Verdict.INVALID, **said)
    with pytest.raises(SearchError) as info:
        search.report(Verdict.INVALID, **said)
    assert str(info.value) == "2 invalid trials in a row at rate 50 (max_invalid=1)" + tail


@pytest.mark.parametrize(("reason", "tail"), [("", ""), ("tester fell behind", "; last: tester fell behind")])
def test_a_tester_that_sends_no_rate_at_all_ends_the_search_with_the_lowest_rate_tried(reason: str, tail: str) -> None:
    # [0, 8], error 2, tester_retries 0: 4 is the ceiling (1 try), then 2 (1 try): [0, 2] is done, none passed
    search = BinarySearch(0, 8, 2, max_invalid=3, tester_retries=0)
    assert search.next_step().rate == 4.0
    search.report(Verdict.INVALID, reason=reason, tester_limited=True)
    assert search.tester_ceiling == 4.0
    assert search.next_step().rate == 2.0  # (0 + 4) / 2; width 4 > 2, floor(2.0)
    with pytest.raises(SearchError) as info:
        search.report(Verdict.INVALID, reason=reason, tester_limited=True)
    assert str(info.value) == "the tester could not send at any rate tried down to 2; no rate passed" + tail


def test_a_tester_ceiling_after_a_pass_ends_the_search_there_tester_bound() -> None:
    # [0, 8], error 2: 4 passes; 6 is beyond the tester (1 try with tester_retries 0) -> [4, 6] is done at the
    # tester's ceiling 6: a result, not an error, because a rate passed
    search = BinarySearch(0, 8, 2, max_invalid=3, tester_retries=0)
    assert search.next_step().rate == 4.0
    search.report(Verdict.PASS)
    assert search.next_step().rate == 6.0
    search.report(Verdict.INVALID, reason="tester fell behind", tester_limited=True)
    out = search.outcome()
    assert (out.value, out.upper, out.tester_ceiling, out.tester_bound, out.steps, out.invalid) == (
        4.0,
        6.0,
        6.0,
        True,
        1,
        1,
    )


def test_a_search_in_which_no_rate_passed_says_so_and_one_with_a_pass_does_not() -> None:
    # every trial fails: [0, 1000] with error 100 tests 500, 200, 100 and stops at [0, 100], one cell
    none = run_binary_search(BinarySearch(0, 1000, 100), lambda s: Verdict.FAIL)
    assert (none.value, none.lower, none.upper, none.steps) == (0, 0, 100, 3)
    assert none.passed is False
    # one pass (100 passes, nothing above it does): the same bounds' lower end is a measured rate
    one = run_binary_search(BinarySearch(0, 1000, 100), lambda s: Verdict.PASS if s.rate <= 100 else Verdict.FAIL)
    assert (one.value, one.upper, one.passed) == (100, 200, True)


# --- the rate grid (natbench.search.grid) at its edges ---------------------------------------------------------------


def test_the_grid_index_of_the_upper_bound_is_the_top_even_when_the_range_is_no_multiple_of_the_error() -> None:
    # [0, 1050], error 100: rates 0, 100, ..., 1000 and the top cell's end 1050 (index 11)
    grid = RateGrid(0, 1050, 100)
    assert grid.top == 11
    assert (grid.index(1050), grid.index(5000)) == (11, 11)
    assert (grid.index(1049.9), grid.index(1000), grid.index(999.9)) == (10, 10, 9)
    assert grid.index(1000 - 1e-8) == 10  # within 1e-9 of an error below a grid rate: that rate (floating point)
    assert (grid.index(0), grid.index(-50)) == (0, 0)  # never below index 0


def test_the_grid_rate_of_an_index_is_lower_plus_index_errors_and_upper_from_the_top() -> None:
    grid = RateGrid(50, 1000, 100)  # top: ceil(9.5) = 10
    assert (grid.rate(0), grid.rate(1), grid.rate(9)) == (50, 150, 950)
    assert (grid.rate(10), grid.rate(11)) == (1000, 1000)
    assert grid.index(grid.rate(9)) == 9 and grid.index(grid.rate(10)) == 10


def test_no_retry_at_all_is_a_valid_setting_and_one_invalid_trial_ends_the_search() -> None:
    search = BinarySearch(0, 10, 1, max_invalid=0)
    assert search.next_step().rate == 5.0
    with pytest.raises(SearchError) as info:
        search.report(Verdict.INVALID)
    assert str(info.value) == "1 invalid trials in a row at rate 5 (max_invalid=0)"


@pytest.mark.parametrize(
    ("upper", "steps"),
    [
        (50.0, 1),  # narrower than the error: one trial, never fewer
        (100.0, 1),  # exactly the error wide
        (150.0, 1),  # between one and two errors: ceil(log2(1.5)) = 1
        (200.0, 1),  # log2(2) = 1
        (201.0, 2),  # just above: ceil(log2(2.01)) = 2
        (1000.0, 4),  # ceil(log2(10)) = 4
    ],
)
def test_the_trials_of_one_binary_search_are_the_ceiling_of_log2_of_the_errors_in_its_range(
    upper: float, steps: int
) -> None:
    assert search_steps(0.0, upper, 100.0) == steps
    assert search_steps(1000.0, 1000.0 + upper, 100.0) == steps  # the width counts, not where the range lies
