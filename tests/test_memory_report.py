"""The DUT memory rows of the result tables: medians over a point's kept fills, worked out by hand from the stored
fill trials (written in the form the engine stores, :func:`natbench.metrics.memory.memory_used`).

Memory per connection is the slab caches' growth where the DUT shows one, else MemAvailable's fall when it stands
out of the noise of the readings of the emptied table; never negative, never a 0 that means "not read"."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import natbench
from natbench.metrics import reported_metric
from natbench.metrics.memory import RESOLUTION, SIGNIFICANCE, fill_figures, memory_used
from natbench.report import aggregate
from natbench.run import frames
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

GIB = 2**30


def fill(
    pid: str,
    metric: str,
    rep: int,
    n: int,
    per_conn: int,
    slab: int | None,
    verdict: str = "pass",
    *,
    noise: int | None = 4096,
    step: int = 0,
    extra: dict[str, Any] | None = None,
) -> dict:
    """A fill trial whose DUT lost ``per_conn`` B of MemAvailable and grew its slab ``slab`` B per connection; the
    readings of its emptied table spread by ``noise`` bytes (None: a record stored before natbench read them)."""
    before: dict[str, int] = {"mem_total": 16 * GIB, "mem_available": 12 * GIB}
    after: dict[str, int] = {"mem_total": 16 * GIB, "mem_available": 12 * GIB - per_conn * n}
    if slab is not None:
        before["conntrack_slab"], after["conntrack_slab"] = 4096, 4096 + slab * n
    spread = None if noise is None else {"mem_available": noise}
    ext = {"memory": memory_used(before, after, n, spread), **(extra or {})}
    return trial_record(pid, metric, rep, step, rate=n, kind="fill", verdict=verdict, extra=ext)


def rows(table: Any) -> dict[str, list[str]]:
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def results(*points: Any) -> list[dict]:
    recs: list[dict] = []
    for p in points:
        recs += [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
        recs += [result_record(p.id, "teardown", 0, 2000.0, "conn/s", extra={"T_N": 2.5, "T_0": 0.5})]
    return recs


def test_memory_per_connection_is_the_slab_figure_where_the_dut_shows_one(tmp_path: Path) -> None:
    a = make_point(0, (1, 400), (1, 10))  # 4,000 connections
    b = make_point(1, (1, 800), (1, 10))  # 8,000 connections
    recs = results(a, b)
    # point a: MemAvailable fell by 300, 350 and 310 B/conn, the slab grew 256, 256, 272: the slab is the figure
    # (MemAvailable counts everything the kernel did meanwhile); an invalid fill (900 B) is ignored
    recs += [fill(a.id, "throughput", 0, 4000, 300, 256), fill(a.id, "throughput", 1, 4000, 350, 256)]
    recs += [fill(a.id, "throughput", 2, 4000, 310, 272), fill(a.id, "throughput", 2, 4000, 900, 900, "invalid")]
    # point b: no slab; MemAvailable fell 320 B x 8,000 = 2,560,000 B, far above 10 x its 4,096 B noise
    recs += [fill(b.id, "throughput", 0, 8000, 320, None), fill(b.id, "teardown", 0, 8000, 400, 256)]
    run = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs))

    perf = rows(run.seed_table())
    # median(256, 256, 272) = 256 at a; 320 at b (the tear-down fill belongs to the tear-down table)
    assert perf["memory / conn. (B)"] == ["256.0", "320.0"]
    # 4,000 x 256 = 1,024,000 B = 1.024 MB; 8,000 x 320 = 2,560,000 B = 2.560 MB
    assert perf["memory used (MB)"] == ["1.024", "2.560"]
    assert perf["conntrack slab / conn. (B)"] == ["256.0", "-"]  # the source of a's figure; b shows no slab
    assert "Jool session slab / conn. (B)" not in perf
    caption = run.seed_table().caption
    assert "slab caches" in caption and "10 times the spread of repeated readings" in caption
    assert "cannot be told from the noise" not in caption  # every point has a figure

    td = rows(run.seed_table("teardown"))
    # only b's tear-down fill stored memory: slab 256 B/conn, 8,000 x 256 = 2.048 MB
    assert td["memory / conn. (B)"] == ["-", "256.0"]
    assert td["memory used (MB)"] == ["-", "2.048"]
    assert td["conntrack slab / conn. (B)"] == ["-", "256.0"]


@pytest.mark.parametrize(
    ("per_conn", "noise", "why"),
    [
        (-3, 4096, "MemAvailable rose: the quickstart's -12.29 B"),
        (0, 4096, "MemAvailable did not move: the Jool VM's 0"),
        (9, 4096, "a fall of 36,000 B within 10 x the 4,096 B spread of the readings"),
        (300, 200_000, "a fall of 1,200,000 B within 10 x a noisy 200,000 B spread"),
        (300, None, "a record without readings of the emptied table: its noise is not known"),
    ],
)
def test_a_memavailable_fall_within_its_noise_is_no_figure(
    tmp_path: Path, per_conn: int, noise: int | None, why: str
) -> None:
    p = make_point(0, (1, 400), (1, 10))  # 4,000 connections
    recs = [*results(p), fill(p.id, "throughput", 0, 4000, per_conn, None, noise=noise)]
    run = natbench.load(write_run_dir(tmp_path / "run", [p], recs))
    table = run.seed_table()
    perf = rows(table)
    assert perf["memory / conn. (B)"] == ["-"], why
    assert perf["memory used (MB)"] == ["-"], why
    assert "cannot be told from the noise" in table.caption
    assert run.memory["per_connection"].isna().all() and run.memory["mem_available"].isna().all()


def test_the_significance_threshold_is_ten_times_the_larger_of_the_spread_and_the_meminfo_resolution() -> None:
    def figure(fall: int, noise: int) -> float | None:
        rec = memory_used({"mem_available": 10**9}, {"mem_available": 10**9 - fall}, 1000, {"mem_available": noise})
        figures = fill_figures(rec)
        assert figures is not None
        return figures.per_connection

    assert SIGNIFICANCE == 10 and RESOLUTION == 1024
    assert figure(50_000, 5_000) == 50.0  # exactly 10 x the spread
    assert figure(49_999, 5_000) is None
    assert figure(10_240, 0) == pytest.approx(10.24)  # identical readings: 10 x 1 kB, the meminfo resolution
    assert figure(10_239, 0) is None


def test_a_fill_whose_validation_sample_failed_was_not_kept_and_its_memory_does_not_count(tmp_path: Path) -> None:
    """A DUT that cannot count: its fill is kept only when the validation sample after it (``fill_check``) passes;
    the first fill (slab 900 B/conn) was followed by a failed sample and repeated, the second (256) was kept."""
    p = make_point(0, (1, 400), (1, 10))
    sampled = {"fill_verified": "sample"}
    recs = results(p)
    recs += [fill(p.id, "throughput", 0, 4000, 950, 900, step=0, extra=sampled)]
    recs += [trial_record(p.id, "throughput", 0, 1, rate=4000, kind="fill_check", verdict="invalid")]
    recs += [fill(p.id, "throughput", 0, 4000, 300, 256, step=2, extra=sampled)]
    recs += [trial_record(p.id, "throughput", 0, 3, rate=4000, kind="fill_check", verdict="pass")]
    # a sampled fill whose check never came (the run stopped): not kept either
    recs += [fill(p.id, "throughput", 1, 4000, 800, 700, step=0, extra=sampled)]
    run = natbench.load(write_run_dir(tmp_path / "run", [p], recs))
    assert run.memory["conntrack_slab"].tolist() == [256.0]
    assert rows(run.seed_table())["memory / conn. (B)"] == ["256.0"]


def test_no_memory_rows_without_stored_memory(tmp_path: Path) -> None:
    p = make_point(0, (1, 400), (1, 10))
    recs = [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
    recs += [trial_record(p.id, "throughput", 0, 0, rate=4000, kind="fill", extra={"memory_error": "boom"})]
    perf = rows(natbench.load(write_run_dir(tmp_path / "run", [p], recs)).seed_table())
    assert not [r for r in perf if "memory" in r or "slab" in r]


def test_only_a_passed_fill_check_right_after_a_sampled_fill_keeps_it() -> None:
    """A sampled fill counts only when the very next trial of its repetition is a ``fill_check`` that passed: a
    passing trial of another kind there, or a passed check after something else, does not keep it."""
    sampled = {"fill_verified": "sample"}
    kept = [fill("p", "throughput", 0, 4000, 300, 256, step=0, extra=sampled)]
    kept += [trial_record("p", "throughput", 0, 1, rate=4000, kind="fill_check")]
    other = [fill("p", "throughput", 1, 4000, 950, 900, step=0, extra=sampled)]
    other += [trial_record("p", "throughput", 1, 1, rate=2000, kind="phase2")]  # passed, but not the sample
    other += [trial_record("p", "throughput", 1, 2, rate=4000, kind="fill_check")]
    frame = aggregate.fill_memory_frame(frames.trials_frame([*kept, *other]))
    assert frame["conntrack_slab"].tolist() == [256.0] and frame["created_connections"].tolist() == [4000.0]


def test_memory_counts_only_from_the_trial_kinds_a_metric_declares() -> None:
    """Memory stored by a trial that is not one of its metric's memory trials (a phase-2 trial; any trial of cps,
    which declares none) is not a fill's memory; a failed fill's neither."""
    assert reported_metric("cps").memory_trials == () and reported_metric("throughput").memory_trials == ("fill",)
    counted = fill("p", "throughput", 0, 4000, 300, 256)
    phase2 = dataclasses.replace(fill("p", "throughput", 1, 4000, 950, 900), kind="phase2")
    of_cps = fill("p", "cps", 0, 4000, 700, 700)
    failed = fill("p", "throughput", 2, 4000, 800, 800, "fail")
    frame = aggregate.fill_memory_frame(frames.trials_frame([counted, phase2, of_cps, failed]))
    assert frame[["metric", "conntrack_slab"]].values.tolist() == [["throughput", 256.0]]


def test_a_fills_memavailable_figure_is_kept_beside_the_slab_figure_it_loses_to() -> None:
    """A DUT that shows its slab caches: per connection is the slab's growth (256 B), but MemAvailable's fall (300 B
    per connection, 1,200,000 B: far above 10 x its 4,096 B noise) still stands in its own column."""
    frame = aggregate.fill_memory_frame(frames.trials_frame([fill("p", "throughput", 0, 4000, 300, 256)]))
    assert frame["per_connection"].tolist() == [256.0] and frame["conntrack_slab"].tolist() == [256.0]
    assert frame["mem_available"].tolist() == [300.0]
    assert frame["used"].tolist() == [4000 * 256.0]


def test_a_fill_without_a_memory_figure_does_not_hide_the_later_fills_of_its_repetition() -> None:
    """A repetition whose first fills stored no usable memory (the reading failed; a record naming no connections)
    and whose last fill stored it: that last fill counts."""
    failed_reading = trial_record("p", "throughput", 0, 0, rate=4000, kind="fill", extra={"memory_error": "boom"})
    no_connections = trial_record("p", "throughput", 0, 1, rate=4000, kind="fill", extra={"memory": {"used": {}}})
    read = fill("p", "throughput", 0, 4000, 300, 256, step=2)
    frame = aggregate.fill_memory_frame(frames.trials_frame([failed_reading, no_connections, read]))
    assert len(frame) == 1
    assert frame["conntrack_slab"].tolist() == [256.0] and frame["created_connections"].tolist() == [4000.0]


def test_fills_are_listed_in_the_order_the_run_measured_them() -> None:
    """Point by point as the run went (point ``pb`` before ``pa``), a point's metrics in their measurement order
    (throughput before teardown), not sorted by name."""
    recs = [fill("pb", "throughput", 0, 4000, 300, 256), fill("pb", "throughput", 1, 4000, 300, 272)]
    recs += [fill("pb", "teardown", 0, 4000, 300, 288), fill("pa", "throughput", 0, 4000, 300, 240)]
    frame = aggregate.fill_memory_frame(frames.trials_frame(recs))
    assert frame[["point_id", "metric"]].values.tolist() == [
        ["pb", "throughput"],
        ["pb", "throughput"],
        ["pb", "teardown"],
        ["pa", "throughput"],
    ]
    assert frame["conntrack_slab"].tolist() == [256.0, 272.0, 288.0, 240.0]
    assert aggregate.memory_summary(frame).index.tolist() == ["pb", "pa"]


@pytest.mark.parametrize(
    "trials",
    [
        [],
        [trial_record("p", "throughput", 0, 0, rate=4000, kind="fill", extra={"memory_error": "boom"})],
    ],
    ids=["no trials", "no fill stored memory"],
)
def test_a_run_without_memory_gives_an_empty_frame_of_the_same_columns_and_types(trials: list) -> None:
    """The columns and their float64 types do not depend on whether any fill stored memory."""
    frame = aggregate.fill_memory_frame(frames.trials_frame(trials))
    assert frame.empty
    assert frame.columns.tolist() == ["point_id", "metric", "created_connections", *aggregate.MEMORY_FIGURES]
    assert frame.dtypes.iloc[2:].tolist() == ["float64"] * 4
    with_fill = aggregate.fill_memory_frame(frames.trials_frame([fill("p", "throughput", 0, 4000, 300, None)]))
    assert with_fill.dtypes.iloc[2:].tolist() == ["float64"] * 4  # as when a fill stored memory
