"""Named parsers for DUT command output, declared by recipe steps (``parse: conntrack_count``).

A parser is a function ``(stdout: str) -> value`` registered under a name in
:data:`natbench.plugins.PARSERS`. It raises :class:`~natbench.plugins.ParseError`
(with a short excerpt of what it could not read) when the output is not what it
expects; the DUT layer turns that into a :class:`~natbench.errors.DutError`
naming the step.

natbench's own parsers register themselves with :func:`register_parser` here and
in :mod:`natbench.duts.parsers_jool_pf`; the registry imports both modules on its
first look-up. Another package adds parsers through an entry point of the group
``natbench.parsers`` (name = the parser's name in recipes, value = the function).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from natbench.duts.listing import MappingListing, add_numeric_rows
from natbench.plugins import PARSERS, Mapping, MappingTableBuilder, ParseError, Parser


def register_parser(name: str) -> Callable[[Parser], Parser]:
    """Decorator: register a parser under ``name`` in :data:`natbench.plugins.PARSERS` (names are unique: a name
    registered twice is a ConfigError naming both functions)."""

    def deco(fn: Parser) -> Parser:
        where = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
        PARSERS.register(name, fn, source=where)
        return fn

    return deco


def parser_names() -> list[str]:
    """All registered parser names (natbench's own and those of installed plugins)."""
    return PARSERS.names()


def get_parser(name: str) -> Parser:
    """The parser called ``name``; KeyError if there is none (a plugin that cannot be loaded: ConfigError)."""
    found = PARSERS.find(name)
    if found is None:
        raise KeyError(name)
    return found


# ---------------------------------------------------------------------------
# generic


@register_parser("text")
def parse_text(out: str) -> str:
    """The output, stripped."""
    return out.strip()


@register_parser("lines")
def parse_lines(out: str) -> list[str]:
    """Non-empty lines, stripped."""
    return [line.strip() for line in out.splitlines() if line.strip()]


@register_parser("int")
def parse_int(out: str) -> int:
    """A single integer (the only token of the output)."""
    tokens = out.split()
    if len(tokens) != 1 or not re.fullmatch(r"-?\d+", tokens[0]):
        raise ParseError("int", "expected one integer", out)
    return int(tokens[0])


@register_parser("float")
def parse_float(out: str) -> float:
    """A single decimal number."""
    tokens = out.split()
    try:
        if len(tokens) != 1:
            raise ValueError
        return float(tokens[0])
    except ValueError:
        raise ParseError("float", "expected one number", out) from None


@register_parser("json")
def parse_json(out: str) -> Any:
    """JSON output (e.g. ``nft -j``, ``ip -j``)."""
    try:
        return json.loads(out)
    except json.JSONDecodeError as exc:
        raise ParseError("json", f"not JSON: {exc.msg} at line {exc.lineno}", out) from None


def _number(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*(e[-+]?\d+)?", text, re.I):
        return float(text)
    return text


@register_parser("key_value")
def parse_key_value(out: str) -> dict[str, Any]:
    """``key=value`` or ``key: value`` lines (one pair per line; numbers become numbers).

    Lines without a separator are an error, blank lines and ``#`` comments are skipped.
    """
    facts: dict[str, Any] = {}
    for line in out.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"^([^=:]+?)\s*[=:]\s*(.*)$", s)
        if not m:
            raise ParseError("key_value", f"line without 'key=value' or 'key: value': {s!r}", out)
        facts[m.group(1).strip()] = _number(m.group(2).strip())
    return facts


@register_parser("cpu_list")
def parse_cpu_list(out: str) -> list[int]:
    """A kernel CPU list (``0-3,8,10-11``, as in /sys/devices/system/cpu/online) -> [0,1,2,3,8,10,11]."""
    text = out.strip()
    if not text:
        return []
    cpus: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise ParseError("cpu_list", f"bad CPU list item {part!r}", out)
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        cpus.extend(range(first, last + 1))
    return cpus


# ---------------------------------------------------------------------------
# conntrack


@register_parser("conntrack_count")
def parse_conntrack_count(out: str) -> int:
    """``conntrack -C``: the number of entries in the table."""
    try:
        return parse_int(out)
    except ParseError:
        raise ParseError("conntrack_count", "expected the single number 'conntrack -C' prints", out) from None


_CT_FIELD = re.compile(r"(\w+)=(\S+)")
_CT_OTHER = ("tcp", "icmp", "icmpv6", "sctp", "gre", "unknown", "dccp", "udplite")
_CT_FAST = re.compile(
    rb"^(?:ipv4 +2 +)?udp +17 +\d+ +(?:\S+ +)*?src=\S+ dst=\S+ sport=(\d+) dport=(\d+) "
    rb".*?src=\S+ dst=(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}) sport=\d+ dport=(\d+)",
    re.M,
)
"""One IPv4 UDP entry of ``conntrack -L`` (plain or ``-o extended``): the original tuple's ports, the reply
tuple's destination address (four octets) and port. A batch all of whose lines match is read in C (findall) and
numpy; any other batch line by line."""


def _conntrack_line(line: str, builder: MappingTableBuilder) -> None:
    """One line of ``conntrack -L``: a UDP entry into ``builder``; other protocols skipped; ParseError else."""
    s = line.strip()
    if not s or s.startswith("conntrack v"):  # blank, or the summary line if stderr was merged
        return
    proto = s.split()[0]
    if proto in _CT_OTHER:
        return
    if proto not in ("udp", "ipv4", "ipv6"):
        raise ParseError("conntrack_mappings", f"unexpected line {s[:80]!r}", s)
    if proto != "udp" and " udp " not in f" {s} ":
        return
    fields = _CT_FIELD.findall(s)
    src = [v for k, v in fields if k == "src"]
    dst = [v for k, v in fields if k == "dst"]
    sport = [v for k, v in fields if k == "sport"]
    dport = [v for k, v in fields if k == "dport"]
    if len(src) < 2 or len(dst) < 2 or len(sport) < 2 or len(dport) < 2:
        raise ParseError("conntrack_mappings", f"entry without both tuples: {s[:120]!r}", s)
    try:
        ports = (int(dport[1]), int(dport[0]), int(sport[0]))
        if not all(0 < p < 65536 for p in ports):
            raise ValueError
    except ValueError:
        raise ParseError("conntrack_mappings", f"bad port in {s[:120]!r}", s) from None
    builder.append(Mapping(public_address=dst[1], public_port=ports[0], remote_port=ports[1], private_port=ports[2]))


def _conntrack_batch(text: bytes, first_line: int, builder: MappingTableBuilder) -> None:
    """Whole lines of ``conntrack -L`` into ``builder``: all at once when every line is a plain IPv4 UDP entry
    (the listing of a NAT44 table), line by line otherwise."""
    found = _CT_FAST.findall(text)
    if found and len(found) == text.count(b"\n"):
        v = np.fromstring(b" ".join(itertools.chain.from_iterable(found)), dtype=np.int64, sep=" ")
        v = v.reshape(len(found), 7)
        # ports: public (reply dport), remote (original dport), private (original sport)
        if add_numeric_rows(builder, v[:, 2:6], v[:, [6, 1, 0]]):
            return
    for line in text.decode("utf-8", errors="replace").splitlines():
        _conntrack_line(line, builder)


parse_conntrack_mappings = MappingListing(
    "conntrack_mappings",
    _conntrack_batch,
    """``conntrack -L -p udp``: one mapping per UDP entry, as a :class:`~natbench.plugins.MappingTable`.

    The original tuple gives the private source port and the Responder port (its ``dport``); the reply tuple
    gives the public address and port the DUT chose (its ``dst`` and ``dport``). Non-UDP lines are skipped. It
    streams (:class:`~natbench.duts.listing.MappingListing`): 4,000,000 entries take 7 bytes each in natbench,
    never the 575 MB of text.""",
)
register_parser("conntrack_mappings")(parse_conntrack_mappings)


@register_parser("conntrack_stats")
def parse_conntrack_stats(out: str) -> dict[str, Any]:
    """``conntrack -S``: ``{"per_cpu": {cpu: {counter: n}}, "total": {counter: sum}}``."""
    per_cpu: dict[int, dict[str, int]] = {}
    for line in out.splitlines():
        s = line.strip()
        if not s:
            continue
        fields = dict(_CT_FIELD.findall(s))
        if "cpu" not in fields:
            raise ParseError("conntrack_stats", f"line without cpu=: {s[:80]!r}", out)
        try:
            cpu = int(fields.pop("cpu"))
            per_cpu[cpu] = {k: int(v) for k, v in fields.items()}
        except ValueError:
            raise ParseError("conntrack_stats", f"non-numeric counter in {s[:80]!r}", out) from None
    if not per_cpu:
        raise ParseError("conntrack_stats", "no per-CPU lines", out)
    total: dict[str, int] = {}
    for counters in per_cpu.values():
        for k, v in counters.items():
            total[k] = total.get(k, 0) + v
    return {"per_cpu": per_cpu, "total": total}


# ---------------------------------------------------------------------------
# /proc


_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@register_parser("proc_stat")
def parse_proc_stat(out: str) -> dict[str, dict[str, int]]:
    """/proc/stat CPU lines: ``{"cpu": {...}, "cpu0": {"user": ticks, ..., "idle": ticks}, ...}``.

    Values are cumulative USER_HZ ticks; the aggregate line is ``cpu``.
    """
    cpus: dict[str, dict[str, int]] = {}
    for line in out.splitlines():
        parts = line.split()
        if not parts or not re.fullmatch(r"cpu\d*", parts[0]):
            continue
        try:
            values = [int(v) for v in parts[1:]]
        except ValueError:
            raise ParseError("proc_stat", f"non-numeric CPU line {line[:80]!r}", out) from None
        if len(values) < 4:
            raise ParseError("proc_stat", f"short CPU line {line[:80]!r}", out)
        cpus[parts[0]] = dict(zip(_STAT_FIELDS, values, strict=False))
    if "cpu" not in cpus:
        raise ParseError("proc_stat", "no 'cpu' line", out)
    return cpus


@register_parser("meminfo")
def parse_meminfo(out: str) -> dict[str, int]:
    """/proc/meminfo: name -> bytes (``kB`` values multiplied by 1024)."""
    info: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+):\s+(\d+)(?:\s+(kB))?\s*$", line)
        if not m:
            if line.strip():
                raise ParseError("meminfo", f"unexpected line {line[:80]!r}", out)
            continue
        info[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    if not info:
        raise ParseError("meminfo", "no values", out)
    return info


@register_parser("slabinfo")
def parse_slabinfo(out: str) -> dict[str, dict[str, int]]:
    """/proc/slabinfo (version 2.x): cache name -> active_objs, num_objs, objsize, objperslab, pagesperslab."""
    caches: dict[str, dict[str, int]] = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith(("slabinfo", "#")):
            continue
        parts = line.split()
        try:
            caches[parts[0]] = {
                "active_objs": int(parts[1]),
                "num_objs": int(parts[2]),
                "objsize": int(parts[3]),
                "objperslab": int(parts[4]),
                "pagesperslab": int(parts[5]),
            }
        except (IndexError, ValueError):
            raise ParseError("slabinfo", f"unexpected line {line[:80]!r}", out) from None
    return caches


# ---------------------------------------------------------------------------
# nftables, tayga


@register_parser("nft_ruleset")
def parse_nft_ruleset(out: str) -> list[dict[str, Any]]:
    """``nft list ruleset`` text: ``[{"family", "name", "chains": [{"name", "hook", "rules": [...]}]}]``."""
    tables: list[dict[str, Any]] = []
    table: dict[str, Any] | None = None
    chain: dict[str, Any] | None = None
    for raw in out.splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = re.fullmatch(r"table (\w+) (\S+) \{", s)
        if m:
            table = {"family": m.group(1), "name": m.group(2), "chains": []}
            tables.append(table)
            continue
        m = re.fullmatch(r"chain (\S+) \{", s)
        if m:
            if table is None:
                raise ParseError("nft_ruleset", "chain outside a table", out)
            chain = {"name": m.group(1), "hook": None, "rules": []}
            table["chains"].append(chain)
            continue
        if s == "}":
            if chain is not None:
                chain = None
            else:
                table = None
            continue
        if chain is not None:
            m = re.match(r"type (\w+) hook (\w+)", s)
            if m:
                chain["type"], chain["hook"] = m.group(1), m.group(2)
            else:
                chain["rules"].append(s)
    return tables


@register_parser("tayga_map")
def parse_tayga_map(out: str) -> list[dict[str, Any]]:
    """tayga's ``dynamic.map`` (``<ipv4> <ipv6> <last-use>`` per line): the dynamic pool mappings."""
    rows: list[dict[str, Any]] = []
    for line in out.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if len(parts) != 3 or "." not in parts[0] or ":" not in parts[1] or not parts[2].isdigit():
            raise ParseError("tayga_map", f"unexpected line {s[:80]!r}", out)
        rows.append({"ipv4": parts[0], "ipv6": parts[1], "last_use": int(parts[2])})
    return rows
