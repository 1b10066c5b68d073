"""The DUT memory rows of the result tables: medians over a point's fills, worked out by hand from the stored
fill trials (written in the form the engine stores, :func:`natbench.metrics.memory.memory_used`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import natbench
from natbench.metrics.memory import memory_used
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

GIB = 2**30


def fill(pid: str, metric: str, rep: int, n: int, per_conn: int, slab: int | None, verdict: str = "pass") -> dict:
    """A fill trial whose DUT lost ``per_conn`` B of MemAvailable and grew its slab ``slab`` B per connection."""
    before: dict[str, int] = {"mem_total": 16 * GIB, "mem_available": 12 * GIB}
    after: dict[str, int] = {"mem_total": 16 * GIB, "mem_available": 12 * GIB - per_conn * n}
    if slab is not None:
        before["conntrack_slab"], after["conntrack_slab"] = 4096, 4096 + slab * n
    extra = {"memory": memory_used(before, after, n)}
    return trial_record(pid, metric, rep, 0, rate=n, kind="fill", verdict=verdict, extra=extra)


def rows(table: Any) -> dict[str, list[str]]:
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def test_memory_rows_are_the_median_over_the_points_fills(tmp_path: Path) -> None:
    a = make_point(0, (1, 400), (1, 10))  # 4,000 connections
    b = make_point(1, (1, 800), (1, 10))  # 8,000 connections
    recs: list[dict] = []
    for p in (a, b):
        recs += [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
        recs += [result_record(p.id, "teardown", 0, 2000.0, "conn/s", extra={"T_N": 2.5, "T_0": 0.5})]
    # point a: throughput fills at 300, 350 and 310 B/conn, slab 256, 256, 272; an invalid fill (900 B) is ignored
    recs += [fill(a.id, "throughput", 0, 4000, 300, 256), fill(a.id, "throughput", 1, 4000, 350, 256)]
    recs += [fill(a.id, "throughput", 2, 4000, 310, 272), fill(a.id, "throughput", 2, 4000, 900, 900, "invalid")]
    # point b: one throughput fill whose DUT shows no slab; a tear-down fill at 400 B/conn
    recs += [fill(b.id, "throughput", 0, 8000, 320, None), fill(b.id, "teardown", 0, 8000, 400, 256)]
    run = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs))

    perf = rows(run.seed_table())
    # median(300, 310, 350) = 310 at a; 320 at b (the tear-down fill belongs to the tear-down table)
    assert perf["memory / conn. (B)"] == ["310.0", "320.0"]
    # 4,000 x 310 = 1,240,000 B = 1.240 MB; 8,000 x 320 = 2,560,000 B = 2.560 MB
    assert perf["memory used (MB)"] == ["1.240", "2.560"]
    # median(256, 256, 272) = 256; b showed no slab
    assert perf["conntrack slab / conn. (B)"] == ["256.0", "-"]
    assert "Jool session slab / conn. (B)" not in perf
    assert "MemAvailable" in run.seed_table().caption

    td = rows(run.seed_table("teardown"))
    # only b's tear-down fill stored memory: 400 B/conn, 8,000 x 400 = 3.2 MB, slab 256
    assert td["memory / conn. (B)"] == ["-", "400.0"]
    assert td["memory used (MB)"] == ["-", "3.200"]
    assert td["conntrack slab / conn. (B)"] == ["-", "256.0"]


def test_no_memory_rows_without_stored_memory(tmp_path: Path) -> None:
    p = make_point(0, (1, 400), (1, 10))
    recs = [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
    recs += [trial_record(p.id, "throughput", 0, 0, rate=4000, kind="fill", extra={"memory_error": "boom"})]
    perf = rows(natbench.load(write_run_dir(tmp_path / "run", [p], recs)).seed_table())
    assert not [r for r in perf if "memory" in r or "slab" in r]
