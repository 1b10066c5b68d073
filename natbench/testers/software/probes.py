"""What the software tester reads of the host it runs on: the tester CPUs' backlog drops, an interface's MAC."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence

from natbench.errors import TesterError


def softnet_drops(cpus: Sequence[int] | None) -> int:
    """Sum of the backlog drop counters (/proc/net/softnet_stat column 2) of ``cpus``."""
    if not cpus:
        return 0
    try:
        with open("/proc/net/softnet_stat") as fh:
            rows = fh.read().split("\n")
    except OSError:
        return 0
    total = 0
    for row in rows:
        cols = row.split()
        if len(cols) >= 13:
            cpu = int(cols[12], 16)  # column 13 is the CPU id since Linux 5.9
            if cpu in cpus:
                total += int(cols[1], 16)
    return total


def read_mac(interface: str, netns: str | None = None) -> str:
    """MAC address of ``interface`` (inside ``netns`` when given), via ``ip -j link``."""
    cmd = ["ip", "-j", "link", "show", "dev", interface]
    if netns:
        cmd[1:1] = ["-n", netns]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return str(json.loads(out)[0]["address"])
    except (subprocess.CalledProcessError, OSError, ValueError, KeyError, IndexError) as exc:
        raise TesterError(f"cannot read the MAC address of {interface}: {exc}") from exc
