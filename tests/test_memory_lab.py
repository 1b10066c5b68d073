"""A real fill in the namespace lab's iptables NAT44 DUT stores its memory per connection (marker ``lab``, root).

One tear-down repetition of 20,000 connections through ``run_campaign`` (the path ``natbench run`` takes): its fill
trial must store the nf_conntrack slab's growth per connection. The plausible range is read from this kernel: the
slab figure is (allocated objects x object size) after the fill minus before, over the N connections the tester
created, so it is one ``objsize`` of the host's ``nf_conntrack`` cache per connection (256 B on this x86_64 kernel,
up to ~320 B with other configurations), give or take the free objects partly empty slabs held before the fill (a
few hundred at most: under 3 % of 20,000) and conntrack entries other namespaces created meanwhile (the slab is
host-wide). The test accepts 0.75 to 1.5 objsize: below, the DUT would not hold one entry per connection; above,
something else than the DUT's connections is being counted.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: builds the local lab (network namespaces, veth)"),
]

N = 200 * 100


def conntrack_objsize() -> int:
    text = Path("/proc/slabinfo").read_text()
    m = re.search(r"^nf_conntrack\s+\d+\s+\d+\s+(\d+)\s", text, re.MULTILINE)
    if m is None:
        pytest.skip("this kernel shows no nf_conntrack slab cache in /proc/slabinfo (merged or not loaded)")
    return int(m.group(1))


def test_a_lab_fill_stores_the_conntrack_slab_per_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from natbench.run.runner import run_campaign

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path / "labs")
    path = tmp_path / "memory.yaml"
    path.write_text(
        "\n".join(
            [
                "schema_version: 1",
                f"name: mem{secrets.token_hex(2)}",
                "testbed:",
                "  tester: {kind: software}",
                "  duts:",
                "    - {name: iptables, recipe: iptables-nat44, role: nat44, access: {kind: lab}, params: {nat: snat}}",
                "traffic:",
                "  family: nat44",
                "  src_ports: 40000-40199",  # 200 x 100 = 20,000 connections
                "  dst_ports: 6000-6099",
                "metrics:",
                "  teardown: {repetitions: 1, fill_rate: 20k, timeout: 0.5, gap: 0.2, max_invalid: 8}",
            ]
        )
        + "\n"
    )
    run = run_campaign(path, tmp_path / "out").path  # the run directory as the CLI's -o gives it
    trials = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    fills = [t for t in trials if t["type"] == "trial" and t["kind"] == "fill" and t["verdict"] == "pass"]
    assert fills, [t.get("reason") for t in trials if t["type"] == "trial"]
    mem = fills[-1]["extra"]["memory"]
    assert mem["connections"] == N  # the valid phase-1 frames: one connection each
    assert set(mem["before"]) >= {"mem_available", "mem_total", "conntrack_slab"}
    objsize = conntrack_objsize()
    per = mem["per_connection"]["conntrack_slab"]
    assert 0.75 * objsize <= per <= 1.5 * objsize, (per, objsize, mem)
    assert mem["used"]["conntrack_slab"] == pytest.approx(per * N)
    # the tear-down table shows it (one fill: its own figure is the median)
    import natbench
    from natbench.report.formatting import fmt_value

    table = natbench.load(run).seed_table("teardown")
    assert list(table.cells.loc["conntrack slab / conn. (B)"]) == [fmt_value(per)]
    # memory per connection is the slab figure where the DUT shows one (MemAvailable counts the whole host's churn)
    assert list(table.cells.loc["memory / conn. (B)"]) == [fmt_value(per)]
