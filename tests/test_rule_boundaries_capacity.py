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
