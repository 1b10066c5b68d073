"""YAML loading that remembers the line of every mapping key and list item.

Recipe errors must name file, line and field; PyYAML's safe loader forgets
where a value came from, so this loader builds :class:`LineDict` and
:class:`LineList` containers that keep 1-based line numbers beside the data.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["DuplicateKeyError", "LineDict", "LineList", "load_yaml_with_lines"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class LineDict(dict):  # type: ignore[type-arg,unused-ignore]
    """A mapping from YAML with ``line`` (its own first line) and ``lines[key]`` (line of each key)."""

    line: int = 0
    lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        """Line of ``key`` if present, else the mapping's own line."""
        return self.lines.get(key, self.line)


class LineList(list):  # type: ignore[type-arg,unused-ignore]
    """A sequence from YAML with ``line`` and ``lines[i]`` (line of item i)."""

    line: int = 0
    lines: list[int]

    def line_of(self, index: int) -> int:
        """Line of item ``index`` if known, else the sequence's own line."""
        return self.lines[index] if 0 <= index < len(self.lines) else self.line


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping repeats one of its own keys; ``field`` is the repeated key's path (``steps.setup[0].run``)."""

    def __init__(self, message: str, field: str, mark: yaml.Mark) -> None:
        super().__init__(None, None, message, mark)
        self.field = field


class _LineLoader(yaml.SafeLoader):
    """Safe loader building line-aware containers."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.path: list[str] = []
        """Rendered path of the value being constructed: ``.key`` and ``[index]`` parts."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    own: dict[Any, int] = {}  # the mapping's own keys (not merged in with <<) and their lines
    for key_node, _value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError as exc:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
            ) from exc
        if key in own:
            raise DuplicateKeyError(
                f"duplicate key {key!r} (first defined on line {own[key]})",
                "".join([*loader.path, f".{key}"]).lstrip("."),
                key_node.start_mark,
            )
        own[key] = key_node.start_mark.line + 1
    loader.flatten_mapping(node)  # merged keys first: an own key of the same name overrides them, as YAML says
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        loader.path.append(f".{key}")
        try:
            result[key] = loader.construct_object(value_node, deep=True)
        finally:
            loader.path.pop()
        result.lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList()
    for i, child in enumerate(node.value):
        loader.path.append(f"[{i}]")
        try:
            result.append(loader.construct_object(child, deep=True))
        finally:
            loader.path.pop()
    result.line = node.start_mark.line + 1
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml_with_lines(text: str) -> Any:
    """Parse YAML text into plain values, :class:`LineDict` and :class:`LineList`.

    Raises ``yaml.YAMLError`` (with a ``problem_mark``) on malformed YAML, :class:`DuplicateKeyError`
    (naming the key's path) when a mapping repeats one of its own keys at any depth; a key
    merged in with ``<<`` may be overridden.
    """
    return yaml.load(text, Loader=_LineLoader)
