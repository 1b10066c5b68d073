"""The capacity search at the edges of the port space, and the reverse rate of its validated probes."""

from __future__ import annotations

import itertools
from typing import Any

from metric_settings import build

from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.results import RepetitionResult, TrialRecord
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint


def run_capacity(point: WorkingPoint, records: list[TrialRecord], **settings: Any) -> RepetitionResult:
    """One capacity repetition at ``point`` on a fake DUT that establishes 1,000 connections per second."""
    dut = FakeDut(FakeModel(cps=1000.0))
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, 64, seed=3)
    tester.prepare(plan)
    resolved, options = build("capacity", **settings)
    ctx: ProcedureContext[Any] = ProcedureContext(
        tester, dut, point, plan, "capacity", 0, resolved, emit=records.append, sleep=lambda _s: None, options=options
    )
    return run_repetition(ctx)


def test_capacity_grows_the_source_range_up_to_the_last_port_only() -> None:
    """Source ports from 65,000: 65,535 - 65,000 + 1 = 536 ports are left, x 2 destination ports = 1,072
    connections; max_connections (1,000,000) is no limit here. 200 ports to start, 400, then capped at 536: the
    port space is exhausted: the table never filled, so the capacity is "not reached, >= 1,072" (no error)."""
    point = WorkingPoint(0, PortRange(65000, 65199), PortRange(80, 81), 64, cores=1, name="edge")
    records: list[TrialRecord] = []
    res = run_capacity(
        point, records, upper=2000, error=100, min_connections=400, max_connections=1_000_000, connection_error=2
    )
    assert [p[0] for p in res.extra["probes"]] == [400, 800, 1072]
    assert (res.value, res.error, res.extra["not_reached"], res.extra["port_space_exhausted"]) == (
        1072,
        None,
        True,
        True,
    )


def test_each_capacity_step_validates_at_alpha_times_its_rate() -> None:
    """alpha 0.5: the reverse frames of every validated step go at half the step's phase-1 rate."""
    point = WorkingPoint(0, PortRange(1000, 1009), PortRange(80, 81), 64, cores=1, name="small")
    records: list[TrialRecord] = []
    run_capacity(
        point, records, upper=2000, error=100, alpha=0.5, min_connections=20, max_connections=40, connection_error=2
    )
    pairs = [(a.intended_rate, b.intended_rate) for a, b in itertools.pairwise(records) if b.kind == "validation"]
    assert pairs, [r.kind for r in records]
    assert all(a.kind == "phase1" for a, b in itertools.pairwise(records) if b.kind == "validation")
    assert all(reverse == rate * 0.5 for rate, reverse in pairs)


def test_every_probe_searches_from_zero_whatever_the_cps_sections_lower() -> None:
    """A probe is a cps search in [0, RS] (siitperf's cttc.sh): the settings' lower (1,500 here, above the fake's
    1,000 connections per second) does not bound it, so the rate found is the DUT's, not a lower bound never
    passed."""
    point = WorkingPoint(0, PortRange(1000, 1009), PortRange(80, 81), 64, cores=1, name="small")
    records: list[TrialRecord] = []
    res = run_capacity(
        point, records, lower=1500, upper=2000, error=100, min_connections=20, max_connections=40, connection_error=2
    )
    assert records[0].kind == "phase1" and records[0].lower == 0.0
    assert 900 <= res.extra["rate_at_capacity"] <= 1000
