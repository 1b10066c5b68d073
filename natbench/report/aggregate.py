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
* Tear-down results carry ``extra = {"T_N": .., "T_0": .., "connections": N}`` (issue-4's
  engine; ``filled_delete_s`` / ``empty_delete_s`` are accepted too). The reported tear-down
  rate is ``N / (median T_N - median T_0)``, as seed 000 Figure 5 computes it (not the median
  of per-repetition rates, which is kept beside it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from natbench.metrics.teardown import TEARDOWN
from natbench.report.labels import baseline_metric

__all__ = [
    "baseline_ratio",
    "fill_memory_frame",
    "memory_summary",
    "scale_connections",
    "scale_up_cores",
    "summarize",
    "teardown_summary",
    "trial_cpu_busy",
    "trial_summary",
    "with_dut_cpu_busy",
    "with_invalid_trials",
]


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
        cpus: Sequence[Any] = col.get("data_path_cpus") or []
        per_sample = []
        for i in range(len(col.get("t") or [])):
            wanted = cpus[i] if i < len(cpus) and cpus[i] else None
            cores = [f"cpu{c}" for c in wanted] if wanted else list(idle)
            vals = [float(idle[c][i]) for c in cores if c in idle and i < len(idle[c]) and idle[c][i] is not None]
            if vals:
                per_sample.append(100.0 - sum(vals) / len(vals))
        if len(per_sample) >= MIN_CPU_SAMPLES:
            busy = float(np.median(per_sample))
            busiest = busy if math.isnan(busiest) else max(busiest, busy)
    return busiest


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


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Per (point_id, metric): median / min / max of the reported values and the search error.

    Columns: ``unit``, ``directions``, ``experiments`` (repetitions with a value), ``failed``
    (repetitions without one), ``tester_bound`` (repetitions whose search ended at the tester's
    ceiling: their value is a lower bound of the DUT), ``median``, ``min``, ``max``, ``error``
    (largest final search width of the repetitions as the search stored it: per direction for
    frame rates, not multiplied by the number of directions; NaN when the metric is not a search)
    and ``dut_cpu_busy`` (median over the repetitions of the DUT's CPU busy % at the reported rate,
    see :func:`with_dut_cpu_busy`; NaN without monitor samples), the worst-case latency columns and ``seeded``
    (repetitions of ``algorithm: fast`` that started from the earlier repetitions' results: not independent
    searches, docs/engine.md), ``tagged_only`` (PDV repetitions timed from the tagged frames only: TRex),
    ``unvalidated`` (cps repetitions whose rate no validation confirmed: ``validated: false``) and ``no_pass``
    (repetitions in which no rate passed: no value, not counted in ``failed`` nor in median / min / max).
    """
    columns = [
        "unit",
        "directions",
        "experiments",
        "failed",
        "tester_bound",
        "median",
        "min",
        "max",
        "error",
        "dut_cpu_busy",
        *WORST_CASE_COLUMNS,
        "seeded",
        "tagged_only",
        "unvalidated",
        "no_pass",
    ]
    if results.empty:
        return pd.DataFrame(
            columns=columns,
            index=pd.MultiIndex.from_arrays([[], []], names=["point_id", "metric"]),
        )
    g = results.groupby(["point_id", "metric"], observed=True, sort=False)
    out = g["reported"].agg(["median", "min", "max", "count", "size"])
    out["error"] = g["error"].max()
    out["unit"] = g["unit"].first().astype(str)
    out["directions"] = g["directions"].max()
    out = out.rename(columns={"count": "experiments"})
    out["failed"] = out["size"] - out["experiments"]
    out["tester_bound"] = g["tester_bound"].sum().astype("int64")
    busy = results["dut_cpu_busy"] if "dut_cpu_busy" in results else pd.Series(np.nan, index=results.index)
    out["dut_cpu_busy"] = busy.groupby([results["point_id"], results["metric"]], observed=True, sort=False).median()
    out = out.join(worst_case_summary(results))
    seeded = results["seeded"] if "seeded" in results else pd.Series(False, index=results.index)
    out["seeded"] = seeded.groupby([results["point_id"], results["metric"]], observed=True, sort=False).sum()
    out["seeded"] = out["seeded"].astype("int64")
    for c in ("tagged_only", "unvalidated", "no_pass"):
        flag = results[c] if c in results else pd.Series(False, index=results.index)
        out[c] = flag.groupby([results["point_id"], results["metric"]], observed=True, sort=False).sum().astype("int64")
    out["failed"] = out["failed"] - out["no_pass"]
    return out[columns]


WORST_CASE_COLUMNS = ["worst_case_median", "worst_case_min", "worst_case_max"]
"""Columns of :func:`summarize` with the repetitions' worst-case latency (RFC 8219 7.2; NaN for other metrics)."""


def worst_case_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per (point_id, metric): median / min / max over the repetitions of the worst-case latency (the 99.9th
    percentile of the tagged frames' latency, RFC 8219 7.2), which latency results store beside their typical
    latency; NaN where none is stored."""
    wc = results["worst_case"] if "worst_case" in results else pd.Series(np.nan, index=results.index)
    g = wc.groupby([results["point_id"], results["metric"]], observed=True, sort=False)
    out = g.agg(["median", "min", "max"])
    out.columns = WORST_CASE_COLUMNS
    return out


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


def teardown_summary(results: pd.DataFrame, points: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tear-down rate per point from the filled-table and empty-table delete times.

    Columns: ``experiments``, ``connections`` (N: the connections the fill created, else the point's),
    ``filled_median/min/max`` (T_N), ``empty_median/min/max`` (T_0), ``deletion_time`` =
    median T_N - median T_0 and ``rate`` = N / deletion_time (seed 000 Figure 5), plus
    ``rep_rate_median/min/max``: the per-repetition rates the engine stored, for reference.
    """
    t = results[(results["metric"] == TEARDOWN.name).to_numpy(bool)]
    cols = [
        "experiments",
        "connections",
        "filled_median",
        "filled_min",
        "filled_max",
        "empty_median",
        "empty_min",
        "empty_max",
        "deletion_time",
        "rate",
        "rep_rate_median",
        "rep_rate_min",
        "rep_rate_max",
    ]
    if t.empty:
        return pd.DataFrame(columns=cols).rename_axis("point_id")
    g = t.groupby(t["point_id"].astype(str), sort=False)
    out = pd.DataFrame(
        {
            "experiments": g["filled_delete_s"].count(),
            "connections": g["created_connections"].max(),
            "filled_median": g["filled_delete_s"].median(),
            "filled_min": g["filled_delete_s"].min(),
            "filled_max": g["filled_delete_s"].max(),
            "empty_median": g["empty_delete_s"].median(),
            "empty_min": g["empty_delete_s"].min(),
            "empty_max": g["empty_delete_s"].max(),
            "rep_rate_median": g["reported"].median(),
            "rep_rate_min": g["reported"].min(),
            "rep_rate_max": g["reported"].max(),
        }
    )
    if points is not None and not points.empty:
        known = points["connections"].reindex(out.index).astype("float64")
        out["connections"] = out["connections"].fillna(known)
    out["deletion_time"] = out["filled_median"] - out["empty_median"]
    out["rate"] = out["connections"] / out["deletion_time"].where(out["deletion_time"] > 0)
    return out[cols]


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


MEMORY_KEYS = ("mem_available", "conntrack_slab", "jool_session_slab", "jool_bib_slab")
"""Per-connection memory figures a fill trial may store (``extra["memory"]["per_connection"]``, bytes per connection;
:mod:`natbench.metrics.memory`): MemAvailable's fall, the nf_conntrack slab's and Jool's session/BIB slabs' growth."""


def fill_memory_frame(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per passing fill trial that stored the DUT's memory: ``point_id``, ``metric``, ``connections`` (N, the
    connections the tester created), ``used`` (bytes MemAvailable fell by) and each of :data:`MEMORY_KEYS` in bytes
    per connection (NaN where the DUT did not show it)."""
    cols = ["point_id", "metric", "created_connections", "used", *MEMORY_KEYS]
    rows: list[dict[str, Any]] = []
    if not trials.empty:
        fills = trials[(trials["kind"].astype(str) == "fill") & (trials["verdict"].astype(str) == "pass")]
        for pid, met, extra in zip(fills["point_id"], fills["metric"], fills["extra"], strict=True):
            mem = extra.get("memory") if isinstance(extra, Mapping) else None
            if not isinstance(mem, Mapping) or not mem.get("per_connection"):
                continue
            per = mem["per_connection"]
            row = {"point_id": str(pid), "metric": str(met), "created_connections": _num(mem.get("connections"))}
            row["used"] = _num((mem.get("used") or {}).get("mem_available"))
            row.update({k: _num(per.get(k)) for k in MEMORY_KEYS})
            rows.append(row)
    return pd.DataFrame(rows, columns=cols).astype({c: "float64" for c in cols[2:]})


def memory_summary(fills: pd.DataFrame, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Per point id: ``fills`` (how many fills stored memory) and the median over those fills of ``used`` and of each
    of :data:`MEMORY_KEYS` (bytes per connection); ``metrics``: only the fills of these metrics (None: all)."""
    cols = ["fills", "used", *MEMORY_KEYS]
    f = fills if metrics is None else fills[fills["metric"].isin(list(metrics))]
    if f.empty:
        return pd.DataFrame(columns=cols).rename_axis("point_id")
    g = f.groupby("point_id", sort=False)
    out = g[["used", *MEMORY_KEYS]].median()
    out.insert(0, "fills", g.size().astype("float64"))
    return out[cols]
