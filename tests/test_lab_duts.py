"""The other lab DUTs through their recipes: nftables NAT44 and tayga + iptables NAT64 (marker ``lab``, root).

Each: phase 1 creates exactly N connections and teaches the Responder N tuples;
phase 2 at a low rate on the filled table loses nothing and creates nothing;
validation answers every tuple.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lab_helpers import kept_rate

from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.plugins import Directions, Phase2Options
from natbench.results import Direction, PhaseResult
from natbench.testbed.lab import NetnsLab
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = pytest.mark.lab

SRC, DST = PortRange(30000, 30039), PortRange(5000, 5024)  # 1,000 connections
N = len(SRC) * len(DST)
# tayga drops traffic for non-global IPv4 destinations (198.18.0.0/15 included) under the well-known
# prefix 64:ff9b::/96 (see dut_recipes/tayga-nat64.yaml), so the lab uses a network-specific prefix
NAT64_PREFIX = ipaddress.IPv6Network("2001:db8:64::/96")


CASES: dict[str, tuple[Family, Callable[[NetnsLab, str], dict[str, Any]]]] = {
    "nftables-nat44": (
        Family.NAT44,
        lambda lab, tag: {
            **lab.recipe_params,
            "nat": "snat",
            "private_address": "198.18.0.1/24",
            "public_address": "198.19.0.1/24",
            "table": f"nb{tag}",
        },
    ),
    "tayga-nat64": (
        Family.NAT64,
        lambda lab, tag: {
            **lab.recipe_params,
            "private_address": "2001:2::1/64",
            "public_address": "198.19.0.1/24",
            "nat": "snat",
            "data_dir": f"/run/natbench-test-tayga-{tag}",
            "pool6": str(NAT64_PREFIX),
        },
    ),
}


@pytest.fixture(params=sorted(CASES), scope="module")
def rig(request: pytest.FixtureRequest) -> Iterator[tuple[NetnsLab, RecipeDut, SoftwareTester, str]]:
    recipe = request.param
    if os.geteuid() != 0:
        pytest.skip("needs root: builds the local lab (network namespaces, veth, nftables/tayga)")
    if recipe == "tayga-nat64" and shutil.which("tayga") is None:
        pytest.skip("tayga is not installed (apt-get install tayga)")
    family, make = CASES[recipe]
    tag = f"{os.getpid()}{secrets.token_hex(2)}"
    addresses = AddressPlan.default(family)
    if family is Family.NAT64:
        addresses = dataclasses.replace(addresses, nat64_prefix=NAT64_PREFIX)
    lab = NetnsLab(f"d{tag}", family=family, addresses=addresses)
    lab.up()
    try:
        dut = RecipeDut(recipe, load_recipe(recipe), NetnsExecutor(lab.dut_netns), make(lab, tag))
        dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64))
        try:
            lab.after_dut_setup()
            tester = SoftwareTester(lab.initiator, lab.responder, cpus=lab.tester_cpus, timeout=0.5)
            tester.prepare(TrafficPlan(family, lab.addresses, SRC, DST, 64, seed=3))
            yield lab, dut, tester, recipe
            tester.close()
        finally:
            dut.teardown()
    finally:
        lab.down()


def test_phase1_phase2_validation(rig: tuple[NetnsLab, RecipeDut, SoftwareTester, str]) -> None:
    _, dut, tester, recipe = rig

    def fill() -> PhaseResult:
        dut.reset_connections()
        return tester.phase1(5000, learn=True)

    r = kept_rate(fill)
    assert r.counts[Direction.FORWARD].valid == N, (recipe, r.counts)
    assert r.learned == N
    assert dut.count_connections() == N
    p2 = kept_rate(lambda: tester.phase2(2000, 1.0, Directions.BIDIRECTIONAL, Phase2Options()))
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert p2.counts[d].sent == p2.counts[d].valid == 2000, (recipe, p2.counts)
    assert dut.count_connections() == N
    v = kept_rate(lambda: tester.validate(5000))
    assert v.counts[Direction.REVERSE].valid == N
