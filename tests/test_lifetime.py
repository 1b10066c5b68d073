"""How long a connection-establishment step needs its connections (RFC 9693, Sections 4.5 and 4.6): the arithmetic
of :func:`natbench.metrics.lifetime.establishment_lifetime` at its edges, and the lifetime models of the metrics
that keep connections (what the DUT-timeout check before a run warns about; validation's assumes a rate when it has
none)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, cast

import pytest

from natbench.errors import DutError, SearchError
from natbench.metrics.capacity import CapacitySettings
from natbench.metrics.capacity import lifetime as capacity_lifetime
from natbench.metrics.cps import CpsSettings, search_lifetime
from natbench.metrics.declare import Lifetime
from natbench.metrics.latency import LatencySettings
from natbench.metrics.lifetime import (
    connection_limit,
    connection_timeout,
    establishment_lifetime,
    filled_table_lifetime,
    guard_establishment,
)
from natbench.metrics.settings import MetricSettings
from natbench.metrics.teardown import TeardownSettings
from natbench.metrics.teardown import lifetime as teardown_lifetime
from natbench.metrics.throughput import ThroughputSettings
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


# ----------------------------------------------------------------------------- the metrics' lifetime models
def test_a_cps_search_without_validation_needs_its_connections_for_its_slowest_phase_1_only() -> None:
    # the lowest rate its grid tries is lower + error = 1000 + 1000 = 2000/s: 4,000 connections take 2 s to send,
    # + the 2 s receive wait = 4 s; nothing validates them, so no reverse frames follow
    s = CpsSettings(lower=1000, upper=9000, error=1000, timeout=2, alpha=2.0, validation="off")
    (need,) = search_lifetime(s, 4000, {})
    assert need == Lifetime(
        4.0, "phase 1 of 4,000 connections at 2000/s, the lowest rate its search could try", refused=True
    )


@pytest.mark.parametrize("validation", ["every_step", "final"])
def test_a_validated_cps_search_needs_its_connections_through_the_reverse_frames_at_alpha_times_the_rate(
    validation: str,
) -> None:
    # phase 1 at 2000/s: 4000 / 2000 + 2 = 4 s; reverse frames at alpha x rate = 4000/s: 4000 / 4000 + 2 = 3 s
    s = CpsSettings(lower=1000, upper=9000, error=1000, timeout=2, alpha=2.0, validation=validation)
    (need,) = search_lifetime(s, 4000, {})
    assert need == Lifetime(
        7.0,
        "phase 1 and its validation of 4,000 connections at 2000/s, the lowest rate its search could try",
        refused=True,
    )


def test_a_capacity_probe_needs_the_most_connections_the_search_probes() -> None:
    # the point's connections (123) do not matter: the slowest probe has max_connections = 8,000 at 2000/s:
    # 8000 / 2000 + 2 = 6 s, validated (the default) at alpha 1: + 8000 / 2000 + 2 = 12 s
    s = CapacitySettings(
        min_connections=1000, max_connections=8000, connection_error=1000, lower=1000, upper=9000, error=1000, timeout=2
    )
    (need,) = capacity_lifetime(s, 123, {})
    assert (need.seconds, need.refused) == (12.0, True)
    assert need.step.startswith("phase 1 and its validation of 8,000 connections at 2000/s")


def test_a_teardown_needs_the_fill_the_gap_and_a_second_receive_wait_and_is_not_refused() -> None:
    # 1000 / 500 (fill) + 2 (receive wait) + 3 (gap) + 2 (the delete's margin) = 9 s; connections that would
    # expire are warned about, nothing refuses the trial
    s = TeardownSettings(fill_rate=500, timeout=2, gap=3)
    assert teardown_lifetime(s, 1000, {}) == (Lifetime(9.0, "phase 1 + gap before the timed delete", refused=False),)


def test_a_filled_table_trial_needs_the_fill_the_gap_and_phase_2_with_their_receive_waits() -> None:
    # 1000 / 500 (fill) + 2 (its receive wait) + 3 (gap) + 10 (phase 2) + 2 (its receive wait) = 19 s; connections
    # that would expire are warned about, nothing refuses the trial
    s = ThroughputSettings(upper=1000, error=100, fill_rate=500, timeout=2, gap=3, duration=10)
    assert filled_table_lifetime(s, 1000, {}) == (Lifetime(19.0, "phase 1 + gap + phase 2", refused=False),)


class BrokenFactsDut(FakeDut):
    """A fake whose facts cannot be read."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def facts(self) -> dict[str, Any]:
        raise self.error


def test_a_dut_without_facts_or_whose_facts_fail_names_no_timeout() -> None:
    assert connection_timeout(cast(FakeDut, SimpleNamespace())) is None  # a stand-in with no facts at all
    for error in (NotImplementedError(), OSError("no route"), DutError("facts failed")):
        assert connection_timeout(BrokenFactsDut(error)) is None
    assert connection_timeout(TimeoutDut(120)) == 120.0


def test_a_step_that_names_its_connections_is_guarded_by_them_not_by_the_points() -> None:
    records: list[Any] = []
    settings = type("Settings", (), {"refill_after": None, "timeout": 2.0})()
    ctx = SimpleNamespace(
        settings=settings,
        dut=TimeoutDut(120),
        point=SimpleNamespace(connections=1_000),
        clock=lambda: 0.0,
        record=lambda *args, **kw: records.append((args, kw)),
    )
    # the point's 1,000 connections at 1,000/s: 1 s + 2 s, within the 120 s timeout
    guard_establishment(cast(Any, ctx), 1000.0, None)
    # the step's own 200,000 connections: 200 s + 2 s, beyond it: refused, nothing sent
    with pytest.raises(SearchError) as err:
        guard_establishment(cast(Any, ctx), 1000.0, None, extra={"connections": 200_000})
    assert "phase 1 of 200,000 connections at 1000/s needs them for 202.0 s" in str(err.value)
    assert records and records[-1][1]["extra"]["connections"] == 200_000
    # and a step of fewer connections than the point's passes where the point's would not
    ctx.point = SimpleNamespace(connections=200_000)
    guard_establishment(cast(Any, ctx), 1000.0, None, extra={"connections": 1_000})
