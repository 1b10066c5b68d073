"""The metrics registry: one entry per metric, the one source the schema, runner, estimate and reports read."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from metric_settings import build

from natbench.campaign.schema import METRIC_NAMES, MetricsSpec
from natbench.errors import ConfigError, SearchError
from natbench.metrics import (
    Metric,
    MetricSettings,
    ProcedureContext,
    all_metrics,
    find_metric,
    metric,
    metric_names,
    register,
    registry,
)
from natbench.metrics.cps import CPS
from natbench.metrics.registry import run_repetition
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")


def test_metrics_are_measured_in_the_order_the_runner_always_used() -> None:
    assert metric_names() == (
        "cps", "throughput", "frame_loss", "latency", "pdv", "teardown", "capacity", "validation", "forwarding",
    )  # fmt: skip
    assert [m.name for m in all_metrics()] == list(metric_names())


def test_a_metric_is_measured_after_the_metric_it_takes_its_rate_from() -> None:
    order = {m.name: m.order for m in all_metrics()}
    sources = {m.name: m.rate_from for m in all_metrics() if m.rate_from is not None}
    assert sources == {"latency": "throughput", "pdv": "throughput", "validation": "cps"}
    assert all(order[source] < order[name] for name, source in sources.items())


def test_the_campaign_schema_has_one_section_per_metric_typed_by_its_settings_model() -> None:
    assert metric_names() == METRIC_NAMES
    assert list(MetricsSpec.model_fields) == list(metric_names())
    for m in all_metrics():
        field = MetricsSpec.model_fields[m.name]
        assert field.description == m.description
        assert m.settings in getattr(field.annotation, "__args__", ())


def test_every_settings_model_is_a_metric_settings_with_documented_fields() -> None:
    for m in all_metrics():
        assert issubclass(m.settings, MetricSettings)
        assert all(info.description for info in m.settings.model_fields.values()), m.name


def test_report_facts_of_the_metrics() -> None:
    assert {m.name for m in all_metrics() if m.lower_is_better} == {"frame_loss", "latency", "pdv"}
    assert {m.name for m in all_metrics() if not m.stateful} == {"forwarding"}
    assert {m.name for m in all_metrics() if m.own_table} == {"teardown"}
    assert {m.name for m in all_metrics() if m.in_milliseconds} == {"latency", "pdv"}
    assert {m.name: m.baseline_for for m in all_metrics() if m.baseline_for} == {"forwarding": "throughput"}
    assert {m.name: m.unit for m in all_metrics()} == {
        "cps": "cps", "throughput": "fps", "frame_loss": "ratio", "latency": "s", "pdv": "s",
        "teardown": "conn/s", "capacity": "conn", "validation": "pass", "forwarding": "fps",
    }  # fmt: skip


def test_the_baseline_is_the_metric_that_is_one_and_none_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert registry.baseline_metric() is find_metric("forwarding")
    without = tuple(m for m in all_metrics() if m.baseline_for is None)
    monkeypatch.setattr(registry, "all_metrics", lambda: without)
    assert registry.baseline_metric() is None


def test_lookups_name_the_known_metrics() -> None:
    assert metric("cps") is CPS and find_metric("cps") is CPS
    assert find_metric("jitter") is None
    with pytest.raises(ConfigError) as err:
        metric("jitter")
    assert str(err.value) == f"metric: unknown metric 'jitter'; known: {', '.join(metric_names())}"


def test_a_registered_metric_is_found_by_its_name() -> None:
    extra = dataclasses.replace(CPS, name="cps_again", order=999)
    register(extra)
    try:
        assert find_metric("cps_again") is extra
        assert metric_names()[-1] == "cps_again"
    finally:
        registry.METRICS.unregister("cps_again")  # the built-in registry stays as it was
    assert find_metric("cps_again") is None


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ConfigError, match="metric 'cps' is registered twice: first by"):
        register(dataclasses.replace(CPS))


def test_a_procedure_gets_settings_of_its_own_model_only() -> None:
    dut = FakeDut(FakeModel())
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, 3)
    tester.prepare(plan)
    settings, _options = build("teardown", fill_rate=50_000)
    ctx: ProcedureContext[Any] = ProcedureContext(tester, dut, POINT, plan, "cps", 0, settings, emit=lambda r: None)
    with pytest.raises(ConfigError) as err:
        run_repetition(ctx)
    # the error names the offending field, "settings", before the message
    assert str(err.value) == "settings: cps needs CpsSettings, got TeardownSettings"


def test_a_failed_repetition_has_its_metrics_unit() -> None:
    dut = FakeDut(FakeModel(invalid_every=1))  # the tester falls behind in every trial: invalid
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, 3)
    tester.prepare(plan)
    settings, _options = build("cps", upper=1_000_000, error=1000, max_invalid=0)
    res = run_repetition(ProcedureContext(tester, dut, POINT, plan, "cps", 0, settings, emit=lambda r: None))
    assert (res.value, res.unit) == (None, CPS.unit)
    assert res.extra["failed"].startswith("the tester could not send at any rate tried")


def test_every_metric_has_a_duration_model() -> None:
    from natbench.campaign import load_campaign

    campaign = load_campaign("campaigns/quickstart.yaml")
    point = campaign.points()[0]
    selected = {name: campaign.settings_for(point, name) for name in campaign.metrics}
    for name, s in selected.items():
        trials, seconds = metric(name).estimate(s, point.connections, selected)
        assert trials >= s.repetitions and seconds > 0


def test_a_metric_entry_is_frozen() -> None:
    m: Metric[Any] = CPS
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.unit = "fps"  # type: ignore[misc]


def test_a_stored_metric_this_natbench_does_not_know_is_reported_by_a_stand_in() -> None:
    """reported_metric: a registered name resolves to its metric; another (stored by another version) to a stand-in
    named by itself, ordered after every known metric, reported as stored (no unit, no axis words), declaring nothing,
    estimating nothing, and refusing to run."""
    assert registry.reported_metric("cps") is CPS
    m = registry.reported_metric("future_metric")
    assert find_metric("future_metric") is None  # resolving it registers nothing
    assert (m.name, m.label, m.title, m.scale_label) == (
        "future_metric", "future_metric", "future_metric", "future_metric rel. scale up",
    )  # fmt: skip
    assert m.description == "A metric this natbench does not know (stored by another version)."
    assert (m.unit, m.axis, m.unit_words) == ("", "", "")
    assert m.order > max(k.order for k in all_metrics())
    assert m.sort_key > max(k.sort_key for k in all_metrics())
    assert m.settings is MetricSettings
    assert (m.columns, m.marks, m.count_rows, m.stat_rows, m.table, m.lifetime) == ((), (), (), (), None, None)
    assert (m.lower_is_better, m.scaled, m.rate_from, m.baseline_for) == (False, False, None, None)
    settings, _options = build("cps", upper=1000, error=100)
    assert m.estimate(settings, 4000, {}) == (0, 0.0)
    dut = FakeDut(FakeModel())
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, 3)
    ctx: ProcedureContext[Any] = ProcedureContext(
        FakeTester(dut), dut, POINT, plan, "future_metric", 0, settings, emit=lambda r: None
    )
    with pytest.raises(SearchError) as err:
        m.run(ctx)
    assert str(err.value) == "metric 'future_metric' is not registered in this natbench"
