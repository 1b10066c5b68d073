"""MAP-T with a real Jool 4.2 in two QEMU VMs of the lab (marker ``vm``: root, qemu, a Jool 4.2 source).

The CE (``jool-mapt-ce``: NAT44 in the ``napt`` namespace into the port set 24576-32767 of 192.0.2.35,
then the ``jool_mapt`` CE) and the BR (``jool-mapt-br``) boot from the ``jool-mapt`` image in path order,
as ``campaigns/lab-mapt.yaml`` describes them: phase 1 must leave exactly N connections in the CE's
conntrack, the Responder must answer every tuple both from the mappings read from the CE (``read``) and
from what it learned in phase 1 (``learn``), ``timed_flush`` must empty the table, and the campaign must
run end to end with values and the CE's and BR's per-core CPU sampled.

The image is the cached ``jool-mapt`` one, or is built first from ``NATBENCH_JOOL_SOURCE`` (a Jool 4.2
source tree, release tarball or URL); without either every test skips, naming both.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_helpers import kept_rate

from natbench.campaign import load_campaign
from natbench.duts.group import DutGroup
from natbench.duts.parsers_jool_pf import MAPT_VERSIONS
from natbench.results import Direction, PhaseResult
from natbench.run.reader import RunDirectory
from natbench.testbed import Testbed, build_testbed
from natbench.testbed.lab import VmLab
from natbench.testbed.lab.host import netns_list
from natbench.testbed.lab.vm_image import build_image, find_image, missing_tools
from natbench.traffic import Family, PortRange, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "campaigns" / "lab-mapt.yaml"
SOURCE_ENV = "NATBENCH_JOOL_SOURCE"
SRC, DST = PortRange(20000, 20099), PortRange(7000, 7004)  # 500 connections
N = len(SRC) * len(DST)
RATE = 500  # frames/s: well below what two emulated VMs in a row translate
CE_PORTS = range(24576, 32768)


def need_mapt_image() -> None:
    """Skip, naming why, unless this is root with qemu and the jool-mapt image (cached, or built now from the
    source ``NATBENCH_JOOL_SOURCE`` names)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, taps, QEMU)")
    problems = missing_tools(("qemu-system-x86_64", "qemu-img"))
    if problems:
        pytest.skip(problems[0])
    if find_image("jool-mapt") is not None:
        return
    source = os.environ.get(SOURCE_ENV)
    if not source:
        pytest.skip(
            f"the VM image 'jool-mapt' is not built and {SOURCE_ENV} names no Jool 4.2 source"
            " (natbench lab image build jool-mapt --jool-source PATH, or set the variable)"
        )
    build_image("jool-mapt", jool_source=source, progress=lambda msg: print(msg, file=sys.stderr))


@pytest.fixture(scope="module")
def pair() -> Iterator[Testbed]:
    need_mapt_image()
    testbed = build_testbed(load_campaign(CAMPAIGN))
    try:
        yield testbed
    finally:
        testbed.close()
    lab = testbed.lab
    assert isinstance(lab, VmLab)
    assert not {lab.tester_netns, lab.dut_netns} & netns_list()


def test_ce_and_br_in_path_order_read_and_learn(pair: Testbed) -> None:
    """Exactly N connections in the CE's napt conntrack after phase 1, all SNATed into the CE's port set;
    the Responder answers every one with the mappings read from the CE and with those it learned."""
    lab, dut, tester = pair.lab, pair.dut, pair.tester
    assert isinstance(lab, VmLab) and [v.dut for v in lab.vms] == ["ce", "br"]
    assert isinstance(dut, DutGroup)
    dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64))
    try:
        lab.after_dut_setup()
        facts = dut.facts()
        assert facts["ce"]["jool_mapt_release"] in MAPT_VERSIONS.values()
        assert facts["br"]["jool_version"] == facts["ce"]["jool_version"]
        assert facts["ce"]["vm"]["path_position"] == 0 and facts["br"]["vm"]["path_position"] == 1

        for mode in (ResponderMode.READ, ResponderMode.LEARN):
            tester.prepare(TrafficPlan(Family.NAT44, lab.addresses, SRC, DST, 64, seed=7, responder_mode=mode))

            def fill(learn: bool = mode is ResponderMode.LEARN) -> PhaseResult:
                dut.reset_connections()
                return tester.phase1(RATE, learn=learn)

            r = kept_rate(fill)
            assert r.counts[Direction.FORWARD].valid == N, (mode, r.counts)
            assert dut.count_connections() == N  # the CE's NAPT, the only state of MAP-T
            if mode is ResponderMode.READ:
                maps = dut.mappings()
                assert len(maps) == N
                assert {m.public_address for m in maps} == {"192.0.2.35"}
                assert all(m.public_port in CE_PORTS for m in maps)
                tester.load_mappings(maps)
            v = kept_rate(lambda: tester.validate(RATE))
            assert v.counts[Direction.REVERSE].valid == N, (mode, v.counts)
        seconds = dut.timed_flush()
        assert 0 <= seconds < 30
        assert dut.count_connections() == 0
    finally:
        dut.teardown()


def test_lab_mapt_campaign_end_to_end(tmp_path: Path) -> None:
    """``natbench run campaigns/lab-mapt.yaml --monitor 1``: complete, a cps and a throughput value for every point
    (no tear-down: a few thousand entries are deleted within the emulated VM's timing noise, docs/lab.md), and
    per-core CPU samples of both the CE and the BR stored with the traffic trials."""
    need_mapt_image()
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "run", str(CAMPAIGN), "-o", str(run_dir), "--monitor", "1", "--no-progress"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = RunDirectory.open(run_dir)
    assert run.status == "complete"
    values: dict[tuple[str, str], list[float | None]] = {}
    for res in run.results():
        values.setdefault((res.point_id, res.metric), []).append(res.value)
    points = {p for p, _ in values}
    assert len(points) == 2
    for point in points:
        for metric in ("cps", "throughput"):
            got = values.get((point, metric))
            assert got and all(v is not None and v > 0 for v in got), (point, metric, values)
    assert {m for _, m in values} == {"cps", "throughput"}
    monitored = [t for t in run.trials() if t.metric == "throughput" and t.kind == "phase2" and "monitor" in t.extra]
    assert monitored
    for trial in monitored:
        assert {"ce", "br"} <= set(trial.extra["monitor"]), trial.extra["monitor"]
        for dut in ("ce", "br"):
            cores = trial.extra["monitor"][dut]["idle"]
            assert cores and all(0 <= x <= 100 for series in cores.values() for x in series if x is not None)
