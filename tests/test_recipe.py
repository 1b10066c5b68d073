"""Recipe engine: loading, typed parameters, quoting, conditions, line-numbered errors, golden renderings."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from natbench.duts.executors import LocalExecutor
from natbench.duts.recipes import KNOWN_STEPS, Recipe, list_recipes, load_recipe, parse_recipe, recipe_reference
from natbench.duts.recipes.template import cpu_hexmask, render_template
from natbench.errors import RecipeError
from natbench.traffic.ports import PortRange

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("NATBENCH_UPDATE_GOLDEN") == "1"

# Values that a shell would interpret if they were not quoted.
NASTY = "x'; rm -rf / #\"$(id)`id`${HOME} \\ * ? [a] {b,c} ~ & | < > \n new line"


def render_all(recipe: Recipe, params: dict[str, Any], context: dict[str, Any] | None = None) -> str:
    """Every step's commands, in a stable order, as the golden files hold them."""
    order = [s for s in KNOWN_STEPS if s in recipe.steps] + sorted(s for s in recipe.steps if s not in KNOWN_STEPS)
    out = []
    for step in order:
        out.append(f"# {step}")
        st = recipe.steps[step]
        if st.builtin:
            out.append(f"#   builtin {st.builtin} {recipe.step_options(step, params, context)}")
        out.extend(recipe.render(step, params, context))
    return "\n".join(out) + "\n"


GOLDEN_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    # seed 000 Figure 2 settings: SNAT, table and hash size 2^23, long UDP timeouts
    "iptables-nat44-seed000": (
        "iptables-nat44",
        {
            "private_if": "enp5s0f0",
            "public_if": "enp5s0f1",
            "private_address": "10.0.0.1/24",
            "public_address": "198.19.0.1/24",
            "nat": "snat",
            "conntrack_max": "2^23",
            "hashsize": 2**23,
            "udp_timeout": 3600,
            "udp_timeout_stream": 3600,
        },
    ),
    "iptables-nat44-masquerade-host": (
        "iptables-nat44",
        {
            "private_if": "veth-dut-in",
            "public_if": "veth-dut-out",
            "private_net": "198.18.0.0/24",
            "conntrack_max": 1048576,
            "host_settings": True,
        },
    ),
    "nftables-nat44-snat": (
        "nftables-nat44",
        {
            "private_if": "enp5s0f0",
            "public_if": "enp5s0f1",
            "public_address": "198.19.0.1/24",
            "private_net": "198.18.0.0/24",
            "nat": "snat",
            "snat_ports": "1024-65535",
            "conntrack_max": 2**20,
            "hashsize": 2**20,
        },
    ),
    "nftables-nat44-limits": (  # campaigns/lab-rate-limit.yaml: known ceilings for calibration
        "nftables-nat44",
        {
            "private_if": "nb-priv",
            "public_if": "nb-pub",
            "public_address": "198.19.0.1/24",
            "nat": "snat",
            "limit_pps": 20000,
            "limit_cps": 8000,
            "limit_burst": 50,
        },
    ),
    "tayga-nat64-seed002": (
        "tayga-nat64",
        {
            "private_if": "enp5s0f0",
            "public_if": "enp5s0f1",
            "private_address": "2001:2::1/64",
            "public_address": "198.19.0.1/24",
            "pool6": "2001:db8:64::/96",
            "nat": "snat",
            "conntrack_max": "2^22",
            "udp_timeout": 3600,
        },
    ),
    "linux-forwarding-v4": (
        "linux-forwarding",
        {
            "private_if": "enp5s0f0",
            "public_if": "enp5s0f1",
            "private_address": "198.18.0.1/24",
            "public_address": "198.19.0.1/24",
        },
    ),
    "linux-forwarding-v6-dut1": (  # seed 004 Table 3: the first of two IPv6 routers in series
        "linux-forwarding",
        {
            "private_if": "enp5s0f0",
            "public_if": "enp5s0f1",
            "private_address": "2001:2::1/64",
            "public_address": "2001:2:0:100::1/64",
            "route_to": "2001:2:0:1::/64",
            "route_via": "2001:2:0:100::2",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_rendering(case: str) -> None:
    name, params = GOLDEN_CASES[case]
    recipe = load_recipe(name)
    text = render_all(recipe, params, {"cores": 4, "cpus": [0, 1, 2, 3]})
    golden = GOLDEN / f"{case}.txt"
    if UPDATE:
        golden.write_text(text)
    assert golden.exists(), f"missing golden file {golden} (NATBENCH_UPDATE_GOLDEN=1 writes it)"
    assert text == golden.read_text()


def test_every_recipe_on_the_search_path_loads() -> None:
    found = list_recipes()
    for name in ("iptables-nat44", "nftables-nat44", "tayga-nat64", "linux-forwarding"):
        assert name in found
    for name, path in found.items():
        recipe = load_recipe(path)
        assert recipe.name == name == path.stem


def test_nasty_values_are_refused_by_their_types_in_one_line() -> None:
    """Values carrying shell syntax never reach a command: the parameter's type refuses them, naming the field."""
    recipe = load_recipe("iptables-nat44")
    base = {"private_if": "in0", "public_if": "out0", "public_address": "198.19.0.1/24", "nat": "snat"}
    for field, value in (("private_if", "in;x"), ("public_if", "out$(id)"), ("rule_comment", NASTY)):
        with pytest.raises(RecipeError) as info:
            recipe.resolve({**base, field: value}, file="c.yaml")
        assert info.value.field == field
        assert "\n" not in str(info.value)
    assert recipe.resolve({**base, "rule_comment": "a b, c"})["rule_comment"] == "a b, c"  # its pattern allows blanks


def test_below_the_type_check_quoting_hands_values_over_literally_through_a_real_shell() -> None:
    """Quoting alone still holds: rendered text hands every value to its program as one literal argument."""
    text = render_template("printf '%s\\0' -o {{ o }} --comment {{ c }} x", {"o": "out$(id)", "c": NASTY})
    args = LocalExecutor().run(text, check=True).stdout.split("\0")[:-1]
    assert args == ["-o", "out$(id)", "--comment", NASTY, "x"]
    assert shlex.split(text)[5] == NASTY


@pytest.mark.parametrize("value", [NASTY, "", "-n", "a b", "'", '"', "$", "\\", "\t", "é ü", "--x=$(reboot)"])
def test_any_value_round_trips_through_sh(value: str) -> None:
    text = render_template("printf '%s' {{ v }}", {"v": value})
    assert LocalExecutor().run(text, check=True).stdout == value


def test_list_values_become_separately_quoted_words() -> None:
    text = render_template("printf '<%s>' {{ v }}", {"v": ["a b", "$(id)", "c"]})
    assert text == "printf '<%s>' 'a b' '$(id)' c"
    assert LocalExecutor().run(text, check=True).stdout == "<a b><$(id)><c>"


def test_filters() -> None:
    pr = PortRange(24576, 32767)
    assert render_template("{{ p | first }}-{{ p | last }}", {"p": pr}) == "24576-32767"
    assert render_template("{{ a | addr }}/{{ a | plen }}", {"a": "198.18.0.1/24"}) == "198.18.0.1/24"
    assert render_template("{{ c | hexmask }}", {"c": list(range(16, 24))}) == "00ff0000"
    assert cpu_hexmask(4) == "0000000f"
    assert cpu_hexmask([0, 33]) == "00000002,00000001"
    assert render_template("{{ l | csv }}", {"l": [1, 2, 3]}) == "1,2,3"


# -- parameters -----------------------------------------------------------------------------


def test_resolve_types_defaults_and_powers() -> None:
    r = load_recipe("iptables-nat44")
    v = r.resolve({"private_if": "a", "public_if": "b", "conntrack_max": "2^23", "snat_ports": "1024-2047",
                   "nat": "snat", "public_address": "198.19.0.1/24"})  # fmt: skip
    assert v["conntrack_max"] == 8388608
    assert v["snat_ports"] == PortRange(1024, 2047)
    assert v["udp_timeout"] == 300 and v["hashsize"] is None and v["host_settings"] is False
    assert r.resolve(v) == v  # resolving a resolved dict changes nothing


def test_an_explicit_null_takes_the_parameter_default() -> None:
    """``udp_timeout: null`` (or ``~``) in a campaign is "not given": the recipe's default applies, never None."""
    r = load_recipe("iptables-nat44")
    base = {"private_if": "a", "public_if": "b"}
    assert r.params["udp_timeout"].default == 300
    assert r.resolve({**base, "udp_timeout": None})["udp_timeout"] == 300
    assert r.resolve({**base, "udp_timeout": None}) == r.resolve(base)
    with pytest.raises(RecipeError, match="required"):
        r.resolve({"private_if": None, "public_if": "b"})  # null does not satisfy a required parameter


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"public_if": "b"}, "private_if", "required"),
        ({"private_if": "a", "public_if": "b", "conntrack_maxx": 1}, "conntrack_maxx", "unknown parameter"),
        ({"private_if": "a", "public_if": "b", "conntrack_max": 0}, "conntrack_max", "below the minimum"),
        ({"private_if": "a", "public_if": "b", "conntrack_max": "lots"}, "conntrack_max", "integer"),
        ({"private_if": "a", "public_if": "b", "conntrack_max": True}, "conntrack_max", "integer"),
        ({"private_if": "a", "public_if": "b", "nat": "dnat"}, "nat", "not one of"),
        ({"private_if": "a", "public_if": "b", "public_address": "198.19.0.1"}, "public_address", "prefix length"),
        ({"private_if": "a", "public_if": "b", "public_address": "2001::1/64"}, "public_address", "IPv4"),
        ({"private_if": "a", "public_if": "b", "snat_ports": "0-10"}, "snat_ports", "port range"),
        ({"private_if": "a/b", "public_if": "b"}, "private_if", "interface name"),
        ({"private_if": "a", "public_if": "b", "nat": "snat"}, "public_address", "snat needs public_address"),
    ],
)
def test_resolve_errors_name_file_line_and_field(params: dict[str, Any], field: str, words: str) -> None:
    r = load_recipe("iptables-nat44")
    with pytest.raises(RecipeError) as err:
        r.resolve(params)
    assert err.value.field == field
    assert err.value.file is not None and err.value.file.endswith("iptables-nat44.yaml")
    assert err.value.line is not None and err.value.line > 0
    assert words in str(err.value)


def test_resolve_errors_point_into_a_campaign_file_when_given_one() -> None:
    from natbench.config.source import parse_yaml

    params, source = parse_yaml("private_if: a\npublic_if: b\nconntrack_max: -5\n", "campaign.yaml")
    with pytest.raises(RecipeError) as err:
        load_recipe("iptables-nat44").resolve(
            params, file="campaign.yaml", field_prefix="testbed.duts[0].params.", source=source
        )
    assert str(err.value).startswith("campaign.yaml:3: testbed.duts[0].params.conntrack_max: ")


# -- malformed recipes ---------------------------------------------------------------------------

GOOD = """\
recipe: t
params:
  a: {type: int, default: 1}
steps:
  setup:
    - echo {{ a }}
  teardown:
    - echo bye
"""


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (GOOD.replace("recipe: t", "recipe: t\nbogus: 1"), 2, "bogus", "unknown key"),
        (GOOD.replace("{type: int, default: 1}", "{type: integer}"), 3, "params.a.type", "unknown type"),
        (GOOD.replace("{type: int, default: 1}", "{type: int, default: x}"), 3, "params.a.default", "bad default"),
        (GOOD.replace("echo {{ a }}", "echo {{ b }}"), 6, "steps.setup[0].run", "unknown template variable 'b'"),
        (GOOD.replace("echo {{ a }}", "echo {{ a | shout }}"), 6, "steps.setup[0].run", "unknown filter"),
        (GOOD.replace("echo {{ a }}", "echo {{ a }"), 6, "steps.setup[0].run", "unbalanced"),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      when: a >> 3"),
            7,
            "steps.setup[0].when",
            "condition",
        ),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      parse: magic"),
            6,
            "steps.setup[0].parse",
            "unknown parser",
        ),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      timed: true"),
            6,
            "steps.setup[0].timed",
            "timed_flush",
        ),
        (GOOD.replace("    - echo {{ a }}", "    - run: echo\n      scope: moon"), 7, "steps.setup[0].scope", "scope"),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      timeout: -1"),
            7,
            "steps.setup[0].timeout",
            "positive",
        ),
        (GOOD + "  count_connections:\n    - conntrack -C\n", 9, "steps.count_connections", "parser"),
        (GOOD + "  timed_flush:\n    - conntrack -F\n", 9, "steps.timed_flush", "timed: true"),
        (GOOD + "  set_cores: {builtin: magic}\n", 9, "steps.set_cores.builtin", "unknown builtin"),
        (GOOD.replace("  teardown:\n    - echo bye\n", ""), None, "steps", "teardown"),
        (GOOD + "  setup: []\n", 9, "steps.setup", "duplicate key 'setup' (first defined on line 5)"),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      run: echo again"),
            7,
            "steps.setup[0].run",
            "duplicate key 'run' (first defined on line 6)",
        ),
        (GOOD.replace("    - echo {{ a }}", "    - {run: echo, run: x}"), 6, "steps.setup[0].run", "duplicate key"),
        (GOOD.replace("default: 1}", "default: 1, default: 2}"), 3, "params.a.default", "duplicate key 'default'"),
        (
            GOOD.replace("params:", "checks:\n  - {when: a, when: b, error: x}\nparams:"),
            3,
            "checks[0].when",
            "duplicate key 'when' (first defined on line 3)",
        ),
        (
            GOOD.replace("    - echo {{ a }}", "    - run: echo\n      interfaces: [[0, {x: 1, x: 2}]]"),
            7,
            "steps.setup[0].interfaces[0][1].x",
            "duplicate key 'x' (first defined on line 7)",
        ),
        (
            GOOD.replace("params:", "checks:\n  - {when: zz, error: nope}\nparams:"),
            3,
            "checks[0].when",
            "unknown parameter",
        ),
        ("recipe: [\n", 2, None, "malformed YAML"),
    ],
)
def test_bad_recipes_get_one_error_with_file_line_field(
    text: str, line: int | None, field: str | None, words: str
) -> None:
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, "bad.yaml")
    e = err.value
    assert e.file == "bad.yaml"
    assert e.line == line, str(e)
    assert e.field == field, str(e)
    assert words in str(e)
    assert str(e).startswith("bad.yaml")


def test_a_key_merged_in_with_yaml_merge_can_be_overridden() -> None:
    merged = GOOD.replace("a: {type: int, default: 1}", "a: &int {type: int, default: 1}\n  b: {<<: *int, default: 2}")
    r = parse_recipe(merged.replace("echo {{ a }}", "echo {{ a }} {{ b }}"), "t.yaml")
    assert r.render("setup", {}) == ["echo 1 2"]  # b's own default wins over the merged one
    with pytest.raises(RecipeError) as err:  # the mapping's own keys still may not repeat
        parse_recipe(merged.replace("default: 2}", "default: 2, default: 3}"), "t.yaml")
    assert str(err.value) == "t.yaml:4: params.b.default: duplicate key 'default' (first defined on line 4)"


def test_unknown_recipe_name_lists_the_known_ones() -> None:
    with pytest.raises(RecipeError, match=r"unknown recipe 'ipchains'.*iptables-nat44"):
        load_recipe("ipchains")
    with pytest.raises(RecipeError, match="not found"):
        load_recipe("/nonexistent/x.yaml")


def test_conditions_and_saved_values() -> None:
    r = parse_recipe(
        GOOD.replace(
            "    - echo {{ a }}",
            "    - run: cat x\n      save: old\n    - run: echo one\n      when: a == 1 and not b\n"
            "    - run: echo two\n      when: a in [2, 3] or b\n    - run: echo {{ old }}\n      when: old",
        ).replace("a: {type: int, default: 1}", "a: {type: int, default: 1}\n  b: {type: bool, default: false}"),
        "t.yaml",
    )
    assert r.render("setup", {}) == ["cat x", "echo one"]
    assert r.render("setup", {"a": 3}) == ["cat x", "echo two"]
    assert r.render("setup", {"b": True}) == ["cat x", "echo two"]
    assert r.render("setup", {}, {"old": "v a"}) == ["cat x", "echo one", "echo 'v a'"]


def test_netns_key_prefixes_ip_netns_exec() -> None:
    r = parse_recipe(
        GOOD.replace("    - echo {{ a }}", "    - run: iptables -t nat -S\n      netns: '{{ ns }}'").replace(
            "a: {type: int, default: 1}", "ns: {type: str, pattern: '[A-Za-z0-9 ]+', default: napt}"
        ),
        "t.yaml",
    )
    assert r.render("setup", {}) == ["ip netns exec napt iptables -t nat -S"]
    assert r.render("setup", {"ns": "CE 11b"}) == ["ip netns exec 'CE 11b' iptables -t nat -S"]


def test_recipe_text_keeps_shell_variables_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    """Campaigns substitute ${NATBENCH_*}; a recipe is shell text and keeps every ${...} and $$ as written."""
    monkeypatch.setenv("NATBENCH_X", "substituted")
    r = parse_recipe(GOOD.replace("echo {{ a }}", "x=2; echo ${x} $$ '${NATBENCH_X}' {{ a }}"), "t.yaml")
    assert r.render("setup", {}) == ["x=2; echo ${x} $$ '${NATBENCH_X}' 1"]
    with pytest.raises(RecipeError, match=r"cannot read \$NATBENCH_X: a command expands only variables it assigns"):
        parse_recipe(GOOD.replace("echo {{ a }}", "echo ${NATBENCH_X} {{ a }}"), "t.yaml")


def test_numbers_and_port_ranges_follow_the_campaign_grammar() -> None:
    r = load_recipe("iptables-nat44")
    base = {"private_if": "a", "public_if": "b", "nat": "snat", "public_address": "198.19.0.1/24"}
    assert r.resolve({**base, "conntrack_max": "4M"})["conntrack_max"] == 4_000_000
    assert r.resolve({**base, "conntrack_max": "2^20"})["conntrack_max"] == 2**20
    for ports in ("1024-2047", [1024, 2047], {"first": 1024, "last": 2047}, {"first": 1024, "count": 1024}):
        assert r.resolve({**base, "snat_ports": ports})["snat_ports"] == PortRange(1024, 2047)
    assert r.resolve({**base, "snat_ports": 1024})["snat_ports"] == PortRange(1024, 1024)  # one port, not a count


def test_a_recipe_path_in_a_campaign_is_relative_to_the_campaign_file() -> None:
    assert recipe_reference("my.yaml", Path("/c")) == "/c/my.yaml"
    assert recipe_reference("recipes/my", Path("/c")) == "/c/recipes/my"
    assert recipe_reference("/abs/my.yaml", Path("/c")) == "/abs/my.yaml"
    assert recipe_reference("iptables-nat44", Path("/c")) == "iptables-nat44"  # a name is searched
    assert recipe_reference("my.yaml", None) == "my.yaml"


def test_an_unknown_key_names_the_keys_allowed_there() -> None:
    with pytest.raises(RecipeError) as err:
        parse_recipe(GOOD.replace("    - echo {{ a }}", "    - {run: echo, tiemout: 5}"), "t.yaml")
    assert str(err.value).startswith("t.yaml:6: steps.setup[0].tiemout: unknown key; did you mean 'timeout'? ")
