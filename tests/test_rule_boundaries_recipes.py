"""Where a recipe value may start with '-', at its boundaries (natbench.duts.recipes.shell.value_problem, the
resolve-time check of natbench.duts.recipes.params; docs/recipes.md):

* a placeholder glued to literal text (``--comment={{ x }}``) may take a value starting with '-' as its first word,
  never as a later word of a list value: each later item is a word of its own, which a program reads as an option;
* a ``netns:`` value is checked against its place (``ip netns exec NS``) when the campaign's values are resolved,
  naming the campaign's field and the recipe's line, before anything renders or runs."""

from __future__ import annotations

import pytest

from natbench.duts.recipes import parse_recipe
from natbench.duts.recipes.shell import analyze, value_problem
from natbench.duts.recipes.template import render_template
from natbench.duts.recipes.values import RUNTIME
from natbench.errors import RecipeError


def recipe(commands: str, params: str) -> str:
    return (
        "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\nparams:\n"
        + params
        + "steps:\n  setup:\n"
        + commands
    )


GLUED = "iptables -A FORWARD -m comment --comment={{ l }} -j ACCEPT"


def test_a_glued_placeholders_first_word_may_start_with_a_dash_its_later_words_may_not() -> None:
    (slot,) = analyze(GLUED)
    assert not slot.word_start
    assert value_problem(slot, "-a", True, RUNTIME) is None  # --comment=-a: one word, the option's value
    problem = value_problem(slot, "-b", False, RUNTIME)
    assert problem is not None and "starts with '-': iptables would read it as an option" in problem
    assert value_problem(slot, "b", False, RUNTIME) is None


def test_a_list_value_glued_to_text_is_refused_when_a_later_item_starts_with_a_dash() -> None:
    slots = analyze(GLUED)
    assert render_template(GLUED, {"l": ["-a", "b"]}, slots=slots).endswith("--comment=-a b -j ACCEPT")
    with pytest.raises(ValueError, match="l: '-b' starts with '-'"):
        render_template(GLUED, {"l": ["a", "-b"]}, slots=slots)


def test_a_campaigns_list_value_glued_to_text_is_checked_before_anything_runs() -> None:
    r = parse_recipe(recipe(f"    - {GLUED}\n", "  l: {type: list, items: str, default: [a]}\n"), "r.yaml")
    assert r.resolve({"l": ["-a", "b"]})["l"] == ["-a", "b"]
    with pytest.raises(RecipeError) as info:
        r.resolve({"l": ["a", "-b"]}, file="c.yaml")
    assert info.value.field == "l" and info.value.file == "c.yaml"
    assert "'-b' starts with '-'" in info.value.message and "(recipe t, line 9)" in info.value.message


NETNS = recipe("    - {run: ip link show, netns: '{{ ns }}'}\n", "  ns: {type: str, default: blue}\n")


def test_a_netns_value_is_checked_against_its_place_when_the_campaign_is_resolved() -> None:
    r = parse_recipe(NETNS, "r.yaml")
    with pytest.raises(RecipeError) as info:
        r.resolve({"ns": "-all"}, file="c.yaml")
    assert info.value.field == "ns" and info.value.file == "c.yaml"
    assert "'-all' starts with '-': ip would read it as an option" in info.value.message
    assert "(recipe t, line 9)" in info.value.message


def test_a_plain_netns_value_resolves_and_renders() -> None:
    r = parse_recipe(NETNS, "r.yaml")
    assert r.resolve({"ns": "red"}, file="c.yaml")["ns"] == "red"
    assert r.render("setup", {"ns": "red"}) == ["ip netns exec red ip link show"]
