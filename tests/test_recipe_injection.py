"""Injection tests: hostile values in every placeholder position of every shipped recipe (and of a recipe
using every kind of place the shell check allows), rendered and executed by dash and bash against
recording stubs (tests/recipe_injection.py says how); every escape counted, and the count must be 0.

A value reaches a command by two roads: a campaign parameter (type-checked, then place-checked when the
campaign is validated) and a value natbench supplies at run time (a command's saved output, the DUT's
name), which only the place check of every rendering meets. The tests send every payload down the second,
narrower road on purpose: the place check alone must hold.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from recipe_injection import (
    PAYLOADS,
    SHELLS,
    Position,
    Tally,
    base_variables,
    config_syntax,
    escapes,
    make_parents,
    positions,
    render_case,
    run_cases,
    sandbox_text,
)

from natbench.duts.recipes import list_recipes, load_recipe, parse_recipe

SHIPPED = sorted(n for n, p in list_recipes().items() if p.parent.name == "dut_recipes")

# A recipe whose commands put placeholders in every kind of place the shell check lets a value stand:
# arguments, operands after --, assignments and their uses, redirection files, text written into a file (echo,
# printf, tee, with and without a declared format) and nft's rules, a $( ) whose output is split, a for list, a
# namespace, a number heading a written line, arithmetic through a variable, a command written as a list.
PLACES = """
recipe: places
description: every kind of place a value may stand
family: forwarding
os: linux
stateful: false
params:
  v: {type: str, pattern: "[A-Za-z0-9_.:/,+ -]+", default: a}
  w: {type: str, default: b}
  n: {type: int, default: 1}
  ns: {type: str, default: n}
  f: {type: str, default: out.txt}
steps:
  setup:
    - ip link set {{ v }} up
    - iptables -A x -m comment --comment {{ v }} --to-source={{ w }}:{{ v }}
    - grep -e x -- {{ v }} {{ w }}
    - x={{ v }}; ip route show dev "$x"; echo a "$x" > {{ f }}
    - echo a {{ v }} {{ w }} > {{ f }}
    - run: echo set skip on '{' {{ v }} '}' >> {{ f }}
      format: pf.conf
    - printf 'k %s %s\\n' {{ v }} {{ w }} > {{ f }}
    - echo a {{ v }} | tee {{ f }}
    - echo a {{ v }} | ip netns exec {{ ns }} tee -a {{ f }}
    - nft add rule ip t c oifname {{ v }} counter
    - ip link set $(cat {{ v }}) up
    - for i in {{ v }} {{ w }}; do ip link set "$i" up; done
    - run: ip link show {{ v }}
      netns: "{{ ns }}"
    - cat < {{ f }} > {{ w }} 2>&1
    - "[ $(cat {{ f }}) = {{ v }} ] || echo a {{ w }} > {{ f }}"
    - echo {{ n }} > {{ f }}
    - n={{ n }}; echo $((n + 1)) > {{ f }}
    - sysctl -w net.x={{ v }}
    - run: [ip, link, set, "{{ v }}", up]
"""


def _attack(recipe_names: list[str], tmp_path: Path, extra: str | None = None) -> Tally:
    tally = Tally()
    cases: list[tuple[str, str]] = []
    meta: dict[str, tuple[str, Position, str]] = {}
    formats: dict[str, str | None] = {}
    for name in recipe_names:
        recipe = load_recipe(name) if extra is None else parse_recipe(extra, str(tmp_path / "places.yaml"))
        sandbox = tmp_path / "sandbox" / recipe.name
        sandbox.mkdir(parents=True)
        variables = base_variables(recipe, sandbox)
        for pos in positions(recipe):
            for payload in PAYLOADS:
                tally.tried += 1
                text = render_case(recipe, pos, payload, variables, sandbox)
                if text is None:
                    tally.refused += 1
                    continue
                make_parents(text, sandbox)
                case_id = f"c{len(cases)}"
                cases.append((case_id, text))
                meta[case_id] = (recipe.name, pos, payload)
                formats[case_id] = recipe.steps[pos.step].commands[pos.index].format
    for shell in SHELLS:
        results = run_cases(cases, tmp_path / shell, shell) if cases else {}
        assert len(results) == len(cases), f"{shell} ran {len(results)} of {len(cases)} cases"
        for case_id, outcome in results.items():
            tally.executed += 1
            recipe_name, pos, payload = meta[case_id]
            for kind in escapes(payload, outcome, formats[case_id]):
                tally.escapes.append(
                    f"{shell}: {recipe_name} {pos.step}[{pos.index}].{pos.key} {{{{ {pos.name} }}}}"
                    f" <- {payload!r}: {kind}"
                )
    written = sandbox_text(tmp_path / "sandbox")
    for payload in PAYLOADS:
        if config_syntax(payload) and payload in written:
            tally.escapes.append(f"{payload!r}: configuration syntax in a file of the sandbox")
    return tally


@pytest.mark.skipif(not (shutil.which("dash") and shutil.which("bash")), reason="needs dash and bash")
def test_no_payload_escapes_from_any_placeholder_of_the_shipped_recipes(tmp_path: Path) -> None:
    tally = _attack(SHIPPED, tmp_path)
    print(
        f"{len(SHIPPED)} recipes, {len(PAYLOADS)} payloads, {tally.tried:,} tries: {tally.refused:,} refused, "
        f"{tally.executed:,} executions ({' and '.join(SHELLS)}), {len(tally.escapes)} escapes"
    )
    assert len(SHIPPED) == 11
    assert tally.executed > 0  # values that fit their place do run: the test exercises the shells
    assert not tally.escapes, "\n".join(tally.escapes[:50])


@pytest.mark.skipif(not (shutil.which("dash") and shutil.which("bash")), reason="needs dash and bash")
def test_no_payload_escapes_from_any_kind_of_place_the_check_allows(tmp_path: Path) -> None:
    tally = _attack(["places"], tmp_path, PLACES)
    print(
        f"places: {tally.tried:,} tries, {tally.refused:,} refused, {tally.executed:,} executions, "
        f"{len(tally.escapes)} escapes"
    )
    assert tally.executed > 0
    assert not tally.escapes, "\n".join(tally.escapes[:50])


def test_the_harness_sees_each_kind_of_escape_when_there_is_one(tmp_path: Path) -> None:
    """The detectors work: unquoted or unchecked text that does escape is counted (a control for the 0 above)."""
    cases = [
        ("code", "ip link set ;nb_canary; up", ";nb_canary;"),
        ("option", "ip link set -NBOPT up", "-NBOPT"),
        ("after-dashes", "ip link set -- -NBOPT up", "-NBOPT"),
        ("config", "echo 'x NBCFG' > pf.conf", "x NBCFG"),
        ("nft", "nft add rule ip t c oifname 'x;NBCFG' counter", "x;NBCFG"),
        ("line", "echo 'x\nNBLINE' | tee f; printf '%s\\n' set 'NBLINE' > g", "x\nNBLINE"),
        ("input", "printf '%s\\n' 'flush ruleset' | nft -f -", "x\nflush ruleset"),
        ("script", "echo nb_canary > s.sh; sh s.sh", "nb_canary"),
        ("quiet", "echo pass quick on 'x NBLINE' > f", "x NBLINE"),
    ]
    results = run_cases([(c, text) for c, text, _ in cases], tmp_path, "dash")
    found = {case: escapes(payload, results[case]) for case, _, payload in cases}
    assert found == {
        "code": ["code"],
        "option": ["option of ip"],
        "after-dashes": [],  # after --, a leading '-' is no option
        "config": ["configuration syntax in a written file"],
        "nft": ["nft rule syntax"],
        "line": ["a line of its own in a written file"],
        "input": ["a line of its own in a program's input"],
        "script": ["code", "a line of its own in a written file"],
        "quiet": [],  # inside a line: no statement of its own
    }
