"""The jool-mapt image's source handling (no build, no root, no network): unpacking and checking a Jool
source given as a tree, a tarball or a URL, its digest in the cache key, the pinned default, the
one-line offline error naming --jool-source, and the chroot build script.

The Jool trees here are small stand-ins with Jool's layout (configure.ac, dkms.conf, xlat.h, the
MAP-T directories); the real source is compiled by the ``vm`` tests (tests/test_vm_mapt.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from natbench.cli import cli
from natbench.testbed.lab import jool_source, vm_image
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
