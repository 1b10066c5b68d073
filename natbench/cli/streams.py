"""Standard output and standard error that can fail: a full disk, ``/dev/full``, a closed pipe, a closed descriptor.

:func:`guarded_streams` puts a thin wrapper around ``sys.stdout`` and ``sys.stderr`` for the time the CLI runs:
an ``OSError`` while writing or flushing standard output becomes :class:`OutputError`, which
:func:`natbench.cli.main` turns into one line on standard error and exit status 1, never a traceback. What fails
to reach standard error is dropped (there is nowhere left to say anything): the command goes on and its exit
status still tells how it ended. A stream
that is closed from the start (the shell's ``>&-``: Python then has no ``sys.stdout``) fails at its first write
the same way, instead of swallowing the output. A broken pipe (``natbench report ... | head``: the reader had
all it wanted) ends the command quietly with the status a shell gives a process ended by SIGPIPE (141).

Afterwards the failed descriptor is pointed at ``/dev/null``, so that Python's own flush at exit has nowhere to
fail ("Exception ignored ... BrokenPipeError").
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

PIPE_EXIT = 128 + 13
"""Exit status after a broken pipe on standard output: what a shell reports for a process ended by SIGPIPE."""


class OutputError(Exception):
    """Writing to standard output or standard error failed (the message names which and why)."""

    def __init__(self, stream: str, exc: OSError | None) -> None:
        self.stream = stream
        """``standard output`` or ``standard error``."""
        self.errno = exc.errno if exc is not None else errno.EBADF
        """The OS error number (EBADF for a stream closed from the start)."""
        why = (exc.strerror or type(exc).__name__) if exc is not None else "it is closed"
        super().__init__(f"cannot write to {stream}: {why}")

    @property
    def broken_pipe(self) -> bool:
        """The reader of a pipe went away (not worth a message: it had what it wanted)."""
        return self.errno == errno.EPIPE


class _Guarded:
    """A text stream whose write and flush failures are :class:`OutputError` (everything else passes through); with
    ``quiet`` (standard error: nowhere left to say anything) they are dropped instead, and the command goes on."""

    def __init__(self, stream: TextIO | None, name: str, *, quiet: bool = False) -> None:
        self._stream = stream
        self._name = name
        self._quiet = quiet

    def write(self, text: str) -> int:
        try:
            if self._stream is None:
                raise OutputError(self._name, None)
            try:
                return self._stream.write(text)
            except OSError as exc:
                raise OutputError(self._name, exc) from None
        except OutputError:
            if self._quiet:
                return len(text)
            raise

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            if not self._quiet:
                raise OutputError(self._name, exc) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` guarded (:class:`_Guarded`) while the block runs, then restored."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = _Guarded(out, "standard output")
    sys.stderr = _Guarded(err, "standard error", quiet=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def silence(stream: TextIO | None) -> None:
    """Point the descriptor under ``stream`` at /dev/null (a failed standard output or error), so that what is
    still buffered for it is dropped at exit without an error; a stream without a descriptor is left alone."""
    if stream is None:
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # a StringIO, a closed stream
        return
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
