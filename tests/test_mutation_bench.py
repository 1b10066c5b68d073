"""bench/mutation.py: its explanations file stays readable and its diffs show just the mutated lines."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench" / "mutation.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_every_equivalent_mutant_is_explained_once_with_its_diff() -> None:
    directory = ROOT / "bench" / "mutation_equivalent"
    mutated = set(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]["only_mutate"])
    count = 0
    for path in sorted(directory.glob("*.toml")):
        source = path.name.removesuffix(".toml").replace(".", "/") + ".py"
        assert source in mutated, f"{path.name} explains mutants of a file the mutation run does not mutate"
        entries = tomllib.loads(path.read_text("utf-8"))["mutant"]
        assert entries, path
        for e in entries:
            assert set(e) == {"function", "diff", "reason"}, e
            lines = e["diff"].strip("\n").splitlines()
            assert lines and all(ln[:1] in "-+" for ln in lines), e  # a removed argument is '-' lines only
            assert len(e["reason"]) > 20, e
        count += len(entries)
    assert count
    assert len(_bench().load_equivalent(directory)) == count


def test_an_explanation_names_its_file_and_a_twice_explained_mutant_is_refused(tmp_path: Path) -> None:
    bench = _bench()
    entry = '[[mutant]]\nfunction = "x_top"\ndiff = """\n-    return a * 2\n+    return a / 2"""\nreason = "r"\n'
    (tmp_path / "natbench.judging.toml").write_text(entry, "utf-8")
    key = ("natbench/judging.py", "x_top", "-    return a * 2\n+    return a / 2")
    assert bench.load_equivalent(tmp_path) == {key: "r"}
    assert bench.explanations_file("natbench/metrics/fill.py") == "natbench.metrics.fill.toml"
    (tmp_path / "natbench.judging.toml").write_text(entry + entry, "utf-8")
    with pytest.raises(ValueError, match=r"natbench\.judging\.toml: .*twice"):
        bench.load_equivalent(tmp_path)


MUTATED = '''
class Box:
    def xǁBoxǁsize__mutmut_orig(self, n: int = 1) -> int:
        """Doc."""
        return n + 1

    def xǁBoxǁsize__mutmut_1(self, n: int = 1) -> int:
        """Doc."""
        return n - 1

    def xǁBoxǁsize__mutmut_2(self, n: int = 2) -> int:
        """Doc."""
        return n + 1


def x_top__mutmut_orig(a: int) -> int:
    return a * 2


def x_top__mutmut_1(a: int) -> int:
    return a / 2


x_top__mutmut_mutants = {"x_top__mutmut_1": x_top__mutmut_1}
'''


def test_a_survivor_is_shown_as_its_changed_lines_only(tmp_path: Path) -> None:
    bench = _bench()
    (tmp_path / "natbench").mkdir()
    (tmp_path / "natbench" / "box.py").write_text(MUTATED, "utf-8")
    meta = {"exit_code_by_key": {"natbench.box.xǁBoxǁsize__mutmut_1": 0, "natbench.box.xǁBoxǁsize__mutmut_2": 1}}
    meta["exit_code_by_key"]["natbench.box.x_top__mutmut_1"] = 0
    (tmp_path / "natbench" / "box.py.meta").write_text(json.dumps(meta), "utf-8")
    results = {m.name: m for m in bench.load_results(tmp_path)}
    assert {n: (m.status, m.function) for n, m in results.items()} == {
        "natbench.box.xǁBoxǁsize__mutmut_1": ("survived", "xǁBoxǁsize"),
        "natbench.box.xǁBoxǁsize__mutmut_2": ("killed", "xǁBoxǁsize"),
        "natbench.box.x_top__mutmut_1": ("survived", "x_top"),
    }
    cache: dict[str, dict[str, str]] = {}
    diff = bench.mutant_diff
    assert diff(tmp_path, results["natbench.box.xǁBoxǁsize__mutmut_1"], cache) == (
        "-        return n + 1\n+        return n - 1"
    )
    # a mutated default value shows on the def line, with the names left out
    assert diff(tmp_path, results["natbench.box.xǁBoxǁsize__mutmut_2"], cache) == (
        "-    def (self, n: int = 1) -> int:\n+    def (self, n: int = 2) -> int:"
    )
    # a top-level function ends where it ends: the registration line after it is not part of the diff
    assert diff(tmp_path, results["natbench.box.x_top__mutmut_1"], cache) == "-    return a * 2\n+    return a / 2"


def test_every_semantic_mutant_still_finds_its_code_once_and_names_existing_tests() -> None:
    """A semantic mutant whose code moved would silently test nothing: the set is checked against today's code."""
    mutants = _bench().load_semantic(ROOT / "bench" / "semantic_mutants.toml")
    assert len(mutants) >= 30
    for m in mutants:
        assert (ROOT / m.file).read_text("utf-8").count(m.old) == 1, m.name
        assert m.old != m.new and len(m.rule) > 20, m.name
        assert m.tests, m.name
        for t in m.tests:
            assert (ROOT / t.split("::")[0]).is_file(), (m.name, t)


def _mutmut_cli() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutmut_cli", ROOT / "bench" / "mutmut_cli.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_depth_bound_counts_natbench_frames_up_to_the_test_and_skips_generated_code(tmp_path: Path) -> None:
    cli = _mutmut_cli()
    runner = cli.runner_roots()
    assert any(r.endswith("/_pytest/") for r in runner)
    src = tmp_path / "natbench"
    src.mkdir()
    chain = src / "chain.py"
    chain.write_text(
        "import inspect\n"
        "def deepest(check):\n    return check(inspect.currentframe())\n"
        "def middle(check):\n    return deepest(check)\n"
        "def top(check):\n    return middle(check)\n",
        "utf-8",
    )
    namespace: dict[str, Any] = {}
    exec(compile(chain.read_text("utf-8"), str(chain), "exec"), namespace)
    # generated code between the test and natbench (file name '<string>') counts for nothing
    exec(compile("def generated(f, check):\n    return f(check)\n", "<string>", "exec"), namespace)
    roots = [str(src) + "/"]

    def walk(bound: int, where: list[str]) -> bool:
        return bool(
            namespace["generated"](namespace["top"], lambda frame: cli.within_depth(frame, where, bound, runner))
        )

    assert walk(4, roots)  # three natbench frames (top, middle, deepest): within a bound of 4
    assert not walk(3, roots)  # ... and not within 3
    assert walk(1, [str(tmp_path / "elsewhere") + "/"])  # frames outside the mutated sources count for nothing


def test_the_depth_bound_is_read_from_pyproject_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    cli = _mutmut_cli()
    assert cli.max_stack_depth(ROOT / "pyproject.toml") == 8
    given = tmp_path / "pyproject.toml"
    given.write_text("[tool.mutmut]\nsource_paths = ['natbench']\n", "utf-8")
    assert cli.max_stack_depth(given) is None
    for bad in ("0", "true", "'8'"):
        given.write_text(f"[tool.natbench-mutation]\nmax_stack_depth = {bad}\n", "utf-8")
        with pytest.raises(ValueError, match="max_stack_depth"):
            cli.max_stack_depth(given)
    given.write_text("[tool.natbench-mutation]\nmax_stack_depth = 1\n", "utf-8")
    assert cli.max_stack_depth(given) == 1


def test_the_memory_cap_is_read_from_pyproject_in_bytes_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    cli = _mutmut_cli()
    assert cli.max_memory_bytes(ROOT / "pyproject.toml") == 6 * 2**30
    given = tmp_path / "pyproject.toml"
    given.write_text("[tool.natbench-mutation]\nmax_stack_depth = 8\n", "utf-8")
    assert cli.max_memory_bytes(given) is None
    given.write_text("[tool.natbench-mutation]\nmax_memory_gib = 1\n", "utf-8")
    assert cli.max_memory_bytes(given) == 2**30
    for bad in ("0", "1.5", "false"):
        given.write_text(f"[tool.natbench-mutation]\nmax_memory_gib = {bad}\n", "utf-8")
        with pytest.raises(ValueError, match="max_memory_gib"):
            cli.max_memory_bytes(given)


def test_a_process_under_the_memory_cap_gets_memory_error_not_the_machines_memory() -> None:
    script = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('cli', {str(ROOT / 'bench' / 'mutmut_cli.py')!r})\n"
        "cli = importlib.util.module_from_spec(spec); spec.loader.exec_module(cli)\n"
        "cli.cap_memory(2**30)\n"
        "small = bytearray(2**20)  # within the cap\n"
        "try:\n    bytearray(2**31)\nexcept MemoryError:\n    sys.exit(3)\n"
    )
    assert subprocess.run([sys.executable, "-c", script], check=False).returncode == 3
