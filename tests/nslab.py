"""A throw-away three-namespace topology for DUT tests: client -> DUT -> public, joined by veth.

Every name carries the pid and a random suffix (other engineers run lab tests on the same
machine), and everything is deleted on exit. Traffic stays inside these namespaces.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["NsLab", "global_conntrack_lock", "ns_lab", "send_udp"]


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@dataclass(frozen=True)
class NsLab:
    """Names and addresses of one lab."""

    client: str
    dut: str
    public: str
    dut_private_if: str
    dut_public_if: str
    client_address: str = "198.18.0.2"
    dut_private_address: str = "198.18.0.1/24"
    dut_public_address: str = "198.19.0.1/24"
    responder_address: str = "198.19.0.2"


@contextmanager
def ns_lab(configure_dut_addresses: bool = True) -> Iterator[NsLab]:
    """Build the lab; with ``configure_dut_addresses`` False the DUT side is left for a recipe."""
    tag = f"nb{os.getpid() % 100000}{secrets.token_hex(2)}"
    lab = NsLab(f"{tag}c", f"{tag}d", f"{tag}p", f"{tag}i", f"{tag}o")
    try:
        for ns in (lab.client, lab.dut, lab.public):
            _sh("ip", "netns", "add", ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        _sh(
            "ip",
            "link",
            "add",
            f"{tag}a",
            "netns",
            lab.client,
            "type",
            "veth",
            "peer",
            "name",
            lab.dut_private_if,
            "netns",
            lab.dut,
        )
        _sh(
            "ip",
            "link",
            "add",
            lab.dut_public_if,
            "netns",
            lab.dut,
            "type",
            "veth",
            "peer",
            "name",
            f"{tag}b",
            "netns",
            lab.public,
        )
        _sh("ip", "-n", lab.client, "addr", "add", lab.client_address + "/24", "dev", f"{tag}a")
        _sh("ip", "-n", lab.client, "link", "set", f"{tag}a", "up")
        _sh("ip", "-n", lab.client, "route", "add", "default", "via", lab.dut_private_address.split("/")[0])
        _sh("ip", "-n", lab.public, "addr", "add", lab.responder_address + "/24", "dev", f"{tag}b")
        _sh("ip", "-n", lab.public, "link", "set", f"{tag}b", "up")
        if configure_dut_addresses:
            _sh("ip", "-n", lab.dut, "addr", "add", lab.dut_private_address, "dev", lab.dut_private_if)
            _sh("ip", "-n", lab.dut, "addr", "add", lab.dut_public_address, "dev", lab.dut_public_if)
            _sh("ip", "-n", lab.dut, "link", "set", lab.dut_private_if, "up")
            _sh("ip", "-n", lab.dut, "link", "set", lab.dut_public_if, "up")
        yield lab
    finally:
        for ns in (lab.client, lab.dut, lab.public):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


_SENDER = """
import socket, sys
src, dst, sp0, sp1, dp0, dp1, repeat = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])
for sp in range(sp0, sp1 + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, sp))
    for dp in range(dp0, dp1 + 1):
        for _ in range(repeat):
            s.sendto(b"natbench-test", (dst, dp))
    s.close()
"""


def send_udp(lab: NsLab, sports: tuple[int, int], dports: tuple[int, int], repeat: int = 1) -> int:
    """Send ``repeat`` UDP frames per (sport, dport), back to back, from the client to the responder address; return
    the number of (sport, dport) pairs."""
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lab.client,
            "python3",
            "-c",
            _SENDER,
            lab.client_address,
            lab.responder_address,
            str(sports[0]),
            str(sports[1]),
            str(dports[0]),
            str(dports[1]),
            str(repeat),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return (sports[1] - sports[0] + 1) * (dports[1] - dports[0] + 1)


@contextmanager
def global_conntrack_lock() -> Iterator[None]:
    """Serialize tests that read or change the kernel-global conntrack settings (nf_conntrack_max,
    hashsize): the kernel is shared with every other test run on this machine."""
    import fcntl

    with open(os.path.join(tempfile.gettempdir(), "natbench-conntrack-global.lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
