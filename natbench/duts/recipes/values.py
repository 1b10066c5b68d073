"""What a recipe value's text can be: the class of a declared type (after filters), and the checks of one rendered
word against what its place needs.

Every value but a ``text`` one is a *phrase*: plain tokens (letters, digits and ``_ . : / , + -``) separated by
single blanks; it can carry no shell syntax, no quote, no newline, no glob, no comment, no brace. Narrower
classes say more (:class:`ValueClass`):

* ``number``: ``int``, ``float``, ``bool``, a port of a range, a length (``-12``, ``0.5``, ``1e-05``);
* ``datum``: addresses, prefixes, MACs, port ranges, CPU masks, durations: data that names nothing, so it may
  head a line a command writes (``echo {{ udp_timeout }} > /proc/...``);
* ``word``: one plain token (``interface``, a choice of tokens, the DUT's name);
* ``phrase``: a ``str`` with a pattern (which decides; a blank is possible); without one a ``str`` is a word;
* ``text``: text for a named file format (:mod:`natbench.duts.recipes.formats`), rendered by that format's
  writer as one quoted string of the format;
* ``runtime``: a value natbench learns while running (a command's saved output): each is checked when it is
  rendered, as the place it stands in needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from natbench.duts.recipes.params import ParamSpec


TOKEN = re.compile(r"[A-Za-z0-9_.:/,+-]+")
"""One plain token."""
PHRASE = re.compile(r"[A-Za-z0-9_.:/,+-]+(?: [A-Za-z0-9_.:/,+-]+)*")
"""Plain tokens separated by single blanks: what any value but ``text`` renders as."""
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_DATUM = re.compile(r"-?[0-9][A-Za-z0-9_.:/,+-]*")
"""A value learnt at run time counts as a datum when it starts with a digit (``1``, ``262144``)."""

_ORDER = ("number", "datum", "word", "phrase")


@dataclass(frozen=True)
class ValueClass:
    """What every value of a declared type (after its filters) renders as."""

    kind: str
    """``number``, ``datum``, ``word``, ``phrase``, ``text`` or ``runtime``."""
    words: bool = False
    """Several words (a list, or ``| words``); otherwise one."""
    format: str | None = None
    """For ``text``: its file format."""

    def within(self, kind: str) -> bool:
        """Whether every value of this class is of class ``kind`` (``number`` within ``datum`` within ``word``
        within ``phrase``)."""
        if self.kind not in _ORDER or kind not in _ORDER:
            return self.kind == kind
        return _ORDER.index(self.kind) <= _ORDER.index(kind)

    def describe(self) -> str:
        """For messages: ``a number``, ``text (pf.conf)``, ..."""
        names = {
            "number": "a number",
            "datum": "an address, number or mask",
            "word": "a word",
            "phrase": "a string",
            "runtime": "a value learnt at run time",
        }
        return f"text ({self.format})" if self.kind == "text" else names[self.kind]


class FormatText(str):
    """A ``text`` value: its own text, and the file format whose writer renders it."""

    file_format: str
    """The format's name."""

    def __new__(cls, text: str, file_format: str) -> FormatText:
        made = super().__new__(cls, text)
        made.file_format = file_format
        return made

    def __reduce__(self) -> Any:
        return (FormatText, (str(self), self.file_format))


RUNTIME = ValueClass("runtime")
"""The class of a value natbench learns at run time (checked word by word when it is rendered)."""
_TYPE_CLASSES = {
    "int": "number",
    "float": "number",
    "bool": "number",
    "ip": "datum",
    "ipv4": "datum",
    "ipv6": "datum",
    "net": "datum",
    "ipv4_net": "datum",
    "ipv6_net": "datum",
    "mac": "datum",
    "port_range": "datum",
    "interface": "word",
    "str": "phrase",
}


def _choice_class(choices: Sequence[str]) -> str:
    return "word" if all(TOKEN.fullmatch(c) for c in choices) else "phrase"


def class_of(spec: ParamSpec | None, filters: Sequence[str]) -> ValueClass:
    """The class of a parameter's values after ``filters`` (None: a value natbench learns at run time)."""
    if spec is None:
        return RUNTIME
    if spec.type == "text":
        return ValueClass("text", format=spec.format)
    words = spec.type == "list"
    item = spec.items if words else spec.type
    kind = _choice_class(spec.choices) if item == "choice" else _TYPE_CLASSES.get(item, "phrase")
    if item == "str" and spec.pattern is None:
        kind = "word"  # a str without a pattern takes one plain token
    for name in filters:
        if name in ("len", "plen"):
            kind, words = "number", False
        elif name in ("hexmask", "hms"):
            kind, words = "datum", False
        elif name in ("first", "last"):
            kind = "number" if item == "port_range" and not words else kind
            words = False
        elif name == "csv":
            words = False
        elif name == "words":
            words = True
        # addr keeps the class (an address stays a datum), as upper and lower do
    return ValueClass(kind, words)


def builtin_class(name: str) -> ValueClass:
    """The class of a variable natbench supplies at run time: ``cores``, ``cpus`` (numbers), ``dut`` (a word)."""
    return {"cores": ValueClass("number"), "cpus": ValueClass("number", True), "dut": ValueClass("word")}.get(
        name, RUNTIME
    )


def is_number(word: str) -> bool:
    """Whether ``word`` is a number."""
    return _NUMBER.fullmatch(word) is not None


def is_datum(word: str, value_class: ValueClass) -> bool:
    """Whether ``word`` (of ``value_class``) is data that names nothing: guaranteed by its type, or, for a value learnt
    at run time, a word starting with a digit."""
    if value_class.within("datum"):
        return True
    return value_class.kind == "runtime" and _DATUM.fullmatch(word) is not None


def is_token(word: str) -> bool:
    """Whether ``word`` is one plain token."""
    return TOKEN.fullmatch(word) is not None


def is_phrase(word: str) -> bool:
    """Whether ``word`` is plain tokens separated by single blanks."""
    return PHRASE.fullmatch(word) is not None
