"""How long a connection-establishment step needs its connections (RFC 9693, Sections 4.5 and 4.6): the arithmetic
of :func:`natbench.metrics.lifetime.establishment_lifetime` at its edges."""

from __future__ import annotations

import math

import pytest

from natbench.metrics.lifetime import establishment_lifetime


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
