"""Tidy pandas aggregation of a run's records: pure functions, DataFrame in, DataFrame out.

The frames come from :mod:`natbench.run.frames` (the one records -> DataFrame builder). Conventions (shared
with the engine, see GUIDE.md):

* A result record is one :class:`~natbench.results.RepetitionResult`: the final value of one repetition of
  one metric at one working point.
* Frame rates (unit ``fps``: throughput, forwarding) are stored PER DIRECTION, with
  ``extra["directions"]`` = "bidirectional" (or 2) and ``extra["all_frames_per_second"]``.
  The ``reported`` column is the all-frames figure (value x number of directions), so reports
  show all frames per second like the seeds. The search error is NOT scaled: it is the binary
  search's final width (upper - lower) as the search ran, per direction, which is what the seeds'
  "error" row prints (the stop error as set, the same number for cps and throughput).
* What a metric's results store beyond the value comes as the columns its :class:`~natbench.metrics.Metric`
  declares (and every search result's, :data:`~natbench.metrics.declare.SEARCH_COLUMNS`): :func:`summarize`
  sums each up as the column says; a metric with a table of its own (tear-down) is summed up per point by its
  own figures (:func:`own_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from natbench.metrics import Metric, reported_metric
from natbench.metrics.memory import fill_figures
from natbench.metrics.registry import baseline_metric
from natbench.run.frames import result_columns


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


MIN_CPU_SAMPLES = 3
"""Fewer monitor samples than this in a trial give no CPU busy figure: a trial shorter than a few
intervals (a cps step of a few hundred milliseconds) is mostly time before and after its traffic."""


def trial_cpu_busy(extra: Mapping[str, Any]) -> float:
    """How busy (%) the DUT's data-path CPUs were during one monitored trial; NaN without at least
    :data:`MIN_CPU_SAMPLES` samples.

    Per DUT and sample: 100 - the mean idle time of the sample's ``data_path_cpus`` (all sampled
    cores when the sample does not name them); the median over the samples (robust to the last one,
    taken as the traffic ends); of a DUT group, the busiest DUT (the bottleneck candidate, seed 004
    section 5.3).
    """
    busiest = float("nan")
    for col in (extra.get("monitor") or {}).values():
        idle: Mapping[str, Sequence[Any]] = col.get("idle") or {}
        per_sample = []
        for i in range(len(col.get("t") or [])):
            cores = data_path_cores(col, i)
            vals = [float(idle[c][i]) for c in cores if c in idle and i < len(idle[c]) and idle[c][i] is not None]
            if vals:
                per_sample.append(100.0 - sum(vals) / len(vals))
        if len(per_sample) >= MIN_CPU_SAMPLES:
            busy = float(np.median(per_sample))
            busiest = busy if math.isnan(busiest) else max(busiest, busy)
    return busiest


def data_path_cores(col: Mapping[str, Any], sample: int | None = None) -> list[str]:
    """The cores (``cpu0`` ...) of one DUT's stored monitor samples ``col`` that carry its data path: those the
    sample names in ``data_path_cpus`` (a DUT sharing its machine with the tester, the local lab, names them), all
    sampled cores where it names none. ``sample``: of that sample; None: of any sample (the union, in core order)."""
    idle: Mapping[str, Any] = col.get("idle") or {}
    cpus: Sequence[Any] = col.get("data_path_cpus") or []
    indices = range(len(col.get("t") or [])) if sample is None else [sample]
    named: list[str] = []
    for i in indices:
        wanted = cpus[i] if i < len(cpus) and cpus[i] else None
        if not wanted:
            return list(idle)  # a sample that names none: every sampled core is the DUT's
        named += [f"cpu{c}" for c in wanted if f"cpu{c}" not in named]
    if not named:
        return list(idle)
    return [c for c in idle if c in named] + [c for c in named if c not in idle]


def with_dut_cpu_busy(results: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """``results`` with ``dut_cpu_busy`` filled in: the DUT's CPU busy % (:func:`trial_cpu_busy`) in the
    last passing trial of each repetition whose intended rate is the repetition's value, i.e. the DUT's
    load at the rate reported (for a tester-bound result: how much headroom the DUT had left)."""
    out = results.copy()
    if trials.empty or out.empty:
        return out
    monitored = trials[(trials["verdict"] == "pass") & trials["extra"].map(lambda e: bool(e.get("monitor")))]
    if monitored.empty:
        return out

    def keys(df: pd.DataFrame, rate: str) -> list[tuple[str, str, int, float]]:
        cols = (df["point_id"].astype(str), df["metric"].astype(str), df["repetition"].tolist(), df[rate].tolist())
        return list(zip(*cols, strict=True))

    m = monitored.sort_values(["started_at", "step"])
    last = dict(zip(keys(m, "intended_rate"), m["extra"].tolist(), strict=True))  # the last trial at a rate wins
    busy = []
    for key in keys(out, "value"):
        extra = last.get(key)
        busy.append(trial_cpu_busy(extra) if extra is not None else float("nan"))
    out["dut_cpu_busy"] = np.asarray(busy, dtype="float64")
    return out


BASE_SUMMARY = ["unit", "directions", "experiments", "failed", "median", "min", "max", "error", "dut_cpu_busy"]
"""The first columns of :func:`summarize`."""


def summary_columns() -> list[str]:
    """Columns of :func:`summarize`: :data:`BASE_SUMMARY`, then each declared result column's summary
    (:meth:`~natbench.metrics.declare.Column.summary_columns`)."""
    return [*BASE_SUMMARY, *(name for c in result_columns() for name in c.summary_columns())]


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Per (point_id, metric): median / min / max of the reported values and the search error.

    Columns: ``unit``, ``directions``, ``experiments`` (repetitions with a value), ``failed`` (repetitions without
    one, but those in which no rate passed), ``median``, ``min``, ``max``, ``error`` (largest final search width of
    the repetitions as the search stored it: per direction for frame rates, not multiplied by the number of
    directions; NaN when the metric is not a search or no repetition stored one), ``dut_cpu_busy`` (median over the
    repetitions of the DUT's CPU busy % at the reported rate, see :func:`with_dut_cpu_busy`; NaN without monitor
    samples); then each column the metrics declare (:func:`~natbench.run.frames.result_columns`), summed up as it
    says: a flag as the number of repetitions it is true for (``tester_bound``, ``no_pass``: no value, not counted
    in ``failed`` nor in median / min / max, ``seeded``, ``unvalidated``, ...), a statistic as its
    ``_median`` / ``_min`` / ``_max`` (latency's ``worst_case``), a property of the point as its first value
    (``algorithm``).
    """
    columns = summary_columns()
    if results.empty:
        return pd.DataFrame(
            columns=columns,
            index=pd.MultiIndex.from_arrays([[], []], names=["point_id", "metric"]),
        )
    keys = [results["point_id"], results["metric"]]
    g = results.groupby(["point_id", "metric"], observed=True, sort=False)
    out = g["reported"].agg(["median", "min", "max", "count", "size"])
    out["error"] = g["error"].max()
    out["unit"] = g["unit"].first().astype(str)
    out["directions"] = g["directions"].max()
    out = out.rename(columns={"count": "experiments"})
    out["failed"] = out["size"] - out["experiments"]
    busy = results["dut_cpu_busy"] if "dut_cpu_busy" in results else pd.Series(np.nan, index=results.index)
    out["dut_cpu_busy"] = busy.groupby(keys, observed=True, sort=False).median()
    for c in result_columns():
        if c.summary == "none":
            continue
        col = results[c.name] if c.name in results else pd.Series(c.default, index=results.index, dtype=c.dtype)
        grouped = col.groupby(keys, observed=True, sort=False)
        if c.summary == "count":
            out[c.name] = grouped.sum().astype("int64")
        elif c.summary == "median":
            out[c.name] = grouped.median()
        elif c.summary == "first":
            out[c.name] = grouped.first()
        else:
            st = grouped.agg(["median", "min", "max"])
            for stat in ("median", "min", "max"):
                out[f"{c.name}_{stat}"] = st[stat]
    out["failed"] = out["failed"] - out["no_pass"]
    return out[columns]


def _joined(summary: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    s = summary.reset_index()
    s["point_id"] = s["point_id"].astype(str)
    s["metric"] = s["metric"].astype(str)
    cols = ["index", "cores", "connections", "cores_group", "conn_group"]
    return s.merge(points[cols], left_on="point_id", right_index=True, how="inner")


def scale_up_cores(summary: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Relative scale-up against CPU cores: S(n) = P(n) / (n * P(1)), per metric.

    Points that differ only in their cores form a series; the reference is the series' point with
    the fewest cores n0 (normally 1), and S(n) = P(n) * n0 / (n * P(n0)) generalises the formula.
    Returns columns ``point_id``, ``metric``, ``cores``, ``reference``, ``scale_up`` (only points
    with a core count).
    """
    j = _joined(summary, points).dropna(subset=["cores"])
    if j.empty:
        return pd.DataFrame(columns=["point_id", "metric", "cores", "reference", "scale_up"])
    j = j.sort_values(["metric", "cores_group", "cores", "index"])
    first = j.groupby(["metric", "cores_group"], sort=False)
    ref_cores = first["cores"].transform("first")
    ref_median = first["median"].transform("first")
    j["reference"] = first["point_id"].transform("first")
    j["scale_up"] = j["median"] * ref_cores / (j["cores"] * ref_median)
    return j[["point_id", "metric", "cores", "reference", "scale_up"]].reset_index(drop=True)


def scale_connections(summary: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Scale against the number of connections, per metric.

    Points with the same implementation, cores, frame size and swept DUT form a series ordered by
    connections. ``scale`` = S(n_i, n_0) = P(n_i) / P(n_0) (n_0: fewest connections) and
    ``ratio_prev`` = median / previous median (NaN for the first point), as in seed 001's PF tables.
    """
    j = _joined(summary, points)
    if j.empty:
        return pd.DataFrame(columns=["point_id", "metric", "connections", "scale", "ratio_prev"])
    j = j.sort_values(["metric", "conn_group", "connections", "index"])
    g = j.groupby(["metric", "conn_group"], sort=False)["median"]
    j["scale"] = j["median"] / g.transform("first")
    j["ratio_prev"] = j["median"] / g.shift(1)
    return j[["point_id", "metric", "connections", "scale", "ratio_prev"]].reset_index(drop=True)


def baseline_ratio(
    summary: pd.DataFrame,
    points: pd.DataFrame,
    baseline: str | None = None,
    metrics: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Ratio of a metric's median to the baseline's median (e.g. seed 000 "throughput ratio (%)").

    ``baseline`` defaults to the registered plain-forwarding baseline (forwarding), ``metrics`` to the
    metric that one is the baseline for (its ``baseline_for``: throughput).

    Both medians are compared in the same unit, the reported one: all frames per second (the
    frames the DUT forwarded in all active directions). A bidirectional NAT throughput of 50,000
    fps per direction (100,000 fps in all) against a one-way forwarding baseline of 100,000 fps is
    100 %: the DUT forwarded as many frames per second either way. With both sides bidirectional,
    as in seed 000 Figure 2, this is also the per-direction ratio.

    The baseline is looked up at the same working point first; failing that, at a point with the
    same cores, port ranges and frame size (a separate forwarding DUT measured with the same port
    number ranges). Returns ``point_id``, ``metric``, ``baseline_point``, ``ratio`` (a fraction).
    """
    cols = ["point_id", "metric", "baseline_point", "ratio"]
    registered = baseline_metric()
    if baseline is None:
        baseline = registered.name if registered is not None else ""
    if metrics is None:
        metrics = [registered.baseline_for] if registered is not None and registered.baseline_for else []
    s = summary.reset_index()[["point_id", "metric", "median"]]  # reported: all frames per second
    s = s.astype({"point_id": str, "metric": str})
    key_cols = ["cores", "src_first", "src_last", "dst_first", "dst_last", "frame_size"]
    keys = pd.Series(["|".join(map(str, r)) for r in points[key_cols].itertuples(index=False)], index=points.index)
    s["key"] = s["point_id"].map(keys)
    base = s[s["metric"] == baseline][["point_id", "key", "median"]]
    wanted = s[s["metric"].isin(list(metrics))]
    if base.empty or wanted.empty:
        return pd.DataFrame(columns=cols)
    same = wanted.merge(base.rename(columns={"median": "base", "key": "_k"}), on="point_id", how="left")
    same["baseline_point"] = same["point_id"].where(same["base"].notna())
    by_key = base.drop_duplicates("key").rename(columns={"point_id": "kp", "median": "kbase"})
    same = same.merge(by_key, on="key", how="left")
    same["baseline_point"] = same["baseline_point"].fillna(same["kp"])
    same["base"] = same["base"].fillna(same["kbase"])
    same = same[same["base"].notna()]
    same["ratio"] = same["median"] / same["base"]
    return same[cols].reset_index(drop=True)


def own_summary(results: pd.DataFrame, metric: Metric[Any], points: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per point id: the figures of a metric with a table of its own (:attr:`~natbench.metrics.Metric.table`, e.g.
    tear-down's T_N / T_0 medians and the rate N / (median T_N - median T_0) of seed 000 Figure 5), computed by the
    metric from its declared columns over the point's repetitions and the point's connections (from ``points``,
    else unknown). Columns: the table's ``names``."""
    table = metric.table
    if table is None:
        raise ValueError(f"metric {metric.name!r} has no table of its own")
    t = results[(results["metric"].astype(str) == metric.name).to_numpy(bool)] if not results.empty else results
    if t.empty:
        return pd.DataFrame(columns=list(table.names)).rename_axis("point_id")
    own = [c.name for c in metric.columns if c.dtype == "float64"]
    connections: dict[str, float] = {}  # N of each point listed in points; of any other point: unknown
    if points is not None and not points.empty:
        connections = {str(p): float(n) for p, n in points["connections"].items()}
    rows: dict[str, Mapping[str, float]] = {}
    for pid, g in t.groupby(t["point_id"].astype(str), sort=False):
        cols = {c: g[c].astype("float64").tolist() for c in own if c in g}
        cols["reported"] = g["reported"].astype("float64").tolist()
        rows[str(pid)] = table.figures(cols, connections.get(str(pid), math.nan))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=list(table.names)).astype("float64")
    return out.rename_axis("point_id")


def trial_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (point_id, metric): how many trials ran, passed, failed, were invalid, and their seconds."""
    cols = ["trials", "passed", "failed", "invalid", "seconds"]
    if trials.empty:
        return pd.DataFrame(columns=cols)
    verdict = trials["verdict"].astype(str)
    df = pd.DataFrame(
        {
            "point_id": trials["point_id"],
            "metric": trials["metric"],
            "passed": (verdict == "pass").astype("int64"),
            "failed": (verdict == "fail").astype("int64"),
            "invalid": (verdict == "invalid").astype("int64"),
            "seconds": trials["ended_at"] - trials["started_at"],
        }
    )
    g = df.groupby(["point_id", "metric"], observed=True, sort=False)
    out = g[["passed", "failed", "invalid", "seconds"]].sum()
    out.insert(0, "trials", g.size())
    return out[cols]


def with_invalid_trials(summary: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with an ``invalid_trials`` column: per (point_id, metric), how many stored trials of all its
    repetitions were judged invalid (:func:`trial_summary`); NaN where the run stored no trial of that metric at
    that point (then the count is unknown, not 0)."""
    out = summary.copy()
    counts = trial_summary(trials)
    known: dict[tuple[str, str], float] = {}
    if not counts.empty:
        index = counts.index.to_frame(index=False).astype(str)
        keys = zip(index["point_id"], index["metric"], strict=True)
        known = {k: float(n) for k, n in zip(keys, counts["invalid"].tolist(), strict=True)}
    out["invalid_trials"] = [known.get((str(p), str(m)), float("nan")) for p, m in out.index]
    out["invalid_trials"] = out["invalid_trials"].astype("float64")
    return out


MEMORY_FIGURES = ["per_connection", "used", "mem_available"]
"""The memory figures of :func:`fill_memory_frame` before the slab caches' (bytes per connection, but ``used``)."""


def fill_memory_frame(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per kept fill that stored the DUT's memory, of a trial kind its metric declares
    (:attr:`~natbench.metrics.Metric.memory_trials`; a fill a validation sample checked counts only when its
    ``fill_check`` trial passed): ``point_id``, ``metric``, ``created_connections`` (N, the connections the fill
    left), ``per_connection`` (bytes per connection: the growth of the DUT's slab caches where it shows them, else
    MemAvailable's fall where that stands out of its noise, else NaN: :func:`natbench.metrics.memory.fill_figures`),
    ``used`` (that per connection x N), ``mem_available`` (MemAvailable's fall per connection where it stands out of
    its noise) and one column per slab cache the fills stored (its growth per connection, NaN where it did not
    grow)."""
    rows: list[dict[str, Any]] = []
    slabs: list[str] = []
    if not trials.empty:
        kinds = {m: reported_metric(m).memory_trials for m in {str(x) for x in trials["metric"].unique()}}
        for (pid, met, _rep), g in trials.groupby(["point_id", "metric", "repetition"], observed=True, sort=False):
            records = list(zip(g["kind"].astype(str), g["verdict"].astype(str), g["extra"], strict=True))
            for i, (kind, verdict, extra) in enumerate(records):
                if kind not in kinds.get(str(met), ()) or verdict != "pass" or not isinstance(extra, Mapping):
                    continue
                if extra.get("fill_verified") == "sample":  # kept only if its validation sample passed
                    after = records[i + 1] if i + 1 < len(records) else None
                    if after is None or after[0] != "fill_check" or after[1] != "pass":
                        continue
                mem = extra.get("memory")
                figures = fill_figures(mem) if isinstance(mem, Mapping) else None
                if figures is None:
                    continue
                row: dict[str, Any] = {"point_id": str(pid), "metric": str(met)}
                row["created_connections"] = float(figures.connections)
                row["per_connection"] = _num(figures.per_connection)
                row["used"] = _num(figures.used)
                row["mem_available"] = _num(figures.mem_available)
                for key, value in figures.slabs.items():
                    row[key] = value
                    if key not in slabs:
                        slabs.append(key)
                rows.append(row)
    cols = ["point_id", "metric", "created_connections", *MEMORY_FIGURES, *slabs]
    return pd.DataFrame(rows, columns=cols).astype({c: "float64" for c in cols[2:]})


def memory_summary(fills: pd.DataFrame, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Per point id: ``fills`` (how many kept fills stored memory), ``unknown`` (how many of them gave no memory per
    connection: no slab growth and a MemAvailable fall within its noise) and the median over those fills of each
    figure of :func:`fill_memory_frame` (:data:`MEMORY_FIGURES` and the slab caches'); ``metrics``: only the fills
    of these metrics (None: all)."""
    figures = [c for c in fills.columns if c not in ("point_id", "metric", "created_connections")]
    cols = ["fills", "unknown", *figures]
    f = fills if metrics is None else fills[fills["metric"].isin(list(metrics))]
    if f.empty:
        return pd.DataFrame(columns=cols).rename_axis("point_id")
    g = f.groupby("point_id", sort=False)
    out = g[figures].median()
    out.insert(0, "unknown", g["per_connection"].agg(lambda v: float(v.isna().sum())))
    out.insert(0, "fills", g.size().astype("float64"))
    return out[cols]
