"""The ``fast`` rate search: short trials narrow, full-duration trials confirm (after FD.io CSIT's MLRsearch).

The result keeps the meaning of the RFC 2544 / RFC 9693 binary search's: the reported rate ``r`` passed a
**full** trial and a rate at most ``error`` above it failed a **full** trial (or ``r`` is the search's lower
bound because no rate passed, or the upper bound was never failed). How the search gets there differs:

1. **Seeded** (with a ``seed``, e.g. the middle of the previous repetition's final interval): no short
   trials. A full trial at ``floor(seed)``; from there the search **walks** with full trials, up while they pass
   and down while they fail, in steps of ``error`` (doubling after :data:`WALK_STEPS` of them), until a
   pass and a fail are adjacent, and bisects the last step with full trials. Near a good seed this ends after two
   or three full trials (a pass and a fail one error apart); a seed far off costs about twice the log2 of the
   distance in errors (the seed is verified, never trusted). Short trials would not help here: they pass higher
   than full ones (fewer frames, fewer chances to lose one), so a seed from earlier full results is the better
   start.
2. **Unseeded, narrow**: a binary search with short trials until ``upper - lower <= error`` (integer rates, as
   :class:`~natbench.search.binary.BinarySearch`). A short trial proves nothing for the result.
3. **Unseeded, confirm**: a full trial at the narrowed lower bound ``r`` (unless it is the search's lower bound),
   then a full trial at the narrowed upper bound (at most ``r + error``; skipped when it is the search's upper
   bound, which is never tested). When the full trial at ``r`` fails, the search walks down from ``r``; when the
   full trial above ``r`` passes, it walks up (as in 1). The reported rate is therefore always one whose full
   trial passed, with a failed full trial at most ``error`` above it: a result whose confirmation failed is never
   reported.

When short trials do not exist (``narrow_full=True``), the narrowing trials are the full ones and step 3 is
not needed. Invalid trials are retried at the same rate (``max_invalid``); a rate the tester repeatedly could
not send counts as failed and becomes the tester ceiling, as in the binary search.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from natbench.errors import SearchError
from natbench.results import Verdict
from natbench.search.binary import SearchOutcome

__all__ = ["SEEDED_TRIALS", "WALK_STEPS", "FastOutcome", "FastStep", "TrialVerdict", "run_fast_search"]

WALK_STEPS = 3
"""Steps of one error a walk takes before its steps double. A DUT whose full trials pass and fail at random around
its ceiling (trial-to-trial jitter of a few errors) ends a walk from a good seed soonest with steps of one error;
doubling after three keeps a seed that is far off (a changed DUT) within about ``2 log2(distance / error) + 4``
full trials."""

SEEDED_TRIALS = 3
"""Full trials a seeded search is expected to need near a good seed (a pass and a fail one error apart, plus one
when the first step lands on the wrong side): the planning figure of ``natbench plan``."""


@dataclass(frozen=True)
class FastStep:
    """One trial the fast search asks for."""

    rate: float
    """The rate to test (per direction)."""
    lower: float
    """The lower bound before this trial."""
    upper: float
    """The upper bound before this trial."""
    attempt: int
    """0 for the first trial at this rate, n for the n-th retry after invalid trials."""
    full: bool
    """True: a full-duration trial (it may confirm the result); False: a short trial (it only narrows)."""


@dataclass(frozen=True)
class TrialVerdict:
    """What the caller tells the search about one trial."""

    verdict: Verdict
    """Pass, fail or invalid."""
    reason: str = ""
    """Why (for the error message when invalid trials run out)."""
    tester_limited: bool = False
    """An invalid trial caused by the tester not keeping the rate."""


@dataclass(frozen=True)
class FastOutcome(SearchOutcome):
    """A finished fast search: the binary search's outcome fields plus how it got there."""

    short_steps: int = 0
    """Short trials counted as pass or fail."""
    full_steps: int = 0
    """Full-duration trials counted as pass or fail."""
    seeded: bool = False
    """True when the search started from a seed (a walk of full trials, no short ones)."""
    rejected: tuple[float, ...] = ()
    """Rates the short trials narrowed to whose full-duration confirmation disagreed (the search moved on)."""


class _Run:
    """The state of one fast search (the bounds the full trials established, counters)."""

    def __init__(
        self,
        trial: Callable[[FastStep], TrialVerdict],
        lower: float,
        upper: float,
        error: float,
        max_invalid: int,
        tester_retries: int,
    ) -> None:
        self.trial = trial
        self.lower0, self.upper0, self.error = lower, upper, error
        self.max_invalid, self.tester_retries = max_invalid, tester_retries
        self.short = self.full = self.invalid = 0
        self.tester_limited: list[float] = []
        """Rates the tester repeatedly could not send (each counted as a failed trial)."""

    def probe(self, rate: float, full: bool, lower: float, upper: float) -> bool:
        """Run the trial at ``rate`` until it is not invalid; True when it passed (a rate beyond the tester fails)."""
        attempt = streak = 0
        while True:
            tv = self.trial(FastStep(rate, lower, upper, attempt, full))
            if tv.verdict is not Verdict.INVALID:
                if full:
                    self.full += 1
                else:
                    self.short += 1
                return tv.verdict is Verdict.PASS
            self.invalid += 1
            attempt += 1
            streak = streak + 1 if tv.tester_limited else 0
            if streak == attempt and attempt > min(self.max_invalid, self.tester_retries):
                self.tester_limited.append(rate)
                return False
            if attempt > self.max_invalid:
                raise SearchError(
                    f"{attempt} invalid trials in a row at rate {rate:g} (max_invalid={self.max_invalid})"
                    + (f"; last: {tv.reason}" if tv.reason else "")
                )

    def bisect(self, lo: float, hi: float, full: bool) -> tuple[float, float]:
        """Binary search of ``[lo, hi]`` (lo passed or is the lower bound, hi failed or is the upper bound)."""
        while hi - lo > self.error:
            mid = (lo + hi) / 2
            if hi - lo > 2:
                mid = float(math.floor(mid))
            if self.probe(mid, full, lo, hi):
                lo = mid
            else:
                hi = mid
        return lo, hi

    def widths(self) -> Iterator[float]:
        """The walk's steps: :data:`WALK_STEPS` of one error, then doubling."""
        width, n = self.error, 0
        while True:
            yield width
            n += 1
            if n >= WALK_STEPS:
                width *= 2

    def down(self, lo: float, hi: float, full: bool) -> tuple[float, float]:
        """From a failed ``hi`` down (:meth:`widths`) until a rate passes or ``lo`` is reached."""
        for width in self.widths():
            rate = float(math.floor(hi - width)) if hi - lo > 2 else hi - width  # whole rates, as bisect
            if rate <= lo:
                return lo, hi
            if self.probe(rate, full, lo, hi):
                return rate, hi
            hi = rate
        raise AssertionError("unreachable")  # pragma: no cover

    def up(self, lo: float, hi: float, full: bool) -> tuple[float, float]:
        """From a passed ``lo`` up (:meth:`widths`) until a rate fails or ``hi`` is reached."""
        for width in self.widths():
            rate = float(math.ceil(lo + width)) if hi - lo > 2 else lo + width
            if rate >= hi:
                return lo, hi
            if not self.probe(rate, full, lo, hi):
                return lo, rate
            lo = rate
        raise AssertionError("unreachable")  # pragma: no cover


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
) -> FastOutcome:
    """Search ``[lower, upper]`` as the module docstring says; ``trial`` runs and stores one trial."""
    if not (math.isfinite(lower) and math.isfinite(upper)) or lower < 0 or upper <= lower:
        raise SearchError(f"search bounds must be finite, non-negative and ordered, got [{lower}, {upper}]")
    if error <= 0:
        raise SearchError(f"search error must be positive, got {error}")
    run = _Run(trial, lower, upper, error, max_invalid, tester_retries)
    lo, hi = lower, upper
    seeded = seed is not None and lower < seed < upper and upper - lower > error
    rejected: list[float] = []
    if seeded and seed is not None:
        start = float(math.floor(seed))
        if start <= lower:  # a range narrower than whole numbers: start at the seed itself
            start = seed
        full = True
        if run.probe(start, full, lo, hi):
            lo, hi = run.up(start, hi, full)
        else:
            lo, hi = run.down(lo, start, full)
        lo, hi = run.bisect(lo, hi, full)
    else:
        lo, hi = run.bisect(lo, hi, narrow_full)
        if not narrow_full:
            # confirm with full-duration trials: a pass at lo (unless it is the lower bound) ...
            if lo > lower and not run.probe(lo, True, lo, hi):
                rejected.append(lo)
                lo, hi = run.down(lower, lo, True)
                lo, hi = run.bisect(lo, hi, True)
            # ... and a fail at hi (unless it is the upper bound, never tested)
            elif hi < upper and run.probe(hi, True, lo, hi):
                rejected.append(hi)
                lo, hi = run.up(hi, upper, True)
                lo, hi = run.bisect(lo, hi, True)
    # the tester's ceiling: the lowest rate it could not send above the result; one at or below it was disproved by a
    # valid passing trial at or above it (a short trial that lost its pace to a preemption, say)
    tester_ceiling = min((r for r in run.tester_limited if r > lo), default=None)
    if tester_ceiling is not None and hi > tester_ceiling:
        hi = tester_ceiling
    return FastOutcome(
        value=lo,
        lower=lo,
        upper=hi,
        passed=lo > lower,  # the lower bound is never tested: above it, lo passed a full trial
        steps=run.short + run.full,
        invalid=run.invalid,
        at_upper_limit=hi == upper,
        tester_ceiling=tester_ceiling,
        short_steps=run.short,
        full_steps=run.full,
        seeded=seeded,
        rejected=tuple(rejected),
    )
