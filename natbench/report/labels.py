"""How reports name, order and scale metrics, read from the metrics registry.

A run directory may hold a metric this natbench does not know (written by another version): it is
named by itself, ordered after the known ones, and reported as stored.
"""

from __future__ import annotations

from typing import Any

from natbench.metrics import Metric, all_metrics, find_metric

__all__ = [
    "baseline_metric",
    "in_milliseconds",
    "in_performance_table",
    "lower_is_better",
    "order_key",
    "plot_labels",
    "table_labels",
]


def order_key(name: str) -> tuple[int, str]:
    """Sort key of a metric: measurement order, unknown metrics last (by name)."""
    m = find_metric(name)
    return (m.order if m is not None else 1 << 30, name)


def table_labels(name: str) -> tuple[str, str]:
    """(row-name prefix, relative scale-up row name) of a metric in report tables."""
    m = find_metric(name)
    return (m.label, m.scale_label) if m is not None else (name, f"{name} rel. scale up")


def plot_labels(name: str) -> tuple[str, str]:
    """(title, y-axis label) of a metric's plots."""
    m = find_metric(name)
    return (m.title, m.axis) if m is not None else (name, "")


def lower_is_better(name: str) -> bool:
    """True for metrics where a higher value is worse (frame loss, latency, PDV)."""
    m = find_metric(name)
    return m is not None and m.lower_is_better


def in_performance_table(name: str) -> bool:
    """False for a metric reported in a table of its own (tear-down)."""
    m = find_metric(name)
    return m is None or not m.own_table


def in_milliseconds(name: str) -> bool:
    """True when tables show the metric's seconds as milliseconds (latency, PDV)."""
    m = find_metric(name)
    return m is not None and m.in_milliseconds


def baseline_metric() -> Metric[Any] | None:
    """The registered plain-forwarding baseline (forwarding: its ``baseline_for`` is throughput)."""
    return next((m for m in all_metrics() if m.baseline_for is not None), None)
