"""TRex latency statistics -> natbench LatencyStats (pure)."""

from __future__ import annotations

from collections.abc import Mapping as MappingABC
from typing import Any

from natbench.results import LatencyStats


def _quantile(hist: list[tuple[float, int]], q: float) -> float:
    total = sum(c for _, c in hist)
    need = q * total
    acc = 0
    for edge, count in hist:
        acc += count
        if acc >= need:
            return edge
    return hist[-1][0]


def latency_from_pgid(entry: MappingABC[str, Any], received: int) -> LatencyStats | None:
    """Convert one ``get_pgid_stats()['latency'][pg_id]`` entry (microseconds) to seconds.

    TRex keeps a histogram with decade-wide buckets (10 us steps below 100 us,
    100 us steps below 1 ms, ...) keyed by their lower edge; the median and the
    99.9th percentile are read from it, so they are exact to one bucket and
    clamped into [min, max]. None when no tagged frame arrived.
    """
    lat = entry.get("latency", entry)
    hist_raw = lat.get("histogram") or {}
    hist = sorted((float(k), int(v)) for k, v in hist_raw.items() if int(v) > 0)
    lo = float(lat.get("total_min") or 0.0)
    hi = float(lat.get("total_max") or 0.0)
    if not hist or received <= 0:
        return None

    def clamp(x: float) -> float:
        return min(max(x, lo), hi) / 1e6

    return LatencyStats(
        samples=int(received),
        minimum=lo / 1e6,
        median=clamp(_quantile(hist, 0.5)),
        p99_9=clamp(_quantile(hist, 0.999)),
        maximum=hi / 1e6,
    )
