"""How a campaign's values resolve into a recipe's parameters, and how a bad one is named, at the boundaries
(natbench.duts.recipes.resolve; Recipe.resolve; docs/recipes.md):

* the file an error names: the campaign's (or ``--param``) when given, else the recipe's;
* its line: with a source map, the campaign's line of the field (of its ``params`` mapping for a missing one); with a
  campaign named but no lines, none (never a line of the recipe's file); against the recipe alone, the line of the
  parameter, check or ``params:`` section;
* its message: the parameters a recipe declares, sorted (``none``); a missing one's doc, else its type;
* its field: the parameter, or a check's own field, else ``params``;
* an optional parameter left unset renders nothing and is not checked in place."""

from __future__ import annotations

from typing import Any

import pytest

from natbench.config.source import parse_yaml
from natbench.duts.recipes import Recipe, parse_recipe
from natbench.errors import RecipeError

HEAD = "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\n"
TEXT = (
    HEAD
    + "checks:\n"  # 5
    + "  - {when: b == 7, error: b too big, field: b}\n"  # 6
    + "  - {when: b == 3, error: not three}\n"  # 7
    + "params:\n"  # 8
    + "  b: {type: int, default: 1}\n"  # 9
    + "  a: {type: int, required: true, doc: the table size}\n"  # 10
    + "  c: {type: int, required: true}\n"  # 11
    + "steps:\n  setup:\n    - ip link\n"
)
GOOD = {"a": 1, "c": 2}


@pytest.fixture(scope="module")
def r() -> Recipe:
    return parse_recipe(TEXT, "r.yaml")


def error(r: Recipe, params: dict[str, Any] | None, **kw: Any) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        r.resolve(params, **kw)
    return info.value


def test_nothing_given_is_the_defaults() -> None:
    r = parse_recipe(HEAD + "params:\n  b: {type: int, default: 1}\nsteps:\n  setup:\n    - ip link\n", "r.yaml")
    assert r.resolve(None) == {"b": 1} and r.resolve({}) == {"b": 1}
    assert r.resolve({"b": 4}) == {"b": 4} and r.resolve({"b": None}) == {"b": 1}


def test_an_error_names_the_campaigns_file_when_given_else_the_recipes(r: Recipe) -> None:
    assert error(r, {**GOOD, "b": "x"}, file="c.yaml").file == "c.yaml"
    assert error(r, {**GOOD, "b": "x"}).file == "r.yaml"
    assert error(r, {**GOOD, "b": "x"}).message.endswith(", got 'x' (recipe t, type int)")


@pytest.mark.parametrize(
    ("params", "field", "recipe_line"),
    [
        ({**GOOD, "b": "x"}, "b", 9),  # a bad value: the parameter's line
        ({**GOOD, "zz": 1}, "zz", 8),  # an unknown one: the line of params:
        ({"c": 2}, "a", 10),  # a missing one: its declaration
        ({**GOOD, "b": 7}, "b", 9),  # a check with a field: that parameter's line
        ({**GOOD, "b": 3}, "params", 7),  # a check without one: the check's line
    ],
)
def test_an_error_of_a_campaign_without_lines_has_no_line_of_the_recipes_file(
    r: Recipe, params: dict[str, Any], field: str, recipe_line: int
) -> None:
    alone = error(r, params)
    assert (alone.file, alone.line, alone.field) == ("r.yaml", recipe_line, field)
    campaign = error(r, params, file="c.yaml", field_prefix="duts.d.params.")
    assert (campaign.file, campaign.line, campaign.field) == ("c.yaml", None, "duts.d.params." + field)


def test_an_unknown_parameter_of_a_recipe_without_params_has_no_line() -> None:
    r = parse_recipe(HEAD + "steps:\n  setup:\n    - ip link\n", "r.yaml")
    e = error(r, {"zz": 1})
    assert (e.line, e.field) == (None, "zz")
    assert e.message == "unknown parameter of recipe t (it declares: none)"


def test_an_unknown_parameter_is_refused_whatever_its_value(r: Recipe) -> None:
    for value in (None, 0, "", "x"):
        assert error(r, {**GOOD, "zz": value}).message == "unknown parameter of recipe t (it declares: a, b, c)"


def test_a_missing_parameter_is_described_by_its_doc_else_its_type(r: Recipe) -> None:
    assert error(r, {"c": 2}).message == "required by recipe t (the table size) but not given"
    assert error(r, {"a": 1}).message == "required by recipe t (int) but not given"


CAMPAIGN = "# the params of a DUT\n\nb: 2\nzz: 1\n"  # the mapping starts on line 3


def test_with_the_campaigns_source_an_error_is_on_the_line_of_its_field(r: Recipe) -> None:
    given, source = parse_yaml(CAMPAIGN, "c.yaml")
    e = error(r, {**given, **GOOD}, file="c.yaml", source=source)
    assert (e.file, e.line, e.field) == ("c.yaml", 4, "zz")
    given, source = parse_yaml("# x\na: 1\nc: 2\n\nb: x\n", "c.yaml")
    assert error(r, given, file="c.yaml", source=source).line == 5
    given, source = parse_yaml("# x\n\nc: 2\nb: 7\n", "c.yaml")  # a missing parameter: the params mapping's line
    e = error(r, given, file="c.yaml", source=source)
    assert (e.line, e.field) == (3, "a")


def test_a_check_names_its_field_or_params(r: Recipe) -> None:
    assert (error(r, {**GOOD, "b": 7}).field, error(r, {**GOOD, "b": 3}).field) == ("b", "params")
    assert error(r, {**GOOD, "b": 7}).message == "b too big (recipe t)"
    assert r.resolve({**GOOD, "b": 6})["b"] == 6


def test_an_optional_parameter_left_unset_is_not_checked_in_its_place() -> None:
    r = parse_recipe(
        HEAD + "params:\n  n: {type: int}\nsteps:\n  setup:\n    - {run: 'x={{ n }}; echo $((x + 1))', when: n}\n",
        "r.yaml",
    )
    assert r.resolve({}) == {"n": None} and r.render("setup", {}) == []
    assert r.render("setup", {"n": 4}) == ["x=4; echo $((x + 1))"]


LIST = "{type: list, items: str, default: [a]}"


@pytest.mark.parametrize(
    ("command", "declaration", "value", "problem"),
    [
        ("ip link set {{ v | first }} up", LIST, [], "filter 'first' of an empty list has no item"),
        ("ip link set {{ v | last }} up", LIST, [], "filter 'last' of an empty list has no item"),
        ("n={{ v | len }}; echo $((n + 1))", "{type: int, default: 1}", 3, "filter 'len' does not apply to '3'"),
        ("echo x {{ v | hexmask }} > /tmp/f", "{type: float, default: 1.0}", 2.5, "filter 'hexmask' does not apply"),
    ],
)
def test_a_filter_that_does_not_apply_is_left_to_rendering_which_names_it_in_one_line(
    command: str, declaration: str, value: Any, problem: str
) -> None:
    """Resolving cannot know whether the command renders (its ``when:``); rendering it says what is wrong."""
    r = parse_recipe(HEAD + f"params:\n  v: {declaration}\nsteps:\n  setup:\n    - {command}\n", "r.yaml")
    assert r.resolve({"v": value})["v"] == value
    with pytest.raises(RecipeError) as info:
        r.render("setup", {"v": value})
    assert (info.value.file, info.value.line, info.value.field) == ("r.yaml", 9, "steps.setup.run")
    assert problem in info.value.message and "\n" not in str(info.value)


def test_a_command_guarded_against_an_empty_list_takes_its_first_item_only_when_there_is_one() -> None:
    r = parse_recipe(
        HEAD + f"params:\n  v: {LIST}\nsteps:\n  setup:\n"
        "    - {run: 'ip link set {{ v | first }} up', when: v}\n",
        "r.yaml",
    )
    assert r.resolve({"v": []}) == {"v": []} and r.render("setup", {"v": []}) == []
    assert r.render("setup", {"v": ["eth1", "eth2"]}) == ["ip link set eth1 up"]
