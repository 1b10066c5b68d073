"""The ``natbench`` click group every subcommand module registers itself on."""

from __future__ import annotations

import re
from typing import Any

import click

from natbench.version import __version__

__all__ = ["FiniteFloatRange", "cli", "one_line"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange without ``nan`` (which compares false with both bounds and so passes any range)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and number != number:
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


def one_line(text: str) -> str:
    """``text`` as one line: control characters (a newline, a NUL, an escape) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="natbench")
def cli() -> None:
    """Benchmark stateful NATxy gateways by RFC 9693."""
