"""The ``natbench`` command line: the click group, its subcommands (one module each) and the entry point."""

from __future__ import annotations

import sys

import click

# each subcommand module registers itself on the group when imported
from natbench.cli import compare, doctor, lab, plan, recipes, report, run, validate, worker
from natbench.cli.group import cli
from natbench.errors import NatbenchError

__all__ = ["cli", "main"]

SUBCOMMANDS = (compare, doctor, lab, plan, recipes, report, run, validate, worker)
"""The subcommand modules (natbench compare, doctor, lab, plan, recipes, report, run, validate, worker and
scheduler)."""


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
