"""Which rows a performance table has: experiments, failed repetitions and errors per metric."""

from __future__ import annotations

from pathlib import Path

import natbench
from natbench.testing.rundir import make_point, result_record, write_run_dir


def _cells(tmp_path: Path, points: list[dict], records: list[dict]) -> dict[str, list[str]]:
    table = natbench.load(write_run_dir(tmp_path / "run", points, records)).seed_table()
    return {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}


def test_one_failed_repetition_gets_a_failed_reps_row(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)
    recs = [result_record(p.id, "cps", r, 1000.0 + r, "cps", error=100.0) for r in range(3)]
    recs.append(result_record(p.id, "cps", 3, None, "cps", extra={"failed": "search error"}))
    rows = _cells(tmp_path, [p], recs)
    assert rows["cps failed reps."] == ["1"]
    assert rows["num. experiments"] == ["3"]  # the three with a value


def test_the_error_row_stays_when_one_point_has_no_search_error(tmp_path: Path) -> None:
    """A point whose repetitions all failed has no error; the other point's error is still shown."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    recs = [result_record(a.id, "cps", r, 1000.0, "cps", error=100.0) for r in range(3)]
    recs += [result_record(b.id, "cps", r, None, "cps", extra={"failed": "search error"}) for r in range(3)]
    rows = _cells(tmp_path, [a, b], recs)
    assert rows["cps error"] == ["100", "-"]
    assert rows["cps median"] == ["1,000", "-"]


def test_each_metric_gets_its_own_experiments_row_when_counts_differ(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)
    recs = [result_record(p.id, "cps", r, 1000.0, "cps", error=100.0) for r in range(3)]
    recs += [result_record(p.id, "throughput", r, 500.0, "fps", error=100.0) for r in range(2)]
    rows = _cells(tmp_path, [p], recs)
    assert "num. experiments" not in rows  # one count for both would hide that throughput ran twice
    assert rows["cps num. exp."] == ["3"] and rows["throughput num. exp."] == ["2"]


def test_the_baseline_block_counts_its_own_experiments_when_they_differ(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10), cores=1)

    def recs(forwarding_reps: int) -> list[dict]:
        out = [result_record(p.id, "throughput", r, 1000.0, "fps", error=100.0) for r in range(3)]
        out += [result_record(p.id, "cps", r, 800.0, "cps", error=100.0) for r in range(3)]
        return out + [result_record(p.id, "forwarding", r, 2000.0, "fps") for r in range(forwarding_reps)]

    rows = _cells(tmp_path / "differ", [p], recs(2))
    assert rows["num. experiments"] == ["3"] and rows["fwd. throughput num. exp."] == ["2"]
    same = _cells(tmp_path / "same", [p], recs(3))
    assert same["num. experiments"] == ["3"] and "fwd. throughput num. exp." not in same


def test_a_fast_search_with_seeded_repetitions_is_named_in_the_caption(tmp_path: Path) -> None:
    """Seeded (fast) repetitions are not independent searches: the caption says so for that metric only."""
    p = make_point(0, (1, 100), (1, 10), cores=1)
    binary = {"algorithm": "binary"}
    recs = [result_record(p.id, "cps", r, 1000.0, "cps", error=100.0, extra=binary) for r in range(3)]
    fast = [{"algorithm": "fast", "seeded": r > 0} for r in range(3)]
    recs += [result_record(p.id, "throughput", r, 2000.0, "fps", error=100.0, extra=fast[r]) for r in range(3)]
    caption = natbench.load(write_run_dir(tmp_path / "run", [p], recs)).seed_table().caption
    assert "throughput: fast search; repetitions after the first started from the earlier ones' results" in caption
    assert "cps: fast search" not in caption
    # a binary-only run has no such note
    only_binary = natbench.load(write_run_dir(tmp_path / "run2", [p], recs[:3])).seed_table().caption
    assert "fast search" not in only_binary


def test_repetitions_without_a_passing_rate_are_counted_apart_and_never_read_as_zero(tmp_path: Path) -> None:
    """A search whose every trial failed stores no value but ``no_passing_rate`` (with the final lower / upper
    bounds); the table counts such repetitions in their own row and leaves them out of median / min / max."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    none = {"no_passing_rate": True, "lower": 0.0, "upper": 976.0, "validated": False}
    recs = [result_record(a.id, "cps", r, 1000.0 + 100 * r, "cps", error=100.0) for r in range(3)]
    recs.append(result_record(a.id, "cps", 3, None, "cps", error=976.0, extra=none))
    recs += [result_record(b.id, "cps", r, None, "cps", error=976.0, extra=none) for r in range(3)]
    run = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs))
    table = run.seed_table()
    rows = {str(name): [str(c) for c in table.cells.loc[name]] for name in table.cells.index}
    # point a: the three values 1,000 / 1,100 / 1,200 -> median 1,100, min 1,000 (with a 0 mixed in: 1,050 and 0)
    assert rows["cps median"] == ["1,100", "no pass"]
    assert rows["cps min"] == ["1,000", "no pass"]
    assert rows["cps max"] == ["1,200", "no pass"]
    assert rows["cps no passing rate"] == ["1", "3"]
    assert "cps failed reps." not in rows  # no passing rate is a finding, not a failure
    assert "'no passing rate' counts repetitions in which every rate tried failed" in table.caption
    assert "[u]" not in " ".join(rows["cps median"])  # no value: nothing to mark as unvalidated
    # the notebook API: no value, flagged
    r = run.results
    assert r["value"].isna().sum() == 4 and int(r["no_pass"].sum()) == 4
    assert run.summary.loc[(a.id, "cps"), "median"] == 1100.0


def test_pdv_from_tagged_frames_only_is_marked_in_the_table_and_caption(tmp_path: Path) -> None:
    """TRex times only its latency streams: its PDV results store ``frames: tagged`` per direction. Those cells
    carry [t]; every-frame PDV (the software tester: ``frames: all``) does not."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    tagged = {"frames": {"forward": "tagged", "reverse": "tagged"}}
    every = {"frames": {"forward": "all", "reverse": "all"}}
    recs = [result_record(a.id, "pdv", r, 52e-6, "s", extra=tagged) for r in range(3)]
    recs += [result_record(b.id, "pdv", r, 52e-6, "s", extra=every) for r in range(3)]
    table = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs)).seed_table()
    # 52 us = 0.052 ms, shown with 4 significant digits: 0.05200
    assert table.cells.loc["PDV median"].tolist() == ["0.05200 [t]", "0.05200"]
    assert table.cells.loc["PDV max"].tolist() == ["0.05200 [t]", "0.05200"]
    assert "[t]: PDV of the tagged latency frames only" in table.caption
    plain = natbench.load(write_run_dir(tmp_path / "plain", [b], recs[3:])).seed_table()
    assert "[t]" not in plain.caption


def test_cps_not_validated_is_marked_in_the_table_and_caption(tmp_path: Path) -> None:
    """``validation: off`` (or a DUT that could not be validated) stores ``validated: false``: the cell says so."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    off = {"validation": "off", "validated": False}
    checked = {"validation": "every_step", "validated": True}
    recs = [result_record(a.id, "cps", r, 1000.0, "cps", error=100.0, extra=off) for r in range(3)]
    recs += [result_record(b.id, "cps", r, 1000.0, "cps", error=100.0, extra=checked) for r in range(3)]
    table = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs)).seed_table()
    assert table.cells.loc["cps median"].tolist() == ["1,000 [u]", "1,000"]
    assert table.cells.loc["cps min"].tolist() == ["1,000 [u]", "1,000"]
    assert "[u]: some repetitions' rate was not validated with reverse frames" in table.caption
    checked_only = natbench.load(write_run_dir(tmp_path / "checked", [b], recs[3:])).seed_table()
    assert "[u]" not in checked_only.caption


def test_latency_from_fewer_tagged_frames_than_asked_is_marked(tmp_path: Path) -> None:
    """A latency result stores the tagged frames asked for (``tags_asked``) and those timed per direction
    (``samples``). TRex's latency stream holds at most half the trial's rate: 500 tags after a 60 s warm-up of a
    120 s trial at 10 frames/s fit only 301 times (tests/test_trex_scale.py). Such cells carry [f], the caption says
    why and the summary warns; a result that timed every tag asked (or asked none: ``tagged_rate``) does not."""
    a, b = make_point(0, (1, 100), (1, 10), cores=1), make_point(1, (1, 100), (1, 10), cores=2)
    capped = {"tags_asked": 500, "samples": {"forward": 301, "reverse": 500}}
    full = {"tags_asked": 500, "samples": {"forward": 500, "reverse": 500}}
    recs = [result_record(a.id, "latency", 0, 40e-6, "s", extra=capped)]
    recs += [result_record(a.id, "latency", r, 40e-6, "s", extra=full) for r in (1, 2)]
    recs += [result_record(b.id, "latency", r, 40e-6, "s", extra={**full, "tags_asked": None}) for r in range(3)]
    run = natbench.load(write_run_dir(tmp_path / "run", [a, b], recs))
    table = run.seed_table()
    assert table.cells.loc["latency median"].tolist() == ["0.04000 [f]", "0.04000"]
    assert "[f]: fewer tagged frames timed than tagged_frames asked for" in table.caption
    from natbench.report.summary import summarize_run

    warnings = summarize_run(run).warnings
    assert any("1 of 6 latency repetitions timed fewer tagged frames than asked" in w for w in warnings), warnings
    every = natbench.load(write_run_dir(tmp_path / "every", [a], recs[1:3])).seed_table()
    assert "[f]" not in every.caption and "[f]" not in " ".join(every.cells.loc["latency median"])
