"""A phase's average rate is held to ``rate_tolerance`` of its duration or to the tester's timer slack, the larger
(natbench.judging.allowed_shortfall): a 46 ms fill at 0.1 % would otherwise be allowed 46 us behind schedule, less
than the tester's own pacing check allows its last frame, and the quickstart's short cps trials were judged invalid
for a start 70 us late. Each comparison on both sides."""

from __future__ import annotations

import pytest

from natbench.judging import allowed_shortfall, judge_phase
from natbench.plugins import TrialEvidence
from natbench.results import Direction, DirectionCounts, PhaseResult, Verdict
from natbench.testers.software import tester as software

TOL = 0.001
SLACK = 0.0005


def _phase(duration: float, short: float, intended: float = 350_000.0) -> PhaseResult:
    """A lossless forward phase of ``duration`` seconds that achieved ``short`` (relative) less than ``intended``."""
    n = round(intended * duration)
    return PhaseResult(
        intended_rate=intended,
        achieved_rate=intended * (1 - short),
        duration=duration,
        counts={Direction.FORWARD: DirectionCounts(sent=n, received=n, valid=n)},
    )


def test_a_short_phase_is_allowed_the_tester_slack_as_a_share_of_its_duration() -> None:
    assert allowed_shortfall(0.046, TOL, SLACK) == pytest.approx(SLACK / 0.046)


def test_a_long_phase_keeps_the_tolerance() -> None:
    assert allowed_shortfall(10.0, TOL, SLACK) == TOL


def test_where_the_slack_and_the_tolerance_meet_either_is_the_allowance() -> None:
    assert allowed_shortfall(SLACK / TOL, TOL, SLACK) == pytest.approx(TOL)
    assert allowed_shortfall(SLACK / TOL * 0.99, TOL, SLACK) > TOL  # a little shorter: the slack
    assert allowed_shortfall(SLACK / TOL * 1.01, TOL, SLACK) == TOL  # a little longer: the tolerance


def test_a_phase_without_a_duration_keeps_the_tolerance() -> None:
    assert allowed_shortfall(0.0, TOL, SLACK) == TOL


def test_no_slack_is_the_tolerance() -> None:
    assert allowed_shortfall(0.046, TOL, 0.0) == TOL


def test_the_quickstarts_short_fill_070_us_late_keeps_its_rate_with_the_slack_and_not_without() -> None:
    phase = _phase(0.046, 0.0015)  # 0.15 % short over 46 ms: 69 us
    assert judge_phase(phase, 0.0, TOL, SLACK)[0] is Verdict.PASS
    verdict, reason = judge_phase(phase, 0.0, TOL)
    assert verdict is Verdict.INVALID and reason.startswith("tester fell behind: achieved")


@pytest.mark.parametrize(("beyond", "expected"), [(0.999, Verdict.PASS), (1.001, Verdict.INVALID)])
def test_a_short_phase_is_invalid_just_beyond_the_slack(beyond: float, expected: Verdict) -> None:
    duration = 0.046
    assert judge_phase(_phase(duration, SLACK / duration * beyond), 0.0, TOL, SLACK)[0] is expected


@pytest.mark.parametrize(("beyond", "expected"), [(0.999, Verdict.PASS), (1.001, Verdict.INVALID)])
def test_a_long_phase_is_invalid_just_beyond_the_tolerance_whatever_the_slack(beyond: float, expected: Verdict) -> None:
    assert judge_phase(_phase(10.0, TOL * beyond), 0.0, TOL, SLACK)[0] is expected


@pytest.mark.parametrize(("given", "declared"), [({}, 0.0005), ({"lateness_slack": 0.002}, 0.002)])
def test_the_software_tester_declares_its_lateness_slack_as_its_timer_slack(
    given: dict[str, float], declared: float
) -> None:
    # its ports on the loopback interface (the constructor opens them; nothing is sent)
    mac_a, mac_b = "02:4e:42:00:00:01", "02:4e:42:00:00:02"
    with software.SoftwareTester(software.Port("lo", mac_a, mac_b), software.Port("lo", mac_b, mac_a), **given) as t:
        assert t.evidence().pacing_slack == declared


def test_a_tester_that_declares_nothing_has_no_slack() -> None:
    assert TrialEvidence().pacing_slack == 0.0
