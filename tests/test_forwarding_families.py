"""The forwarding families ``ipv6`` (plain IPv6 forwarding, seed 004 Table 3) and ``ipv4`` (its twin, Table 2):
plan, frames, campaign, CLI, recipe, experiments."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from natbench.campaign import Campaign, load_campaign
from natbench.cli import cli
from natbench.duts.recipes import load_recipe
from natbench.errors import ConfigError, RecipeError
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan, wire_frame_sizes
from natbench.traffic.frames import FLAG_PHASE2, FLAG_REVERSE, build_frame, parse_frame, verify_checksums

ROOT = Path(__file__).resolve().parent.parent
TABLE3 = ROOT / "campaigns" / "seed004-table3-ipv6-forwarding.yaml"
V6 = ipaddress.IPv6Address


def plan(family: Family, frame_size: int = 64, **addresses: object) -> TrafficPlan:
    a = dataclasses.replace(AddressPlan.default(family), **addresses)  # type: ignore[arg-type]
    return TrafficPlan(family, a, PortRange(1024, 1123), PortRange(80, 89), frame_size, 1, ResponderMode.COMPUTE)


# ------------------------------------------------------------------------------------------ traffic plan


def test_family_properties() -> None:
    assert [f.value for f in Family] == ["nat44", "nat64", "ipv6", "ipv4"]
    table = {f: (f.translates, f.private_ipv6, f.public_ipv6) for f in Family}
    assert table == {
        Family.NAT44: (True, False, False),
        Family.NAT64: (True, True, False),
        Family.IPV6: (False, True, True),
        Family.IPV4: (False, False, False),
    }


def test_ipv4_twin_is_nat44_addressing_without_translation() -> None:
    p = plan(Family.IPV4)
    assert p.addresses == AddressPlan.default(Family.NAT44)
    assert (p.private_frame_size, p.public_frame_size) == (64, 64)
    assert p.forward_destination == ipaddress.IPv4Address("198.19.0.2")
    # the difference to nat44: a router does not answer for the Initiator, so reverse frames go to it
    assert p.reverse_destination == ipaddress.IPv4Address("198.18.0.2")


def test_default_ipv6_plan_uses_two_rfc5180_slash64s() -> None:
    a = AddressPlan.default(Family.IPV6)
    bench = ipaddress.IPv6Network("2001:2::/48")
    private = ipaddress.IPv6Network(f"{a.dut_private}/{a.private_prefixlen}", strict=False)
    public = ipaddress.IPv6Network(f"{a.dut_public}/{a.public_prefixlen}", strict=False)
    assert (str(private), str(public)) == ("2001:2::/64", "2001:2:0:1::/64")
    assert private.subnet_of(bench) and public.subnet_of(bench) and not private.overlaps(public)
    assert a.initiator in private and a.responder in public
    assert (a.initiator, a.dut_private, a.dut_public, a.responder) == (
        V6("2001:2::2"),
        V6("2001:2::1"),
        V6("2001:2:0:1::1"),
        V6("2001:2:0:1::2"),
    )


def test_ipv6_frames_are_84_bytes_on_both_sides() -> None:
    p = plan(Family.IPV6)
    assert (p.private_frame_size, p.public_frame_size) == (84, 84)
    assert wire_frame_sizes(Family.IPV6, 1518) == (1538, 1538)
    # the other families are unchanged
    assert (plan(Family.NAT44).private_frame_size, plan(Family.NAT44).public_frame_size) == (64, 64)
    assert (plan(Family.NAT64).private_frame_size, plan(Family.NAT64).public_frame_size) == (84, 64)


def test_destinations_without_translation() -> None:
    p = plan(Family.IPV6)
    # forward: straight to the Responder (no NAT64 prefix); reverse: straight back to the Initiator
    assert p.forward_destination == V6("2001:2:0:1::2")
    assert p.reverse_destination == V6("2001:2::2")
    # nat44 / nat64 keep sending reverse frames to the DUT's public address, nat64 forward to the prefix
    assert plan(Family.NAT44).reverse_destination == ipaddress.IPv4Address("198.19.0.1")
    assert plan(Family.NAT64).reverse_destination == ipaddress.IPv4Address("198.19.0.1")
    assert plan(Family.NAT64).forward_destination == V6("64:ff9b::c613:2")
    assert plan(Family.NAT44).forward_destination == ipaddress.IPv4Address("198.19.0.2")


def test_frames_of_both_directions_are_ipv6_with_valid_checksums() -> None:
    p = plan(Family.IPV6)
    a = p.addresses
    macs = {"src_mac": "02:4e:42:00:00:01", "dst_mac": "02:4e:42:00:00:02"}
    fwd = build_frame(
        **macs, src=a.initiator, dst=p.forward_destination, sport=1024, dport=80, frame_size=p.private_frame_size
    )
    rev = build_frame(
        **macs,
        src=a.responder,
        dst=p.reverse_destination,
        sport=80,
        dport=1024,
        frame_size=p.public_frame_size,
        flags=FLAG_PHASE2 | FLAG_REVERSE,
    )
    for frame in (fwd, rev):
        assert len(frame) == 84 - 4  # FCS is added by the NIC / veth
        assert frame[12:14] == b"\x86\xdd" and verify_checksums(frame)
    f, r = parse_frame(fwd), parse_frame(rev)
    assert f is not None and r is not None
    assert (f.ipv6, f.src, f.dst, f.sport, f.dport) == (True, V6("2001:2::2"), V6("2001:2:0:1::2"), 1024, 80)
    assert (r.ipv6, r.src, r.dst, r.sport, r.dport) == (True, V6("2001:2:0:1::2"), V6("2001:2::2"), 80, 1024)
    assert r.flags & FLAG_REVERSE


def test_c_data_path_fills_the_ipv6_reverse_template() -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    p = plan(Family.IPV6)
    macs = {"src_mac": "02:4e:42:00:00:03", "dst_mac": "02:4e:42:00:00:04"}
    base = {"src": p.addresses.responder, "dst": p.reverse_destination, "frame_size": p.public_frame_size}
    template = build_frame(**macs, **base, sport=0, dport=0)  # type: ignore[arg-type]
    flags = FLAG_PHASE2 | FLAG_REVERSE
    want = build_frame(**macs, **base, sport=89, dport=1123, tag=7, seq=42, stamp=123456789, flags=flags)  # type: ignore[arg-type]
    assert engine.build(template, True, 89, 1123, 7, 42, 123456789, flags) == want


# ------------------------------------------------------------------------------------------ campaigns


def small(**traffic: object) -> dict[str, object]:
    return {
        "schema_version": 1,
        "testbed": {
            "tester": {"kind": "software"},
            "duts": [{"name": "router", "recipe": "linux-forwarding", "access": {"kind": "lab"}}],
        },
        "traffic": {"family": "ipv6", "src_ports": "1-100", "dst_ports": "1-10", **traffic},
        "metrics": {"forwarding": {"upper": "100k", "error": "1k", "duration": 1}},
    }


def test_ipv6_campaign_defaults_and_traffic_plan() -> None:
    c = Campaign.from_dict(small())
    (point,) = c.points()
    tp = c.traffic_plan(point)
    assert tp.family is Family.IPV6 and tp.addresses == AddressPlan.default(Family.IPV6)
    assert c.responder_mode is ResponderMode.COMPUTE  # nothing to learn or read: no translation
    assert (tp.private_frame_size, tp.public_frame_size) == (84, 84)


def test_ipv6_address_overrides_reach_the_plan() -> None:
    c = Campaign.from_dict(
        small(
            addresses={
                "initiator": "2001:2:0:10::2",
                "dut_private": "2001:2:0:10::1",
                "responder": "2001:2:0:20::2",
                "dut_public": "2001:2:0:20::1",
                "public_prefixlen": 64,
            }
        )
    )
    tp = c.traffic_plan(c.points()[0])
    assert tp.forward_destination == V6("2001:2:0:20::2") and tp.reverse_destination == V6("2001:2:0:10::2")
    assert tp.addresses.dut_public == V6("2001:2:0:20::1") and tp.addresses.public_prefixlen == 64


@pytest.mark.parametrize("metric", ["cps", "throughput", "frame_loss", "latency", "pdv", "teardown", "capacity",
                                    "validation"])  # fmt: skip
def test_every_stateful_metric_is_refused_with_family_ipv6(metric: str) -> None:
    settings: dict[str, dict[str, object]] = {
        "cps": {"upper": "100k", "error": "1k"},
        "throughput": {"upper": "100k", "error": "1k", "fill_rate": "10k"},
        "frame_loss": {"rates": ["10k"], "fill_rate": "10k"},
        "latency": {"rate": "10k", "fill_rate": "10k"},
        "pdv": {"rate": "10k", "fill_rate": "10k"},
        "teardown": {"fill_rate": "10k"},
        "capacity": {"upper": "100k", "error": "1k", "min_connections": 1000, "max_connections": 4000,
                     "connection_error": 100},
        "validation": {"rate": "10k"},
    }  # fmt: skip
    data = small()
    data["metrics"] = {metric: settings[metric]}
    with pytest.raises(ConfigError) as info:
        Campaign.from_dict(data)
    assert info.value.field == f"metrics.{metric}"
    assert "stateful DUT" in info.value.message and "use forwarding" in info.value.message


def test_ipv4_twin_refuses_stateful_metrics_and_ipv6_addresses() -> None:
    data = small(family="ipv4")
    data["metrics"] = {"throughput": {"upper": "100k", "error": "1k", "fill_rate": "10k"}}
    with pytest.raises(ConfigError, match=r"traffic\.family ipv4 is plain forwarding") as info:
        Campaign.from_dict(data)
    assert info.value.field == "metrics.throughput"
    with pytest.raises(ConfigError, match="initiator must be an IPv4 address for family ipv4"):
        Campaign.from_dict(small(family="ipv4", addresses={"initiator": "2001:2::2"}))
    c = Campaign.from_dict(small(family="ipv4"))
    assert c.traffic_plan(c.points()[0]).reverse_destination == ipaddress.IPv4Address("198.18.0.2")


def test_stateful_metric_error_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "fwd6.yaml"
    text = TABLE3.read_text().replace("metrics:\n", "metrics:\n  cps: {upper: 1M, error: 1k}\n", 1)
    path.write_text(text)
    line = text.splitlines().index("  cps: {upper: 1M, error: 1k}") + 1
    with pytest.raises(ConfigError) as info:
        load_campaign(path)
    err = info.value
    assert (err.file, err.line, err.field) == (str(path), line, "metrics.cps")
    assert str(err).startswith(f"{path}:{line}: metrics.cps: metric cps needs a stateful DUT")


def test_nat44_and_nat64_address_rules_are_kept() -> None:
    data = small()
    data["traffic"] = {"family": "nat64", "src_ports": "1-100", "dst_ports": "1-10",
                       "addresses": {"responder": "2001:2:0:1::2"}}  # fmt: skip
    data["metrics"] = {"cps": {"upper": "100k", "error": "1k"}}
    with pytest.raises(ConfigError, match="responder must be an IPv4 address for family nat64"):
        Campaign.from_dict(data)
    data["traffic"] = {"family": "ipv6", "src_ports": "1-100", "dst_ports": "1-10",
                       "addresses": {"nat64_prefix": "64:ff9b::/96"}}  # fmt: skip
    data["metrics"] = {"forwarding": {"upper": "100k", "error": "1k"}}
    with pytest.raises(ConfigError, match="nat64_prefix applies to family nat64 only"):
        Campaign.from_dict(data)


def test_role_nat44_does_not_fit_family_ipv6() -> None:
    data = small()
    data["testbed"]["duts"][0]["role"] = "nat44"  # type: ignore[index]
    with pytest.raises(ConfigError, match=r"role nat44 needs traffic\.family nat44"):
        Campaign.from_dict(data)


# ------------------------------------------------------------------------------------------ seed 004 Table 3


def test_table3_campaign_mirrors_table2() -> None:
    t3 = load_campaign(TABLE3)
    t2 = load_campaign(ROOT / "campaigns" / "seed004-table2-ipv4-forwarding.yaml")
    assert t3.traffic.family is Family.IPV6 and t2.traffic.family is Family.IPV4
    assert [p.cores for p in t3.points()] == [p.cores for p in t2.points()] == [1, 2, 4, 8, 16]
    assert list(t3.metrics) == list(t2.metrics) == ["forwarding"]
    f3, f2 = t3.metrics["forwarding"], t2.metrics["forwarding"]
    assert f3.repetitions == f2.repetitions == 20
    assert t3.traffic.acceptance == t2.traffic.acceptance == 0.0001  # 99.99 %
    assert t3.traffic.directions == t2.traffic.directions  # bidirectional, RFC 8219
    assert (f3.duration, f3.error) == (f2.duration, f2.error)
    assert t3.responder_mode is ResponderMode.COMPUTE
    for p in t3.points():
        assert p.connections == 4_000_000 and p.co_swept_duts == ("dut2",)
        tp = t3.traffic_plan(p)
        assert (tp.frame_size, tp.private_frame_size, tp.public_frame_size) == (64, 84, 84)
    # the two routers route to each other's far side
    d1, d2 = (t3.dut(n).params for n in ("dut1", "dut2"))
    assert (d1["route_to"], d1["route_via"]) == ("2001:2:0:1::/64", d2["private_address"].split("/")[0])
    assert (d2["private_route_to"], d2["private_route_via"]) == ("2001:2::/64", d1["public_address"].split("/")[0])
    e1, e2 = (t2.dut(n).params for n in ("dut1", "dut2"))
    assert (e1["route_to"], e1["route_via"]) == ("198.19.0.0/24", e2["private_address"].split("/")[0])
    assert (e2["private_route_to"], e2["private_route_via"]) == ("198.18.0.0/24", e1["public_address"].split("/")[0])


@pytest.mark.parametrize("name", ["seed004-table2-ipv4-forwarding", "seed000-fig2-forwarding-cores"])
def test_ipv4_forwarding_baselines_address_reverse_frames_to_the_initiator(name: str) -> None:
    c = load_campaign(ROOT / "campaigns" / f"{name}.yaml")
    assert c.traffic.family is Family.IPV4 and c.responder_mode is ResponderMode.COMPUTE
    tp = c.traffic_plan(c.points()[0])
    assert tp.reverse_destination == tp.addresses.initiator != tp.addresses.dut_public


def test_validate_and_plan_table3() -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["validate", str(TABLE3)])
    assert r.exit_code == 0, r.output
    assert "5 working points" in r.output
    r = runner.invoke(cli, ["plan", "--format", "plain", str(TABLE3)])
    assert r.exit_code == 0, r.output
    assert "traffic: ipv6, bidirectional, acceptance 0.0001 loss" in r.output
    rows = [line for line in r.output.splitlines() if line.startswith(tuple("01234"))]
    assert len(rows) == 5 and all("84 (IPv6)" in row for row in rows)
    r = runner.invoke(cli, ["plan", "--format", "json", str(TABLE3)])
    data = json.loads(r.output)
    assert {tuple(p["wire_frame_sizes"]) for p in data["points"]} == {(84, 84)}
    assert [p["cores"] for p in data["points"]] == [1, 2, 4, 8, 16]


# ------------------------------------------------------------------------------------------ recipe


def test_linux_forwarding_routes_both_ways() -> None:
    r = load_recipe("linux-forwarding")
    params = {"private_if": "enp5s0f0", "public_if": "enp5s0f1", "public_address": "2001:2:0:100::1/64",
              "route_to": "2001:2:0:1::/64", "route_via": "2001:2:0:100::2"}  # fmt: skip
    setup = r.render("setup", params)
    assert "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding" in setup
    assert "ip route replace 2001:2:0:1::/64 via 2001:2:0:100::2 dev enp5s0f1" in setup
    assert not any("route" in c and "dev enp5s0f0" in c for c in setup)  # private_route_to unset: no route
    teardown = r.render("teardown", params)
    assert "ip route del 2001:2:0:1::/64 via 2001:2:0:100::2 dev enp5s0f1" in teardown
    params = {"private_if": "a", "public_if": "b", "private_route_to": "198.18.0.0/24", "private_route_via": "10.0.0.1"}
    assert "ip route replace 198.18.0.0/24 via 10.0.0.1 dev a" in r.render("setup", params)
    with pytest.raises(RecipeError, match="route_to needs route_via"):
        r.resolve({"private_if": "a", "public_if": "b", "route_to": "2001:2:0:1::/64"})


def test_pytest_experiments_accept_a_family_ipv6_testbed(tmp_path: Path) -> None:
    """The session campaign an experiment builds its testbed from must be valid for a stateless family."""
    from natbench.run.experiment import Experiment
    from natbench.testbed.file import load_testbed
    from natbench.testing import FakeDut, FakeModel, FakeTester

    tb = load_testbed(TABLE3)
    assert tb.family == "ipv6"
    dut = FakeDut(FakeModel(nat=False, stateless_forwarding=300_000))
    with Experiment(tb, tmp_path / "res", tester=FakeTester(dut), dut=dut) as exp:
        session = exp.session_campaign()
        assert session.traffic.family is Family.IPV6 and list(session.metrics) == ["forwarding"]
        m = exp.measure("forwarding", connections="4k", repetitions=1, upper="1M", error="10k")
        assert 300_000 - 10_000 <= m.median <= 300_000
