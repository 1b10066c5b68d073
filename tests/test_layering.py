"""The package's layering rule on its real source (tests/layering.py): no import runs up a floor or sideways, no
import circle between packages or modules, and every exception is justified in docs/architecture.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from layering import ALLOWED, ALLOWED_MODULE_CYCLES, FLOORS, ROOT, Import, check, cycles, floor_of, imports

ARCHITECTURE = ROOT / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(ROOT)


def _show(edges: list[Import]) -> str:
    return "\n".join(f"{e.where}: {e.source} -> {e.target} [{e.kind}]" for e in edges)


def test_every_package_is_on_a_floor(found: list[Import]) -> None:
    for e in found:
        floor_of(e.source), floor_of(e.target)  # KeyError names a package FLOORS does not place
    placed = [name for floor in FLOORS for name in floor]
    assert len(placed) == len(set(placed)), "a package is on two floors"


def test_no_import_runs_up_a_floor_or_sideways(found: list[Import]) -> None:
    report = check(found)
    assert not report.upward, "imports to a higher floor:\n" + _show(report.upward)
    assert not report.sideways, "imports between packages of one floor:\n" + _show(report.sideways)


def test_no_import_circle_between_packages_or_modules(found: list[Import]) -> None:
    report = check(found)
    assert report.package_cycles == []
    unexplained = [c for c in report.module_cycles if frozenset(c) not in ALLOWED_MODULE_CYCLES]
    assert unexplained == []
    # an explained circle is closed by type-only imports: without them, no circle is left at all
    runtime: dict[str, set[str]] = {}
    for e in found:
        if e.kind != "type":
            runtime.setdefault(e.source, set()).add(e.target)
    assert cycles(runtime) == [], "a circle of imports that run"


def test_the_allow_list_is_used_and_justified_in_the_architecture_doc(found: list[Import]) -> None:
    report = check(found)
    stale = set(ALLOWED) - report.allowed_used
    assert not stale, f"no longer imported: remove {sorted(stale)} from ALLOWED and docs/architecture.md"
    gone = [c for c in ALLOWED_MODULE_CYCLES if sorted(c) not in report.module_cycles]
    assert not gone, f"no longer a circle: remove {gone} from ALLOWED_MODULE_CYCLES and docs/architecture.md"
    doc = ARCHITECTURE.read_text("utf-8")
    for source, target in ALLOWED:
        assert f"`{source}` -> `{target}`" in doc, f"docs/architecture.md does not justify {source} -> {target}"
    for cycle in ALLOWED_MODULE_CYCLES:
        assert " <-> ".join(f"`{m}`" for m in sorted(cycle)) in doc, f"docs/architecture.md does not explain {cycle}"


def test_the_rule_finds_what_it_forbids(tmp_path: Path) -> None:
    # the check itself: an upward, a sideways and a circular import in a small made-up package are all found
    pkg = tmp_path / "natbench"
    for name, text in {
        "__init__.py": "",
        "plugins/__init__.py": "",
        "plugins/a.py": "from natbench.campaign import model\n",
        "testers/__init__.py": "from natbench.duts import x\n",
        "duts/__init__.py": "",
        "duts/x.py": "from natbench.testers import y\n",
        "testers/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from natbench.duts import x\n",
        "campaign/__init__.py": "",
        "campaign/model.py": "def f():\n    from natbench.plugins import a\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    report = check(imports(tmp_path))
    assert [(e.source, e.target, e.kind) for e in report.upward] == [
        ("natbench.plugins.a", "natbench.campaign.model", "top")
    ]
    assert {(e.source, e.target) for e in report.sideways} == {
        ("natbench.testers", "natbench.duts.x"),
        ("natbench.duts.x", "natbench.testers.y"),
        ("natbench.testers.y", "natbench.duts.x"),
    }
    assert ["campaign", "plugins"] in report.package_cycles and ["duts", "testers"] in report.package_cycles
    assert ["natbench.campaign.model", "natbench.plugins.a"] in report.module_cycles


def test_metrics_testers_and_duts_are_siblings(tmp_path: Path) -> None:
    # a procedure must never know which tester or DUT it drives: metrics -> testers (or duts) is refused as a
    # sideways import, and so is the other way round; each of them may still import the seam below them
    pkg = tmp_path / "natbench"
    for name, text in {
        "__init__.py": "",
        "plugins/__init__.py": "",
        "metrics/__init__.py": "",
        "metrics/throughput.py": "from natbench.testers import software\nfrom natbench.plugins import x\n",
        "metrics/cps.py": "def f():\n    from natbench.duts import recipe_dut\n",
        "testers/__init__.py": "",
        "testers/software.py": "from natbench.metrics import throughput\n",
        "duts/__init__.py": "",
        "duts/recipe_dut.py": "from natbench.plugins import x\n",
        "plugins/x.py": "",
        "campaign/__init__.py": "from natbench.metrics import cps\nfrom natbench.testers import software\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert len({floor_of(f"natbench.{p}") for p in ("metrics", "testers", "duts")}) == 1
    report = check(imports(tmp_path))
    assert {(e.source, e.target, e.kind) for e in report.sideways} == {
        ("natbench.metrics.throughput", "natbench.testers.software", "top"),
        ("natbench.metrics.cps", "natbench.duts.recipe_dut", "lazy"),
        ("natbench.testers.software", "natbench.metrics.throughput", "top"),
    }
    # the seam below them and the campaign above them are not sideways nor upward
    assert report.upward == []
