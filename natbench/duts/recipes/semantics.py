"""Rules across a recipe's fields, made once the schema has accepted each field on its own.

Template variables and condition names must be declared (or be natbench's run-time
variables, or saved by a command), parsers must exist, ``checks`` must name parameters,
and the steps natbench gives a meaning to must be usable (``count_connections`` parses a
count, ``timed_flush`` times a command, a stateful recipe has ``setup`` and ``teardown``).
"""

from __future__ import annotations

import re

from natbench.config.source import SourceMap
from natbench.duts.parsers import parser_names
from natbench.duts.recipes.conditions import parse_condition
from natbench.duts.recipes.params import BUILTIN_VARIABLES
from natbench.duts.recipes.render import saved_names
from natbench.duts.recipes.schema import Recipe
from natbench.duts.recipes.shell import ASSIGNMENT, CONFIG, REDIRECT, ShellStructureError, analyze, runs_script_file
from natbench.duts.recipes.template import TemplateSyntaxError, parse_template, quoted_placeholder
from natbench.errors import RecipeError

__all__ = ["check_recipe", "netns_template"]

_NETNS = re.compile(r"(?:[A-Za-z0-9_.+-]|\{\{[^{}]*\}\})+")


def check_recipe(recipe: Recipe, source: SourceMap) -> None:
    """Raise :class:`RecipeError` (file, line, field) for the first rule ``recipe`` breaks."""
    _check_checks(recipe, source)
    _check_commands(recipe)
    _check_shell(recipe)
    _check_steps(recipe)


def _error(recipe: Recipe, message: str, line: int | None, field: str) -> RecipeError:
    return RecipeError(message, file=recipe.path, line=line, field=field)


def _check_checks(recipe: Recipe, source: SourceMap) -> None:
    for i, check in enumerate(recipe.checks):
        for name in check.condition.names:
            if name not in recipe.params:
                raise _error(recipe, f"unknown parameter {name!r}", check.line, f"checks[{i}].when")
        if check.field is not None and check.field not in recipe.params:
            line = source.locate(("checks", i, "field")).line
            raise _error(recipe, f"unknown parameter {check.field!r}", line, f"checks[{i}].field")


def _check_commands(recipe: Recipe) -> None:
    parsers = parser_names()
    names = set(recipe.params) | set(BUILTIN_VARIABLES) | set(saved_names(recipe))
    for step in recipe.steps.values():
        for i, cmd in enumerate(step.commands):
            field = f"steps.{step.name}[{i}]"
            for key, text in (("run", cmd.run), ("netns", cmd.netns)):
                if text is None:
                    continue
                try:
                    placeholders = parse_template(text)
                except TemplateSyntaxError as exc:
                    raise _error(recipe, str(exc), cmd.line, f"{field}.{key}") from None
                quoted = quoted_placeholder(text)
                if quoted is not None:
                    message = (
                        f"placeholder {quoted} inside shell quotes: natbench quotes every value itself, "
                        "so a value could close the quotes; remove the quotes around it"
                    )
                    raise _error(recipe, message, cmd.line, f"{field}.{key}")
                for ph in placeholders:
                    if ph.name not in names:
                        message = f"unknown template variable {ph.name!r} (declare it under params)"
                        raise _error(recipe, message, cmd.line, f"{field}.{key}")
            if cmd.when is not None:
                for name in parse_condition(cmd.when).names:
                    if name not in names:
                        raise _error(recipe, f"condition names unknown variable {name!r}", cmd.line, f"{field}.when")
            if cmd.parse is not None and cmd.parse not in parsers:
                message = f"unknown parser {cmd.parse!r} (known: {', '.join(sorted(parsers))})"
                raise _error(recipe, message, cmd.line, f"{field}.parse")
            if cmd.timed and step.name != "timed_flush":
                raise _error(recipe, "'timed' is only meaningful in the timed_flush step", cmd.line, f"{field}.timed")
        interfaces = step.options.get("interfaces")
        for option in interfaces if isinstance(interfaces, list) else []:
            for ph in parse_template(str(option)):
                if ph.name not in names:
                    message = f"unknown template variable {ph.name!r}"
                    raise _error(recipe, message, step.line, f"steps.{step.name}.interfaces")


def netns_template(netns: str) -> str:
    """The command a ``netns:`` template stands in (natbench prefixes ``ip netns exec NS``), for :func:`analyze`."""
    return f"ip netns exec {netns} true"


def _check_shell(recipe: Recipe) -> None:
    """Every placeholder stands where a quoted word is data (:mod:`natbench.duts.recipes.shell`); a list value
    is never assigned or a redirection's file (it renders as several words); a recipe that runs a shell script
    from a file writes no value into a file."""
    lists = {n for n, p in recipe.params.items() if p.type == "list"} | {"cpus"}
    script: tuple[int, str] | None = None
    written: tuple[int, str] | None = None
    for step in recipe.steps.values():
        for i, cmd in enumerate(step.commands):
            field = f"steps.{step.name}[{i}]"
            if cmd.netns is not None and not _NETNS.fullmatch(cmd.netns):
                message = "a namespace is one word: letters, digits, '_', '.', '-' and placeholders, no shell syntax"
                raise _error(recipe, message, cmd.line, f"{field}.netns")
            for key, text in (("run", cmd.run), ("netns", None if cmd.netns is None else netns_template(cmd.netns))):
                if text is None:
                    continue
                try:
                    slots = analyze(text)
                except ShellStructureError as exc:
                    raise _error(recipe, str(exc), cmd.line, f"{field}.{key}") from None
                for slot in slots:
                    listed = slot.name in lists and not any(
                        f in ("csv", "len", "first", "last", "hexmask") for f in slot.filters
                    )
                    if listed and slot.kind in (ASSIGNMENT, REDIRECT):
                        what = "assigned to a variable" if slot.kind == ASSIGNMENT else "a redirection's file"
                        message = (
                            f"placeholder {{{{ {slot.name} }}}} is a list (several words) and is {what}: "
                            "the second word would be a command or an argument (use | csv)"
                        )
                        raise _error(recipe, message, cmd.line, f"{field}.{key}")
                    if slot.kind == CONFIG and written is None:
                        written = (cmd.line, f"{field}.{key}")
                if key == "run" and script is None and runs_script_file(text):
                    script = (cmd.line, f"{field}.{key}")
    if script is not None and written is not None:
        message = (
            f"runs a shell script from a file while the command on line {written[0]} ({written[1]}) writes values "
            "into a file: a value could become a command of the script; generate the script without values"
        )
        raise _error(recipe, message, script[0], script[1])


def _check_steps(recipe: Recipe) -> None:
    if recipe.stateful and not all(s in recipe.steps for s in ("setup", "teardown")):
        missing = [s for s in ("setup", "teardown") if s not in recipe.steps]
        raise _error(recipe, f"missing step(s): {', '.join(missing)}", None, "steps")
    count = recipe.steps.get("count_connections")
    if count is not None and count.commands and not any(c.parse for c in count.commands):
        message = "count_connections needs a command with a parser giving the count"
        raise _error(recipe, message, count.line, "steps.count_connections")
    flush = recipe.steps.get("timed_flush")
    if flush is not None and flush.commands and not any(c.timed for c in flush.commands):
        raise _error(
            recipe, "timed_flush needs at least one command marked 'timed: true'", flush.line, "steps.timed_flush"
        )
    mappings = recipe.steps.get("show_mappings")
    if mappings is not None and mappings.commands and not any(c.parse for c in mappings.commands):
        raise _error(
            recipe, "show_mappings needs a command with a mappings parser", mappings.line, "steps.show_mappings"
        )
