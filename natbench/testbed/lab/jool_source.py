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
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from natbench.testbed.lab.host import LabError

__all__ = [
    "DEFAULT_SOURCE",
    "JoolSource",
    "JoolSourceError",
    "SourcePin",
    "check_tree",
    "dkms_version",
    "resolve_source",
    "tree_digest",
]

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


def tree_digest(root: Path) -> str:
    """SHA-256 over every file and symlink under ``root``: sorted relative paths, executable bit, content
    (symlinks: their target). Directories count through what they hold; ``.git`` is left out."""
    h = hashlib.sha256()
    for path in sorted(_walk(root), key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root).as_posix()
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            kind, body = b"l", os.readlink(path).encode()
        else:
            kind = b"x" if st.st_mode & 0o111 else b"f"
            body = hashlib.sha256(path.read_bytes()).hexdigest().encode()
        h.update(kind + b" " + rel.encode() + b"\0" + body + b"\n")
    return h.hexdigest()


def _walk(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP]
        base = Path(dirpath)
        out += [base / f for f in filenames if f not in _SKIP]
        out += [base / d for d in dirnames if (base / d).is_symlink()]
    return out


def check_tree(tree: Path) -> str:
    """Jool's release name (configure.ac's ``AC_INIT``) if ``tree`` is a Jool source with MAP-T, else an error."""
    missing = [p for p in ("configure.ac", "dkms.conf", "src/common/xlat.h") if not (tree / p).is_file()]
    if missing:
        raise JoolSourceError(f"{tree} is not a Jool source tree (no {missing[0]})")
    if not (tree / "src/mod/mapt").is_dir() or not (tree / "src/usr/mapt").is_dir():
        raise JoolSourceError(
            f"{tree}: this Jool has no MAP-T (no src/mod/mapt): MAP-T exists only in Jool's 4.2 release candidates"
        )
    found = re.search(r"AC_INIT\(\[Jool\],\s*\[([^\]]+)\]", (tree / "configure.ac").read_text(errors="replace"))
    if not found:
        raise JoolSourceError(f"{tree / 'configure.ac'}: no AC_INIT([Jool], [VERSION]) line")
    return found.group(1)


def dkms_version(tree: Path) -> str:
    """The version DKMS gives the tree (its dkms.conf: ``JOOL_VERSION_MAJOR.MINOR.REV`` of xlat.h)."""
    text = (tree / "src/common/xlat.h").read_text(errors="replace")
    parts = []
    for name in ("MAJOR", "MINOR", "REV"):
        m = re.search(rf"^#define\s+JOOL_VERSION_{name}\s+(\d+)", text, re.M)
        if not m:
            raise JoolSourceError(f"{tree / 'src/common/xlat.h'}: no JOOL_VERSION_{name}")
        parts.append(m.group(1))
    return ".".join(parts)


Fetcher = Callable[[str, Path], None]
"""Downloads a URL into a file (raises OSError when it cannot)."""


def _urlopen_fetch(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp, dest.open("wb") as out:
        shutil.copyfileobj(resp, out, 1 << 20)


def _offline(url: str, why: object) -> JoolSourceError:
    return JoolSourceError(
        f"cannot download the Jool source {url} ({why}); without a network give a local copy with"
        " --jool-source PATH (a Jool 4.2 source tree or release tarball)"
    )


def resolve_source(given: str | os.PathLike[str] | None, work: Path, *, fetch: Fetcher | None = None) -> JoolSource:
    """Unpack and check the Jool source ``given`` (directory, tarball, http(s) URL; None: the pinned default)
    into ``work``; raises :class:`JoolSourceError` naming ``--jool-source`` when it cannot be had."""
    fetch = fetch or _urlopen_fetch
    work.mkdir(parents=True, exist_ok=True)
    text = os.fspath(given) if given is not None else None
    if text is None or re.match(r"https?://", text):
        url = text or DEFAULT_SOURCE.url
        archive = work / "jool-source.tar.gz"
        try:
            fetch(url, archive)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            raise _offline(url, getattr(exc, "reason", None) or exc) from None
        src = _from_archive(archive, work, origin=url)
        if text is None and src.archive_sha256 != DEFAULT_SOURCE.sha256 and src.digest != DEFAULT_SOURCE.tree:
            raise JoolSourceError(
                f"{url}: sha256 {src.archive_sha256} (tree {src.digest}) is not the pinned v{DEFAULT_SOURCE.release}"
                f" archive ({DEFAULT_SOURCE.sha256}); refusing it"
            )
        return src
    path = Path(text).expanduser()
    if path.is_dir():
        tree = work / "jool"
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(path, tree, symlinks=True, ignore=shutil.ignore_patterns(*_SKIP))
        release = check_tree(tree)
        return JoolSource(str(path.resolve()), tree, tree_digest(tree), release)
    if path.is_file():
        return _from_archive(path, work, origin=str(path.resolve()))
    raise JoolSourceError(f"--jool-source {text}: no such file or directory")


def _from_archive(archive: Path, work: Path, *, origin: str) -> JoolSource:
    sha = hashlib.sha256()
    with archive.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    unpacked = work / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir()
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise JoolSourceError(f"{origin}: not a readable tar archive ({exc})") from None
    tops = list(unpacked.iterdir())
    tree = tops[0] if len(tops) == 1 and tops[0].is_dir() else unpacked
    release = check_tree(tree)
    return JoolSource(origin, tree, tree_digest(tree), release, sha.hexdigest())
