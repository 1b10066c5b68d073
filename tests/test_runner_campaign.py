"""A real campaign file driven through the library API with the fakes; the CLI's argument handling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from natbench.campaign import load_campaign
from natbench.errors import ConfigError
from natbench.plugins import TESTERS, Directions
from natbench.run.reader import RunDirectory
from natbench.run.runner import resume_campaign, run_campaign, spec_from_campaign
from natbench.testbed import Testbed, build_testbed
from natbench.testing import FakeDut, FakeModel, FakeTester

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"


def fake_testbed(**model: float) -> Testbed:
    dut = FakeDut(FakeModel(cps=150_000, forwarding=120_000, **model))
    return Testbed(FakeTester(dut), dut)


@pytest.fixture
def campaign_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # a campaign's output is relative to (and inside) the working directory
    data = yaml.safe_load(QUICKSTART.read_text())
    data["output"] = "results/quickstart"
    # the fakes' DUT is faster than the software tester the real quickstart is sized for (issue-6)
    data["metrics"]["throughput"].update(upper="200k", error="10k")
    path = tmp_path / "quickstart.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_spec_from_campaign_takes_traffic_defaults(campaign_file: Path) -> None:
    campaign = load_campaign(campaign_file)
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(campaign_file))
    assert list(spec.metrics) == ["cps", "throughput", "teardown"]
    assert [p.connections for p in spec.points] == [16000, 32000, 64000]
    s = spec.settings(spec.points[0], "throughput")
    assert (s.repetitions, s.upper, s.error, s.fill_rate, s.duration, s.gap) == (3, 200_000, 10_000, 20_000, 2, 0.5)
    assert s.acceptance == 0.001  # from traffic.acceptance
    assert s.directions is Directions.BIDIRECTIONAL
    assert spec.total_repetitions() == 27
    assert spec.options.rate_tolerance == 0.001  # the software tester kind's default: the quickstart sets none


def test_tester_rate_tolerance_reaches_the_verdicts(campaign_file: Path) -> None:
    data = yaml.safe_load(campaign_file.read_text())
    data["testbed"]["tester"]["settings"] = {"rate_tolerance": 0.02}
    campaign_file.write_text(yaml.safe_dump(data, sort_keys=False))
    campaign = load_campaign(campaign_file)
    spec = spec_from_campaign(campaign, campaign.to_yaml())
    assert spec.options.rate_tolerance == 0.02


def test_a_campaign_runs_with_the_fakes_through_the_library_api(campaign_file: Path) -> None:
    bed = fake_testbed()
    run = run_campaign(campaign_file, testbed=bed, sleep=lambda s: None)
    assert run.path.resolve() == campaign_file.parent / "results" / "quickstart"
    assert run.status == "complete"
    assert bed.tester.closed  # type: ignore[attr-defined]
    results = run.results()
    assert len(results) == 27
    cps = [r.value for r in results if r.metric == "cps"]
    assert all(140_000 <= v <= 150_000 for v in cps)
    tp = [r.value for r in results if r.metric == "throughput"]
    assert all(110_000 <= v <= 120_000 for v in tp)
    # the stored campaign loads back and resumes (nothing left to do)
    again = resume_campaign(run.path, testbed=fake_testbed(), sleep=lambda s: None)
    assert len(again.results()) == 27
    assert load_campaign(run.path / "campaign.yaml").name == "quickstart"


def test_testbed_registry_is_lazy_and_names_unknown_kinds(campaign_file: Path) -> None:
    code = (
        "import sys; from natbench.plugins import TESTERS\n"
        "assert TESTERS.names() == ['software', 'trex'], TESTERS.names()\n"
        "assert 'natbench.testers.trex.backend' not in sys.modules  # registered, not imported\n"
        "assert type(TESTERS.get('trex')).__module__ == 'natbench.testers.trex.backend'\n"
        "assert type(TESTERS.get('software')).__module__ == 'natbench.testers.software.backend'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    campaign = load_campaign(campaign_file)
    builtin = TESTERS.get("software")

    class NoSuchFactory(type(builtin)):  # type: ignore[misc]
        def check(self, spec: object, locate: object) -> None:
            raise ConfigError("no_such_factory")  # the registered backend is the one the testbed asks

    TESTERS.unregister("software")  # a name is registered once: free it to put another backend there
    TESTERS.register("software", NoSuchFactory())
    try:
        with pytest.raises(Exception, match="no_such_factory"):
            build_testbed(campaign)
    finally:
        TESTERS.unregister("software")
        TESTERS.register("software", builtin)
    with pytest.raises(ConfigError, match="unknown tester kind 'x'; known: software, trex"):
        TESTERS.get("x")
    with pytest.raises(TypeError):
        TESTERS.register("x", object())  # type: ignore[arg-type]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "natbench", "run", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_cli_argument_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    none = _cli(cwd=tmp_path)
    assert none.returncode == 2 and "exactly one" in none.stderr
    both = _cli("x.yaml", "--resume", str(tmp_path), cwd=tmp_path)
    assert both.returncode == 2 and "exactly one" in both.stderr
    missing = _cli("nope.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    not_a_run = _cli("--resume", str(tmp_path), cwd=tmp_path)
    assert not_a_run.returncode == 2
    assert not_a_run.stderr.strip().splitlines() == [
        f"natbench: error: {tmp_path}: not a natbench run directory (missing run.json)"
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: x\n")
    out = _cli(str(bad), cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_run_directory_reader_on_the_campaign_run(campaign_file: Path) -> None:
    run = run_campaign(campaign_file, campaign_file.parent / "r", testbed=fake_testbed(), sleep=lambda s: None)
    reader = RunDirectory.open(run.path)
    df = reader.results_frame()
    assert set(df["metric"]) == {"cps", "throughput", "teardown"}
    assert sorted(set(df["connections"])) == [16000, 32000, 64000]


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_campaign_converts_to_engine_settings(path: Path) -> None:
    campaign = load_campaign(path)
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(path))
    assert spec.points and spec.metrics
    for point in spec.points:
        for metric in spec.ordered_metrics():
            s = spec.settings(point, metric)
            raw = campaign.settings_for(point, metric)
            assert s.repetitions == raw.repetitions
            assert s.acceptance == campaign.acceptance(point, metric)
            for name in ("lower", "upper", "error", "fill_rate", "duration", "gap", "rate"):
                if getattr(raw, name, None) is not None:
                    assert getattr(s, name) == getattr(raw, name), (metric, name)


def test_run_command_end_to_end_with_a_substituted_testbed(
    campaign_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's wiring (run, summary, Parquet, resume) with the testbed builder swapped for fakes."""
    from click.testing import CliRunner

    import natbench.testbed
    from natbench.cli import cli

    monkeypatch.setattr(natbench.testbed, "build_testbed", lambda campaign: fake_testbed())
    data = yaml.safe_load(campaign_file.read_text())
    for metric in ("throughput", "teardown"):
        data["metrics"][metric]["gap"] = 0  # the fakes need no settling time
    campaign_file.write_text(yaml.safe_dump(data, sort_keys=False))
    out = campaign_file.parent / "cli-run"
    res = CliRunner().invoke(cli, ["run", str(campaign_file), "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[-1].startswith(f"run directory: {out} (complete)")
    # the seed-style tables are printed: one column per working point, the cps median row filled
    header = next(ln for ln in lines if ln.split()[:1] == ["iptables-16k"] or "iptables-16k" in ln.split()[:3])
    assert header.split() == ["iptables-16k", "iptables-32k", "iptables-64k"]
    median = next(ln for ln in lines if ln.startswith("cps median"))
    assert len(median.split()) == 2 + 3
    assert not any("upper bound limits" in ln for ln in lines)  # the fake's ceilings are inside the ranges
    assert (out / "trials.parquet").exists()
    again = CliRunner().invoke(cli, ["run", "--resume", str(out), "--no-parquet"])
    assert again.exit_code == 0, again.output
    assert again.output.strip().splitlines()[-1].startswith(f"run directory: {out} (complete)")


def test_schema_names_of_every_metric_reach_the_procedures(campaign_file: Path) -> None:
    data = yaml.safe_load(campaign_file.read_text())
    data["metrics"].update(
        {
            "frame_loss": {"repetitions": 1, "rates": ["150k", "140k"], "fill_rate": "10k", "duration": 1},
            "latency": {"repetitions": 1, "fill_rate": "10k", "tagged_rate": 500, "duration": 1, "tag_delay": 0.5},
            "pdv": {"repetitions": 1, "rate": "50k", "fill_rate": "10k", "duration": 1},
            "capacity": {
                "repetitions": 1,
                "upper": "200k",
                "error": "10k",
                "min_connections": 1000,
                "max_connections": 64000,
                "connection_error": 500,
                "beta": 0.25,
                "gamma": 0.5,
            },
            "validation": {"repetitions": 1, "rate": "20k", "reverse_rate": "5k", "gap": 0},
            "forwarding": {"repetitions": 1, "upper": "200k", "error": "10k", "duration": 1},
        }
    )
    campaign_file.write_text(yaml.safe_dump(data, sort_keys=False))
    campaign = load_campaign(campaign_file)
    spec = spec_from_campaign(campaign, campaign.to_yaml())
    p = spec.points[0]
    assert tuple(spec.settings(p, "frame_loss").rates) == (150_000.0, 140_000.0)
    assert spec.settings(p, "latency").tagged_rate == 500
    assert spec.settings(p, "pdv").rate == 50_000
    cap = spec.settings(p, "capacity")
    assert (cap.min_connections, cap.max_connections, cap.connection_error, cap.beta, cap.gamma) == (
        1000,
        64000,
        500,
        0.25,
        0.5,
    )
    assert spec.settings(p, "validation").reverse_rate == 5000
    bed = fake_testbed(table_limit=20_000)
    run = run_campaign(campaign_file, campaign_file.parent / "all", testbed=bed, sleep=lambda s: None)
    by_metric = {r.metric: r for r in run.results() if r.point_id == p.id}
    assert set(by_metric) == set(spec.metrics)
    failed = {m: r.extra.get("failed") for m, r in by_metric.items() if r.value is None}
    assert not failed, failed
    assert 19_000 <= by_metric["capacity"].value <= 20_000
    assert by_metric["validation"].value == 1.0
