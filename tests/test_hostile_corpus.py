"""The hostile-input corpus (tests/data/hostile/): inputs of the categories of the second reliability and security
step, each refused through natbench's real CLI with exit 2 and one line, fast and small.

As tests/test_malformed_corpus.py (whose driver and checks this reuses): every case runs through
``natbench.cli.main`` in one driver process that measures its CPU time and the memory it added; each must exit 2
with one line ``natbench: error: FILE[:LINE]: [FIELD: ]MESSAGE`` (the file's first line, ``# expect: LINE: FIELD:
MESSAGE``, or the manifest says which), no traceback, no content echoed, under 2 s of CPU and 200 MB. On top:

* no raw control character on stderr (escape sequences in values are printed escaped),
* no line longer than :data:`~natbench.cli.group.MAX_LINE_CHARS` plus its cut note,
* the values of the ``NATBENCH_HOSTILE_*`` variables never printed (they hold CANARY text: the malformed
  corpus's check finds it), and
* for the command-line cases marked ``quiet``: nothing on stdout (the check came before any output).

Categories (file name prefixes): ``recipes/shell-*`` placeholders where a quoted value is still code;
``campaigns/option-*`` values read as options; ``campaigns/config-*`` values written into configuration files or
nft's rule language; ``*bounds-*`` patterns, sweep size, error length; ``campaigns/print-*`` escape sequences and
secrets from the environment; ``*range-*`` settings with a CLI twin; ``*yaml11-*`` YAML 1.1 octal and base-60
numbers; ``campaigns/yaml-*`` (issue 43) a value that contains itself through an alias (a merge key naming its own
mapping) or nests deeper through aliases than written; ``campaigns/number-*`` digits other than ASCII ones, infinity
and numbers of thousands of digits; ``cli-cases.yaml`` report --out, run -o, --max-points, recipe rendering, worker
and scheduler flags, option values that look like options, ``--fail`` amounts, files of /proc.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_malformed_corpus import _EXPECT, DRIVER, MEMORY, ROOT, SECONDS, WALL, Case, check

from natbench.cli.group import MAX_LINE_CHARS

CORPUS = Path("tests/data/hostile")
_COMMANDS = {"campaigns": ["validate"], "recipes": ["recipes", "validate"], "testbeds": ["validate", "--testbed"]}
SECRETS = {
    "NATBENCH_HOSTILE_SECRET": "CANARY-SECRET-$(id)",
    "NATBENCH_HOSTILE_OPTION": "--CANARY-OPTION",
    "NATBENCH_HOSTILE_OCTAL": "0777",
}
_RAW_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _file_cases() -> list[Case]:
    cases = []
    for kind, command in _COMMANDS.items():
        for path in sorted((ROOT / CORPUS / kind).glob("*.yaml")):
            rel = f"{kind}/{path.name}"
            data = path.read_bytes()
            first = data.decode("utf-8").splitlines()[0]
            if first.startswith("# not a case"):
                continue
            m = _EXPECT.match(first)
            assert m, f"{rel} needs a first line '# expect: LINE: FIELD: MESSAGE'"
            line = None if m.group(1) == "-" else int(m.group(1))
            shown = str(CORPUS / rel)
            cases.append(Case(rel, [*command, shown], shown, line, m.group(2) or None, m.group(3), data))
    return cases


def _cli_cases(tmp: Path) -> tuple[list[Case], set[str]]:
    run = tmp / "run"
    shutil.copytree(ROOT / "tests/data/damaged-runs/base", run)
    file = tmp / "a-file"
    file.write_text("not a directory\n")
    files = {"run": str(run), "file": str(file)}
    cases, quiet = [], set()
    for e in yaml.safe_load((ROOT / CORPUS / "cli-cases.yaml").read_text()):
        args = [a.format(**files) if "{" in a else a for a in e["args"]]
        args = [a.replace("LONGVALUE", "x" * 100_000).replace("NINES", "9" * 5000) for a in args]
        case_id = f"cli:{e['id']}"
        cases.append(Case(case_id, args, e["shown"].format(**files), e.get("line"), None, e["expect"]))
        if e.get("quiet"):
            quiet.add(case_id)
    return cases, quiet


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATBENCH_")}
    env["PYTHONPATH"] = str(ROOT)
    env["NATBENCH_RECIPES"] = ""  # only the checkout's recipes
    env.update(SECRETS)
    return env


def test_every_category_has_cases() -> None:
    names = [p.name for kind in _COMMANDS for p in (ROOT / CORPUS / kind).glob("*.yaml")]
    for prefix in ("shell-", "option-", "config-", "bounds-", "print-", "range-", "yaml11-", "yaml-", "number-"):
        assert sum(n.startswith(prefix) for n in names) >= 2, prefix


def test_every_hostile_input_is_one_clean_line(tmp_path: Path) -> None:
    cli, quiet = _cli_cases(tmp_path)
    corpus = _file_cases() + cli
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
        if _RAW_CONTROL.search(r["stderr"]):
            problems.append(f"a raw control character on stderr: {r['stderr'][:200]!r}")
        if any(len(line) > MAX_LINE_CHARS + 100 for line in r["stderr"].splitlines()):
            problems.append(f"a line of {max(len(line) for line in r['stderr'].splitlines()):,} characters")
        for value in SECRETS.values():
            if value in r["stderr"] + r["stdout"]:
                problems.append(f"printed the value of an environment variable: {r['stderr'][:200]!r}")
        if case.id in quiet and r["stdout"]:
            problems.append(f"printed before the error: {r['stdout'][:200]!r}")
        if problems:
            failures.append(f"{case.id}: " + "; ".join(problems))
    print(
        f"{len(corpus)} hostile cases; max {max(r['cpu'] for r in results):.3f} s CPU, "
        f"max {max(r['memory'] for r in results) / 2**20:.1f} MB added"
    )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("command", ["worker", "scheduler"])
def test_worker_and_scheduler_without_dask_are_one_line(command: str, tmp_path: Path) -> None:
    """Without the distributed extra (its modules made unimportable), both commands say what to install."""
    testbed = tmp_path / "testbed.yaml"
    testbed.write_text("tester: {kind: software}\nduts: [{name: nat, recipe: iptables-nat44, access: {kind: lab}}]\n")
    args = ["worker", "tcp://127.0.0.1:1", "--testbed", str(testbed)] if command == "worker" else ["scheduler"]
    code = (
        "import sys\n"
        "sys.modules['distributed'] = None\n"
        "sys.modules['dask'] = None\n"
        f"sys.argv = ['natbench', *{args!r}]\n"
        "from natbench.cli import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"natbench: error: natbench {command} needs Dask distributed (distributed is not installed): "
        "pip install 'natbench[distributed]'\n"
    )
    assert proc.stdout == ""
