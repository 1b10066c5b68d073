"""Compare two runs: per metric and working point (matched by point id) the change of
median / min / max, and which changes exceed a threshold (pure functions on summaries)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from natbench.errors import ConfigError
from natbench.metrics import reported_metric
from natbench.values import parse_number

STATS = ("median", "min", "max")
"""The statistics a ``--fail`` rule may name."""

_SHOWN = 40
"""A ``--fail`` value quoted in an error is cut to this many characters."""


@dataclass(frozen=True)
class Threshold:
    """A ``--fail`` rule: fail when ``stat`` got worse by more than ``amount``."""

    stat: str
    """median, min or max."""
    amount: float
    """Percent (``percent`` True) or an absolute amount in the metric's reported unit."""
    percent: bool
    """Whether ``amount`` is a percentage of run A's value."""

    def __str__(self) -> str:
        return f"{self.stat}:{self.amount:g}{'%' if self.percent else ''}"


def parse_threshold(spec: str) -> Threshold:
    """Parse ``median:5%`` (relative) or ``min:1000`` (absolute, in the metric's unit). The amount is read as a
    campaign reads numbers (:func:`natbench.values.parse_number`: ASCII digits, finite, ``2^10`` and ``5k``
    too) and must not be negative; ConfigError naming ``--fail`` otherwise."""
    stat, sep, rest = spec.strip().partition(":")
    percent = rest.endswith("%")
    amount_text = rest[:-1] if percent else rest
    try:
        amount = parse_number(amount_text) if stat in STATS and sep and amount_text.strip() else None
    except ValueError as exc:
        problem = str(exc)
        amount = None
    else:
        problem = "expected STAT:AMOUNT[%] with STAT median|min|max, e.g. median:5%"
    if amount is not None and amount < 0:
        amount, problem = None, "the amount must not be negative (how much worse B may be)"
    if amount is None:
        shown = repr(spec) if len(repr(spec)) <= _SHOWN else repr(spec)[: _SHOWN - 4] + "...'"
        raise ConfigError(f"bad threshold {shown}: {problem}", field="--fail")
    return Threshold(stat, amount, percent)


def compare_summaries(
    a: pd.DataFrame, b: pd.DataFrame, labels_a: dict[str, str], labels_b: dict[str, str]
) -> pd.DataFrame:
    """Outer join of two :func:`~natbench.report.aggregate.summarize` frames on (point_id, metric).

    Columns: ``point_id``, ``metric``, ``label``, ``presence`` (both / only A / only B), and per
    stat ``<stat>_a``, ``<stat>_b``, ``<stat>_change`` (B - A), ``<stat>_pct`` (100 * change / A),
    ``<stat>_worse`` (the change in the metric's worse direction: positive = got worse).
    """
    cols = ["median", "min", "max", "experiments"]
    ra = a.reset_index()[["point_id", "metric", *cols]].astype({"point_id": str, "metric": str})
    rb = b.reset_index()[["point_id", "metric", *cols]].astype({"point_id": str, "metric": str})
    j = ra.merge(rb, on=["point_id", "metric"], how="outer", suffixes=("_a", "_b"), indicator=True)
    j["presence"] = j["_merge"].map({"both": "both", "left_only": "only A", "right_only": "only B"}).astype(str)
    j = j.drop(columns="_merge")
    j["label"] = [labels_a.get(p) or labels_b.get(p) or p for p in j["point_id"]]
    worse_up = {name: reported_metric(name).lower_is_better for name in j["metric"].unique()}  # resolved once
    sign = j["metric"].map(lambda m: -1.0 if worse_up[m] else 1.0)  # a higher value is worse
    for stat in ("median", "min", "max"):
        change = j[f"{stat}_b"] - j[f"{stat}_a"]
        j[f"{stat}_change"] = change
        j[f"{stat}_pct"] = 100 * change / j[f"{stat}_a"].where(j[f"{stat}_a"] != 0)
        j[f"{stat}_worse"] = -sign * change
    return j.sort_values(["metric", "presence", "label"]).reset_index(drop=True)


def exceeded(comparison: pd.DataFrame, threshold: Threshold) -> pd.Series:
    """Boolean per row: the stat got worse by more than the threshold (rows in both runs only)."""
    worse = comparison[f"{threshold.stat}_worse"]
    if threshold.percent:
        base = comparison[f"{threshold.stat}_a"].abs()
        over = worse > threshold.amount / 100 * base
    else:
        over = worse > threshold.amount
    return over.fillna(False).astype(bool) & (comparison["presence"] == "both")
