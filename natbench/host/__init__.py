"""What the machine natbench runs on provides: the system packages of ``system-packages.txt`` (the one list
``./dev`` installs from), the programs they provide, and the command that installs what is missing.

This module only looks; ``natbench doctor`` prints what it finds.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

NEEDS = ("build", "lab", "ssh", "vm", "report")
"""The parts of natbench a system package can be needed by, in the order ``natbench doctor`` lists them."""

_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")
"""Looked in besides PATH: a user's PATH often lacks them although root's programs (sshd) live there."""


@dataclass(frozen=True)
class SystemPackage:
    """One line of ``system-packages.txt``: a Debian / Ubuntu package, what needs it, what it provides."""

    need: str
    """The part of natbench that uses it (one of :data:`NEEDS`)."""
    package: str
    """The package name (the same on Debian 12 and current Ubuntu)."""
    commands: tuple[str, ...]
    """Programs natbench runs from it; empty when the package is checked by name (headers, venv)."""


@dataclass(frozen=True)
class PackageCheck:
    """Whether one system package is there, judged by its programs (or by the package database)."""

    package: SystemPackage
    """The package checked."""
    missing: tuple[str, ...]
    """Its programs not found (the package name itself when it has none and is not installed)."""

    @property
    def present(self) -> bool:
        """True when nothing of the package is missing."""
        return not self.missing


def _parse(text: str) -> tuple[SystemPackage, ...]:
    out: list[SystemPackage] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) < 3 or line[0] not in NEEDS:
            raise ValueError(f"system-packages.txt:{n}: expected '<need> <package> <command>...' with need in {NEEDS}")
        commands = () if line[2:] == ["-"] else tuple(line[2:])
        out.append(SystemPackage(line[0], line[1], commands))
    return tuple(out)


@cache
def system_packages() -> tuple[SystemPackage, ...]:
    """Every package of the list shipped with natbench, in its order."""
    return _parse(resources.files(__package__).joinpath("system-packages.txt").read_text(encoding="utf-8"))


def package_for(command: str) -> str | None:
    """The package of the list that provides ``command``, or None."""
    return next((p.package for p in system_packages() if command in p.commands), None)


def find_command(name: str) -> str | None:
    """Where program ``name`` is: on PATH, else in the sbin directories; None when nowhere."""
    found = shutil.which(name)
    if found:
        return found
    return shutil.which(name, path=os.pathsep.join(_SBIN))


def _installed(package: str) -> bool:
    """Whether the package database says ``package`` is installed (False without dpkg)."""
    if shutil.which("dpkg-query") is None:
        return False
    try:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Abbrev}", package],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.startswith("ii")


def check_packages(needs: Iterable[str] | None = None) -> list[PackageCheck]:
    """Check the packages of ``needs`` (all when None), in the list's order."""
    wanted = set(NEEDS if needs is None else needs)
    checks: list[PackageCheck] = []
    for p in system_packages():
        if p.need not in wanted:
            continue
        if p.commands:
            missing = tuple(c for c in p.commands if find_command(c) is None)
        else:
            missing = () if _installed(p.package) else (p.package,)
        checks.append(PackageCheck(p, missing))
    return checks


def install_command(packages: Iterable[str]) -> str:
    """The one shell command that installs ``packages`` (``sudo`` unless natbench runs as root)."""
    names = sorted(set(packages))
    sudo = "" if os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get install -y --no-install-recommends {' '.join(shlex.quote(n) for n in names)}"
