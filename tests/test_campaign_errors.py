"""Malformed campaigns are rejected with one ConfigError naming file, line and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from natbench.campaign import Campaign, load_campaign, parse_campaign
from natbench.campaign.recipes import check_recipes
from natbench.errors import ConfigError

BAD = Path(__file__).resolve().parent / "data" / "bad_campaigns"
BAD_FILES = sorted(BAD.glob("*.yaml"))
_EXPECT = re.compile(r"^# expect: (\d+): ([^ ]*): (.+)$")

GOOD = """\
schema_version: 1
testbed:
  tester: {kind: software}
  duts:
    - name: nat
      recipe: iptables-nat44
      access: {kind: lab}
      params:
        hashsize: PARAM
traffic:
  family: nat44
  src_ports: 1-100
  dst_ports: 1-10
metrics:
  cps: {upper: 100k, error: 1k}
"""


@pytest.mark.parametrize("path", BAD_FILES, ids=[f.stem for f in BAD_FILES])
def test_bad_campaign_is_rejected_at_its_line(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NATBENCH_TEST_SURELY_UNSET", raising=False)
    m = _EXPECT.match(path.read_text().splitlines()[0])
    assert m, f"{path.name} needs a first line '# expect: LINE: FIELD: MESSAGE'"
    line, field, message = int(m.group(1)), m.group(2) or None, m.group(3)
    with pytest.raises(ConfigError) as info:
        load_campaign(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == line
    assert err.field == field
    assert message in err.message
    assert str(err).startswith(f"{path}:{line}: ")
    assert "\n" not in str(err)


def test_there_are_enough_bad_campaigns() -> None:
    assert len(BAD_FILES) >= 20


@pytest.mark.parametrize(
    ("text", "line", "field", "first"),
    [
        (  # block mapping that is a list item
            GOOD.replace("      recipe: iptables-nat44\n", "      recipe: iptables-nat44\n      name: other\n"),
            7,
            "testbed.duts[0].name",
            5,
        ),
        (GOOD.replace("{kind: lab}", "{kind: lab, kind: ssh}"), 7, "testbed.duts[0].access.kind", 7),  # in a list item
        (GOOD.replace("PARAM", "[{a: 1, a: 2}]"), 9, "testbed.duts[0].params.hashsize[0].a", 9),  # list in a list item
        (GOOD.replace("PARAM", "\n          - a: 1\n            a: 2"), 11, "testbed.duts[0].params.hashsize[0].a", 10),
        (GOOD.replace("PARAM", "[[0, {b: [{a: 1, a: 2}]}]]"), 9, "testbed.duts[0].params.hashsize[0][1].b[0].a", 9),
        ("schema_version: 1\ntestbed:\n  duts: [{name: a, name: b}]\n", 3, "testbed.duts[0].name", 3),
        (  # inside a mapping merged into a list item
            GOOD.replace("      access: {kind: lab}\n", "      <<: {access: {kind: lab}, access: {kind: ssh}}\n"),
            7,
            "testbed.duts[0].access",
            7,
        ),
    ],
    ids=[
        "list-item",
        "mapping-in-list-item",
        "flow-list-in-list-item",
        "block-list-in-list-item",
        "deep",
        "flow-list",
        "merged-into-list-item",
    ],
)
def test_duplicate_keys_are_rejected_at_every_depth(text: str, line: int, field: str, first: int) -> None:
    key = field.rsplit(".", 1)[-1]
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, "x.yaml")
    err = info.value
    assert (err.file, err.line, err.field) == ("x.yaml", line, field)
    assert str(err) == f"x.yaml:{line}: {field}: duplicate key {key!r} (first defined on line {first})"


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_campaign(tmp_path / "nope.yaml")


def test_empty_file_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="empty"):
        parse_campaign("", "x.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        parse_campaign("- 1\n- 2\n", "x.yaml")


def test_natbench_variables_are_substituted_and_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATBENCH_HASH", "4096")
    c = parse_campaign(GOOD.replace("PARAM", "${NATBENCH_HASH}"), "x.yaml")
    assert c.points()[0].dut_params["nat"]["hashsize"] == 4096
    monkeypatch.delenv("NATBENCH_HASH")
    c = parse_campaign(GOOD.replace("PARAM", "${NATBENCH_HASH:-2^12}"), "x.yaml")
    assert c.points()[0].dut_params["nat"]["hashsize"] == 4096
    c = parse_campaign(GOOD.replace("PARAM", "'cost $$5'"), "x.yaml")
    assert c.points()[0].dut_params["nat"]["hashsize"] == "cost $5"
    c = parse_campaign(GOOD.replace("PARAM", "'${NATBENCH_HASH:-7}'"), "x.yaml")
    assert c.points()[0].dut_params["nat"]["hashsize"] == "7", "a quoted value stays a string"


def test_only_natbench_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH_LIKE", "x")
    with pytest.raises(ConfigError) as info:
        parse_campaign(GOOD.replace("PARAM", "${PATH_LIKE}"), "x.yaml")
    assert info.value.line == 9
    assert "PATH_LIKE" in info.value.message


@pytest.mark.parametrize("written", ["true", "1.0", "'1'", "2", "0"])
def test_schema_version_must_be_the_whole_number_1(written: str) -> None:
    """``true`` equals 1 in Python and ``1.0`` compares equal to it: neither is the version a campaign names."""
    text = GOOD.replace("PARAM", "1024").replace("schema_version: 1\n", f"schema_version: {written}\n", 1)
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, "x.yaml")
    assert info.value.field == "schema_version" and info.value.line == 1
    assert "unsupported schema_version" in info.value.message
    parse_campaign(GOOD.replace("PARAM", "1024"), "x.yaml")  # the whole number 1 is read


def test_error_without_a_file_names_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        Campaign.from_dict({"schema_version": 1})
    assert info.value.file is None and info.value.line is None
    assert info.value.field == "testbed"


def test_yaml_anchor_and_merge_keys_work() -> None:
    text = GOOD.replace("PARAM", "1024") + "  throughput: &tp {upper: 100k, error: 1k, fill_rate: 10k}\n"
    c = parse_campaign(text, "x.yaml")
    assert c.metrics["throughput"].fill_rate == 10_000


RECIPE_CAMPAIGN = """\
schema_version: 1
testbed:
  tester: {kind: software}
  duts:
    - name: nat
      recipe: RECIPE
      access: {kind: lab}
      params:
        nat: NAT
traffic:
  family: nat44
  src_ports: 1-100
  dst_ports: 1-10
sweep:
  zip:
    duts.nat.udp_timeout: [300, TIMEOUT]
metrics:
  cps: {upper: 100k, error: 1k}
"""


def _recipe_campaign(recipe: str = "iptables-nat44", nat: str = "snat", timeout: str = "600") -> str:
    return RECIPE_CAMPAIGN.replace("RECIPE", recipe).replace("NAT", nat).replace("TIMEOUT", timeout)


def test_recipe_check_passes_with_lab_supplied_interfaces() -> None:
    result = check_recipes(parse_campaign(_recipe_campaign(), "r.yaml"))
    assert result.checked
    assert result.detail == "recipes checked: 1 DUT(s), 2 parameter set(s)"


@pytest.mark.parametrize(
    ("kwargs", "line", "field", "words"),
    [
        ({"recipe": "ipchains-nat44"}, 6, "testbed.duts[0].recipe", "unknown recipe 'ipchains-nat44'"),
        ({"nat": "dnat"}, 9, "testbed.duts[0].params.nat", "dnat"),
        ({"timeout": "-5"}, 16, "sweep.zip.duts.nat.udp_timeout[1]", "udp_timeout"),
    ],
)
def test_recipe_errors_point_into_the_campaign(kwargs: dict[str, str], line: int, field: str, words: str) -> None:
    c = parse_campaign(_recipe_campaign(**kwargs), "r.yaml")
    with pytest.raises(ConfigError) as info:
        check_recipes(c)
    err = info.value
    assert (err.file, err.line, err.field) == ("r.yaml", line, field)
    assert words in str(err)


def test_resolved_yaml_keeps_dollars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATBENCH_HASH", "a${b}$c")
    c = parse_campaign(GOOD.replace("PARAM", "${NATBENCH_HASH}"), "x.yaml")
    assert c.points()[0].dut_params["nat"]["hashsize"] == "a${b}$c"
    again = parse_campaign(c.to_yaml(), "campaign.yaml")
    assert again.points()[0].dut_params["nat"]["hashsize"] == "a${b}$c"
    assert [p.id for p in again.points()] == [p.id for p in c.points()]


def test_a_dut_timeout_shorter_than_a_trial_is_warned() -> None:
    text = _recipe_campaign(timeout="5") + "  throughput: {upper: 100k, error: 1k, fill_rate: 100, duration: 10}\n"
    result = check_recipes(parse_campaign(text, "r.yaml"))
    assert result.checked
    assert result.warnings == (
        # cps [0, 100k] error 1k tries rates of its grid down to 1000/s: 1000/1000 + 2 (phase 1) + 1000/1000 + 2
        # (validation) = 6 s
        "DUT nat: udp_timeout 5 s is shorter than cps's phase 1 and its validation of 1,000 connections at 1000/s, "
        "the lowest rate its search could try at nat-1k-udp_timeout5 (~6 s): a step that slow is refused as invalid "
        "(dut_timeout) and ends the repetition",
        "DUT nat: udp_timeout 5 s is shorter than throughput's phase 1 + gap + phase 2 at nat-1k-udp_timeout5 "
        "(~26 s): connections would expire during the trial",  # 1000/100 + 2 + 2 + 10 + 2
    )
    assert check_recipes(parse_campaign(_recipe_campaign(), "r.yaml")).warnings == ()


def test_capacity_and_validation_steps_longer_than_the_dut_timeout_are_warned_at_plan_time() -> None:
    """udp_timeout 15 s. capacity probes up to 8,000 connections, its search [0, 100k] error 1k on its grid down to
    1000/s: 8000/1000 + 2 + 8000/1000 + 2 = 20 s. validation at 100/s, gap 2: 1000/100 + 2 + 2 + 1000/100 + 2 = 26 s.
    cps without validation at 1000/s: 1000/1000 + 2 = 3 s fits. The 300 s point fits everything."""
    text = _recipe_campaign(timeout="15").replace(
        "cps: {upper: 100k, error: 1k}", "cps: {upper: 100k, error: 1k, validation: 'off'}"
    ) + (
        "  capacity: {upper: 100k, error: 1k, min_connections: 1000, max_connections: 8000, connection_error: 100}\n"
        "  validation: {rate: 100}\n"
    )
    warnings = check_recipes(parse_campaign(text, "r.yaml")).warnings
    assert [w.split(" is shorter than ")[1].split("'s")[0] for w in warnings] == ["capacity", "validation"]
    assert "(~20 s)" in warnings[0] and "8,000 connections at 1000/s" in warnings[0]
    assert "(~26 s)" in warnings[1] and "at 100/s" in warnings[1]
