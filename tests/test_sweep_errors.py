"""Every sweep error names the file, the line and the field of the value at fault, with a message that says why.

The campaigns come from :mod:`sweep_campaigns`: the sweep body starts on line 9 (line 8 is ``sweep:``, line 6
``traffic``), so each expected line below is counted from the body as written.
"""

from __future__ import annotations

import pytest
from sweep_campaigns import TWO_DUTS, error, load

from natbench.campaign.sweep import points_limit
from natbench.values import MAX_CORES

AXES = "cores, src_ports, dst_ports, frame_size, duts.<dut>.<param>, metrics.<metric>.<setting>"
CPS_SETTINGS = (
    "repetitions, acceptance, directions, timeout, check_table, table_slack, lower, upper, error, max_invalid, alpha, "
    "validation, algorithm"
)


# -- values of an axis ---------------------------------------------------------------------------


def test_zero_cores_are_rejected_at_the_value() -> None:
    assert error("  product:\n    cores: [1, 0]\n") == (
        "t.yaml:10: sweep.product.cores[1]: cores must be at least 1, got 0"
    )


def test_cores_up_to_the_largest_count_are_swept_and_one_more_is_rejected_at_the_value() -> None:
    (p,) = load(f"  product:\n    cores: [{MAX_CORES}]\n").points()
    assert p.cores == MAX_CORES
    assert error(f"  product:\n    cores: [{MAX_CORES}, {MAX_CORES + 1}]\n") == (
        f"t.yaml:10: sweep.product.cores[1]: cores must be at most {MAX_CORES}, got {MAX_CORES + 1}"
    )


def test_cores_that_are_no_number_show_the_number_forms() -> None:
    assert error("  zip:\n    cores: [2, x]\n") == (
        "t.yaml:10: sweep.zip.cores[1]: expected a number such as 200000, 200k or 2^17, got 'x'"
    )


@pytest.mark.parametrize(("sizes", "i", "bad"), [("[64, 1518, 1519]", 2, 1519), ("[63, 64]", 0, 63)])
def test_frame_sizes_outside_64_to_1518_are_rejected(sizes: str, i: int, bad: int) -> None:
    assert error(f"  product:\n    frame_size: {sizes}\n") == (
        f"t.yaml:10: sweep.product.frame_size[{i}]: frame size must be 64..1518 bytes (IPv4 size), got {bad}"
    )


def test_a_swept_frame_size_conflicts_with_traffic_frame_sizes() -> None:
    traffic = "{family: nat44, src_ports: 1-100, dst_ports: 1-10, frame_sizes: [64]}"
    assert error("  product:\n    frame_size: [64, 128]\n", traffic=traffic) == (
        "t.yaml:10: sweep.product.frame_size: frame_size is swept here and also set in traffic.frame_sizes: keep one"
    )


def test_bad_port_ranges_are_rejected_at_the_value() -> None:
    assert error("  zip:\n    src_ports: [100, '1-70000']\n") == (
        "t.yaml:10: sweep.zip.src_ports[1]: invalid port range 1-70000: need 1 <= first <= last <= 65535"
    )
    assert error("  product:\n    dst_ports: [0]\n") == (
        "t.yaml:10: sweep.product.dst_ports[0]: port count must be at least 1, got 0"
    )


# -- axis names -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["duts.nat", "duts..x", "duts.nat.", "duts.nat.a.b"])
def test_a_dut_axis_needs_three_non_empty_parts(key: str) -> None:
    assert error(f"  product:\n    {key}: [1]\n") == (
        f"t.yaml:10: sweep.product.{key}: a DUT axis is written duts.<dut>.<param>, got '{key}'"
    )


def test_a_dut_axis_of_an_unknown_dut_lists_the_duts() -> None:
    assert error("  cores_dut: plat\n  product:\n    duts.pe.x: [1]\n", duts=TWO_DUTS) == (
        "t.yaml:11: sweep.product.duts.pe.x: no DUT named 'pe' (DUTs: clat, plat)"
    )


@pytest.mark.parametrize("key", ["metrics.cps", "metrics..error", "metrics.cps.", "metrics.cps.error.x"])
def test_a_metric_axis_needs_three_non_empty_parts(key: str) -> None:
    assert error(f"  zip:\n    {key}: [1]\n") == (
        f"t.yaml:10: sweep.zip.{key}: a metric axis is written metrics.<metric>.<setting>, got '{key}'"
    )


def test_a_metric_axis_of_an_unselected_metric_lists_the_selected_ones() -> None:
    metrics = "{cps: {upper: 100k, error: 1k}, teardown: {fill_rate: 10k}}"
    assert error("  product:\n    metrics.throughput.upper: [1M]\n", metrics=metrics) == (
        "t.yaml:10: sweep.product.metrics.throughput.upper: metric 'throughput' is not selected "
        "(selected: cps, teardown)"
    )


def test_a_metric_axis_of_an_unknown_setting_lists_the_settings() -> None:
    # the settings in declaration order: every metric's, then the search's (SearchSettings), then the validation's,
    # then cps's own (algorithm)
    assert error("  product:\n    metrics.cps.nope: [1]\n") == (
        f"t.yaml:10: sweep.product.metrics.cps.nope: cps has no setting 'nope' (settings: {CPS_SETTINGS})"
    )


@pytest.mark.parametrize("key", ["connections", "x.duts.y", "cores.nat"])
def test_an_unknown_axis_lists_the_axes(key: str) -> None:
    assert error(f"  product:\n    {key}: [1]\n") == (
        f"t.yaml:10: sweep.product.{key}: unknown sweep axis '{key}'; axes are {AXES}"
    )


# -- product and zip together ---------------------------------------------------------------


def test_an_axis_in_product_and_zip_is_reported_at_the_zip() -> None:
    assert error("  product:\n    cores: [1]\n  zip:\n    cores: [2]\n") == (
        "t.yaml:12: sweep.zip.cores: axis 'cores' is both in sweep.product and sweep.zip"
    )


def test_a_zip_column_of_another_length_is_compared_with_the_first() -> None:
    # the second of three columns is short: it is named, and measured against the first
    body = "  zip:\n    cores: [1, 2]\n    src_ports: [100]\n    dst_ports: [10, 20]\n"
    assert error(body) == (
        "t.yaml:11: sweep.zip.src_ports: zip columns must have equal lengths: src_ports has 1 values, cores has 2"
    )


@pytest.mark.parametrize(
    ("first", "written"),
    [("frame_size: [64]", "frame_size"), ("duts.nat.hashsize: [5]", "duts.nat.hashsize")],
)
def test_a_zip_length_error_names_the_first_column_as_written(first: str, written: str) -> None:
    assert error(f"  zip:\n    {first}\n    src_ports: [100, 200]\n") == (
        f"t.yaml:11: sweep.zip.src_ports: zip columns must have equal lengths: src_ports has 2 values, {written} has 1"
    )


# -- whose cores ----------------------------------------------------------------------------


def test_cores_dut_must_name_a_dut() -> None:
    assert error("  cores_dut: pe\n  product: {cores: [1, 2]}\n", duts=TWO_DUTS) == (
        "t.yaml:9: sweep.cores_dut: no DUT named 'pe' (DUTs: clat, plat)"
    )


def test_a_cores_dut_list_names_the_unknown_item() -> None:
    assert error("  cores_dut: [clat, pe]\n  product: {cores: [1, 2]}\n", duts=TWO_DUTS) == (
        "t.yaml:9: sweep.cores_dut[1]: no DUT named 'pe' (DUTs: clat, plat)"
    )


def test_an_empty_cores_dut_list_is_rejected() -> None:
    assert error("  cores_dut: []\n  product: {cores: [1, 2]}\n", duts=TWO_DUTS) == (
        "t.yaml:9: sweep.cores_dut: name at least one DUT"
    )


def test_swept_cores_with_several_duts_need_cores_dut() -> None:
    # cores_dut is not written: the error is on the line of 'sweep:'
    assert error("  product: {cores: [1, 2]}\n", duts=TWO_DUTS) == (
        "t.yaml:8: sweep.cores_dut: cores are swept and there are several DUTs: "
        "name the DUT whose cores vary in sweep.cores_dut"
    )


# -- the points themselves ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("traffic", "which"),
    [
        ("{family: nat44, dst_ports: 1-10}", "src_ports"),
        ("{family: nat44, src_ports: 1-100}", "dst_ports"),
        ("{family: nat44}", "src_ports"),  # both missing: the first is named
    ],
)
def test_missing_ports_are_reported_at_traffic(traffic: str, which: str) -> None:
    assert error("  product: {cores: [1]}\n", traffic=traffic) == (
        f"t.yaml:6: traffic.{which}: {which} is required: set traffic.{which} or sweep it"
    )


def test_swept_source_ports_still_need_destination_ports() -> None:
    assert error("  zip:\n    src_ports: [100]\n", traffic="{family: nat44}") == (
        "t.yaml:6: traffic.dst_ports: dst_ports is required: set traffic.dst_ports or sweep it"
    )


def test_identical_points_are_reported_at_the_last_value_that_made_them() -> None:
    # points: (cores 1, hashsize 5), (1, 6), (1, 5): the third repeats the first; its last swept value is
    # hashsize[2] (the frame size and the cores were set before it)
    assert error("  product:\n    cores: [1]\n    duts.nat.hashsize: [5, 6, 5]\n") == (
        "t.yaml:11: sweep.product.duts.nat.hashsize[2]: working points 0 and 2 are identical"
    )


def test_identical_points_made_by_a_swept_frame_size_are_reported_at_it() -> None:
    # cores [1, 1] repeat; the frame size axis is applied after the cores, so its value is named
    assert error("  product:\n    cores: [1, 1]\n    frame_size: [64]\n") == (
        "t.yaml:11: sweep.product.frame_size[0]: working points 0 and 1 are identical"
    )


def test_a_bad_metric_override_is_reported_at_its_own_value() -> None:
    # two overridden settings; the second one's second value is invalid (error must be > 0)
    body = "  zip:\n    metrics.cps.upper: [200k, 300k]\n    metrics.cps.error: [1k, 0]\n"
    assert error(body) == "t.yaml:11: sweep.zip.metrics.cps.error[1]: must be greater than 0"


def test_an_override_that_breaks_a_rule_between_settings_is_reported_at_the_override() -> None:
    # upper 500 with the campaign's error 1000: error >= upper - lower = 500 - 0
    assert error("  product:\n    metrics.cps.upper: [500]\n") == (
        "t.yaml:10: sweep.product.metrics.cps.upper[0]: error (1000) must be smaller than upper - lower (500)"
    )


# -- the number of points ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "n", "factors"),
    [
        # a swept frame size stands for traffic.frame_sizes: 3 points, not 3 x the one default size
        ("  product:\n    frame_size: [64, 128, 256]\n", 3, "3"),
        # zip columns advance together: 3 points, the campaign's one frame size first
        ("  zip:\n    cores: [1, 2, 3]\n    src_ports: ['1-10', '11-20', '21-30']\n", 3, "1 x 3"),
        # product axes multiply, and the zip with them
        (
            "  product:\n    cores: [1, 2]\n  zip:\n    frame_size: [64, 128]\n    src_ports: ['1-9', '1-8']\n",
            4,
            "2 x 2",
        ),
    ],
)
def test_as_many_points_as_the_limit_are_expanded_and_one_more_is_refused_naming_the_factors(
    body: str, n: int, factors: str
) -> None:
    with points_limit(n):
        assert len(load(body).points()) == n
    with points_limit(n - 1):
        assert error(body) == (
            f"t.yaml:8: sweep: expands to {n} working points ({factors}), more than the limit of {n - 1}: "
            "sweep fewer values, or give --max-points N for a deliberate giant"
        )


@pytest.mark.parametrize(
    ("per_axis", "shown"),
    [(999, "995,009,990,004,999"), (1000, "about 10^15")],  # 999^5 and 1000^5
)
def test_a_count_from_10_15_points_up_is_shown_as_a_power_of_ten(per_axis: int, shown: str) -> None:
    values = "[" + ", ".join(str(v) for v in range(1, per_axis + 1)) + "]"
    body = "  product:\n" + "".join(f"    duts.nat.{k}: {values}\n" for k in "abcde")
    sizes = " x ".join(["1"] + [str(per_axis)] * 5)
    assert error(body).startswith(f"t.yaml:8: sweep: expands to {shown} working points ({sizes}), more than the limit")
