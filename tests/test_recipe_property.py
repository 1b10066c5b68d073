"""Property: a random recipe built from the whole shell grammar (not only the subset natbench reads), with a hostile
value, never lets the value escape. Either the checker refuses the recipe or the value, or the rendered commands
run under dash and bash (tests/recipe_injection.py: ``sh -c`` per command, stubs, real sh/cat/tee) without the
canary running, an option, or a line or statement of the value's own in a file, an input or nft's rule.

The grammar covers simple commands with any program (known ones, runners, wrappers, names spelt indirectly),
words glued from literals, quotes, placeholders, variables, substitutions and arithmetic, every redirection,
assignments, pipelines, lists, compound commands (groups, subshells, if, for, for ((...)), while, case), and
scripts run after they are written. ``NATBENCH_PROPERTY_EXAMPLES`` sets the number of recipes (default 300), and
``NATBENCH_PROPERTY_RANDOM=1`` draws them afresh (default: the same recipes every run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recipe_injection import PAYLOADS, SHELLS, escapes, render_runtime, run_each

from natbench.duts.recipes import Recipe, parse_recipe
from natbench.errors import RecipeError

EXAMPLES = int(os.environ.get("NATBENCH_PROPERTY_EXAMPLES", "300"))
FRESH = os.environ.get("NATBENCH_PROPERTY_RANDOM") == "1"

V = "{{ v }}"
_PROGRAMS = [
    # known to natbench, with the words they are usually given
    "ip link set", "ip addr add", "ip netns exec ns ip link set", "ip -n ns link set", "iptables -A x -o",
    "iptables -A x --comment", "iptables -j", "nft add rule ip t c oifname", "nft", "echo", "echo set skip on",
    "printf '%s\\n'", "printf 'k %s\\n'", "printf '%b\\n'", "tee", "tee -a", "cat", "sysctl -w net.x=", "sysctl -w",
    "jool -i", "kill", "sleep", "[", "grep -e x --", "mkdir -p", "rm -f", "modprobe", "conntrack -L", "awk",
    "perl -e 1", "date", "ethtool -K",
    # runners and wrappers, spelt plainly and indirectly
    "sh -c", "bash -c", "eval", "exec", "env", "command", "builtin", "xargs", "find . -exec", "timeout 1", "nice",
    "flock l -c", "sed -e", "python3 -c", "source", ".", "$x", '"$0" -c', "$BASH -c", "${SHELL:-sh} -c", "e\\val",
    "'eval'", "$(echo sh) -c", "/bin/da?h -c", "time -p", "ip netns e ns", "ip vrf exec red", "ip -all netns exec",
    "trap", "let", "declare -i n=", "read", "set --", "printf -v", "jobs -x", "compgen -C",
]  # fmt: skip
_LITERALS = [
    "x",
    "-c",
    "--",
    "up",
    "-",
    "a=b",
    "'{'",
    "'}'",
    "';'",
    "s.sh",
    "f",
    "/dev/null",
    "'a b'",
    "-NBOPT",
    "'\"'",
]
_REDIRECTIONS = [
    "> f", ">> s.sh", "> s.sh", "< f", "2>&1", ">&2", "2>/dev/null", "> /dev/null", ">&3", "3> s.sh", "1<> s.sh",
    "&> f", "<<< " + V, ">| f", "> " + V, "< " + V, "<<EOF\n" + V + "\nEOF",
]  # fmt: skip
_FOLLOW = ["sh s.sh", ". ./s.sh", "bash s.sh", "nft -f f", "ip link", "cat f", "iptables-restore < f", "pfctl -f f"]
_DECLARATIONS: list[dict[str, Any] | None] = [
    {"type": "str", "pattern": ".*", "default": "a"},
    {"type": "str", "pattern": ".*", "default": "a"},
    {"type": "str", "default": "a"},
    {"type": "int", "default": 1},
    {"type": "interface", "default": "eth0"},
    {"type": "list", "items": "str", "default": ["a", "b"]},
    {"type": "text", "format": "nft", "default": "a"},
    None,  # a value saved at run time
    None,
]


glued = st.builds(
    lambda left, right: left + V + right,
    st.sampled_from(["", "", "a", "--opt=", "-", "x:", "'", '"', "\\", "$", "'q'", '"q"']),
    st.sampled_from(["", "", "/32", "'", '"', "b", ":1", "}", "]"]),
)
words = st.one_of(
    st.sampled_from(_LITERALS),
    st.just(V),
    glued,
    st.sampled_from(["$x", '"$x"', "$1", '"$@"', "$((x + 1))", "$(( " + V + " ))", "${x:-" + V + "}"]),
    st.sampled_from(["`echo " + V + "`", "'" + V + "'", '"' + V + '"', "$'" + V + "'", "a[" + V + "]"]),
    st.just("$(echo " + V + ")"),
)  # fmt: skip

# commands of the subset natbench reads, with values where it allows them and where it does not
_VALUE_WORDS = [V, V, "a" + V, V + "/32", "--x=" + V, "x", "-x", '"$x"', "$x", "$(cat " + V + ")"]
_SUBSET = [
    "ip link set {} up", "ip addr add {} dev eth0", "ip netns exec {} ip link set {} up", "ip -n {} link set x up",
    "iptables -A x -o {} -m comment --comment {}", "iptables -A x {}", "nft add rule ip t c oifname {} counter",
    "nft {} ip t", "echo set skip on '{{' {} '}}' >> f", "echo {} > f", "echo a {} > f", "echo a {} {} >> f",
    "printf 'k %s\\n' {} > f", "printf '%s\\n' {} > f", "echo a {} | tee f", "echo {} | tee f",
    "echo a {} | ip netns exec ns tee -a f", "sysctl -w net.x={}", "jool -i {} global display",
    "x={}; ip link set $x up",
    'x={}; ip link set "$x" up', "n={}; echo $((n + 1)) > f", "x={}; echo a $x > f", "x={}; echo $x > f",
    'for i in {} b; do ip link set "$i" up; done', "ip link set $(cat {}) up", "grep -e x -- {} f", "cat < {}",
    "echo a > {}", "[ {} = a ] || echo a {} > f", "kill -0 {}", "mkdir -p {}", "echo {}", "cat {}",
    "echo a {} | tee f | grep x", "nft add rule ip t c comment {}", "nft add rule ip t c comment '\"a' {}",
    "echo '{{\"a\": ' {} '}}' > f", "echo a '\"' {} '\"' > f",
]  # fmt: skip


@st.composite
def subset_simple(draw: Any) -> str:
    template = draw(st.sampled_from(_SUBSET))
    fills = [draw(st.sampled_from(_VALUE_WORDS)) for _ in range(template.count("{}"))]
    return template.format(*fills)


def _subset_compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a: "{ " + a + "; }", inner),
        st.builds(lambda a, b: f"if {a}; then {b}; fi", inner, inner),
        st.builds(lambda a: "for i in 1 2; do " + a + "; done", inner),
        st.builds(lambda a, b, op: f"{a} {op} {b}", inner, inner, st.sampled_from([";", "&&", "||", "\n"])),
        st.builds(lambda a: a + " | tee f", inner),
    )


@st.composite
def simple(draw: Any) -> str:
    parts = []
    if draw(st.integers(0, 5)) == 0:
        parts.append(draw(st.sampled_from(["x=" + V, "PATH=" + V, "IFS=x", "x=sh", "n=" + V])))
    head = draw(st.one_of(st.sampled_from(_PROGRAMS), st.just(V)))
    parts.append(head)
    parts += draw(st.lists(words, max_size=4))
    parts += draw(st.lists(st.sampled_from(_REDIRECTIONS), max_size=2))
    return " ".join(parts)


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a: "{ " + a + "; }", inner),
        st.builds(lambda a: "( " + a + " )", inner),
        st.builds(lambda a, b: f"if {a}; then {b}; fi", inner, inner),
        st.builds(lambda w, a: f"for i in {w}; do {a}; done", words, inner),
        st.builds(lambda a: "for ((i=0; i<" + V + "; i++)); do " + a + "; done", inner),
        st.builds(lambda a: f"while false; do {a}; done", inner),
        st.builds(lambda a: "case " + V + " in a) " + a + ";; esac", inner),
        st.builds(lambda a, b, op: f"{a} {op} {b}", inner, inner, st.sampled_from([";", "&&", "||", "|", "&", "\n"])),
    )


commands = st.one_of(
    st.recursive(simple(), _compound, max_leaves=4),
    st.recursive(subset_simple(), _subset_compound, max_leaves=3),
    st.recursive(subset_simple(), _subset_compound, max_leaves=3),
)


@st.composite
def recipes(draw: Any) -> tuple[list[str], dict[str, Any] | None, str | None]:
    texts = [draw(commands)]
    if draw(st.booleans()):
        texts.append(draw(st.sampled_from(_FOLLOW)))
    declaration = draw(st.sampled_from(_DECLARATIONS))
    fmt = draw(st.sampled_from([None, None, "pf.conf", "nft"]))
    return texts, declaration, fmt


def recipe_text(texts: list[str], declaration: dict[str, Any] | None, fmt: str | None) -> str:
    lines = ["recipe: prop", "family: forwarding", "os: linux", "stateful: false"]
    if declaration is not None:
        lines += ["params:", f"  v: {json.dumps(declaration)}"]
    lines += ["steps:", "  setup:"]
    if declaration is None:
        lines += ["    - run: cat /dev/null", "      save: v"]
    for text in texts:
        lines.append(f"    - run: {json.dumps(text)}")
        if fmt is not None and V in text:
            lines.append(f"      format: {fmt}")
    return "\n".join(lines) + "\n"


def rendered(recipe: Recipe, payload: Any, saved: bool) -> list[str] | None:
    if not saved:
        try:
            return [c.text for c in recipe.plan("setup", {"v": payload})]
        except RecipeError:
            return None
    out = []
    for cmd in recipe.steps["setup"].commands[1:]:
        text = render_runtime(recipe, cmd.run, cmd.netns, cmd.format, {"v": payload}, "v")
        if text is None:
            return None
        out.append(text)
    return out


@pytest.mark.skipif(not (shutil.which("dash") and shutil.which("bash")), reason="needs dash and bash")
def test_random_recipes_from_the_shell_grammar_never_let_a_hostile_value_escape() -> None:
    tally = {"recipes": 0, "refused": 0, "accepted": 0, "values refused": 0, "runs": 0}
    found: list[str] = []
    phrases = [p for p in PAYLOADS if re.fullmatch(r"[A-Za-z0-9_.:/,+-]+( [A-Za-z0-9_.:/,+-]+)*", p)]
    hostile = st.one_of(st.sampled_from([*PAYLOADS, ["a", "nb_canary"], ["-NBOPT"]]), st.sampled_from(phrases))

    @settings(
        max_examples=EXAMPLES,
        derandomize=not FRESH,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )
    @given(recipes(), hostile)
    def check(case: tuple[list[str], dict[str, Any] | None, str | None], payload: Any) -> None:
        texts, declaration, fmt = case
        tally["recipes"] += 1
        try:
            recipe = parse_recipe(recipe_text(texts, declaration, fmt), "prop.yaml")
        except RecipeError as exc:
            assert "\n" not in str(exc)
            tally["refused"] += 1
            return
        tally["accepted"] += 1
        saved = declaration is None
        if saved and isinstance(payload, list):
            payload = " ".join(payload)
        commands = rendered(recipe, payload, saved)
        if commands is None:
            tally["values refused"] += 1
            return
        root = Path(tempfile.mkdtemp(prefix="nb-prop-"))
        try:
            for shell in SHELLS:
                outcome = run_each([("c", commands)], root / shell, shell)["c"]
                tally["runs"] += 1
                shown = payload if isinstance(payload, str) else " ".join(payload)
                for kind in escapes(shown, outcome, fmt):
                    found.append(f"{shell}: {texts!r} ({declaration}) <- {payload!r}: {kind}\n  {commands!r}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
        assert not found, "\n".join(found)

    check()
    print(", ".join(f"{v} {k}" for k, v in tally.items()))
    assert tally["runs"] >= EXAMPLES // 20  # the grammar does reach accepted recipes whose values run
    assert tally["refused"] >= EXAMPLES // 4
