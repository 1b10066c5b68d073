"""Jool and OpenBSD PF output parsers on the sample outputs of tests/data (see its README for provenance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.duts import parsers_jool_pf as p
from natbench.duts.parsers import get_parser
from natbench.plugins import Mapping, ParseError

DATA = Path(__file__).parent / "data"


def read(rel: str) -> str:
    return (DATA / rel).read_text()


def test_jool_stats_plain_from_docs() -> None:
    stats = p.parse_jool_stats(read("jool/stats-display.txt"))
    assert stats["JSTAT_SESSIONS"] == 8
    assert stats["JSTAT_BIB_ENTRIES"] == 5
    assert stats["JSTAT_SUCCESS"] == 35
    assert len(stats) == 7


def test_jool_stats_explain_skips_explanations() -> None:
    plain = p.parse_jool_stats(read("jool/stats-display.txt"))
    assert p.parse_jool_stats(read("jool/stats-display-explain.txt")) == plain


def test_jool_stats_csv_with_explanations() -> None:
    stats = p.parse_jool_stats(read("jool/stats-display-csv-explain.csv"))
    assert stats["JSTAT_SESSIONS"] == 6
    assert stats["JSTAT_BIB_ENTRIES"] == 4


def test_jool_stats_all_has_zero_counters_and_session_count() -> None:
    text = read("jool/stats-display-all.txt")
    stats = p.parse_jool_stats(text)
    assert stats["JSTAT_RECEIVED4"] == 0
    assert len(stats) == len([ln for ln in text.splitlines() if ln])
    assert p.jool_session_count(text) == 1_000_000


def test_jool_session_count_missing_counter() -> None:
    # plain `stats display` omits zero counters: an empty table prints nothing
    assert p.jool_session_count("", require=False) == 0
    with pytest.raises(ParseError, match="JSTAT_SESSIONS"):
        p.jool_session_count("JSTAT_SUCCESS: 3\n", require=True)


def test_jool_stats_garbage_names_the_line() -> None:
    with pytest.raises(ParseError, match="line 2"):
        p.parse_jool_stats("JSTAT_SUCCESS: 3\njool: error: instance 'x' does not exist\n")


def test_jool_sessions_docs_sample_tcp_and_icmp() -> None:
    rows = p.parse_jool_sessions_csv(read("jool/session-display-numeric-csv.csv"), protocol=None)
    assert rows[0] == Mapping(public_address="192.0.2.1", public_port=60477, remote_port=80, private_port=58239)
    assert len(rows) == 3
    assert p.parse_jool_sessions_csv(read("jool/session-display-numeric-csv.csv"), protocol="UDP") == []


def test_jool_sessions_udp_rows_without_state_column() -> None:
    rows = p.parse_jool_sessions_csv(read("jool/session-display-udp-numeric-csv.csv"))
    assert [(m.private_port, m.remote_port, m.public_port) for m in rows] == [
        (1, 1, 61001),
        (2, 1, 63277),
        (1, 2, 62148),
        (2, 2, 64990),
    ]
    # Jool does not preserve source ports
    assert any(m.private_port != m.public_port for m in rows)


def test_jool_sessions_bad_row() -> None:
    with pytest.raises(ParseError, match="jool session CSV, line 1"):
        p.parse_jool_sessions_csv("UDP,2001:2::2,x\n")


def test_jool_version() -> None:
    assert p.jool_version(read("jool/version-4.2.0-rc2.txt")) == (4, 1, 255, 3)
    assert p.jool_version(read("jool/version-4.1.6.txt")) == (4, 1, 6, 0)
    with pytest.raises(ParseError):
        p.jool_version("jool: command not found")


def test_pfctl_si_counts_states() -> None:
    info = p.parse_pfctl_info(read("pf/pfctl-si.txt"))
    assert info["current entries"] == 4_000_000
    assert info["inserts"] == 4_000_000
    assert info["counter.state-limit"] == 0
    assert p.parse_pfctl_info(read("pf/pfctl-si-empty.txt"))["current entries"] == 0


def test_pfctl_si_without_state_table_is_an_error() -> None:
    with pytest.raises(ParseError, match="current entries"):
        p.parse_pfctl_info("pfctl: /dev/pf: No such file or directory\n")


def test_pfctl_ss_vv_af_to_states() -> None:
    states = p.parse_pfctl_states(read("pf/pfctl-ss-vv-nat64.txt"))
    assert len(states) == 4
    first = states[0]
    assert first.a == ("198.19.0.1", 53412)
    assert first.a_orig == ("2001:2::2", 1)
    assert first.b_orig == ("64:ff9b::c613:2", 1)
    assert first.peer_states == "SINGLE:MULTIPLE"
    maps = p.pf_mappings(read("pf/pfctl-ss-vv-nat64.txt"))
    assert maps[1] == Mapping(public_address="198.19.0.1", public_port=60211, remote_port=1, private_port=2)


def test_pfctl_ss_vv_nat_to_states() -> None:
    maps = p.pf_mappings(read("pf/pfctl-ss-vv-nat44.txt"))
    assert [(m.private_port, m.public_port) for m in maps] == [(1, 58123), (2, 2), (3, 3)]


def test_pfctl_ss_bad_line() -> None:
    with pytest.raises(ParseError, match="pfctl -ss output, line 1"):
        p.parse_pfctl_states("No ALTQ support in kernel\n")


def test_registered_parsers_by_name() -> None:
    assert get_parser("jool_session_count")(read("jool/stats-display-all.txt")) == 1_000_000
    assert get_parser("jool_bib_count")(read("jool/stats-display-all.txt")) == 1_000_000
    assert len(get_parser("jool_mappings")(read("jool/session-display-udp-numeric-csv.csv"))) == 4
    assert get_parser("pfctl_state_count")(read("pf/pfctl-si.txt")) == 4_000_000
    assert len(get_parser("pf_mappings")(read("pf/pfctl-ss-vv-nat64.txt"))) == 4
    assert get_parser("jool_version")(read("jool/version-4.1.6.txt")) == "4.1.6.0"


def test_mapt_version_check() -> None:
    assert get_parser("jool_mapt_version")(read("jool/version-4.2.0-rc2.txt")) == "4.1.255.3"
    assert get_parser("jool_mapt_release")(read("jool/version-4.2.0-rc2.txt")) == "4.2.0-rc2"
    with pytest.raises(ParseError, match=r"Jool 4\.1\.6\.0 has no MAP-T: MAP-T exists only in Jool's 4\.2 release"):
        get_parser("jool_mapt_version")(read("jool/version-4.1.6.txt"))
    assert get_parser("jool_mapt_release")(read("jool/version-4.1.6.txt")).startswith("none")
