"""The VM image recipe and cache (no build, no root): content address, broken entries, missing tools."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from natbench.cli import cli
from natbench.testbed.lab import vm_image
from natbench.testbed.lab.vm_image import IMAGES, find_image, missing_tools, recipe_key


def test_key_follows_packages_and_recipe() -> None:
    jool = IMAGES["jool"]
    assert recipe_key(jool) == recipe_key(dataclasses.replace(jool, packages=tuple(reversed(jool.packages))))
    assert recipe_key(jool) != recipe_key(dataclasses.replace(jool, packages=(*jool.packages, "tcpdump")))
    changed = dict(jool.files, **{"/etc/hostname": "other\n"})
    assert recipe_key(jool) != recipe_key(dataclasses.replace(jool, files=changed))
    assert recipe_key(jool) != recipe_key(dataclasses.replace(jool, commands=(*jool.commands, "true")))


def test_jool_image_has_the_issue_packages() -> None:
    wanted = {"linux-image-amd64", "linux-headers-amd64", "jool-dkms", "jool-tools", "openssh-server", "iproute2",
              "iptables", "conntrack", "procps", "ethtool"}  # fmt: skip
    assert wanted <= set(IMAGES["jool"].packages)
    assert IMAGES["jool"].modules == ("jool", "jool_siit")


def _fake_image(cache: Path, *, complete: bool = True) -> Path:
    key = recipe_key(IMAGES["jool"])
    path = cache / f"jool-{key}"
    path.mkdir(parents=True)
    sizes = {}
    for name in vm_image._IMAGE_FILES:
        (path / name).write_text(f"{name}\n")
        sizes[name] = (path / name).stat().st_size
    (path / "ssh_host_ed25519_key.pub").write_text("ssh-ed25519 AAAAC3Nz host\n")
    sizes["ssh_host_ed25519_key.pub"] = (path / "ssh_host_ed25519_key.pub").stat().st_size
    if complete:
        (path / vm_image.MANIFEST).write_text(json.dumps({"name": "jool", "key": key, "sizes": sizes}))
    return path


def test_complete_cache_entry_is_found(tmp_path: Path) -> None:
    path = _fake_image(tmp_path)
    image = find_image("jool", cache=tmp_path)
    assert image is not None and image.path == path
    assert image.known_hosts_line("127.0.0.1", 2222) == "[127.0.0.1]:2222 ssh-ed25519 AAAAC3Nz\n"


def test_half_built_entry_is_removed_not_booted(tmp_path: Path) -> None:
    path = _fake_image(tmp_path, complete=False)
    assert find_image("jool", cache=tmp_path) is None
    assert not path.exists()


def test_truncated_disk_is_detected(tmp_path: Path) -> None:
    path = _fake_image(tmp_path)
    (path / "disk.img").write_text("")
    assert find_image("jool", cache=tmp_path) is None
    assert not path.exists()


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATBENCH_IMAGE_CACHE", str(tmp_path))
    assert vm_image.cache_dir() == tmp_path
    monkeypatch.delenv("NATBENCH_IMAGE_CACHE")
    assert vm_image.cache_dir() == vm_image.DEFAULT_CACHE_DIR


def test_missing_tool_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    lines = missing_tools(("qemu-system-x86_64", "debootstrap"))
    assert lines == [
        "qemu-system-x86_64 not found: install the Debian package qemu-system-x86 (apt-get install qemu-system-x86)",
        "debootstrap not found: install the Debian package debootstrap (apt-get install debootstrap)",
    ]


def test_cli_build_without_qemu_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "debootstrap" else real(tool) or "/bin/x")
    result = CliRunner().invoke(cli, ["lab", "image", "build", "jool"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: debootstrap not found: install the Debian package debootstrap (apt-get install debootstrap)"
    ]


def test_unknown_image_name(tmp_path: Path) -> None:
    with pytest.raises(vm_image.LabError, match="no VM image named 'pf'"):
        find_image("pf", cache=tmp_path)
