"""One-way delay statistics of RFC 8219 (pure): typical and worst-case latency, PDV.

Percentiles are nearest-rank: the p-th percentile of n delays is the smallest delay with at least
``p * n`` of the delays at or below it (rank ``ceil(p * n)``, 1-based). With fewer than 1000 delays
the 99.9th percentile is therefore the largest one. The median of exact delays is the usual one (the
mean of the two middle values for an even count); from the histogram it is the nearest-rank one.

Exact statistics come from the delays themselves (tagged frames: bounded by the number of tagged
frames). PDV over every frame of a trial uses the software tester's delay histogram instead: buckets
are exact below ``2**HIST_BITS`` ns; above, each power of two is split into ``2**(HIST_BITS - 1)``
buckets, and a percentile is reported as the middle of its bucket clamped into [min, max], so it is off
by at most half a bucket: ``value / 2**HIST_BITS`` (0.1 % for ``HIST_BITS`` = 10). The minimum and the
maximum are exact (the data path tracks them).
"""

from __future__ import annotations

import math

import numpy as np

from natbench.results import LatencyStats

HIST_BITS = 10
"""Bits of exact resolution of the delay histogram (must equal the data path's ``HIST_BITS``)."""

WORST_CASE = 0.999
"""The worst-case latency and PDV percentile (RFC 8219 7.2 and 7.3.1: 99.9th)."""


def relative_error(bits: int = HIST_BITS) -> float:
    """Largest relative error of a percentile read from the histogram: half a bucket, ``2**-bits``."""
    return 2.0**-bits


def nearest_rank(sorted_values: np.ndarray, p: float) -> float:
    """The nearest-rank ``p`` percentile (0 < p <= 1) of ascending ``sorted_values``."""
    n = int(sorted_values.size)
    if n == 0:
        raise ValueError("no values")
    rank = max(math.ceil(p * n), 1)
    return float(sorted_values[rank - 1])


def exact_stats(ns: np.ndarray) -> LatencyStats:
    """Statistics (seconds) of the delays ``ns`` (nanoseconds, one per frame); negative clock artefacts
    count as 0."""
    s = np.sort(np.clip(ns.astype(np.int64), 0, None)).astype(np.float64) * 1e-9
    return LatencyStats(
        samples=int(s.size),
        minimum=float(s[0]),
        median=float(np.median(s)),
        p99_9=nearest_rank(s, WORST_CASE),
        maximum=float(s[-1]),
    )


def bucket_edges(index: np.ndarray, bits: int = HIST_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Lower edge and width (ns) of histogram buckets ``index`` (the inverse of the data path's bucket
    function)."""
    index = np.asarray(index, dtype=np.int64)
    exact = 1 << bits
    half = 1 << (bits - 1)
    above = np.maximum(index - exact, 0)
    shift = above // half + 1
    top = above % half + half
    lower = np.where(index < exact, index, top << shift)
    width = np.where(index < exact, 1, np.left_shift(np.int64(1), shift))
    return lower.astype(np.int64), width.astype(np.int64)


def histogram_percentile(hist: np.ndarray, p: float, bits: int = HIST_BITS) -> float:
    """The nearest-rank ``p`` percentile (ns) of the delays counted in ``hist``: the middle of the bucket
    holding rank ``ceil(p * n)`` (exact below ``2**bits`` ns)."""
    counts = np.asarray(hist, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        raise ValueError("empty histogram")
    rank = max(math.ceil(p * n), 1)
    i = int(np.searchsorted(np.cumsum(counts), rank))
    lower, width = bucket_edges(np.array([i]), bits)
    return float(lower[0]) + (float(width[0]) - 1.0) / 2.0


def histogram_stats(hist: np.ndarray, minimum_ns: int, maximum_ns: int, bits: int = HIST_BITS) -> LatencyStats:
    """Statistics (seconds) of every frame's delay from the histogram and the exact extremes; negative
    delays (clock artefacts) were counted as 0. ``error_bound``: the relative error of median and p99.9."""
    lo = max(int(minimum_ns), 0)
    hi = max(int(maximum_ns), lo)

    def clamp(x: float) -> float:
        return min(max(x, lo), hi) * 1e-9

    return LatencyStats(
        samples=int(np.asarray(hist, dtype=np.int64).sum()),
        minimum=lo * 1e-9,
        median=clamp(histogram_percentile(hist, 0.5, bits)),
        p99_9=clamp(histogram_percentile(hist, WORST_CASE, bits)),
        maximum=hi * 1e-9,
        frames="all",
        error_bound=relative_error(bits),
    )
