"""The programs recipes may run, and how each reads its arguments: natbench's positive knowledge of them.

A command of a recipe names its program literally (no path, no variable, no placeholder) and the program must be
in :data:`PROGRAMS`. For each, :meth:`Program.read` says what every argument word is to it:

* ``data``: a datum the program uses as such (an interface, an address, a file name, a number); a value may
  stand there (never starting with ``-`` before a ``--``, where it would be an option, nor glued into an option word
  but as the argument of ``--name=``);
* ``emit``: text the program writes to its output (``echo``, ``printf``'s arguments): the value's text reaches
  whatever the output goes to;
* ``rule``: a word of a rule language the program parses (``nft`` joins its arguments into a rule);
* ``literal``: a place that must be the recipe's own text (a subcommand, an option, ``printf``'s format, an
  interpreter's program): no value, no variable.

Some programs run another command (only ``ip netns exec NS PROGRAM ...`` is known: the rest is read as a command
of its own); a program that runs its arguments, its input or a file as code in any other way is simply not in the
table, whatever it is called. The table also says whether a program may print its arguments
(:attr:`Reading.prints_arguments`: its output with a value then goes only to natbench) and whether it copies
its input into files (``tee``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile

from natbench.duts.recipes.shellsyntax import Expansion, Literal, PlaceholderPart, Substitution, Word


@dataclass(frozen=True)
class Role:
    """What one argument word is to its program."""

    kind: str
    """``data``, ``emit``, ``rule`` or ``literal``."""
    why: str = ""
    """For ``literal``: what the place is (messages say the value may not stand there because of it)."""
    options: bool = True
    """For ``data`` and ``rule``: a word starting with ``-`` here would be read as an option."""


DATA = Role("data")
OPERAND = Role("data", options=False)
EMIT = Role("emit")
RULE = Role("rule")


@dataclass
class Reading:
    """How a program reads the words of one invocation."""

    roles: list[Role]
    """One role per argument word (``words[1:]``)."""
    prints_arguments: bool = True
    """The program may print its arguments (to stdout or stderr)."""
    copies_input: bool = False
    """``tee``: copies its input into files and to its output."""
    wrapped: int | None = None
    """``ip netns exec NS ...``: index (in the words) of the command it runs."""
    format_statements: str | None = None
    """For ``rule`` words: the format of the rule text (``nft``)."""
    printf_format: Word | None = None
    """``printf``: its format word."""


class ProgramRefusal(ValueError):
    """A program used in a way natbench does not know (``index``: the word, 0 the program)."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _literal(word: Word) -> str | None:
    return word.literal()


def _carries(word: Word) -> bool:
    """Whether a word may carry a value (a placeholder or a variable)."""
    return any(isinstance(p, PlaceholderPart | Expansion | Substitution) for p in word.parts)


def _options_end(words: Sequence[Word]) -> int:
    """Index of the literal ``--`` among the arguments (``len(words)``: none; ``words[0]`` is a program's name)."""
    return next((i for i, w in enumerate(words) if w.plain() == "--"), len(words))


def _leading_text(word: Word) -> str:
    """The literal text a word begins with, quotes removed, up to its first placeholder or variable: what a
    program sees first of it (``'-D'x`` and ``-{{ v }}`` both begin with ``-``)."""
    return "".join(p.text for p in takewhile(lambda p: isinstance(p, Literal), word.parts) if isinstance(p, Literal))


@dataclass(frozen=True)
class Program:
    """A program natbench knows: its name and how it reads arguments."""

    name: str
    """The command name."""
    doc: str
    """What it is, for the documentation's table."""
    kind: str = "data"
    """``data`` (every argument a datum), ``literal`` (no value in any argument), ``operands`` (values only as
    operands, options from :attr:`options`), ``getopt`` (values only after the option letters of :attr:`options`,
    or as operands), or one of the special readers (``echo``, ``printf``, ``tee``, ``nft``, ``ip``, ``iptables``,
    ``sysctl``, ``awk``, ``perl``)."""
    prints: bool = True
    """It may print its arguments."""
    options: frozenset[str] = frozenset()
    """``operands``: the options it may be given (none takes an argument); ``getopt``: the options whose argument
    may be a value."""
    literal_options: frozenset[str] = frozenset()
    """``getopt``: the options whose argument is the recipe's own text."""
    flags: str = ""
    """``getopt``: the option letters that take no argument."""

    def read(self, words: Sequence[Word]) -> Reading:
        """The role of every argument of ``words`` (``words[0]`` is this program); raise :class:`ProgramRefusal`
        for a use natbench does not know."""
        reader = getattr(self, f"_read_{self.kind}")
        reading: Reading = reader(words)
        return reading

    # -- the readers

    def _data_roles(self, words: Sequence[Word], start: int = 1) -> list[Role]:
        """Data, read for options before ``--``; there a value may be glued into an option word only as the argument
        of ``--name=`` (in ``-{{ v }}`` or ``-o{{ v }}`` its letters could be options natbench cannot know)."""
        end = _options_end(words)
        self._no_value_in_options(words[:end], start)
        return [DATA if i < end else OPERAND for i in range(start, len(words))]

    def _no_value_in_options(self, words: Sequence[Word], start: int = 1) -> None:
        """Refuse a value glued into an option word of ``words`` other than as the argument of ``--name=``."""
        for i in range(start, len(words)):
            lead = _leading_text(words[i])
            if lead.startswith("-") and _carries(words[i]) and not (lead.startswith("--") and "=" in lead):
                raise ProgramRefusal(f"stands in an option of {self.name}: a value may follow only '--name=' there", i)

    def _read_data(self, words: Sequence[Word]) -> Reading:
        return Reading(self._data_roles(words), prints_arguments=self.prints)

    def _read_test(self, words: Sequence[Word]) -> Reading:
        """Every operand is data; a value may not be glued after a '-' (``-{{ v }}`` could choose the operator)."""
        for i in range(1, len(words)):
            if _carries(words[i]) and _leading_text(words[i]).startswith("-"):
                raise ProgramRefusal(f"stands in an operator of {self.name}: glued to a '-' it could choose one", i)
        return Reading([DATA] * (len(words) - 1), prints_arguments=False)

    def _read_literal(self, words: Sequence[Word]) -> Reading:
        why = f"an argument of {self.name}, which takes no value"
        return Reading([Role("literal", why)] * (len(words) - 1), prints_arguments=self.prints)

    def _read_operands(self, words: Sequence[Word]) -> Reading:
        end = _options_end(words)
        for i, word in enumerate(words[1:end], 1):
            text = _literal(word)
            if text is not None and text.startswith("-") and text not in self.options:
                allowed = ", ".join(sorted(self.options))
                raise ProgramRefusal(f"{self.name} is given the option {text!r} (natbench knows: {allowed})", i)
        return Reading(self._data_roles(words), prints_arguments=self.prints)

    def _read_echo(self, words: Sequence[Word]) -> Reading:
        """Every argument is text echo writes; a value may not be glued to the start of an option (``-{{ v }}``,
        ``-n{{ v }}``) where echo still reads options: its letters would choose -n or -e."""
        for i in range(1, len(words)):
            if ECHO_OPTION.fullmatch(_literal(words[i]) or ""):
                continue
            if _carries(words[i]) and _ECHO_OPTION_START.fullmatch(_leading_text(words[i])):
                raise ProgramRefusal("stands in echo's options: glued to a '-' its letters could choose -n or -e", i)
            break
        return Reading([EMIT] * (len(words) - 1), prints_arguments=True)

    def _read_printf(self, words: Sequence[Word]) -> Reading:
        fmt = _literal(words[1]) if len(words) > 1 else None
        if fmt is None or fmt.startswith("-"):
            raise ProgramRefusal(
                "printf's format must be the recipe's own text, first (no option, no value)", min(1, len(words) - 1)
            )
        why = "printf's format"
        return Reading([Role("literal", why), *[EMIT] * (len(words) - 2)], printf_format=words[1])

    def _read_tee(self, words: Sequence[Word]) -> Reading:
        return Reading(self._data_roles(words), prints_arguments=False, copies_input=True)

    def _read_nft(self, words: Sequence[Word]) -> Reading:
        self._no_value_in_options(words[: _options_end(words)])  # nft reads options among its rule's words too
        roles: list[Role] = []
        i = 1
        while i < len(words):
            text = words[i].plain()
            if text == "--":
                roles.append(Role("literal", "nft's '--'"))
                i += 1
                break
            if text is None or not text.startswith("-") or text == "-":
                break
            if text in ("-f", "--file", "-I", "--includepath"):
                roles += [Role("literal", "an option of nft"), DATA]
                i += 2
                continue
            if text not in _NFT_FLAGS:
                raise ProgramRefusal(f"nft is given the option {text!r} (natbench knows: {', '.join(_NFT_FLAGS)})", i)
            roles.append(Role("literal", "an option of nft"))
            i += 1
        roles += [RULE] * (len(words) - i)
        return Reading(roles[: len(words) - 1], format_statements="nft")

    def _read_ip(self, words: Sequence[Word]) -> Reading:
        roles: list[Role] = []
        i = 1
        option = Role("literal", "an option of ip")
        while i < len(words):
            text = words[i].plain()
            if text is None or not text.startswith("-"):
                break
            if text in ("-n", "-netns"):
                roles += [option, DATA]
                i += 2
                continue
            if text not in _IP_FLAGS:
                raise ProgramRefusal(
                    f"ip is given the option {text!r} (natbench knows: -n NS, {', '.join(_IP_FLAGS)})", i
                )
            roles.append(option)
            i += 1
        if i >= len(words):
            return Reading(roles)
        obj = _literal(words[i])
        if obj not in _IP_OBJECTS:
            if _carries(words[i]):
                raise ProgramRefusal("is ip's object (link, address, route, ...): the recipe's own text", i)
            raise ProgramRefusal(f"ip {obj}: natbench knows the objects {', '.join(sorted(_IP_OBJECTS))}", i)
        roles.append(Role("literal", "ip's object"))
        i += 1
        if i >= len(words):
            return Reading(roles)
        command = _literal(words[i])
        if obj == "netns" and command == "exec":
            roles.append(Role("literal", "ip's command"))
            if i + 2 >= len(words):
                raise ProgramRefusal("ip netns exec needs a namespace and a program", i)
            roles.append(DATA)
            return Reading(roles, wrapped=i + 2)
        if command not in _IP_COMMANDS or command == "exec":
            if _carries(words[i]):
                raise ProgramRefusal("is ip's command (add, del, set, ...): the recipe's own text", i)
            known = ", ".join(sorted(_IP_COMMANDS - {"exec"}))
            raise ProgramRefusal(f"ip {obj} {command}: natbench knows the commands {known} (and netns exec)", i)
        roles.append(Role("literal", "ip's command"))
        roles += [DATA] * (len(words) - i - 1)
        return Reading(roles)

    def _read_iptables(self, words: Sequence[Word]) -> Reading:
        roles: list[Role] = []
        takes_value = False
        for i, word in enumerate(words[1:], 1):
            text = _literal(word)
            if takes_value:
                roles.append(DATA)
                takes_value = False
                continue
            if text is not None:
                takes_value = text in _IPTABLES_VALUE_OPTIONS
                roles.append(Role("literal", "an option of iptables"))
                continue
            first = word.parts[0]
            prefix = first.text if isinstance(first, Literal) and not first.quoted else ""
            if prefix.startswith("--") and "=" in prefix and prefix.split("=", 1)[0] in _IPTABLES_VALUE_OPTIONS:
                roles.append(DATA)
                continue
            raise ProgramRefusal(
                f"stands where {self.name} reads no value: a value may only follow one of the options "
                f"{', '.join(sorted(_IPTABLES_VALUE_OPTIONS))}",
                i,
            )
        return Reading(roles)

    def _read_getopt(self, words: Sequence[Word]) -> Reading:
        """Short options clustered getopt-style (``-nf FILE``), every letter known: a flag, a letter whose argument
        may be a value (:attr:`options`), or one whose argument is the recipe's own text (:attr:`literal_options`).
        Operands are data."""
        values = {o[1:] for o in self.options}
        literal = {o[1:] for o in self.literal_options}
        roles: list[Role] = []
        argument: Role | None = None
        for i, word in enumerate(words[1:], 1):
            if argument is not None:
                roles.append(argument)
                argument = None
                continue
            if not _leading_text(word).startswith("-"):  # quoted or glued to a value, an option is an option
                roles.append(DATA)
                continue
            text = _literal(word)
            if text is None:
                raise ProgramRefusal(f"stands in an option of {self.name}", i)
            for k, letter in enumerate(text[1:], 1):
                if letter in values or letter in literal:
                    if k == len(text) - 1:  # else the rest of the word is its argument, written in the recipe
                        argument = (
                            DATA if letter in values else Role("literal", f"the argument of {self.name} -{letter}")
                        )
                    break
                elif letter not in self.flags:
                    raise ProgramRefusal(f"{self.name} is given the option -{letter}, which natbench does not know", i)
            roles.append(Role("literal", f"an option of {self.name}"))
        return Reading(roles, prints_arguments=self.prints)

    def _read_sysctl(self, words: Sequence[Word]) -> Reading:
        roles: list[Role] = []
        for i, word in enumerate(words[1:], 1):
            text = _literal(word)
            if text is not None:
                if text.startswith("-") and text not in _SYSCTL_FLAGS:
                    raise ProgramRefusal(f"sysctl is given the option {text!r} (natbench knows: -w, -n, -q, -e)", i)
                roles.append(Role("literal", "a setting's name"))
                continue
            first = word.parts[0]
            if isinstance(first, Literal) and not first.quoted and first.text.endswith("=") and len(first.text) > 1:
                roles.append(DATA)  # glued: its first word is no option, a list's later ones may be (getopt permutes)
                continue
            raise ProgramRefusal("stands where sysctl reads a setting's name: write name.of.setting={{ value }}", i)
        return Reading(roles)

    def _read_awk(self, words: Sequence[Word]) -> Reading:
        """POSIX awk's options ``-F FS`` and ``-v NAME=VALUE`` (their argument glued or the next word), then its
        program: any other option (``-f FILE``, gawk's ``--file=``, ``-E``, ``-i``, ...) may read code from a file."""
        i = 1
        while i < len(words):
            text = _literal(words[i])
            if text is None or not text.startswith("-") or text == "--":
                break  # the program (or a value, refused as the literal it is)
            if text in ("-F", "-v"):
                i += 2
                continue
            if not text.startswith(("-F", "-v")):
                raise ProgramRefusal(
                    f"awk is given the option {text!r}: natbench knows -F and -v, never an awk reading its program "
                    "from a file",
                    i,
                )
            i += 1
        return self._read_literal(words)

    def _read_perl(self, words: Sequence[Word]) -> Reading:
        i = 1
        inline = False
        while i < len(words):
            text = _literal(words[i])
            if text in ("-e", "-E"):
                inline = True
                i += 2
                continue
            if text is not None and (text.startswith("-M") or text in ("-w", "-l")):
                i += 1
                continue
            break
        if not inline or i < len(words):
            raise ProgramRefusal(
                "perl runs a script from a file or takes an option natbench does not know: natbench reads only the "
                "recipe's own code (-e CODE, -M MODULE, -w, -l)",
                min(i, len(words) - 1),
            )
        return self._read_literal(words)


_NFT_FLAGS = ("-v", "--version", "-V", "-a", "--handle", "-c", "--check", "-e", "--echo", "-j", "--json", "-n",
              "--numeric", "-s", "--stateless", "-t", "--terse", "-y", "--numeric-priority", "-N",
              "--reversedns")  # fmt: skip
_IP_FLAGS = ("-4", "-6", "-s", "-stats", "-d", "-details", "-o", "-oneline", "-j", "-json", "-br", "-brief", "-p",
             "-pretty")  # fmt: skip
_IP_OBJECTS = frozenset(
    ("link", "address", "addr", "route", "neigh", "neighbor", "neighbour", "netns", "rule", "maddress", "tunnel")
)
_IP_COMMANDS = frozenset(("add", "del", "delete", "replace", "set", "show", "list", "flush", "change", "get", "exec"))
_IPTABLES_VALUE_OPTIONS = frozenset(
    (
        *("-t", "--table", "-A", "--append", "-D", "--delete", "-I", "--insert", "-R", "--replace", "-N"),
        *("--new-chain", "-X", "--delete-chain", "-F", "--flush", "-Z", "--zero", "-L", "--list", "-S"),
        *("--list-rules", "-P", "--policy", "-s", "--source", "-d", "--destination", "-i", "--in-interface"),
        *("-o", "--out-interface", "-p", "--protocol", "--comment", "--to-source", "--to-destination"),
        *("--to-ports", "--to", "--dport", "--destination-port", "--sport", "--source-port", "--dports"),
        *("--sports", "--log-prefix", "--set-mark", "--mark", "--ctstate", "--state", "--limit", "--limit-burst"),
    )
)
"""Options of iptables whose argument may be a value (``-m`` and ``-j`` load extensions by name and are not here)."""
_SYSCTL_FLAGS = frozenset(("-w", "-n", "-q", "-e"))
ECHO_OPTION = re.compile(r"-[neE]+")
"""A word echo reads as its options (dash knows -n; bash -n, -e and -E), up to the first other word."""
_ECHO_OPTION_START = re.compile(r"-[neE]*")
"""Text echo's options begin with: a value glued after it could complete an option."""


def _program(
    name: str,
    doc: str,
    kind: str = "data",
    prints: bool = True,
    options: tuple[str, ...] = (),
    literal_options: tuple[str, ...] = (),
    flags: str = "",
) -> Program:
    return Program(name, doc, kind, prints, frozenset(options), frozenset(literal_options), flags)


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in (
        _program(
            "ip", "iproute2 (netns exec runs the command after the namespace, read as a command of its own)", "ip"
        ),
        _program("iptables", "values only as the argument of a known option", "iptables"),
        _program("ip6tables", "values only as the argument of a known option", "iptables"),
        _program("nft", "its arguments are one line of nft's rule language", "nft"),
        _program("conntrack", "data"),
        _program("sysctl", "values only after a literal name= ", "sysctl"),
        _program("ethtool", "data"),
        _program("ifconfig", "data"),
        _program(
            "pfctl",
            "values only as a file, anchor, interface, host, device or table (OpenBSD pfctl(8)'s options)",
            "getopt",
            options=("-f", "-a", "-i", "-k", "-K", "-p", "-t"),
            literal_options=("-D", "-F", "-L", "-o", "-S", "-s", "-R", "-T", "-V", "-x"),
            flags="deghMmNnOPqrvz",
        ),
        _program("jool", "data"),
        _program("jool_siit", "data"),
        _program("jool_mapt", "data"),
        _program("tayga", "data"),
        _program("modprobe", "module names", "operands", options=("-r", "-q", "-v", "-a", "-b", "--remove", "--quiet")),
        _program("echo", "writes its arguments", "echo"),
        _program("printf", "writes its arguments by a format written in the recipe", "printf"),
        _program("tee", "copies its input into the files named", "tee"),
        _program("cat", "file names (prints the files, not its arguments)", prints=False),
        _program("grep", "data"),
        _program("mkdir", "file names"),
        _program("rmdir", "file names"),
        _program("rm", "file names"),
        _program("touch", "file names"),
        _program("kill", "process ids", prints=False),
        _program("sleep", "seconds", prints=False),
        _program("[", "test's operands", "test"),
        _program("test", "test's operands", "test"),
        _program("true", "no arguments", "literal", prints=False),
        _program("false", "no arguments", "literal", prints=False),
        _program(":", "no arguments", "literal", prints=False),
        _program("exit", "an exit status written in the recipe", "literal", prints=False),
        _program("break", "written in the recipe", "literal", prints=False),
        _program("continue", "written in the recipe", "literal", prints=False),
        _program("date", "written in the recipe (its +FORMAT is printed)", "literal"),
        _program("uname", "written in the recipe", "literal"),
        _program("dpkg-query", "written in the recipe", "literal"),
        _program("awk", "a program written in the recipe (no -f)", "awk"),
        _program("perl", "code written in the recipe (-e; no script file)", "perl"),
    )
}
"""Every program a recipe may run, by name."""


def program_names() -> str:
    """The known programs, for messages."""
    return ", ".join(PROGRAMS)
