"""`natbench plan`'s memory check: will each point's connections fit in the DUT's memory? (issue 17 item 10)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
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


# -- at scale in the local lab: the host's memory, the slab's object size, fill and delete-all times (issue 44 item 4)


def lab_campaign(tmp_path: Path, src: list[int], dst: list[int], metrics: str, access: str = "{kind: lab}") -> Path:
    text = f"""schema_version: 1
name: lab-scale
testbed:
  tester: {{kind: software}}
  duts:
    - {{name: iptables, recipe: iptables-nat44, role: nat44, access: {access}, params: {{nat: snat}}}}
traffic:
  family: nat44
sweep:
  zip:
    src_ports: {src}
    dst_ports: {dst}
metrics:
{metrics}
"""
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


@dataclass(frozen=True)
class Host:
    """A host's memory and slab object sizes as given (the rule's arithmetic; ThisHost reads the real ones)."""

    mem: int | None
    slabs: dict[str, int]

    def memory(self) -> int | None:
        return self.mem

    def slab_bytes(self, cache: str) -> int | None:
        return self.slabs.get(cache)


TEARDOWN_120K = "  teardown: {fill_rate: 120k}"


@pytest.mark.parametrize(
    ("memory", "warned"),
    [(2_500_000_000, False), (2_499_999_999, True)],
    ids=["90-percent-holds-the-table", "one-byte-short"],
)
def test_a_lab_dut_is_checked_against_this_hosts_memory_with_its_slab_object_size(
    tmp_path: Path, memory: int, warned: bool
) -> None:
    # 9,000,000 connections x 250 B = 2,250,000,000 B = exactly 90 % of 2,500,000,000 B
    c = load_campaign(lab_campaign(tmp_path, [3000], [3000], TEARDOWN_120K))
    check = memory_check(c, host=Host(memory, {"nf_conntrack": 250}))
    assert check.points[0].tables == (("iptables", 2_250_000_000.0),)
    assert bool(check.warnings) is warned
    if warned:
        assert check.warnings[0] == (
            "point 0 (iptables-9M): 9,000,000 connections x 250 B = 2.2 GB (2.1 GiB) exceed 90 % of this host's "
            "(DUT iptables runs in its local lab) memory (2.5 GB (2.3 GiB)): the table may not fit"
        )
    assert "250 B per connection (the slab objects of nf_conntrack 250 B on this host" in check.notes[0]


def test_the_figures_a_campaign_or_a_run_gives_come_before_the_hosts(tmp_path: Path) -> None:
    c = load_campaign(lab_campaign(tmp_path, [3000], [3000], TEARDOWN_120K))
    host = Host(10**12, {"nf_conntrack": 250})
    assert memory_check(c, 400.0, "run r", host=host).points[0].tables == (("iptables", 3_600_000_000.0),)
    path = lab_campaign(tmp_path, [3000], [3000], TEARDOWN_120K)
    path.write_text(path.read_text().replace("params: {nat: snat}", "params: {nat: snat}, bytes_per_connection: 300"))
    check = memory_check(load_campaign(path), 400.0, "run r", host=host)
    assert check.points[0].tables == (("iptables", 2_700_000_000.0),)  # the campaign's own figure first
    path.write_text(path.read_text().replace(", bytes_per_connection: 300", ", memory: 1Gi"))
    check = memory_check(load_campaign(path), host=host)
    assert "memory of DUT iptables: DUT iptables's 1.1 GB (1.0 GiB)" in check.notes[0]  # duts[].memory first
    assert memory_check(c, host=Host(None, {})).notes == (
        "memory of DUT iptables not checked: its memory is not known (duts[].memory) and the bytes one connection "
        "takes are not known (duts[].bytes_per_connection or plan --from RUN)",
    )


def test_a_vm_dut_has_its_vms_memory_and_no_slab_guess_from_this_host(tmp_path: Path) -> None:
    access = "{kind: lab, vm: jool, memory: 2048}"
    c = load_campaign(lab_campaign(tmp_path, [3000], [3000], TEARDOWN_120K, access=access))
    check = memory_check(c, host=Host(10**12, {"nf_conntrack": 250}))
    assert check.points[0].tables == ()  # the VM's kernel is not this host's
    assert check.notes[0].startswith("memory of DUT iptables not checked: the bytes one connection takes")
    check = memory_check(c, 400.0, "run r", host=Host(10**12, {}))
    assert "DUT iptables's 2.1 GB (2.0 GiB)" in check.notes[0]  # 2048 MiB


def test_each_point_has_its_fill_time_at_the_slowest_fill_rate_and_its_delete_all_time(tmp_path: Path) -> None:
    from natbench.metrics.teardown_resolution import DeletionProfile

    metrics = "  throughput: {fill_rate: 200k, upper: 100k, error: 10k}\n  teardown: {fill_rate: 125k}"
    c = load_campaign(lab_campaign(tmp_path, [2500, 10000], [625, 2500], metrics))
    check = memory_check(c, host=Host(None, {}))
    assert [(s.connections, s.fill_seconds) for s in check.points] == [(1_562_500, 12.5), (25_000_000, 200.0)]
    assert check.points[1].flush_seconds == pytest.approx(25_000_000 / 413_360)  # the seeds' iptables figure
    measured = DeletionProfile(180_000, 0.02, "run r")
    check = memory_check(c, deletion=measured, host=Host(None, {}))
    assert check.points[1].flush_seconds == pytest.approx(25_000_000 / 180_000)
    assert check.time_notes[-1] == "delete-all times at 180,000 connections/s (run r)"
    only_cps = load_campaign(lab_campaign(tmp_path, [2500], [625], "  cps: {upper: 1M, error: 10k}"))
    assert memory_check(only_cps, host=Host(None, {})).points[0].fill_seconds is None  # no metric fills


def test_this_host_is_read_from_proc_and_sys_and_falls_back_to_slabinfo(tmp_path: Path) -> None:
    from natbench.campaign.feasibility import ThisHost

    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:       24683772 kB\nMemFree:  1 kB\n")
    (tmp_path / "proc" / "slabinfo").write_text(
        "slabinfo - version: 2.1\nnf_conntrack       10048  10048    320   16    1 : tunables    0    0    0\n"
    )
    host = ThisHost(tmp_path / "proc", tmp_path / "sys")
    assert host.memory() == 24683772 * 1024
    assert host.slab_bytes("nf_conntrack") == 320 and host.slab_bytes("other") is None
    (tmp_path / "sys" / "kernel" / "slab" / "nf_conntrack").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "slab" / "nf_conntrack" / "slab_size").write_text("256\n")
    assert host.slab_bytes("nf_conntrack") == 256  # SLUB's sysfs first (readable by anyone)
    assert ThisHost(tmp_path / "none", tmp_path / "none").memory() is None


def test_plan_shows_table_memory_fill_and_delete_all_per_point_for_the_lab_campaign() -> None:
    from natbench.campaign.feasibility import THIS_HOST

    slab = THIS_HOST.slab_bytes("nf_conntrack")
    if slab is None or THIS_HOST.memory() is None:
        pytest.skip("this host shows no nf_conntrack slab cache (the module is not loaded)")
    r = natbench("plan", "campaigns/lab-seed000-fig4-scale.yaml", "--format", "json")
    assert r.returncode == 0, r.stderr
    points = json.loads(r.stdout)["points"]
    assert [p["connections"] for p in points] == [1_562_500, 6_250_000, 25_000_000]
    assert [p["table_memory"]["iptables"] for p in points] == [n * slab for n in (1_562_500, 6_250_000, 25_000_000)]
    assert [p["fill_seconds"] for p in points] == pytest.approx([1_562_500 / 120e3, 6_250_000 / 120e3, 25e6 / 120e3])
    plain = natbench("plan", "campaigns/lab-seed000-fig4-scale.yaml", "--format", "plain").stdout
    header = next(line for line in plain.splitlines() if line.startswith("#  label"))
    assert header.split()[-4:] == ["table", "mem.", "fill", "delete-all"]
    row = next(line for line in plain.splitlines() if line.startswith("2  iptables-25M"))
    # the table's memory, 208 s of fill, 25M / 413,360 connections/s
    cells = re.search(r"  (\S+ GB) +(\S+ min) +(\S+ s)$", row)
    assert cells is not None and cells.groups() == (f"{25_000_000 * slab / 1e9:.1f} GB", "3 min", "60 s"), row
