"""What a DUT output parser is: a function ``(stdout) -> value`` that raises :class:`ParseError`.

Recipe steps name their parser (``parse: conntrack_count``); parsers are registered under those names in
:data:`~natbench.plugins.registry.PARSERS` (natbench's own in :mod:`natbench.duts.parsers` and
:mod:`natbench.duts.parsers_jool_pf`, third-party ones through the ``natbench.parsers`` entry-point group).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ParseError", "Parser"]

Parser = Callable[[str], Any]
"""A parser: a command's standard output -> the value the step saves."""


class ParseError(ValueError):
    """Output a parser cannot read (the DUT layer turns it into a DutError naming the step)."""

    def __init__(self, parser: str, message: str, output: str = "") -> None:
        excerpt = output.strip().replace("\n", "\\n")
        if len(excerpt) > 160:
            excerpt = excerpt[:160] + "..."
        super().__init__(
            f"parser {parser}: {message}" + (f" (output: {excerpt!r})" if output.strip() else " (no output)")
        )
        self.parser = parser
