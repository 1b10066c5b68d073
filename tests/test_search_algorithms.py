"""Search algorithms are declared (natbench.search.SearchAlgorithm) and only natbench/search knows one by name:
metrics, plans and reports ask the declaration. A throwaway algorithm registered here runs through a real metric
procedure, its plan and its caption, with nothing else of natbench changed."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from metric_settings import build
from pydantic import ValidationError
from test_procedures import POINT, Harness

from natbench.errors import ConfigError
from natbench.metrics import ProcedureContext
from natbench.metrics.cps import CpsSettings
from natbench.metrics.declare import error_caption
from natbench.metrics.duration import search_seconds
from natbench.metrics.searching import run_search, search_task
from natbench.metrics.throughput import ThroughputSettings
from natbench.results import RepetitionResult, Verdict
from natbench.search import (
    ALGORITHMS,
    BlockFacts,
    PlanQuery,
    SearchAlgorithm,
    SearchOutcome,
    SearchTask,
    TrialGroups,
    TrialRequest,
)
from natbench.search.declare import (
    DEFAULT_ALGORITHM,
    algorithm,
    algorithm_names,
    offered,
    offered_names,
    reference_algorithm,
    reported_algorithm,
    stored_algorithm,
)
from natbench.search.grid import RateGrid
from natbench.search.mlr import MlrSection
from natbench.search.shorttrials import ShortTrialSettings

ROOT = Path(__file__).resolve().parent.parent


def _literals(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every string constant of ``tree`` but docstrings (a string statement) and the literal parts of f-strings."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values if isinstance(v, ast.Constant))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node


def test_no_code_outside_natbench_search_names_a_search_algorithm() -> None:
    names = set(algorithm_names())
    assert {"binary", "fast", "mlr"} <= names
    found = []
    for path in sorted((ROOT / "natbench").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("natbench", "search"):
            continue
        for node in _literals(ast.parse(path.read_text(), str(rel))):
            if node.value in names:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_scan_finds_an_algorithm_name_in_code_and_not_in_a_docstring() -> None:
    code = 'def f(s):\n    """A ``fast`` search."""\n    return s.algorithm == "fast" or f"fast {s}"\n'
    assert [n.value for n in _literals(ast.parse(code))] == ["fast"]


def test_a_metric_offers_an_algorithm_when_its_settings_include_what_the_algorithm_reads() -> None:
    assert offered_names(CpsSettings) == ("binary", "fast")  # no short trials, no MLRsearch goal
    assert offered_names(ThroughputSettings) == ("binary", "fast", "mlr")
    assert algorithm("mlr").requires[-1] is MlrSection
    refused = "search algorithm 'mlr' is not offered here; choose one of: binary, fast"
    with pytest.raises(ValidationError, match=refused):
        CpsSettings(upper=1000, error=10, algorithm="mlr")
    with pytest.raises(ValidationError, match="search algorithm 'nope' is not offered here"):
        ThroughputSettings(upper=1000, error=10, fill_rate=100, algorithm="nope")
    assert ThroughputSettings(upper=1000, error=10, fill_rate=100).algorithm == DEFAULT_ALGORITHM == "binary"


def test_offered_asks_the_registered_declaration_and_is_false_for_an_unknown_name() -> None:
    # what the campaign estimate asks of a metric's algorithm: offered when its settings include what it reads
    assert offered(ThroughputSettings, "mlr") and offered(ThroughputSettings, "binary") and offered(CpsSettings, "fast")
    assert not offered(CpsSettings, "mlr")  # registered, but cps has no short trials and no MLRsearch goal
    assert not offered(ThroughputSettings, "nope")  # not registered: not offered (no error)


class _ShortTrialsOnly(ShortTrialSettings):
    """Settings with short trials but no MLRsearch goal."""


def test_an_algorithm_is_offered_only_when_the_settings_include_every_model_it_requires() -> None:
    mlr = algorithm("mlr")  # requires short trials and an MLRsearch goal
    assert mlr.offered_by(ThroughputSettings) and not mlr.offered_by(_ShortTrialsOnly)
    assert not mlr.offered_by(CpsSettings)
    assert algorithm("binary").offered_by(_ShortTrialsOnly)  # it requires nothing


def test_the_registered_algorithms_are_named_default_first_and_the_reference_is_the_seeds_binary_search() -> None:
    assert algorithm_names() == ("binary", "fast", "mlr")
    assert reference_algorithm() is algorithm("binary")
    with pytest.raises(ConfigError, match=r"^algorithm: unknown search algorithm 'nope'; known: ") as err:
        algorithm("nope")
    assert err.value.field == "algorithm"


def test_a_stored_result_names_its_algorithm_or_is_the_default_searchs_when_it_has_an_error() -> None:
    def result(error: float | None, **extra: Any) -> RepetitionResult:
        return RepetitionResult("p", "cps", 0, 1000.0, "cps", error=error, extra=extra)

    assert stored_algorithm(result(100.0, algorithm="fast")) == "fast"
    assert stored_algorithm(result(None, algorithm="fast")) == "fast"
    # stored before results named their algorithm: a search result (it has an error, 0 too) is the default's
    assert stored_algorithm(result(100.0)) == stored_algorithm(result(0.0)) == DEFAULT_ALGORITHM
    assert stored_algorithm(result(100.0, algorithm=3)) == DEFAULT_ALGORITHM  # a name that is no text is none
    assert stored_algorithm(result(None)) is None  # no error: no search's result


def test_a_stored_name_is_reported_by_its_declaration_and_an_empty_one_by_the_default() -> None:
    assert reported_algorithm("fast") is algorithm("fast")
    assert reported_algorithm(None) is reported_algorithm("") is algorithm(DEFAULT_ALGORITHM)


def test_a_blocks_facts_are_a_copy_of_the_summarised_columns() -> None:
    counts, firsts = {"seeded": 2}, {"search_goal": "preset csit"}
    facts = algorithm("fast").facts("throughput", 3, counts, firsts)
    assert facts == BlockFacts("throughput", 3, {"seeded": 2}, {"search_goal": "preset csit"})
    counts["seeded"], firsts["search_goal"] = 0, ""
    assert (facts.counts, facts.firsts) == ({"seeded": 2}, {"search_goal": "preset csit"})


def test_a_stored_algorithm_this_natbench_does_not_know_is_reported_as_stored() -> None:
    other = reported_algorithm("from-the-future")
    assert other.name == "from-the-future"
    facts = BlockFacts("cps", 3)
    assert other.meaning(facts) == "final width (upper - lower) of the from-the-future search"
    # the rest of its declaration, as reports and the campaign reference read it, says what little is known
    assert other.description == "A search algorithm this natbench does not know (stored by another version)."
    assert other.words == "from-the-future search"
    assert other.summary(facts) == "from-the-future search; error: as the search stored it"
    assert other.stored(None, None) == {"algorithm": "from-the-future"}  # type: ignore[arg-type]
    assert other.plan(PlanQuery(0.0, 1000.0, 10.0, 3, CpsSettings)) == ()  # it plans no trial
    with pytest.raises(NotImplementedError, match=r"^search algorithm 'from-the-future' is not registered in this"):
        other.run(None)  # type: ignore[arg-type]  # it cannot search
    assert reported_algorithm(None).name == DEFAULT_ALGORITHM  # stored before results named their algorithm


def test_a_table_of_one_algorithm_that_declares_a_whole_sentence_uses_it_and_a_mixed_table_words_each() -> None:
    binary, fast = BlockFacts("cps", 3), BlockFacts("throughput", 3, {"short_bound": 1})
    seeds = algorithm("binary").table_error
    assert seeds is not None and error_caption([binary, binary], ["binary", None]) == seeds
    mixed = error_caption([binary, fast], ["binary", "fast"])
    assert mixed.startswith("Error, in plain units as the search ran")
    assert "cps: final width (upper - lower) of the binary search" in mixed
    assert "throughput: fast search: each value passed a full trial" in mixed
    assert "1 of 3 repetitions' upper bound from a short trial" in mixed
    only_fast = error_caption([fast], ["fast"])  # the fast search declares no whole sentence: its meaning per block
    assert only_fast != seeds and "throughput: fast search" in only_fast
    assert error_caption([], []) == ""


# ------------------------------------------------------------------------------- a throwaway algorithm, end to end
def _linear_run(task: SearchTask) -> SearchOutcome:
    """Walk up from the lower bound in steps of one error until a trial fails."""
    grid = RateGrid(task.lower, task.upper, task.error)
    k, steps = 1, 0
    while k < grid.top:
        rec = task.run(TrialRequest(grid.rate(k), grid.rate(k - 1), task.upper, tags={"search_trial": "linear"}))
        steps += 1
        if rec.verdict is not Verdict.PASS:
            break
        k += 1
    value = grid.rate(k - 1)
    upper = grid.rate(k)
    return SearchOutcome(value, value, upper, steps, 0, upper == task.upper, passed=k > 1)


def _linear_plan(query: PlanQuery) -> TrialGroups:
    return ((query.repetitions * 7, None),)


LINEAR = SearchAlgorithm(
    name="linear",
    description="walks up in steps of one error until a trial fails",
    words="linear search",
    run=_linear_run,
    stored=lambda _task, out: {"algorithm": "linear", "linear_steps": out.steps},
    plan=_linear_plan,
    meaning=lambda facts: f"step of the linear search ({facts.repetitions} repetitions)",
    summary=lambda _facts: "linear search; error: its step",
)


@pytest.fixture
def linear() -> Iterator[SearchAlgorithm]:
    ALGORITHMS.register("linear", LINEAR)
    yield LINEAR
    ALGORITHMS.unregister("linear")


def test_a_new_algorithm_is_one_declaration_and_one_registration(linear: SearchAlgorithm) -> None:
    assert "linear" in offered_names(ThroughputSettings) and "linear" in offered_names(CpsSettings)
    h = Harness(forwarding=240_000)
    res = h.run("throughput", upper=400_000, error=50_000, fill_rate=50_000, algorithm="linear", duration=2.0)
    rates = [(r.kind, r.intended_rate, r.extra.get("search_trial")) for r in h.records if r.kind == "phase2"]
    assert rates == [("phase2", 50_000.0 * k, "linear") for k in range(1, 6)]  # 250,000 fails
    assert (res.value, res.error) == (200_000, 50_000)
    assert res.extra["algorithm"] == "linear" and res.extra["linear_steps"] == 5
    s = ThroughputSettings(upper=400_000, error=50_000, fill_rate=50_000, algorithm="linear", repetitions=2)
    assert search_seconds(s, 10.0) == (14, 14 * (10.0 + 2.0 + 1.0))  # its plan, each trial duration + wait + 1 s
    assert error_caption([BlockFacts("throughput", 2)], ["linear"]).endswith(
        "throughput: step of the linear search (2 repetitions)."
    )


def _settings(**kw: Any) -> ThroughputSettings:
    return ThroughputSettings(upper=400_000, error=50_000, fill_rate=50_000, **kw)


def test_every_registered_algorithm_plans_at_least_one_trial_per_repetition() -> None:
    for name in offered_names(ThroughputSettings):
        s = _settings(algorithm=name, repetitions=3)
        trials, seconds = search_seconds(s, 10.0)
        assert trials >= 3 and seconds > 0, name


def test_a_metric_searches_with_the_algorithm_it_is_given_over_the_one_its_settings_name() -> None:
    """run_search's ``using`` (capacity's probes, cps's final validation) wins over the settings' algorithm."""
    h = Harness()
    settings, options = build("cps", upper=100_000, error=60_000, algorithm="binary")
    ctx: ProcedureContext[Any] = ProcedureContext(
        h.tester, h.dut, POINT, h.plan, "cps", 0, settings, emit=h.records.append, options=options
    )
    outcome = SearchOutcome(value=1.0, lower=1.0, upper=2.0, steps=0, invalid=0, at_upper_limit=False)
    given = replace(algorithm("binary"), run=lambda _task: outcome, stored=lambda _task, _out: {"by": "given"})
    assert run_search(ctx, lambda _request: NotImplemented, using=given) == (outcome, {"by": "given"})
    assert h.records == []  # the settings' binary search ran no trial


def test_a_search_task_spans_the_range_it_is_given_else_the_settings() -> None:
    h = Harness()
    settings, options = build("cps", lower=100, upper=100_000, error=1_000)
    ctx: ProcedureContext[Any] = ProcedureContext(
        h.tester, h.dut, POINT, h.plan, "cps", 0, settings, emit=h.records.append, options=options
    )
    task = search_task(ctx, lambda _request: NotImplemented)
    assert (task.lower, task.upper, task.error) == (100.0, 100_000.0, 1_000.0)
    task = search_task(ctx, lambda _request: NotImplemented, lower=3_000, upper=9_000)
    assert (task.lower, task.upper, task.error) == (3_000.0, 9_000.0, 1_000.0)


def test_cps_keeps_the_rates_its_algorithm_rejected_when_no_final_validation_rejected_one() -> None:
    """A search algorithm may store rates it rejected itself (the fast search: a full trial disagreeing with the
    short ones); cps stores them as ``rejected`` unless a final validation rejected a rate, which then is the one
    named."""
    rejecting = dataclasses.replace(
        LINEAR, stored=lambda _task, out: {"algorithm": "linear", "rejected": [out.upper + 1000.0]}
    )
    ALGORITHMS.register("linear", rejecting)
    try:
        h = Harness(cps=240_000)
        res = h.run("cps", upper=400_000, error=50_000, algorithm="linear")  # validation every_step: none final
        assert (res.value, res.extra["rejected"]) == (200_000, [251_000.0])
    finally:
        ALGORITHMS.unregister("linear")
