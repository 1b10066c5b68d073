"""``natbench recipes``: list DUT recipes, show one, render its commands for given parameters."""

from __future__ import annotations

from typing import Any

import click

from natbench.cli.group import CountRange, cli, printable
from natbench.config.source import parse_yaml
from natbench.duts.recipes import KNOWN_STEPS, Recipe, list_recipes, load_recipe, shadowed_recipes
from natbench.errors import ConfigError
from natbench.values import MAX_CORES

RENDERED_CHARS = 100_000
"""Longest rendered command line printed whole (a recipe's commands are far shorter)."""


def _parse_params(items: tuple[str, ...]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected NAME=VALUE, got {item!r}", field="--param")
        # the limited YAML reader: a nested or aliased value cannot blow up (one line naming --param)
        parsed = parse_yaml(value, "--param", substitute_env=False)[0] if value.strip() else ""
        # keep text that YAML would turn into something else than a scalar or list
        params[key.strip()] = parsed if isinstance(parsed, str | int | float | bool | list) else value
    return params


def _steps_in_order(recipe: Recipe) -> list[str]:
    known = [s for s in KNOWN_STEPS if s in recipe.steps]
    return known + sorted(s for s in recipe.steps if s not in KNOWN_STEPS)


@cli.group("recipes")
def recipes() -> None:
    """DUT recipes: list them, show one, render its commands."""


@recipes.command("list")
def list_cmd() -> None:
    """List the recipes natbench finds (name, family, implementation, description)."""
    found = list_recipes()
    if not found:
        click.echo("no recipes found (set NATBENCH_RECIPES or run from a natbench checkout)")
        return
    for name, path in found.items():
        try:
            r = load_recipe(path)
            click.echo(printable(f"{name:20} {r.family:12} {r.implementation:12} {r.description}"))
        except ConfigError as exc:
            click.echo(f"{name:20} BROKEN: {printable(str(exc))}")
    for name, path in shadowed_recipes().items():
        click.echo(
            f"natbench: note: {printable(str(path))} is not used: natbench ships a recipe {name} (name the file, or"
            " list its directory in NATBENCH_RECIPES)",
            err=True,
        )


@recipes.command("validate")
@click.argument("names", nargs=-1, required=True)
def validate_cmd(names: tuple[str, ...]) -> None:
    """Check recipes NAMES (names or files): schema, templates and where each placeholder stands.

    One OK line per good recipe, one error line (file:line: field: message) per bad one; exits 2 if any is bad.
    """
    bad = 0
    for name in names:
        try:
            r = load_recipe(name)
        except ConfigError as exc:
            bad += 1
            click.echo(f"natbench: error: {printable(str(exc))}", err=True)
            continue
        commands = sum(len(s.commands) for s in r.steps.values())
        click.echo(f"OK {printable(name)}: recipe {r.name}, {len(r.params)} parameter(s), {commands} command(s)")
    if bad:
        raise SystemExit(2)


@recipes.command("show")
@click.argument("name")
def show(name: str) -> None:
    """Show recipe NAME (a name or a file): parameters with types and defaults, and its steps."""
    r = load_recipe(name)
    click.echo(printable(f"recipe {r.name} ({r.path})"))
    click.echo(printable(f"  {r.description}"))
    click.echo(f"  implementation {r.implementation}, family {r.family}, os {r.os}, stateful {str(r.stateful).lower()}")
    click.echo("parameters:")
    for p in r.params.values():
        extra = " required" if p.required else (f" default {p.default}" if p.default is not None else " optional")
        if p.choices:
            extra += f" ({'|'.join(p.choices)})"
        click.echo(printable(f"  {p.name:20} {p.type:11}{extra}  {p.doc}"))
    click.echo("steps:")
    for s in _steps_in_order(r):
        step = r.steps[s]
        what = f"{len(step.commands)} command(s)"
        if step.builtin:
            what = f"builtin {step.builtin}" + (f" + {what}" if step.commands else "")
        if step.unsupported:
            what = f"unsupported: {step.unsupported}"
        click.echo(printable(f"  {s:20} {what}"))


@recipes.command("render")
@click.argument("name")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE", help="A recipe parameter (repeatable).")
@click.option("-s", "--step", "steps", multiple=True, help="Only this step (repeatable); default: all.")
@click.option("--cores", type=CountRange(1, MAX_CORES), default=None, help="Value of the run-time variable 'cores'.")
def render(name: str, params: tuple[str, ...], steps: tuple[str, ...], cores: int | None) -> None:
    """Print the shell commands recipe NAME runs for the given parameters (every value quoted)."""
    r = load_recipe(name)
    values = _parse_params(params)
    r.resolve(values, file="--param")
    context: dict[str, Any] = {"cores": cores, "cpus": list(range(cores)) if cores else []}
    for s in steps or tuple(_steps_in_order(r)):
        step = r.steps.get(s)
        if step is None:
            raise ConfigError(
                f"recipe {r.name} has no step {s!r} (steps: {', '.join(_steps_in_order(r))})", field="--step"
            )
        click.echo(f"# {s}")
        if step.unsupported:
            click.echo(f"#   unsupported: {step.unsupported}")
        if step.builtin:
            opts = r.step_options(s, values, context)
            click.echo(f"#   builtin {step.builtin} {opts}")
        for line in r.render(s, values, context):
            click.echo(printable(line, RENDERED_CHARS))  # control characters of a value escaped, not sent raw
