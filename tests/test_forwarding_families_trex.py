"""The TRex compiler and console profiles for families ipv6 and ipv4 (plain forwarding), checked offline against
the real TRex client library."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from natbench.plugins import Directions, Mapping, Phase2Options
from natbench.testers.trex import program as prg
from natbench.testers.trex.client import load_api
from natbench.testers.trex.streams import build_stream, to_json
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

try:
    import lbr_trex_client
except ImportError:  # the 'trex' extra: only the tests that compile streams to TRex objects need it
    lbr_trex_client = None

needs_trex_client = pytest.mark.skipif(
    lbr_trex_client is None, reason="the TRex client library (the 'trex' extra) is not installed"
)

PROFILES = Path(__file__).resolve().parent.parent / "profiles"
V6 = ipaddress.IPv6Address


def ipv6_plan(selection_seed: int = 5) -> TrafficPlan:
    return TrafficPlan(
        Family.IPV6,
        AddressPlan.default(Family.IPV6),
        PortRange(1024, 2023),
        PortRange(80, 89),
        64,
        selection_seed,
        ResponderMode.COMPUTE,
    )


def packet(stream_plan: prg.StreamPlan) -> bytes:
    """The frame the real client library builds for a compiled stream."""
    return bytes(build_stream(stream_plan).get_pkt())


def ipv6_fields(pkt: bytes) -> tuple[int, V6, V6, int, int, int]:
    """(ethertype, src, dst, next header, hop limit, payload length)."""
    return (
        int.from_bytes(pkt[12:14], "big"),
        V6(pkt[22:38]),
        V6(pkt[38:54]),
        pkt[20],
        pkt[21],
        int.from_bytes(pkt[18:20], "big"),
    )


def flow_vars(stream: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in stream["vm"]["instructions"] if i["type"] == "flow_var"]


@needs_trex_client
def test_phase2_bidirectional_ipv6_both_ways_with_latency() -> None:
    plan = ipv6_plan()
    program = prg.compile_phase2(plan, 1e5, Directions.BIDIRECTIONAL, Phase2Options(latency=True, latency_rate=1000))
    fwd = program.on(prg.Port.PRIVATE)
    rev = program.on(prg.Port.PUBLIC)
    assert [s.direction for s in fwd] == [prg.Direction.FORWARD] * 2
    assert [s.direction for s in rev] == [prg.Direction.REVERSE] * 2
    # 84-byte IPv6 frames (80 bytes without FCS) on both ports, no NAT64 prefix anywhere
    for s in (*fwd, *rev):
        assert s.frame.frame_size == 84 and s.frame.ip_version == 6
    f_eth, f_src, f_dst, f_nh, f_hlim, f_plen = ipv6_fields(packet(fwd[0]))
    r_eth, r_src, r_dst, r_nh, r_hlim, r_plen = ipv6_fields(packet(rev[0]))
    assert (f_eth, f_src, f_dst, f_nh, f_hlim) == (0x86DD, V6("2001:2::2"), V6("2001:2:0:1::2"), 17, 64)
    assert (r_eth, r_src, r_dst, r_nh, r_hlim) == (0x86DD, V6("2001:2:0:1::2"), V6("2001:2::2"), 17, 64)
    assert len(packet(fwd[0])) == len(packet(rev[0])) == 80 and f_plen == r_plen == 80 - 54
    # port variables at the IPv6 UDP offsets; reverse = Responder port -> Initiator's own source port
    j = to_json(program)
    rev_json = j["public"][0]
    sp, dp = flow_vars(rev_json)
    assert (sp["min_value"], sp["max_value"]) == (80, 89)
    assert (dp["min_value"], dp["max_value"]) == (1024, 2023)
    writes = {w["name"]: w["pkt_offset"] for w in rev_json["vm"]["instructions"] if w["type"] == "write_mask_flow_var"}
    assert writes == {sp["name"]: 54, dp["name"]: 56}
    # the NIC latency filters see untranslated IPv6 (flow label intact): no --software note, unlike NAT64
    assert program.notes == ()
    assert [s["flow_stats"]["enabled"] for s in j["private"]] == [False, True]
    assert program.rate(prg.Port.PRIVATE) == program.rate(prg.Port.PUBLIC) == 1e5


@needs_trex_client
@pytest.mark.parametrize("selection", ["linear", "fixed"])
def test_phase2_other_selections_address_the_initiator(selection: str) -> None:
    program = prg.compile_phase2(ipv6_plan(), 1e4, Directions.REVERSE, Phase2Options(selection=selection))
    (rev,) = program.on(prg.Port.PUBLIC)
    assert ipv6_fields(packet(rev))[1:3] == (V6("2001:2:0:1::2"), V6("2001:2::2"))


def test_reading_mappings_is_refused_without_translation() -> None:
    plan = TrafficPlan(
        Family.IPV6, AddressPlan.default(Family.IPV6), PortRange(1024, 1033), PortRange(80, 80), 64, 1,
        ResponderMode.READ,
    )  # fmt: skip
    maps = (Mapping("2001:2:0:1::1", 1024, 80, 1024),)
    with pytest.raises(ValueError, match="no DUT mappings to read"):
        prg.compile_phase2(plan, 1e4, Directions.REVERSE, Phase2Options(mappings=maps))


@needs_trex_client
def test_ipv6_phase2_console_profile_equals_the_compiler() -> None:
    api = load_api()
    got = {}
    for direction in (0, 1):
        profile = api.STLProfile.load_py(
            str(PROFILES / "ipv6_phase2.py"),
            direction=direction,
            port_id=direction,
            src_ports="1024-2023",
            dst_ports="80-89",
            rate=1e5,
            seed=5,
        )
        got[direction] = [s.to_json() for s in profile.get_streams()]
    want = to_json(prg.compile_phase2(ipv6_plan(), 1e5, Directions.BIDIRECTIONAL, Phase2Options()))
    assert got[0] == want["private"] and got[1] == want["public"]
    assert got[0] and got[1]


@needs_trex_client
def test_ipv4_phase2_profile_sends_reverse_frames_to_the_initiator() -> None:
    api = load_api()
    profile = api.STLProfile.load_py(str(PROFILES / "ipv4_phase2.py"), direction=1, port_id=1, rate=1e4)
    (stream,) = profile.get_streams()
    pkt = bytes(stream.get_pkt())
    assert pkt[12:14] == b"\x08\x00" and len(pkt) == 60
    src, dst = ipaddress.IPv4Address(pkt[26:30]), ipaddress.IPv4Address(pkt[30:34])
    assert (src, dst) == (ipaddress.IPv4Address("198.19.0.2"), ipaddress.IPv4Address("198.18.0.2"))
    plan = TrafficPlan(
        Family.IPV4, AddressPlan.default(Family.IPV4), PortRange(1024, 1123), PortRange(80, 89), 64, 1,
        ResponderMode.COMPUTE,
    )  # fmt: skip
    want = to_json(prg.compile_phase2(plan, 1e4, Directions.BIDIRECTIONAL, Phase2Options()))["public"]
    assert [stream.to_json()] == want
