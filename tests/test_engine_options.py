"""Campaign options reach the engine; tear-down T_0 reuse; responder modes; the receive timeout hook."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from metric_settings import build
from trex_fakes import QuietSession

from natbench.campaign import Campaign, load_campaign
from natbench.duts.executors import NetnsExecutor
from natbench.errors import ConfigError
from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.plugins import ACCESS, Directions, Phase2Options
from natbench.results import PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.run.runner import run_campaign, spec_from_campaign
from natbench.testbed import Testbed
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"
POINT = WorkingPoint(0, PortRange(1000, 1049), PortRange(80, 99), 64, cores=1, name="fake")  # 1,000 connections


def quickstart(tmp_path: Path, **changes: Any) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text())
    data["output"] = "results"  # a campaign's output stays inside the working directory; runs here pass one
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---------------------------------------------------------------------------- item 1: schema -> engine
def test_engine_options_in_the_campaign_reach_the_metric_settings(tmp_path: Path) -> None:
    path = quickstart(
        tmp_path,
        **{
            "testbed.monitor_interval": 0.25,
            "metrics.throughput.algorithm": "binary",
            "metrics.throughput.refill": "always",
            "metrics.throughput.refill_after": 240,
            "metrics.throughput.table_drift": 5,
            "metrics.throughput.table_slack": 10,
            "metrics.throughput.timeout": 3.5,
            "metrics.cps.check_table": False,
            "metrics.teardown.empty_repetitions": 2,
        },
    )
    campaign = load_campaign(path)
    spec = spec_from_campaign(campaign, campaign.to_yaml())
    p = spec.points[0]
    tp = spec.settings(p, "throughput")
    assert (tp.algorithm, tp.refill, tp.refill_after, tp.table_drift, tp.table_slack, tp.timeout) == (
        "binary",
        "always",
        240,
        5,
        10,
        3.5,
    )
    assert spec.settings(p, "cps").check_table is False
    assert spec.settings(p, "teardown").empty_repetitions == 2
    # the campaign-level CPU monitor applies to every metric: it is an option of the whole run
    assert spec.options.monitor_interval == 0.25
    # the resolved campaign (what a run directory stores) keeps them
    again = Campaign.from_dict(yaml.safe_load(campaign.to_yaml()))
    assert again.testbed.monitor_interval == 0.25
    assert again.metrics["throughput"].refill == "always"


def test_engine_option_values_are_checked_with_the_field_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_campaign(quickstart(tmp_path, **{"metrics.throughput.refill": "sometimes"}))
    assert err.value.field and "refill" in err.value.field
    with pytest.raises(ConfigError) as err:
        load_campaign(quickstart(tmp_path, **{"metrics.throughput.algorithm": "linear"}))
    assert err.value.field and "algorithm" in err.value.field


def test_capacity_gamma_and_beta_documentation_matches_the_engine() -> None:
    from natbench.metrics.capacity import CapacitySettings

    gamma = CapacitySettings.model_fields["gamma"].description or ""
    assert "gamma x the rate of the last safe count" in gamma
    assert "a probed connection count fails" in gamma


# ---------------------------------------------------------------------------- item 1: teardown T_0 reuse
def context(tester: FakeTester, dut: FakeDut, plan: TrafficPlan, metric: str, **kw: Any) -> ProcedureContext:
    records: list[TrialRecord] = kw.pop("records", [])
    settings, options = build(metric, {"gap": 0.0, "duration": 1.0}, **kw.pop("settings", {}))
    return ProcedureContext(
        tester=tester,
        dut=dut,
        point=POINT,
        plan=plan,
        metric=metric,
        repetition=kw.pop("repetition", 0),
        settings=settings,
        emit=records.append,
        clock=lambda: 0.0,
        sleep=lambda _s: None,
        options=options,
        **kw,
    )


def make_plan(mode: ResponderMode = ResponderMode.LEARN) -> TrafficPlan:
    return TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, 3, responder_mode=mode
    )


def fakes(**model: Any) -> tuple[FakeTester, FakeDut]:
    dut = FakeDut(FakeModel(**model))
    dut.setup(POINT)
    tester = FakeTester(dut)
    return tester, dut


def test_teardown_reuses_the_median_t0_after_empty_repetitions() -> None:
    tester, dut = fakes(flush_empty=0.9, flush_per_connection=1e-4)
    plan = make_plan()
    tester.prepare(plan)
    earlier = tuple(
        RepetitionResult(POINT.id, "teardown", i, 1.0, "conn/s", extra={"T_0": t0, "T_0_measured": True})
        for i, t0 in enumerate([0.4, 0.6])
    )
    records: list[TrialRecord] = []
    ctx = context(
        tester, dut, plan, "teardown", settings={"fill_rate": 10_000, "empty_repetitions": 2},
        repetition=2, earlier=earlier, records=records,
    )  # fmt: skip
    res = run_repetition(ctx)
    assert [r.kind for r in records] == ["fill", "flush_filled"]  # no empty-table delete timed
    assert dut.events.count("flush") == 1
    assert res.extra["T_0"] == pytest.approx(0.5) and res.extra["T_0_measured"] is False
    assert res.extra["empty_delete_s"] is None  # reports take T_0 min/max over measured values only
    t_n = 0.9 + 1000 * 1e-4
    assert res.value == pytest.approx(1000 / (t_n - 0.5))
    # within the first k repetitions T_0 is timed
    records.clear()
    first = run_repetition(
        context(tester, dut, plan, "teardown", settings={"fill_rate": 10_000, "empty_repetitions": 2},
                repetition=1, earlier=earlier[:1], records=records)
    )  # fmt: skip
    assert [r.kind for r in records] == ["fill", "flush_filled"] + ["flush_empty"] * 3  # empty_samples: 3
    assert first.extra["T_0"] == pytest.approx(0.9) and first.extra["T_0_measured"] is True


def test_a_run_times_t0_in_the_first_k_repetitions_of_each_point(tmp_path: Path) -> None:
    path = quickstart(
        tmp_path,
        **{"metrics": {"teardown": {"repetitions": 4, "fill_rate": 10_000, "gap": 0, "empty_repetitions": 2}}},
    )
    dut = FakeDut(FakeModel())
    run = run_campaign(path, tmp_path / "run", testbed=Testbed(FakeTester(dut), dut), sleep=lambda _s: None)
    trials = run.trials()
    points = {t.point_id for t in trials}
    assert len(points) == 3
    for pid in points:
        empty = [t for t in trials if t.point_id == pid and t.kind == "flush_empty"]
        assert sorted(t.repetition for t in empty) == [0, 0, 0, 1, 1, 1]  # three timings in each of the first two
    results = [r for r in run.results() if r.metric == "teardown"]
    assert len(results) == 12 and all(r.value for r in results)
    assert sorted(r.extra["T_0_measured"] for r in results) == [False] * 6 + [True] * 6


# ---------------------------------------------------------------------------- item 2: ssh namespace
def test_ssh_access_with_a_namespace_runs_the_recipe_in_a_remote_netns(tmp_path: Path) -> None:
    path = quickstart(tmp_path)
    data = yaml.safe_load(path.read_text())
    access = {"kind": "ssh", "host": "dut.example", "namespace": "nat-dut", "allow_unknown_host_key": True}
    data["testbed"]["duts"][0]["access"] = access
    campaign = Campaign.from_dict(data)
    spec = campaign.testbed.duts[0].access
    assert spec.kind == "ssh" and spec.namespace == "nat-dut"
    executor = ACCESS.get("ssh").place(spec, "dut", None).executor
    assert isinstance(executor, NetnsExecutor) and executor.namespace == "nat-dut"
    assert "ssh" in executor.description.lower() or "dut.example" in executor.description
    data["testbed"]["duts"][0]["access"] = {**access, "namespace": "../etc"}
    with pytest.raises(ConfigError) as err:
        Campaign.from_dict(data)
    assert err.value.field and "namespace" in err.value.field


# ---------------------------------------------------------------------------- item 3: responder modes
class SpyTester(FakeTester):
    """A FakeTester that keeps the Phase2Options it was given."""

    options: list[Phase2Options]

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        self.__dict__.setdefault("options", []).append(measure)
        return super().phase2(rate, duration, directions, measure)


def spy(**model: Any) -> tuple[SpyTester, FakeDut]:
    dut = FakeDut(FakeModel(**model))
    dut.setup(POINT)
    return SpyTester(dut), dut


def test_read_mode_hands_the_duts_mappings_to_phase2_and_to_validation() -> None:
    tester, dut = spy(preserves_ports=False)
    plan = make_plan(ResponderMode.READ)
    tester.prepare(plan)
    records: list[TrialRecord] = []
    settings = {"upper": 600_000, "error": 50_000, "fill_rate": 50_000}
    res = run_repetition(context(tester, dut, plan, "throughput", settings=settings, records=records))
    assert res.value is not None and res.value > 300_000  # reverse frames reached the mapped tuples
    fills = [r for r in records if r.kind == "fill"]
    assert fills and dut.events.count("mappings") == len(fills)  # read after every fill
    assert tester.options and all(o.mappings is not None and len(o.mappings) == 1000 for o in tester.options)
    assert {o.mappings[0].public_port for o in tester.options} == {40000}  # the DUT's ports, not computed ones
    assert all(r.extra["responder_mode"] == "read" for r in records)
    # validation: the tester gets the mappings through the load_mappings hook before validate()
    tester.prepare(plan)
    records.clear()
    res = run_repetition(context(tester, dut, plan, "validation", settings={"rate": 50_000}, records=records))
    assert res.value == 1.0 and tester.loaded is not None and len(tester.loaded) == 1000
    assert records[-1].counts["reverse"]["sent"] == 1000
    assert all(r.extra["responder_mode"] == "read" for r in records)


def test_read_mode_without_mappings_fails_the_repetition_clearly() -> None:
    tester, dut = spy()
    dut.mappings = lambda: []  # type: ignore[method-assign]
    plan = make_plan(ResponderMode.READ)
    tester.prepare(plan)
    res = run_repetition(context(tester, dut, plan, "validation", settings={"rate": 50_000}))
    assert res.value is None and "listed no mappings" in res.extra["failed"]


def test_compute_mode_checks_port_preservation_before_trusting_computed_tuples() -> None:
    tester, dut = spy(preserves_ports=True)
    plan = make_plan(ResponderMode.COMPUTE)
    tester.prepare(plan)
    records: list[TrialRecord] = []
    settings = {"upper": 600_000, "error": 100_000, "fill_rate": 50_000}
    res = run_repetition(context(tester, dut, plan, "throughput", settings=settings, records=records))
    assert res.value is not None
    assert dut.events.count("mappings") == 1  # checked once per repetition, not per step
    # the check runs after the first fill: every phase-2 trial that trusted computed tuples records it
    checked = [r for r in records if r.kind == "phase2"]
    assert checked and all(r.extra["port_preservation"] == "verified" for r in checked)
    assert all(r.extra["responder_mode"] == "compute" for r in records)
    # a NAT that picks its own ports is caught before any phase-2 result is trusted
    tester, dut = spy(preserves_ports=False)
    tester.prepare(plan)
    records.clear()
    res = run_repetition(context(tester, dut, plan, "throughput", settings=settings, records=records))
    assert res.value is None and "does not preserve source ports" in res.extra["failed"]
    assert not [r for r in records if r.kind == "phase2"]
    # the wrong public address is caught too
    tester, dut = spy(public_address="198.19.0.9")
    tester.prepare(plan)
    res = run_repetition(context(tester, dut, plan, "validation", settings={"rate": 50_000}))
    assert res.value is None and "198.19.0.9" in res.extra["failed"]


def test_compute_mode_on_a_dut_that_cannot_list_mappings_is_recorded_as_unverified() -> None:
    tester, dut = spy()

    def cannot() -> list[Any]:
        raise NotImplementedError("no show_mappings step")

    dut.mappings = cannot  # type: ignore[method-assign]
    plan = make_plan(ResponderMode.COMPUTE)
    tester.prepare(plan)
    records: list[TrialRecord] = []
    res = run_repetition(context(tester, dut, plan, "validation", settings={"rate": 50_000}, records=records))
    assert res.value == 1.0
    assert [r.kind for r in records] == ["phase1", "validation"]
    assert records[-1].extra["port_preservation"] == "unverified"


# ---------------------------------------------------------------------------- item 4: receive timeout
def test_the_metric_timeout_reaches_the_tester_before_every_trial() -> None:
    tester, dut = fakes()
    plan = make_plan()
    tester.prepare(plan)
    records: list[TrialRecord] = []
    s = {"upper": 600_000, "error": 100_000, "fill_rate": 50_000, "timeout": 3.5}
    run_repetition(context(tester, dut, plan, "throughput", settings=s, records=records))
    assert records and all(r.extra["tester"]["receive_timeout"] == 3.5 for r in records)
    records.clear()
    run_repetition(context(tester, dut, plan, "cps", settings={"upper": 600_000, "error": 100_000, "timeout": 0.5},
                           records=records))  # fmt: skip
    assert all(r.extra["tester"]["receive_timeout"] == 0.5 for r in records)
    assert all(r.verdict is not Verdict.INVALID for r in records)


class RecordingSession(QuietSession):
    """Just enough of TRexSession for one phase 1 burst, recording the receive wait."""

    def __init__(self) -> None:
        self.waits: list[int] = []

    def wait(self, ports: list[int], timeout: float, rx_delay_ms: int) -> float:
        self.waits.append(rx_delay_ms)
        return time.monotonic()

    def stats(self) -> dict[Any, Any]:
        n = len(POINT.src_ports) * len(POINT.dst_ports)
        return {0: {"opackets": n, "ipackets": 0}, 1: {"opackets": 0, "ipackets": n}, "global": {"queue_full": 0}}


def test_trex_tester_waits_the_metric_timeout() -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    from natbench.testers.trex.settings import TRexSettings
    from natbench.testers.trex.tester import TRexTester

    session = RecordingSession()
    settings = TRexSettings(server="127.0.0.1", private_dst_mac="02:00:00:00:00:01", public_dst_mac="02:00:00:00:00:02")
    tester = TRexTester(settings, session=session)  # type: ignore[arg-type]
    tester.prepare(make_plan(ResponderMode.COMPUTE))
    first = tester.phase1(1_000_000, learn=False)
    tester.set_receive_timeout(2.5)
    second = tester.phase1(1_000_000, learn=False)
    assert session.waits == [200, 2500]  # rx_delay_ms until the engine passes the metric's timeout
    assert (first.extra["rx_wait_s"], second.extra["rx_wait_s"]) == (0.2, 2.5)
    with pytest.raises(Exception, match="negative"):
        tester.set_receive_timeout(-1)


def test_optional_hooks_are_recognised_structurally() -> None:
    from natbench.plugins import LoadsMappings, SetsReceiveTimeout

    tester, _dut = fakes()
    assert isinstance(tester, SetsReceiveTimeout) and isinstance(tester, LoadsMappings)
    assert not isinstance(object(), SetsReceiveTimeout)
    assert dataclasses.is_dataclass(tester)


def test_read_mode_validation_needs_a_tester_that_loads_mappings() -> None:
    class NoHook(FakeTester):
        load_mappings = None  # type: ignore[assignment]

    dut = FakeDut(FakeModel())
    dut.setup(POINT)
    tester = NoHook(dut)
    plan = make_plan(ResponderMode.READ)
    tester.prepare(plan)
    res = run_repetition(context(tester, dut, plan, "validation", settings={"rate": 50_000}))
    assert res.value is None and "no load_mappings hook" in res.extra["failed"]


def test_a_run_is_judged_with_the_testers_own_rate_tolerance_when_the_campaign_sets_none(tmp_path: Path) -> None:
    """One tolerance per run: TRex's trials are judged by TRex with its 1 % default, so the engine uses 1 % too;
    the software tester names none, so the engine's 0.1 % applies; a campaign value wins over both."""
    from natbench.campaign import load_campaign
    from natbench.run.spec import spec_from_campaign

    root = Path(__file__).resolve().parents[1] / "campaigns"
    trex = root / "seed000-fig5-iptables-teardown.yaml"  # kind: trex, no rate_tolerance
    assert spec_from_campaign(load_campaign(trex), trex.read_text()).options.rate_tolerance == 0.01
    quick = root / "quickstart.yaml"  # kind: software, no rate_tolerance
    assert spec_from_campaign(load_campaign(quick), quick.read_text()).options.rate_tolerance == 0.001
    text = trex.read_text().replace(
        "    settings:\n      server:", "    settings:\n      rate_tolerance: 0.05\n      server:", 1
    )
    assert "rate_tolerance: 0.05" in text
    given = tmp_path / "given.yaml"
    given.write_text(text)
    assert spec_from_campaign(load_campaign(given), text).options.rate_tolerance == 0.05
