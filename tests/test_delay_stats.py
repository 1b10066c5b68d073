"""RFC 8219 delay statistics by hand: typical / worst-case latency, PDV from exact delays and from the data
path's delay histogram, the tagged-frame schedule, and the settings' RFC defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest

from natbench.errors import SearchError
from natbench.metrics.latency import LatencySettings, PdvSettings, latency_options
from natbench.plugins import Phase2Options
from natbench.testers.delaystats import (
    HIST_BITS,
    bucket_edges,
    exact_stats,
    histogram_percentile,
    histogram_stats,
    nearest_rank,
)
from natbench.testers.software.tester import tag_schedule


def test_worst_case_latency_of_fewer_than_1000_tagged_frames_is_the_largest() -> None:
    # RFC 8219's minimum of 500 tagged frames, delays 1..500 us: rank ceil(0.999 * 500) = ceil(499.5) = 500 -> 500 us
    # (interpolating would give 499.5 us); median of an even count: (250 + 251) / 2 = 250.5 us
    s = exact_stats(np.arange(1, 501, dtype=np.int64)[::-1] * 1000)
    assert s.p99_9 == pytest.approx(500e-6)
    assert s.median == pytest.approx(250.5e-6)
    assert (s.minimum, s.maximum, s.samples) == (pytest.approx(1e-6), pytest.approx(500e-6), 500)
    assert s.pdv == pytest.approx(499e-6)  # D99.9 - Dmin


def test_nearest_rank_percentiles_by_hand() -> None:
    v = np.arange(1, 2001, dtype=np.float64)  # 1..2000
    assert nearest_rank(v, 0.999) == 1998.0  # ceil(0.999 * 2000) = 1998
    assert nearest_rank(v, 0.5) == 1000.0  # ceil(0.5 * 2000) = 1000 exactly, not 1001
    assert nearest_rank(np.array([7.0]), 0.999) == 7.0


def test_negative_clock_artefacts_count_as_zero_delay() -> None:
    s = exact_stats(np.array([-5, 10, 20], dtype=np.int64))
    assert s.minimum == 0.0 and s.median == pytest.approx(10e-9)


def test_histogram_buckets_by_hand() -> None:
    # exact below 2^10 = 1024 ns; then 512 buckets per power of two: [1024, 2048) in steps of 2, [2048, 4096) of 4
    lower, width = bucket_edges(np.array([0, 1023, 1024, 1025, 1535, 1536, 2047]))
    assert lower.tolist() == [0, 1023, 1024, 1026, 2046, 2048, 4092]
    assert width.tolist() == [1, 1, 2, 2, 2, 4, 4]


def test_the_data_path_files_delays_into_the_buckets_the_decoder_reads() -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    assert engine.HIST_BITS == HIST_BITS
    by_hand = {0: 0, 1023: 1023, 1024: 1024, 1025: 1024, 1026: 1025, 2047: 1535, 2048: 1536, 4095: 2047}
    assert {v: engine.hist_index(v) for v in by_hand} == by_hand
    for v in (3000, 123_456, 10**9, 2**40 + 12345, 2**63 - 1):  # the data path files delays below 2^63
        i = engine.hist_index(v)
        assert i < engine.HIST_SIZE
        lo, w = bucket_edges(np.array([i]))
        assert int(lo[0]) <= v < int(lo[0]) + int(w[0])
        assert int(w[0]) <= v / 2 ** (HIST_BITS - 1)  # bucket width at most 1/512 of the value
    assert engine.hist_index(2**64 - 1) == engine.HIST_SIZE - 1


def _hist(values: dict[int, int]) -> np.ndarray:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    h = np.zeros(engine.HIST_SIZE, dtype=np.uint64)
    for v, n in values.items():
        h[engine.hist_index(v)] += n
    return h


def test_pdv_over_all_frames_from_the_histogram_by_hand() -> None:
    # 2000 frames: 1997 at 100 ns, 3 at 1 ms. Rank ceil(0.999 * 2000) = 1998 falls on a 1 ms frame: D99.9 = 1 ms,
    # Dmin = 100 ns, PDV = 999.9 us. 1 ms lies in the bucket [976 * 1024, 977 * 1024) = [999424, 1000448) ns,
    # reported as its middle 999935.5 ns: within 1 ms / 1024 of the true value.
    s = histogram_stats(_hist({100: 1997, 1_000_000: 3}), 100, 1_000_000)
    assert s.samples == 2000 and s.frames == "all"
    assert s.p99_9 == pytest.approx(999935.5e-9)
    assert abs(s.p99_9 - 1e-3) <= 1e-3 * s.error_bound
    assert s.pdv == pytest.approx(999935.5e-9 - 100e-9)
    assert s.median == pytest.approx(100e-9)  # exact below 1024 ns
    # two slow frames only: rank 1998 is a 100 ns frame, PDV 0 (the 99.9th percentile ignores the 2 slowest)
    assert histogram_stats(_hist({100: 1998, 1_000_000: 2}), 100, 1_000_000).pdv == 0.0


def test_histogram_percentiles_stay_within_the_stated_error() -> None:
    rng = np.random.default_rng(8219)
    ns = rng.lognormal(math.log(50_000), 0.8, 20_000).astype(np.int64)
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    h = np.zeros(engine.HIST_SIZE, dtype=np.uint64)
    np.add.at(h, [engine.hist_index(int(v)) for v in ns], 1)
    exact = np.sort(ns).astype(np.float64)
    for p in (0.5, 0.999):
        want = nearest_rank(exact, p)
        assert abs(histogram_percentile(h, p) - want) <= want * 2.0**-HIST_BITS


def test_tagged_frames_follow_the_warm_up_and_are_spread_evenly() -> None:
    # RFC 8219 7.2 at 2000 frames/s: 120 s = 240,000 frames; tags from 60 s on: first k = 60 * 2000 = 120,000;
    # 500 tagged frames over the 120,000 left: every 240th, the last k = 120,000 + 499 * 240 = 239,760
    m = Phase2Options(latency=True, latency_delay=60.0, latency_frames=500)
    assert tag_schedule(240_000, 2000.0, m) == (120_000, 240, 500)
    # by rate: 10,000 frames/s with 1000 tagged frames/s -> every 10th, no limit
    assert tag_schedule(50_000, 10_000.0, Phase2Options(latency=True, latency_rate=1000)) == (0, 10, 0)
    # fewer frames after the warm-up than asked for: each of them is tagged
    assert tag_schedule(1000, 1000.0, Phase2Options(latency=True, latency_delay=0.9, latency_frames=500)) == (
        900,
        1,
        100,
    )


def test_latency_and_pdv_defaults_are_rfc_8219s() -> None:
    lat = LatencySettings(fill_rate=1000)
    # RFC 8219 7.2: at least 120 s, tags after 60 s, at least 500 tagged frames, at least 20 repetitions
    assert (lat.duration, lat.tag_delay, lat.tagged_frames, lat.repetitions) == (120.0, 60.0, 500, 20)
    pdv = PdvSettings(fill_rate=1000)
    assert (pdv.duration, pdv.repetitions) == (60.0, 20)  # RFC 8219 7.3.1: at least 60 s, 20 repetitions


def test_a_warm_up_as_long_as_the_trial_is_refused() -> None:
    with pytest.raises(ValueError, match="tag_delay"):
        LatencySettings(fill_rate=1000, duration=10, tag_delay=10)


def test_too_few_frames_after_the_warm_up_for_the_tagged_frames_is_an_error() -> None:
    s = LatencySettings(fill_rate=1000)
    # 60 s after the warm-up at 8 frames/s = 480 frames < 500 tagged frames
    with pytest.raises(SearchError, match="500 tagged frames do not fit"):
        latency_options(s, 8.0)
    o = latency_options(s, 9.0)  # 540 frames: fits
    exact = latency_options(LatencySettings(fill_rate=1000, tagged_frames=540), 9.0)  # 540 frames for 540: fits
    assert exact.latency_frames == 540
    assert (o.latency, o.latency_delay, o.latency_frames, o.all_delays) == (True, 60.0, 500, False)
