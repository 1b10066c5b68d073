"""Memory per connection at its boundaries (natbench.metrics.memory.fill_figures; docs/engine.md, the memory rows):
the slab caches' growth is their sum, a slab that did not grow says nothing (unknown, never 0 B), and a slab that
grew by one byte counts. Checked on stored records (:func:`~natbench.metrics.memory.memory_used`) and through the
tables of a run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

import natbench
from natbench.metrics.memory import fill_figures, memory_used
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

N = 4000
GIB = 2**30


def record(slabs: dict[str, int], fall_per_connection: int = 0, noise: int = 4096) -> dict:
    """A fill's memory record: each slab cache grew by ``slabs[key]`` bytes in all; MemAvailable fell by
    ``fall_per_connection`` B per connection, its readings of the emptied table spread by ``noise`` bytes."""
    before = {"mem_total": 16 * GIB, "mem_available": 12 * GIB, **{k: 4096 for k in slabs}}
    after = {
        "mem_total": 16 * GIB,
        "mem_available": 12 * GIB - fall_per_connection * N,
        **{k: 4096 + v for k, v in slabs.items()},
    }
    return memory_used(before, after, N, {"mem_available": noise})


def test_the_growth_of_two_slab_caches_is_their_sum() -> None:
    # a conntrack entry (256 B) and its extension (64 B) per connection: 320 B, not the larger of the two
    figures = fill_figures(record({"conntrack_slab": 256 * N, "conntrack_ext_slab": 64 * N}))
    assert figures is not None
    assert (figures.per_connection, figures.source) == (320.0, "slab")
    assert figures.slabs == {"conntrack_slab": 256.0, "conntrack_ext_slab": 64.0}


def test_a_slab_that_did_not_grow_says_nothing() -> None:
    # no growth, and MemAvailable's fall within its noise: unknown, not 0 B per connection
    figures = fill_figures(record({"conntrack_slab": 0}))
    assert figures is not None
    assert (figures.per_connection, figures.source, figures.slabs) == (None, None, {})
    # no growth, and a fall far beyond its noise: MemAvailable's figure, not the slab's 0
    figures = fill_figures(record({"conntrack_slab": 0}, fall_per_connection=300))
    assert figures is not None
    assert (figures.per_connection, figures.source) == (300.0, "mem_available")


def test_a_slab_that_grew_by_one_byte_is_the_figure() -> None:
    figures = fill_figures(record({"conntrack_slab": 1}, fall_per_connection=300))
    assert figures is not None
    assert (figures.per_connection, figures.source) == (pytest.approx(1 / N), "slab")


def test_a_slab_that_did_not_grow_shows_no_memory_figure_in_the_tables(tmp_path: Path) -> None:
    p = make_point(0, (1, 400), (1, 10))  # 4,000 connections
    recs = [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
    recs.append(trial_record(p.id, "throughput", 0, 0, rate=N, kind="fill", extra={"memory": record({"slab": 0})}))
    run = natbench.load(write_run_dir(tmp_path / "run", [p], recs))
    assert run.memory["per_connection"].isna().all()
    table = run.seed_table()
    assert [str(c) for c in table.cells.loc["memory / conn. (B)"]] == ["-"]
