"""Where a recipe's placeholders may stand (natbench.duts.recipes.shell) and what values may go there.

The tokenizer's verdict on each kind of place, the load-time error naming file, line and field, the
resolve-time check naming the campaign's parameter, the render-time check of values natbench supplies,
and the linear-time pattern engine.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from natbench.duts.recipes import load_recipe, parse_recipe
from natbench.duts.recipes.regex import check_pattern, pattern_matches
from natbench.duts.recipes.shell import (
    ARGUMENT,
    ASSIGNMENT,
    CONFIG,
    OPERAND,
    REDIRECT,
    ShellStructureError,
    analyze,
    word_problem,
)
from natbench.errors import RecipeError

REFUSED = [
    ("cat <<EOF\n{{ x }}\nEOF", "heredoc"),
    ("cat <<{{ x }}", "heredoc"),
    ("echo a # {{ x }}", "comment"),
    ("echo \\{{ x }}", "backslash"),
    ("echo a \\\n{{ x }}", "continued by a backslash"),
    ("eval echo {{ x }}", "runs 'eval'"),
    ("sh -c {{ x }}", "runs 'sh'"),
    ("bash -c 'echo $1' x {{ x }}", "runs 'bash'"),
    ("echo {{ x }} | xargs sh -c 'echo'", "runs 'xargs'"),
    ("echo {{ x }} | sh", "runs 'sh'"),
    ('x={{ x }}; eval "$x"', "runs 'eval'"),
    ("echo {{ x }} > f; . f", "runs '.'"),
    ("sudo -u root bash -c true {{ x }}", "runs 'bash'"),
    ("env -S 'sh -c x' {{ x }}", "runs 'env -S'"),
    ("python3.11 -c pass {{ x }}", "runs 'python3.11'"),
    ("echo $(( {{ x }} + 1 ))", "arithmetic"),
    ("echo $[ {{ x }} ]", "arithmetic"),
    ("(( {{ x }} ))", "inside (( ))"),
    ("[[ {{ x }} -eq 1 ]]", "inside [[ ]]"),
    ("echo ${a:-{{ x }}}", "inside ${...}"),
    ("echo `echo {{ x }}`", "backquotes"),
    ("echo '{{ x }}'", "inside shell quotes"),
    ('echo "{{ x }}"', "inside shell quotes"),
    ('echo "$(echo {{ x }})"', "inside shell quotes"),
    ("echo $'{{ x }}'", "inside shell quotes"),
    ("{{ x }} --version", "command name"),
    ("echo $({{ x }})", "command name"),
    ("if {{ x }}; then :; fi", "command name"),
    ("sudo {{ x }}", "the command sudo runs"),
    ("timeout 5 {{ x }}", "the command timeout runs"),
    ("nice -n 5 {{ x }}", "the command nice runs"),
    ("ip netns exec ns {{ x }}", "the command ip runs"),
    ("a[{{ x }}]=1", "variable name"),
    ("printf {{ x }}", "printf's format"),
    ("printf -v {{ x }} %s a", "printf's -v name"),
    ("printf -- {{ x }}", "printf's format"),
    ("[ -v {{ x }} ]", "follows '-v' of test"),
    ("case {{ x }} in a) ;; esac", "follows 'case'"),
    ("echo {{ x }} 'x", "cannot follow the shell structure"),
    ("echo {{ x }} )", "cannot follow the shell structure"),
]


@pytest.mark.parametrize(("template", "why"), REFUSED, ids=[t for t, _ in REFUSED])
def test_a_placeholder_where_a_quoted_value_is_not_data_is_refused(template: str, why: str) -> None:
    with pytest.raises(ShellStructureError) as info:
        analyze(template)
    assert why in str(info.value)


ALLOWED: list[tuple[str, list[tuple[str, str, bool, str]]]] = [
    ("ip link set {{ x }} up", [("x", ARGUMENT, True, "ip")]),
    ("iptables --comment={{ x }}", [("x", ARGUMENT, False, "iptables")]),
    ("grep -e a -- {{ x }}", [("x", OPERAND, True, "grep")]),
    ("v={{ x }}; echo $v", [("x", ASSIGNMENT, True, "the shell")]),
    ("echo a > {{ f }}", [("f", REDIRECT, True, "echo")]),
    ("echo {{ x }} >> {{ f }}", [("x", CONFIG, True, "echo"), ("f", REDIRECT, True, "echo")]),
    ("printf '%s\\n' {{ x }} > f", [("x", CONFIG, True, "printf")]),
    ("echo {{ x }} | ip netns exec n tee f", [("x", CONFIG, True, "echo")]),
    ("echo {{ x }} > /dev/null", [("x", ARGUMENT, True, "echo")]),
    ("nft add rule ip t c oifname {{ x }} counter", [("x", CONFIG, True, "nft")]),
    ("for i in {{ x }}; do echo $i; done", [("x", ASSIGNMENT, True, "for")]),
    ("ip netns exec {{ n }} ip link", [("n", ARGUMENT, True, "ip")]),
    ("sudo -u {{ u }} ip link", [("u", ARGUMENT, True, "sudo")]),
    ("x=$(cat {{ f }})", [("f", ARGUMENT, True, "cat")]),
]


@pytest.mark.parametrize(("template", "slots"), ALLOWED, ids=[t for t, _ in ALLOWED])
def test_each_allowed_place_has_its_kind(template: str, slots: list[tuple[str, str, bool, str]]) -> None:
    assert [(s.name, s.kind, s.word_start, s.program) for s in analyze(template)] == slots


def test_a_placeholder_inside_a_command_substitution_is_spliced() -> None:
    (slot,) = analyze("ip link set $(cat {{ f }}) up")
    assert slot.spliced
    assert word_problem(slot, "a b", True) is not None  # the shell would split it into two arguments
    assert word_problem(slot, "eth0", True) is None


@pytest.mark.parametrize(
    ("template", "word", "problem"),
    [
        ("ip link set {{ x }} up", "-all", "ip would read it as an option"),
        ("ip link set {{ x }} up", "a b;c", None),  # one quoted argument
        ("grep -- {{ x }}", "-v", None),  # after --
        ("iptables --comment={{ x }}", "-x", None),  # not at the start of its word
        ("echo {{ x }} > f", "em0 } pass", "must be one plain token"),
        ("echo {{ x }} > f", "00ff0000,00000001", None),  # a CPU mask
        ("echo {{ x }} > f", "1:00:00.500", None),  # Jool's timeout format
        ("v={{ x }}", "a[$(id)]", "must be one plain token"),
        ("v={{ x }}", "-5", "starts with '-'"),
    ],
)
def test_values_are_checked_against_their_place(template: str, word: str, problem: str | None) -> None:
    (slot,) = analyze(template)
    found = word_problem(slot, word, True)
    assert (found is None) if problem is None else (found is not None and problem in found)


def recipe(commands: str, params: str = "  v: {type: str, default: a}\n") -> str:
    return (
        "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\nparams:\n"
        + params
        + "steps:\n  setup:\n"
        + commands
    )


def test_a_refused_place_names_file_line_and_field() -> None:
    text = recipe("    - ip link\n    - eval echo {{ v }}\n")
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, "r.yaml")
    assert str(info.value).startswith("r.yaml:10: steps.setup[1].run: placeholder {{ v }} is in a command that runs")


def test_a_list_may_not_be_assigned_and_a_script_may_not_run_a_written_file() -> None:
    lists = "  l: {type: list, items: str, default: [a, b]}\n"
    with pytest.raises(RecipeError, match="is a list"):
        parse_recipe(recipe("    - x={{ l }}; echo $x\n", lists), "r.yaml")
    parse_recipe(recipe("    - x={{ l | csv }}; echo $x\n", lists), "r.yaml")  # one word
    script = r"r.yaml:10: steps.setup\[1\].run: runs a shell script from a file while the command on line 9"
    with pytest.raises(RecipeError, match=script):
        parse_recipe(recipe("    - echo {{ v }} > /tmp/s\n    - sh /tmp/s\n"), "r.yaml")


def test_a_namespace_is_one_word() -> None:
    with pytest.raises(RecipeError, match="a namespace is one word"):
        parse_recipe(recipe("    - {run: ip link, netns: 'a {{ v }}'}\n"), "r.yaml")


def test_campaign_values_are_checked_against_every_place_before_anything_runs() -> None:
    ipt = load_recipe("iptables-nat44")
    with pytest.raises(RecipeError) as info:
        ipt.resolve({"private_if": "eth0", "public_if": "eth1", "rule_comment": "--help"}, file="c.yaml")
    assert info.value.field == "rule_comment"
    assert "'--help' starts with '-': iptables would read it as an option" in info.value.message
    with pytest.raises(RecipeError, match="not starting with '-'"):
        ipt.resolve({"private_if": "-all", "public_if": "eth1"})
    pf = load_recipe("openbsd-pf-nat64")
    base: dict[str, Any] = {"private_if": "em0", "public_if": "em1", "pool4": "198.19.0.1"}
    with pytest.raises(RecipeError, match="must be one plain token") as info:
        pf.resolve({**base, "skip_ifs": ["lo", "em2#x"]})
    assert info.value.field == "skip_ifs"
    with pytest.raises(RecipeError, match="scope"):
        pf.resolve({**base, "pool6": "64:ff9b::%x/96"})
    assert "nat-to" not in " ".join(pf.render("setup", base))  # the nat64 ruleset renders as before


def test_a_value_natbench_supplies_is_checked_when_it_is_rendered() -> None:
    ipt = load_recipe("iptables-nat44")
    params = {"private_if": "eth0", "public_if": "eth1"}
    with pytest.raises(RecipeError) as info:
        ipt.render("teardown", params, {"orig_ip_forward": "1; reboot"})
    assert "orig_ip_forward: '1; reboot' is written by echo and must be one plain token" in str(info.value)
    assert "echo 1 > /proc/sys/net/ipv4/ip_forward" in ipt.render("teardown", params, {"orig_ip_forward": "1"})


def test_the_shipped_recipes_load_and_every_command_is_analyzed() -> None:
    from natbench.duts.recipes import list_recipes

    shipped = [n for n, p in list_recipes().items() if p.parent.name == "dut_recipes"]
    assert len(shipped) == 11
    slots = sum(len(analyze(c.run)) for n in shipped for s in load_recipe(n).steps.values() for c in s.commands)
    assert slots > 300


def test_patterns_match_in_linear_time() -> None:
    """(?:a?){28}a{28} takes 7 s at 28 characters in Python's re; RE2 answers at once, also at 256."""
    started = time.process_time()
    assert pattern_matches("(?:a?){28}a{28}", "a" * 28)
    assert not pattern_matches("(?:a?){28}a{28}", "a" * 60)
    assert not pattern_matches("(a+)+$", "a" * 255 + "!")
    assert not pattern_matches("(a|ab)*c", "ab" * 128)
    assert time.process_time() - started < 0.5
    with pytest.raises(ValueError, match="invalid escape sequence"):
        check_pattern(r"(a)\1")
    with pytest.raises(ValueError, match="at most 512 characters"):
        check_pattern("a" * 513)
    with pytest.raises(ValueError, match="bad regular expression"):
        check_pattern("(?=a)a")
