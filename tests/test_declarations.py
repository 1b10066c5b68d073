"""What recipes declare for reports (``table:``, ``memory:``), how a run stores it and how reports read it; what
metrics declare beyond their rows (the connection-lifetime model); the captions per search algorithm; the CPU
rows over the DUT's data-path CPUs only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import natbench
from natbench.campaign import load_campaign
from natbench.campaign.recipes import check_recipes
from natbench.duts.recipes import load_recipe, parse_recipe
from natbench.errors import RecipeError, StoreError
from natbench.metrics import metric
from natbench.metrics.declare import Lifetime
from natbench.metrics.registry import METRICS
from natbench.plugins import DeclaresRows, DutDeclarations, SlabCache, TableParam
from natbench.report.aggregate import trial_cpu_busy
from natbench.report.headroom import cpu_headroom
from natbench.report.plots import cpu_idle_series
from natbench.run.format import LEGACY, RunMeta, decode_meta, encode_meta
from natbench.run.orchestrator import Orchestrator
from natbench.run.reader import RunDirectory
from natbench.run.writer import RunStore
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir
from natbench.traffic import AddressPlan, Family, TrafficPlan

ROOT = Path(__file__).resolve().parent.parent

PF = DutDeclarations(TableParam("state_limit", "PF state limit", "s.l./num.conn."))
FOO = DutDeclarations(slabs=(SlabCache("foo_slab", "foo_entries", "Foo entries / conn. (B)"),))


# ------------------------------------------------------------------------------------------------- the recipes
def test_natbench_recipes_declare_their_table_sizes_and_slab_caches() -> None:
    ipt = load_recipe("iptables-nat44").declarations()
    assert ipt.table_size == TableParam("conntrack_max", "conntrack t. s.", "c.t.s/num.conn.")
    assert ipt.hash_size == TableParam("hashsize", "hash table size", "n.c./h.t.s.")
    assert ipt.slabs == (SlabCache("conntrack_slab", "nf_conntrack", "conntrack slab / conn. (B)"),)
    assert load_recipe("openbsd-pf-nat44").declarations() == PF
    jool = load_recipe("jool-nat64").declarations()
    assert (jool.table_size, [s.cache for s in jool.slabs]) == (None, ["session_nodes", "bib_nodes"])
    assert load_recipe("linux-forwarding").declarations() == DutDeclarations()  # no table, nothing to declare


BASE = """recipe: example
stateful: false
params:
  limit: {type: int, min: 1}
  name: {type: str}
steps:
  setup: [echo hi]
"""


@pytest.mark.parametrize(
    ("extra", "where", "message"),
    [
        ("table:\n  size: {param: nope, label: x}\n", "table.size.param", "unknown parameter 'nope'"),
        ("table:\n  size: {param: name, label: x}\n", "table.size.param", "parameter 'name' is a str, not an int"),
        ("table:\n  size: {param: limit}\n", "table.size.label", "required field is missing"),
        ("memory:\n  slabs:\n    mem_available: {cache: x, label: y}\n", "memory.slabs", "read from /proc/meminfo"),
        ("memory:\n  slabs:\n    Foo: {cache: x, label: y}\n", "memory.slabs", "lowercase identifiers"),
        ("memory:\n  slabs:\n    foo: {cache: 'a b', label: y}\n", "memory.slabs.foo.cache", "slabinfo cache name"),
        ("memory:\n  slabs:\n    foo: {cache: x, label: y, size: 3}\n", "memory.slabs.foo.size", "unknown key"),
    ],
)
def test_a_bad_declaration_is_one_error_naming_its_field(extra: str, where: str, message: str) -> None:
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE + extra, "example.yaml")
    assert where in str(err.value) and message in str(err.value), str(err.value)


def test_a_declared_ratio_row_defaults_to_words_built_from_its_label() -> None:
    r = parse_recipe(BASE + "table:\n  size: {param: limit, label: pool size}\n", "example.yaml")
    assert r.declarations().table_size == TableParam("limit", "pool size", "pool size / num. conn.")


# ------------------------------------------------------------------------------------------ stored with the run
def test_run_json_stores_the_declarations_and_reads_them_back() -> None:
    meta = RunMeta(dut_declarations={"pf": PF, "foo": FOO})
    text = encode_meta(meta)
    assert decode_meta(text.encode(), Path("run.json")).dut_declarations == {"pf": PF, "foo": FOO}
    assert "dut_declarations" not in encode_meta(RunMeta())  # nothing declared: nothing written (old runs' shape)


def test_a_wrong_declaration_in_run_json_is_one_error_naming_the_field() -> None:
    raw = b'{"dut_declarations": {"pf": {"slabs": [{"key": 7, "cache": "x", "label": "y"}]}}}'
    with pytest.raises(StoreError, match=r"run\.json: dut_declarations\.pf\.slabs\[0\]\.key: expected a string"):
        decode_meta(raw, Path("run.json"))


class DeclaringDut(FakeDut):
    """A fake DUT of a kind that declares its rows (as a recipe DUT does through its recipe)."""

    def declarations(self) -> dict[str, DutDeclarations]:
        return {"pf": PF}


def test_the_orchestrator_stores_what_the_dut_declares_once(tmp_path: Path) -> None:
    dut = DeclaringDut(FakeModel())
    assert isinstance(dut, DeclaresRows)
    point = make_point(0, (1, 40), (1, 10)).to_working_point()
    tester = FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, 64, seed=1)
    with RunStore.create(tmp_path / "run", campaign_text="name: x\n", points=[point]) as store:
        writes: list[Any] = []
        record = store.record_declarations
        store.record_declarations = lambda d: (writes.append(d), record(d))  # type: ignore[method-assign]
        orch = Orchestrator(store, sleep=lambda _s: None)
        from metric_settings import build

        settings, options = build("cps", upper=100_000, error=10_000)
        for _ in range(2):  # set up twice (torn down between): the same declarations are written once
            orch.measure(tester, dut, point, plan, [("cps", 0)], lambda _m: settings, options=options)
    assert writes == [{"pf": PF}]
    assert RunDirectory.open(tmp_path / "run").meta.dut_declarations == {"pf": PF}


# ------------------------------------------------------------------------------------------------- the report
def _run(tmp_path: Path, params: dict[str, Any], declared: dict[str, DutDeclarations] | None) -> natbench.Run:
    p = make_point(0, (1, 100), (1, 10), dut_params={"dut": params})
    recs: list[Any] = [result_record(p.id, "cps", r, 1000.0, "cps", error=100.0) for r in range(3)]
    mem = {"before": {"foo_slab": 1000}, "after": {"foo_slab": 1000 + 128 * 1000}, "connections": 1000}
    mem["used"] = {"foo_slab": 128 * 1000}
    recs.append(trial_record(p.id, "throughput", 0, 0, rate=1000, kind="fill", extra={"memory": mem}))
    recs.append(result_record(p.id, "throughput", 0, 500.0, "fps", error=10.0))
    with RunStore.create(tmp_path / "run", campaign_text="name: x\n", points=[p]) as store:
        store.append_all(recs)
        if declared is not None:
            store.record_declarations(declared)
        store.set_status("complete")
    return natbench.load(tmp_path / "run")


def test_the_table_size_rows_and_slab_rows_are_named_as_the_run_stored_them(tmp_path: Path) -> None:
    run = _run(tmp_path, {"state_limit": 2**20}, {"dut": dataclasses.replace(PF, slabs=FOO.slabs)})
    rows = list(run.seed_table().cells.index)
    assert rows[3:5] == ["PF state limit", "s.l./num.conn."]
    assert run.seed_table().cells.loc["PF state limit"].tolist() == ["2^20"]
    assert run.seed_table().cells.loc["Foo entries / conn. (B)"].tolist() == ["128.0"]
    assert "conntrack t. s." not in rows


def test_a_run_stored_before_declarations_reads_as_natbenchs_recipes_had_it(tmp_path: Path) -> None:
    run = _run(tmp_path, {"state_limit": 2**20}, None)
    assert run.meta.dut_declarations == {}
    assert run.seed_table().cells.loc["conntrack t. s."].tolist() == ["2^20"]  # the old rows, PF's limit too
    assert [d.table_size.param for d in LEGACY if d.table_size] == ["conntrack_max", "state_limit", "table_size"]
    assert run.seed_table().cells.loc["foo_slab / conn. (B)"].tolist() == ["128.0"]  # an undeclared key: its name


def test_a_dut_kind_that_declares_no_table_has_no_table_size_row(tmp_path: Path) -> None:
    run = _run(tmp_path, {"conntrack_max": 2**20}, {"dut": FOO})  # the parameter is there, but not declared a size
    assert not [r for r in run.seed_table().cells.index if "t. s." in str(r)]


# -------------------------------------------------------------------------------------- the lifetime model
def test_the_dut_timeout_check_asks_each_metrics_lifetime_model() -> None:
    """campaign/recipes.py names no metric: a metric whose model says its step needs 1,000 s is warned about
    against the quickstart's 300 s udp_timeout in its own words, and one whose model needs nothing is not."""
    campaign = load_campaign(ROOT / "campaigns/quickstart.yaml")
    assert check_recipes(campaign).warnings == ()
    throughput = metric("throughput")
    slow = dataclasses.replace(
        throughput, lifetime=lambda s, n, sel: (Lifetime(1000.0, "slow step of its own", refused=True),)
    )
    try:
        METRICS.unregister("throughput")  # a name is registered once: free it for the slow stand-in
        METRICS.register("throughput", slow)
        (warning,) = check_recipes(campaign).warnings
        assert warning == (
            "DUT iptables: udp_timeout 300 s is shorter than throughput's slow step of its own at iptables-16k "
            "(~1000 s): a step that slow is refused as invalid (dut_timeout) and ends the repetition"
        )
    finally:
        METRICS.unregister("throughput")
        METRICS.register("throughput", throughput)


# --------------------------------------------------------------------------------------------- the captions
def _caption(tmp_path: Path, extra: dict[str, Any]) -> str:
    p = make_point(0, (1, 100), (1, 10), cores=1)
    recs = [result_record(p.id, "throughput", r, 2000.0, "fps", error=100.0, extra=extra) for r in range(3)]
    return natbench.load(write_run_dir(tmp_path / str(len(list(tmp_path.iterdir()))), [p], recs)).seed_table().caption


def test_captions_say_which_search_produced_the_value_and_what_its_error_means(tmp_path: Path) -> None:
    binary = _caption(tmp_path, {"algorithm": "binary"})
    assert "Error: final width (upper - lower) of the binary search in plain units" in binary  # the seeds' words
    fast = _caption(tmp_path, {"algorithm": "fast", "short_bound": True})
    assert "binary search" not in fast.replace("independent binary searches", "")
    assert "throughput: fast search: each value passed a full trial" in fast
    assert "(the short-fail rule, 3 of 3 repetitions' upper bound from a short trial)" in fast
    goal = {"loss_ratio": 0.0, "exceed_ratio": 0.0, "final_trial_duration": 60.0, "duration_sum": 60.0}
    mlr = _caption(tmp_path, {"algorithm": "mlr", "mlr_preset": "rfc2544", "mlr_goal": goal})
    assert (
        "throughput: MLRsearch (preset rfc2544: loss ratio 0, exceed ratio 0, final trials 60 s, duration sum 60 s): "
        "each value is MLRsearch's relevant lower bound; its error is the distance to the relevant upper bound"
    ) in mlr
    assert "binary search" not in mlr


# ---------------------------------------------------------------------------------------- data-path CPUs only
def _monitored(tmp_path: Path) -> natbench.Run:
    """A lab DUT on CPU 0 of a machine whose CPU 1 runs the tester (93 % busy): the samples name CPU 0 as the
    data path."""
    p = make_point(0, (1, 100), (1, 10), cores=1)
    mon = {
        "dut": {
            "interval": 0.5,
            "t": [0.5, 1.0, 1.5],
            "idle": {"cpu0": [60.0, 50.0, 40.0], "cpu1": [7.0, 7.0, 7.0]},
            "data_path_cpus": [[0], [0], [0]],
        }
    }
    recs: list[Any] = [trial_record(p.id, "cps", 0, 0, rate=1000.0, extra={"monitor": mon})]
    recs.append(result_record(p.id, "cps", 0, 1000.0, "cps", error=100.0))
    return natbench.load(write_run_dir(tmp_path / "run", [p], recs))


def test_cpu_rows_heatmaps_and_idle_plots_show_the_duts_data_path_cpus_only(tmp_path: Path) -> None:
    run = _monitored(tmp_path)
    extra = run.trials["extra"].iloc[0]
    assert trial_cpu_busy(extra) == pytest.approx(50.0)  # cpu0's median busy; the tester's 93 % is not the DUT's
    head = cpu_headroom(run.trials, run.points)
    assert head["core"].tolist() == ["cpu0"]
    assert list(cpu_idle_series(extra, "dut").columns) == ["cpu0"]
    assert run.seed_table().cells.loc["cps DUT CPU busy (%)"].tolist() == ["50.0"]


def test_samples_that_name_no_data_path_show_every_core(tmp_path: Path) -> None:
    """A DUT of its own (an SSH host, a VM): every sampled core is its own."""
    mon = {"interval": 0.5, "t": [0.5, 1.0, 1.5], "idle": {"cpu0": [50.0] * 3, "cpu1": [70.0] * 3}}
    frame = pd.DataFrame({"extra": [{"monitor": {"dut": mon}}]})
    assert list(cpu_idle_series(frame["extra"].iloc[0], "dut").columns) == ["cpu0", "cpu1"]
    assert trial_cpu_busy({"monitor": {"dut": mon}}) == pytest.approx(40.0)  # 100 - mean(50, 70)
