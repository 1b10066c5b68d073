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
(:class:`~natbench.search.binary.RateGrid`): walks step and bisections halve in grid cells, so the final interval
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
(:attr:`TrialVerdict.stopped`; natbench.metrics.fast) is a failed full trial here: it was the beginning of the full
trial at that rate, so no guard trial follows it. Its verdict is decided before the search sees it, and a stop that
proved nothing is followed there and then by the full trial, whose verdict is the one the search gets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from natbench.errors import SearchError
from natbench.results import Verdict
from natbench.search.binary import RateGrid, SearchOutcome

__all__ = [
    "SEEDED_FULL",
    "SEEDED_PROBES",
    "SEEDED_TRIALS",
    "WALK_STEPS",
    "FastOutcome",
    "FastStep",
    "ShortFailRule",
    "TrialVerdict",
    "run_fast_search",
]

WALK_STEPS = 3
"""Steps of one error a walk takes before its steps double. A DUT whose full trials pass and fail at random around
its ceiling (trial-to-trial jitter of a few errors) ends a walk from a good seed soonest with steps of one error;
doubling after three keeps a seed that is far off (a changed DUT) within about ``2 log2(distance / error) + 4``
full trials."""

JUMPS = 3
"""Times an unseeded search goes to the rate a failed trial forwarded (:attr:`TrialVerdict.forwarded`) instead of its
usual next step: a DUT out of capacity forwards about its ceiling, so the next trial there is close (a bucket or a
queue makes the forwarded rate fall towards the ceiling from above, trial after trial). A DUT whose loss is no matter
of capacity (random loss) forwards a fixed share of any rate: its jumps would descend by that share, step after step,
so after three the search goes on as it would have. A seeded search does not jump: its seed, the previous result, is
closer than one trial's forwarding tells on a DUT whose ceiling varies from trial to trial."""

SEEDED_TRIALS = 3
"""Full trials a seeded search without probes is expected to need near a good seed (a pass and a fail one error
apart, plus one when the first step lands on the wrong side): the planning figure of ``natbench plan`` for cps."""

SEEDED_FULL = 3
"""Full trials a seeded search with the short-fail rule is counted with by ``natbench plan``: the mean per seeded
repetition of throughput and forwarding in bench/campaign_time.py's simulation of the seed campaigns, rounded (3.4
and 3.1 for seed 000 Figure 2, 2.5 for seed 004 Table 4; the median is 2 or 3: a far walk now and then costs more)."""

SEEDED_PROBES = 0
"""Probes (short trials) a seeded search with the short-fail rule is counted with by ``natbench plan``: the same
simulation's mean, 0.0, 0.1 and 0.2, rounded. A failed short trial of the first repetition delivered more per second
than the rates a seeded walk tries near the ceiling, so no probe runs there (:attr:`ShortFailRule.delivered`); it
was 2 before that rule."""


@dataclass(frozen=True)
class ShortFailRule:
    """When a short trial proves its rate an upper bound for full trials, when a short trial is worth trying before a
    full one (a probe), and when the guard wants a full trial anyway (docs/engine.md, "The short-fail rule")."""

    acceptance: float
    """Loss ratio a full trial may show in each direction."""
    full_seconds: float
    """Duration of a full trial."""
    short_seconds: float
    """Duration of a short trial."""
    full_cost: float
    """Seconds a full trial takes in all (duration, receive wait, DUT commands): what a proving probe saves."""
    short_cost: float
    """Seconds a short trial takes in all: what a probe costs."""
    probes: int = 0
    """Probes earlier repetitions at this working point ran."""
    proofs: int = 0
    """Of them, the probes that proved their rate an upper bound."""
    delivered: float | None = None
    """The most frames per second a failed short trial of an earlier repetition at this working point delivered in
    its worst direction (:attr:`TrialVerdict.delivered`; None: none known). A short trial at or below it would pass:
    no probe there."""

    def allowance(self, rate: float) -> float:
        """Frames a full trial at ``rate`` may lose in one direction: acceptance x its frames (rate x duration)."""
        return self.acceptance * rate * self.full_seconds

    def proves(self, rate: float, lost: int) -> bool:
        """Whether a short trial at ``rate`` that lost ``lost`` frames in its worst direction proves ``rate`` an upper
        bound: more than a full trial there may lose in that direction (with acceptance 0: any frame)."""
        return lost > self.allowance(rate)

    def small(self, lost: int, rate: float, value: float) -> bool:
        """Whether the loss of the short trial that set the final upper bound ``rate`` is small: below half the
        frames it offered above ``value``, the rate whose full trial passed (``(rate - value) x short_seconds / 2``).

        A DUT that forwarded ``value`` and is out of capacity at ``rate`` drops the excess; had its capacity been in
        the lower half of (value, rate), the short trial would have lost at least that many frames (less only what
        its buffers absorbed). A smaller loss is either a ceiling within half an error below ``rate``, where a full
        trial at ``rate`` is the close call, or no overload at all (a start-up transient, a one-off loss): a full
        trial at ``rate`` tells which."""
        return lost < (rate - value) * self.short_seconds / 2

    def worth_probing(self, probes: int, proofs: int) -> bool:
        """Whether a probe is worth its time: the share of probes that proved their rate, by the rule of succession
        ``(proofs + 1) / (probes + 2)`` over this point's probes so far, times a full trial's time exceeds a short
        trial's. With no probe yet: when a short trial costs less than half a full one."""
        return (proofs + 1) / (probes + 2) * self.full_cost > self.short_cost


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
    """True: a full-duration trial (it may confirm the result); False: a short trial (it narrows, or proves an upper
    bound by the short-fail rule)."""
    probe: bool = False
    """A short trial run before a full one at the same rate, in the hope that it proves the rate an upper bound."""


@dataclass(frozen=True)
class TrialVerdict:
    """What the caller tells the search about one trial."""

    verdict: Verdict
    """Pass, fail or invalid."""
    reason: str = ""
    """Why (for the error message when invalid trials run out)."""
    tester_limited: bool = False
    """An invalid trial caused by the tester not keeping the rate."""
    lost: int | None = None
    """Frames the trial lost in its worst active direction (None: not known; such a trial proves no upper bound by
    the short-fail rule)."""
    stopped: bool = False
    """A full trial the tester ended early because it had failed (judged against the full trial's allowance)."""
    forwarded: float | None = None
    """A failed trial: the rate per direction a full trial there would forward, as the caller estimates it from the
    DUT's forwarding during this one (None: not known). Where the search looks next (:data:`JUMPS`), never a bound."""
    delivered: float | None = None
    """A trial shorter than a full one: the valid frames per second it delivered in its worst direction (None: not
    known). The DUT, loaded harder, forwarded that much in a short trial: a short trial at a lower rate would pass."""
    burst: float | None = None
    """A trial shorter than a full one: frames per second it delivered above the DUT's steady forwarding rate, in its
    worst direction (what queues and token buckets let through before they filled; None: not known). A short trial
    passes up to that much above what a full trial passes."""


@dataclass(frozen=True)
class FastOutcome(SearchOutcome):
    """A finished fast search: the binary search's outcome fields plus how it got there."""

    short_steps: int = 0
    """Short trials counted as pass or fail (probes included)."""
    full_steps: int = 0
    """Full-duration trials counted as pass or fail."""
    seeded: bool = False
    """True when the search started from a seed (a walk, no narrowing)."""
    rejected: tuple[float, ...] = ()
    """Rates the short trials narrowed to whose full-duration confirmation disagreed (the search moved on)."""
    probes: int = 0
    """Short trials run before a full one at the same rate (:attr:`FastStep.probe`)."""
    probe_proofs: int = 0
    """Probes that proved their rate an upper bound (no full trial ran there)."""
    short_bound: bool = False
    """True when the final upper bound was proven by a short trial (the short-fail rule), not by a full one."""
    guard_trials: int = 0
    """Full trials the guard ran at an upper bound a short trial with a small loss had set."""
    disproved: tuple[float, ...] = ()
    """Upper bounds set by a short trial that a full trial of the guard then passed."""
    stopped: int = 0
    """Failed full trials the tester ended early (a failed full trial all the same)."""
    jumps: int = 0
    """Times the search went to the rate a failed trial forwarded instead of its usual next step (:data:`JUMPS`)."""
    short_delivered: float | None = None
    """The most a failed short trial of this search delivered per second (:attr:`TrialVerdict.delivered`): the next
    repetitions' :attr:`ShortFailRule.delivered`."""


class _Run:
    """The state of one fast search (the bounds the trials established, counters)."""

    def __init__(
        self,
        trial: Callable[[FastStep], TrialVerdict],
        lower: float,
        upper: float,
        error: float,
        max_invalid: int,
        tester_retries: int,
        rule: ShortFailRule | None,
    ) -> None:
        self.trial = trial
        self.lower0, self.upper0, self.error = lower, upper, error
        self.grid = RateGrid(lower, upper, error)
        self.top = self.grid.top
        self.max_invalid, self.tester_retries = max_invalid, tester_retries
        self.rule = rule
        self.short = self.full = self.invalid = 0
        self.probes = self.probe_proofs = self.guards = self.stopped = 0
        self.tester_limited: list[float] = []
        """Rates the tester repeatedly could not send (each counted as a failed trial)."""
        self.proofs: dict[float, int] = {}
        """Rates a short trial proved upper bounds -> the frames it lost in its worst direction."""
        self.full_fails: set[float] = set()
        """Rates whose (latest) full trial failed."""
        self.short_passes: list[float] = []
        """Rates a short trial passed."""
        self.disproved: list[float] = []
        self.forwarded: dict[float, float] = {}
        """Rates whose latest trial failed -> what a full trial there would forward (:attr:`TrialVerdict.forwarded`)."""
        self.bursts: dict[float, float] = {}
        """Rates whose latest short trial failed -> its :attr:`TrialVerdict.burst`."""
        self.delivered: float | None = None
        """The most a failed short trial of this search delivered per second (:attr:`TrialVerdict.delivered`)."""
        self.jumps = 0
        self.may_jump = JUMPS
        """Jumps this search may take (none for a seeded one: its seed is closer than one trial's forwarding tells)."""

    def proves(self, rate: float, tv: TrialVerdict) -> bool:
        """Whether the short trial ``tv`` at ``rate`` proves ``rate`` an upper bound (the short-fail rule)."""
        return (
            self.rule is not None
            and tv.verdict is Verdict.FAIL
            and not tv.tester_limited
            and tv.lost is not None
            and self.rule.proves(rate, tv.lost)
        )

    def run_trial(self, rate: float, full: bool, lower: float, upper: float) -> bool:
        """Run the trial at ``rate`` until it is not invalid; True when it passed (a rate beyond the tester fails)."""
        attempt = streak = 0
        while True:
            tv = self.trial(FastStep(rate, lower, upper, attempt, full))
            if tv.verdict is not Verdict.INVALID:
                passed = tv.verdict is Verdict.PASS
                self.note_forwarded(rate, tv)
                if full:
                    self.full += 1
                    self.stopped += int(tv.stopped and not passed)
                    if passed:
                        self.full_fails.discard(rate)
                    else:
                        self.full_fails.add(rate)
                else:
                    self.short += 1
                    if passed:
                        self.short_passes.append(rate)
                    elif self.proves(rate, tv):
                        self.proofs[rate] = int(tv.lost or 0)
                return passed
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

    def note_forwarded(self, rate: float, tv: TrialVerdict) -> None:
        """Remember what the failed trial ``tv`` at ``rate`` forwarded (forget it when the trial passed)."""
        failed = tv.verdict is Verdict.FAIL and not tv.tester_limited
        for latest, value in ((self.forwarded, tv.forwarded), (self.bursts, tv.burst)):
            if failed and value is not None:
                latest[rate] = value
            else:
                latest.pop(rate, None)
        if failed and tv.delivered is not None:
            self.delivered = max(self.delivered or 0.0, tv.delivered)

    def jump(self, k: int, lo: int, below: int) -> int | None:
        """Where to go from the failed grid index ``k`` instead of ``below``, the search's usual next step: the grid
        rate at or below what a full trial at ``k`` would forward, when that lies below ``below`` and above ``lo``,
        and more than one ``error`` below ``k``'s rate (a loss that small says nothing of a ceiling: a start-up
        transient, a few frames); None: no jump (none known, no room, or :data:`JUMPS` used up)."""
        fwd = self.forwarded.get(self.grid.rate(k))
        if fwd is None or self.jumps >= self.may_jump or fwd >= self.grid.rate(k) - self.error:
            return None
        j = self.grid.index(fwd)
        if not lo < j < below:
            return None
        self.jumps += 1
        return j

    def should_probe(self, rate: float) -> bool:
        """Whether to try a short trial before the full one at ``rate``: the rule is given, no short trial passed at
        or above ``rate`` in this search and no failed short trial (of this search or an earlier repetition here)
        delivered ``rate`` or more per second (it would pass), and probes have paid here so far."""
        r = self.rule
        if r is None or any(p >= rate for p in self.short_passes):
            return False
        delivered = max(self.delivered or 0.0, r.delivered or 0.0)
        if rate <= delivered:
            return False  # a short trial loaded harder delivered more: one here would pass, and prove nothing
        return r.worth_probing(r.probes + self.probes, r.proofs + self.probe_proofs)

    def full_verdict(self, rate: float, lower: float, upper: float) -> bool:
        """Whether ``rate`` passes for full trials: False at once when a short trial already proved it an upper
        bound; else a probe when one is worth it (a proof ends it); else a full trial."""
        if rate in self.proofs:
            return False
        if self.should_probe(rate):
            self.probes += 1
            tv = self.trial(FastStep(rate, lower, upper, 0, False, probe=True))
            if tv.verdict is Verdict.INVALID:
                self.invalid += 1  # proves nothing, and is not retried: the full trial decides
            else:
                self.short += 1
                self.note_forwarded(rate, tv)
                if tv.verdict is Verdict.PASS:
                    self.short_passes.append(rate)
                elif self.proves(rate, tv):
                    self.probe_proofs += 1
                    self.proofs[rate] = int(tv.lost or 0)
                    return False
        return self.run_trial(rate, True, lower, upper)

    def passes(self, k: int, full: bool, lo: int, hi: int) -> bool:
        """A step of a walk or bisection at grid index ``k`` (the bounds ``lo``, ``hi`` are grid indices too): a
        full-trial verdict (:meth:`full_verdict`) or a short trial's."""
        g = self.grid
        rate, lower, upper = g.rate(k), g.rate(lo), g.rate(hi)
        return self.full_verdict(rate, lower, upper) if full else self.run_trial(rate, False, lower, upper)

    def bisect(self, lo: int, hi: int, full: bool) -> tuple[int, int]:
        """Binary search of the grid indices ``[lo, hi]`` (lo passed or is the lower bound, hi failed or is the upper
        bound) down to one cell."""
        lo, hi, _ = self.narrow(lo, hi, full, leave=False)
        return lo, hi

    def narrow(self, lo: int, hi: int, full: bool, *, leave: bool = True) -> tuple[int, int, int | None]:
        """The binary search of ``[lo, hi]`` (as :meth:`bisect`) that narrows an unseeded search, left (with
        ``leave``) as soon as a failed trial tells where a full trial is close (:meth:`jump`): then ``(lo, hi,
        start)`` with the index to walk from in full trials; else ``(lo, hi, None)``. A failed short trial tells it
        only when short trials cannot find the full trials' ceiling to within an ``error``: when it delivered more
        than one ``error`` per second above the DUT's steady forwarding rate (:attr:`TrialVerdict.burst`: a queue or
        token bucket, which lets short trials pass that much above the full ceiling); otherwise short trials narrow
        on, as they locate it well."""
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.passes(mid, full, lo, hi):
                lo = mid
                continue
            hi = mid
            burst = self.bursts.get(self.grid.rate(mid))
            if leave and (full or (burst is not None and burst > self.error)):
                start = self.jump(mid, lo if full else 0, mid)  # a short pass bounds nothing for full trials
                if start is not None:
                    return lo, hi, start
        return lo, hi, None

    def walk(self, start: int, lo: int, hi: int) -> tuple[int, int]:
        """The walk of full-trial verdicts from the grid index ``start`` between a lower bound ``lo`` (it passed a full
        trial, or is the search's) and an upper bound ``hi``: up while rates pass, down while they fail (:meth:`up`,
        :meth:`down`), then :meth:`bisect` of the last step."""
        if self.passes(start, True, lo, hi):
            lo, hi = self.up(start, hi, True)
        else:
            lo, hi = self.down(lo, start, True)
        return self.bisect(lo, hi, True)

    def widths(self) -> Iterator[int]:
        """The walk's steps in grid cells: :data:`WALK_STEPS` of one, then doubling."""
        width, n = 1, 0
        while True:
            yield width
            n += 1
            if n >= WALK_STEPS:
                width *= 2

    def down(self, lo: int, hi: int, full: bool) -> tuple[int, int]:
        """From a failed ``hi`` down (:meth:`widths`) until a rate passes or ``lo`` is reached. With full trials, a
        failed trial's forwarding may send the next step further down (:meth:`jump`); when the rate there passes, the
        walk goes up from it (:meth:`up`): the ceiling is then likely just above."""
        for width in self.widths():
            k = hi - width
            jumped = self.jump(hi, lo, k) if full else None
            k = k if jumped is None else jumped
            if k <= lo:
                return lo, hi
            if self.passes(k, full, lo, hi):
                # after a jump, up from there: the failed trial's forwarding put the ceiling just above
                return (k, hi) if jumped is None else self.up(k, hi, full)
            hi = k
        raise AssertionError("unreachable")  # pragma: no cover

    def up(self, lo: int, hi: int, full: bool) -> tuple[int, int]:
        """From a passed ``lo`` up (:meth:`widths`) until a rate fails or ``hi`` is reached."""
        for width in self.widths():
            k = lo + width
            if k >= hi:
                return lo, hi
            if not self.passes(k, full, lo, hi):
                return lo, k
            lo = k
        raise AssertionError("unreachable")  # pragma: no cover

    def guard(self, lo: int, hi: int) -> tuple[int, int]:
        """While the final upper bound ``hi`` rests on a short trial with a small loss (:meth:`ShortFailRule.small`)
        above a rate ``lo`` that passed a full trial: a full trial at ``hi``; if it passes, walk up from there."""
        g = self.grid
        while (
            self.rule is not None
            and lo > 0
            and g.rate(hi) in self.proofs
            and hi - lo <= 1
            and self.rule.small(self.proofs[g.rate(hi)], g.rate(hi), g.rate(lo))
        ):
            self.guards += 1
            rate = g.rate(hi)
            if not self.run_trial(rate, True, g.rate(lo), rate):
                del self.proofs[rate]  # the bound now rests on the full trial
                break
            self.disproved.append(rate)
            del self.proofs[rate]
            lo, hi = self.up(hi, self.top, True)
            lo, hi = self.bisect(lo, hi, True)
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
) -> FastOutcome:
    """Search ``[lower, upper]`` as the module docstring says; ``trial`` runs and stores one trial. Without ``rule``
    no short trial proves anything and no probe runs (the fast search as it was before the short-fail rule)."""
    if not (math.isfinite(lower) and math.isfinite(upper)) or lower < 0 or upper <= lower:
        raise SearchError(f"search bounds must be finite, non-negative and ordered, got [{lower}, {upper}]")
    if error <= 0:
        raise SearchError(f"search error must be positive, got {error}")
    run = _Run(trial, lower, upper, error, max_invalid, tester_retries, rule)
    g, top = run.grid, run.top
    lo, hi = 0, top
    seeded = seed is not None and lower < seed < upper and top > 1
    rejected: list[float] = []
    if seeded and seed is not None:
        start = min(max(g.index(seed), 1), top - 1)  # the grid rate at or below the seed, strictly inside
        run.may_jump = 0
        lo, hi = run.walk(start, lo, hi)
    else:
        lo, hi, jumped = run.narrow(lo, hi, narrow_full)
        if jumped is not None:
            # a failed trial told where a full one is close: walk from there in full trials, below the lowest rate
            # proved an upper bound (a full failure, a short trial's proof; the rates short trials passed prove nothing)
            proven = hi if narrow_full else min((g.index(r) for r in run.proofs if r >= g.rate(hi)), default=top)
            lo, hi = run.walk(jumped, lo if narrow_full else 0, proven)
        elif not narrow_full:
            # confirm with full-duration trials: a pass at lo (unless it is the lower bound) ...
            if lo > 0 and not run.run_trial(g.rate(lo), True, g.rate(lo), g.rate(hi)):
                rejected.append(g.rate(lo))
                lo, hi = run.down(0, lo, True)
                lo, hi = run.bisect(lo, hi, True)
            # ... and an upper bound at hi (unless it is the upper bound, never tested, or a short trial proved it)
            elif hi < top and g.rate(hi) not in run.proofs and run.run_trial(g.rate(hi), True, g.rate(lo), g.rate(hi)):
                rejected.append(g.rate(hi))
                lo, hi = run.up(hi, top, True)
                lo, hi = run.bisect(lo, hi, True)
    lo, hi = run.guard(lo, hi)
    value, bound = g.rate(lo), g.rate(hi)
    # the tester's ceiling: the lowest rate it could not send above the result; one at or below it was disproved by a
    # valid passing trial at or above it (a short trial that lost its pace to a preemption, say)
    tester_ceiling = min((r for r in run.tester_limited if r > value), default=None)
    if tester_ceiling is not None and bound > tester_ceiling:
        bound = tester_ceiling
    return FastOutcome(
        value=value,
        lower=value,
        upper=bound,
        passed=lo > 0,  # the lower bound is never tested: above it, lo passed a full trial
        steps=run.short + run.full,
        invalid=run.invalid,
        at_upper_limit=bound == upper,
        tester_ceiling=tester_ceiling,
        short_steps=run.short,
        full_steps=run.full,
        seeded=seeded,
        rejected=tuple(rejected),
        probes=run.probes,
        probe_proofs=run.probe_proofs,
        short_bound=bound in run.proofs and bound != tester_ceiling,
        guard_trials=run.guards,
        disproved=tuple(run.disproved),
        stopped=run.stopped,
        jumps=run.jumps,
        short_delivered=run.delivered,
    )
