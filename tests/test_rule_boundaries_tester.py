"""The software tester samples a trial's counts whenever a stop or the tail rates are asked for, each alone
(natbench.testers.software.tester; docs/engine.md, "Where to look next": the fast search's short trials ask for tail
rates and never for a stop).

Marker ``lab``: needs root (a network namespace with a veth pair, AF_PACKET sockets). The tester's two ports are the
two ends of one veth pair, a DUT that forwards everything; the traffic stays inside the namespace the test makes and
deletes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from vethwire import veth_wire

from natbench.plugins import Directions, LossStop, Phase2Options, Port
from natbench.results import Direction
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan

pytestmark = pytest.mark.lab

MAC_A, MAC_B = "02:4e:42:7e:40:01", "02:4e:42:7e:40:02"
RATE = 10_000.0


@pytest.fixture(scope="module")
def wire() -> Iterator[SoftwareTester]:
    """A software tester on one CPU whose Initiator and Responder are the two ends of one veth pair."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates a network namespace and AF_PACKET sockets")
    with veth_wire("nb-i40", MAC_A, MAC_B) as ns:
        cpus = sorted(os.sched_getaffinity(0))[-1:]
        tester = SoftwareTester(Port("wa", MAC_A, MAC_B, ns), Port("wb", MAC_B, MAC_A, ns), cpus=cpus, timeout=0.3)
        tester.prepare(
            TrafficPlan(
                Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(20000, 20099), PortRange(80, 89), 64, seed=5
            )
        )
        yield tester
        tester.close()


def test_a_trial_that_asks_only_for_tail_rates_gets_them(wire: SoftwareTester) -> None:
    # a short trial of the fast search: tail rates, no stop. The wire forwards all 10,000/s
    r = wire.phase2(RATE, 1.0, Directions.FORWARD, Phase2Options(tail_rates=True))
    assert set(r.tail_rates) == {Direction.FORWARD}
    assert r.tail_rates[Direction.FORWARD] == pytest.approx(RATE, rel=0.05)
    assert not r.stopped


def test_a_trial_that_asks_only_for_a_stop_is_watched_and_gets_no_tail_rates(wire: SoftwareTester) -> None:
    # the wire loses nothing: never stopped; the watch ran (the stop was possible) but no tail rate was asked for
    stop = LossStop(allowance=0, margin=64, window=0.25)
    r = wire.phase2(RATE, 1.0, Directions.FORWARD, Phase2Options(stop=stop))
    assert r.tail_rates == {} and not r.stopped
    assert r.counts[Direction.FORWARD].valid == r.counts[Direction.FORWARD].sent == 10_000


def test_a_trial_that_asks_for_neither_is_not_sampled(wire: SoftwareTester) -> None:
    r = wire.phase2(RATE, 1.0, Directions.FORWARD, Phase2Options())
    assert r.tail_rates == {} and not r.stopped
    assert r.counts[Direction.FORWARD].valid == 10_000
