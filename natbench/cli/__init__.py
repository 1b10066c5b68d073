"""The ``natbench`` command line: the click group, its subcommands (one module each) and the entry point."""

from __future__ import annotations

import contextlib
import sys

import click

# each subcommand module registers itself on the group when imported
from natbench.cli import compare, doctor, lab, plan, recipes, report, run, validate, worker
from natbench.cli.group import cli, printable, printable_lines
from natbench.cli.streams import PIPE_EXIT, OutputError, guarded_streams, silence
from natbench.errors import ConfigError, NatbenchError

SUBCOMMANDS = (compare, doctor, lab, plan, recipes, report, run, validate, worker)
"""The subcommand modules (natbench compare, doctor, lab, plan, recipes, report, run, validate, worker and
scheduler)."""


def main() -> None:
    """Entry point: run the CLI; a natbench error becomes one line on stderr and its exit code; a failure to write to
    standard output (a full disk, a closed descriptor) one line and exit 1, a broken pipe exit 141
    (:mod:`natbench.cli.streams`)."""
    try:
        with guarded_streams():
            try:
                code: int | str | None = _run()
            except SystemExit as exc:  # a command's own sys.exit()
                code = exc.code
            sys.stdout.flush()  # what is still buffered fails here, inside the guard, not at exit
    except OutputError as exc:
        code = _output_failed(exc)
    sys.exit(code)


def _run() -> int:
    """Run the CLI; the exit status (a natbench or click error printed as one line on stderr)."""
    try:
        rc = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as exc:
        click.echo(f"natbench: error: {printable(_click_message(exc))}", err=True)
        return 2 if exc.exit_code in (1, 2) else exc.exit_code
    except NatbenchError as exc:
        # a user's input error is one line (a newline or NUL in it escaped, cut at MAX_LINE_CHARS); other errors
        # keep their own layout (a damaged run directory lists one damaged record per line), each line so treated
        text = printable(str(exc)) if isinstance(exc, ConfigError) else printable_lines(str(exc))
        click.echo(f"natbench: error: {text}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    # with standalone_mode=False click returns ctx.exit()'s code instead of exiting
    return rc if isinstance(rc, int) else 0


def _output_failed(exc: OutputError) -> int:
    """Say once on stderr (when it still works) that standard output failed; the exit status."""
    silence(sys.stdout)
    if exc.broken_pipe:
        return PIPE_EXIT
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"natbench: error: {exc}\n")
        sys.stderr.flush()
    return 1


def _click_message(exc: click.ClickException) -> str:
    """A click error as ``OPTION: message`` (``--cores: 0 is not in the range 1<=x<=4096.``), without usage text."""
    if isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter):
        hint = exc.param_hint
        if hint is None and exc.param is not None:
            hint = exc.param.opts[0] if exc.param.opts else exc.param.name
        if isinstance(hint, list | tuple):
            hint = "/".join(str(h) for h in hint)
        if hint:
            return f"{str(hint).strip(chr(39) + chr(34))}: {exc.message}"
    return exc.format_message()
