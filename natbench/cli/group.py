"""The ``natbench`` click group every subcommand module registers itself on."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from natbench.values import parse_count, parse_number
from natbench.version import __version__

MAX_LINE_CHARS = 1000
"""Longest line natbench prints for an error or a user's value (the rest is cut and counted): an input that
is echoed in a message cannot flood the terminal or a log."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class NumberRange(click.FloatRange):
    """click's FloatRange reading the text as a campaign reads numbers (:func:`natbench.values.parse_number`: ASCII
    digits only, finite, ``2^10`` and ``5k`` too): ``inf``, ``nan`` or an Arabic-Indic ``٥`` is no number here
    either."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = parse_number(value)
            except ValueError as exc:
                self.fail(_beyond(self, value, exc), param, ctx)
        return super().convert(value, param, ctx)


class CountRange(click.IntRange):
    """click's IntRange reading the text as a campaign reads counts (:func:`natbench.values.parse_count`: ASCII
    digits only, ``2^10`` and ``4k`` too)."""

    name = "count"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = parse_count(value)
            except ValueError as exc:
                self.fail(_beyond(self, value, exc), param, ctx)
        return super().convert(value, param, ctx)


def _beyond(kind: click.types._NumberRangeBase, text: str, exc: ValueError) -> str:
    """The error of a number outside the grammar: a number too large for any field is named with the option's
    own range (as click names one just outside it), anything else as the grammar says."""
    if "too large" in str(exc):
        shown = text if len(text) <= 40 else text[:37] + "..."
        return f"{shown!r} is not in the range {kind._describe_range()}."
    return str(exc)


def one_line(text: str) -> str:
    """``text`` as one line: control characters (a newline, a NUL, an escape, C1 controls, bidirectional
    overrides) shown as ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """A user's value or an error as natbench prints it: values substituted from ``${NATBENCH_*}`` variables
    named instead of shown, passwords in URLs as ``***``, control characters escaped (one line), at most ``limit``
    characters."""
    from natbench.config.redact import redact_credentials
    from natbench.config.source import redact_substituted

    line = one_line(redact_credentials(redact_substituted(text)))
    if len(line) > limit:
        line = f"{line[:limit]}... ({len(line) - limit:,} more characters)"
    return line


def printable_lines(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Text of several lines (a list of damaged records) with each line made :func:`printable`."""
    return "\n".join(printable(line, limit) for line in text.split("\n"))


def max_points_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-points N``: campaigns of up to N working points are expanded while the command runs (default
    :data:`~natbench.campaign.sweep.MAX_POINTS`)."""
    from natbench.campaign.sweep import MAX_POINTS, points_limit

    @functools.wraps(command)
    def run(*args: Any, max_points: int, **kwargs: Any) -> Any:
        with points_limit(max_points):
            return command(*args, **kwargs)

    return click.option(
        "--max-points",
        type=CountRange(1, 10**9),
        default=MAX_POINTS,
        show_default=True,
        help="Refuse a campaign of more working points than this (computed before expanding the sweep).",
    )(run)


def writable_directory(path: Path, option: str, what: str) -> None:
    """Raise :class:`~natbench.errors.ConfigError` (one line naming ``option``) unless ``path`` is a directory
    natbench can write into, or can be created as one. Nothing is created: a probe file is made and removed
    in ``path`` or in its nearest existing parent, so the check also holds for root (file modes do not stop
    root; a read-only file system, a file in the way or /proc does)."""
    from natbench.errors import ConfigError

    def refuse(reason: str) -> ConfigError:
        return ConfigError(f"cannot write {what} into {printable(str(path), 200)}: {reason}", field=option)

    probe_dir = path
    while True:
        try:
            info = probe_dir.stat()
        except FileNotFoundError:
            if probe_dir.parent == probe_dir:
                raise refuse("no such directory") from None
            probe_dir = probe_dir.parent
            continue
        except OSError as exc:
            raise refuse(exc.strerror or type(exc).__name__) from None
        break
    if not stat.S_ISDIR(info.st_mode):
        raise refuse(f"{printable(str(probe_dir), 200)} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".natbench-probe-", dir=probe_dir)
    except OSError as exc:
        raise refuse(exc.strerror or type(exc).__name__) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


class OptionCommand(click.Command):
    """A command that refuses an option's value that looks like an option (``report --out --format RUN`` would
    write into a directory named ``--format``): the value was forgotten, and the next option taken for it.

    Every option that takes a value other than a number is checked: when the word after it on the command line
    starts with ``-`` (``-`` alone, standard output or input, excepted) it is refused, naming the option. A value
    that does start with ``-`` is written attached (``--out=-x``) or as a path (``./-x``). (After a number option
    ``-1`` is a value, and an option in its place is refused as no number.)"""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            name: param
            for param in self.get_params(ctx)
            if isinstance(param, click.Option) and not param.is_flag and not param.count and not _numeric(param)
            for name in param.opts
        }
        for word, following in itertools.pairwise(args):
            if word == "--":
                break
            param = takes_value.get(word)
            if param is not None and following.startswith("-") and following != "-":
                shown = printable(following, 60)
                longest = max(param.opts, key=len)
                attached = f"{longest}={shown}" if longest.startswith("--") else f"{longest}{shown}"
                raise click.BadParameter(
                    f"{shown!r} looks like an option, not a value: the value is missing (a value that starts with"
                    f" '-' is written {attached}, or ./{shown} for a file)",
                    ctx=ctx,
                    param=param,
                    param_hint=longest,
                )
        return super().parse_args(ctx, args)


def _numeric(param: click.Option) -> bool:
    """A number option: ``-1`` after it is a (negative) value, and an option there fails as no number anyway."""
    return isinstance(param.type, click.types.IntParamType | click.types.FloatParamType)


class OptionGroup(click.Group):
    """A group whose commands and subgroups are :class:`OptionCommand` (and OptionGroup) throughout."""

    command_class = OptionCommand
    group_class = type


@click.group(cls=OptionGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="natbench")
def cli() -> None:
    """Benchmark stateful NATxy gateways by RFC 9693."""
