"""Mutation testing of natbench's core: how many small semantic changes do the tests catch?

Runs mutmut (``pip install mutmut``) over the files ``[tool.mutmut] only_mutate`` in pyproject.toml
names (campaign values and sweep, traffic enumeration, the search, the procedures, the store,
report aggregation, recipe templating) with the non-lab test suite, then prints:

* the kill rate: mutants the tests caught (failed, or timed out) / mutants tested;
* every surviving mutant as a diff against the original line(s), with the reason when
  ``bench/mutation_equivalent.toml`` explains it as equivalent (a change no test can see because
  the behaviour is the same), else ``UNEXPLAINED``.

An explanation is keyed by the mutated function and the diff, not by mutmut's mutant number, so a
code change that alters the mutant makes its explanation stale instead of silently wrong.

Usage (from the repository root; takes about 20-30 minutes on 2 CPUs)::

    python bench/mutation.py                 # run, then report
    python bench/mutation.py --report-only   # report the last run again (mutants/ kept)
    python bench/mutation.py --rerun-survivors   # resume, then test last run's survivors again

Exit status: 0 when the kill rate is at least ``--min-rate`` (default 0.90) and every survivor is
explained, 1 otherwise, 2 when mutmut is missing or its results cannot be read.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = ROOT / "bench" / "mutation_equivalent.toml"

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


def load_equivalent(path: Path) -> dict[tuple[str, str], str]:
    """Explanations: (function, diff) -> why the mutant is equivalent."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text("utf-8"))
    return {(e["function"], e["diff"].strip("\n")): e["reason"] for e in data.get("mutant", [])}


def run_mutmut(children: int, names: list[str]) -> int:
    """Run ``mutmut run`` (all mutants, or just ``names``); its own output goes to mutants/mutmut.log."""
    Path(ROOT / "mutants").mkdir(exist_ok=True)
    log = ROOT / "mutants" / "mutmut.log"
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(children), *names]
    with log.open("a") as fh:
        return subprocess.call(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report-only", action="store_true", help="report the last run (mutants/) again")
    ap.add_argument("--rerun-survivors", action="store_true", help="resume, then test last run's survivors again")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2, help="parallel test processes")
    ap.add_argument("--min-rate", type=float, default=0.90, help="kill rate this run must reach (exit 1 below)")
    args = ap.parse_args(argv)
    mutants_dir = ROOT / "mutants"

    if not args.report_only:
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

    results = load_results(mutants_dir)
    if not results:
        print("mutation: no results in mutants/ (run without --report-only first)", file=sys.stderr)
        return 2
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
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        print(f"mutation: {EQUIVALENT.relative_to(ROOT)}: not a list of [[mutant]] function/diff/reason: {exc}")
        return 2
    cache: dict[str, dict[str, str]] = {}
    unexplained = 0
    used: set[tuple[str, str]] = set()
    survivors = [m for m in tested if m.status not in CAUGHT]
    if survivors:
        print()
        print("surviving mutants:")
    for m in survivors:
        diff = mutant_diff(mutants_dir, m, cache)
        key = (m.function, diff)
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
    print()
    print(
        f"kill rate: {caught} / {len(tested)} = {rate:.1%} ({len(survivors)} survivors: "
        f"{len(survivors) - unexplained} explained as equivalent, {unexplained} unexplained)"
    )
    if stale and not args.rerun_survivors:
        print(
            f"{len(stale)} explanation(s) in {EQUIVALENT.name} match no survivor any more (killed, or the code moved)"
        )
    return 0 if rate >= args.min_rate and unexplained == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
