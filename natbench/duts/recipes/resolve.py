"""A recipe's parameters resolved against the values a campaign gives (:func:`resolve_params`): each checked by its
declared type, defaults filled, and every value checked in each place its placeholders stand in the recipe's commands
(:func:`~natbench.duts.recipes.shell.value_problem`) before anything runs, so the error names the campaign's field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from natbench.config.source import SourceMap
from natbench.duts.recipes.params import shown
from natbench.duts.recipes.render import value_classes
from natbench.duts.recipes.shell import ShellStructureError, command_slots, value_problem
from natbench.duts.recipes.template import rendered_words
from natbench.errors import RecipeError

if TYPE_CHECKING:
    from natbench.duts.recipes.schema import Recipe


def resolve_params(
    recipe: Recipe,
    params: dict[str, Any] | None,
    *,
    file: str | None = None,
    field_prefix: str = "",
    source: SourceMap | None = None,
) -> dict[str, Any]:
    """Typed values of every parameter ``recipe`` declares, defaults filled (see :meth:`Recipe.resolve`)."""
    given = dict(params or {})
    src_file = file or recipe.path
    specs = recipe.params

    def where(key: str) -> int | None:
        """The line of the campaign's field ``key`` (none when the campaign gives no lines), else of its
        declaration in the recipe (of ``params:`` for a parameter the recipe does not declare)."""
        if source is not None:
            return source.locate((key,)).line
        if file is not None:
            return None
        spec = specs.get(key)
        return spec.line if spec else (recipe.params_line or None)

    for key in given:
        if key not in specs:
            known = ", ".join(sorted(specs)) or "none"
            raise RecipeError(
                f"unknown parameter of recipe {recipe.name} (it declares: {known})",
                file=src_file,
                line=where(key),
                field=field_prefix + str(key),
            )
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if given.get(name) is not None:
            try:
                out[name] = spec.check(given[name])
            except ValueError as exc:
                raise RecipeError(
                    f"{exc} (recipe {recipe.name}, type {spec.type})",
                    file=src_file,
                    line=where(name),
                    field=field_prefix + name,
                ) from None
        elif spec.required:
            raise RecipeError(
                f"required by recipe {recipe.name} ({spec.doc or spec.type}) but not given",
                file=src_file,
                line=source.locate(()).line if source is not None else (spec.line if file is None else None),
                field=field_prefix + name,
            )
        else:
            out[name] = spec.default
    for name, problem, line in _place_problems(recipe, out):
        raise RecipeError(
            f"{problem} (recipe {recipe.name}, line {line})",
            file=src_file,
            line=where(name),
            field=field_prefix + name,
        )
    for check in recipe.checks:
        if check.condition.holds(out):
            raise RecipeError(
                f"{check.error} (recipe {recipe.name})",
                file=src_file,
                line=where(check.field) if check.field else (check.line if file is None else None),
                field=field_prefix + (check.field or "params"),
            )
    return out


def _place_problems(recipe: Recipe, values: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(parameter, problem, recipe line) for the first value that does not fit a place its placeholders stand in
    (:func:`~natbench.duts.recipes.shell.value_problem`: a leading ``-`` where a program would read an option,
    more than one token where it is written, a word where a statement begins). The same check runs again on
    every rendered command; here it names the campaign's field before anything runs."""
    classes = value_classes(recipe)
    for step in recipe.steps.values():
        for cmd in step.commands:
            try:
                run_slots, netns_slots = command_slots(cmd.run, cmd.netns, cmd.format)
            except ShellStructureError:  # reported when the recipe is loaded
                continue
            for slot in (*netns_slots, *run_slots):
                value = values.get(slot.name)  # declared parameters only: the rest is checked when rendered
                if value is None:
                    continue
                try:
                    words, _ = rendered_words(value, slot.filters)
                except ValueError:  # a filter that does not apply: rendering says so
                    continue
                for i, word in enumerate(words):
                    problem = value_problem(slot, word, i == 0, classes(slot.name, slot.filters))
                    if problem is not None:
                        return [(slot.name, f"{shown(word)} {problem}", cmd.line)]
    return []
