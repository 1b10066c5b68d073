"""Helpers of the injection tests: hostile values put into every placeholder of a recipe, the rendered
commands executed by real shells (dash and bash) against recording stubs, escapes counted.

A command runs as a user's DUT would run it (``sh -c TEXT``), with three changes that keep the machine
untouched and make an escape visible:

* PATH holds only stubs: every program name is a link to ``stub`` (below), which records its arguments
  (NUL-separated, one record per call) and does nothing else; ``nb_canary`` records that it ran. The
  shells' builtins (echo, printf, test, kill, read) still run.
* The recipe's literal ``/proc/`` and ``/sys/`` paths are moved under a sandbox directory (the shell
  writes there instead of the kernel's settings); path parameters point into the sandbox too.
* Each case runs in its own working directory, so whatever a redirection creates lands there.

An escape is any of: the canary ran (a value became code); a recorded program got an argument starting
with ``-NBOPT`` before a ``--`` (a value became an option); a value holding configuration syntax (blank,
newline, quote, brace, ``#``, ``;``) around the marker ``NBCFG`` reached a file the command wrote or
``nft``'s arguments verbatim (a value became configuration).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from natbench.duts.recipes import Recipe
from natbench.duts.recipes.params import ParamSpec
from natbench.duts.recipes.render import saved_names
from natbench.duts.recipes.shell import analyze
from natbench.errors import RecipeError

STUB = """#!/bin/sh
# records "name arg..." NUL-separated, ends the record with a newline; builtins only (PATH holds stubs)
name=${0##*/}
if [ "$name" = nb_canary ]; then : > "$NB_OUT/canary-$NB_CASE"; fi
{ printf '%s\\0' "$name" "$@"; printf '\\n'; } >> "$NB_OUT/argv-$NB_CASE"
exit 0
"""

PAYLOADS: tuple[str, ...] = (
    # code: every way a shell might be talked into running nb_canary
    "$(nb_canary)",
    "`nb_canary`",
    ";nb_canary;",
    "x;nb_canary",
    "|nb_canary",
    "&&nb_canary",
    "||nb_canary",
    "&nb_canary&",
    "\nnb_canary\n",
    "x\nnb_canary",
    "' ; nb_canary ; '",
    "'$(nb_canary)'",
    '" ; nb_canary ; "',
    '"$(nb_canary)"',
    "\\'; nb_canary; #",
    "\\",
    "x\\",
    "'",
    "$((0))$(nb_canary)",
    "a[$(nb_canary)]",
    "x[$(nb_canary)]=1",
    "$(nb_canary)=1",
    "}; nb_canary; {",
    ")nb_canary(",
    "*) nb_canary;;",
    "EOF\nnb_canary\nEOF",
    "<(nb_canary)",
    "$'\\x3bnb_canary'",
    "${IFS}nb_canary",
    "nb_canary",
    "*",
    "~root",
    # options: a value read as an option of the program it is given to
    "-NBOPT",
    "--NBOPT=1",
    "-NBOPT x",
    # configuration: a value that would add syntax to pf.conf, JSON or nft's rules
    "x NBCFG",
    "x\nNBCFG",
    "x;NBCFG",
    "x{NBCFG",
    "x}NBCFG",
    "x#NBCFG",
    'x"NBCFG',
    "x'NBCFG",
    "x,NBCFG]",
    "x\tNBCFG",
)
"""Values tried in every placeholder position."""

SHELLS = ("dash", "bash")
"""The shells a DUT's ``sh`` may be (Debian: dash; some systems: bash in POSIX mode or not)."""

_TOKEN = re.compile(r"[A-Za-z0-9_.:/,+-]+")
_ABSOLUTE = re.compile(r"(?<![\w.])/(proc|sys)/")


def sample(spec: ParamSpec, sandbox: Path) -> Any:
    """A valid value of a parameter (its default where it has one; paths inside ``sandbox``)."""
    if spec.type == "str" and (spec.default is None or str(spec.default).startswith("/")):
        for candidate in (f"{sandbox}/p", "abc", "a1", "1"):
            try:
                return spec.check(candidate)
            except ValueError:
                continue
    if spec.default is not None:
        return spec.check(spec.default)
    values = {
        "str": "abc",
        "int": max(int(spec.min or 1), 1),
        "float": max(float(spec.min or 1.0), 1.0),
        "bool": True,
        "interface": "eth0",
        "mac": "02:00:00:00:00:01",
        "ip": "198.18.0.1",
        "ipv4": "198.18.0.1",
        "ipv6": "2001:2::1",
        "net": "198.18.0.0/24",
        "ipv4_net": "198.18.0.1/24",
        "ipv6_net": "2001:2::/64",
        "port_range": "1024-65535",
    }
    if spec.type == "choice":
        return spec.choices[0]
    if spec.type == "list":
        item = spec.model_copy(update={"type": spec.items, "default": None})
        return [sample(item, sandbox), sample(item, sandbox)]
    return spec.check(values[spec.type])


def base_variables(recipe: Recipe, sandbox: Path) -> dict[str, Any]:
    """A value for every template variable: parameters, natbench's run-time variables, saved outputs."""
    out: dict[str, Any] = {name: "1" for name in saved_names(recipe)}
    out.update({"cores": 2, "cpus": [0, 1], "dut": "nat"})
    out.update({name: sample(spec, sandbox) for name, spec in recipe.params.items()})
    return out


@dataclass(frozen=True)
class Position:
    """One placeholder occurrence of a recipe: the command it is in and which occurrence it is."""

    step: str
    index: int
    """Command index in the step."""
    key: str
    """``run`` or ``netns``."""
    slot: int
    """Occurrence in the template."""
    name: str
    """The variable."""


def positions(recipe: Recipe) -> Iterator[Position]:
    """Every placeholder occurrence of every command of ``recipe``."""
    for step in recipe.steps.values():
        for i, cmd in enumerate(step.commands):
            for key, text in (("run", cmd.run), ("netns", cmd.netns)):
                if text is None:
                    continue
                template = text if key == "run" else f"ip netns exec {text} true"
                for k, slot in enumerate(analyze(template)):
                    yield Position(step.name, i, key, k, slot.name)


@dataclass
class Tally:
    """What the payloads met: refused (by which check), executed, escaped."""

    tried: int = 0
    refused: int = 0
    executed: int = 0
    escapes: list[str] = field(default_factory=list)


def render_case(recipe: Recipe, pos: Position, payload: str, variables: dict[str, Any], sandbox: Path) -> str | None:
    """The command of ``pos`` rendered with ``payload`` in that variable (None: natbench refused it).

    The value goes straight into the template variables, past the parameter's type check, as a value saved
    from a DUT's output would: what is tested is the place check every rendering makes.
    """
    cmd = recipe.steps[pos.step].commands[pos.index]
    run = _ABSOLUTE.sub(lambda m: f"{sandbox}/{m.group(1)}/", cmd.run)
    moved = cmd.model_copy(update={"run": run, "when": None})  # every command, whatever its condition
    try:
        rendered = recipe.render_command(pos.step, moved, {**variables, pos.name: payload})
    except RecipeError:
        return None
    assert rendered is not None
    return rendered.text


_FUNCTION_STUB = """nb_stub() { { printf '%s\\0' "$@"; printf '\\n'; } >> "$NB_OUT/argv-$NB_CASE"; }
nb_canary() { : > "$NB_OUT/canary-$NB_CASE"; nb_stub nb_canary "$@"; }"""
_FUNCTION_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_BUILTINS = frozenset(
    (
        *("if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in"),
        *("function", "select", "time", "coproc", "echo", "printf", "test", "cd", "read", "kill", "exit"),
        *("return", "true", "false", "set", "shift", "eval", "exec", "command", "builtin", "export", "local"),
        *("readonly", "declare", "typeset", "unset", "trap", "wait", "alias", "hash", "type", "ulimit"),
        *("umask", "getopts", "break", "continue", "source", "let"),
    )
)
"""Reserved words and builtins: never stubbed (the shells run their own)."""


def make_parents(command: str, sandbox: Path) -> None:
    """Create the directories of every sandbox path a rendered command names (so its writes land)."""
    for path in re.findall(rf"{re.escape(str(sandbox))}/[\w./-]+", command):
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def sandbox_text(sandbox: Path) -> str:
    """Everything the commands wrote into the sandbox."""
    return "".join(p.read_text("utf-8", "replace") for p in sandbox.rglob("*") if p.is_file())


def run_cases(cases: list[tuple[str, str]], root: Path, shell: str) -> dict[str, tuple[bool, list[list[str]], str]]:
    """Run ``(case id, command)`` pairs with ``shell -c``; per case: canary ran, argv records, files written in its
    working directory."""
    bindir, out = root / "bin", root / "out"
    bindir.mkdir(parents=True, exist_ok=True)
    out.mkdir(exist_ok=True)
    stub = bindir / "stub"
    stub.write_text(STUB)
    stub.chmod(0o755)
    names = {"nb_canary"}
    for _, command in cases:
        names.update(re.findall(r"(?<![\w./-])([A-Za-z_][\w.+-]*)", command))
    names -= _BUILTINS
    for name in names:
        link = bindir / name
        if not link.exists() and name != "stub":
            link.symlink_to("stub")
    work = root / f"work-{shell}"
    # one shell process runs every case in a subshell of its own: `eval` parses the text exactly as `sh -c` would
    lines = [f"NB_OUT={shlex.quote(str(out))}; export NB_OUT", _FUNCTION_STUB]
    # the stubs as shell functions where a name can be one (no exec per call: the same recording, faster)
    lines += [
        f'{n}() {{ nb_stub {n} "$@"; }}' for n in sorted(names) if _FUNCTION_NAME.fullmatch(n) and n != "nb_canary"
    ]
    for case_id, command in cases:
        (work / case_id).mkdir(parents=True)
        lines.append(
            f"(cd {shlex.quote(str(work / case_id))} && NB_CASE={case_id} && export NB_CASE && "
            f": > $NB_OUT/ran-{case_id} && "
            f"PATH={shlex.quote(str(bindir))} && eval {shlex.quote(command)}) </dev/null >/dev/null 2>&1"
        )
    script = root / f"cases-{shell}.sh"
    script.write_text("\n".join(lines) + "\n")
    subprocess.run([f"/bin/{shell}", str(script)], env={"PATH": "/usr/bin:/bin"}, check=False, timeout=1800)
    results: dict[str, tuple[bool, list[list[str]], str]] = {}
    for case_id, _ in cases:
        if not (out / f"ran-{case_id}").exists():
            continue  # the driver never reached the case: the caller counts executions and sees it
        canary = (out / f"canary-{case_id}").exists()
        argv_file = out / f"argv-{case_id}"
        records = []
        if argv_file.exists():
            for line in argv_file.read_bytes().split(b"\0\n"):
                if line:
                    records.append(line.decode("utf-8", "replace").split("\0"))
        written = ""
        for path in (work / case_id).rglob("*"):
            if path.is_file():
                written += path.read_text("utf-8", "replace")
        results[case_id] = (canary, records, written)
    return results


def config_syntax(payload: str) -> bool:
    """Whether a payload carries configuration syntax around the marker (what must never reach a file verbatim)."""
    return "NBCFG" in payload and not _TOKEN.fullmatch(payload)


def escapes(payload: str, canary: bool, records: list[list[str]], written: str) -> list[str]:
    """The kinds of escape one executed case shows."""
    found = []
    if canary:
        found.append("code")
    for argv in records:
        args = argv[1:]
        end = args.index("--") if "--" in args else len(args)
        if any(a.startswith(("-NBOPT", "--NBOPT")) for a in args[:end]):
            found.append(f"option of {argv[0]}")
        if argv[0] == "nft" and config_syntax(payload) and payload in " ".join(args):
            found.append("nft rule syntax")
    if config_syntax(payload) and payload in written:
        found.append("configuration syntax in a written file")
    return found
