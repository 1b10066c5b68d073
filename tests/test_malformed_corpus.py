"""The malformed-input corpus (tests/data/malformed/): every case is refused with exit 2 and one line.

Each case goes through natbench's real CLI entry point (``natbench.cli.main``): the campaigns with
``natbench validate``, the recipes with ``natbench recipes show``, the testbed files with ``natbench
validate --testbed``, and the command-line cases of ``cli-cases.yaml`` as written. For each: exit
status 2, exactly one line on stderr, ``natbench: error: FILE[:LINE]: [FIELD: ]MESSAGE`` with the file,
line, field and a part of the message each case states (in its first line, ``# expect: LINE: FIELD:
MESSAGE``, or in the manifest), no traceback, nothing of the file's content repeated, under 2 s of CPU
(and 30 s in all: a case that blocks) and 200 MB.

Speed: all cases run in one driver process (tests/malformed_driver.py) that imports natbench once
and measures each case's CPU and wall time and the peak RSS it added (VmHWM reset before each case through
/proc/self/clear_refs). A sample of cases also runs as separate ``python -m natbench`` processes, whose
exit status and stderr are checked as such and whose peak RSS is the process's own ``VmHWM`` at exit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path("tests/data/malformed")  # relative to ROOT, where every case runs: errors name it so
DRIVER = ROOT / "tests" / "malformed_driver.py"
SECONDS = 2.0
"""CPU seconds a case may take (2 CPUs are shared by many jobs here, so wall time says more about the
machine than about natbench; WALL catches a case that blocks without computing, e.g. on a FIFO)."""
WALL = 30.0
MEMORY = 200 * 2**20
_EXPECT = re.compile(r"^# expect: (\d+|-): ([^:]*): (.+)$")
_CANARY = re.compile(r"CANARY[-A-Z0-9]*")

# Files that cannot hold an expect line (not UTF-8, or a NUL byte): line, expected message. The line is
# where the first bad byte is: the Latin-1 e-acute (0xe9) on the third line of latin-1.yaml, the PNG
# signature's 0x89 at offset 0, UTF-16's byte-order mark at offset 0, the NUL on line 2.
_BINARY = {
    "campaigns/latin-1.yaml": (3, "not UTF-8 text"),
    "campaigns/binary-png.yaml": (1, "not UTF-8 text"),
    "campaigns/utf-16.yaml": (1, "not UTF-8 text"),
    "campaigns/nul-in-text.yaml": (2, "NUL byte"),
    "recipes/latin-1.yaml": (2, "not UTF-8 text"),
    "recipes/binary-elf.yaml": (1, "NUL byte"),  # 0x7f E L F 0x02 0x01 0x01 0x00: valid UTF-8 up to the NUL
    "testbeds/latin-1.yaml": (2, "not UTF-8 text"),
}
_COMMANDS = {"campaigns": ["validate"], "recipes": ["recipes", "show"], "testbeds": ["validate", "--testbed"]}


@dataclass
class Case:
    """One malformed input: the natbench arguments and what the error line must say."""

    id: str
    args: list[str]
    shown: str
    line: int | None
    field: str | None
    expect: str
    content: bytes = b""


def _file_cases() -> list[Case]:
    cases = []
    for kind, command in _COMMANDS.items():
        for path in sorted((ROOT / CORPUS / kind).glob("*.yaml")):
            rel = f"{kind}/{path.name}"
            shown = str(CORPUS / rel)
            data = path.read_bytes()
            if rel in _BINARY:
                line, expect = _BINARY[rel]
                cases.append(Case(rel, [*command, shown], shown, line, None, expect, data))
                continue
            m = _EXPECT.match(data.decode("utf-8").splitlines()[0])
            assert m, f"{rel} needs a first line '# expect: LINE: FIELD: MESSAGE'"
            line = None if m.group(1) == "-" else int(m.group(1))
            cases.append(Case(rel, [*command, shown], shown, line, m.group(2) or None, m.group(3), data))
    return cases


def _make_files(tmp: Path) -> dict[str, str]:
    """The special and large files the command-line cases name, made here and never committed."""
    fifo = tmp / "campaign.fifo"
    os.mkfifo(fifo)
    (tmp / "a-directory").mkdir()
    loop = tmp / "loop.yaml"
    loop.symlink_to(loop)
    huge = tmp / "huge.yaml"
    with huge.open("wb") as f:
        f.truncate(2 * 2**20)  # 2 MiB, sparse: over the 1 MiB limit without writing it
    many = tmp / "many.yaml"
    many.write_text("".join(f"k{i}: {i}\n" for i in range(25_000)))  # 50,001 values; k_i on line i + 1
    shadow = tmp / "shadow"
    shadow.write_text("root:$6$CANARYSALT$CANARYHASHwwwwwwwwwwwwwwwwwwwwwwww:19000:0:99999:7:::\n")
    return {
        "fifo": str(fifo),
        "directory": str(tmp / "a-directory"),
        "missing": str(tmp / "missing.yaml"),
        "loop": str(loop),
        "huge": str(huge),
        "many_values": str(many),
        "shadow": str(shadow),
        "nest": "[" * 20_000 + "]" * 20_000,
    }


def _cli_cases(files: dict[str, str]) -> list[Case]:
    entries = yaml.safe_load((ROOT / CORPUS / "cli-cases.yaml").read_text())
    cases = []
    for e in entries:
        args = [a.format(**files) if "{" in a and "[" not in a.split("=", 1)[-1][:1] else a for a in e["args"]]
        args = [a.replace("{nest}", files["nest"]) for a in args]
        shown = e["shown"].format(**files)
        content = Path(shown).read_bytes() if shown == files["shadow"] else b""
        cases.append(Case(f"cli:{e['id']}", args, shown, e.get("line"), None, e["expect"], content))
    return cases


def _content_lines(content: bytes) -> Iterator[str]:
    """Lines of a case's file long enough that finding one in the error means the content was echoed.

    Left out: the expect line, and ``recipe: PATH`` lines, whose path the error names as the file of the
    recipe's own error (``campaign.yaml:8: testbed.duts[0].recipe: /dev/zero: is a device``).
    """
    for raw in content.splitlines():
        text = raw.decode("utf-8", "replace").strip()
        if len(text) >= 16 and not text.startswith("# expect:") and not re.match(r"^recipe: [./]", text):
            yield text


def check(case: Case, code: object, stdout: str, stderr: str) -> list[str]:
    """What is wrong with one case's outcome (empty: nothing)."""
    problems = []
    if code != 2:
        problems.append(f"exit status {code!r}, not 2")
    lines = stderr.splitlines()
    if len(lines) != 1 or not stderr.endswith("\n"):
        problems.append(f"{len(lines)} lines on stderr, not 1: {stderr[:300]!r}")
    if "Traceback" in stderr:
        problems.append("a traceback")
    line = lines[0] if lines else ""
    where = f"natbench: error: {case.shown}" + (f":{case.line}" if case.line is not None else "") + ": "
    if not line.startswith(where):
        problems.append(f"does not start with {where!r}: {line[:300]!r}")
    rest = line[len(where) :]
    if case.field is not None and not rest.startswith(f"{case.field}: "):
        problems.append(f"field is not {case.field!r}: {line[:300]!r}")
    if case.expect not in rest:
        problems.append(f"message lacks {case.expect!r}: {line[:300]!r}")
    if _CANARY.search(stderr + stdout):
        problems.append(f"content echoed (a canary): {line[:300]!r}")
    message = rest[len(case.field) + 2 :] if case.field is not None and rest.startswith(f"{case.field}: ") else rest
    for text in _content_lines(case.content):
        if text in message:
            problems.append(f"content echoed: {text[:80]!r}")
    return problems


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    files = _make_files(tmp_path_factory.mktemp("malformed"))
    return _file_cases() + _cli_cases(files)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATBENCH_")}
    env["PYTHONPATH"] = str(ROOT)
    env["NATBENCH_RECIPES"] = ""  # only the checkout's recipes
    return env


def test_the_corpus_has_at_least_100_cases_of_every_kind(corpus: list[Case]) -> None:
    kinds = {c.id.split("/")[0].split(":")[0] for c in corpus}
    assert len(corpus) >= 100
    assert kinds == {"campaigns", "recipes", "testbeds", "cli"}
    assert sum(c.id.startswith("testbeds/") for c in corpus) >= 10


def test_every_malformed_input_is_one_line_and_exit_2_fast_and_small(corpus: list[Case]) -> None:
    proc = subprocess.run(
        [sys.executable, str(DRIVER)],
        input=json.dumps([c.args for c in corpus]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    failures = []
    for case, r in zip(corpus, results, strict=True):
        problems = check(case, r["code"], r["stdout"], r["stderr"])
        if r["cpu"] >= SECONDS or r["seconds"] >= WALL:
            problems.append(f"took {r['cpu']:.2f} s of CPU, {r['seconds']:.2f} s in all")
        if r["memory"] >= MEMORY:
            problems.append(f"added {r['memory'] / 2**20:.0f} MB")
        if problems:
            failures.append(f"{case.id}: " + "; ".join(problems))
    worst_time = max(results, key=lambda r: r["cpu"])
    worst_memory = max(results, key=lambda r: r["memory"])
    print(
        f"{len(corpus)} cases; max {worst_time['cpu']:.3f} s CPU, {max(r['seconds'] for r in results):.3f} s wall, "
        f"max {worst_memory['memory'] / 2**20:.1f} MB added ({worst_memory['method']})"
    )
    assert not failures, "\n".join(failures)


# A sample through separate processes: bombs, nesting, overflows, special files, encodings, leaks, flags.
SAMPLE = (
    "campaigns/alias-bomb-in-params.yaml",
    "campaigns/nesting-20000-flow.yaml",
    "campaigns/upper-9-pow-99999999.yaml",
    "campaigns/repetitions-1e26.yaml",
    "campaigns/latin-1.yaml",
    "campaigns/name-dot-dot.yaml",
    "campaigns/recipe-proc-self-mem.yaml",
    "recipes/shadow-like.yaml",
    "recipes/placeholder-in-single-quotes.yaml",
    "testbeds/alias-bomb-in-settings.yaml",
    "cli:cores-20-digits",
    "cli:param-2-pow-99999999999",
    "cli:validate-fifo",
    "cli:recipes-show-shadow",
    "cli:plan-quoted-placeholder-recipe",
)


# ``python -m natbench`` with one addition: at exit the process writes its peak RSS (``VmHWM`` of
# /proc/self/status, in kB) to the file NB_PEAK_RSS names. getrusage's ru_maxrss (of the child, or of
# itself) would not do: Linux carries it across exec, so it counts the pages the child had between
# fork and exec, i.e. pytest's own size.
_MAIN = (
    "import atexit, os, runpy\n"
    "def _peak():\n"
    "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "    t = os.times()\n"
    "    open(os.environ['NB_PEAK_RSS'], 'w').write(f'{hwm} {t.user + t.system}')\n"
    "atexit.register(_peak)\n"
    "runpy.run_module('natbench', run_name='__main__', alter_sys=True)\n"
)


def _natbench(args: list[str]) -> tuple[int, str, str, float, float, int]:
    """Run natbench's ``__main__`` in a new process: exit status, stdout, stderr, wall and CPU seconds, peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _MAIN, *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**_env(), "NB_PEAK_RSS": str(peak_file)},
            timeout=60,
        )
        seconds = time.perf_counter() - started
        hwm, cpu = peak_file.read_text().split()
    return proc.returncode, proc.stdout, proc.stderr, seconds, float(cpu), int(hwm) * 1024  # VmHWM is in kB


def test_a_sample_fails_the_same_way_in_separate_processes(corpus: list[Case]) -> None:
    by_id = {c.id: c for c in corpus}
    # the CLI's own start-up (interpreter, imports) on this machine now, which every case below also pays
    start_up = min(_natbench(["--version"])[4] for _ in range(2))  # CPU seconds
    failures = []
    figures = []
    for case_id in SAMPLE:
        case = by_id[case_id]
        code, stdout, stderr, seconds, cpu, peak = _natbench(case.args)
        figures.append((cpu, peak))
        problems = check(case, code, stdout, stderr)
        if cpu - start_up >= SECONDS or seconds >= WALL:
            problems.append(f"took {cpu:.2f} s of CPU ({start_up:.2f} s of it start-up), {seconds:.2f} s in all")
        if peak >= MEMORY:
            problems.append(f"peak RSS {peak / 2**20:.0f} MB")
        if problems:
            failures.append(f"{case_id}: " + "; ".join(problems))
    print(
        f"{len(SAMPLE)} separate processes: max {max(s for s, _ in figures):.2f} s CPU (start-up {start_up:.2f} s), "
        f"max peak RSS {max(p for _, p in figures) / 2**20:.0f} MB (whole process)"
    )
    assert not failures, "\n".join(failures)
