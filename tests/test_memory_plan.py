"""`natbench plan`'s memory check: will each point's connections fit in the DUT's memory? (issue 17 item 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from natbench.campaign import load_campaign
from natbench.campaign.feasibility import MEMORY_MARGIN, memory_check
from natbench.metrics.memory import memory_used
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir
from natbench.values import parse_bytes

ROOT = Path(__file__).resolve().parent.parent
DUT_PARAMS = "{nat: snat, private_if: a, public_if: b, private_address: 198.18.0.1/24, public_address: 198.19.0.1/24}"


def campaign(tmp_path: Path, dut_extra: str, dst_ports: list[int]) -> Path:
    """40,000 source ports x ``dst_ports`` connections per point (10,000 -> 400M, 20,000 -> 800M)."""
    text = f"""schema_version: 1
name: big
testbed:
  tester: {{kind: software}}
  duts:
    - {{name: iptables, recipe: iptables-nat44, role: nat44, access: {{kind: local}}, params: {DUT_PARAMS}{dut_extra}}}
traffic:
  family: nat44
sweep:
  zip:
    src_ports: {[40000] * len(dst_ports)}
    dst_ports: {dst_ports}
metrics:
  teardown: {{fill_rate: 1M}}
"""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def natbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "natbench", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64Gi", 64 * 2**30),  # IEC: 68,719,476,736
        ("256G", 256 * 10**9),  # SI
        ("256GiB", 274_877_906_944),
        ("512Mi", 536_870_912),
        ("2^36", 68_719_476_736),
        ("1.5T", 1_500_000_000_000),
        (4096, 4096),
    ],
)
def test_memory_sizes_read_si_and_iec(text: str | int, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["64Gx", "-1", "1.5", "lots", True, "99999999999999999999Ti", 2**65])
def test_a_bad_memory_size_is_a_value_error(text: object) -> None:
    with pytest.raises(ValueError, match=r"memory size|too large"):
        parse_bytes(text)


def test_800m_connections_at_350_bytes_do_not_fit_256_gib(tmp_path: Path) -> None:
    # usable: 90 % of 256 GiB = 0.9 x 274,877,906,944 = 247,390,116,250 B
    # 400M x 350 B = 140,000,000,000 B: fits; 800M x 350 B = 280,000,000,000 B: does not (even without the margin)
    # 720M x 350 B = 252,000,000,000 B: below 256 GiB but above its usable 90 %: warned about
    assert MEMORY_MARGIN == 0.10
    c = load_campaign(campaign(tmp_path, ", memory: 256Gi, bytes_per_connection: 350", [10000, 18000, 20000]))
    check = memory_check(c)
    assert len(check.warnings) == 2
    assert check.warnings[0].startswith("point 1 (iptables-720M): 720,000,000 connections x 350 B = 252.0 GB")
    assert check.warnings[1].startswith("point 2 (iptables-800M): 800,000,000 connections x 350 B = 280.0 GB")
    assert "iptables's memory (274.9 GB (256.0 GiB))" in check.warnings[1]


def test_without_bytes_per_connection_the_plan_says_what_it_could_not_check(tmp_path: Path) -> None:
    c = load_campaign(campaign(tmp_path, ", memory: 256Gi", [20000]))
    check = memory_check(c)
    assert check.warnings == ()
    assert check.notes == (
        "memory of DUT iptables not checked: the bytes one connection takes are not known "
        "(duts[].bytes_per_connection or plan --from RUN)",
    )
    r = natbench("plan", str(campaign(tmp_path, "", [20000])), "--format", "plain", "--no-recipes")
    assert r.returncode == 0 and r.stderr == ""
    assert "memory of DUT iptables not checked: its memory is not known (duts[].memory) and the bytes" in r.stdout


def test_plan_from_an_earlier_run_warns_per_point_and_validate_too(tmp_path: Path) -> None:
    # an earlier run: fills of 4,000 connections at 300 and 360 B/conn (median 330), one of 1,000 at 900 B/conn
    # (a small fill: fixed costs weigh more; the plan takes the run's largest N)
    p, q = make_point(0, (1, 400), (1, 10)), make_point(1, (1, 100), (1, 10))
    recs = [result_record(x.id, "teardown", 0, 1000.0, "conn/s", extra={"T_N": 2.0, "T_0": 1.0}) for x in (p, q)]
    for i, (point, n, per) in enumerate(((p, 4000, 300), (p, 4000, 360), (q, 1000, 900))):
        # MemAvailable's fall (1.2 MB and more) stands well out of the 4 kB spread of the emptied table's readings
        mem = memory_used({"mem_available": 10**10}, {"mem_available": 10**10 - per * n}, n, {"mem_available": 4096})
        recs.append(trial_record(point.id, "teardown", i, 0, rate=n, kind="fill", extra={"memory": mem}))
    run = write_run_dir(tmp_path / "earlier", [p, q], recs)
    path = campaign(tmp_path, ", memory: 256Gi", [10000, 20000])
    r = natbench("plan", str(path), "--from", str(run), "--format", "plain", "--no-recipes")
    assert r.returncode == 0, r.stderr
    # 800M x 330 B = 264.0 GB > 247.4 GB usable; 400M x 330 B = 132.0 GB fits
    assert r.stderr.splitlines() == [
        f"natbench: warning: {path}: point 1 (iptables-800M): 800,000,000 connections x 330 B = 264.0 GB "
        "(245.9 GiB) exceed 90 % of DUT iptables's memory (274.9 GB (256.0 GiB)): the table may not fit"
    ]
    assert "330 B per connection (median of 2 fills of 4,000 connections in run" in r.stdout
    js = json.loads(natbench("plan", str(path), "--from", str(run), "--format", "json", "--no-recipes").stdout)
    assert [w.split(":")[0] for w in js["memory"]["warnings"]] == ["point 1 (iptables-800M)"]
    # validate reads the campaign only: with bytes_per_connection in it, it warns too (exit 0)
    v = natbench(
        "validate", "--no-recipes", str(campaign(tmp_path, ", memory: 256Gi, bytes_per_connection: 330", [20000]))
    )
    assert v.returncode == 0
    assert "point 0 (iptables-800M): 800,000,000 connections x 330 B" in v.stderr


def test_plan_from_a_directory_that_is_no_run_exits_2(tmp_path: Path) -> None:
    path = campaign(tmp_path, ", memory: 256Gi", [10000])
    r = natbench("plan", str(path), "--from", str(tmp_path), "--format", "plain", "--no-recipes")
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("natbench: error: --from: ")


def test_a_bad_memory_in_the_campaign_names_file_line_and_field(tmp_path: Path) -> None:
    path = campaign(tmp_path, ", memory: 64Gx", [10000])
    r = natbench("validate", "--no-recipes", str(path))
    assert r.returncode == 2
    assert r.stderr.startswith(f"natbench: error: {path}:6: testbed.duts[0].memory: ")
    assert "64Gi" in r.stderr and len(r.stderr.splitlines()) == 1
