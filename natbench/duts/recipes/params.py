"""Recipe parameters: their declarations (``params:``), the value types, and resolving a campaign's values.

A declaration is a :class:`ParamSpec` (``{type: int, min: 1, default: null}`` or just a type
name). Values are checked and normalized by their declared type; numbers and port ranges
follow the one grammar of :mod:`natbench.values` (``2^23``, ``8M``, ``"1024-65535"``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator

from natbench.duts.recipes.conditions import as_word
from natbench.duts.recipes.fields import Flag, Named, must
from natbench.duts.recipes.formats import FORMATS, MAX_TEXT_CHARS, format_names
from natbench.duts.recipes.regex import MAX_VALUE_CHARS, check_pattern, pattern_matches
from natbench.duts.recipes.values import FormatText, is_phrase, is_token
from natbench.values import MAX_VALUE, parse_count, parse_number, parse_port_range

if TYPE_CHECKING:
    pass


BUILTIN_VARIABLES = ("cores", "cpus", "dut")
"""Template variables natbench supplies at run time: active core count of the working point
(None: unchanged), the list of CPU numbers in use, the DUT's name."""

_IFNAME = re.compile(r"[A-Za-z0-9_.+][A-Za-z0-9_.+-]{0,14}")
_MAC = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_N = TypeVar("_N", int, float)


def param_name(name: Any) -> str:
    """A parameter name as ``params:`` may declare it; raise ValueError otherwise."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError("parameter names are lowercase identifiers")
    if name in BUILTIN_VARIABLES:
        raise ValueError(f"{name!r} is supplied by natbench at run time, not a recipe parameter")
    return name


def shown(value: Any, limit: int = 40) -> str:
    """A value as a message shows it: its ``repr`` (control characters escaped), cut to ``limit`` characters."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# ---------------------------------------------------------------------------
# value types: check and normalize one value of a declared type (raise ValueError)


def _str(spec: ParamSpec, value: Any) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    text = str(value)
    if "\x00" in text:
        raise ValueError("contains a NUL byte")
    if len(text) > MAX_VALUE_CHARS:
        raise ValueError(f"is longer than {MAX_VALUE_CHARS} characters")
    if spec.pattern and not pattern_matches(spec.pattern, text):
        raise ValueError(f"{shown(text)} does not match {shown(spec.pattern, 80)}")
    if spec.pattern is None and not is_token(text):
        raise ValueError(
            f"{shown(text)} is not one plain token (letters, digits, '_', '.', ':', '/', ',', '+', '-'): a str "
            "parameter without a pattern takes one word; declare a pattern for more (text for a file format is a "
            "text parameter)"
        )
    if not is_phrase(text):
        raise ValueError(
            f"{shown(text)} holds characters a str value may not: letters, digits, '_', '.', ':', '/', ',', '+', "
            "'-' and single blanks (no quote, newline, ';', '$', backquote, glob or brace); text for a file format "
            "is a text parameter"
        )
    return text


def _text(spec: ParamSpec, value: Any) -> FormatText:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"is longer than {MAX_TEXT_CHARS} characters")
    if "\x00" in value:
        raise ValueError("contains a NUL byte")
    if spec.pattern and not pattern_matches(spec.pattern, value):
        raise ValueError(f"{shown(value)} does not match {shown(spec.pattern, 80)}")
    fmt = FORMATS[str(spec.format)]  # a text parameter always names its format
    try:
        fmt.write(value)
    except ValueError as exc:
        raise ValueError(f"{shown(value)}: {exc}") from None
    return FormatText(value, fmt.name)


def _int(spec: ParamSpec, value: Any) -> int:
    try:
        number = parse_count(value)
    except ValueError as exc:
        if "too large" in str(exc):  # a power or number beyond 2^64: say so rather than "expected an integer"
            raise ValueError(str(exc)) from None
        raise ValueError(f"expected an integer such as 8388608, 2^23 or 8M, got {shown(value)}") from None
    return _bounded(spec, number)


def _float(spec: ParamSpec, value: Any) -> float:
    return _bounded(spec, parse_number(value))


def _bounded(spec: ParamSpec, value: _N) -> _N:
    if spec.min is not None and value < spec.min:
        raise ValueError(f"{value} is below the minimum {spec.min:g}")
    if spec.max is not None and value > spec.max:
        raise ValueError(f"{value} is above the maximum {spec.max:g}")
    return value


def _bool(spec: ParamSpec, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shown(value)}")
    return value


def _choice(spec: ParamSpec, value: Any) -> str:
    if as_word(value) not in spec.choices:
        raise ValueError(f"{shown(value)} is not one of {', '.join(spec.choices)}")
    return as_word(value)


_ADDRESSES = {"ip": None, "ipv4": 4, "ipv6": 6, "net": None, "ipv4_net": 4, "ipv6_net": 6}
"""Address types and the IP version each requires (None: either)."""


def _address(spec: ParamSpec, value: Any) -> str:
    """An address (``ip``, ``ipv4``, ``ipv6``) or an address with its prefix length (``*net``), normalized."""
    text, version, with_prefix = str(value), _ADDRESSES[spec.type], spec.type.endswith("net")
    if "%" in text:
        raise ValueError(f"{shown(value)}: an address with a scope (%zone) is not taken (name the interface instead)")
    try:
        addr = ipaddress.ip_interface(text) if with_prefix else ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"{shown(value)} is not {'an address/prefix' if with_prefix else 'an IP address'}") from None
    if with_prefix and "/" not in text:
        raise ValueError(f"{shown(value)} needs a prefix length (e.g. 198.18.0.1/24)")
    if version is not None and addr.version != version:
        raise ValueError(f"{shown(value)} is not an IPv{version} {'prefix' if with_prefix else 'address'}")
    return str(addr)


def _interface(spec: ParamSpec, value: Any) -> str:
    if not isinstance(value, str) or not _IFNAME.fullmatch(value):
        raise ValueError(
            f"{shown(value)} is not a valid interface name (1-15 letters, digits, '_', '.', '+', '-', "
            "not starting with '-')"
        )
    return value


def _mac(spec: ParamSpec, value: Any) -> str:
    if not isinstance(value, str) or not _MAC.fullmatch(value):
        raise ValueError(f"{shown(value)} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    return value.lower()


def _port_range(spec: ParamSpec, value: Any) -> Any:
    return parse_port_range(value, one_port=True)


def _list(spec: ParamSpec, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    item_spec = spec.model_copy(update={"type": spec.items})
    out = []
    for i, item in enumerate(value):
        if item is None:
            raise ValueError(f"item {i} is null (a list holds values only)")
        try:
            out.append(item_spec.check(item))
        except ValueError as exc:
            raise ValueError(f"item {i}: {exc}") from None
    return out


_VALUE_TYPES: dict[str, Callable[[ParamSpec, Any], Any]] = {
    "str": _str,
    "text": _text,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "choice": _choice,
    **dict.fromkeys(_ADDRESSES, _address),
    "interface": _interface,
    "mac": _mac,
    "port_range": _port_range,
    "list": _list,
}

PARAM_TYPES = tuple(_VALUE_TYPES)
"""Parameter types a recipe may declare."""


# ---------------------------------------------------------------------------
# the declaration


_PARAM_TYPE = must(lambda v: v in PARAM_TYPES, lambda v: f"unknown type {v!r} (allowed: {', '.join(PARAM_TYPES)})")
_ITEM_TYPE = must(
    lambda v: v in PARAM_TYPES and v not in ("list", "choice", "text"), lambda v: f"bad list item type {v!r}"
)
_FORMAT = must(lambda v: v is None or v in FORMATS, lambda v: f"unknown format {v!r} (known: {format_names()})")
_BOUND = must(
    lambda v: not isinstance(v, bool) and isinstance(v, int | float) and abs(v) <= MAX_VALUE,  # not inf, nor nan
    "expected a finite number (at most 2^64 in magnitude)",
)


def _words(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError("expected a list")
    words = tuple(as_word(v) for v in value)
    for word in words:
        if not is_phrase(word):
            raise ValueError(
                f"choice {shown(word)} holds characters a value may not: letters, digits, '_', '.', ':', '/', "
                "',', '+', '-' and single blanks"
            )
    return words


def _pattern(value: Any) -> str | None:
    if value is None:
        return None
    check_pattern(str(value))
    return str(value)


class ParamSpec(Named):
    """A declared recipe parameter: ``name: {type: ..., default: ..., ...}`` or ``name: type``."""

    type: Annotated[str, _PARAM_TYPE] = "str"
    """One of :data:`PARAM_TYPES`."""
    required: Flag = False
    """The campaign must give a value."""
    min: Annotated[int | float | None, _BOUND] = None
    """Lower bound (int/float)."""
    max: Annotated[int | float | None, _BOUND] = None
    """Upper bound (int/float)."""
    choices: Annotated[tuple[str, ...], BeforeValidator(_words)] = Field(default=(), validate_default=True)
    """Allowed values (``choice``)."""
    items: Annotated[str, _ITEM_TYPE] = "str"
    """Item type of a ``list``."""
    pattern: Annotated[str | None, BeforeValidator(_pattern)] = Field(default=None, validate_default=True)
    """Regular expression a ``str`` or ``text`` value must match fully, in RE2 syntax (matched in linear time: no
    back-references or look-arounds; :mod:`natbench.duts.recipes.regex`); at most 512 characters, values of at most
    256. A ``str`` without a pattern takes one plain token; with one, plain tokens separated by single blanks that
    match it."""
    format: Annotated[str | None, _FORMAT] = Field(default=None, validate_default=True)
    """The file format of a ``text`` parameter (``pf.conf``, ``nft``, ``json``): its values are written as one
    string of that format, and stand only in text written in it (:mod:`natbench.duts.recipes.formats`)."""
    doc: Annotated[str, BeforeValidator(str)] = ""
    """What the parameter means."""
    default: Any = None
    """Value when the campaign does not give one (None: unset, commands guard with ``when``)."""

    @field_validator("choices")
    @classmethod
    def _choices_given(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if info.data.get("type") == "choice" and not value:
            raise ValueError("a choice parameter needs a non-empty list of choices")
        return value

    @field_validator("format")
    @classmethod
    def _text_has_format(cls, value: str | None, info: ValidationInfo) -> str | None:
        if (info.data.get("type") == "text") != (value is not None):
            raise ValueError("a text parameter names its format (pf.conf, nft, json), and only a text parameter does")
        return value

    @field_validator("default")
    @classmethod
    def _default_fits(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None or any(f not in info.data for f in cls.model_fields if f != "default"):
            return value  # unset, or the declaration has an error of its own (reported instead)
        try:
            value = cls.model_construct(**info.data).check(value)
        except ValueError as exc:
            raise ValueError(f"bad default: {exc}") from None
        if info.data["required"]:
            raise ValueError("a required parameter has no default")
        return value

    def check(self, value: Any) -> Any:
        """Validate and normalize one value of this parameter (None stays None); raise ValueError."""
        return None if value is None else _VALUE_TYPES[self.type](self, value)
