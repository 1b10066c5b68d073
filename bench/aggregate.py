"""Benchmark: aggregate 1,000,000 synthetic rows the way `natbench report` does.

Prints wall-clock times of, on the same synthetic data and in the same process:
  * summarize + scale-ups + tear-down over 1,000,000 repetition-result rows (target < 2 s),
  * trial_summary over 1,000,000 trial rows,
  * references: a naive pure-Python group-by (dict of lists + statistics.median) of the same
    result rows, and json.loads of the same rows as trials.jsonl lines (what loading costs),
  * results_frame: building the tidy frame from 1,000,000 parsed records.
Usage: python bench/aggregate.py [--rows N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from natbench.metrics import metric
from natbench.report import aggregate as ag
from natbench.run import frames
from natbench.run.format import decode_record
from natbench.testing.rundir import make_point

METRICS = ["cps", "throughput", "forwarding", "latency", "teardown"]


def synthetic(rows: int, reps: int = 20, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, points): rows / (len(METRICS) * reps) points over a cores x connections grid."""
    rng = np.random.default_rng(seed)
    npoints = rows // (len(METRICS) * reps)
    pts = []
    for i in range(npoints):
        cores = 2 ** (i % 5)
        dst = 10 + i // 5  # every point distinct (an id hashes the parameters)
        pts.append(
            make_point(
                i,
                (1, 4000),
                (1, dst),
                cores=cores,
                name=f"impl{i // 1000}",
                dut_params={"dut": {"conntrack_max": 2**23, "hashsize": 2**23}},
                swept_dut="dut",
            )
        )
    ids = np.array([p.id for p in pts])
    n = npoints * len(METRICS) * reps
    point_id = np.repeat(ids, len(METRICS) * reps)
    metric = np.tile(np.repeat(np.array(METRICS), reps), npoints)
    repetition = np.tile(np.arange(reps), npoints * len(METRICS))
    value = rng.normal(1e6, 1e4, n)
    unit = np.where(np.isin(metric, ["throughput", "forwarding"]), "fps", "cps")
    directions = np.where(unit == "fps", 2, 1)
    filled = np.where(metric == "teardown", rng.normal(10, 0.1, n), np.nan)
    empty = np.where(metric == "teardown", rng.normal(0.5, 0.01, n), np.nan)
    cols = {
        "point_id": point_id,
        "metric": metric,
        "repetition": repetition,
        "value": value,
        "unit": unit,
        "error": np.full(n, 100.0),
        "directions": directions,
        "reported": value * directions,
        "filled_delete_s": filled,
        "empty_delete_s": empty,
        "created_connections": np.where(metric == "teardown", 4e6, np.nan),
        "tester_bound": np.zeros(n, dtype=bool),
    }
    return _results(cols, n), frames.points_frame(pts)


def _results(cols: dict[str, np.ndarray], n: int) -> pd.DataFrame:
    """A frame with the columns and dtypes of natbench.run.frames.results_frame, from column arrays (the other
    derived columns empty: NaN, False)."""
    df = pd.DataFrame(cols)
    df["dut_cpu_busy"] = np.full(n, np.nan)
    for c in frames.result_columns():
        if c.name not in df:
            df[c.name] = pd.Series([c.default] * n, dtype=c.dtype)
    df["extra"] = [{}] * n
    df = df[frames.result_column_names()]
    for c in ("point_id", "metric", "unit"):
        df[c] = df[c].astype("category")
    return df


def timed(label: str, fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    dt = time.perf_counter() - t0
    print(f"{label:<58} {dt:8.3f} s")
    return out, dt


def full_aggregation(results: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    summary = ag.summarize(results)
    ag.scale_up_cores(summary, points)
    ag.scale_connections(summary, points)
    ag.baseline_ratio(summary, points)
    ag.own_summary(results, metric("teardown"), points)
    return summary


def naive(records: list[dict]) -> dict:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        groups[(r["point_id"], r["metric"])].append(r["value"] * r["extra"].get("directions", 1))
    return {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    rows = ap.parse_args().rows
    results, points = synthetic(rows)
    print(f"{len(results):,} result rows, {len(points):,} working points, {len(METRICS)} metrics")

    label = "aggregate: summarize + scale-ups + baseline + tear-down"
    summary, t_first = timed(label + " (1st)", full_aggregation, results, points)
    t_agg = min(timed(label + f" ({i})", full_aggregation, results, points)[1] for i in (2, 3))

    trials = pd.DataFrame(
        {
            "point_id": results["point_id"],
            "metric": results["metric"],
            "verdict": pd.Categorical(np.where(results["repetition"] % 3 == 0, "fail", "pass")),
            "started_at": np.arange(len(results), dtype=float),
            "ended_at": np.arange(len(results), dtype=float) + 1.5,
        }
    )
    timed("trial_summary over the same number of trial rows", ag.trial_summary, trials)

    records = [
        {
            "type": "result",
            "point_id": p,
            "metric": m,
            "repetition": int(r),
            "value": float(v),
            "unit": u,
            "error": 100.0,
            "extra": {"directions": int(d)},
        }
        for p, m, r, v, u, d in zip(
            results["point_id"].astype(str),
            results["metric"].astype(str),
            results["repetition"],
            results["value"],
            results["unit"].astype(str),
            results["directions"],
            strict=True,
        )
    ]
    ref, t_naive = timed("reference: naive Python group-by (statistics.median)", naive, records)
    lines = [json.dumps(r) for r in records]
    _, t_json = timed("reference: json.loads of the rows as trials.jsonl lines", lambda: [json.loads(x) for x in lines])
    typed = [decode_record(r) for r in records]
    timed("results_frame: tidy frame from the decoded records", frames.results_frame, typed)

    k = next(iter(ref))
    assert abs(summary.loc[k, "median"] - ref[k][0]) < 1e-6 * ref[k][0], "aggregation disagrees with reference"
    print(
        f"aggregation (best) vs naive group-by: {t_naive / t_agg:5.1f}x faster; "
        f"vs json.loads of the lines: {t_json / t_agg:5.1f}x faster"
    )
    print(f"target < 2 s: {'met' if t_first < 2 else 'MISSED'} (first call {t_first:.3f} s, best {t_agg:.3f} s)")


if __name__ == "__main__":
    main()
