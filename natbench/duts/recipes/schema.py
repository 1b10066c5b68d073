"""The recipe file schema: pydantic models of what ``dut_recipes/<name>.yaml`` may say.

:class:`Recipe` is the whole file; a step is a list of :class:`Command` or a mapping
(:class:`Step`); ``checks:`` are :class:`Check` rules. Shorthands (a command as a bare
string, a step as a bare list, a parameter as a bare type name) are expanded here.
Every model forbids unknown keys. Rules across fields (template variables declared,
parsers known, step semantics) are made by :mod:`natbench.duts.recipes.semantics`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_validator,
)

from natbench.config.source import SourceMap
from natbench.duts.recipes import render
from natbench.duts.recipes.conditions import Condition, parse_condition
from natbench.duts.recipes.cost import TableWork, WorkRates
from natbench.duts.recipes.fields import Declared, Flag, Named, OptionalText, RecipeModel, Text, must
from natbench.duts.recipes.formats import FORMATS, format_names
from natbench.duts.recipes.params import ParamSpec, param_name
from natbench.duts.recipes.render import RenderedCommand
from natbench.duts.recipes.reports import MemorySpec, TableSpec, declarations
from natbench.duts.recipes.resolve import resolve_params
from natbench.plugins import DutDeclarations
from natbench.values import MAX_DURATION_SECONDS

KNOWN_STEPS = (
    "prepare",
    "setup",
    "teardown",
    "reset_connections",
    "count_connections",
    "timed_flush",
    "show_mappings",
    "set_cores",
    "rss",
    "facts",
)
"""Step names natbench gives a meaning to (others may be run by name)."""

DEFAULT_CLOCK = "date +%s.%N"
"""The clock command of a recipe that names none (GNU date: seconds with nanoseconds)."""

BUILTINS = ("linux-cores",)
"""Steps natbench implements itself (``builtin:``)."""

_RECIPE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_STEP_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SAVE_NAME = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class RecipeSource:
    """Validation context of a recipe read from a file: where it came from, for lines and messages."""

    file: str
    """The recipe file (:attr:`Recipe.path`)."""
    source: SourceMap
    """Its YAML nodes (lines of steps, commands, parameters and checks)."""


# ---------------------------------------------------------------------------
# field types


MAX_COMMAND_CHARS = 16_384
"""Longest command template (the longest shipped command has about 200 characters)."""


_LITERAL_SEGMENTS = re.compile(r"(\{\{.*?\}\})", re.S)


def _argv_word(element: str) -> str:
    """One element of a command written as a list, as a shell word: its literal text quoted, its placeholders kept."""
    pieces = _LITERAL_SEGMENTS.split(element)
    word = "".join(p if p.startswith("{{") else shlex.quote(p) for p in pieces if p)
    return word or "''"


def _command_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        if not value or not all(isinstance(v, str) for v in value):
            raise ValueError("a command written as a list holds strings: the program, then its arguments")
        value = " ".join(_argv_word(v) for v in value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("required: the command template")
    if len(value) > MAX_COMMAND_CHARS:
        raise ValueError(f"a command template is at most {MAX_COMMAND_CHARS:,} characters ({len(value):,} here)")
    return value.strip()


def _netns_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    if len(value) > 256:
        raise ValueError("a namespace template is at most 256 characters")
    return value


def _condition(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    parse_condition(value)  # raises ValueError naming the forms allowed
    return value


def _save_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    if not _SAVE_NAME.fullmatch(value):
        raise ValueError("save names are lowercase identifiers")
    return value


def _params(value: Any) -> Any:
    if value is None:
        return {}  # ``params:`` left empty
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of parameter name -> declaration")
    return value


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


_TIMEOUT = must(
    lambda v: v is None or (not isinstance(v, bool) and isinstance(v, int | float) and 0 < v <= MAX_DURATION_SECONDS),
    "expected a positive number of seconds, at most 604800 (seven days)",
)
_REASON = must(lambda v: v is None or isinstance(v, str), "expected a reason (string)")
_BUILTIN = must(lambda v: v is None or v in BUILTINS, lambda v: f"unknown builtin {v!r} (known: {', '.join(BUILTINS)})")
_METHOD = must(lambda v: v in ("auto", "hotplug", "rps"), "method is one of auto, hotplug, rps")
_SCOPE = must(lambda v: v in ("dut", "host"), "scope is 'dut' or 'host'")
_FORMAT = must(lambda v: v is None or v in FORMATS, lambda v: f"unknown format {v!r} (known: {format_names()})")

_COST = must(
    lambda v: v is None or (isinstance(v, str) and v in TableWork.__members__.values()),
    f"cost is what the command does with each connection of the table: {' or '.join(TableWork)}",
)
_COMMANDS = must(_is_list, "expected a list of commands")
_CHECKS = must(_is_list, "expected a list of {when, error, field}")
_STEP_NAME_OK = must(lambda v: isinstance(v, str) and _STEP_NAME.fullmatch(v), "step names are lowercase identifiers")
_STEPS = must(lambda v: isinstance(v, dict) and v, "required: a mapping of step name -> commands")
_RECIPE_NAME_OK = must(
    lambda v: isinstance(v, str) and _RECIPE_NAME.fullmatch(v),
    "required: the recipe name (lowercase letters, digits, '-', '_', '.')",
)


# ---------------------------------------------------------------------------
# models


class Command(Declared):
    """One command of a step: ``- text`` or ``- {run: text, when: ..., parse: ..., ...}`` (its line: of ``run``)."""

    run: Annotated[str, BeforeValidator(_command_text)] = Field(default="", validate_default=True)
    """Command template: shell text with ``{{ placeholders }}``, or a list (the program and its arguments, each
    one word: no shell syntax at all), kept as the equivalent shell text with every literal quoted."""
    format: Annotated[str | None, _FORMAT] = None
    """The file format of the text this command writes (``pf.conf``, ``nft``, ``json``): where a statement of
    the format begins, and which ``text`` parameters may be written (:mod:`natbench.duts.recipes.formats`)."""
    when: Annotated[str | None, BeforeValidator(_condition)] = None
    """Condition; the command is skipped when false."""
    netns: Annotated[str | None, BeforeValidator(_netns_text)] = None
    """Template of a network namespace to run the command in (``ip netns exec``)."""
    parse: OptionalText = None
    """Parser name for the command's output."""
    select: OptionalText = None
    """Key to pick from a dict-valued parser result."""
    as_: OptionalText = Field(default=None, alias="as")
    """Fact name for the parsed value (``facts`` step)."""
    save: Annotated[str | None, BeforeValidator(_save_name)] = None
    """Keep the stripped stdout as a template variable of this name for later steps."""
    timed: Flag = False
    """Measure this command's duration on the DUT (``timed_flush``)."""
    ignore_errors: Flag = False
    """A non-zero exit status is recorded, not raised."""
    error: OptionalText = None
    """Hint appended to the error when the command fails."""
    timeout: Annotated[float | None, _TIMEOUT] = None
    """Seconds this command may take (default: the executor's command timeout)."""
    scope: Annotated[str, _SCOPE] = "dut"
    """``dut``: where the DUT lives (its namespace); ``host``: the machine around it."""
    cost: Annotated[TableWork | None, _COST] = None
    """What the command does with each connection of the table (``delete``, ``list``), when its time grows with the
    table: its time limit is then set from the table's size and the rate the DUT does that work at (its ``timeout``,
    else the executor's command timeout, is the floor); None: about the same time at any table size."""

    @model_validator(mode="wrap")
    @classmethod
    def _shorthand(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, str):
            return handler({"run": value})
        if not isinstance(value, dict | BaseModel):
            raise ValueError("a command is a string or a mapping with 'run'")
        return handler(value)


class Step(Named):
    """A named step: a list of commands, or a mapping with commands, a builtin or an honest ``unsupported``.

    Its cost is its commands': :attr:`cost` names the table work of those whose time grows with the table."""

    commands: Annotated[tuple[Command, ...], _COMMANDS] = ()
    """Commands run in order (after the builtin, if any)."""
    builtin: Annotated[str | None, _BUILTIN] = None
    """Name of a builtin (``linux-cores``)."""
    unsupported: Annotated[str | None, _REASON] = None
    """Why this DUT cannot do the step (reported as a fact, not silently skipped)."""
    interfaces: Any = None
    """Builtin option: interfaces whose queues follow the active cores (templates, rendered unquoted)."""
    method: Annotated[str | None, _METHOD] = None
    """Builtin option: how ``linux-cores`` sets the active cores."""

    @model_validator(mode="wrap")
    @classmethod
    def _forms(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, list | tuple):
            return handler({"commands": value})
        if not isinstance(value, dict | BaseModel):
            raise ValueError("expected a list of commands or a mapping")
        step = handler(value)
        if step.builtin is None and step.unsupported is None and not step.commands:
            raise ValueError("a step needs commands, a builtin, or 'unsupported: reason'")
        return step

    @property
    def cost(self) -> tuple[TableWork, ...]:
        """The table work its commands declare (``cost:``), in order: a step whose time grows with the table has
        some; empty: about the same time at any table size."""
        return tuple(c.cost for c in self.commands if c.cost is not None)

    @property
    def options(self) -> dict[str, Any]:
        """Builtin options given (``interfaces``, ``method``), for natbench code."""
        out: dict[str, Any] = {}
        for key in ("interfaces", "method"):
            if key in self.model_fields_set:
                value = getattr(self, key)
                out[key] = list(value) if isinstance(value, list) else value
        return out


class Check(Declared):
    """A rule over several parameters: when ``when`` holds, the parameters are rejected with ``error``.

    Its line is that of ``when``.
    """

    when: Annotated[str, BeforeValidator(_condition)]
    """Condition naming parameters (same language as a command's ``when``)."""
    error: Text
    """Message of the error."""
    field: Text | None = None
    """Parameter the error points at."""

    @model_validator(mode="wrap")
    @classmethod
    def _mapping(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(value, dict | BaseModel):
            raise ValueError("a check is {when: condition, error: message, field: param}")
        return handler(value)

    @property
    def condition(self) -> Condition:
        """The parsed ``when``."""
        return parse_condition(self.when)


def _param_spec(value: Any) -> Any:
    if isinstance(value, str):
        return {"type": value}
    if not isinstance(value, dict | BaseModel):
        raise ValueError("expected a mapping {type: ..., default: ...} or a type name")
    return value


class Recipe(RecipeModel):
    """A loaded, validated recipe: the whole file. Build with :func:`~natbench.duts.recipes.load_recipe`."""

    name: Annotated[str, _RECIPE_NAME_OK] = Field(default="", alias="recipe", validate_default=True)
    """Recipe name (``iptables-nat44``): the file stem."""
    description: Text = ""
    """One line about the DUT kind."""
    implementation: Text = ""
    """Short implementation name for labels (``iptables``); default: the recipe name."""
    family: Text = ""
    """Translation family (``nat44``, ``nat64``, ``siit``, ``mapt-ce``, ``forwarding``, ...)."""
    os: Text = "linux"
    """Operating system the commands are written for."""
    stateful: Flag = True
    """Whether the DUT keeps a connection table (count/flush steps exist); false: a forwarding baseline."""
    clock: Text = DEFAULT_CLOCK
    """Shell command printing the DUT's clock in seconds with a fraction (for ``timed_flush``)."""
    params: Annotated[
        dict[Annotated[str, BeforeValidator(param_name)], Annotated[ParamSpec, BeforeValidator(_param_spec)]],
        BeforeValidator(_params),
    ] = Field(default_factory=dict)
    """Declared parameters by name."""
    steps: Annotated[dict[Annotated[str, _STEP_NAME_OK], Step], _STEPS] = Field(
        default_factory=dict, validate_default=True
    )
    """Steps by name."""
    checks: Annotated[tuple[Check, ...], _CHECKS] = ()
    """Cross-parameter rules checked by :meth:`resolve`."""
    table: TableSpec | None = None
    """The parameters sizing the DUT kind's connection and hash tables, with their report rows."""
    memory: MemorySpec | None = None
    """The slab caches its connection table lives in (read around every fill, shown as rows)."""
    rates: WorkRates | None = None
    """The slowest rates of its table work (``delete``, ``list``): the limits of its commands with a ``cost`` before
    natbench has measured the DUT's own."""

    _path: str = PrivateAttr(default="")
    _params_line: int = PrivateAttr(default=0)

    @model_validator(mode="before")
    @classmethod
    def _implementation(cls, data: Any) -> Any:
        """An implementation left out is the recipe's name."""
        if isinstance(data, dict) and "implementation" not in data:
            return {**data, "implementation": data.get("recipe", "")}
        return data

    @model_validator(mode="after")
    def _place(self, info: ValidationInfo) -> Recipe:
        """Give parameters and steps their names, and everything its line in the file it came from."""
        where = info.context if isinstance(info.context, RecipeSource) else None

        def line(*path: str | int) -> int:
            return (where.source.locate(path).line or 0) if where is not None else 0

        for name, spec in self.params.items():
            spec._name, spec._line = name, line("params", name)
        for name, step in self.steps.items():
            step._name, step._line = name, line("steps", name)
            for i, cmd in enumerate(step.commands):
                cmd._line = line("steps", name, "commands", i, "run")
        for i, check in enumerate(self.checks):
            check._line = line("checks", i, "when")
        for key in ("size", "hash"):
            size = getattr(self.table, key) if self.table is not None else None
            if size is not None:
                size._line = line("table", key, "param")
        self._path = where.file if where is not None else ""
        self._params_line = line("params") if "params" in self.model_fields_set else 0
        return self

    @property
    def path(self) -> str:
        """File it was loaded from."""
        return self._path

    @property
    def params_line(self) -> int:
        """Line of the ``params:`` section (where an unknown parameter is reported without a campaign)."""
        return self._params_line

    # -- parameters ---------------------------------------------------------

    def resolve(
        self,
        params: dict[str, Any] | None,
        *,
        file: str | None = None,
        field_prefix: str = "",
        source: SourceMap | None = None,
    ) -> dict[str, Any]:
        """Typed values of every declared parameter, defaults filled.

        ``params`` may come from a campaign file: then ``file`` names it and ``source`` (whose
        root is the ``params`` mapping) gives the lines; otherwise errors name the recipe file.
        Raises :class:`~natbench.errors.RecipeError` for an unknown parameter, a missing
        required one, a bad value, or a ``checks`` rule that holds.
        """
        return resolve_params(self, params, file=file, field_prefix=field_prefix, source=source)

    # -- rendering ----------------------------------------------------------

    def has_step(self, step: str) -> bool:
        """Whether the recipe defines ``step`` (commands, builtin or unsupported)."""
        return step in self.steps

    def plan(
        self, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None
    ) -> list[RenderedCommand]:
        """Resolve ``params`` and render the commands of ``step`` whose condition holds.

        ``context`` supplies run-time variables (:data:`BUILTIN_VARIABLES`, saved values).
        """
        return render.plan(self, step, params, context)

    def variables(self, params: dict[str, Any] | None, context: dict[str, Any] | None = None) -> dict[str, Any]:
        """Template variables: resolved ``params`` plus run-time ``context`` (builtins, saved values)."""
        return render.variables(self, params, context)

    def render_command(self, step: str, cmd: Command, variables: dict[str, Any]) -> RenderedCommand | None:
        """Render one command of ``step`` with ``variables``; None when its condition is false."""
        return render.render_command(self, step, cmd, variables)

    def render(self, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None) -> list[str]:
        """The shell command lines of ``step`` for ``params`` (every value shell-quoted)."""
        return [c.text for c in self.plan(step, params, context)]

    def step_options(
        self, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Options of a builtin step with their templates rendered (unquoted: natbench consumes them)."""
        return render.step_options(self, step, params, context)

    def declarations(self) -> DutDeclarations:
        """What this DUT kind declares for reports (``table:``, ``memory:``), as a run stores it."""
        return declarations(self.table, self.memory)

    def describe(self) -> dict[str, Any]:
        """A plain summary for ``natbench recipes show``."""
        return {
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "implementation": self.implementation,
            "family": self.family,
            "os": self.os,
            "stateful": self.stateful,
            "params": {
                n: {"type": p.type, "default": p.default, "required": p.required, "doc": p.doc}
                for n, p in self.params.items()
            },
            "steps": sorted(self.steps),
            "table": self.table.model_dump(exclude_none=True) if self.table is not None else None,
            "memory": self.memory.model_dump() if self.memory is not None else None,
            "rates": self.rates.model_dump(exclude_none=True) if self.rates is not None else None,
        }
