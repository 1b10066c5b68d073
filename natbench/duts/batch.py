"""Several commands of a recipe step in one round trip: the script that runs them and the reading of its output.

The script runs each command in its own ``sh -c`` between random markers on stdout and stderr, with its exit status
after it, so that each command's output and status come back on their own; it stops after a failing command that
must not fail. :func:`read_batch` cuts the output back into pieces; a command the script did not reach has none.
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass


def batch_token() -> str:
    """A random marker no command's output contains by chance."""
    return "@@natbench-" + secrets.token_hex(6)


def batch_script(token: str, commands: Sequence[tuple[str, bool]]) -> str:
    """The script running ``commands`` (shell text, whether the script stops when it fails) one after another."""
    parts = []
    for i, (text, stops) in enumerate(commands):
        parts.append(
            f"printf '%s\\n' '{token} o {i}'; printf '%s\\n' '{token} e {i}' >&2; "
            f"sh -c {shlex.quote(text)} </dev/null; __nb=$?; "
            f"printf '\\n%s %s\\n' '{token} x {i}' \"$__nb\"; printf '\\n' >&2"
        )
        if stops:
            parts.append('[ "$__nb" -eq 0 ] || exit 0')
    return "\n".join(parts)


@dataclass(frozen=True)
class BatchOutput:
    """What a batch script's output says of each command it ran, by the command's position in the batch."""

    stdout: dict[int, tuple[str, int]]
    """Position -> (its standard output, its exit status), for each command the script ran to its end."""
    stderr: dict[int, str]
    """Position -> its standard error, for each command the script started."""


def read_batch(stdout: str, stderr: str, token: str) -> BatchOutput:
    """Cut a batch script's output (marked with ``token``) into each command's output and exit status."""
    outs = {
        int(m.group(1)): (m.group(2), int(m.group(3)))
        for m in re.finditer(rf"^{token} o (\d+)\n(.*?)\n{token} x \1 (-?\d+)$", stdout, re.S | re.M)
    }
    errs: dict[int, str] = {}
    pieces = re.split(rf"^{token} e (\d+)\n", stderr, flags=re.M)
    for j in range(1, len(pieces) - 1, 2):
        text = pieces[j + 1]
        errs[int(pieces[j])] = text[:-1] if text.endswith("\n") else text
    return BatchOutput(outs, errs)
