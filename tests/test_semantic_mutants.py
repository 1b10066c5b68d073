"""The hand-written semantic mutants (bench/semantic_mutants.toml) as a habit the suite checks, without running one:

* every mutant is a change of today's code that still parses: its ``old`` text is there once (also checked by
  tests/test_mutation_bench.py), and replacing it by ``new`` leaves a valid module whose syntax tree differs;
* **the ratchet**: in each rule module the file's ``[unguarded]`` table lists, the comparisons and boolean
  conditions inside functions (AST ``Compare`` nodes and the operands of ``and`` / ``or``) that no mutant changes
  are counted. The count of each module, and their ``total``, must equal the stored ones: a rule added without a
  mutant per comparison and condition raises a count and fails here (the failure lists the unguarded conditions, to
  write mutants for); a mutant added for an old one lowers it, and the stored number is lowered with it. The numbers
  only go down.

A mutant *changes* a condition when the text it replaces, less what ``old`` and ``new`` have in common at both ends,
overlaps the condition's source (an insertion right at its end counts: ``if a < b:`` -> ``if a < b and c:``).

When code moves (a module split in two, a rule moved to a policy object), the mutants' ``old`` and ``file`` move with
it (the first test fails until they do), the ``[unguarded]`` entries of the old module are replaced by the new
modules' counts (``python tests/test_semantic_mutants.py`` prints them), and ``total`` is the sum, no higher than
before: a reshaping that adds conditions adds their mutants."""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "bench" / "semantic_mutants.toml"


def load() -> dict[str, Any]:
    return tomllib.loads(MUTANTS.read_text("utf-8"))


@dataclass(frozen=True)
class Condition:
    """A comparison or an operand of ``and`` / ``or`` inside a function, by its byte span in the module."""

    line: int
    start: int
    end: int
    text: str


def conditions(source: bytes) -> list[Condition]:
    """The comparisons and boolean operands inside the functions (and lambdas) of a module, each once."""
    tree = ast.parse(source)
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(node: ast.expr) -> Condition:
        assert node.end_lineno is not None and node.end_col_offset is not None
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        return Condition(node.lineno, start, end, source[start:end].decode("utf-8"))

    def inside(fn: ast.AST) -> Iterator[ast.expr]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare):
                yield node
            elif isinstance(node, ast.BoolOp):
                yield from node.values

    found: dict[tuple[int, int], Condition] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for node in inside(fn):
                c = span(node)
                found.setdefault((c.start, c.end), c)
    return sorted(found.values(), key=lambda c: (c.start, c.end))


def changed(source: bytes, old: str, new: str) -> tuple[int, int] | None:
    """The byte range of ``source`` a mutant changes: where ``old`` stands, less the ends ``old`` and ``new`` share
    (None when ``old`` is not there exactly once)."""
    a, b = old.encode(), new.encode()
    if source.count(a) != 1:
        return None
    at = source.index(a)
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return at + prefix, at + len(a) - suffix


def touched(c: Condition, region: tuple[int, int]) -> bool:
    lo, hi = region
    if lo == hi:  # an insertion: within the condition or right at either end of it
        return c.start <= lo <= c.end
    return lo < c.end and c.start < hi


def unguarded(module: str, mutants: list[dict[str, Any]]) -> list[Condition]:
    """The conditions of ``module`` (a path from the repository root) no mutant changes."""
    source = (ROOT / module).read_bytes()
    regions = [changed(source, m["old"], m["new"]) for m in mutants if m["file"] == module]
    return [c for c in conditions(source) if not any(r is not None and touched(c, r) for r in regions)]


def counts() -> dict[str, int]:
    data = load()
    return {module: len(unguarded(module, data["mutant"])) for module in data["unguarded"]["modules"]}


# --- every mutant is a change of today's code ---------------------------------------------------------------------


MUTANT_LIST = load()["mutant"]


@pytest.mark.parametrize("mutant", MUTANT_LIST, ids=[m["name"] for m in MUTANT_LIST])
def test_a_mutant_is_a_change_of_todays_code_that_still_parses(mutant: dict[str, Any]) -> None:
    path = ROOT / mutant["file"]
    source = path.read_text("utf-8")
    assert source.count(mutant["old"]) == 1, f"{mutant['name']}: its old text is not in {mutant['file']} once"
    mutated = source.replace(mutant["old"], mutant["new"])
    try:
        tree = ast.parse(mutated)
    except SyntaxError as exc:
        pytest.fail(f"{mutant['name']}: the mutated {mutant['file']} does not parse ({exc})")
    assert ast.dump(tree) != ast.dump(ast.parse(source)), f"{mutant['name']}: changes no code (only layout)"
    for test in mutant["tests"]:
        assert (ROOT / test.split("::")[0]).is_file(), f"{mutant['name']}: no test file {test}"


# --- the ratchet --------------------------------------------------------------------------------------------------


def test_the_rule_modules_listed_exist() -> None:
    modules = load()["unguarded"]["modules"]
    assert modules, "no rule module listed"
    for module in modules:
        assert (ROOT / module).is_file(), f"{module}: listed in [unguarded] but gone (moved? list the new modules)"


def test_no_rule_module_gains_a_condition_without_a_mutant() -> None:
    data = load()
    stored: dict[str, int] = data["unguarded"]["modules"]
    problems = []
    for module, count in counts().items():
        if count > stored[module]:
            listing = "\n".join(f"    {module}:{c.line}: {c.text}" for c in unguarded(module, data["mutant"]))
            problems.append(
                f"{module}: {count} comparisons and conditions no semantic mutant changes, {stored[module]} stored:"
                f" add a mutant (bench/semantic_mutants.toml) for each new one. Unguarded now:\n{listing}"
            )
        elif count < stored[module]:
            problems.append(f"{module}: {count} unguarded, {stored[module]} stored: lower the stored number to {count}")
    assert not problems, "\n".join(problems)


def test_the_total_only_goes_down() -> None:
    data = load()["unguarded"]
    assert sum(data["modules"].values()) == data["total"], (
        f"[unguarded] total is {data['total']}, its modules add up to {sum(data['modules'].values())}: the total is"
        " their sum, and a new sum may not exceed the old total"
    )


def test_the_ratchet_sees_a_mutant_change_a_condition() -> None:
    """The ratchet's own rule: the changed part of a mutant, not all of its ``old`` text, guards a condition."""
    source = b"def f(a, b, c):\n    if a < b or c > 2:\n        return a >= c\n"
    conds = conditions(source)
    assert [c.text for c in conds] == ["a < b", "c > 2", "a >= c"]
    # old text spanning both conditions, changing only the second: the first stays unguarded
    region = changed(source, "if a < b or c > 2:", "if a < b or c >= 2:")
    assert region is not None and [touched(c, region) for c in conds] == [False, True, False]
    # a condition dropped: the operand it removes is changed
    region = changed(source, "a < b or c > 2", "a < b")
    assert region is not None and [touched(c, region) for c in conds] == [False, True, False]
    # a condition added at the end of another: that one is changed
    region = changed(source, "return a >= c\n", "return a >= c and b\n")
    assert region is not None and [touched(c, region) for c in conds] == [False, False, True]
    assert changed(source, "missing", "x") is None


if __name__ == "__main__":  # print the [unguarded] table of today's code
    now = counts()
    print("[unguarded]")
    print(f"total = {sum(now.values())}")
    print()
    print("[unguarded.modules]")
    for module, count in now.items():
        print(f'"{module}" = {count}')
    sys.exit(0)
