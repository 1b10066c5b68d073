"""The ``natbench`` click group every subcommand module registers itself on."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from natbench.version import __version__

__all__ = [
    "MAX_LINE_CHARS",
    "FiniteFloatRange",
    "cli",
    "max_points_option",
    "one_line",
    "printable_lines",
    "writable_directory",
]

MAX_LINE_CHARS = 1000
"""Longest line natbench prints for an error or a user's value (the rest is cut and counted): an input that
is echoed in a message cannot flood the terminal or a log."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange without ``nan`` (which compares false with both bounds and so passes any range)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and number != number:
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


def one_line(text: str) -> str:
    """``text`` as one line: control characters (a newline, a NUL, an escape, C1 controls, bidirectional
    overrides) shown as ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """A user's value or an error as natbench prints it: values substituted from ``${NATBENCH_*}`` variables
    named instead of shown, control characters escaped (one line), at most ``limit`` characters."""
    from natbench.config.source import redact_substituted

    line = one_line(redact_substituted(text))
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
        type=click.IntRange(1, 10**9),
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="natbench")
def cli() -> None:
    """Benchmark stateful NATxy gateways by RFC 9693."""
