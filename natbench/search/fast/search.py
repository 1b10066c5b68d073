"""The ``fast`` rate search: short trials narrow, full-duration trials confirm (after FD.io CSIT's MLRsearch).

The result keeps the meaning of the RFC 2544 / RFC 9693 binary search's: the reported rate ``r`` passed a
**full** trial and a rate at most ``error`` above it is an upper bound for full trials (or ``r`` is the search's
lower bound because no rate passed, or the upper bound was never failed). A rate is an upper bound when a full
trial there failed, or by the **short-fail rule** (:class:`ShortFailRule`): a short trial there lost more frames,
in some direction, than a full trial at that rate may lose in all (acceptance x the full trial's frames; with
acceptance 0: any frame), since the full trial, which runs the short one's traffic and more, could only lose more.
How the search gets there:

1. **Seeded** (with a ``seed``, e.g. the middle of the previous repetition's final interval): no narrowing. A
   full-trial verdict at the grid rate at or below the seed; from there the search **walks**, up while rates pass
   and down while they fail, in steps of ``error`` (doubling after :data:`WALK_STEPS` of them), until a pass and an
   upper bound are adjacent, and bisects the last step. Near a good seed this ends after two or three verdicts; a
   seed far off costs about twice the log2 of the distance in errors (the seed is verified, never trusted).
2. **Unseeded, narrow**: a binary search with short trials until ``upper - lower <= error``. A short pass proves
   nothing for the result; a short failure proves its rate an upper bound only by the short-fail rule. The
   narrowing is left for a walk of full trials (as in 1) from where a failed trial says a full one is close
   (**jumps**, below), when short trials cannot find the full ceiling: a failed short trial delivered more than one
   ``error`` per second above the DUT's steady rate (a queue or token bucket). A full-trial narrowing (cps) is left
   the same way, on any failed trial's word.

Every rate it tests lies on the binary search's grid ``lower + k x error``
(:class:`~natbench.search.grid.RateGrid`): walks step and bisections halve in grid cells, so the final interval
is one cell, exactly ``error`` wide (narrower only in the top cell, ending at ``upper``).
3. **Unseeded, confirm**: a full trial at the narrowed lower bound ``r`` (unless it is the search's lower bound),
   then a full trial at the narrowed upper bound (at most ``r + error``) unless a short trial there already
   proved it (or it is the search's upper bound, which is never tested). When the full trial at ``r`` fails, the
   search walks down from ``r``; when the full trial above ``r`` passes, it walks up (as in 1).

**A full-trial verdict** in the walks (1, 3) comes from a full trial, or, when the rule is given and a **probe**
is worth it, from a short trial first: a probe that proves its rate an upper bound replaces the full trial; any
other probe (a pass, a failure within the full trial's allowance, an invalid trial) proves nothing and the full
trial runs. Whether a probe is worth it is learnt at the working point (:meth:`ShortFailRule.worth_probing`):
on a DUT whose short trials pass where full ones fail (buffers: a short trial of T seconds at a rate r passes a
queue of B frames up to about r + B / T) probes prove nothing near the ceiling and are soon left out.

**The guard.** When the final upper bound comes from a short trial whose loss was small
(:meth:`ShortFailRule.small`), a full trial there decides: a start-up transient or a one-off loss in that short
trial is then not taken for the DUT's ceiling. If it passes, the search walks up from there.

**Jumps.** A failed trial tells the caller's estimate of what a full trial at its rate would forward
(:attr:`TrialVerdict.forwarded`). When that lies more than one ``error`` below the rate, an unseeded search goes to the
grid rate at or below it instead of its usual next step (:data:`JUMPS` times at most): the narrowing's exits above,
and a walk down that jumps past its next step (and walks up from the target if it passes). Seeded searches never
jump. No probe runs at or below the rate a failed short trial delivered per second (:attr:`TrialVerdict.delivered`,
this search's or an earlier repetition's, :attr:`ShortFailRule.delivered`): a short trial there would pass. Jumps
and deliveries choose where to look; every bound still rests on a trial's verdict.

Invalid trials are retried at the same rate (``max_invalid``); a rate the tester repeatedly could not send counts
as failed and becomes the tester ceiling, as in the binary search. An invalid probe proves nothing and is not
retried (the full trial follows).

A full trial the tester ended early because it had already lost more than a full trial may
(:attr:`TrialVerdict.stopped`; :mod:`natbench.search.fast.stop`) is a failed full trial here: it was the beginning
of the full trial at that rate, so no guard trial follows it. Its verdict is decided before the search sees it, and
a stop that proved nothing is followed there and then by the full trial, whose verdict is the one the search gets.

**Its shape.** What the trials proved is kept in a :class:`~natbench.search.fast.ledger.Ledger`; the phases above are
made of moves that nominate trials and never run them (:mod:`~natbench.search.fast.moves`); each rule is a small
policy reading the ledger: the short-fail rule (:mod:`~natbench.search.fast.rule`), probes
(:mod:`~natbench.search.fast.probe`), jumps and when a narrowing is left (:mod:`~natbench.search.fast.jump`), the guard
(:mod:`~natbench.search.fast.guard`); :class:`~natbench.search.fast.trials.Trials` runs what the moves nominate (a
full-trial verdict, a full or a short trial), with the retry rule, and books it in the ledger.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from natbench.errors import SearchError
from natbench.search.fast import jump
from natbench.search.fast.guard import GuardPolicy
from natbench.search.fast.jump import JumpPolicy, LeaveOnBurst, LeaveOnFailure
from natbench.search.fast.ledger import Ledger
from natbench.search.fast.moves import Ask, Move, Nominee, bisect, walk, walk_down, walk_up
from natbench.search.fast.outcome import FastOutcome
from natbench.search.fast.probe import ProbePolicy
from natbench.search.fast.rule import ShortFailRule
from natbench.search.fast.trial import FastStep, TrialVerdict
from natbench.search.fast.trials import Trials
from natbench.search.grid import RateGrid
from natbench.search.retry import RetryRule


@dataclass(frozen=True)
class FullNarrowing:
    """The unseeded search without short trials (cps): a bisection of full-trial verdicts, left for a walk from where
    any failed trial says a full one is close (:class:`~natbench.search.fast.jump.LeaveOnFailure`)."""

    jumps: JumpPolicy
    """Where failed trials point."""

    def run(self, top: int) -> Move:
        """Narrow ``[0, top]``; its bounds are full-trial bounds, so a walk after leaving stays within them."""
        lo, hi, start = yield from bisect(0, top, Ask.VERDICT, LeaveOnFailure(self.jumps))
        if start is None:
            return lo, hi
        return (yield from walk(start, lo, hi, self.jumps))


@dataclass(frozen=True)
class ShortNarrowing:
    """The unseeded search with short trials: a bisection of short trials, left for a walk of full-trial verdicts when
    short trials cannot find the full ceiling (:class:`~natbench.search.fast.jump.LeaveOnBurst`), else confirmed by
    full trials at its bounds."""

    jumps: JumpPolicy
    """Where failed trials point."""
    ledger: Ledger
    """This search's evidence (what short trials proved)."""

    def run(self, top: int) -> Move:
        """Narrow ``[0, top]`` with short trials, then walk from where a failed trial points, or confirm."""
        lo, hi, start = yield from bisect(0, top, Ask.SHORT, LeaveOnBurst(self.jumps, self.jumps.error))
        if start is not None:
            # a failed trial told where a full one is close: walk from there in full trials, below the lowest rate
            # proved an upper bound (a full failure, a short trial's proof; the rates short trials passed prove nothing)
            return (yield from walk(start, 0, self.ledger.lowest_proof(hi), self.jumps))
        return (yield from self.confirm(lo, hi, top))

    def confirm(self, lo: int, hi: int, top: int) -> Move:
        """Full trials at the narrowed bounds: at ``lo`` (unless it is the search's lower bound; if it fails, walk down
        from it), else at ``hi`` (unless it is the search's upper bound, never tested, or a short trial proved it; if
        it passes, walk up from it); each disagreement with the short trials is recorded (``rejected``)."""
        book = self.ledger
        if lo > 0 and not (yield Nominee(lo, lo, hi, Ask.FULL)):
            book.rejected.append(book.rate(lo))
            lo, hi = yield from walk_down(0, lo, self.jumps)
        elif hi < top and not book.proven(hi) and (yield Nominee(hi, lo, hi, Ask.FULL)):
            book.rejected.append(book.rate(hi))
            lo, hi = yield from walk_up(hi, top)
        else:
            return lo, hi
        lo, hi, _ = yield from bisect(lo, hi, Ask.VERDICT)
        return lo, hi


def _searched(first: Move, guard: GuardPolicy, top: int) -> Move:
    """The search's phases: the first (a seeded walk or an unseeded narrowing), then the guard."""
    lo, hi = yield from first
    return (yield from guard.hold(lo, hi, top))


def _drive(move: Move, trials: Trials) -> tuple[int, int]:
    """Run every trial ``move`` nominates (:meth:`Trials.verdict` for a full-trial verdict, :meth:`Trials.run` for a
    full or a short trial) and send it whether it passed, until the move returns its final interval."""
    grid = trials.ledger.grid
    try:
        nominee = next(move)
        while True:
            rate, lower, upper = grid.rate(nominee.k), grid.rate(nominee.lo), grid.rate(nominee.hi)
            if nominee.ask is Ask.VERDICT:
                passed = trials.verdict(rate, lower, upper)
            else:
                passed = trials.run(rate, nominee.ask is Ask.FULL, lower, upper)
            nominee = move.send(passed)
    except StopIteration as done:
        lo, hi = done.value
        return lo, hi


def run_fast_search(
    trial: Callable[[FastStep], TrialVerdict],
    *,
    lower: float,
    upper: float,
    error: float,
    seed: float | None = None,
    narrow_full: bool = False,
    max_invalid: int = 3,
    tester_retries: int = 2,
    rule: ShortFailRule | None = None,
    known_ceiling: float | None = None,
) -> FastOutcome:
    """Search ``[lower, upper]`` as the module docstring says; ``trial`` runs and stores one trial. ``narrow_full``: no
    short trials (every trial a full one). Without ``rule`` no short trial proves anything and no probe runs.
    ``known_ceiling``: the tester's ceiling an earlier repetition found (:class:`~natbench.search.retry.RetryRule`)."""
    if not (math.isfinite(lower) and math.isfinite(upper)) or lower < 0 or upper <= lower:
        raise SearchError(f"search bounds must be finite, non-negative and ordered, got [{lower}, {upper}]")
    if error <= 0:
        raise SearchError(f"search error must be positive, got {error}")
    grid = RateGrid(lower, upper, error)
    top = grid.top
    ledger = Ledger(grid)
    retry = RetryRule(max_invalid, tester_retries, known_ceiling)
    trials = Trials(trial, ledger, retry, rule, ProbePolicy(rule, ledger))
    seeded = seed is not None and lower < seed < upper and top > 1
    # a seeded search does not jump: its seed is closer than one trial's forwarding tells
    jumps = JumpPolicy(ledger, error, 0 if seeded else jump.JUMPS)
    first: Move
    if seeded and seed is not None:
        start = min(max(grid.index(seed), 1), top - 1)  # the grid rate at or below the seed, strictly inside
        first = walk(start, 0, top, jumps)
    elif narrow_full:
        first = FullNarrowing(jumps).run(top)
    else:
        first = ShortNarrowing(jumps, ledger).run(top)
    lo, hi = _drive(_searched(first, GuardPolicy(rule, ledger), top), trials)
    return FastOutcome.of(ledger, lo, hi, seeded=seeded)
