"""A recipe's parameters at their boundaries (natbench.duts.recipes.params; docs/recipes.md, "Parameters"):

* what a declaration may say (its name, type, list item type, format, bounds, choices, default), each error naming
  the recipe file, the line and the field (``params.NAME.KEY``);
* what a value of each type may be, on both sides of every limit (length, bounds, prefix, IP version, NUL, the
  one-token rule of a ``str`` without a pattern), and how a campaign's bad value is named (file, line, field).
"""

from __future__ import annotations

from typing import Any

import pytest

from natbench.duts.recipes import parse_recipe
from natbench.duts.recipes.params import BUILTIN_VARIABLES, ParamSpec, shown
from natbench.duts.recipes.values import FormatText
from natbench.errors import RecipeError
from natbench.traffic.ports import PortRange

MAX = 2**64


def declare(params: str) -> dict[str, ParamSpec]:
    """The parameters of a recipe declaring ``params`` (YAML lines under ``params:``, two-space indented)."""
    text = f"recipe: t\nparams:\n{params}steps:\n  setup:\n    - echo x\n  teardown:\n    - echo bye\n"
    return parse_recipe(text, "bad.yaml").params


def refused(params: str) -> RecipeError:
    """The error of a recipe declaring ``params``: it names bad.yaml and the declaration's line (3)."""
    with pytest.raises(RecipeError) as info:
        declare(params)
    assert info.value.file == "bad.yaml" and info.value.line == 3, str(info.value)
    assert "\n" not in str(info.value)
    return info.value


def check(value: Any, **spec: Any) -> Any:
    return ParamSpec(**spec).check(value)


def fails(value: Any, words: str, **spec: Any) -> None:
    with pytest.raises(ValueError) as info:
        ParamSpec(**spec).check(value)
    assert words in str(info.value), str(info.value)


# -- declarations ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "a_1", "_x", "conntrack_max"])
def test_a_parameter_name_is_a_lowercase_identifier(name: str) -> None:
    assert list(declare(f"  {name}: int\n")) == [name]


@pytest.mark.parametrize(("key", "field"), [("A", "params.A"), ("a-b", "params.a-b"), ("1a", "params.1a"),
                                            ("1", "params[1]"), ("a.b", "params.a.b")])  # fmt: skip
def test_a_parameter_name_that_is_no_lowercase_identifier_is_refused_naming_it(key: str, field: str) -> None:
    e = refused(f"  {key}: int\n")
    assert e.field == field and "parameter names are lowercase identifiers" in e.message


@pytest.mark.parametrize("name", BUILTIN_VARIABLES)
def test_each_variable_natbench_supplies_is_no_parameter_name(name: str) -> None:
    e = refused(f"  {name}: int\n")
    assert e.field == f"params.{name}" and "supplied by natbench at run time" in e.message


def test_a_declared_type_is_one_natbench_knows() -> None:
    assert declare("  a: {type: port_range}\n")["a"].type == "port_range"
    e = refused("  a: {type: integer}\n")
    assert e.field == "params.a.type" and "unknown type 'integer'" in e.message


@pytest.mark.parametrize("items", ["list", "choice", "text", "integer"])
def test_a_list_holds_no_list_choice_text_or_unknown_type(items: str) -> None:
    e = refused(f"  a: {{type: list, items: {items}}}\n")
    assert e.field == "params.a.items" and f"bad list item type {items!r}" in e.message


@pytest.mark.parametrize("items", ["str", "int", "interface", "ipv4", "port_range"])
def test_a_list_holds_items_of_a_scalar_type(items: str) -> None:
    assert declare(f"  a: {{type: list, items: {items}}}\n")["a"].items == items


def test_a_text_parameter_and_only_it_names_a_known_format() -> None:
    assert declare("  a: {type: text, format: nft}\n")["a"].format == "nft"
    assert declare("  a: str\n")["a"].format is None
    e = refused("  a: {type: text, format: yaml}\n")
    assert e.field == "params.a.format" and "unknown format 'yaml'" in e.message
    e = refused("  a: {type: text}\n")  # text without a format
    assert e.field == "params.a.format" and "a text parameter names its format" in e.message
    e = refused("  a: {type: str, format: nft}\n")  # a format on another type
    assert e.field == "params.a.format" and "only a text parameter does" in e.message


@pytest.mark.parametrize("bound", [MAX, -MAX, 0, 0.5, -3])
def test_a_bound_is_a_number_of_at_most_2_64_in_magnitude(bound: int | float) -> None:
    assert declare(f"  a: {{type: int, min: {bound}, max: {bound}}}\n")["a"].min == bound


@pytest.mark.parametrize("bound", [MAX + 1, -MAX - 1, ".inf", "-.inf", ".nan", "true", "false", "'5'"])
def test_a_bound_that_is_no_finite_number_within_2_64_is_refused(bound: str | int) -> None:
    e = refused(f"  a: {{type: int, min: {bound}}}\n")
    assert e.field == "params.a.min" and "expected a finite number" in e.message


def test_a_choice_parameter_needs_choices_and_takes_no_other_value() -> None:
    assert declare("  a: {type: choice, choices: [x, y]}\n")["a"].choices == ("x", "y")
    for declaration in ("  a: {type: choice}\n", "  a: {type: choice, choices: []}\n"):
        e = refused(declaration)
        assert e.field == "params.a.choices" and "needs a non-empty list of choices" in e.message
    assert declare("  a: str\n")["a"].choices == ()  # no choices: only a choice parameter needs them


def test_a_default_is_checked_by_the_type_and_a_required_parameter_has_none() -> None:
    assert declare("  a: {type: int, min: 2, default: 2}\n")["a"].default == 2
    assert declare("  a: {type: int, default: 2^4}\n")["a"].default == 16  # normalized like a campaign's value
    e = refused("  a: {type: int, min: 2, default: 1}\n")
    assert e.field == "params.a.default" and "bad default: 1 is below the minimum 2" in e.message
    assert declare("  a: {type: int, required: true}\n")["a"].required  # no default: fine
    assert declare("  a: {type: int, required: true, default: null}\n")["a"].default is None
    e = refused("  a: {type: int, required: true, default: 3}\n")
    assert e.field == "params.a.default" and "a required parameter has no default" in e.message


def test_a_declaration_with_an_error_of_its_own_reports_that_error_not_its_default() -> None:
    e = refused("  a: {type: integer, default: x}\n")
    assert e.field == "params.a.type" and "bad default" not in e.message
    e = refused("  a: {type: int, min: true, default: 0}\n")
    assert e.field == "params.a.min"
    for declaration in ("  a: {type: text, format: yaml, default: x}\n", "  a: {type: text, default: x}\n"):
        assert refused(declaration).field == "params.a.format"  # its default is not written by a missing format


def test_a_choice_is_a_phrase_and_a_pattern_one_re2_compiles() -> None:
    assert declare("  a: {type: choice, choices: [a b, c]}\n")["a"].choices == ("a b", "c")
    e = refused("  a: {type: choice, choices: [a, b;c]}\n")
    assert e.field == "params.a.choices" and "choice 'b;c' holds characters a value may not" in e.message
    e = refused("  a: {type: str, pattern: '(a'}\n")
    assert e.field == "params.a.pattern" and "bad regular expression" in e.message


def test_a_pattern_is_taken_only_when_given() -> None:
    spec = declare("  a: str\n  b: {type: str, pattern: '[a-z]+( [a-z]+)*'}\n")
    assert spec["a"].pattern is None and spec["a"].check("x1") == "x1"
    assert spec["b"].check("ab cd") == "ab cd"


# -- values ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_", ["str", "text", "int", "float", "bool", "choice", "ip", "net", "interface", "mac",
                                   "port_range", "list"])  # fmt: skip
def test_none_stays_none_for_every_type(type_: str) -> None:
    extra: dict[str, Any] = {"choices": ("a",)} if type_ == "choice" else {"format": "json"} if type_ == "text" else {}
    assert ParamSpec(type=type_, **extra).check(None) is None


def test_a_shown_value_is_cut_to_its_limit() -> None:
    assert shown("a" * 38) == repr("a" * 38)  # 40 characters: shown whole
    assert shown("a" * 39) == repr("a" * 39)[:37] + "..."  # 41: cut to 40
    assert len(shown("a" * 39)) == 40
    assert shown("ab", 4) == "'ab'" and shown("abc", 4) == "'..."
    assert shown("a\nb") == "'a\\nb'"  # control characters escaped


@pytest.mark.parametrize(("value", "kind"), [(["a"], "list"), ({"a": 1}, "dict"), (True, "bool"), (False, "bool")])
def test_a_str_value_is_a_string_or_a_number(value: Any, kind: str) -> None:
    fails(value, f"expected a string, got {kind}")
    fails(value, f"expected a string, got {kind}", pattern=".*")


def test_a_str_value_may_be_a_number_written_as_one() -> None:
    assert check(5) == "5" and check(1.5) == "1.5"


@pytest.mark.parametrize("pattern", [None, ".*"])
def test_a_str_value_holds_no_nul_and_at_most_256_characters(pattern: str | None) -> None:
    fails("a\x00b", "contains a NUL byte", pattern=pattern)
    assert check("a" * 256, pattern=pattern) == "a" * 256
    fails("a" * 257, "is longer than 256 characters", pattern=pattern)


def test_a_str_value_matches_its_pattern_whole() -> None:
    spec = {"pattern": "[a-z]+( [a-z]+)*"}
    assert check("ab cd", **spec) == "ab cd"
    fails("ab1", "'ab1' does not match '[a-z]+( [a-z]+)*'", **spec)
    fails("ab cd1", "does not match", **spec)


def test_a_str_value_without_a_pattern_is_one_plain_token_with_one_a_phrase() -> None:
    assert check("eth0:1/a,b+c-d") == "eth0:1/a,b+c-d"
    fails("a b", "is not one plain token")
    assert check("a b", pattern=".*") == "a b"  # a pattern lets blanks in
    fails("a;b", "holds characters a str value may not", pattern=".*")  # never shell syntax
    fails("a  b", "holds characters a str value may not", pattern=".*")  # single blanks only


def test_a_text_value_is_a_string_of_at_most_1024_characters_without_nul() -> None:
    assert check("a" * 1024, type="text", format="json") == FormatText("a" * 1024, "json")
    fails("a" * 1025, "is longer than 1024 characters", type="text", format="json")
    fails("a\x00b", "contains a NUL byte", type="text", format="json")  # json could write it: refused before
    fails(5, "expected a string, got int", type="text", format="json")


def test_a_text_value_matches_its_pattern_when_it_has_one_and_is_written_by_its_format() -> None:
    assert check("a; b", type="text", format="nft") == FormatText("a; b", "nft")  # no pattern: any text
    spec = {"type": "text", "format": "nft", "pattern": "[a-z ]+"}
    assert check("ab cd", **spec) == FormatText("ab cd", "nft")
    fails("ab;", "'ab;' does not match '[a-z ]+'", **spec)
    fails('a"b', "'a\"b': a nft string cannot hold a double quote", type="text", format="nft")


def test_an_int_value_too_large_says_so() -> None:
    fails("2^65", "2^65 is too large: the limit is 2^64", type="int")
    fails("lots", "expected an integer such as 8388608, 2^23 or 8M, got 'lots'", type="int")
    assert check("2^64", type="int") == MAX


@pytest.mark.parametrize(
    ("bounds", "inside", "outside", "words"),
    [
        ({"min": 1}, 1, 0, "0 is below the minimum 1"),
        ({"max": 10}, 10, 11, "11 is above the maximum 10"),
        ({"min": 0}, 0, -1, "-1 is below the minimum 0"),  # a bound of 0 is a bound
        ({"max": 0}, 0, 1, "1 is above the maximum 0"),
        ({"min": -5, "max": -5}, -5, -4, "-4 is above the maximum -5"),
    ],
)
def test_an_int_value_is_within_its_bounds_inclusive(
    bounds: dict[str, int], inside: int, outside: int, words: str
) -> None:
    assert check(inside, type="int", **bounds) == inside
    fails(outside, words, type="int", **bounds)


def test_a_float_value_is_within_its_bounds_inclusive_and_unbounded_without_them() -> None:
    assert check(0.5, type="float", min=0.5, max=1.5) == 0.5 and check(1.5, type="float", min=0.5, max=1.5) == 1.5
    fails(0.4, "0.4 is below the minimum 0.5", type="float", min=0.5)
    fails(1.6, "1.6 is above the maximum 1.5", type="float", max=1.5)
    assert (
        check("200k", type="float") == 200000.0
        and check(-2.5, type="float") == -2.5
        and check(-(2**63), type="int") == -(2**63)
    )


def test_a_bool_value_is_true_or_false_only() -> None:
    assert check(True, type="bool") is True and check(False, type="bool") is False
    fails("true", "expected true or false, got 'true'", type="bool")
    fails(1, "expected true or false", type="bool")


def test_a_choice_is_compared_as_the_word_it_is_written_as() -> None:
    spec = declare("  a: {type: choice, choices: [1, 2, true]}\n")["a"]
    assert spec.choices == ("1", "2", "true")
    assert spec.check(1) == "1" and spec.check("2") == "2" and spec.check(True) == "true"
    with pytest.raises(ValueError, match="3 is not one of 1, 2, true"):
        spec.check(3)


@pytest.mark.parametrize(("type_", "value"), [("ip", "fe80::1%eth0"), ("ipv6", "fe80::1%eth0"),
                                              ("net", "fe80::1%eth0/64"), ("ipv6_net", "fe80::1%1/64")])  # fmt: skip
def test_an_address_with_a_scope_is_refused(type_: str, value: str) -> None:
    fails(value, "an address with a scope (%zone) is not taken", type=type_)


def test_an_address_type_takes_no_prefix_a_net_type_needs_one() -> None:
    assert check("198.18.0.1", type="ip") == "198.18.0.1"
    fails("198.18.0.1/24", "'198.18.0.1/24' is not an IP address", type="ip")
    assert check("198.18.0.1/24", type="net") == "198.18.0.1/24"
    assert check("2001:DB8::1/64", type="ipv6_net") == "2001:db8::1/64"  # normalized
    fails("198.18.0.1", "'198.18.0.1' needs a prefix length", type="net")
    fails("2001:db8::1", "needs a prefix length", type="ipv6_net")
    fails("x/24", "'x/24' is not an address/prefix", type="net")


@pytest.mark.parametrize(
    ("type_", "right", "wrong", "words"),
    [
        ("ipv4", "198.18.0.1", "2001:db8::1", "is not an IPv4 address"),
        ("ipv6", "2001:db8::1", "198.18.0.1", "is not an IPv6 address"),
        ("ipv4_net", "198.18.0.1/24", "2001:db8::1/64", "is not an IPv4 prefix"),
        ("ipv6_net", "2001:db8::1/64", "198.18.0.1/24", "is not an IPv6 prefix"),
    ],
)
def test_a_versioned_address_type_takes_that_version_only(type_: str, right: str, wrong: str, words: str) -> None:
    assert check(right, type=type_) == right
    fails(wrong, words, type=type_)


def test_an_unversioned_address_type_takes_either_version() -> None:
    assert check("198.18.0.1", type="ip") == "198.18.0.1" and check("2001:db8::1", type="ip") == "2001:db8::1"
    assert check("198.18.0.1/24", type="net") and check("2001:db8::1/64", type="net")


def test_an_interface_name_is_1_to_15_characters_not_starting_with_a_dash() -> None:
    assert check("a" * 15, type="interface") == "a" * 15
    assert check("e", type="interface") == "e" and check("veth-dut.1+x", type="interface") == "veth-dut.1+x"
    for bad in ("a" * 16, "", "-a", "eth0;x", "eth0 x", "eth0\n"):
        fails(bad, "is not a valid interface name", type="interface")
    fails(5, "5 is not a valid interface name", type="interface")  # YAML's number, not a name


def test_a_mac_address_is_six_hex_pairs_whole_normalized_to_lowercase() -> None:
    assert check("AA:bb:CC:dd:EE:0f", type="mac") == "aa:bb:cc:dd:ee:0f"
    for bad in (
        "aa:bb:cc:dd:ee:ff\n",
        "aa:bb:cc:dd:ee:ff:00",
        "xaa:bb:cc:dd:ee:ff",
        "aa:bb:cc:dd:ee",
        "aa-bb-cc-dd-ee-ff",
    ):
        fails(bad, "is not a MAC address", type="mac")
    fails(5, "5 is not a MAC address", type="mac")


def test_a_port_range_value_may_be_one_port() -> None:
    assert check("1024", type="port_range") == PortRange(1024, 1024)  # not the ports 1-1024
    assert check(1024, type="port_range") == PortRange(1024, 1024)
    assert check("1024-2047", type="port_range") == PortRange(1024, 2047)
    assert check([1024, 2047], type="port_range") == PortRange(1024, 2047)


def test_a_list_value_is_a_list_of_checked_items_none_of_them_null() -> None:
    assert check(["a", "b"], type="list", items="str") == ["a", "b"]
    assert check(("2^4", 3), type="list", items="int") == [16, 3]
    fails(["a", None], "item 1 is null", type="list", items="str")
    fails(["a", "b c"], "item 1: 'b c' is not one plain token", type="list", items="str")
    fails("a", "expected a list, got str", type="list", items="str")


# -- a campaign's values --------------------------------------------------------------------------------------------

RECIPE = """\
recipe: t
params:
  n: {type: int, min: 1, max: 8}
  addr: ipv4
  macs: {type: list, items: mac}
steps:
  setup:
    - echo {{ n }}
  teardown:
    - echo bye
"""


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"n": 9}, "n", "9 is above the maximum 8 (recipe t, type int)"),
        ({"n": 0}, "n", "0 is below the minimum 1"),
        ({"addr": "2001:db8::1"}, "addr", "is not an IPv4 address (recipe t, type ipv4)"),
        (
            {"macs": ["aa:bb:cc:dd:ee:ff", None]},
            "macs",
            "item 1 is null (a list holds values only) (recipe t, type list)",
        ),
    ],
)
def test_a_campaigns_bad_value_names_the_campaign_file_line_and_field(
    params: dict[str, Any], field: str, words: str
) -> None:
    from natbench.config.source import parse_yaml

    text = "".join(f"{k}: {v!r}\n".replace("None", "null").replace("'", '"') for k, v in params.items())
    given, source = parse_yaml("x: 1\n" + text, "campaign.yaml")
    del given["x"]
    recipe = parse_recipe(RECIPE, "t.yaml")
    with pytest.raises(RecipeError) as info:
        recipe.resolve(given, file="campaign.yaml", field_prefix="dut.params.", source=source)
    e = info.value
    assert (e.file, e.line, e.field) == ("campaign.yaml", 2, f"dut.params.{field}")
    assert words in e.message and "\n" not in str(e)
    assert recipe.resolve({"n": 8, "addr": "198.18.0.1", "macs": ["AA:bb:cc:dd:ee:ff"]}) == {
        "n": 8, "addr": "198.18.0.1", "macs": ["aa:bb:cc:dd:ee:ff"]
    }  # fmt: skip
