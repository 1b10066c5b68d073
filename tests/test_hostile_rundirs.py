"""Hostile run directories through the real CLI (issue 32): every damaged-runs case of
tests/data/damaged-runs/cases.yaml, and a few made to exhaust a reader, read by ``natbench report`` and
``natbench plan --from`` in one driver process (tests/malformed_driver.py, natbench imported once): exit 2 with
one line per problem and a summary line, no traceback, under 2 s of CPU and 200 MB per case.

The table pins the exact damage lines; this test pins the bounds: a symlink to /dev/zero or a FIFO, JSON nested
100,000 deep, a points.json of 70 MiB, a 20 MiB line of nothing in trials.jsonl are refused before they cost.

Issue 43 adds the other readers of a hostile run directory: ``natbench compare`` (either side) and ``natbench
report --baseline`` name the same damage in one line each (a file that only claims to be one, such as
/proc/self/mem, changed point parameters, extra points, keys named twice), ``natbench.load`` raises natbench's own
error (never a bare OSError), and a report is never written through a symbolic link.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import damaged_runs
import pytest

import natbench
from natbench.errors import NatbenchError, StoreError
from natbench.report.load import DamagedRunWarning

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


# ---------------------------------------------------------------------------------------- issue 43: other readers
OTHER_READERS = [
    "trials-jsonl-a-symlink-to-proc-self-mem",
    "run-json-a-symlink-to-proc-self-mem",
    "points-json-connections-times-1000",
    "points-json-parameters-changed-under-their-id",
    "points-json-a-point-listed-twice",
    "points-json-an-extra-point",
    "run-json-point-facts-of-no-point",
    "run-json-a-key-twice",
    "campaign-yaml-an-alias-bomb",
    "campaign-yaml-a-value-that-contains-itself",
]
"""Cases of the table that each reader below must refuse within the bounds."""


def _case(name: str) -> dict[str, Any]:
    return next(c for c in damaged_runs.load_cases() if c["name"] == name)


@pytest.fixture(scope="module")
def other_readers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every case of OTHER_READERS through ``compare`` (as run A, as run B) and ``report --baseline``: by reader and
    case, the damaged run directory and what the CLI did."""
    root = tmp_path_factory.mktemp("readers")
    base = str(damaged_runs.BASE)
    argvs: list[list[str]] = [["compare", base, base]]  # warm-up
    names: list[tuple[str, Path]] = []
    for name in OTHER_READERS:
        run = damaged_runs.damaged_copy(_case(name), root / name)
        for label, argv in (
            ("compare-a", ["compare", str(run), base]),
            ("compare-b", ["compare", base, str(run), "--fail", "median:5%"]),
            ("baseline", ["report", base, "--baseline", str(run), "--format", "text", "--out", "-"]),
        ):
            names.append((f"{label}:{name}", run))
            argvs.append(argv)
    proc = subprocess.run(
        [sys.executable, str(DRIVER)], input=json.dumps(argvs), capture_output=True, text=True, cwd=ROOT, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {key: (run, got) for (key, run), got in zip(names, json.loads(proc.stdout)[1:], strict=True)}


@pytest.mark.parametrize("reader", ["compare-a", "compare-b", "baseline"])
@pytest.mark.parametrize("name", OTHER_READERS)
def test_compare_and_the_baseline_name_the_damage_in_one_line_each(
    other_readers: dict[str, tuple[Path, dict[str, Any]]], reader: str, name: str
) -> None:
    run, got = other_readers[f"{reader}:{name}"]
    _clean(f"{reader}:{name}", got)
    assert got["code"] == 2 and got["stdout"] == "", got["stderr"][-2000:]
    expect = _case(name)["expect"]
    lines = got["stderr"].splitlines()
    if "error" in expect:  # the file cannot be read: that one line, naming it
        assert lines == [f"natbench: error: {damaged_runs.expand([expect['error']], run)[0]}"]
    else:  # damage: one line per problem, then the refusal naming the run
        damage = [f"natbench: damaged: {line}" for line in damaged_runs.expand(expect["damage"], run)]
        assert lines[:-1] == damage and lines[-1].startswith(f"natbench: error: {run}: damaged run directory")


def test_load_raises_natbench_errors_never_a_bare_oserror(tmp_path: Path) -> None:
    """natbench.load: an unreadable run.json is a StoreError naming it; an unreadable trials.jsonl is damage named in
    ``Run.damage`` (with DamagedRunWarning), as a symlink to /dev/zero or a FIFO there is, so that ``--repair`` can
    move it aside."""
    run = damaged_runs.damaged_copy(_case("run-json-a-symlink-to-proc-self-mem"), tmp_path / "meta")
    with pytest.raises(StoreError, match=r"run\.json: leads into /proc \(a view of the kernel"):
        natbench.load(run)
    run = damaged_runs.damaged_copy(_case("trials-jsonl-a-symlink-to-proc-self-mem"), tmp_path / "trials")
    with pytest.warns(DamagedRunWarning, match="1 problem"):
        loaded = natbench.load(run)
    assert loaded.damage == [
        f"{run}/trials.jsonl: leads into /proc (a view of the kernel, not data): a run directory holds its own files"
    ]
    assert loaded.trials.empty
    for name in ("points-json-connections-times-1000", "run-json-a-key-twice", "campaign-yaml-an-alias-bomb"):
        with pytest.raises(StoreError):
            natbench.load(damaged_runs.damaged_copy(_case(name), tmp_path / name))
    with pytest.raises(NatbenchError):  # a path the kernel refuses: named, not ENAMETOOLONG's traceback
        natbench.load(tmp_path / ("x" * 300))


def test_a_read_error_in_the_middle_of_trials_jsonl_is_damage_and_the_records_before_it_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk error while reading trials.jsonl (EIO once the reader reaches line 6; a disk is simulated here, the
    file and the reader are real): damage naming the line, the five records before it kept."""
    from natbench.run import records

    run = damaged_runs.damaged_copy({"damage": []}, tmp_path)
    first_five = sum(len(line) for line in (run / "trials.jsonl").read_bytes().splitlines(keepends=True)[:5])
    real = records.open_regular

    class FailingDisk(io.RawIOBase):
        """The real file's bytes up to the end of line 5, then EIO (what a bad sector gives)."""

        def __init__(self, raw: io.RawIOBase) -> None:
            self.raw = raw
            self.offset = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            if self.offset >= first_five:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            view = memoryview(buffer)[: first_five - self.offset]
            n = self.raw.readinto(view) or 0
            self.offset += n
            return n

        def close(self) -> None:
            self.raw.close()
            super().close()

    monkeypatch.setattr(records, "open_regular", lambda path: io.BufferedReader(FailingDisk(real(path).detach())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DamagedRunWarning)
        loaded = natbench.load(run)
    assert loaded.damage == [f"{run}/trials.jsonl:6: cannot be read: Input/output error (not read further)"]
    assert len(loaded.trials) + len(loaded.results) == 5


def _natbench(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    """``python -m natbench ARGS`` (the real entry point): exit code, stdout, stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_a_report_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    """RUN/report (or --out) as a link to another directory is refused before anything is printed or written; so is
    its plots/; a link in a file's place, or planted at the name of its temporary file, is replaced, not followed."""
    run = damaged_runs.damaged_copy({"damage": []}, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "report").symlink_to(elsewhere)
    code, out, err = _natbench("report", str(run), "--format", "text")
    assert (code, out) == (2, "")
    assert err == (
        f"natbench: error: {run}/report is a symbolic link: a report is never written through one (it may lead into"
        " another run or someone else's files); remove it, or give the directory it leads to with --out\n"
    )
    assert list(elsewhere.iterdir()) == []
    link = tmp_path / "out-link"
    link.symlink_to(elsewhere)
    code, out, err = _natbench("report", str(run), "--format", "text", "--out", str(link))
    assert (code, out) == (2, "") and err.startswith(f"natbench: error: --out: {link} is a symbolic link")
    assert list(elsewhere.iterdir()) == []
    (run / "report").unlink()
    (run / "report").mkdir()
    (run / "report" / "plots").symlink_to(elsewhere)
    code, out, err = _natbench("report", str(run), "--format", "text")
    assert (code, out) == (2, "") and err.startswith(f"natbench: error: {run}/report/plots is a symbolic link")
    assert list(elsewhere.iterdir()) == []
    (run / "report" / "plots").unlink()
    victim = elsewhere / "victim.txt"
    victim.write_text("kept\n")
    (run / "report" / "tables.txt").symlink_to(victim)
    for pid in range(os.getpid(), os.getpid() + 4096):  # whichever pid the child gets: its temporary file's name
        (run / "report" / f".tables.txt.{pid}.tmp").symlink_to(elsewhere / f"planted-{pid}")
    code, out, err = _natbench("report", str(run), "--format", "text")
    assert code == 0, err
    assert victim.read_text() == "kept\n" and sorted(p.name for p in elsewhere.iterdir()) == ["victim.txt"]
    assert not (run / "report" / "tables.txt").is_symlink()
    assert "Performance" in (run / "report" / "tables.txt").read_text()


def test_an_option_like_out_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """``report --out --format RUN``: --out lost its value to the next option; one line, exit 2, no directory named
    --format (a value that does start with '-' is written --out=-x or ./-x)."""
    code, out, err = _natbench("report", "--out", "--format", str(damaged_runs.BASE), cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        "natbench: error: --out: '--format' looks like an option, not a value: the value is missing (a value that"
        " starts with '-' is written --out=--format, or ./--format for a file)\n"
    )
    assert list(tmp_path.iterdir()) == []
    code, out, err = _natbench("report", str(damaged_runs.BASE), "--format", "text", "--out=-x", cwd=tmp_path)
    assert code == 0 and (tmp_path / "-x" / "tables.txt").is_file(), err
