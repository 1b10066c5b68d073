"""YAML source handling: reading user files, limits, duplicate keys, ``${NATBENCH_*}`` substitution, lines.

A campaign, testbed file or recipe is read with :func:`read_user_file` (regular files only, at most
:data:`MAX_FILE_BYTES`, UTF-8; every OS or decoding problem is one :class:`ConfigError` naming the
file) and parsed with :func:`parse_yaml`, PyYAML's composer with limits: at most :data:`MAX_DEPTH`
levels of nesting (as written, and once YAML aliases are expanded), :data:`MAX_NODES` values written and
:data:`MAX_EXPANDED_NODES` values once YAML aliases are expanded (an "alias bomb" of nine nested aliases would
expand to 9^9 values), no alias inside the value it names (``x: &r {<<: *r}``, ``&r [*r]``: a value that would
contain itself), and numbers of at most :data:`MAX_NUMBER_CHARS` characters. Every value keeps the node it came from:
:class:`SourceMap` answers "which line holds ``sweep.zip.src_ports[2]``?" for pydantic error locations
and for a file's own semantic checks.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from natbench.config.paths import pseudo_root
from natbench.errors import ConfigError

MAX_FILE_BYTES = 1 << 20
"""Largest campaign, recipe or testbed file read (1 MiB; the largest shipped file has 16 kB)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and lists (the schemas need fewer than 10 levels)."""
MAX_NODES = 20_000
"""Most values (keys, scalars, mappings, lists) a file may write (the largest shipped recipe has 647)."""
MAX_EXPANDED_NODES = 100_000
"""Most values a file may stand for once its YAML aliases are expanded (an alias bomb stops here)."""
MAX_NUMBER_CHARS = 40
"""Longest number YAML may read as an int or a float (2^64 has 20 digits)."""

Path_ = tuple[str | int, ...]
"""A path inside YAML data: mapping keys and list indexes, e.g. ``("sweep", "zip", "src_ports", 2)``."""

_VAR = re.compile(r"\$\$|\$\{([^}]*)\}")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_PREFIX = "NATBENCH_"


class LocatedError(Exception):
    """A problem at a path inside a file's data; the loader turns it into a :class:`ConfigError` with a line."""

    def __init__(self, path: Path_, message: str) -> None:
        super().__init__(message)
        self.path = tuple(path)
        self.message = message


@dataclass(frozen=True)
class Located:
    """A field path resolved against the YAML tree: its rendered name and its 1-based line."""

    field: str
    line: int | None


def format_path(path: Iterable[str | int]) -> str:
    """Render a path as ``sweep.zip.src_ports[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class SourceMap:
    """Maps paths inside a file's data to the YAML nodes (and lines) they came from."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def locate(self, path: Sequence[Any], *, exact: bool = False) -> Located:
        """Follow ``path`` through the YAML tree as far as it goes.

        The line is that of the key introducing the deepest value found (or of
        the sequence item). Path parts that are not keys of the current mapping
        are pydantic's union tags (``ssh``, ``function-after[...]``) and are
        skipped, unless ``exact`` (a path natbench built itself) or the part is
        the last one below a mapping: that is a missing key, reported on the
        line of the mapping's own key.
        """
        node = self.root
        if node is None:  # built from a dict: no lines; drop pydantic's internal tags such as function-after[...]
            return Located(format_path(p for p in path if not (isinstance(p, str) and "[" in p)), None)
        line = node.start_mark.line + 1
        shown: list[str | int] = []
        parts = list(path)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            found = _child(node, part)
            if found is not None:
                key_line, node = found
                line = key_line
                shown.append(part)
            elif exact or (last and isinstance(node, yaml.MappingNode) and isinstance(part, str)):
                shown.append(part)
                node = None
            elif isinstance(part, int) and not isinstance(node, yaml.SequenceNode):
                shown.append(part)
            # anything else is a pydantic-internal tag: skip it
        return Located(format_path(shown), line)

    def error(
        self,
        file: str | None,
        path: Sequence[Any],
        message: str,
        *,
        exact: bool = False,
        error: type[ConfigError] = ConfigError,
    ) -> ConfigError:
        """A :class:`ConfigError` (or the subclass ``error``) for ``path`` with its file and line."""
        where = self.locate(path, exact=exact)
        return error(message, file=file, line=where.line, field=where.field or None)


def _child(node: yaml.Node | None, part: Any) -> tuple[int, yaml.Node] | None:
    """(line of the key or item, child node) of ``node`` at ``part``, or None."""
    if isinstance(node, yaml.MappingNode):
        for key, value in _mapping_items(node):
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key.start_mark.line + 1, value
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        child: yaml.Node = node.value[part]
        return child.start_mark.line + 1, child
    return None


def _mapping_items(node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
    """Key/value pairs of a mapping with YAML merge keys (``<<``) expanded, own keys first."""
    own: list[tuple[yaml.Node, yaml.Node]] = []
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
            sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for src in sources:
                if isinstance(src, yaml.MappingNode):
                    merged.extend(_mapping_items(src))
        else:
            own.append((key, value))
    return own + merged


def read_user_file(path: str | os.PathLike[str], what: str = "file", *, limit: int = MAX_FILE_BYTES) -> str:
    """The text of a file a user named (a campaign, recipe or testbed file); every problem is one ConfigError.

    Only a regular file is read (a directory, FIFO, device or socket is refused without reading,
    so ``/dev/zero`` or a FIFO never blocks; so is a file of ``/proc`` or ``/sys``, whose size says nothing),
    at most ``limit`` bytes (the read itself is capped too), decoded as UTF-8 without a NUL byte. Messages name
    the file and never quote its content.
    """
    shown = os.fspath(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"no such file ({what} not found)", file=shown) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or type(exc).__name__}", file=shown) from None
    except ValueError:  # a NUL byte in the path
        raise ConfigError(f"the {what} name contains a NUL byte", file=shown.replace("\x00", "\\0")) from None
    _check_file_type(info.st_mode, what, shown)
    pseudo = pseudo_root(path)
    if pseudo is not None:
        raise ConfigError(f"is a file of {pseudo} (a view of the kernel, not data), not a {what}", file=shown)
    if info.st_size > limit:
        raise ConfigError(f"the {what} is too large ({info.st_size:,} bytes; the limit is {limit:,})", file=shown)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or type(exc).__name__}", file=shown) from None
    try:
        _check_file_type(os.fstat(fd).st_mode, what, shown)  # replaced between stat and open
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or type(exc).__name__}", file=shown) from None
    finally:
        os.close(fd)
    if size > limit:
        raise ConfigError(f"the {what} is too large (more than {limit:,} bytes)", file=shown)
    data = b"".join(chunks)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"the {what} is not UTF-8 text (invalid byte at offset {exc.start}; a binary or Latin-1 file?)",
            file=shown,
            line=line,
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ConfigError(
            f"the {what} contains a NUL byte (a binary file?)", file=shown, line=text.count("\n", 0, nul) + 1
        )
    return text


def _check_file_type(mode: int, what: str, shown: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    raise ConfigError(f"is {kind}, not a {what}", file=shown)


try:  # libyaml's event parser when PyYAML has it (several times faster), natbench's composer on top
    from yaml._yaml import CParser as _EventSource
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _EventSource(Reader, Scanner, Parser):  # type: ignore[no-redef]
        """PyYAML's pure-Python reader, scanner and parser: the events libyaml's parser would give."""

        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class YamlLimitError(ConfigError):
    """A YAML document beyond one of the composer's limits: nesting, values, alias expansion, a value that
    contains itself, a number's length (``limit`` says which)."""

    def __init__(self, limit: str, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self.limit = limit
        """``depth``, ``values``, ``expanded``, ``cycle`` or ``number``."""
        super().__init__(message, file=file, line=line)


class _Loader(Composer, _EventSource, SafeConstructor, Resolver):
    """PyYAML's safe loader with limits on nesting depth, values written and values after alias expansion."""

    def __init__(self, text: str, file: str | None, *, max_values: int | None = MAX_NODES) -> None:
        _EventSource.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.file = file
        self.max_values = max_values
        """Most values written (None: as many as the text holds; aliases may then add
        :data:`MAX_EXPANDED_NODES` values more)."""
        self.depth = 0
        self.written = 0
        self.sizes: dict[int, int] = {}
        self.heights: dict[int, int] = {}
        """How many levels each composed node nests, its aliases expanded."""
        self.open: set[str] = set()
        """Anchors of the mappings and lists being composed: an alias to one of them would be a cycle."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        mark = event.start_mark if event is not None else None
        line = mark.line + 1 if mark is not None else None
        if isinstance(event, yaml.AliasEvent):  # an anchored node again: its expanded size is known
            if event.anchor in self.open:  # inside the very node it names: a value that contains itself
                raise self.limit(
                    "cycle",
                    "a YAML alias refers to the mapping or list that holds it (a value that would contain itself)",
                    line,
                )
            return self._composed(super().compose_node(parent, index))
        anchor = event.anchor if isinstance(event, yaml.CollectionStartEvent) else None
        if anchor is not None:
            self.open.add(anchor)
        try:
            return self._compose_counted(parent, index, line)
        finally:
            if anchor is not None:
                self.open.discard(anchor)

    def _compose_counted(self, parent: yaml.Node | None, index: Any, line: int | None) -> yaml.Node:
        self.depth += 1
        self.written += 1
        if self.depth > MAX_DEPTH:
            raise self.limit("depth", f"nested more than {MAX_DEPTH} levels deep", line)
        if self.max_values is not None and self.written > self.max_values:
            raise self.limit("values", f"more than {self.max_values:,} values in one file", line)
        try:
            node = self._composed(super().compose_node(parent, index))
        finally:
            self.depth -= 1
        size, height = 1, 1
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            message = f"a number of more than {MAX_NUMBER_CHARS} characters"
            raise self.limit("number", message, line)
        if children:
            size += sum(self.sizes.get(id(child), 1) for child in children)
            height += max(self.heights.get(id(child), 1) for child in children)
        expanded = MAX_EXPANDED_NODES if self.max_values is not None else self.written + MAX_EXPANDED_NODES
        if size > expanded:
            raise self.limit("expanded", f"expands to more than {expanded:,} values (nested YAML aliases?)", line)
        if height > MAX_DEPTH:  # written shallow, deep through aliases (each alias one level more)
            raise self.limit(
                "depth", f"nested more than {MAX_DEPTH} levels deep once its YAML aliases are expanded", line
            )
        self.sizes[id(node)] = size
        self.heights[id(node)] = height
        return node

    def limit(self, kind: str, message: str, line: int | None) -> YamlLimitError:
        """The error of a limit (``kind``: see :class:`YamlLimitError`) at ``line`` of this file."""
        return YamlLimitError(kind, message, file=self.file, line=line)

    def _composed(self, node: yaml.Node | None) -> yaml.Node:
        if node is None:  # pragma: no cover - PyYAML composes a node for every event it is asked for
            raise ConfigError("invalid YAML", file=self.file)
        return node


def require_document(data: Any, file: str | None, what: str, keys: Iterable[str]) -> dict[str, Any]:
    """``data`` as a mapping that is at least shaped like a ``what`` (one of its top-level keys is one of ``keys``).

    A file that is no such document (a list, a scalar, some other program's configuration, a password
    file) is refused without quoting any of its content: its keys are not named, not even as a field.
    """
    known = sorted(keys)
    if not isinstance(data, dict):
        raise ConfigError(
            f"not a {what}: expected a YAML mapping with keys such as {', '.join(known[:4])}", file=file, line=1
        )
    if data and not any(isinstance(k, str) and k in known for k in data):
        raise ConfigError(f"not a {what}: none of its top-level keys is one of {', '.join(known)}", file=file, line=1)
    return data


_QUOTED = re.compile(r"\s*'[^'\s]{4,}'|\s*\"[^\"\s]{4,}\"")


def _problem(text: str | None) -> str:
    """A PyYAML problem as one line, without the characters of the file it may quote (an anchor, a tag)."""
    return " ".join(_QUOTED.sub("", text or "invalid YAML").split()) or "invalid YAML"


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str | None, syntax_error: str) -> ConfigError:
    """A character YAML does not allow (a control character) as one line with its line, not the character."""
    line = text.count("\n", 0, max(exc.position, 0)) + 1
    what = f"#x{exc.character:04x}" if isinstance(exc.character, int) else "character"
    message = f"{syntax_error}: unacceptable character {what} (control characters are not allowed)"
    return ConfigError(message, file=file, line=line)


def load_yaml_data(text: str, file: str | None = None, *, max_values: int | None = MAX_NODES) -> Any:
    """The data of one YAML document, composed within the limits of :func:`parse_yaml` (a
    :class:`YamlLimitError` beyond them; ``max_values`` None: no limit on the values written, a file's own size
    bounds them, and aliases may add :data:`MAX_EXPANDED_NODES` more) but read as it is: no duplicate-key check, no
    variable substitution. ConfigError for text that is no YAML or a value that cannot be converted (a date such as
    2024-13-45); None for an empty document."""
    loader = _Loader(text, file, max_values=max_values)
    try:
        try:
            root = loader.get_single_node()
            return None if root is None else loader.construct_document(root)
        except yaml.MarkedYAMLError as exc:
            if "nesting depth" in str(exc.problem):  # libyaml's own limit (PyYAML >= 6.0.4's wheels): ours is lower
                raise YamlLimitError("depth", f"nested more than {MAX_DEPTH} levels deep", file=file) from None
            raise ConfigError(f"YAML error: {_problem(exc.problem)}", file=file) from None
        except yaml.YAMLError:
            raise ConfigError("YAML error: invalid YAML", file=file) from None
        except (ValueError, OverflowError, TypeError):
            raise ConfigError("YAML error: a value cannot be converted", file=file) from None
    finally:
        loader.dispose()


def parse_yaml(
    text: str, file: str | None, *, substitute_env: bool = True, syntax_error: str = "YAML syntax error"
) -> tuple[Any, SourceMap]:
    """Parse one YAML document; reject duplicate keys and substitute ``${NATBENCH_*}`` variables.

    Returns the plain data and the :class:`SourceMap` of its nodes. Every
    problem is a :class:`ConfigError` naming the file and line. ``substitute_env``
    False leaves ``${...}`` alone (recipe commands are shell text); ``syntax_error``
    starts the message of malformed YAML.
    """
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(f"more than {MAX_FILE_BYTES:,} characters", file=file)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        surrogate = text.count("\n", 0, exc.start) + 1
        raise ConfigError("not valid Unicode text (a lone surrogate)", file=file, line=surrogate) from None
    try:
        loader = _Loader(text, file)  # PyYAML's pure-Python reader checks the characters here
    except yaml.reader.ReaderError as exc:  # pragma: no cover - without libyaml only
        raise _reader_error(exc, text, file, syntax_error) from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            if "nesting depth" in str(exc.problem):  # libyaml's own limit (PyYAML >= 6.0.4's wheels): ours is lower
                raise YamlLimitError(
                    "depth", f"nested more than {MAX_DEPTH} levels deep", file=file, line=line
                ) from None
            problem = _problem(exc.problem)
            if exc.context:
                problem = f"{_problem(exc.context)}: {problem}"
            raise ConfigError(f"{syntax_error}: {problem}", file=file, line=line) from None
        except yaml.reader.ReaderError as exc:
            raise _reader_error(exc, text, file, syntax_error) from None
        except yaml.YAMLError:
            raise ConfigError(f"{syntax_error}: invalid YAML", file=file) from None
        except RecursionError:  # pragma: no cover - MAX_DEPTH stops nesting long before
            raise ConfigError(f"nested too deeply (more than {MAX_DEPTH} levels)", file=file) from None
        if root is None:
            raise ConfigError("the file is empty", file=file, line=1)
        _check_duplicates(root, file, [], set())
        _check_yaml11_numbers(root, file, [], set())
        if substitute_env:
            _substitute(root, file, loader, set())
        try:
            data = loader.construct_document(root)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ConfigError(
                f"YAML error: {_problem(exc.problem)}", file=file, line=mark.line + 1 if mark else None
            ) from None
        except (ValueError, OverflowError, TypeError):  # e.g. a date such as 2024-13-45
            raise ConfigError(
                "YAML error: a value cannot be converted (a date or number out of range?)", file=file
            ) from None
    finally:
        loader.dispose()
    return data, SourceMap(root)


def _check_duplicates(node: yaml.Node, file: str | None, path: list[str | int], seen: set[int]) -> None:
    if id(node) in seen:  # aliases: the same node object appears again
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.tag == "tag:yaml.org,2002:merge":
                    _check_duplicates(value, file, path, seen)
                    continue
                if key.value in keys:
                    raise ConfigError(
                        f"duplicate key {key.value!r} (first defined on line {keys[key.value]})",
                        file=file,
                        line=key.start_mark.line + 1,
                        field=format_path([*path, key.value]),
                    )
                keys[key.value] = key.start_mark.line + 1
                _check_duplicates(value, file, [*path, key.value], seen)
            else:
                _check_duplicates(value, file, path, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, file, [*path, i], seen)


_OCTAL = re.compile(r"[-+]?0[0-7_]+")
"""YAML 1.1's octal integers (``0100`` is 64); YAML 1.2 and every other reader take them as decimal."""
_BASE_60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
"""YAML 1.1's base-60 numbers (``1:30`` is 90, ``1:30:00`` is 5400)."""


def _yaml11_number(node: yaml.Node) -> str | None:
    """What a plain scalar read as a YAML 1.1 octal or base-60 number means, or None for any other scalar."""
    if not isinstance(node, yaml.ScalarNode) or node.tag not in _NUMBER_TAGS or node.style:
        return None
    text = node.value
    if _OCTAL.fullmatch(text):
        return f"a YAML 1.1 octal number (read as {int(text.replace('_', ''), 8):d})"
    if _BASE_60.fullmatch(text):
        sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
        value = 0.0
        for part in digits.replace("_", "").split(":"):
            value = value * 60 + float(part)
        return f"a YAML 1.1 base-60 number (read as {sign * value:g})"
    return None


def _check_yaml11_numbers(node: yaml.Node, file: str | None, path: list[str | int], seen: set[int]) -> None:
    """Refuse plain scalars that YAML 1.1 reads as octal (``0100`` -> 64) or base 60 (``1:30`` -> 90): nobody
    who writes them means that, and the value would change silently."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in _mapping_items(node):
            part = key.value if isinstance(key, yaml.ScalarNode) else "?"
            _check_yaml11_numbers(value, file, [*path, part], seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_yaml11_numbers(item, file, [*path, i], seen)
    else:
        meaning = _yaml11_number(node)
        if meaning is not None:
            raise ConfigError(
                f"{node.value} is {meaning}: write the number in decimal without leading zeros or colons, "
                f'or quote it ("{node.value}") if it is text',
                file=file,
                line=node.start_mark.line + 1,
                field=format_path(path) or None,
            )


_SUBSTITUTED: dict[str, str] = {}
"""Values substituted from ``${NATBENCH_*}`` variables in this process -> the variable's name: what
:func:`redact_substituted` replaces in printed text (such variables hold secrets)."""


def redact_substituted(text: str) -> str:
    """``text`` with every value that came from a ``${NATBENCH_*}`` variable replaced by ``${NAME}``."""
    if not _SUBSTITUTED or not text:
        return text
    for value in sorted(_SUBSTITUTED, key=len, reverse=True):
        if value in text:
            pattern = rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"
            text = re.sub(pattern, f"${{{_SUBSTITUTED[value]}}}".replace("\\", "\\\\"), text)
    return text


def _substitute(node: yaml.Node, file: str | None, loader: Resolver, seen: set[int]) -> None:
    """Replace ``${NATBENCH_X}`` / ``${NATBENCH_X:-default}`` in scalar values; ``$$`` is a literal ``$``."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if "$" not in node.value or node.tag not in ("tag:yaml.org,2002:str",):
            return
        line = node.start_mark.line + 1
        names = [m.group(1).partition(":-")[0] for m in _VAR.finditer(node.value) if m.group(1)]
        new = _VAR.sub(lambda m: _expand(m, file, line), node.value)
        if new != node.value:
            node.value = new
            if not node.style:  # plain (libyaml: "", PyYAML: None): let YAML type the substituted text (22 -> int)
                node.tag = loader.resolve(yaml.ScalarNode, new, (True, False))
                meaning = _yaml11_number(node)
                if meaning is not None:
                    shown = ", ".join(f"${{{n}}}" for n in names)
                    raise ConfigError(f"the value substituted for {shown} is {meaning}", file=file, line=line)
    elif isinstance(node, yaml.MappingNode):
        for _key, value in node.value:
            _substitute(value, file, loader, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _substitute(item, file, loader, seen)


def unset_variables(text: str) -> tuple[str, ...]:
    """The ``${NATBENCH_*}`` variables without a default that the YAML document ``text`` refers to and the
    environment does not set, sorted: what :func:`parse_yaml` would stop at. Empty when the text is not
    YAML (parsing it then says what is wrong)."""
    loader = _Loader(text, None)
    try:
        try:
            root = loader.get_single_node()
        except (yaml.YAMLError, ConfigError):
            return ()
        names: set[str] = set()
        if root is not None:
            _references(root, names, set())
    finally:
        loader.dispose()
    return tuple(sorted(n for n in names if n not in os.environ))


def _references(node: yaml.Node, names: set[str], seen: set[int]) -> None:
    """Collect the ``${NATBENCH_X}`` references without a default in the values :func:`_substitute` expands."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if "$" in node.value and node.tag == "tag:yaml.org,2002:str":
            for match in _VAR.finditer(node.value):
                name, sep, _default = (match.group(1) or "").partition(":-")
                if not sep and _VAR_NAME.match(name) and name.startswith(_ENV_PREFIX):
                    names.add(name)
    elif isinstance(node, yaml.MappingNode):
        for _key, value in node.value:
            _references(value, names, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _references(item, names, seen)


def _expand(match: re.Match[str], file: str | None, line: int) -> str:
    if match.group(0) == "$$":
        return "$"
    body = match.group(1)
    name, sep, default = body.partition(":-")
    if not _VAR_NAME.match(name):
        raise ConfigError(f"bad variable reference ${{{body}}}", file=file, line=line)
    if not name.startswith(_ENV_PREFIX):
        raise ConfigError(
            f"environment variable {name} may not be substituted: only {_ENV_PREFIX}* variables are allowed",
            file=file,
            line=line,
        )
    value = os.environ.get(name)
    if value is None:
        if sep:
            return default
        raise ConfigError(
            f"environment variable {name} is not set (write ${{{name}:-default}} for a default)",
            file=file,
            line=line,
        )
    if value:
        _SUBSTITUTED[value] = name
    return value
