"""Result tables shaped like the seeds' figures, rendered as text, Markdown, LaTeX, CSV and HTML.

Columns are working points (campaign order); rows are the parameters (num. CPU cores, src ports,
dst ports, num. conn., the DUT's table and hash sizes as its recipe declares them and their ratios to
num. conn., num. experiments, memory, error), then each metric's median / min / max, the rows and marks
it declares (:mod:`natbench.metrics.declare`) and its scale-up row: the relative scale-up
S(n) = P(n) / (n * P(1)) where the cores vary, "median / previous median" where the connections vary.
A forwarding baseline adds its own block and the throughput ratio (%) row, as in seed 000 Figure 2. A
metric with a table of its own (tear-down: seed 000 Figure 5, seed 001 PF table) gets that table.

This module makes every table of a run: a table is built by :mod:`natbench.report.performance` and
:mod:`natbench.report.own` (from the rows of :mod:`natbench.report.rows`), held as data by
:class:`~natbench.report.seedtable.SeedTable` and rendered by :mod:`natbench.report.render`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from natbench.metrics import reported_metric
from natbench.report.own import own_table
from natbench.report.performance import performance_table
from natbench.report.seedtable import SeedTable


def report_tables(
    summary: pd.DataFrame,
    points: pd.DataFrame,
    *,
    own: Mapping[str, pd.DataFrame] | None = None,
    scale: str = "1",
    family: str | None = None,
    baseline_source: str | None = None,
    memory: pd.DataFrame | None = None,
    slab_labels: Callable[[str], str] | None = None,
) -> list[SeedTable]:
    """Every table of a run: the performance table (if any metric without a table of its own was measured), then the
    table of each metric with its own (``own``: metric name -> its figures,
    :func:`~natbench.report.aggregate.own_summary`), in measurement order. ``family``: the campaign's traffic family;
    ``baseline_source``: where a baseline from another run was measured; ``memory``: the kept fills that stored the
    DUT's memory (their rows in each table); ``slab_labels``: the slab caches' rows."""
    tables = []
    names = {str(m) for m in summary.index.get_level_values("metric")} if not summary.empty else set()
    metrics = sorted((reported_metric(name) for name in names), key=lambda m: m.sort_key)
    if any(not m.own_table for m in metrics):
        tables.append(
            performance_table(
                summary,
                points,
                scale=scale,
                family=family,
                baseline_source=baseline_source,
                memory=memory,
                slab_labels=slab_labels,
            )
        )
    for m in metrics:
        figures = (own or {}).get(m.name)
        if m.own_table and figures is not None and not figures.empty:
            tables.append(
                own_table(m, figures, points, scale=scale, summary=summary, memory=memory, slab_labels=slab_labels)
            )
    return tables
