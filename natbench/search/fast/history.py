"""What the earlier repetitions of a metric at a working point tell its fast search: where to start
(:func:`prior_seed`), whether probes paid (:func:`probe_history`) and how much a failed short trial delivered
(:func:`short_delivered`)."""

from __future__ import annotations

from collections.abc import Sequence

from natbench.results import RepetitionResult


def short_delivered(earlier: Sequence[RepetitionResult]) -> float | None:
    """The most a failed short trial of the ``earlier`` repetitions delivered per second in its worst direction (their
    results' ``short_delivered``; None: none)."""
    seen = [float(r.extra["short_delivered"]) for r in earlier if r.extra.get("short_delivered") is not None]
    return max(seen) if seen else None


def probe_history(earlier: Sequence[RepetitionResult]) -> tuple[int, int]:
    """(probes, proofs) of the ``earlier`` repetitions: what they learnt about probes."""
    probes = sum(int(r.extra.get("probes") or 0) for r in earlier)
    proofs = sum(int(r.extra.get("probe_proofs") or 0) for r in earlier)
    return probes, proofs


def prior_seed(earlier: Sequence[RepetitionResult], lower: float) -> float | None:
    """The middle of the final interval of the latest ``earlier`` repetition that found a rate above ``lower``,
    ``value + error / 2`` (None when there is none).

    The latest, not the median of all: a walk from the seed ends near it when the DUT's trials pass and fail at
    random over a band many errors wide, so a median would hold every later repetition near an unlucky first one,
    while the latest result moves on (an up-and-down staircase). The search starts at the grid rate at or below the
    seed (:class:`~natbench.search.grid.RateGrid`): the previous value. A start off the grid (``floor(value + error
    / 2)``) would put every later repetition on a grid half an error above the one the binary search tests, and the
    medians that much above binary's (bench/search_bias.py measures the difference)."""
    found = [r for r in earlier if r.value is not None and r.value > lower]
    if not found:
        return None
    latest = max(found, key=lambda r: r.repetition)
    return float(latest.value or 0.0) + float(latest.error or 0.0) / 2
