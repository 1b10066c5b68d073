"""The MAP-T CE recipe's stateful half for real: the napt namespace, the veth pair, the iptables
SNAT into the CE's port set and conntrack inside napt, built by the recipe (Fig. 23's commands)
in a throw-away DUT namespace. Only jool_mapt and modprobe are recorders (no Jool kernel module
here); ip, iptables, sysctl and conntrack are the real tools.

UDP frames from the client namespace are SNATed in napt to 192.0.2.35:24576-32767; the recipe's
count, mappings and DUT-timed flush read napt's conntrack table; teardown leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import seed004_params as seed
from nslab import ns_lab, send_udp
from recorder_shell import RecorderShell

from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces, veth and iptables"),
    pytest.mark.skipif(shutil.which("conntrack") is None, reason="conntrack (conntrack-tools) is not installed"),
]

HERE = Path(__file__).parent
POINT = WorkingPoint(index=0, src_ports=PortRange(1, 10), dst_ports=PortRange(1, 5), frame_size=64)


def netns_list() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


def test_napt_half_of_the_mapt_ce_in_namespaces(tmp_path: Path) -> None:
    bindir, data, record = tmp_path / "bin", tmp_path / "data", tmp_path / "record.tsv"
    bindir.mkdir()
    data.mkdir()
    for name in ("jool_mapt", "modprobe"):
        os.symlink(HERE / "recorders" / "recorder", bindir / name)
    shutil.copy(HERE / "data/jool/version-4.2.0-rc2.txt", data / "jool-version.txt")
    with ns_lab(configure_dut_addresses=False) as lab:
        tag = lab.dut[:-1]
        napt = f"{tag}n"
        # no duplicate address detection delay on the IPv6 side, so the DMR route's next hop is on-link at once
        subprocess.run(
            ["ip", "netns", "exec", lab.dut, "sysctl", "-qw", f"net.ipv6.conf.{lab.dut_public_if}.accept_dad=0"],
            check=True,
        )
        params = {
            **seed.MAPT_CE,
            "private_if": lab.dut_private_if,
            "public_if": lab.dut_public_if,
            "napt_netns": napt,
            "napt_veth": f"{tag}x",
            "global_veth": f"{tag}y",
            "udp_timeout": 600,
            "rps_global_cpus": None,
            "rps_napt_cpus": None,
        }
        dut = RecipeDut(
            "ce", load_recipe("jool-mapt-ce"), RecorderShell(NetnsExecutor(lab.dut), bindir, record, data), params
        )
        dut.setup(POINT)
        try:
            assert napt in netns_list()
            rules = dut.facts()["napt_rules"]
            assert any("--to-source 192.0.2.35:24576-32767" in r for r in rules), rules
            assert dut.facts()["jool_mapt_release"] == "4.2.0-rc2"
            assert dut.count_connections() == 0
            send_udp(lab, (100, 100), (100, 100))  # resolve the neighbours on the path first
            time.sleep(0.3)
            dut.reset_connections()
            assert dut.count_connections() == 0
            n = send_udp(lab, (1, 10), (1, 5))
            assert dut.count_connections() == n
            maps = dut.mappings()
            assert len(maps) == n
            assert {m.public_address for m in maps} == {"192.0.2.35"}
            assert all(24576 <= m.public_port <= 32767 for m in maps)
            assert {(m.private_port, m.remote_port) for m in maps} == {
                (s, d) for s in range(1, 11) for d in range(1, 6)
            }
            seconds = dut.timed_flush()
            assert 0 <= seconds < 10
            assert dut.count_connections() == 0
        finally:
            dut.teardown()
        assert napt not in netns_list()
        links = subprocess.run(["ip", "-n", lab.dut, "-o", "link"], capture_output=True, text=True, check=True).stdout
        assert f"{tag}x" not in links  # the veth pair is gone
        assert lab.dut_private_if in links  # the private interface is back in the DUT's namespace
        recorded = [ln.split("\t") for ln in record.read_text().splitlines()]
        assert ["jool_mapt", "-i", "CE 11b", "global", "update", "map-t-type", "CE"] in recorded
        assert (
            recorded[-1] == ["modprobe", "-r", "jool_mapt"] or ["jool_mapt", "instance", "remove", "CE 11b"] in recorded
        )
