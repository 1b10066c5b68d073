"""How long a connection-establishment step needs its connections (RFC 9693, Sections 4.5 and 4.6): the arithmetic
of :func:`natbench.metrics.lifetime.establishment_lifetime` at its edges."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from natbench.metrics.lifetime import connection_limit, establishment_lifetime
from natbench.metrics.settings import MetricSettings
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
