"""Recipe ``pattern`` regular expressions, matched by RE2: time linear in the value, whatever the pattern.

Python's ``re`` backtracks and has no time limit: ``(a+)+$`` against 35 characters tries 2^35 paths, and
``(?:a?){28}a{28}`` doubles its time with every character. RE2 (the ``google-re2`` package) compiles a
pattern to an automaton and matches in time linear in the value's length, so no pattern a recipe may
declare can stall a campaign check. RE2 has no back-references, look-arounds or possessive repeats (they
are what makes matching exponential); a pattern using them is refused when the recipe is loaded, with
RE2's own reason. A pattern is at most :data:`MAX_PATTERN_CHARS` characters (RE2 also caps a repeat count
at 1,000 and the compiled program's memory), and values of at most :data:`MAX_VALUE_CHARS` characters are
checked against it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

MAX_PATTERN_CHARS = 512
"""Longest pattern a parameter may declare."""
MAX_VALUE_CHARS = 256
"""Longest value checked against a pattern."""
MAX_PROGRAM_BYTES = 8 << 20
"""Memory RE2 may use for one compiled pattern (its own default): a pattern whose automaton needs more is refused."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its parse errors on stderr
    options.max_mem = MAX_PROGRAM_BYTES
    return options


@lru_cache(maxsize=256)
def check_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; raise ValueError saying why ``pattern`` is refused."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"a pattern is at most {MAX_PATTERN_CHARS} characters (this one has {len(pattern):,})")
    if "\x00" in pattern:
        raise ValueError("bad regular expression: contains a NUL character")
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        text = text.split(":", 1)[0] if len(text) > 80 else text  # RE2 quotes the pattern after a colon
        raise ValueError(f"bad regular expression (RE2 syntax: no back-references or look-arounds): {text}") from None


def pattern_matches(pattern: str, value: str) -> bool:
    """Whether ``value`` matches ``pattern`` as a whole (linear time)."""
    return check_pattern(pattern).fullmatch(value) is not None
