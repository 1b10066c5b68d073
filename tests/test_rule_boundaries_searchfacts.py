"""What a report knows of a block's search, at its rules' boundaries (natbench.report.searchfacts; docs/report.md):

* the search is the one the block's first point *with a result* names: a point of the table where the metric has
  no result (its summary row is empty) names none, nor does an empty name;
* a search's ``first`` column (MLRsearch's goal) is its first value among the points that have one, likewise;
* its ``count`` columns (seeded repetitions, upper bounds from short trials) are counted for its caption notes.

Run directories written through the run-directory writer (natbench.testing.rundir) and loaded as the report loads
them, or the summary rows of one block as the performance table hands them over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

import natbench
from natbench.report.searchfacts import search_facts
from natbench.testing.rundir import make_point, result_record, write_run_dir

P = make_point(0, (1, 100), (1, 10), cores=1)
Q = make_point(1, (1, 100), (1, 10), cores=2)

FAST_NOTE = "throughput: fast search; repetitions after the first started from the earlier ones' results"
GOAL = {"loss_ratio": 0.0, "exceed_ratio": 0.0, "final_trial_duration": 60.0, "duration_sum": 60.0}
GOAL_WORDS = "preset rfc2544: loss ratio 0, exceed ratio 0, final trials 60 s, duration sum 60 s"


def caption(tmp_path: Path, throughput: dict[str, Any]) -> str:
    """The performance table's caption of a run measuring cps (binary) at P and Q, and throughput (``throughput``:
    its results' extra) at Q only: the throughput block's first point has no result of it."""
    recs = [
        result_record(pid, "cps", r, 1000.0, "cps", error=100.0, extra={"algorithm": "binary"})
        for pid in (P.id, Q.id)
        for r in range(3)
    ]
    recs += [
        result_record(Q.id, "throughput", r, 2000.0, "fps", error=100.0, extra={**throughput, "seeded": r > 0})
        for r in range(3)
    ]
    run = write_run_dir(tmp_path / f"run{len(list(tmp_path.iterdir()))}", [P, Q], recs)
    return natbench.load(run).seed_table().caption


def test_a_block_whose_first_point_has_no_result_names_the_search_of_the_next(tmp_path: Path) -> None:
    text = caption(tmp_path, {"algorithm": "fast"})
    assert FAST_NOTE in text
    assert "throughput: fast search: each value passed a full trial" in text
    assert "nan search" not in text


def test_a_block_whose_first_point_has_no_result_takes_the_search_goal_of_the_next(tmp_path: Path) -> None:
    text = caption(tmp_path, {"algorithm": "mlr", "mlr_preset": "rfc2544", "mlr_goal": GOAL})
    assert f"throughput: MLRsearch ({GOAL_WORDS}): each value is MLRsearch's relevant lower bound" in text
    assert "MLRsearch (nan)" not in text


def block(**columns: list[Any]) -> pd.DataFrame:
    """Two points' summary rows of one block (index: point ids), as the performance table hands them over."""
    return pd.DataFrame({"experiments": [3, 3], **columns}, index=[P.id, Q.id])


def test_an_empty_algorithm_name_names_no_search() -> None:
    name, facts = search_facts(block(algorithm=["", "fast"], seeded=[0, 2]), "throughput")
    assert name == "fast"
    assert facts.counts == {"seeded": 2}
    assert search_facts(block(algorithm=["", float("nan")]), "throughput")[0] is None


def test_an_empty_first_value_is_no_first_value() -> None:
    _, facts = search_facts(block(algorithm=["mlr", "mlr"], search_goal=["", GOAL_WORDS]), "throughput")
    assert facts.firsts == {"search_goal": GOAL_WORDS}
    _, none = search_facts(block(algorithm=["mlr", "mlr"], search_goal=["", float("nan")]), "throughput")
    assert none.firsts == {} and none.repetitions == 6


def test_rows_without_an_experiments_column_count_no_repetitions() -> None:
    _, facts = search_facts(pd.DataFrame({"algorithm": ["fast", "fast"]}, index=[P.id, Q.id]), "throughput")
    assert facts.repetitions == 0 and facts.counts == {}
