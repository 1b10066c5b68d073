"""TRex at millions of connections (issue 30, item 3; issue 31, item 6): streams uploaded once per fill and run at
each trial's rate by TRex's multiplier, read-mode tuples as columns, the tagged frames' schedule.

Counters come out of the TRex client library's own stats classes (tests/trex_fakes.LibrarySession), streams are
built by the real client library, and the multiplier strings are parsed by the library's own ``decode_multiplier``.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from trex_fakes import LibrarySession, raw_port

from natbench.judging import judge_phase
from natbench.plugins import Directions, MappingTable, Phase2Options
from natbench.results import Direction, Verdict
from natbench.testers.trex.backend import check_settings
from natbench.testers.trex.program import MAX_LIST
from natbench.testers.trex.tester import UPLOAD_BATCH, UPLOAD_VALUES, TRexTester, multiplier, tag_schedule
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")

SETTINGS = {"server": "127.0.0.1", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}
READ = TrafficPlan(
    Family.NAT44,
    AddressPlan.default(Family.NAT44),
    PortRange(1024, 1723),
    PortRange(80, 179),
    64,
    7,
    ResponderMode.READ,
)


def decode(mult: str) -> dict[str, Any]:
    from natbench.testers.trex.client import load_api

    load_api()
    parsing = importlib.import_module("trex.utils.parsing_opts")
    out = parsing.decode_multiplier(mult, allow_update=False)
    assert out, f"the client library refuses mult {mult!r}"
    return dict(out)


def table_of(n: int, shift: int = 0) -> MappingTable:
    """A port-preserving NAT's n mappings of READ's ranges (700 source x 100 destination ports)."""
    k = np.arange(n, dtype=np.int64)
    sport = (1024 + (k + shift) % 700).astype(np.uint16)
    return MappingTable(["198.19.0.1"], np.zeros(n, np.uint8), sport, (80 + k // 700 % 100).astype(np.uint16), sport)


class Recording(LibrarySession):
    """A session whose trials' counters the test sets, recording what was loaded and how traffic was started."""

    def __init__(self) -> None:
        zero = raw_port()
        super().__init__({0: zero, 1: zero}, {0: zero, 1: zero})
        self.loads: list[tuple[int, list[int]]] = []
        self.starts: list[dict[str, Any]] = []
        self.streams: dict[int, list[Any]] = {}

    def load(self, port: int, batches: Any) -> None:
        sizes = []
        self.streams[port] = []
        for batch in batches:  # built by the real client library, batch by batch
            sizes.append(len(batch))
            self.streams[port].extend(batch)
        self.loads.append((port, sizes))

    def start(self, ports: list[int], **kw: Any) -> None:
        self.starts.append({"ports": list(ports), **kw})
        super().start(ports, **kw)

    def counts(self, forward: tuple[int, int], reverse: tuple[int, int] | None = None, wall: float = 2.0) -> None:
        """The next trial's counters: (sent, received) per direction (port 0 sends forward, port 1 reverse), and
        its seconds from start to idle."""
        self.wall = wall
        rs, rr = reverse or (0, 0)
        fs, fr = forward
        self.after = {0: raw_port(opackets=fs, ipackets=rr), 1: raw_port(opackets=rs, ipackets=fr)}


def make_tester(session: Recording, plan: TrafficPlan = READ) -> TRexTester:
    t = TRexTester(check_settings(dict(SETTINGS)), session=session)  # type: ignore[arg-type]
    t.prepare(plan)
    t.set_receive_timeout(0.0)
    return t


def test_the_multiplier_is_a_plain_decimal_the_client_library_reads_as_the_factor() -> None:
    for factor in (1.0, 2.0, 0.5, 1.5, 1 / 3, 7.25e-6, 0.001, 123.456789, 4e6):
        mult = multiplier(factor)
        parsed = decode(mult)
        assert parsed["type"] == "raw" and parsed["value"] == pytest.approx(factor, rel=1e-8), mult
    assert multiplier(2.0) == "2.0" and multiplier(1.5) == "1.5"


def test_a_search_on_one_fill_uploads_its_streams_once_and_runs_every_rate_by_the_multiplier() -> None:
    s = Recording()
    t = make_tester(s)
    table = table_of(70_000)  # two reverse streams (65,535 + 4,465 tuples)
    options = Phase2Options(mappings=table)
    results = []
    for rate in (10_000.0, 20_000.0, 15_000.0):
        frames = int(rate * 2)
        s.counts((frames, frames), (frames, frames))
        results.append(t.phase2(rate, 2.0, Directions.BIDIRECTIONAL, options))
    assert [r.extra["uploaded"] for r in results] == [True, False, False]
    assert "upload_s" in results[0].extra and "upload_s" not in results[1].extra
    # each port loaded once, for the first trial only: forward one random-port stream, reverse two mapping streams
    assert s.loads == [(0, [1]), (1, [2])] and all(b <= UPLOAD_BATCH for _, sizes in s.loads for b in sizes)
    mults = [st["mult"] for st in s.starts]
    assert [decode(m)["value"] for m in mults] == pytest.approx([1.0, 2.0, 1.5])
    assert all(r.tester_ok for r in results), [r.tester_note for r in results]
    # the uploaded reverse lists are the table's columns in the seeded random order, split at 65,535 tuples
    rev = [st.to_json()["vm"]["instructions"] for st in s.streams[1]]
    lists = [[i["value_list"] for i in ins if i["type"] == "flow_var"] for ins in rev]
    assert [len(v[0]) for v in lists] == [MAX_LIST, 70_000 - MAX_LIST]
    got = sorted(zip(lists[0][0] + lists[1][0], lists[0][1] + lists[1][1], strict=True))
    assert got == sorted(zip(table.remote_port.tolist(), table.public_port.tolist(), strict=True))


def test_streams_go_to_the_server_a_few_at_a_time_and_big_ones_alone() -> None:
    # 300,000 tuples: five streams of up to 65,535 tuples (two lists each), each in its own add_streams call, so
    # that no call holds the server's RPC thread for long (its watchdog aborts a command after about a second)
    s = Recording()
    t = make_tester(s)
    s.counts((0, 0), (600_000, 600_000))
    r = t.phase2(300_000.0, 2.0, Directions.REVERSE, Phase2Options(mappings=table_of(300_000)))
    assert r.tester_ok, r.tester_note
    assert s.loads == [(0, []), (1, [1, 1, 1, 1, 1])] and r.extra["streams"] == 5
    assert 2 * MAX_LIST <= UPLOAD_VALUES < 4 * MAX_LIST
    # streams without lists: UPLOAD_BATCH per call (65,535-port ranges split in two uniform blocks: 2 x 2 random
    # streams per direction, plus a latency stream)
    full = TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1, 65535), PortRange(1, 65535), 64, 7,
        ResponderMode.COMPUTE,
    )  # fmt: skip
    c = Recording()
    ct = make_tester(c, full)
    c.counts((2_000_000, 2_000_000), (2_000_000, 2_000_000))
    ct.phase2(1e6, 2.0, Directions.BIDIRECTIONAL, Phase2Options(latency=True))
    assert c.loads == [(0, [UPLOAD_BATCH, 5 - UPLOAD_BATCH]), (1, [UPLOAD_BATCH, 5 - UPLOAD_BATCH])]


def test_every_trial_is_judged_against_its_own_rate_when_the_streams_are_reused() -> None:
    s = Recording()
    t = make_tester(s)
    options = Phase2Options(mappings=table_of(10_000))
    s.counts((20_000, 20_000), (20_000, 20_000))
    assert t.phase2(10_000.0, 2.0, Directions.BIDIRECTIONAL, options).tester_ok
    # at twice the rate on the same streams: 3 % too many frames one way, 3 % too few the other
    s.counts((41_200, 41_200), (38_800, 38_800))
    r = t.phase2(20_000.0, 2.0, Directions.BIDIRECTIONAL, options)
    assert not r.extra["uploaded"] and not r.tester_ok
    assert "forward: sent 41200 frames for 40000 intended (3.00% over)" in r.tester_note
    assert "reverse: sent 38800 of 40000 frames (97.00%)" in r.tester_note
    assert judge_phase(r, 0.0, 0.01)[0] is Verdict.INVALID


def test_a_new_fill_a_latency_trial_or_another_phase_uploads_again() -> None:
    s = Recording()
    t = make_tester(s)
    first = Phase2Options(mappings=table_of(5_000))
    s.counts((2_000, 2_000), (2_000, 2_000))
    t.phase2(1_000.0, 2.0, Directions.BIDIRECTIONAL, first)
    t.phase2(1_500.0, 2.0, Directions.BIDIRECTIONAL, first)
    assert len(s.loads) == 2
    refilled = Phase2Options(mappings=table_of(5_000, shift=3))  # the DUT's table after a refill
    t.phase2(1_500.0, 2.0, Directions.BIDIRECTIONAL, refilled)
    assert len(s.loads) == 4 and decode(s.starts[-1]["mult"])["value"] == 1.0
    # a latency stream keeps its own rate (tags per second): compiled for each trial's rate
    tagged = Phase2Options(mappings=refilled.mappings, latency=True, latency_rate=100.0)
    t.phase2(1_500.0, 2.0, Directions.BIDIRECTIONAL, tagged)
    t.phase2(2_000.0, 2.0, Directions.BIDIRECTIONAL, tagged)
    assert len(s.loads) == 8 and [decode(st["mult"])["value"] for st in s.starts[-2:]] == [1.0, 1.0]
    # phase 1 of a cps search: one upload, then the multiplier; the public port is emptied
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1024, 1123),
        PortRange(80, 89),
        64,
        7,
        ResponderMode.COMPUTE,
    )
    c = Recording()
    ct = make_tester(c, plan)
    for rate in (1_000.0, 4_000.0):
        c.counts((1_000, 1_000), wall=1_000 / rate)
        r = ct.phase1(rate, learn=False)
        assert r.tester_ok, r.tester_note
    assert [(p, sum(b)) for p, b in c.loads] == [(0, 1), (1, 0)]
    assert [decode(st["mult"])["value"] for st in c.starts] == [1.0, 4.0]


def test_read_mode_validation_sends_its_chained_bursts_in_one_batch() -> None:
    s = Recording()
    t = make_tester(s)
    t.load_mappings(table_of(70_000))
    s.counts((0, 0), (70_000, 70_000), wall=0.7)
    r = t.validate(100_000.0)
    assert r.tester_ok, r.tester_note
    (_, private), (_, public) = s.loads
    assert private == [] and public == [2]  # v_0 -> v_1 (next): the library resolves next within one call
    assert r.counts[Direction.REVERSE].sent == 70_000


def test_compute_mode_with_moved_ports_is_refused_from_the_columns() -> None:
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1024, 1723),
        PortRange(80, 179),
        64,
        7,
        ResponderMode.COMPUTE,
    )
    t = make_tester(Recording(), plan)
    moved = MappingTable(["198.19.0.1"], [0, 0], [1024, 40000], [80, 80], [1024, 1025])
    with pytest.raises(Exception, match=r"changed 1 source ports \(e\.g\. 1025 -> 40000\)"):
        t.phase2(1_000.0, 2.0, Directions.BIDIRECTIONAL, Phase2Options(mappings=moved))


# ------------------------------------------------------------------------------------------------ tagged frames


def test_tagged_frames_are_spread_over_the_window_and_the_trial_records_when() -> None:
    """RFC 8219 7.2 in a 120 s trial at 100,000 fps: 500 tags per direction from 60 s, evenly: 8.33 per second
    until 119.88 s (not 500 at min(1000, rate / 2) per second, half a second)."""
    s = Recording()
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1024, 1723),
        PortRange(80, 179),
        64,
        7,
        ResponderMode.COMPUTE,
    )
    t = make_tester(s, plan)
    s.counts((12_000_000, 12_000_000), (12_000_000, 12_000_000))
    r = t.phase2(100_000.0, 120.0, Directions.BIDIRECTIONAL, Phase2Options(latency=True, latency_delay=60.0,
                                                                           latency_frames=500))  # fmt: skip
    sched = r.extra["tag_schedule"]
    assert sched["from_s"] == 60.0 and sched["per_s"] == pytest.approx(500 / 60)
    assert sched["until_s"] == pytest.approx(60 + 499 * 60 / 500) and sched["sent"] == 500
    assert sched["spread"] == "even" and not sched["capped"]
    lat = [st.to_json() for st in s.streams[0] if st.to_json()["flow_stats"].get("enabled")]
    assert lat[0]["isg"] == pytest.approx(60e6) and lat[0]["mode"]["total_pkts"] == 500
    assert lat[0]["mode"]["rate"]["value"] == pytest.approx(500 / 60)


def test_a_schedule_trex_cannot_keep_is_marked() -> None:
    # 10 fps for 120 s: 500 tags in the last 60 s need 8.33 per second; TRex's latency stream holds at most half
    # the trial's rate (5 per second), so only 301 of them fall inside the trial
    capped = tag_schedule(Phase2Options(latency=True, latency_delay=60.0, latency_frames=500), 10.0, 120.0)
    assert capped is not None and capped["capped"] and capped["sent"] == 301 and capped["per_s"] == 5.0
    # PDV (every frame asked) falls back to a tag stream over the whole trial
    pdv = tag_schedule(Phase2Options(latency=True, latency_rate=1000.0), 100_000.0, 60.0)
    assert pdv is not None and (pdv["from_s"], pdv["until_s"], pdv["frames"], pdv["sent"]) == (0.0, 60.0, None, 60_000)
    assert tag_schedule(Phase2Options(), 1e5, 60.0) is None


class _Client:
    """What TRexSession asks of the library's STLClient when it loads and unloads streams."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.next_id = 1

    def remove_streams(self, ids: list[int], ports: list[int]) -> None:
        self.calls.append(("remove_streams", (list(ids), ports)))

    def remove_all_streams(self, ports: list[int]) -> None:
        self.calls.append(("remove_all_streams", ports))

    def add_streams(self, streams: list[Any], ports: list[int]) -> list[int]:
        ids = list(range(self.next_id, self.next_id + len(streams)))
        self.next_id += len(streams)
        self.calls.append(("add_streams", (len(streams), ports)))
        return ids

    def disconnect(self) -> None:
        self.calls.append(("disconnect", None))


def test_the_session_removes_its_own_streams_one_command_each_before_loading_and_at_close() -> None:
    from natbench.testers.trex.client import TRexSession

    session = TRexSession("127.0.0.1")
    client = session._client = _Client()
    session.load(1, iter([["a", "b"], ["c"]]))
    session.load(1, iter([["d"]]))
    session.close()
    assert client.calls == [
        ("remove_all_streams", [1]),
        ("add_streams", (2, [1])),
        ("add_streams", (1, [1])),
        ("remove_streams", ([1, 2, 3], [1])),  # the earlier program's streams, one remove_stream command each
        ("remove_all_streams", [1]),  # then nothing is left: a quick call
        ("add_streams", (1, [1])),
        ("remove_streams", ([4], [1])),  # close: the next session's reset finds the port empty
        ("remove_all_streams", [1]),
        ("disconnect", None),
    ]
