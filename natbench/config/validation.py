"""A pydantic ``ValidationError`` as one :class:`~natbench.errors.ConfigError` naming file, line and field.

Every schema natbench reads (campaign, testbed file, DUT recipe) reports its first
problem through :func:`validation_error`, so every user sees the same words:
``required field is missing``, ``unknown key; did you mean 'duts'? allowed here: ...``,
or the validator's own message.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from natbench.config.source import SourceMap
from natbench.errors import ConfigError

_KEY = "[key]"
"""pydantic's loc part for a problem with a mapping's key (the key itself is the part before it)."""


def plain_message(msg: str) -> str:
    """A pydantic message in natbench's words: no ``Value error,`` prefix; ``Input should be`` -> ``must be``."""
    msg = msg.removeprefix("Value error, ")
    if msg.startswith("Input should be "):
        msg = "must be " + msg.removeprefix("Input should be ")
    return msg.replace("Input tag", "kind")


def validation_error(
    exc: ValidationError,
    *,
    source: SourceMap | None = None,
    file: str | None = None,
    model: type[BaseModel] | None = None,
    prefix: Sequence[str | int] = (),
    error: type[ConfigError] = ConfigError,
) -> ConfigError:
    """The first problem of ``exc`` as a :class:`ConfigError` (or the subclass ``error``).

    ``source`` maps the validated data to its YAML lines (None: data built in code, no line);
    ``model`` is the validated model, for the keys an unknown key could have been; ``prefix``
    is where the validated data sits inside ``source`` (e.g. ``("testbed",)``).
    """
    loc, message = first_error(exc, model=model)
    where = source or SourceMap(None)
    return where.error(file, (*prefix, *loc), message, error=error)


def first_error(exc: ValidationError, *, model: type[BaseModel] | None = None) -> tuple[tuple[str | int, ...], str]:
    """Where the first problem of ``exc`` is (pydantic's loc) and what it is, in natbench's words.

    For a caller that locates the path itself (e.g. through a campaign's ``error_at``);
    :func:`validation_error` is this plus the file and line.
    """
    err = exc.errors(include_url=False)[0]
    loc = tuple(part for part in err["loc"] if part != _KEY)
    return loc, _message(err, loc, model)


def _message(err: Any, loc: tuple[Any, ...], model: type[BaseModel] | None) -> str:
    kind = err.get("type")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc) if model is not None and loc else None
        if allowed:
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return f"unknown key; {hint}allowed here: {', '.join(allowed)}"
        return "unknown key (not part of schema_version 1)"
    if kind == "missing":
        return "required field is missing"
    if kind == "int_parsing_size":  # pydantic's "Unable to parse input string as an integer, exceeded maximum size"
        return "is too large for this field (a whole number far beyond its range)"
    return plain_message(str(err.get("msg", "invalid value")))


def _allowed_keys(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """Keys the schema allows in the mapping that holds ``loc[-1]`` (None when it cannot tell)."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = _field(model, str(part))
            if field is None:
                model = _member(model, part)
                continue
            model = _unwrap(field.annotation)
        else:
            model = _member(model, part)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [info.alias or name for name, info in model.model_fields.items()]
    return None


def _field(model: type[BaseModel], key: str) -> Any:
    """The field a YAML key names: by its alias when it has one, else by its name."""
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return info
    return None


def _unwrap(annotation: Any) -> Any:
    """The model inside ``X | None``, ``list[X]``, ``dict[str, X]``, ``Annotated[...]``; a union of models: a tuple."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(args[0])
    if origin in (list, tuple):
        return _unwrap(args[0]) if args else annotation
    if origin is dict:
        return _DictOf(_unwrap(args[1])) if len(args) == 2 else None
    if args and origin is not None:  # a union
        models = [_unwrap(a) for a in args]
        models = [m for m in models if isinstance(m, type) and issubclass(m, BaseModel)]
        if len(models) == 1:
            return models[0]
        return tuple(models) or None
    return annotation


class _DictOf:
    """A mapping of free keys to values of one model: the next path part is a key, then the model."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _member(model: Any, tag: Any) -> Any:
    """Pick a union member by pydantic's loc tag (a discriminator value such as ``ssh``), or step into a mapping."""
    if isinstance(model, _DictOf):
        return model.value
    if isinstance(model, tuple):
        for m in model:
            kind = m.model_fields.get("kind")
            if kind is not None and tag in typing.get_args(kind.annotation):
                return m
    return model
