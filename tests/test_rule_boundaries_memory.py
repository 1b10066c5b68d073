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


@pytest.mark.parametrize("connections", [None, 0, -4000, "4000", True, float("nan")])
def test_a_record_that_names_no_positive_connection_count_has_no_figures(connections: object) -> None:
    # a hand-edited or damaged record: the slab grew, but per connection of no known N is no figure
    rec = {**record({"conntrack_slab": 256 * N}), "connections": connections}
    assert fill_figures(rec) is None


def test_one_connection_is_a_count_and_takes_all_the_growth() -> None:
    rec = memory_used({"conntrack_slab": 4096}, {"conntrack_slab": 4096 + 320}, 1, {"mem_available": 0})
    figures = fill_figures(rec)
    assert figures is not None
    assert (figures.connections, figures.per_connection, figures.source) == (1, 320.0, "slab")


@pytest.mark.parametrize("used", [None, [256 * N], "conntrack_slab"])
def test_a_record_whose_use_is_no_mapping_has_no_figure_but_its_connections(used: object) -> None:
    figures = fill_figures({**record({"conntrack_slab": 256 * N}), "used": used})
    assert figures is not None
    assert (figures.connections, figures.per_connection, figures.source) == (N, None, None)
    assert (figures.mem_available, figures.slabs) == (None, {})


def test_only_numbers_that_grew_are_slabs_and_a_capacity_or_memavailable_never_is() -> None:
    # mem_total rising (a DUT given more memory) is no connection's use, nor is a value that is no number;
    # MemAvailable's fall (within its noise here) is its own figure, never a slab's
    used = {
        "mem_total": 2 * GIB,
        "mem_available": 1024,
        "conntrack_slab": 256 * N,
        "broken_slab": None,
        "text_slab": "12",
        "flag_slab": True,
    }
    figures = fill_figures({"connections": N, "used": used, "noise": {"mem_available": 4096}})
    assert figures is not None
    assert figures.slabs == {"conntrack_slab": 256.0}
    assert (figures.per_connection, figures.source, figures.mem_available) == (256.0, "slab", None)


def test_memavailables_fall_is_reported_beside_the_slabs_it_does_not_replace() -> None:
    # both tell: the slab's growth is the figure, MemAvailable's significant fall is kept beside it
    figures = fill_figures(record({"conntrack_slab": 256 * N}, fall_per_connection=300))
    assert figures is not None
    assert (figures.per_connection, figures.source, figures.mem_available) == (256.0, "slab", 300.0)
