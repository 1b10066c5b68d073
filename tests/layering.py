"""The layering rule of the natbench package, checked on its source: floors, the allow-list, the import graph.

Every ``import`` in ``natbench/**/*.py`` is read with :mod:`ast` (at module level, inside a function = lazy,
under ``if TYPE_CHECKING:`` = type-only) and its two ends are given the floor of their top-level package
(:data:`FLOORS`, bottom first). The rule (docs/architecture.md, "Layers"):

* no import goes to a higher floor ("upward"), whatever its kind;
* packages on one floor above the foundations do not import each other ("sideways");
* there is no import circle between packages, nor between modules, counting every kind of import;

except what :data:`ALLOWED` lists (each entry justified in docs/architecture.md). Run it to print the counts:

    python tests/layering.py [--root CHECKOUT]

(``--root`` reads another checkout, e.g. the main branch before a change). tests/test_layering.py asserts the
rule on this checkout.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FLOORS: tuple[tuple[str, ...], ...] = (
    # 0: the foundations: small modules that know nothing of testers, DUTs or metrics (imports among them are fine)
    ("version", "errors", "values", "results", "judging", "host", "traffic", "workingpoint", "config"),
    ("plugins",),  # 1: the plugin seam: protocols, shared types, the Registry
    ("search",),  # 2: the rate searches and their declarations (they read the testers' declared evidence)
    # 3: siblings on the seam, none importing another: the backends (testers, duts) and the procedures written
    # against the seam's protocols (metrics), so a procedure cannot know which tester or DUT it drives
    ("testers", "duts", "metrics"),
    ("campaign",),  # 4: the campaign schema, built from the registries
    ("testbed",),  # 5: builds tester + DUTs (and the local lab) from a campaign
    ("run",),  # 6: the orchestrator and the run directory
    ("report", "testing", "pytest_plugin"),  # 7: what reads runs, fakes for tests, the pytest plugin
    ("cli",),  # 8: the command line
    ("__main__", "natbench"),  # 9: ``python -m natbench``; the root package, a façade (__version__, natbench.load)
)
"""Floors of the package, bottom first: each top-level package (or module) of ``natbench`` on exactly one floor.
``natbench`` is the root package's ``__init__``. Packages of one floor above the foundations are siblings: an import
between two of them is "sideways" and refused like an upward one."""

ALLOWED: dict[tuple[str, str], str] = {}
"""Imports (importing module, imported module) exempt from the rule; docs/architecture.md justifies each."""

ALLOWED_MODULE_CYCLES: dict[frozenset[str], str] = {
    frozenset({"natbench.metrics.context", "natbench.metrics.registry"}): "type-only back-reference in one package",
    frozenset(
        {"natbench.duts.recipes.render", "natbench.duts.recipes.resolve", "natbench.duts.recipes.schema"}
    ): "type-only back-references in one package",
    frozenset(
        {"natbench.duts.recipes.params", "natbench.duts.recipes.values"}
    ): "type-only back-reference in one package",
}
"""Circles between modules of one package, made only by ``TYPE_CHECKING`` imports; docs/architecture.md explains
each."""


@dataclass(frozen=True)
class Import:
    """One import statement's edge: which module imports which, where, and of what kind."""

    source: str
    """The importing module (``natbench.run.spec``; ``natbench`` for the root ``__init__``)."""
    target: str
    """The imported module (for ``from pkg import name``: ``pkg.name`` when that is a module, else ``pkg``)."""
    where: str
    """``file:line`` of the statement."""
    kind: str
    """``top`` (module level), ``lazy`` (inside a function) or ``type`` (under ``if TYPE_CHECKING:``)."""


def module_name(path: Path, root: Path) -> str:
    """``natbench/run/spec.py`` -> ``natbench.run.spec``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    """The top-level package (or module) of ``module`` under ``natbench``; ``natbench`` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "natbench"


def floor_of(module: str) -> int:
    """The floor of ``module``'s top-level package; KeyError for a package :data:`FLOORS` does not place."""
    package = package_of(module)
    for i, names in enumerate(FLOORS):
        if package in names:
            return i
    raise KeyError(f"{module}: package {package!r} is on no floor (tests/layering.py FLOORS)")


def imports(root: Path = ROOT) -> list[Import]:
    """Every import between natbench modules under ``root``/natbench."""
    files = sorted((root / "natbench").rglob("*.py"))
    modules = {module_name(f, root) for f in files}
    out: list[Import] = []
    for file in files:
        source = module_name(file, root)
        is_package = file.name == "__init__.py"
        out += _Visitor(source, is_package, modules, f"{file.relative_to(root)}").run(file.read_text("utf-8"))
    return out


class _Visitor(ast.NodeVisitor):
    def __init__(self, source: str, is_package: bool, modules: set[str], file: str) -> None:
        self.source, self.is_package, self.modules, self.file = source, is_package, modules, file
        self.kind = "top"
        self.found: list[Import] = []

    def run(self, text: str) -> list[Import]:
        self.visit(ast.parse(text))
        return self.found

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            before, self.kind = self.kind, "type"
            for stmt in node.body:
                self.visit(stmt)
            self.kind = before
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        before = self.kind
        self.kind = "lazy" if before == "top" else before
        self.generic_visit(node)
        self.kind = before

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, self._existing(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.source.split(".")
            keep = len(parts) - node.level + (1 if self.is_package else 0)
            base = ".".join(parts[:keep] + ([node.module] if node.module else []))
        targets = {self._target(base, alias.name) for alias in node.names}
        for target in sorted(targets):  # one edge per imported module, however many names come from it
            self._add(node, target)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        if ast.unparse(node.func).endswith("import_module") and isinstance(name, str):  # import_module("natbench.x")
            self._add(node, self._existing(name))
        self.generic_visit(node)

    def _target(self, base: str, name: str) -> str:
        """What ``from base import name`` imports: the module ``base.name`` if there is one, else ``base``."""
        return f"{base}.{name}" if f"{base}.{name}" in self.modules else self._existing(base)

    def _existing(self, name: str) -> str:
        """``name``, or its nearest enclosing module that is a natbench source file (a C extension's package)."""
        while name and name not in self.modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    def _add(self, node: ast.stmt | ast.expr, target: str) -> None:
        if target in self.modules and target != self.source:
            self.found.append(Import(self.source, target, f"{self.file}:{node.lineno}", self.kind))


@dataclass(frozen=True)
class Report:
    """What :func:`check` found."""

    upward: list[Import]
    """Imports to a higher floor (not allowed)."""
    sideways: list[Import]
    """Imports between two packages of one floor above the foundations (not allowed)."""
    package_cycles: list[list[str]]
    """Circles between top-level packages, every kind of import counted (allowed imports left out)."""
    module_cycles: list[list[str]]
    """Circles between modules, every kind of import counted (allowed imports left out)."""
    allowed_used: set[tuple[str, str]]
    """The allowed imports found in the source."""


def check(found: Iterable[Import]) -> Report:
    """Apply the rule to ``found``."""
    edges = list(found)
    allowed_used = {(e.source, e.target) for e in edges if (e.source, e.target) in ALLOWED}
    checked = [e for e in edges if (e.source, e.target) not in ALLOWED]
    upward = [e for e in checked if floor_of(e.target) > floor_of(e.source)]
    sideways = [
        e
        for e in checked
        if floor_of(e.target) == floor_of(e.source) > 0 and package_of(e.target) != package_of(e.source)
    ]
    modules: dict[str, set[str]] = {}
    packages: dict[str, set[str]] = {}
    for e in checked:
        modules.setdefault(e.source, set()).add(e.target)
        if package_of(e.source) != package_of(e.target):
            packages.setdefault(package_of(e.source), set()).add(package_of(e.target))
    return Report(upward, sideways, cycles(packages), cycles(modules), allowed_used)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _kinds(edges: Iterable[Import]) -> str:
    counts = Counter(e.kind for e in edges)
    return ", ".join(f"{counts[k]} {k}" for k in ("top", "lazy", "type")) + f" (total {sum(counts.values())})"


def main() -> None:
    """Print the counts of the rule's findings for a checkout (and each finding)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="a natbench checkout (default: this one)")
    args = parser.parse_args()
    found = imports(args.root)
    unchecked = {(e.source, e.target) for e in found}
    everything = check([e for e in found if e.source != e.target])
    allowed = [e for e in found if (e.source, e.target) in ALLOWED]
    print(f"imports between natbench modules: {len(found)}")
    print(f"upward: {_kinds(everything.upward)}")
    for e in everything.upward:
        print(f"  {e.where}  {e.source} -> {e.target}  [{e.kind}]")
    print(f"sideways: {_kinds(everything.sideways)}")
    for e in everything.sideways:
        print(f"  {e.where}  {e.source} -> {e.target}  [{e.kind}]")
    print(f"allowed (docs/architecture.md): {_kinds(allowed)}")
    for e in allowed:
        print(f"  {e.where}  {e.source} -> {e.target}  [{e.kind}]: {ALLOWED[(e.source, e.target)]}")
    print(f"package cycles (allowed imports left out): {len(everything.package_cycles)}")
    for c in everything.package_cycles:
        print(f"  {' <-> '.join(c)}")
    print(f"module cycles (allowed imports left out): {len(everything.module_cycles)}")
    for c in everything.module_cycles:
        note = ALLOWED_MODULE_CYCLES.get(frozenset(c))
        print(f"  {' <-> '.join(c)}" + (f"  (explained: {note})" if note else ""))
    full = cycles({s: {t for (s2, t) in unchecked if s2 == s} for s, _ in unchecked})
    print(f"module cycles counting the allowed imports too: {len(full)}")
    for c in full:
        print(f"  {' <-> '.join(c)}")
    packages: dict[str, set[str]] = {}
    for s, t in unchecked:
        if package_of(s) != package_of(t):
            packages.setdefault(package_of(s), set()).add(package_of(t))
    pfull = cycles(packages)
    print(f"package cycles counting the allowed imports too: {len(pfull)}")
    for c in pfull:
        print(f"  {' <-> '.join(c)}")


if __name__ == "__main__":
    main()
