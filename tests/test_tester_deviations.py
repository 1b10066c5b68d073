"""The tester's own deviations weighed against the DUT's loss (issue 30, item 2): a stall it caught up with in a
burst, frames its receive side missed. A trial that lost nothing passes whatever the tester did; one that lost more
than the deviation can explain fails; only a loss the deviation alone could explain is invalid (and retried)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from metric_settings import TOLERANCE
from test_procedures import Harness

from natbench.judging import CLUMPS, RATE, is_tester_limited, judge_phase, limit_cause, over_acceptance
from natbench.metrics.trial import search_extra
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, TrialRecord, Verdict
from natbench.search import SearchOutcome

F, R = Direction.FORWARD, Direction.REVERSE


def phase(
    counts: dict[Direction, tuple[int, int]], deviations: dict[Direction, Deviation] | None = None
) -> PhaseResult:
    """A phase at 10,000 fps kept on average, from (sent, valid) per direction, with the tester's deviations."""
    return PhaseResult(
        10_000.0,
        10_000.0,
        1.0,
        {d: DirectionCounts(s, v, v) for d, (s, v) in counts.items()},
        deviations=deviations or {},
    )


STALL = Deviation(clump=300, notes=("stalled: 300 frames (30.0 ms) behind schedule",))


def test_no_loss_passes_whatever_the_tester_did() -> None:
    assert judge_phase(phase({F: (125_000, 125_000)}, {F: STALL}), 0.0, TOLERANCE) == (Verdict.PASS, "")
    missed = Deviation(missed=57)
    assert judge_phase(phase({F: (125_000, 125_000)}, {F: missed}), 0.0, TOLERANCE) == (Verdict.PASS, "")


def test_loss_the_clump_cannot_explain_fails_naming_the_net_loss() -> None:
    """The lab's case: 55,003 of 256,000 frames lost while the tester once fell 300 frames behind: the burst
    of 300 cannot explain 55,003 lost frames, so the DUT lost them: FAIL, not invalid."""
    verdict, reason = judge_phase(phase({F: (256_000, 200_997)}, {F: STALL}), 0.0, TOLERANCE)
    assert verdict is Verdict.FAIL
    assert reason == (
        "forward loss 55003/256000 = 21.485547% > 0.000000%"
        " (54703 net of the 300 the tester's own deviation could explain)"
    )


def test_trex_misses_far_below_the_loss_fail_the_trial() -> None:
    """TRex's policer case: 4,473 of 125,000 frames lost, only 339 of them missed by TRex's own receive port."""
    verdict, reason = judge_phase(phase({F: (125_000, 120_527)}, {F: Deviation(missed=339)}), 0.0, TOLERANCE)
    assert verdict is Verdict.FAIL and "4134 net of the 339" in reason


def test_a_loss_the_deviation_alone_could_explain_is_invalid_and_the_testers() -> None:
    verdict, reason = judge_phase(phase({F: (125_000, 124_800)}, {F: STALL}), 0.0, TOLERANCE)
    assert verdict is Verdict.INVALID
    assert reason == (
        "tester's own deviation could explain the loss: forward lost 200/125000, the tester's deviation explains up"
        " to 300 frames (stalled: 300 frames (30.0 ms) behind schedule)"
    )
    rec = TrialRecord("p", "throughput", 0, 0, "phase2", 10_000.0, 10_000.0, {}, verdict, reason, 0.0, 1.0)
    assert is_tester_limited(rec) and limit_cause(rec) == CLUMPS
    # exactly as many lost as explained: still the tester's
    assert judge_phase(phase({F: (125_000, 124_700)}, {F: STALL}), 0.0, TOLERANCE)[0] is Verdict.INVALID
    # one more: the DUT's
    assert judge_phase(phase({F: (125_000, 124_699)}, {F: STALL}), 0.0, TOLERANCE)[0] is Verdict.FAIL


def test_the_invalid_reason_names_every_note_of_the_deviation_or_its_figures() -> None:
    """The reason of a loss the deviation alone could explain says what the tester did: each of its notes, joined by
    "; ", or, when it gave none, its clump and missed frames."""
    twice = Deviation(clump=300, notes=("stalled: 200 frames behind schedule", "stalled: 100 frames behind schedule"))
    verdict, reason = judge_phase(phase({F: (125_000, 124_800)}, {F: twice}), 0.0, TOLERANCE)
    assert verdict is Verdict.INVALID
    assert reason.endswith(
        "explains up to 300 frames (stalled: 200 frames behind schedule; stalled: 100 frames behind schedule)"
    )
    bare = Deviation(clump=200, missed=100)
    verdict, reason = judge_phase(phase({F: (125_000, 124_800)}, {F: bare}), 0.0, TOLERANCE)
    assert verdict is Verdict.INVALID and reason.endswith("explains up to 300 frames (clump 200, missed 100)")


# 3 of 410 frames lost: acceptances one step of the float grid below and above 3/410. Below, 3 frames are more than
# it allows though acceptance x 410 computes to 3.0 as floats round it; above, they are not.
EDGE_BELOW = math.nextafter(3 / 410, 0.0)
EDGE_ABOVE = math.nextafter(3 / 410, 1.0)


def test_the_acceptance_is_compared_exactly_however_the_float_forms_round() -> None:
    assert EDGE_BELOW < 3 / 410 and EDGE_BELOW * 410 >= 3  # the two float forms disagree here
    assert over_acceptance(3, 410, EDGE_BELOW) and not over_acceptance(3, 410, EDGE_ABOVE)
    assert not over_acceptance(5, 10, 0.5) and over_acceptance(6, 10, 0.5)  # an exact acceptance: equal is within
    assert not over_acceptance(0, 0, 0.0)


def test_a_loss_just_above_the_acceptance_fails_and_just_within_it_passes() -> None:
    verdict, reason = judge_phase(phase({F: (410, 407)}), EDGE_BELOW, TOLERANCE)
    assert verdict is Verdict.FAIL, reason  # never INVALID blaming a deviation the tester did not report
    assert reason.startswith(f"{F} loss 3/410")
    assert judge_phase(phase({F: (410, 407)}), EDGE_ABOVE, TOLERANCE) == (Verdict.PASS, "")


def test_a_deviation_explains_only_its_own_direction() -> None:
    """A stall of the forward sender cannot explain frames lost in the reverse direction."""
    counts = {F: (10_000, 10_000), R: (10_000, 9_900)}
    assert judge_phase(phase(counts, {F: STALL}), 0.0, TOLERANCE)[0] is Verdict.FAIL
    assert judge_phase(phase(counts, {R: STALL}), 0.0, TOLERANCE)[0] is Verdict.INVALID


def test_the_acceptance_applies_to_the_net_loss() -> None:
    """Acceptance 0.1 % of 100,000 frames = 100 may be lost: 350 lost with a clump of 300 leaves 50 net: a pass
    of the DUT within its acceptance, but the trial as counted lost more, so it is the tester's (invalid); 450
    lost leaves 150 net: FAIL."""
    assert judge_phase(phase({F: (100_000, 99_650)}, {F: STALL}), 0.001, TOLERANCE)[0] is Verdict.INVALID
    assert judge_phase(phase({F: (100_000, 99_550)}, {F: STALL}), 0.001, TOLERANCE)[0] is Verdict.FAIL
    assert judge_phase(phase({F: (100_000, 99_950)}, {F: STALL}), 0.001, TOLERANCE)[0] is Verdict.PASS


def test_a_tester_that_could_not_send_stays_invalid_before_any_loss_is_weighed() -> None:
    slow = dataclasses.replace(phase({F: (1000, 10)}), achieved_rate=5_000.0)
    verdict, reason = judge_phase(slow, 0.0, TOLERANCE)
    assert verdict is Verdict.INVALID and reason.startswith("tester fell behind")
    rec = TrialRecord("p", "cps", 0, 0, "phase1", 10_000.0, 5_000.0, {}, verdict, reason, 0.0, 1.0)
    assert limit_cause(rec) == RATE


def test_deviations_survive_the_phase_results_plain_form() -> None:
    res = phase({F: (10, 10)}, {F: STALL, R: Deviation(missed=3)})
    assert PhaseResult.from_dict(res.to_dict()) == res
    assert res.to_dict()["deviations"]["forward"] == {
        "clump": 300,
        "missed": 0,
        "notes": ["stalled: 300 frames (30.0 ms) behind schedule"],
    }


def _clumpy(h: Harness, above: float, lost: int, clump: int) -> None:
    """The fake tester's phase 1 stalls above ``above`` cps: a clump of ``clump`` frames, ``lost`` of the N frames
    lost in the DUT (the clump overran its buffer)."""

    def phase1(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
        res: PhaseResult = _orig(rate, learn)
        if rate <= above:
            return res
        c = res.counts[F]
        counts = {F: DirectionCounts(c.sent, c.received - lost, c.valid - lost)}
        dev = Deviation(clump=clump, notes=(f"stalled: {clump} frames behind schedule",))
        return dataclasses.replace(res, counts=counts, deviations={F: dev})

    h.tester.phase1 = phase1  # type: ignore[method-assign]


def test_a_search_at_rates_where_the_testers_clumps_explain_the_loss_ends_clump_bound() -> None:
    """Above 100,000 cps every trial clumps 300 frames and loses 200 of them: each is invalid and, three times in a
    row at one rate, that rate becomes the tester's limit; the result says the cause was the clumps."""
    h = Harness(cps=300_000)
    _clumpy(h, 100_000, lost=200, clump=300)
    res = h.run("cps", upper=200_000, error=1000, max_invalid=8, validation="off")
    assert res.value == 100_000
    assert res.extra["tester_bound"] is True
    assert res.extra["tester_bound_cause"] == CLUMPS
    assert all(r.reason.startswith("tester's own deviation could explain the loss") for r in h.records[1:])


def test_a_search_where_the_dut_loses_beyond_the_clumps_fails_those_rates_and_finds_the_dut() -> None:
    """The same clumps, but 2,000 of 4,000 frames lost above 100,000 cps: the DUT's loss, so the search bisects
    on FAILs (no invalid trial, no tester bound) and reports the DUT's ceiling."""
    h = Harness(cps=300_000)
    _clumpy(h, 100_000, lost=2_000, clump=300)
    res = h.run("cps", upper=200_000, error=1000, max_invalid=8, validation="off")
    assert res.value is not None and 99_000 <= res.value <= 100_000
    assert res.extra["tester_bound"] is False and "tester_bound_cause" not in res.extra
    assert res.extra["invalid"] == 0
    failed = [r for r in h.records if r.verdict is Verdict.FAIL]
    assert failed and all("net of the 300" in r.reason for r in failed)


@pytest.mark.parametrize("cause", [RATE, CLUMPS])
def test_the_tester_bound_cause_names_the_ceilings_own_trials(cause: str) -> None:
    h = Harness(cps=300_000)
    if cause == CLUMPS:
        _clumpy(h, 100_000, lost=10, clump=300)
    else:

        def short(rate: float, learn: bool, _orig: Any = h.tester.phase1) -> PhaseResult:
            res: PhaseResult = _orig(rate, learn)
            return res if rate <= 100_000 else dataclasses.replace(res, achieved_rate=rate * 0.9)

        h.tester.phase1 = short  # type: ignore[method-assign]
    res = h.run("cps", upper=200_000, error=1000, max_invalid=8, validation="off")
    assert res.extra["tester_bound_cause"] == cause


def _ended(upper: float, ceiling: float | None) -> SearchOutcome:
    """A search that ended at 100,000 below ``upper``, with the tester's ceiling ``ceiling``."""
    return SearchOutcome(100_000.0, 100_000.0, upper, steps=9, invalid=3, at_upper_limit=False, tester_ceiling=ceiling)


def test_only_a_search_that_ended_at_the_testers_ceiling_stores_why() -> None:
    """The cause is stored when the final upper bound is the tester's ceiling and the repetition recorded why its
    trials were invalid; not when the DUT failed below the ceiling, when there was no ceiling, or without limits."""
    limits = {101_000.0: CLUMPS}
    at = _ended(101_000.0, 101_000.0)
    assert at.tester_bound and search_extra(at, limits)["tester_bound_cause"] == CLUMPS
    below = _ended(101_000.0, 150_000.0)  # the DUT failed 101,000: the tester's ceiling above it bounds nothing
    assert not below.tester_bound
    assert "tester_bound_cause" not in search_extra(below, {150_000.0: CLUMPS})
    assert "tester_bound_cause" not in search_extra(_ended(101_000.0, None), limits)
    assert "tester_bound_cause" not in search_extra(at) and "tester_bound_cause" not in search_extra(at, {})


def test_a_ceiling_whose_own_trials_named_no_cause_is_the_testers_rate() -> None:
    at = _ended(101_000.0, 101_000.0)
    assert search_extra(at, {150_000.0: CLUMPS})["tester_bound_cause"] == RATE
