"""The host-load probe on a real lab (marker ``lab``, needs root): the lab hands it to the tester with its CPUs and
DUT namespace; a process in the DUT namespace counts as the DUT's, one outside it and the tester's own children do
not; the lab's DUTs state that they share the host's CPUs."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from natbench.plugins import SHARES_HOST
from natbench.testbed.lab import NetnsLab
from natbench.testbed.lab.hostload import HostLoad

pytestmark = pytest.mark.lab
SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[NetnsLab]:
    if os.geteuid() != 0:
        pytest.skip("needs root: creates network namespaces, veth pairs, nftables rules")
    lab = NetnsLab(f"h{os.getpid()}{secrets.token_hex(2)}", state_dir=tmp_path)
    lab.up()
    yield lab
    lab.down()


def test_the_lab_hands_the_tester_its_probe_and_states_the_shared_host(lab: NetnsLab) -> None:
    probe = lab.tester_ports().host_load
    assert isinstance(probe, HostLoad)
    assert set(probe.cpus) == {*lab.tester_cpus, *lab.dut_cpus_available}
    assert probe.dut_netns == (lab.dut_netns,)
    assert lab.place_dut("nat").facts[SHARES_HOST] is True


def _detached(*command: str) -> int:
    """Start ``command`` in the background of a shell that exits at once: not this process's child."""
    line = " ".join(f"'{c}'" for c in command)
    out = subprocess.run(["sh", "-c", f"{line} >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_a_process_in_the_dut_namespace_is_the_duts_and_one_outside_is_not(lab: NetnsLab) -> None:
    """A spinning process inside the DUT namespace that is not this process's child is read as the DUT's; the same
    outside is nobody's (its time counts as the others'); this process's own child inside is left to its own
    children's time (counted once it is reaped)."""
    inside = _detached("ip", "netns", "exec", lab.dut_netns, sys.executable, "-c", SPIN)
    outside = _detached(sys.executable, "-c", SPIN)
    mine = subprocess.Popen(["ip", "netns", "exec", lab.dut_netns, sys.executable, "-c", SPIN])
    try:
        lab_pids = set(lab.host_load().reading().lab)
        assert inside in lab_pids  # ip netns exec execs the command in place: the same pid
        assert outside not in lab_pids
        assert mine.pid not in lab_pids
    finally:
        mine.kill()
        mine.wait()
        for pid in (inside, outside):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
