"""Sphinx extension of natbench's documentation site: the API faces, their references, and the navigation.

* ``.. natbench-face:: MODULE`` documents exactly the module's ``__all__``: autodoc's ``automodule`` for its
  classes and functions, plus the data it re-exports (a registry, a type alias), which autodoc leaves out, with
  the docstring written under them where they are defined (``TESTERS = Registry(...)`` and the string below it
  in ``natbench/plugins/registry.py``).
* A cross-reference (``:class:`X```, a type in a signature) is resolved as Python would resolve the name where the
  docstring is written: to a link when that object is documented (under any name: ``natbench.plugins.Tester``
  for ``natbench.plugins.tester.Tester``), to code text when it exists but is not documented (an internal
  module, ``pathlib.Path``, a ``TypeVar``), and when it names nothing that exists it stays Sphinx's
  ``reference target not found`` warning, which the build's ``-W`` makes an error.
* A dataclass field with a ``default_factory`` shows its factory (``= dict()``) instead of ``<factory>``; a
  protocol or a pydantic model shows no constructor signature; a pytest fixture says that it is one and its
  scope; ``Bases: object`` is left out.
* The site's navigation is the pages table of docs/index.md: its links, in order, become the root's hidden
  toctree, so index.md stays plain Markdown on GitHub and a page missing from the table fails the build.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import inspect
import re
import sys
from functools import cache
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.pycode import ModuleAnalyzer, PycodeError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

# --- what a dotted name names ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Field:
    """A class's field that is no class attribute: annotated only, a pydantic field, or set in ``__init__`` with a
    docstring under it."""

    owner: type
    name: str


_NOTHING = object()
_CONSTANT = (str, bytes, int, float, bool, type(None))


def lookup(path: str) -> object:
    """The object a dotted path names (a module, then attributes; a :class:`Field`), or ``_NOTHING``."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:  # a module that fails to import names nothing we can check
            return _NOTHING
        for name in parts[i:]:
            obj = _member(obj, name)
            if obj is _NOTHING:
                return _NOTHING
        return obj
    if len(parts) == 1 and hasattr(builtins, path):
        return getattr(builtins, path)
    return _NOTHING


def _member(owner: object, name: str) -> object:
    if isinstance(owner, Field):
        return _NOTHING
    try:
        return getattr(owner, name)
    except AttributeError:
        pass
    except Exception:  # a descriptor that fails on the class
        return _NOTHING
    if isinstance(owner, type):
        for cls in owner.__mro__:
            if name in vars(cls).get("__annotations__", {}) or (cls.__qualname__, name) in _attr_docs(cls.__module__):
                return Field(cls, name)
            if name in (getattr(cls, "model_fields", None) or {}):
                return Field(cls, name)
    return _NOTHING


@cache
def _attr_docs(modname: str) -> dict[tuple[str, str], list[str]]:
    """The docstrings written under attributes in a module's source: (class qualname or "", name) -> lines."""
    try:
        return ModuleAnalyzer.for_module(modname).find_attr_docs()
    except PycodeError:
        return {}


@cache
def _imported_names(modname: str) -> dict[str, str]:
    """Every import of a module, anywhere in it (also under ``if TYPE_CHECKING:`` and in functions): the local
    name -> the dotted path it stands for."""
    module = sys.modules.get(modname)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return {}
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name] = alias.name
    return names


@cache
def _scopes(modname: str) -> tuple[str, ...]:
    """The modules whose names a docstring documented under ``modname`` may use: the module itself and, for a face
    that re-exports, the modules that define what its ``__all__`` lists (``ResponderMode`` in a signature of
    ``natbench.plugins.TesterSettings`` is a name of ``natbench.plugins.settings``)."""
    module = sys.modules.get(modname)
    defining = [getattr(getattr(module, name, None), "__module__", None) for name in getattr(module, "__all__", ())]
    return tuple(dict.fromkeys([modname, *(m for m in defining if isinstance(m, str))]))


def candidates(target: str, modname: str | None, classname: str | None) -> list[str]:
    """The dotted paths a reference written in ``modname`` (in class ``classname``) may mean, nearest first."""
    target = target.lstrip(".~")
    head, _, rest = target.partition(".")
    out = []
    if modname and classname:
        out.append(f"{modname}.{classname}.{target}")
    for scope in _scopes(modname) if modname else ():
        out.append(f"{scope}.{target}")
        imported = _imported_names(scope).get(head)
        if imported:
            out.append(f"{imported}.{rest}" if rest else imported)
    out.append(target)
    return out


def resolve_name(target: str, modname: str | None = None, classname: str | None = None) -> list[object]:
    """The objects a reference may name (nearest first); empty when it names nothing that exists."""
    found = (lookup(c) for c in candidates(target, modname, classname))
    return [obj for obj in found if obj is not _NOTHING]


def _key(obj: object) -> object:
    return obj if isinstance(obj, Field) else id(obj)


# --- references ------------------------------------------------------------------------------------------------


_DOCUMENTED: dict[object, str] = {}
"""Each documented object -> the name it is documented under; built when the first reference needs it, after
every page was read (object ids: never stored with the environment)."""


def _documented(env: BuildEnvironment) -> dict[object, str]:
    if not _DOCUMENTED:
        for name, _shown, objtype, _doc, _anchor, _prio in env.get_domain("py").get_objects():
            obj = lookup(name)
            if objtype != "module" and obj is not _NOTHING and not isinstance(obj, _CONSTANT):
                _DOCUMENTED.setdefault(_key(obj), name)
    return _DOCUMENTED


def _forget_documented(app: Sphinx, env: BuildEnvironment) -> None:
    _DOCUMENTED.clear()


def _resolve(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement
) -> nodes.Element | None:
    """A Python reference Sphinx did not find under the name written (see the module docstring)."""
    if node.get("refdomain") != "py":
        return None
    found = resolve_name(node["reftarget"], node.get("py:module"), node.get("py:class"))
    if not found:
        return None  # Sphinx warns: reference target not found
    documented = _documented(env)
    for obj in found:
        name = None if isinstance(obj, _CONSTANT) else documented.get(_key(obj))
        if name is not None:
            ref = env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, "obj", name, node, contnode)
            if ref is not None:
                return ref
    return contnode  # code text, no link


# --- a face documents its __all__ --------------------------------------------------------------------------------


class Face(SphinxDirective):
    """``.. natbench-face:: MODULE``: the module's ``__all__``, documented. autodoc's ``automodule`` documents its
    classes and functions and the data the module itself defines with a docstring; the data it re-exports (a
    registry, a type alias) follow as ``autodata``, with the docstring written where they are defined, and a class
    or function the module gives lazily (its ``__getattr__``: ``natbench.load``) as ``autoclass`` / ``autofunction``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        exported = getattr(module, "__all__", None)
        if exported is None:
            raise self.error(f"{modname} has no __all__: a documented face lists what it exports")
        lines = [f".. automodule:: {modname}", ""]
        for name in exported:
            value = getattr(module, name)
            lazy = name not in vars(module)  # given by the module's __getattr__: automodule does not see it
            if lazy and (isinstance(value, type) or inspect.isroutine(value)):
                lines += [f".. auto{'class' if isinstance(value, type) else 'function'}:: {modname}.{name}", ""]
                continue
            if isinstance(value, type) or inspect.isroutine(value) or ("", name) in _attr_docs(modname):
                continue  # automodule documents it
            shown = isinstance(value, _CONSTANT)  # an entry-point group's name, not a registry's <object at 0x...>
            lines += [f".. autodata:: {modname}.{name}", *([] if shown else ["   :no-value:"]), ""]
        return nested_parse_to_nodes(self.state, StringList(lines, source=f"<natbench-face {modname}>"))


def source_docstring(modname: str, name: str) -> list[str]:
    """The docstring written under ``name`` where it is defined, following ``from X import name`` from ``modname``."""
    seen = set()
    while modname not in seen:
        seen.add(modname)
        doc = _attr_docs(modname).get(("", name))
        if doc:
            return list(doc)
        origin = _imported_names(modname).get(name)
        if not origin:
            break
        modname, _, name = origin.rpartition(".")
    return []


def _docstring(app: Sphinx, what: str, name: str, obj: object, options: Any, lines: list[str]) -> None:
    """Data get the docstring written under them where they are defined; a pytest fixture says it is one."""
    modname, _, attr = name.rpartition(".")
    if what == "data" and modname in sys.modules:
        # a re-exported registry's own docstring, not its class's (which autodoc shows when the face has none)
        lines[:] = source_docstring(modname, attr) or lines
    marker = getattr(obj, "_fixture_function_marker", None)
    if what == "function" and marker is not None:
        lines[:0] = [f"*pytest fixture* (scope ``{marker.scope}``).", ""]


# --- signatures --------------------------------------------------------------------------------------------------


def _signature(
    app: Sphinx, what: str, name: str, obj: object, options: Any, signature: str | None, annotation: str | None
) -> tuple[str | None, str | None] | None:
    """A protocol is not instantiated: no ``(*args, **kwargs)`` after its name; a pydantic model is built from its
    fields, listed below it (its signature would print each field's ``FieldInfo``). A dataclass field's
    ``= <factory>`` is no Python (Sphinx would split the signature at every comma): its factory's call instead."""
    if what == "class" and (getattr(obj, "_is_protocol", False) or hasattr(obj, "model_fields")):
        return "", annotation
    if not signature or "<factory>" not in signature:
        return None
    owner = obj if isinstance(obj, type) else lookup(name.removesuffix(".__init__"))
    if not (isinstance(owner, type) and dataclasses.is_dataclass(owner)):
        return None
    for f in dataclasses.fields(owner):
        if f.init and f.default_factory is not dataclasses.MISSING:
            factory = getattr(f.default_factory, "__qualname__", "")
            signature = signature.replace("<factory>", f"{factory}()" if factory.isidentifier() else "...", 1)
    return signature, annotation


def _bases(app: Sphinx, name: str, obj: object, options: Any, bases: list[type]) -> None:
    """``Bases: object`` says nothing."""
    if object in bases:
        bases.remove(object)


# --- navigation --------------------------------------------------------------------------------------------------

_PAGE_ROW = re.compile(r"^\|\s*\[[^\]]*\]\(([\w./-]+)\.md\)\s*\|", re.M)


def pages_table(index_text: str) -> list[str]:
    """The documents the pages table of docs/index.md links, in order (``api/index`` for ``api/index.md``)."""
    return list(dict.fromkeys(_PAGE_ROW.findall(index_text)))


def _navigation(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname == app.config.root_doc:
        pages = "\n".join(pages_table(source[0]))
        source[0] += f"\n\n```{{toctree}}\n:hidden:\n:maxdepth: 2\n\n{pages}\n```\n"


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("natbench-face", Face)
    app.connect("env-updated", _forget_documented)
    app.connect("missing-reference", _resolve)
    app.connect("autodoc-process-docstring", _docstring)
    app.connect("autodoc-process-signature", _signature)
    app.connect("autodoc-process-bases", _bases)
    app.connect("source-read", _navigation)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
