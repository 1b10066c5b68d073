"""Host load through the engine and the reports: every trial stores its window's figures, a repetition the largest
share beyond the bound (table fills left out), and a result is flagged when that share exceeds what it can absorb
(its search error, or nothing for a result without one): marked [h] in the tables, warned in the summary."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from metric_settings import build

import natbench
from natbench.metrics import ProcedureContext
from natbench.metrics.hostload import HOST_COLUMNS, host_busy, tolerance
from natbench.metrics.registry import run_repetition
from natbench.report.summary import summarize_run
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.testing.rundir import write_run_dir
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")


class ScriptedProbe:
    """A host-load probe whose windows report the shares it is given, in turn (one per trial; the last one from then
    on)."""

    def __init__(self, others: list[float], bound: float = 0.01, whole_bound: float = 0.01) -> None:
        self.others = list(others)
        self.bound = bound
        self.whole_bound = whole_bound
        self.marks = 0
        self.windows = 0

    def mark(self) -> None:
        self.marks += 1

    def since_mark(self) -> dict[str, Any]:
        share = self.others[min(self.windows, len(self.others) - 1)]
        self.windows += 1
        return {"seconds": 1.0, "cpus": 2, "others": share, "steal": 0.0, "bound": self.bound}

    def reading(self) -> int:
        return self.windows

    def since(self, start: Any) -> dict[str, Any]:
        """The whole repetition: the mean of the windows since ``start``, with the bound of one long window."""
        seen = [self.others[min(i, len(self.others) - 1)] for i in range(int(start), self.windows)] or [0.0]
        return {"seconds": 10.0, "cpus": 2, "others": sum(seen) / len(seen), "steal": 0.0, "bound": self.whole_bound}


def measure(metric: str, probe: ScriptedProbe, records: list[TrialRecord], rep: int = 0, **settings: Any) -> Any:
    dut = FakeDut(FakeModel(forwarding=300_000, flush_per_connection=1e-5))
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    resolved, options = build(metric, {"gap": 0.0, "duration": 1.0, "fill_rate": 50_000}, **settings)
    ctx: ProcedureContext[Any] = ProcedureContext(
        tester, dut, POINT, plan, metric, rep, resolved, emit=records.append, sleep=lambda _s: None,
        options=options, host_load=probe,
    )  # fmt: skip
    return run_repetition(ctx)


def recording(probe: ScriptedProbe) -> ProcedureContext[Any]:
    """A forwarding repetition's context whose host-load windows ``probe`` reports, its records kept nowhere."""
    dut = FakeDut(FakeModel(forwarding=300_000))
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    resolved, options = build("forwarding", directions="forward", upper=1_000_000, error=100_000, duration=1.0)
    return ProcedureContext(
        FakeTester(dut), dut, POINT, plan, "forwarding", 0, resolved, emit=lambda _r: None, options=options,
        host_load=probe,
    )  # fmt: skip


def test_each_trial_but_a_fill_raises_the_repetitions_share_to_the_largest_beyond_the_bound() -> None:
    """Trial by trial, the repetition keeps the largest share other processes took beyond each window's bound: a
    smaller one later lowers nothing, a table fill's counts for nothing, a share within its bound for 0."""
    ctx = recording(ScriptedProbe([0.005, 0.31, 0.11, 0.9, 0.9], bound=0.01))
    assert ctx.host_others is None  # nothing measured yet
    within = ctx.record("phase2", None, Verdict.PASS, "", 0.0)
    assert within.extra["host_load"]["others"] == 0.005 and ctx.host_others == 0.0
    ctx.record("phase2", None, Verdict.PASS, "", 0.0)
    assert ctx.host_others == pytest.approx(0.30)
    ctx.record("phase2", None, Verdict.PASS, "", 0.0)
    assert ctx.host_others == pytest.approx(0.30)  # 0.10 beyond lowers nothing
    for kind in ("fill", "fill_check"):
        fill = ctx.record(kind, None, Verdict.PASS, "", 0.0)
        assert fill.extra["host_load"]["others"] == 0.9  # stored with the fill, flagging nothing
    assert ctx.host_others == pytest.approx(0.30)
    first = recording(ScriptedProbe([0.11], bound=0.01))
    first.record("phase2", None, Verdict.PASS, "", 0.0)
    assert first.host_others == pytest.approx(0.10)


def test_the_result_keeps_the_larger_of_a_trials_share_and_the_whole_repetitions() -> None:
    """A trial's 0.30 beyond its bound stays when the whole span lies within the long window's bound (0.5); a
    repetition whose only trial was a fill stores the whole span's share (0.2 - 0.01) alone."""
    trial = recording(ScriptedProbe([0.31], bound=0.01, whole_bound=0.5))
    trial.record("phase2", None, Verdict.PASS, "", 0.0)
    res = trial.result(1.0)
    assert res.extra["host_load"]["others"] < res.extra["host_load"]["bound"]
    assert res.extra["host_others"] == pytest.approx(0.30)
    filled = recording(ScriptedProbe([0.2], bound=0.5, whole_bound=0.01))
    filled.record("fill", None, Verdict.PASS, "", 0.0)
    assert filled.host_others is None  # a fill counts for no trial
    assert filled.result(1.0).extra["host_others"] == pytest.approx(0.19)


def test_the_result_stores_the_share_to_a_millionth() -> None:
    ctx = recording(ScriptedProbe([0.1234567], bound=0.01, whole_bound=0.5))
    ctx.record("phase2", None, Verdict.PASS, "", 0.0)
    assert ctx.host_others == pytest.approx(0.1134567)
    assert ctx.result(1.0).extra["host_others"] == 0.113457


def test_a_context_without_a_probe_measures_nothing_though_it_holds_a_start_reading() -> None:
    """A copy of a measured repetition's context with its probe taken away: its start reading alone measures
    nothing (there is no probe to read the span's end from)."""
    unmeasured = dataclasses.replace(recording(ScriptedProbe([0.31])), host_load=None)
    assert unmeasured.host_start is not None
    res = unmeasured.result(1.0)
    assert "host_load" not in res.extra and "host_others" not in res.extra


def test_every_trial_stores_its_window_and_the_result_the_largest_share_beyond_the_bound() -> None:
    records: list[TrialRecord] = []
    probe = ScriptedProbe([0.5, 0.03, 0.05, 0.02])
    res = measure("throughput", probe, records, upper=1_000_000, error=100_000)
    assert all("host_load" in r.extra for r in records)
    traffic = [r for r in records if r.kind in ("phase2", "fill")]
    assert probe.marks >= len(traffic)  # each trial's traffic starts a window
    fills = [r for r in records if r.kind == "fill"]
    assert fills and fills[0].extra["host_load"]["others"] == 0.5  # the first window: the fill's
    search = [r.extra["host_load"] for r in records if r.kind not in ("fill", "fill_check")]
    assert max(w["others"] - w["bound"] for w in search) == pytest.approx(0.04)
    assert res.extra["host_load"]["seconds"] == 10.0  # the whole repetition's window
    whole = res.extra["host_load"]["others"] - res.extra["host_load"]["bound"]
    assert res.extra["host_others"] == pytest.approx(max(0.04, whole))
    assert whole < 0.49  # the fill's 0.5 flags no result on its own


def test_trials_too_short_to_tell_add_up_over_the_whole_repetition() -> None:
    """Every trial's share (0.2) lies within its own bound (0.5: a fraction of a second), so no trial tells; over the
    whole repetition the same share stands beyond the long window's bound (0.01)."""
    records: list[TrialRecord] = []
    res = measure("forwarding", ScriptedProbe([0.2], bound=0.5), records, directions="forward", upper=1_000_000,
                  error=100_000)  # fmt: skip
    assert all(r.extra["host_load"]["others"] < r.extra["host_load"]["bound"] for r in records)
    assert res.extra["host_others"] == pytest.approx(0.19)
    short = measure("forwarding", ScriptedProbe([0.2], bound=0.5, whole_bound=0.5), [], directions="forward",
                    upper=1_000_000, error=100_000)  # fmt: skip
    assert short.extra["host_others"] == 0.0


def test_without_a_probe_nothing_is_stored() -> None:
    records: list[TrialRecord] = []
    dut = FakeDut(FakeModel(forwarding=300_000))
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    resolved, options = build("forwarding", directions="forward", upper=1_000_000, error=100_000, duration=1.0)
    ctx: ProcedureContext[Any] = ProcedureContext(
        tester, dut, POINT, plan, "forwarding", 0, resolved, emit=records.append, options=options
    )
    res = run_repetition(ctx)
    assert "host_others" not in res.extra and not any("host_load" in r.extra for r in records)
    assert host_busy(res) is False


def _result(value: float | None, error: float | None, share: float | None) -> RepetitionResult:
    extra = {} if share is None else {"host_others": share}
    return RepetitionResult("p", "throughput", 0, value, "fps", error, extra)


@pytest.mark.parametrize(
    ("value", "error", "share", "busy"),
    [
        (100_000.0, 5000.0, 0.049, False),  # within the search's precision (5 %)
        (100_000.0, 5000.0, 0.051, True),  # beyond it
        (2.0, None, 0.0, False),  # no error: nothing beyond the bound
        (2.0, None, 0.001, True),  # no error: anything measurable
        (None, None, 0.9, False),  # no value: nothing to mark
        (100_000.0, 5000.0, None, False),  # not measured
    ],
)
def test_a_result_is_flagged_when_others_took_more_than_it_can_absorb(
    value: float | None, error: float | None, share: float | None, busy: bool
) -> None:
    r = _result(value, error, share)
    assert host_busy(r) is busy
    assert HOST_COLUMNS[0].value(r) is busy
    if value and error:
        assert tolerance(r) == pytest.approx(error / value)


@pytest.mark.parametrize("busy", [True, False])
def test_the_tables_mark_a_busy_hosts_points_and_the_summary_warns(tmp_path: Path, busy: bool) -> None:
    """Tear-down (a table of its own, no error): any share beyond the bound marks it; throughput: beyond its error."""
    stored: list[TrialRecord | RepetitionResult] = []
    share = [0.3] if busy else [0.005]
    for rep in range(2):
        records: list[TrialRecord] = []
        res = measure("teardown", ScriptedProbe(share), records, rep=rep)
        stored += [*records, res]
        records = []
        res = measure("throughput", ScriptedProbe(share), records, rep=rep, upper=1_000_000, error=100_000)
        stored += [*records, res]
    run = natbench.load(write_run_dir(tmp_path / "run", [POINT], stored))
    tables = {t.key: t for t in run.tables()}
    rate = str(tables["teardown"].cells.loc["conn. tear d. rate"].iloc[0])
    median = str(tables["performance"].cells.loc["throughput median"].iloc[0])
    warned = [w for w in summarize_run(run).warnings if "other processes on the host" in w]
    assert rate.endswith("[h]") is busy
    # throughput found 300,000 with an error of 100,000: it absorbs a share up to 0.33, and 0.3 - 0.01 stays within
    assert not median.endswith("[h]")
    assert ("[h]:" in tables["teardown"].caption) is busy
    assert len(warned) == (1 if busy else 0)
