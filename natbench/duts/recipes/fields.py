"""The building blocks of the recipe schema: the base model and field types with natbench's own messages.

YAML gives recipes strings, booleans and numbers; these types take exactly those (no
``"yes"`` for a boolean, no number for a string) and say so in one short sentence.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = ["Flag", "OptionalText", "RecipeModel", "Text", "one_of"]


class RecipeModel(BaseModel):
    """Base of every recipe schema model: unknown keys are errors, values are immutable.

    A default is what leaving a key out means, so it is not validated (a field whose absence
    is an error says so with ``validate_default=True``); a key written as ``null`` is validated.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


Text = Annotated[str, BeforeValidator(_text)]
"""A string (YAML's numbers and booleans are not taken for one)."""
Flag = Annotated[bool, BeforeValidator(_flag)]
"""``true`` or ``false``."""
OptionalText = Annotated[str | None, BeforeValidator(_text)]
"""A string that may be left out (None); written out, it must be a string, not ``null``."""


def one_of(*allowed: Any, message: str) -> Any:
    """A validator accepting only the words ``allowed``; anything else fails with ``message``."""

    def check(value: Any) -> Any:
        if value not in allowed:
            raise ValueError(message)
        return value

    return BeforeValidator(check)
