"""A run's records as pandas DataFrames: the one builder that Parquet export, reports and notebooks share.

* :func:`trials_frame`: one row per trial; frame counts summed over the directions (``sent``, ``received``,
  ``valid``) and per direction (``forward_sent`` ... ``reverse_valid``, <NA> for a direction the trial did not
  use); ``extra`` the record's dict.
* :func:`results_frame`: one row per repetition result; ``reported`` is the value as reports show it (frame
  rates of several directions as all frames per second, :func:`~natbench.run.format.reported_factor`), ``unit``
  the reported spelling (``conn/s`` reads as ``cps``), then the columns the metrics declare
  (:func:`result_columns`: what every search result stores, and each metric's own); with the points, the point's
  ``label``, ``connections`` and ``cores``.
* :func:`points_frame`: the working points indexed by id, with port counts, table sizes (the parameters the DUT
  kinds declared, as the run stored them) and grouping keys.

One meaning per column name: ``connections`` is always a working point's number of connections (|S| x |D|);
the connections a tear-down's fill created are ``created_connections``. For Parquet (:func:`to_parquet`)
``extra`` is stored as JSON text (sorted keys).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from natbench.metrics import all_metrics
from natbench.metrics.declare import SEARCH_COLUMNS, Column
from natbench.metrics.hostload import HOST_COLUMNS
from natbench.plugins import DutDeclarations, TableParam
from natbench.results import Direction, RepetitionResult, TrialRecord
from natbench.run.format import UNIT_ALIASES, PointRecord, declarations_for, directions_of, reported_factor
from natbench.search import ALGORITHMS


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


# ------------------------------------------------------------------------------------------------------- trials
TRIAL_COLUMNS = [
    "point_id",
    "metric",
    "repetition",
    "step",
    "kind",
    "intended_rate",
    "achieved_rate",
    "verdict",
    "reason",
    "started_at",
    "ended_at",
    "lower",
    "upper",
    "value",
    "sent",
    "received",
    "valid",
]
"""The first columns of :func:`trials_frame` (counts summed over the directions)."""

COUNT_KEYS = ("sent", "received", "valid")
DIRECTION_COLUMNS = [f"{d}_{k}" for d in (Direction.FORWARD, Direction.REVERSE) for k in COUNT_KEYS]
"""Per-direction frame counts of :func:`trials_frame` (<NA> where the trial did not use the direction)."""


def trials_frame(records: Iterable[TrialRecord | RepetitionResult]) -> pd.DataFrame:
    """One row per trial: :data:`TRIAL_COLUMNS`, :data:`DIRECTION_COLUMNS` and ``extra`` (the record's dict).
    Results among ``records`` are left out, so a run's records can be passed in file order."""
    names = [*TRIAL_COLUMNS, *DIRECTION_COLUMNS, "extra"]
    cols: dict[str, list[Any]] = {c: [] for c in names}
    for t in records:
        if not isinstance(t, TrialRecord):
            continue
        for c in ("point_id", "metric", "repetition", "step", "kind", "reason"):
            cols[c].append(getattr(t, c))
        cols["verdict"].append(str(t.verdict))
        for c in ("intended_rate", "achieved_rate", "started_at", "ended_at", "lower", "upper", "value"):
            cols[c].append(_num(getattr(t, c)))
        for k in COUNT_KEYS:
            cols[k].append(sum(int(c.get(k, 0)) for c in t.counts.values()))
        for d in (Direction.FORWARD, Direction.REVERSE):
            counts = t.counts.get(str(d))
            for k in COUNT_KEYS:
                cols[f"{d}_{k}"].append(None if counts is None else counts.get(k))
        cols["extra"].append(t.extra)
    df = pd.DataFrame(cols, columns=names)
    for c in ("point_id", "metric", "kind", "verdict"):
        df[c] = df[c].astype("category")
    for c in ("intended_rate", "achieved_rate", "started_at", "ended_at", "lower", "upper", "value"):
        df[c] = df[c].astype("float64")
    for c in ("repetition", "step", *COUNT_KEYS):
        df[c] = df[c].astype("int64")
    for c in DIRECTION_COLUMNS:
        df[c] = df[c].astype("Int64")
    df["reason"] = df["reason"].astype(object)
    return df


# ------------------------------------------------------------------------------------------------------ results
def every_result_columns() -> tuple[Column, ...]:
    """The derived columns computed for every result: every search result's
    (:data:`~natbench.metrics.declare.SEARCH_COLUMNS`) and every result's host load
    (:data:`~natbench.metrics.hostload.HOST_COLUMNS`), then what each registered search algorithm declares
    (:attr:`~natbench.search.SearchAlgorithm.columns`; a result of another algorithm reads its default)."""
    out: dict[str, Column] = {c.name: c for c in (*SEARCH_COLUMNS, *HOST_COLUMNS)}
    for _, algo in ALGORITHMS.entries():
        for c in algo.columns:
            out.setdefault(c.name, c)
    return tuple(out.values())


def result_columns() -> tuple[Column, ...]:
    """The derived columns of :func:`results_frame`, in order: :func:`every_result_columns`, then what each
    registered metric declares (:attr:`~natbench.metrics.Metric.columns`, in measurement order; a column two metrics
    declare comes once)."""
    out: dict[str, Column] = {c.name: c for c in every_result_columns()}
    for m in all_metrics():
        for c in m.columns:
            out.setdefault(c.name, c)
    return tuple(out.values())


def _declaring(columns: Iterable[Column]) -> dict[str, frozenset[str]]:
    """Column name -> the metrics whose results it is computed for (an empty set: every result's)."""
    every = {c.name for c in every_result_columns()}
    by: dict[str, set[str]] = {c.name: set() for c in columns}
    for m in all_metrics():
        for c in m.columns:
            if c.name not in every:
                by[c.name].add(m.name)
    return {k: frozenset(v) for k, v in by.items()}


BASE_COLUMNS = ["point_id", "metric", "repetition", "value", "unit", "error", "directions", "reported", "dut_cpu_busy"]
"""The first columns of :func:`results_frame`; ``dut_cpu_busy`` is NaN here (the report fills it from the monitored
trials: :func:`natbench.report.aggregate.with_dut_cpu_busy`)."""


def result_column_names() -> list[str]:
    """Columns of :func:`results_frame` (without points): :data:`BASE_COLUMNS`, :func:`result_columns`, ``extra``."""
    return [*BASE_COLUMNS, *(c.name for c in result_columns()), "extra"]


POINT_COLUMNS = ["label", "connections", "cores"]
"""Columns :func:`results_frame` adds from the working points."""


def results_frame(
    records: Iterable[TrialRecord | RepetitionResult], points: Iterable[PointRecord] | None = None
) -> pd.DataFrame:
    """One row per repetition result: :func:`result_column_names`, and :data:`POINT_COLUMNS` when ``points`` are
    given. Trials among ``records`` are left out, so a run's records can be passed in file order.

    Frame rates: ``reported`` = ``extra["all_frames_per_second"]`` when the engine stored it, else value x number
    of directions (``extra["directions"]``: 2 or "bidirectional" -> x2). ``error`` stays as stored (the search's
    final width in the stored, per-direction unit). A declared column's cell is computed for the results of the
    metrics that declare it (every result's for the search columns), else it is its default (NaN, False, None).
    """
    derived = result_columns()
    declaring = _declaring(derived)
    names = result_column_names()
    cols: dict[str, list[Any]] = {c: [] for c in names}
    for r in records:
        if not isinstance(r, RepetitionResult):
            continue
        unit = UNIT_ALIASES.get(r.unit, r.unit)
        value = _num(r.value)
        cols["point_id"].append(r.point_id)
        cols["metric"].append(r.metric)
        cols["repetition"].append(r.repetition)
        cols["value"].append(value)
        cols["unit"].append(unit)
        cols["error"].append(_num(r.error))
        cols["directions"].append(directions_of(r.extra.get("directions")))
        cols["reported"].append(value * reported_factor(unit, value, r.extra))
        cols["dut_cpu_busy"].append(float("nan"))
        for c in derived:
            whose = declaring[c.name]
            cols[c.name].append(c.value(r) if not whose or r.metric in whose else c.default)
        cols["extra"].append(r.extra)
    df = pd.DataFrame(cols, columns=names)
    for name in ("point_id", "metric", "unit"):
        df[name] = df[name].astype("category")
    for name in ("value", "error", "reported", "dut_cpu_busy"):
        df[name] = df[name].astype("float64")
    for name in ("repetition", "directions"):
        df[name] = df[name].astype("int64")
    df = df.astype({c.name: c.dtype for c in derived})
    if points is not None:
        by_id = {p.id: p for p in points}
        ids = df["point_id"].astype(str)
        df["label"] = ids.map(lambda pid: by_id[pid].label if pid in by_id else None).astype(object)
        df["connections"] = ids.map(lambda pid: by_id[pid].connections if pid in by_id else None).astype("Int64")
        df["cores"] = ids.map(lambda pid: by_id[pid].cores if pid in by_id else None).astype("Int64")
    return df


# ------------------------------------------------------------------------------------------------------- points
def _sizes(
    params: Mapping[str, Any], declared: Iterable[DutDeclarations], attr: str
) -> tuple[float, TableParam | None]:
    """(size, its declaration) from the first of ``declared`` whose ``attr`` parameter the point sets."""
    for d in declared:
        param: TableParam | None = getattr(d, attr)
        if param is not None and params.get(param.param) is not None:
            return float(params[param.param]), param
    return float("nan"), None


def points_frame(
    points: Iterable[PointRecord], declarations: Mapping[str, DutDeclarations] | None = None
) -> pd.DataFrame:
    """Working points as a frame indexed by point id, in campaign order.

    Adds ``src_count``, ``dst_count`` (port range sizes), ``table_size`` and ``hash_size`` (from the DUT parameters
    of the swept DUT, else of the first DUT that has them: the parameters its DUT kind declares,
    :func:`~natbench.run.format.declarations_for` with ``declarations`` as the run stored them; None: the run stored
    none) with the rows that name them (``table_label``, ``table_ratio_label``, ``hash_label``,
    ``hash_ratio_label``), and two grouping keys: ``cores_group`` (everything but the cores) and ``conn_group``
    (everything but ports, connections and table sizes).
    """
    stored = dict(declarations or {})
    rows: list[dict[str, Any]] = []
    for p in points:
        src = [p.src_ports.first, p.src_ports.last]
        dst = [p.dst_ports.first, p.dst_ports.last]
        swept = p.swept_dut
        order = ([swept] if swept in p.dut_params else []) + [n for n in p.dut_params if n != swept]
        table = hashs = float("nan")
        table_by: TableParam | None = None
        hash_by: TableParam | None = None
        for name in order:
            prm = p.dut_params[name]
            declared = declarations_for(stored, name)
            if math.isnan(table):
                table, table_by = _sizes(prm, declared, "table_size")
            if math.isnan(hashs):
                hashs, hash_by = _sizes(prm, declared, "hash_size")
        src_count, dst_count = len(p.src_ports), len(p.dst_ports)
        rows.append(
            {
                "point_id": p.id,
                "index": p.index,
                "label": p.label or p.id,
                "name": p.name,
                "cores": float("nan") if p.cores is None else float(p.cores),
                "src_first": src[0],
                "src_last": src[1],
                "dst_first": dst[0],
                "dst_last": dst[1],
                "src_count": src_count,
                "dst_count": dst_count,
                "connections": p.connections or src_count * dst_count,
                "frame_size": p.frame_size,
                "table_size": table,
                "hash_size": hashs,
                "table_label": table_by.label if table_by else None,
                "table_ratio_label": table_by.ratio_label if table_by else None,
                "hash_label": hash_by.label if hash_by else None,
                "hash_ratio_label": hash_by.ratio_label if hash_by else None,
                "swept_dut": swept,
                "cores_group": json.dumps(
                    [p.name, src, dst, p.frame_size, p.dut_params, swept], sort_keys=True, default=str
                ),
                "conn_group": json.dumps([p.name, p.cores, p.frame_size, swept], sort_keys=True, default=str),
            }
        )
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["index", "label", "cores", "connections"]).rename_axis("point_id")
    # an id is the hash of a point's parameters: a repeated id is the same point listed twice
    return df.drop_duplicates("point_id").sort_values("index").set_index("point_id")


# ------------------------------------------------------------------------------------------------------ parquet
def to_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Write a frame of this module as Parquet: ``extra`` as JSON text (sorted keys), everything else as it is."""
    out = frame.copy()
    if "extra" in out:
        out["extra"] = [json.dumps(e, sort_keys=True) for e in out["extra"]]
    out.to_parquet(path, index=False)
