"""The report's summary (facts, key results, plain-words warnings) and the DUT CPU headroom, on run
directories written with the engine's record shapes (natbench.testing.rundir)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import natbench
from natbench.report.headroom import cpu_headroom
from natbench.report.html import render_html, run_figures
from natbench.report.summary import fmt_duration, fmt_time, summarize_run
from natbench.run.format import meta as run_meta
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_times_are_local_and_readable(utc: None) -> None:
    ts = datetime(2026, 11, 24, 8, 22, 44, tzinfo=UTC).timestamp()
    assert fmt_time(ts) == "2026-11-24 08:22:44 UTC"
    assert fmt_time("2026-01-01T00:00:00Z") == "2026-01-01 00:00:00 UTC"
    assert fmt_time(None) == "?" and fmt_time("yesterday") == "?" and fmt_time(float("nan")) == "?"


def test_durations_read_as_hours_minutes_seconds() -> None:
    assert fmt_duration(42.4) == "42 s"
    assert fmt_duration(358) == "5 min 58 s"  # 5 x 60 + 58
    assert fmt_duration(3720) == "1 h 02 min"  # 3,600 + 2 x 60


def _cpu(samples: list[float], cores: int = 2) -> dict[str, Any]:
    """Monitor samples: core c idles samples[i] + 10 x c % at sample i."""
    t = [0.5 * i for i in range(len(samples))]
    return {
        "monitor": {
            "dut": {"interval": 0.5, "t": t, "idle": {f"cpu{c}": [v + 10 * c for v in samples] for c in range(cores)}}
        }
    }


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    p0 = make_point(0, (10000, 10399), (2000, 2009))  # 4,000 connections
    p1 = make_point(1, (10000, 10799), (2000, 2019))  # 16,000 connections
    a, b = p0.id, p1.id
    records = [
        # cps at p0: 100k, 120k (tester-bound), 110k -> median 110,000
        result_record(a, "cps", 0, 100_000.0, "cps", error=1000),
        result_record(a, "cps", 1, 120_000.0, "cps", error=1000, extra={"tester_bound": True}),
        result_record(a, "cps", 2, 110_000.0, "cps", error=1000),
        # cps at p1: 90k, 80k, and a failed repetition -> median 85,000
        result_record(b, "cps", 0, 90_000.0, "cps", error=1000),
        result_record(b, "cps", 1, 80_000.0, "cps", error=1000),
        result_record(b, "cps", 2, None, "cps", extra={"failed": "4 invalid trials in a row"}),
        # trials: at p0 the passing step at 110k has 4 samples, a failing one at 130k more; at p1 a
        # passing step has 2 samples only (too few for a figure)
        trial_record(a, "cps", 2, 0, rate=130_000, verdict="fail", started_at=1, extra=_cpu([0, 0, 0, 0, 0])),
        trial_record(a, "cps", 2, 1, rate=110_000, started_at=2, extra=_cpu([10, 20, 30, 70])),
        trial_record(a, "cps", 2, 2, rate=115_000, verdict="invalid", started_at=3),
        trial_record(b, "cps", 0, 0, rate=90_000, started_at=4, extra=_cpu([50, 50])),
    ]
    return write_run_dir(
        tmp_path / "run",
        [p0, p1],
        records,
        duts={"dut": {"recipe": "iptables-nat44", "kernel": "6.1.0", "conntrack_max": 262144, "secret": [1]}},
    )


def test_the_summary_names_what_was_measured_on_what_and_when(run_dir: Path, utc: None) -> None:
    s = summarize_run(natbench.load(run_dir))
    facts = dict(s.facts)
    assert facts["measured"] == "maximum connection establishment rate"
    assert facts["working points"] == "2: 4,000 to 16,000 connections, 64 B frames"
    assert facts["DUT dut"] == "recipe iptables-nat44, kernel 6.1.0, conntrack_max 262,144"
    assert facts["started"] == "2026-01-01 00:00:00 UTC" and facts["status"] == "complete"
    assert facts["natbench"] == "0.1.0 (commit 000000000000)"


def test_key_results_give_the_range_of_the_point_medians(run_dir: Path) -> None:
    s = summarize_run(natbench.load(run_dir))
    ((title, text),) = s.key_results
    assert title == "maximum connection establishment rate"
    # p1: median of 90k and 80k = 85,000 (the failed repetition has no value); p0: median 110,000; the search that
    # produced them (results stored without an algorithm but with an error are a binary search's) and its error
    assert text == (
        "medians from 85,000 cps (iptables-16k) to 110,000 cps (iptables-4k) (binary search; error: its final width)"
    )


def test_warnings_count_tester_bound_failed_and_invalid_in_plain_words(run_dir: Path) -> None:
    w = summarize_run(natbench.load(run_dir)).warnings
    assert any(
        x.startswith("maximum connection establishment rate: 1 of 6 repetitions were limited by the tester") for x in w
    )
    (failed,) = [x for x in w if x.startswith("1 of 6 repetitions failed and have no value")]
    assert failed.endswith("(the run went on after each): iptables-16k cps #2: 4 invalid trials in a row.")
    assert any(x.startswith("1 of 4 trials were invalid") for x in w)
    assert len(w) == 3


def test_headroom_is_per_core_at_the_reported_rate_and_needs_several_samples(run_dir: Path) -> None:
    run = natbench.load(run_dir)
    h = cpu_headroom(run.trials, run.points)
    # only p0 has a passing trial with >= 3 samples: the 110k step (not the failing 130k one);
    # cpu0 idles 10, 20, 30, 70 -> median 25 (mean 32.5) -> busy 75; cpu1 idles 10 more -> busy 65
    assert h[["point", "core", "busy", "samples", "rate"]].values.tolist() == [
        ["iptables-4k", "cpu0", 75.0, 4, 110_000.0],
        ["iptables-4k", "cpu1", 65.0, 4, 110_000.0],
    ]


def test_the_html_opens_with_the_summary_and_collapses_the_details(run_dir: Path) -> None:
    run = natbench.load(run_dir)
    figs = run_figures(run)
    assert [f.section for f in figs] == ["results", "headroom", "cpu_time"]
    cpu_time = figs[2]
    assert cpu_time.caption.startswith("DUT dut: idle time of each core (%) during the cps phase1 trial")
    page = render_html(run)
    assert page.index("<h2>Summary</h2>") < page.index("<h2>Results</h2>") < page.index("<h2>Plots</h2>")
    assert "<details><summary>Trials (4)</summary>" in page
    assert "<details><summary>Resolved campaign</summary>" in page
    assert page.count("<figure>") == 3


def test_trex_pacing_warnings_are_counted_in_plain_words(tmp_path: Path) -> None:
    p0 = make_point(0, (10000, 10399), (2000, 2009))
    a = p0.id
    paced = {"tester": {"pacing_warnings": ["software mode: TRex sends in clumps"]}}
    records = [
        result_record(a, "cps", 0, 100_000.0, "cps", error=1000),
        trial_record(a, "cps", 0, 0, rate=100_000, started_at=1, extra=paced),
        trial_record(a, "cps", 0, 1, rate=150_000, started_at=2, extra={"tester": {"pacing_warnings": []}}),
        trial_record(a, "cps", 0, 2, rate=125_000, started_at=3, extra=paced),
    ]
    run = natbench.load(write_run_dir(tmp_path / "run", [p0], records))
    w = summarize_run(run).warnings
    # two of the three trials carry a (non-empty) list of pacing warnings
    assert [x for x in w if "pacing" in x] == [
        "2 trials carry TRex pacing warnings (sending in clumps, a saturated TRex core, or software mode): against "
        "DUTs with small buffers or rate policers such results are lower bounds (docs/trex.md 4.5; the warnings are "
        "in each trial's extra.tester.pacing_warnings)."
    ]


@pytest.mark.parametrize(("failed", "more"), [(5, ""), (6, "; and 1 more (in the trial details)")])
def test_the_failed_repetitions_reasons_are_given_up_to_five(tmp_path: Path, failed: int, more: str) -> None:
    p = make_point(0, (1, 400), (1, 10))
    reason = "emptying the DUT's connection table failed: DUT d: step reset_connections: ..."
    recs = [result_record(p.id, "teardown", i, None, "conn/s", extra={"failed": reason}) for i in range(failed)]
    recs.append(result_record(p.id, "teardown", failed, 1000.0, "conn/s", extra={"T_N": 2.0, "T_0": 1.0}))
    w = summarize_run(natbench.load(write_run_dir(tmp_path / "r", [p], recs))).warnings
    (line,) = [x for x in w if "repetitions failed" in x]
    shown = "; ".join(f"{p.label} teardown #{i}: {reason}" for i in range(5))
    assert line == (
        f"{failed} of {failed + 1} repetitions failed and have no value; the tables leave them out (the run went on "
        f"after each): {shown}{more}."
    )


@pytest.mark.parametrize(("length", "shown"), [(300, 300), (301, 300)])
def test_a_failed_reason_is_cut_at_300_characters(tmp_path: Path, length: int, shown: int) -> None:
    p = make_point(0, (1, 400), (1, 10))
    reason = "x" * length
    recs = [result_record(p.id, "teardown", 0, None, "conn/s", extra={"failed": reason})]
    recs.append(result_record(p.id, "teardown", 1, 1000.0, "conn/s", extra={"T_N": 2.0, "T_0": 1.0}))
    w = summarize_run(natbench.load(write_run_dir(tmp_path / "r", [p], recs))).warnings
    (line,) = [x for x in w if "repetitions failed" in x]
    cut = "..." if length > shown else ""
    assert line.endswith(f"{p.label} teardown #0: {'x' * shown}{cut}.")


# --- the summary's rules at their boundaries ------------------------------------------------------------------------


def test_a_time_of_zero_or_less_is_unknown_and_one_second_after_the_epoch_is_not(utc: None) -> None:
    assert fmt_time(0) == "?" and fmt_time(-5) == "?"
    assert fmt_time(1) == "1970-01-01 00:00:01 UTC"
    assert fmt_time(float("inf")) == "?"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(59, "59 s"), (60, "1 min 00 s"), (3599, "59 min 59 s"), (3600, "1 h 00 min")],
)
def test_durations_change_unit_at_a_minute_and_an_hour(seconds: float, text: str) -> None:
    assert fmt_duration(seconds) == text


def _summary_of(tmp_path: Path, **meta: Any) -> dict[str, str]:
    """The summary's facts of a one-result run whose run.json holds ``meta`` (RunMeta fields) instead."""
    p = make_point(0, (1, 400), (1, 10))
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [result_record(p.id, "cps", 0, 1000.0, "cps")]))
    run.meta = run.meta.replace(**meta)
    return dict(summarize_run(run).facts)


def test_the_dut_line_shows_the_leading_facts_with_their_suffixes_and_table_sizes_once(tmp_path: Path) -> None:
    dut = {
        "serial": "X-1234",  # neither a leading fact nor a table size: left out
        "os_release": "Debian 12",  # a leading fact ("os") with a suffix
        "recipe": "iptables-nat44",
        "memory_max": "4G",  # a leading fact ("memory") that also names a table size: once
        "nf_conntrack_buckets": "65536",  # a table size by a word within its name
    }
    facts = _summary_of(tmp_path, duts={"dut": dut})
    assert facts["DUT dut"] == "recipe iptables-nat44, os_release Debian 12, memory_max 4G, nf_conntrack_buckets 65536"


@pytest.mark.parametrize(
    ("status", "failure", "warning"),
    [
        ("complete", None, None),
        ("running", None, "The run is not complete (status running)."),
        ("failed", "DUT d: setup failed", "The run is not complete (status failed: DUT d: setup failed)."),
    ],
)
def test_a_run_that_is_not_complete_is_warned_about(
    tmp_path: Path, status: str, failure: str | None, warning: str | None
) -> None:
    p = make_point(0, (1, 400), (1, 10))
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [result_record(p.id, "cps", 0, 1000.0, "cps")]))
    run.meta = run.meta.replace(status=status, failure=failure)
    w = summarize_run(run).warnings
    assert [x for x in w if x.startswith("The run is not complete")] == ([warning] if warning else [])


def test_a_mark_without_a_warning_of_its_own_adds_no_empty_warning(tmp_path: Path) -> None:
    # capacity's [n] mark (not reached) has no warning of its own: its count row warns, once
    p = make_point(0, (1, 400), (1, 10))
    extra = {"not_reached": True, "validated": True, "probes": []}
    recs = [result_record(p.id, "capacity", r, 20_000.0, "conn", error=1000.0, extra=extra) for r in range(2)]
    w = summarize_run(natbench.load(write_run_dir(tmp_path / "run", [p], recs))).warnings
    assert "" not in w
    assert len([x for x in w if "not reached in 2 of 2" in x]) == 1


def test_a_trial_whose_tester_facts_are_null_carries_no_pacing_warning(tmp_path: Path) -> None:
    p = make_point(0, (1, 400), (1, 10))
    records = [
        result_record(p.id, "cps", 0, 100_000.0, "cps", error=1000),
        trial_record(p.id, "cps", 0, 0, rate=100_000, started_at=1, extra={"tester": None}),
        trial_record(p.id, "cps", 0, 1, rate=100_000, started_at=2, extra={"tester": {"pacing_warnings": ["x"]}}),
    ]
    w = summarize_run(natbench.load(write_run_dir(tmp_path / "run", [p], records))).warnings
    (line,) = [x for x in w if "pacing" in x]
    assert line.startswith("1 trials carry TRex pacing warnings")


def test_the_facts_name_tester_natbench_host_and_testbeds_or_say_they_are_unknown(tmp_path: Path) -> None:

    p = make_point(0, (1, 400), (1, 10))
    known = _summary_of(
        tmp_path / "a",
        host=run_meta.HostFacts(hostname="lab1", platform="Linux-6.1", cpus=4),
        point_testbeds={p.id: ("tb1",)},
        testbed_class="small",
    )
    assert known["tester"] == "software: version synthetic"
    assert known["natbench"] == "0.1.0 (commit 000000000000)"
    assert known["host"] == "lab1, 4 CPUs, Linux-6.1"
    assert known["testbed tb1 (class small)"] == p.label
    unknown = _summary_of(
        tmp_path / "b",
        host=run_meta.HostFacts(python="3.11"),
        tester=run_meta.TesterFacts("", {}),
        natbench_version=None,
        git_commit=None,
        point_testbeds={p.id: ("tb1",)},
        testbed_class=None,
    )
    assert unknown["tester"] == "?"
    assert unknown["natbench"] == "?"
    assert unknown["host"] == "?, ? CPUs, "
    assert unknown["testbed tb1 (class ?)"] == p.label


@pytest.mark.parametrize(
    ("ended", "duration"), [(0.0, "0 s"), (61.0, "1 min 01 s"), (-1.0, None), (float("inf"), None)]
)
def test_the_duration_is_shown_from_zero_seconds_up(tmp_path: Path, ended: float, duration: str | None) -> None:
    p = make_point(0, (1, 400), (1, 10))
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [result_record(p.id, "cps", 0, 1000.0, "cps")]))
    start = run.meta.started_at
    assert start is not None
    run.meta = run.meta.replace(ended_at=start + ended)
    assert dict(summarize_run(run).facts).get("duration") == duration


def test_no_duration_when_the_start_is_unknown(tmp_path: Path) -> None:
    facts = _summary_of(tmp_path, started_at=None, ended_at=1_800_000_000.0)
    assert facts["started"] == "?" and "ended" in facts and "duration" not in facts


def test_a_metric_measured_by_two_searches_describes_each_by_its_own_results(tmp_path: Path) -> None:
    p, q = make_point(0, (1, 400), (1, 10)), make_point(1, (1, 800), (1, 10))
    goal = {"loss_ratio": 0.0, "exceed_ratio": 0.0, "final_trial_duration": 60.0, "duration_sum": 60.0}
    mlr = {"algorithm": "mlr", "mlr_preset": "rfc2544", "mlr_goal": goal}
    records = [result_record(p.id, "throughput", r, 1000.0, "fps", error=10.0) for r in range(3)]
    records += [result_record(q.id, "throughput", r, 2000.0, "fps", error=10.0, extra=mlr) for r in range(3)]
    ((_, text),) = summarize_run(natbench.load(write_run_dir(tmp_path / "run", [p, q], records))).key_results
    # MLRsearch's words name its goal, which only its own results store
    assert text.endswith(
        "(binary search; error: its final width; MLRsearch (preset rfc2544: loss ratio 0, exceed ratio 0, final "
        "trials 60 s, duration sum 60 s); value: its relevant lower bound, error: the distance to its relevant "
        "upper bound)"
    )
