"""The fast search's rules at their boundaries (natbench.search.fast, docs/engine.md "The fast search"): where a
failed trial's forwarding sends the search (a jump only when it forwarded more than one error below its rate), where
no probe runs (at or below the most a failed short trial delivered), when the guard runs (only above a rate that
passed a full trial), and that a rate a short trial proved an upper bound is never tested again.

Every test drives :func:`~natbench.search.fast.run_fast_search` with a scripted trial function and checks the trials
it asked for (``F`` full, ``s`` short, ``p`` probe, then the rate) and its outcome: the value on each side of every
comparison, each condition of a rule false alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from natbench.results import Verdict
from natbench.search.fast import FastOutcome, FastStep, ShortFailRule, TrialVerdict, run_fast_search
from natbench.search.fast.jump import JumpPolicy
from natbench.search.fast.ledger import Ledger
from natbench.search.grid import RateGrid

PASS, FAIL = Verdict.PASS, Verdict.FAIL


class Script:
    """A trial function answering from ``answer(step)`` and recording every trial it was asked for."""

    def __init__(self, answer: Callable[[FastStep], TrialVerdict]) -> None:
        self.answer = answer
        self.trials: list[str] = []

    def __call__(self, step: FastStep) -> TrialVerdict:
        self.trials.append(f"{'F' if step.full else 'p' if step.probe else 's'}{step.rate:g}")
        return self.answer(step)


def rule(**kw: float) -> ShortFailRule:
    """Acceptance 0, full trials of 10 s, short ones of 1 s, costing their duration plus 1.5 s: probes pay."""
    return ShortFailRule(0.0, 10.0, 1.0, full_cost=11.5, short_cost=2.5, **kw)  # type: ignore[arg-type]


# --- jumps: only when the failed trial forwarded more than one error below its rate -------------------------------


def full_narrowing(forwarded_at_500: float) -> tuple[Script, FastOutcome]:
    """A full-trial narrowing (cps) of [0, 1000], error 100: full trials pass up to 250; the failed trial at 500 says
    a full trial there forwards ``forwarded_at_500``, the other failures say nothing."""

    def answer(step: FastStep) -> TrialVerdict:
        if step.rate <= 250:
            return TrialVerdict(PASS)
        return TrialVerdict(FAIL, lost=1, forwarded=forwarded_at_500 if step.rate == 500 else None)

    script = Script(answer)
    return script, run_fast_search(script, lower=0, upper=1000, error=100, narrow_full=True)


def test_a_failed_trial_that_forwarded_exactly_one_error_below_its_rate_moves_nothing() -> None:
    # 500 forwarded 400 = 500 - error: a loss that small says nothing of a ceiling, the bisection goes on at 200
    script, out = full_narrowing(400.0)
    assert script.trials == ["F500", "F200", "F300"]
    assert (out.value, out.upper, out.jumps) == (200, 300, 0)


def test_a_failed_trial_that_forwarded_within_one_error_below_its_rate_moves_nothing() -> None:
    # 450: a few frames lost; the grid rate below it (400) would be a jump of one cell, which is not taken
    script, out = full_narrowing(450.0)
    assert script.trials == ["F500", "F200", "F300"]
    assert out.jumps == 0


def test_a_failed_trial_that_forwarded_just_over_one_error_below_its_rate_sends_the_search_there() -> None:
    # 399.9 < 500 - error: the grid rate at or below it is 300; the walk from there in full trials: 300 fails, 200
    # passes -> [200, 300] in three full trials, one jump
    script, out = full_narrowing(399.9)
    assert script.trials == ["F500", "F300", "F200"]
    assert (out.value, out.upper, out.jumps) == (200, 300, 1)


def short_narrowing(burst: float) -> tuple[Script, FastOutcome]:
    """A short-trial narrowing of [0, 2000], error 100, with the rule: short trials pass up to 1,300 (a queue), full
    ones up to 1,050. Every failed short trial forwarded (for a full trial) 1,050 and delivered ``burst`` above its
    steady rate; it lost its excess."""

    def answer(step: FastStep) -> TrialVerdict:
        ceiling = 1050 if step.full else 1300
        if step.rate <= ceiling:
            return TrialVerdict(PASS, lost=0)
        lost = int((step.rate - ceiling) * (10 if step.full else 1))
        if step.full:
            return TrialVerdict(FAIL, lost=lost, forwarded=1050.0)
        return TrialVerdict(FAIL, lost=lost, forwarded=1050.0, delivered=1300.0, burst=burst)

    script = Script(answer)
    return script, run_fast_search(script, lower=0, upper=2000, error=100, rule=rule())


def test_a_short_trials_burst_of_exactly_one_error_leaves_the_narrowing_to_the_short_trials() -> None:
    # short trials narrow on to [1300, 1400]; the full trial at 1300 then fails, and the walk down from it jumps to
    # where that full trial forwarded
    script, out = short_narrowing(100.0)
    assert script.trials == ["s1000", "s1500", "s1200", "s1300", "s1400", "F1300", "F1000", "F1100"]
    assert (out.value, out.upper, out.rejected, out.jumps) == (1000, 1100, (1300,), 1)


def test_a_short_trials_burst_over_one_error_leaves_the_narrowing_for_a_walk_of_full_trials() -> None:
    # s1500 failed with a burst over one error and forwarded 1,050: walk from 1000 in full trials (no probe below
    # the 1,300 it delivered): 1000 passes, 1100 fails
    script, out = short_narrowing(100.5)
    assert script.trials == ["s1000", "s1500", "F1000", "F1100"]
    assert (out.value, out.upper, out.jumps) == (1000, 1100, 1)


# --- no probe at or below the most a failed short trial delivered ------------------------------------------------


def delivering(first: float, second: float) -> Script:
    """[0, 2000], error 100, with the rule. Short trials pass up to 1,100 (so no proof: their loss is unknown), full
    ones up to 1,250. The failed short trial at 1500 delivered ``first`` per second, the one at 1200 ``second``."""

    def answer(step: FastStep) -> TrialVerdict:
        if not step.full and not step.probe:
            if step.rate <= 1100:
                return TrialVerdict(PASS)
            return TrialVerdict(FAIL, delivered=first if step.rate == 1500 else second)
        if step.probe:
            return TrialVerdict(PASS if step.rate <= 1100 else FAIL)
        return TrialVerdict(PASS if step.rate <= 1250 else FAIL)

    return Script(answer)


def test_no_probe_below_the_highest_rate_a_failed_short_trial_delivered_not_only_the_latest() -> None:
    # narrowing: s1000 p, s1500 f (delivered 1,450), s1200 f (delivered 1,150), s1100 p -> [1100, 1200]; F1100
    # passes, F1200 passes too (rejected as the upper bound); the walk up tries 1300: 1,300 <= 1,450 (the highest
    # delivery, not the latest 1,150): a short trial there would pass, so no probe; F1300 fails -> [1200, 1300]
    script = delivering(1450.0, 1150.0)
    out = run_fast_search(script, lower=0, upper=2000, error=100, rule=rule())
    assert script.trials == ["s1000", "s1500", "s1200", "s1100", "F1100", "F1200", "F1300"]
    assert (out.value, out.upper, out.probes, out.short_delivered) == (1200, 1300, 0, 1450.0)


def test_a_probe_runs_above_every_rate_a_failed_short_trial_delivered() -> None:
    # the same, both failed short trials delivering less than 1,300: the walk up probes 1300 first (it fails, but
    # proves nothing: its loss is unknown), then the full trial decides
    script = delivering(1299.5, 1150.0)
    out = run_fast_search(script, lower=0, upper=2000, error=100, rule=rule())
    assert script.trials == ["s1000", "s1500", "s1200", "s1100", "F1100", "F1200", "p1300", "F1300"]
    assert (out.value, out.upper, out.probes, out.short_delivered) == (1200, 1300, 1, 1299.5)


@pytest.mark.parametrize(("delivered", "probed"), [(1300.0, False), (1299.9, True)])
def test_an_earlier_repetitions_delivery_bars_probes_up_to_and_at_its_rate(delivered: float, probed: bool) -> None:
    # seeded at 1,300.5: the walk starts at 1300. An earlier failed short trial delivered 1,300 per second: a short
    # trial at 1300 would pass, no probe; one that delivered 1,299.9 leaves 1300 to a probe
    script = Script(lambda step: TrialVerdict(PASS if step.rate <= 1300 else FAIL, lost=0 if step.rate <= 1300 else 5))
    out = run_fast_search(script, lower=0, upper=2000, error=100, seed=1300.5, rule=rule(delivered=delivered))
    assert script.trials[0] == ("p1300" if probed else "F1300")
    assert "F1300" in script.trials and out.value == 1300


# --- the guard: a full trial at a short trial's small-loss bound, only above a rate that passed a full trial --------


def one_off_losses(full_ceiling: float, small: dict[float, int]) -> Script:
    """Short trials (probes too) lose ``small[rate]`` frames at the rates listed (one-off losses), 5,000 frames above
    1,150, nothing elsewhere; full trials pass up to ``full_ceiling`` (losing 10 frames per error above it)."""

    def answer(step: FastStep) -> TrialVerdict:
        if step.full:
            ok = step.rate <= full_ceiling
            return TrialVerdict(PASS if ok else FAIL, lost=0 if ok else int(step.rate - full_ceiling))
        lost = small.get(step.rate, 5000 if step.rate > 1150 else 0)
        return TrialVerdict(PASS if lost == 0 else FAIL, lost=lost)

    return Script(answer)


def test_no_guard_trial_when_no_rate_passed_a_full_trial() -> None:
    # [0, 1000], error 100, seeded at 200: the probe at 200 proves it (5,000 frames), the one at 100 proves 100 with a
    # small loss (3 < (100 - 0) x 1 s / 2). Nothing passed a full trial: no passing rate, and no guard trial turns the
    # lower bound into a value (a full trial at 100 would pass here)
    script = one_off_losses(150, {200: 5000, 100: 3})
    out = run_fast_search(script, lower=0, upper=1000, error=100, seed=200.5, rule=rule())
    assert script.trials == ["p200", "p100"]
    assert (out.passed, out.value, out.upper, out.guard_trials, out.short_bound) == (False, 0, 100, 0, True)


def test_the_guard_runs_above_a_rate_that_passed_a_full_trial() -> None:
    # the other side: seeded at 1,000.5, the same small loss one error above a full pass: the guard's full trial at
    # 1100 passes (1100 disproved), the walk up finds 1200 proved by its probe
    script = one_off_losses(1150, {1100: 3})
    out = run_fast_search(script, lower=0, upper=2000, error=100, seed=1000.5, rule=rule())
    assert script.trials == ["p1000", "F1000", "p1100", "F1100", "p1200"]
    assert (out.passed, out.value, out.upper, out.guard_trials, out.disproved) == (True, 1100, 1200, 1, (1100,))


# --- a rate a short trial proved an upper bound is not tested again ------------------------------------------------


def test_the_guards_walk_up_does_not_test_again_a_rate_a_short_trial_already_proved() -> None:
    # narrowing [0, 2000], error 100: s1000 p, s1500 f (5,000 frames: proof), s1200 f (proof), s1100 f with a small
    # loss (3 frames: a small proof) -> [1000, 1100]; F1000 passes; the guard runs F1100, which passes (the loss was
    # a one-off); the walk up reaches 1200, which the narrowing's short trial already proved: no probe, no full
    # trial there, the result is [1100, 1200]
    script = one_off_losses(1150, {1100: 3})
    out = run_fast_search(script, lower=0, upper=2000, error=100, rule=rule())
    assert script.trials == ["s1000", "s1500", "s1200", "s1100", "F1000", "F1100"]
    assert (out.value, out.upper, out.short_bound, out.disproved, out.guard_trials, out.probes) == (
        1100,
        1200,
        True,
        (1100,),
        1,
        0,
    )


def test_a_rate_no_short_trial_proved_gets_its_full_verdict_on_the_guards_walk_up() -> None:
    # the other side: the narrowing's short trial at 1200 lost nothing it could prove (unknown loss), so the walk up
    # needs a verdict there: a probe (it proves), no full trial
    base = one_off_losses(1150, {1100: 3})

    def answer(step: FastStep) -> TrialVerdict:
        if step.rate == 1200 and not step.full and not step.probe:
            return TrialVerdict(FAIL)  # lost: unknown
        return base.answer(step)

    script = Script(answer)
    out = run_fast_search(script, lower=0, upper=2000, error=100, rule=rule())
    assert script.trials == ["s1000", "s1500", "s1200", "s1100", "F1000", "F1100", "p1200"]
    assert (out.value, out.upper, out.probes, out.probe_proofs) == (1100, 1200, 1, 1)


# --- the moves and the ledger: what the reshaping into policies must keep ---------------------------------------


def test_a_range_of_one_cell_runs_no_trial_even_with_a_seed() -> None:
    # [0, 100] with error 100 is one cell: nothing between the bounds (neither is ever tested), seed or none
    script = Script(lambda step: TrialVerdict(PASS))
    out = run_fast_search(script, lower=0, upper=100, error=100, seed=50)
    assert script.trials == []
    assert (out.value, out.upper, out.passed, out.seeded) == (0, 100, False, False)


def test_a_walk_down_whose_jump_passes_walks_up_from_there_instead_of_bisecting() -> None:
    # cps-like: [0, 1000], error 10, the DUT passes up to 260. The failed 500 overstates (forwarded 300): the walk
    # starts at 300, which fails forwarding 263, so the walk down jumps past 290 to 260 (it passes), then walks up:
    # 270 fails. A bisection of [260, 300] would have tried 280 first.
    def answer(step: FastStep) -> TrialVerdict:
        if step.rate <= 260:
            return TrialVerdict(PASS)
        return TrialVerdict(FAIL, lost=1, forwarded=300.0 if step.rate == 500 else 263.0)

    script = Script(answer)
    out = run_fast_search(script, lower=0, upper=1000, error=10, narrow_full=True)
    assert script.trials == ["F500", "F300", "F260", "F270"]
    assert (out.value, out.upper, out.jumps) == (260, 270, 2)


def test_no_probe_runs_at_the_rate_a_short_trial_passed() -> None:
    # [0, 400], error 100, the rule on; short and full trials pass up to 200. The failed short 300 (its loss proves
    # it) overstates its loss (forwarded 150) with a burst over one error: the search walks from 100 in full
    # verdicts. 100 and 200 are at or below a rate a short trial passed (200): full trials, no probe (a short trial
    # there would pass again and prove nothing); no delivery is known to stop it otherwise.
    def answer(step: FastStep) -> TrialVerdict:
        if step.rate <= 200:
            return TrialVerdict(PASS, lost=0)
        return TrialVerdict(FAIL, lost=100, forwarded=150.0, burst=200.0)

    script = Script(answer)
    out = run_fast_search(script, lower=0, upper=400, error=100, rule=rule())
    assert script.trials == ["s200", "s300", "F100", "F200"]
    assert (out.value, out.upper, out.probes, out.jumps) == (200, 300, 0, 1)


def test_a_rate_the_tester_could_not_send_at_the_result_itself_is_no_ceiling_above_it() -> None:
    # [0, 400], error 100, no rule. The short trial at 200 finds the tester short three times (beyond the tester
    # for short trials); 100 passes short. The confirmation: full 100 passes, full 200 passes (the tester kept the
    # full trial's pace): the walk up finds 300 failing. 200, once the tester's, is the value: no ceiling above it.
    def answer(step: FastStep) -> TrialVerdict:
        if not step.full and step.rate == 200:
            return TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True)
        return TrialVerdict(PASS if step.rate <= 200 else FAIL, lost=0 if step.rate <= 200 else 1)

    script = Script(answer)
    out = run_fast_search(script, lower=0, upper=400, error=100)
    assert script.trials == ["s200", "s200", "s200", "s100", "F100", "F200", "F300"]
    assert (out.value, out.upper, out.tester_ceiling, out.tester_bound) == (200, 300, None, False)


@pytest.mark.parametrize(("short_cost", "worth"), [(5.75, False), (5.74, True)])
def test_a_first_probe_pays_only_when_half_a_full_trial_costs_more_than_a_short_one(
    short_cost: float, worth: bool
) -> None:
    # no probe yet: the rule of succession gives (0 + 1) / (0 + 2); half of 11.5 s is 5.75 s
    r = ShortFailRule(0.0, 10.0, 1.0, full_cost=11.5, short_cost=short_cost)
    assert r.worth_probing(0, 0) is worth


# --- the guard's "small" loss: below half the frames the short trial offered above the passing rate -----------------


@pytest.mark.parametrize("short_seconds", [1.0, 2.0])
def test_a_proving_loss_is_small_only_below_half_the_frames_offered_above_the_value(short_seconds: float) -> None:
    # the bound 1,100 over the value 1,000: a short trial offered 100 frames a second above the value, half of them
    # 50 per second of short trial; a loss one frame below that is small, that loss itself is not
    r = ShortFailRule(0.0, 10.0, short_seconds, full_cost=11.5, short_cost=2.5)
    half = int(50 * short_seconds)
    assert r.small(half - 1, 1100, 1000) is True
    assert r.small(half, 1100, 1000) is False


# --- a jump goes strictly between the move's lower bound and its usual next step ------------------------------------


def test_a_jump_lands_strictly_below_the_usual_next_step_and_above_the_lower_bound() -> None:
    book = Ledger(RateGrid(0, 1000, 100))
    jumps = JumpPolicy(book, 100.0, 3)
    book.forwarded[800.0] = 600.0  # the failed trial at 800 (index 8) forwarded 600 (index 6)
    assert jumps.target(8, 0, 6) is None  # 600 is the usual next step itself: no jump
    assert jumps.target(8, 6, 7) is None  # 600 is the lower bound: no room
    assert book.jumps == 0
    assert jumps.target(8, 5, 7) == 6 and book.jumps == 1
