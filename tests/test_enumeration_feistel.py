"""The Feistel order of phase 1: a keyed permutation of all (source port, destination port) pairs.

Bijection at many sizes, reproducibility, C and Python index by index, the statistics a shuffle
of all pairs has and the product order lacks, and the Responder's side (the learned table is
indexed by frame index, every check uses the frame's pair).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trex_fakes import QuietSession

from natbench.errors import ConfigError
from natbench.errors import TesterError as RefusedByTester
from natbench.results import Direction
from natbench.testers.software import tester as software
from natbench.testers.software.backend import check_settings
from natbench.traffic import (
    AddressPlan,
    EnumerationOrder,
    Family,
    FeistelPermutation,
    PortEnumeration,
    PortRange,
    TrafficPlan,
)
from natbench.traffic.frames import FLAG_PHASE1, build_frame

FEISTEL = EnumerationOrder.FEISTEL
PRODUCT = EnumerationOrder.PRODUCT


def enumeration(n_src: int, n_dst: int, seed: int = 1, order: EnumerationOrder = FEISTEL) -> PortEnumeration:
    return PortEnumeration(PortRange(1, n_src), PortRange(1, n_dst), seed, order)


def chunks(n: int, size: int = 1 << 20) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def assert_bijection_bounded(e: PortEnumeration) -> None:
    """Every pair index hit exactly once, computed a chunk at a time: one flag byte per pair, no pair lists."""
    seen = np.zeros(e.size, dtype=np.bool_)
    for start, stop in chunks(e.size):
        j = e.pair_indices(np.arange(start, stop))
        assert int(j.min()) >= 0 and int(j.max()) < e.size
        assert not seen[j].any()  # no pair index of an earlier chunk again
        seen[j] = True
    assert seen.all()  # N indices gave all N pair indices: none twice within a chunk either


# --------------------------------------------------------------------------------------------- bijection


@pytest.mark.parametrize(
    ("n_src", "n_dst"),
    [
        (1, 1),  # N = 1: b = 2, the walk goes round E's cycle back to 0
        (1, 2),
        (2, 1),
        (1, 1000),  # 1 x N
        (1000, 1),  # N x 1
        (7, 13),  # primes: N = 91, b = 7 (unbalanced 4 + 3)
        (251, 3),
        (65521, 1),  # the largest prime port count
        (16, 64),  # powers of two: N = 1024 = 2**10 exactly, nothing walked
        (256, 256),
        (2, 2),  # N = 4 = the smallest domain
        (3, 3),
        (1000, 300),  # N = 300000, b = 19 (odd: unbalanced 10 + 9 bits)
    ],
)
def test_the_feistel_order_is_a_bijection(n_src: int, n_dst: int) -> None:
    e = enumeration(n_src, n_dst)
    assert_bijection_bounded(e)
    src, dst = e.pairs()
    assert len(set(zip(src.tolist(), dst.tolist(), strict=True))) == e.size  # every (sport, dport) pair once


def test_the_feistel_order_is_a_bijection_at_4000_by_1000() -> None:
    # N = 4,000,000 < 2**22 = 4,194,304: b = 22, a balanced 11 + 11 bit network, 4.9 % of the domain walked over;
    # checked one million indices at a time against a 4 MB table of flags
    assert_bijection_bounded(enumeration(4000, 1000, seed=2024))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 60), st.integers(0, 2**64 - 1))
def test_the_feistel_order_is_a_bijection_at_any_size(n_src: int, n_dst: int, seed: int) -> None:
    e = enumeration(n_src, n_dst, seed)
    j = e.pair_indices(np.arange(e.size))
    assert np.array_equal(np.sort(j), np.arange(e.size))
    k = e.size // 2
    assert e.pair_index(k) == int(j[k])  # the scalar and the vectorised form agree


def test_the_walk_takes_fewer_than_two_encryptions_on_average() -> None:
    # domain 2**b < 2N for N > 2: the walk from k visits E's cycle until it is back below N; over all k < N the
    # encryptions add up to the cycle lengths inside [0, 2**b) that contain a k < N, i.e. at most 2**b < 2N
    p = FeistelPermutation(4097, 5)  # the worst ratio: 2**13 / 4097 = 1.9995
    encryptions = 0
    for k in range(4097):
        y = p.encrypt(k)
        encryptions += 1
        while y >= 4097:
            y = p.encrypt(y)
            encryptions += 1
    assert p.bits == 13
    assert encryptions <= 2**13
    assert encryptions / 4097 < 2


@pytest.mark.parametrize("order", [FEISTEL, PRODUCT])
@pytest.mark.parametrize("bad", [-1, 40])
def test_a_frame_index_outside_the_pairs_is_refused_in_both_forms(bad: int, order: EnumerationOrder) -> None:
    e = enumeration(10, 4, order=order)
    with pytest.raises(IndexError, match=rf"^index {bad} outside \[0, 40\)$"):
        e.pair_index(bad)
    with pytest.raises(IndexError, match=r"^indices outside \[0, 40\)$"):
        e.pair_indices(np.array([0, bad]))


@pytest.mark.parametrize("order", [FEISTEL, PRODUCT])
def test_the_first_and_last_frame_index_are_pairs_and_come_back_as_int64(order: EnumerationOrder) -> None:
    e = enumeration(10, 4, order=order)
    j = e.pair_indices(np.array([0, 39], dtype=np.int32))
    assert j.dtype == np.int64
    assert j.tolist() == [e.pair_index(0), e.pair_index(39)]
    if order is PRODUCT:
        assert j.tolist() == [0, 39]  # the product order's pi is the identity


@pytest.mark.parametrize("bad", [-1, 40])
def test_the_permutation_itself_refuses_an_index_outside_its_size(bad: int) -> None:
    p = FeistelPermutation(40, 4)
    with pytest.raises(IndexError, match=rf"^index {bad} outside \[0, 40\)$"):
        p(bad)


def test_a_permutation_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^a permutation needs at least one index, got 0$"):
        FeistelPermutation(0, 4)


@pytest.mark.parametrize(("size", "bits"), [(1, 2), (2, 2), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4), (4097, 13)])
def test_the_width_is_the_smallest_power_of_two_holding_the_size_and_at_least_four(size: int, bits: int) -> None:
    # b = max(2, bit length of N - 1): N - 1 = 0, 1, 2, 3 -> 2 (the floor); 4 -> 3; 7 -> 3; 8 -> 4; 4096 -> 13
    assert FeistelPermutation(size, 4).bits == bits


# --------------------------------------------------------------------------------------------- determinism


def test_the_same_seed_gives_the_same_order_in_another_process() -> None:
    cases = [(1, 1, 1), (7, 13, 5), (1000, 300, 2**64 - 1), (4000, 10, 17)]
    code = (
        "import json,sys\n"
        "import numpy as np\n"
        "from natbench.traffic import EnumerationOrder, PortEnumeration, PortRange\n"
        "out=[]\n"
        "for a,b,seed in json.loads(sys.argv[1]):\n"
        "    e=PortEnumeration(PortRange(1024,1023+a),PortRange(80,79+b),seed,EnumerationOrder.FEISTEL)\n"
        "    out.append(e.pair_indices(np.arange(e.size)).tolist())\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="4321")  # nothing may depend on Python's hash randomisation
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cases)], capture_output=True, text=True, check=True, env=env
    ).stdout
    ours = [enumeration(a, b, seed).pair_indices(np.arange(a * b)).tolist() for a, b, seed in cases]
    assert json.loads(out) == ours


def test_other_seeds_give_other_orders() -> None:
    # 10 seeds, 400 pairs: two random orders of 400 agree at a position with probability 1/400, so two seeds
    # share about one position; identical (or nearly identical) orders mean the seed does not reach the keys
    orders = [enumeration(20, 20, seed).pair_indices(np.arange(400)) for seed in range(10)]
    for a in range(10):
        for b in range(a + 1, 10):
            assert int((orders[a] == orders[b]).sum()) < 20


# --------------------------------------------------------------------------------------------- statistics

N_SRC, N_DST = 4000, 1000


def same_destination_share(e: PortEnumeration) -> float:
    """Share of consecutive frames (k, k+1) with the same destination port, over every k."""
    same = 0
    for start, stop in chunks(e.size):
        _, dst = e.pairs(start, min(stop + 1, e.size))
        same += int((dst[1:] == dst[:-1]).sum())
    return same / (e.size - 1)


def source_period_share(e: PortEnumeration, period: int) -> float:
    """Share of frames k whose source port equals that of frame k + period."""
    src, _ = e.pairs()
    return float((src[period:] == src[:-period]).mean())


def test_consecutive_frames_share_the_destination_port_about_once_in_d() -> None:
    # A uniformly random order of the N = 4,000,000 pairs: frame k+1 is one of the N - 1 other pairs, |S| - 1 = 3999
    # of which have k's destination port, so p = 3999 / 3,999,999 = 0.00099975 ~ 1/|D|. Over the N - 1 neighbours
    # about 3999 +- sqrt(3999) = 63 coincide: +-10 % (400 = 6 standard deviations) cannot fail by chance. The
    # product order shares the destination except at the |D| - 1 wraps: 1 - 999 / 3,999,999 = 0.99975.
    p = (N_SRC - 1) / (N_SRC * N_DST - 1)
    assert abs(same_destination_share(enumeration(N_SRC, N_DST, seed=7)) - p) < 0.1 * p
    assert same_destination_share(enumeration(N_SRC, N_DST, seed=7, order=PRODUCT)) > 0.999


def test_the_source_ports_do_not_repeat_with_period_s() -> None:
    # Random order: frame k + |S| is one of the N - 1 other pairs, |D| - 1 = 999 of which have k's source port:
    # p = 999 / 3,999,999 ~ 1/|S| = 0.00025; over N - |S| = 3,996,000 frames about 998 +- 32 coincide, +-20 %
    # (200 = 6 standard deviations). The product order repeats exactly: share 1.
    p = (N_DST - 1) / (N_SRC * N_DST - 1)
    assert abs(source_period_share(enumeration(N_SRC, N_DST, seed=7), N_SRC) - p) < 0.2 * p
    assert source_period_share(enumeration(N_SRC, N_DST, seed=7, order=PRODUCT), N_SRC) == 1.0


def test_the_first_percent_of_frames_reaches_every_destination_port() -> None:
    # The first 40,000 frames (1 %): in a random order a given destination port (4000 of the 4M pairs) is missed
    # with probability about 0.99**4000 = 3e-18, so all 1000 appear; the product order reaches 40000 / 4000 = 10.
    # An unbalanced domain too: 1000 x 300 (b = 19), first 3000 frames, a port missed with 0.99**1000 = 4e-5 each:
    # all 300 but rarely one, at least 298 allowed.
    _, dst = enumeration(N_SRC, N_DST, seed=3).pairs(0, 40_000)
    assert np.unique(dst).size == 1000
    _, dst = enumeration(N_SRC, N_DST, seed=3, order=PRODUCT).pairs(0, 40_000)
    assert np.unique(dst).size == 10
    _, dst = enumeration(1000, 300, seed=3).pairs(0, 3000)
    assert np.unique(dst).size >= 298


def test_the_source_port_of_a_frame_does_not_predict_the_next() -> None:
    # 1000 x 300 pairs (unbalanced domain): for a random order the next frame's source port equals this one's with
    # p = 299 / 299,999 ~ 0.001 (about 300 +- 17 of the 299,999 neighbours: < 450 is 9 sd away), and steps by +1
    # (in S') equally rarely; the product order steps by exactly one place in S' every time
    e = enumeration(1000, 300, seed=11)
    j = e.pair_indices(np.arange(e.size)) % 1000
    assert int((j[1:] == j[:-1]).sum()) < 450
    assert int(((j[1:] - j[:-1]) % 1000 == 1).sum()) < 450


# --------------------------------------------------------------------------------------------- C and Python


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 65535), st.integers(1, 65535), st.integers(0, 2**64 - 1), st.integers(0, 2**32))
def test_c_and_python_agree_index_by_index(n_src: int, n_dst: int, seed: int, where: int) -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    e = enumeration(n_src, n_dst, seed)
    start = where % e.size
    count = min(e.size - start, 4096)  # a window anywhere in up to 4.3e9 pairs
    out = np.zeros(count, dtype=np.uint32)
    engine.permute(engine.ORDER_FEISTEL, e.size, e.permutation_seed, out, start)
    assert out.astype(np.int64).tolist() == e.pair_indices(np.arange(start, start + count)).tolist()
    assert int(out[0]) == e.pair_index(start)


def test_the_data_path_refuses_a_window_beyond_the_pairs() -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    with pytest.raises(ValueError, match="indices beyond n"):
        engine.permute(engine.ORDER_FEISTEL, 10, 1, np.zeros(4, dtype=np.uint32), 7)


# --------------------------------------------------------------------------------------------- the Responder


def _pair_socket() -> tuple[int, int]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    return a.detach(), b.detach()


def _phase1_dicts(e: PortEnumeration, tx_order: EnumerationOrder, rx_order: EnumerationOrder) -> Any:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    src = np.ascontiguousarray(e.sources, dtype=np.uint16)
    dst = np.ascontiguousarray(e.destinations, dtype=np.uint16)
    template = build_frame(
        src_mac="02:00:00:00:00:01",
        dst_mac="02:00:00:00:00:02",
        src=AddressPlan.default(Family.NAT44).initiator,
        dst=AddressPlan.default(Family.NAT44).responder,
        sport=0,
        dport=0,
        frame_size=64,
    )

    def order(o: EnumerationOrder) -> dict[str, int]:
        code = engine.ORDER_FEISTEL if o is FEISTEL else engine.ORDER_PRODUCT
        return {"order": code, "perm_seed": e.permutation_seed}

    learned = np.zeros(e.size, dtype=np.uint16)
    tx = {"mode": engine.TX_ENUM, "template": template, "a": src, "b": dst, "count": e.size, "flags": FLAG_PHASE1}
    rx = {"mode": engine.RX_LEARN, "dst": dst, "nsrc": len(src), "learned": learned, "expect": e.size}
    return engine, template, {**tx, **order(tx_order)}, {**rx, **order(rx_order)}, learned


@pytest.mark.parametrize("order", [FEISTEL, PRODUCT])
def test_the_responder_learns_each_frames_pair_under_its_frame_index(order: EnumerationOrder) -> None:
    # a socket pair is the wire (no DUT: the "translated" source port is the one sent); rate 0 = unpaced, and the
    # 60 frames fit the pair's queue
    e = enumeration(12, 5, seed=9, order=order)
    engine, _, tx, rx, learned = _phase1_dicts(e, order, order)
    a, b = _pair_socket()
    try:
        raw = engine.run([{**tx, "fd": a}], [{**rx, "fd": b}], 0.05, 77)
    finally:
        os.close(a)
        os.close(b)
    r = raw["rx"][0]
    assert (r["valid"], r["bad"], r["learned"]) == (60, 0, 60)
    # frame k carried S'[pi(k) mod 12]: the learned table is indexed by frame index, not by pair index
    j = e.pair_indices(np.arange(60))
    assert learned.tolist() == e.sources[j % 12].tolist()


def test_the_responder_checks_the_destination_port_of_the_frames_pair() -> None:
    # the Initiator walks the Feistel order, the Responder is told the product order: frame k's destination D'[pi(k)
    # div 12] is compared with D'[k div 12]; they agree only where both land in the same block of 12 (about 1 in 5)
    e = enumeration(12, 5, seed=9)
    engine, _, tx, rx, _ = _phase1_dicts(e, FEISTEL, PRODUCT)
    j = e.pair_indices(np.arange(60))
    agree = int((j // 12 == np.arange(60) // 12).sum())
    a, b = _pair_socket()
    try:
        raw = engine.run([{**tx, "fd": a}], [{**rx, "fd": b}], 0.05, 77)
    finally:
        os.close(a)
        os.close(b)
    assert (raw["rx"][0]["valid"], raw["rx"][0]["bad"]) == (agree, 60 - agree)
    assert agree < 30


def test_a_sequence_number_beyond_the_pairs_is_inconsistent_not_walked() -> None:
    # seq in [N, 2**b) has no pair: a cycle walk from it would land on some pair index below N (or loop forever on a
    # cycle above N), so each frame here carries the destination port of the pair such a walk reaches; the check
    # must still count it inconsistent (RX_ENUM_CHECK: no learned table whose size would catch it)
    e = enumeration(12, 5, seed=9)
    perm = e.permutation
    assert perm is not None and perm.bits == 6  # N = 60 in a domain of 64: seq 60..63 lie between
    engine, template, _, rx, _ = _phase1_dicts(e, FEISTEL, FEISTEL)
    frames = []
    for seq in range(60, 64):
        y, steps = perm.encrypt(seq), 1
        while y >= 60 and steps < 64:
            y, steps = perm.encrypt(y), steps + 1
        if y < 60:
            frames.append(engine.build(template, False, 1, int(e.destinations[y // 12]), 77, seq, 0, FLAG_PHASE1))
    assert frames  # at least one of the four walks ends below N
    a, b = _pair_socket()
    try:
        for frame in frames:
            os.write(a, frame)
        raw = engine.run([], [{**rx, "mode": engine.RX_ENUM_CHECK, "fd": b, "expect": len(frames)}], 0.05, 77)
    finally:
        os.close(a)
        os.close(b)
    r = raw["rx"][0]
    assert (r["received"], r["bad"], r["valid"]) == (len(frames), len(frames), 0)


class _WiredEngine:
    """The real C data path with the Initiator and the Responder joined by a socket pair (a wire, no DUT)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._fds = iter(_pair_socket())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def open_port(self, ifname: str, netns_path: str | None = None, rcvbuf: int = 0, sndbuf: int = 0) -> int:
        return next(self._fds)


@pytest.mark.parametrize("order", ["feistel", "product"])
def test_validation_answers_every_learned_tuple_of_either_order(monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    monkeypatch.setattr(software, "_engine", _WiredEngine(engine))
    mac_a, mac_b = "02:4e:42:00:00:01", "02:4e:42:00:00:02"
    tester = software.SoftwareTester(
        software.Port("init", mac_a, mac_b),
        software.Port("resp", mac_b, mac_a),
        timeout=0.02,
        realtime=False,
        enumeration=order,
    )
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(2000, 2005), PortRange(90, 93), 64, 3)
    try:
        tester.prepare(plan)
        p1 = tester.phase1(0.0, learn=True)  # unpaced: 24 frames
        v = tester.validate(0.0)  # one reverse frame per learned tuple, in the learned table's (frame) order
    finally:
        tester.close()
    assert (p1.learned, p1.extra["enumeration"]) == (24, order)
    # the Initiator checks each reverse frame: Responder port = the phase-1 destination of that frame's pair,
    # DUT port = the learned port, Initiator port expected = the phase-1 source of the same pair
    c = v.counts[Direction.REVERSE]
    assert (c.sent, c.valid) == (24, 24)
    assert v.extra["tester"]["lanes"]  # a real data-path run


# --------------------------------------------------------------------------------------------- the setting


def test_the_software_tester_takes_the_order_as_a_setting() -> None:
    assert check_settings({"enumeration": "product"}).enumeration == "product"
    assert check_settings({"enumeration": "feistel"}).enumeration == "feistel"
    assert check_settings({}).enumeration == "feistel"  # the settings model's default (stored with the campaign)


def test_an_unknown_order_is_refused_by_setting_name() -> None:
    with pytest.raises(ConfigError) as info:
        check_settings({"enumeration": "shuffled"})
    assert info.value.field == "testbed.tester.settings.enumeration"
    assert info.value.message == "must be 'feistel' or 'product'"


def test_the_tester_refuses_an_unknown_order() -> None:
    pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    with pytest.raises(RefusedByTester, match="unknown enumeration order 'random'"):
        software.SoftwareTester(
            software.Port("lo", "02:00:00:00:00:01", "02:00:00:00:00:02"),
            software.Port("lo", "02:00:00:00:00:02", "02:00:00:00:00:01"),
            enumeration="random",
        )


def test_trex_programs_record_the_product_order() -> None:
    from natbench.testers.trex import program as prg

    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1000, 1009), PortRange(80, 83), 64, 4)
    assert prg.compile_phase1(plan, 1000.0, cores=2).enumeration == "product"
    assert prg.compile_validation(plan, 1000.0, cores=2).enumeration == "product"


def test_every_trex_phase1_trial_records_the_product_order() -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    from natbench.testers.trex.backend import check_settings
    from natbench.testers.trex.tester import TRexTester
    from natbench.traffic import ResponderMode

    class Lossless(QuietSession):
        """A burst that was sent whole and in time: every frame counted on both ports."""

        frames = 40

        def wait(self, ports: list[int], timeout: float, rx_delay_ms: int) -> float:
            return time.monotonic()

        def stats(self) -> dict[object, object]:
            n = self.frames
            return {0: {"opackets": n, "ipackets": n}, 1: {"opackets": n, "ipackets": n}, "global": {"queue_full": 0}}

    settings = {"server": "127.0.0.1", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}
    tester = TRexTester(check_settings(settings), session=Lossless())  # type: ignore[arg-type]
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1000, 1009),
        PortRange(80, 83),
        64,
        4,
        responder_mode=ResponderMode.COMPUTE,
    )
    tester.prepare(plan)
    assert tester.phase1(1000.0, learn=False).extra["enumeration"] == "product"
    assert tester.validate(1000.0).extra["enumeration"] == "product"  # the computed table, walked the same way
