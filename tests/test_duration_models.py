"""Known answers of each metric's duration model (what ``natbench plan`` prints as trials and seconds).

The expected numbers are worked out by hand from the model the README's plan section and the modules'
docstrings give: a search takes ``max(1, ceil(log2((upper - lower) / error)))`` steps at the middle of the
range, every trial adds 1 s for DUT commands, and a metric's repetitions multiply trials and seconds.
The settings use distinct values (timeout 2, gap 3, duration 10) so that each term shows in the sum.
"""

from __future__ import annotations

import pytest

import natbench.metrics.teardown as teardown_metric
from natbench.metrics.capacity import CapacitySettings
from natbench.metrics.capacity import estimate as capacity_estimate
from natbench.metrics.cps import CpsSettings
from natbench.metrics.cps import estimate as cps_estimate
from natbench.metrics.duration import plan_query
from natbench.metrics.frame_loss import FrameLossSettings
from natbench.metrics.frame_loss import estimate as frame_loss_estimate
from natbench.metrics.latency import LatencySettings, PdvSettings
from natbench.metrics.latency import estimate as delay_estimate
from natbench.metrics.teardown import TeardownSettings
from natbench.metrics.teardown import estimate as teardown_estimate
from natbench.metrics.throughput import (
    ForwardingSettings,
    ThroughputSettings,
    estimate_forwarding,
    estimate_throughput,
)
from natbench.metrics.validation import ValidationSettings
from natbench.metrics.validation import estimate as validation_estimate
from natbench.search.declare import PlanQuery
from natbench.search.fast.planning import fast_trials, plan
from natbench.search.mlr import MlrSettings, mlr_trials


def test_a_cps_step_costs_the_connections_at_the_middle_rate_plus_timeout() -> None:
    s = CpsSettings(lower=0, upper=1000, error=100, timeout=2, repetitions=2, validation="off")
    # steps = ceil(log2(1000 / 100)) = ceil(3.32) = 4; middle rate 500 cps
    # per step: 1000 / 500 + 2 (timeout) + 1 (DUT commands) = 5 s
    # 2 repetitions: 2 * 4 = 8 trials, 2 * 4 * 5 = 40 s
    assert cps_estimate(s, 1000, {}) == (8, 40.0)


@pytest.mark.parametrize(("validation", "expected"), [("every_step", (16, 64.0)), ("final", (12, 56.0))])
def test_validation_adds_the_reverse_frames_to_the_cps_estimate(validation: str, expected: tuple[int, float]) -> None:
    s = CpsSettings(lower=0, upper=1000, error=100, timeout=2, repetitions=2, alpha=2.0, validation=validation)
    # 4 steps at 500 cps, each phase 1 1000 / 500 + 2 + 1 = 5 s; a validation 1000 / (2 x 500) + 2 = 3 s
    # every_step: 4 x (5 + 3) = 32 s in 8 trials per repetition; 2 repetitions: (16, 64.0)
    # final: 4 phase 1s + one more phase 1 and its validation: 5 x 5 + 3 = 28 s in 6 trials; 2 repetitions: (12, 56.0)
    assert cps_estimate(s, 1000, {}) == expected


@pytest.mark.parametrize(("refill", "expected"), [("always", (8, 160.0)), ("auto", (8, 118.0))])
def test_a_throughput_step_runs_a_phase_2_trial_on_a_fill_per_repetition_or_per_step(
    refill: str, expected: tuple[int, float]
) -> None:
    s = ThroughputSettings(
        lower=0, upper=1000, error=100, fill_rate=500, timeout=2, gap=3, duration=10, repetitions=2, refill=refill
    )
    # steps = 4 (as for cps); a phase-2 step 10 (duration) + 2 + 1 = 13 s, a fill 1000 / 500 + 2 + 3 (gap) = 7 s
    # always: a fill before every step, 2 * 4 * (13 + 7) = 160 s; auto: one fill per repetition (the table is kept),
    # 2 * (4 * 13 + 7) = 118 s; 8 trials either way
    assert estimate_throughput(s, 1000, {}) == expected


def test_fast_throughput_counts_short_trials_first_then_three_full_ones_and_no_probe_per_seeded_repetition() -> None:
    s = ThroughputSettings(
        lower=0, upper=1000, error=100, fill_rate=500, timeout=2, gap=3, duration=10, repetitions=2, algorithm="fast"
    )
    # the first repetition: ceil(log2(1000 / 100)) = 4 short trials of 1 + 2 + 1 = 4 s = 16 s and 2 full ones of
    # 10 + 2 + 1 = 13 s = 26 s; the second walks from its seed: 3 full trials = 39 s, no probe (near the ceiling the
    # first repetition's failed short trial delivered more); one fill per repetition, 2 x (1000 / 500 + 2 + 3) = 14 s:
    # 9 trials, 95 s
    assert estimate_throughput(s, 1000, {}) == (9, 95.0)
    # forwarding: the same trials without the fills
    f = ForwardingSettings(lower=0, upper=1000, error=100, timeout=2, duration=10, repetitions=2, algorithm="fast")
    assert estimate_forwarding(f, 1000, {}) == (9, 81.0)


def test_mlr_throughput_counts_trials_of_each_duration_mlrsearch_runs() -> None:
    s = ThroughputSettings(
        lower=0, upper=1000, error=100, fill_rate=500, timeout=2, gap=3, duration=10, repetitions=2, algorithm="mlr"
    )
    # rfc2544 preset: initial trials of 1 s, 2 preceding targets (the first with 10 x (1 / 10) ** 0.5 = 3.162 s
    # trials, the last with the initial 1 s), final 10 s trials with a 10 s duration sum and exceed ratio 0.
    # Per repetition: ceil(4 / 2) + 2 = 4 trials of 1 s, 2 of 3.162 s, 1 good + 1 bad of 10 s
    assert mlr_trials(s) == [(4, 1.0), (2, pytest.approx(10**0.5)), (2, 10.0)]
    per_rep = 4 * (1 + 2 + 1) + 2 * (10**0.5 + 2 + 1) + 2 * (10 + 2 + 1)
    trials, seconds = estimate_throughput(s, 1000, {})
    assert trials == 16 and seconds == pytest.approx(2 * per_rep + 2 * (1000 / 500 + 2 + 3))
    # csit preset: 1 s trials only, duration sum 21 s, exceed ratio 0.5: 11 good and 12 bad final trials
    csit = s.model_copy(update={"mlr": MlrSettings(preset="csit")})
    assert mlr_trials(csit) == [(4, 1.0), (2, 1.0), (23, 1.0)]


def test_fast_cps_counts_a_full_search_then_three_validated_steps_per_seeded_repetition() -> None:
    s = CpsSettings(lower=0, upper=1000, error=100, timeout=2, repetitions=2, alpha=2.0, algorithm="fast")
    # the first repetition searches the whole range with full steps (ceil(log2(1000 / 100)) = 4), the second walks
    # from its seed (3): 7 steps, each a phase 1 (1000 / 500 + 2 + 1 = 5 s) and its validation (1000 / 1000 + 2 =
    # 3 s): 14 trials, 56 s
    assert cps_estimate(s, 1000, {}) == (14, 56.0)


def test_a_forwarding_step_is_one_phase_2_trial_whatever_the_connection_count() -> None:
    s = ForwardingSettings(lower=0, upper=1000, error=100, timeout=2, duration=10, repetitions=2)
    # steps = 4; per step: 10 (duration) + 2 (timeout) + 1 = 13 s; 2 repetitions: 8 trials, 2 * 4 * 13 = 104 s
    assert estimate_forwarding(s, 1000, {}) == (8, 104.0)
    assert estimate_forwarding(s, 10**6, {}) == (8, 104.0)


def test_frame_loss_runs_one_filled_trial_per_rate_of_the_walk() -> None:
    s = FrameLossSettings(rates=[280, 300, 290], fill_rate=500, timeout=2, gap=3, duration=10, repetitions=2)
    # 3 rates; per rate: 1000 / 500 + 2 + 3 + 10 + 2 + 1 = 20 s
    # 2 repetitions: 2 * 3 = 6 trials, 2 * 3 * 20 = 120 s
    assert frame_loss_estimate(s, 1000, {}) == (6, 120.0)
    # max_rate with step 0.1: ten rates (100 % ... 10 %), all counted (where the walk stops is not known)
    walk = FrameLossSettings(max_rate=300, fill_rate=500, timeout=2, gap=3, duration=10, repetitions=1)
    assert frame_loss_estimate(walk, 1000, {}) == (10, 200.0)


def test_latency_and_pdv_run_one_filled_trial_per_repetition() -> None:
    # per repetition: 1000 / 500 + 2 + 3 + 10 + 2 + 1 = 20 s; 3 repetitions: 3 trials, 60 s
    lat = LatencySettings(fill_rate=500, timeout=2, gap=3, duration=10, tag_delay=5, repetitions=3)
    pdv = PdvSettings(fill_rate=500, timeout=2, gap=3, duration=10, repetitions=3)
    assert delay_estimate(lat, 1000, {}) == (3, 60.0)
    assert delay_estimate(pdv, 1000, {}) == (3, 60.0)


def test_teardown_counts_the_loading_and_an_empty_table_delete_per_repetition() -> None:
    s = TeardownSettings(fill_rate=500, timeout=2, gap=3, repetitions=4)
    # loading per repetition: 1000 / 500 + 2 + 3 + 1 = 8 s; 4 repetitions: 4 trials, 32 s
    # empty-table deletes: every repetition (empty_repetitions unset), 3 each (empty_samples): 12 trials, 12 * 1 s
    assert teardown_estimate(s, 1000, {}) == (16, 44.0)
    one = TeardownSettings(fill_rate=500, timeout=2, gap=3, repetitions=4, empty_samples=1)
    assert teardown_estimate(one, 1000, {}) == (8, 36.0)


def test_teardown_times_the_empty_table_delete_in_the_first_empty_repetitions_only() -> None:
    # 4 * 8 = 32 s of loading as above; 3 empty deletes in each of the first 2 repetitions: 4 + 6 trials, 32 + 6 s
    s = TeardownSettings(fill_rate=500, timeout=2, gap=3, repetitions=4, empty_repetitions=2)
    assert teardown_estimate(s, 1000, {}) == (10, 38.0)
    # more empty repetitions than repetitions: capped at the 4 repetitions, 4 + 12 trials, 32 + 12 s
    s = TeardownSettings(fill_rate=500, timeout=2, gap=3, repetitions=4, empty_repetitions=9)
    assert teardown_estimate(s, 1000, {}) == (16, 44.0)


def test_teardown_adds_the_per_trial_overhead_once_per_empty_table_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(teardown_metric, "STEP_OVERHEAD", 2.0)  # DUT commands taking 2 s per trial instead of 1
    s = TeardownSettings(fill_rate=500, timeout=2, gap=3, repetitions=4)
    # loading: 1000 / 500 + 2 + 3 + 2 = 9 s, 4 repetitions: 36 s; 12 empty-table deletes of 2 s each: 24 s -> 60 s
    assert teardown_estimate(s, 1000, {}) == (16, 60.0)


def test_validation_sends_phase_1_at_its_rate_and_the_reverse_frames_at_alpha_times_it() -> None:
    s = ValidationSettings(rate=500, alpha=2, timeout=2, gap=3, repetitions=2)
    # reverse rate 2 * 500 = 1000; 1000 / 500 + 2 + 3 + 1000 / 1000 + 2 + 1 = 11 s; 2 repetitions: 2 trials, 22 s
    assert validation_estimate(s, 1000, {}) == (2, 22.0)


def test_validation_uses_its_reverse_rate_when_set() -> None:
    s = ValidationSettings(rate=500, reverse_rate=250, alpha=2, timeout=2, gap=3, repetitions=2)
    # 1000 / 500 + 2 + 3 + 1000 / 250 + 2 + 1 = 14 s; 2 repetitions: 2 trials, 28 s
    assert validation_estimate(s, 1000, {}) == (2, 28.0)


def test_validation_without_a_rate_assumes_the_middle_of_the_cps_search_range() -> None:
    s = ValidationSettings(alpha=2, timeout=2, gap=3, repetitions=2)
    cps = CpsSettings(lower=0, upper=400, error=10)
    # rate (0 + 400) / 2 = 200, reverse 400: 1000 / 200 + 2 + 3 + 1000 / 400 + 2 + 1 = 15.5 s; x2: 31 s
    assert validation_estimate(s, 1000, {"cps": cps}) == (2, 31.0)


def test_validation_without_a_rate_or_a_cps_search_assumes_one_connection_per_second() -> None:
    s = ValidationSettings(alpha=2, timeout=2, gap=3, repetitions=2)
    # rate 1, reverse 2: 10 / 1 + 2 + 3 + 10 / 2 + 2 + 1 = 23 s; 2 repetitions: 2 trials, 46 s
    assert validation_estimate(s, 10, {}) == (2, 46.0)
    # a "cps" entry that is no search (no range to take the middle of) counts as none
    assert validation_estimate(s, 10, {"cps": LatencySettings(fill_rate=500)}) == (2, 46.0)


def test_capacity_probes_double_then_bisect_the_connection_count_each_a_cps_search() -> None:
    s = CapacitySettings(
        min_connections=1000,
        max_connections=8000,
        connection_error=1000,
        lower=0,
        upper=1000,
        error=100,
        timeout=2,
        repetitions=2,
    )
    # probes: ceil(log2(8000 / 1000)) = 3 doublings + ceil(log2((8000 - 1000) / 1000)) = ceil(2.81) = 3 bisections
    # each probe a cps search of ceil(log2(1000 / 100)) = 4 steps at max / 2 = 4000 connections, middle rate 500,
    # every step validated (the default, alpha 1): phase 1 4000 / 500 + 2 + 1 = 11 s, validation 4000 / 500 + 2
    # = 10 s; one repetition 6 * 4 * 2 = 48 trials, 6 * 4 * 21 = 504 s; 2 repetitions: 96, 1008
    assert capacity_estimate(s, 123, {}) == (96, 1008.0)
    # without validation: 24 trials, 24 * 11 = 264 s per repetition; 2 repetitions: 48, 528
    assert capacity_estimate(s.model_copy(update={"validation": "off"}), 123, {}) == (48, 528.0)


def test_capacity_probes_are_reference_searches_of_a_whole_half_of_max_connections_whatever_the_algorithm() -> None:
    s = CapacitySettings(
        min_connections=1000,
        max_connections=7001,
        connection_error=1000,
        lower=0,
        upper=1000,
        error=100,
        timeout=2,
        repetitions=2,
        algorithm="fast",
        validation="final",
    )
    # probes: ceil(log2(7001 / 1000)) = 3 doublings + ceil(log2((7001 - 1000) / 1000)) = ceil(2.58) = 3 bisections;
    # each probe a binary search (the reference: never the campaign's fast one, which validates every step under
    # "final") at 7001 // 2 = 3,500 connections (a whole count): 4 phase 1s at the middle rate 500, 3500 / 500 + 2
    # + 1 = 10 s each, then the final phase 1 (10 s) and its validation (3500 / 500 + 2 = 9 s): 6 trials, 59 s.
    # One repetition 6 * 6 = 36 trials, 6 * 59 = 354 s; 2 repetitions: 72, 708
    assert capacity_estimate(s, 123, {}) == (72, 708.0)


def test_fast_counts_never_exceed_a_binary_search_per_seeded_repetition_and_one_repetition_has_none() -> None:
    # [0, 300], error 100: a binary search needs ceil(log2(3)) = 2 trials, fewer than the 3 a seeded walk without
    # short trials is counted with: each of the 3 later repetitions counts 2. First repetition: 2 short + 2 full
    # (short trials) or 2 full. With short trials a seeded walk counts 3 full (here 2) and no probe.
    s = ThroughputSettings(lower=0, upper=300, error=100, repetitions=4, fill_rate=500, algorithm="fast")
    assert fast_trials(plan_query(s, 10.0), short=True) == (2, 2 + 3 * 2)
    assert fast_trials(plan_query(s, 10.0), short=False) == (0, 2 + 3 * 2)
    one = ThroughputSettings(lower=0, upper=1000, error=100, repetitions=1, fill_rate=500, algorithm="fast")
    # ceil(log2(10)) = 4 short, 2 full confirmations, no seeded walk
    assert fast_trials(plan_query(one, 10.0), short=True) == (4, 2)


def test_fast_plans_short_trials_only_where_they_are_shorter_than_the_full_trials() -> None:
    # [0, 1000], error 100, one repetition: ceil(log2(10)) = 4 steps
    s = ThroughputSettings(lower=0, upper=1000, error=100, repetitions=1, fill_rate=500, algorithm="fast")
    # short trials of 1 s before full ones of 10 s: 4 short steps, 2 full confirmations
    assert plan(PlanQuery(0, 1000, 100, 1, s, short_seconds=1.0, full_seconds=10.0)) == ((4, 1.0), (2, None))
    # short trials as long as the full ones are full trials: 4 full steps, no short trial
    assert plan(PlanQuery(0, 1000, 100, 1, s, short_seconds=10.0, full_seconds=10.0)) == ((4, None),)
    # no full trial's duration (a phase 1), or no short trials: full steps only
    assert plan(PlanQuery(0, 1000, 100, 1, s, short_seconds=1.0, full_seconds=None)) == ((4, None),)
    assert plan(PlanQuery(0, 1000, 100, 1, s, short_seconds=None, full_seconds=10.0)) == ((4, None),)
