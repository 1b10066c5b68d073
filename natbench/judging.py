"""Verdicts of trials from their counts: invalid (tester, counts), fail (loss) or pass.

The tester's own deviations (:class:`~natbench.results.Deviation`: a stall it caught up with in a burst, frames
its receive side missed) are weighed against the loss, direction by direction: a trial that lost nothing beyond
the acceptance PASSES whatever the tester did; one whose loss, net of what the deviations can explain, still
exceeds the acceptance FAILS (the DUT lost frames no deviation explains); only a loss the deviations alone could
explain makes it INVALID (retried, as a tester that could not keep the rate is).

A trial the tester ended early because it had failed (:attr:`~natbench.results.PhaseResult.stopped`) is judged by
:func:`judge_stopped`: against what the *full* trial may lose, since it ran only the full trial's first part.
"""

from __future__ import annotations

from fractions import Fraction

from natbench.results import Deviation, PhaseResult, TrialRecord, Verdict

RATE = "rate"
"""The tester could not send at the intended rate (its ceiling)."""
CLUMPS = "clumps"
"""The tester sent the rate, but its sending pattern (a burst after a stall, frames it missed) could explain the
DUT's loss."""

_REASONS = {
    "tester could not keep the rate": RATE,
    "tester fell behind": RATE,
    "tester's own deviation could explain the loss": CLUMPS,
}


STOP_UNDECIDED = "stopped early, but"
"""How the reason of a stopped trial that proved nothing begins (:func:`judge_stopped`)."""


def limit_cause(record: TrialRecord) -> str | None:
    """Why ``record`` is invalid because of the tester: :data:`RATE` or :data:`CLUMPS` (None: not the tester's)."""
    if record.verdict is not Verdict.INVALID:
        return None
    return next((cause for prefix, cause in _REASONS.items() if record.reason.startswith(prefix)), None)


def stop_proved_nothing(record: TrialRecord) -> bool:
    """True when ``record`` is a trial the tester ended early whose loss the receive wait brought back within the full
    trial's allowance (:func:`judge_stopped`): it proved nothing, and is measured again in full."""
    return record.verdict is Verdict.INVALID and record.reason.startswith(STOP_UNDECIDED)


def is_tester_limited(record: TrialRecord) -> bool:
    """True when ``record`` is invalid because of the tester (its rate, or its deviations explain the loss)."""
    return limit_cause(record) is not None


def over_acceptance(lost: int, sent: int, acceptance: float) -> bool:
    """True when ``lost`` of ``sent`` frames is more than ``acceptance`` (a loss ratio) allows: the one comparison
    the verdicts make, for the loss as counted and for the net loss alike. Exact (``acceptance`` as the binary
    fraction it is): the float forms ``lost / sent > acceptance`` and ``lost > acceptance * sent`` each round, and
    at some acceptances disagree about the same counts."""
    return lost > Fraction(acceptance) * sent


def net_lost(lost: int, deviation: Deviation) -> int:
    """The frames of ``lost`` the DUT lost, as the verdicts count them: net of what the tester's own ``deviation``
    explains (its clumps and the frames its receive side missed), never negative."""
    return max(lost - deviation.explains, 0)


def recorded_net_lost(record: TrialRecord, direction: str) -> int | None:
    """The frames ``record`` lost in ``direction`` net of the tester's own deviation stored with it
    (:func:`net_lost`, as its verdict counted them); None when it has no counts for that direction."""
    counts = record.counts.get(direction)
    if counts is None:
        return None
    stored = (record.extra.get("deviations") or {}).get(direction) or {}
    deviation = Deviation(int(stored.get("clump") or 0), int(stored.get("missed") or 0))
    return net_lost(max(int(counts["sent"]) - int(counts["valid"]), 0), deviation)


def allowed_shortfall(duration: float, rate_tolerance: float, slack: float) -> float:
    """The relative shortfall of a phase's average rate that still keeps its rate: ``rate_tolerance``, or the tester's
    timer ``slack`` (seconds, :attr:`~natbench.plugins.TrialEvidence.pacing_slack`) as a share of the phase's
    ``duration`` where that is larger. At 0.1 % a 46 ms fill would be allowed 46 us behind schedule, less than the
    tester's own timer allows its last frame; a phase of 10 s keeps the tolerance."""
    if duration > 0:
        return max(rate_tolerance, slack / duration)
    return rate_tolerance


def judge_phase(
    phase: PhaseResult, acceptance: float, rate_tolerance: float, slack: float = 0.0
) -> tuple[Verdict, str]:
    """Verdict of a phase result from its counts and the tester's deviations (see the module docstring).

    INVALID when the tester reports it could not keep the rate, achieved less than the intended rate
    by more than :func:`allowed_shortfall` (``rate_tolerance``, or the tester's timer ``slack`` over a short phase;
    not asked of a stopped trial, whose pacing the tester judged against the full trial's allowances), reports no or
    inconsistent counts, or its deviations alone could explain the loss; FAIL when the loss ratio of a direction, net
    of what the tester's deviations explain, exceeds ``acceptance`` (the reason names the worst direction); PASS
    otherwise.
    """
    if not phase.tester_ok:
        return Verdict.INVALID, f"tester could not keep the rate: {phase.tester_note or 'no reason given'}"
    # a stopped trial's pacing is the tester's to judge (tester_ok), against the full trial's allowances: over its
    # short span the average would be held to a tolerance many times stricter
    if (
        not phase.stopped
        and phase.intended_rate > 0
        and phase.achieved_rate < phase.intended_rate * (1 - allowed_shortfall(phase.duration, rate_tolerance, slack))
    ):
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
    over = sorted(
        ((d, c) for d, c in phase.counts.items() if over_acceptance(c.lost, c.sent, acceptance)),
        key=lambda kv: -kv[1].loss_ratio,
    )
    if not over:
        return Verdict.PASS, ""
    none = Deviation()
    for d, c in over:
        dev = phase.deviations.get(d, none)
        net = net_lost(c.lost, dev)
        if over_acceptance(net, c.sent, acceptance):
            reason = f"{d} loss {c.lost}/{c.sent} = {c.loss_ratio:.6%} > {acceptance:.6%}"
            if dev.explains:
                reason += f" ({net} net of the {dev.explains} the tester's own deviation could explain)"
            return Verdict.FAIL, reason
    d, c = over[0]
    dev = phase.deviations.get(d, none)
    what = "; ".join(dev.notes) or f"clump {dev.clump}, missed {dev.missed}"
    return (
        Verdict.INVALID,
        f"tester's own deviation could explain the loss: {d} lost {c.lost}/{c.sent}, the tester's deviation explains"
        f" up to {dev.explains} frames ({what})",
    )


def judge_stopped(
    phase: PhaseResult,
    verdict: Verdict,
    reason: str,
    allowance: float | None,
    *,
    margin: float = 0.0,
    full_seconds: float | None = None,
) -> tuple[Verdict, str]:
    """The verdict of a trial the tester ended early (``phase.stopped``), from :func:`judge_phase`'s, on this draw's own
    evidence (docs/engine.md, "Stopping a failed full trial"):

    * FAIL when a direction lost, net of what the tester's deviations explain, more frames than the full trial may
      lose in all (``allowance``; the full trial runs this one's traffic and more, so it could only lose more);
    * FAIL when the receive wait brought the loss back (the DUT queued the frames it could not forward at once) but
      the tester measured the DUT short of the rate to the end (:func:`forecast`): the rest of the full trial
      (``full_seconds``) would add more frames than it may lose, counting no room left in the DUT's queue; only a
      shortfall that alone explains the frames missing when the tester stopped (``allowance + margin``, the stop's
      threshold) is taken: a latency rise or a stall the DUT caught up with forecasts nothing;
    * INVALID when the tester failed it (as any trial), when neither says fail (the stop proved nothing: the trial
      is measured again in full), or when nobody asked for a stop (``allowance`` None: the tester's fault).

    A stopped trial never passes."""
    if not phase.stopped or verdict is Verdict.INVALID:
        return verdict, reason
    if allowance is None:
        return Verdict.INVALID, "the tester ended the trial early, though no stop was asked for"
    none = Deviation()
    worst = max(
        ((net_lost(c.lost, phase.deviations.get(d, none)), d, c) for d, c in phase.counts.items()),
        key=lambda x: x[0],
        default=None,
    )
    if worst is not None and worst[0] > allowance:
        net, d, c = worst
        beyond = f" ({net} net of the tester's own deviation)" if net != c.lost else ""
        return (
            Verdict.FAIL,
            f"{d} loss {c.lost}/{c.sent} in the first {phase.duration:.3g} s{beyond}: more than the full trial may"
            f" lose ({allowance:g}), stopped early",
        )
    predicted = forecast(phase, full_seconds, allowance + margin) if full_seconds is not None else None
    if predicted is not None and predicted[0] > allowance:
        frames, where, forwarded = predicted
        return (
            Verdict.FAIL,
            f"{where} forwarded {forwarded:.6g}/s of {phase.intended_rate:.6g}/s to the end of its first"
            f" {phase.duration:.3g} s: the full trial would lose {frames:.0f} frames with the DUT's queue full, more"
            f" than it may lose ({allowance:g}), stopped early",
        )
    lost = worst[0] if worst is not None else 0
    return (
        Verdict.INVALID,
        f"{STOP_UNDECIDED} its loss after the receive wait ({lost} frames) is within the full trial's allowance"
        f" ({allowance:g}): no verdict, measured again in full",
    )


def forecast(phase: PhaseResult, full_seconds: float, threshold: float) -> tuple[float, str, float] | None:
    """What the full trial of ``full_seconds`` would lose in its worst direction, forecast from the stopped trial
    ``phase``: its loss after the receive wait (net of the tester's deviation) plus the frames the DUT could not
    forward over the rest of the trial, ``shortfall x (full_seconds - seconds sent)``, the shortfall as the tester
    measured it (``phase.shortfalls``: the DUT forwarding below what it was sent both over the trial's second half
    and over the stop's last window, so a stall it caught up with or a latency rise shows none) and counted as lost
    (no room left in its queue: the frames the receive wait brought back came from a queue whose size is not known).
    Only a direction whose shortfall over the seconds sent reaches ``threshold`` (the frames missing when the tester
    stopped) counts: a shortfall that small did not make the stop. (frames, direction, the rate the DUT forwarded:
    the rate less the shortfall), or None without shortfalls or such a direction."""
    none = Deviation()
    seconds = max(phase.duration, 0.0)
    rest = max(full_seconds - seconds, 0.0)
    found: list[tuple[float, str, float]] = []
    for d, c in phase.counts.items():
        short = phase.shortfalls.get(d)
        if short is None or short * seconds < threshold:  # none measured, none, or too small to have made the stop
            continue
        lost = net_lost(c.lost, phase.deviations.get(d, none))
        found.append((lost + short * rest, str(d), phase.intended_rate - short))
    return max(found, key=lambda f: f[0], default=None)
