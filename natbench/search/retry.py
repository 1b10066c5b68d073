"""How a search retries invalid trials (:class:`RetryRule`): the same rate again, at most ``max_invalid`` times in a
row; a rate the tester could not keep on every try is beyond the tester (its ceiling), at once when the tester was
found short there or below in an earlier repetition at the point (:func:`~natbench.search.ceiling.known_ceiling`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryRule:
    """The retry rule of one search (the binary search's and the fast search's alike)."""

    max_invalid: int
    """Invalid trials in a row at one rate before the search fails (:class:`~natbench.errors.SearchError`)."""
    tester_retries: int
    """Retries of a rate the tester could not keep before that rate counts as failed (the tester's ceiling)."""
    known_ceiling: float | None = None
    """The lowest rate an earlier repetition at the working point found beyond the tester's rate (None: none): at or
    above it the first trial the tester cannot keep settles it, without retries."""

    def beyond_tester(self, rate: float, attempts: int, tester_streak: int) -> bool:
        """Whether ``rate``, whose last ``attempts`` trials were invalid, the last ``tester_streak`` of them because the
        tester could not keep the rate, is beyond the tester: every attempt was the tester's, and more than
        ``min(max_invalid, tester_retries)`` of them, or any at or above the known ceiling."""
        if tester_streak != attempts or attempts < 1:
            return False
        known = self.known_ceiling is not None and rate >= self.known_ceiling
        return known or attempts > min(self.max_invalid, self.tester_retries)

    def exhausted(self, attempts: int) -> bool:
        """Whether ``attempts`` invalid trials in a row are more than the search may retry."""
        return attempts > self.max_invalid
