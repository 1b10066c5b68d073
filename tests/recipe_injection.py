"""Helpers of the injection tests: hostile values put into every placeholder of a recipe, the rendered
commands executed by real shells (dash and bash) against recording stubs, escapes counted.

A command runs as a user's DUT would run it (``sh -c TEXT``), with changes that keep the machine untouched
and make an escape visible:

* PATH holds stubs: every program name is a link to ``stub`` (below), which records its arguments
  (NUL-separated, one record per call) and its input, and does nothing else; ``nb_canary`` records that it
  ran. The shells' builtins (echo, printf, test, kill, read, eval, ...) still run, and so do the real ``sh``,
  ``dash``, ``bash``, ``cat`` and ``tee`` (a script written and then run does run, text copied into a file
  does land there).
* The recipe's literal ``/proc/`` and ``/sys/`` paths are moved under a sandbox directory (the shell
  writes there instead of the kernel's settings); path parameters point into the sandbox too.
* Each case runs in its own working directory, so whatever a redirection creates lands there.

An escape is any of: the canary ran (a value became code); a recorded program got an argument starting
with ``-NBOPT`` before a ``--`` (a value became an option); a value holding configuration syntax (blank,
newline, quote, brace, ``#``, ``;``) around the marker ``NBCFG`` reached a file the command wrote or
``nft``'s arguments verbatim (a value became configuration); a line or statement of a written file, of a
program's input or of ``nft``'s arguments begins with a value's marker word (``NBLINE``, ``nb_canary``,
``flush``, ``block``: a value became a statement of its own).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from natbench.duts.recipes import Recipe
from natbench.duts.recipes.formats import FORMATS
from natbench.duts.recipes.params import ParamSpec
from natbench.duts.recipes.render import saved_names, value_classes
from natbench.duts.recipes.shell import ShellStructureError, command_slots
from natbench.duts.recipes.template import render_template
from natbench.duts.recipes.values import RUNTIME, ValueClass

STUB = """#!/bin/sh
# records "name arg..." NUL-separated, ends the record with a newline, and its input; builtins only (PATH holds
# stubs)
name=${0##*/}
if [ "$name" = nb_canary ]; then : > "$NB_OUT/canary-$NB_CASE"; fi
{ printf '%s\\0' "$name" "$@"; printf '\\n'; } >> "$NB_OUT/argv-$NB_CASE"
if [ ! -t 0 ]; then
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\\n' "$line"; done >> "$NB_OUT/stdin-$NB_CASE"
fi
exit 0
"""

REAL = ("sh", "dash", "bash", "cat", "tee")
"""Programs the cases run for real (found on the machine's PATH): shells, and the two that copy text."""

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
    # statements: a value that would be a line or a rule of its own
    "NBLINE",
    "x\nNBLINE",
    "x;NBLINE",
    "x\nflush ruleset",
    "block drop all",
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
_MARKERS = ("NBLINE", "nb_canary", "flush", "block")
"""Words a payload puts first so that a statement it heads is seen (no recipe's own text begins a statement
with them)."""
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
            run_slots, netns_slots = command_slots(cmd.run, cmd.netns, cmd.format)
            for key, slots in (("run", run_slots), ("netns", netns_slots)):
                for k, slot in enumerate(slots):
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
    return render_runtime(recipe, run, cmd.netns, cmd.format, {**variables, pos.name: payload}, pos.name)


def render_runtime(
    recipe: Recipe, run: str, netns: str | None, fmt: str | None, variables: dict[str, Any], name: str
) -> str | None:
    """A command rendered as natbench renders it, with the variable ``name`` taken as a value learnt at run time (no
    type vouches for it: every check of its place applies). None: natbench refused it."""
    declared = value_classes(recipe)

    def classes(variable: str, filters: tuple[str, ...]) -> ValueClass:
        return RUNTIME if variable == name else declared(variable, filters)

    try:
        run_slots, netns_slots = command_slots(run, netns, fmt)
        text = render_template(run, variables, slots=run_slots, classes=classes)
        if netns is not None:
            text = f"ip netns exec {render_template(netns, variables, slots=netns_slots, classes=classes)} {text}"
    except (ShellStructureError, ValueError, KeyError):
        return None
    return text


_FUNCTION_STUB = """nb_stub() {
  { printf '%s\\0' "$@"; printf '\\n'; } >> "$NB_OUT/argv-$NB_CASE"
  if [ ! -t 0 ]; then
    while IFS= read -r line || [ -n "$line" ]; do printf '%s\\n' "$line"; done >> "$NB_OUT/stdin-$NB_CASE"
  fi
}
nb_canary() { : > "$NB_OUT/canary-$NB_CASE"; nb_stub nb_canary "$@"; }"""
_FUNCTION_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_BUILTINS = frozenset(
    (
        *("if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in"),
        *("function", "select", "time", "coproc", "echo", "printf", "test", "cd", "read", "kill", "exit"),
        *("return", "true", "false", "set", "shift", "eval", "exec", "command", "builtin", "export", "local"),
        *("readonly", "declare", "typeset", "unset", "trap", "wait", "alias", "hash", "type", "ulimit"),
        *("umask", "getopts", "break", "continue", "source", "let", "jobs", "compgen", "mapfile", "readarray"),
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


def make_bin(bindir: Path, names: set[str]) -> None:
    """A PATH directory: a stub for every name but the shells' own words, the real programs of :data:`REAL`."""
    bindir.mkdir(parents=True, exist_ok=True)
    stub = bindir / "stub"
    if not stub.exists():
        stub.write_text(STUB)
        stub.chmod(0o755)
    for name in REAL:
        real = shutil.which(name, path="/usr/bin:/bin")
        if real is not None and not (bindir / name).exists():
            (bindir / name).symlink_to(real)
    for name in (names | {"nb_canary"}) - _BUILTINS:
        link = bindir / name
        if "/" not in name and not link.exists() and name != "stub":
            link.symlink_to("stub")


def program_names(command: str) -> set[str]:
    """Every word of a command text that could name a program."""
    return set(re.findall(r"(?<![\w./-])([A-Za-z_][\w.+-]*)", command))


@dataclass
class Outcome:
    """What one executed case left: the canary, the recorded calls, the input stubs read, the files it wrote."""

    canary: bool
    records: list[list[str]]
    stdin: str
    written: str


def _outcome(out: Path, case_id: str, work: Path) -> Outcome:
    canary = (out / f"canary-{case_id}").exists()
    records = []
    argv_file = out / f"argv-{case_id}"
    if argv_file.exists():
        for line in argv_file.read_bytes().split(b"\0\n"):
            if line:
                records.append(line.decode("utf-8", "replace").split("\0"))
    stdin_file = out / f"stdin-{case_id}"
    stdin = stdin_file.read_text("utf-8", "replace") if stdin_file.exists() else ""
    written = ""
    for path in sorted(work.rglob("*")):
        if path.is_file():
            written += path.read_text("utf-8", "replace") + "\n"
    return Outcome(canary, records, stdin, written)


def run_cases(cases: list[tuple[str, str]], root: Path, shell: str) -> dict[str, Outcome]:
    """Run ``(case id, command)`` pairs, each as ``eval`` in a subshell of one ``shell`` process (``eval`` parses the
    text exactly as ``sh -c`` would; faster than a process per case); per case what it left."""
    bindir, out = root / "bin", root / "out"
    out.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    for _, command in cases:
        names |= program_names(command)
    make_bin(bindir, names)
    work = root / f"work-{shell}"
    lines = [f"NB_OUT={shlex.quote(str(out))}; export NB_OUT", _FUNCTION_STUB]
    # the stubs as shell functions where a name can be one (no exec per call: the same recording, faster)
    lines += [
        f'{n}() {{ nb_stub {n} "$@"; }}'
        for n in sorted(names - _BUILTINS - set(REAL))
        if _FUNCTION_NAME.fullmatch(n) and n != "nb_canary"
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
    return {
        case_id: _outcome(out, case_id, work / case_id)
        for case_id, _ in cases
        if (out / f"ran-{case_id}").exists()  # the driver never reached the case: the caller counts and sees it
    }


def run_each(cases: list[tuple[str, list[str]]], root: Path, shell: str) -> dict[str, Outcome]:
    """Run ``(case id, commands)``: each command as natbench runs it, ``shell -c TEXT`` in a process of its own
    (``$0``, ``$BASH`` and the environment as on a DUT), the commands of a case one after the other in one working
    directory; per case what it left."""
    bindir, out = root / "bin", root / "out"
    out.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    for _, commands in cases:
        for command in commands:
            names |= program_names(command)
    make_bin(bindir, names)
    results: dict[str, Outcome] = {}
    for case_id, commands in cases:
        work = root / f"work-{shell}" / case_id
        work.mkdir(parents=True)
        env = {"PATH": str(bindir), "NB_OUT": str(out), "NB_CASE": case_id, "HOME": str(work), "SHELL": f"/bin/{shell}"}
        for command in commands:
            subprocess.run(
                [f"/bin/{shell}", "-c", command], cwd=work, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=20,
            )  # fmt: skip
        results[case_id] = _outcome(out, case_id, work)
    return results


def config_syntax(payload: str) -> bool:
    """Whether a payload carries configuration syntax around the marker (what must never reach a file verbatim)."""
    return "NBCFG" in payload and not _TOKEN.fullmatch(payload)


def _headed(text: str, payload: str, starts: str = "\n;{}") -> bool:
    """Whether a line or a statement (after one of ``starts``) of ``text`` begins with a marker word of ``payload``."""
    markers = {m for m in _MARKERS if m in payload}
    for statement in re.split(f"[{re.escape(starts)}]", text):
        words = statement.split()
        if words and words[0] in markers:
            return True
    return False


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
"""A double-quoted string of nft, pf.conf or JSON: one word of the format, whatever it holds."""


def escapes(payload: str, outcome: Outcome, fmt: str | None = None) -> list[str]:
    """The kinds of escape one executed case shows (``fmt``: the declared format of the text the command writes, which
    says where its statements begin, and whose strings are read as one word each; unknown: statements begin after
    a newline, ';', '{' or '}', and every character counts)."""
    starts = FORMATS[fmt].statement_starts or "\n" if fmt is not None else "\n;{}"
    written = _STRING.sub('""', outcome.written) if fmt is not None else outcome.written
    found = []
    if outcome.canary:
        found.append("code")
    for argv in outcome.records:
        args = argv[1:]
        end = args.index("--") if "--" in args else len(args)
        if any(a.startswith(("-NBOPT", "--NBOPT")) for a in args[:end]):
            found.append(f"option of {argv[0]}")
        rule = _STRING.sub('""', " ".join(args))
        if argv[0] == "nft" and config_syntax(payload) and payload in rule:
            found.append("nft rule syntax")
        if argv[0] == "nft" and _headed(rule, payload):
            found.append("a statement of its own in nft's rule")
    if config_syntax(payload) and payload in written:
        found.append("configuration syntax in a written file")
    if _headed(written, payload, starts):
        found.append("a line of its own in a written file")
    if _headed(outcome.stdin, payload):
        found.append("a line of its own in a program's input")
    return found
