"""What a DUT output parser is: a function ``(stdout) -> value`` that raises :class:`ParseError`.

Recipe steps name their parser (``parse: conntrack_count``); parsers are registered under those names in
:data:`~natbench.plugins.registry.PARSERS` (natbench's own in :mod:`natbench.duts.parsers` and
:mod:`natbench.duts.parsers_jool_pf`, third-party ones through the ``natbench.parsers`` entry-point group).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

Parser = Callable[[str], Any]
"""A parser: a command's standard output -> the value the step saves."""


@runtime_checkable
class ParseSink(Protocol):
    """One streaming read of a command's output: pieces in as they arrive, the parsed value out."""

    def feed(self, data: bytes) -> None:
        """The next piece of standard output (any length, lines may be cut anywhere); ParseError on what the
        parser cannot read."""
        ...

    def finish(self) -> Any:
        """The value of everything fed (the command has ended); ParseError when the output is incomplete."""
        ...


@runtime_checkable
class StreamingParser(Protocol):
    """A parser that also reads a command's output piece by piece as it arrives, never holding the whole text
    (a DUT's listing of millions of mappings): the DUT layer streams a step's output into it when the executor
    can (:class:`~natbench.plugins.dut.StreamsOutput`), and calls it with the whole text otherwise."""

    def __call__(self, out: str) -> Any:
        """Parse the whole output at once (the same value as a stream of it)."""
        ...

    def stream(self) -> ParseSink:
        """A fresh sink for one command's output."""
        ...


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
