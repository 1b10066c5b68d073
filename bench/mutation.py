"""Mutation testing of natbench's core: how many small semantic changes do the tests catch?

Runs mutmut (``pip install mutmut``) over the files ``[tool.mutmut] only_mutate`` in pyproject.toml
names (campaign values and sweep, traffic enumeration, the search, the procedures, the store,
report aggregation, recipe templating) with the non-lab test suite, then prints:

* the kill rate: mutants the tests caught (failed, or timed out) / mutants tested;
* every surviving mutant as a diff against the original line(s), with the reason when
  ``bench/mutation_equivalent/`` explains it as equivalent (a change no test can see because
  the behaviour is the same), else ``UNEXPLAINED``.

The explanations of one mutated file live in ``bench/mutation_equivalent/<its module>.toml``
(``natbench.judging.toml`` for natbench/judging.py). An explanation is keyed by the mutated
function and the diff, not by mutmut's mutant number, so a code change that alters the mutant makes
its explanation stale instead of silently wrong.

mutmut only changes operators and constants. ``bench/semantic_mutants.toml`` adds hand-written
**semantic** mutants of the core's rules (a changed N, a dropped damage check, a flipped comparison in
a verdict): each replaces one exact piece of code, is applied alone to a copy of the repository and
run against the tests its entry names; their kill rate is printed beside mutmut's.

Usage (from the repository root; mutmut takes about an hour on 2 CPUs, the semantic set minutes)::

    python bench/mutation.py                 # mutmut, then the semantic set, then report both
    python bench/mutation.py --semantic-only # only the semantic set (and mutmut's last results, if any)
    python bench/mutation.py --semantic-only --show-failures   # with each caught mutant's failing test
    python bench/mutation.py --report-only   # report the last runs again (mutants/ kept)
    python bench/mutation.py --rerun-survivors   # resume, then test last run's survivors again

Exit status: 0 when the kill rates are at least ``--min-rate`` (default 0.90), every mutmut survivor is
explained and every semantic mutant is caught, 1 otherwise, 2 when mutmut is missing or results or the
semantic set cannot be read.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = ROOT / "bench" / "mutation_equivalent"
"""One TOML file of explanations per mutated source file, named after its module."""
SEMANTIC = ROOT / "bench" / "semantic_mutants.toml"
SEMANTIC_RESULTS = ROOT / "mutants" / "semantic.json"
SEMANTIC_TIMEOUT = 900.0
"""Seconds the tests of one semantic mutant may take; beyond it the mutant counts as caught (as mutmut's timeouts)."""

# mutmut's exit codes per mutant (its stats module): what counts as caught
CAUGHT = {"killed", "timeout", "segfault"}
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 35: "suspicious"}
STATUS.update({36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -11: "segfault"})
STATUS.update({-9: "segfault", 37: "caught by type check"})


@dataclass(frozen=True)
class Mutant:
    """One mutant of one function and what the tests made of it."""

    name: str
    """mutmut's name: ``module.function__mutmut_N`` (``xǁClassǁmethod`` for methods)."""
    path: str
    """Source file, relative to the repository root."""
    status: str
    """killed, survived, no tests, timeout, suspicious, skipped or not checked."""

    @property
    def function(self) -> str:
        """The mutated function's mutmut name (``x_name`` or ``xǁClassǁmethod``) without the number."""
        return self.name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]


def load_results(mutants_dir: Path) -> list[Mutant]:
    """Every mutant of the last run, read from mutmut's per-file ``.meta`` records."""
    out: list[Mutant] = []
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        rel = meta.relative_to(mutants_dir).as_posix()[: -len(".meta")]
        data = json.loads(meta.read_text("utf-8"))
        for name, code in data.get("exit_code_by_key", {}).items():
            status = "not checked" if code is None else STATUS.get(code, "suspicious")
            out.append(Mutant(name, rel, status))
    return out


def _functions(source: str) -> dict[str, str]:
    """Every function and method of a mutated file, by name, as source text (decorators left out)."""
    lines = source.splitlines()
    return {
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def mutant_diff(mutants_dir: Path, m: Mutant, cache: dict[str, dict[str, str]]) -> str:
    """The changed lines of ``m`` against the original function (``-``/``+`` lines, name-neutral)."""
    if m.path not in cache:
        cache[m.path] = _functions((mutants_dir / m.path).read_text("utf-8"))
    funcs = cache[m.path]
    short = m.name.rsplit(".", 1)[-1]
    orig = funcs.get(f"{m.function}__mutmut_orig", "")
    mutated = funcs.get(short, "")
    a = orig.rstrip().splitlines()
    b = mutated.rstrip().splitlines()
    if a and b:  # the def lines differ by the name; a mutated default value still shows
        a[0] = a[0].replace(f"{m.function}__mutmut_orig(", "(", 1)
        b[0] = b[0].replace(f"{short}(", "(", 1)
    lines = [
        ln.rstrip()
        for ln in difflib.unified_diff(a, b, lineterm="", n=0)
        if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
    ]
    return "\n".join(lines)


def explanations_file(source: str) -> str:
    """The explanations file of a mutated source file: ``natbench/judging.py`` -> ``natbench.judging.toml``."""
    return source.removesuffix(".py").replace("/", ".") + ".toml"


def load_equivalent(directory: Path) -> dict[tuple[str, str, str], str]:
    """Explanations: (source file, function, diff) -> why the mutant is equivalent.

    Raises ValueError naming the file when a file is not a list of ``[[mutant]]`` function/diff/reason or
    explains one mutant twice."""
    out: dict[tuple[str, str, str], str] = {}
    for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
        source = path.name.removesuffix(".toml").replace(".", "/") + ".py"
        try:
            entries = tomllib.loads(path.read_text("utf-8")).get("mutant", [])
            for e in entries:
                key = (source, e["function"], e["diff"].strip("\n"))
                if key in out:
                    raise ValueError(f"{e['function']} is explained twice with the same diff")
                out[key] = e["reason"]
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {exc}") from exc
    return out


def run_mutmut(children: int, names: list[str]) -> int:
    """Run ``mutmut run`` (all mutants, or just ``names``); its own output goes to mutants/mutmut.log."""
    Path(ROOT / "mutants").mkdir(exist_ok=True)
    log = ROOT / "mutants" / "mutmut.log"
    # mutmut's own command line, with the stack-depth bound of [tool.mutmut] mended (bench/mutmut_cli.py)
    cmd = [sys.executable, str(ROOT / "bench" / "mutmut_cli.py"), "run", "--max-children", str(children), *names]
    with log.open("a") as fh:
        return subprocess.call(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)


@dataclass(frozen=True)
class Semantic:
    """One hand-written mutant of ``bench/semantic_mutants.toml``."""

    name: str
    """Its name (unique in the file)."""
    rule: str
    """What it breaks, as a user would notice it."""
    file: str
    """The mutated file, relative to the repository root."""
    old: str
    """The exact code replaced; found exactly once in :attr:`file`, else the mutant is stale."""
    new: str
    """What replaces it."""
    tests: tuple[str, ...]
    """The pytest arguments (files or node ids) of the tests that cover the rule."""


def load_semantic(path: Path) -> list[Semantic]:
    """The semantic mutants of ``path`` (ValueError when an entry lacks a field or a name repeats)."""
    data = tomllib.loads(path.read_text("utf-8"))
    out: list[Semantic] = []
    for e in data.get("mutant", []):
        missing = {"name", "rule", "file", "old", "new", "tests"} - set(e)
        if missing:
            raise ValueError(f"mutant {e.get('name', '?')}: missing {', '.join(sorted(missing))}")
        out.append(Semantic(e["name"], e["rule"], e["file"], e["old"], e["new"], tuple(e["tests"])))
    names = [m.name for m in out]
    if len(names) != len(set(names)):
        raise ValueError("mutant names repeat")
    return out


def _failure_excerpt(output: str) -> str:
    """The lines of a pytest run that say which test failed and why (``FAILED``, ``E`` lines), shortened."""
    keep = [ln for ln in output.splitlines() if ln.startswith(("FAILED", "ERROR", "E  ", ">  "))]
    return "\n".join(ln[:300] for ln in keep[:12])


def _pytest(copy: Path, tests: tuple[str, ...]) -> tuple[int | None, str]:
    """Run ``tests`` in the repository copy (its natbench first on the path); (exit code or None on timeout, output)."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    try:
        done = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=SEMANTIC_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        return None, str(exc.stdout or "")
    return done.returncode, done.stdout + done.stderr


def run_semantic(mutants: list[Semantic]) -> list[dict[str, str]]:
    """Apply each mutant alone to a copy of the repository and run its tests; one result per mutant:
    ``name``, ``status`` (killed, timeout, survived, stale, error) and ``output`` (the failure excerpt)."""
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "mutants", "results", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
        "__pycache__",
    )  # fmt: skip
    results: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="natbench-mutants-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=ignore)
        clean = sorted({t for m in mutants for t in m.tests})
        rc, out = _pytest(copy, tuple(clean))
        if rc != 0:
            raise RuntimeError(f"the semantic mutants' tests fail without any mutant:\n{_failure_excerpt(out)}")
        for m in mutants:
            target = copy / m.file
            original = target.read_text("utf-8")
            if original.count(m.old) != 1:
                stale = f"{m.file}: the old code is not there exactly once"
                results.append({"name": m.name, "status": "stale", "output": stale})
                continue
            target.write_text(original.replace(m.old, m.new), "utf-8")
            t0 = time.monotonic()
            try:
                rc, out = _pytest(copy, m.tests)
            finally:
                target.write_text(original, "utf-8")
            status = {None: "timeout", 0: "survived", 1: "killed"}.get(rc, "error")
            results.append({"name": m.name, "status": status, "output": _failure_excerpt(out) if rc else ""})
            print(f"  {m.name:45s} {status:8s} {time.monotonic() - t0:6.1f} s", flush=True)
    return results


def report_semantic(mutants: list[Semantic], results: list[dict[str, str]], show_failures: bool) -> tuple[int, int]:
    """Print the semantic set's outcome; (caught, tested)."""
    by_name = {r["name"]: r for r in results}
    tested = [by_name[m.name] for m in mutants if m.name in by_name and by_name[m.name]["status"] != "stale"]
    caught = sum(1 for r in tested if r["status"] in ("killed", "timeout"))
    print()
    print("semantic mutants (bench/semantic_mutants.toml):")
    for m in mutants:
        r = by_name.get(m.name, {"status": "not run", "output": ""})
        print(f"- {m.name} [{m.file}] {r['status'].upper()}: {m.rule}")
        if (show_failures or r["status"] not in ("killed", "timeout")) and r["output"]:
            for line in r["output"].splitlines():
                print(f"      {line}")
    rate = caught / len(tested) if tested else 0.0
    print(f"semantic kill rate: {caught} / {len(tested)} = {rate:.1%}")
    return caught, len(tested)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report-only", action="store_true", help="report the last run (mutants/) again")
    ap.add_argument("--rerun-survivors", action="store_true", help="resume, then test last run's survivors again")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2, help="parallel test processes")
    ap.add_argument("--min-rate", type=float, default=0.90, help="kill rate this run must reach (exit 1 below)")
    ap.add_argument("--semantic-only", action="store_true", help="run only the hand-written semantic mutants")
    ap.add_argument("--show-failures", action="store_true", help="print each caught semantic mutant's failing test")
    args = ap.parse_args(argv)
    mutants_dir = ROOT / "mutants"
    try:
        semantic = load_semantic(SEMANTIC)
    except (tomllib.TOMLDecodeError, ValueError, OSError) as exc:
        print(f"mutation: {SEMANTIC.relative_to(ROOT)}: {exc}", file=sys.stderr)
        return 2

    if not args.report_only and not args.semantic_only:
        try:
            import mutmut  # noqa: F401
        except ImportError:
            print("mutation: mutmut is not installed (pip install mutmut)", file=sys.stderr)
            return 2
        t0 = time.monotonic()
        # a plain run tests every mutant not tested yet (all of them the first time; after a code change, those
        # of the changed functions); --rerun-survivors then tests last time's survivors again with today's tests
        survivors = [m.name for m in load_results(mutants_dir) if m.status not in CAUGHT]
        rc = run_mutmut(args.max_children, [])
        if args.rerun_survivors and rc == 0 and survivors:
            rc = run_mutmut(args.max_children, survivors)
        print(f"mutmut run: exit {rc}, {time.monotonic() - t0:.0f} s (log: mutants/mutmut.log)")

    if not args.report_only:
        print("semantic mutants: one at a time, each with the tests that cover its rule")
        try:
            found = run_semantic(semantic)
        except RuntimeError as exc:
            print(f"mutation: {exc}", file=sys.stderr)
            return 2
        mutants_dir.mkdir(exist_ok=True)
        SEMANTIC_RESULTS.write_text(json.dumps(found, indent=2) + "\n", "utf-8")
    sem_results = json.loads(SEMANTIC_RESULTS.read_text("utf-8")) if SEMANTIC_RESULTS.exists() else []
    sem_caught, sem_tested = report_semantic(semantic, sem_results, args.show_failures)
    sem_ok = sem_tested == len(semantic) and sem_caught == sem_tested

    results = load_results(mutants_dir)
    if not results:
        print("mutmut: no results in mutants/ (run `python bench/mutation.py` without --semantic-only)")
        return 0 if sem_ok and args.semantic_only else 2 if not args.semantic_only else 1
    status = Counter(m.status for m in results)
    tested = [m for m in results if m.status not in ("skipped", "not checked")]
    caught = sum(1 for m in tested if m.status in CAUGHT)
    rate = caught / len(tested) if tested else 0.0

    print()
    print("mutants by file (caught / tested):")
    for path in sorted({m.path for m in results}):
        mine = [m for m in tested if m.path == path]
        k = sum(1 for m in mine if m.status in CAUGHT)
        print(f"  {path:40s} {k:5d} / {len(mine):5d}  {k / len(mine) if mine else 0:6.1%}")
    print("status: " + ", ".join(f"{s} {n}" for s, n in status.most_common()))

    try:
        explained = load_equivalent(EQUIVALENT)
    except ValueError as exc:
        print(f"mutation: not a list of [[mutant]] function/diff/reason: {exc}")
        return 2
    cache: dict[str, dict[str, str]] = {}
    unexplained = 0
    used: set[tuple[str, str, str]] = set()
    survivors = [m for m in tested if m.status not in CAUGHT]
    if survivors:
        print()
        print("surviving mutants:")
    for m in survivors:
        diff = mutant_diff(mutants_dir, m, cache)
        key = (m.path, m.function, diff)
        reason = explained.get(key)
        if reason is None:
            unexplained += 1
            verdict = f"UNEXPLAINED ({m.status})"
        else:
            used.add(key)
            verdict = f"equivalent: {reason}"
        print(f"- {m.name} [{m.path}]  {verdict}")
        for line in diff.splitlines():
            print(f"      {line}")
    stale = set(explained) - used
    covered = [m for m in tested if m.status != "no tests"]
    covered_caught = sum(1 for m in covered if m.status in CAUGHT)
    covered_rate = covered_caught / len(covered) if covered else 0.0
    print()
    print(
        f"mutmut kill rate: {caught} / {len(tested)} = {rate:.1%} ({len(survivors)} survivors: "
        f"{len(survivors) - unexplained} explained as equivalent, {unexplained} unexplained)"
    )
    print(
        f"mutmut kill rate over the mutants some test runs: {covered_caught} / {len(covered)} = {covered_rate:.1%} "
        f"({len(tested) - len(covered)} mutants no test runs)"
    )
    sem_rate = sem_caught / sem_tested if sem_tested else 0.0
    print(f"semantic kill rate: {sem_caught} / {sem_tested} = {sem_rate:.1%} (beside mutmut's {rate:.1%})")
    if stale and not args.rerun_survivors and not status.get("not checked"):
        gone = "match no survivor any more (killed, or the code moved)"
        print(f"{len(stale)} explanation(s) in {EQUIVALENT.name}/ {gone}:")
        for source, function, _diff in sorted(stale):
            print(f"  {explanations_file(source)}: {function}")
    return 0 if rate >= args.min_rate and unexplained == 0 and sem_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
