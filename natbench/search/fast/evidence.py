"""What a stored trial tells the fast search (:class:`~natbench.search.fast.search.TrialVerdict`): its verdict,
the frames it lost in its worst direction, and, for a failed trial, where a full trial there would be
(docs/engine.md, "Where to look next"): the forwarding rate a full trial would show, the rate a short trial
delivered and the burst its queues let through. They choose where to look next, never a bound."""

from __future__ import annotations

from collections.abc import Iterable

from natbench.judging import is_tester_limited, recorded_net_lost
from natbench.results import TrialRecord, Verdict
from natbench.search.fast.trial import FastStep, TrialVerdict

FULL_SPAN = 0.99
"""Share of a full trial's duration a trial must have sent over for its count alone to tell what a full trial forwards
(the span from the first to the last frame is one frame interval short of the duration)."""


def worst_lost(rec: TrialRecord, directions: Iterable[str]) -> int | None:
    """Frames ``rec`` lost in its worst direction among ``directions``, as its verdict counted them: sent - valid, net
    of what the tester's own deviation explains (:func:`~natbench.judging.recorded_net_lost`: frames its receive side
    missed are no loss of the DUT's); None when it has no counts for one of them (it then proves nothing by the
    short-fail rule)."""
    lost = []
    for d in directions:
        net = recorded_net_lost(rec, d)
        if net is None:
            return None
        lost.append(net)
    return max(lost) if lost else None


def forwarded_rate(rec: TrialRecord, directions: Iterable[str], full_seconds: float | None) -> float | None:
    """What the DUT would forward per second, in its worst direction among ``directions`` that ``rec`` sent, over a
    full trial at the rate of the failed trial ``rec``: where the search looks next (docs/engine.md, "Where to look
    next"), never a verdict. None when ``rec`` did not fail for the DUT's sake, or says too little.

    ``full_seconds``: a full trial's duration (None: ``rec``'s own, a cps phase 1 of N frames). A trial that ran the
    full duration tells it by its count: valid frames / seconds. A shorter one (a short or a stopped trial) only with
    the tester's forwarding rate of its second half (``tail_rates``, the DUT's capacity once its queues and buckets
    have filled), which the rest of the full trial would add: ``valid / full + tail x (1 - seconds / full)``. A queue
    or bucket of B frames then counts B / full, as it does in the full trial. Never below the tail rate, where the
    tester gave one: a loss confined to the first half (an outage, a start-up transient) says nothing of capacity."""
    if rec.verdict is not Verdict.FAIL or is_tester_limited(rec) or rec.kind not in ("phase1", "phase2"):
        return None
    seconds = float(rec.extra.get("duration") or 0.0)
    if seconds <= 0:
        return None
    full = seconds if full_seconds is None else float(full_seconds)
    tails = rec.extra.get("tail_rates") or {}
    rates = []
    for d in directions:
        c = rec.counts.get(d)
        if c is None:
            continue  # a direction the trial did not send (a phase 1 sends forward only)
        valid = int(c["valid"])
        tail = float(tails[d]) if d in tails else None
        if seconds >= full * FULL_SPAN:
            rate = valid / seconds
        elif tail is not None:
            rate = valid / full + tail * (1 - seconds / full)
        else:
            return None
        # a loss confined to the trial's first half (an outage, a start-up transient) is no capacity: never below
        # what the second half forwarded
        rates.append(rate if tail is None else max(rate, tail))
    return min(rates) if rates else None


def burst_rate(rec: TrialRecord, directions: Iterable[str]) -> float | None:
    """Frames per second the trial ``rec`` delivered above its steady forwarding rate (the tester's ``tail_rates``)
    in its worst direction among ``directions``: what the DUT's queues and token buckets let through before they
    filled, spread over the trial (``valid / seconds - tail``, at least 0). None without the tester's tail rates."""
    seconds = float(rec.extra.get("duration") or 0.0)
    tails = rec.extra.get("tail_rates") or {}
    if seconds <= 0 or not all(d in tails and d in rec.counts for d in directions):
        return None
    bursts = [max(int(rec.counts[d]["valid"]) / seconds - float(tails[d]), 0.0) for d in directions]
    return max(bursts) if bursts else None


def delivered_rate(rec: TrialRecord, directions: Iterable[str]) -> float | None:
    """Valid frames per second the trial ``rec`` delivered in its worst direction among ``directions`` (None: no
    counts or no duration)."""
    seconds = float(rec.extra.get("duration") or 0.0)
    rates = [int(rec.counts[d]["valid"]) / seconds for d in directions if d in rec.counts] if seconds > 0 else []
    return min(rates) if rates else None


def trial_verdict(
    rec: TrialRecord, step: FastStep, directions: Iterable[str], full_seconds: float | None
) -> TrialVerdict:
    """What the trial ``rec`` of ``step`` tells the search: its verdict, the frames it lost in its worst direction
    among ``directions``, whether it stopped, and where to look next (a failed trial's :func:`forwarded_rate`; a
    short phase-2 trial's :func:`delivered_rate` and :func:`burst_rate`)."""
    active = list(directions)
    short = not step.full and rec.kind == "phase2"
    return TrialVerdict(
        rec.verdict,
        rec.reason,
        is_tester_limited(rec),
        worst_lost(rec, active),
        bool(rec.extra.get("stopped")),
        forwarded_rate(rec, active, full_seconds),
        delivered_rate(rec, active) if short else None,
        burst_rate(rec, active) if short else None,
    )
