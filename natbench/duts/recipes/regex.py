"""Recipe ``pattern`` regular expressions that cannot backtrack catastrophically.

Python's ``re`` backtracks and has no time limit: ``(a+)+$`` against 35 characters tries 2^35 paths,
and k adjacent unbounded repeats cost about n^k steps on an n-character value. A linear-time matcher
(RE2) would need a compiled dependency, so natbench restricts the patterns a recipe may declare
instead, which is enough for what a parameter pattern is for (a name, a path, an instance):

* no repeat inside a repeat (``(a+)+``, ``(a*)*``, ``(?:x{1,5})*``): the exponential case;
* no alternation inside a repeat (``(a|ab)*``): exponential too when the branches overlap;
* no back-reference (``\\1``, ``(?P=name)``, ``(?(1)...)``): not a regular language at all;
* at most :data:`MAX_REPEATS` repeats in all (``*``, ``+``, ``{m,n}`` with n > 1);

and checks values of at most :data:`MAX_VALUE_CHARS` characters against it. Three adjacent ``[a-z]*``
against 256 characters cost 0.065 s on the development machine (four took 3.7 s, 1,024 characters
with three took 2.7 s), so these two limits bound every check to well under a second.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

_c: Any = importlib.import_module("re._constants")  # the parser behind re.compile (Python 3.11+)
_sre_parse: Any = importlib.import_module("re._parser")

__all__ = ["MAX_REPEATS", "MAX_VALUE_CHARS", "check_pattern"]

MAX_REPEATS = 3
"""Most repeats (``*``, ``+``, ``{m,n}`` with n > 1) one pattern may have."""
MAX_VALUE_CHARS = 256
"""Longest value checked against a pattern."""

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}


def check_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` if it is safe (see the module docstring); raise ValueError saying why not."""
    try:
        compiled = re.compile(pattern)
        tree = _sre_parse.parse(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression: {exc}") from None
    except RecursionError:
        raise ValueError("bad regular expression: nested too deeply") from None
    repeats = _walk(list(tree), in_repeat=False)
    if repeats > MAX_REPEATS:
        raise ValueError(
            f"a pattern may have at most {MAX_REPEATS} repeats (*, +, {{m,n}}): more can backtrack for minutes"
        )
    return compiled


def _walk(items: list[tuple[Any, Any]], *, in_repeat: bool) -> int:
    """The number of repeats in ``items``; raise ValueError for a construct that can backtrack exponentially."""
    count = 0
    for op, av in items:
        if op in _REPEATS:
            _low, high, sub = av
            if high > 1:
                if in_repeat:
                    raise ValueError("a repeat inside a repeat, such as (a+)+, can backtrack exponentially")
                count += 1 + _walk(list(sub), in_repeat=True)
            else:
                count += _walk(list(sub), in_repeat=in_repeat)
        elif op is _c.SUBPATTERN:
            count += _walk(list(av[-1]), in_repeat=in_repeat)
        elif op is _c.BRANCH:
            if in_repeat:
                raise ValueError("an alternation inside a repeat, such as (a|ab)*, can backtrack exponentially")
            count += sum(_walk(list(branch), in_repeat=False) for branch in av[1])
        elif op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
            raise ValueError("back-references are not allowed in a pattern")
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            count += _walk(list(av[1]), in_repeat=in_repeat)
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            count += _walk(list(av), in_repeat=in_repeat)
    return count
