"""The metrics natbench measures: one module per metric, each holding its settings model, its procedure
(one repetition at one working point, written only against the Tester and Dut protocols) and its
:class:`Metric` entry; the registry that the campaign schema, the runner, ``natbench plan`` and the
reports read; and the trial plumbing the procedures share (:mod:`~natbench.metrics.trial`,
:mod:`~natbench.metrics.phase2`, :mod:`~natbench.metrics.responder`, :mod:`~natbench.judging`).

A procedure's every trial (each search step, each fill, each timed delete) becomes a
:class:`~natbench.results.TrialRecord` handed to ``ctx.emit`` *before* the next trial starts; the runner
stores it (fsync) and tells the observers.

Adding a metric: a module here defining its settings model, its procedure and a :class:`Metric` (with what reports
show of it: :mod:`~natbench.metrics.declare`), and one line below that registers it.
"""

from natbench.metrics.capacity import CAPACITY
from natbench.metrics.context import ProcedureContext
from natbench.metrics.cps import CPS
from natbench.metrics.declare import Column, CountRow, Lifetime, Mark, OwnTable, StatRows, TableRow
from natbench.metrics.frame_loss import FRAME_LOSS
from natbench.metrics.latency import LATENCY, PDV
from natbench.metrics.registry import (
    METRICS,
    Metric,
    all_metrics,
    find_metric,
    metric,
    metric_names,
    register,
    reported_metric,
)
from natbench.metrics.settings import MetricSettings, SearchSettings
from natbench.metrics.teardown import TEARDOWN
from natbench.metrics.throughput import FORWARDING, THROUGHPUT
from natbench.metrics.validation import VALIDATION

__all__ = [
    "METRICS",
    "Column",
    "CountRow",
    "Lifetime",
    "Mark",
    "Metric",
    "MetricSettings",
    "OwnTable",
    "ProcedureContext",
    "SearchSettings",
    "StatRows",
    "TableRow",
    "all_metrics",
    "find_metric",
    "metric",
    "metric_names",
    "register",
    "reported_metric",
]

register(CPS, THROUGHPUT, FRAME_LOSS, LATENCY, PDV, TEARDOWN, CAPACITY, VALIDATION, FORWARDING)
