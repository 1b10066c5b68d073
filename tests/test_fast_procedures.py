"""``algorithm: fast`` in the procedures (throughput, forwarding, cps) against the fake tester and DUT: which trials
run, short or full, and what the result stores."""

from __future__ import annotations

from test_procedures import Harness

from natbench.results import RepetitionResult, Verdict


def _trials(h: Harness) -> list[tuple[str, str, float, float]]:
    """(kind, short/full, rate, duration) of every stored trial."""
    return [
        (r.kind, str(r.extra.get("search_trial", "-")), r.intended_rate, round(float(r.extra["duration"]), 3))
        for r in h.records
    ]


def test_throughput_fast_narrows_with_short_trials_and_confirms_with_full_ones_on_one_fill() -> None:
    # forwarding ceiling 250,000; [0, 400,000], error 100,000: short 200k passes, short 300k fails ([200k, 300k] is
    # one error wide); full 200k passes, full 300k fails. One fill (4,000 connections at 50,000 cps = 0.08 s) serves
    # all four phase-2 trials (the table never changes).
    h = Harness(forwarding=250_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0)
    assert _trials(h) == [
        ("fill", "-", 50_000, 0.08),
        ("phase2", "short", 200_000, 1.0),
        ("phase2", "short", 300_000, 1.0),
        ("phase2", "full", 200_000, 10.0),
        ("phase2", "full", 300_000, 10.0),
    ]
    assert [r.verdict for r in h.records[1:]] == [Verdict.PASS, Verdict.FAIL, Verdict.PASS, Verdict.FAIL]
    assert (res.value, res.error) == (200_000, 100_000)
    assert {k: res.extra[k] for k in ("algorithm", "short_steps", "full_steps", "seeded", "rejected")} == {
        "algorithm": "fast",
        "short_steps": 2,
        "full_steps": 2,
        "seeded": False,
        "rejected": [],
    }


def test_binary_throughput_stores_its_algorithm() -> None:
    h = Harness(forwarding=250_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    assert res.extra["algorithm"] == "binary"
    assert all("search_trial" not in r.extra for r in h.records)


def test_forwarding_fast_runs_without_a_fill() -> None:
    # stateless ceiling 250,000 (nat off): the same four trials as throughput's, no phase 1
    h = Harness(nat=False, stateless_forwarding=250_000)
    res = h.run("forwarding", upper=400_000, error=100_000, algorithm="fast", duration=5.0, short_duration=0.5)
    assert [t[:3] for t in _trials(h)] == [
        ("phase2", "short", 200_000),
        ("phase2", "short", 300_000),
        ("phase2", "full", 200_000),
        ("phase2", "full", 300_000),
    ]
    assert [t[3] for t in _trials(h)] == [0.5, 0.5, 5.0, 5.0]
    assert res.value == 200_000 and res.extra["algorithm"] == "fast"


def test_cps_fast_steps_are_validated_steps_walking_from_the_previous_result() -> None:
    # cps ceiling 250,000, error 10,000. The previous repetition (number 1, listed first: order by number) ended at
    # [230,000, 240,000]: seed = 230,000 + 10,000 / 2 = 235,000 (the median of both results, 245,000, or the first
    # one's 265,000 would start elsewhere). Validated step at 235,000 passes; up one error: 245,000 passes; 255,000
    # fails (phase 1 alone, nothing to validate) -> [245k, 255k].
    h = Harness(cps=250_000)
    earlier = [
        RepetitionResult("p", "cps", 1, 230_000.0, "cps", error=10_000.0),
        RepetitionResult("p", "cps", 0, 260_000.0, "cps", error=10_000.0),
    ]
    res = h.run("cps", upper=400_000, error=10_000, algorithm="fast", repetition=2, earlier=earlier)
    assert [t[:3] for t in _trials(h)] == [
        ("phase1", "full", 235_000),
        ("validation", "full", 235_000),
        ("phase1", "full", 245_000),
        ("validation", "full", 245_000),
        ("phase1", "full", 255_000),
    ]
    assert (res.value, res.error) == (245_000, 10_000)
    assert res.extra["validated"] is True and res.extra["seeded"] is True and res.extra["algorithm"] == "fast"


def test_cps_fast_never_reports_a_rate_whose_validation_failed() -> None:
    # the DUT forwards phase 1 up to 250,000 cps but keeps state only up to 150,000 (table count not checked):
    # the validated step at 200,000 FAILS (3,000 of 4,000 connections kept) -> [0, 200k]; 100,000 passes phase 1
    # and validation -> [100k, 200k]: 100,000 is reported, validated.
    h = Harness(cps=250_000, keep_rate=150_000)
    res = h.run("cps", upper=400_000, error=100_000, algorithm="fast", check_table=False)
    assert [t[:3] for t in _trials(h)] == [
        ("phase1", "full", 200_000),
        ("validation", "full", 200_000),
        ("phase1", "full", 100_000),
        ("validation", "full", 100_000),
    ]
    assert (res.value, res.extra["validated"]) == (100_000, True)


def test_a_later_repetition_starts_with_full_trials_in_the_middle_of_the_previous_interval() -> None:
    # forwarding ceiling 250,000, error 100,000; the previous repetition (1) ended at [150,000, 250,000]: after the
    # fill, a full trial at 150,000 + 50,000 = 200,000 (passes) and one error above, 300,000 (fails); no short trial.
    h = Harness(forwarding=250_000)
    earlier = [
        RepetitionResult("p", "throughput", 0, 240_000.0, "fps", error=100_000.0),
        RepetitionResult("p", "throughput", 1, 150_000.0, "fps", error=100_000.0),
    ]
    res = h.run(
        "throughput",
        upper=400_000,
        error=100_000,
        fill_rate=50_000,
        algorithm="fast",
        repetition=2,
        earlier=earlier,
        duration=10.0,
    )
    assert [t[:3] for t in _trials(h)] == [
        ("fill", "-", 50_000),
        ("phase2", "full", 200_000),
        ("phase2", "full", 300_000),
    ]
    assert (res.value, res.extra["seeded"], res.extra["short_steps"]) == (200_000, True, 0)


def _first_trial(earlier: list[RepetitionResult]) -> tuple[str, float]:
    """(short/full, rate) of the first search trial of a fast forwarding search in [0, 400k], error 100k."""
    h = Harness(nat=False, stateless_forwarding=250_000)
    h.run("forwarding", upper=400_000, error=100_000, algorithm="fast", duration=5.0, repetition=1, earlier=earlier)
    return str(h.records[0].extra["search_trial"]), h.records[0].intended_rate


def test_the_seed_is_the_previous_value_when_it_stored_no_error() -> None:
    earlier = [RepetitionResult("p", "forwarding", 0, 180_000.0, "fps")]
    assert _first_trial(earlier) == ("full", 180_000)  # no error stored: nothing to add


def test_no_seed_from_a_repetition_that_found_no_rate_or_one_at_the_upper_bound() -> None:
    # a result at the lower bound (no rate passed) seeds nothing: the search narrows from the middle with a short trial
    assert _first_trial([RepetitionResult("p", "forwarding", 0, 0.0, "fps", error=100_000.0)]) == ("short", 200_000)
    # a failed repetition (no value) neither
    assert _first_trial([RepetitionResult("p", "forwarding", 0, None, "fps")]) == ("short", 200_000)
    # a result whose interval reached the upper bound: its middle, 350k + 100k / 2 = 400k, is the upper bound
    at_top = RepetitionResult("p", "forwarding", 0, 350_000.0, "fps", error=100_000.0)
    assert _first_trial([at_top]) == ("short", 200_000)


def test_a_fast_throughput_search_with_no_passing_full_trial_stores_no_value() -> None:
    # forwarding ceiling far below the range's first trials: nothing passes, the result is "no passing rate"
    h = Harness(forwarding=10)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0)
    assert res.value is None and res.extra["no_passing_rate"] is True
