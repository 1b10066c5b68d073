"""``algorithm: fast`` in the procedures (throughput, forwarding, cps) against the fake tester and DUT: which trials
run, short or full, and what the result stores."""

from __future__ import annotations

import dataclasses

import pytest
from test_procedures import Harness

from natbench.judging import STOP_UNDECIDED
from natbench.plugins import Directions, Phase2Options, TrialEvidence
from natbench.results import Deviation, DirectionCounts, PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.search import BlockFacts, SearchTask, TrialRequest, TrialRunner
from natbench.search.fast import FastOutcome, FastStep, ShortFailRule
from natbench.search.fast.algorithm import FAST, short_fail_rule, trial_kind
from natbench.search.fast.evidence import worst_lost
from natbench.search.shorttrials import ShortTrialSettings
from natbench.testing import FakeTester


def _trials(h: Harness) -> list[tuple[str, str, float, float]]:
    """(kind, short/full, rate, duration) of every stored trial."""
    return [
        (r.kind, str(r.extra.get("search_trial", "-")), r.intended_rate, round(float(r.extra["duration"]), 3))
        for r in h.records
    ]


def test_throughput_fast_narrows_with_short_trials_and_a_short_failure_proves_the_upper_bound() -> None:
    # forwarding ceiling 240,000; [0, 400,000], error 100,000: short 200k passes, short 300k fails ([200k, 300k] is
    # one error wide) losing 60,000 of 300,000 frames per direction: more than a full trial there may lose (acceptance
    # 0: none), and not small (at least half the 100,000 frames it offered above 200k), so 300k is an upper bound for
    # full trials without one. Full 200k passes. One fill (4,000 connections at 50,000 cps = 0.08 s) serves all
    # three phase-2 trials (the table never changes).
    h = Harness(forwarding=240_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0)
    assert _trials(h) == [
        ("fill", "-", 50_000, 0.08),
        ("phase2", "short", 200_000, 1.0),
        ("phase2", "short", 300_000, 1.0),
        ("phase2", "full", 200_000, 10.0),
    ]
    assert [r.verdict for r in h.records[1:]] == [Verdict.PASS, Verdict.FAIL, Verdict.PASS]
    assert (res.value, res.error) == (200_000, 100_000)
    keys = ("algorithm", "short_steps", "full_steps", "seeded", "rejected", "probes", "probe_proofs", "short_bound")
    assert {k: res.extra[k] for k in (*keys, "guard_trials", "disproved")} == {
        "algorithm": "fast",
        "short_steps": 2,
        "full_steps": 1,
        "seeded": False,
        "rejected": [],
        "probes": 0,
        "probe_proofs": 0,
        "short_bound": True,
        "guard_trials": 0,
        "disproved": [],
    }


def test_a_small_short_failure_at_the_final_upper_bound_gets_a_full_trial() -> None:
    # forwarding ceiling 290,000: short 300k loses 10,000 frames per direction, less than half of the 100,000 it
    # offered above the passing 200k: small, so the guard runs a full trial at 300k (it fails: the bound is confirmed)
    h = Harness(forwarding=290_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0)
    assert [t[:3] for t in _trials(h)] == [
        ("fill", "-", 50_000),
        ("phase2", "short", 200_000),
        ("phase2", "short", 300_000),
        ("phase2", "full", 200_000),
        ("phase2", "full", 300_000),
    ]
    assert (res.value, res.error, res.extra["guard_trials"], res.extra["short_bound"]) == (200_000, 100_000, 1, False)


def test_a_short_failure_within_the_full_trials_allowance_proves_nothing() -> None:
    # acceptance 1 %: a full 10 s trial at 300k may lose 30,000 frames per direction. Ceiling 280,000: short 300k
    # loses 20,000 (6.7 %: it fails) but no more than the full allowance, so a full trial at 300k decides (fails).
    h = Harness(forwarding=280_000)
    res = h.run(
        "throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0, acceptance=0.01
    )
    assert [t[:3] for t in _trials(h)][1:] == [
        ("phase2", "short", 200_000),
        ("phase2", "short", 300_000),
        ("phase2", "full", 200_000),
        ("phase2", "full", 300_000),
    ]
    assert (res.value, res.extra["short_bound"], res.extra["guard_trials"]) == (200_000, False, 0)
    # ceiling 240,000: short 300k loses 60,000 > 30,000: proven without a full trial there
    h = Harness(forwarding=240_000)
    res = h.run(
        "throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0, acceptance=0.01
    )
    assert [t[1:3] for t in _trials(h)][1:] == [("short", 200_000), ("short", 300_000), ("full", 200_000)]
    assert res.extra["short_bound"] is True


def test_binary_throughput_stores_its_algorithm() -> None:
    h = Harness(forwarding=250_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000)
    assert res.extra["algorithm"] == "binary"
    assert all("search_trial" not in r.extra for r in h.records)


def test_forwarding_fast_runs_without_a_fill() -> None:
    # stateless ceiling 240,000 (nat off): the same three trials as throughput's, no phase 1 (short 300k loses
    # 30,000 of its 150,000 frames: an upper bound)
    h = Harness(nat=False, stateless_forwarding=240_000)
    res = h.run("forwarding", upper=400_000, error=100_000, algorithm="fast", duration=5.0, short_duration=0.5)
    assert [t[:3] for t in _trials(h)] == [
        ("phase2", "short", 200_000),
        ("phase2", "short", 300_000),
        ("phase2", "full", 200_000),
    ]
    assert [t[3] for t in _trials(h)] == [0.5, 0.5, 5.0]
    assert res.value == 200_000 and res.extra["algorithm"] == "fast" and res.extra["short_bound"] is True


def test_cps_fast_steps_are_validated_steps_walking_from_the_previous_result() -> None:
    # cps ceiling 245,000, error 10,000. The previous repetition (number 1, listed first: order by number) ended at
    # [230,000, 240,000]: seed = 230,000 + 10,000 / 2 = 235,000 (the median of both results, 245,000, or the first
    # one's 265,000 would start elsewhere); the walk starts at the grid rate at or below it, 230,000. Validated step
    # at 230,000 passes; up one error: 240,000 passes; 250,000 fails (phase 1 alone, nothing to validate) -> [240k,
    # 250k].
    h = Harness(cps=245_000)
    earlier = [
        RepetitionResult("p", "cps", 1, 230_000.0, "cps", error=10_000.0),
        RepetitionResult("p", "cps", 0, 260_000.0, "cps", error=10_000.0),
    ]
    res = h.run("cps", upper=400_000, error=10_000, algorithm="fast", repetition=2, earlier=earlier)
    assert [t[:3] for t in _trials(h)] == [
        ("phase1", "full", 230_000),
        ("validation", "full", 230_000),
        ("phase1", "full", 240_000),
        ("validation", "full", 240_000),
        ("phase1", "full", 250_000),
    ]
    assert (res.value, res.error) == (240_000, 10_000)
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


def test_a_later_repetition_walks_from_the_middle_of_the_previous_interval_probing_with_short_trials() -> None:
    # forwarding ceiling 240,000, error 100,000; the previous repetition (1) ended at [150,000, 250,000]: after the
    # fill, the walk starts at 150,000 + 50,000 = 200,000. No probe has run at this point yet, and a short trial
    # (1 + 2 + 1 s) costs less than half a full one (10 + 2 + 1 s): probe first. The probe at 200k passes (proves
    # nothing), the full trial there passes; one error above, the probe at 300k loses 60,000 frames: an upper bound,
    # no full trial there.
    h = Harness(forwarding=240_000)
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
        ("phase2", "short", 200_000),
        ("phase2", "full", 200_000),
        ("phase2", "short", 300_000),
    ]
    assert [r.extra.get("probe", False) for r in h.records[1:]] == [True, False, True]
    assert (res.value, res.error, res.extra["seeded"]) == (200_000, 100_000, True)
    assert (res.extra["probes"], res.extra["probe_proofs"], res.extra["short_bound"]) == (2, 1, True)


def test_probes_stop_where_earlier_repetitions_found_they_do_not_pay() -> None:
    # as above, but the earlier repetitions ran 4 probes and none proved anything: (0 + 1) / (4 + 2) x 13 s = 2.2 s
    # is less than a short trial's 4 s, so the walk uses full trials only
    h = Harness(forwarding=240_000)
    earlier = [
        RepetitionResult("p", "throughput", 0, 240_000.0, "fps", 100_000.0, {"probes": 2, "probe_proofs": 0}),
        RepetitionResult("p", "throughput", 1, 150_000.0, "fps", 100_000.0, {"probes": 2, "probe_proofs": 0}),
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
    assert (res.value, res.extra["probes"], res.extra["short_bound"]) == (200_000, 0, False)


def _first_trial(earlier: list[RepetitionResult]) -> tuple[str, float]:
    """(short/full, rate) of the first search trial of a fast forwarding search in [0, 400k], error 100k."""
    h = Harness(nat=False, stateless_forwarding=250_000)
    h.run("forwarding", upper=400_000, error=100_000, algorithm="fast", duration=5.0, repetition=1, earlier=earlier)
    return str(h.records[0].extra["search_trial"]), h.records[0].intended_rate


def test_the_seed_is_the_previous_value_when_it_stored_no_error() -> None:
    # no error stored: nothing added; the grid rate at or below 250,000 is 200,000 (250,000 + half an error, 300,000,
    # would start at 300,000)
    earlier = [RepetitionResult("p", "forwarding", 0, 250_000.0, "fps")]
    assert _first_trial(earlier) == ("full", 200_000)
    with_error = RepetitionResult("p", "forwarding", 0, 250_000.0, "fps", error=100_000.0)
    assert _first_trial([with_error]) == ("full", 300_000)


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


def test_the_short_fail_rule_compares_each_direction_with_a_full_trials_allowance_per_direction() -> None:
    # acceptance 0.1 %, full trials of 10 s at 1,500 fps: a full trial may lose 15 frames per direction. A short
    # trial that lost 10 frames in each direction lost 20 in all, but no direction lost more than a full one may:
    # no proof. One that lost 2 forward and 20 in reverse proves it (the worst direction counts).
    def rec(fwd: int, rev: int) -> TrialRecord:
        counts = {"forward": {"sent": 1500, "received": 1500 - fwd, "valid": 1500 - fwd}}
        counts["reverse"] = {"sent": 1500, "received": 1500 - rev, "valid": 1500 - rev}
        return TrialRecord("p", "throughput", 0, 0, "phase2", 1500.0, 1500.0, counts, Verdict.FAIL, "loss", 0.0, 1.0)

    rule = ShortFailRule(0.001, 10.0, 1.0, 11.0, 2.0)
    both = ["forward", "reverse"]
    assert worst_lost(rec(10, 10), both) == 10 and not rule.proves(1500, 10)
    assert worst_lost(rec(2, 20), both) == 20 and rule.proves(1500, 20)
    assert worst_lost(rec(2, 20), ["forward"]) == 2  # only the active directions count
    assert worst_lost(rec(2, 20), ["forward", "reverse", "other"]) is None  # a direction without counts: no proof


def test_a_fast_search_asks_for_tail_rates_and_stores_what_a_failed_short_trial_delivered() -> None:
    # the first test's search: short 300k fails, delivering 240,000 per second in each direction. Every phase-2 trial
    # of the fast search asked the tester for its second half's rate (the fake forwards its share from the start:
    # 240,000 at 300k, the offered rate below the ceiling); the result keeps the delivery for the next repetitions'
    # probes. A binary search asks for none.
    h = Harness(forwarding=240_000)
    res = h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0)
    tails = [(r.intended_rate, r.extra.get("tail_rates")) for r in h.records if r.kind == "phase2"]
    assert tails == [
        (200_000, {"forward": 200_000, "reverse": 200_000}),
        (300_000, {"forward": 240_000, "reverse": 240_000}),
        (200_000, {"forward": 200_000, "reverse": 200_000}),
    ]
    assert res.extra["short_delivered"] == 240_000 and res.extra["jumps"] == 0  # no burst: short trials narrow on
    h.run("throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="binary", duration=10.0)
    assert all("tail_rates" not in r.extra for r in h.records)


def test_the_first_cps_repetition_goes_to_the_rate_a_failed_phase_1_set_connections_up_at() -> None:
    # cps ceiling 245,000, [0, 400,000], error 10,000. Phase 1 at 200k passes; 300k fails having set up 245/300 of
    # its connections in N / 300k seconds: 245,000 per second, so the search walks from the grid rate 240,000 (it
    # passes), up to 250,000 (fails), instead of bisecting 250k, 220k, 230k, 240k
    h = Harness(cps=245_000)
    res = h.run("cps", upper=400_000, error=10_000, algorithm="fast")
    phase1 = [r.intended_rate for r in h.records if r.kind == "phase1"]
    assert phase1 == [200_000, 300_000, 240_000, 250_000]
    assert (res.value, res.error, res.extra["jumps"]) == (240_000, 10_000, 1)


def test_without_the_short_fail_rule_a_short_failure_proves_nothing_and_a_full_trial_sets_the_bound() -> None:
    # as the first test, with short_fail false: short 300k fails, but only a full trial there may bound the result
    h = Harness(forwarding=240_000)
    res = h.run(
        "throughput", upper=400_000, error=100_000, fill_rate=50_000, algorithm="fast", duration=10.0, short_fail=False
    )
    assert _trials(h) == [
        ("fill", "-", 50_000, 0.08),
        ("phase2", "short", 200_000, 1.0),
        ("phase2", "short", 300_000, 1.0),
        ("phase2", "full", 200_000, 10.0),
        ("phase2", "full", 300_000, 10.0),
    ]
    assert (res.value, res.error, res.extra["short_bound"], res.extra["full_steps"]) == (200_000, 100_000, False, 2)


class MissingTester(FakeTester):
    """The fake tester in front of a DUT that, from 250,000/s up to its ceiling, loses 40 frames per trial in each
    direction; there its own receive side misses 2,000 more in every short (1 s) trial and says so
    (``Deviation.missed``), as the software tester reports a socket's drops."""

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        res = super().phase2(rate, duration, directions, measure)
        if rate < 250_000:
            return res
        missed = 2000 if duration < 10.0 else 0
        counts = {
            d: DirectionCounts(c.sent, max(c.received - 40 - missed, 0), max(c.valid - 40 - missed, 0))
            for d, c in res.counts.items()
        }
        deviations = {d: Deviation(missed=missed) for d in res.counts} if missed else {}
        return dataclasses.replace(res, counts=counts, deviations=deviations)


@pytest.mark.parametrize("algorithm", ["binary", "fast"])
def test_frames_the_tester_missed_prove_no_upper_bound_and_fast_agrees_with_binary(algorithm: str) -> None:
    # acceptance 0.01 %: a full trial (60 s) at 250,000/s may lose 1,500 frames, the DUT's 40 are well within it;
    # a short trial's 2,040 missing frames are 40 of the DUT's (net of the 2,000 the tester missed): more than a
    # short trial may lose (it fails), far less than a full trial may (it proves no bound; counted gross, it would
    # have, and fast would report 249,000). Both searches report the DUT's 300,000.
    h = Harness(forwarding=300_000)
    h.tester = MissingTester(h.dut)
    h.tester.prepare(h.plan)
    res = h.run(
        "throughput", upper=400_000, error=1000, fill_rate=50_000, algorithm=algorithm, duration=60.0,
        acceptance=0.0001, short_duration=1.0,
    )  # fmt: skip
    assert (res.value, res.error) == (300_000, 1000)
    if algorithm == "fast":
        short_fails = [r for r in h.records if r.extra.get("search_trial") == "short" and r.verdict is Verdict.FAIL]
        assert short_fails and all(r.intended_rate >= 250_000 for r in short_fails)
        assert res.extra["short_bound"] is False and res.extra["rejected"] == [250_000]


# --- the fast search's declaration: what its trials and results store, its rule, what captions say ------------------
def test_a_fast_trial_stores_whether_it_was_short_or_full_and_a_probe() -> None:
    assert trial_kind(FastStep(100.0, 0.0, 200.0, 0, True)) == {"search_trial": "full"}
    assert trial_kind(FastStep(100.0, 0.0, 200.0, 0, False)) == {"search_trial": "short"}
    assert trial_kind(FastStep(100.0, 0.0, 200.0, 0, False, probe=True)) == {"search_trial": "short", "probe": True}


def _task(**kw: object) -> SearchTask:
    def no_trial(_request: object) -> TrialRecord:
        raise AssertionError("no trial runs here")

    return SearchTask(0.0, 1000.0, 10.0, run=no_trial, settings=None, **kw)  # type: ignore[arg-type]


def test_the_short_fail_rule_of_a_search_has_its_acceptance_durations_costs_and_the_points_history() -> None:
    earlier = [
        RepetitionResult("p", "throughput", 0, 500.0, "fps", extra={"probes": 3, "probe_proofs": 2}),
        RepetitionResult("p", "throughput", 1, 510.0, "fps", extra={"probes": 1, "short_delivered": 640.0}),
    ]
    rule = short_fail_rule(_task(acceptance=0.001, overhead=1.5, earlier=earlier), 1.0, 10.0)
    assert rule == ShortFailRule(
        acceptance=0.001, full_seconds=10.0, short_seconds=1.0, full_cost=11.5, short_cost=2.5, probes=4, proofs=2,
        delivered=640.0,
    )  # fmt: skip


def test_a_fast_result_stores_every_count_of_its_outcome() -> None:
    out = FastOutcome(
        500.0, 500.0, 510.0, 12, 1, False, short_steps=7, full_steps=5, seeded=True, rejected=(520.0,), probes=3,
        probe_proofs=2, short_bound=True, guard_trials=1, disproved=(530.0,), stopped=2, jumps=1,
        short_delivered=640.0, remeasured=1,
    )  # fmt: skip
    assert FAST.stored(_task(), out) == {
        "algorithm": "fast", "short_steps": 7, "full_steps": 5, "seeded": True, "rejected": [520.0], "probes": 3,
        "probe_proofs": 2, "short_bound": True, "guard_trials": 1, "disproved": [530.0], "stopped": 2, "jumps": 1,
        "short_delivered": 640.0, "remeasured": 1,
    }  # fmt: skip


def test_a_fast_blocks_caption_words_its_short_bounds_and_seeded_repetitions() -> None:
    meaning = (
        "fast search: each value passed a full trial; its error is the distance to the lowest rate shown to fail, "
        "by a full trial or by a short trial that lost more frames than a full trial may lose in all (the short-fail "
        "rule{})"
    )
    assert FAST.meaning(BlockFacts("throughput", 3)) == meaning.format("")
    shorts = BlockFacts("throughput", 3, {"short_bound": 2})
    assert FAST.meaning(shorts) == meaning.format(", 2 of 3 repetitions' upper bound from a short trial")
    assert FAST.notes(shorts) == () and FAST.notes(BlockFacts("throughput", 3, {"seeded": 0})) == ()
    (note,) = FAST.notes(BlockFacts("throughput", 3, {"seeded": 2}))
    assert note == (
        "throughput: fast search; repetitions after the first started from the earlier ones' results (each value "
        "still passed a full trial, with an upper bound one error above), so min / max are narrower than independent "
        "binary searches'; on the modelled DUTs of bench/search_bias.py (queues, ceilings that vary from trial to "
        "trial, drift, warm-up) its campaign medians are not above a binary search's (docs/engine.md)"
    )


# --- the fast search as natbench runs it: each trial asked with the bounds it was nominated within ----------------
def _ceiling_run(ceiling: float, asked: list[TrialRequest]) -> TrialRunner:
    """Trials of a DUT that forwards up to ``ceiling`` (a phase-2 trial, one direction), each request kept."""

    def run(request: TrialRequest) -> TrialRecord:
        asked.append(request)
        sent = round(request.rate * (request.duration or 10.0))
        valid = sent if request.rate <= ceiling else round(ceiling * (request.duration or 10.0))
        verdict = Verdict.PASS if valid == sent else Verdict.FAIL
        counts = {"forward": {"sent": sent, "received": valid, "valid": valid}}
        return TrialRecord("p", "throughput", 0, 0, "phase2", request.rate, request.rate, counts, verdict, "", 0.0, 1.0)

    return run


@pytest.mark.parametrize(("short_seconds", "full_seconds"), [(None, 10.0), (1.0, None), (None, None)])
def test_a_fast_search_without_both_trial_durations_narrows_with_full_trials(
    short_seconds: float | None, full_seconds: float | None
) -> None:
    # no short trials to narrow with (one duration unknown): every trial is a full one, the result as binary's
    asked: list[TrialRequest] = []
    task = SearchTask(
        0.0, 1000.0, 100.0, run=_ceiling_run(550.0, asked), settings=None, directions=("forward",),
        short_seconds=short_seconds, full_seconds=full_seconds,
    )  # fmt: skip
    out = FAST.run(task)
    assert isinstance(out, FastOutcome)
    assert (out.value, out.upper, out.short_steps) == (500.0, 600.0, 0)
    assert asked and all(r.duration is None for r in asked)


def test_each_fast_trial_is_asked_with_the_bounds_of_its_step_and_no_trial_measured_again() -> None:
    asked: list[TrialRequest] = []
    task = SearchTask(0.0, 1000.0, 100.0, run=_ceiling_run(550.0, asked), settings=None, directions=("forward",))
    out = FAST.run(task)
    assert isinstance(out, FastOutcome) and out.remeasured == 0  # no stop: nothing was measured again
    # a bisection of [0, 1000]: 500 within (0, 1000) passes, 700 within (500, 1000) fails, then 600 within (500, 700)
    assert [(r.rate, r.lower, r.upper) for r in asked] == [
        (500.0, 0.0, 1000.0),
        (700.0, 500.0, 1000.0),
        (600.0, 500.0, 700.0),
    ]
    assert (out.value, out.upper) == (500.0, 600.0)


def test_a_fast_result_counts_the_rates_whose_stopped_full_trial_proved_nothing_and_was_measured_again() -> None:
    # every stop the tester is asked for ends undecided (the receive wait undid it): the full trial runs again
    asked: list[TrialRequest] = []
    dut = _ceiling_run(550.0, asked)
    undone: list[float] = []

    def run(request: TrialRequest) -> TrialRecord:
        rec = dut(request)
        if request.stop is None:
            return rec
        undone.append(request.rate)
        return dataclasses.replace(rec, verdict=Verdict.INVALID, reason=f"{STOP_UNDECIDED} the receive wait undid it")

    task = SearchTask(
        0.0, 1000.0, 100.0, run=run, settings=ShortTrialSettings(), directions=("forward",), short_seconds=1.0,
        full_seconds=10.0, evidence=TrialEvidence(stops_failed_trials=True, tail_rates=True),
    )  # fmt: skip
    out = FAST.run(task)
    assert isinstance(out, FastOutcome)
    assert undone and out.remeasured == len(set(undone))
    assert (out.value, out.upper) == (500.0, 600.0)
