"""Test ids a test can be selected by again.

pytest writes a character of a parameter that is not printable ASCII with a backslash escape (``\\n``,
``\\xe9``) and doubles a backslash; an id holding such an escape names no test when it is given back
(``pytest 'tests/f.py::test[a\\nb]'`` finds nothing), so neither a developer nor the mutation run, which
selects each mutant's tests by id, can run that case alone. Text parameters are spelled here instead:
printable ASCII stays as it is, a backslash, tab or newline gets a short name and any other character its
code point, all in angle brackets.
"""

from __future__ import annotations

_NAMED = {"\\": "<backslash>", "\n": "<newline>", "\t": "<tab>", "\r": "<return>"}


def selectable(test_id: str) -> bool:
    """True when ``test_id`` holds only printable ASCII other than a backslash."""
    return all(" " <= char <= "~" and char != "\\" for char in test_id)


def spelled(value: str | bytes) -> str:
    """``value`` as a selectable id: the characters pytest would escape named in angle brackets."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return "".join(char if selectable(char) else _NAMED.get(char, f"<U+{ord(char):04X}>") for char in text)
