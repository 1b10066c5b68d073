"""The jool-mapt image's source handling (no build, no root, no network): unpacking and checking a Jool
source given as a tree, a tarball or a URL, its digest in the cache key, the pinned default, the
one-line offline error naming --jool-source, and the chroot build script.

The Jool trees here are small stand-ins with Jool's layout (configure.ac, dkms.conf, xlat.h, the
MAP-T directories); the real source is compiled by the ``vm`` tests (tests/test_vm_mapt.py).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from natbench.cli import cli
from natbench.testbed.lab import jool_source, source_tree, vm_image
from natbench.testbed.lab.jool_build import build_script, install_source
from natbench.testbed.lab.jool_source import (
    DEFAULT_SOURCE,
    JoolSourceError,
    check_tree,
    dkms_version,
    resolve_source,
    tree_digest,
)
from natbench.testbed.lab.vm_image import IMAGES, build_image, find_image, recipe_key


def fake_jool(root: Path, release: str = "4.2.0-rc9", *, mapt: bool = True) -> Path:
    """A directory with Jool's source layout (nothing compilable)."""
    (root / "src/common").mkdir(parents=True)
    (root / "configure.ac").write_text(f"AC_INIT([Jool], [{release}], [someone@example.org])\n")
    (root / "dkms.conf").write_text('PACKAGE_NAME="jool"\n')
    (root / "src/common/xlat.h").write_text(
        "#define JOOL_VERSION_MAJOR 4\n#define JOOL_VERSION_MINOR 1\n#define JOOL_VERSION_REV 255\n"
        "#define JOOL_VERSION_DEV 9\n"
    )
    if mapt:
        (root / "src/mod/mapt").mkdir(parents=True)
        (root / "src/mod/mapt/Kbuild").write_text("obj-m += jool_mapt.o\n")
        (root / "src/usr/mapt").mkdir(parents=True)
    (root / "autogen.sh").write_text("#!/bin/sh\n")
    (root / "autogen.sh").chmod(0o755)
    return root


def tarball(tree: Path, dest: Path, prefix: str = "Jool-4.2.0-rc9") -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(tree, arcname=prefix)
    return dest


def test_tree_and_its_tarball_have_one_digest(tmp_path: Path) -> None:
    tree = fake_jool(tmp_path / "tree")
    archive = tarball(tree, tmp_path / "jool.tar.gz")
    from_dir = resolve_source(tree, tmp_path / "w1")
    from_tar = resolve_source(str(archive), tmp_path / "w2")
    assert from_dir.release == from_tar.release == "4.2.0-rc9"
    assert from_dir.digest == from_tar.digest == tree_digest(tree)
    assert (
        from_dir.archive_sha256 is None and from_tar.archive_sha256 is not None and len(from_tar.archive_sha256) == 64
    )
    assert (from_tar.tree / "src/mod/mapt/Kbuild").is_file()
    assert from_tar.as_dict()["origin"] == str(archive.resolve())


def test_digest_follows_content_and_mode_not_git(tmp_path: Path) -> None:
    tree = fake_jool(tmp_path / "tree")
    before = tree_digest(tree)
    (tree / ".git").mkdir()
    (tree / ".git/HEAD").write_text("ref: refs/heads/mapt\n")
    (tree / "dkms.package_version.conf").write_text("PACKAGE_VERSION=4.1.255\n")
    assert tree_digest(tree) == before  # a checkout's git data and DKMS's generated file do not count
    (tree / "autogen.sh").chmod(0o644)
    assert tree_digest(tree) != before
    (tree / "autogen.sh").chmod(0o755)
    assert tree_digest(tree) == before
    (tree / "src/mod/mapt/Kbuild").write_text("obj-m += jool_mapt.o # patched\n")
    assert tree_digest(tree) != before


def test_a_source_without_mapt_or_not_jool_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JoolSourceError, match=r"has no MAP-T .*4.2 release candidates"):
        check_tree(fake_jool(tmp_path / "old", "4.1.9", mapt=False))
    (tmp_path / "empty").mkdir()
    with pytest.raises(JoolSourceError, match=r"is not a Jool source tree \(no configure\.ac\)"):
        resolve_source(tmp_path / "empty", tmp_path / "w")
    with pytest.raises(JoolSourceError, match=r"--jool-source .*nowhere: no such file or directory"):
        resolve_source(tmp_path / "nowhere", tmp_path / "w")
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(JoolSourceError, match="not a readable tar archive"):
        resolve_source(tmp_path / "junk.tar.gz", tmp_path / "w")


def test_dkms_version_is_that_of_the_tree_dkms_conf(tmp_path: Path) -> None:
    assert dkms_version(fake_jool(tmp_path / "t")) == "4.1.255"


def _offline(url: str, dest: Path) -> None:
    raise OSError(-2, "Name or service not known")


def test_offline_without_source_is_one_line_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(JoolSourceError) as err:
        resolve_source(None, tmp_path, fetch=_offline)
    msg = str(err.value)
    assert "\n" not in msg
    assert DEFAULT_SOURCE.url in msg and "--jool-source PATH" in msg


def test_default_download_must_match_the_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = fake_jool(tmp_path / "tree")
    archive = tarball(tree, tmp_path / "jool.tar.gz")

    def serve(url: str, dest: Path) -> None:
        assert url == DEFAULT_SOURCE.url
        dest.write_bytes(archive.read_bytes())

    with pytest.raises(JoolSourceError, match=r"is not the pinned v4\.2\.0-rc3 archive"):
        resolve_source(None, tmp_path / "w1", fetch=serve)
    # the same content compressed differently (its tree digest is pinned too) is accepted
    pinned = dataclasses.replace(DEFAULT_SOURCE, tree=tree_digest(tree))
    monkeypatch.setattr(jool_source, "DEFAULT_SOURCE", pinned)
    got = resolve_source(None, tmp_path / "w2", fetch=serve)
    assert got.origin == DEFAULT_SOURCE.url and got.digest == pinned.tree


def test_an_explicit_url_is_downloaded_and_unpacked(tmp_path: Path) -> None:
    archive = tarball(fake_jool(tmp_path / "tree"), tmp_path / "jool.tar.gz")
    seen = []

    def serve(url: str, dest: Path) -> None:
        seen.append(url)
        dest.write_bytes(archive.read_bytes())

    got = resolve_source("https://example.org/jool.tar.gz", tmp_path / "w", fetch=serve)
    assert seen == ["https://example.org/jool.tar.gz"] and got.release == "4.2.0-rc9"
    with pytest.raises(JoolSourceError, match=r"cannot download .*example\.org.*--jool-source PATH"):
        resolve_source("https://example.org/jool.tar.gz", tmp_path / "w3", fetch=_offline)


def test_cache_key_holds_the_source_digest_and_jool_key_is_unchanged() -> None:
    mapt, jool = IMAGES["jool-mapt"], IMAGES["jool"]
    assert recipe_key(mapt) == recipe_key(mapt, DEFAULT_SOURCE.tree)
    assert recipe_key(mapt, "a" * 64) != recipe_key(mapt, "b" * 64) != recipe_key(mapt)
    assert recipe_key(jool, "a" * 64) == recipe_key(jool)  # packages only: no source in its key
    assert "jool_mapt" in mapt.modules and "jool-dkms" not in mapt.packages and "dkms" in mapt.packages


def _fake_built(cache: Path, digest: str, built: str) -> Path:
    key = recipe_key(IMAGES["jool-mapt"], digest)
    path = cache / f"jool-mapt-{key}"
    path.mkdir(parents=True)
    sizes = {}
    for name in vm_image._IMAGE_FILES:
        (path / name).write_text(f"{name}\n")
        sizes[name] = (path / name).stat().st_size
    manifest = {"name": "jool-mapt", "key": key, "sizes": sizes, "built": built, "source": {"tree_sha256": digest}}
    (path / vm_image.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_find_image_by_source_then_newest_of_any_source(tmp_path: Path) -> None:
    assert find_image("jool-mapt", cache=tmp_path) is None
    older = _fake_built(tmp_path, "a" * 64, "2026-01-01T00:00:00Z")
    newer = _fake_built(tmp_path, "b" * 64, "2026-02-01T00:00:00Z")
    assert find_image("jool-mapt", cache=tmp_path, source_digest="a" * 64).path == older  # type: ignore[union-attr]
    assert find_image("jool-mapt", cache=tmp_path, source_digest="c" * 64) is None
    assert find_image("jool-mapt", cache=tmp_path).path == newer  # type: ignore[union-attr]
    default = _fake_built(tmp_path, DEFAULT_SOURCE.tree, "2025-01-01T00:00:00Z")
    assert find_image("jool-mapt", cache=tmp_path).path == default  # type: ignore[union-attr]


def test_build_with_a_cached_source_image_does_not_rebuild(tmp_path: Path) -> None:
    tree = fake_jool(tmp_path / "tree")
    path = _fake_built(tmp_path / "cache", tree_digest(tree), "2026-01-01T00:00:00Z")
    said: list[str] = []
    image = build_image("jool-mapt", cache=tmp_path / "cache", jool_source=str(tree), progress=said.append)
    assert image.path == path
    assert said[-1] == f"image jool-mapt: cached at {path}"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [path.name]  # nothing else written


def test_build_offline_stops_before_anything_is_built(tmp_path: Path) -> None:
    with pytest.raises(JoolSourceError, match="--jool-source"):
        build_image("jool-mapt", cache=tmp_path, fetch=_offline)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(vm_image.LabError, match="--jool-source applies to jool-mapt"):
        build_image("jool", cache=tmp_path, jool_source=str(tmp_path))


def test_cli_offline_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jool_source, "_urlopen_fetch", _offline)
    result = CliRunner().invoke(cli, ["lab", "image", "build", "jool-mapt", "--cache", str(tmp_path)])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--jool-source PATH" in errors[0], result.output
    assert not any(p.name.startswith(("jool-mapt-", ".build-")) for p in tmp_path.iterdir())


def test_install_source_and_build_script(tmp_path: Path) -> None:
    src = resolve_source(fake_jool(tmp_path / "tree"), tmp_path / "w")
    root = tmp_path / "root"
    assert install_source(src, root) == "4.1.255"
    assert (root / "usr/src/jool-4.1.255/dkms.conf").is_file()
    assert os.access(root / "usr/src/jool-4.1.255/autogen.sh", os.X_OK)
    script = build_script("4.1.255", "6.1.0-28-amd64", jobs=2).splitlines()
    assert script[:3] == [
        "dkms add -m jool -v 4.1.255",
        "dkms build -m jool -v 4.1.255 -k 6.1.0-28-amd64",
        "dkms install -m jool -v 4.1.255 -k 6.1.0-28-amd64",
    ]
    assert "make install" in script and script[-1] == "jool_mapt --version"
    assert "'6.1.0 x'" in build_script("4.1.255", "6.1.0 x")  # every value quoted


# ------------------------------------------------------------------------------------- issue 43: hostile sources
def _raw_tar(path: Path, members: list[tarfile.TarInfo], data: bytes = b"") -> Path:
    """A gzip-compressed tar of ``members`` (headers only, then ``data``), written without tarfile's checks."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        for member in members:
            out.write(member.tobuf(format=tarfile.GNU_FORMAT))
        out.write(data)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


def _refused(given: str | Path, work: Path) -> str:
    with pytest.raises(JoolSourceError) as err:
        resolve_source(given, work)
    text = str(err.value)
    assert "\n" not in text and len(text) < 400, text
    return text


def _written(work: Path) -> list[str]:
    """What a refused source left in the scratch directory (the archive itself aside)."""
    return sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.name != "jool-source.tar.gz")


def test_an_archive_of_more_members_than_the_limit_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """10^6 members would take minutes to unpack: the headers are counted first, and the first one over
    MAX_MEMBERS stops it with nothing written."""
    members = [_member(f"Jool/m{i}") for i in range(source_tree.MAX_MEMBERS + 1)]
    archive = _raw_tar(tmp_path / "many.tar.gz", members)
    text = _refused(archive, tmp_path / "w")
    assert text == (
        f"--jool-source {archive}: holds more than 20,000 files and directories (the limit; a Jool 4.2 source has"
        " about 1,250): not unpacked further"
    )
    assert _written(tmp_path / "w") == []
    below = _raw_tar(tmp_path / "below.tar.gz", members[: source_tree.MAX_MEMBERS])  # at the limit: unpacked
    assert "is not a Jool source tree (no configure.ac)" in _refused(below, tmp_path / "w2")


def test_a_member_larger_than_the_tree_may_be_is_refused_unread(tmp_path: Path) -> None:
    """A gzip of 3 GB of zeros behind one tar header (1.8 GB were written before): refused at its header, nothing
    unpacked; a member that fits is unpacked."""
    huge = _raw_tar(tmp_path / "huge.tar.gz", [_member("Jool/zeros", size=3 << 30)], b"\0" * (1 << 20))
    text = _refused(huge, tmp_path / "w")
    assert text == (
        f"--jool-source {huge}: unpacks to more than 256 MiB (the limit; a Jool 4.2 source has 5.7 MB): stopped"
        " at 'Jool/zeros'"
    )
    assert _written(tmp_path / "w") == []
    at_limit = _member("Jool/zeros", size=source_tree.MAX_TOTAL_BYTES + 1)
    assert "more than 256 MiB" in _refused(_raw_tar(tmp_path / "one-more.tar.gz", [at_limit]), tmp_path / "w2")


def test_an_extended_header_larger_than_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    pax = _raw_tar(tmp_path / "pax.tar.gz", [_member("././@PaxHeader", tarfile.XHDTYPE, size=1 << 30)], b"9 a=b\n")
    assert _refused(pax, tmp_path / "w").endswith(
        "an extended tar header of 1,073,741,824 bytes, more than the limit of 1 MiB"
    )


def test_a_deep_member_is_refused_by_its_path_or_its_depth(tmp_path: Path) -> None:
    """A member 3,000 directories deep (a RecursionError before) and one 40 deep: refused, nothing written."""
    deep = _raw_tar(tmp_path / "deep.tar.gz", [_member("a/" * 3000 + "f")])
    assert _refused(deep, tmp_path / "w").endswith(
        "a member's path has 6,001 characters, more than the limit of 1,024 (Jool's longest has 82)"
    )
    forty = _raw_tar(tmp_path / "forty.tar.gz", [_member("a/" * 40 + "f")])
    text = _refused(forty, tmp_path / "w2")
    assert text.endswith("lies 40 directories deep, more than the limit of 32 (Jool's deepest file lies 6 deep)")
    assert _written(tmp_path / "w") == _written(tmp_path / "w2") == []
    at_limit = _raw_tar(tmp_path / "at.tar.gz", [_member("a/" * 32 + "f")])  # 32 deep: unpacked (then no Jool)
    assert "is not a Jool source tree" in _refused(at_limit, tmp_path / "w3")


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        (_member("J/zero", tarfile.CHRTYPE), "'J/zero' is a character device"),
        (_member("J/disk", tarfile.BLKTYPE), "'J/disk' is a block device"),
        (_member("J/fifo", tarfile.FIFOTYPE), "'J/fifo' is a FIFO"),
        (_member("J/shadow", tarfile.SYMTYPE, link="/etc/shadow"), "'J/shadow': a link leading outside the tree"),
        (_member("J/up", tarfile.SYMTYPE, link="../../etc"), "'J/up': a link leading outside the tree"),
        (_member("J/hard", tarfile.LNKTYPE, link="/etc/passwd"), "'J/hard': a link leading outside the tree"),
        (_member("J/../../x"), "'J/../../x': leads outside the tree"),
    ],
)
def test_an_archive_member_that_is_no_file_or_leads_outside_is_refused(
    tmp_path: Path, member: tarfile.TarInfo, problem: str
) -> None:
    archive = _raw_tar(tmp_path / "bad.tar.gz", [member])
    assert problem in _refused(archive, tmp_path / "w")
    assert _written(tmp_path / "w") == []


def test_an_absolute_member_is_unpacked_inside_the_tree(tmp_path: Path) -> None:
    """tarfile's data filter strips the leading '/': the member lands inside the scratch tree, never at its path."""
    target = tmp_path / "outside" / "planted"
    archive = _raw_tar(tmp_path / "abs.tar.gz", [_member(str(target))])
    assert "is not a Jool source tree" in _refused(archive, tmp_path / "w")
    assert not target.exists() and (tmp_path / "w" / "unpacked" / str(target).lstrip("/")).is_file()


def test_a_source_tree_holding_what_a_tree_does_not_is_refused(tmp_path: Path) -> None:
    """A FIFO (a traceback before), a socket, a /dev/zero node (read forever before: root only), a link leading
    out of the tree; a link inside it is kept as a link."""
    cases: dict[str, str] = {}
    fifo = fake_jool(tmp_path / "fifo")
    os.mkfifo(fifo / "pipe")
    cases["fifo"] = "'pipe' is a FIFO: a source tree holds regular files, directories and links within itself only"
    sock = fake_jool(tmp_path / "sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock / "sock"))
    cases["sock"] = "'sock' is a socket"
    out = fake_jool(tmp_path / "out")
    (out / "src" / "shadow").symlink_to("/etc/shadow")
    cases["out"] = "'src/shadow' is a link leading outside the tree: a source tree holds its own files"
    up = fake_jool(tmp_path / "up")
    (up / "src" / "up").symlink_to("../../elsewhere")
    cases["up"] = "'src/up' is a link leading outside the tree"
    if os.geteuid() == 0:
        dev = fake_jool(tmp_path / "dev")
        os.mknod(dev / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        cases["dev"] = "'zero' is a character device"
    for name, problem in cases.items():
        text = _refused(tmp_path / name, tmp_path / f"w-{name}")
        assert text.startswith(f"--jool-source {tmp_path / name}: ") and problem in text, text
    inside = fake_jool(tmp_path / "inside")
    (inside / "src" / "xlat-link.h").symlink_to("common/xlat.h")
    got = resolve_source(inside, tmp_path / "w-inside")
    assert os.readlink(got.tree / "src" / "xlat-link.h") == "common/xlat.h" and got.digest == tree_digest(inside)


def test_a_sparse_file_larger_than_the_tree_may_be_is_refused_unread(tmp_path: Path) -> None:
    """A 5 GB sparse file beside a valid tree (a MemoryError of the digest before): refused by its size, and the
    scratch copy holds none of it."""
    tree = fake_jool(tmp_path / "tree")
    with open(tree / "big", "wb") as f:
        f.truncate(5 << 30)
    text = _refused(tree, tmp_path / "w")
    assert text.endswith("unpacks to more than 256 MiB (the limit; a Jool 4.2 source has 5.7 MB): stopped at 'big'")
    assert not (tmp_path / "w" / "jool" / "big").exists()


def test_a_tree_deeper_than_the_limit_is_refused(tmp_path: Path) -> None:
    tree = fake_jool(tmp_path / "tree")
    deep = tree.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "f").write_text("x\n")
    assert "lies 33 directories deep, more than the limit of 32" in _refused(tree, tmp_path / "w")


def test_the_digest_reads_files_in_chunks(tmp_path: Path) -> None:
    """A 200 MB file (within the limits) is digested by a process whose address space allows 64 MB more than it
    holds: read whole it could not be (it was read whole before)."""
    tree = fake_jool(tmp_path / "tree")
    with open(tree / "large.bin", "wb") as f:
        f.truncate(200 << 20)
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from natbench.testbed.lab.jool_source import tree_digest\n"
        "size = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "hard = resource.getrlimit(resource.RLIMIT_AS)[1]  # an inherited hard limit cannot be raised\n"
        "soft = size + (64 << 20) if hard == resource.RLIM_INFINITY else min(size + (64 << 20), hard)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (soft, hard))\n"
        "print(tree_digest(Path(sys.argv[1])))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(tree)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == tree_digest(tree)


def test_sources_that_are_no_tree_or_archive_are_refused_by_name(tmp_path: Path) -> None:
    """/proc/self/mem (an OSError traceback before), /dev/zero, a FIFO, a path longer than the kernel takes."""
    assert _refused("/proc/self/mem", tmp_path / "w") == (
        "--jool-source /proc/self/mem: leads into /proc (a view of the kernel, not data): not a source tree or archive"
    )
    assert (
        _refused("/dev/zero", tmp_path / "w") == "--jool-source /dev/zero: is a device, not a source tree or an archive"
    )
    os.mkfifo(tmp_path / "fifo")
    assert _refused(tmp_path / "fifo", tmp_path / "w").endswith("fifo: is a FIFO, not a source tree or an archive")
    assert _refused("x" * 5000, tmp_path / "w") == (
        "--jool-source: the path is 5,000 bytes long: more than PATH_MAX allows (4,095 bytes)"
    )
    big = tmp_path / "big.tar.gz"
    with open(big, "wb") as f:
        f.truncate(source_tree.MAX_ARCHIVE_BYTES + 1)
    assert _refused(big, tmp_path / "w").endswith(
        "larger than 64 MiB (the limit for an archive; Jool 4.2's has 1.3 MB)"
    )


class _Server:
    """A real HTTP server on localhost (a thread) that serves one archive, behind Basic authentication when asked,
    or an endless stream of zeros."""

    def __init__(self, body: bytes | None, credentials: str | None = None) -> None:
        outer = self
        self.seen: list[str | None] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen.append(self.headers.get("Authorization"))
                if credentials is not None:
                    wanted = "Basic " + base64.b64encode(credentials.encode()).decode()
                    if self.headers.get("Authorization") != wanted:
                        self.send_response(401)
                        self.end_headers()
                        return
                self.send_response(200)
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)
                    return
                with contextlib.suppress(OSError):
                    while True:  # endless: the client must stop
                        self.wfile.write(b"\0" * (1 << 20))

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def test_a_password_in_the_url_is_sent_as_basic_auth_and_never_shown(tmp_path: Path) -> None:
    """``https://user:password@host/...``: the password was printed in the progress line and the error. Now the
    download authenticates with it (a real HTTP server checks), and progress, errors and the manifest's origin
    show ``***``."""
    archive = tarball(fake_jool(tmp_path / "tree"), tmp_path / "jool.tar.gz").read_bytes()
    with _Server(archive, credentials="me:s3cret-pw") as server:
        url = f"http://me:s3cret-pw@127.0.0.1:{server.port}/jool.tar.gz"
        got = resolve_source(url, tmp_path / "w")
        assert got.release == "4.2.0-rc9" and got.origin == f"http://me:***@127.0.0.1:{server.port}/jool.tar.gz"
        assert "s3cret" not in json.dumps(got.as_dict())
        wrong = f"http://me:wrong-pw@127.0.0.1:{server.port}/jool.tar.gz"
        text = _refused(wrong, tmp_path / "w2")
        assert "wrong-pw" not in text and "http://me:***@127.0.0.1" in text and "(Unauthorized)" in text
    said: list[str] = []
    with pytest.raises(JoolSourceError) as err:
        build_image("jool-mapt", cache=tmp_path / "c", jool_source=url, progress=said.append, fetch=_offline)
    assert said and all("s3cret" not in line for line in said) and "s3cret" not in str(err.value)
    assert f"me:***@127.0.0.1:{server.port}" in said[0]


def test_a_download_larger_than_an_archive_may_be_is_stopped(tmp_path: Path) -> None:
    """An endless download stops at MAX_ARCHIVE_BYTES with one line; what was written stays within it."""
    with _Server(None) as server:
        url = f"http://127.0.0.1:{server.port}/endless.tar.gz"
        text = _refused(url, tmp_path / "w")
    assert text == f"--jool-source {url}: larger than 64 MiB (the limit for an archive; Jool 4.2's has 1.3 MB)"
    assert (tmp_path / "w" / "jool-source.tar.gz").stat().st_size <= source_tree.MAX_ARCHIVE_BYTES


BUILD = [sys.executable, "-m", "natbench", "lab", "image", "build", "jool-mapt"]


def test_cli_hostile_sources_are_one_line_exit_2(tmp_path: Path) -> None:
    """Through the real entry point: one line ``natbench``'s lab CLI prints (``Error: ...``), exit 2, no traceback,
    nothing built."""
    if vm_image.missing_tools(("debootstrap", "qemu-system-x86_64", "qemu-img")):
        pytest.skip("the image build CLI checks for debootstrap and QEMU before the source (not installed here)")
    archive = _raw_tar(tmp_path / "huge.tar.gz", [_member("Jool/zeros", size=3 << 30)])
    for given in ("/proc/self/mem", str(archive), "https://me:s3cret@127.0.0.1:9/jool.tar.gz"):
        proc = subprocess.run(
            [*BUILD, "--cache", str(tmp_path / "c"), "--jool-source", given],
            capture_output=True,
            text=True,
            check=False,
        )
        errors = [line for line in proc.stderr.splitlines() if not line.startswith("image jool-mapt: ")]
        assert proc.returncode == 2 and len(errors) == 1 and errors[0].startswith("Error: "), proc.stderr
        assert "Traceback" not in proc.stderr and "s3cret" not in proc.stderr
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_a_home_of_no_user_and_a_url_urllib_cannot_parse_are_one_line(tmp_path: Path) -> None:
    assert _refused("~no-such-user-43/jool", tmp_path / "w") == (
        "--jool-source ~no-such-user-43/jool: no such user's home directory (~)"
    )
    text = _refused("https://me:s3cret@host:notaport/jool.tar.gz", tmp_path / "w")
    assert text.startswith("--jool-source https://me:***@host:notaport/jool.tar.gz: not a valid URL (") and (
        "s3cret" not in text
    )
    assert _refused("http://[::1/jool.tar.gz", tmp_path / "w").endswith("not a valid URL (Invalid IPv6 URL)")


def test_cli_errors_of_the_image_build_are_printed_escaped_and_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source whose name holds an escape sequence and a password is printed escaped, with ***, in one line."""

    def failing(url: str, dest: Path) -> None:
        raise OSError(-2, f"cannot reach {url}")

    monkeypatch.setattr(jool_source, "_urlopen_fetch", failing)
    given = "https://me:s3cret@mirror.example/\x1b]0;title\x07/jool.tar.gz"
    result = CliRunner().invoke(
        cli, ["lab", "image", "build", "jool-mapt", "--cache", str(tmp_path), "--jool-source", given]
    )
    assert result.exit_code == 2
    assert "s3cret" not in result.output and "\x1b" not in result.output and "\x07" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "https://me:***@mirror.example/\\x1b]0;title\\x07/jool.tar.gz" in errors[0]
