"""Seed 000 Figure 2 from the two run directories its two campaigns write: ``natbench report NAT --baseline FWD``.

The NAT campaign (campaigns/seed000-fig2-iptables-cores.yaml: cps, throughput) and the plain forwarding
campaign (campaigns/seed000-fig2-forwarding-cores.yaml: forwarding on a stateless DUT) each write a run
directory. Here both are written by the engine's store (RunStore) with results built by the engine's own
result code, holding the values the seed prints (tests/conftest.py, fig2_store_runs); the golden file
tests/golden/seed000-fig2.txt is the figure as printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIG2_CPS, FIG2_FWD, FIG2_TP, fig2_store_runs, store_campaign_run

import natbench
from natbench.cli import cli
from natbench.errors import ConfigError
from natbench.plugins import Directions
from natbench.run.runner import start_run
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.workingpoint import WorkingPoint

GOLDEN = Path(__file__).parent / "golden" / "seed000-fig2.txt"
BLOCK = "IPv4 packet forwarding (using the same port number ranges)"

# The seed's row names -> natbench's. The seed prints one "error" row above the cps rows that holds for cps and
# throughput alike (section 2.2: the search error, "lower than 0.1% of the expected results"); natbench prints
# it per metric. Below the forwarding heading the seed reuses the throughput row names.
NAT_ROWS = {
    "num. CPU cores": ["num. CPU cores"],
    "src ports": ["src ports"],
    "dst ports": ["dst ports"],
    "num. conn.": ["num. conn."],
    "conntrack t. s.": ["conntrack t. s."],
    "hash table size": ["hash table size"],
    "c.t.s/num.conn.": ["c.t.s/num.conn."],
    "num. experiments": ["num. experiments"],
    "error": ["cps error", "throughput error"],
    "cps median": ["cps median"],
    "cps min": ["cps min"],
    "cps max": ["cps max"],
    "cps rel. scale up": ["cps rel. scale up"],
    "throughput median": ["throughput median"],
    "throughput min": ["throughput min"],
    "throughput max": ["throughput max"],
    "tp. rel. scale up": ["tp. rel. scale up"],
}
FWD_ROWS = {
    "error": ["fwd. throughput error"],
    "throughput median": ["fwd. throughput median"],
    "throughput min": ["fwd. throughput min"],
    "throughput max": ["fwd. throughput max"],
    "tp. rel. scale up": ["fwd. rel. scale up"],
    "throughput ratio (%)": ["throughput ratio (%)"],
}
# natbench prints one row Figure 2 does not: connections / hash size (Figures 4 and 5 print it), 4,000,000 / 2^23
EXTRA_ROWS = {"n.c./h.t.s.": "0.477 0.477 0.477 0.477 0.477"}


def seed_figure() -> dict[str, list[str]]:
    """The golden figure's rows under natbench's names (each cell as printed)."""
    rows: dict[str, list[str]] = {}
    names = NAT_ROWS
    for line in GOLDEN.read_text().splitlines():
        if line == BLOCK:
            names = FWD_ROWS
            continue
        name = next(n for n in sorted(names, key=len, reverse=True) if line.startswith(n + " "))
        for ours in names[name]:
            rows[ours] = line[len(name) :].split()
    return rows


def report_rows(*args: str) -> tuple[list[str], dict[str, list[str]], str]:
    """Run ``python -m natbench report ARGS --format text --out -``: (row names in order, cells, whole output)."""
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "report", *args, "--format", "text", "--out", "-"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    body = lines[lines.index(next(ln for ln in lines if ln.startswith("---"))) + 1 :]
    body = body[: body.index("")]
    order, cells = [], {}
    for ln in body:
        name, *values = [part for part in ln.split("  ") if part]
        order.append(name.strip())
        cells[name.strip()] = [v.strip() for v in values]
    return order, cells, proc.stdout


def test_seed000_figure2_from_the_nat_run_and_the_forwarding_run(tmp_path: Path) -> None:
    """Every row of Figure 2, the throughput ratio (%) row and both error rows included, comes out of
    ``natbench report NAT --baseline FWD --scale k`` cell for cell, in the figure's order; the one cell the
    seed computed from medians it does not print is the next test's."""
    nat, fwd = fig2_store_runs(tmp_path)
    order, cells, text = report_rows(str(nat), "--baseline", str(fwd), "--scale", "k")
    seed = seed_figure()
    # 2 cores: the seed prints 48.8 from unrounded medians; the printed ones give 742.3 / 1,523 = 48.74 % -> 48.7
    assert cells["throughput ratio (%)"][1] == "48.7"
    seed["throughput ratio (%)"][1] = "48.7"
    for name, expected in seed.items():
        assert cells[name] == expected, name
    expected_order = [n for n in order if n in seed or n in EXTRA_ROWS]
    assert order == expected_order  # no row the figure does not have, except the ones listed
    # the figure's order; the seed's one error row is each metric's first row in natbench
    figure_order = [n for n in seed if n != "throughput error"]
    figure_order.insert(figure_order.index("throughput median"), "throughput error")
    assert [n for n in order if n in seed] == figure_order
    assert {n: " ".join(cells[n]) for n in EXTRA_ROWS} == EXTRA_ROWS
    # the caption says what the error row is and where the baseline came from
    caption = " ".join(text.split())
    assert "Error: final width (upper - lower) of the binary search" in caption
    assert "per direction for frame rates (not multiplied by the number of directions)" in caption
    assert f"baseline run seed000-fig2-forwarding-cores ({fwd})" in caption


def test_seed000_figure2_ratio_cell_computed_from_unrounded_medians(tmp_path: Path) -> None:
    """2 cores: 742.3 k / 1,523 k = 48.74 % (the report's 48.7). The medians the seed rounded lie within
    742.25..742.35 and 1,522.5..1,523.5, so the true ratio lies within 742.25 / 1,523.5 = 48.720 % and
    742.35 / 1,522.5 = 48.759 %, which holds the report's value and prints as 48.8 at its upper end (the seed)."""
    nat, fwd = fig2_store_runs(tmp_path)
    ratio = float(natbench.load(nat, baseline=fwd).seed_table().values.loc["throughput ratio (%)"].iloc[1])
    assert ratio == pytest.approx(742.3 / 1523)
    assert 742.25 / 1523.5 <= ratio <= 742.35 / 1522.5
    assert round(100 * 742.35 / 1522.5, 1) == 48.8


def test_the_stored_records_are_the_engines_per_direction_rates_and_widths(tmp_path: Path) -> None:
    """What the golden runs hold on disk: throughput and forwarding per direction (half the printed all-frames
    figure: the 1-core minima 413.9 k / 2 = 206,950 and 874.8 k / 2 = 437,400 fps), the search width as printed
    (100 and 200), never halved or doubled."""
    nat, fwd = fig2_store_runs(tmp_path)
    stored = [json.loads(ln) for d in (nat, fwd) for ln in (d / "trials.jsonl").read_text().splitlines()]
    tp = [r for r in stored if r["metric"] == "throughput" and r["value"] == pytest.approx(206_950)]
    assert len(tp) == 1 and tp[0]["error"] == 100
    assert tp[0]["extra"]["all_frames_per_second"] == pytest.approx(413_900)
    fw = [r for r in stored if r["metric"] == "forwarding" and r["value"] == pytest.approx(437_400)]
    assert len(fw) == 1 and fw[0]["error"] == 200 and fw[0]["extra"]["upper"] - fw[0]["extra"]["lower"] == 200


def test_fixture_results_have_the_shape_the_engine_stores(tmp_path: Path) -> None:
    """The golden fixtures' result records carry the same fields, units and direction conventions as the results
    a real run (runner, store, fake tester and DUT) stores for cps, throughput and forwarding."""
    nat, fwd = fig2_store_runs(tmp_path / "golden")
    engine_nat, engine_fwd = _engine_runs(tmp_path / "engine")

    def shapes(*dirs: Path) -> dict[str, tuple[str, frozenset[str], int | None]]:
        out = {}
        for d in dirs:
            for ln in (d / "trials.jsonl").read_text().splitlines():
                r = json.loads(ln)
                if r["type"] == "result":
                    out[r["metric"]] = (r["unit"], frozenset(r["extra"]), r["extra"].get("directions"))
                    if r["metric"] != "cps":  # all frames = per-direction value x directions, width = upper - lower
                        assert r["extra"]["all_frames_per_second"] == r["value"] * r["extra"]["directions"]
                    assert r["error"] == r["extra"]["upper"] - r["extra"]["lower"]
        return out

    assert shapes(nat, fwd) == shapes(engine_nat, engine_fwd)


def test_the_python_api_takes_a_baseline_run(tmp_path: Path) -> None:
    nat, fwd = fig2_store_runs(tmp_path)
    run = natbench.load(nat, baseline=fwd)
    assert run.baseline is not None and run.baseline.path == fwd
    assert len(run.baseline_points) == 5
    cores = {run.points.loc[p, "cores"]: run.baseline.points.loc[b, "cores"] for p, b in run.baseline_points.items()}
    assert cores == {1.0: 1.0, 2.0: 2.0, 4.0: 4.0, 8.0: 8.0, 16.0: 16.0}
    # 414.9 / 910.9 = 0.4555, 4,557 / 11,561 = 0.3942
    ratio = run.seed_table().values.loc["throughput ratio (%)"]
    assert ratio.iloc[0] == pytest.approx(414.9 / 910.9) and ratio.iloc[4] == pytest.approx(4557 / 11561)
    # without the baseline the NAT run alone has neither block nor ratio
    alone = natbench.load(nat).seed_table()
    assert "fwd. throughput median" not in alone.cells.index and "throughput ratio (%)" not in alone.cells.index


def test_the_html_report_names_the_baseline_run(tmp_path: Path) -> None:
    nat, fwd = fig2_store_runs(tmp_path)
    res = CliRunner().invoke(
        cli, ["report", str(nat), "--baseline", str(fwd), "--format", "html", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Baseline run</h2>" in page and str(fwd) in page
    assert "<th>iptables-8c-4M</th><td style='text-align:left'>ipv4-fwd-8c-4M</td>" in page


def _cli_error(*args: str, out: Path) -> tuple[int, str, str]:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "report", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_points_without_a_baseline_are_named_in_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    nat = fig2_store_runs(tmp_path)[0]
    # a forwarding run measured at 1, 2 and 4 cores only (the campaign's first three points)
    short = store_campaign_run(
        tmp_path / "fwd3",
        "seed000-fig2-forwarding-cores.yaml",
        {"forwarding": FIG2_FWD},
        {"forwarding": [200.0, 500.0, 1000.0, 1000.0, 1000.0]},
        scale=1e3,
        repetitions=3,
        only=[0, 1, 2],
    )
    rc, out, err = _cli_error(str(nat), "--baseline", str(short), out=tmp_path / "rep")
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"natbench: error: {short}: no forwarding result at 2 of the 5")
    assert "iptables-8c-4M (8 cores, ports 1-4000 x 1-1000, 64-byte frames)" in err
    assert "iptables-16c-4M (16 cores" in err and "iptables-4c-4M (4" not in err.split("The baseline run")[0]
    assert not (tmp_path / "rep").exists()


def test_a_baseline_run_without_forwarding_results_is_refused(tmp_path: Path) -> None:
    nat = fig2_store_runs(tmp_path)[0]
    rc, _, err = _cli_error(str(nat), "--baseline", str(nat), out=tmp_path / "rep")
    assert rc == 2
    assert err == (
        f"natbench: error: {nat}: no forwarding (plain forwarding throughput) results to use as the baseline"
        f" of {nat}; it holds cps, throughput\n"
    )


def test_a_run_that_measured_forwarding_itself_takes_no_second_baseline(fig2_dir: Path, tmp_path: Path) -> None:
    fwd = fig2_store_runs(tmp_path)[1]
    with pytest.raises(ConfigError, match="holds forwarding results of its own"):
        natbench.load(fig2_dir, baseline=fwd)
    # the one-run case itself is unchanged: forwarding block and ratio from the same run
    assert natbench.load(fig2_dir).seed_table().cells.loc["throughput ratio (%)"].tolist()[0] == "45.5"


def test_a_nat_run_without_throughput_has_nothing_to_compare(tmp_path: Path) -> None:
    cps_only = store_campaign_run(
        tmp_path / "cps",
        "seed000-fig2-iptables-cores.yaml",
        {"cps": FIG2_CPS},
        {"cps": [100.0] * 5},
        scale=1e3,
        repetitions=3,
    )
    fwd = fig2_store_runs(tmp_path)[1]
    with pytest.raises(ConfigError, match=r"cps: no throughput results to compare with the baseline"):
        natbench.load(cps_only, baseline=fwd)


def test_the_baseline_is_matched_by_frame_size_and_port_ranges(tmp_path: Path) -> None:
    """A forwarding run at 64 and 1518 bytes: the NAT's 64-byte throughput takes the 64-byte baseline
    (414.9 / 910.9 = 45.5 %, not 414.9 / 500 = 83.0 %). With other port ranges there is no baseline."""
    nat = _nat_1core(tmp_path)
    sizes = store_campaign_run(
        tmp_path / "sizes",
        "seed000-fig2-forwarding-cores.yaml",
        {"forwarding": [FIG2_FWD[0], (500.0, 490.0, 510.0)]},
        {"forwarding": [200.0, 200.0]},
        scale=1e3,
        repetitions=3,
        edit=lambda text: (
            text.replace("frame_sizes: [64]", "frame_sizes: [64, 1518]")
            .replace("cores: [1, 2, 4, 8, 16]", "cores: [1]")
            .replace("[200, 500, 1000, 1000, 1000]", "[200]")
        ),
    )
    run = natbench.load(nat, baseline=sizes)
    assert run.seed_table().cells.loc["throughput ratio (%)"].tolist() == ["45.5"]
    ports = _fwd(tmp_path, "ports", lambda text: text.replace("src_ports: 1-4000", "src_ports: 1-2000"))
    with pytest.raises(ConfigError, match="no forwarding result at 1 of the 1 working points"):
        natbench.load(nat, baseline=ports)


def test_two_matching_baseline_points_are_ambiguous(tmp_path: Path) -> None:
    nat = _nat_1core(tmp_path)

    def twice_at_one_core(points: list[WorkingPoint]) -> list[WorkingPoint]:
        """The 1-core point and a copy that differs only in a DUT parameter (another id, the same working point)."""
        params = {"linux": {**points[0].dut_params["linux"], "route_to": "198.19.1.0/24"}}
        return [points[0], dataclasses.replace(points[0], index=1, dut_params=params)]

    twice = store_campaign_run(
        tmp_path / "twice",
        "seed000-fig2-forwarding-cores.yaml",
        {"forwarding": [FIG2_FWD[0], FIG2_FWD[1]]},
        {"forwarding": [200.0, 200.0]},
        scale=1e3,
        repetitions=3,
        points=twice_at_one_core,
    )
    with pytest.raises(ConfigError, match="2 working points with forwarding results match iptables-1c-4M"):
        natbench.load(nat, baseline=twice)


# ---- two runs written by the real runner (fake tester and DUT) ---------------------------------------------


def _engine_runs(root: Path) -> tuple[Path, Path]:
    """A NAT run (cps, throughput) and a plain forwarding run (forwarding on a stateless DUT) by the runner."""
    import engine_fakes

    from natbench.metrics.cps import CpsSettings
    from natbench.metrics.throughput import ForwardingSettings, ThroughputSettings
    from natbench.run.runner import RunSpec

    points = engine_fakes.make_points()
    search = {"upper": 1_000_000, "error": 1000, "repetitions": 3}
    nat_metrics = {
        "cps": CpsSettings(**search),
        "throughput": ThroughputSettings(fill_rate=50_000, gap=0.0, duration=1.0, **search),
    }
    # the forwarding DUT has no table parameters: other ids than the NAT's points, the same working points
    fwd_points = [
        WorkingPoint(p.index, p.src_ports, p.dst_ports, p.frame_size, cores=p.cores, name="fwd", dut_params={"r": {}})
        for p in points
    ]
    runs = []
    for name, pts, metrics, model in (
        ("nat", points, nat_metrics, FakeModel(noise=0.02, seed=3)),
        ("fwd", fwd_points, {"forwarding": ForwardingSettings(duration=1.0, **search)}, FakeModel(nat=False, seed=5)),
    ):
        resolved = {m: s.resolved(0.0, Directions.BIDIRECTIONAL) for m, s in metrics.items()}
        spec = RunSpec(name, pts, engine_fakes.plan_for, resolved, f"name: {name}\n")
        dut = FakeDut(model)
        run = start_run(spec, root / name, FakeTester(dut), dut, clock=engine_fakes.FakeClock(), sleep=lambda s: None)
        assert run.status == "complete"
        runs.append(root / name)
    return runs[0], runs[1]


def test_engine_written_runs_give_the_ratio_of_their_stored_medians(tmp_path: Path) -> None:
    nat, fwd = _engine_runs(tmp_path)
    assert {p["id"] for p in json.loads((nat / "points.json").read_text())}.isdisjoint(
        p["id"] for p in json.loads((fwd / "points.json").read_text())
    )
    stored = [json.loads(ln) for d in (nat, fwd) for ln in (d / "trials.jsonl").read_text().splitlines()]

    def median_all_frames(metric: str, cores: int) -> float:
        pts = {p["id"] for d in (nat, fwd) for p in json.loads((d / "points.json").read_text()) if p["cores"] == cores}
        v = sorted(
            r["extra"]["all_frames_per_second"]
            for r in stored
            if r["type"] == "result" and r["metric"] == metric and r["point_id"] in pts
        )
        assert len(v) == 3
        return v[1]  # 3 repetitions: the middle one

    _, cells, _ = report_rows(str(nat), "--baseline", str(fwd))
    expected = [f"{100 * median_all_frames('throughput', c) / median_all_frames('forwarding', c):.1f}" for c in (1, 2)]
    assert cells["throughput ratio (%)"] == expected
    # the fake NAT forwards 400,000 fps per direction, the stateless fake 900,000: about 44 %
    assert all(40 < float(x) < 48 for x in expected)


def test_a_baseline_measured_in_another_number_of_directions_is_refused(tmp_path: Path) -> None:
    """The NAT's throughput is bidirectional (seed 000 Figure 2); a forwarding baseline measured forward only
    stores per-direction rates of one direction: dividing all-frames rates of two directions by those of one
    would print a ratio of unlike things, so the pair is refused, naming the point and both counts."""
    nat = _nat_1core(tmp_path)
    forward_only = "  forwarding:\n    directions: forward\n"
    one_way = _fwd(tmp_path, "oneway", lambda text: text.replace("  forwarding:\n", forward_only, 1))
    unlike = r"iptables-1c-4M \(1 cores[^)]*\): 2 vs 1\): their ratio would compare unlike"
    with pytest.raises(ConfigError, match=unlike):
        natbench.load(nat, baseline=one_way)


def _nat_1core(tmp_path: Path) -> Path:
    return store_campaign_run(
        tmp_path / "nat",
        "seed000-fig2-iptables-cores.yaml",
        {"throughput": FIG2_TP},
        {"throughput": [100.0] * 5},
        scale=1e3,
        repetitions=3,
        only=[0],
    )


def _fwd(tmp_path: Path, name: str, edit: Callable[[str], str]) -> Path:
    return store_campaign_run(
        tmp_path / name,
        "seed000-fig2-forwarding-cores.yaml",
        {"forwarding": FIG2_FWD},
        {"forwarding": [200.0] * 5},
        scale=1e3,
        repetitions=3,
        edit=edit,
    )


def test_a_baseline_with_another_acceptance_is_refused_in_one_line_naming_the_points(tmp_path: Path) -> None:
    """The NAT throughput accepted no loss (RFC 2544, the campaign's acceptance 0); a forwarding baseline that
    accepted 0.1 % loss measured a higher rate for the same DUT: their ratio is no "throughput ratio"."""
    nat = _nat_1core(tmp_path)
    lossy = _fwd(tmp_path, "lossy", lambda text: text.replace("  acceptance: 0\n", "  acceptance: 0.001\n", 1))
    rc, out, err = _cli_error(str(nat), "--baseline", str(lossy), out=tmp_path / "rep")
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"natbench: error: {lossy}: the baseline run accepted another loss ratio than {nat}")
    assert "iptables-1c-4M (1 cores, ports 1-4000 x 1-1000, 64-byte frames): 0 vs 0.001" in err
    assert not (tmp_path / "rep").exists()
    # the metric's own acceptance counts, not only the traffic section's
    own = _fwd(tmp_path, "own", lambda text: text.replace("  forwarding:\n", "  forwarding:\n    acceptance: 0.0001\n"))
    with pytest.raises(ConfigError, match=r"\): 0 vs 0.0001\)"):
        natbench.load(nat, baseline=own)


def test_a_baseline_with_a_smaller_acceptance_than_the_run_is_refused_too(tmp_path: Path) -> None:
    """The other way round: the NAT throughput accepted 0.1 % loss, the forwarding baseline none (RFC 2544). The
    NAT's rate is then the higher one for the same loss, so the ratio overstates it: refused as well."""
    nat = store_campaign_run(
        tmp_path / "nat",
        "seed000-fig2-iptables-cores.yaml",
        {"throughput": FIG2_TP},
        {"throughput": [100.0] * 5},
        scale=1e3,
        repetitions=3,
        only=[0],
        edit=lambda text: text.replace("  acceptance: 0 ", "  acceptance: 0.001 ", 1),
    )
    strict = _fwd(tmp_path, "strict", lambda text: text)
    rc, out, err = _cli_error(str(nat), "--baseline", str(strict), out=tmp_path / "rep")
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"natbench: error: {strict}: the baseline run accepted another loss ratio than {nat}")
    assert "iptables-1c-4M (1 cores, ports 1-4000 x 1-1000, 64-byte frames): 0.001 vs 0" in err
    assert not (tmp_path / "rep").exists()


def test_a_baseline_of_another_ip_version_is_refused(tmp_path: Path) -> None:
    """IPv6 forwarding (seed 004 Table 3) under an IPv4 NAT: the IPv6 frames of the same test are 20 bytes
    longer (RFC 8219), so the rates are of other frames."""
    nat = _nat_1core(tmp_path)
    v6 = _fwd(
        tmp_path,
        "v6",
        lambda text: (
            text.replace("family: ipv4", "family: ipv6")
            .replace("    initiator: 10.0.0.2\n", "")
            .replace("    dut_private: 10.0.0.1\n", "")
            .replace("  addresses:\n", "")
        ),
    )
    with pytest.raises(ConfigError) as err:
        natbench.load(nat, baseline=v6)
    assert str(err.value) == (
        f"{v6}: the baseline run measured traffic family ipv6 (IPv6 -> IPv6), {nat} measured nat44 (IPv4 -> IPv4):"
        " frame rates of other IP versions are not a throughput ratio"
    )


def test_a_nat64_run_takes_only_a_nat64_baseline_and_a_nat44_run_an_ipv4_or_nat44_one() -> None:
    import pandas as pd

    from natbench.report.baseline import check_like_traffic

    row = {"point_id": "p", "label": "p", "cores": 1.0, "src_first": 1, "src_last": 2, "dst_first": 1, "dst_last": 1}
    points = pd.DataFrame([{**row, "frame_size": 64}]).set_index("point_id")

    def check(family: str, base: str) -> list[str]:
        return check_like_traffic(
            family, base, {"p": "b"}, lambda _: 0.0, lambda _: 0.0, points, run_dir=Path("r"), base_dir=Path("b")
        )

    # accepted: the same IP versions on both sides (nat44 and ipv4 forwarding both send IPv4 -> IPv4)
    for family, base in (("nat44", "ipv4"), ("nat44", "nat44"), ("nat64", "nat64"), ("ipv6", "ipv6")):
        assert check(family, base) == []
    # refused: a NAT64 run sends IPv6 on its private side, IPv4 on its public side; no plain forwarding does
    for family, base in (("nat64", "ipv4"), ("nat64", "nat44"), ("nat64", "ipv6"), ("nat44", "ipv6")):
        with pytest.raises(ConfigError, match="frame rates of other IP versions"):
            check(family, base)
    # a run without a readable campaign cannot be checked: said, not refused
    assert check_like_traffic(
        None, "ipv4", {"p": "b"}, lambda _: None, lambda _: 0.0, points, run_dir=Path("r"), base_dir=Path("b")
    ) == ["traffic family of r unknown: not compared", "acceptance unknown at 1 matched point(s): not compared"]
