"""The fast search (short trials narrow, full trials confirm): exact trial sequences worked out by hand and the
confirmation rule (a rate whose full-duration trial failed is never reported)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from natbench.errors import SearchError
from natbench.results import RepetitionResult, Verdict
from natbench.search import SearchOutcome
from natbench.search.fast import JUMPS, FastStep, ShortFailRule, TrialVerdict, run_fast_search
from natbench.search.fast.guard import GuardPolicy
from natbench.search.fast.history import prior_seed, probe_history, short_delivered
from natbench.search.fast.ledger import Ledger
from natbench.search.fast.moves import Ask, Nominee
from natbench.search.fast.outcome import FastOutcome
from natbench.search.fast.probe import ProbePolicy
from natbench.search.fast.trials import Trials
from natbench.search.grid import RateGrid
from natbench.search.retry import RetryRule


def on_grid(rate: float, lower: float, error: float) -> bool:
    """Whether ``rate`` is ``lower + k x error`` for a whole k (to floating-point precision)."""
    k = (rate - lower) / error
    return abs(k - round(k)) < 1e-9 * max(1.0, k)


def assert_one_cell(out: SearchOutcome, lower: float, upper: float, error: float) -> None:
    """The final interval is one cell of the grid: exactly ``error`` wide, or the narrower top cell at ``upper``."""
    width = out.upper - out.value
    assert on_grid(out.value, lower, error)
    if out.upper == upper:
        assert 0 < width <= error * (1 + 1e-9)
    else:
        assert on_grid(out.upper, lower, error) and math.isclose(width, error, rel_tol=1e-9), (out, error)


class Dut:
    """Passes a short trial up to ``short`` and a full trial up to ``full``; records (kind, rate) of every trial."""

    def __init__(self, short: float, full: float) -> None:
        self.short, self.full = short, full
        self.trials: list[str] = []

    def __call__(self, step: FastStep) -> TrialVerdict:
        self.trials.append(f"{'F' if step.full else 's'}{step.rate:g}")
        ceiling = self.full if step.full else self.short
        return TrialVerdict(Verdict.PASS if step.rate <= ceiling else Verdict.FAIL)


def test_unseeded_search_narrows_with_short_trials_then_confirms_pass_and_fail_with_full_ones() -> None:
    # [0, 100], error 10: the grid 0, 10, ..., 100. Ceiling 63: short 50 pass -> [50, 100]; 70 (index 7 of 5..10)
    # fails -> [50, 70]; 60 passes -> [60, 70], one cell. Full 60 passes, full 70 fails.
    dut = Dut(short=63, full=63)
    out = run_fast_search(dut, lower=0, upper=100, error=10)
    assert dut.trials == ["s50", "s70", "s60", "F60", "F70"]
    assert (out.value, out.upper, out.short_steps, out.full_steps, out.rejected) == (60, 70, 3, 2, ())
    assert not out.seeded and not out.at_upper_limit


def test_a_seeded_search_starts_with_a_full_trial_at_the_seed_and_steps_one_error() -> None:
    # seed 60.7: full at floor(60.7) = 60 passes; up one error: 70 fails -> [60, 70]: done, no short trial
    dut = Dut(short=63, full=63)
    out = run_fast_search(dut, lower=0, upper=100, error=10, seed=60.7)
    assert dut.trials == ["F60", "F70"]
    assert (out.value, out.upper, out.seeded, out.short_steps, out.full_steps) == (60, 70, True, 0, 2)


def test_a_seed_above_the_ceiling_walks_down_in_single_errors_first() -> None:
    # error 1, full ceiling 55, seed 60: full 60 fails; down 1: 59 f, 58 f, 57 f (three single steps), then the
    # steps double: 57 - 2 = 55 passes -> [55, 57]; bisect: 56 fails -> [55, 56]
    dut = Dut(short=1000, full=55)
    out = run_fast_search(dut, lower=0, upper=100, error=1, seed=60)
    assert dut.trials == ["F60", "F59", "F58", "F57", "F55", "F56"]
    assert (out.value, out.upper) == (55, 56)


def test_a_seed_far_below_the_ceiling_is_not_trusted_the_walk_doubles_up() -> None:
    # error 1, ceiling 80, seed 60: passes at 60, 61, 62, 63 (single steps), then +2 = 65, +4 = 69, +8 = 77 pass,
    # +16 = 93 fails -> [77, 93]; bisect with full trials: 85 f, 81 f, 79 p, 80 p -> [80, 81]
    dut = Dut(short=0, full=80)
    out = run_fast_search(dut, lower=0, upper=100, error=1, seed=60)
    assert dut.trials == ["F60", "F61", "F62", "F63", "F65", "F69", "F77", "F93", "F85", "F81", "F79", "F80"]
    assert (out.value, out.upper, out.short_steps) == (80, 81, 0)


def test_a_walk_stops_at_the_search_bounds() -> None:
    # seed 98, error 1, everything passes: 98 p, 99 p, then 100 is the upper bound (never tested): [99, 100]
    dut = Dut(short=1000, full=1000)
    out = run_fast_search(dut, lower=0, upper=100, error=1, seed=98)
    assert dut.trials == ["F98", "F99"]
    assert (out.value, out.upper, out.at_upper_limit) == (99, 100, True)
    # seed 2, nothing passes: 2 f, 1 f, then 0 is the lower bound: [0, 1]
    dut = Dut(short=0, full=0.5)
    out = run_fast_search(dut, lower=0, upper=100, error=1, seed=2)
    assert dut.trials == ["F2", "F1"]
    assert (out.value, out.upper) == (0, 1)


def test_a_rate_whose_full_confirmation_fails_is_never_reported() -> None:
    # short trials pass up to 63 but full ones only up to 55: narrowing as above ends at [60, 70]; full 60 FAILS
    # (rejected); down from 60 by the error: full 50 passes -> [50, 60]: 50 is reported, not 60.
    dut = Dut(short=63, full=55)
    out = run_fast_search(dut, lower=0, upper=100, error=10)
    assert dut.trials == ["s50", "s70", "s60", "F60", "F50"]
    assert (out.value, out.upper, out.rejected) == (50, 60, (60,))


def test_a_full_pass_above_the_short_fail_moves_the_search_up() -> None:
    # short ceiling 63, full ceiling 70: full 60 passes, full 70 passes too (rejected as the upper bound);
    # up from 70 by the error: full 80 fails -> [70, 80]: 70 is reported.
    dut = Dut(short=63, full=70)
    out = run_fast_search(dut, lower=0, upper=100, error=10)
    assert dut.trials == ["s50", "s70", "s60", "F60", "F70", "F80"]
    assert (out.value, out.upper, out.rejected) == (70, 80, (70,))


def test_full_narrowing_needs_no_confirmation() -> None:
    # narrow_full: the bisection's trials are the full ones (50 p, 70 f, 60 p) and nothing follows
    dut = Dut(short=0, full=63)
    out = run_fast_search(dut, lower=0, upper=100, error=10, narrow_full=True)
    assert dut.trials == ["F50", "F70", "F60"]
    assert (out.value, out.short_steps, out.full_steps) == (60, 0, 3)


def test_a_dut_faster_than_the_range_needs_no_failing_confirmation() -> None:
    # every short trial passes: 50, 70, 80, 90 -> [90, 100]; full 90 passes; the upper bound 100 is never tested
    # (at_upper_limit)
    dut = Dut(short=1000, full=1000)
    out = run_fast_search(dut, lower=0, upper=100, error=10)
    assert dut.trials == ["s50", "s70", "s80", "s90", "F90"]
    assert out.value == 90 and out.at_upper_limit


@pytest.mark.parametrize("seed", range(40))
def test_any_reported_rate_passed_a_full_trial_and_one_error_above_failed_one(seed: int) -> None:
    """Whatever the trials say (random verdicts, seeded or not), the result keeps the binary search's meaning."""
    rng = random.Random(seed)
    full_verdicts: list[tuple[float, Verdict]] = []

    def trial(step: FastStep) -> TrialVerdict:
        v = Verdict.PASS if rng.random() < 0.5 else Verdict.FAIL
        if step.full:
            full_verdicts.append((step.rate, v))
        return TrialVerdict(v)

    out = run_fast_search(trial, lower=0, upper=10_000, error=100, seed=rng.choice([None, 3000.0, 9000.0]))
    if out.value > 0:  # the last full trial at the reported rate passed
        assert [v for r, v in full_verdicts if r == out.value][-1] is Verdict.PASS
    if out.upper < 10_000:  # the last full trial at the upper bound failed
        assert [v for r, v in full_verdicts if r == out.upper][-1] is Verdict.FAIL
    assert out.upper - out.value == 100  # one cell of the grid 0, 100, 200, ...
    assert all(r % 100 == 0 for r, _ in full_verdicts)


def test_invalid_trials_are_retried_and_then_end_the_search() -> None:
    calls: list[int] = []

    def trial(step: FastStep) -> TrialVerdict:
        calls.append(step.attempt)
        return TrialVerdict(Verdict.INVALID, "counts inconsistent")

    with pytest.raises(SearchError, match=r"3 invalid trials in a row at rate 50 .*counts inconsistent"):
        run_fast_search(trial, lower=0, upper=100, error=10, max_invalid=2)
    assert calls == [0, 1, 2]


def test_a_rate_beyond_the_tester_counts_as_failed_and_becomes_its_ceiling() -> None:
    # the tester cannot send above 65: short 70 is invalid (tester-limited) 3 times (> min(3, 2)) -> failed,
    # ceiling 70; the DUT forwards 55: short 60 fails -> [50, 60]; full 50 passes, full 60 fails
    dut = Dut(short=55, full=55)

    def trial(step: FastStep) -> TrialVerdict:
        if step.rate > 65:
            return TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True)
        return dut(step)

    out = run_fast_search(trial, lower=0, upper=100, error=10)
    assert dut.trials == ["s50", "s60", "F50", "F60"]
    assert (out.value, out.upper, out.tester_ceiling, out.invalid) == (50, 60, 70, 3)


def test_a_tester_ceiling_a_later_full_trial_disproved_is_dropped() -> None:
    # short trials lose their pace (tester-limited) from 70 up, full ones pass up to 85: short 50 p, 70 invalid x3
    # (-> counted failed), 60 p -> [60, 70]; full 60 p, full 70 PASSES (rejected as the upper bound); walk up:
    # 80 p, 90 f -> [80, 90]. 70 was no ceiling of the tester (a full trial passed above it): the result is
    # [80, 90] with no tester ceiling, never an upper bound below the value.
    def trial(step: FastStep) -> TrialVerdict:
        if not step.full and step.rate >= 70:
            return TrialVerdict(Verdict.INVALID, "tester fell behind", tester_limited=True)
        return TrialVerdict(Verdict.PASS if step.rate <= 85 else Verdict.FAIL)

    out = run_fast_search(trial, lower=0, upper=100, error=10)
    assert (out.value, out.upper, out.tester_ceiling) == (80, 90, None)


def test_a_seed_in_a_range_narrower_than_whole_numbers_starts_at_the_grid_rate_below_it() -> None:
    # [0, 1.6], error 0.4: the grid 0, 0.4, 0.8, 1.2, 1.6. Seed 0.5: the walk starts at 0.4 (passes, ceiling 0.9);
    # up one error: 0.8 passes, 1.2 fails -> [0.8, 1.2]
    dut = Dut(short=0, full=0.9)
    out = run_fast_search(dut, lower=0, upper=1.6, error=0.4, seed=0.5)
    assert dut.trials == ["F0.4", "F0.8", "F1.2"]
    assert (out.value, out.upper) == (0.8, pytest.approx(1.2))
    # a seed at or below the first grid rate starts there, never at the lower bound (it is never tested)
    dut.trials.clear()
    out = run_fast_search(dut, lower=0, upper=0.85, error=0.5, seed=0.28)
    assert dut.trials == ["F0.5"]
    assert (out.value, out.upper, out.at_upper_limit) == (0.5, 0.85, True)


@pytest.mark.parametrize("case", range(300))
def test_the_result_keeps_its_meaning_on_any_range_error_seed_and_tester(case: int) -> None:
    """Random ranges (also narrower than whole numbers), errors, seeds (inside, at, near and outside the bounds),
    short / full / tester-limited verdicts that disagree: the reported rate is inside the range, its last full trial
    passed, the upper bound's failed (or is the range's upper bound or the tester's ceiling), and the trial count
    stays within three bisections of the range plus the walks' single steps."""
    rng = random.Random(case)
    lower = rng.choice([0.0, 10.0, 93.53])
    width = rng.choice([0.47, 0.85, 2.5, 40.0, 1000.0, 10_000.0])
    upper = lower + width
    error = width / rng.choice([1.2, 2.0, 7.0, 50.0, 200.0])
    seed = rng.choice([None, lower, upper, lower - 5, upper + 5, lower + width * rng.random(), lower + 0.01])
    narrow_full = rng.random() < 0.3
    short_ceiling = lower + width * rng.random()
    full_ceiling = lower + width * rng.random()
    verdicts: list[tuple[float, bool, Verdict]] = []

    def trial(step: FastStep) -> TrialVerdict:
        assert lower < step.rate < upper, f"probed {step.rate} outside ({lower}, {upper})"
        if rng.random() < 0.1:  # the tester loses its pace now and then, more often in short trials
            return TrialVerdict(Verdict.INVALID, "tester fell behind", tester_limited=True)
        ceiling = full_ceiling if step.full else short_ceiling
        v = Verdict.PASS if step.rate <= ceiling * (1 + 0.01 * rng.uniform(-1, 1)) else Verdict.FAIL
        verdicts.append((step.rate, step.full, v))
        # what a failed trial says it forwarded, delivered and burst: anything, misleading or not
        hint = lower + width * rng.uniform(-0.2, 1.2) if rng.random() < 0.7 else None
        return TrialVerdict(v, forwarded=hint, delivered=rng.choice([None, hint]), burst=rng.choice([None, error * 2]))

    out = run_fast_search(trial, lower=lower, upper=upper, error=error, seed=seed, narrow_full=narrow_full)
    full = [(r, v) for r, f, v in verdicts if f]
    assert lower <= out.value <= out.upper <= upper
    assert_one_cell(out, lower, upper, error)
    assert all(on_grid(r, lower, error) for r, _, _ in verdicts)
    if out.value > lower:
        assert [v for r, v in full if r == out.value][-1] is Verdict.PASS
    if out.upper < upper and out.upper != out.tester_ceiling:
        assert [v for r, v in full if r == out.upper][-1] is Verdict.FAIL
    if out.tester_ceiling is not None:
        assert out.tester_ceiling > out.value
    bisection = math.ceil(math.log2(width / error)) + 1
    assert out.steps <= 3 * bisection + 2 * 3 + 2 + JUMPS, f"{out.steps} trials"


def test_a_search_in_which_no_full_trial_passed_says_so() -> None:
    # short trials pass up to 63, full ones nothing: confirmation at 62 fails, the walk goes down to the lower bound
    dut = Dut(short=63, full=-1)
    out = run_fast_search(dut, lower=0, upper=100, error=10)
    assert (out.value, out.passed) == (0, False)
    assert run_fast_search(Dut(short=63, full=63), lower=0, upper=100, error=10).passed


# --- the short-fail rule -------------------------------------------------------------------------------------------


def _rule(acceptance: float = 0.0, *, full: float = 10.0, short: float = 1.0, **kw: Any) -> ShortFailRule:
    """Trials of 10 s and 1 s costing their duration plus 1.5 s: a probe pays while it proves in over a fifth."""
    return ShortFailRule(acceptance, full, short, full_cost=full + 1.5, short_cost=short + 1.5, **kw)


class Overload:
    """A DUT that forwards up to ``ceiling`` frames/s and drops the excess (less ``buffer`` frames a trial's queue
    absorbs): a trial of T seconds at rate r loses ``max(0, (r - ceiling) T - buffer)`` frames per direction. Records
    (kind, rate) of every trial: F full, s short, p probe."""

    def __init__(self, ceiling: float, acceptance: float = 0.0, buffer: float = 0.0) -> None:
        self.ceiling, self.acceptance, self.buffer = ceiling, acceptance, buffer
        self.trials: list[str] = []

    def lost(self, rate: float, seconds: float) -> int:
        return max(0, math.floor((rate - self.ceiling) * seconds - self.buffer))

    def __call__(self, step: FastStep) -> TrialVerdict:
        self.trials.append(f"{'F' if step.full else 'p' if step.probe else 's'}{step.rate:g}")
        seconds = 10.0 if step.full else 1.0
        lost = self.lost(step.rate, seconds)
        ok = lost <= self.acceptance * step.rate * seconds
        return TrialVerdict(Verdict.PASS if ok else Verdict.FAIL, lost=lost)


def test_a_short_failure_proves_an_upper_bound_only_beyond_the_full_trials_allowance() -> None:
    # acceptance 0.1 %, full trials of 10 s: at 1,000 fps a full trial may lose 10 frames per direction
    rule = _rule(0.001)
    assert not rule.proves(1000, 10) and rule.proves(1000, 11)
    assert _rule(0.0).proves(1000, 1) and not _rule(0.0).proves(1000, 0)  # acceptance 0: any lost frame
    # [0, 2000], error 100, ceiling 1,000. Narrowing with 1 s trials: 1000 p, 1500 f (loses 500 > 15: proof),
    # 1200 f (200 > 12: proof), 1100 f (100 > 11: proof) -> [1000, 1100]; full 1000 passes; 1100 needs no full
    # trial (its short trial lost 100 frames, more than the 11 a full one may, and not small: half the 100 frames
    # offered above 1,000 is 50).
    dut = Overload(1000, acceptance=0.001)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, rule=rule)
    assert dut.trials == ["s1000", "s1500", "s1200", "s1100", "F1000"]
    assert (out.value, out.upper, out.short_bound, out.full_steps) == (1000, 1100, True, 1)


def test_a_short_failure_within_the_allowance_leaves_the_bound_to_a_full_trial() -> None:
    # ceiling 1,095: short 1100 loses 5 frames: it fails its own 0.1 % (1.1 frames) but a full trial may lose 11:
    # no proof, so the confirmation runs a full trial at 1100 (it fails: 50 frames)
    dut = Overload(1095, acceptance=0.001)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, rule=_rule(0.001))
    assert dut.trials[-2:] == ["F1000", "F1100"]
    assert (out.value, out.upper, out.short_bound) == (1000, 1100, False)


def test_an_invalid_short_trial_proves_nothing() -> None:
    # seeded at 1,000.5: probe at 1000 passes, full 1000 passes; the probe at 1100 is INVALID although it reports
    # lost frames: it is not retried and proves nothing, the full trial at 1100 decides
    def trial(step: FastStep) -> TrialVerdict:
        if step.probe and step.rate == 1100:
            return TrialVerdict(Verdict.INVALID, "tester fell behind", tester_limited=True, lost=5000)
        return dut(step)

    dut = Overload(1050)
    out = run_fast_search(trial, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule())
    assert dut.trials == ["p1000", "F1000", "F1100"]
    assert (out.value, out.upper, out.short_bound, out.invalid, out.probes) == (1000, 1100, False, 1, 2)
    # a tester-limited failure (counted as failed after its retries) proves nothing either
    rule = _rule()
    run_dut = Overload(1050)

    def limited(step: FastStep) -> TrialVerdict:
        if not step.full and step.rate >= 1500:
            return TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True, lost=9999)
        return run_dut(step)

    out = run_fast_search(limited, lower=0, upper=2000, error=100, rule=rule)
    assert out.tester_ceiling == 1500 and out.upper < 1500


def test_a_probe_that_proves_replaces_the_full_trial_in_a_seeded_walk() -> None:
    # ceiling 1,040, seed 1,000.5: probe 1000 passes (wasted), full 1000 passes; probe 1100 loses 60 frames (1 s):
    # proof, and not small (half the 100 frames offered above 1,000 is 50): the repetition ends with one full trial
    dut = Overload(1040)
    steps: list[tuple[bool, bool, int, float, float]] = []

    def trial(step: FastStep) -> TrialVerdict:
        steps.append((step.full, step.probe, step.attempt, step.lower, step.upper))
        return dut(step)

    out = run_fast_search(trial, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule())
    assert dut.trials == ["p1000", "F1000", "p1100"]
    # a probe is a short trial's first attempt within the walk's bounds, as its full trial; it counts as short
    assert steps == [(False, True, 0, 0, 2000), (True, False, 0, 0, 2000), (False, True, 0, 1000, 2000)]
    assert out.short_steps == 2
    assert (out.value, out.upper, out.probes, out.probe_proofs, out.full_steps, out.short_bound) == (
        1000,
        1100,
        2,
        1,
        1,
        True,
    )


def test_the_guard_runs_a_full_trial_when_the_proving_loss_was_small() -> None:
    # ceiling 1,080: probe 1100 loses 20 frames (< 50, small): the guard runs a full trial at 1100; it fails (200
    # frames in 10 s), so the bound stands on a full trial
    dut = Overload(1080)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule())
    assert dut.trials == ["p1000", "F1000", "p1100", "F1100"]
    assert (out.value, out.upper, out.guard_trials, out.short_bound, out.disproved) == (1000, 1100, 1, False, ())


def test_a_guard_full_trial_that_passes_disproves_the_short_bound_and_the_walk_goes_on() -> None:
    # a one-off loss: the first short trial at 1100 loses 3 frames (small), the DUT forwards 1,150 in full trials:
    # guard full 1100 passes (1100 disproved), the walk goes up: probe 1200 loses 50 (not small against the 100
    # offered above 1,100? 50 < 50 is false: not small): [1100, 1200]
    dut = Overload(1150)
    hiccup = {"left": 1}

    def trial(step: FastStep) -> TrialVerdict:
        if step.rate == 1100 and not step.full and hiccup["left"]:
            hiccup["left"] -= 1
            dut.trials.append("p1100!")
            return TrialVerdict(Verdict.FAIL, lost=3)
        return dut(step)

    out = run_fast_search(trial, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule())
    assert dut.trials == ["p1000", "F1000", "p1100!", "F1100", "p1200"]
    assert (out.value, out.upper, out.disproved, out.guard_trials, out.short_bound) == (1100, 1200, (1100,), 1, True)


def test_short_trials_that_pass_above_the_full_ceiling_prove_nothing_and_probes_stop() -> None:
    # a DUT with a queue of 500 frames: a 1 s trial passes up to ceiling + 500, a 10 s one up to ceiling + 50. No
    # probe one error (100) above the full ceiling can prove anything; after the probes that passed, the rule of
    # succession ends them: (0 + 1) / (n + 2) x 11.5 s < 2.5 s from n = 3 on
    rule = _rule()
    assert rule.worth_probing(2, 0) and not rule.worth_probing(3, 0)
    dut = Overload(1000, buffer=500)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1000.5, rule=rule)
    assert dut.trials == ["p1000", "F1000", "p1100", "F1100"]
    assert (out.value, out.upper, out.probes, out.probe_proofs) == (1000, 1100, 2, 0)
    dut.trials.clear()
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule(probes=2))
    assert dut.trials == ["p1000", "F1000", "F1100"]  # the third probe ever, then none
    dut.trials.clear()
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule(probes=3))
    assert dut.trials == ["F1000", "F1100"]


def test_no_probe_above_a_rate_a_short_trial_already_passed() -> None:
    # unseeded: the narrowing's short trials pass up to 1,500 (buffer), full trials only to 1,000. Full 1500 (the
    # narrowed rate) fails; the walk down probes nothing at or below 1,500 (short trials passed there already)
    dut = Overload(1000, buffer=500)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, rule=_rule())
    assert not any(t.startswith("p") for t in dut.trials)
    assert (out.value, out.upper - out.value <= 100, out.passed) == (out.value, True, True)


@pytest.mark.parametrize("case", range(400))
def test_with_the_rule_a_reported_rate_passed_a_full_trial_and_its_bound_is_a_full_fail_or_a_proof(case: int) -> None:
    """Random DUTs (ceilings, queues, acceptance, loss in one direction only, one-off losses, invalid and tester-limited
    trials, a changed DUT between short and full trials), seeded or not: the reported rate's last full trial passed;
    the upper bound is the range's, the tester's ceiling, a rate whose last full trial failed, or a rate a valid
    short trial proved (it lost more than a full trial's allowance there, and not a small loss)."""
    rng = random.Random(case)
    lower = rng.choice([0.0, 50.0])
    upper = lower + rng.choice([1000.0, 5000.0, 20_000.0])
    error = (upper - lower) / rng.choice([8.0, 20.0, 64.0, 300.0])
    acceptance = rng.choice([0.0, 0.0, 1e-4, 0.01])
    full_s, short_s = rng.choice([(10.0, 1.0), (60.0, 1.0), (2.0, 0.25)])
    rule = ShortFailRule(acceptance, full_s, short_s, full_s + 1, short_s + 1, rng.randrange(5), rng.randrange(3))
    ceiling = lower + (upper - lower) * rng.random()
    buffer = rng.choice([0.0, 0.0, error * short_s * rng.uniform(0, 3)])
    jitter = rng.choice([0.0, 0.005, 0.05])
    full_log: list[tuple[float, Verdict]] = []
    short_log: list[tuple[float, int]] = []

    def trial(step: FastStep) -> TrialVerdict:
        assert lower < step.rate < upper
        if rng.random() < 0.05:
            return TrialVerdict(Verdict.INVALID, "tester fell behind", tester_limited=True, lost=rng.randrange(10**6))
        seconds = full_s if step.full else short_s
        c = ceiling * (1 + jitter * rng.uniform(-1, 1))
        lost = max(0, math.floor((step.rate - c) * seconds - buffer))
        if rng.random() < 0.05:
            lost += rng.randrange(1, 50)  # a one-off loss
        v = Verdict.PASS if lost <= acceptance * step.rate * seconds else Verdict.FAIL
        if step.full:
            full_log.append((step.rate, v))
        else:
            short_log.append((step.rate, lost))
        # the forwarding a sampling tester would report (or none, or a misleading one)
        valid = step.rate * seconds - lost
        forwarded = valid / full_s + min(step.rate, c) * (1 - seconds / full_s)
        forwarded = rng.choice([forwarded, forwarded, None, lower + (upper - lower) * rng.random()])
        delivered = None if step.full else valid / seconds
        burst = None if step.full else max(valid / seconds - min(step.rate, c), 0.0)
        return TrialVerdict(v, lost=lost, forwarded=forwarded, delivered=delivered, burst=burst)

    seed = rng.choice([None, None, lower + (upper - lower) * rng.random(), ceiling])
    out = run_fast_search(trial, lower=lower, upper=upper, error=error, seed=seed, rule=rule)
    assert lower <= out.value <= out.upper <= upper
    assert_one_cell(out, lower, upper, error)
    if out.passed:
        assert [v for r, v in full_log if r == out.value][-1] is Verdict.PASS
    else:
        assert out.value == lower
    if out.upper < upper and out.upper != out.tester_ceiling:
        fulls = [v for r, v in full_log if r == out.upper]
        if out.short_bound:
            proof = [lost for r, lost in short_log if r == out.upper and rule.proves(r, lost)]
            assert proof, "a short bound without a proving short trial"
            assert not (out.passed and rule.small(proof[-1], out.upper, out.value)), "the guard was skipped"
            assert not fulls or fulls[-1] is Verdict.FAIL
        else:
            assert fulls[-1] is Verdict.FAIL


# --- where to look next: the forwarding rate of a failed trial -----------------------------------------------------


class Bucket:
    """A DUT with a capacity of ``ceiling`` frames/s behind a queue (or token bucket) of ``buffer`` frames, as the
    fast search's caller sees it: a trial of T seconds at r loses ``max(0, (r - ceiling) T - buffer)`` frames and
    tells, when it failed, what a full trial there would forward (``forwarded``: ``valid / full + ceiling (1 - T /
    full)``, a tester's second-half rate being the capacity), what it delivered per second and its burst above the
    capacity (short trials). ``hints=False``: a tester that tells none of it. Records F full, s short, p probe."""

    def __init__(self, ceiling: float, buffer: float, *, full: float = 10.0, short: float = 1.0, hints: bool = True):
        self.ceiling, self.buffer, self.full, self.short, self.hints = ceiling, buffer, full, short, hints
        self.trials: list[str] = []

    def __call__(self, step: FastStep) -> TrialVerdict:
        self.trials.append(f"{'F' if step.full else 'p' if step.probe else 's'}{step.rate:g}")
        seconds = self.full if step.full else self.short
        lost = max(0, math.floor((step.rate - self.ceiling) * seconds - self.buffer))
        if not lost:
            return TrialVerdict(Verdict.PASS, lost=0)
        if not self.hints:
            return TrialVerdict(Verdict.FAIL, lost=lost)
        valid = step.rate * seconds - lost
        forwarded = valid / self.full + self.ceiling * (1 - seconds / self.full)
        short = None if step.full else (valid / seconds, valid / seconds - self.ceiling)
        return TrialVerdict(
            Verdict.FAIL, lost=lost, forwarded=forwarded, delivered=short and short[0], burst=short and short[1]
        )


def test_a_short_failure_with_a_burst_beyond_one_error_sends_the_search_to_its_forwarding_rate() -> None:
    # capacity 1,000 behind 300 frames: 1 s trials pass up to 1,300, 10 s ones up to 1,030. [0, 2000], error 100.
    # s1000 passes; s1500 loses 200 (a proof), delivered 1,300/s, 300 above the capacity: short trials cannot find
    # the full ceiling within an error. It forwarded 130 + 900 = 1,030 over a full trial: walk from 1000 in full
    # trials, no probe below 1,300 (a short trial there would pass): F1000 passes, F1100 fails.
    dut = Bucket(1000, 300)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, rule=_rule())
    assert dut.trials == ["s1000", "s1500", "F1000", "F1100"]
    assert (out.value, out.upper, out.jumps, out.probes, out.short_delivered) == (1000, 1100, 1, 0, 1300)
    # the same DUT through a tester that tells no forwarding: the short trials narrow to 1,300 - 1,400, and the
    # full trials walk down from there
    blind = Bucket(1000, 300, hints=False)
    out = run_fast_search(blind, lower=0, upper=2000, error=100, rule=_rule())
    assert blind.trials[:5] == ["s1000", "s1500", "s1200", "s1300", "s1400"]
    assert (out.value, out.upper, out.jumps) == (1000, 1100, 0) and len(blind.trials) > 2 * len(dut.trials)


def test_a_burst_within_one_error_leaves_the_narrowing_to_the_short_trials() -> None:
    # 50 frames behind a capacity of 1,000: short trials are optimistic by 50/s, less than the error: they narrow
    # as they would without any hint, and the confirmation follows
    dut, blind = Bucket(1000, 50), Bucket(1000, 50, hints=False)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, rule=_rule())
    ref = run_fast_search(blind, lower=0, upper=2000, error=100, rule=_rule())
    assert dut.trials == blind.trials and (out.value, out.upper, out.jumps) == (ref.value, ref.upper, 0)


def test_a_full_narrowing_follows_the_forwarded_rate_down_to_a_buckets_ceiling() -> None:
    # cps-like: a phase 1 of N = 10,000 frames at r lasts N / r; 8,000 new connections/s behind a bucket of 1,000
    # pass all N up to 8,000 N / (N - 1,000) = 8,889. A failed one at r forwarded 8,000 + 1,000 r / N per second:
    # F12800 fails (9,280: jump to 9200); F9200 fails (8,920: jump to 8900); F8900 fails (8,890, within an error
    # of 8900: the next step, 8800, is the walk's own); F8800 passes.
    n, cap, bucket = 10_000, 8_000.0, 1_000.0
    trials: list[str] = []

    def phase1(step: FastStep) -> TrialVerdict:
        trials.append(f"F{step.rate:g}")
        seconds = n / step.rate
        valid = min(n, cap * seconds + bucket)
        verdict = Verdict.PASS if valid >= n else Verdict.FAIL
        return TrialVerdict(verdict, lost=int(n - valid), forwarded=valid / seconds if valid < n else None)

    out = run_fast_search(phase1, lower=0, upper=25_600, error=100, narrow_full=True)
    assert trials == ["F12800", "F9200", "F8900", "F8800"]
    assert (out.value, out.upper, out.jumps, out.full_steps) == (8800, 8900, 2, 4)


def test_jumps_are_few_on_a_dut_whose_loss_is_no_matter_of_capacity() -> None:
    # every failed trial says it forwarded 95 % of its rate (a DUT dropping a share of everything above 3,000):
    # after three jumps the search walks and bisects as it would have, to the same result
    trials: list[float] = []

    def lossy(step: FastStep) -> TrialVerdict:
        trials.append(step.rate)
        if step.rate <= 3000:
            return TrialVerdict(Verdict.PASS)
        return TrialVerdict(Verdict.FAIL, lost=int(step.rate), forwarded=0.95 * step.rate)

    out = run_fast_search(lossy, lower=0, upper=25_600, error=100, narrow_full=True)
    plain = run_fast_search(Dut(short=3000, full=3000), lower=0, upper=25_600, error=100, narrow_full=True)
    assert (out.value, out.upper, out.jumps) == (plain.value, plain.upper, 3) == (3000, 3100, 3)
    # the cost of being misled: the three jumps and the walk down from the last (its steps double)
    assert out.steps <= 2 * plain.steps, trials


def test_a_seeded_search_does_not_jump() -> None:
    # the seed is closer than one trial's forwarding: the walk is the one a tester without hints gets
    dut, blind = Bucket(1000, 300), Bucket(1000, 300, hints=False)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1450, rule=_rule())
    ref = run_fast_search(blind, lower=0, upper=2000, error=100, seed=1450, rule=_rule())
    assert [t for t in dut.trials if not t.startswith("p")] == [t for t in blind.trials if not t.startswith("p")]
    assert (out.value, out.upper, out.jumps) == (ref.value, ref.upper, 0) == (1000, 1100, 0)


def test_no_probe_at_or_below_what_a_failed_short_trial_delivered() -> None:
    # an earlier repetition's short trial delivered 1,300/s: the walk from the seed 1000 probes neither 1000 nor
    # 1100 (short trials there would pass), and without that knowledge it probes both
    dut = Bucket(1000, 300)
    run_fast_search(dut, lower=0, upper=2000, error=100, seed=1050, rule=_rule(delivered=1300))
    assert dut.trials == ["F1000", "F1100"]
    dut = Bucket(1000, 300)
    run_fast_search(dut, lower=0, upper=2000, error=100, seed=1050, rule=_rule())
    assert dut.trials == ["p1000", "F1000", "p1100", "F1100"]


def test_the_lowest_proof_at_or_above_a_rate_is_the_proof_at_that_rate_itself_when_there_is_one() -> None:
    # short trials proved 300 and 600 upper bounds on the grid [0, 1000] of error 100
    grid = RateGrid(0, 1000, 100)
    book = Ledger(grid, proofs={300.0: 5, 600.0: 1})
    assert book.lowest_proof(3) == 3  # the proof at 300 itself
    assert (book.lowest_proof(2), book.lowest_proof(4), book.lowest_proof(6)) == (3, 6, 6)
    assert book.lowest_proof(7) == grid.top == 10  # none at or above 700: the search's upper bound


# --- what earlier repetitions at the point tell a fast search (natbench.search.fast.history) -------------------------
def _earlier(repetition: int, value: float | None, error: float | None = None, **extra: Any) -> RepetitionResult:
    return RepetitionResult("p", "throughput", repetition, value, "fps", error=error, extra=extra)


def test_the_seed_is_the_middle_of_the_latest_repetitions_interval_above_the_lower_bound() -> None:
    # the latest by repetition number, wherever it is in the list, not the highest value
    earlier = [_earlier(1, 5000.0, 100.0), _earlier(0, 9000.0, 100.0)]
    assert prior_seed(earlier, 0.0) == 5050.0
    assert prior_seed([_earlier(0, 5000.0)], 0.0) == 5000.0  # no error stored: the value itself
    # a value at the lower bound (no rate passed) or none is no seed; just above it is one
    assert prior_seed([_earlier(0, 1000.0, 100.0)], 1000.0) is None
    assert prior_seed([_earlier(0, None)], 0.0) is None and prior_seed([], 0.0) is None
    assert prior_seed([_earlier(1, 1000.0, 100.0), _earlier(0, 1000.5, 100.0)], 1000.0) == 1050.5


def test_probes_and_proofs_of_earlier_repetitions_add_up_and_a_missing_count_is_none() -> None:
    earlier = [_earlier(0, 1.0, probes=3, probe_proofs=1), _earlier(1, 1.0, probes=2, probe_proofs=None)]
    earlier.append(_earlier(2, 1.0))  # stored before results counted probes
    assert probe_history(earlier) == (5, 1)
    assert probe_history([]) == (0, 0)


def test_the_most_a_failed_short_trial_of_earlier_repetitions_delivered_is_the_largest_stored() -> None:
    earlier = [_earlier(0, 1.0, short_delivered=1200.0), _earlier(1, 1.0, short_delivered=None), _earlier(2, 1.0)]
    assert short_delivered([*earlier, _earlier(3, 1.0, short_delivered=900.0)]) == 1200.0
    assert short_delivered([_earlier(0, 1.0, short_delivered=0.0)]) == 0.0  # a delivery of 0 is one
    assert short_delivered(earlier[1:]) is None and short_delivered([]) is None


# --- the outcome of a search from its ledger (natbench.search.fast.outcome) -------------------------------------------
def test_an_outcome_reports_the_cell_it_ended_in_and_every_count_of_the_ledger() -> None:
    grid = RateGrid(0, 1000, 100)
    book = Ledger(grid, proofs={400.0: 3}, rejected=[700.0], disproved=[500.0], delivered=350.0)
    book.short, book.full, book.invalid, book.stopped = 6, 4, 2, 1
    book.probes, book.probe_proofs, book.guards, book.jumps = 3, 1, 2, 1
    out = FastOutcome.of(book, 3, 4, seeded=True)
    assert out == FastOutcome(
        value=300.0, lower=300.0, upper=400.0, steps=10, invalid=2, at_upper_limit=False, stopped_early=False,
        tester_ceiling=None, passed=True, short_steps=6, full_steps=4, seeded=True, rejected=(700.0,), probes=3,
        probe_proofs=1, short_bound=True, guard_trials=2, disproved=(500.0,), stopped=1, jumps=1, short_delivered=350.0,
    )  # fmt: skip
    # a full trial's bound (no proof at 400): no short bound; an unseeded search
    unproven = FastOutcome.of(Ledger(grid), 3, 4, seeded=False)
    assert (unproven.short_bound, unproven.seeded, unproven.passed) == (False, False, True)


def test_an_outcome_at_the_search_bounds_passed_nothing_or_reached_the_upper_limit() -> None:
    grid = RateGrid(0, 1000, 100)
    bottom = FastOutcome.of(Ledger(grid), 0, 1, seeded=False)  # the lower bound is never tested: nothing passed
    assert (bottom.value, bottom.upper, bottom.passed, bottom.at_upper_limit) == (0.0, 100.0, False, False)
    top = FastOutcome.of(Ledger(grid), 9, 10, seeded=False)  # the upper bound is never tested: no rate failed
    assert (top.value, top.upper, top.passed, top.at_upper_limit) == (900.0, 1000.0, True, True)


def test_the_testers_ceiling_below_the_cells_end_is_the_upper_bound_and_no_short_bound() -> None:
    grid = RateGrid(0, 1000, 100)
    # the tester could not send 350 (nor 250, below the value 300, which is no ceiling above it); 400 and 350 were
    # also proved by short trials: the bound is the tester's ceiling, not a short trial's
    book = Ledger(grid, proofs={400.0: 3, 350.0: 1}, tester_limited=[250.0, 350.0])
    out = FastOutcome.of(book, 3, 4, seeded=False)
    assert (out.value, out.upper, out.tester_ceiling, out.short_bound) == (300, 350, 350, False)
    assert not out.at_upper_limit
    # a ceiling above the cell's end leaves the bound where it is (and the bound a short trial's)
    high = FastOutcome.of(Ledger(grid, proofs={400.0: 3}, tester_limited=[450.0]), 3, 4, seeded=False)
    assert (high.upper, high.tester_ceiling, high.short_bound) == (400, 450, True)


# --- what run_fast_search refuses, and which seed it walks from -------------------------------------------------------
@pytest.mark.parametrize(
    ("lower", "upper", "error", "message"),
    [
        (float("nan"), 100, 10, "search bounds must be finite, non-negative and ordered, got [nan, 100]"),
        (0, float("inf"), 10, "search bounds must be finite, non-negative and ordered, got [0, inf]"),
        (-1, 100, 10, "search bounds must be finite, non-negative and ordered, got [-1, 100]"),
        (100, 100, 10, "search bounds must be finite, non-negative and ordered, got [100, 100]"),
        (0, 100, 0, "search error must be positive, got 0"),
        (0, 100, -10, "search error must be positive, got -10"),
    ],
)
def test_a_bad_range_or_error_is_named_with_its_values(lower: float, upper: float, error: float, message: str) -> None:
    dut = Dut(short=50, full=50)
    with pytest.raises(SearchError) as info:
        run_fast_search(dut, lower=lower, upper=upper, error=error)
    assert str(info.value) == message and dut.trials == []


def test_a_range_from_zero_and_just_over_one_error_wide_is_searched() -> None:
    dut = Dut(short=50, full=50)  # the grid 0, 10, 10.5: one trial at 10 (a short one, then its confirmation)
    out = run_fast_search(dut, lower=0, upper=10.5, error=10)
    assert (out.value, out.upper, out.passed) == (10, 10.5, True)


@pytest.mark.parametrize("seed", [0.0, 100.0, -5.0, 105.0])
def test_a_seed_at_or_beyond_the_bounds_is_no_seed_the_search_narrows(seed: float) -> None:
    dut = Dut(short=55, full=55)  # [0, 100], error 10: short trials narrow from the middle
    out = run_fast_search(dut, lower=0, upper=100, error=10, seed=seed)
    assert dut.trials[0] == "s50" and not out.seeded


def test_a_seed_just_inside_the_bounds_starts_a_walk_strictly_inside_them() -> None:
    dut = Dut(short=1000, full=1000)  # everything passes
    out = run_fast_search(dut, lower=0, upper=100, error=10, seed=0.01)
    assert dut.trials[0] == "F10" and out.seeded  # the grid rate below 0.01 is the lower bound: the first inside
    dut.trials.clear()
    out = run_fast_search(dut, lower=0, upper=100, error=10, seed=100 - 1e-10)  # a quotient within 1e-9 of 10
    assert dut.trials == ["F90"] and out.seeded and (out.value, out.upper) == (90, 100)


def test_every_trial_carries_the_bounds_of_the_search_before_it() -> None:
    # [0, 100], error 10, short and full ceiling 55: s50 passes, s70 and s60 fail; the full confirmations at 50
    # (passes) and 60 (fails) are asked within the narrowed [50, 60]
    steps: list[tuple[str, float, float, float]] = []
    dut = Dut(short=55, full=55)

    def trial(step: FastStep) -> TrialVerdict:
        steps.append(("F" if step.full else "s", step.rate, step.lower, step.upper))
        return dut(step)

    out = run_fast_search(trial, lower=0, upper=100, error=10)
    assert steps == [
        ("s", 50, 0, 100), ("s", 70, 50, 100), ("s", 60, 50, 70), ("F", 50, 50, 60), ("F", 60, 50, 60)
    ]  # fmt: skip
    assert (out.value, out.upper) == (50, 60)


def test_every_failed_full_trial_the_tester_stopped_is_counted_and_nothing_else() -> None:
    # full trials only, [0, 1000], error 100, ceiling 250: 500 fails, 200 passes, 300 fails; the tester says every
    # trial stopped, but only a failed one is a stopped failure; short trials of another search are never counted
    def trial(step: FastStep) -> TrialVerdict:
        if step.rate <= 250:
            return TrialVerdict(Verdict.PASS, stopped=True)
        return TrialVerdict(Verdict.FAIL, lost=1, stopped=True)

    out = run_fast_search(trial, lower=0, upper=1000, error=100, narrow_full=True)
    assert (out.value, out.upper, out.full_steps, out.stopped) == (200, 300, 3, 2)
    shorts = run_fast_search(trial, lower=0, upper=1000, error=100)  # s500 f, s200 p, s300 f, F200 p, F300 f
    assert (shorts.short_steps, shorts.full_steps, shorts.stopped) == (3, 2, 1)


def test_a_rate_is_the_testers_ceiling_only_when_every_invalid_try_there_was_the_testers() -> None:
    # at 50 the first try is invalid for another reason, then the tester cannot keep the rate: not every try was
    # the tester's, so 50 is no ceiling of it; the fourth invalid try in a row (max_invalid 3) ends the search
    tries: list[int] = []

    def trial(step: FastStep) -> TrialVerdict:
        tries.append(step.attempt)
        if step.attempt == 0:
            return TrialVerdict(Verdict.INVALID, "counts inconsistent")
        return TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True)

    with pytest.raises(SearchError) as info:
        run_fast_search(trial, lower=0, upper=100, error=10)
    assert (
        str(info.value) == "4 invalid trials in a row at rate 50 (max_invalid=3); last: tester could not keep the rate"
    )
    assert tries == [0, 1, 2, 3]


def test_too_many_invalid_trials_without_a_reason_are_named_without_one() -> None:
    with pytest.raises(SearchError) as info:
        run_fast_search(lambda _s: TrialVerdict(Verdict.INVALID), lower=0, upper=100, error=10, max_invalid=1)
    assert str(info.value) == "2 invalid trials in a row at rate 50 (max_invalid=1)"


def test_an_invalid_probe_is_counted_not_retried_and_the_full_trial_decides() -> None:
    # seeded walk with the rule, full ceiling 1,040: every probe is invalid (not retried, no short trial counted);
    # the full trials decide: 1000 passes, 1100 fails
    full = Overload(1040)

    def trial(step: FastStep) -> TrialVerdict:
        if step.probe:
            return TrialVerdict(Verdict.INVALID, "counts inconsistent")
        return full(step)

    out = run_fast_search(trial, lower=0, upper=2000, error=100, seed=1000.5, rule=_rule())
    assert full.trials == ["F1000", "F1100"]
    assert (out.value, out.upper, out.probes, out.invalid, out.short_steps, out.full_steps) == (1000, 1100, 2, 2, 0, 2)


def test_each_probe_that_proves_is_counted() -> None:
    # ceiling 1,040, seed 1,300.5 (above it): the walk down probes 1300, 1200 and 1100, each losing frames in its
    # 1 s (acceptance 0: a proof, no full trial); the probe at 1000 loses none, and its full trial passes
    dut = Overload(1040)
    out = run_fast_search(dut, lower=0, upper=2000, error=100, seed=1300.5, rule=_rule())
    assert dut.trials == ["p1300", "p1200", "p1100", "p1000", "F1000"]
    assert (out.value, out.upper, out.probes, out.probe_proofs, out.short_steps, out.full_steps) == (
        1000,
        1100,
        4,
        3,
        4,
        1,
    )


def test_a_probe_is_booked_in_the_ledger_at_its_rate() -> None:
    # a failed probe at 1,100 that lost 60 frames (a proof), forwarded 1,040 and delivered 1,050 with a burst of 10
    book, rule = Ledger(RateGrid(0, 2000, 100)), _rule()
    failed = TrialVerdict(Verdict.FAIL, lost=60, forwarded=1040.0, delivered=1050.0, burst=10.0)
    trials = Trials(lambda _s: failed, book, RetryRule(3, 2), rule, ProbePolicy(rule, book))
    assert trials.probe(1100.0, 1000.0, 2000.0) is True
    assert (book.proofs, book.forwarded, book.bursts, book.delivered) == (
        {1100.0: 60},
        {1100.0: 1040.0},
        {1100.0: 10.0},
        1050.0,
    )
    assert (book.probes, book.probe_proofs, book.short) == (1, 1, 1)
    # a passing probe at 1,200 forgets what an earlier failure there forwarded, and is a short pass
    book.forwarded[1200.0] = 900.0
    passing = Trials(
        lambda _s: TrialVerdict(Verdict.PASS, lost=0), book, RetryRule(3, 2), rule, ProbePolicy(rule, book)
    )
    assert passing.probe(1200.0, 1000.0, 2000.0) is False
    assert book.forwarded == {1100.0: 1040.0} and book.short_passes == [1200.0]


# --- what a counted trial tells the ledger: only a failure for the DUT's sake is remembered --------------------------
def test_a_passing_short_trial_leaves_no_forwarding_burst_or_delivery_in_the_ledger() -> None:
    # a short trial that passed at 1,100 and still reports a burst and a delivery: a pass says nothing of the ceiling
    book = Ledger(RateGrid(0, 2000, 100), delivered=900.0)
    book.note(1100.0, TrialVerdict(Verdict.PASS, lost=0, forwarded=1100.0, delivered=1100.0, burst=20.0))
    assert (book.forwarded, book.bursts, book.delivered) == ({}, {}, 900.0)


def test_a_failure_for_the_testers_sake_leaves_no_forwarding_or_delivery_in_the_ledger() -> None:
    limited = TrialVerdict(Verdict.FAIL, tester_limited=True, lost=50, forwarded=800.0, delivered=850.0, burst=5.0)
    book = Ledger(RateGrid(0, 2000, 100))
    book.note(1100.0, limited)
    assert (book.forwarded, book.bursts, book.delivered) == ({}, {}, None)


def test_a_failed_short_trial_that_delivered_nothing_books_a_delivery_of_zero() -> None:
    # a DUT that forwarded no frame at all in a short trial: the most delivered is 0, not some floor above it
    book = Ledger(RateGrid(0, 2000, 100))
    book.note(100.0, TrialVerdict(Verdict.FAIL, lost=100, delivered=0.0))
    assert book.delivered == 0.0
    book.note(200.0, TrialVerdict(Verdict.FAIL, lost=200, delivered=0.5))
    assert book.delivered == 0.5


# --- which short trials prove their rate an upper bound ---------------------------------------------------------------
@pytest.mark.parametrize(
    "tv",
    [
        TrialVerdict(Verdict.PASS, lost=500),  # it passed
        TrialVerdict(Verdict.INVALID, lost=500),  # it proved nothing (not for the tester's sake either)
        TrialVerdict(Verdict.FAIL, tester_limited=True, lost=500),  # it failed for the tester's sake
    ],
)
def test_only_a_short_trial_that_failed_for_the_duts_sake_proves_its_rate(tv: TrialVerdict) -> None:
    rule = _rule()  # acceptance 0: any lost frame is more than a full trial may lose
    assert rule.proved_by(1000.0, TrialVerdict(Verdict.FAIL, lost=500)) is True  # the other side
    assert rule.proved_by(1000.0, tv) is False


# --- when a probe is worth it: nothing delivered is known, so no rate is ruled out ------------------------------------
def test_a_probe_is_worth_it_at_a_rate_of_one_when_no_failed_short_trial_delivered_anything_known() -> None:
    rule = _rule()
    assert rule.delivered is None and rule.worth_probing(0, 0)
    book = Ledger(RateGrid(0, 10, 1))
    assert ProbePolicy(rule, book).worth(1.0) is True
    assert ProbePolicy(rule, book).worth(0.5) is True
    book.delivered = 1.0  # the other side: a failed short trial delivered 1/s, a short trial at 1/s would pass
    assert ProbePolicy(rule, book).worth(1.0) is False


# --- the guard: every full trial it runs is counted -------------------------------------------------------------------
def test_the_guard_counts_each_of_its_full_trials_when_it_runs_twice() -> None:
    # grid [0, 2000] of error 100: 1,000 passed a full trial, a short trial at 1,100 lost 3 frames (small)
    book, rule = Ledger(RateGrid(0, 2000, 100), proofs={1100.0: 3}), _rule()
    hold = GuardPolicy(rule, book).hold(10, 11, 20)
    assert next(hold) == Nominee(11, 10, 11, Ask.FULL)  # the guard's first full trial at 1,100: it passes
    nominee = hold.send(True)
    assert nominee == Nominee(12, 11, 20, Ask.VERDICT)  # the walk up from 1,100
    book.proofs[1200.0] = 3  # a probe at 1,200 lost 3 frames: small against the 100 offered above 1,100
    assert hold.send(False) == Nominee(12, 11, 12, Ask.FULL)  # the guard's second full trial: it fails
    with pytest.raises(StopIteration) as done:
        hold.send(False)
    assert done.value.value == (11, 12)
    assert (book.guards, book.disproved, book.proofs) == (2, [1100.0], {})


# --- the seed is value + error / 2, whatever the value ----------------------------------------------------------------
def test_a_seed_from_a_value_of_zero_above_a_negative_lower_bound_is_half_an_error() -> None:
    assert prior_seed([_earlier(0, 0.0, 100.0)], -100.0) == 50.0


# --- a rate at or above the tester's known ceiling is settled by the first trial the tester cannot keep -----------
def test_a_tester_limited_trial_at_the_known_ceiling_settles_the_rate_at_once() -> None:
    limited = TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True)
    book, steps = Ledger(RateGrid(0, 2000, 100)), []

    def trial(step: FastStep) -> TrialVerdict:
        steps.append(step)
        return limited

    trials = Trials(trial, book, RetryRule(3, 2, known_ceiling=1500.0), None, ProbePolicy(None, book))
    assert trials.run(1500.0, True, 1000.0, 2000.0) is False
    assert (len(steps), book.tester_limited, book.invalid) == (1, [1500.0], 1)
