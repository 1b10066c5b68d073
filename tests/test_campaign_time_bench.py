"""bench/campaign_time.py's bookkeeping: the modelled loss curve and true ceiling, the accuracy tally, and a
simulation on a trivial DUT (no jitter, no spikes) where every search must land within its error."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from natbench.results import RepetitionResult

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_campaign_time", ROOT / "bench" / "campaign_time.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ct = _bench()


def test_loss_curve_is_zero_below_the_knee_and_quadratic_up_to_the_ceiling() -> None:
    # ceiling 1000, knee 2 %: no loss up to 980; at 990 (half the knee) 1e-4 x 0.5^2 = 2.5e-5; at 1000 1e-4;
    # at 1250: 1e-4 + 1 - 1000 / 1250 = 0.2001
    assert ct.loss_ratio(980, 1000) == 0.0
    assert ct.loss_ratio(990, 1000) == pytest.approx(2.5e-5)
    assert ct.loss_ratio(1000, 1000) == pytest.approx(1e-4)
    assert ct.loss_ratio(1250, 1000) == pytest.approx(0.2001)


def test_true_ceiling_is_the_highest_rate_whose_full_trial_loses_nothing_allowed() -> None:
    # 1,000 frames, acceptance 0: floor(1000 L) must be 0, i.e. L < 0.001; below the ceiling L <= 1e-4, above it
    # 1e-4 + 1 - 1000 / r < 0.001 <=> r < 1000 / 0.9991 = 1000.9008
    assert ct.true_ceiling(1000, 0.0, lambda _r: 1000) == pytest.approx(1000.9008, abs=0.02)


def test_tally_counts_results_within_the_error_outside_the_band_bias_and_failed_repetitions() -> None:
    # truth 1000, error 10: 995 is within and in (990, 1000]; 1005 within but above the truth (outside the band);
    # 985 and 1011 neither; a failed repetition counts as not within and outside; bias = mean(-5, 5, -15, 11) / 1000
    t = ct.Tally()
    for v in (995.0, 1005.0, 985.0, 1011.0, None):
        t.add(RepetitionResult("p", "throughput", 0, v, "fps"), 1000.0, 10.0)
    assert (t.results, t.within, t.outside, t.failed) == (5, 2, 4, 1)
    assert (t.within_share, t.outside_share) == (pytest.approx(2 / 5), pytest.approx(4 / 5))
    assert t.mean_bias == pytest.approx(-0.001)


def test_a_queue_absorbs_the_first_frames_a_trial_would_lose(monkeypatch: pytest.MonkeyPatch) -> None:
    # ceiling 1,000, 2,000 frames at 1,010 fps: the loss curve loses floor(2000 x (1e-4 + 1 - 1000 / 1010)) = 20
    # frames; a queue of 15 frames leaves 5, one of 50 none
    monkeypatch.setattr(ct, "SPIKES_PER_SECOND", 0.0)
    tester = ct.SimTester(ct.SimDut(ct.FakeModel()))
    assert tester._lost(2000, 1010.0, 1000.0, 2.0) == 20
    monkeypatch.setattr(ct, "BUFFER_FRAMES", 15)
    assert tester._lost(2000, 1010.0, 1000.0, 2.0) == 5
    monkeypatch.setattr(ct, "BUFFER_FRAMES", 50)
    assert tester._lost(2000, 1010.0, 1000.0, 2.0) == 0


def test_on_a_trivial_dut_all_three_searches_land_within_their_error_and_time_adds_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No jitter (median = min = max) and no spikes: every result is within the search error of the truth and in
    (truth - error, truth]."""
    monkeypatch.setattr(ct, "SPIKES_PER_SECOND", 0.0)
    flat = ct.Figure(ct.SEED000_FWD.median, ct.SEED000_FWD.median, ct.SEED000_FWD.median)
    sc = ct.SimCampaign("trivial", ("seed000-fig2-forwarding-cores.yaml",), {"forwarding": flat})
    for alg in ct.ALGORITHMS:
        t = ct.simulate(sc, alg, 1, 1)
        assert (t.results, t.within, t.failed) == (50, 50, 0), alg  # 5 points x 10 repetitions
        assert t.metrics["forwarding"].algorithm == alg and t.outside == 0, alg
    binary = ct.simulate(sc, "binary", 1, 1)
    # forwarding: one table reset per repetition (412 ms, nothing to flush), each trial 60 s + 2 s timeout
    assert binary.seconds == pytest.approx(50 * 0.412 + binary.trials * 62.0)
