"""Plots of a run (matplotlib), saved as PNG and SVG.

Figures are built with the object API (never pyplot), so nothing needs a display and a notebook's backend is
left alone; they render through Agg when saved. Every figure returned here is a
:class:`~natbench.report.figure.NatbenchFigure`, which shows itself in a notebook (PNG, SVG when asked).

* :func:`plot_cores`: median with min..max bars against CPU cores, and the ideal linear scale-up
  n * P(n0) / n0 for reference (dashed).
* :func:`plot_connections`: median with min..max bars against the number of connections (log x).
* :func:`plot_own`: a metric with a table of its own (tear-down: its rate against connections, log x, and the
  filled / empty delete times), as the metric declares it.
* :func:`plot_cpu_idle`: per-core CPU idle time of one DUT over one trial (seed 004 Figures 12-22),
  every data-path core its own line, never averaged.

CPU samples (produced by the DUT monitor, stored in a trial record's ``extra``)::

    extra["monitor"][dut_name] = {
        "interval": 1.0,                 # seconds between samples
        "t": [0.0, 1.0, 2.0, ...],       # sample times, seconds since the trial started
        "idle": {                        # idle time in percent (0..100) per CPU core
            "cpu0": [12.0, 3.5, ...],    # one value per entry of "t"
            "cpu1": [...],
        },
    }
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, NullFormatter

from natbench.metrics import Metric, reported_metric
from natbench.report.aggregate import data_path_cores
from natbench.report.figure import NatbenchFigure, figure_bytes
from natbench.workingpoint import si_count

__all__ = [
    "MonitoredTrial",
    "cpu_idle_series",
    "figure_bytes",
    "monitored_trials",
    "plot_connections",
    "plot_cores",
    "plot_cpu_idle",
    "plot_own",
    "save_figure",
]


def _joined(summary: pd.DataFrame, points: pd.DataFrame, metric: str) -> pd.DataFrame:
    s = summary.reset_index()
    s = s[s["metric"].astype(str) == metric].copy()
    s["point_id"] = s["point_id"].astype(str)
    return s.merge(points, left_on="point_id", right_index=True, how="inner")


def _new_axes(ax: Any) -> tuple[Figure, Any]:
    if ax is not None:
        return ax.figure, ax
    fig = NatbenchFigure(figsize=(7, 4.2))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.12, top=0.91)  # fixed margins: layout engines are slow
    return fig, fig.add_subplot()


def _y_axis(ax: Any, unit: str, top: float) -> None:
    """Linear y from 0 with engineering prefixes (400 k, 2.1 M, 98 µs) and headroom above the data."""
    ax.yaxis.set_major_formatter(EngFormatter(unit="s" if unit == "s" else "", sep=" "))
    if np.isfinite(top) and top > 0:
        ax.set_ylim(0, top * 1.1)
    else:
        ax.set_ylim(bottom=0)


def _connection_ticks(ax: Any, values: Iterable[float]) -> None:
    """Log x axis with a tick at every measured connection count, labelled like the seeds (1.56M)."""
    ticks = sorted({float(v) for v in values if np.isfinite(v)})
    ax.set_xscale("log")
    ax.set_xticks(ticks, [si_count(int(t)) for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _errorbars(ax: Any, x: np.ndarray, d: pd.DataFrame, label: str, **kw: Any) -> None:
    med = d["median"].to_numpy(float)
    lo = med - d["min"].to_numpy(float)
    hi = d["max"].to_numpy(float) - med
    ax.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=3, label=label, **kw)
    if "tester_bound" in d:
        bound = d["tester_bound"].fillna(0).to_numpy(float) > 0
        if bound.any():  # the DUT passed all the tester could send there: the point is a lower bound
            ax.plot(
                x[bound],
                med[bound],
                linestyle="none",
                marker="^",
                markersize=11,
                markerfacecolor="none",
                color="black",
                label="tester-bound: a lower bound of the DUT",
            )


def plot_cores(summary: pd.DataFrame, points: pd.DataFrame, metric: str, ax: Any = None) -> Figure:
    """Performance against CPU cores, one line per series, with the ideal linear scale-up dashed."""
    fig, ax = _new_axes(ax)
    j = _joined(summary, points, metric).dropna(subset=["cores"])
    m = reported_metric(metric)
    title, unit = m.title, m.axis
    ideal_tops: list[float] = []
    for key, d in j.groupby("cores_group", sort=False):
        d = d.sort_values("cores")
        x = d["cores"].to_numpy(float)
        name = str(d["name"].iloc[0]) or metric
        _errorbars(ax, x, d, f"{name} (median, min..max)")
        ideal = x * d["median"].iloc[0] / x[0]
        ax.plot(x, ideal, "--", color="grey", label=f"{name}: ideal linear scale-up")
        ideal_tops.append(float(ideal.max()))
        del key
    ax.set_xscale("log", base=2)
    ticks = sorted(j["cores"].unique())
    ax.set_xticks(ticks, [str(int(t)) for t in ticks])
    ax.set_xlabel("number of active CPU cores")
    ax.set_ylabel(unit)
    top = max([float(j["max"].max()), *ideal_tops]) if len(j) else float("nan")
    _y_axis(ax, unit, top)
    ax.set_title(f"{title} against the number of CPU cores")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def plot_connections(summary: pd.DataFrame, points: pd.DataFrame, metric: str, ax: Any = None) -> Figure:
    """Performance against the number of connections (log x), one line per series."""
    fig, ax = _new_axes(ax)
    j = _joined(summary, points, metric)
    m = reported_metric(metric)
    title, unit = m.title, m.axis
    for _, d in j.groupby("conn_group", sort=False):
        d = d.sort_values("connections")
        name = str(d["name"].iloc[0]) or metric
        cores = d["cores"].iloc[0]
        label = name + ("" if pd.isna(cores) else f", {int(cores)} core{'s' if int(cores) != 1 else ''}")
        _errorbars(ax, d["connections"].to_numpy(float), d, label)
    _connection_ticks(ax, j["connections"])
    ax.set_xlabel("number of connections")
    ax.set_ylabel(unit)
    _y_axis(ax, unit, float(j["max"].max()) if len(j) else float("nan"))
    ax.set_title(f"{title} against the number of connections")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def plot_own(metric: Metric[Any], figures: pd.DataFrame, points: pd.DataFrame) -> Figure:
    """A metric with a table of its own (its :class:`~natbench.metrics.declare.OwnTable`): its value (left, e.g. the
    tear-down rate) and its series with median and min..max (right, e.g. the filled / empty delete times) against
    connections, rows of :func:`~natbench.report.aggregate.own_summary`."""
    table = metric.table
    if table is None:
        raise ValueError(f"metric {metric.name!r} has no plot of its own")
    fig = NatbenchFigure(figsize=(10, 4.2))
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.12, top=0.91, wspace=0.28)
    ax_value, ax_series = fig.subplots(1, 2)
    d = figures.drop(columns="connections", errors="ignore").join(points[["connections", "label"]])
    d = d.sort_values("connections")
    n = d["connections"].to_numpy(float)
    values = d[table.value].to_numpy(float)
    ax_value.plot(n, values, marker="o", label=table.value_legend)
    _connection_ticks(ax_value, n)
    _y_axis(ax_value, "", float(np.nanmax(values)) if len(d) and np.isfinite(values).any() else float("nan"))
    ax_value.set_xlabel("number of connections")
    ax_value.set_ylabel(metric.axis)
    ax_value.set_title(metric.title)
    ax_value.grid(True, which="both", alpha=0.3)
    ax_value.legend(fontsize="small")
    for stem, label in table.series:
        med = d[f"{stem}_median"].to_numpy(float)
        yerr = [med - d[f"{stem}_min"].to_numpy(float), d[f"{stem}_max"].to_numpy(float) - med]
        ax_series.errorbar(n, med, yerr=yerr, marker="o", capsize=3, label=label)
    _connection_ticks(ax_series, n)
    spans = d[[f"{stem}_{stat}" for stem, _ in table.series for stat in ("min", "max")]].to_numpy(float)
    positive = spans[np.isfinite(spans) & (spans > 0)]
    if positive.size and positive.max() / positive.min() > 20:
        ax_series.set_yscale("log")  # seed 000 Figure 5 spans 0.55 s .. 2,275 s
    else:
        _y_axis(ax_series, "s", float(positive.max()) if positive.size else float("nan"))
    ax_series.set_xlabel("number of connections")
    ax_series.set_ylabel(table.series_axis)
    ax_series.set_title(table.series_title)
    ax_series.grid(True, which="both", alpha=0.3)
    ax_series.legend(fontsize="small")
    return fig


def cpu_idle_series(extra: Mapping[str, Any], dut: str) -> pd.DataFrame:
    """The CPU idle samples of one DUT from a trial's ``extra`` as a frame: index t, one column per core."""
    try:
        mon = extra["monitor"][dut]
        t = list(mon["t"])
        idle = mon["idle"]
    except (KeyError, TypeError):
        raise KeyError(f"no CPU monitor samples for DUT {dut!r} in this trial") from None
    data_path = set(data_path_cores(mon))  # a DUT sharing its machine with the tester names its own cores
    cores = sorted((c for c in idle if c in data_path), key=lambda c: (len(c), c))
    return pd.DataFrame({c: list(idle[c]) for c in cores}, index=pd.Index(t, name="t"))


def plot_cpu_idle(extra: Mapping[str, Any], dut: str, title: str | None = None, ax: Any = None) -> Figure:
    """Per-core CPU idle time (%) of one DUT over one trial; each core is its own line."""
    fig, ax = _new_axes(ax)
    df = cpu_idle_series(extra, dut)
    marker = "." if len(df) <= 40 else None  # short trials: show the samples themselves
    for c in df.columns:
        ax.plot(df.index.to_numpy(float), df[c].to_numpy(float), linewidth=1, marker=marker, label=str(c))
    ax.set_ylim(-2, 102)  # a core at 0 % idle (the bottleneck) stays visible above the axis
    ax.set_xlabel("time (s)")
    ax.set_ylabel("CPU idle time (%)")
    ax.set_title(title or f"CPU idle time of {dut}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if len(df.columns) <= 16:
        ax.legend(fontsize="x-small", ncol=4)
    return fig


def save_figure(fig: Figure, stem: str | Path, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Save a figure as ``stem.png`` and ``stem.svg``; returns the paths written."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        p = stem.with_suffix(f".{fmt}")
        p.write_bytes(figure_bytes(fig, fmt))
        out.append(p)
    return out


class MonitoredTrial(NamedTuple):
    """A trial with CPU samples of one DUT, as :func:`monitored_trials` picks it."""

    point_id: str
    """Working point id."""
    metric: str
    """Metric the trial belongs to."""
    dut: str
    """DUT name (key of ``extra["monitor"]``)."""
    extra: Mapping[str, Any]
    """The trial record's extra (holds the samples)."""
    rate: float
    """Intended frames per second per direction of the trial (0 for non-traffic trials)."""
    kind: str
    """Trial kind (phase1, phase2, fill, ...)."""


def monitored_trials(trials: pd.DataFrame) -> Iterable[MonitoredTrial]:
    """For each (point, metric, DUT) with CPU samples: the last passing trial with samples
    (the highest rate the search kept, as seed 004 plots at the measured maximum), else the
    last trial with samples."""
    if trials.empty:
        return
    has = trials["extra"].map(lambda e: isinstance(e, dict) and bool(e.get("monitor")))
    t = trials[has.to_numpy(bool)]
    if t.empty:
        return
    t = t.assign(_pass=(t["verdict"].astype(str) == "pass").astype(int)).sort_values(
        ["_pass", "intended_rate", "started_at"]
    )
    for (pid, metric), g in t.groupby(["point_id", "metric"], observed=True, sort=False):
        last = g.iloc[-1]
        extra = last["extra"]
        for dut in extra["monitor"]:
            rate = float(last["intended_rate"])
            yield MonitoredTrial(str(pid), str(metric), str(dut), extra, rate, str(last["kind"]))


def plot_cpu_headroom(headroom: pd.DataFrame, metric: str, dut: str, title: str, ax: Any = None) -> Figure:
    """Heatmap of a DUT's per-core busy % at the reported rate: one row per working point, one column per core,
    each cell labelled with its value (rows of :func:`natbench.report.headroom.cpu_headroom`)."""
    d = headroom[(headroom["metric"] == metric) & (headroom["dut"] == dut)]
    rows = list(dict.fromkeys(d["point"]))
    cores = list(dict.fromkeys(d["core"]))
    grid = np.full((len(rows), len(cores)), np.nan)
    for r in d.itertuples():
        grid[rows.index(r.point), cores.index(r.core)] = r.busy
    fig, ax = _new_axes(ax)
    fig.set_size_inches(max(4.0, 1.0 + 0.55 * len(cores)), max(2.2, 1.2 + 0.4 * len(rows)))
    img = ax.imshow(grid, vmin=0, vmax=100, cmap="RdYlGn_r", aspect="auto")
    ax.set_xticks(range(len(cores)), cores, fontsize="small")
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    for i in range(len(rows)):
        for j in range(len(cores)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize="small")
    ax.set_xlabel("DUT core")
    ax.set_title(title, fontsize="medium")
    fig.colorbar(img, ax=ax, label="CPU busy (%)")
    fig.tight_layout()
    return fig
