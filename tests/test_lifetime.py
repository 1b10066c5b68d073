"""How long a connection-establishment step needs its connections (RFC 9693, Sections 4.5 and 4.6): the arithmetic
of :func:`natbench.metrics.lifetime.establishment_lifetime` at its edges, and the validation metric's lifetime model
(the rate it assumes when it has none)."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from natbench.metrics.cps import CpsSettings
from natbench.metrics.declare import Lifetime
from natbench.metrics.latency import LatencySettings
from natbench.metrics.lifetime import connection_limit, establishment_lifetime
from natbench.metrics.settings import MetricSettings
from natbench.metrics.validation import ValidationSettings
from natbench.metrics.validation import lifetime as validation_lifetime
from natbench.testing import FakeDut


class TimeoutDut(FakeDut):
    """A fake whose facts name a UDP timeout of ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def facts(self) -> dict[str, Any]:
        return {"udp_timeout": self.seconds}


def refill_after(seconds: float | None) -> MetricSettings:
    """Settings of a phase-2 metric as far as the limit reads them (only ``refill_after``)."""
    return cast(MetricSettings, type("Settings", (), {"refill_after": seconds})())


def test_a_step_at_rate_zero_needs_its_connections_forever() -> None:
    # no frame is ever sent at 0/s: the step would never end, so no timeout is long enough
    assert establishment_lifetime(10, 0.0, 2.0) == math.inf
    assert establishment_lifetime(10, 0.0, 2.0, reverse=0.0) == math.inf


def test_reverse_frames_at_rate_zero_need_the_connections_forever() -> None:
    assert establishment_lifetime(10, 100.0, 2.0, reverse=0.0) == math.inf


def test_rates_below_one_per_second_are_finite_lifetimes() -> None:
    # 10 connections at 0.5/s take 20 s to send, + the 2 s receive wait = 22 s
    assert establishment_lifetime(10, 0.5, 2.0) == 22.0
    # phase 1 at 100/s: 0.1 s + 2 s; gap 1 s; 10 reverse frames at 0.5/s: 20 s + 2 s. 0.1 + 2 + 1 + 20 + 2 = 25.1 s
    assert establishment_lifetime(10, 100.0, 2.0, reverse=0.5, gap=1.0) == pytest.approx(25.1)


def test_the_limit_is_the_smaller_of_refill_after_and_the_dut_timeout_and_names_where_it_comes_from() -> None:
    assert connection_limit(refill_after(50.0), TimeoutDut(120)) == (50.0, "refill_after")
    assert connection_limit(refill_after(300.0), TimeoutDut(120)) == (120.0, "dut_timeout")
    assert connection_limit(refill_after(None), TimeoutDut(120)) == (120.0, "dut_timeout")


def test_a_refill_after_equal_to_the_dut_timeout_is_named_as_the_limit() -> None:
    # a tie: the user's own setting is the one named (it comes first and is not larger)
    assert connection_limit(refill_after(120.0), TimeoutDut(120)) == (120.0, "refill_after")


def test_validation_at_its_rate_needs_phase_1_the_gap_and_the_reverse_frames_at_alpha_times_it() -> None:
    s = ValidationSettings(rate=500, alpha=2, timeout=2, gap=3)
    # 1000 / 500 + 2 + 3 + 1000 / (2 x 500) + 2 = 10 s; a step that needs longer is refused (the timeout guard)
    assert validation_lifetime(s, 1000, {}) == (Lifetime(10.0, "phase 1, gap and reverse frames at 500/s", True),)
    s = ValidationSettings(rate=500, reverse_rate=250, alpha=2, timeout=2, gap=3)
    assert validation_lifetime(s, 1000, {})[0].seconds == 1000 / 500 + 2 + 3 + 1000 / 250 + 2


def test_validation_without_a_rate_needs_its_connections_longest_at_the_lowest_rate_the_cps_search_reports() -> None:
    # cps [200, 1000] error 100: the lowest rate its search can report is 300/s; reverse frames at 4 x 300 = 1200/s:
    # 1200 / 300 + 2 + 3 + 1200 / 1200 + 2 = 12 s
    s = ValidationSettings(alpha=4, timeout=2, gap=3)
    cps = CpsSettings(lower=200, upper=1000, error=100)
    assert validation_lifetime(s, 1200, {"cps": cps}) == (
        Lifetime(12.0, "phase 1, gap and reverse frames at 300/s", True),
    )
    assert validation_lifetime(ValidationSettings(rate=600, timeout=2), 1200, {"cps": cps})[0].step.endswith("600/s")


def test_validation_without_a_rate_or_a_cps_search_assumes_no_lifetime() -> None:
    s = ValidationSettings(alpha=4, timeout=2, gap=3)
    assert validation_lifetime(s, 1200, {}) == ()
    assert validation_lifetime(s, 1200, {"cps": LatencySettings(fill_rate=500)}) == ()  # no search: no rate
