"""The building blocks of the recipe schema: the base model and field types with natbench's own messages.

YAML gives recipes strings, booleans and numbers; these types take exactly those (no
``"yes"`` for a boolean, no number for a string) and say so in one short sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr


class RecipeModel(BaseModel):
    """Base of every recipe schema model: unknown keys are errors, values are immutable.

    A default is what leaving a key out means, so it is not validated (a field whose absence
    is an error says so with ``validate_default=True``); a key written as ``null`` is validated.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Declared(RecipeModel):
    """A part of a recipe that knows the line it was declared on (set by :class:`Recipe` after validation)."""

    _line: int = PrivateAttr(default=0)

    @property
    def line(self) -> int:
        """Line of the declaration in the recipe file (0: not read from a file)."""
        return self._line


class Named(Declared):
    """A declared part whose name is its key in the recipe (a parameter, a step)."""

    _name: str = PrivateAttr(default="")

    @property
    def name(self) -> str:
        """Its key in the recipe (a parameter name, which campaigns use under ``params``; a step name)."""
        return self._name


def must(test: Callable[[Any], object], message: str | Callable[[Any], str]) -> Any:
    """A validator passing a value on as it is when ``test(value)`` holds, else failing with ``message``.

    ``message`` may be a function of the value.
    """

    def check(value: Any) -> Any:
        if not test(value):
            raise ValueError(message(value) if callable(message) else message)
        return value

    return BeforeValidator(check)


Text = Annotated[str, must(lambda v: isinstance(v, str), "expected a string")]
"""A string (YAML's numbers and booleans are not taken for one)."""
Flag = Annotated[bool, must(lambda v: isinstance(v, bool), "expected true or false")]
"""``true`` or ``false``."""
OptionalText = Annotated[str | None, must(lambda v: isinstance(v, str), "expected a string")]
"""A string that may be left out (None); written out, it must be a string, not ``null``."""
