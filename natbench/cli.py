"""The ``natbench`` command line."""

from __future__ import annotations

import sys

import click

from natbench import __version__
from natbench.errors import NatbenchError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="natbench")
def cli() -> None:
    """Benchmark stateful NATxy gateways by RFC 9693."""


def main() -> None:
    """Entry point: run the CLI; a natbench error becomes one line on stderr and its exit code."""
    try:
        rc = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code in (1, 2) else exc.exit_code)
    except NatbenchError as exc:
        click.echo(f"natbench: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    # with standalone_mode=False click returns ctx.exit()'s code instead of exiting
    sys.exit(rc if isinstance(rc, int) else 0)


# Subcommands register themselves on `cli` when imported: one line each.
# (the `from ... import X as _X` form keeps each line independent for ruff's F401/RUF100)
from natbench.commands import compare as _compare  # noqa: E402, F401  natbench compare RUN_A RUN_B
from natbench.commands import lab as _lab  # noqa: E402, F401  natbench lab up|down|status
from natbench.commands import plan as _plan  # noqa: E402, F401  natbench plan FILE
from natbench.commands import recipes as _recipes  # noqa: E402, F401  natbench recipes list|show|render
from natbench.commands import report as _report  # noqa: E402, F401  natbench report RUN_DIR
from natbench.commands import run as _run  # noqa: E402, F401  natbench run FILE | --resume RUN_DIR
from natbench.commands import validate as _validate  # noqa: E402, F401  natbench validate FILE...
