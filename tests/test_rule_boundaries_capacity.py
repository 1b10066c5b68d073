"""The capacity search's limits at their boundaries (natbench.metrics.capacity): no probe beyond ``max_connections``
when it is no multiple of the destination ports, and the source port space used up to its last port (65535).

Against the fakes, through the procedure as a run calls it."""

from __future__ import annotations

from typing import Any

from metric_settings import build
from test_procedures import capacity_harness

from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.results import RepetitionResult
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint


def probed(res: RepetitionResult) -> list[int]:
    return [int(c) for c, _ in res.extra["probes"]]


def test_no_probe_beyond_max_connections_that_is_no_multiple_of_the_destination_ports() -> None:
    # 20 destination ports; max_connections 6,010 = 300.5 source ports: the most probed is 300 ports, 6,000
    h = capacity_harness(lambda n: 1000.0)
    res = h.run("capacity", upper=2000, error=1, min_connections=4010, max_connections=6010)
    assert probed(res) == [4020, 6000]
    assert max(probed(res)) <= 6010
    assert (res.value, res.extra["not_reached"]) == (6000, True)


def test_max_connections_that_is_a_multiple_of_the_destination_ports_is_probed() -> None:
    # the other side: 6,020 = 301 ports exactly is probed itself
    h = capacity_harness(lambda n: 1000.0)
    res = h.run("capacity", upper=2000, error=1, min_connections=4010, max_connections=6020)
    assert probed(res) == [4020, 6020]


def capacity_at(src: tuple[int, int], **settings: Any) -> tuple[RepetitionResult, list[PortRange]]:
    """A capacity repetition at a point with source ports ``src`` and 20 destination ports, on a fake DUT whose table
    never fills; the source ranges it prepared the tester with."""
    point = WorkingPoint(0, PortRange(*src), PortRange(80, 99), 64, cores=1, name="fake")
    dut = FakeDut(FakeModel(cps=1000.0))
    prepared: list[PortRange] = []

    class Recording(FakeTester):
        def prepare(self, traffic: TrafficPlan) -> None:
            prepared.append(traffic.src_ports)
            super().prepare(traffic)

    tester = Recording(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, 64, seed=3)
    tester.prepare(plan)
    prepared.clear()
    resolved, options = build("capacity", {"gap": 0.5, "duration": 1.0}, upper=2000, error=1, **settings)
    ctx = ProcedureContext(
        tester=tester,
        dut=dut,
        point=point,
        plan=plan,
        metric="capacity",
        repetition=0,
        settings=resolved,
        emit=lambda _r: None,
        clock=lambda: 0.0,
        sleep=lambda _s: None,
        options=options,
    )
    return run_repetition(ctx), prepared


def test_the_port_space_is_used_up_to_its_last_port() -> None:
    # source ports from 65530: six of them (65530-65535), x 20 = 120 connections at most. Doubling from one port:
    # 1, 2, 4, then 6 ports (the space's end), where the table still has not filled: not reached, port space used up
    res, prepared = capacity_at((65530, 65530), min_connections=20, max_connections=1_000_000, connection_error=20)
    assert probed(res) == [20, 40, 80, 120]
    assert (res.value, res.error) == (120, None)
    assert (res.extra["not_reached"], res.extra["port_space_exhausted"]) == (True, True)
    assert max(r.last for r in prepared) == 65535


def test_max_connections_short_of_the_port_space_has_not_used_it_up() -> None:
    res, _ = capacity_at((65530, 65530), min_connections=20, max_connections=100, connection_error=20)
    assert probed(res) == [20, 40, 80, 100]
    assert (res.value, res.extra["not_reached"], res.extra["port_space_exhausted"]) == (100, True, False)


def test_a_final_probe_at_exactly_gamma_times_the_safe_rate_is_kept_and_is_not_the_collapse_reported() -> None:
    """Ceiling 1,000 cps up to 200 source ports, 400 up to 300, 0 beyond; 20 destination ports; connection_error
    2,000 = 100 ports. Exponential: 200 ports 1,000 cps, 400 ports 0 (< 0.2 x 1,000): the collapse, at 8,000
    connections, where the rate had to stay at 0.2 x 1,000 = 200. Final: one probe, 300 ports: 400 = 0.4 x 1,000,
    kept (not below gamma x the safe rate). The DUT names no timeout, so the collapse that ended the search is
    reported: the 400 ports', not the kept probe's."""
    h = capacity_harness(lambda n: 1000.0 if n <= 200 else 400.0 if n <= 300 else 0.0)
    res = h.run("capacity", upper=2000, error=1, connection_error=2000)
    assert res.extra["probes"] == [[4000, 1000], [8000, 0], [6000, 400]]
    assert (res.value, res.error) == (6000, 2000)
    assert res.extra["timeout_unknown"] is True
    assert (res.extra["collapse_connections"], res.extra["collapse_rate"]) == (8000, 200.0)


def test_every_probe_is_the_reference_binary_search_whatever_the_algorithm_named() -> None:
    """algorithm: fast names the cps search's algorithm, not the probes': each probe stays the seeds' binary search,
    which under validation: final validates its result once (fast would validate every step). Only the first probe
    (200 ports, 1,000 cps) has a rate to validate; the others collapse to 0."""
    h = capacity_harness(lambda n: 1000.0 if n <= 200 else 0.0)
    res = h.run("capacity", upper=2000, error=100, connection_error=2000, validation="final", algorithm="fast")
    assert res.extra["probes"] == [[4000, 1000], [8000, 0], [6000, 0]]
    validations = [r for r in h.records if r.kind == "validation"]
    assert len(validations) == 1 and validations[0].extra["final"] is True
