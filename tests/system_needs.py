"""Why a test of a marker (lab, ssh, vm) cannot run on this machine: root and the programs of the system
packages its part needs (natbench/host/system-packages.txt). conftest.py skips such tests with the reason,
so that a machine without them skips cleanly instead of erroring."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from natbench.host import check_packages, find_command

__all__ = ["MARKER_NEEDS", "unmet"]

MARKER_NEEDS = {"lab": ("lab",), "ssh": ("ssh", "lab"), "vm": ("vm", "lab")}
"""The parts of the package list each marker's tests use (the ssh and vm tests reach their DUTs through
lab namespaces)."""

_ROOT = {
    "lab": "needs root (network namespaces, veth, raw sockets)",
    "ssh": "needs root (the sshd tests log in as root into lab namespaces)",
    "vm": "needs root (network namespaces, taps, QEMU)",
}


def unmet(marker: str) -> str | None:
    """The reason tests marked ``marker`` cannot run here, or None when they can."""
    if marker not in MARKER_NEEDS:
        return None
    if os.geteuid() != 0:
        return _ROOT[marker]
    checks = check_packages(MARKER_NEEDS[marker])
    missing = [c for c in checks if not c.present]
    if missing:
        programs = ", ".join(m for c in missing for m in c.missing)
        packages = " ".join(sorted({c.package.package for c in missing}))
        return f"needs {programs} (Debian packages: {packages}; ./dev setup installs them)"
    # installed, but the tests (and natbench's lab) run them by name: they must be on PATH, not only in /usr/sbin
    off_path = [cmd for c in checks for cmd in c.package.commands if shutil.which(cmd) is None]
    if off_path:
        where = sorted({str(Path(find_command(cmd) or "").parent) for cmd in off_path})
        return f"needs {', '.join(off_path)} on PATH (installed in {', '.join(where)}: add it to PATH)"
    return None
