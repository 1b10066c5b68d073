"""Known answers of the phase-1 port enumeration, worked out apart from natbench's code.

SplitMix64 is checked against its published outputs; the (sport, dport) vectors of both
orders (product and Feistel) are re-derived here from the algorithm as
natbench.traffic.enumeration documents it and then required of Python, of the TRex
field-engine program (product order) and of the C data path (both orders) alike.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from natbench.results import Direction
from natbench.testers.software import tester as software
from natbench.traffic import (
    AddressPlan,
    EnumerationOrder,
    Family,
    PortEnumeration,
    PortRange,
    SplitMix64,
    TrafficPlan,
    seeded_permutation,
)
from natbench.traffic.frames import parse_frame

M64 = 2**64
GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment (the 64-bit golden ratio)
MIX1 = 0xBF58476D1CE4E5B9  # its two finaliser multipliers
MIX2 = 0x94D049BB133111EB
STREAM = 0xD1B54A32D192ED03  # natbench's sub-seed constant (enumeration module docstring)


# --------------------------------------------------------------------------------------------- reference


def reference_splitmix64(seed: int) -> Iterator[int]:
    """SplitMix64 from its public definition: a Weyl sequence of step GOLDEN through a 64-bit finaliser."""
    state = seed % M64
    while True:
        state = (state + GOLDEN) % M64
        z = state
        z = ((z ^ (z >> 30)) * MIX1) % M64
        z = ((z ^ (z >> 27)) * MIX2) % M64
        yield z ^ (z >> 31)


def reference_below(draws: Iterator[int], n: int) -> int:
    """An integer in [0, n): high word of draw * n, drawing again while the low word is below 2**64 mod n."""
    while True:
        high, low = divmod(next(draws) * n, M64)
        if low >= M64 % n:
            return high


def reference_subseed(seed: int, stream: int) -> int:
    """First output of SplitMix64(seed xor stream * STREAM), the product taken mod 2**64."""
    return next(reference_splitmix64(seed ^ (stream * STREAM % M64)))


def reference_shuffle(first: int, last: int, subseed: int) -> list[int]:
    """first..last ascending, then for i = n-1 down to 1 swap item i with item below(i + 1)."""
    items = list(range(first, last + 1))
    draws = reference_splitmix64(subseed)
    for i in range(len(items) - 1, 0, -1):
        j = reference_below(draws, i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def reference_pairs(src: PortRange, dst: PortRange, seed: int) -> list[tuple[int, int]]:
    """k -> (S'[k mod |S|], D'[k div |S|]) for every k."""
    s = reference_shuffle(src.first, src.last, reference_subseed(seed, 1))
    d = reference_shuffle(dst.first, dst.last, reference_subseed(seed, 2))
    return [(s[k % len(s)], d[k // len(s)]) for k in range(len(s) * len(d))]


def reference_finaliser(z: int) -> int:
    """SplitMix64's output function: the same three steps reference_splitmix64 applies to its state."""
    z = ((z ^ (z >> 30)) * MIX1) % M64
    z = ((z ^ (z >> 27)) * MIX2) % M64
    return z ^ (z >> 31)


def reference_feistel(n: int, seed: int) -> list[int]:
    """pi of every k < n, from the docstring: b = max(2, bitlen(n - 1)), four keys from sub-seed 3, rounds moving
    the low part up and the high part, xor the finaliser of (low xor key), down; cycle walk to below n."""
    b = max(2, (n - 1).bit_length())
    draws = reference_splitmix64(reference_subseed(seed, 3))
    keys = [next(draws) for _ in range(4)]

    def encrypt(x: int) -> int:
        high, low = b - b // 2, b // 2
        for key in keys:
            left, right = divmod(x, 2**low)
            x = right * 2**high + (left ^ reference_finaliser(right ^ key)) % 2**high
            high, low = low, high
        return x

    out = []
    for k in range(n):
        y = encrypt(k)
        while y >= n:
            y = encrypt(y)
        out.append(y)
    return out


def reference_feistel_pairs(src: PortRange, dst: PortRange, seed: int) -> list[tuple[int, int]]:
    """k -> j = pi(k) -> (S'[j mod |S|], D'[j div |S|]) for every k."""
    s = reference_shuffle(src.first, src.last, reference_subseed(seed, 1))
    d = reference_shuffle(dst.first, dst.last, reference_subseed(seed, 2))
    return [(s[j % len(s)], d[j // len(s)]) for j in reference_feistel(len(s) * len(d), seed)]


# --------------------------------------------------------------------------------------------- SplitMix64

# Published first outputs of SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c, the seeding
# generator of the xoshiro family) for the states 0 and 1.
PUBLISHED = {
    0: [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC],
    1: [0x910A2DEC89025CC1, 0xBEEB8DA1658EEC67, 0xF893A2EEFB32555E, 0x71C18690EE42C90B],
}


def test_splitmix64_first_output_for_seed_0_step_by_step() -> None:
    state = (0 + GOLDEN) % M64
    z = state ^ (state >> 30)
    assert z == 0x9E3779BB07979AF0  # 0x9E3779B97F4A7C15 >> 30 = 0x278DDE6E5; the low words: 7F4A7C15 ^ 78DDE6E5
    z = z * MIX1 % M64
    assert z == 0x6F68261B57E7A770
    z ^= z >> 27
    assert z == 0x6F682616BAE3641A
    z = z * MIX2 % M64
    assert z == 0xE220A838BF5C9DDE
    z ^= z >> 31
    assert z == PUBLISHED[0][0]


@pytest.mark.parametrize("seed", sorted(PUBLISHED))
def test_splitmix64_gives_the_published_outputs(seed: int) -> None:
    reference = reference_splitmix64(seed)
    assert [next(reference) for _ in range(4)] == PUBLISHED[seed]
    ours = SplitMix64(seed)
    assert [ours.next() for _ in range(4)] == PUBLISHED[seed]


# A seed whose first draw is 0: the finaliser maps 0 to 0, so the state must reach 0, i.e. seed = -GOLDEN.
ZERO_FIRST = -GOLDEN % M64


def test_a_draw_in_the_biased_zone_is_drawn_again() -> None:
    assert next(reference_splitmix64(ZERO_FIRST)) == 0
    # below(3): 2**64 mod 3 = 1, so the draw 0 (low word 0 < 1) is rejected. The next state is GOLDEN, whose
    # output is seed 0's first, 0xE220A8397B1DCDAF ~ 0.8833 * 2**64; 3 * 0.8833 = 2.65 -> 2 (keeping the zero
    # draw would give 0)
    assert SplitMix64(ZERO_FIRST).below(3) == 2
    # below(4): 2**64 mod 4 = 0, nothing is ever rejected; the zero draw gives 0
    assert SplitMix64(ZERO_FIRST).below(4) == 0


def test_the_c_data_path_draws_again_in_the_biased_zone_too() -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    assert engine.draws(ZERO_FIRST, 3, 1) == [2]
    assert engine.draws(ZERO_FIRST, 4, 1) == [0]


# --------------------------------------------------------------------------------------------- the vector

SRC, DST = PortRange(1000, 1009), PortRange(80, 83)
# S' and D' of these ranges, from the reference above. Seed 4 is the vector every backend is held to; with
# seed 1, D' happens to be the identity (its three draws all fall in the top part), kept as a second case.
#
# D' for seed 4 by hand: sub-seed = first output of SplitMix64(4 ^ 0xA36A9465A325DA06) = 0x5F71FCDDB21EA95E;
# its draws are 0x17ED4879CB1F9B15, 0x792209396B11FA98, 0xC1461F49DF528E57. Start [80, 81, 82, 83];
# i=3: below(4) = top two bits of 0x17.. = 0, swap items 3 and 0 -> [83, 81, 82, 80];
# i=2: below(3) = floor(3 * 0.4732) = 1, swap items 2 and 1 -> [83, 82, 81, 80];
# i=1: below(2) = top bit of 0xC1.. = 1, no change.
KNOWN = {
    4: ([1003, 1007, 1004, 1006, 1005, 1008, 1009, 1000, 1001, 1002], [83, 82, 81, 80]),
    1: ([1009, 1008, 1006, 1002, 1003, 1001, 1000, 1007, 1004, 1005], [80, 81, 82, 83]),
}
SEED = 4
FIRST_12 = [  # k = 0..9 walk S' with D'[0]; k = 10, 11 start again with D'[1]
    (1003, 83),
    (1007, 83),
    (1004, 83),
    (1006, 83),
    (1005, 83),
    (1008, 83),
    (1009, 83),
    (1000, 83),
    (1001, 83),
    (1002, 83),
    (1003, 82),
    (1007, 82),
]
VECTOR = reference_pairs(SRC, DST, SEED)
FEISTEL_VECTOR = reference_feistel_pairs(SRC, DST, SEED)
# the first pair indices pi(0..11) of the 40 pairs with seed 4, as the reference above printed them (b = 6, a
# balanced 3 + 3 bit network, 64 values walked down to 40); pinned so that a change of the reference shows
FEISTEL_FIRST_12 = [5, 35, 28, 32, 29, 34, 9, 1, 11, 38, 14, 18]


@pytest.mark.parametrize("seed", sorted(KNOWN))
def test_the_reference_derives_the_known_permutations(seed: int) -> None:
    s, d = KNOWN[seed]
    assert reference_shuffle(SRC.first, SRC.last, reference_subseed(seed, 1)) == s
    assert reference_shuffle(DST.first, DST.last, reference_subseed(seed, 2)) == d


def test_the_feistel_reference_gives_the_pinned_pair_indices() -> None:
    pi = reference_feistel(40, SEED)
    assert pi[:12] == FEISTEL_FIRST_12
    assert sorted(pi) == list(range(40))
    s, d = KNOWN[SEED]
    # pair j is (S'[j mod 10], D'[j div 10]): 5 -> (S'[5], D'[0]), 35 -> (S'[5], D'[3]), 28 -> (S'[8], D'[2])
    assert FEISTEL_VECTOR[:3] == [(s[5], d[0]), (s[5], d[3]), (s[8], d[2])] == [(1008, 83), (1008, 80), (1001, 81)]


@pytest.mark.parametrize(("n", "seed"), [(1, 4), (2, 4), (3, 9), (40, 4), (41, 1), (64, 7), (65, 7), (300, 2**64 - 1)])
def test_feistel_order_gives_the_reference_pair_indices(n: int, seed: int) -> None:
    # sizes at and around the width steps: 1 and 2 (b = 2, the floor), 64 = 2**6 (no walking needed), 65 (b = 7,
    # unbalanced 4 + 3 bits), 41 (b = 6 and most of the domain walked over)
    e = PortEnumeration(PortRange(1, 1), PortRange(1, n), seed, EnumerationOrder.FEISTEL)
    expected = reference_feistel(n, seed)
    assert [e.pair_index(k) for k in range(n)] == expected
    assert e.pair_indices(np.arange(n)).tolist() == expected


@pytest.mark.parametrize(("n", "seed"), [(1, 4), (40, 4), (65, 7), (4099, 11)])
def test_the_c_data_path_gives_the_reference_pair_indices(n: int, seed: int) -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    out = np.zeros(n, dtype=np.uint32)
    engine.permute(engine.ORDER_FEISTEL, n, reference_subseed(seed, 3), out)
    assert out.tolist() == reference_feistel(n, seed)
    engine.permute(engine.ORDER_PRODUCT, n, reference_subseed(seed, 3), out)
    assert out.tolist() == list(range(n))


def test_the_feistel_order_gives_the_known_answer() -> None:
    e = PortEnumeration(SRC, DST, SEED, EnumerationOrder.FEISTEL)
    assert list(e) == FEISTEL_VECTOR
    srcs, dsts = e.pairs()
    assert list(zip(srcs.tolist(), dsts.tolist(), strict=True)) == FEISTEL_VECTOR
    assert sorted(FEISTEL_VECTOR) == sorted(VECTOR)  # the same 40 pairs, another order


def test_the_first_pairs_walk_the_sources_then_step_the_destination() -> None:
    assert VECTOR[:12] == FIRST_12
    assert [PortEnumeration(SRC, DST, SEED).pair(k) for k in range(12)] == FIRST_12


@pytest.mark.parametrize("seed", sorted(KNOWN))
def test_port_enumeration_gives_the_known_answer(seed: int) -> None:
    e = PortEnumeration(SRC, DST, seed)
    s, d = KNOWN[seed]
    assert e.sources.tolist() == s
    assert e.destinations.tolist() == d
    expected = reference_pairs(SRC, DST, seed)
    assert list(e) == expected
    srcs, dsts = e.pairs()
    assert list(zip(srcs.tolist(), dsts.tolist(), strict=True)) == expected


@pytest.mark.parametrize("cores", [1, 3, 16])
def test_trex_phase1_program_sends_the_known_answer(cores: int) -> None:
    """Replayed on 1 core the program sends the vector in order; split on 3 cores, core c sends k = c, c+3, ...;
    with 16 cores (more than the 10 source ports) streams pinned to cores send the vector's slices."""
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    from natbench.testers.trex import program as prg
    from natbench.testers.trex.splitmodel import run_stream
    from natbench.testers.trex.streams import to_json

    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), SRC, DST, 64, SEED)
    program = prg.compile_phase1(plan, 1000.0, cores=cores)
    compiled = to_json(program)["private"]
    assert len(compiled) == len(program.streams)
    sent: list[tuple[int, int]] = []
    for stream, plan_of_stream in zip(compiled, program.streams, strict=True):
        traces = run_stream(stream, cores)
        for trace in traces:
            pairs = list(zip(trace.fields[34], trace.fields[36], strict=True))  # UDP ports of the IPv4 frame
            sent.extend(pairs)
            if program.pinned:
                start = plan_of_stream.first_index
                assert pairs == VECTOR[start : start + plan_of_stream.frames]
            else:
                assert pairs == VECTOR[trace.core :: len(traces)]
    assert sorted(sent) == sorted(VECTOR)
    assert program.pinned is (cores == 16)


class _SocketpairEngine:
    """The real C data path, except that its ports are Unix datagram sockets instead of AF_PACKET ones."""

    def __init__(self, engine: Any, fds: list[int]) -> None:
        self._engine = engine
        self._fds = iter(fds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def open_port(self, ifname: str, netns_path: str | None = None, rcvbuf: int = 0, sndbuf: int = 0) -> int:
        return next(self._fds)


@pytest.mark.parametrize(
    ("order", "expected"),
    [(None, FEISTEL_VECTOR), ("feistel", FEISTEL_VECTOR), ("product", VECTOR)],
    ids=["default", "feistel", "product"],
)
def test_software_tester_phase1_sends_the_known_answer(
    monkeypatch: pytest.MonkeyPatch, order: str | None, expected: list[tuple[int, int]]
) -> None:
    engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")
    wire, initiator = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)  # what the Initiator sends comes out here
    quiet, responder = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)  # the Responder receives nothing
    monkeypatch.setattr(software, "_engine", _SocketpairEngine(engine, [initiator.detach(), responder.detach()]))
    mac_a, mac_b = "02:4e:42:00:00:01", "02:4e:42:00:00:02"
    kw = {} if order is None else {"enumeration": order}
    tester = software.SoftwareTester(
        software.Port("init", mac_a, mac_b), software.Port("resp", mac_b, mac_a), timeout=0.01, realtime=False, **kw
    )
    try:
        tester.prepare(TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), SRC, DST, 64, SEED))
        result = tester.phase1(40_000.0, learn=False)
    finally:
        tester.close()
    wire.setblocking(False)
    datagrams = []
    with contextlib.suppress(BlockingIOError):
        while True:
            datagrams.append(wire.recv(2048))
    wire.close()
    quiet.close()
    frames = [f for f in map(parse_frame, datagrams) if f is not None]
    assert result.counts[Direction.FORWARD].sent == len(frames) == len(datagrams) == 40
    assert [(f.sport, f.dport) for f in frames] == expected
    assert [f.seq for f in frames] == list(range(40))  # the sequence number is the frame index k
    assert result.extra["enumeration"] == (order or "feistel")  # the trial records the order it used


@pytest.mark.parametrize("index", [-1, 40, 41])
def test_an_index_outside_the_pairs_is_refused_by_name(index: int) -> None:
    # 10 source x 4 destination ports: indices 0..39 (index 40 would also fail inside numpy, with another message)
    e = PortEnumeration(SRC, DST, SEED)
    assert e.size == 40
    with pytest.raises(IndexError) as info:
        e.pair(index)
    assert str(info.value) == f"index {index} outside [0, 40)"


class _Scripted(SplitMix64):
    """A generator whose outputs are given, to reach below()'s rejection test at its exact edge."""

    def __init__(self, outputs: list[int]) -> None:
        super().__init__(0)
        self.outputs = list(outputs)

    def next(self) -> int:
        return self.outputs.pop(0)


INV3 = pow(3, -1, M64)  # 3 * INV3 = 1 (mod 2**64): the draw whose low product word for below(3) is exactly 1


def test_a_draw_exactly_at_the_threshold_is_kept() -> None:
    # below(3): t = (2**64 - 3) mod 3 = 2**64 mod 3 = 1 (4**32 = 1 mod 3). The draw INV3 gives m = 3 * INV3 =
    # 2 * 2**64 + 1: low word 1 >= t, kept, result m >> 64 = 2. A threshold of 2 (2**65 mod 3) would reject it
    # and take the next draw, 2**63: m = 3 * 2**63 = 2**64 + 2**63, result 1.
    assert (3 * INV3) % M64 == 1
    gen = _Scripted([INV3, 1 << 63])
    assert gen.below(3) == 2
    assert gen.outputs == [1 << 63]  # exactly one draw used


def test_a_draw_below_the_threshold_is_drawn_again_at_its_edge() -> None:
    # below(3) with t = 1: the draw 0 (low word 0) is rejected, then INV3 is kept -> 2
    gen = _Scripted([0, INV3, 1 << 63])
    assert gen.below(3) == 2
    assert gen.outputs == [1 << 63]


@pytest.mark.parametrize("bound", [0, -1, -(1 << 70)])
def test_below_refuses_a_bound_that_is_not_positive(bound: int) -> None:
    with pytest.raises(ValueError, match=r"^bound must be positive$"):
        SplitMix64(1).below(bound)


def test_below_one_is_always_zero_and_uses_one_draw_each() -> None:
    gen, twin = SplitMix64(9), SplitMix64(9)
    assert [gen.below(1) for _ in range(5)] == [0] * 5
    for _ in range(5):
        twin.next()
    assert gen.state == twin.state  # one output per call: t = 2**64 mod 1 = 0 rejects nothing


def test_a_port_permutation_takes_two_bytes_per_port() -> None:
    # every port fits in 16 bits: the whole port space is held as uint16 (128 KiB, not 512 KiB as int64)
    perm = seeded_permutation(range(1, 65536), 4)
    assert perm.dtype == np.uint16
    assert len(perm) == 65535 and int(perm.min()) == 1 and int(perm.max()) == 65535


def test_a_range_past_16_bits_keeps_its_values() -> None:
    perm = seeded_permutation(range(65530, 65537), 4)  # 65536 does not fit in 16 bits
    assert perm.dtype == np.uint32
    assert sorted(int(v) for v in perm) == list(range(65530, 65537))


def test_a_points_permutations_are_made_once_and_shared_read_only() -> None:
    a = PortEnumeration(PortRange(2000, 2999), PortRange(80, 89), 17)
    b = PortEnumeration(PortRange(2000, 2999), PortRange(80, 89), 17)
    assert a.sources is b.sources and a.destinations is b.destinations  # not shuffled again per call
    with pytest.raises(ValueError, match="read-only"):
        a.sources[0] = 1  # a caller cannot change the permutation every other user of this point shares
