"""The guard (:class:`GuardPolicy`): when the final upper bound rests on a short trial whose loss was small, a full
trial there decides, so a start-up transient or a one-off loss is not taken for the DUT's ceiling."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.search.fast.ledger import Ledger
from natbench.search.fast.moves import Ask, Move, Nominee, bisect, walk_up
from natbench.search.fast.rule import ShortFailRule


@dataclass(frozen=True)
class GuardPolicy:
    """Full trials at an upper bound a short trial with a small loss set (none without the short-fail rule)."""

    rule: ShortFailRule | None
    """The short-fail rule: what a small loss is (:meth:`~natbench.search.fast.rule.ShortFailRule.small`)."""
    ledger: Ledger
    """This search's evidence."""

    def wants(self, lo: int, hi: int) -> bool:
        """Whether the final interval ``[lo, hi]`` (grid indices, one cell) needs a full trial at ``hi``: ``lo``
        passed a full trial (it is no lower bound of the search) and ``hi`` rests on a short trial's proof whose loss
        was small against the frames offered above ``lo``'s rate."""
        book = self.ledger
        return (
            self.rule is not None
            and lo > 0
            and book.proven(hi)
            and self.rule.small(book.proofs[book.rate(hi)], book.rate(hi), book.rate(lo))
        )

    def hold(self, lo: int, hi: int, top: int) -> Move:
        """While :meth:`wants`: a full trial at ``hi``. If it fails, the bound rests on it; if it passes, the short
        trial's bound was no ceiling (disproved): walk up from ``hi`` (to ``top``, the search's upper bound) and
        bisect the last step."""
        book = self.ledger
        while self.wants(lo, hi):
            book.guards += 1
            rate = book.rate(hi)
            if not (yield Nominee(hi, lo, hi, Ask.FULL)):
                book.withdraw(rate, disproved=False)  # the bound now rests on the full trial
                break
            book.withdraw(rate, disproved=True)
            lo, hi = yield from walk_up(hi, top)
            lo, hi, _ = yield from bisect(lo, hi, Ask.VERDICT)
        return lo, hi
