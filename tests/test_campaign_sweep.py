"""Sweep expansion: order, product x zip, per-DUT and per-metric axes, labels, stable ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from natbench.campaign import load_campaign, parse_campaign
from natbench.campaign.schema import CampaignSpec
from natbench.errors import ConfigError
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode
from natbench.values import format_count, parse_count, parse_port_range

ROOT = Path(__file__).resolve().parent.parent


def campaign(sweep: str, *, traffic: str = "  src_ports: 1-100\n  dst_ports: 1-10\n", extra: str = "") -> str:
    return f"""\
schema_version: 1
name: t
testbed:
  tester: {{kind: software}}
  duts:
    - name: nat
      recipe: iptables-nat44
      access: {{kind: lab}}
      params:
        conntrack_max: 2^20
traffic:
  family: nat44
{traffic}sweep:
{sweep}metrics:
  cps: {{upper: 100k, error: 1k}}
{extra}"""


def test_product_then_zip_order() -> None:
    text = campaign(
        "  product:\n    cores: [1, 2]\n  zip:\n    src_ports: [100, 200, 400]\n    dst_ports: [10, 20, 40]\n",
        traffic="",
    )
    pts = parse_campaign(text, "t.yaml").points()
    assert [(p.cores, len(p.src_ports), len(p.dst_ports)) for p in pts] == [
        (1, 100, 10),
        (1, 200, 20),
        (1, 400, 40),
        (2, 100, 10),
        (2, 200, 20),
        (2, 400, 40),
    ]
    assert [p.index for p in pts] == list(range(6))
    assert [p.label for p in pts] == ["nat-1c-1k", "nat-1c-4k", "nat-1c-16k", "nat-2c-1k", "nat-2c-4k", "nat-2c-16k"]


def test_product_of_two_lists_is_cartesian() -> None:
    text = campaign("  product:\n    cores: [1, 2, 4]\n    duts.nat.hashsize: [2^10, 2^12]\n")
    pts = parse_campaign(text, "t.yaml").points()
    assert [(p.cores, p.dut_params["nat"]["hashsize"]) for p in pts] == [
        (c, h) for c in (1, 2, 4) for h in (1024, 4096)
    ]
    # labels collide on cores + connections, so the varying DUT parameter disambiguates
    assert pts[0].label == "nat-1c-1k-hashsize2^10"
    assert all(p.dut_params["nat"]["conntrack_max"] == 2**20 for p in pts), "base params are kept"


def test_frame_sizes_are_the_outermost_axis_and_label_part() -> None:
    traffic = "  src_ports: 1-100\n  dst_ports: 1-10\n  frame_sizes: [64, 1518]\n"
    text = campaign("  product:\n    cores: [1, 2]\n", traffic=traffic)
    pts = parse_campaign(text, "t.yaml").points()
    assert [(p.frame_size, p.cores) for p in pts] == [(64, 1), (64, 2), (1518, 1), (1518, 2)]
    assert [p.label for p in pts] == ["nat-1c-1k-64B", "nat-2c-1k-64B", "nat-1c-1k-1518B", "nat-2c-1k-1518B"]


def test_same_connections_different_split_gets_a_split_label() -> None:
    text = campaign("  zip:\n    src_ports: [100, 10]\n    dst_ports: [10, 100]\n", traffic="")
    labels = [p.label for p in parse_campaign(text, "t.yaml").points()]
    assert labels == ["nat-1k-100x10", "nat-1k-10x100"]


def test_metric_axis_overrides_per_point_and_changes_the_id() -> None:
    text = campaign("  zip:\n    cores: [1, 2]\n    metrics.cps.error: [100, 1000]\n")
    c = parse_campaign(text, "t.yaml")
    p1, p2 = c.points()
    assert c.settings_for(p1, "cps").error == 100
    assert c.settings_for(p2, "cps").error == 1000
    assert c.metrics["cps"].error == 1000, "the campaign-level setting is unchanged"
    assert p1.metric_settings == {"cps": {"error": 100.0}}


def test_port_range_forms() -> None:
    text = campaign(
        "  zip:\n    src_ports: ['1024-2047', {first: 5000, count: 10}, {first: 7, last: 9}, 2^10]\n",
        traffic="  dst_ports: 1-10\n",
    )
    pts = parse_campaign(text, "t.yaml").points()
    expected = [PortRange(1024, 2047), PortRange(5000, 5009), PortRange(7, 9), PortRange(1, 1024)]
    assert [p.src_ports for p in pts] == expected


def test_traffic_plan_carries_the_point_and_the_defaults() -> None:
    c = parse_campaign(campaign("  product:\n    cores: [1]\n"), "t.yaml")
    p = c.points()[0]
    plan = c.traffic_plan(p)
    assert plan.family is Family.NAT44
    assert plan.addresses == AddressPlan.default(Family.NAT44)
    assert (plan.src_ports, plan.dst_ports, plan.frame_size, plan.seed) == (p.src_ports, p.dst_ports, 64, 1)
    assert plan.responder_mode is ResponderMode.LEARN


def test_nat64_address_overrides() -> None:
    nat64 = "family: nat64\n  addresses: {nat64_prefix: '2001:db8:64::/96'}"
    c = parse_campaign(campaign("  product:\n    cores: [1]\n").replace("family: nat44", nat64), "t.yaml")
    plan = c.traffic_plan(c.points()[0])
    assert str(plan.addresses.initiator) == "2001:2::2"
    assert str(plan.addresses.nat64_prefix) == "2001:db8:64::/96"


def test_resolved_yaml_loads_back_to_the_same_points(tmp_path: Path) -> None:
    c = load_campaign(ROOT / "campaigns" / "seed000-fig4-iptables-connections.yaml")
    again = tmp_path / "campaign.yaml"
    again.write_text(c.to_yaml())
    c2 = load_campaign(again)
    assert [p.id for p in c2.points()] == [p.id for p in c.points()]
    assert [p.label for p in c2.points()] == [p.label for p in c.points()]


def test_ids_are_identical_in_another_process() -> None:
    path = ROOT / "campaigns" / "seed004-table9-mapt-split-connections.yaml"
    code = (
        "import json,sys; from natbench.campaign import load_campaign;"
        "print(json.dumps([[p.id, p.label] for p in load_campaign(sys.argv[1]).points()]))"
    )
    env_free = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, env=env_free
    )
    here = [[p.id, p.label] for p in load_campaign(path).points()]
    assert json.loads(out.stdout) == here


def test_every_schema_field_has_a_description() -> None:
    schema = CampaignSpec.model_json_schema()
    missing = []

    def walk(name: str, node: dict) -> None:
        for field, spec in node.get("properties", {}).items():
            if not spec.get("description"):
                missing.append(f"{name}.{field}")

    walk("CampaignSpec", schema)
    for name, node in schema.get("$defs", {}).items():
        walk(name, node)
    assert not missing


@given(st.integers(min_value=0, max_value=62))
def test_power_notation(e: int) -> None:
    assert parse_count(f"2^{e}") == 2**e
    assert parse_count(f"2**{e}") == 2**e
    assert parse_count(format_count(2**e).replace(",", "")) == 2**e


@given(st.integers(min_value=1, max_value=65535), st.integers(min_value=0, max_value=65534))
def test_port_range_text_round_trips(first: int, span: int) -> None:
    last = min(65535, first + span)
    r = parse_port_range(f"{first}-{last}")
    assert r == PortRange(first, last)
    assert parse_port_range(str(r)) == r
    assert parse_port_range({"first": first, "count": last - first + 1}) == r


@pytest.mark.parametrize(
    ("text", "value"), [("200k", 200_000), ("7.44M", 7_440_000), ("1G", 10**9), ("8_388_608", 8388608)]
)
def test_si_suffixes(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("bad", ["1.5", "2^", "x", True, "70000-1", {"first": 1}])
def test_bad_numbers_and_ranges(bad: object) -> None:
    with pytest.raises(ValueError):
        if isinstance(bad, dict) or (isinstance(bad, str) and "-" in bad):
            parse_port_range(bad)
        else:
            parse_count(bad)


@given(
    cores=st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True),
    frames=st.lists(st.sampled_from([64, 128, 256, 512, 1024, 1280, 1518]), min_size=1, max_size=3, unique=True),
    columns=st.lists(
        st.tuples(st.integers(1, 300), st.integers(1, 300), st.sampled_from([10, 12, 14, 16])),
        min_size=1,
        max_size=4,
        unique=True,
    ),
)
def test_any_sweep_gives_unique_labels_and_ids(
    cores: list[int], frames: list[int], columns: list[tuple[int, int, int]]
) -> None:
    src = [c[0] for c in columns]
    dst = [c[1] for c in columns]
    hs = [f"2^{c[2]}" for c in columns]
    sweep = (
        f"  product:\n    cores: {cores}\n"
        f"  zip:\n    src_ports: {src}\n    dst_ports: {dst}\n    duts.nat.hashsize: [{', '.join(hs)}]\n"
    )
    text = campaign(sweep, traffic=f"  frame_sizes: {frames}\n")
    pts = parse_campaign(text, "t.yaml").points()
    assert len(pts) == len(frames) * len(cores) * len(columns)
    assert len({p.label for p in pts}) == len(pts)
    assert len({p.id for p in pts}) == len(pts)
    first = pts[0]
    assert (first.frame_size, first.cores, len(first.src_ports)) == (frames[0], cores[0], src[0])


def test_no_sweep_is_one_point() -> None:
    text = campaign("  {}\n").replace("sweep:\n  {}\n", "")
    pts = parse_campaign(text, "t.yaml").points()
    assert len(pts) == 1
    assert pts[0].label == "nat-1k"
    assert pts[0].cores is None and pts[0].swept_dut is None


def test_frame_size_axis_and_conflict_with_frame_sizes() -> None:
    pts = parse_campaign(campaign("  product:\n    frame_size: [64, 1280]\n"), "t.yaml").points()
    assert [p.frame_size for p in pts] == [64, 1280]
    assert [p.label for p in pts] == ["nat-1k-64B", "nat-1k-1280B"]
    both = campaign(
        "  product:\n    frame_size: [64, 128]\n",
        traffic="  src_ports: 1-100\n  dst_ports: 1-10\n  frame_sizes: [64]\n",
    )
    with pytest.raises(ConfigError, match=r"also set in traffic\.frame_sizes"):
        parse_campaign(both, "t.yaml")


def test_cores_of_several_duts() -> None:
    text = """\
schema_version: 1
testbed:
  tester: {kind: software}
  duts:
    - {name: clat, recipe: jool-siit, role: clat, cores: 32, access: {kind: local}}
    - {name: plat, recipe: jool-nat64, role: plat, access: {kind: local}}
traffic: {family: nat44, src_ports: 1-4000, dst_ports: 1-1000}
sweep:
  cores_dut: CORES
  product: {cores: [1, 16]}
metrics:
  cps: {upper: 1M, error: 1k}
"""
    one = parse_campaign(text.replace("CORES", "plat"), "t.yaml")
    assert [(p.swept_dut, p.co_swept_duts, p.cores) for p in one.points()] == [("plat", (), 1), ("plat", (), 16)]
    assert one.points()[0].label == "plat-1c-4M"
    both = parse_campaign(text.replace("CORES", "[clat, plat]"), "t.yaml")
    assert [(p.swept_dut, p.co_swept_duts) for p in both.points()] == [("clat", ("plat",)), ("clat", ("plat",))]
    assert both.points()[0].label == "t-1c-4M", "no label and several DUTs: the campaign name"
    assert {p.id for p in both.points()}.isdisjoint({p.id for p in one.points()})
    with pytest.raises(ConfigError, match="no DUT named 'pe'"):
        parse_campaign(text.replace("CORES", "pe"), "t.yaml")
