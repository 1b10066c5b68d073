"""The VM lab's static neighbour entry follows a NIC into the namespace a recipe moved it to (the MAP-T CE
moves the VM's eth1 into ``napt``): the command the lab runs in the VM, run here for real in a throw-away
network namespace (marker ``lab``: root, iproute2)."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator

import pytest
from lab_helpers import need_lab

from natbench.testbed.lab.vm import _neigh_command

pytestmark = pytest.mark.lab


@pytest.fixture
def moved_nic() -> Iterator[tuple[str, str]]:
    """A NIC (a veth end) created in a fresh namespace (not in this one), as eth1 is after the CE recipe moved it."""
    need_lab()
    tag = secrets.token_hex(3)
    ns, nic = f"nbnt{os.getpid()}{tag}", f"nbn{tag}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", nic, "type", "veth", "peer", "name", f"{nic}p"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", nic, "up"], check=True)
        yield ns, nic
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def neighbours(ns: str | None, nic: str) -> str:
    prefix = ["ip", "-n", ns] if ns else ["ip"]
    return subprocess.run([*prefix, "neigh", "show", "dev", nic], capture_output=True, text=True).stdout


def test_entry_lands_in_the_namespace_holding_the_nic(moved_nic: tuple[str, str]) -> None:
    ns, nic = moved_nic
    cmd = _neigh_command("198.18.0.2", "02:00:00:00:00:01", nic)
    subprocess.run(["sh", "-c", cmd], check=True)
    assert "198.18.0.2 lladdr 02:00:00:00:00:01 PERMANENT" in neighbours(ns, nic)
    # run again (after_dut_setup repeats it): replaced, not duplicated
    subprocess.run(["sh", "-c", cmd], check=True)
    assert neighbours(ns, nic).count("198.18.0.2") == 1


def test_entry_on_a_nic_of_this_namespace(moved_nic: tuple[str, str]) -> None:
    ns, nic = moved_nic
    subprocess.run(["ip", "-n", ns, "link", "set", nic, "netns", "1"], check=True)  # back to the root namespace
    try:
        subprocess.run(["sh", "-c", _neigh_command("198.19.0.2", "02:00:00:00:00:02", nic)], check=True)
        assert "198.19.0.2 lladdr 02:00:00:00:00:02 PERMANENT" in neighbours(None, nic)
    finally:
        subprocess.run(["ip", "link", "del", nic], check=False)
