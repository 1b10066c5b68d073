"""Throughput by MLRsearch 1.2.1 (the ``mlr`` extra): natbench's trials behind MLRsearch's one seam.

MLRsearch asks for ``measure(duration, load)``; the caller hands :func:`mlr_search` a function that runs
(and stores) one trial at a per-direction load and returns the frames offered and forwarded. One goal is
searched: the loss ratio a passing trial may show (the metric's acceptance), exceed ratio 0 (no trial at
the reported load may exceed it), relative width ``error / upper``; every trial lasts the whole duration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from natbench.errors import SearchError

__all__ = ["mlr_search", "problems"]


def problems() -> list[str]:
    """Why this machine cannot search with ``algorithm: mlr`` (empty when it can): MLRsearch must be importable."""
    try:
        import MLRsearch  # noqa: F401
    except ImportError as exc:
        return [f'MLRsearch is not installed: pip install -e ".[mlr]" ({type(exc).__name__})']
    return []


def mlr_search(
    measure: Callable[[float], tuple[int, int]],
    *,
    lower: float,
    upper: float,
    error: float,
    loss_ratio: float,
    duration: float,
) -> float:
    """The conditional throughput MLRsearch finds in ``[max(lower, 1), upper]`` (0.0 when no load passed).

    ``measure(load)`` runs one trial at ``load`` frames per second per direction and returns
    ``(offered, forwarded)`` frame counts over all directions. SearchError when MLRsearch is not installed.
    """
    try:
        from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise SearchError("algorithm 'mlr' needs MLRsearch: pip install 'natbench[mlr]'") from exc

    class _Measurer(AbstractMeasurer):
        def measure(self, intended_duration: float, intended_load: float) -> Any:
            offered, forwarded = measure(float(intended_load))
            return MeasurementResult(
                intended_duration=intended_duration,
                intended_load=intended_load,
                offered_count=offered,
                forwarding_count=forwarded,
            )

    goal = SearchGoal(
        loss_ratio=loss_ratio,
        exceed_ratio=0.0,
        relative_width=max(error / upper, 1e-6),
        initial_trial_duration=duration,
        final_trial_duration=duration,
        duration_sum=duration,
        preceding_targets=0,
        fail_fast=False,
    )
    config = Config()
    config.goals = [goal]
    config.min_load = max(lower, 1.0)
    config.max_load = upper
    config.warmup_duration = None
    config.search_duration_max = 10**9
    results = MultipleLossRatioSearch(config=config).search(_Measurer(), debug=lambda _m: None)
    res = results[goal]
    return float(res.conditional_throughput) if res is not None and res.conditional_throughput is not None else 0.0
