"""Where a failed trial says a full one is close (:class:`JumpPolicy`), and when the narrowing is left to go there
(:class:`LeaveOnFailure`, :class:`LeaveOnBurst`; docs/engine.md, "Where to look next")."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.search.fast.ledger import Ledger

JUMPS = 3
"""Times an unseeded search goes to the rate a failed trial forwarded (:attr:`TrialVerdict.forwarded`) instead of its
usual next step: a DUT out of capacity forwards about its ceiling, so the next trial there is close (a bucket or a
queue makes the forwarded rate fall towards the ceiling from above, trial after trial). A DUT whose loss is no matter
of capacity (random loss) forwards a fixed share of any rate: its jumps would descend by that share, step after step,
so after three the search goes on as it would have. A seeded search does not jump: its seed, the previous result, is
closer than one trial's forwarding tells on a DUT whose ceiling varies from trial to trial."""


@dataclass(frozen=True)
class JumpPolicy:
    """Jumps to the rate a failed trial forwarded, at most :attr:`budget` of them."""

    ledger: Ledger
    """This search's evidence (what failed trials forwarded; it counts the jumps taken)."""
    error: float
    """The search's error: a failed trial that forwarded within one error of its rate says nothing of a ceiling."""
    budget: int
    """Jumps this search may take (:data:`JUMPS`; none for a seeded one)."""

    def target(self, k: int, lo: int, below: int) -> int | None:
        """Where to go from the failed grid index ``k`` instead of ``below``, the search's usual next step: the grid
        rate at or below what a full trial at ``k`` would forward, when that lies below ``below`` and above ``lo``,
        and more than one ``error`` below ``k``'s rate (a loss that small says nothing of a ceiling: a start-up
        transient, a few frames); None: no jump (none known, no room, or the budget spent)."""
        book = self.ledger
        rate = book.rate(k)
        fwd = book.forwarded.get(rate)
        if fwd is None or book.jumps >= self.budget or fwd >= rate - self.error:
            return None
        j = book.grid.index(fwd)
        if not lo < j < below:
            return None
        book.jumps += 1
        return j


@dataclass(frozen=True)
class LeaveOnFailure:
    """A narrowing of full-trial verdicts (cps) is left on any failed trial's word: where it says a full trial is
    close, the walk starts."""

    jumps: JumpPolicy
    """Where a failed trial points."""

    def start(self, mid: int, lo: int) -> int | None:
        """The grid index to walk from after the failed ``mid`` of the narrowing ``[lo, mid]`` (None: narrow on)."""
        return self.jumps.target(mid, lo, mid)


@dataclass(frozen=True)
class LeaveOnBurst:
    """A narrowing of short trials is left only when short trials cannot find the full trials' ceiling to within an
    ``error``: the failed short trial delivered more than one ``error`` per second above the DUT's steady forwarding
    rate (:attr:`TrialVerdict.burst`: a queue or token bucket lets short trials pass that much above the full
    ceiling); otherwise the short trials narrow on, as they locate it well."""

    jumps: JumpPolicy
    """Where a failed trial points."""
    error: float
    """The search's error."""

    def start(self, mid: int, lo: int) -> int | None:
        """The grid index to walk from after the failed short trial at ``mid`` (None: narrow on); the narrowing's
        lower bound ``lo`` rests on short passes, which bound nothing for full trials, so the walk may go below it."""
        burst = self.jumps.ledger.bursts.get(self.jumps.ledger.rate(mid))
        if burst is None or burst <= self.error:
            return None
        return self.jumps.target(mid, 0, mid)
