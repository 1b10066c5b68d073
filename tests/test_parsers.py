"""Parsers on real outputs captured on the development machine (tests/data/linux/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.duts.parsers import (
    get_parser,
    parse_conntrack_count,
    parse_conntrack_mappings,
    parse_conntrack_stats,
    parse_cpu_list,
    parse_key_value,
    parse_meminfo,
    parse_nft_ruleset,
    parse_proc_stat,
    parse_slabinfo,
    parse_tayga_map,
    parser_names,
)
from natbench.plugins import Mapping, ParseError

DATA = Path(__file__).parent / "data" / "linux"


def data(name: str) -> str:
    return (DATA / name).read_text()


def test_conntrack_count() -> None:
    assert parse_conntrack_count(data("conntrack-C.txt")) == 6
    assert parse_conntrack_count(data("conntrack-C-empty.txt")) == 0
    assert parse_conntrack_count(data("tayga-conntrack-C.txt")) == 8
    with pytest.raises(ParseError, match="conntrack_count"):
        parse_conntrack_count(data("conntrack-F.stderr.txt"))
    with pytest.raises(ParseError, match="no output"):
        parse_conntrack_count("")


def test_conntrack_mappings_nat44() -> None:
    maps = parse_conntrack_mappings(data("conntrack-L.txt"))
    assert len(maps) == 6
    assert {(m.private_port, m.remote_port) for m in maps} == {
        (sp, dp) for sp in (10000, 10001, 10002) for dp in (80, 81)
    }
    # MASQUERADE kept the source ports (no clash) and used the DUT's public address
    assert all(m.public_address == "198.19.0.1" and m.public_port == m.private_port for m in maps)
    assert parse_conntrack_mappings(data("conntrack-L-empty.txt")) == []


def test_conntrack_mappings_tayga_nat64() -> None:
    maps = parse_conntrack_mappings(data("tayga-conntrack-L.txt"))
    assert len(maps) == 8
    assert Mapping("198.19.0.1", 30002, 80, 30002) in maps


def test_conntrack_mappings_skips_other_protocols_and_rejects_garbage() -> None:
    tcp = (
        "tcp      6 431999 ESTABLISHED src=1.1.1.1 dst=2.2.2.2 sport=1 dport=2 "
        "src=2.2.2.2 dst=1.1.1.1 sport=2 dport=1 [ASSURED] mark=0 use=1"
    )
    assert parse_conntrack_mappings(tcp + "\n" + data("conntrack-L.txt")) == parse_conntrack_mappings(
        data("conntrack-L.txt")
    )
    with pytest.raises(ParseError, match="unexpected line"):
        parse_conntrack_mappings("Operation not permitted\n")
    with pytest.raises(ParseError, match="both tuples"):
        parse_conntrack_mappings("udp      17 29 src=198.18.0.2 dst=198.19.0.2 sport=10000 dport=81\n")


def test_conntrack_stats() -> None:
    st = parse_conntrack_stats(data("conntrack-S.txt"))
    assert sorted(st["per_cpu"]) == [0, 1]
    assert {"found", "invalid", "insert", "insert_failed", "drop", "early_drop", "error"} <= set(st["total"])
    assert st["total"]["insert"] == sum(c["insert"] for c in st["per_cpu"].values())
    synthetic = "cpu=0 found=1 insert=5\ncpu=1 found=2 insert=7\n"
    assert parse_conntrack_stats(synthetic)["total"] == {"found": 3, "insert": 12}
    with pytest.raises(ParseError):
        parse_conntrack_stats("")


def test_proc_stat() -> None:
    st = parse_proc_stat(data("proc-stat.txt"))
    assert set(st) == {"cpu", "cpu0", "cpu1"}
    assert st["cpu0"]["idle"] == 61264 and st["cpu1"]["user"] == 7553
    assert abs(st["cpu"]["idle"] - (st["cpu0"]["idle"] + st["cpu1"]["idle"])) < 10  # the kernel sums at its own moment
    with pytest.raises(ParseError, match="no 'cpu' line"):
        parse_proc_stat("intr 1 2 3\n")


def test_meminfo_and_slabinfo() -> None:
    mem = parse_meminfo(data("meminfo.txt"))
    assert mem["MemAvailable"] == 24375568 * 1024
    slab = parse_slabinfo(data("slabinfo.txt"))
    assert slab["nf_conntrack"]["objsize"] == 256 and slab["nf_conntrack"]["active_objs"] == 16


def test_nft_ruleset() -> None:
    tables = parse_nft_ruleset(data("nft-list-ruleset.txt"))
    assert [(t["family"], t["name"]) for t in tables] == [("ip", "nat"), ("inet", "natbench_capture")]
    chain = tables[1]["chains"][0]
    assert chain["name"] == "post" and chain["hook"] == "postrouting" and chain["type"] == "nat"
    assert chain["rules"] == ['oifname "cap10894e" masquerade']
    js = get_parser("json")(data("nft-list-ruleset.json"))
    assert any("table" in x for x in js["nftables"])


def test_tayga_dynamic_map() -> None:
    rows = parse_tayga_map(data("tayga-dynamic-map.txt"))
    assert rows == [{"ipv4": "10.127.5.32", "ipv6": "2001:2::2", "last_use": 1795317889}]
    with pytest.raises(ParseError):
        parse_tayga_map("10.0.0.1 nonsense\n")


def test_generic_parsers() -> None:
    assert parse_key_value("model name\t: AMD EPYC\nx=3\n# c\n") == {"model name": "AMD EPYC", "x": 3}
    assert get_parser("text")(data("iptables-version.txt")) == "iptables v1.8.9 (nf_tables)"
    assert get_parser("lines")(data("iptables-nat-S.txt"))[-1] == "-A POSTROUTING -o cap10894e -j MASQUERADE"
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    with pytest.raises(ParseError):
        parse_cpu_list("0-x")
    assert get_parser("float")("1.5\n") == 1.5
    with pytest.raises(ParseError):
        parse_key_value("no separator here")


def test_registry_lists_every_parser_the_recipes_use() -> None:
    names = parser_names()
    for name in ("conntrack_count", "conntrack_mappings", "conntrack_stats", "proc_stat", "meminfo", "nft_ruleset",
                 "tayga_map", "key_value", "int", "text", "lines", "cpu_list", "json"):  # fmt: skip
        assert name in names
