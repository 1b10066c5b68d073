"""`natbench validate` and `natbench plan`: output and exit codes (0 ok, 2 user error, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIG2 = "campaigns/seed000-fig2-iptables-cores.yaml"
BAD = "tests/data/bad_campaigns/zip-bad-port-range.yaml"


def natbench(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "natbench", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_validate_all_shipped_campaigns() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "campaigns").glob("*.yaml"))
    r = natbench("validate", "--no-recipes", *files)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(files)
    assert all(line.startswith(f"OK {f}: ") for line, f in zip(lines, files, strict=True))
    assert r.stderr == ""


def test_validate_checks_recipes() -> None:
    r = natbench("validate", FIG2, "campaigns/quickstart.yaml")
    assert r.returncode == 0, r.stderr
    assert all("recipes checked: 1 DUT(s)" in line for line in r.stdout.splitlines())


def test_validate_reports_every_bad_file_and_exits_2() -> None:
    r = natbench("validate", BAD, FIG2, "tests/data/bad_campaigns/duplicate-key.yaml")
    assert r.returncode == 2
    assert r.stdout.splitlines() == [next(line for line in r.stdout.splitlines() if line.startswith(f"OK {FIG2}"))]
    # FIG2's cps searches 4M connections down to 50/s, longer than its udp_timeout: a warning, not an error
    err = [line for line in r.stderr.splitlines() if not line.startswith(f"natbench: warning: {FIG2}: ")]
    assert err == [
        f"natbench: error: {BAD}:17: sweep.zip.src_ports[2]: "
        "invalid port range 1-70000: need 1 <= first <= last <= 65535",
        "natbench: error: tests/data/bad_campaigns/duplicate-key.yaml:12: traffic.src_ports: "
        "duplicate key 'src_ports' (first defined on line 11)",
    ]
    assert "Traceback" not in r.stderr


def test_plan_prints_the_five_fig2_points() -> None:
    r = natbench("plan", FIG2)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line[:1].isdigit() and "iptables-" in line]
    assert [row[1] for row in rows] == [f"iptables-{n}c-4M" for n in (1, 2, 4, 8, 16)]
    assert [row[3] for row in rows] == ["1", "2", "4", "8", "16"]
    for row in rows:
        assert row[4:8] == ["1-4000", "(4,000)", "1-1000", "(1,000)"]
        assert row[8] == "4,000,000"
    header = next(line for line in r.stdout.splitlines() if line.startswith("#"))
    reps_col = header.split().index("reps")
    assert {row[reps_col] for row in rows} == {"10"}
    # cps: 3 points of ceil(log2(5M / 100)) = 16 steps and 2 of ceil(log2(5M / 1000)) = 13, 74 x 10 repetitions =
    # 740 steps, each a phase 1 and (validation every_step) a validation: 1,480 trials; throughput: 3 points of
    # ceil(log2(7.44M / 100)) = 17 and 2 of ceil(log2(7.44M / 1000)) = 13, 77 x 10 = 770 trials
    assert "5 working points, 2,250 trials, estimated duration" in r.stdout


def test_plan_shows_what_the_fast_search_saves() -> None:
    r = natbench("plan", "campaigns/seed000-fig2-forwarding-cores.yaml")
    assert r.returncode == 0, r.stderr
    # binary: ceil(log2(upper / e)) steps per search on the grid of e: 7.44M / 200 -> 16, 7.44M / 500 -> 14,
    # 7.44M / 1,000 -> 13 (three points): 69 x 10 = 690 trials of 60 + 2 + 1 = 63 s = 43,470 s = 12.1 h. fast: the
    # first repetition searches the whole range with short trials (16, 14, 13, 13, 13 = 69 short trials of 1 + 2 +
    # 1 = 4 s) and confirms with 2 full ones; each of the 9 later repetitions walks from its seed with 3 full ones and
    # no probe: 69 short trials = 276 s, (2 + 27) x 5 = 145 full trials of 63 s = 9,135 s. 214 trials, 9,411 s =
    # 2.6 h; 43,470 / 9,411 = 4.62 -> 4.6x, saves 34,059 s = 9.5 h
    line = next(x for x in r.stdout.splitlines() if x.startswith("search algorithms:"))
    assert line.startswith(
        "search algorithms: binary 690 trials, 12.1 h; fast 214 trials, 2.6 h: 4.6x less tester time (saves 9.5 h;"
    )


def test_plan_json() -> None:
    r = natbench("plan", "--format", "json", "campaigns/quickstart.yaml")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [p["connections"] for p in data["points"]] == [16000, 32000, 64000]
    assert data["trials"] == sum(p["trials"] for p in data["points"])
    assert 0 < data["seconds"] < 600
    assert set(data["algorithms"]) == {"binary", "fast"}
    assert data["algorithms"]["binary"]["trials"] == data["trials"]  # the campaign's own choice is binary


def test_plan_of_a_bad_file_is_one_line_exit_2() -> None:
    r = natbench("plan", BAD)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"natbench: error: {BAD}:17: sweep.zip.src_ports[2]")


def test_missing_file_and_bad_usage_exit_2() -> None:
    r = natbench("plan", "nope.yaml")
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    r = natbench("validate")
    assert r.returncode == 2 and "Missing argument" in r.stderr


def test_validate_prints_warnings_but_passes(tmp_path: Path) -> None:
    text = (ROOT / "campaigns" / "quickstart.yaml").read_text().replace("udp_timeout: 300 ", "udp_timeout: 1 ")
    f = tmp_path / "short-timeout.yaml"
    f.write_text(text)
    r = natbench("validate", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"OK {f}: 3 working points")
    assert r.stderr.startswith(f"natbench: warning: {f}: DUT iptables: udp_timeout 1 s is shorter than")


def test_the_plan_never_states_a_negative_or_a_one_times_saving() -> None:
    """The audit saw "1.0x less tester time (saves -15 s)": a fast search that costs more, or as much, says so."""
    from natbench.campaign.estimate import Estimate, MetricEstimate, PointEstimate
    from natbench.campaign.planview import AlgorithmComparison
    from natbench.search.declare import algorithm
    from natbench.traffic import PortRange
    from natbench.workingpoint import WorkingPoint

    point = WorkingPoint(0, PortRange(1, 10), PortRange(1, 10), 64)

    def est(seconds: float) -> Estimate:
        return Estimate((PointEstimate(point, (MetricEstimate("cps", 3, 10, seconds),)),))

    def line(binary: float, fast: float) -> str:
        ref, other = algorithm("binary"), algorithm("fast")
        return AlgorithmComparison(ref, (other,), {"binary": est(binary), "fast": est(fast)}).line()

    assert "fast saves no tester time here" in line(100.0, 115.0)
    assert "fast saves no tester time here" in line(100.0, 100.0)
    near = line(100.0, 96.0)
    assert "only 4 % less tester time (saves 4 s;" in near and "1.0x" not in near
    assert "2.0x less tester time (saves 50 s;" in line(100.0, 50.0)


def test_the_plan_view_is_the_core_object_the_cli_renders() -> None:
    from natbench.campaign import load_campaign
    from natbench.campaign.planview import PlanView

    view = PlanView.build(load_campaign("campaigns/quickstart.yaml"))
    assert view.header[:8] == ("#", "label", "id", "cores", "src ports", "dst ports", "connections", "frame")
    assert [row[6] for row in view.rows] == ["16,000", "32,000", "64,000"]
    assert view.facts[0].startswith("campaign quickstart (campaigns/quickstart.yaml)")
    assert view.to_dict()["trials"] == view.estimate.trials
    r = natbench("plan", "--format", "plain", "campaigns/quickstart.yaml")
    assert r.returncode == 0, r.stderr
    assert view.total in r.stdout and "\n".join(view.facts) in r.stdout
