"""The one orchestrator (natbench.run.orchestrator) that `natbench run` and the experiment API share.

What only one of the two callers used to do now happens for both: the experiment API hands the
procedures the results of earlier repetitions (tear-down reuses T_0 after ``empty_repetitions``),
stores the tester's facts after preparing it, and tears down the DUT it actually set up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import engine_fakes
import pytest

from natbench.errors import DutError
from natbench.results import RepetitionResult
from natbench.run.experiment import Experiment
from natbench.run.observers import Observer
from natbench.run.orchestrator import Orchestrator
from natbench.run.reader import RunDirectory
from natbench.run.writer import RunStore
from natbench.testbed.file import load_testbed
from natbench.testing import FakeDut, FakeModel, FakeTester

TESTBED = """\
tester:
  kind: software
duts:
  - name: fake
    recipe: iptables-nat44
    role: nat44
    access: {kind: local}
    params: {nat: snat, conntrack_max: 2^20, hashsize: 2^16}
"""

TEARDOWN = {"connections": "1k", "fill_rate": "10k", "gap": 0, "empty_repetitions": 2}


def experiment(tmp_path: Path, dut: FakeDut, tester: FakeTester | None = None) -> Experiment:
    (tmp_path / "tb.yaml").write_text(TESTBED)
    tb = load_testbed(tmp_path / "tb.yaml")
    tester = tester if tester is not None else FakeTester(dut)
    return Experiment(tb, tmp_path / "res", tester=tester, dut=dut, sleep=lambda _s: None)


# ---------------------------------------------------------------------------- through the experiment API
def test_an_experiment_reuses_the_median_t0_after_empty_repetitions(tmp_path: Path) -> None:
    """seed 000 3.4: T_0 is timed in the first k repetitions at a point only, also across measurements."""
    dut = FakeDut(FakeModel(flush_empty=0.9, flush_per_connection=1e-4))
    with experiment(tmp_path, dut) as exp:
        first = exp.measure("teardown", repetitions=4, **TEARDOWN)
        second = exp.measure("teardown", repetitions=2, **TEARDOWN)  # same point: repetitions 4 and 5
    trials = RunDirectory.open(exp.run_dir).trials()
    empty = [t.repetition for t in trials if t.kind == "flush_empty"]
    filled = [t.repetition for t in trials if t.kind == "flush_filled"]
    # three timings (empty_samples) in each of the first two; without the earlier results in every one of the 6
    assert empty == [0, 0, 0, 1, 1, 1]
    assert filled == [0, 1, 2, 3, 4, 5]
    results = [*first.results, *second.results]
    assert [r.repetition for r in results] == [0, 1, 2, 3, 4, 5]
    assert [r.extra["T_0_measured"] for r in results] == [True, True, False, False, False, False]
    assert all(r.extra["T_0"] == pytest.approx(0.9) for r in results)
    assert dut.events.count("flush") == 2 * 3 + 6  # 3 empty-table timings in each of the first 2, 6 filled


def test_an_experiment_keeps_the_dut_set_up_between_measurements_at_one_point(tmp_path: Path) -> None:
    dut = FakeDut(FakeModel(cps=50_000))
    with experiment(tmp_path, dut) as exp:
        exp.measure("cps", connections="1k", repetitions=1, upper="100k", error="1k")
        exp.measure("cps", connections="1k", repetitions=1, upper="100k", error="1k")
        assert [e for e in dut.events if e.startswith(("setup", "teardown"))] == [
            f"setup:{exp.measurements[0].point.id}"
        ]
        exp.measure("cps", connections="4k", repetitions=1, upper="100k", error="1k")  # another point
    steps = [e.split(":")[0] for e in dut.events if e.startswith(("setup", "teardown"))]
    assert steps == ["setup", "teardown", "setup", "teardown"]


def test_an_experiment_stores_the_tester_facts_after_preparing_it(tmp_path: Path) -> None:
    class Learning(FakeTester):
        def facts(self) -> dict[str, Any]:
            return {**super().facts(), "prepared": self.plan is not None}

    dut = FakeDut(FakeModel(cps=50_000))
    with experiment(tmp_path, dut, Learning(dut)) as exp:
        exp.measure("cps", connections="1k", repetitions=1, upper="100k", error="1k")
        assert RunDirectory.open(exp.run_dir).meta.tester.details["prepared"] is True


# ---------------------------------------------------------------------------- the orchestrator itself
class Warnings(Observer):
    def __init__(self) -> None:
        self.messages: list[str] = []

    def on_warning(self, message: str) -> None:
        self.messages.append(message)


class BrokenDut(FakeDut):
    """Fails in the first repetition's first DUT call (``reset_fails``); its teardown fails too."""

    reset_fails = True

    def reset_connections(self) -> None:
        if self.reset_fails:
            raise DutError("reset failed")
        super().reset_connections()

    def teardown(self) -> None:
        super().teardown()
        raise DutError("teardown failed")


def orchestrator(tmp_path: Path, observer: Observer | None = None) -> Orchestrator:
    spec = engine_fakes.make_spec()
    store = RunStore.create(tmp_path / "run", campaign_text="name: o\n", points=spec.points)
    return Orchestrator(store, observer or Observer(), clock=engine_fakes.FakeClock(), sleep=lambda _s: None)


def measure_cps(orch: Orchestrator, tester: FakeTester, dut: FakeDut, reps: range, **kw: Any) -> list[RepetitionResult]:
    spec = engine_fakes.make_spec()
    point = spec.points[0]
    todo = [("cps", r) for r in reps]
    plan = spec.plan_for(point)
    return orch.measure(tester, dut, point, plan, todo, lambda m: spec.settings(point, m), options=spec.options, **kw)


def test_the_teardown_policy_is_the_callers(tmp_path: Path) -> None:
    tester, dut = engine_fakes.make_testbed()
    orch = orchestrator(tmp_path)
    measure_cps(orch, tester, dut, range(0, 1), keep_set_up=True)
    measure_cps(orch, tester, dut, range(1, 2), keep_set_up=True)
    assert [e.split(":")[0] for e in dut.events if e.startswith(("setup", "teardown"))] == ["setup"]
    measure_cps(orch, tester, dut, range(2, 3))  # the runner's policy: torn down when the point is done
    assert [e.split(":")[0] for e in dut.events if e.startswith(("setup", "teardown"))] == ["setup", "teardown"]
    orch.tear_down()  # nothing set up: nothing to do
    assert dut.events.count("teardown") == 1
    assert [r.repetition for r in orch.earlier(engine_fakes.make_points()[0], "cps")] == [0, 1, 2]
    orch.store.close()


def test_a_teardown_failure_after_an_error_is_a_warning_and_the_error_is_raised(tmp_path: Path) -> None:
    dut = BrokenDut(FakeModel())
    warnings = Warnings()
    orch = orchestrator(tmp_path, warnings)
    with pytest.raises(DutError, match="reset failed"):
        measure_cps(orch, FakeTester(dut), dut, range(1), keep_set_up=True)  # torn down after an error anyway
    assert dut.events[-1] == "teardown"
    assert warnings.messages == ["DUT teardown after an error failed too: teardown failed"]
    orch.store.close()


def test_a_teardown_failure_without_an_error_is_raised(tmp_path: Path) -> None:
    dut = BrokenDut(engine_fakes.MODEL)
    dut.reset_fails = False
    orch = orchestrator(tmp_path)
    with pytest.raises(DutError, match="teardown failed"):
        measure_cps(orch, FakeTester(dut), dut, range(1))
    assert orch.earlier(engine_fakes.make_points()[0], "cps")  # the repetition was stored before the teardown
    orch.store.close()


def test_every_repetition_begins_on_the_tester(tmp_path: Path) -> None:
    class Keys(FakeTester):
        keys: list[tuple[str, str, int]]

        def begin_repetition(self, point_id: str, metric: str, repetition: int) -> None:
            self.keys = [*getattr(self, "keys", []), (point_id, metric, repetition)]
            super().begin_repetition(point_id, metric, repetition)

    dut = FakeDut(engine_fakes.MODEL)
    tester = Keys(dut)
    orch = orchestrator(tmp_path)
    measure_cps(orch, tester, dut, range(3, 5))
    point = engine_fakes.make_points()[0]
    assert tester.keys == [(point.id, "cps", 3), (point.id, "cps", 4)]
    orch.store.close()
