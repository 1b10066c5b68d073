"""Where a recipe's placeholders stand in a command, and what each place needs of a value.

Every value is rendered as one single-quoted shell word (:mod:`~natbench.duts.recipes.template`). That makes it
data only where the shell, and then the program, read that word as data. natbench does not look for the places
where this fails (there are too many ways to name a program or turn text into code); it allows a placeholder only
where it positively knows what the value is, and refuses every other place:

1. The command text is parsed (:mod:`~natbench.duts.recipes.shellsyntax`, a subset of the POSIX shell both dash
   and bash read alike); a construct outside it is refused, wherever it stands.
2. Every simple command names its program literally, and the program is one natbench knows
   (:mod:`~natbench.duts.recipes.programs`), which says what each argument is to it (data, text it writes, a word
   of its rule language, or the recipe's own text). A value may stand only in a *data* argument, in text
   ``echo``/``printf`` write, in ``nft``'s rule words, in the file of a redirection, in the value of an assignment
   to a lowercase variable, and in the word list of ``for``. ``ip netns exec NS ...`` runs the rest as a command of
   its own, read the same way.
3. A variable holding a value is followed to each use: a use is held to the same rules as a placeholder there,
   unquoted it must be one token (no splitting), in ``$(( ))`` a number, never a command name.
4. The text a value is written into (a file by ``>``/``>>``/``tee``, or ``nft``'s rule) is read as a
   configuration format (:mod:`~natbench.duts.recipes.formats`): the value must be one token there, may not start
   an option-like word with ``-``, and where a statement begins (the start of a line, or what the format says)
   only a number or an address may stand. Text a command writes goes only to natbench, ``/dev/null``, a file or
   ``tee``; a program that may print its arguments sends its output only to natbench or ``/dev/null``.

:func:`analyze` returns one :class:`Slot` per placeholder saying what its place needs; :func:`value_problem`
checks one rendered word against it, with the value's class (:mod:`~natbench.duts.recipes.values`): which
values can meet a need is a property of their declared type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from natbench.duts.recipes.formats import FORMATS, UNKNOWN, Format
from natbench.duts.recipes.programs import ECHO_OPTION, PROGRAMS, ProgramRefusal, Reading, Role
from natbench.duts.recipes.shellsyntax import (
    Arithmetic,
    Command,
    Compound,
    Expansion,
    Literal,
    Part,
    PlaceholderPart,
    Redirect,
    Sequence,
    ShellSyntaxError,
    Simple,
    Substitution,
    Word,
    mark_placeholders,
    parse,
)
from natbench.duts.recipes.values import FormatText, ValueClass, is_datum, is_number, is_phrase, is_token

_LOWERCASE = re.compile(r"[a-z][a-z0-9_]*")
_CONVERSION = re.compile(r"%(?:%|[-+ #0]*[0-9]*(?:\.[0-9]*)?([sdiuoxXc]))")


class ShellStructureError(ValueError):
    """A placeholder where a value is not data, or a command natbench cannot read (``placeholder``: the index of
    the placeholder the message is about, None: the command)."""

    def __init__(self, message: str, placeholder: int | None = None) -> None:
        super().__init__(message)
        self.placeholder = placeholder


@dataclass(frozen=True)
class Slot:
    """Where one placeholder of a command stands, and what the place needs of each word its value renders as."""

    name: str
    """The variable."""
    filters: tuple[str, ...]
    """Its filters, in order."""
    place: str
    """The place, for messages (``an argument of ip``, ``text echo writes``, ``assigned to v``)."""
    program: str
    """The program the value is given to (``the shell`` for assignments and redirections)."""
    word_start: bool
    """Nothing literal comes before the value in its shell word."""
    dash_first: bool = False
    """The first word may not start with ``-`` (it would be read as an option)."""
    dash_rest: bool = False
    """Further words (of a list) may not start with ``-``."""
    token: bool = False
    """Each word must be one plain token (it is re-read as text: written, or split by the shell)."""
    head: bool = False
    """The first word begins a statement of written text: it must be a datum (a number, an address)."""
    number: bool = False
    """It reaches arithmetic: it must be a number."""
    written: bool = False
    """Its text is written into a file or a rule language."""
    format: str | None = None
    """The declared format of that text (None: unknown)."""
    single: bool = False
    """It must render as one word (an assignment, a redirection's file)."""
    inside_string: bool = False
    """It is written inside a string the recipe's own text opened (a ``text`` value's quotes would close it)."""


@dataclass
class _Needs:
    place: str = ""
    program: str = ""
    dash_first: bool = False
    dash_rest: bool = False
    token: bool = False
    head: bool = False
    number: bool = False
    written: bool = False
    format: str | None = None
    single: bool = False
    inside_string: bool = False
    word_start: bool = True
    formats: set[str] = field(default_factory=set)

    def merge(self, other: _Needs) -> None:
        if not self.place:
            self.place, self.program, self.word_start = other.place, other.program, other.word_start
        for name in ("dash_first", "dash_rest", "token", "head", "number", "written", "single", "inside_string"):
            setattr(self, name, getattr(self, name) or getattr(other, name))
        if other.written:
            self.formats.add(other.format or "")


class _Flow:
    """Where a command's output (or errors) go: ``natbench`` (captured), ``null``, ``file``, ``pipe`` (to the next
    command of the pipeline), ``capture`` (``$( )``)."""

    def __init__(self, kind: str, consumer: Command | None = None) -> None:
        self.kind = kind
        self.consumer = consumer
        self.arrived: list[object] = []  # carriers of value text written into the pipe

    @property
    def natbench(self) -> bool:
        return self.kind in ("natbench", "null")


_NATBENCH = _Flow("natbench")
_NULL = _Flow("null")


class _TextWalk:
    """The text a command writes, followed to tell where a value written into it stands."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self.line = ""
        self.in_string = False  # inside a "..." the recipe's own text opened
        self.unsure = False  # after text natbench cannot see: maybe inside one

    def literal(self, text: str) -> None:
        escaped = False
        for c in text:
            if escaped:
                escaped = False
            elif c == "\\" and self.in_string:
                escaped = True
            elif c == '"':
                self.in_string = not self.in_string
        if "\n" in text:
            self.line = text.rsplit("\n", 1)[1]
        else:
            self.line += text

    def unknown(self) -> None:
        """Text natbench cannot see (a substitution's output, a variable): it may end a line, or open a string."""
        self.line = ""
        self.unsure = True

    def value(self) -> tuple[bool, bool, bool]:
        """(begins a statement, begins a word, may be inside a string) for a value written here."""
        head = self.fmt.starts_statement(self.line.rstrip(" \t"))
        start = self.line == "" or self.line[-1] in " \t"
        self.line += "v"
        return head, start, self.in_string or self.unsure


Carrier = int | str
"""A placeholder (its index) or a variable (its name) that may carry a value."""


class _Analysis:
    def __init__(self, names: list[tuple[str, tuple[str, ...]]], fmt: str | None) -> None:
        self.names = names
        self.fmt = FORMATS[fmt] if fmt is not None else UNKNOWN
        self.needs = [_Needs() for _ in names]
        self.seen = [False] * len(names)
        self.sources: dict[str, set[Carrier]] = {}
        self.expanded: set[str] = set()
        self.uses: list[tuple[str, _Needs | str]] = []
        self.refusals: list[tuple[list[Carrier], str]] = []

    # -- placeholders and variables

    def shown(self, index: int) -> str:
        name, filters = self.names[index]
        return "{{ " + " | ".join((name, *filters)) + " }}"

    def refuse(self, index: int, why: str) -> ShellStructureError:
        return ShellStructureError(f"placeholder {self.shown(index)} {why}", index)

    def need(self, carrier: Carrier, needs: _Needs | str) -> None:
        """What a carrier's place needs (or, a string, why a value may not stand there)."""
        if isinstance(carrier, str):
            self.expanded.add(carrier)
            self.uses.append((carrier, needs))
            return
        self.seen[carrier] = True
        if isinstance(needs, str):
            raise self.refuse(carrier, needs)
        self.needs[carrier].merge(needs)

    def refuse_carriers(self, carriers: list[Carrier], why: str) -> None:
        """Refuse the place if any of ``carriers`` holds a value (decided once every variable is known)."""
        if carriers:
            self.refusals.append((carriers, why))

    def closure(self, carriers: list[Carrier] | set[Carrier]) -> set[int]:
        """The placeholders whose values may reach ``carriers``."""
        out: set[int] = set()
        todo, done = list(carriers), set()
        while todo:
            carrier = todo.pop()
            if isinstance(carrier, int):
                out.add(carrier)
            elif carrier not in done:
                done.add(carrier)
                todo.extend(self.sources.get(carrier, ()))
        return out

    def resolve(self) -> None:
        unknown = sorted(self.expanded - set(self.sources))
        if unknown:
            raise ShellStructureError(
                f"natbench cannot read ${unknown[0]}: a command expands only variables it assigns itself ($$ and $? "
                "aside); any other comes from the environment or the shell (bash's $_ is the last argument of the "
                "command before)"
            )
        for variable, needs in self.uses:
            for index in sorted(self.closure([variable])):
                if isinstance(needs, str):
                    raise self.refuse(index, f"(through ${variable}) {needs}")
                self.needs[index].merge(needs)
        for carriers, why in self.refusals:
            reached = sorted(self.closure(carriers))
            if reached:
                raise self.refuse(reached[0], why)

    # -- the walk

    def sequence(self, seq: Sequence, out: _Flow, err: _Flow) -> None:
        for pipeline in seq.pipelines:
            stdin: list[object] = []
            commands = pipeline.commands
            for k, cmd in enumerate(commands):
                flow = _Flow("pipe", commands[k + 1]) if k + 1 < len(commands) else out
                self.command(cmd, flow, err, stdin)
                stdin = flow.arrived  # value text the next command reads (after the last: nothing reads it here)

    def command(self, cmd: Command, out: _Flow, err: _Flow, stdin: list[object]) -> None:
        fds = self.redirects(cmd.redirects, out, err)
        if isinstance(cmd, Compound):
            self.refuse_carriers(_flat(stdin), "is written into the input of a compound command: only tee reads it")
            if cmd.kind == "for" and cmd.variable is not None:
                if not _LOWERCASE.fullmatch(cmd.variable):
                    raise ShellStructureError(
                        f"natbench cannot read 'for {cmd.variable}': a recipe assigns only lowercase variables "
                        "of its own"
                    )
                self.assign_words(cmd.variable, cmd.items, f"a word of for {cmd.variable}'s list")
            for body in cmd.bodies:
                self.sequence(body, fds[1], fds[2])
            return
        self.simple(cmd, fds, stdin)

    def redirects(self, redirects: tuple[Redirect, ...], out: _Flow, err: _Flow) -> dict[int, _Flow]:
        fds = {1: out, 2: err}
        for r in redirects:
            if r.op == ">&" and r.dup is not None:
                fds[r.fd] = fds[r.dup]
                continue
            assert r.target is not None
            where = "the file of a redirection"
            for part, _glued in _pieces(r.target):
                self.part(part, _Needs(place=where, program="the shell", single=True), where, unquoted_token=True)
            if r.op in (">", ">>"):
                fds[r.fd] = _NULL if r.target.literal() == "/dev/null" else _Flow("file")
        return fds

    def simple(self, cmd: Simple, fds: dict[int, _Flow], stdin: list[object]) -> None:
        if cmd.assignments and cmd.words:
            for _name, word in cmd.assignments:
                for part, _glued in _pieces(word):
                    if isinstance(part, PlaceholderPart):
                        raise self.refuse(part.index, "is assigned in front of a command, into its environment")
            name = cmd.assignments[0][0]
            raise ShellStructureError(
                f"natbench cannot read '{name}=... {cmd.words[0].literal() or '...'}': a variable put into one "
                "command's environment can change what that program runs; assign it on its own line"
            )
        for name, word in cmd.assignments:
            if not _LOWERCASE.fullmatch(name):
                index = next((p.index for p, _ in _pieces(word) if isinstance(p, PlaceholderPart)), None)
                why = (
                    f"assigns the variable {name}: a recipe assigns only lowercase variables of its own "
                    "(uppercase names belong to the environment and the shell: PATH, IFS, ...)"
                )
                if index is not None:
                    raise self.refuse(index, f"is {why}")
                raise ShellStructureError(f"natbench cannot read a command that {why}")
            self.assign_words(name, (word,), f"assigned to {name}", single=True)
        if cmd.words:
            self.invocation(list(cmd.words), fds, stdin)
        else:
            self.refuse_carriers(_flat(stdin), "is written into the input of an assignment")

    def assign_words(self, variable: str, words: tuple[Word, ...], where: str, single: bool = False) -> None:
        sources = self.sources.setdefault(variable, set())
        for word in words:
            for part, _glued in _pieces(word):
                if isinstance(part, PlaceholderPart):
                    self.need(part.index, _Needs(place=where, program="the shell", single=single))
                    sources.add(part.index)
                elif isinstance(part, Expansion) and part.name not in ("$", "?"):
                    sources.add(part.name)
                    self.expanded.add(part.name)
                    if not single and not part.quoted:
                        self.need(part.name, _Needs(place=where, program="the shell", token=True))
                else:
                    self.part(part, _Needs(place=where), where)

    def part(self, part: Part, needs: _Needs, where: str, unquoted_token: bool = False) -> None:
        """Apply a place's needs to one part of a word (substitutions are read as commands of their own)."""
        if isinstance(part, PlaceholderPart):
            self.need(part.index, needs)
        elif isinstance(part, Expansion):
            if part.name in ("$", "?"):
                return
            use = _Needs(**{**needs.__dict__, "formats": set()})
            use.token = use.token or (unquoted_token and not part.quoted)
            self.need(part.name, use)
        elif isinstance(part, Substitution):
            self.sequence(part.body, _Flow("capture"), _NATBENCH)
        elif isinstance(part, Arithmetic):
            for name in part.names:
                self.need(name, _Needs(place="arithmetic $(( ))", program="the shell", number=True))

    def program(self, word: Word) -> str:
        text = word.literal()
        if text is None:
            for part, _glued in _pieces(word):
                if isinstance(part, PlaceholderPart):
                    raise self.refuse(part.index, "is the command name: a value would choose the program that runs")
            raise ShellStructureError(
                "natbench cannot read a command whose name is not written in the recipe ($name or $( )): "
                "its value would choose the program that runs"
            )
        if "/" in text:
            raise ShellStructureError(
                f"natbench cannot read a command naming its program by a path ({text[:60]!r}): "
                "recipes name programs natbench knows by name"
            )
        if text not in PROGRAMS:
            raise ShellStructureError(
                f"runs {text[:60]!r}, a program whose arguments natbench does not know: a recipe runs only the "
                "programs listed under 'Programs' in docs/recipes.md"
            )
        return text

    def invocation(self, words: list[Word], fds: dict[int, _Flow], stdin: list[object]) -> None:
        program = self.program(words[0])
        try:
            reading = PROGRAMS[program].read(words)
        except ProgramRefusal as exc:
            word = words[exc.index]
            index = next((p.index for p, _ in _pieces(word) if isinstance(p, PlaceholderPart)), None)
            message = str(exc)
            if message.startswith(("is ", "stands ")):
                if index is not None:
                    raise self.refuse(index, message) from None
                message = f"'{_shown_word(word)}' {message}"
            raise ShellStructureError(f"natbench cannot read this use of {program}: {message}") from None
        end = reading.wrapped if reading.wrapped is not None else len(words)
        carriers: list[Carrier] = []
        for i in range(1, end):
            carriers += self.argument(words[i], reading.roles[i - 1], program)
        carriers += self.written(program, words[1:end], reading, fds)
        if not fds[2].natbench:
            self.refuse_carriers(carriers, f"is an argument of {program}, whose error messages go to a file or pipe")
        if reading.wrapped is not None:
            self.invocation(words[reading.wrapped :], fds, stdin)
            return
        if reading.copies_input:
            self.copy(_flat(stdin), fds[1])
        else:
            self.refuse_carriers(
                _flat(stdin), f"is written into the input of {program}: only tee reads text with a value"
            )
        if reading.prints_arguments and not fds[1].natbench and not _emits(reading):  # errors: refused above
            self.refuse_carriers(
                carriers,
                f"is an argument of {program}, which may print it: its output goes only to natbench or /dev/null",
            )

    def argument(self, word: Word, role: Role, program: str) -> list[Carrier]:
        """Apply a role's needs to a word; the carriers it holds."""
        carriers = _carriers(word)
        for part, glued in _pieces(word):
            if role.kind == "literal":
                if isinstance(part, Arithmetic):
                    self.part(part, _Needs(), "")
                if isinstance(part, PlaceholderPart):
                    raise self.refuse(part.index, f"is {role.why}: the recipe's own text goes there, not a value")
                if isinstance(part, Expansion | Substitution) and not (
                    isinstance(part, Expansion) and part.name in ("$", "?")
                ):
                    if isinstance(part, Expansion):
                        self.need(part.name, f"is {role.why}: the recipe's own text goes there, not a value")
                    else:
                        raise ShellStructureError(
                            f"natbench cannot read $( ) as {role.why}: the recipe's own text goes there"
                        )
                continue
            if role.kind != "data":
                if isinstance(part, Substitution | Arithmetic):
                    self.part(part, _Needs(), "")
                continue  # text a program writes and rule words: needs set by written()
            place = f"an argument of {program}"
            needs = _Needs(
                place=place,
                program=program,
                dash_first=role.options and not glued,
                dash_rest=role.options,
                word_start=not glued,
            )
            self.part(part, needs, place, unquoted_token=True)
        return carriers

    def written(self, program: str, words: list[Word], reading: Reading, fds: dict[int, _Flow]) -> list[Carrier]:
        """Needs of values in text ``echo``/``printf`` write or ``nft`` parses; check where the text goes."""
        roles = reading.roles
        emitted = [w for w, r in zip(words, roles, strict=False) if r.kind == "emit"]
        ruled = [w for w, r in zip(words, roles, strict=False) if r.kind == "rule"]
        if ruled:
            walk = _TextWalk(FORMATS["nft"])
            for n, word in enumerate(ruled):
                if n:
                    walk.literal(" ")
                self.text_word(word, walk, "nft", program, "a word of nft's rule")
        if not emitted:
            return []
        carriers = [c for w in emitted for c in _carriers(w)]
        out = fds[1]
        if out.kind == "capture":
            self.refuse_carriers(carriers, f"is written by {program} into the output of $( ): assign it directly")
            return carriers
        if out.kind == "pipe":
            consumer = out.consumer
            if not (isinstance(consumer, Simple) and _effective(consumer) == "tee"):
                self.refuse_carriers(
                    carriers, f"is written by {program} into a pipe: natbench knows only tee as a reader of its text"
                )
            out.arrived.append(carriers)
        if out.natbench:
            for word in emitted:
                for part, _glued in _pieces(word):
                    self.part(part, _Needs(place=f"text {program} prints", program=program), "")
            return carriers
        fmt_name = self.fmt.name if self.fmt is not UNKNOWN else None
        place = f"text {program} writes"
        if reading.printf_format is not None:
            head, start, inside = self.printf_format(reading.printf_format, bool(carriers))
            for word in emitted:
                for part, glued in _pieces(word):
                    needs = _Needs(
                        place=place,
                        program=program,
                        written=True,
                        format=fmt_name,
                        token=True,
                        head=head and not glued,
                        dash_first=start and not glued,
                        dash_rest=start,
                        word_start=not glued,
                        inside_string=inside or glued,
                    )
                    self.part(part, needs, place)
            return carriers
        walk = _TextWalk(self.fmt)
        skipping = True
        first = True
        for word in emitted:
            if skipping and ECHO_OPTION.fullmatch(word.literal() or ""):  # quoted or not: echo reads it
                continue
            skipping = False
            if not first:
                walk.literal(" ")
            first = False
            self.text_word(word, walk, fmt_name, program, place)
        return carriers

    def text_word(self, word: Word, walk: _TextWalk, fmt: str | None, program: str, place: str) -> None:
        for part in word.parts:
            if isinstance(part, Literal):
                if "\\" in part.text and program == "echo":
                    walk.unknown()  # dash's echo reads backslash escapes
                else:
                    walk.literal(part.text)
                continue
            if isinstance(part, Arithmetic):  # read with its argument (argument()): here, the digits it writes
                walk.literal("0")
                continue
            if isinstance(part, Substitution):  # its command read with its argument: here, text natbench cannot see
                walk.unknown()
                continue
            head, start, inside = walk.value()
            needs = _Needs(
                place=place,
                program=program,
                written=True,
                format=fmt,
                token=True,
                head=head,
                dash_first=start,
                dash_rest=True,
                word_start=start,
                inside_string=inside,
            )
            self.part(part, needs, place, unquoted_token=True)
            if isinstance(part, Expansion):
                walk.unknown()

    def printf_format(self, word: Word, checked: bool) -> tuple[bool, bool, bool]:
        """(a conversion begins a statement, one begins a word, one may be inside a string) in printf's format."""
        text = word.literal() or ""
        walk = _TextWalk(self.fmt)
        head = start = inside = False
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\\":
                escape = text[i + 1 : i + 2]
                if escape == "n":
                    walk.literal("\n")
                elif escape == "t":
                    walk.literal(" ")
                elif escape in ("\\", '"', "'"):
                    walk.literal(escape)
                else:
                    walk.unknown()
                i += 2
                continue
            if c == "%":
                match = _CONVERSION.match(text, i)
                if match is None:
                    if checked:
                        raise ShellStructureError(
                            f"natbench cannot read printf's format {text[:40]!r}: with values it takes only %s, %d, "
                            "%i, %u, %o, %x, %X, %c (with flags and widths) and %%"
                        )
                    walk.unknown()
                    i += 1
                    continue
                if match.group(1) is None:
                    walk.literal("%")
                else:
                    h, s, q = walk.value()
                    head, start, inside = head or h, start or s, inside or q
                i = match.end()
                continue
            walk.literal(c)
            i += 1
        return head, start, inside

    def copy(self, carriers: list[Carrier], out: _Flow) -> None:
        """``tee`` copying value text to its output."""
        if not carriers:
            return
        if out.kind == "capture":
            self.refuse_carriers(carriers, "is copied by tee into the output of $( )")
        elif out.kind == "pipe":
            consumer = out.consumer
            if not (isinstance(consumer, Simple) and _effective(consumer) == "tee"):
                self.refuse_carriers(carriers, "is copied by tee into a pipe: natbench knows only tee as its reader")
            out.arrived.append(carriers)


def _emits(reading: Reading) -> bool:
    return any(r.kind == "emit" for r in reading.roles)


def _flat(stdin: list[object]) -> list[Carrier]:
    out: list[Carrier] = []
    for item in stdin:
        out += item if isinstance(item, list) else []
    return out


def _carriers(word: Word) -> list[Carrier]:
    out: list[Carrier] = []
    for part in word.parts:
        if isinstance(part, PlaceholderPart):
            out.append(part.index)
        elif isinstance(part, Expansion) and part.name not in ("$", "?"):
            out.append(part.name)
    return out


def _pieces(word: Word) -> list[tuple[Part, bool]]:
    """The parts of a word, each with whether text known to be non-empty comes before it in the word."""
    out: list[tuple[Part, bool]] = []
    glued = False
    for part in word.parts:
        out.append((part, glued))
        if (isinstance(part, Literal) and part.text) or isinstance(part, Arithmetic):
            glued = True
    return out


def _shown_word(word: Word) -> str:
    shown = []
    for part in word.parts:
        if isinstance(part, Literal):
            shown.append(part.text)
        elif isinstance(part, Expansion):
            shown.append(f"${part.name}")
        else:
            shown.append("$(...)" if isinstance(part, Substitution) else "...")
    return "".join(shown)[:40]


def _effective(cmd: Simple) -> str | None:
    """The program a simple command ends up running (through ``ip netns exec``), if natbench knows it."""
    words = list(cmd.words)
    while words:
        name = words[0].literal()
        if name not in PROGRAMS:
            return None
        try:
            reading = PROGRAMS[name].read(words)
        except ProgramRefusal:
            return None
        if reading.wrapped is None:
            return name
        words = words[reading.wrapped :]
    return None


@lru_cache(maxsize=4096)
def analyze(template: str, fmt: str | None = None) -> tuple[Slot, ...]:
    """One :class:`Slot` per placeholder of ``template``, in order (``fmt``: the declared format of text the command
    writes); raise :class:`ShellStructureError` naming the first placeholder that stands where natbench does not
    know its value to be data, or the construct it cannot read."""
    try:
        text, names = mark_placeholders(template)
        tree = parse(text)
    except ShellSyntaxError as exc:
        if exc.placeholder is not None:
            name, filters = names[exc.placeholder]
            shown = "{{ " + " | ".join((name, *filters)) + " }}"
            raise ShellStructureError(f"placeholder {shown} {exc}", exc.placeholder) from None
        raise ShellStructureError(str(exc)) from None
    analysis = _Analysis(names, fmt)
    analysis.sequence(tree, _NATBENCH, _NATBENCH)
    analysis.resolve()
    slots = []
    for index, (name, filters) in enumerate(names):
        if not analysis.seen[index]:
            raise analysis.refuse(index, "stands where natbench cannot tell what the shell makes of it")
        n = analysis.needs[index]
        fmt_name = next(iter(n.formats)) if len(n.formats) == 1 else (None if not n.formats else "")
        slots.append(
            Slot(
                name,
                filters,
                n.place,
                n.program,
                n.word_start,
                dash_first=n.dash_first,
                dash_rest=n.dash_rest,
                token=n.token,
                head=n.head,
                number=n.number,
                written=n.written,
                format=fmt_name or None,
                single=n.single,
                inside_string=n.inside_string,
            )
        )
    return tuple(slots)


def command_slots(
    run: str, netns: str | None = None, fmt: str | None = None
) -> tuple[tuple[Slot, ...], tuple[Slot, ...]]:
    """The slots of a command's ``run`` text and of its ``netns`` template, read together as the shell runs them
    (``ip netns exec NS RUN``)."""
    if netns is None:
        return analyze(run, fmt), ()
    slots = analyze(f"ip netns exec {netns} {run}", fmt)
    count = len(mark_placeholders(netns)[1])
    return slots[count:], slots[:count]


def value_problem(slot: Slot, word: str, first: bool, value_class: ValueClass) -> str | None:
    """Why ``word`` (one rendered word of a value of ``value_class``; ``first``: its first word) may not stand in
    ``slot``; None when it may."""
    if isinstance(word, FormatText):
        if slot.format != word.file_format:  # a place where nothing is written has no format
            return f"is text for {word.file_format} and stands where no {word.file_format} text is written"
        try:
            FORMATS[word.file_format].write(str(word))
        except ValueError as exc:
            return str(exc)
        if slot.head and first:
            return "begins a statement of the text written: only a number or an address may"
        if slot.inside_string:
            return "is written inside a string the recipe's own text opened: its quotes would close it"
        return None
    if not is_phrase(word):
        return (
            "holds characters natbench never puts into a command (a value is letters, digits, "
            "'_', '.', ':', '/', ',', '+', '-' and single blanks; text for a file format is a text parameter)"
        )
    if slot.token and not is_token(word):
        return f"stands in {slot.place}, which is read again as text, and must be one plain token (no blank)"
    if slot.number and not is_number(word):
        return "reaches arithmetic $(( )) and must be a number"
    if slot.head and first and not is_datum(word, value_class):
        return f"begins a statement of {slot.place} (a line of its own): only a number or an address may stand there"
    at_start = slot.dash_first if first else slot.dash_rest
    if at_start and word.startswith("-"):
        program = slot.program or "the program"
        return f"starts with '-': {program} would read it as an option (the recipe may pass it after '--')"
    return None
