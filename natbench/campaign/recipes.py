"""The one hook between campaigns and the recipe engine (``natbench.duts.recipe``).

:func:`check_recipes` loads every DUT's recipe and resolves the parameters of
every working point through it (``load_recipe(name).resolve(params)``), so
``natbench validate`` catches a misspelt recipe or parameter before a run.
When the recipe engine is not installed in this tree, nothing is checked and
the result says so (it is never a silent pass).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from natbench.errors import ConfigError

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign

__all__ = ["RecipeCheck", "check_recipes", "recipe_reference"]

RECIPE_MODULE = "natbench.duts.recipe"
"""Module providing ``load_recipe(name_or_path) -> Recipe`` with ``Recipe.resolve(params) -> dict``."""


@dataclass(frozen=True)
class RecipeCheck:
    """Outcome of :func:`check_recipes`."""

    checked: bool
    """True when every DUT's recipe was loaded and every point's parameters resolved."""
    detail: str
    """What was checked, or why nothing was."""


def recipe_reference(campaign: Campaign, recipe: str) -> str:
    """A recipe name as given, or a path made relative to the campaign file's directory."""
    looks_like_path = "/" in recipe or recipe.endswith((".yaml", ".yml"))
    if looks_like_path and campaign.file is not None and not Path(recipe).is_absolute():
        return str(campaign.file.parent / recipe)
    return recipe


def check_recipes(campaign: Campaign) -> RecipeCheck:
    """Check DUT recipe names and per-point parameters against the recipe engine.

    Raises :class:`ConfigError` naming the campaign file, line and field of the
    offending recipe name or parameter.
    """
    try:
        engine: Any = importlib.import_module(RECIPE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in (RECIPE_MODULE, "natbench.duts"):
            raise
        return RecipeCheck(False, f"recipes not checked: {RECIPE_MODULE} is not available in this installation")
    load_recipe = engine.load_recipe
    source = campaign._source
    shown = str(campaign.file) if campaign.file is not None else None
    points = campaign.points()
    resolved = 0
    for i, dut in enumerate(campaign.testbed.duts):
        try:
            recipe = load_recipe(recipe_reference(campaign, dut.recipe))
        except ConfigError as exc:  # RecipeError is a ConfigError
            raise source.error(
                shown, ("testbed", "duts", i, "recipe"), f"recipe {dut.recipe!r}: {exc}"
            ) from None
        seen: list[dict[str, Any]] = []
        for p in points:
            params = p.dut_params.get(dut.name, {})
            if params in seen:
                continue
            seen.append(params)
            try:
                recipe.resolve(dict(params))
            except ConfigError as exc:
                path = _param_path(campaign, i, dut.name, exc.field)
                raise source.error(shown, path, f"recipe {dut.recipe!r}: {exc.message}") from None
            resolved += 1
    return RecipeCheck(True, f"recipes checked: {len(campaign.testbed.duts)} DUT(s), {resolved} parameter set(s)")


def _param_path(campaign: Campaign, index: int, dut: str, field: str | None) -> tuple[str | int, ...]:
    base: tuple[str | int, ...] = ("testbed", "duts", index, "params")
    if field is None:
        return base
    name = field.split(".")[-1]
    key = f"duts.{dut}.{name}"
    for group in ("zip", "product"):
        if key in getattr(campaign.spec.sweep, group):
            return ("sweep", group, key)
    return (*base, name)
