"""The ``natbench`` click group every subcommand module registers itself on."""

from __future__ import annotations

import click

from natbench import __version__

__all__ = ["cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="natbench")
def cli() -> None:
    """Benchmark stateful NATxy gateways by RFC 9693."""
