"""bench/connection_scale.py at small sizes: every part runs in its own process and the table and growth ratios
come out; natbench's own bytes per connection are the documented ones (7 for a read table, 14 for TRex's read-mode
phase 2: the table and its random order, 8 and 6 for the software tester's arrays)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_bench_prints_each_parts_cost_and_growth_ratios() -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex parts need the client library (the 'trex' extra)")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "connection_scale.py"), "--sizes", "4k,16k"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    own = {}
    for part in ("read", "trex-fill", "trex-phase2", "soft-learn", "soft-compute"):
        block = out.split(f"\n{part}\n", 1)[1].split("\n\n", 1)[0]
        rows = re.findall(r"^\s+([\d,]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", block, re.M)
        assert [r[0] for r in rows] == ["4,000", "16,000"], block
        own[part] = {float(r[1]) for r in rows}
        assert "4,000 -> 16,000 (x4): CPU x" in block
    assert own["read"] == {7.0} and own["trex-phase2"] == {14.0}
    assert own["soft-learn"] == {8.0} and own["soft-compute"] == {6.0}


def test_the_bench_refuses_sizes_it_cannot_build() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "connection_scale.py"), "--sizes", "1500"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode != 0 and "multiples of 1,000" in res.stderr
