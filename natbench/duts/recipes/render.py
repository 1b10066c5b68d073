"""Rendering a recipe's steps: template variables, conditions, and shell-quoted command lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from natbench.duts.recipes.conditions import parse_condition
from natbench.duts.recipes.params import BUILTIN_VARIABLES
from natbench.duts.recipes.shell import Slot, analyze
from natbench.duts.recipes.template import render_template
from natbench.errors import RecipeError

if TYPE_CHECKING:
    from natbench.duts.recipes.schema import Command, Recipe

__all__ = ["RenderedCommand", "plan", "render_command", "saved_names", "step_options", "variables"]


@dataclass(frozen=True)
class RenderedCommand:
    """A command ready to run, with what to do with its result."""

    text: str
    """Shell command line; every value in it is quoted."""
    command: Command
    """The declaration it came from."""
    step: str
    """Step name."""


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
    text = _render_text(recipe, cmd.run, values, cmd.line, f"steps.{step}.run", analyze(cmd.run))
    if cmd.netns is not None:
        slots = analyze(f"ip netns exec {cmd.netns} true")
        ns = _render_text(recipe, cmd.netns, values, cmd.line, f"steps.{step}.netns", slots)
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
        return render_template(text, values, slots=slots)
    except KeyError as exc:
        raise RecipeError(
            f"unknown template variable {exc.args[0]!r}", file=recipe.path, line=line, field=field
        ) from None
    except ValueError as exc:
        raise RecipeError(str(exc), file=recipe.path, line=line, field=field) from None
