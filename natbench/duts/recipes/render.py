"""Rendering a recipe's steps: template variables, conditions, and shell-quoted command lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from natbench.duts.recipes.conditions import parse_condition
from natbench.duts.recipes.params import BUILTIN_VARIABLES
from natbench.duts.recipes.shell import Slot, command_slots
from natbench.duts.recipes.template import ClassOf, render_template
from natbench.duts.recipes.values import ValueClass, builtin_class, class_of
from natbench.errors import RecipeError

if TYPE_CHECKING:
    from natbench.duts.recipes.schema import Command, Recipe


@dataclass(frozen=True)
class RenderedCommand:
    """A command ready to run, with what to do with its result."""

    text: str
    """Shell command line; every value in it is quoted."""
    command: Command
    """The declaration it came from."""
    step: str
    """Step name."""


def value_classes(recipe: Recipe) -> ClassOf:
    """The class of a template variable's values after filters: a declared parameter's from its type, natbench's
    run-time variables' from what natbench supplies, a saved output's checked when it is rendered."""

    def of(name: str, filters: tuple[str, ...]) -> ValueClass:
        spec = recipe.params.get(name)
        return class_of(spec, filters) if spec is not None else builtin_class(name)

    return of


def saved_names(recipe: Recipe) -> dict[str, Any]:
    """Template variables that commands keep with ``save:``, all unset (None)."""
    return {c.save: None for s in recipe.steps.values() for c in s.commands if c.save}


def variables(recipe: Recipe, params: dict[str, Any] | None, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """Template variables: resolved ``params`` plus run-time ``context`` (builtins, saved values)."""
    out: dict[str, Any] = dict.fromkeys(BUILTIN_VARIABLES)
    out.update(saved_names(recipe))
    out.update(recipe.resolve(params))
    out.update(context or {})
    return out


def plan(
    recipe: Recipe, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None
) -> list[RenderedCommand]:
    """Resolve ``params`` and render the commands of ``step`` whose condition holds."""
    _need_step(recipe, step)
    values = variables(recipe, params, context)
    out = []
    for cmd in recipe.steps[step].commands:
        rendered = render_command(recipe, step, cmd, values)
        if rendered is not None:
            out.append(rendered)
    return out


def render_command(recipe: Recipe, step: str, cmd: Command, values: dict[str, Any]) -> RenderedCommand | None:
    """Render one command of ``step`` with ``values``; None when its condition is false."""
    if cmd.when is not None and not parse_condition(cmd.when).holds(values):
        return None
    run_slots, netns_slots = command_slots(cmd.run, cmd.netns, cmd.format)
    text = _render_text(recipe, cmd.run, values, cmd.line, f"steps.{step}.run", run_slots)
    if cmd.netns is not None:
        ns = _render_text(recipe, cmd.netns, values, cmd.line, f"steps.{step}.netns", netns_slots)
        text = f"ip netns exec {ns} {text}"
    return RenderedCommand(text=text, command=cmd, step=step)


def step_options(
    recipe: Recipe, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Options of a builtin step with their templates rendered (unquoted: natbench consumes them)."""
    _need_step(recipe, step)
    values = variables(recipe, params, context)
    out: dict[str, Any] = {}
    for key, value in recipe.steps[step].options.items():
        if isinstance(value, list):
            out[key] = [render_template(str(v), values, quote=False) for v in value]
        elif isinstance(value, str):
            out[key] = render_template(value, values, quote=False)
        else:
            out[key] = value
    return out


def _need_step(recipe: Recipe, step: str) -> None:
    if step not in recipe.steps:
        raise RecipeError(f"recipe {recipe.name} has no step {step!r}", file=recipe.path, field=f"steps.{step}")


def _render_text(
    recipe: Recipe, text: str, values: dict[str, Any], line: int, field: str, slots: tuple[Slot, ...]
) -> str:
    try:
        return render_template(text, values, slots=slots, classes=value_classes(recipe))
    except KeyError as exc:
        raise RecipeError(
            f"unknown template variable {exc.args[0]!r}", file=recipe.path, line=line, field=field
        ) from None
    except ValueError as exc:
        raise RecipeError(str(exc), file=recipe.path, line=line, field=field) from None
