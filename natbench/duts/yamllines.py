"""YAML loading that remembers the line of every mapping key and list item.

Recipe errors must name file, line and field; PyYAML's safe loader forgets
where a value came from, so this loader builds :class:`LineDict` and
:class:`LineList` containers that keep 1-based line numbers beside the data.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["LineDict", "LineList", "load_yaml_with_lines"]


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


class _LineLoader(yaml.SafeLoader):
    """Safe loader building line-aware containers."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError as exc:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
            ) from exc
        if key in result:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml_with_lines(text: str) -> Any:
    """Parse YAML text into plain values, :class:`LineDict` and :class:`LineList`.

    Raises ``yaml.YAMLError`` (with a ``problem_mark``) on malformed YAML or duplicate keys.
    """
    return yaml.load(text, Loader=_LineLoader)
