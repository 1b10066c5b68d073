"""Progress during a run: the plan's estimate counted down repetition by repetition, long activities with
their ETA, as plain lines when stderr is not a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.campaign import load_campaign
from natbench.campaign.estimate import estimate
from natbench.results import RepetitionResult
from natbench.run.eta import Countdown, format_eta, repetition_seconds
from natbench.run.observers import PlainProgress
from natbench.run.spec import spec_from_campaign

QUICKSTART = Path(__file__).resolve().parents[1] / "campaigns" / "quickstart.yaml"


def test_the_countdown_starts_at_the_plans_estimate_and_reaches_zero() -> None:
    campaign = load_campaign(QUICKSTART)
    spec = spec_from_campaign(campaign, QUICKSTART.read_text())
    plan = estimate(campaign).seconds  # what `natbench plan` prints
    c = Countdown(spec, done=0)
    assert c.left == pytest.approx(plan)
    for p in spec.points:
        for m in spec.metrics:
            for _ in range(spec.settings(p, m).repetitions):
                c.finished(p.id, m)
    assert c.left == pytest.approx(0.0, abs=1e-6)


def test_a_resumed_run_starts_with_the_share_of_repetitions_left() -> None:
    spec = spec_from_campaign(load_campaign(QUICKSTART), QUICKSTART.read_text())
    total = spec.total_repetitions()  # 3 points x 3 metrics x 3 repetitions = 27
    assert total == 27
    full = Countdown(spec, 0).left
    assert Countdown(spec, 9).left == pytest.approx(full * 18 / 27)


def test_one_repetition_is_its_metrics_estimate_divided_by_the_repetitions() -> None:
    campaign = load_campaign(QUICKSTART)
    spec = spec_from_campaign(campaign, QUICKSTART.read_text())
    point = spec.points[0]
    per_metric = {m.metric: m for m in estimate(campaign).points[0].metrics}
    for name, m in per_metric.items():
        assert repetition_seconds(spec, point, name) == pytest.approx(m.seconds / m.repetitions)


def test_eta_texts() -> None:
    assert format_eta(0.2) == "about 1 s"
    assert format_eta(42) == "about 42 s"
    assert format_eta(600) == "about 10 min"
    assert format_eta(3 * 3600) == "about 3.0 h"


def test_plain_progress_prints_points_long_activities_and_results() -> None:
    spec = spec_from_campaign(load_campaign(QUICKSTART), QUICKSTART.read_text())
    lines: list[str] = []
    obs = PlainProgress(lines.append)
    obs.on_run_start(Path("results/x"), spec, 0)
    obs.on_point_start(spec.points[0], 0, 3, 9)
    obs.on_activity("filling the table: 4,000 connections at 20,000/s", 0.7)  # short: not printed
    obs.on_activity("filling the table: 4,000,000 connections at 20,000/s", 200.5)
    obs.on_activity("flushing the table", None)  # unknown duration: printed
    obs.on_result(RepetitionResult(spec.points[0].id, "cps", 0, 250_000.0, "cps", 10_000.0, {}))
    assert lines[0].startswith("natbench: 3 working points, 27 repetitions to measure, about ")
    assert lines[1].startswith("natbench: point 1/3 iptables-16k (16,000 connections): 9 repetitions, about ")
    assert "; the run about " in lines[1]
    assert lines[2:] == [
        "natbench:   filling the table: 4,000,000 connections at 20,000/s (about 3 min)",
        "natbench:   flushing the table",
        "natbench:   cps#0: 250,000 cps (error 10,000)",
    ]


def test_an_image_build_takes_its_eta_from_the_newest_earlier_build(tmp_path: Path) -> None:
    import json

    from natbench.testbed.lab.vm_image import MANIFEST, last_build_steps

    for key, built, steps in (
        ("aaaa", "2026-11-01T00:00:00Z", {"debootstrap": 80.0, "install packages": 400.0}),
        ("bbbb", "2026-11-24T06:05:35Z", {"debootstrap": 50.0, "install packages": 249.6}),
        ("cccc", "2026-11-02T00:00:00Z", {"debootstrap": 70.0}),
    ):
        (tmp_path / f"jool-{key}").mkdir()
        (tmp_path / f"jool-{key}" / MANIFEST).write_text(json.dumps({"built": built, "steps": steps}))
    (tmp_path / "jool-broken").mkdir()
    (tmp_path / "jool-broken" / MANIFEST).write_text("{not json")
    assert last_build_steps("jool", tmp_path) == {"debootstrap": 50.0, "install packages": 249.6}
    assert last_build_steps("other", tmp_path) == {}


def test_the_procedures_announce_fills_phase2_trials_and_timed_deletes_with_their_eta() -> None:
    from typing import Any

    from metric_settings import build

    from natbench.metrics import ProcedureContext
    from natbench.metrics.registry import run_repetition
    from natbench.testing import FakeDut, FakeModel, FakeTester
    from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
    from natbench.workingpoint import WorkingPoint

    point = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 conn.
    dut = FakeDut(FakeModel())
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, 64, seed=3)
    tester.prepare(plan)
    said: list[tuple[str, float | None]] = []

    def run(metric: str, **settings: Any) -> None:
        resolved, options = build(metric, **settings)
        ctx: ProcedureContext[Any] = ProcedureContext(
            tester, dut, point, plan, metric, 0, resolved, emit=lambda _r: None, clock=lambda: 0.0,
            sleep=lambda _s: None, options=options, announce=lambda what, s: said.append((what, s)),
        )  # fmt: skip
        run_repetition(ctx)

    run("teardown", fill_rate=20_000, timeout=0.5)
    # the fill: 4,000 connections at 20,000/s = 0.2 s + the 0.5 s timeout; then the timed delete-all
    assert said[0] == ("fill: 4,000 connections at 20,000/s", pytest.approx(0.7))
    assert said[1] == ("deleting the 4,000 connections (timed)", None)
    said.clear()
    run("throughput", fill_rate=20_000, timeout=0.5, duration=2, upper=100_000, error=50_000)
    assert said[0] == ("fill: 4,000 connections at 20,000/s", pytest.approx(0.7))
    # the first phase-2 step of [0, 100,000] is its middle: 2 s + 0.5 s
    assert said[1] == ("phase2: 50,000 frames/s per direction for 2 s", pytest.approx(2.5))
