"""A real campaign file driven through the library API with the fakes; the CLI's argument handling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from natbench.campaign import load_campaign
from natbench.runner import resume_campaign, run_campaign, spec_from_campaign
from natbench.store import RunDirectory
from natbench.testbed import TESTERS, Testbed, build_testbed, register_tester
from natbench.testers.base import Directions
from natbench.testing import FakeDut, FakeModel, FakeTester

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"


def fake_testbed(**model: float) -> Testbed:
    dut = FakeDut(FakeModel(cps=150_000, forwarding=120_000, **model))
    return Testbed(FakeTester(dut), dut)


@pytest.fixture
def campaign_file(tmp_path: Path) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text())
    data["output"] = str(tmp_path / "results" / "quickstart")
    path = tmp_path / "quickstart.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_spec_from_campaign_takes_traffic_defaults(campaign_file: Path) -> None:
    campaign = load_campaign(campaign_file)
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(campaign_file))
    assert list(spec.metrics) == ["cps", "throughput", "teardown"]
    assert [p.connections for p in spec.points] == [1000, 4000, 16000]
    s = spec.settings(spec.points[0], "throughput")
    assert (s.repetitions, s.upper, s.error, s.fill_rate, s.duration, s.gap) == (3, 200_000, 10_000, 10_000, 2, 0.5)
    assert s.acceptance == 0.001  # from traffic.acceptance
    assert s.directions is Directions.BIDIRECTIONAL
    assert spec.total_repetitions() == 27


def test_a_campaign_runs_with_the_fakes_through_the_library_api(campaign_file: Path) -> None:
    bed = fake_testbed()
    run = run_campaign(campaign_file, testbed=bed, sleep=lambda s: None)
    assert run.path == campaign_file.parent / "results" / "quickstart"
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
    assert TESTERS["software"] == "natbench.testers.software:create"
    assert TESTERS["trex"] == "natbench.testers.trex:create"
    campaign = load_campaign(campaign_file)
    register_tester("software", "natbench.testing:no_such_factory")
    try:
        with pytest.raises(Exception, match="no_such_factory"):
            build_testbed(campaign)
    finally:
        register_tester("software", "natbench.testers.software:create")
    with pytest.raises(ValueError):
        register_tester("x", "no-colon")


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
    assert sorted(set(df["connections"])) == [1000, 4000, 16000]


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
