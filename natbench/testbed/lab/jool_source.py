"""Jool's source for an image built from source (``natbench lab image build jool-mapt``).

MAP-T exists only in Jool's 4.2 release candidates, which no Debian package holds, so the
``jool-mapt`` image compiles Jool itself. :func:`resolve_source` turns what the user gave (a source
tree, a release tarball, a URL, or nothing: the pinned public v4.2.0-rc3 archive) into an unpacked
tree in a scratch directory, checked to be a Jool with MAP-T, with its :func:`tree_digest`: the
content hash that goes into the image's cache key. The digest covers the files, not the
packaging, so the same release as a tarball, as GitHub's archive or as an unpacked tree has one
digest and one cached image.

The default archive is pinned twice: by the SHA-256 of the ``.tar.gz`` file as GitHub's tag
archives are made (``git archive --prefix=Jool-4.2.0-rc3/ v4.2.0-rc3 | gzip -cn``) and by the
digest of its tree, so a download whose compression differs but whose content is the release still
passes; anything else is refused.

Whatever is given is read within the limits of :mod:`~natbench.testbed.lab.source_tree` (members, bytes,
depth, file types; the download and the archive by size), and every problem is one :class:`JoolSourceError`
naming ``--jool-source``, the source and the limit. A password in a URL (``https://user:password@host/...``) is
sent as HTTP Basic authentication and never shown: progress lines, errors and the image manifest hold the URL with
``***`` in its place (:mod:`natbench.config.redact`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path

from natbench.config.paths import path_problem, pseudo_root
from natbench.config.redact import redact_credentials, split_credentials
from natbench.testbed.lab.host import LabError
from natbench.testbed.lab.source_tree import (
    CHUNK,
    MAX_ARCHIVE_BYTES,
    MiB,
    SourceTreeError,
    copy_tree,
    file_digest,
    read_head,
    unpack_archive,
)
from natbench.testbed.lab.source_tree import tree_digest as _tree_digest

DOWNLOAD_TIMEOUT = 60.0
"""Seconds a download may stall before it counts as no network."""


class JoolSourceError(LabError):
    """The Jool source cannot be had or is not a Jool with MAP-T (a user error: exit status 2)."""


@dataclass(frozen=True)
class SourcePin:
    """A release archive natbench downloads by default, and the hashes it must have."""

    release: str
    """Jool's release name (``AC_INIT`` of its configure.ac), e.g. ``4.2.0-rc3``."""
    url: str
    """Where the archive is downloaded from."""
    sha256: str
    """SHA-256 of the archive file."""
    tree: str
    """:func:`tree_digest` of the unpacked archive (accepted when only the compression differs)."""


DEFAULT_SOURCE = SourcePin(
    release="4.2.0-rc3",
    url="https://github.com/NICMx/Jool/archive/refs/tags/v4.2.0-rc3.tar.gz",
    sha256="2c8699b67f58c902db52f5ee99600a17621ecc3c3f63215e4ba9da596f6fe242",
    tree="1b257fd358640a11777af6274d1cc0862cf6954efadfa7b54218a616c1a54601",
)
"""The public Jool v4.2.0-rc3 tag archive (MAP-T; ``jool_mapt --version`` 4.1.255.5)."""


@dataclass(frozen=True)
class JoolSource:
    """An unpacked, checked Jool source tree and where it came from."""

    origin: str
    """What was given: a path, a URL, or the default URL."""
    tree: Path
    """The unpacked tree (holds ``dkms.conf``, ``configure.ac``, ``src/mod/mapt``)."""
    digest: str
    """:func:`tree_digest` of :attr:`tree`: part of the image's cache key."""
    release: str
    """Jool's release name from configure.ac (``4.2.0-rc3``)."""
    archive_sha256: str | None = None
    """SHA-256 of the archive file when the source was one."""

    def as_dict(self) -> dict[str, str | None]:
        """What an image manifest records about its source."""
        return {
            "origin": self.origin,
            "release": self.release,
            "tree_sha256": self.digest,
            "archive_sha256": self.archive_sha256,
        }


_SKIP = frozenset({".git", "dkms.package_version.conf"})
"""Names left out of the digest and the copy: a checkout's git data and DKMS's generated version file."""

MAX_HEAD_BYTES = 1 * MiB
"""How much of configure.ac or xlat.h is read for the lines natbench looks for (Jool's have a few kB)."""


def tree_digest(root: Path) -> str:
    """SHA-256 over every file and symlink under ``root``: sorted relative paths, executable bit, content
    (symlinks: their target). Directories count through what they hold; ``.git`` is left out. Within the limits
    of :mod:`~natbench.testbed.lab.source_tree` (JoolSourceError beyond them)."""
    try:
        return _tree_digest(root, _SKIP)
    except SourceTreeError as exc:
        raise JoolSourceError(f"{root}: {exc}") from None


def check_tree(tree: Path, shown: str | None = None) -> str:
    """Jool's release name (configure.ac's ``AC_INIT``) if ``tree`` is a Jool source with MAP-T, else an error
    (``shown``: how the error names the source; default the tree's path)."""
    where = shown or str(tree)
    missing = [p for p in ("configure.ac", "dkms.conf", "src/common/xlat.h") if not (tree / p).is_file()]
    if missing:
        raise JoolSourceError(f"{where} is not a Jool source tree (no {missing[0]})")
    if not (tree / "src/mod/mapt").is_dir() or not (tree / "src/usr/mapt").is_dir():
        raise JoolSourceError(
            f"{where}: this Jool has no MAP-T (no src/mod/mapt): MAP-T exists only in Jool's 4.2 release candidates"
        )
    found = re.search(r"AC_INIT\(\[Jool\],\s*\[([^\]]+)\]", _head(tree / "configure.ac"))
    if not found:
        raise JoolSourceError(f"{where}: configure.ac has no AC_INIT([Jool], [VERSION]) line")
    return found.group(1)


def dkms_version(tree: Path) -> str:
    """The version DKMS gives the tree (its dkms.conf: ``JOOL_VERSION_MAJOR.MINOR.REV`` of xlat.h)."""
    text = _head(tree / "src/common/xlat.h")
    parts = []
    for name in ("MAJOR", "MINOR", "REV"):
        m = re.search(rf"^#define\s+JOOL_VERSION_{name}\s+(\d+)", text, re.M)
        if not m:
            raise JoolSourceError(f"{tree / 'src/common/xlat.h'}: no JOOL_VERSION_{name}")
        parts.append(m.group(1))
    return ".".join(parts)


def _head(path: Path) -> str:
    try:
        return read_head(path, MAX_HEAD_BYTES)
    except SourceTreeError as exc:
        raise JoolSourceError(f"{path.parent}: {exc}") from None


Fetcher = Callable[[str, Path], None]
"""Downloads a URL into a file (raises OSError when it cannot; SourceTreeError when it is larger than
:data:`~natbench.testbed.lab.source_tree.MAX_ARCHIVE_BYTES`)."""


def _urlopen_fetch(url: str, dest: Path) -> None:
    """Download ``url`` into ``dest`` in chunks, at most :data:`MAX_ARCHIVE_BYTES` (credentials in the URL go in
    an ``Authorization`` header)."""
    bare, auth = split_credentials(url)
    request = urllib.request.Request(bare, headers={"Authorization": auth} if auth else {})
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as resp, dest.open("wb") as out:
        size = 0
        while chunk := resp.read(CHUNK):
            size += len(chunk)
            if size > MAX_ARCHIVE_BYTES:
                raise SourceTreeError(_too_large())
            out.write(chunk)


def _too_large() -> str:
    return f"larger than {MAX_ARCHIVE_BYTES // MiB} MiB (the limit for an archive; Jool 4.2's has 1.3 MB)"


def _offline(url: str, why: object) -> JoolSourceError:
    return JoolSourceError(
        f"cannot download the Jool source {url} ({redact_credentials(str(why))}); without a network give a local"
        " copy with --jool-source PATH (a Jool 4.2 source tree or release tarball)"
    )


def resolve_source(given: str | os.PathLike[str] | None, work: Path, *, fetch: Fetcher | None = None) -> JoolSource:
    """Unpack and check the Jool source ``given`` (directory, tarball, http(s) URL; None: the pinned default)
    into ``work``; raises :class:`JoolSourceError` naming ``--jool-source`` when it cannot be had."""
    fetch = fetch or _urlopen_fetch
    work.mkdir(parents=True, exist_ok=True)
    text = os.fspath(given) if given is not None else None
    if text is None or re.match(r"https?://", text, re.IGNORECASE):
        return _from_url(text, work, fetch)
    problem = path_problem(text)
    if problem is not None:
        raise JoolSourceError(f"--jool-source: the path is {problem}")
    shown = redact_credentials(text)
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~user of no such user
        raise JoolSourceError(f"--jool-source {shown}: no such user's home directory (~)") from None
    pseudo = pseudo_root(path)
    if pseudo is not None:
        raise JoolSourceError(
            f"--jool-source {shown}: leads into {pseudo} (a view of the kernel, not data): not a source tree or archive"
        )
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise JoolSourceError(f"--jool-source {shown}: no such file or directory") from None
    except OSError as exc:
        raise JoolSourceError(f"--jool-source {shown}: cannot be read: {exc.strerror or type(exc).__name__}") from None
    if stat.S_ISDIR(info.st_mode):
        tree = work / "jool"
        _remove(tree)
        try:
            copy_tree(path, tree, _SKIP)
        except SourceTreeError as exc:
            raise JoolSourceError(f"--jool-source {shown}: {exc}") from None
        release = check_tree(tree, f"--jool-source {shown}")
        return JoolSource(str(path.resolve()), tree, tree_digest(tree), release)
    if stat.S_ISREG(info.st_mode):
        return _from_archive(path, work, origin=str(path.resolve()), shown=shown)
    kind = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(info.st_mode), "a device")
    raise JoolSourceError(f"--jool-source {shown}: is {kind}, not a source tree or an archive")


def _from_url(text: str | None, work: Path, fetch: Fetcher) -> JoolSource:
    """Download the archive at ``text`` (None: the pinned default) and unpack it."""
    url = text or DEFAULT_SOURCE.url
    shown = redact_credentials(url)
    archive = work / "jool-source.tar.gz"
    try:
        fetch(url, archive)
    except SourceTreeError as exc:
        raise JoolSourceError(f"--jool-source {shown}: {exc}") from None
    except (OSError, urllib.error.URLError, HTTPException) as exc:
        raise _offline(shown, getattr(exc, "reason", None) or exc) from None
    except ValueError as exc:  # a URL urllib cannot parse (a bad port, a blank, an unclosed IPv6 bracket)
        raise JoolSourceError(f"--jool-source {shown}: not a valid URL ({redact_credentials(str(exc))})") from None
    src = _from_archive(archive, work, origin=shown, shown=shown)
    if text is None and src.archive_sha256 != DEFAULT_SOURCE.sha256 and src.digest != DEFAULT_SOURCE.tree:
        raise JoolSourceError(
            f"{url}: sha256 {src.archive_sha256} (tree {src.digest}) is not the pinned v{DEFAULT_SOURCE.release}"
            f" archive ({DEFAULT_SOURCE.sha256}); refusing it"
        )
    return src


def _remove(path: Path) -> None:
    """Remove a scratch tree natbench made (within the limits, so no deeper than a tree may be)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _from_archive(archive: Path, work: Path, *, origin: str, shown: str) -> JoolSource:
    """Unpack and check the archive ``archive`` (``origin``: what the manifest records, ``shown``: what errors
    show)."""
    size = os.stat(archive).st_size
    if size > MAX_ARCHIVE_BYTES:
        raise JoolSourceError(f"--jool-source {shown}: {_too_large()}")
    unpacked = work / "unpacked"
    _remove(unpacked)
    try:
        sha = file_digest(archive)
        unpack_archive(archive, unpacked)
    except SourceTreeError as exc:
        raise JoolSourceError(f"--jool-source {shown}: {exc}") from None
    tops = list(unpacked.iterdir())
    tree = tops[0] if len(tops) == 1 and tops[0].is_dir() and not tops[0].is_symlink() else unpacked
    release = check_tree(tree, f"--jool-source {shown}")
    return JoolSource(origin, tree, tree_digest(tree), release, sha)
