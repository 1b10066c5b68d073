"""The rates a search may test: :class:`RateGrid`, ``lower + k x error`` up to ``upper``.

Every search of natbench tests rates of one grid, so its final interval is one cell, exactly ``error`` wide (the
error the seed tables print), whatever ``upper`` is; with whole-number ``lower`` and ``error`` every rate tested is
a whole number, as siitperf's are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RateGrid:
    """The rates a search may test: ``lower + k x error`` for ``k = 0 .. top``, the top one being ``upper``."""

    lower: float
    """Rate of index 0 (the search's lower bound, never tested)."""
    upper: float
    """Rate of index :attr:`top` (the search's upper bound, never tested)."""
    error: float
    """Distance of neighbouring rates (the search's error)."""

    @property
    def top(self) -> int:
        """Index of ``upper``: ``ceil((upper - lower) / error)``, a quotient within 1e-9 of a whole number taken
        as that number (0.3 / 0.1 in floating point)."""
        q = (self.upper - self.lower) / self.error
        whole = round(q)
        if abs(q - whole) <= 1e-9 * max(1.0, q):
            return max(1, int(whole))
        return max(1, math.ceil(q))

    def rate(self, k: int) -> float:
        """The rate of index ``k`` (``upper`` for ``k >= top``)."""
        if k >= self.top:
            return float(self.upper)
        return float(min(self.lower + k * self.error, self.upper))

    def index(self, rate: float) -> int:
        """Index of the highest grid rate at or below ``rate`` (within 1e-9 of an error), in ``[0, top]``."""
        if rate >= self.upper:
            return self.top
        return max(0, min(self.top, math.floor((rate - self.lower) / self.error + 1e-9)))
