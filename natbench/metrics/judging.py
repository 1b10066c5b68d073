"""Verdicts of trials from their counts: invalid (tester, counts), fail (loss) or pass."""

from __future__ import annotations

from natbench.results import PhaseResult, TrialRecord, Verdict

__all__ = ["is_tester_limited", "judge_phase"]

_TESTER_REASONS = ("tester could not keep the rate", "tester fell behind")


def is_tester_limited(record: TrialRecord) -> bool:
    """True when ``record`` is invalid because the tester could not send at the intended rate."""
    return record.verdict is Verdict.INVALID and record.reason.startswith(_TESTER_REASONS)


def judge_phase(phase: PhaseResult, acceptance: float, rate_tolerance: float) -> tuple[Verdict, str]:
    """Verdict of a phase result from its counts: invalid (tester / counts), fail (loss) or pass.

    INVALID when the tester reports it could not keep the rate, achieved less than the intended rate
    by more than ``rate_tolerance`` (relative), or reports no or inconsistent counts; FAIL when the loss
    ratio of a direction exceeds ``acceptance`` (the reason names the worst direction); PASS otherwise.
    """
    if not phase.tester_ok:
        return Verdict.INVALID, f"tester could not keep the rate: {phase.tester_note or 'no reason given'}"
    if phase.intended_rate > 0 and phase.achieved_rate < phase.intended_rate * (1 - rate_tolerance):
        short = 1 - phase.achieved_rate / phase.intended_rate
        return (
            Verdict.INVALID,
            f"tester fell behind: achieved {phase.achieved_rate:.6g} of {phase.intended_rate:.6g} ({short:.2%} short)",
        )
    if not phase.counts:
        return Verdict.INVALID, "no counts reported"
    for d, c in phase.counts.items():
        if min(c.sent, c.received, c.valid) < 0 or c.valid > c.received or c.valid > c.sent:
            return Verdict.INVALID, f"inconsistent {d} counts: sent {c.sent}, received {c.received}, valid {c.valid}"
    worst = max(phase.counts.items(), key=lambda kv: kv[1].loss_ratio)
    if worst[1].loss_ratio > acceptance:
        d, c = worst
        return Verdict.FAIL, f"{d} loss {c.lost}/{c.sent} = {c.loss_ratio:.6%} > {acceptance:.6%}"
    return Verdict.PASS, ""
