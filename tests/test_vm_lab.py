"""A real Jool 4.1.9 stateful NAT64 in a QEMU VM of the lab (marker ``vm``: root, qemu, the built image).

One VM is booted for the module: the ``jool-nat64`` recipe is set up in it over SSH (pinned host key);
phase 1 must leave exactly N sessions in the real Jool, the mappings read back (``responder: read``:
Jool does not preserve ports) must drive a lossless low-rate phase 2 and validation, ``timed_flush``
must empty the tables, and taking the lab down (also after a kill -9 of its owner, with ``--stale``)
must leave no qemu process, tap or file behind. The 464XLAT pair (CLAT + PLAT, two VMs) runs end to end.
Every test skips, naming why, without qemu or the image
(``natbench lab image build jool``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_helpers import kept_rate

from natbench.campaign import load_campaign
from natbench.duts.group import DutGroup
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.plugins import Directions, Phase2Options
from natbench.results import Direction, PhaseResult
from natbench.testbed import build_testbed
from natbench.testbed.lab import VmLab, VmSettings, remove_stale_labs
from natbench.testbed.lab.host import LabError, netns_list
from natbench.testbed.lab.vm_image import find_image, missing_tools
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import Family, PortRange, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = pytest.mark.vm

SRC, DST = PortRange(20000, 20099), PortRange(7000, 7004)  # 500 connections
N = len(SRC) * len(DST)
RATE = 1000  # frames/s: well below what the emulated VM translates


def need_vm() -> None:
    """Skip, naming why, unless this is root with qemu and the jool image in the cache."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, taps, QEMU)")
    problems = missing_tools(("qemu-system-x86_64", "qemu-img"))
    if problems:
        pytest.skip(problems[0])
    if find_image("jool") is None:
        pytest.skip("the VM image 'jool' is not built (natbench lab image build jool)")


def _qemu_pids(lab: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"natbench-{lab} "], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.fixture(scope="module")
def lab() -> Iterator[VmLab]:
    need_vm()
    vm_lab = VmLab(f"vm{os.getpid()}{secrets.token_hex(2)}", vm=VmSettings("jool"), family=Family.NAT64)
    vm_lab.up()
    try:
        yield vm_lab
    finally:
        vm_lab.release()


@pytest.fixture(scope="module")
def rig(lab: VmLab) -> Iterator[tuple[RecipeDut, SoftwareTester]]:
    params = {**lab.dut_params("jool"), "pool4": "198.19.0.1", "pool4_ports": "1-65535", "udp_timeout": 600}
    place = lab.place_dut("jool")
    dut = RecipeDut("jool", load_recipe("jool-nat64"), place.executor, params, place_facts=place.facts)
    dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64))
    try:
        lab.after_dut_setup()
        tester = SoftwareTester(lab.initiator, lab.responder, cpus=lab.tester_cpus, timeout=1.0)
        tester.prepare(
            TrafficPlan(Family.NAT64, lab.addresses, SRC, DST, 64, seed=5, responder_mode=ResponderMode.READ)
        )
        yield dut, tester
        tester.close()
    finally:
        dut.teardown()


def test_boot_and_facts(lab: VmLab, rig: tuple[RecipeDut, SoftwareTester]) -> None:
    dut, _ = rig
    facts = lab.facts()
    assert facts["vm"]["accel"] in ("kvm", "tcg")
    assert facts["vm"]["boot_seconds"] > 0
    got = dut.facts()
    assert got["jool_version"].startswith("4.1.9")
    assert got["jool_module_version"].startswith("4.1.9")
    assert got["kernel"].endswith("-amd64")
    assert lab.known_hosts.read_text().startswith("[127.0.0.1]:2222 ssh-ed25519 ")
    assert got["vm"]["accel"] == facts["vm"]["accel"] and got["vm"]["vcpus"] == 1


def test_phase1_leaves_exactly_n_sessions(rig: tuple[RecipeDut, SoftwareTester]) -> None:
    dut, tester = rig

    def fill() -> PhaseResult:
        dut.reset_connections()
        return tester.phase1(RATE, learn=True)

    r = kept_rate(fill)
    assert r.counts[Direction.FORWARD].valid == N, r.counts
    assert dut.count_connections() == N
    maps = dut.mappings()
    assert len(maps) == N
    # endpoint-independent mapping: one BIB entry (pool4 port) per Initiator port, shared by its sessions
    by_private = {m.private_port: m.public_port for m in maps}
    assert set(by_private) == set(range(SRC.first, SRC.last + 1))
    assert len(set(by_private.values())) == len(SRC)
    p2 = kept_rate(lambda: tester.phase2(RATE / 2, 1.0, Directions.BIDIRECTIONAL, Phase2Options(mappings=tuple(maps))))
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert p2.counts[d].valid == p2.counts[d].sent > 0, p2.counts
    assert dut.count_connections() == N  # phase 2 created nothing
    tester.load_mappings(maps)
    v = kept_rate(lambda: tester.validate(RATE))
    assert v.counts[Direction.REVERSE].valid == N


def test_timed_flush_empties_jool(rig: tuple[RecipeDut, SoftwareTester]) -> None:
    dut, tester = rig
    dut.reset_connections()
    kept_rate(lambda: tester.phase1(RATE, learn=True))
    assert dut.count_connections() == N
    seconds = dut.timed_flush()
    assert 0 < seconds < 60
    assert dut.count_connections() == 0


def test_down_leaves_nothing_behind(lab: VmLab) -> None:
    other = VmLab(f"vd{os.getpid()}{secrets.token_hex(2)}", vm=VmSettings("jool"), family=Family.NAT64)
    other.up()
    assert _qemu_pids(other.name)
    other.down()
    assert not _qemu_pids(other.name)
    assert not {other.tester_netns, other.dut_netns} & netns_list()
    assert not other.vm_dir.exists() and not other.state_file.exists()


_OWNER = """
import sys, time
from natbench.testbed.lab import VmLab, VmSettings
lab = VmLab(sys.argv[1], vm=VmSettings("jool", boot_timeout=900), family="nat64")
lab.up()
print("up", flush=True)
time.sleep(3600)
"""


def test_kill_9_then_stale_leaves_nothing_behind(lab: VmLab) -> None:
    name = f"vk{os.getpid()}{secrets.token_hex(2)}"
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, name])
    state = Path("/run/natbench/labs") / f"{name}.json"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill it while QEMU boots: taps and qemu exist, SSH not yet
            try:
                pid = int(json.loads(state.read_text()).get("vm", {}).get("pid") or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the owner never started QEMU")
        time.sleep(2)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert _qemu_pids(name)  # the VM outlives its killed owner ...
    found = remove_stale_labs(names=[name])
    assert [(f.name, f.stale, removed) for f, removed in found] == [(name, True, True)]
    assert not _qemu_pids(name)  # ... until the stale sweep
    assert not {f"nb-{name}-tester", f"nb-{name}-dut"} & netns_list()
    assert not (Path("/run/natbench/labs") / f"{name}.vm").exists()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert "nb-init" not in links and "nb-resp" not in links


def test_464xlat_pair_end_to_end() -> None:
    """CLAT (Jool SIIT, EAMT) and PLAT (Jool NAT64) as two VMs in path order, built from the campaign as
    ``natbench run`` builds it: phase 1 leaves exactly N sessions in the PLAT, the mappings read from it
    answer every tuple, and closing the testbed leaves no VM behind."""
    need_vm()
    campaign = load_campaign(Path(__file__).resolve().parents[1] / "campaigns" / "lab-464xlat.yaml")
    testbed = build_testbed(campaign)
    lab = testbed.lab
    try:
        assert isinstance(lab, VmLab) and [v.dut for v in lab.vms] == ["clat", "plat"]
        dut = testbed.dut
        assert isinstance(dut, DutGroup)
        dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64))
        try:
            lab.after_dut_setup()
            tester = testbed.tester
            tester.prepare(
                TrafficPlan(Family.NAT44, lab.addresses, SRC, DST, 64, seed=7, responder_mode=ResponderMode.READ)
            )

            def fill() -> PhaseResult:
                dut.reset_connections()
                return tester.phase1(RATE, learn=False)

            r = kept_rate(fill)
            assert r.counts[Direction.FORWARD].valid == N, r.counts
            assert dut.count_connections() == N  # the PLAT's sessions
            maps = dut.mappings()
            assert len(maps) == N
            tester.load_mappings(maps)
            v = kept_rate(lambda: tester.validate(RATE))
            assert v.counts[Direction.REVERSE].valid == N
            facts = dut.facts()
            assert facts["clat"]["vm"]["path_position"] == 0 and facts["plat"]["vm"]["path_position"] == 1
        finally:
            dut.teardown()
    finally:
        testbed.close()
    assert not _qemu_pids(lab.name)
    assert not {lab.tester_netns, lab.dut_netns} & netns_list()


def test_boot_timeout_names_the_serial_console_and_leaves_nothing() -> None:
    need_vm()
    name = f"vt{os.getpid()}{secrets.token_hex(2)}"
    lab = VmLab(name, vm=VmSettings("jool", boot_timeout=3), family=Family.NAT64)
    with pytest.raises(LabError, match=r"no SSH within 3 s; last lines of its serial console") as err:
        lab.up()
    assert "serial.log" in str(err.value)
    lab.down()
    assert not _qemu_pids(name)
    assert not {lab.tester_netns, lab.dut_netns} & netns_list()
