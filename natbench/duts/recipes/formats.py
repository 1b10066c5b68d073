"""File formats recipes write text in, and the writer of each: how a ``text`` value becomes one string of the format.

A command that writes text into a configuration file (``echo ... > {{ pf_conf }}``, ``printf ... | tee FILE``)
or hands ``nft`` its rule language may declare the format of that text (``format: pf.conf``; ``nft``'s arguments
are always ``nft``). The format says two things:

* where a statement of its own begins (:attr:`Format.statement_starts`): there only a number or an address may
  stand, never a word (``block`` at the start of a pf.conf line is a rule of its own);
* how a ``text`` parameter of the format is written (:attr:`Format.write`): as one quoted string of the format,
  refused when the format cannot quote it. The string stays one word of the format whatever it holds.

Text written without a declared format is read as if any character but a letter, a digit or
``_ . : / , + = @ % -`` could begin a statement (the safe assumption for a format natbench does not know).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_TEXT_CHARS = 1024
"""Longest ``text`` value."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _double_quoted(kind: str) -> Callable[[str], str]:
    """A writer of ``"..."`` strings for a format whose strings hold neither ``"`` nor ``\\`` nor line breaks."""

    def write(text: str) -> str:
        if '"' in text or "\\" in text or _CONTROL.search(text):
            raise ValueError(f"a {kind} string cannot hold a double quote, a backslash or a control character")
        if "$" in text and kind == "nft":
            raise ValueError("an nft string cannot hold '$' (nft expands variables)")
        return f'"{text}"'

    return write


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)


@dataclass(frozen=True)
class Format:
    """A file format text is written in."""

    name: str
    """Its name in recipes (``format: pf.conf``, ``{type: text, format: pf.conf}``)."""
    statement_starts: str | None
    """Characters after which a new statement begins (besides the start of the text); None: any character but a
    plain one (an unknown format)."""
    write: Callable[[str], str]
    """The writer: a ``text`` value as one string of the format (ValueError: the format cannot hold it)."""

    def starts_statement(self, previous: str) -> bool:
        """Whether a value right after the text ``previous`` (the written line so far, blanks stripped) begins a
        statement of this format."""
        if not previous:
            return True
        last = previous[-1]
        if self.statement_starts is None:
            return not (last.isascii() and (last.isalnum() or last in "_.:/,+=@%-"))
        return last in self.statement_starts


def _refuse(text: str) -> str:
    raise ValueError("natbench has no writer for text of an unknown format")


UNKNOWN = Format("unknown", None, _refuse)
"""Text written without a declared format."""

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("pf.conf", "\n", _double_quoted("pf.conf")),
        Format("nft", "\n;{}", _double_quoted("nft")),
        Format("json", "", _json),
    )
}
"""The formats natbench knows, by name."""


def format_names() -> str:
    """The known formats, for messages."""
    return ", ".join(FORMATS)
