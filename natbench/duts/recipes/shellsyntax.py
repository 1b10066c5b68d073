"""The shell language recipes are written in: a parser of a strict subset of the POSIX shell, read the same way by
dash and bash.

A recipe's command runs as ``sh -c TEXT`` on the DUT, where ``sh`` may be dash or bash. natbench reads every
command text with this parser before anything runs, so that it knows where each ``{{ placeholder }}`` stands
(:mod:`natbench.duts.recipes.shell` decides what may stand there). The parser accepts only constructs both shells
parse identically and that natbench can follow to the end; anything else is refused with what it is, never
guessed at:

* lists of pipelines joined by ``;``, newlines, ``&&`` and ``||``; ``!`` before a pipeline;
* simple commands: ``name=value`` assignments, words, and the redirections ``>``, ``>>``, ``<`` (to a word),
  ``N>&M`` (``N``, ``M`` in 1, 2), the file descriptors 0, 1 and 2 only;
* the compound commands ``{ ...; }``, ``if``/``elif``/``else``/``fi``, ``for NAME in WORDS; do ...; done``,
  ``while``/``until ...; do ...; done``;
* words made of plain characters (letters, digits, ``_ . / : , + @ % = ! -`` and ``#`` inside a word),
  ``'single quotes'``, ``"double quotes"`` (with ``\\$ \\" \\\\ \\``` escapes), ``$name``, ``${name}``, ``$$``,
  ``$?``, ``$(commands)`` and ``$((arithmetic))`` over numbers, variable names and operators without
  assignment; ``[``, ``]``, ``{`` and ``}`` only as words of their own.

Refused: backquotes, backslashes outside quotes, ``$'...'`` and ``$"..."``, ``${...}`` with an operator,
positional and special parameters other than ``$$`` and ``$?``, glob characters (``* ?``), ``~``, comments,
here-documents and here-strings, ``<>``, ``>|``, ``<&``, ``&>``, ``|&``, process substitution, background jobs
(``&``), subshells ``( )``, ``(( ))``, functions, ``case``, ``select``, ``[[ ]]``, ``time``, ``coproc``, and
any other character outside quotes (non-ASCII, control characters).

Placeholders are replaced by private-use characters (:func:`mark_placeholders`) before parsing, so a
placeholder is one indivisible part of a word; where it stands inside quotes, arithmetic, ``${...}`` or right
after a ``$``, the parser refuses it (its quoted value would not be one literal word there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PLACEHOLDERS = 1024
"""Most placeholders one command may hold."""
MAX_DEPTH = 24
"""Deepest nesting of compound commands and substitutions."""
MAX_COMMANDS = 256
"""Most simple commands in one command text (the shipped recipes have at most 8)."""

_BASE = 0xE000
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:,+@%=!-[]{}")
"""Characters a word may hold outside quotes (``[ ] { }`` only as words of their own, ``#`` inside a word)."""
_BRACKETS = frozenset("[]{}")
_METACHARACTERS = frozenset(" \t\n|&;<>()")
_OPERATORS = (
    "&&", "||", ";;", "|&", "&>>", "&>", "<<<", "<<-", "<<", ">>", "<>", ">|", ">&", "<&", ">(", "<(",
    "|", "&", ";", "<", ">", "(", ")",
)  # fmt: skip
_RESERVED = frozenset(("{", "}", "if", "then", "elif", "else", "fi", "for", "in", "do", "done", "while", "until"))
_UNREAD = {
    "case": "'case'",
    "esac": "'esac'",
    "select": "'select'",
    "function": "a function definition",
    "[[": "'[[ ]]' (bash evaluates its operands as arithmetic)",
    "]]": "'[[ ]]'",
    "time": "'time' (a keyword in bash, a program in dash)",
    "coproc": "'coproc'",
}
_REDIRECTIONS = {
    "<<": "a here-document (<<)",
    "<<-": "a here-document (<<-)",
    "<<<": "a here-string (<<<)",
    "<>": "the redirection <>",
    ">|": "the redirection >|",
    "<&": "the redirection <&",
    "&>": "'&>' (bash reads a redirection, dash a background job)",
    "&>>": "'&>>' (bash reads a redirection, dash a background job)",
    ">(": "process substitution >( )",
    "<(": "process substitution <( )",
}
_ARITHMETIC_TOKEN = re.compile(
    r"\s+|0[xX][0-9A-Fa-f]+|[0-9]+|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$?[A-Za-z_][A-Za-z0-9_]*"
    r"|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:()]"
)


class ShellSyntaxError(ValueError):
    """A construct outside the shell subset recipes are read in, or a placeholder where it cannot be one word.

    ``placeholder`` is the index of the placeholder the message is about (None: about the command).
    """

    def __init__(self, message: str, placeholder: int | None = None) -> None:
        super().__init__(message)
        self.placeholder = placeholder


# ---------------------------------------------------------------------------------------------------
# the syntax tree


@dataclass(frozen=True)
class Literal:
    """Literal text of a word: plain characters, or the contents of quotes."""

    text: str
    """The characters the shell passes on."""
    quoted: bool
    """From inside single or double quotes."""


@dataclass(frozen=True)
class PlaceholderPart:
    """A placeholder (rendered as one single-quoted word, or several for a list)."""

    index: int
    """Its position among the command's placeholders."""


@dataclass(frozen=True)
class Expansion:
    """``$name``, ``${name}``, ``$$`` or ``$?``."""

    name: str
    """The variable (``$`` and ``?`` for the special parameters)."""
    quoted: bool
    """Inside double quotes (no field splitting)."""


@dataclass(frozen=True)
class Substitution:
    """``$( commands )``: the commands' output."""

    body: Sequence
    """The commands."""
    quoted: bool
    """Inside double quotes (no field splitting)."""


@dataclass(frozen=True)
class Arithmetic:
    """``$(( expression ))``: the variables it names (the shell evaluates their values as arithmetic)."""

    names: tuple[str, ...]
    """Variables named in the expression."""
    quoted: bool
    """Inside double quotes."""


Part = Literal | PlaceholderPart | Expansion | Substitution | Arithmetic
"""One piece of a word."""


@dataclass(frozen=True)
class Word:
    """One shell word: its pieces, in order."""

    parts: tuple[Part, ...]
    """The pieces."""

    def literal(self) -> str | None:
        """The word's text when it is only literal text (quotes removed), else None."""
        if all(isinstance(p, Literal) for p in self.parts):
            return "".join(p.text for p in self.parts if isinstance(p, Literal))
        return None

    def plain(self) -> str | None:
        """The word's text when it is one unquoted literal (how reserved words and operators of ``test`` are
        recognised), else None."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Literal) and not self.parts[0].quoted:
            return self.parts[0].text
        return None


@dataclass(frozen=True)
class Redirect:
    """A redirection of a simple or compound command."""

    fd: int
    """The file descriptor redirected (0, 1 or 2)."""
    op: str
    """``>``, ``>>``, ``<`` or ``>&``."""
    target: Word | None
    """The file (None for ``>&``)."""
    dup: int | None = None
    """For ``>&``: the descriptor it becomes a copy of (1 or 2)."""


@dataclass(frozen=True)
class Simple:
    """A simple command."""

    assignments: tuple[tuple[str, Word], ...]
    """``name=value`` words before the command name."""
    words: tuple[Word, ...]
    """The command name and its arguments."""
    redirects: tuple[Redirect, ...]
    """Its redirections, in order."""


@dataclass(frozen=True)
class Compound:
    """``{ }``, ``if``, ``for``, ``while`` or ``until``."""

    kind: str
    """``group``, ``if``, ``for``, ``while`` or ``until``."""
    bodies: tuple[Sequence, ...]
    """The command lists it holds (conditions and bodies)."""
    redirects: tuple[Redirect, ...]
    """Its redirections (they apply to every command inside)."""
    variable: str | None = None
    """``for``: the loop variable."""
    items: tuple[Word, ...] = ()
    """``for``: the words assigned to the loop variable in turn."""


Command = Simple | Compound
"""One command of a pipeline."""


@dataclass(frozen=True)
class Pipeline:
    """Commands joined by ``|``."""

    commands: tuple[Command, ...]
    """The commands, from the first writer to the last reader."""


@dataclass(frozen=True)
class Sequence:
    """Pipelines joined by ``;``, newlines, ``&&`` or ``||`` (the order of execution does not matter to the
    checks, so the operators are not kept)."""

    pipelines: tuple[Pipeline, ...]
    """The pipelines."""


# ---------------------------------------------------------------------------------------------------
# placeholders


def mark_placeholders(template: str) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    """``template`` with each ``{{ name | filter }}`` replaced by one private-use character, and the placeholders'
    names and filters in order."""
    if any(_BASE <= ord(c) < _BASE + MAX_PLACEHOLDERS for c in template):
        raise ShellSyntaxError("the command holds a character of U+E000..U+E3FF, which natbench reserves")
    names: list[tuple[str, tuple[str, ...]]] = []

    def mark(match: re.Match[str]) -> str:
        if len(names) >= MAX_PLACEHOLDERS:
            raise ShellSyntaxError(f"more than {MAX_PLACEHOLDERS} placeholders in one command")
        parts = [p.strip() for p in match.group(1).split("|")]
        names.append((parts[0], tuple(parts[1:])))
        return chr(_BASE + len(names) - 1)

    return _PLACEHOLDER.sub(mark, template), names


def _placeholder(c: str) -> int | None:
    code = ord(c)
    return code - _BASE if _BASE <= code < _BASE + MAX_PLACEHOLDERS else None


def _first_placeholder(text: str) -> int | None:
    return next((i for i in map(_placeholder, text) if i is not None), None)


# ---------------------------------------------------------------------------------------------------
# the parser


@dataclass
class _Token:
    kind: str  # "word", "op", "newline", "io", "eof"
    word: Word | None = None
    op: str = ""
    number: int = 0

    def reserved(self) -> str | None:
        return self.word.plain() if self.kind == "word" and self.word is not None else None

    def shown(self) -> str:
        if self.kind == "word" and self.word is not None:
            return repr(self.word.literal() or "a word")
        return {"newline": "a newline", "eof": "the end", "io": f"'{self.number}>'"}.get(self.kind, repr(self.op))


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.pushed: _Token | None = None
        self.depth = 0
        self.commands = 0

    # -- tokens

    def peek(self) -> _Token:
        if self.pushed is None:
            self.pushed = self._lex()
        return self.pushed

    def take(self) -> _Token:
        token = self.peek()
        self.pushed = None
        return token

    def _lex(self) -> _Token:
        s, n = self.s, len(self.s)
        while self.i < n and s[self.i] in " \t":
            self.i += 1
        if self.i >= n:
            return _Token("eof")
        c = s[self.i]
        if c == "\n":
            self.i += 1
            return _Token("newline")
        if c == "#":
            raise ShellSyntaxError("natbench cannot read a comment in a command (write it in the YAML file)")
        if c in "|&;<>()":
            op = next(o for o in _OPERATORS if s.startswith(o, self.i))
            self.i += len(op)
            return _Token("op", op=op)
        word = self._word()
        text = word.plain()
        if text is not None and text.isdigit() and self.i < n and s[self.i] in "<>":
            return _Token("io", number=int(text) if len(text) < 4 else 9999)
        return _Token("word", word=word)

    def _word(self) -> Word:
        s, n = self.s, len(self.s)
        parts: list[Part] = []
        plain: list[str] = []

        def flush() -> None:
            if plain:
                parts.append(Literal("".join(plain), False))
                plain.clear()

        while self.i < n:
            c = s[self.i]
            if c in _METACHARACTERS:
                break
            index = _placeholder(c)
            if index is not None:
                flush()
                parts.append(PlaceholderPart(index))
                self.i += 1
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("natbench cannot read this command: a single quote is not closed")
                text = s[self.i + 1 : end]
                inside = _first_placeholder(text)
                if inside is not None:
                    raise ShellSyntaxError(_IN_QUOTES, inside)
                flush()
                parts.append(Literal(text, True))
                self.i = end + 1
            elif c == '"':
                flush()
                parts.extend(self._double())
            elif c == "$":
                flush()
                parts.append(self._dollar(False))
            elif c in _PLAIN or (c == "#" and (plain or parts)):
                plain.append(c)
                self.i += 1
            else:
                raise ShellSyntaxError(f"natbench cannot read {_character(c)} outside quotes in a command")
        flush()
        word = Word(tuple(parts))
        brackets = [p for p in parts if isinstance(p, Literal) and not p.quoted and _BRACKETS & set(p.text)]
        if brackets and (len(parts) != 1 or brackets[0].text not in ("[", "]", "{", "}", "[[", "]]")):
            shown = "".join(p.text if isinstance(p, Literal) else "..." for p in parts)
            raise ShellSyntaxError(
                f"natbench cannot read the word {shown[:40]!r}: '[', ']', '{{' and '}}' outside quotes stand only as "
                "words of their own (bash expands braces and globs in words)"
            )
        return word

    def _double(self) -> list[Part]:
        s, n = self.s, len(self.s)
        self.i += 1
        parts: list[Part] = []
        text: list[str] = []
        while True:
            if self.i >= n:
                raise ShellSyntaxError("natbench cannot read this command: a double quote is not closed")
            c = s[self.i]
            index = _placeholder(c)
            if index is not None:
                raise ShellSyntaxError(_IN_QUOTES, index)
            if c == '"':
                self.i += 1
                break
            if c == "\\":
                nxt = s[self.i + 1 : self.i + 2]
                if nxt in ("$", "`", '"', "\\"):
                    text.append(nxt)
                    self.i += 2
                    continue
                if nxt == "\n" or _placeholder(nxt or " ") is not None:
                    raise ShellSyntaxError("natbench cannot read a backslash before a line break or a placeholder")
                text.append(c)
                self.i += 1
                continue
            if c == "`":
                raise ShellSyntaxError("natbench cannot read backquotes (write $( ) instead)")
            if c == "$":
                if text or not parts:
                    parts.append(Literal("".join(text), True))
                    text.clear()
                parts.append(self._dollar(True))
                continue
            text.append(c)
            self.i += 1
        if text or not parts:
            parts.append(Literal("".join(text), True))
        return parts

    def _dollar(self, quoted: bool) -> Part:
        s = self.s
        nxt = s[self.i + 1 : self.i + 2]
        if s.startswith("$((", self.i):
            return self._arithmetic(quoted)
        if nxt == "(":
            self.i += 2
            self._enter()
            body = self.sequence(closing=")")
            self.depth -= 1
            token = self.take()
            if token.kind != "op" or token.op != ")":
                raise ShellSyntaxError("natbench cannot read this command: a '$(' is not closed")
            return Substitution(body, quoted)
        if nxt == "{":
            end = s.find("}", self.i)
            inner = s[self.i + 2 : end] if end > 0 else s[self.i + 2 :]
            index = _first_placeholder(inner)
            if index is not None:
                raise ShellSyntaxError("is inside ${...}, where a value is a pattern, an offset or a name", index)
            if end < 0 or not _NAME.fullmatch(inner):
                raise ShellSyntaxError("natbench cannot read ${...} with an operator (only ${name})")
            self.i = end + 1
            return Expansion(inner, quoted)
        match = _NAME.match(s, self.i + 1)
        if match:
            self.i = match.end()
            return Expansion(match.group(), quoted)
        if nxt in ("$", "?"):
            self.i += 2
            return Expansion(nxt, quoted)
        index = _placeholder(nxt) if nxt else None
        if index is not None:
            raise ShellSyntaxError("follows a '$': bash reads $'...' with escapes", index)
        if nxt in ("'", '"'):
            raise ShellSyntaxError(f"natbench cannot read ${nxt}...{nxt} quotes (bash and dash read them differently)")
        what = f"'${nxt}'" if nxt else "a '$' at the end"
        raise ShellSyntaxError(f"natbench cannot read {what} (only $name, ${{name}}, $$, $?, $( ) and $(( )))")

    def _arithmetic(self, quoted: bool) -> Arithmetic:
        s, n = self.s, len(self.s)
        j, depth = self.i + 3, 0
        while j < n:
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        if j + 1 >= n or s[j + 1] != ")":
            raise ShellSyntaxError("natbench cannot read this command: a '$((' is not closed by '))'")
        expression = s[self.i + 3 : j]
        self.i = j + 2
        index = _first_placeholder(expression)
        if index is not None:
            raise ShellSyntaxError(
                "is inside arithmetic $(( )): the shell evaluates the value as arithmetic (bash runs a[$(cmd)]); "
                "assign it to a variable first (v={{ n }}; ... $((v + 1)))",
                index,
            )
        if "++" in expression or "--" in expression:
            raise ShellSyntaxError("natbench cannot read '++' or '--' in $(( )) (they assign)")
        names: list[str] = []
        k = 0
        while k < len(expression):
            match = _ARITHMETIC_TOKEN.match(expression, k)
            if match is None:
                raise ShellSyntaxError(
                    f"natbench cannot read {_character(expression[k])} in $(( )) (numbers, variable names and "
                    "operators without assignment)"
                )
            token = match.group().lstrip("$").strip("{}")
            if _NAME.fullmatch(token):
                names.append(token)
            k = match.end()
        return Arithmetic(tuple(names), quoted)

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ShellSyntaxError(f"natbench cannot read this command: nested too deep (more than {MAX_DEPTH})")

    # -- commands

    def sequence(self, closing: str | None = None, ends: tuple[str, ...] = ()) -> Sequence:
        pipelines: list[Pipeline] = []
        while True:
            while self.peek().kind == "newline":
                self.take()
            token = self.peek()
            if token.kind == "eof":
                if closing is not None or ends:
                    expected = repr(closing) if closing else " or ".join(repr(e) for e in ends)
                    raise ShellSyntaxError(f"natbench cannot read this command: {expected} is missing (unbalanced)")
                break
            if token.kind == "op" and token.op == closing:
                break
            if token.reserved() in ends:
                break
            pipelines.extend(self._and_or())
            token = self.peek()
            if token.kind == "newline" or (token.kind == "op" and token.op == ";"):
                self.take()
                continue
            if token.kind == "op" and token.op == "&":
                raise ShellSyntaxError("natbench cannot read '&' (a background job)")
            if token.kind == "eof" or (token.kind == "op" and token.op == closing) or token.reserved() in ends:
                continue
            raise ShellSyntaxError(f"natbench cannot read this command: unexpected {token.shown()}")
        return Sequence(tuple(pipelines))

    def _and_or(self) -> list[Pipeline]:
        pipelines = [self._pipeline()]
        while self.peek().kind == "op" and self.peek().op in ("&&", "||"):
            self.take()
            while self.peek().kind == "newline":
                self.take()
            pipelines.append(self._pipeline())
        return pipelines

    def _pipeline(self) -> Pipeline:
        if self.peek().reserved() == "!":
            self.take()
        commands = [self._command()]
        while self.peek().kind == "op" and self.peek().op in ("|", "|&"):
            if self.take().op == "|&":
                raise ShellSyntaxError("natbench cannot read '|&' (bash only)")
            while self.peek().kind == "newline":
                self.take()
            commands.append(self._command())
        return Pipeline(tuple(commands))

    def _command(self) -> Command:
        token = self.peek()
        word = token.reserved()
        if word in _UNREAD:
            raise ShellSyntaxError(f"natbench cannot read {_UNREAD[word]}")
        if word in _RESERVED:
            return self._compound(word)
        if token.kind == "op" and token.op in ("(", ")"):
            raise ShellSyntaxError(
                "natbench cannot read '(' or ')' here: subshells, '(( ))' and functions are not read (use { ...; })"
            )
        return self._simple()

    def _expect(self, word: str) -> None:
        token = self.take()
        if token.reserved() != word:
            raise ShellSyntaxError(f"natbench cannot read this command: expected {word!r}, found {token.shown()}")

    def _compound(self, word: str) -> Compound:
        self.take()
        self._enter()
        bodies: list[Sequence] = []
        variable: str | None = None
        items: list[Word] = []
        if word == "{":
            bodies.append(self.sequence(ends=("}",)))
            self._expect("}")
            kind = "group"
        elif word == "if":
            kind = "if"
            bodies.append(self.sequence(ends=("then",)))
            self._expect("then")
            bodies.append(self.sequence(ends=("elif", "else", "fi")))
            while self.peek().reserved() == "elif":
                self.take()
                bodies.append(self.sequence(ends=("then",)))
                self._expect("then")
                bodies.append(self.sequence(ends=("elif", "else", "fi")))
            if self.peek().reserved() == "else":
                self.take()
                bodies.append(self.sequence(ends=("fi",)))
            self._expect("fi")
        elif word == "for":
            kind = "for"
            token = self.take()
            variable = token.reserved()
            if variable is None or not _NAME.fullmatch(variable):
                raise ShellSyntaxError("natbench cannot read this 'for': a variable name must follow it")
            self._expect("in")
            while self.peek().kind == "word":
                token = self.take()
                assert token.word is not None
                items.append(token.word)
            token = self.take()
            if token.kind != "newline" and not (token.kind == "op" and token.op == ";"):
                raise ShellSyntaxError(f"natbench cannot read this 'for': unexpected {token.shown()}")
            while self.peek().kind == "newline":
                self.take()
            self._expect("do")
            bodies.append(self.sequence(ends=("done",)))
            self._expect("done")
        elif word in ("while", "until"):
            kind = word
            bodies.append(self.sequence(ends=("do",)))
            self._expect("do")
            bodies.append(self.sequence(ends=("done",)))
            self._expect("done")
        else:
            raise ShellSyntaxError(f"natbench cannot read this command: unexpected {word!r}")
        self.depth -= 1
        redirects = self._redirects([])
        return Compound(kind, tuple(bodies), tuple(redirects), variable, tuple(items))

    def _redirects(self, into: list[Redirect]) -> list[Redirect]:
        while True:
            token = self.peek()
            if token.kind == "io" or (token.kind == "op" and token.op in (*_REDIRECTIONS, ">", ">>", "<", ">&")):
                into.append(self._redirect())
            else:
                return into

    def _redirect(self) -> Redirect:
        token = self.take()
        fd: int | None = None
        if token.kind == "io":
            fd = token.number
            token = self.take()
            if token.kind != "op":
                raise ShellSyntaxError("natbench cannot read this command: a redirection operator must follow")
        op = token.op
        if op in _REDIRECTIONS:
            raise ShellSyntaxError(f"natbench cannot read {_REDIRECTIONS[op]}")
        if op not in (">", ">>", "<", ">&"):
            raise ShellSyntaxError(f"natbench cannot read this command: unexpected {op!r}")
        default = 0 if op == "<" else 1
        fd = default if fd is None else fd
        if fd not in ((0,) if op == "<" else (1, 2)):
            raise ShellSyntaxError(f"natbench cannot read a redirection of file descriptor {fd} ('{fd}{op}')")
        target = self.take()
        if target.kind != "word" or target.word is None:
            raise ShellSyntaxError(f"natbench cannot read this command: {op!r} needs a file, found {target.shown()}")
        if op == ">&":
            dup = target.word.plain()
            if dup not in ("1", "2"):
                index = next((p.index for p in target.word.parts if isinstance(p, PlaceholderPart)), None)
                if index is not None:
                    raise ShellSyntaxError("follows '>&': bash reads a file there, dash a descriptor", index)
                raise ShellSyntaxError(f"natbench cannot read '>&' followed by {target.shown()} (only >&1 and >&2)")
            return Redirect(fd, op, None, int(dup))
        return Redirect(fd, op, target.word)

    def _simple(self) -> Simple:
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            token = self.peek()
            if token.kind == "io" or (token.kind == "op" and token.op in (*_REDIRECTIONS, ">", ">>", "<", ">&")):
                redirects.append(self._redirect())
            elif token.kind == "word" and token.word is not None:
                self.take()
                split = _assignment(token.word) if not words else None
                if split is not None:
                    assignments.append(split)
                else:
                    words.append(token.word)
            else:
                break
        if not (assignments or words or redirects):
            raise ShellSyntaxError(f"natbench cannot read this command: unexpected {self.peek().shown()}")
        self.commands += 1
        if self.commands > MAX_COMMANDS:
            raise ShellSyntaxError(f"natbench cannot read more than {MAX_COMMANDS} commands in one command text")
        return Simple(tuple(assignments), tuple(words), tuple(redirects))


_IN_QUOTES = "is inside shell quotes: natbench quotes every value itself, remove the quotes"


def _assignment(word: Word) -> tuple[str, Word] | None:
    first = word.parts[0] if word.parts else None
    if not isinstance(first, Literal) or first.quoted:
        return None
    match = _ASSIGNMENT.match(first.text)
    if match is None:
        return None
    rest = first.text[match.end() :]
    parts = ((Literal(rest, False),) if rest else ()) + word.parts[1:]
    return match.group(1), Word(parts)


def _character(c: str) -> str:
    names = {"\\": "a backslash", "`": "a backquote", "*": "'*' (a glob)", "?": "'?' (a glob)", "~": "'~'"}
    if c in names:
        return names[c]
    return repr(c) if c.isprintable() else f"the character U+{ord(c):04X}"


def parse(text: str) -> Sequence:
    """The commands of ``text`` (placeholders marked by :func:`mark_placeholders`); raise
    :class:`ShellSyntaxError` for anything outside the subset."""
    parser = _Parser(text)
    try:
        tree = parser.sequence()
    except RecursionError:
        raise ShellSyntaxError(f"natbench cannot read this command: nested too deep (more than {MAX_DEPTH})") from None
    token = parser.peek()
    if token.kind != "eof":
        raise ShellSyntaxError(f"natbench cannot read this command: unexpected {token.shown()}")
    return tree
