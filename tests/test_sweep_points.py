"""Sweep expansion, point by point: every field, the id, the label and the order, worked out by hand."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import yaml
from sweep_campaigns import TWO_DUTS, campaign, load

from natbench.campaign import Campaign
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

BASE = {"conntrack_max": 1_048_576}  # the campaign's 2^20


def expected_id(params: dict[str, Any]) -> str:
    """A point's id by its definition: the first 12 hex digits of SHA-256 of the canonical JSON of its params."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def test_product_times_zip_gives_every_field_of_every_point() -> None:
    body = (
        "  product:\n    cores: [1, 2]\n"
        "  zip:\n    src_ports: [100, '1001-1200']\n    dst_ports: [10, {first: 5000, count: 20}]\n"
    )
    pts = load(body).points()

    def wp(i: int, cores: int, src: PortRange, dst: PortRange) -> WorkingPoint:
        return WorkingPoint(i, src, dst, 64, cores, {"nat": BASE}, swept_dut="nat", name="nat")

    s1, d1 = PortRange(1, 100), PortRange(1, 10)  # 100 x 10 = 1000 connections
    s2, d2 = PortRange(1001, 1200), PortRange(5000, 5019)  # 200 x 20 = 4000
    assert pts == [wp(0, 1, s1, d1), wp(1, 1, s2, d2), wp(2, 2, s1, d1), wp(3, 2, s2, d2)]
    assert [p.label for p in pts] == ["nat-1c-1k", "nat-1c-4k", "nat-2c-1k", "nat-2c-4k"]
    first = {
        "src_ports": [1, 100],
        "dst_ports": [1, 10],
        "frame_size": 64,
        "cores": 1,
        "dut_params": {"nat": {"conntrack_max": 1_048_576}},
        "swept_dut": "nat",
    }
    assert pts[0].id == expected_id(first)
    last = {**first, "src_ports": [1001, 1200], "dst_ports": [5000, 5019], "cores": 2}
    assert pts[3].id == expected_id(last)


def test_a_frame_size_and_dut_parameter_zip() -> None:
    pts = load("  zip:\n    frame_size: [64, 1518]\n    duts.nat.hashsize: [2^10, 1000]\n").points()
    r1, r2 = PortRange(1, 100), PortRange(1, 10)
    assert pts == [
        WorkingPoint(0, r1, r2, 64, None, {"nat": {**BASE, "hashsize": 1024}}, name="nat", tag="64B"),
        WorkingPoint(1, r1, r2, 1518, None, {"nat": {**BASE, "hashsize": 1000}}, name="nat", tag="1518B"),
    ]
    # both points have 1000 connections: the frame size, the first part that varies, tells them apart
    assert [p.label for p in pts] == ["nat-1k-64B", "nat-1k-1518B"]
    assert pts[1].id == expected_id(
        {
            "src_ports": [1, 100],
            "dst_ports": [1, 10],
            "frame_size": 1518,
            "cores": None,
            "dut_params": {"nat": {"conntrack_max": 1_048_576, "hashsize": 1000}},
            "swept_dut": None,
        }
    )


def test_the_only_duts_fixed_cores_are_the_points_cores() -> None:
    duts = "[{name: nat, recipe: iptables-nat44, access: {kind: lab}, cores: 8}]"
    (p,) = load("  {}\n", duts=duts).points()
    assert (p.cores, p.swept_dut, p.co_swept_duts, p.label) == (8, "nat", (), "nat-8c-1k")


def test_several_duts_without_swept_cores_leave_cores_alone() -> None:
    pts = load("  product: {duts.plat.pool: [a, b]}\n", duts=TWO_DUTS).points()
    assert [(p.cores, p.swept_dut, p.co_swept_duts) for p in pts] == [(None, None, ()), (None, None, ())]
    assert [p.dut_params for p in pts] == [{"clat": {}, "plat": {"pool": "a"}}, {"clat": {}, "plat": {"pool": "b"}}]
    # no label and several DUTs: the campaign name; the DUT parameter tells the points apart
    assert [p.label for p in pts] == ["t-1k-poola", "t-1k-poolb"]


def test_cores_dut_list_without_swept_cores_takes_the_first_duts_cores() -> None:
    with_cores = TWO_DUTS.replace("role: clat,", "role: clat, cores: 4,")
    (p,) = load("  cores_dut: [clat, plat]\n", duts=with_cores).points()
    assert (p.cores, p.swept_dut, p.co_swept_duts, p.label) == (4, "clat", ("plat",), "t-4c-1k")
    (p,) = load("  cores_dut: [clat, plat]\n", duts=TWO_DUTS).points()
    assert (p.cores, p.swept_dut, p.co_swept_duts, p.label) == (None, None, (), "t-1k")


def test_same_split_different_ranges_get_the_ranges_in_the_label() -> None:
    # 100 x 10 both times, so neither the frame size (constant) nor the split (100x10 twice) helps
    pts = load("  zip:\n    src_ports: ['1-100', '101-200']\n").points()
    assert [p.label for p in pts] == ["nat-1k-1-100x1-10", "nat-1k-101-200x1-10"]


def test_dut_parameter_values_in_labels() -> None:
    values = "[true, false, null, 2^10, 1000, 512, 1.5, 2.0, snat]"
    pts = load(f"  product:\n    duts.nat.x: {values}\n").points()
    assert [p.dut_params["nat"]["x"] for p in pts] == [True, False, None, 1024, 1000, 512, 1.5, 2.0, "snat"]
    # bools and null in lower case, powers of two from 2^10 as powers, floats without a needless '.0'
    tags = ["xtrue", "xfalse", "xnone", "x2^10", "x1000", "x512", "x1.5", "x2", "xsnat"]
    assert [p.label for p in pts] == [f"nat-1k-{t}" for t in tags]


def test_a_power_of_two_dut_parameter_that_varies_is_written_as_a_power() -> None:
    pts = load("  product:\n    duts.nat.conntrack_max: [2^20, 2^23, 3000000]\n").points()
    assert [p.label for p in pts] == [
        "nat-1k-conntrack_max2^20",
        "nat-1k-conntrack_max2^23",
        "nat-1k-conntrack_max3000000",
    ]


def test_a_metric_axis_overrides_per_point_and_labels_with_the_metric() -> None:
    c = load("  product:\n    metrics.cps.error: [100, 1.5k]\n")
    pts = c.points()
    assert [p.metric_settings for p in pts] == [{"cps": {"error": 100.0}}, {"cps": {"error": 1500.0}}]
    assert [p.label for p in pts] == ["nat-1k-cps.error100", "nat-1k-cps.error1500"]
    assert [(c.settings_for(p, "cps").error, c.settings_for(p, "cps").upper) for p in pts] == [
        (100.0, 100_000.0),
        (1500.0, 100_000.0),
    ]
    assert c.settings_for(pts[0], "cps") is not c.metrics["cps"]
    assert pts[0].id == expected_id(
        {
            "src_ports": [1, 100],
            "dst_ports": [1, 10],
            "frame_size": 64,
            "cores": None,
            "dut_params": {"nat": {"conntrack_max": 1_048_576}},
            "swept_dut": None,
            "metric_settings": {"cps": {"error": 100.0}},
        }
    )


def test_a_point_without_overrides_uses_the_campaigns_metric_settings() -> None:
    c = load("  product: {cores: [1]}\n")
    (p,) = c.points()
    assert p.metric_settings == {}
    assert c.settings_for(p, "cps") is c.metrics["cps"]


def test_label_parts_are_added_until_labels_are_unique() -> None:
    # a alone leaves pairs equal (a1, a1, a2, a2): b is added to every label too
    pts = load("  product:\n    duts.nat.a: [1, 2]\n    duts.nat.b: [3, 4]\n").points()
    assert [p.label for p in pts] == ["nat-1k-a1-b3", "nat-1k-a1-b4", "nat-1k-a2-b3", "nat-1k-a2-b4"]
    assert [p.tag for p in pts] == ["a1-b3", "a1-b4", "a2-b3", "a2-b4"]


def test_label_parts_stop_at_the_first_that_makes_labels_unique() -> None:
    # parameters are tried in name order: a before b, and a is enough
    pts = load("  zip:\n    duts.nat.b: [1, 2]\n    duts.nat.a: [3, 4]\n").points()
    assert [p.label for p in pts] == ["nat-1k-a3", "nat-1k-a4"]


def test_labels_are_unique_as_written_even_when_parameter_values_contain_dashes() -> None:
    # after a and b the first two labels read the same, 'nat-1k-ap-b-bq' ('ap-b' + 'bq' and 'ap' + 'b-bq'),
    # so c is added as well
    body = "  zip:\n    duts.nat.a: [p-b, p, p-b]\n    duts.nat.b: [q, '-bq', r]\n    duts.nat.c: [1, 2, 3]\n"
    pts = load(body).points()
    assert [p.label for p in pts] == ["nat-1k-ap-b-bq-c1", "nat-1k-ap-b-bq-c2", "nat-1k-ap-b-br-c3"]


def test_a_value_of_up_to_32_characters_is_labelled_whole_and_a_longer_one_cut_with_a_digest_of_it() -> None:
    whole = "p" * 32
    cut_a, cut_b = "q" * 24 + "a" * 9, "q" * 24 + "b" * 9  # 33 characters, the same first 24
    pts = load(f"  product:\n    duts.nat.x: [{whole}, {cut_a}, {cut_b}]\n").points()

    def digest(v: str) -> str:
        return hashlib.sha256(v.encode()).hexdigest()[:7]

    # a cut value is 32 characters too: 24 of the value, '~' and 7 hex digits of its SHA-256
    assert [p.label for p in pts] == [
        f"nat-1k-x{whole}",
        f"nat-1k-x{'q' * 24}~{digest(cut_a)}",
        f"nat-1k-x{'q' * 24}~{digest(cut_b)}",
    ]


def test_a_long_value_utf_8_cannot_encode_still_gets_a_label() -> None:
    # a lone surrogate: what json.loads gives for "\\ud800", and a dict handed to Campaign.from_dict may hold
    data = yaml.safe_load(campaign("  product:\n    duts.nat.x: [a, b]\n"))
    data["sweep"]["product"]["duts.nat.x"] = ["\ud800" + "a" * 40, "b" * 40]
    labels = [p.label for p in Campaign.from_dict(data).points()]
    assert re.fullmatch("nat-1k-x\ud800" + "a" * 23 + "~[0-9a-f]{7}", labels[0])
    assert re.fullmatch("nat-1k-x" + "b" * 24 + "~[0-9a-f]{7}", labels[1])
