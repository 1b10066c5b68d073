"""The recipe template language: ``{{ name }}`` / ``{{ name | filter }}``, always shell-quoted.

Recipes are data; their command text is trusted (it is reviewed like code), the
values substituted into it are not (they come from campaigns). So the only
way a value enters a command is through a placeholder, and every placeholder
is rendered through :func:`shlex.quote`. A list value renders as several
individually quoted words (an argument list, never shell syntax). There is
no "raw" escape hatch: shell syntax a command needs (``;``, ``>``, ``$(...)``)
belongs to the recipe text.

Filters (applied left to right, the last result is quoted):

``first`` / ``last``  first / last port of a port range
``csv``              a list joined with commas (one word)
``words``            a list as separate words (the default for lists)
``hexmask``          a list of CPU numbers (or an int n: CPUs 0..n-1) as a hex mask, e.g. ``00ff0000``
``len``              number of items
``upper`` / ``lower`` case conversion
``addr`` / ``plen``  address part / prefix length of ``198.18.0.1/24``
``hms``              seconds as ``H:MM:SS`` (Jool's timeout format): 3600 -> ``1:00:00``
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from natbench.duts.recipes.formats import FORMATS
from natbench.duts.recipes.shell import Slot, value_problem
from natbench.duts.recipes.values import RUNTIME, FormatText, ValueClass
from natbench.traffic.ports import PortRange
from natbench.values import MAX_CORES

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TemplateSyntaxError(ValueError):
    """A malformed placeholder or an unknown filter."""


@dataclass(frozen=True)
class Placeholder:
    """One ``{{ name | f1 | f2 }}`` occurrence."""

    name: str
    """Variable name."""
    filters: tuple[str, ...]
    """Filter names, applied in order."""


def cpu_hexmask(value: Any) -> str:
    """Hex CPU mask as written to ``rps_cpus`` / ``smp_affinity``: [16..23] -> ``00ff0000``.

    An int n means CPUs 0..n-1. The mask has at least 8 hex digits (groups of 32 bits
    are separated by commas, as the kernel prints them). CPU numbers stop below
    :data:`~natbench.values.MAX_CORES` (a mask stays short, however large a campaign's number).
    """
    if isinstance(value, int) and value > MAX_CORES:
        raise ValueError(f"{value} CPUs: a DUT has at most {MAX_CORES}")
    cpus = list(range(value)) if isinstance(value, int) else [int(c) for c in value]
    mask = 0
    for cpu in cpus:
        if cpu < 0:
            raise ValueError(f"negative CPU number {cpu}")
        if cpu >= MAX_CORES:
            raise ValueError(f"CPU number {cpu}: a DUT has at most {MAX_CORES} CPUs (0 to {MAX_CORES - 1})")
        mask |= 1 << cpu
    digits = max(8, ((max(cpus, default=0) // 32) + 1) * 8)
    text = f"{mask:0{digits}x}"
    return ",".join(text[i : i + 8] for i in range(0, len(text), 8))


def _first(v: Any) -> Any:
    if isinstance(v, PortRange):
        return v.first
    if isinstance(v, list | tuple):
        if not v:
            raise ValueError("filter 'first' of an empty list has no item")
        return v[0]
    raise ValueError("filter 'first' needs a port range or list")


def _last(v: Any) -> Any:
    if isinstance(v, PortRange):
        return v.last
    if isinstance(v, list | tuple):
        if not v:
            raise ValueError("filter 'last' of an empty list has no item")
        return v[-1]
    raise ValueError("filter 'last' needs a port range or list")


def _csv(v: Any) -> str:
    if not isinstance(v, list | tuple):
        raise ValueError("filter 'csv' needs a list")
    return ",".join(str(x) for x in v)


def _words(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def _addr(v: Any) -> str:
    return str(v).split("/", 1)[0]


def _plen(v: Any) -> int:
    text = str(v)
    if "/" not in text:
        raise ValueError(f"{text!r} has no prefix length")
    return int(text.split("/", 1)[1])


def _hms(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise ValueError(f"filter 'hms' needs a number of seconds, got {v!r}")
    total, ms = divmod(round(v * 1000), 1000)  # whole milliseconds first: 59.9996 s is 1:00 min, not 59 s + 1000 ms
    text = f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"
    if ms:
        text += f".{ms:03d}"
    return text


FILTERS: dict[str, Callable[[Any], Any]] = {
    "first": _first,
    "last": _last,
    "csv": _csv,
    "words": _words,
    "hexmask": cpu_hexmask,
    "len": lambda v: len(v),
    "upper": lambda v: str(v).upper(),
    "lower": lambda v: str(v).lower(),
    "addr": _addr,
    "plen": _plen,
    "hms": _hms,
}
"""Filter name -> function. Add here (and document above) to extend the language."""


def parse_template(text: str) -> list[Placeholder]:
    """All placeholders of ``text``; raises :class:`TemplateSyntaxError` on bad syntax (in time linear in ``text``)."""
    found: list[Placeholder] = []
    rest: list[str] = []
    i = 0
    while (start := text.find("{{", i)) >= 0:
        end = text.find("}}", start + 2)
        if end < 0:
            break
        whole = text[start : end + 2]
        parts = [p.strip() for p in whole[2:-2].split("|")]
        name, filters = parts[0], tuple(parts[1:])
        if not _NAME.match(name):
            raise TemplateSyntaxError(
                f"bad placeholder {_cut(whole)!r}: expected {{{{ name }}}} or {{{{ name | filter }}}}"
            )
        for f in filters:
            if f not in FILTERS:
                raise TemplateSyntaxError(
                    f"unknown filter {_cut(f)!r} in {_cut(whole)!r} (known: {', '.join(sorted(FILTERS))})"
                )
        found.append(Placeholder(name, filters))
        rest.append(text[i:start])
        i = end + 2
    rest.append(text[i:])
    left = "".join(rest)
    if "{{" in left or "}}" in left:
        raise TemplateSyntaxError("unbalanced '{{' or '}}'")
    return found


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def quoted_placeholder(text: str) -> str | None:
    """The first placeholder of ``text`` that stands inside shell quotes (``'...'``, ``"..."``), else None.

    Rendering quotes every value itself, so a placeholder inside quotes would be quoted twice:
    ``echo '{{ x }}'`` with ``x = "a'; cmd; '"`` renders ``echo ''"'"'a'...`` in which the outer quotes
    close the inner ones and ``cmd`` runs. A recipe that does this is refused when it is loaded. The
    scan follows the shell's quoting rules: a backslash escapes the next character outside single
    quotes, and nothing is special inside single quotes but the closing quote.
    """
    quote: str | None = None
    i = 0
    while i < len(text):
        if text.startswith("{{", i):
            end = text.find("}}", i)
            if quote is not None:
                return text[i : end + 2] if end >= 0 else text[i:]
            i = end + 2 if end >= 0 else len(text)
            continue
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote is None and c in "'\"":
            quote = c
        elif c == quote:
            quote = None
        i += 1
    return None


def _to_word(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, FormatText):
        return value
    return str(value)


def _shell_word(word: str) -> str:
    """A rendered word as the command holds it: a ``text`` value written by its format's writer."""
    return FORMATS[word.file_format].write(str(word)) if isinstance(word, FormatText) else word


def rendered_words(value: Any, filters: Sequence[str]) -> tuple[list[str], bool]:
    """The shell words (before quoting) ``value`` renders as after ``filters``, and whether it is a list (one
    word per item) rather than one word. ValueError: a filter that does not apply to the value."""
    for f in filters:
        try:
            value = FILTERS[f](value)
        except TypeError:  # len of a number, hexmask of a float, ...
            raise ValueError(f"filter {f!r} does not apply to {shown_value(str(value))}") from None
    if isinstance(value, list | tuple):
        return [_to_word(v) for v in value], True
    return [_to_word(value)], False


def shown_value(text: str, limit: int = 40) -> str:
    """A value as an error message shows it: ``repr`` (control characters escaped), cut to ``limit`` characters."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


ClassOf = Callable[[str, tuple[str, ...]], ValueClass]
"""The class of a template variable's values after its filters (:func:`~natbench.duts.recipes.values.class_of`)."""


def render_template(
    text: str,
    variables: Mapping[str, Any],
    *,
    quote: bool = True,
    slots: Sequence[Slot] | None = None,
    classes: ClassOf | None = None,
) -> str:
    """Substitute every placeholder; each value is shell-quoted unless ``quote`` is False.

    ``quote=False`` is for values consumed by natbench itself (e.g. interface names handed
    to a builtin step), never for command text. ``slots`` (:func:`~natbench.duts.recipes.shell.analyze` of
    ``text``) check every value against the place it stands in (:func:`~natbench.duts.recipes.shell.value_problem`:
    a leading ``-`` where it would be an option, one plain token where it is written into a file, a number in
    arithmetic), with the value's class from ``classes`` (default: a value learnt at run time). A ``text`` value is
    written by its format's writer. Raises ``KeyError`` for an unknown name, ``ValueError`` when a value is None,
    a filter does not apply or a value does not fit its place.
    """
    count = 0

    def substitute(match: re.Match[str]) -> str:
        nonlocal count
        parts = [p.strip() for p in match.group(1).split("|")]
        name = parts[0]
        if name not in variables:
            raise KeyError(name)
        value = variables[name]
        if value is None:
            raise ValueError(f"{name} has no value (guard the command with 'when: {name}')")
        words, is_list = rendered_words(value, parts[1:])
        if slots is not None:
            slot = slots[count]
            value_class = classes(name, tuple(parts[1:])) if classes is not None else RUNTIME
            for i, word in enumerate(words):
                problem = value_problem(slot, word, i == 0, value_class)
                if problem is not None:
                    raise ValueError(f"{name}: {shown_value(word)} {problem}")
        count += 1
        shell = [_shell_word(w) for w in words]
        if is_list:
            return " ".join(shlex.quote(w) for w in shell) if quote else " ".join(shell)
        return shlex.quote(shell[0]) if quote else shell[0]

    return _PLACEHOLDER.sub(substitute, text)
