"""A run's records as pandas DataFrames: the one builder that Parquet export, reports and notebooks share.

* :func:`trials_frame`: one row per trial; frame counts summed over the directions (``sent``, ``received``,
  ``valid``) and per direction (``forward_sent`` ... ``reverse_valid``, <NA> for a direction the trial did not
  use); ``extra`` the record's dict.
* :func:`results_frame`: one row per repetition result; ``reported`` is the value as reports show it (frame
  rates of several directions as all frames per second, :func:`~natbench.run.format.reported_factor`), ``unit``
  the reported spelling (``conn/s`` reads as ``cps``), then the columns :data:`RESULT_FIELDS` derives from
  ``extra``; with the points, the point's ``label``, ``connections`` and ``cores``.
* :func:`points_frame`: the working points indexed by id, with port counts, table sizes and grouping keys.

One meaning per column name: ``connections`` is always a working point's number of connections (|S| x |D|);
the connections a tear-down's fill created are ``created_connections``. For Parquet (:func:`to_parquet`)
``extra`` is stored as JSON text (sorted keys).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from natbench.results import Direction, RepetitionResult, TrialRecord
from natbench.run.format import UNIT_ALIASES, PointRecord, directions_of, reported_factor

__all__ = [
    "DIRECTION_COLUMNS",
    "HASH_SIZE_KEYS",
    "POINT_COLUMNS",
    "RESULT_COLUMNS",
    "RESULT_FIELDS",
    "TABLE_SIZE_KEYS",
    "TRIAL_COLUMNS",
    "ResultField",
    "points_frame",
    "results_frame",
    "tagged_only",
    "to_parquet",
    "trials_frame",
]


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
def tagged_only(extra: Mapping[str, Any]) -> bool:
    """True for a delay result asked for every frame's delay (it stores ``frames`` per direction) whose tester timed
    only its tagged latency frames in some direction (TRex: PDV from the tagged frames, not every frame)."""
    frames = extra.get("frames")
    return isinstance(frames, Mapping) and any(str(v) == "tagged" for v in frames.values())


@dataclass(frozen=True)
class ResultField:
    """A column of :func:`results_frame` derived from a result (its ``extra`` mostly)."""

    name: str
    """The column."""
    dtype: str
    """Its pandas dtype (``float64`` or ``bool``)."""
    value: Callable[[RepetitionResult], Any]
    """The cell of one result."""


RESULT_FIELDS: tuple[ResultField, ...] = (
    # tear-down: T_N / T_0 (the methodology's names) or the report's names, N the fill created
    ResultField("filled_delete_s", "float64", lambda r: _num(r.extra.get("filled_delete_s", r.extra.get("T_N")))),
    ResultField("empty_delete_s", "float64", lambda r: _num(r.extra.get("empty_delete_s", r.extra.get("T_0")))),
    ResultField("created_connections", "float64", lambda r: _num(r.extra.get("connections"))),
    # searches: the value is a lower bound of the DUT (the tester's ceiling)
    ResultField("tester_bound", "bool", lambda r: bool(r.extra.get("tester_bound", False))),
    ResultField("dut_cpu_busy", "float64", lambda r: float("nan")),  # from the trials: report.aggregate
    ResultField("worst_case", "float64", lambda r: _num(r.extra.get("worst_case"))),  # latency (RFC 8219 7.2)
    ResultField("seeded", "bool", lambda r: bool(r.extra.get("seeded", False))),  # algorithm fast, seeded
    ResultField("tagged_only", "bool", lambda r: tagged_only(r.extra)),  # PDV from tagged frames only
    ResultField("unvalidated", "bool", lambda r: r.value is not None and r.extra.get("validated") is False),
    ResultField("no_pass", "bool", lambda r: r.value is None and bool(r.extra.get("no_passing_rate"))),
)
"""The derived columns of :func:`results_frame`, in order (what a metric stores and reports read)."""

RESULT_COLUMNS = [
    "point_id",
    "metric",
    "repetition",
    "value",
    "unit",
    "error",
    "directions",
    "reported",
    *(f.name for f in RESULT_FIELDS),
    "extra",
]
"""Columns of :func:`results_frame` (without points)."""

POINT_COLUMNS = ["label", "connections", "cores"]
"""Columns :func:`results_frame` adds from the working points."""


def results_frame(
    records: Iterable[TrialRecord | RepetitionResult], points: Iterable[PointRecord] | None = None
) -> pd.DataFrame:
    """One row per repetition result: :data:`RESULT_COLUMNS`, and :data:`POINT_COLUMNS` when ``points`` are given.
    Trials among ``records`` are left out, so a run's records can be passed in file order.

    Frame rates: ``reported`` = ``extra["all_frames_per_second"]`` when the engine stored it, else value x number
    of directions (``extra["directions"]``: 2 or "bidirectional" -> x2). ``error`` stays as stored (the search's
    final width in the stored, per-direction unit).
    """
    cols: dict[str, list[Any]] = {c: [] for c in RESULT_COLUMNS}
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
        for f in RESULT_FIELDS:
            cols[f.name].append(f.value(r))
        cols["extra"].append(r.extra)
    df = pd.DataFrame(cols, columns=RESULT_COLUMNS)
    for c in ("point_id", "metric", "unit"):
        df[c] = df[c].astype("category")
    for c in ("value", "error", "reported"):
        df[c] = df[c].astype("float64")
    for c in ("repetition", "directions"):
        df[c] = df[c].astype("int64")
    df = df.astype({f.name: f.dtype for f in RESULT_FIELDS})
    if points is not None:
        by_id = {p.id: p for p in points}
        ids = df["point_id"].astype(str)
        df["label"] = ids.map(lambda pid: by_id[pid].label if pid in by_id else None).astype(object)
        df["connections"] = ids.map(lambda pid: by_id[pid].connections if pid in by_id else None).astype("Int64")
        df["cores"] = ids.map(lambda pid: by_id[pid].cores if pid in by_id else None).astype("Int64")
    return df


# ------------------------------------------------------------------------------------------------------- points
TABLE_SIZE_KEYS = ("conntrack_max", "state_limit", "table_size")
"""Keys of a working point's DUT parameters that give the connection tracking table size."""
HASH_SIZE_KEYS = ("hashsize", "hash_size")
"""Keys that give the hash table size."""


def _first_key(params: Mapping[str, Any], keys: Iterable[str]) -> float:
    for k in keys:
        if params.get(k) is not None:
            return float(params[k])
    return float("nan")


def points_frame(points: Iterable[PointRecord]) -> pd.DataFrame:
    """Working points as a frame indexed by point id, in campaign order.

    Adds ``src_count``, ``dst_count`` (port range sizes), ``table_size`` and ``hash_size`` (from
    the DUT parameters of the swept DUT, else of the first DUT that has them: :data:`TABLE_SIZE_KEYS`,
    :data:`HASH_SIZE_KEYS`), and two grouping keys: ``cores_group`` (everything but the cores) and
    ``conn_group`` (everything but ports, connections and table sizes).
    """
    rows: list[dict[str, Any]] = []
    for p in points:
        src = [p.src_ports.first, p.src_ports.last]
        dst = [p.dst_ports.first, p.dst_ports.last]
        swept = p.swept_dut
        order = ([swept] if swept in p.dut_params else []) + [n for n in p.dut_params if n != swept]
        table = hashs = float("nan")
        for name in order:
            prm = p.dut_params[name]
            if math.isnan(table):
                table = _first_key(prm, TABLE_SIZE_KEYS)
            if math.isnan(hashs):
                hashs = _first_key(prm, HASH_SIZE_KEYS)
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
