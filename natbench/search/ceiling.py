"""The tester's ceiling, learnt once per working point (:func:`known_ceiling`): a rate an earlier repetition's search
found beyond the tester (it could not send it, trial after trial) is not retried at that point: at or above it, the
first trial the tester cannot keep settles the rate (:class:`~natbench.search.retry.RetryRule`). Each repetition
still tries the rates its search asks for, so a tester that was slow for a while (a busy host) caps nothing.

What it may conclude: nothing about the DUT. A search that ends at the tester's ceiling reports the highest rate that
passed below it, marked tester-bound: a lower bound of the DUT, as the repetition that first met the ceiling reports
it. What it may not: take the ceiling for the DUT's, or carry it to another working point (another plan, other
frame sizes and tables: the tester's own cost per frame changes). A ceiling is only learnt from a search that retried
the rate and found the tester short of it every time (its rate, not its clumps: a DUT's loss its sending pattern could
explain is met near the DUT's ceiling, not the tester's), so one preempted trial does not cap the later repetitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from natbench.judging import RATE
from natbench.results import RepetitionResult


def known_ceiling(earlier: Sequence[RepetitionResult]) -> float | None:
    """The lowest rate the ``earlier`` results of a metric at a working point stored as the tester's ceiling *of its
    rate* (``tester_ceiling`` of a result that ended there because the tester could not send faster,
    ``tester_bound_cause: rate``); None when none did. A ceiling the tester's clumps made (its sending pattern could
    explain the DUT's loss) is no limit of its rate: it is not learnt, and each repetition meets it, or not, on its
    own."""
    found = [
        float(rate)
        for r in earlier
        if isinstance(rate := r.extra.get("tester_ceiling"), int | float)
        and not isinstance(rate, bool)
        and r.extra.get("tester_bound_cause") == RATE
    ]
    return min(found) if found else None
