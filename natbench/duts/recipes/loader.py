"""Finding and reading recipe files: the search path, names vs paths, and one error per bad file."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from natbench.config.paths import env_paths
from natbench.config.source import parse_yaml, read_user_file, require_document
from natbench.config.validation import validation_error
from natbench.duts.recipes.schema import Recipe, RecipeSource
from natbench.duts.recipes.semantics import check_recipe
from natbench.errors import ConfigError, RecipeError

_SOURCE_TREE = Path(__file__).resolve().parents[3]
"""The checkout natbench runs from (``natbench/duts/recipes/`` is three levels below it)."""


SHIPPED = _SOURCE_TREE / "dut_recipes"
"""The recipes natbench ships."""


def recipe_search_path() -> list[Path]:
    """Directories searched for ``<name>.yaml``, first one wins: $NATBENCH_RECIPES (':'-separated; naming a
    directory there is how its recipes replace shipped ones), the shipped recipes (:data:`SHIPPED`), then
    ./dut_recipes of the working directory (for names natbench does not ship: a file there cannot silently
    replace a shipped recipe of the same name, see :func:`shadowed_recipes`)."""
    dirs = env_paths("NATBENCH_RECIPES")  # ConfigError naming the variable for an entry that cannot be a path
    dirs.append(SHIPPED)
    dirs.append(Path.cwd() / "dut_recipes")
    seen: list[Path] = []
    resolved: list[Path] = []
    for d in dirs:
        key = d.resolve() if d.is_dir() else d
        if key not in resolved:
            seen.append(d)
            resolved.append(key)
    return seen


def list_recipes() -> dict[str, Path]:
    """Recipe name -> file for every recipe on the search path (first one wins)."""
    found: dict[str, Path] = {}
    for d in recipe_search_path():
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                found.setdefault(f.stem, f)
    return dict(sorted(found.items()))


def shadowed_recipes() -> dict[str, Path]:
    """Recipe name -> file in ./dut_recipes that is *not* used because an earlier directory of the search path
    (a shipped recipe, or $NATBENCH_RECIPES) has a recipe of that name. Name the file in the campaign
    (``recipe: ./dut_recipes/NAME.yaml``) or list its directory in $NATBENCH_RECIPES to use it."""
    local = Path.cwd() / "dut_recipes"
    used = list_recipes()
    if not local.is_dir():
        return {}
    return {f.stem: f for f in sorted(local.glob("*.yaml")) if f.stem in used and used[f.stem].resolve() != f.resolve()}


def is_recipe_path(reference: str) -> bool:
    """Whether a recipe reference is a file (it has a ``/`` or ends in ``.yaml`` / ``.yml``), not a name."""
    return "/" in reference or reference.endswith((".yaml", ".yml"))


def recipe_reference(recipe: str, base_dir: Path | None) -> str:
    """A DUT's recipe as a campaign names it: a name stays a name; a relative path is taken relative to
    ``base_dir`` (the campaign file's directory; None: as given)."""
    if is_recipe_path(recipe) and base_dir is not None and not Path(recipe).is_absolute():
        return str(base_dir / recipe)
    return recipe


def load_recipe(name_or_path: str | os.PathLike[str]) -> Recipe:
    """Load a recipe by name (searched on :func:`recipe_search_path`) or by file path.

    Raises :class:`RecipeError` naming file, line and field for anything malformed.
    """
    text_name = os.fspath(name_or_path)
    if is_recipe_path(text_name):
        path = Path(text_name)
    else:
        recipes = list_recipes()
        if text_name not in recipes:
            known = ", ".join(recipes) or "none"
            raise RecipeError(f"unknown recipe {text_name!r} (known: {known})", field="recipe")
        path = recipes[text_name]
    try:
        text = read_user_file(path, "recipe file")
    except ConfigError as exc:
        raise RecipeError(exc.message, file=exc.file, line=exc.line, field=exc.field) from None
    return parse_recipe(text, str(path))


def parse_recipe(text: str, file: str) -> Recipe:
    """Parse recipe YAML ``text`` coming from ``file``; raise :class:`RecipeError` (file, line, field)."""
    try:
        data, source = parse_yaml(text, file, substitute_env=False, syntax_error="malformed YAML")
    except ConfigError as exc:
        raise RecipeError(exc.message, file=exc.file, line=exc.line, field=exc.field) from None
    if not isinstance(data, dict):
        raise RecipeError("a recipe must be a YAML mapping", file=file, line=1)
    try:
        require_document(data, file, "recipe", [f.alias or n for n, f in Recipe.model_fields.items()])
    except ConfigError as exc:
        raise RecipeError(exc.message, file=exc.file, line=exc.line) from None
    try:
        recipe = Recipe.model_validate(data, context=RecipeSource(file, source))
    except ValidationError as exc:
        raise validation_error(exc, source=source, file=file, model=Recipe, error=RecipeError) from None
    check_recipe(recipe, source)
    return recipe
