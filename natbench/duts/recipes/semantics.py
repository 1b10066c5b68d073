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
from natbench.duts.recipes.render import saved_names, value_classes
from natbench.duts.recipes.schema import Recipe
from natbench.duts.recipes.shell import ShellStructureError, Slot, analyze, command_slots
from natbench.duts.recipes.shellsyntax import mark_placeholders
from natbench.duts.recipes.template import TemplateSyntaxError, parse_template, quoted_placeholder
from natbench.duts.recipes.values import ValueClass
from natbench.errors import RecipeError

_NETNS = re.compile(r"(?:[A-Za-z0-9_.+-]|\{\{[^{}]*\}\})+")


def check_recipe(recipe: Recipe, source: SourceMap) -> None:
    """Raise :class:`RecipeError` (file, line, field) for the first rule ``recipe`` breaks."""
    _check_checks(recipe, source)
    _check_commands(recipe)
    _check_shell(recipe, source)
    _check_steps(recipe)
    _check_table(recipe)


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


def _check_table(recipe: Recipe) -> None:
    """A declared table size names a declared integer parameter."""
    for key in ("size", "hash"):
        size = getattr(recipe.table, key) if recipe.table is not None else None
        if size is None:
            continue
        spec = recipe.params.get(size.param)
        if spec is None:
            raise _error(recipe, f"unknown parameter {size.param!r}", size.line, f"table.{key}.param")
        if spec.type != "int":
            raise _error(
                recipe, f"parameter {size.param!r} is a {spec.type}, not an int", size.line, f"table.{key}.param"
            )


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
            if cmd.save is not None and (cmd.save in recipe.params or cmd.save in BUILTIN_VARIABLES):
                message = f"save: {cmd.save} is the name of a parameter or of a variable natbench supplies"
                raise _error(recipe, message, cmd.line, f"{field}.save")
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


def _check_shell(recipe: Recipe, source: SourceMap) -> None:
    """Every command (and the clock) is read (:mod:`natbench.duts.recipes.shell`): each placeholder stands where a
    value is data, and the class of its values (their declared type) meets what the place needs."""
    classes = value_classes(recipe)
    for step in recipe.steps.values():
        for i, cmd in enumerate(step.commands):
            field = f"steps.{step.name}[{i}]"
            if cmd.netns is not None and not _NETNS.fullmatch(cmd.netns):
                message = "a namespace is one word: letters, digits, '_', '.', '-' and placeholders, no shell syntax"
                raise _error(recipe, message, cmd.line, f"{field}.netns")
            in_netns = len(mark_placeholders(cmd.netns)[1]) if cmd.netns is not None else 0
            try:
                run_slots, netns_slots = command_slots(cmd.run, cmd.netns, cmd.format)
            except ShellStructureError as exc:
                key = "netns" if exc.placeholder is not None and exc.placeholder < in_netns else "run"
                raise _error(recipe, str(exc), cmd.line, f"{field}.{key}") from None
            for key, slots in (("run", run_slots), ("netns", netns_slots)):
                for slot in slots:
                    problem = _class_problem(slot, classes(slot.name, slot.filters))
                    if problem is not None:
                        shown = "{{ " + " | ".join((slot.name, *slot.filters)) + " }}"
                        raise _error(recipe, f"placeholder {shown} {problem}", cmd.line, f"{field}.{key}")
            if cmd.format is not None and not any(s.written for s in run_slots):
                message = f"format: {cmd.format} applies to values a command writes, and this one writes none"
                raise _error(recipe, message, cmd.line, f"{field}.format")
    try:
        analyze(recipe.clock)
    except ShellStructureError as exc:
        raise _error(recipe, str(exc), source.locate(("clock",)).line or None, "clock") from None


def _class_problem(slot: Slot, value_class: ValueClass) -> str | None:
    """Why no value of ``value_class`` (a parameter's declared type) may stand in ``slot``, or why some could not
    (then the recipe is refused: a value's safety is a property of its type); None when every value may, or when
    each is checked as the campaign gives it."""
    what = value_class.describe()
    if value_class.kind == "text":
        if not slot.written or slot.format != value_class.format:
            return (
                f"is {what} and stands in {slot.place}: a text parameter stands only in text a command writes in "
                f"its format (declare format: {value_class.format} on the command)"
            )
        if slot.head:
            return f"is {what} and begins a statement of {slot.place}: only a number or an address may"
        if slot.inside_string:
            return (
                f"is {what} and is written inside a string the recipe's own text opened in {slot.place}: its "
                "quotes would close that string"
            )
        return None
    if value_class.words and slot.single:
        return (
            f"is a list (several words) and is {slot.place}: the second word would be a command or an argument "
            "(use | csv)"
        )
    runtime = value_class.kind == "runtime"
    if slot.number and not (runtime or value_class.within("number")):
        return f"is {what} and reaches arithmetic $(( )) (through a variable): only a number may"
    if slot.head and not (runtime or value_class.within("datum")):
        return (
            f"is {what} and begins a statement of {slot.place} (a line of its own, or what the format reads as "
            "one): only a number or an address may stand there; put the recipe's own text before it"
        )
    return None


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
