"""The fast search's seam with its caller: the trial it asks for (:class:`FastStep`) and what it is told of it
(:class:`TrialVerdict`)."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.results import Verdict


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
    """Frames the trial lost in its worst active direction, net of what the tester's own deviation explains, as its
    verdict counted them (None: not known; such a trial proves no upper bound by the short-fail rule)."""
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
