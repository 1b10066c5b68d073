"""The TRex console profiles load with the real client library's own loader and produce natbench's streams."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")

from natbench.plugins import Directions, Phase2Options
from natbench.testers.trex import program as prg
from natbench.testers.trex.client import load_api
from natbench.testers.trex.streams import to_json
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

PROFILES = Path(__file__).resolve().parent.parent / "profiles"


def load(name: str, direction: int, **tunables: object) -> list[dict[str, object]]:
    api = load_api()
    profile = api.STLProfile.load_py(str(PROFILES / f"{name}.py"), direction=direction, port_id=direction, **tunables)
    return [s.to_json() for s in profile.get_streams()]


@pytest.mark.parametrize("family", ["nat44", "nat64"])
def test_phase1_profile_equals_the_compiler(family: str) -> None:
    got = load(f"{family}_phase1", 0, src_ports="2000-2199", dst_ports="80-84", rate=12345, seed=9)
    plan = TrafficPlan(
        Family(family), AddressPlan.default(Family(family)), PortRange(2000, 2199), PortRange(80, 84), 64, 9
    )
    want = to_json(prg.compile_phase1(plan, 12345.0))["private"]
    assert got == want
    assert got[0]["mode"]["total_pkts"] == 1000
    assert load(f"{family}_phase1", 1, src_ports="2000-2199") == []  # phase 1 is one-way


@pytest.mark.parametrize("family", ["nat44", "nat64"])
def test_phase2_profile_both_directions(family: str) -> None:
    fwd = load(f"{family}_phase2", 0, rate=1000, latency=1)
    rev = load(f"{family}_phase2", 1, rate=1000)
    assert [s["flow_stats"]["enabled"] for s in fwd] == [False, True]
    assert rev and all(i["op"] == "random" for i in rev[0]["vm"]["instructions"] if i["type"] == "flow_var")


def test_phase2_profile_read_mode_from_csv(tmp_path: Path) -> None:
    csv = tmp_path / "maps.csv"
    csv.write_text(
        "public_address,public_port,remote_port,private_port\n198.19.0.1,40001,80,1024\n198.19.0.1,40002,81,1025\n"
    )
    rev = load("nat44_phase2", 1, responder_mode="read", mappings=str(csv), selection="linear")
    lists = [i["value_list"] for i in rev[0]["vm"]["instructions"] if i["type"] == "flow_var"]
    assert lists == [[80, 81], [40001, 40002]]
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1024, 1123),
        PortRange(80, 89),
        64,
        1,
        ResponderMode.READ,
    )
    from natbench.testers.trex.profile import read_mappings

    program = prg.compile_phase2(
        plan, 1e5, Directions.REVERSE, Phase2Options(selection="linear", mappings=read_mappings(str(csv)))
    )
    assert to_json(program)["public"][0]["vm"] == rev[0]["vm"]


def test_profile_help_lists_tunables(capsys: pytest.CaptureFixture[str]) -> None:
    api = load_api()
    assert api.STLProfile.load_py(str(PROFILES / "nat44_phase1.py"), tunables=["--help"]) is None
    out = capsys.readouterr().out
    assert "--src-ports" in out and "--rate" in out
