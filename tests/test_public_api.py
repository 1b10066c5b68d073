"""natbench's public API is its faces: the modules a notebook, a plugin or a pytest experiment imports.

Only a face declares ``__all__``; every other module is internal and is imported by its module path inside natbench.
Every name a face exports resolves and has a docstring (a protocol's methods too), every face has a page in
docs/api/ that documents it (``.. natbench-face::``) and every such page documents a face, and docs/architecture.md
lists the faces. Run as a script, it counts the names exported by ``__all__`` over a checkout's natbench/ (AST only):
``python tests/test_public_api.py [--root CHECKOUT]``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent

FACES = (
    "natbench",
    "natbench.campaign",
    "natbench.metrics",
    "natbench.search",
    "natbench.plugins",
    "natbench.report.load",
    "natbench.report.plots",
    "natbench.run.experiment",
    "natbench.pytest_plugin",
    "natbench.testing",
)
"""The faces, the one list of them: what docs/api/ documents and docs/architecture.md lists."""

_FACE_DIRECTIVE = re.compile(r"^\.\. natbench-face:: ([\w.]+)\s*$", re.M)


# --- the checks, on any source tree ------------------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _declares_all(tree: ast.Module) -> list[ast.stmt]:
    """The statements at module level that bind or extend ``__all__`` (``=``, ``: list[str] =``, ``+=``)."""
    found: list[ast.stmt] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            found.append(node)
    return found


def exported_names(root: Path, package: str = "natbench") -> dict[str, list[str]]:
    """Each module of ``root/package`` that declares ``__all__`` -> the names its list literals hold (AST, no
    import; a computed ``__all__`` counts as declared with the names it writes out)."""
    out: dict[str, list[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        statements = _declares_all(ast.parse(path.read_text(), str(path)))
        if statements:
            names = out.setdefault(_module_name(path, root), [])
            for node in statements:
                value = node.value
                if isinstance(value, ast.List | ast.Tuple):
                    names += [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out


def misplaced_all(root: Path, faces: tuple[str, ...], package: str = "natbench") -> list[str]:
    """What breaks the rule under ``root``: a module that declares ``__all__`` and is no face, a face that does not
    declare it (or does not exist)."""
    declared = exported_names(root, package)
    problems = [f"{module}: declares __all__ but is no face" for module in declared if module not in faces]
    problems += [f"{face}: a face without __all__" for face in faces if face not in declared]
    return problems


def _source_docstring(module: ModuleType, name: str) -> str | None:
    """The docstring written under ``name = ...`` where it is bound, following ``from X import name`` (data have no
    ``__doc__`` of their own)."""
    seen = set()
    while module.__name__ not in seen:
        seen.add(module.__name__)
        tree = ast.parse(inspect.getsource(module))
        for node, after in zip(tree.body, [*tree.body[1:], None], strict=True):
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                doc = after.value if isinstance(after, ast.Expr) else None
                return doc.value if isinstance(doc, ast.Constant) and isinstance(doc.value, str) else None
        origins = [
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names)
        ]
        if not origins:
            return None
        module = importlib.import_module(origins[0])
    return None


def _own_docstring(obj: object) -> str | None:
    """The docstring written in ``obj``'s own source (not one a dataclass generates or a base class lends)."""
    try:
        source = textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return None
    node = ast.parse(source).body[0]
    return ast.get_docstring(node) if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) else None


def undocumented(module: ModuleType) -> list[str]:
    """What a face exports without a docstring: a name that does not resolve, a class or function without its own
    docstring, a protocol method without one, data without a docstring under it where it is bound."""
    problems = []
    for name in module.__all__:
        where = f"{module.__name__}.{name}"
        if not hasattr(module, name):
            problems.append(f"{where}: in __all__ but not defined")
            continue
        obj = getattr(module, name)
        obj = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
        if isinstance(obj, type) or inspect.isroutine(obj):
            if not _own_docstring(obj):
                problems.append(f"{where}: no docstring")
            if getattr(obj, "_is_protocol", False):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and inspect.isfunction(value) and not _own_docstring(value):
                        problems.append(f"{where}.{member}: a protocol method without a docstring")
        elif isinstance(obj, ModuleType):
            problems.append(f"{where}: a module in __all__")
        elif name != "__version__" and not _source_docstring(module, name):
            problems.append(f"{where}: no docstring under it where it is bound")
    return problems


def documented_faces(api_dir: Path) -> dict[str, list[str]]:
    """Each page of docs/api (index aside) -> the modules its ``.. natbench-face::`` directives document."""
    return {
        page.stem: _FACE_DIRECTIVE.findall(page.read_text()) for page in sorted(api_dir.glob("*.md"))
        if page.stem != "index"
    }  # fmt: skip


def architecture_faces(text: str) -> list[str]:
    """The faces docs/architecture.md lists: the first column of the table under "## The public API"."""
    found = re.search(r"^## The public API.*?(?=^## |\Z)", text, re.M | re.S)
    return re.findall(r"^\| `([\w.]+)` \|", found.group(0), re.M) if found else []


# --- natbench ----------------------------------------------------------------------------------------------------


def test_only_the_faces_declare_all() -> None:
    assert misplaced_all(ROOT, FACES) == []


def test_the_rule_is_checked_on_both_sides(tmp_path: Path) -> None:
    pkg = tmp_path / "natbench"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text('__all__ = ["load"]\n')
    (pkg / "face.py").write_text('"""A face."""\n__all__: list[str] = ["a", "b"]\n')
    (pkg / "inner" / "__init__.py").write_text("")
    (pkg / "inner" / "helper.py").write_text('X = 1\n__all__ = ["X"]\n')
    (pkg / "inner" / "grown.py").write_text("__all__ = []\n__all__ += ['y']\n")
    (pkg / "quiet.py").write_text("def f() -> None:\n    __all__ = ['not module level']\n")
    faces = ("natbench", "natbench.face", "natbench.missing")
    assert exported_names(tmp_path) == {
        "natbench": ["load"],
        "natbench.face": ["a", "b"],
        "natbench.inner.grown": ["y"],
        "natbench.inner.helper": ["X"],
    }
    assert misplaced_all(tmp_path, faces) == [
        "natbench.inner.grown: declares __all__ but is no face",
        "natbench.inner.helper: declares __all__ but is no face",
        "natbench.missing: a face without __all__",
    ]
    (pkg / "inner" / "helper.py").write_text("X = 1\n")
    (pkg / "inner" / "grown.py").write_text("Y = 2\n")
    assert misplaced_all(tmp_path, ("natbench", "natbench.face")) == []


def test_every_exported_name_resolves_and_is_documented() -> None:
    problems = [p for face in FACES for p in undocumented(importlib.import_module(face))]
    assert problems == []


def test_the_docstring_check_sees_both_sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nb_face_probe.py").write_text(
        textwrap.dedent(
            '''
            """A synthetic face."""
            import dataclasses
            from typing import Protocol

            LIMIT = 3
            """Documented data."""
            BARE = 4


            def told() -> None:
                """Documented."""


            def untold() -> None:
                pass


            @dataclasses.dataclass
            class Generated:
                x: int


            class Seam(Protocol):
                """A protocol."""

                def said(self) -> None:
                    """Documented."""

                def unsaid(self) -> None: ...


            __all__ = ["BARE", "LIMIT", "Generated", "Seam", "gone", "told", "untold"]
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("nb_face_probe")
    assert undocumented(module) == [
        "nb_face_probe.BARE: no docstring under it where it is bound",
        "nb_face_probe.Generated: no docstring",
        "nb_face_probe.Seam.unsaid: a protocol method without a docstring",
        "nb_face_probe.gone: in __all__ but not defined",
        "nb_face_probe.untold: no docstring",
    ]


def test_every_face_has_a_page_and_every_page_a_face() -> None:
    pages = documented_faces(ROOT / "docs" / "api")
    shown = [face for faces in pages.values() for face in faces]
    assert sorted(shown) == sorted(FACES)  # each face documented once
    assert [page for page, faces in pages.items() if not faces] == []
    toctree = (ROOT / "docs" / "api" / "index.md").read_text().split("```{toctree}")[1].split("```")[0]
    assert sorted(re.findall(r"^([\w-]+)$", toctree, re.M)) == sorted(pages)


def test_the_page_check_sees_both_sides(tmp_path: Path) -> None:
    (tmp_path / "index.md").write_text(".. natbench-face:: natbench.ignored\n")
    (tmp_path / "a.md").write_text("```{eval-rst}\n.. natbench-face:: natbench\n\n.. natbench-face:: natbench.x\n```\n")
    (tmp_path / "b.md").write_text("# only prose\n.. natbench-face:: natbench.inline text\n")
    assert documented_faces(tmp_path) == {"a": ["natbench", "natbench.x"], "b": []}


def test_architecture_lists_the_faces() -> None:
    listed = architecture_faces((ROOT / "docs" / "architecture.md").read_text())
    assert sorted(listed) == sorted(FACES)
    assert architecture_faces("## The public API\n\n| `natbench.a` | x |\n| b | `natbench.c` |\n## Next\n| `d` |") == [
        "natbench.a"
    ]
    assert architecture_faces("## Layers\n\n| `natbench.a` | x |\n") == []


# --- the count ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="a natbench checkout (default: this one)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the modules")
    args = parser.parse_args(argv)
    declared = exported_names(args.root)
    total = sum(len(names) for names in declared.values())
    print(f"{total} names in __all__ over {len(declared)} modules")
    if args.verbose:
        for module, names in declared.items():
            print(f"{len(names):4d}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
