"""The software tester on a bare veth pair (no DUT): counts, learning, latency, honesty about its rate.

Marker ``lab``: needs root (network namespace, AF_PACKET). Traffic stays inside a
namespace made by the test and deleted afterwards.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lab_helpers import kept_rate, stalled
from vethwire import veth_wire

from natbench import plugins
from natbench.errors import ConfigError
from natbench.judging import judge_phase
from natbench.plugins import Directions, LossStop, Mapping, Phase2Options, Port
from natbench.results import Direction, Verdict
from natbench.testers.software.backend import create
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan
from natbench.traffic.frames import FLAG_TAGGED

ROOT = os.geteuid() == 0
MAC_A, MAC_B = "02:4e:42:7e:00:01", "02:4e:42:7e:00:02"


def test_factory_rejects_unknown_settings() -> None:
    with pytest.raises(ConfigError, match=r"testbed\.tester\.settings\.speed: unknown key; allowed here: "):
        create({"speed": 1})


def test_factory_needs_ports_without_a_lab() -> None:
    with pytest.raises(ConfigError, match="initiator and responder"):
        create({})
    with pytest.raises(ConfigError, match="peer_mac"):
        create({"initiator": {"interface": "x"}, "responder": {"interface": "y"}})


def test_factory_checks_the_cpus_setting() -> None:
    with pytest.raises(ConfigError, match=r"settings\.cpus: must be a valid list"):
        create({"cpus": "fast"})
    with pytest.raises(ConfigError, match="not available"):
        create({"cpus": [4096]})
    with pytest.raises(ConfigError, match="twice"):
        create({"cpus": [0, 0]})


LANES = ["one-cpu", "two-cpus"]


@pytest.fixture(scope="module", params=LANES)
def wire(request: pytest.FixtureRequest) -> Iterator[SoftwareTester]:
    """A tester whose Initiator and Responder are the two ends of one veth pair (a perfect DUT).

    Every test runs with the tester on one CPU (one data-path thread) and on two
    (one lane per port, two threads), so the lanes' counts must add up exactly as one.
    """
    if not ROOT:
        pytest.skip("needs root: creates a network namespace and AF_PACKET sockets")
    all_cpus = sorted(os.sched_getaffinity(0))
    if request.param == "two-cpus" and len(all_cpus) < 2:
        pytest.skip("the two-lane tester needs two CPUs; this process may use one")
    with veth_wire("nb-swt", MAC_A, MAC_B) as ns:
        cpus = all_cpus[-1:] if request.param == "one-cpu" else [all_cpus[-1], all_cpus[0]]
        t = SoftwareTester(Port("wa", MAC_A, MAC_B, ns), Port("wb", MAC_B, MAC_A, ns), cpus=cpus, timeout=0.3)
        yield t
        t.close()


SRC, DST = PortRange(20000, 20099), PortRange(80, 89)
MAPS = tuple(Mapping("198.19.0.1", 20000 + i, 80, 20000 + i) for i in range(10))


def plan(
    src: PortRange = SRC,
    dst: PortRange = DST,
    size: int = 64,
    mode: ResponderMode = ResponderMode.LEARN,
) -> TrafficPlan:
    return TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), src, dst, size, seed=5, responder_mode=mode)


@pytest.mark.lab
def test_is_a_tester(wire: SoftwareTester) -> None:
    assert isinstance(wire, plugins.Tester)
    assert wire.facts()["kind"] == "software"


@pytest.mark.lab
def test_each_port_runs_on_its_own_cpu_when_there_are_two(wire: SoftwareTester) -> None:
    wire.prepare(plan())
    r = wire.phase2(10000, 0.1, Directions.BIDIRECTIONAL, Phase2Options(mappings=MAPS, selection="linear"))
    lanes = r.extra["tester"]["lanes"]
    assert wire.cpus is not None
    if len(wire.cpus) == 1:
        assert lanes == [{"cpu": wire.cpus[0], "tx": 2, "rx": 2}]
    else:  # Initiator port: forward sending + reverse receiving; Responder port: the other two
        assert lanes == [{"cpu": wire.cpus[0], "tx": 1, "rx": 1}, {"cpu": wire.cpus[1], "tx": 1, "rx": 1}]
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert r.counts[d].sent == r.counts[d].valid == 1000


@pytest.mark.lab
def test_phase1_sends_every_pair_once_and_learns_it(wire: SoftwareTester) -> None:
    p = plan()
    wire.prepare(p)
    r = kept_rate(lambda: wire.phase1(20000, learn=True))
    c = r.counts[Direction.FORWARD]
    assert (c.sent, c.valid) == (1000, 1000)
    assert r.learned == 1000 and r.extra["duplicates"] == 0 and r.extra["inconsistent"] == 0
    # on a plain wire the "translated" source port is the original one: the learned table holds, for frame k,
    # S'[pi(k) mod |S|], pi the tester's phase-1 order (Feistel by default; tests/test_enumeration_kat.py pins pi)
    learned = wire.learned
    assert learned is not None
    assert r.extra["enumeration"] == "feistel"
    k = np.arange(1000)
    assert np.array_equal(learned, p.enumeration.sources[wire.pair_indices(k) % 100])
    assert abs(r.achieved_rate - 20000) / 20000 < 0.01
    assert 0.045 < r.duration < 0.06  # 1000 frames at 20 kfps: 999 gaps of 50 us


@pytest.mark.lab
def test_validation_and_bidirectional_phase2_with_latency(wire: SoftwareTester) -> None:
    wire.prepare(plan())
    wire.phase1(20000, learn=True)
    v = wire.validate(20000)
    assert v.counts[Direction.REVERSE].sent == v.counts[Direction.REVERSE].valid == 1000
    r = kept_rate(
        lambda: wire.phase2(10000, 0.5, Directions.BIDIRECTIONAL, Phase2Options(latency=True, latency_rate=1000))
    )
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert r.counts[d].sent == 5000 and r.counts[d].valid == 5000
        lat = r.latency[d]
        assert lat.samples == 500
        assert 0 <= lat.minimum <= lat.median <= lat.p99_9 <= lat.maximum < 1.0
        assert lat.pdv == lat.p99_9 - lat.minimum
    assert r.responder_mode == "learn"


@pytest.mark.lab
def test_read_mappings_drive_the_reverse_direction(wire: SoftwareTester) -> None:
    wire.prepare(plan())
    maps = tuple(Mapping("198.19.0.1", 20000 + i, 80, 20000 + i) for i in range(10))
    r = wire.phase2(5000, 0.2, Directions.REVERSE, Phase2Options(mappings=maps, selection="linear"))
    c = r.counts[Direction.REVERSE]
    assert c.sent == c.valid == 1000 and r.responder_mode == "read"


@pytest.mark.lab
def test_validation_in_read_mode_uses_the_loaded_mappings(wire: SoftwareTester) -> None:
    wire.prepare(plan(mode=ResponderMode.READ))
    maps = tuple(Mapping("198.19.0.1", 30000 + i, 80, 30000 + i) for i in range(37))
    wire.load_mappings(maps)
    wire.set_receive_timeout(0.25)
    v = wire.validate(10000)
    c = v.counts[Direction.REVERSE]
    assert c.sent == c.valid == 37 and v.responder_mode == "read"  # one frame per loaded tuple
    assert wire.facts()["receive_timeout"] == 0.25


@pytest.mark.lab
def test_compute_mode_needs_no_phase1(wire: SoftwareTester) -> None:
    wire.prepare(plan(mode=ResponderMode.COMPUTE))
    r = wire.validate(20000)
    c = r.counts[Direction.REVERSE]
    assert c.sent == c.valid == 1000 and r.responder_mode == "compute"


@pytest.mark.lab
def test_jumbo_rfc8219_frames(wire: SoftwareTester) -> None:
    wire.prepare(plan(size=1518))
    r = wire.phase1(10000, learn=False)
    assert r.counts[Direction.FORWARD].valid == 1000


@pytest.mark.lab
def test_a_tester_that_cannot_keep_the_rate_says_so(wire: SoftwareTester) -> None:
    """Asked for far more than one CPU can send, the trial must be flagged, never passed off as DUT loss."""
    wire.prepare(plan(src=PortRange(1, 20000), dst=PortRange(1, 10)))
    r = wire.phase1(50_000_000, learn=False)
    assert not r.tester_ok
    assert "fell behind" in r.tester_note or "sent" in r.tester_note
    assert r.achieved_rate < 50_000_000 * 0.5


@pytest.mark.lab
@pytest.mark.parametrize("catchup", [2.0, 1000.0])
def test_a_stall_is_a_clump_of_its_direction_caught_up_at_most_at_catchup_times_the_rate(
    wire: SoftwareTester, catchup: float
) -> None:
    """The whole process stopped for 0.3 s, 0.2 s into a 2 s phase 1 at 40,000 fps: about 12,000 frames fall behind
    their schedule. With catchup 2 the backlog goes out at twice the rate, so the sender needs another 0.3 s to catch
    up: it is behind for ~0.6 s; almost unbounded (1,000 x) it sends the backlog at once: behind for ~0.3 s. Either
    way no frame is lost on the wire, the trial keeps its average rate and the stall is a recorded clump."""
    wire.prepare(plan(src=PortRange(1, 8000), dst=PortRange(1, 10)))
    saved, wire.catchup = wire.catchup, catchup
    try:
        with stalled(after=0.2, seconds=0.3):
            r = wire.phase1(40_000, learn=False)
    finally:
        wire.catchup = saved
    c = r.counts[Direction.FORWARD]
    assert c.sent == c.valid == 80_000
    dev = r.deviations[Direction.FORWARD]
    assert dev.clump >= 10_000 and dev.notes and dev.notes[0].startswith("stalled:")
    behind = r.extra["tester"]["behind_s"][0]
    if catchup == 2.0:
        assert behind >= 0.5, r.extra["tester"]
    else:
        assert behind < 0.45, r.extra["tester"]
    assert r.tester_ok, r.tester_note
    assert judge_phase(r, 0.0, 0.001) == (Verdict.PASS, "")  # nothing lost: the DUT is not blamed, nor the trial


@pytest.mark.lab
def test_a_validation_sample_sends_to_tuples_spread_over_the_learned_table(wire: SoftwareTester) -> None:
    wire.prepare(plan())
    wire.phase1(10_000, learn=True)
    r = wire.validate_sample(10_000, 100)
    c = r.counts[Direction.REVERSE]
    assert c.sent == c.valid == 100
    everything = wire.validate_sample(10_000, 5000)  # more than the 1,000 tuples: all of them, once
    assert everything.counts[Direction.REVERSE].sent == 1000


@pytest.mark.lab
def test_unpaced_phase2_for_benchmarks(wire: SoftwareTester) -> None:
    wire.prepare(plan())
    r = wire.phase2(math.inf, 0.2, Directions.FORWARD, Phase2Options())
    c = r.counts[Direction.FORWARD]
    assert c.sent > 1000 and c.valid == c.sent


@pytest.mark.lab
def test_only_frames_with_this_trials_signature_count(wire: SoftwareTester) -> None:
    """Foreign frames and natbench frames of another trial (other tag) arrive during phase 1: received, not valid."""
    from natbench.testers.software import _engine
    from natbench.traffic.frames import FLAG_PHASE1, build_frame

    wire.prepare(plan())
    inject = _engine.open_port("wa", wire.initiator.netns_path)
    stale = build_frame(
        src_mac=MAC_A,
        dst_mac=MAC_B,
        src="198.18.0.2",
        dst="198.19.0.2",
        sport=20000,
        dport=80,
        frame_size=64,
        tag=(wire._tag + 7) % 0xFFFF,
        seq=0,
        flags=FLAG_PHASE1,
    )
    foreign = bytes(stale[:42]) + b"not a natbench frame"

    def spray() -> None:
        time.sleep(0.02)
        for _ in range(50):
            os.write(inject, stale)
            os.write(inject, foreign)

    th = threading.Thread(target=spray)
    th.start()
    try:
        r = wire.phase1(10000, learn=False)  # 0.1 s: the spray lands in the middle
    finally:
        th.join()
        os.close(inject)
    c = r.counts[Direction.FORWARD]
    assert c.valid == 1000
    assert c.received >= 1100


@pytest.mark.lab
def test_a_receive_only_lane_waits_for_the_senders_then_the_timeout(wire: SoftwareTester) -> None:
    """The sync block: a lane without senders keeps receiving until the last sender is done, then waits
    the receive timeout from that moment (not from its own start)."""
    from natbench.testers.software import _engine

    sync = np.zeros(2, dtype=np.uint64)
    sync[0] = 1  # one sending lane, still running
    out: list[dict] = []
    rx = {"fd": wire._fd_resp, "mode": _engine.RX_ANY, "expect": 1}
    th = threading.Thread(target=lambda: out.append(_engine.run([], [rx], 0.2, 1, sync=sync)))
    start = time.monotonic()
    th.start()
    time.sleep(0.4)
    assert th.is_alive() and not out  # well past its own timeout: still waiting for the sender
    sync[1] = time.monotonic_ns()
    sync[0] = 0
    th.join(5)
    waited = time.monotonic() - start
    assert out and 0.55 < waited < 2.0
    assert 0.55 < out[0]["elapsed"] < 2.0


def test_sync_must_be_two_aligned_words() -> None:
    _engine = pytest.importorskip(
        "natbench.testers.software._engine", reason="C data path not built (pip install -e .)"
    )
    with pytest.raises(ValueError, match="sync must be a writable, aligned buffer of at least 2 uint64"):
        _engine.run([], [], 0.0, 1, sync=bytearray(8))


def test_the_watch_block_and_its_slots_are_checked() -> None:
    _engine = pytest.importorskip(
        "natbench.testers.software._engine", reason="C data path not built (pip install -e .)"
    )
    with pytest.raises(ValueError, match="watch must be a writable, aligned buffer of at least 1 uint64"):
        _engine.run([], [], 0.0, 1, watch=bytearray(4))
    port = {"fd": -1, "mode": _engine.RX_ANY, "expect": 0}
    watch = np.zeros(3, dtype=np.uint64)
    for slot, block in ((3, watch), (0, watch), (1, None)):  # beyond the block, the stop flag, no block at all
        with pytest.raises(ValueError, match="rx watch_slot outside the watch block"):
            _engine.run([], [{**port, "watch_slot": slot}], 0.0, 1, watch=block)
    out = _engine.run([], [{**port, "watch_slot": 2}], 0.0, 1, watch=watch)
    assert out["rx"][0]["valid"] == 0 and int(watch[2]) == 0


@pytest.mark.lab
def test_a_watched_trial_stops_at_the_frames_due_in_every_lane(wire: SoftwareTester) -> None:
    """The stop path of the C data path, with one lane and with two: a watch that takes any gap for a loss (an
    allowance far below zero) stops a 10 s trial after its 0.25 s window; every stream then ends with the frames due
    by that moment, paced as ever (on time, nothing lost on the wire), and the trial says so."""
    wire.prepare(plan())
    wire.phase1(20000, learn=True)
    stop = LossStop(allowance=-1e9, margin=0, window=0.25)
    r = wire.phase2(20000, 10.0, Directions.BIDIRECTIONAL, Phase2Options(stop=stop))
    assert r.stopped and r.tester_ok, r.tester_note
    assert 0.25 <= r.extra["stop"]["decided_s"] < 1.0 and 0.2 <= r.duration < 1.5
    for d, c in r.counts.items():
        assert c.lost == 0, (d, c)  # a perfect wire
        assert abs(c.sent - (20000 * r.duration + 1)) <= 64 + 1, (d, c, r.duration)  # the frames due, a batch
    assert r.achieved_rate >= 20000 * 0.99


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("timeout: soon", "testbed.tester.settings.timeout: must be a valid number"),
        ("realtime: maybe", "testbed.tester.settings.realtime: must be a valid boolean"),
    ],
)
def test_a_bad_setting_names_the_campaign_line_and_builds_nothing(
    setting: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    text = (Path(__file__).resolve().parent.parent / "campaigns" / "quickstart.yaml").read_text()
    text = text.replace("    kind: software\n", f"    kind: software\n    settings:\n      {setting}\n", 1)
    file = tmp_path / "bad.yaml"
    file.write_text(text)
    line = text.splitlines().index(f"      {setting}") + 1
    built: list[object] = []
    monkeypatch.setattr("natbench.testbed.build.NetnsLab", lambda *a, **k: built.append(a) or None)
    with pytest.raises(ConfigError) as exc:
        build_testbed(load_campaign(file))  # the settings model refuses it when the campaign is validated
    assert message in str(exc.value) and f"bad.yaml:{line}:" in str(exc.value)
    assert built == []  # checked before any lab comes up


@pytest.mark.lab
def test_a_lane_that_finished_sending_waits_for_the_other_lanes_frames(wire: SoftwareTester) -> None:
    """Two lanes of one trial: A sends a few frames and receives what B sends for longer. A's receive
    timeout must start when B, the last sender, ends, not when A itself stopped sending."""
    from natbench.testers.software import _engine
    from natbench.traffic.frames import FLAG_PHASE1

    wire.prepare(plan())
    for fd in (wire._fd_init, wire._fd_resp):
        _engine.drain(fd)

    def tx(fd: int, count: int, rate: float) -> dict:
        return {
            "fd": fd,
            "mode": _engine.TX_ENUM,
            "template": wire._fwd_template,
            "ipv6": wire._fwd_ipv6,
            "a": wire._src,
            "b": wire._dst,
            "count": count,
            "rate": rate,
            "flags": FLAG_PHASE1,
        }

    sync = np.zeros(2, dtype=np.uint64)
    sync[0] = 2
    out: dict[str, dict] = {}
    never_complete = {"fd": wire._fd_init, "mode": _engine.RX_ANY, "expect": 10**6}
    a = threading.Thread(
        target=lambda: out.setdefault(
            "a", _engine.run([tx(wire._fd_init, 10, 1e6)], [never_complete], 0.1, 7, sync=sync)
        )
    )
    b = threading.Thread(
        target=lambda: out.setdefault("b", _engine.run([tx(wire._fd_resp, 1000, 5000.0)], [], 0.1, 7, sync=sync))
    )
    a.start()
    b.start()
    a.join(10)
    b.join(10)
    assert out["a"]["rx"][0]["valid"] == 1000  # every frame B sent (0.2 s) reached A's port
    assert out["a"]["tx"][0]["last"] < 0.05  # A itself was done almost at once
    assert out["a"]["elapsed"] >= out["b"]["send_end"] + 0.09  # ...and waited the timeout after B's end


def _capture(ns: str, interface: str, stop: threading.Event, out: list[bytes]) -> None:
    """Read every frame arriving at ``interface`` (in ``ns``) with a socket of its own until ``stop``."""
    fd = _engine_module().open_port(interface, f"/run/netns/{ns}", 64 << 20)
    sock = socket.socket(fileno=fd)
    sock.settimeout(0.05)
    try:
        while not stop.is_set():
            try:
                out.append(sock.recv(256))
            except TimeoutError:
                continue
    finally:
        sock.close()


def _engine_module() -> Any:
    from natbench.testers.software import _engine

    return _engine


@pytest.mark.lab
def test_tagged_frames_start_after_the_warm_up_evenly_spaced_as_rfc_8219_asks(wire: SoftwareTester) -> None:
    # 1 s at 4000 frames/s = 4000 frames, frame k due at k / 4000 s; warm-up 0.5 s: the first tagged frame is
    # k = 0.5 * 4000 = 2000; 40 tagged frames over the 2000 frames left: one every 2000 / 40 = 50 frames, the
    # last k = 2000 + 39 * 50 = 3950. Checked on the wire, by a capture socket of the test's own.
    wire.prepare(plan())
    ns = wire.responder.netns
    assert ns is not None
    frames: list[bytes] = []
    stop = threading.Event()
    cap = threading.Thread(target=_capture, args=(ns, "wb", stop, frames))
    cap.start()
    try:
        time.sleep(0.1)
        options = Phase2Options(latency=True, latency_delay=0.5, latency_frames=40)
        r = kept_rate(lambda: wire.phase2(4000, 1.0, Directions.FORWARD, options))
        time.sleep(0.2)
    finally:
        stop.set()
        cap.join()
    payloads = [
        f[14 + 20 + 8 :] for f in frames if len(f) >= 14 + 20 + 8 + 18 and f[14 + 20 + 8 : 14 + 20 + 10] == b"NB"
    ]
    last_trial = max(struct.unpack("!H", p[2:4])[0] for p in payloads)  # the tag of the phase-2 trial
    fields = [struct.unpack("!HHIQH", p[:18]) for p in payloads if struct.unpack("!H", p[2:4])[0] == last_trial]
    assert len(fields) == 4000
    t0 = min(f[3] for f in fields)  # sender stamp of the first frame (ns)
    tagged = sorted((f[2], f[3]) for f in fields if f[4] & FLAG_TAGGED)
    assert [k for k, _ in tagged] == [2000 + 50 * i for i in range(40)]
    assert (tagged[0][1] - t0) * 1e-9 >= 0.5 - 0.002  # sent after the warm-up (2 ms for the first batch's stamp)
    assert r.latency[Direction.FORWARD].samples == 40
    assert r.latency[Direction.FORWARD].frames == "tagged"
    assert r.extra["tagging"] == {"first_frame": 2000, "every": 50, "first_s": 0.5}


@pytest.mark.lab
def test_pdv_trials_time_every_frame_of_both_directions(wire: SoftwareTester) -> None:
    # RFC 8219 7.3.1: the one-way delay of all frames: 0.4 s at 5000 frames/s = 2000 timed frames per direction
    wire.prepare(plan())
    wire.phase1(20000, learn=True)
    r = kept_rate(lambda: wire.phase2(5000, 0.4, Directions.BIDIRECTIONAL, Phase2Options(all_delays=True)))
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert r.counts[d].valid == 2000
        lat = r.latency[d]
        assert (lat.samples, lat.frames) == (2000, "all")
        assert 0 <= lat.minimum <= lat.median <= lat.p99_9 <= lat.maximum < 0.1
        assert lat.error_bound == 2.0**-10
    assert "tagging" not in r.extra  # no tagged frames in a PDV trial


def _wire_stamps(wire: SoftwareTester, measure: Phase2Options) -> list[int]:
    """Sender stamps of the frames of one unpaced 0.1 s forward trial, in frame order, as captured on the wire."""
    wire.prepare(plan())
    ns = wire.responder.netns
    assert ns is not None
    frames: list[bytes] = []
    stop = threading.Event()
    cap = threading.Thread(target=_capture, args=(ns, "wb", stop, frames))
    cap.start()
    try:
        time.sleep(0.1)
        wire.phase2(math.inf, 0.1, Directions.FORWARD, measure)
        time.sleep(0.2)
    finally:
        stop.set()
        cap.join()
    payloads = [
        f[14 + 20 + 8 :] for f in frames if len(f) >= 14 + 20 + 8 + 18 and f[14 + 20 + 8 : 14 + 20 + 10] == b"NB"
    ]
    last_trial = max(struct.unpack("!H", p[2:4])[0] for p in payloads)
    fields = sorted(struct.unpack("!IQ", p[4:16]) for p in payloads if struct.unpack("!H", p[2:4])[0] == last_trial)
    return [stamp for _seq, stamp in fields]


@pytest.mark.lab
def test_an_unpaced_pdv_trial_stamps_every_frame_as_it_is_built(wire: SoftwareTester) -> None:
    # unpaced, the sender builds up to 64 due frames per send call: a plain trial gives them one stamp (never read),
    # a PDV trial (every frame's delay counted) one each, so no two frames of it share a stamp
    plain = _wire_stamps(wire, Phase2Options())
    assert len(plain) > 1000 and len(set(plain)) < len(plain)  # batches formed: the check below is not vacuous
    pdv = _wire_stamps(wire, Phase2Options(all_delays=True))
    assert len(pdv) > 1000
    assert all(b > a for a, b in itertools.pairwise(pdv))
