"""The DUT's table read in bounded memory: MappingTable, the streaming listing parsers, streaming executors and
RecipeDut.mappings reading a listing as it arrives (issue 30, TRex read mode at millions of connections)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest

from natbench.duts.executors import CommandTimeout, LocalExecutor, NetnsExecutor
from natbench.duts.listing import MAX_LINE
from natbench.duts.parsers import get_parser, parse_conntrack_mappings
from natbench.duts.parsers_jool_pf import parse_jool_sessions_csv, pf_mappings
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import parse_recipe
from natbench.duts.steps import can_stream
from natbench.errors import DutError
from natbench.plugins import CommandResult, Mapping, MappingTable, MappingTableBuilder, ParseError, StreamingParser
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

DATA = Path(__file__).parent / "data"


def ct_line(sport: int, dport: int, public: str = "198.19.0.1", public_port: int | None = None) -> str:
    return (
        f"udp      17 298 src=198.18.0.2 dst=198.19.0.2 sport={sport} dport={dport} [UNREPLIED] "
        f"src=198.19.0.2 dst={public} sport={dport} dport={public_port or sport} mark=0 use=1\n"
    )


def listing(n_src: int, n_dst: int) -> str:
    return "".join(ct_line(1024 + s, 80 + d) for d in range(n_dst) for s in range(n_src))


def feed_in_pieces(parser: StreamingParser, text: str, seed: int = 1) -> MappingTable:
    """The listing fed as an executor would: in pieces cut anywhere, lines split across them."""
    data = text.encode()
    rng = random.Random(seed)
    sink = parser.stream()
    i = 0
    while i < len(data):
        j = i + rng.randint(1, 70_000)
        sink.feed(data[i:j])
        i = j
    table = sink.finish()
    assert isinstance(table, MappingTable)
    return table


# ------------------------------------------------------------------------------------------------ the table


def test_a_mapping_table_is_a_sequence_of_mappings_in_seven_bytes_each() -> None:
    maps = [Mapping("198.19.0.1", 1024 + i, 80 + i % 3, 1024 + i) for i in range(10)]
    maps.append(Mapping("198.19.0.7", 5000, 81, None))
    table = MappingTable.of(maps)
    assert len(table) == 11 and list(table) == maps and table == maps and table[3] == maps[3]
    assert table[-1] == Mapping("198.19.0.7", 5000, 81, None)  # an untold private port stays untold
    assert table.addresses == ("198.19.0.1", "198.19.0.7") and table.address.dtype == np.uint8
    assert table.nbytes == 7 * 11 and not table.private_ports_known
    assert table[2:5] == maps[2:5] and isinstance(table[2:5], MappingTable)
    assert MappingTable.of(table) is table
    assert MappingTable.concat([table[:4], table[4:]]) == table
    assert table.ipv4_addresses()[-1] == (198 << 24) | (19 << 16) | 7
    assert not table.public_port.flags.writeable  # the columns cannot be changed behind a tester's back
    assert Mapping("198.19.0.7", 5000, 81, None) in table and table != maps[:-1]
    with pytest.raises(ValueError, match=r"0\.\.65535"):
        MappingTable.of([Mapping("198.19.0.1", 70000, 80, 1)])


def test_tables_with_the_same_rows_are_equal_whatever_their_address_order() -> None:
    a = MappingTable(["198.19.0.1", "198.19.0.2"], [0, 1], [1, 2], [80, 80], [1, 2])
    b = MappingTable(["198.19.0.2", "198.19.0.1"], [1, 0], [1, 2], [80, 80], [1, 2])
    c = MappingTable(["198.19.0.2", "198.19.0.1"], [0, 1], [1, 2], [80, 80], [1, 2])
    assert a == b and hash(a) == hash(b) and a != c


def test_the_builder_joins_blocks_mappings_and_tables_in_order() -> None:
    builder = MappingTableBuilder()
    builder.append(Mapping("198.19.0.9", 7, 8, 9))
    i = builder.address_index("198.19.0.1")
    builder.add_columns(np.array([i, i]), np.array([10, 11]), np.array([80, 81]), np.array([10, 11]))
    builder.add_table(MappingTable.of([Mapping("198.19.0.9", 12, 82, None)]))
    table = builder.build()
    assert list(table) == [
        Mapping("198.19.0.9", 7, 8, 9),
        Mapping("198.19.0.1", 10, 80, 10),
        Mapping("198.19.0.1", 11, 81, 11),
        Mapping("198.19.0.9", 12, 82, None),
    ]
    assert len(builder) == 0  # built: the builder let its blocks go


# ------------------------------------------------------------------------------------------------ parsers


def test_conntrack_listing_streamed_in_pieces_equals_the_listing_parsed_whole() -> None:
    text = listing(300, 40)  # 12,000 entries, 1.7 MB: several batches
    whole = parse_conntrack_mappings(text)
    assert len(whole) == 12_000 and whole.nbytes == 7 * 12_000
    assert feed_in_pieces(parse_conntrack_mappings, text) == whole
    # the slow path (a batch with a line the fast one does not take) reads the same entries
    tcp = (
        "tcp      6 431999 ESTABLISHED src=1.1.1.1 dst=2.2.2.2 sport=1 dport=2 "
        "src=2.2.2.2 dst=1.1.1.1 sport=2 dport=1 [ASSURED] mark=0 use=1\n"
    )
    assert parse_conntrack_mappings(tcp + text) == whole
    assert list(whole[:2]) == [Mapping("198.19.0.1", 1024, 80, 1024), Mapping("198.19.0.1", 1025, 80, 1025)]


def test_the_fast_conntrack_path_reads_what_the_line_by_line_path_reads() -> None:
    lines = [ct_line(1024 + i, 80 + i % 7, f"198.19.0.{1 + i % 3}", 30000 + i) for i in range(500)]
    extended = ["ipv4     2 " + ln for ln in lines[:5]]
    fast = parse_conntrack_mappings("".join(lines + extended))
    slow = parse_conntrack_mappings("\n" + "".join(lines + extended))  # a blank line sends the batch the slow way
    assert fast == slow and len(fast) == 505
    assert fast[1] == Mapping("198.19.0.2", 30001, 81, 1025)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Operation not permitted\n", "unexpected line"),
        ("udp      17 29 src=198.18.0.2 dst=198.19.0.2 sport=10000 dport=81\n", "both tuples"),
        (ct_line(1024, 80, public_port=70000), "bad port"),
        (listing(3, 1) + "garbage line\n", "unexpected line"),
    ],
)
def test_a_conntrack_listing_it_cannot_read_is_a_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_conntrack_mappings(text)
    with pytest.raises(ParseError, match=message):
        feed_in_pieces(parse_conntrack_mappings, text)


def test_a_line_without_end_is_refused_in_bounded_memory() -> None:
    sink = parse_conntrack_mappings.stream()
    with pytest.raises(ParseError, match="longer than"):
        for _ in range(5):
            sink.feed(b"x" * (MAX_LINE // 2))


def test_jool_and_pf_listings_stream_to_the_table_their_list_parsers_give() -> None:
    jool = (DATA / "jool" / "session-display-udp-numeric-csv.csv").read_text()
    many = jool + "".join(f"UDP,2001:2::2,{i},64:ff9b::c613:2,1,198.19.0.1,{2000 + i},198.19.0.2,1,0:59:58\n"
                          for i in range(1, 30_000))  # fmt: skip
    parser = get_parser("jool_mappings")
    assert isinstance(parser, StreamingParser)
    assert parser(many) == parse_jool_sessions_csv(many) and len(parser(many)) == 4 + 29_999
    assert feed_in_pieces(parser, many) == parse_jool_sessions_csv(many)
    mixed = jool.replace("UDP,2001:2::2,2,", "TCP,2001:2::2,2,", 1)  # another protocol's row: the slow path
    assert parser(mixed) == parse_jool_sessions_csv(mixed) and len(parser(mixed)) == 3
    with pytest.raises(ParseError, match="line 3"):
        parser(jool.replace("UDP,2001:2::2,2,", "XXX,", 1))
    pf_text = (DATA / "pf" / "pfctl-ss-vv-nat44.txt").read_text()
    pf = get_parser("pf_mappings")
    assert pf(pf_text) == pf_mappings(pf_text) and feed_in_pieces(pf, pf_text * 50) == pf_mappings(pf_text * 50)


# ------------------------------------------------------------------------------------------------ executors


def test_the_local_executor_streams_output_in_pieces_and_keeps_stderr() -> None:
    pieces: list[bytes] = []
    res = LocalExecutor().run_streaming("seq 1 200000; echo oops >&2; exit 3", pieces.append)
    assert res.returncode == 3 and res.stdout == "" and res.stderr == "oops\n"
    assert b"".join(pieces).split() == [str(i).encode() for i in range(1, 200001)]
    assert len(pieces) > 1


def test_a_sink_that_refuses_the_output_stops_the_command_at_once() -> None:
    seen = 0

    def sink(data: bytes) -> None:
        nonlocal seen
        seen += len(data)
        if seen > 1 << 20:
            raise ParseError("x", "enough")

    t0 = time.monotonic()
    with pytest.raises(ParseError, match="enough"):
        LocalExecutor().run_streaming("yes natbench", sink, timeout=60)
    assert time.monotonic() - t0 < 10  # ``yes`` never ends by itself: it was killed


def test_a_streamed_command_times_out_like_any_other() -> None:
    with pytest.raises(CommandTimeout):
        LocalExecutor().run_streaming("echo hi; sleep 30", lambda _: None, timeout=0.5)


class _Plain:
    """An executor that cannot stream (only ``run``)."""

    description = "plain"
    namespaced = False

    def __init__(self) -> None:
        self.inner = LocalExecutor()

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        return self.inner.run(command, timeout=timeout, check=check)

    def host(self) -> _Plain:
        return self

    def close(self) -> None: ...


def test_a_namespace_executor_streams_only_when_the_executor_it_wraps_does() -> None:
    assert can_stream(LocalExecutor()) and can_stream(NetnsExecutor("nb-x"))
    assert not can_stream(NetnsExecutor("nb-x", _Plain()))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ the DUT

RECIPE = """\
recipe: listing
stateful: true
params:
  file: {type: str, required: true}
steps:
  setup:
    - "true"
  teardown:
    - "true"
  show_mappings:
    - run: cat {{ file }}
      parse: conntrack_mappings
"""

POINT = WorkingPoint(0, PortRange(1024, 1223), PortRange(80, 129), 64)


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "read whole"])
def test_a_recipe_dut_reads_its_listing_into_one_table(tmp_path: Path, streams: bool) -> None:
    path = tmp_path / "ct"
    path.write_text(listing(200, 50))
    executor = LocalExecutor() if streams else _Plain()
    dut = RecipeDut("d", parse_recipe(RECIPE, "listing.yaml"), executor, {"file": str(path)})  # type: ignore[arg-type]
    dut.setup(POINT)
    table = dut.mappings()
    assert isinstance(table, MappingTable) and len(table) == 10_000
    assert table == parse_conntrack_mappings(path.read_text())
    (record,) = dut.run_step("show_mappings", stream=True).records
    assert len(record.stdout) == (0 if streams else path.stat().st_size)  # streamed: natbench kept no text
    path.write_text("Operation not permitted\n")
    with pytest.raises(DutError, match="step show_mappings: parser conntrack_mappings: unexpected line"):
        dut.mappings()
    path.unlink()
    with pytest.raises(DutError, match="exit status 1"):
        dut.mappings()
