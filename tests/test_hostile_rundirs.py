"""Hostile run directories through the real CLI (issue 32): every damaged-runs case of
tests/data/damaged-runs/cases.yaml, and a few made to exhaust a reader, read by ``natbench report`` and
``natbench plan --from`` in one driver process (tests/malformed_driver.py, natbench imported once): exit 2 with
one line per problem and a summary line, no traceback, under 2 s of CPU and 200 MB per case.

The table pins the exact damage lines; this test pins the bounds: a symlink to /dev/zero or a FIFO, JSON nested
100,000 deep, a points.json of 70 MiB, a 20 MiB line of nothing in trials.jsonl are refused before they cost.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import damaged_runs
import pytest

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "malformed_driver.py"
CPU_SECONDS = 2.0
MEMORY = 200 * 2**20
LINE = 2000
"""Longest stderr line: a damage line names a file, a line and a field, never a file's content."""


def _hostile(run: Path, name: str) -> None:
    """Damage that only a bounded reader survives (the table's cases are milder)."""
    if name == "a-huge-line-of-nothing":  # 20 MiB without a newline in the middle of trials.jsonl
        lines = (run / "trials.jsonl").read_bytes().splitlines(keepends=True)
        (run / "trials.jsonl").write_bytes(b"".join([*lines[:5], b"x" * (20 << 20) + b"\n", *lines[5:]]))
    elif name == "every-line-deep":  # every record line replaced by a 100,000-deep array
        deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
        (run / "trials.jsonl").write_bytes(deep * 37)


HOSTILE = ["a-huge-line-of-nothing", "every-line-deep"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case run once through ``report`` and ``plan --from`` in one driver; results by case and command."""
    root = tmp_path_factory.mktemp("hostile")
    argvs: list[list[str]] = [["report", str(damaged_runs.BASE), "--format", "text", "--out", "-"]]  # warm-up
    names: list[str] = []
    for case in damaged_runs.load_cases():
        run = damaged_runs.damaged_copy(case, root / case["name"])
        names.append(case["name"])
        argvs.append(["report", str(run), "--format", "text", "--out", "-"])
    for name in HOSTILE:
        run = damaged_runs.damaged_copy({"damage": []}, root / name)
        _hostile(run, name)
        names.append(name)
        argvs.append(["report", str(run), "--format", "text", "--out", "-"])
    campaign = str(ROOT / "campaigns" / "quickstart.yaml")
    for name in list(names):
        run = root / name / "run"
        names.append(f"plan:{name}")
        argvs.append(["plan", campaign, "--from", str(run)])
    proc = subprocess.run(
        [sys.executable, str(DRIVER)],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    return dict(zip(names, out[1:], strict=True))


def _clean(case: str, got: dict[str, Any]) -> None:
    """The bounds every case keeps, whatever it says."""
    assert got["code"] != "crash", got["stderr"][-2000:]
    assert "Traceback" not in got["stderr"], got["stderr"][-2000:]
    assert got["cpu"] <= CPU_SECONDS, (case, got["cpu"])
    assert got["memory"] <= MEMORY, (case, got["memory"])
    assert all(len(line) <= LINE for line in got["stderr"].splitlines()), case
    assert all(line.startswith("natbench: ") for line in got["stderr"].splitlines()), got["stderr"][:500]


@pytest.mark.parametrize("case", [c["name"] for c in damaged_runs.load_cases()])
def test_report_of_a_damaged_run_directory_is_refused_within_bounds(
    results: dict[str, dict[str, Any]], case: str
) -> None:
    got = results[case]
    _clean(case, got)
    expect = next(c for c in damaged_runs.load_cases() if c["name"] == case)["expect"]
    if "error" in expect:
        assert got["code"] == 2 and len(got["stderr"].splitlines()) == 1, got["stderr"]
        assert got["stderr"].startswith("natbench: error: ") and got["stderr"].rstrip().endswith(expect["error"])
    elif expect.get("damage"):
        lines = got["stderr"].splitlines()
        assert got["code"] == 2 and got["stdout"] == ""
        assert len([ln for ln in lines if ln.startswith("natbench: damaged: ")]) == len(expect["damage"])
        assert lines[-1].startswith("natbench: error: ")
    else:
        assert got["code"] == 0, got["stderr"]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_reader_is_bounded_by_lines_it_need_not_read(results: dict[str, dict[str, Any]], case: str) -> None:
    got = results[case]
    _clean(case, got)
    assert got["code"] == 2
    lines = got["stderr"].splitlines()
    assert lines[-1].startswith("natbench: error: ")
    if case == "a-huge-line-of-nothing":
        assert "trials.jsonl:6: longer than 16 MiB: no record natbench writes (not read further)" in got["stderr"]
    else:  # 37 lines of damage, each named, and the records they held missing
        assert got["stderr"].count("nested more than 64 levels deep") == 37


@pytest.mark.parametrize("case", [c["name"] for c in damaged_runs.load_cases() if c["expect"].get("damage")])
def test_plan_from_a_damaged_run_directory_says_so(results: dict[str, dict[str, Any]], case: str) -> None:
    got = results[f"plan:{case}"]
    _clean(f"plan:{case}", got)
    assert got["code"] == 2, got["stderr"][-2000:]
    assert "natbench: damaged: " in got["stderr"]
