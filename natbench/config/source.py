"""YAML source handling: duplicate keys, ``${NATBENCH_*}`` substitution, and line numbers for paths.

A campaign, testbed file or recipe is parsed with PyYAML's composer so that
every value keeps the node it came from. :class:`SourceMap` answers "which
line holds ``sweep.zip.src_ports[2]``?" for pydantic error locations and for a
file's own semantic checks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from natbench.errors import ConfigError

__all__ = ["Located", "LocatedError", "Path_", "SourceMap", "format_path", "parse_yaml", "unset_variables"]

Path_ = tuple[str | int, ...]
"""A path inside YAML data: mapping keys and list indexes, e.g. ``("sweep", "zip", "src_ports", 2)``."""

_VAR = re.compile(r"\$\$|\$\{([^}]*)\}")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_PREFIX = "NATBENCH_"


class LocatedError(Exception):
    """A problem at a path inside a file's data; the loader turns it into a :class:`ConfigError` with a line."""

    def __init__(self, path: Path_, message: str) -> None:
        super().__init__(message)
        self.path = tuple(path)
        self.message = message


@dataclass(frozen=True)
class Located:
    """A field path resolved against the YAML tree: its rendered name and its 1-based line."""

    field: str
    line: int | None


def format_path(path: Iterable[str | int]) -> str:
    """Render a path as ``sweep.zip.src_ports[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class SourceMap:
    """Maps paths inside a file's data to the YAML nodes (and lines) they came from."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def locate(self, path: Sequence[Any], *, exact: bool = False) -> Located:
        """Follow ``path`` through the YAML tree as far as it goes.

        The line is that of the key introducing the deepest value found (or of
        the sequence item). Path parts that are not keys of the current mapping
        are pydantic's union tags (``ssh``, ``function-after[...]``) and are
        skipped, unless ``exact`` (a path natbench built itself) or the part is
        the last one below a mapping: that is a missing key, reported on the
        line of the mapping's own key.
        """
        node = self.root
        if node is None:  # built from a dict: no lines; drop pydantic's internal tags such as function-after[...]
            return Located(format_path(p for p in path if not (isinstance(p, str) and "[" in p)), None)
        line = node.start_mark.line + 1
        shown: list[str | int] = []
        parts = list(path)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            found = _child(node, part)
            if found is not None:
                key_line, node = found
                line = key_line
                shown.append(part)
            elif exact or (last and isinstance(node, yaml.MappingNode) and isinstance(part, str)):
                shown.append(part)
                node = None
            elif isinstance(part, int) and not isinstance(node, yaml.SequenceNode):
                shown.append(part)
            # anything else is a pydantic-internal tag: skip it
        return Located(format_path(shown), line)

    def error(
        self,
        file: str | None,
        path: Sequence[Any],
        message: str,
        *,
        exact: bool = False,
        error: type[ConfigError] = ConfigError,
    ) -> ConfigError:
        """A :class:`ConfigError` (or the subclass ``error``) for ``path`` with its file and line."""
        where = self.locate(path, exact=exact)
        return error(message, file=file, line=where.line, field=where.field or None)


def _child(node: yaml.Node | None, part: Any) -> tuple[int, yaml.Node] | None:
    """(line of the key or item, child node) of ``node`` at ``part``, or None."""
    if isinstance(node, yaml.MappingNode):
        for key, value in _mapping_items(node):
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key.start_mark.line + 1, value
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        child: yaml.Node = node.value[part]
        return child.start_mark.line + 1, child
    return None


def _mapping_items(node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
    """Key/value pairs of a mapping with YAML merge keys (``<<``) expanded, own keys first."""
    own: list[tuple[yaml.Node, yaml.Node]] = []
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
            sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for src in sources:
                if isinstance(src, yaml.MappingNode):
                    merged.extend(_mapping_items(src))
        else:
            own.append((key, value))
    return own + merged


def parse_yaml(
    text: str, file: str | None, *, substitute_env: bool = True, syntax_error: str = "YAML syntax error"
) -> tuple[Any, SourceMap]:
    """Parse one YAML document; reject duplicate keys and substitute ``${NATBENCH_*}`` variables.

    Returns the plain data and the :class:`SourceMap` of its nodes. Every
    problem is a :class:`ConfigError` naming the file and line. ``substitute_env``
    False leaves ``${...}`` alone (recipe commands are shell text); ``syntax_error``
    starts the message of malformed YAML.
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            problem = exc.problem or "invalid YAML"
            if exc.context:
                problem = f"{exc.context}: {problem}"
            raise ConfigError(f"{syntax_error}: {problem}", file=file, line=line) from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"YAML error: {exc}", file=file) from None
        if root is None:
            raise ConfigError("the file is empty", file=file, line=1)
        _check_duplicates(root, file, [], set())
        if substitute_env:
            _substitute(root, file, loader, set())
        try:
            data = loader.construct_document(root)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ConfigError(
                f"YAML error: {exc.problem or exc}", file=file, line=mark.line + 1 if mark else None
            ) from None
    finally:
        loader.dispose()
    return data, SourceMap(root)


def _check_duplicates(node: yaml.Node, file: str | None, path: list[str | int], seen: set[int]) -> None:
    if id(node) in seen:  # aliases: the same node object appears again
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.tag == "tag:yaml.org,2002:merge":
                    _check_duplicates(value, file, path, seen)
                    continue
                if key.value in keys:
                    raise ConfigError(
                        f"duplicate key {key.value!r} (first defined on line {keys[key.value]})",
                        file=file,
                        line=key.start_mark.line + 1,
                        field=format_path([*path, key.value]),
                    )
                keys[key.value] = key.start_mark.line + 1
                _check_duplicates(value, file, [*path, key.value], seen)
            else:
                _check_duplicates(value, file, path, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, file, [*path, i], seen)


def _substitute(node: yaml.Node, file: str | None, loader: yaml.SafeLoader, seen: set[int]) -> None:
    """Replace ``${NATBENCH_X}`` / ``${NATBENCH_X:-default}`` in scalar values; ``$$`` is a literal ``$``."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if "$" not in node.value or node.tag not in ("tag:yaml.org,2002:str",):
            return
        line = node.start_mark.line + 1
        new = _VAR.sub(lambda m: _expand(m, file, line), node.value)
        if new != node.value:
            node.value = new
            if node.style is None:  # a plain scalar: let YAML type the substituted text (22 -> int)
                node.tag = loader.resolve(yaml.ScalarNode, new, (True, False))
    elif isinstance(node, yaml.MappingNode):
        for _key, value in node.value:
            _substitute(value, file, loader, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _substitute(item, file, loader, seen)


def unset_variables(text: str) -> tuple[str, ...]:
    """The ``${NATBENCH_*}`` variables without a default that the YAML document ``text`` refers to and the
    environment does not set, sorted: what :func:`parse_yaml` would stop at. Empty when the text is not
    YAML (parsing it then says what is wrong)."""
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError:
            return ()
        names: set[str] = set()
        if root is not None:
            _references(root, names, set())
    finally:
        loader.dispose()
    return tuple(sorted(n for n in names if n not in os.environ))


def _references(node: yaml.Node, names: set[str], seen: set[int]) -> None:
    """Collect the ``${NATBENCH_X}`` references without a default in the values :func:`_substitute` expands."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if "$" in node.value and node.tag == "tag:yaml.org,2002:str":
            for match in _VAR.finditer(node.value):
                name, sep, _default = (match.group(1) or "").partition(":-")
                if not sep and _VAR_NAME.match(name) and name.startswith(_ENV_PREFIX):
                    names.add(name)
    elif isinstance(node, yaml.MappingNode):
        for _key, value in node.value:
            _references(value, names, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _references(item, names, seen)


def _expand(match: re.Match[str], file: str | None, line: int) -> str:
    if match.group(0) == "$$":
        return "$"
    body = match.group(1)
    name, sep, default = body.partition(":-")
    if not _VAR_NAME.match(name):
        raise ConfigError(f"bad variable reference ${{{body}}}", file=file, line=line)
    if not name.startswith(_ENV_PREFIX):
        raise ConfigError(
            f"environment variable {name} may not be substituted: only {_ENV_PREFIX}* variables are allowed",
            file=file,
            line=line,
        )
    value = os.environ.get(name)
    if value is None:
        if sep:
            return default
        raise ConfigError(
            f"environment variable {name} is not set (write ${{{name}:-default}} for a default)",
            file=file,
            line=line,
        )
    return value
