"""Where a recipe's placeholders stand in the shell structure of a command, and which places are refused.

Every value is rendered as one single-quoted shell word (:mod:`~natbench.duts.recipes.template`). That
makes it data only where the shell reads a quoted word as data: an argument, a redirection target, the
value of an assignment. In many other places a quoted value is still code or changes what runs:

* inside other quotes, backticks, ``${...}``, a heredoc, a comment, after a backslash, on a line
  continued by a backslash (the quotes are literal text there, or the value is not a word at all);
* inside arithmetic (``$(( ))``, ``(( ))``, ``$[ ]``, ``[[ ]]``): bash evaluates ``a[$(cmd)]`` there;
* as the command name (the value chooses the program), also behind a wrapper (``sudo``, ``env``,
  ``timeout``, ``ip netns exec NS``, ...);
* anywhere in a command that builds and runs code from text: ``eval``, ``sh -c`` / ``bash -c``, any
  shell or interpreter (``python``, ``perl``, ``awk``, ``sed``, ...), ``xargs``, ``ssh``, ``su``,
  ``watch``, ``trap``, bash's ``declare`` / ``let`` / ``read`` family: once such a command is in the
  text, a value could reach it through a pipe, a variable or stdin, so no placeholder may stand anywhere
  in that command text;
* as ``printf``'s format or ``-v`` name, after ``test -v``;
* ``case`` constructs are not followed: a placeholder after ``case`` is refused.

:func:`analyze` reads a command template with a small tokenizer of its own (the shell grammar is only
followed as far as deciding these places needs; what it cannot follow around a placeholder is refused,
never guessed) and returns one :class:`Slot` per placeholder, saying what kind of place it is. The slot
kinds then decide which *values* may go there (:func:`word_problem`): a word that starts with ``-``
at the start of an argument would be read as an option (allowed after a literal ``--``); a value written
into a configuration file (``echo``/``printf``/``cat`` into a file or ``tee``) or into ``nft``'s rule
language, or assigned to a shell variable, must be one plain token (letters, digits and ``_ . : / , + -``),
so that it can add no syntax to pf.conf, JSON, nftables rules or later shell text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "ARGUMENT",
    "ASSIGNMENT",
    "CONFIG",
    "OPERAND",
    "REDIRECT",
    "ShellStructureError",
    "Slot",
    "analyze",
    "runs_script_file",
    "word_problem",
]

ARGUMENT = "argument"
"""An argument of a program (before any ``--``)."""
OPERAND = "operand"
"""An argument after a literal ``--``: never read as an option."""
ASSIGNMENT = "assignment"
"""The value of a shell variable assignment (``v={{ x }}``)."""
REDIRECT = "redirect"
"""The file of a redirection (``> {{ file }}``)."""
CONFIG = "config"
"""Text written into a file by ``echo``/``printf``/``cat`` (redirected or piped into ``tee``), or a word of
``nft``'s rule language."""

TOKEN = re.compile(r"[A-Za-z0-9_.:/,+-]+")
"""A plain token: what a value written into a configuration file or assigned to a variable may be."""

MAX_SIMPLE_COMMANDS = 256
"""Most simple commands a template with placeholders may hold (the shipped ones have at most 6)."""

_SENTINEL = "\ue000"
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_METACHARS = " \t\n;&|<>()"
_RESERVED_NEXT_COMMAND = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
_RESERVED_END = {"fi", "done", "}", "esac"}

_SHELLS = {
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "ash", "yash", "posh", "csh", "tcsh",
    "fish", "rbash", "busybox", "toybox",
}  # fmt: skip
_CODE_RUNNERS = _SHELLS | {
    "eval", "source", ".", "trap", "let", "declare", "typeset", "local", "readonly", "export", "read", "mapfile",
    "readarray", "unset", "getopts", "xargs", "parallel", "watch", "ssh", "su", "runuser", "script", "expect",
    "tclsh", "wish", "awk", "gawk", "mawk", "nawk", "sed", "find", "dc", "m4", "make", "gdb", "vi", "vim", "ex",
    "ed", "emacs", "at", "batch", "crontab", "systemd-run", "tmux", "screen", "socat", "nc", "ncat", "netcat",
    "rsync", "git", "php", "node", "nodejs", "lua", "luajit", "ruby", "perl", "python", "python2", "python3",
    "pwsh", "fc", "alias", "hash", "enable",
}  # fmt: skip
_VERSIONED_RUNNER = re.compile(r"(python|perl|ruby|php|lua|node|tclsh|pypy)[0-9.]*")
"""Interpreters named with a version (``python3.11``, ``perl5.36``)."""

_WRAPPERS: dict[str, tuple[set[str], int]] = {
    # program: (options that take a separate argument, positional words before the wrapped command)
    "sudo": ({"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t", "-T", "-R"}, 0),
    "doas": ({"-u", "-C"}, 0),
    "env": ({"-u", "-C", "--unset", "--chdir"}, 0),
    "nice": ({"-n", "--adjustment"}, 0),
    "nohup": (set(), 0),
    "setsid": (set(), 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0),
    "timeout": ({"-s", "-k", "--signal", "--kill-after"}, 1),
    "taskset": (set(), 1),
    "chrt": (set(), 1),
    "ionice": ({"-c", "-n", "-p", "-P", "-u"}, 0),
    "chroot": ({"--userspec", "--groups"}, 1),
    "flock": ({"-w", "-E", "--timeout", "--conflict-exit-code"}, 1),
    "unshare": (set(), 0),
    "nsenter": ({"-t", "-S", "-G", "--target", "--setuid", "--setgid"}, 0),
    "exec": ({"-a"}, 0),
    "command": (set(), 0),
    "builtin": (set(), 0),
    "time": ({"-f", "-o", "--format", "--output"}, 0),
    "strace": ({"-e", "-o", "-p", "-s", "-u", "-E"}, 0),
    "ltrace": ({"-e", "-o", "-p", "-s", "-u"}, 0),
    "caps": (set(), 0),
    "capsh": (set(), 0),
    "runcon": (set(), 0),
    "cgexec": ({"-g"}, 0),
    "numactl": (set(), 0),
    "prlimit": (set(), 0),
    "faketime": (set(), 1),
    "ip": (set(), 0),  # only as `ip netns exec NS CMD` (see _wrapped)
}
"""Programs that run another program given in their arguments."""


class ShellStructureError(ValueError):
    """A placeholder stands where a quoted value is not safe, or where the command's structure cannot be followed."""


@dataclass(frozen=True)
class Slot:
    """Where one placeholder of a command template stands."""

    name: str
    """The variable."""
    filters: tuple[str, ...]
    """Its filters, in order."""
    kind: str
    """:data:`ARGUMENT`, :data:`OPERAND`, :data:`ASSIGNMENT`, :data:`REDIRECT` or :data:`CONFIG`."""
    word_start: bool
    """Nothing literal comes before the value in its shell word (so its first character starts the word)."""
    program: str
    """The program the value is given to (for messages): ``ip``, ``echo``, ..."""
    spliced: bool = False
    """The command stands inside ``$( )``, whose output the shell splits into words and expands as globs."""


# ---------------------------------------------------------------------------------------------------
# the tokenizer


@dataclass
class _Word:
    """One shell word being read: its literal text (placeholders as sentinels) and its placeholders."""

    start: int
    text: str = ""
    literal: bool = False  # a plain character came before the current position
    slots: list[tuple[int, bool]] | None = None  # (placeholder index, at word start)
    quoted: bool = False

    def add_slot(self, index: int) -> None:
        if self.slots is None:
            self.slots = []
        self.slots.append((index, not self.literal))


@dataclass
class _Command:
    """The words and redirections of one simple command."""

    words: list[_Word]
    redirects: list[tuple[str, _Word]]
    pipe_to: _Command | None = None

    def __init__(self) -> None:
        self.words = []
        self.redirects = []


class _Scanner:
    def __init__(self, text: str, names: list[tuple[str, tuple[str, ...]]]) -> None:
        self.text = text
        self.names = names
        self.commands: list[tuple[list[_Command], bool]] = []  # pipelines, inside $( )
        self.spliced = 0  # depth of $( ) around the current position
        self.code_runner: str | None = None
        self.stopped = False
        self.count = 0

    # -- errors

    def refuse(self, index: int, why: str) -> ShellStructureError:
        name, filters = self.names[index]
        shown = "{{ " + " | ".join((name, *filters)) + " }}"
        return ShellStructureError(f"placeholder {shown} {why}")

    def sentinels(self, start: int, end: int) -> list[int]:
        """Placeholder indexes between two text positions."""
        before = self.text.count(_SENTINEL, 0, start)
        return list(range(before, before + self.text.count(_SENTINEL, start, end)))

    def forbid(self, start: int, end: int, why: str) -> None:
        found = self.sentinels(start, end)
        if found:
            raise self.refuse(found[0], why)

    # -- skipping nested regions that may hold no placeholder

    def skip_single(self, i: int) -> int:
        end = self.text.find("'", i + 1)
        if end < 0:
            raise ShellStructureError("unterminated single quote")
        return end + 1

    def skip_ansi_c(self, i: int) -> int:  # $'...' with backslash escapes
        j = i + 2
        while j < len(self.text):
            c = self.text[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                return j + 1
            j += 1
        raise ShellStructureError("unterminated $'...' quote")

    def skip_double(self, i: int) -> int:
        j = i + 1
        while j < len(self.text):
            c = self.text[j]
            if c == "\\":
                j += 2
            elif c == '"':
                return j + 1
            elif c == "`":
                j = self.skip_backticks(j)
            elif self.text.startswith("$(", j) or self.text.startswith("${", j) or self.text.startswith("$[", j):
                j = self.skip_dollar(j)
            else:
                j += 1
        raise ShellStructureError("unterminated double quote")

    def skip_backticks(self, i: int) -> int:
        j = i + 1
        while j < len(self.text):
            c = self.text[j]
            if c == "\\":
                j += 2
            elif c == "`":
                return j + 1
            else:
                j += 1
        raise ShellStructureError("unterminated backquote")

    def skip_dollar(self, i: int) -> int:
        """Skip ``$(...)``, ``$((...))``, ``${...}`` or ``$[...]`` starting at ``i`` (quotes inside followed)."""
        opening = self.text[i + 1]
        close = {"(": ")", "{": "}", "[": "]"}[opening]
        depth = 0
        j = i + 1
        while j < len(self.text):
            c = self.text[j]
            if c == "\\":
                j += 2
                continue
            if c == "'" and opening != "[":
                j = self.skip_single(j)
                continue
            if c == '"':
                j = self.skip_double(j)
                continue
            if c == "`":
                j = self.skip_backticks(j)
                continue
            if c == opening:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise ShellStructureError(f"unterminated ${opening}")

    # -- the command list

    def parse(self, i: int, closing: str | None) -> int:
        """Read commands from ``i`` until ``closing`` (``)``) or the end; return the position after it."""
        pipeline: list[_Command] = []
        cmd = _Command()
        pending_redirect: str | None = None
        text = self.text
        n = len(text)

        def finish_command() -> None:
            nonlocal cmd
            if pending_redirect is not None:
                raise ShellStructureError("a redirection without its file")
            if cmd.words or cmd.redirects:
                pipeline.append(cmd)
                self.count += 1
                if self.count > MAX_SIMPLE_COMMANDS:
                    raise ShellStructureError(f"more than {MAX_SIMPLE_COMMANDS} commands in one template")
            cmd = _Command()

        def finish_pipeline() -> None:
            nonlocal pipeline
            finish_command()
            if pipeline:
                self.commands.append((pipeline, self.spliced > 0))
            pipeline = []

        while i < n:
            c = text[i]
            if c in " \t":
                i += 1
                continue
            if c == "\\" and text.startswith("\n", i + 1):
                self.forbid(i, n, "is on a line continued by a backslash: write the command on one line")
                i += 2
                continue
            if c == "\n" or c == ";" or c == "&" or c == "|":
                op = text[i : i + 2]
                if op in ("&&", "||", ";;", "|&", "&>"):
                    if op == ";;":
                        raise ShellStructureError("';;' outside a case construct")
                    if op == "&>":
                        pending_redirect = self._redirect(i, 2, cmd, pending_redirect)
                        i += 2 + (text.startswith(">", i + 2))
                        continue
                    finish_pipeline()
                    i += 2
                    continue
                if c == "|":
                    finish_command()
                else:
                    finish_pipeline()
                i += 1
                continue
            if c in "<>":
                if text.startswith("<<<", i):
                    pending_redirect = self._redirect(i, 3, cmd, pending_redirect)
                    i += 3
                    continue
                if text.startswith("<<", i):
                    self.forbid(i, n, "is inside or after a heredoc (<<): the heredoc's text is not shell words")
                    self.stopped = True
                    finish_pipeline()
                    self._note_runners(self.text[i:])
                    return n
                if text.startswith("<(", i) or text.startswith(">(", i):
                    i = self.parse(i + 2, ")")
                    continue
                length = 2 if text[i : i + 2] in (">>", "<>", ">|", ">&", "<&") else 1
                pending_redirect = self._redirect(i, length, cmd, pending_redirect)
                i += length
                continue
            if c == "(":
                if text.startswith("((", i) and not cmd.words:
                    end = text.find("))", i)
                    if end < 0:
                        raise ShellStructureError("unterminated ((")
                    self.forbid(i, end, "is inside (( )): bash evaluates the value as arithmetic, which runs code")
                    i = end + 2
                    continue
                if cmd.words and text[i + 1 : i + 2] == ")":  # name() { ...: a function definition
                    self.forbid(cmd.words[0].start, i, "names a shell function")
                    cmd = _Command()
                    i += 2
                    continue
                finish_pipeline()
                i = self.parse(i + 1, ")")
                continue
            if c == ")":
                if closing == ")":
                    finish_pipeline()
                    return i + 1
                raise ShellStructureError("unbalanced ')'")
            if c == "#":
                end = text.find("\n", i)
                end = n if end < 0 else end
                self.forbid(i, end, "is inside a comment (after #)")
                i = end
                continue
            word, i = self.read_word(i)
            if pending_redirect is not None:
                cmd.redirects.append((pending_redirect, word))
                pending_redirect = None
                continue
            if not cmd.words and not word.quoted and not word.slots:
                if word.text in _RESERVED_NEXT_COMMAND:
                    continue
                if word.text in _RESERVED_END:
                    finish_pipeline()
                    continue
                if word.text == "[[":
                    end = text.find("]]", i)
                    if end < 0:
                        raise ShellStructureError("unterminated [[")
                    self.forbid(i, end, "is inside [[ ]]: bash evaluates operands there as arithmetic, which runs code")
                    i = end + 2
                    continue
                if word.text in ("case", "select", "function", "coproc"):
                    self.forbid(word.start, n, f"follows '{word.text}', whose structure natbench does not follow")
                    self.stopped = True
                    finish_pipeline()
                    self._note_runners(self.text[word.start :])
                    return n
                if word.text == "for":
                    cmd.words.append(word)
                    continue
            cmd.words.append(word)
        if pending_redirect is not None:
            raise ShellStructureError("a redirection without its file")
        if closing is not None:
            raise ShellStructureError(f"unbalanced '{closing}'")
        finish_pipeline()
        return i

    def _redirect(self, i: int, length: int, cmd: _Command, pending: str | None) -> str:
        if pending is not None:
            raise ShellStructureError("a redirection without its file")
        op = self.text[i : i + length]
        if cmd.words and cmd.words[-1].text.isdigit() and cmd.words[-1].start + len(cmd.words[-1].text) == i:
            cmd.words.pop()  # 2>file: the digits are the descriptor, not a word
        return op

    def read_word(self, i: int) -> tuple[_Word, int]:
        text = self.text
        n = len(text)
        word = _Word(start=i)
        while i < n:
            c = text[i]
            if c in _METACHARS:
                break
            if c == _SENTINEL:
                word.add_slot(text.count(_SENTINEL, 0, i))
                word.text += c
                i += 1
                continue
            if c == "\\":
                if i + 1 < n and text[i + 1] == _SENTINEL:
                    raise self.refuse(text.count(_SENTINEL, 0, i + 1), "follows a backslash, which unquotes it")
                if text.startswith("\n", i + 1):
                    self.forbid(i, n, "is on a line continued by a backslash: write the command on one line")
                    i += 2
                    continue
                word.text += text[i : i + 2]
                word.literal = True
                i += 2
                continue
            if c == "'":
                end = self.skip_single(i)
                self.forbid(i, end, "is inside shell quotes: natbench quotes every value itself, remove the quotes")
                word.literal = word.literal or end - i > 2
                word.text += text[i:end]
                word.quoted = True
                i = end
                continue
            if c == '"':
                end = self.skip_double(i)
                self.forbid(i, end, "is inside shell quotes: natbench quotes every value itself, remove the quotes")
                inner = text[i + 1 : end - 1]
                word.literal = word.literal or bool(inner and not inner.startswith(("$", "`")))
                word.text += text[i:end]
                word.quoted = True
                i = end
                continue
            if c == "`":
                end = self.skip_backticks(i)
                self.forbid(i, end, "is inside backquotes, where quotes do not protect a value")
                self._note_runners(text[i + 1 : end - 1])
                word.text += text[i:end]
                i = end
                continue
            if c == "$" and i + 1 < n:
                nxt = text[i + 1]
                if text.startswith("$((", i) or nxt == "[":
                    end = self.skip_dollar(i)
                    self.forbid(i, end, "is inside arithmetic expansion: the shell evaluates the value as arithmetic")
                    word.text += text[i:end]
                    i = end
                    continue
                if nxt == "{":
                    end = self.skip_dollar(i)
                    self.forbid(i, end, "is inside ${...}, where a value is a pattern, an offset or a name")
                    word.text += text[i:end]
                    i = end
                    continue
                if nxt == "'":
                    end = self.skip_ansi_c(i)
                    self.forbid(i, end, "is inside shell quotes: natbench quotes every value itself, remove the quotes")
                    word.text += text[i:end]
                    word.quoted = True
                    i = end
                    continue
                if nxt == "(":
                    self.spliced += 1
                    try:
                        i = self.parse(i + 2, ")")
                    finally:
                        self.spliced -= 1
                    word.text += "$(...)"
                    continue
            word.text += c
            if c != "$":
                word.literal = True
            i += 1
        return word, i

    def _note_runners(self, text: str) -> None:
        """Text natbench does not follow word by word (backquotes, after a heredoc): a code runner named in it
        still taints the command."""
        for raw in re.split(r"[\s;&|()<>`$\"']+", text):
            base = raw.rsplit("/", 1)[-1]
            if raw and _is_runner(base):
                self.code_runner = self.code_runner or base


def _is_runner(program: str) -> bool:
    return program in _CODE_RUNNERS or bool(_VERSIONED_RUNNER.fullmatch(program))


_QUOTES = str.maketrans("", "", "'\"")


def _unquoted(text: str) -> str:
    """A word's text with its quotes removed (good enough for program names and ``--``)."""
    return text.translate(_QUOTES)


# ---------------------------------------------------------------------------------------------------
# classifying the words of the simple commands


def _classify(scanner: _Scanner) -> dict[int, tuple[str, bool, str, bool]]:
    """Placeholder index -> (kind, at word start, program, inside $( )) for every simple command read."""
    out: dict[int, tuple[str, bool, str, bool]] = {}
    for pipeline, spliced in scanner.commands:
        kinds: dict[int, tuple[str, bool, str]] = {}
        found = [_program_of(cmd, scanner) for cmd in pipeline]
        programs = [p for p, _ in found]
        for stage, (cmd, (program, at)) in enumerate(zip(pipeline, found, strict=True)):
            writes_file = any(op in (">", ">>", ">|", "&>") and not _dev_null(w) for op, w in cmd.redirects)
            into_tee = stage + 1 < len(pipeline) and programs[stage + 1] in ("tee", "dd")
            config = (program in ("echo", "printf", "cat") and (writes_file or into_tee)) or program == "nft"
            for _op, target in cmd.redirects:
                for index, start in target.slots or ():
                    kinds[index] = (REDIRECT, start, program or "the shell")
            _classify_words(cmd, program, at, config, scanner, kinds)
        out.update({index: (*kind, spliced) for index, kind in kinds.items()})
    return out


def _dev_null(word: _Word) -> bool:
    return _unquoted(word.text) in ("/dev/null", "/dev/stderr", "/dev/stdout")


def _program_of(cmd: _Command, scanner: _Scanner) -> tuple[str, int]:
    """The program a simple command runs (after assignments and wrappers) and the index of its word; checks
    command-name positions and notes a code runner."""
    words = cmd.words
    k = 0
    while k < len(words) and not words[k].quoted and _NAME_ASSIGN.match(words[k].text):
        k += 1
    if k == len(words):
        return "", k
    program = _name_at(words, k, scanner, "is the command name: a value would choose the program that runs")
    seen = [program]
    while program in _WRAPPERS:
        nxt = _wrapped(words, k, program)
        if nxt is None or nxt >= len(words):
            break
        k = nxt
        program = _name_at(words, k, scanner, f"is the command {seen[-1]} runs: a value would choose the program")
        seen.append(program)
    runners = [p for p in seen if _is_runner(p)]
    if len(seen) > 1 or seen[0] in _WRAPPERS:  # a wrapper: any program named in its words may be what runs
        for word in words:
            base = _unquoted(word.text).rsplit("/", 1)[-1]
            if word.slots is None and (_is_runner(base) or ("env" in seen and base in ("-S", "--split-string"))):
                runners.append("env -S" if base.startswith("-") else base)
    if program == "flock" and any(_unquoted(w.text) in ("-c", "--command") for w in words):
        runners.append("flock -c")
    if runners:
        scanner.code_runner = scanner.code_runner or runners[0]
    return program, k


def _name_at(words: list[_Word], k: int, scanner: _Scanner, why: str) -> str:
    word = words[k]
    if word.slots:
        raise scanner.refuse(word.slots[0][0], why)
    return _unquoted(word.text).rsplit("/", 1)[-1]


def _wrapped(words: list[_Word], k: int, program: str) -> int | None:
    """Index of the command a wrapper at ``k`` runs (None: it runs none, e.g. plain ``ip``)."""
    if program == "ip":
        texts = [_unquoted(w.text) for w in words[k + 1 : k + 3]]
        return k + 4 if texts == ["netns", "exec"] else None
    with_argument, positional = _WRAPPERS[program]
    j = k + 1
    while j < len(words):
        text = _unquoted(words[j].text)
        if words[j].slots is None and text == "--":
            j += 1
            break
        if words[j].slots is None and text.startswith("-") and text != "-":
            j += 2 if text in with_argument else 1
            continue
        if program == "env" and words[j].slots is None and _NAME_ASSIGN.match(text):
            j += 1
            continue
        break
    return j + positional


def _classify_words(
    cmd: _Command, program: str, at: int, config: bool, scanner: _Scanner, out: dict[int, tuple[str, bool, str]]
) -> None:
    """Kinds of the placeholders in the words of one simple command whose program's word is ``words[at]``."""
    words = cmd.words
    for word in words[:at]:
        if not word.quoted and _NAME_ASSIGN.match(word.text):
            for index, _start in word.slots or ():
                if word.text.index(_SENTINEL) < word.text.index("="):
                    raise scanner.refuse(index, "is part of a variable name")
                out[index] = (ASSIGNMENT, word.text.index(_SENTINEL) == word.text.index("=") + 1, "the shell")
    closed = _options_end(words, at, program, scanner)
    previous = ""
    for position in range(at, len(words)):
        word = words[position]
        text = _unquoted(word.text)
        for index, start in word.slots or ():
            if program in ("[", "test") and previous in ("-v", "-R"):
                raise scanner.refuse(index, f"follows '{previous}' of test, which bash evaluates as a variable name")
            if position < at + 1:
                continue  # the wrapper's own words were checked by _program_of (a value as a program is refused)
            kind = OPERAND if closed is not None and position > closed else (CONFIG if config else ARGUMENT)
            if program == "for":
                kind = ASSIGNMENT  # each item is assigned to the loop's variable
            out[index] = (kind, start, program)
        previous = text
    for position in range(0, at):
        for index, start in words[position].slots or ():
            out.setdefault(index, (ARGUMENT, start, _unquoted(words[0].text).rsplit("/", 1)[-1]))


def _options_end(words: list[_Word], at: int, program: str, scanner: _Scanner) -> int | None:
    """Index of the literal ``--`` ending the options of the program at ``at`` (None: none). For ``printf``,
    refuses a placeholder as the format or the ``-v`` name."""
    dashes = next(
        (j for j in range(at + 1, len(words)) if words[j].slots is None and _unquoted(words[j].text) == "--"), None
    )
    if program == "printf":
        j = at + 1
        while j < len(words):
            word = words[j]
            if word.slots:
                raise scanner.refuse(word.slots[0][0], "is printf's format or an option: write the format")
            text = _unquoted(word.text)
            if text == "--":
                j += 1
                break
            name_slots = words[j + 1].slots if j + 1 < len(words) else None
            if text == "-v":
                if name_slots:
                    raise scanner.refuse(name_slots[0][0], "is printf's -v name: bash evaluates it")
                j += 2
                continue
            if text.startswith("-") and len(text) > 1:
                j += 1
                continue
            break
        format_slots = words[j].slots if j < len(words) else None
        if format_slots:
            raise scanner.refuse(format_slots[0][0], "is printf's format: write the format in the recipe")
    return dashes


# ---------------------------------------------------------------------------------------------------
# the entry points


@lru_cache(maxsize=4096)
def analyze(template: str) -> tuple[Slot, ...]:
    """One :class:`Slot` per placeholder of ``template``, in order; raise :class:`ShellStructureError` saying
    why a placeholder stands where a quoted value is unsafe (or where the structure cannot be followed)."""
    names: list[tuple[str, tuple[str, ...]]] = []

    def sentinel(match: re.Match[str]) -> str:
        parts = [p.strip() for p in match.group(1).split("|")]
        names.append((parts[0], tuple(parts[1:])))
        return _SENTINEL

    if _SENTINEL in template:
        raise ShellStructureError("the command holds the character U+E000, which natbench reserves")
    text = _PLACEHOLDER.sub(sentinel, template)
    if not names:
        return ()
    scanner = _Scanner(text, names)
    try:
        scanner.parse(0, None)
    except ShellStructureError as exc:
        if str(exc).startswith("placeholder "):
            raise
        raise ShellStructureError(f"natbench cannot follow the shell structure of this command ({exc})") from None
    except IndexError:
        raise ShellStructureError("natbench cannot follow the shell structure of this command") from None
    except RecursionError:
        raise ShellStructureError(
            "natbench cannot follow the shell structure of this command (nested too deep)"
        ) from None
    kinds = _classify(scanner)
    if scanner.code_runner is not None:
        raise scanner.refuse(
            0,
            f"is in a command that runs {scanner.code_runner!r}, which builds and runs code from text "
            "(a value could reach it through a pipe, a variable or its arguments): no placeholder may stand in it",
        )
    slots = []
    for index, (name, filters) in enumerate(names):
        if index not in kinds:
            raise scanner.refuse(index, "stands where natbench cannot tell what the shell makes of it")
        kind, start, program, spliced = kinds[index]
        slots.append(Slot(name, filters, kind, start, program, spliced))
    return tuple(slots)


_SCRIPT_RUN = re.compile(r"(?:^|[;&|(){}\s])(?:\.|source|sh|bash|dash|ksh|zsh|mksh|ash)\s+(?!-)[^\s;&|]+", re.M)


def runs_script_file(template: str) -> bool:
    """Whether a command runs a shell script from a file (``sh FILE``, ``. FILE``): a file a recipe may have
    written values into."""
    return bool(_SCRIPT_RUN.search(_PLACEHOLDER.sub("x", template)))


def word_problem(slot: Slot, word: str, first: bool) -> str | None:
    """Why ``word`` (one rendered word of a value, ``first``: the first word) may not stand in ``slot``;
    None when it may."""
    at_start = slot.word_start or not first
    if (slot.kind in (ARGUMENT, CONFIG) or slot.spliced) and at_start and word.startswith("-"):
        return (
            f"starts with '-': {slot.program or 'the program'} would read it as an option "
            "(the recipe may pass it after '--')"
        )
    if slot.spliced and not TOKEN.fullmatch(word):
        return "stands inside $( ), whose output the shell splits and expands, and must be one plain token"
    if slot.kind in (CONFIG, ASSIGNMENT) and not TOKEN.fullmatch(word):
        where = "assigned to a shell variable" if slot.kind == ASSIGNMENT else f"written by {slot.program}"
        return f"is {where} and must be one plain token (letters, digits, '_', '.', ':', '/', ',', '+', '-')"
    if slot.kind == ASSIGNMENT and at_start and word.startswith("-"):
        return "starts with '-' and is assigned to a shell variable that later commands may pass as an option"
    return None
