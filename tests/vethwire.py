"""A veth pair inside a namespace of its own: the two ends of one wire for a software tester's Initiator and
Responder (lab tests; needs root)."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator


@contextlib.contextmanager
def veth_wire(prefix: str, mac_a: str, mac_b: str) -> Iterator[str]:
    """A namespace named ``prefix-PID-XXXX`` holding veth ``wa`` (``mac_a``) and ``wb`` (``mac_b``), up, IPv6 off (no
    neighbour discovery frames on the wire); yields its name and deletes it afterwards."""
    ns = f"{prefix}-{os.getpid()}-{secrets.token_hex(2)}"

    def sh(*argv: str) -> None:
        subprocess.run(argv, check=True, capture_output=True)

    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", "name", "wa", "type", "veth", "peer", "name", "wb")
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
        for dev, mac in (("wa", mac_a), ("wb", mac_b)):
            sh("ip", "-n", ns, "link", "set", "dev", dev, "address", mac, "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
