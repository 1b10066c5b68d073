"""The tester's ceiling, learnt once per working point (:class:`KnownCeiling`): a rate an earlier repetition's search
found beyond the tester (it could not send it, trial after trial) is not tested again at that point.

What it may conclude: nothing about the DUT. A search that ends at the known ceiling reports the highest rate that
passed below it, marked tester-bound: a lower bound of the DUT, exactly as the repetition that first met the ceiling
reports it. What it may not: take the ceiling for the DUT's, or carry it to another working point (another plan, other
frame sizes and tables: the tester's own cost per frame changes). A ceiling is only learnt from a search that retried
the rate and found the tester short of it every time (its rate, not its clumps: a DUT's loss its sending pattern could
explain is met near the DUT's ceiling, not the tester's), so one preempted trial does not cap the later repetitions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from natbench.judging import RATE
from natbench.results import RepetitionResult
from natbench.search.grid import RateGrid
from natbench.search.outcome import SearchOutcome

__all__ = ["KnownCeiling"]


@dataclass(frozen=True)
class KnownCeiling:
    """The lowest tester ceiling the earlier repetitions of a metric at a working point found, and why."""

    rate: float
    """The rate the tester could not send (a rate of the search's grid)."""
    cause: str | None = None
    """Why, as the earlier result stored it (``tester_bound_cause``: its rate, or its clumps); None: not stored."""

    @classmethod
    def learnt(cls, earlier: Sequence[RepetitionResult]) -> KnownCeiling | None:
        """The lowest ceiling the ``earlier`` results stored as the tester's *rate* (``tester_ceiling`` of a result
        that ended there because the tester could not send faster, ``tester_bound_cause: rate``); None when none did.
        A ceiling the tester's clumps made (its sending pattern could explain the DUT's loss) is no limit of its rate:
        it is not learnt, and each repetition meets it, or not, on its own."""
        found = [
            float(rate)
            for r in earlier
            if isinstance(rate := r.extra.get("tester_ceiling"), int | float)
            and not isinstance(rate, bool)
            and r.extra.get("tester_bound_cause") == RATE
        ]
        return cls(min(found), RATE) if found else None

    def caps(self, lower: float, upper: float, error: float) -> bool:
        """Whether it narrows the search range ``[lower, upper]``: below ``upper``, with a rate of the grid left to
        test below it (a ceiling one cell above ``lower`` leaves none: the search meets it again itself)."""
        grid = RateGrid(lower, upper, error)
        return self.rate < upper and grid.index(self.rate) > 1

    def outcome(self, out: SearchOutcome) -> SearchOutcome:
        """The outcome of a search run below the ceiling, as a search that met it reports it: when its upper bound is
        the ceiling it is tester-bound (not at the search's upper limit), with this ceiling."""
        if out.upper < self.rate:
            return out
        known = out.tester_ceiling
        ceiling = self.rate if known is None else min(known, self.rate)
        return dataclasses.replace(out, at_upper_limit=False, tester_ceiling=ceiling)

    def causes(self) -> Mapping[float, str]:
        """The ceiling's cause by rate, as a repetition's tester limits give it (empty when not stored)."""
        return {self.rate: self.cause} if self.cause is not None else {}
