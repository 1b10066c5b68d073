"""A source tree taken from outside (a directory, a tar archive, a download), copied or unpacked into a scratch
directory within limits, and its content digest.

Whatever the user names is read as hostile: an archive of a million members, a gzip of zeros that unpacks to
gigabytes, a sparse member of terabytes, a member nested thousands of directories deep, a device node, a FIFO or
a socket in a tree, a link leading out of it. Everything is read in bounded chunks and counted against the limits
below as it goes, so the first member or file over a limit stops the whole thing with one
:class:`SourceTreeError` naming the limit, before the disk or the memory pays for it. The limits are those of
Jool's own source (v4.2.0-rc3: 1,149 files in 99 directories, 5.7 MB unpacked, a 1.3 MB archive, its deepest
file 6 directories down, its longest path 82 characters), with room for a checkout that was built in (object files,
autotools caches) and for releases to come.

Only regular files, directories and symbolic links that stay inside the tree are taken: a device node, a FIFO,
a socket or a link leading elsewhere (``/etc/shadow``, ``../..``) is refused by name (the name shown cut and with
its control characters escaped: a name is the archive's content, not natbench's).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import lzma
import os
import stat
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MiB = 1 << 20
"""A mebibyte."""

MAX_MEMBERS = 20_000
"""Most files, directories and links a tree or archive may hold (Jool 4.2 has about 1,250; a built checkout a few
thousand)."""
MAX_TOTAL_BYTES = 256 * MiB
"""Most bytes a tree may hold in all, unpacked (Jool 4.2 unpacks to 5.7 MB; a built checkout to some tens of MB)."""
MAX_DEPTH = 32
"""Most directories a file may lie below the tree's top (Jool's deepest file lies 6 directories down)."""
MAX_PATH_CHARS = 1024
"""Longest path of a member inside the tree, in characters (Jool's longest has 82)."""
MAX_ARCHIVE_BYTES = 64 * MiB
"""Largest archive read or downloaded, compressed (Jool 4.2's release archive has 1.3 MB)."""
MAX_HEADER_BYTES = 1 * MiB
"""Largest extended tar header (pax, GNU long name) read into memory (a git archive writes one of 52 bytes)."""
CHUNK = 1 * MiB
"""Bytes read at once from any file or stream (nothing is read whole)."""

_SHOWN = 60
"""A name from a tree or an archive is shown cut to this many characters."""


class SourceTreeError(ValueError):
    """A tree or an archive over a limit, holding what a source tree does not, or unreadable (one line)."""


@dataclass
class TreeStats:
    """What a copy or an unpacking has taken so far, checked against the limits at every step."""

    members: int = 0
    """Files, directories and links taken."""
    total_bytes: int = 0
    """Bytes of the files taken."""

    def member(self, name: str, depth: int) -> None:
        """Count one more member at ``depth`` (directories above it); SourceTreeError over a limit."""
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise SourceTreeError(
                f"holds more than {MAX_MEMBERS:,} files and directories (the limit; a Jool 4.2 source has about"
                " 1,250): not unpacked further"
            )
        if len(name) > MAX_PATH_CHARS:
            raise SourceTreeError(
                f"a member's path has {len(name):,} characters, more than the limit of {MAX_PATH_CHARS:,}"
                " (Jool's longest has 82)"
            )
        if depth > MAX_DEPTH:
            raise SourceTreeError(
                f"{shown(name)} lies {depth:,} directories deep, more than the limit of {MAX_DEPTH} (Jool's deepest"
                " file lies 6 deep)"
            )

    def data(self, name: str, size: int) -> None:
        """Count ``size`` more bytes of file data; SourceTreeError when the tree would exceed
        :data:`MAX_TOTAL_BYTES`."""
        self.total_bytes += size
        if self.total_bytes > MAX_TOTAL_BYTES:
            raise SourceTreeError(
                f"unpacks to more than {MAX_TOTAL_BYTES // MiB} MiB (the limit; a Jool 4.2 source has 5.7 MB): stopped"
                f" at {shown(name)}"
            )


def shown(name: str) -> str:
    """A member's name as an error shows it: quoted, control characters escaped, cut to 60 characters."""
    text = repr(name)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 4] + "...'"


def _depth(rel: str) -> int:
    """Directories above a member (``a/b/c``: 2); ``.`` and empty parts do not count."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    return max(len(parts) - 1, 0)


_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


def _unreadable(name: str, exc: OSError) -> SourceTreeError:
    return SourceTreeError(f"{shown(name)} cannot be read: {exc.strerror or type(exc).__name__}")


def _refused(name: str, kind: str) -> SourceTreeError:
    return SourceTreeError(
        f"{shown(name)} is {kind}: a source tree holds regular files, directories and links within itself only"
    )


# ------------------------------------------------------------------------------------------------ directory trees
def copy_tree(src: Path, dest: Path, skip: frozenset[str] = frozenset()) -> TreeStats:
    """Copy the directory ``src`` into the new directory ``dest``: regular files in chunks (their executable bits
    and times kept), directories, and links that stay inside ``src`` (as links); names in ``skip`` are left out
    wherever they are. SourceTreeError for anything else or over a limit; nothing outside ``src`` is read."""
    stats = TreeStats()
    dest.mkdir(parents=True)
    stack: list[tuple[Path, Path, str]] = [(src, dest, "")]
    while stack:
        here, there, rel = stack.pop()
        try:
            with os.scandir(here) as entries:
                names = sorted(e.name for e in entries if e.name not in skip)
        except OSError as exc:
            raise _unreadable(rel or ".", exc) from None
        for name in names:
            child_rel = f"{rel}/{name}" if rel else name
            stats.member(child_rel, _depth(child_rel))
            source, target = here / name, there / name
            try:
                info = os.lstat(source)
            except OSError as exc:
                raise _unreadable(child_rel, exc) from None
            if stat.S_ISDIR(info.st_mode):
                target.mkdir()
                stack.append((source, target, child_rel))
            elif stat.S_ISLNK(info.st_mode):
                _copy_link(source, target, child_rel)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(source, target, child_rel, info, stats)
            else:
                raise _refused(child_rel, _KINDS.get(stat.S_IFMT(info.st_mode), "no regular file"))
    return stats


def _copy_link(source: Path, target: Path, rel: str) -> None:
    """Copy the link ``source`` as a link when it leads to a place inside the tree (``rel``: its path in it)."""
    try:
        to = os.readlink(source)
    except OSError as exc:
        raise _unreadable(rel, exc) from None
    if not _inside(rel, to):
        raise SourceTreeError(f"{shown(rel)} is a link leading outside the tree: a source tree holds its own files")
    os.symlink(to, target)


def _inside(rel: str, to: str) -> bool:
    """Whether a link at ``rel`` (a path inside a tree) pointing at ``to`` stays inside the tree."""
    if os.path.isabs(to):
        return False
    joined = os.path.normpath(os.path.join(os.path.dirname(rel), to))
    return joined != ".." and not joined.startswith("../")


def _copy_file(source: Path, target: Path, rel: str, info: os.stat_result, stats: TreeStats) -> None:
    """Copy the regular file ``source`` in chunks, counting its bytes (a file that grew counts as it is read)."""
    stats.data(rel, info.st_size)  # its stated size first: a sparse file of terabytes is refused unread
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _unreadable(rel, exc) from None
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise SourceTreeError(f"{shown(rel)} was replaced while it was copied")
        read, counted = 0, info.st_size
        with open(target, "xb") as out:
            while chunk := _read(f, rel):
                read += len(chunk)
                if read > counted:  # it grows while it is copied: counted as it grows
                    stats.data(rel, read - counted)
                    counted = read
                out.write(chunk)
    os.chmod(target, 0o644 | (info.st_mode & 0o111))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def _read(f: IO[bytes], rel: str) -> bytes:
    try:
        return f.read(CHUNK)
    except OSError as exc:
        raise _unreadable(rel, exc) from None


# ------------------------------------------------------------------------------------------------ archives
class _Bounded:
    """A read-only stream that refuses to hand out more than ``limit`` bytes (a decompression bomb stops there)."""

    def __init__(self, raw: IO[bytes], limit: int, what: str) -> None:
        self.raw = raw
        self.limit = limit
        self.what = what
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        want = self.limit + 1 - self.count if size is None or size < 0 else min(size, self.limit + 1 - self.count)
        data = self.raw.read(max(want, 0))
        self.count += len(data)
        if self.count > self.limit:
            raise SourceTreeError(self.what)
        return data


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header that refuses an extended header (pax, GNU long name) larger than :data:`MAX_HEADER_BYTES`
    before tarfile reads it into memory."""

    _EXTENDED = (
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
    )

    def _proc_member(self, tarfile: tarfile.TarFile) -> Any:  # tarfile's own hook for every header it reads
        if self.type in self._EXTENDED and self.size > MAX_HEADER_BYTES:
            raise SourceTreeError(
                f"an extended tar header of {self.size:,} bytes, more than the limit of {MAX_HEADER_BYTES // MiB} MiB"
            )
        return super()._proc_member(tarfile)  # type: ignore[misc]


_MAGIC: tuple[tuple[bytes, Any], ...] = (
    (b"\x1f\x8b", gzip.GzipFile),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)


@contextlib.contextmanager
def _decompressed(f: IO[bytes]) -> Iterator[IO[bytes]]:
    """The tar stream of the archive ``f`` (gzip, bzip2, xz or none), read no further than the tree's limits
    allow."""
    head = f.read(6)
    f.seek(0)
    opener = next((o for magic, o in _MAGIC if head.startswith(magic)), None)
    stream: IO[bytes] = opener(fileobj=f, mode="rb") if opener is not None else f
    # the members' data, their headers (512 bytes each, and padding) and the end-of-archive blocks
    limit = MAX_TOTAL_BYTES + (MAX_MEMBERS + 2) * 1536 + MAX_HEADER_BYTES
    what = f"unpacks to more than {limit // MiB} MiB of tar data (the limit; a Jool 4.2 archive has 6.7 MB)"
    try:
        yield _Bounded(stream, limit, what)  # type: ignore[misc]
    finally:
        if stream is not f:
            stream.close()


def unpack_archive(archive: Path, dest: Path) -> TreeStats:
    """Unpack the tar archive ``archive`` (gzip, bzip2, xz or plain) into the new directory ``dest`` within the
    limits: regular files, directories and links inside ``dest`` only (tarfile's ``data`` filter: no absolute
    path, no ``..``, no device, FIFO or link leading outside). SourceTreeError naming the member and the limit,
    or what is wrong with the archive.

    The archive is read twice: first its headers alone, each member checked and counted (nothing is written, so
    an archive over a limit leaves nothing behind and costs no more than reading it), then once more to unpack it,
    every member checked again as it is written.
    """
    _read_archive(archive, None)
    dest.mkdir(parents=True)
    return _read_archive(archive, dest)


def _read_archive(archive: Path, dest: Path | None) -> TreeStats:
    """Check every member of ``archive`` and, with ``dest``, unpack it there."""
    stats = TreeStats()
    try:
        with (
            open(archive, "rb") as f,
            _decompressed(f) as stream,
            tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedTarInfo) as tar,
        ):
            for member in tar:  # (its headers are kept, at most MAX_MEMBERS of them: hard links need them)
                _take(member, stats)
                if dest is None:
                    tarfile.data_filter(member, _NOWHERE)
                else:
                    tar.extract(member, dest, filter="data")
    except SourceTreeError:
        raise
    except tarfile.FilterError as exc:
        raise SourceTreeError(f"{shown(exc.tarinfo.name)}: {_filter_problem(exc)}") from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise SourceTreeError(f"not a readable tar archive ({type(exc).__name__})") from None
    except OSError as exc:
        raise SourceTreeError(f"cannot be unpacked: {exc.strerror or type(exc).__name__}") from None
    return stats


_NOWHERE = "/nonexistent/natbench-archive-check"
"""The destination the first reading checks members against (paths only: nothing is written there)."""


def _take(member: tarfile.TarInfo, stats: TreeStats) -> None:
    """Count one member; SourceTreeError for a type a source tree does not hold or over a limit."""
    stats.member(member.name, _depth(member.name))
    if member.isreg():
        stats.data(member.name, member.size)
    elif not (member.isdir() or member.issym() or member.islnk()):
        kind = {
            tarfile.CHRTYPE: "a character device",
            tarfile.BLKTYPE: "a block device",
            tarfile.FIFOTYPE: "a FIFO",
        }.get(member.type, f"a member of tar type {member.type!r}")
        raise _refused(member.name, kind)


def _filter_problem(exc: tarfile.FilterError) -> str:
    if isinstance(exc, tarfile.AbsolutePathError):
        return "an absolute path: a source tree's members lie inside it"
    if isinstance(exc, tarfile.OutsideDestinationError):
        return "leads outside the tree (..): a source tree's members lie inside it"
    if isinstance(exc, tarfile.LinkOutsideDestinationError | tarfile.AbsoluteLinkError):
        return "a link leading outside the tree: a source tree holds its own files"
    if isinstance(exc, tarfile.SpecialFileError):
        return "a device node or FIFO: a source tree holds regular files, directories and links within itself only"
    return "refused by tarfile's data filter (an unsafe member)"


# ------------------------------------------------------------------------------------------------ digests, reads
def file_digest(path: Path, what: str | None = None) -> str:
    """SHA-256 (hex) of the regular file ``path``, read in chunks; SourceTreeError when it cannot be read."""
    h = hashlib.sha256()
    name = what or path.name
    try:
        with open(path, "rb") as f:
            while chunk := _read(f, name):
                h.update(chunk)
    except OSError as exc:
        raise _unreadable(name, exc) from None
    return h.hexdigest()


def tree_digest(root: Path, skip: frozenset[str] = frozenset()) -> str:
    """SHA-256 over every file and link under ``root`` (names in ``skip`` left out): sorted relative paths,
    executable bit, content (links: their target). Directories count through what they hold. Walked without
    recursion, files read in chunks; the limits hold here too (SourceTreeError), and anything but a regular file,
    a directory or a link is refused."""
    try:
        return _digest(root, skip)
    except OSError as exc:
        raise SourceTreeError(f"cannot be read: {exc.strerror or type(exc).__name__}") from None


def _digest(root: Path, skip: frozenset[str]) -> str:
    entries: list[tuple[str, Path, os.stat_result]] = []
    stats = TreeStats()
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        here, rel = stack.pop()
        with os.scandir(here) as found:
            names = [e.name for e in found if e.name not in skip]
        for name in names:
            child_rel = f"{rel}/{name}" if rel else name
            stats.member(child_rel, _depth(child_rel))
            info = os.lstat(here / name)
            if stat.S_ISDIR(info.st_mode):
                stack.append((here / name, child_rel))
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                entries.append((child_rel, here / name, info))
            else:
                raise _refused(child_rel, _KINDS.get(stat.S_IFMT(info.st_mode), "no regular file"))
    h = hashlib.sha256()
    for rel, path, info in sorted(entries, key=lambda e: e[0]):
        if stat.S_ISLNK(info.st_mode):
            kind, body = b"l", os.readlink(path).encode()
        else:
            stats.data(rel, info.st_size)
            kind = b"x" if info.st_mode & 0o111 else b"f"
            body = file_digest(path, rel).encode()
        h.update(kind + b" " + rel.encode() + b"\0" + body + b"\n")
    return h.hexdigest()


def read_head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of the regular file ``path`` as text (undecodable bytes replaced): enough of a
    configure.ac or a header for the lines natbench looks for, never the whole of a hostile file."""
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError as exc:
        raise _unreadable(path.name, exc) from None
