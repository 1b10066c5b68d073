"""``natbench report NAT --baseline FWD`` on two real lab runs (marker ``lab``, needs root).

An iptables NAT44 campaign (throughput) and a plain IPv4 forwarding campaign (forwarding through the
linux-forwarding recipe, no connection tracking) each bring up their own namespace lab through
``natbench run``'s path and write their own run directory; the report joins them by working point.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: builds the local lab (network namespaces, veth)"),
]

SEARCH = "repetitions: 1, lower: 500, upper: 3000, error: 1000, duration: 1, timeout: 0.5"


def _campaign(tmp_path: Path, name: str, dut: str, family: str, metric: str, more: str = "") -> Path:
    """A one-point campaign (1 core, 20 x 10 ports, 64-byte frames) measuring ``metric`` on ``dut`` in the lab."""
    path = tmp_path / f"{name}.yaml"
    lines = [
        "schema_version: 1",
        f"name: {name}{secrets.token_hex(2)}",
        "testbed:",
        "  tester: {kind: software}",
        "  duts:",
        f"    - {dut}",
        "traffic:",
        f"  family: {family}",
        "  src_ports: 40000-40019",
        "  dst_ports: 6000-6009",
        "sweep:",
        "  product:",
        "    cores: [1]",
        "metrics:",
        f"  {metric}: {{{SEARCH}{more}}}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def unmarked(cells: list[str]) -> list[str]:
    """Table cells without the host-load mark."""
    return [c.removesuffix(" [h]") for c in cells]


def test_nat_and_forwarding_lab_runs_report_the_throughput_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from natbench.run.runner import run_campaign

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path / "labs")
    nat_dut = "{name: iptables, recipe: iptables-nat44, role: nat44, access: {kind: lab}, params: {nat: snat}}"
    fwd_dut = "{name: router, recipe: linux-forwarding, role: forwarder, access: {kind: lab}}"
    nat_campaign = _campaign(tmp_path, "nat", nat_dut, "nat44", "throughput", ", fill_rate: 2000")
    nat = run_campaign(nat_campaign, tmp_path / "nat").path  # run directories given as the CLI's -o gives them
    fwd = run_campaign(_campaign(tmp_path, "fwd", fwd_dut, "ipv4", "forwarding"), tmp_path / "fwd").path

    def stored(run: Path, metric: str) -> float:
        lines = (run / "trials.jsonl").read_text().splitlines()
        (r,) = [x for x in map(json.loads, lines) if x["type"] == "result" and x["metric"] == metric]
        return float(r["extra"]["all_frames_per_second"])  # one repetition: its value is the median

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "natbench",
            "report",
            str(nat),
            "--baseline",
            str(fwd),
            "--format",
            "text",
            "--out",
            "-",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r[1:] for r in (re.split(r"\s{2,}", ln.strip()) for ln in proc.stdout.splitlines())}
    expected = 100 * stored(nat, "throughput") / stored(fwd, "forwarding")
    # a cell measured while other processes took the host's CPUs carries the mark " [h]" (docs/lab.md): the value is
    # the same
    assert unmarked(rows["throughput ratio (%)"]) == [f"{expected:.1f}"]
    assert unmarked(rows["fwd. throughput median"]) == [f"{stored(fwd, 'forwarding'):,.0f}"]
    assert "fwd. throughput invalid trials" in rows and "throughput invalid trials" in rows
