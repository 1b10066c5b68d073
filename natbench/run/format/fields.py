"""Field checks of the run-directory format: one small function per JSON type, each naming the field it checks.

Every decoder of the format (run.json, points.json, record lines) reads plain JSON values through these
functions, so a value of the wrong type is one :class:`FieldError` (``field: expected ..., got ...``) that the
reader turns into ``file:line: field: ...`` - never an ``AttributeError`` later. Range checks (finite rates,
known point ids, ...) belong here too, as further checkers beside the type checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from natbench.values import MAX_RATE

SHOWN_CHARS = 60
"""A value named in an error is cut to this many characters (an error line never echoes a file's content)."""

MAX_DEPTH = 64
"""Deepest nesting of objects and lists a run-directory file may hold (natbench writes at most a dozen levels);
deeper is damage, never a RecursionError later."""

MAX_MEASURE = MAX_RATE
"""Largest number a rate, a count or a result may hold (a frame rate of 10^12 per second is far beyond any test)."""


class FieldError(ValueError):
    """A field of a run-directory file holds a value of the wrong type (or is missing)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        """The field, dotted from the top of the object (``counts.forward.sent``)."""
        self.problem = problem
        """What is wrong with it (``expected a whole number, got 'x'``)."""
        super().__init__(f"{field}: {problem}")

    def within(self, parent: str) -> FieldError:
        """The same problem, named from the enclosing object ``parent``."""
        return FieldError(f"{parent}.{self.field}", self.problem)


class DuplicateKey(ValueError):
    """A JSON object of a run-directory file names one key twice (JSON readers keep one of them silently)."""

    def __init__(self, key: str) -> None:
        self.key = key
        """The key named twice."""
        super().__init__(f"duplicate key {shown(key)} in one object (natbench writes each key once)")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of every JSON decoder of the format: the object, or :class:`DuplicateKey`."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARS` characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _wrong(field: str, expected: str, value: Any) -> FieldError:
    return FieldError(field, f"expected {expected}, got {shown(value)}")


def as_str(value: Any, field: str) -> str:
    """A string."""
    if not isinstance(value, str):
        raise _wrong(field, "a string", value)
    return value


def as_optional_str(value: Any, field: str) -> str | None:
    """A string or null."""
    return None if value is None else as_str(value, field)


def as_int(value: Any, field: str) -> int:
    """A whole number (JSON ``true`` is no number)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(field, "a whole number", value)
    return value


def as_optional_int(value: Any, field: str) -> int | None:
    """A whole number or null."""
    return None if value is None else as_int(value, field)


def as_float(value: Any, field: str) -> float:
    """A finite number, kept as JSON gave it (``0`` stays an int, so a record re-encodes to the same line)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise _wrong(field, "a finite number", value)
    return value


def as_count(value: Any, field: str) -> int:
    """A whole number from 0 to 2^63 - 1 (a repetition, a step, a frame count)."""
    number = as_int(value, field)
    if not 0 <= number < 2**63:
        raise FieldError(field, f"expected a whole number >= 0, got {shown(value)}")
    return number


def as_measure(value: Any, field: str) -> float:
    """A finite number from 0 to :data:`MAX_MEASURE` (a rate, a time, a result): never negative, never absurd."""
    number = as_float(value, field)
    if number < 0:
        raise FieldError(field, f"expected a finite number >= 0, got {shown(value)}")
    if number > MAX_MEASURE:
        raise FieldError(field, f"expected at most {MAX_MEASURE:g}, got {shown(value)}")
    return number


def as_rate(value: Any, field: str) -> float:
    """A rate in frames (or connections) per second: :func:`as_measure`."""
    return as_measure(value, field)


def as_optional_rate(value: Any, field: str) -> float | None:
    """A rate or null."""
    return None if value is None else as_measure(value, field)


def as_optional_measure(value: Any, field: str) -> float | None:
    """A measured value (seconds, a loss ratio, a result) or null: :func:`as_measure`."""
    return None if value is None else as_measure(value, field)


def as_time(value: Any, field: str) -> float:
    """A time stamp or a duration in seconds: :func:`as_measure`."""
    return as_measure(value, field)


def depth(value: Any) -> int:
    """How deep objects and lists nest in ``value`` (a scalar: 0), counted without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest


def as_object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object (its keys are strings)."""
    if not isinstance(value, dict):
        raise _wrong(field, "an object", value)
    return value


def as_list(value: Any, field: str) -> list[Any]:
    """A JSON array."""
    if not isinstance(value, list):
        raise _wrong(field, "a list", value)
    return value


def plain_json(obj: Any) -> Any:
    """A JSON-safe copy of facts or metadata: dict keys become strings, tuples lists, unknown objects strings."""
    if isinstance(obj, Mapping):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain_json(v) for v in obj]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def json_safe(obj: Any) -> Any:
    """Strict-JSON copy: NaN and infinities (JSON has neither) become null; other values pass through."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
