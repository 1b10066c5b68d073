"""The system-package list, the checks built on it (natbench doctor, the tests' clean skips) and ./dev."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from system_needs import unmet

import natbench.host as host
from natbench.cli import cli
from natbench.host import NEEDS, check_packages, install_command, package_for, system_packages

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with nothing on it, no sbin fallback, no dpkg: every package looks missing."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(host, "_SBIN", ())
    return tmp_path


def test_the_list_names_every_package_once_with_a_known_need() -> None:
    pkgs = system_packages()
    names = [p.package for p in pkgs]
    assert len(names) == len(set(names))
    assert {p.need for p in pkgs} == set(NEEDS)
    # what the lab's own check asks for must be in the list, so that ./dev installs it
    for cmd in ("ip", "nft", "iptables", "conntrack", "sysctl", "sshd", "qemu-system-x86_64", "chromium"):
        assert package_for(cmd) is not None, cmd
    assert package_for("nft") == "nftables"
    assert package_for("sshd") == "openssh-server"


def test_a_missing_program_makes_its_package_missing(bare_path: Path) -> None:
    checks = {c.package.package: c for c in check_packages(["lab"])}
    assert checks["nftables"].missing == ("nft",)
    assert not checks["nftables"].present
    # a program that appears on PATH is found again
    (bare_path / "nft").write_text("#!/bin/sh\n")
    (bare_path / "nft").chmod(0o755)
    checks = {c.package.package: c for c in check_packages(["lab"])}
    assert checks["nftables"].present
    assert checks["iptables"].missing == ("iptables",)


def test_a_package_without_programs_is_checked_by_name(bare_path: Path) -> None:
    # no dpkg-query on this PATH: the package database cannot say yes
    checks = {c.package.package: c for c in check_packages(["build"])}
    assert checks["python3-dev"].missing == ("python3-dev",)


def test_install_command_is_one_apt_line_with_each_package_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert install_command(["nftables", "conntrack", "nftables"]) == (
        "sudo apt-get install -y --no-install-recommends conntrack nftables"
    )
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert install_command(["chromium"]) == "apt-get install -y --no-install-recommends chromium"


def test_lab_tests_skip_naming_programs_and_packages_when_tools_are_missing(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    reason = unmet("lab")
    assert reason is not None
    assert "nft" in reason and "nftables" in reason and "./dev setup" in reason
    assert unmet("trex") is None  # not a system-package marker
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert unmet("lab") == "needs root (network namespaces, veth, raw sockets)"


def test_doctor_lists_what_is_missing_and_the_command_that_installs_it(bare_path: Path) -> None:
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    lab = next(i for i, line in enumerate(lines) if line.startswith("lab "))
    assert "MISSING" in lines[lab]
    assert "nft MISSING (nftables)" in lines[lab + 1]
    apt = lines[lines.index("Install the missing system packages with:") + 1]
    assert "apt-get install -y --no-install-recommends" in apt
    assert {"nftables", "conntrack", "openssh-server", "chromium"} <= set(apt.split())


def test_dev_without_a_command_prints_its_usage_and_exits_2() -> None:
    proc = subprocess.run(["bash", str(ROOT / "dev")], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert "./dev quickstart" in proc.stderr and "./dev test" in proc.stderr


def test_dev_reads_the_same_package_list(tmp_path: Path) -> None:
    # ./dev's own selection of packages (its awk) must agree with the Python parser for every need
    script = (ROOT / "dev").read_text()
    body = script[script.index("packages_for() {") : script.index("installed() {")]
    for need in NEEDS:
        proc = subprocess.run(
            ["bash", "-c", f"LIST={ROOT}/natbench/host/system-packages.txt\n{body}\npackages_for {need}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert proc.stdout.split() == [p.package for p in system_packages() if p.need == need], need


def test_doctor_runs_as_a_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "doctor"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode in (0, 1)
    assert proc.stdout.startswith("natbench doctor:")


def test_the_labs_own_check_names_the_command_that_installs_what_is_missing(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from natbench.testbed.lab.netns import lab_problems

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    (problem,) = lab_problems()
    # ip, nft, sysctl, iptables, conntrack come from these five packages of the list, each named once
    assert problem == (
        "the local lab needs ip, nft, sysctl, iptables, conntrack on PATH: "
        "apt-get install -y --no-install-recommends conntrack iproute2 iptables nftables procps "
        "(natbench doctor lists what each part needs)"
    )
