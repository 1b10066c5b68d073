"""The recipe condition language of ``when:`` (commands) and ``checks:`` (rules over parameters).

``name`` (truthy), ``not name``, ``name == word``, ``name != word``, ``name in [a, b]``,
joined by ``and`` / ``or`` (``and`` binds tighter). Values are compared as words: a
boolean is ``true`` / ``false``, a number its decimal text; quotes around a word are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_NAME = r"([A-Za-z_]\w*)"


@dataclass(frozen=True)
class Clause:
    """One test of a variable."""

    name: str
    """Variable name."""
    op: str
    """``truthy``, ``not``, ``==``, ``!=`` or ``in``."""
    values: tuple[str, ...] = ()
    """Words compared with (one for ``==`` / ``!=``)."""

    def holds(self, variables: dict[str, Any]) -> bool:
        """Whether the clause is true for ``variables`` (an unknown name is None)."""
        v = variables.get(self.name)
        if self.op == "truthy":
            return _truthy(v)
        if self.op == "not":
            return not _truthy(v)
        if self.op == "==":
            return v is not None and as_word(v) == self.values[0]
        if self.op == "!=":
            return v is None or as_word(v) != self.values[0]
        return v is not None and as_word(v) in self.values


@dataclass(frozen=True)
class Condition:
    """A disjunction (``or``) of conjunctions (``and``) of clauses. Build with :func:`parse_condition`."""

    alternatives: tuple[tuple[Clause, ...], ...]
    """The ``or`` alternatives, each a tuple of ``and``-ed clauses."""

    @property
    def names(self) -> list[str]:
        """Every variable the condition reads, in order of appearance."""
        return [clause.name for conj in self.alternatives for clause in conj]

    def holds(self, variables: dict[str, Any]) -> bool:
        """Whether the condition is true for ``variables``."""
        return any(all(c.holds(variables) for c in conj) for conj in self.alternatives)


@lru_cache(maxsize=1024)
def parse_condition(text: str) -> Condition:
    """Parse a condition; raise ValueError saying which forms are allowed."""
    out: list[tuple[Clause, ...]] = []
    for alternative in re.split(r"\s+or\s+", text.strip()):
        out.append(tuple(_clause(part.strip()) for part in re.split(r"\s+and\s+", alternative.strip())))
    return Condition(tuple(out))


def _clause(part: str) -> Clause:
    m = re.fullmatch(rf"not\s+{_NAME}", part)
    if m:
        return Clause(m.group(1), "not")
    m = re.fullmatch(_NAME, part)
    if m:
        return Clause(m.group(1), "truthy")
    m = re.fullmatch(rf"{_NAME}\s*(==|!=)\s*(.+)", part)
    if m:
        return Clause(m.group(1), m.group(2), (_unquote(m.group(3)),))
    m = re.fullmatch(rf"{_NAME}\s+in\s+\[(.*)\]", part)
    if m:
        return Clause(m.group(1), "in", tuple(_unquote(v) for v in m.group(2).split(",") if v.strip()))
    raise ValueError(f"cannot parse condition {part!r} (use: name, not name, name == x, name != x, name in [a, b])")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def as_word(value: Any) -> str:
    """A value as conditions and ``choice`` parameters compare it: ``true`` / ``false`` for booleans, else ``str``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", [], ())
