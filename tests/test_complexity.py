"""No function of natbench has more than 30 branches, counted on its source's syntax tree.

What counts, for one function (``def`` or ``async def``, methods and nested functions included, each on its own):
1 for the function's straight path, plus, anywhere in its definition (nested functions, lambdas and classes included,
as they are part of its text):

* each ``if`` statement (an ``elif`` is one more) and each ``if`` expression (``a if c else b``);
* each ``for`` / ``async for`` and ``while`` loop;
* each ``try`` statement (however many ``except`` clauses it has);
* each ``with`` / ``async with`` statement;
* each ``for`` clause of a comprehension (list, set, dict or generator: ``[x for a in b for x in a]`` is two);
* each operand of a boolean operator after the first (``a and b`` is one, ``a or b or c`` two);
* each ``case`` of a ``match`` statement.

Nothing else counts (a ``return``, ``raise``, ``assert``, ``break``, a comprehension's ``if`` filter, a call).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "natbench"
LIMIT = 30
"""Most branches a function may have."""

_ONE_EACH = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.With,
    ast.AsyncWith,
    ast.comprehension,
    ast.match_case,
)


def branches(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The branches of ``function`` as the module docstring counts them."""
    count = 1
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, _ONE_EACH):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def package_branches() -> dict[str, int]:
    """``path::qualified name`` -> branches, for every function of natbench."""
    out: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for name, node in functions(ast.parse(path.read_text("utf-8"), str(path))):
            out[f"{where}::{name}"] = branches(node)
    return out


def test_no_function_has_more_than_30_branches() -> None:
    counts = package_branches()
    over = {name: n for name, n in counts.items() if n > LIMIT}
    assert not over, f"functions over {LIMIT} branches (split them):\n" + "\n".join(
        f"  {name}: {n} branches" for name, n in sorted(over.items(), key=lambda item: -item[1])
    )


def _count(source: str) -> int:
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return branches(node)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return x", 1),
        ("if a:\n        pass", 2),
        ("if a:\n        pass\n    elif b:\n        pass\n    else:\n        pass", 3),
        ("return a if b else c", 2),
        ("for i in x:\n        pass\n    else:\n        pass", 2),
        ("while a:\n        break", 2),
        ("try:\n        pass\n    except A:\n        pass\n    except B:\n        pass\n    finally:\n        pass", 2),
        ("with a, b:\n        pass", 2),
        ("return [y for x in z for y in x if y if x]", 3),
        ("return {k: v for k, v in x}, {v for v in x}, (v for v in x)", 4),
        ("return a and b", 2),
        ("return a or b or c", 3),
        ("return (a and b) or c", 3),
        ("match x:\n        case 1:\n            pass\n        case _:\n            pass", 3),
        ("def inner():\n        if a:\n            pass\n    return lambda: b if c else d", 3),
        ("assert a\n    raise b", 1),
    ],
)
def test_what_counts_as_a_branch(body: str, expected: int) -> None:
    assert _count(f"def f(x):\n    {body}\n") == expected


def test_async_code_counts_as_its_synchronous_form() -> None:
    assert _count("async def f(x):\n    async for a in x:\n        async with a:\n            pass\n") == 3


def test_the_limit_holds_at_30_and_fails_at_31() -> None:
    def with_ifs(n: int) -> str:
        return "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(n))

    assert _count(with_ifs(29)) == 30 <= LIMIT  # the function's path and 29 ifs: allowed
    assert _count(with_ifs(30)) == 31 > LIMIT  # one more: refused


def test_nested_functions_are_named_and_counted_on_their_own_and_in_their_outer_function() -> None:
    tree = ast.parse("class C:\n    def m(self):\n        def inner():\n            if a:\n                pass\n")
    found = {name: branches(node) for name, node in functions(tree)}
    assert found == {"C.m": 2, "C.m.inner": 2}
