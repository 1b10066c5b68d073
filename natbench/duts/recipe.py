"""DUT recipes: declared, typed parameters and named steps of shell-quoted command templates.

A recipe is a YAML file ``dut_recipes/<name>.yaml``::

    recipe: iptables-nat44            # name (the file stem)
    description: Linux iptables stateful NAT44 (SNAT or MASQUERADE)
    implementation: iptables          # short name used in labels and tables
    family: nat44                     # nat44 | nat64 | siit | mapt-ce | mapt-br | forwarding | ...
    os: linux                         # linux | openbsd | ...
    stateful: true                    # false: no connection table (forwarding baseline)
    clock: date +%s.%N                # prints the DUT's clock in seconds (timed_flush); optional
    params:
      public_if: {type: interface, required: true, doc: public-side interface}
      nat: {type: choice, choices: [snat, masquerade], default: masquerade}
      conntrack_max: {type: int, min: 1, default: null}
    steps:
      setup:
        - iptables -t nat -A POSTROUTING -o {{ public_if }} -j MASQUERADE     # shorthand
        - run: echo {{ conntrack_max }} > /proc/sys/net/netfilter/nf_conntrack_max
          when: conntrack_max                  # skipped unless the parameter is set
          scope: host                          # a global kernel setting: outside the DUT's netns
          error: cannot set nf_conntrack_max   # hint added to the error when it fails
      count_connections:
        - run: conntrack -C
          parse: conntrack_count
      timed_flush:
        - run: conntrack -F
          timed: true                          # the duration is measured on the DUT
      set_cores: {builtin: linux-cores, interfaces: ["{{ private_if }}", "{{ public_if }}"]}

Command keys: ``run`` (template, required), ``when`` (condition), ``netns`` (run inside
that namespace: rendered as an ``ip netns exec`` prefix), ``parse`` (parser name from
:mod:`natbench.duts.parsers`), ``select`` (pick one key of a parser's dict result),
``as`` (fact name in the ``facts`` step), ``save`` (keep stdout as a template variable of
later steps, e.g. an original value restored by ``teardown``), ``timed``,
``ignore_errors``, ``error`` (hint), ``timeout`` (seconds), ``scope`` (``dut`` | ``host``).

Conditions: ``name`` (truthy), ``not name``, ``name == word``, ``name != word``,
``name in [a, b]``, joined by ``and`` / ``or`` (``and`` binds tighter).

``checks`` (top level) are rules over several parameters: ``{when: condition, error: message,
field: param}``; :meth:`Recipe.resolve` rejects parameters for which a check's condition holds.

Steps with a meaning to natbench: ``prepare`` (run before ``setup``: preconditions and
checks that are not part of the configuration itself, e.g. a version check or creating a
namespace the configuration assumes), ``setup``, ``teardown``, ``reset_connections``,
``count_connections`` (parser gives an int), ``timed_flush`` (one or more ``timed``
commands), ``show_mappings`` (parser gives mappings), ``set_cores``, ``rss``, ``facts``.
Other step names are allowed and can be run by name. The full description is docs/recipes.md.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from natbench.duts.template import TemplateSyntaxError, parse_template, render_template
from natbench.duts.yamllines import DuplicateKeyError, LineDict, LineList, load_yaml_with_lines
from natbench.errors import RecipeError
from natbench.traffic.ports import PortRange

__all__ = [
    "BUILTIN_VARIABLES",
    "KNOWN_STEPS",
    "PARAM_TYPES",
    "Check",
    "Command",
    "ParamSpec",
    "Recipe",
    "RenderedCommand",
    "Step",
    "list_recipes",
    "load_recipe",
    "recipe_search_path",
]

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

BUILTIN_VARIABLES = ("cores", "cpus", "dut")
"""Template variables natbench supplies at run time: active core count of the working point
(None: unchanged), the list of CPU numbers in use, the DUT's name."""

PARAM_TYPES = (
    "str",
    "int",
    "float",
    "bool",
    "choice",
    "ip",
    "ipv4",
    "ipv6",
    "net",
    "ipv4_net",
    "ipv6_net",
    "interface",
    "mac",
    "port_range",
    "list",
)
"""Parameter types a recipe may declare."""

_TOP_KEYS = {
    "recipe",
    "description",
    "implementation",
    "family",
    "os",
    "stateful",
    "clock",
    "params",
    "checks",
    "steps",
}
_PARAM_KEYS = {"type", "default", "required", "min", "max", "choices", "items", "pattern", "doc"}
_COMMAND_KEYS = {
    "run",
    "when",
    "netns",
    "parse",
    "select",
    "as",
    "save",
    "timed",
    "ignore_errors",
    "error",
    "timeout",
    "scope",
}
_STEP_KEYS = {"commands", "builtin", "unsupported", "interfaces", "method"}
_STEP_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_IFNAME = re.compile(r"^[^\s/:'\"\\]{1,15}$")
_MAC = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
_POW = re.compile(r"^\s*2\s*(\^|\*\*)\s*(\d+)\s*$")
DEFAULT_CLOCK = "date +%s.%N"


@dataclass(frozen=True)
class ParamSpec:
    """A declared recipe parameter."""

    name: str
    """Parameter name (campaigns use it under ``dut_params``)."""
    type: str
    """One of :data:`PARAM_TYPES`."""
    default: Any = None
    """Value when the campaign does not give one (None: unset, commands guard with ``when``)."""
    required: bool = False
    """The campaign must give a value."""
    min: float | None = None
    """Lower bound (int/float)."""
    max: float | None = None
    """Upper bound (int/float)."""
    choices: tuple[str, ...] = ()
    """Allowed values (``choice``)."""
    items: str = "str"
    """Item type of a ``list``."""
    pattern: str | None = None
    """Regular expression a ``str`` must match fully."""
    doc: str = ""
    """What the parameter means."""
    line: int = 0
    """Line of the declaration in the recipe file."""


@dataclass(frozen=True)
class Command:
    """One command of a step, as declared."""

    run: str
    """Command template (shell text with ``{{ placeholders }}``)."""
    line: int
    """Line in the recipe file."""
    when: str | None = None
    """Condition; the command is skipped when false."""
    netns: str | None = None
    """Template of a network namespace to run the command in (``ip netns exec``)."""
    parse: str | None = None
    """Parser name for the command's output."""
    select: str | None = None
    """Key to pick from a dict-valued parser result."""
    as_: str | None = None
    """Fact name for the parsed value (``facts`` step)."""
    save: str | None = None
    """Keep the stripped stdout as a template variable of this name for later steps."""
    timed: bool = False
    """Measure this command's duration on the DUT (``timed_flush``)."""
    ignore_errors: bool = False
    """A non-zero exit status is recorded, not raised."""
    error: str | None = None
    """Hint appended to the error when the command fails."""
    timeout: float | None = None
    """Seconds this command may take (default: the executor's command timeout)."""
    scope: str = "dut"
    """``dut``: where the DUT lives (its namespace); ``host``: the machine around it."""


@dataclass(frozen=True)
class Step:
    """A named step: commands, a builtin implemented by natbench, or an honest 'unsupported'."""

    name: str
    """Step name."""
    commands: tuple[Command, ...] = ()
    """Commands run in order (after the builtin, if any)."""
    builtin: str | None = None
    """Name of a builtin (``linux-cores``)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Builtin options (templates rendered unquoted, handed to natbench code)."""
    unsupported: str | None = None
    """Why this DUT cannot do the step (reported as a fact, not silently skipped)."""
    line: int = 0
    """Line in the recipe file."""


@dataclass(frozen=True)
class Check:
    """A rule over several parameters: when ``when`` holds, the parameters are rejected with ``error``."""

    when: str
    """Condition naming parameters (same language as a command's ``when``)."""
    error: str
    """Message of the error."""
    field: str | None = None
    """Parameter the error points at."""
    line: int = 0
    """Line in the recipe file."""


@dataclass(frozen=True)
class RenderedCommand:
    """A command ready to run, with what to do with its result."""

    text: str
    """Shell command line; every value in it is quoted."""
    command: Command
    """The declaration it came from."""
    step: str
    """Step name."""


# ---------------------------------------------------------------------------
# conditions


@dataclass(frozen=True)
class _Clause:
    name: str
    op: str  # truthy | not | == | != | in
    values: tuple[str, ...] = ()


def _parse_condition(text: str) -> list[list[_Clause]]:
    """Disjunction of conjunctions of clauses."""
    out: list[list[_Clause]] = []
    for alternative in re.split(r"\s+or\s+", text.strip()):
        conj: list[_Clause] = []
        for part in re.split(r"\s+and\s+", alternative.strip()):
            part = part.strip()
            m = re.fullmatch(r"not\s+([A-Za-z_]\w*)", part)
            if m:
                conj.append(_Clause(m.group(1), "not"))
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)", part)
            if m:
                conj.append(_Clause(m.group(1), "truthy"))
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)\s*(==|!=)\s*(.+)", part)
            if m:
                conj.append(_Clause(m.group(1), m.group(2), (_unquote(m.group(3)),)))
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)\s+in\s+\[(.*)\]", part)
            if m:
                vals = tuple(_unquote(v) for v in m.group(2).split(",") if v.strip())
                conj.append(_Clause(m.group(1), "in", vals))
                continue
            raise ValueError(
                f"cannot parse condition {part!r} (use: name, not name, name == x, name != x, name in [a, b])"
            )
        out.append(conj)
    return out


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _as_word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", [], ())


def _eval_condition(cond: list[list[_Clause]], variables: dict[str, Any]) -> bool:
    def clause(c: _Clause) -> bool:
        v = variables.get(c.name)
        if c.op == "truthy":
            return _truthy(v)
        if c.op == "not":
            return not _truthy(v)
        if c.op == "==":
            return v is not None and _as_word(v) == c.values[0]
        if c.op == "!=":
            return v is None or _as_word(v) != c.values[0]
        return v is not None and _as_word(v) in c.values

    return any(all(clause(c) for c in conj) for conj in cond)


# ---------------------------------------------------------------------------
# values


def _coerce(spec: ParamSpec, value: Any, type_: str | None = None) -> Any:
    """Validate and normalize one value; raises ValueError with a plain message."""
    t = type_ or spec.type
    if value is None:
        return None
    if t == "str":
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(f"expected a string, got {type(value).__name__}")
        text = str(value)
        if "\x00" in text:
            raise ValueError("contains a NUL byte")
        if spec.pattern and not re.fullmatch(spec.pattern, text):
            raise ValueError(f"{text!r} does not match {spec.pattern!r}")
        return text
    if t == "int":
        if isinstance(value, str):
            m = _POW.match(value)
            if m:
                value = 2 ** int(m.group(2))
            else:
                try:
                    value = int(value.replace("_", ""), 10)
                except ValueError:
                    raise ValueError(f"expected an integer (or 2^n), got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        _bounds(spec, value)
        return value
    if t == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {value!r}")
        _bounds(spec, float(value))
        return float(value)
    if t == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if t == "choice":
        if _as_word(value) not in spec.choices:
            raise ValueError(f"{value!r} is not one of {', '.join(spec.choices)}")
        return _as_word(value)
    if t in ("ip", "ipv4", "ipv6"):
        try:
            addr = ipaddress.ip_address(str(value))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address") from None
        if t != "ip" and addr.version != int(t[-1]):
            raise ValueError(f"{value!r} is not an IPv{t[-1]} address")
        return str(addr)
    if t in ("net", "ipv4_net", "ipv6_net"):
        try:
            iface = ipaddress.ip_interface(str(value))
        except ValueError:
            raise ValueError(f"{value!r} is not an address/prefix") from None
        if "/" not in str(value):
            raise ValueError(f"{value!r} needs a prefix length (e.g. 198.18.0.1/24)")
        if t != "net" and iface.version != int(t[3]):
            raise ValueError(f"{value!r} is not an IPv{t[3]} prefix")
        return str(iface)
    if t == "interface":
        if not isinstance(value, str) or not _IFNAME.match(value):
            raise ValueError(f"{value!r} is not a valid interface name (1-15 characters, no blanks, '/' or ':')")
        return value
    if t == "mac":
        if not isinstance(value, str) or not _MAC.match(value):
            raise ValueError(f"{value!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
        return value.lower()
    if t == "port_range":
        return _port_range(value)
    if t == "list":
        if not isinstance(value, list | tuple):
            raise ValueError(f"expected a list, got {type(value).__name__}")
        out = []
        for i, item in enumerate(value):
            try:
                out.append(_coerce(spec, item, spec.items))
            except ValueError as exc:
                raise ValueError(f"item {i}: {exc}") from None
        return out
    raise ValueError(f"unknown type {t!r}")


def _bounds(spec: ParamSpec, value: float) -> None:
    if spec.min is not None and value < spec.min:
        raise ValueError(f"{value} is below the minimum {spec.min:g}")
    if spec.max is not None and value > spec.max:
        raise ValueError(f"{value} is above the maximum {spec.max:g}")


def _port_range(value: Any) -> PortRange:
    if isinstance(value, PortRange):
        return value
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return PortRange(value, value)
        if isinstance(value, list | tuple) and len(value) == 2:
            return PortRange(int(value[0]), int(value[1]))
        if isinstance(value, str):
            a, _, b = value.partition("-")
            return PortRange(int(a), int(b or a))
    except ValueError as exc:
        detail = f": {exc}" if str(exc) else ""
        raise ValueError(f"{value!r} is not a port range 'first-last' (1..65535){detail}") from None
    raise ValueError(f"{value!r} is not a port range 'first-last' or [first, last]")


# ---------------------------------------------------------------------------
# the recipe


@dataclass(frozen=True)
class Recipe:
    """A loaded, validated recipe. Build with :func:`load_recipe`."""

    name: str
    """Recipe name (``iptables-nat44``)."""
    path: str
    """File it was loaded from."""
    description: str
    """One line about the DUT kind."""
    implementation: str
    """Short implementation name for labels (``iptables``)."""
    family: str
    """Translation family (``nat44``, ``nat64``, ...)."""
    os: str
    """Operating system the commands are written for."""
    stateful: bool
    """Whether the DUT keeps a connection table (count/flush steps exist)."""
    clock: str
    """Shell command printing the DUT's clock in seconds with a fraction."""
    params: dict[str, ParamSpec]
    """Declared parameters by name."""
    steps: dict[str, Step]
    """Steps by name."""
    checks: tuple[Check, ...] = ()
    """Cross-parameter rules checked by :meth:`resolve`."""
    params_line: int = 0
    """Line of the ``params:`` section (where an unknown parameter is reported without a campaign)."""

    # -- parameters ---------------------------------------------------------

    def resolve(
        self, params: dict[str, Any] | None, *, file: str | None = None, field_prefix: str = ""
    ) -> dict[str, Any]:
        """Typed values of every declared parameter, defaults filled.

        ``params`` may be a line-aware mapping from a campaign (then ``file`` names it and
        errors carry its lines); otherwise errors name the recipe file. Raises
        :class:`RecipeError` for an unknown parameter, a missing required one, or a bad value.
        """
        given = dict(params or {})
        src_file = file or self.path

        def where(key: str) -> int | None:
            if isinstance(params, LineDict):
                return params.line_of(key)
            if file is not None:
                return None
            spec = self.params.get(key)
            return spec.line if spec else (self.params_line or None)

        for key in given:
            if key not in self.params:
                known = ", ".join(sorted(self.params)) or "none"
                raise RecipeError(
                    f"unknown parameter of recipe {self.name} (it declares: {known})",
                    file=src_file,
                    line=where(key),
                    field=field_prefix + str(key),
                )
        out: dict[str, Any] = {}
        for name, spec in self.params.items():
            if name in given and given[name] is not None:
                try:
                    out[name] = _coerce(spec, given[name])
                except ValueError as exc:
                    raise RecipeError(
                        f"{exc} (recipe {self.name}, type {spec.type})",
                        file=src_file,
                        line=where(name),
                        field=field_prefix + name,
                    ) from None
            elif spec.required:
                raise RecipeError(
                    f"required by recipe {self.name} ({spec.doc or spec.type}) but not given",
                    file=src_file,
                    line=params.line if isinstance(params, LineDict) else (spec.line if file is None else None),
                    field=field_prefix + name,
                )
            else:
                out[name] = spec.default
        for check in self.checks:
            if _eval_condition(_parse_condition(check.when), out):
                raise RecipeError(
                    f"{check.error} (recipe {self.name})",
                    file=src_file,
                    line=where(check.field) if check.field else (check.line if file is None else None),
                    field=field_prefix + (check.field or "params"),
                )
        return out

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
        self._need_step(step)
        variables = self.variables(params, context)
        out = []
        for cmd in self.steps[step].commands:
            rendered = self.render_command(step, cmd, variables)
            if rendered is not None:
                out.append(rendered)
        return out

    def variables(self, params: dict[str, Any] | None, context: dict[str, Any] | None = None) -> dict[str, Any]:
        """Template variables: resolved ``params`` plus run-time ``context`` (builtins, saved values)."""
        variables: dict[str, Any] = {name: None for name in BUILTIN_VARIABLES}
        variables.update(self._saved_names())
        variables.update(self.resolve(params))
        variables.update(context or {})
        return variables

    def render_command(self, step: str, cmd: Command, variables: dict[str, Any]) -> RenderedCommand | None:
        """Render one command of ``step`` with ``variables``; None when its condition is false."""
        if cmd.when is not None and not _eval_condition(_parse_condition(cmd.when), variables):
            return None
        text = self._render_text(cmd.run, variables, cmd.line, f"steps.{step}.run")
        if cmd.netns is not None:
            ns = self._render_text(cmd.netns, variables, cmd.line, f"steps.{step}.netns")
            text = f"ip netns exec {ns} {text}"
        return RenderedCommand(text=text, command=cmd, step=step)

    def _need_step(self, step: str) -> None:
        if step not in self.steps:
            raise RecipeError(f"recipe {self.name} has no step {step!r}", file=self.path, field=f"steps.{step}")

    def render(self, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None) -> list[str]:
        """The shell command lines of ``step`` for ``params`` (every value shell-quoted)."""
        return [c.text for c in self.plan(step, params, context)]

    def step_options(
        self, step: str, params: dict[str, Any] | None, context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Options of a builtin step with their templates rendered (unquoted: natbench consumes them)."""
        self._need_step(step)
        st = self.steps[step]
        variables = self.variables(params, context)
        out: dict[str, Any] = {}
        for key, value in st.options.items():
            if isinstance(value, list):
                out[key] = [render_template(str(v), variables, quote=False) for v in value]
            elif isinstance(value, str):
                out[key] = render_template(value, variables, quote=False)
            else:
                out[key] = value
        return out

    def _saved_names(self) -> dict[str, Any]:
        return {c.save: None for s in self.steps.values() for c in s.commands if c.save}

    def _render_text(self, text: str, variables: dict[str, Any], line: int, fld: str) -> str:
        try:
            return render_template(text, variables)
        except KeyError as exc:
            raise RecipeError(
                f"unknown template variable {exc.args[0]!r}", file=self.path, line=line, field=fld
            ) from None
        except ValueError as exc:
            raise RecipeError(str(exc), file=self.path, line=line, field=fld) from None

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
        }


# ---------------------------------------------------------------------------
# loading


def recipe_search_path() -> list[Path]:
    """Directories searched for ``<name>.yaml``: $NATBENCH_RECIPES (':'-separated),
    ./dut_recipes, and the dut_recipes directory of the source tree natbench runs from."""
    dirs: list[Path] = []
    env = os.environ.get("NATBENCH_RECIPES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs.append(Path.cwd() / "dut_recipes")
    dirs.append(Path(__file__).resolve().parents[2] / "dut_recipes")
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def list_recipes() -> dict[str, Path]:
    """Recipe name -> file for every recipe on the search path (first one wins)."""
    found: dict[str, Path] = {}
    for d in recipe_search_path():
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                found.setdefault(f.stem, f)
    return dict(sorted(found.items()))


def load_recipe(name_or_path: str | os.PathLike[str]) -> Recipe:
    """Load a recipe by name (searched on :func:`recipe_search_path`) or by file path.

    Raises :class:`RecipeError` naming file, line and field for anything malformed.
    """
    text_name = os.fspath(name_or_path)
    if "/" in text_name or text_name.endswith((".yaml", ".yml")):
        path = Path(text_name)
        if not path.is_file():
            raise RecipeError("recipe file not found", file=text_name)
    else:
        recipes = list_recipes()
        if text_name not in recipes:
            known = ", ".join(recipes) or "none"
            raise RecipeError(f"unknown recipe {text_name!r} (known: {known})", field="recipe")
        path = recipes[text_name]
    return parse_recipe(path.read_text(encoding="utf-8"), str(path))


def parse_recipe(text: str, file: str) -> Recipe:
    """Parse recipe YAML ``text`` coming from ``file``."""
    try:
        data = load_yaml_with_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, DuplicateKeyError):
            raise RecipeError(problem, file=file, line=line, field=exc.field) from None
        raise RecipeError(f"malformed YAML: {problem}", file=file, line=line) from None
    return _Builder(file).build(data)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file

    def err(self, msg: str, line: int | None, fld: str | None) -> RecipeError:
        return RecipeError(msg, file=self.file, line=line, field=fld)

    def build(self, data: Any) -> Recipe:
        if not isinstance(data, LineDict):
            raise self.err("a recipe must be a YAML mapping", 1, None)
        for key in data:
            if key not in _TOP_KEYS:
                raise self.err(f"unknown key (allowed: {', '.join(sorted(_TOP_KEYS))})", data.line_of(key), str(key))
        name = data.get("recipe")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
            raise self.err(
                "required: the recipe name (lowercase letters, digits, '-', '_', '.')", data.line_of("recipe"), "recipe"
            )
        strings = {}
        for key, default in (
            ("description", ""),
            ("implementation", name),
            ("family", ""),
            ("os", "linux"),
            ("clock", DEFAULT_CLOCK),
        ):
            value = data.get(key, default)
            if not isinstance(value, str):
                raise self.err("expected a string", data.line_of(key), key)
            strings[key] = value
        stateful = data.get("stateful", True)
        if not isinstance(stateful, bool):
            raise self.err("expected true or false", data.line_of("stateful"), "stateful")
        params = self.params(data.get("params", LineDict()), data.line_of("params"))
        steps = self.steps(data.get("steps"), data.line_of("steps"))
        checks = self.checks(data.get("checks", LineList()), data.line_of("checks"), set(params))
        recipe = Recipe(
            name=name,
            path=self.file,
            description=strings["description"],
            implementation=strings["implementation"],
            family=strings["family"],
            os=strings["os"],
            stateful=stateful,
            clock=strings["clock"],
            params=params,
            steps=steps,
            checks=checks,
            params_line=data.line_of("params") if "params" in data else 0,
        )
        self.check(recipe)
        return recipe

    def params(self, raw: Any, line: int) -> dict[str, ParamSpec]:
        if raw is None:
            return {}
        if not isinstance(raw, LineDict):
            raise self.err("expected a mapping of parameter name -> declaration", line, "params")
        out: dict[str, ParamSpec] = {}
        for name, decl in raw.items():
            fld = f"params.{name}"
            pline = raw.line_of(name)
            if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                raise self.err("parameter names are lowercase identifiers", pline, fld)
            if name in BUILTIN_VARIABLES:
                raise self.err(f"{name!r} is supplied by natbench at run time, not a recipe parameter", pline, fld)
            if isinstance(decl, str):
                decl = LineDict({"type": decl})
                decl.line, decl.lines = pline, {"type": pline}
            if not isinstance(decl, LineDict):
                raise self.err("expected a mapping {type: ..., default: ...} or a type name", pline, fld)
            for key in decl:
                if key not in _PARAM_KEYS:
                    raise self.err(
                        f"unknown key (allowed: {', '.join(sorted(_PARAM_KEYS))})", decl.line_of(key), f"{fld}.{key}"
                    )
            ptype = decl.get("type", "str")
            if ptype not in PARAM_TYPES:
                raise self.err(
                    f"unknown type {ptype!r} (allowed: {', '.join(PARAM_TYPES)})", decl.line_of("type"), f"{fld}.type"
                )
            choices = decl.get("choices", [])
            if ptype == "choice" and (not isinstance(choices, list) or not choices):
                raise self.err(
                    "a choice parameter needs a non-empty list of choices", decl.line_of("choices"), f"{fld}.choices"
                )
            items = decl.get("items", "str")
            if items not in PARAM_TYPES or items in ("list", "choice"):
                raise self.err(f"bad list item type {items!r}", decl.line_of("items"), f"{fld}.items")
            for key in ("min", "max"):
                if key in decl and (isinstance(decl[key], bool) or not isinstance(decl[key], int | float)):
                    raise self.err("expected a number", decl.line_of(key), f"{fld}.{key}")
            required = decl.get("required", False)
            if not isinstance(required, bool):
                raise self.err("expected true or false", decl.line_of("required"), f"{fld}.required")
            pattern = decl.get("pattern")
            if pattern is not None:
                try:
                    re.compile(str(pattern))
                except re.error as exc:
                    raise self.err(
                        f"bad regular expression: {exc}", decl.line_of("pattern"), f"{fld}.pattern"
                    ) from None
            spec = ParamSpec(
                name=name,
                type=ptype,
                required=required,
                min=decl.get("min"),
                max=decl.get("max"),
                choices=tuple(_as_word(c) for c in choices),
                items=items,
                pattern=str(pattern) if pattern is not None else None,
                doc=str(decl.get("doc", "")),
                line=pline,
            )
            default = decl.get("default")
            if default is not None:
                try:
                    default = _coerce(spec, default)
                except ValueError as exc:
                    raise self.err(f"bad default: {exc}", decl.line_of("default"), f"{fld}.default") from None
            if required and "default" in decl and default is not None:
                raise self.err("a required parameter has no default", decl.line_of("default"), f"{fld}.default")
            out[name] = ParamSpec(**{**spec.__dict__, "default": default})
        return out

    def checks(self, raw: Any, line: int, params: set[str]) -> tuple[Check, ...]:
        if not isinstance(raw, LineList):
            raise self.err("expected a list of {when, error, field}", line, "checks")
        out = []
        for i, item in enumerate(raw):
            fld = f"checks[{i}]"
            if (
                not isinstance(item, LineDict)
                or not isinstance(item.get("when"), str)
                or not isinstance(item.get("error"), str)
            ):
                raise self.err("a check is {when: condition, error: message, field: param}", raw.line_of(i), fld)
            for key in item:
                if key not in ("when", "error", "field"):
                    raise self.err("unknown key (allowed: when, error, field)", item.line_of(key), f"{fld}.{key}")
            try:
                cond = _parse_condition(item["when"])
            except ValueError as exc:
                raise self.err(str(exc), item.line_of("when"), f"{fld}.when") from None
            for conj in cond:
                for clause in conj:
                    if clause.name not in params:
                        raise self.err(f"unknown parameter {clause.name!r}", item.line_of("when"), f"{fld}.when")
            fname = item.get("field")
            if fname is not None and fname not in params:
                raise self.err(f"unknown parameter {fname!r}", item.line_of("field"), f"{fld}.field")
            out.append(Check(item["when"], item["error"], fname, item.line_of("when")))
        return tuple(out)

    def steps(self, raw: Any, line: int) -> dict[str, Step]:
        if not isinstance(raw, LineDict) or not raw:
            raise self.err("required: a mapping of step name -> commands", line, "steps")
        out: dict[str, Step] = {}
        for name, body in raw.items():
            fld = f"steps.{name}"
            sline = raw.line_of(name)
            if not isinstance(name, str) or not _STEP_NAME.match(name):
                raise self.err("step names are lowercase identifiers", sline, fld)
            if isinstance(body, LineList):
                out[name] = Step(name, self.commands(body, fld), line=sline)
            elif isinstance(body, LineDict):
                for key in body:
                    if key not in _STEP_KEYS:
                        raise self.err(
                            f"unknown key (allowed: {', '.join(sorted(_STEP_KEYS))})", body.line_of(key), f"{fld}.{key}"
                        )
                builtin = body.get("builtin")
                if builtin is not None and builtin not in ("linux-cores",):
                    raise self.err(
                        f"unknown builtin {builtin!r} (known: linux-cores)", body.line_of("builtin"), f"{fld}.builtin"
                    )
                unsupported = body.get("unsupported")
                if unsupported is not None and not isinstance(unsupported, str):
                    raise self.err("expected a reason (string)", body.line_of("unsupported"), f"{fld}.unsupported")
                cmds = body.get("commands", LineList())
                if not isinstance(cmds, LineList):
                    raise self.err("expected a list of commands", body.line_of("commands"), f"{fld}.commands")
                options = {k: v for k, v in body.items() if k in ("interfaces", "method")}
                if "method" in options and options["method"] not in ("auto", "hotplug", "rps"):
                    raise self.err("method is one of auto, hotplug, rps", body.line_of("method"), f"{fld}.method")
                if builtin is None and unsupported is None and not cmds:
                    raise self.err("a step needs commands, a builtin, or 'unsupported: reason'", sline, fld)
                out[name] = Step(
                    name,
                    self.commands(cmds, f"{fld}.commands"),
                    builtin=builtin,
                    options={k: list(v) if isinstance(v, list) else v for k, v in options.items()},
                    unsupported=unsupported,
                    line=sline,
                )
            else:
                raise self.err("expected a list of commands or a mapping", sline, fld)
        return out

    def commands(self, raw: LineList, fld: str) -> tuple[Command, ...]:
        out = []
        for i, item in enumerate(raw):
            cline = raw.line_of(i)
            ifld = f"{fld}[{i}]"
            if isinstance(item, str):
                out.append(Command(run=item.strip(), line=cline))
                continue
            if not isinstance(item, LineDict):
                raise self.err("a command is a string or a mapping with 'run'", cline, ifld)
            for key in item:
                if key not in _COMMAND_KEYS:
                    raise self.err(
                        f"unknown key (allowed: {', '.join(sorted(_COMMAND_KEYS))})", item.line_of(key), f"{ifld}.{key}"
                    )
            run = item.get("run")
            if not isinstance(run, str) or not run.strip():
                raise self.err("required: the command template", item.line_of("run"), f"{ifld}.run")
            for key in ("when", "netns", "parse", "select", "as", "save", "error"):
                if key in item and not isinstance(item[key], str):
                    raise self.err("expected a string", item.line_of(key), f"{ifld}.{key}")
            for key in ("timed", "ignore_errors"):
                if key in item and not isinstance(item[key], bool):
                    raise self.err("expected true or false", item.line_of(key), f"{ifld}.{key}")
            timeout = item.get("timeout")
            if timeout is not None and (
                isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
            ):
                raise self.err("expected a positive number of seconds", item.line_of("timeout"), f"{ifld}.timeout")
            scope = item.get("scope", "dut")
            if scope not in ("dut", "host"):
                raise self.err("scope is 'dut' or 'host'", item.line_of("scope"), f"{ifld}.scope")
            when = item.get("when")
            if when is not None:
                try:
                    _parse_condition(when)
                except ValueError as exc:
                    raise self.err(str(exc), item.line_of("when"), f"{ifld}.when") from None
            save = item.get("save")
            if save is not None and not re.fullmatch(r"[a-z_][a-z0-9_]*", save):
                raise self.err("save names are lowercase identifiers", item.line_of("save"), f"{ifld}.save")
            out.append(
                Command(
                    run=run.strip(),
                    line=item.line_of("run"),
                    when=when,
                    netns=item.get("netns"),
                    parse=item.get("parse"),
                    select=item.get("select"),
                    as_=item.get("as"),
                    save=save,
                    timed=item.get("timed", False),
                    ignore_errors=item.get("ignore_errors", False),
                    error=item.get("error"),
                    timeout=float(timeout) if timeout is not None else None,
                    scope=scope,
                )
            )
        return tuple(out)

    def check(self, recipe: Recipe) -> None:
        """Cross-checks: template names, parsers, step semantics."""
        from natbench.duts.parsers import parser_names

        parsers = parser_names()
        names = set(recipe.params) | set(BUILTIN_VARIABLES) | set(recipe._saved_names())
        for step in recipe.steps.values():
            for i, cmd in enumerate(step.commands):
                fld = f"steps.{step.name}[{i}]"
                for key, text in (("run", cmd.run), ("netns", cmd.netns)):
                    if text is None:
                        continue
                    try:
                        placeholders = parse_template(text)
                    except TemplateSyntaxError as exc:
                        raise self.err(str(exc), cmd.line, f"{fld}.{key}") from None
                    for ph in placeholders:
                        if ph.name not in names:
                            raise self.err(
                                f"unknown template variable {ph.name!r} (declare it under params)",
                                cmd.line,
                                f"{fld}.{key}",
                            )
                if cmd.when is not None:
                    for conj in _parse_condition(cmd.when):
                        for clause in conj:
                            if clause.name not in names:
                                raise self.err(
                                    f"condition names unknown variable {clause.name!r}", cmd.line, f"{fld}.when"
                                )
                if cmd.parse is not None and cmd.parse not in parsers:
                    raise self.err(
                        f"unknown parser {cmd.parse!r} (known: {', '.join(sorted(parsers))})", cmd.line, f"{fld}.parse"
                    )
                if cmd.timed and step.name != "timed_flush":
                    raise self.err("'timed' is only meaningful in the timed_flush step", cmd.line, f"{fld}.timed")
            for opt in step.options.get("interfaces", []) if isinstance(step.options.get("interfaces"), list) else []:
                for ph in parse_template(str(opt)):
                    if ph.name not in names:
                        raise self.err(
                            f"unknown template variable {ph.name!r}", step.line, f"steps.{step.name}.interfaces"
                        )
        if recipe.stateful and not all(s in recipe.steps for s in ("setup", "teardown")):
            missing = [s for s in ("setup", "teardown") if s not in recipe.steps]
            raise self.err(f"missing step(s): {', '.join(missing)}", None, "steps")
        count = recipe.steps.get("count_connections")
        if count is not None and count.commands and not any(c.parse for c in count.commands):
            raise self.err(
                "count_connections needs a command with a parser giving the count",
                count.line,
                "steps.count_connections",
            )
        flush = recipe.steps.get("timed_flush")
        if flush is not None and flush.commands and not any(c.timed for c in flush.commands):
            raise self.err(
                "timed_flush needs at least one command marked 'timed: true'", flush.line, "steps.timed_flush"
            )
        mappings = recipe.steps.get("show_mappings")
        if mappings is not None and mappings.commands and not any(c.parse for c in mappings.commands):
            raise self.err("show_mappings needs a command with a mappings parser", mappings.line, "steps.show_mappings")
