"""Reading one file of a run directory safely: regular files only, and no more bytes than the file may hold.

A run directory is input like any other: one copied from elsewhere, or damaged, may hold a symlink to a device
(``/dev/zero`` never ends), a FIFO (never answers), a directory, or a file far larger than natbench writes.
:func:`open_regular` refuses all but a regular file before reading a byte (it opens without blocking and checks
the open file itself, so nothing can be swapped in between); :func:`read_capped` reads at most a file's cap and
names the file and the cap when it holds more. A file of ``/proc`` or ``/sys``
(:data:`~natbench.config.paths.PSEUDO_ROOTS`) is refused too, even when it calls itself a regular file: its size
says nothing and reading it can block, fail or never end (``/proc/self/mem``, ``/proc/kcore``). Every read error is
a :class:`~natbench.errors.StoreError` naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from natbench.config.paths import pseudo_root
from natbench.errors import StoreError

MiB = 1 << 20

FILE_CAPS = {
    "run.json": 64 * MiB,
    "points.json": 64 * MiB,
    "campaign.yaml": 16 * MiB,
}
"""Largest size each metadata file of a run directory may have (natbench writes a few kilobytes, run.json of a
campaign of thousands of points some megabytes); trials.jsonl is read line by line (:data:`MAX_LINE`)."""

MAX_LINE = 16 * MiB
"""Longest record line read (natbench writes at most a few hundred kilobytes: a trial with a long CPU monitor
series); a longer one is damage, read no further than this."""

_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is (or its symlink leads to) a regular file; StoreError naming it and
    what it is otherwise (FileNotFoundError passes through for the caller to name)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO does not block the open
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoreError(f"{path}: {_kind(mode)}, not a file: a run directory holds regular files")
    pseudo = pseudo_root(path)
    if pseudo is not None:
        os.close(fd)
        raise StoreError(
            f"{path}: leads into {pseudo} (a view of the kernel, not data): a run directory holds its own files"
        )
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_capped(path: Path, cap: int) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), at most ``cap`` of them; StoreError naming
    the file and the cap when it holds more."""
    with open_regular(path) as f:
        try:
            data = f.read(cap + 1)
        except OSError as exc:
            raise StoreError(f"{path}: cannot be read: {exc.strerror or type(exc).__name__}") from None
    if len(data) > cap:
        raise StoreError(
            f"{path}: larger than the {cap // MiB} MiB a {path.name} may hold (natbench writes far less): not read"
        )
    return data
