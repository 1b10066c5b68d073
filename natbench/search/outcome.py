"""Where a finished search stopped: :class:`SearchOutcome`, what every search algorithm returns (an algorithm's own
outcome adds its fields)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchOutcome:
    """Where a finished search stopped."""

    value: float
    """The result: the highest rate that passed (the initial lower bound when none did)."""
    lower: float
    """Final lower bound (== ``value``)."""
    upper: float
    """Final upper bound."""
    steps: int
    """Trials counted as pass or fail."""
    invalid: int
    """Invalid trials (retried, not counted)."""
    at_upper_limit: bool
    """True when no step failed: the DUT may be faster than the search range allows."""
    stopped_early: bool = False
    """True when the search ended before reaching the error bound (``stop_below``)."""
    tester_ceiling: float | None = None
    """Lowest rate the tester repeatedly could not send (None when it always kept the rate)."""
    passed: bool = True
    """False when no rate the search tried passed: ``value`` is then only the initial lower bound, not a
    measurement (every trial failed down to it); a result stores no value for it (``no_passing_rate``)."""

    @property
    def tester_bound(self) -> bool:
        """True when the final upper bound is the tester's ceiling: the value is a lower bound of the DUT."""
        return self.tester_ceiling is not None and self.upper >= self.tester_ceiling

    @property
    def error(self) -> float:
        """upper - lower when the search stopped (what the seed tables call "error")."""
        return self.upper - self.lower
