"""DUT CPU headroom: how busy each DUT core was at the rate a metric reports, per working point.

For each (point, metric) the monitored trial :func:`~natbench.report.plots.monitored_trials` picks (the
highest-rate passing trial with samples, i.e. the reported rate) gives, per DUT and data-path core (those the
samples name in ``data_path_cpus``: a DUT sharing its machine with the tester, the local lab, never shows the
tester's cores), 100 - the median idle % over its samples. A trial with fewer than
:data:`~natbench.report.aggregate.MIN_CPU_SAMPLES` samples gives nothing: one or two samples of a short step are
mostly time before or after its traffic.
"""

from __future__ import annotations

import statistics

import pandas as pd

from natbench.report.aggregate import MIN_CPU_SAMPLES, data_path_cores
from natbench.report.plots import monitored_trials

HEADROOM_COLUMNS = ["metric", "dut", "point_id", "point", "core", "busy", "samples", "rate"]
"""Columns of :func:`cpu_headroom`: busy is the core's busy % (0-100), samples the monitor samples it is the
median of, rate the trial's intended rate per direction."""


def _core_key(core: str) -> tuple[int, str]:
    digits = "".join(ch for ch in core if ch.isdigit())
    return (int(digits) if digits else 1 << 30, core)


def cpu_headroom(trials: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """One row per (metric, DUT, point, core) with enough samples, in campaign order of the points."""
    labels = {str(k): str(v) for k, v in points["label"].items()} if not points.empty else {}
    order = {str(k): i for i, k in enumerate(points.index)} if not points.empty else {}
    rows: list[dict[str, object]] = []
    for mt in monitored_trials(trials):
        mon = mt.extra["monitor"][mt.dut]
        idle = mon.get("idle") or {}
        data_path = set(data_path_cores(mon))  # the lab's DUT shares its machine: its own cores only
        for core in sorted((c for c in idle if c in data_path), key=_core_key):
            vals = [float(v) for v in idle[core] if v is not None]
            if len(vals) < MIN_CPU_SAMPLES:
                continue
            rows.append(
                {
                    "metric": mt.metric,
                    "dut": mt.dut,
                    "point_id": mt.point_id,
                    "point": labels.get(mt.point_id, mt.point_id),
                    "core": str(core),
                    "busy": 100.0 - statistics.median(vals),
                    "samples": len(vals),
                    "rate": mt.rate,
                }
            )
    df = pd.DataFrame(rows, columns=HEADROOM_COLUMNS)
    if df.empty:
        return df
    df["_order"] = df["point_id"].map(lambda p: order.get(p, len(order)))
    return df.sort_values(["metric", "dut", "_order"], kind="stable").drop(columns="_order").reset_index(drop=True)
