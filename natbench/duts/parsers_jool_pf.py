"""Parsers for Jool and OpenBSD PF command output (pure functions, no I/O).

Registered with :func:`natbench.duts.parsers.register_parser` (the parser registry,
:data:`natbench.plugins.PARSERS`, imports this module on its first look-up). Sample
outputs and where each came from: ``tests/data/README.md``.

=========================  =========================================  ==================
parser name                command                                    value
=========================  =========================================  ==================
``jool_stats``             ``jool stats display [--all|--explain]``   {counter: int}
``jool_session_count``     ``jool stats display --all``               JSTAT_SESSIONS
``jool_bib_count``         ``jool stats display --all``               JSTAT_BIB_ENTRIES
``jool_mappings``          ``jool session display --udp --numeric      MappingTable (streams)
                           --csv``
``jool_version``           ``jool --version``                         "4.1.255.3"
``jool_mapt_version``      ``jool_mapt --version``                    "4.1.255.3", error
                                                                      unless MAP-T exists
``pfctl_info``             ``pfctl -si``                              {counter: int}
``pfctl_state_count``      ``pfctl -si``                              current entries
``pf_mappings``            ``pfctl -ss -vv``                          MappingTable (streams)
=========================  =========================================  ==================
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from dataclasses import dataclass

import numpy as np

from natbench.duts.listing import MappingListing, add_numeric_rows
from natbench.duts.parsers import register_parser
from natbench.plugins import Mapping, MappingTableBuilder, ParseError

_STAT_LINE = re.compile(r"^(JSTAT[A-Z0-9_]*): (\d+)$")


def _bad(parser: str, what: str, line_no: int, line: str) -> ParseError:
    shown = line if len(line) <= 120 else line[:117] + "..."
    return ParseError(parser, f"cannot parse {what}, line {line_no}: {shown!r}")


def parse_jool_stats(text: str, explain: bool | None = None) -> dict[str, int]:
    """Counters of ``jool stats display`` (plain, ``--all``, ``--explain`` or ``--csv``).

    Plain output is ``NAME: value`` per line; ``--explain`` adds free text
    after each counter up to a blank line (detected by the blank lines when
    ``explain`` is None); ``--csv`` is ``Stat,Value[,Explanation]``.
    """
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    if first.startswith("Stat,Value") or (first.startswith("JSTAT") and "," in first and ":" not in first):
        return _parse_jool_stats_csv(text)
    if explain is None:
        explain = "\n\n" in text.strip()
    stats: dict[str, int] = {}
    in_explanation = False
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            in_explanation = False
            continue
        m = _STAT_LINE.match(line)
        if m:
            stats[m.group(1)] = int(m.group(2))
            in_explanation = explain
            continue
        if in_explanation:
            continue  # --explain text belongs to the counter above
        raise _bad("jool_stats", "jool stats output", no, line)
    return stats


def _parse_jool_stats_csv(text: str) -> dict[str, int]:
    stats: dict[str, int] = {}
    for no, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or row[:2] == ["Stat", "Value"]:
            continue
        if len(row) < 2 or not row[0].startswith("JSTAT") or not row[1].isdigit():
            raise _bad("jool_stats", "jool stats CSV", no, ",".join(row))
        stats[row[0]] = int(row[1])
    return stats


def jool_session_count(text: str, *, require: bool = True) -> int:
    """Sessions from ``jool stats display --all`` (``JSTAT_SESSIONS``).

    With ``require`` (the output came from ``--all``) a missing counter is an
    error; without it, a missing counter means zero (Jool omits zero counters).
    """
    stats = parse_jool_stats(text)
    if "JSTAT_SESSIONS" in stats:
        return stats["JSTAT_SESSIONS"]
    if require:
        raise ParseError("jool_session_count", "no JSTAT_SESSIONS counter (was it run with --all?)", text)
    return 0


_SESSION_HEADER = (
    "Protocol",
    "IPv6 Remote Address",
    "IPv6 Remote L4-ID",
    "IPv6 Local Address",
    "IPv6 Local L4-ID",
    "IPv4 Local Address",
    "IPv4 Local L4-ID",
    "IPv4 Remote Address",
    "IPv4 Remote L4-ID",
    "Expires in",
)


def _jool_session_row(row: list[str], no: int, protocol: str | None) -> Mapping | None:
    """One row of ``jool session display --numeric --csv``: its mapping, None for the header or another
    protocol's row; ParseError naming line ``no`` otherwise."""
    if not row or (row[0] == "Protocol" and tuple(row[: len(_SESSION_HEADER)]) == _SESSION_HEADER):
        return None
    if len(row) not in (10, 11) or row[0] not in ("TCP", "UDP", "ICMP"):
        raise _bad("jool_mappings", "jool session CSV", no, ",".join(row))
    if protocol is not None and row[0] != protocol:
        return None
    try:
        return Mapping(
            public_address=row[5], public_port=int(row[6]), remote_port=int(row[8]), private_port=int(row[2])
        )
    except ValueError:
        raise _bad("jool_mappings", "jool session CSV", no, ",".join(row)) from None


def parse_jool_sessions_csv(text: str, protocol: str | None = "UDP") -> list[Mapping]:
    """Mappings from ``jool session display --numeric --csv`` (header optional).

    Columns: protocol, IPv6 remote addr/port (the Initiator), IPv6 local
    addr/port (pool6 + server), IPv4 local addr/port (the pool4 mapping the
    Responder sees), IPv4 remote addr/port (the Responder), expiry, and for
    TCP the state. Rows of another protocol than ``protocol`` are skipped.
    """
    out: list[Mapping] = []
    for no, row in enumerate(csv.reader(io.StringIO(text)), 1):
        m = _jool_session_row(row, no, protocol)
        if m is not None:
            out.append(m)
    return out


_JOOL_FAST = re.compile(
    rb"^UDP,[^,\n]*,(\d+),[^,\n]*,[^,\n]*,(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}),(\d+),[^,\n]*,(\d+),[^,\n]*$",
    re.M,
)
"""One UDP row of ``jool session display --numeric --csv`` with an IPv4 pool4 address: the Initiator's port,
the public address (four octets), the public port, the Responder port."""


def _jool_sessions_batch(text: bytes, first_line: int, builder: MappingTableBuilder) -> None:
    """Whole lines of ``jool session display --udp --numeric --csv`` into ``builder``: all at once when every
    row is a plain UDP session (after an optional header), row by row otherwise."""
    lines = text.count(b"\n")
    header = first_line == 1 and text.startswith(b"Protocol,")
    found = _JOOL_FAST.findall(text)
    if found and len(found) == lines - header:
        v = np.fromstring(b" ".join(itertools.chain.from_iterable(found)), dtype=np.int64, sep=" ").reshape(-1, 7)
        # ports: public (IPv4 local), remote (IPv4 remote), private (IPv6 remote)
        if add_numeric_rows(builder, v[:, 1:5], v[:, [5, 6, 0]]):
            return
    rows = csv.reader(io.StringIO(text.decode("utf-8", errors="replace")))
    for no, row in enumerate(rows, first_line):
        m = _jool_session_row(row, no, "UDP")
        if m is not None:
            builder.append(m)


_VERSION = re.compile(r"^\s*(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?\s*$")


def jool_version(text: str) -> tuple[int, int, int, int]:
    """``jool --version`` output (``4.1.255.3``) as a tuple."""
    for line in text.splitlines():
        m = _VERSION.match(line)
        if m:
            return (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
    raise ParseError("jool_version", "cannot find a Jool version (N.N.N.N)", text)


# ---------------------------------------------------------------- OpenBSD PF

_INFO_LINE = re.compile(r"^\s{2,}([a-z][a-z0-9 -]*?)\s+(\d+)(?:\s+([0-9.]+)/s)?\s*$")


def parse_pfctl_info(text: str) -> dict[str, int]:
    """Counters of ``pfctl -si``: ``current entries``, ``searches``, ``inserts``,
    ``removals`` and the ``Counters`` block (``match``, ``state-limit``, ...).

    Keys of the Counters block are prefixed ``counter.``; a missing
    ``current entries`` line is an error.
    """
    values: dict[str, int] = {}
    section = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            section = line.split()[0] if line.split() else ""
            continue
        m = _INFO_LINE.match(line)
        if not m:
            continue  # interface stats with two columns etc.
        key = m.group(1).strip()
        if section == "Counters":
            key = "counter." + key
        elif section not in ("State",):
            key = f"{section.lower()}.{key}"
        values[key] = int(m.group(2))
    if "current entries" not in values:
        raise ParseError("pfctl_info", "no 'State Table / current entries' line", text)
    return values


_HOST = r"(?:\(\d+\) )?(?:[0-9.]+(?::\d+)?|[0-9a-fA-F:.]+(?:\[\d+\])?)"
_STATE_LINE = re.compile(
    rf"^(?P<ifname>\S+) (?P<proto>\S+) (?P<a>{_HOST})(?: \((?P<a_orig>{_HOST})\))?(?: \{{[^}}]*\}})?"
    rf" (?P<dir>->|<-) (?P<b>{_HOST})(?: \((?P<b_orig>{_HOST})\))?(?: \{{[^}}]*\}})?\s+(?P<states>\S+)$"
)


@dataclass(frozen=True)
class PfState:
    """One state of ``pfctl -ss`` (addresses as printed: ``addr`` and port)."""

    ifname: str
    """Interface the state is bound to (``all`` for floating states)."""
    proto: str
    """Protocol name (``udp``, ``tcp``, ...)."""
    direction: str
    """``->`` (outbound, or inbound af-to) or ``<-`` (inbound)."""
    a: tuple[str, int]
    """First printed host: for ``->`` the (translated) source."""
    a_orig: tuple[str, int] | None
    """The untranslated form of ``a`` (the private side) when PF translated it."""
    b: tuple[str, int]
    """Second printed host: for ``->`` the destination (the Responder)."""
    b_orig: tuple[str, int] | None
    """The untranslated form of ``b`` (for af-to: the IPv6 destination)."""
    peer_states: str
    """State levels ``src:dst`` (``SINGLE:NO_TRAFFIC``, ``MULTIPLE:MULTIPLE``, ...)."""


def _host(text: str) -> tuple[str, int]:
    text = re.sub(r"^\(\d+\) ", "", text)
    if text.endswith("]") and "[" in text:
        addr, port = text[:-1].split("[", 1)
        return addr, int(port)
    if text.count(":") == 1:
        addr, port = text.split(":")
        return addr, int(port)
    return text, 0


def _pf_state(raw: str, no: int) -> PfState | None:
    """One line of ``pfctl -ss``: its state, None for a detail or blank line; ParseError naming line ``no``."""
    if not raw.strip() or raw.startswith(" "):
        return None  # "   age ...", "   id: ...", "   [seq ...]" detail lines
    m = _STATE_LINE.match(raw.rstrip())
    if not m:
        raise _bad("pf_mappings", "pfctl -ss output", no, raw)
    return PfState(
        ifname=m["ifname"],
        proto=m["proto"],
        direction=m["dir"],
        a=_host(m["a"]),
        a_orig=_host(m["a_orig"]) if m["a_orig"] else None,
        b=_host(m["b"]),
        b_orig=_host(m["b_orig"]) if m["b_orig"] else None,
        peer_states=m["states"],
    )


def parse_pfctl_states(text: str) -> list[PfState]:
    """States of ``pfctl -ss`` with any verbosity (``-v``/``-vv`` detail lines are skipped)."""
    states: list[PfState] = []
    for no, raw in enumerate(text.splitlines(), 1):
        st = _pf_state(raw, no)
        if st is not None:
            states.append(st)
    return states


def _pf_mapping(st: PfState, proto: str) -> Mapping | None:
    """The mapping of a translated outbound state, None for any other."""
    if st.proto != proto or st.direction != "->" or st.a_orig is None:
        return None
    return Mapping(public_address=st.a[0], public_port=st.a[1], remote_port=st.b[1], private_port=st.a_orig[1])


def pf_mappings(text: str, proto: str = "udp") -> list[Mapping]:
    """Mappings of translated outbound states of ``pfctl -ss -vv`` (nat-to and af-to).

    For ``->`` states PF prints the translated source first and the original
    (private) source in parentheses, then the destination; states PF did not
    translate (no parentheses) and inbound ``<-`` states are not mappings.
    """
    out: list[Mapping] = []
    for st in parse_pfctl_states(text):
        m = _pf_mapping(st, proto)
        if m is not None:
            out.append(m)
    return out


def _pf_mappings_batch(text: bytes, first_line: int, builder: MappingTableBuilder) -> None:
    """Whole lines of ``pfctl -ss -vv`` into ``builder``, line by line (a state's detail lines are skipped, so
    the listing streams line by line)."""
    for no, raw in enumerate(text.decode("utf-8", errors="replace").splitlines(), first_line):
        st = _pf_state(raw, no)
        m = _pf_mapping(st, "udp") if st is not None else None
        if m is not None:
            builder.append(m)


# ---------------------------------------------------------------- registered parsers

MAPT_VERSIONS = {(4, 1, 255, 2): "4.2.0-rc1", (4, 1, 255, 3): "4.2.0-rc2", (4, 1, 255, 5): "4.2.0-rc3"}
"""Jool's internal version numbers of the 4.2 release candidates (``src/common/xlat.h`` at each tag)."""


def mapt_release(version: tuple[int, int, int, int]) -> str | None:
    """The 4.2 release candidate a Jool version is (MAP-T exists only there), or None.

    Jool numbers its 4.2 release candidates 4.1.255.N; an unknown 4.1.255.N is
    still a pre-4.2 development build of the MAP-T branch.
    """
    if version in MAPT_VERSIONS:
        return MAPT_VERSIONS[version]
    if version[:3] == (4, 1, 255):
        return f"4.2 pre-release ({'.'.join(map(str, version))})"
    return None


register_parser("jool_stats")(parse_jool_stats)


@register_parser("jool_session_count")
def _jool_session_count(out: str) -> int:
    return jool_session_count(out, require=True)


@register_parser("jool_bib_count")
def _jool_bib_count(out: str) -> int:
    stats = parse_jool_stats(out)
    if "JSTAT_BIB_ENTRIES" not in stats:
        raise ParseError("jool_bib_count", "no JSTAT_BIB_ENTRIES counter (was it run with --all?)", out)
    return stats["JSTAT_BIB_ENTRIES"]


register_parser("jool_mappings")(
    MappingListing(
        "jool_mappings",
        _jool_sessions_batch,
        "``jool session display --udp --numeric --csv``: the UDP sessions as a MappingTable (streams).",
    )
)


@register_parser("jool_version")
def _jool_version(out: str) -> str:
    return ".".join(str(n) for n in jool_version(out))


@register_parser("jool_mapt_version")
def _jool_mapt_version(out: str) -> str:
    v = jool_version(out)
    text = ".".join(str(n) for n in v)
    if mapt_release(v) is None:
        raise ParseError(
            "jool_mapt_version",
            f"Jool {text} has no MAP-T: MAP-T exists only in Jool's 4.2 release candidates "
            "(4.1.255.x = 4.2.0-rc1..rc3, the 'mapt' branch); install one of those on this DUT",
            out,
        )
    return text


@register_parser("jool_mapt_release")
def _jool_mapt_release(out: str) -> str:
    return mapt_release(jool_version(out)) or "none (no MAP-T in this Jool)"


register_parser("pfctl_info")(parse_pfctl_info)


@register_parser("pfctl_state_count")
def _pfctl_state_count(out: str) -> int:
    return parse_pfctl_info(out)["current entries"]


register_parser("pf_mappings")(
    MappingListing(
        "pf_mappings", _pf_mappings_batch, "``pfctl -ss -vv``: the translated UDP states as a MappingTable (streams)."
    )
)
